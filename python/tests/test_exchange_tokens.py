"""Exchange tokens (PROTOCOL.md §4.6, §4.3 rule 14, §5.3): the capability, the token echoed
in every response head the library writes, for every handler style, and never settable by
the handler. The serve loop runs in memory over literal bytes; every write(2) the library
makes is recorded, so a test can also say what one write holds (§4.6, last paragraph).

The parsing side (rule 14, the token hidden from handlers) is in the `parse` vectors of
conformance/vectors/exchange.json, which test_vectors.py runs.
"""

from __future__ import annotations

import afterburn_fixture
import asgi_fixture
import pytest
import vectors
import wsgi_fixture

from afterburn_runtime import Response
from afterburn_runtime._aio import Runner
from afterburn_runtime._asgi import AsgiAdapter
from afterburn_runtime._conn import Conn
from afterburn_runtime._handler import plain_responder
from afterburn_runtime._parser import RequestParser
from afterburn_runtime._exchange import serve_stream
from afterburn_runtime._wsgi import wsgi_responder
from afterburn_runtime.testing import TestResponse, parse_response

TOKEN = "T0k3nZ9"
HANDSHAKE = b"OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n"


class Served:
    """The outcome of a serve loop: its exit status and the bytes of each write(2)."""

    def __init__(self, status: int, writes: list[bytes]) -> None:
        self.status = status
        self.writes = writes
        self.out = b"".join(writes)

    def responses(self, heads: tuple[bool, ...] | None = None) -> list[TestResponse]:
        """Every response on the pipe, parsed; ``heads`` says which answer a HEAD."""
        out, rest, i = [], self.out, 0
        while rest:
            resp, rest = parse_response(rest, bool(heads and heads[i]))
            out.append(resp)
            i += 1
        return out


@pytest.fixture
def runner():
    """The asyncio runner of async handlers and ASGI apps, closed after the test."""
    made: list[Runner] = []

    def get() -> Runner:
        if not made:
            made.append(Runner())
        return made[0]

    yield get
    if made:
        made[0].close()


def serve(respond, data: bytes, max_body: int = 0) -> Served:
    """Runs the serve loop over data (one read, then EOF)."""
    chunks = [data]
    writes: list[bytes] = []

    def write(b) -> int:
        writes.append(bytes(b))
        return len(b)

    conn = Conn(lambda n: chunks.pop(0) if chunks else b"", write, RequestParser(65536, max_body))
    return Served(serve_stream(conn, respond), writes)


def request(method: str = "GET", path: str = "/", token: str | None = TOKEN, extra: str = "") -> bytes:
    line = "" if token is None else f"AfterBurn-Exchange: {token}\r\n"
    return f"{method} {path} HTTP/1.1\r\nHost: fn\r\n{line}{extra}\r\n".encode()


def tokens(resp: TestResponse) -> list[str]:
    return resp.headers.get_all("afterburn-exchange")


# -- the vectors of exchange.json, through the Python fixture in each handler style ----------

FIXTURE_VECTORS = [v for v in vectors.load("fixture") if v["id"].startswith("exchange/")]

# Known failures, kept strict so that the list goes stale loudly.
KNOWN_FAILURES: dict[str, str] = {}
FIXTURE_PARAMS = [pytest.param(v, id=v["id"], marks=pytest.mark.xfail(reason=KNOWN_FAILURES[v["id"]], strict=True))
                  if v["id"] in KNOWN_FAILURES else pytest.param(v, id=v["id"]) for v in FIXTURE_VECTORS]


def fixture_responder(style: str, runner):
    # The fixtures count requests for /whoami: a fresh count, as in a fresh process.
    afterburn_fixture._requests = wsgi_fixture._requests = asgi_fixture._requests = 0
    if style == "plain":
        return plain_responder(afterburn_fixture.handle, runner)
    if style == "wsgi":
        return wsgi_responder(wsgi_fixture.app)
    adapter = AsgiAdapter(asgi_fixture.app)
    adapter.runner = runner()
    return adapter.respond


@pytest.mark.parametrize("style", ["plain", "wsgi", "asgi"])
@pytest.mark.parametrize("vector", FIXTURE_PARAMS)
def test_fixture_vectors(vector: dict, style: str, runner) -> None:
    data = b"".join(vectors.segments(vector))
    if vector.get("handshake", True):
        data = HANDSHAKE + data
    served = serve(fixture_responder(style, runner), data)
    expects = vector["expect"]
    heads = tuple(bool(e["response"].get("no_body")) for e in expects)
    got = served.responses((False, *heads) if vector.get("handshake", True) else heads)
    if vector.get("handshake", True):
        assert tokens(got.pop(0)) == [], "the first handshake carries no token"
    assert len(got) == len(expects), f"got {len(got)} responses; want {len(expects)}"
    for i, (want, resp) in enumerate(zip(expects, got)):
        assert vectors.check_response(want["response"], resp) == [], f"response {i}: {resp.headers!r}"
    assert served.status == 0


# -- every response a plain handler can make carries the token --------------------------------


def _stream(req):
    return Response(iter([b"a", b"b"]))


def _stream_with_length(req):
    return Response(iter([b"ab"]), headers={"Content-Length": "2"})


def _trailers(req):
    return Response(b"body", trailers=[("X-Sum", "1")])


async def _async(req):
    return Response(b"async")


def _async_stream(req):
    async def body():
        yield b"a"

    return Response(body())


def _raises(req):
    raise RuntimeError("before the response")


def _raises_in_stream(req):
    def body():
        raise RuntimeError("before the first piece")
        yield b""

    return Response(body())


def _raises_mid_stream(req):
    def body():
        yield b"partial"
        raise RuntimeError("after the head")

    return Response(body())


PLAIN = [
    # id, handler, method, status
    ("bytes", lambda req: Response(b"hello"), "GET", 200),
    ("empty", lambda req: None, "GET", 200),
    ("str", lambda req: "text", "GET", 200),
    ("json", lambda req: {"a": 1}, "GET", 200),
    ("large", lambda req: Response(b"x" * (100 << 10)), "GET", 200),  # head and body in two writes
    ("stream-chunked", _stream, "GET", 200),
    ("stream-content-length", _stream_with_length, "GET", 200),
    ("trailers", _trailers, "GET", 200),
    ("async", _async, "GET", 200),
    ("async-stream", _async_stream, "GET", 200),
    ("head", lambda req: Response(b"not sent"), "HEAD", 200),
    ("head-stream", _stream, "HEAD", 200),
    ("204", lambda req: Response(b"", status=204), "GET", 204),
    ("304", lambda req: Response(b"", status=304), "GET", 304),
    ("handler-error", _raises, "GET", 500),
    ("handler-error-in-stream", _raises_in_stream, "GET", 500),
    ("bad-return-value", lambda req: 42, "GET", 500),
    ("failure-after-head", _raises_mid_stream, "GET", 200),
]


@pytest.mark.parametrize(("handler", "method", "status"), [p[1:] for p in PLAIN], ids=[p[0] for p in PLAIN])
def test_every_plain_response_carries_the_token(handler, method: str, status: int, runner) -> None:
    served = serve(plain_responder(handler, runner), request(method, "/", TOKEN) + request("GET", "/next", "n2"))
    got = served.responses((method == "HEAD", False))
    assert got[0].status == status
    assert tokens(got[0]) == [TOKEN]
    if status == 500:
        assert got[0].json()["type"] == "handler_error"
    if served.status == 0:  # the next request carries its own token, not the last one's
        assert tokens(got[1]) == ["n2"]
    else:
        assert (handler, got[0].complete, len(got)) == (_raises_mid_stream, False, 1)  # §8.3


@pytest.mark.parametrize(("handler", "method", "status"), [p[1:] for p in PLAIN], ids=[p[0] for p in PLAIN])
def test_no_token_no_field(handler, method: str, status: int, runner) -> None:
    served = serve(plain_responder(handler, runner), request(method, "/", None))
    assert tokens(served.responses((method == "HEAD",))[0]) == []


# -- WSGI and ASGI responses -----------------------------------------------------------------


def _wsgi_list(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"list"]


def _wsgi_iter(environ, start_response):
    start_response("200 OK", [])
    return iter([b"a", b"b"])


def _wsgi_write(environ, start_response):
    write = start_response("200 OK", [])
    write(b"legacy write()")
    return []


def _wsgi_raises(environ, start_response):
    raise RuntimeError("wsgi")


async def _asgi_one(scope, receive, send):
    await send({"type": "http.response.start", "status": 201, "headers": []})
    await send({"type": "http.response.body", "body": b"one"})


async def _asgi_stream(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"a", "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _asgi_raises(scope, receive, send):
    raise RuntimeError("asgi")


def _asgi(app, runner):
    adapter = AsgiAdapter(app)
    adapter.runner = runner()
    return adapter.respond


ADAPTERS = [
    ("wsgi-list", lambda r: wsgi_responder(_wsgi_list), "GET", 200),
    ("wsgi-iterable", lambda r: wsgi_responder(_wsgi_iter), "GET", 200),
    ("wsgi-write", lambda r: wsgi_responder(_wsgi_write), "GET", 200),
    ("wsgi-head", lambda r: wsgi_responder(_wsgi_list), "HEAD", 200),
    ("wsgi-error", lambda r: wsgi_responder(_wsgi_raises), "GET", 500),
    ("asgi-one", lambda r: _asgi(_asgi_one, r), "GET", 201),
    ("asgi-stream", lambda r: _asgi(_asgi_stream, r), "GET", 200),
    ("asgi-head", lambda r: _asgi(_asgi_one, r), "HEAD", 201),
    ("asgi-error", lambda r: _asgi(_asgi_raises, r), "GET", 500),
]


@pytest.mark.parametrize(("make", "method", "status"), [a[1:] for a in ADAPTERS], ids=[a[0] for a in ADAPTERS])
def test_adapter_responses_carry_the_token(make, method: str, status: int, runner) -> None:
    served = serve(make(runner), request(method, "/", TOKEN) + request("GET", "/", None))
    first, second = served.responses((method == "HEAD", False))
    assert (first.status, tokens(first)) == (status, [TOKEN])
    assert tokens(second) == []
    assert served.status == 0


# -- the handler cannot set or remove the field ------------------------------------------------


def _plain_forger(req):
    return Response(b"x", headers=[("AfterBurn-Exchange", "forged"), ("afterburn-exchange", "forged2")],
                    trailers=None)


def _plain_forger_stream(req):
    return Response(iter([b"x"]), headers=[("AFTERBURN-EXCHANGE", "forged")],
                    trailers=[("AfterBurn-Exchange", "forged-trailer")])


def _wsgi_forger(environ, start_response):
    start_response("200 OK", [("AfterBurn-Exchange", "forged")])
    return [b"x"]


async def _asgi_forger(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"afterburn-exchange", b"forged")]})
    await send({"type": "http.response.body", "body": b"x"})


FORGERS = [
    ("plain", lambda r: plain_responder(_plain_forger, r)),
    ("plain-stream-and-trailers", lambda r: plain_responder(_plain_forger_stream, r)),
    ("wsgi", lambda r: wsgi_responder(_wsgi_forger)),
    ("asgi", lambda r: _asgi(_asgi_forger, r)),
]


@pytest.mark.parametrize("make", [f[1] for f in FORGERS], ids=[f[0] for f in FORGERS])
def test_a_handler_cannot_override_the_token(make, runner) -> None:
    served = serve(make(runner), request("GET", "/", TOKEN) + request("GET", "/", None))
    with_token, without = served.responses()
    assert tokens(with_token) == [TOKEN]  # exactly one field, the library's
    assert tokens(without) == []  # nor add one to a response that must have none
    assert "afterburn-exchange" not in with_token.trailers and "afterburn-exchange" not in without.trailers


# -- handshakes --------------------------------------------------------------------------------


def test_the_handshake_lists_the_capability_and_echoes_a_repeated_ones_token() -> None:
    repeated = HANDSHAKE.replace(b"Content-Length", f"AfterBurn-Exchange: {TOKEN}\r\nContent-Length".encode())
    served = serve(plain_responder(lambda req: "x", lambda: None), HANDSHAKE + repeated + request("GET", "/", "z"))
    first, again, user = served.responses()
    for hs in (first, again):
        assert hs.headers.get("afterburn-capabilities") == "exchange, streams"  # §3.2, §2.5
        assert (hs.status, hs.headers.get("content-length"), hs.body) == (200, "0", b"")
    assert (tokens(first), tokens(again), tokens(user)) == ([], [TOKEN], ["z"])
    assert served.writes[1] == (
        b"HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: python/0.1.0\r\n"
        b"AfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: 32\r\nAfterBurn-Exchange: T0k3nZ9\r\n"
        b"Content-Length: 0\r\n\r\n")


def test_a_version_mismatch_carries_the_token() -> None:
    hs = HANDSHAKE.replace(b"Handshake: 1", b"Handshake: 99").replace(
        b"Content-Length", f"AfterBurn-Exchange: {TOKEN}\r\nContent-Length".encode())
    served = serve(plain_responder(lambda req: "x", lambda: None), hs)
    (resp,) = served.responses()
    assert (resp.status, resp.json()["type"], tokens(resp), served.status) == (400, "version_mismatch", [TOKEN], 1)


# -- rejections (§8.8) ---------------------------------------------------------------------------

REJECTIONS = [
    # id, bytes, status, the token the rejection carries (§4.6 SHOULD: when the head was read)
    ("no-host", b"GET / HTTP/1.1\r\nAfterBurn-Exchange: r1\r\n\r\n", 400, ["r1"]),
    ("bad-length-before-the-token",
     b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: +1\r\nAfterBurn-Exchange: r2\r\n\r\nx", 400, ["r2"]),
    ("bad-request-line", b"GET  / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: r3\r\n\r\n", 400, ["r3"]),
    ("transfer-coding", b"POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: r4\r\nTransfer-Encoding: gzip\r\n\r\n",
     501, ["r4"]),
    ("length-over-the-limit", b"POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: r5\r\nContent-Length: 99\r\n\r\n",
     413, ["r5"]),
    ("bad-chunk-under-the-handler",
     b"POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: r6\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, ["r6"]),
    ("eof-inside-the-body", b"POST / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: r7\r\nContent-Length: 5\r\n\r\nab",
     400, ["r7"]),
    # Rule 14 itself: no value the rule refuses is echoed, and two are no token at all.
    ("two-tokens", b"GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a\r\nAfterBurn-Exchange: a\r\n\r\n", 400, []),
    ("bad-token", b"GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a-b\r\n\r\n", 400, []),
    # A bare LF may be found before the head is complete (rule 1): whether the token follows
    # it must not depend on the reads, so such a rejection carries none.
    ("bare-lf", b"GET / HTTP/1.1\r\nX: 1\nHost: fn\r\nAfterBurn-Exchange: r8\r\n\r\n", 400, []),
    # The token of the request before is not the rejected one's.
    ("after-a-request", request("GET", "/", "prev") + b"GET / HTTP/1.1\r\nX: 1\r\n\r\n", 400, []),
]


@pytest.mark.parametrize(("data", "status", "want"), [r[1:] for r in REJECTIONS], ids=[r[0] for r in REJECTIONS])
def test_rejections_after_the_head_carry_its_token(data: bytes, status: int, want: list[str]) -> None:
    served = serve(plain_responder(lambda req: req.body, lambda: None), data, max_body=16)
    resp = served.responses()[-1]
    assert (resp.status, resp.headers.get("afterburn-error"), served.status) == (status, resp.json()["type"], 1)
    assert tokens(resp) == want


# -- the token stays the library's ---------------------------------------------------------------


def test_handlers_never_see_the_token(runner) -> None:
    seen = []

    def wsgi_app(environ, start_response):
        seen.append(sorted(k for k in environ if "EXCHANGE" in k.upper()))
        start_response("200 OK", [])
        return []

    async def asgi_app(scope, receive, send):
        seen.append([n for n, _ in scope["headers"] if b"exchange" in n])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def handler(req):
        seen.append([n for n, _ in req.headers if "exchange" in n] + [a for a in dir(req) if "exchange" in a])
        return ""

    for respond in (wsgi_responder(wsgi_app), _asgi(asgi_app, runner), plain_responder(handler, runner)):
        assert serve(respond, request()).status == 0
    assert seen == [[], [], []]


# -- one write (§4.6: a head, and a small whole response, in one write of at most PIPE_BUF) ------

ONE_WRITE = [
    ("whole", lambda req: Response.json({"ok": True}), 1),
    ("error", _raises, 1),
    ("head-and-first-chunk", _stream, 3),  # head + "a", then "b", then the last chunk
]


@pytest.mark.parametrize(("handler", "n"), [o[1:] for o in ONE_WRITE], ids=[o[0] for o in ONE_WRITE])
def test_a_head_leaves_in_one_write(handler, n: int) -> None:
    served = serve(plain_responder(handler, lambda: None), request())
    assert len(served.writes) == n
    first = served.writes[0]
    assert b"\r\n\r\n" in first and b"AfterBurn-Exchange: " + TOKEN.encode() in first
    assert len(first) <= 4096
    if n == 1:
        assert served.responses()[0].complete


def test_a_large_body_leaves_after_its_head_in_a_second_write() -> None:
    # Bodies over 64 KiB are not copied behind the head: the head is then a write of its own.
    served = serve(plain_responder(lambda req: Response(b"x" * (100 << 10)), lambda: None), request())
    assert [len(w) for w in served.writes][1:] == [100 << 10]
    assert served.writes[0].endswith(b"\r\n\r\n") and len(served.writes[0]) <= 4096
    assert tokens(served.responses()[0]) == [TOKEN]
