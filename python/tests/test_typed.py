"""Typed handlers (PROTOCOL.md §8.1, §8.2 "for typed handlers, undecodable input"): the JSON
body decoded into a dataclass or a pydantic model, 400 bad_request naming the field on bad
input, and the result encoded as JSON through the application's encoder."""

from __future__ import annotations

import asyncio
import enum
import functools
import json
from dataclasses import dataclass, field
from typing import Literal, Optional

import pydantic
import pytest

from afterburn_runtime import Request, Response
from afterburn_runtime._typed import typed_handler
from afterburn_runtime.testing import call


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 1


@dataclass
class Order:
    items: list[Item]
    note: Optional[str] = None
    tags: dict[str, int] = field(default_factory=dict)
    colour: Colour = Colour.RED
    mode: Literal["fast", "slow"] = "fast"
    size: tuple[int, int] = (0, 0)
    ref: int | str = 0


@dataclass
class Quote:
    total: float
    count: int
    note: Optional[str]


def quote(order: Order) -> Quote:
    return Quote(sum(i.price * i.quantity for i in order.items), len(order.items), order.note)


def post(handler, body, **kw):
    return call(handler, "POST", "/quote", body=body if isinstance(body, str) else json.dumps(body), **kw)


def test_a_dataclass_in_and_a_dataclass_out() -> None:
    resp = post(quote, {"items": [{"name": "a", "price": 1.5, "quantity": 2}, {"name": "b", "price": 2}]})
    assert resp.status == 200
    assert resp.headers.get("content-type") == "application/json"
    assert resp.json() == {"total": 5.0, "count": 2, "note": None}


def test_nested_optional_collections_enums_literals_and_defaults() -> None:
    seen = []

    def handler(order: Order) -> dict:
        seen.append(order)
        return {"ok": True}

    body = {"items": [{"name": "a", "price": 1}], "note": None, "tags": {"x": 1}, "colour": "blue",
            "mode": "slow", "size": [2, 3], "ref": "r-1"}
    assert post(handler, body).json() == {"ok": True}
    got = seen[0]
    assert got.items == [Item("a", 1.0, 1)] and isinstance(got.items[0].price, float)
    assert (got.note, got.tags, got.colour, got.mode, got.size, got.ref) == (None, {"x": 1}, Colour.BLUE, "slow",
                                                                             (2, 3), "r-1")
    post(handler, {"items": []})
    assert seen[1] == Order(items=[])  # every default applied


@pytest.mark.parametrize("body, detail", [
    ({"items": [{"name": "a", "price": 1}, {"name": "b", "price": 2}, {"name": "c", "price": "9"}]},
     "items[2].price: expected float, got str"),
    ({"items": [{"name": "a", "price": True}]}, "items[0].price: expected float, got bool"),
    ({"items": [{"name": "a", "price": 1, "quantity": 1.5}]}, "items[0].quantity: expected int, got float"),
    ({"items": [{"name": "a"}]}, "items[0].price: missing"),
    ({}, "items: missing"),
    ({"items": [], "colour": "green"}, 'colour: expected one of "red", "blue"'),
    ({"items": [], "mode": "medium"}, 'mode: expected one of "fast", "slow"'),
    ({"items": [], "tags": {"x": "1"}}, "tags.x: expected int, got str"),
    ({"items": [], "tags": {"a b": None}}, "tags[…]: expected int, got null"),  # a key that is no name
    ({"items": [], "size": [1]}, "size: expected 2 items, got 1"),
    ({"items": [], "ref": [1]}, "ref: expected int or str, got list"),
    ({"items": {"name": "a"}}, "items: expected list, got dict"),
    ([1, 2], "expected Order, got list"),
    ({"items": [], "colour ": "red"}, "[…]: unknown field of Order"),
    ({"items": [], "discount": 5}, "discount: unknown field of Order"),
    ({"items": [{"name": "a", "price": 1, "colour": "red"}]}, "items[0].colour: unknown field of Item"),
    ("", "the body is empty"),
    ('{"items": [', "line 1, column 12: Expecting value"),
    ("\xff", "line 1, column 1: Expecting value"),
])
def test_bad_input_is_400_bad_request_naming_the_field(body, detail) -> None:
    resp = post(quote, body, request_id="rid-typed")
    assert (resp.status, resp.headers.get("afterburn-error")) == (400, "bad_request")
    assert resp.headers.get("content-type") == "application/json"
    assert resp.json() == {"type": "bad_request", "request_id": "rid-typed",
                           "message": f"the request body is not valid JSON for Order: {detail}"}


def test_the_message_never_quotes_the_input() -> None:
    secret = "hunter2-secret"
    resp = post(quote, {"items": [{"name": secret, "price": secret}], secret: secret})
    assert resp.status == 400 and secret not in resp.text


@dataclass
class Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"n must not be negative, got {self.n}")


def test_a_post_init_check_is_invalid_input_without_its_message() -> None:
    def handler(c: Checked) -> dict:
        return {"n": c.n}

    assert post(handler, {"n": 1}).json() == {"n": 1}
    resp = post(handler, {"n": -1})
    assert resp.status == 400
    assert resp.json()["message"] == "the request body is not valid JSON for Checked: invalid value for Checked"


def test_the_request_too_when_a_parameter_asks_for_it() -> None:
    def handler(order: Order, req: Request) -> dict:
        return {"items": len(order.items), "path": req.path, "id": req.request_id}

    assert post(handler, {"items": []}, request_id="r1").json() == {"items": 0, "path": "/quote", "id": "r1"}


def test_async_typed_handlers() -> None:
    async def handler(order: Order) -> Quote:
        await asyncio.sleep(0)
        return Quote(0.0, len(order.items), "async")

    assert post(handler, {"items": []}).json() == {"total": 0.0, "count": 0, "note": "async"}
    assert post(handler, "nope").status == 400


def test_a_plain_handler_is_left_as_it_is() -> None:
    def plain(req: Request) -> Response:
        return Response(b"plain")

    def unannotated(req):
        return b"unannotated"

    def annotated_otherwise(req: dict) -> bytes:  # no dataclass nor model: not typed
        return b""

    for handler in (plain, unannotated, annotated_otherwise):
        assert typed_handler(handler) is handler


@pytest.mark.parametrize("bad, message", [
    ("two_bodies", "has two body parameters"),
    ("unsupported", "typed handlers cannot decode"),
    ("not_a_model", "want Request, a dataclass or a pydantic model"),
])
def test_signatures_it_cannot_serve_fail_before_the_worker_is_ready(bad, message) -> None:
    with pytest.raises(TypeError, match=message):
        typed_handler(BAD_HANDLERS[bad])


@dataclass
class WithSet:
    when: set[bytes]


def _two_bodies(a: Item, b: Order) -> None: ...
def _unsupported(w: WithSet) -> None: ...
def _not_a_model(order: Order, n: int) -> None: ...


BAD_HANDLERS = {"two_bodies": _two_bodies, "unsupported": _unsupported, "not_a_model": _not_a_model}


# -- pydantic -----------------------------------------------------------------------------------


class PItem(pydantic.BaseModel):
    name: str
    price: float


class POrder(pydantic.BaseModel):
    items: list[PItem]

    @pydantic.field_validator("items")
    @classmethod
    def not_too_many(cls, v):
        if len(v) > 2:
            raise ValueError(f"too many items: {v}")
        return v


def test_a_pydantic_model_in_and_out() -> None:
    def handler(order: POrder) -> POrder:
        return order

    resp = post(handler, {"items": [{"name": "a", "price": 1}]})
    assert (resp.status, resp.json()) == (200, {"items": [{"name": "a", "price": 1.0}]})


def test_pydantic_errors_name_the_field_and_never_quote_a_validator() -> None:
    def handler(order: POrder) -> dict:
        return {}

    resp = post(handler, {"items": [{"name": "a", "price": 1}, {"name": "b", "price": "cheap"}]})
    assert (resp.status, resp.headers.get("afterburn-error")) == (400, "bad_request")
    message = resp.json()["message"]
    assert message.startswith("the request body is not valid JSON for POrder: items[1].price: ")
    assert "cheap" not in message
    resp = post(handler, {"items": [{"name": "secret", "price": 1}] * 3})
    assert resp.json()["message"] == "the request body is not valid JSON for POrder: items: invalid value"
    resp = post(handler, {"items": [{"price": "x"}]})
    assert resp.json()["message"].endswith("(and 1 more)")


# -- the JSON encoder hook ----------------------------------------------------------------------


def _marked(obj) -> str:
    return json.dumps({"encoded_by": "app", "value": obj}, default=str)


def test_the_applications_encoder_encodes_every_json_body() -> None:
    assert call(lambda req: {"a": 1}, json_dumps=_marked).json() == {"encoded_by": "app", "value": {"a": 1}}
    assert call(lambda req: Response.json([1]), json_dumps=_marked).json() == {"encoded_by": "app", "value": [1]}
    resp = post(quote, {"items": []}, json_dumps=_marked)
    assert resp.json() == {"encoded_by": "app", "value": {"total": 0, "count": 0, "note": None}}
    # Without it, json.dumps again.
    assert call(lambda req: {"a": 1}).json() == {"a": 1}


def test_response_json_takes_an_encoder_of_its_own_that_may_return_bytes() -> None:
    def as_bytes(obj) -> bytes:
        return b'{"bytes": true}'

    resp = call(lambda req: Response.json({"x": 1}, dumps=as_bytes), json_dumps=_marked)
    assert resp.body == b'{"bytes": true}'  # the call's own encoder wins over the app's
    default_str = functools.partial(json.dumps, default=str)
    import datetime

    when = datetime.date(2026, 1, 2)
    assert call(lambda req: Response.json({"when": when}, dumps=default_str)).json() == {"when": "2026-01-02"}


def test_a_returned_dataclass_is_json_even_without_a_typed_parameter() -> None:
    assert call(lambda req: Item("a", 1.0)).json() == {"name": "a", "price": 1.0, "quantity": 1}


def test_a_returned_object_of_another_kind_is_still_an_error() -> None:
    assert call(lambda req: object()).status == 500


# -- under the launcher, as a real process ------------------------------------------------------


def test_the_launcher_serves_a_typed_handler() -> None:
    from workers import HANDSHAKE, Worker

    w = Worker(["-m", "afterburn_runtime", "typed_app:quote"])
    w.send(HANDSHAKE)
    assert w.response(timeout=30).status == 200
    good = b'{"items": [{"name": "a", "price": 2.5}]}'
    bad = b'{"items": [{"name": "a", "price": "2.5"}]}'
    for body in (good, bad):
        w.send(b"POST /quote HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-q\r\nContent-Length: %d\r\n\r\n%s"
               % (len(body), body))
    assert w.response(timeout=10).json() == {"total": 2.5, "request_id": "rid-q"}
    resp = w.response(timeout=10)
    assert (resp.status, resp.headers.get("afterburn-error")) == (400, "bad_request")
    assert resp.json()["message"] == "the request body is not valid JSON for Order: items[0].price: expected float, got str"
    status, log = w.wait()
    assert status == 0, log
