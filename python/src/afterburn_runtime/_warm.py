"""Warm spares (PROTOCOL.md §2.7 "Warm spares"): a worker forked for one request runs one
synthetic request through the library's own path before it reads its handshake, so that the
first real request does not pay for what a fresh fork pays on its first request.

Why: a fork shares the template's pages copy-on-write, and the first time the worker runs the
library's request path it writes to many of them (reference counts, caches, the allocator's
pools) and takes a page fault for each, with cold processor caches besides. At 50 requests a
second on one connection that put a fresh worker 0.33 ms (hello) to 0.66 ms (the 512 MiB model)
behind a warm one at the median (issue 33). The spare is idle until its request comes, so the
cost moves off the request's path.

The synthetic request never reaches the function: it is answered by a responder of this
module's, through the same parser, exchange and response writer as every request, into a
buffer that is thrown away. Nothing goes to the watchdog's pipes or the logs, and a warm-up
that fails is logged and forgotten: the worker then serves cold, as it would have. A function
that wants its own code warmed too does it in an after-fork hook (afterburn_runtime.after_fork),
which runs before this."""
from __future__ import annotations

from ._exchange import exchange_in_memory
from ._handler import plain_responder
from ._response import Response
from ._state import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._request import Request

# A request like the ones a function gets: a target with a query, a few fields, a request id
# (so none is drawn from the generator) and a small body, so the body path is warmed too.
_REQUEST = (b"POST /afterburn-warm-up?a=1 HTTP/1.1\r\nHost: afterburn\r\n"
            b"AfterBurn-Request-Id: warm-up\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 4\r\n\r\nwarm")


def _answer(req: Request) -> Response:
    return Response(req.body, headers={"Content-Type": "text/plain"})


def _no_runner() -> None:
    raise RuntimeError("the warm-up's responder is synchronous")


# Whether this process ran its warm-up to the end: the tests' way to see that it did, since
# by design nothing else shows it.
warmed = False


def warm_up() -> bytes:
    """Runs the synthetic request; returns what the library wrote for it (for the tests),
    or b"" when the warm-up failed."""
    try:
        out, _ = exchange_in_memory(_REQUEST, plain_responder(_answer, _no_runner))
    except Exception as e:  # never the worker's end: it serves cold instead
        log(f"afterburn: worker: warming up failed ({e!r}); serving the first request cold")
        return b""
    global warmed
    warmed = True
    return out
