"""A typed handler: the JSON body decoded into dataclasses, the result encoded as JSON, and a
body that does not fit answered 400 bad_request naming the field (python/README.md, "Typed
handlers")::

    go/bin/afterburn-watchdog -listen_host 127.0.0.1 -port 8080 -- \\
        env PYTHONPATH=python/examples/quote python/.venv/bin/python -m afterburn_runtime quote:quote

    curl -d '{"items": [{"name": "tea", "price": 2.5, "quantity": 2}]}' http://127.0.0.1:8080/
    curl -d '{"items": [{"name": "tea", "price": "cheap"}]}' http://127.0.0.1:8080/    # 400
"""

from __future__ import annotations

from dataclasses import dataclass

from afterburn_runtime import Request


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 1


@dataclass
class Order:
    items: list[Item]
    coupon: str | None = None


@dataclass
class Quote:
    total: float
    items: int
    request_id: str


def quote(order: Order, req: Request) -> Quote:
    total = sum(item.price * item.quantity for item in order.items)
    if order.coupon == "HALF":
        total /= 2
    return Quote(round(total, 2), len(order.items), req.request_id)
