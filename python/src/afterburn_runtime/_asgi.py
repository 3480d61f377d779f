"""serve_asgi: an ASGI 3 application (HTTP scope and lifespan) as the handler.

With one lane (PROTOCOL.md §2.1) each request runs to completion on one event loop that
lives as long as the worker, and request body bytes are read from the request pipe with a
blocking read when the app asks for them (``receive``). With lanes (§2.5) the requests of
all lanes are tasks on that loop, now on a thread of its own; ``receive`` and ``send`` then
do their pipe I/O on the lane's thread (``lane_call``), so one lane's slow body or full
response pipe never blocks the loop, and the watchdog's cancellation cancels the task.
"""

from __future__ import annotations

from urllib.parse import unquote

from ._aio import Runner, lane_call
from ._state import log_exception
from ._writer import IncompleteResponse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._request import Request
    from ._writer import ResponseWriter

_ASGI = {"version": "3.0", "spec_version": "2.3"}
_READ_SIZE = 64 << 10


class LifespanError(Exception):
    """The app reported ``lifespan.startup.failed`` or ``lifespan.shutdown.failed``."""


class AsgiAdapter:
    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self.runner: Runner | None = None
        self.state: dict[str, Any] = {}
        self._lifespan: Any = None  # the lifespan task, when the app speaks lifespan
        self._inbox: Any = None
        self._outbox: Any = None

    # -- lifespan -------------------------------------------------------------------------

    def startup(self) -> None:
        """Runs the app's lifespan startup; PROTOCOL.md §3.1: before the handshake answer,
        which is what marks the worker ready."""
        import asyncio

        self.runner = Runner()
        self._inbox, self._outbox = asyncio.Queue(), asyncio.Queue()
        scope = {"type": "lifespan", "asgi": _ASGI, "state": self.state}

        async def receive() -> dict[str, Any]:
            return await self._inbox.get()

        async def send(message: dict[str, Any]) -> None:
            await self._outbox.put(message)

        async def main() -> None:
            try:
                await self.app(scope, receive, send)
            except BaseException as e:
                await self._outbox.put({"type": "_ended", "error": e})
                raise
            await self._outbox.put({"type": "_ended", "error": None})

        self._lifespan = self.runner.loop.create_task(main())
        self._step("startup")

    def shutdown(self) -> None:
        """Runs the app's lifespan shutdown when the watchdog closes the request pipe (§9.4)."""
        try:
            if self._lifespan is not None:
                self._step("shutdown")
        finally:
            if self.runner is not None:
                self.runner.close()

    def _step(self, phase: str) -> None:
        async def exchange() -> dict[str, Any]:
            await self._inbox.put({"type": f"lifespan.{phase}"})
            return await self._outbox.get()

        assert self.runner is not None
        reply = self.runner.run(exchange())
        kind = reply["type"]
        if kind == "_ended":
            # An app that does not speak lifespan raises or returns at once; the ASGI
            # spec says the server then goes on without it.
            self.runner.run(_settle(self._lifespan))
            self._lifespan = None
            return
        if kind == f"lifespan.{phase}.failed":
            raise LifespanError(f"ASGI lifespan {phase} failed: {reply.get('message', '')}")
        if kind != f"lifespan.{phase}.complete":
            raise LifespanError(f"ASGI lifespan {phase}: unexpected message {kind!r}")

    # -- HTTP -----------------------------------------------------------------------------

    def with_lanes(self) -> Callable[[Request, ResponseWriter], None]:
        """§2.5: the loop goes on a thread of its own; every lane's thread calls respond."""
        assert self.runner is not None
        self.runner.start_thread()
        return self.respond

    def respond(self, req: Request, w: ResponseWriter) -> None:
        assert self.runner is not None
        self.runner.run(self._http(req, w), req)

    async def _http(self, req: Request, w: ResponseWriter) -> None:
        import asyncio

        scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": "1.0" if req.http_version == "HTTP/1.0" else "1.1",
            "method": req.method,
            "scheme": "http",
            "path": unquote(req.path),
            "raw_path": req.path.encode("latin-1"),
            "query_string": req.query.encode("latin-1"),
            "root_path": "",
            "headers": [(n.encode("latin-1"), v.encode("latin-1")) for n, v in req.headers
                        if n != "transfer-encoding"],
            "client": None,
            "server": None,
            "state": dict(self.state),
            # PROTOCOL.md §5.3: the protocol's metadata, under the library's own name; the
            # Request gives what ASGI has no place for (request trailers).
            "extensions": {"afterburn": {"request_id": req.request_id, "deadline": req.deadline,
                                         "request": req},
                           # The HTTP Trailers extension: a response may end with trailer fields.
                           "http.response.trailers": {}},
        }
        length = req.headers.get("content-length")
        remaining = int(length) if length is not None else None
        has_body = remaining != 0 and (remaining is not None or req.headers.get("transfer-encoding") is not None)
        body_done = False  # the last http.request message was given
        done = asyncio.Event()  # the response ended, or the app returned
        started: list[Any] = []  # [status, headers, trailers?] of http.response.start
        finished = False  # the response ended (its last body message, or its trailers)
        body_ended = False  # the last body message was sent; trailers may follow
        trailers: list[tuple[str, str]] = []

        async def receive() -> dict[str, Any]:
            nonlocal body_done, remaining
            if body_done:
                # Nothing more will come: "disconnect" once the response is over, as a
                # server reports a client that is gone.
                await done.wait()
                return {"type": "http.disconnect"}
            if not has_body:
                body_done = True
                return {"type": "http.request", "body": b"", "more_body": False}
            data = await lane_call(req.read, _READ_SIZE)
            if remaining is not None:
                remaining -= len(data)
                more = remaining > 0
            else:
                more = bool(data)
            if not more:
                body_done = True
            return {"type": "http.request", "body": data, "more_body": more}

        async def send(message: dict[str, Any]) -> None:
            nonlocal finished, body_ended
            kind = message["type"]
            if kind == "http.response.start":
                if started:
                    raise RuntimeError("http.response.start sent twice")
                headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in message.get("headers", ())]
                started[:] = [message["status"], headers, bool(message.get("trailers", False))]
            elif kind == "http.response.body":
                if not started:
                    raise RuntimeError("http.response.body before http.response.start")
                if done.is_set() or body_ended:
                    raise RuntimeError("http.response.body after the response body ended")
                body = message.get("body", b"")
                more = message.get("more_body", False)
                await lane_call(_emit, w, started, body, more)
                if not more:
                    body_ended = True
                    if not started[2]:
                        finished = True
                        done.set()
            elif kind == "http.response.trailers":
                # The HTTP Trailers extension: after the last body message of a response
                # started with "trailers": True; sent once more_trailers is false.
                if not (started and started[2] and body_ended) or finished:
                    raise RuntimeError("http.response.trailers without a body that announced them")
                trailers.extend((n.decode("latin-1"), v.decode("latin-1")) for n, v in message.get("headers", ()))
                if not message.get("more_trailers", False):
                    await lane_call(w.end, trailers)
                    finished = True
                    done.set()
            else:
                raise RuntimeError(f"unexpected ASGI message {kind!r}")

        try:
            await self.app(scope, receive, send)
        except Exception as e:
            if not finished:
                raise
            # The app answered, then raised (Starlette's ServerErrorMiddleware sends its
            # 500 and re-raises): the response is complete and honest, so log the
            # exception as a server does and keep serving.
            log_exception(req.request_id, req, e)
        finally:
            done.set()
        if not w.started:
            raise RuntimeError("the ASGI app returned without sending a response")
        if not finished:
            raise IncompleteResponse("the ASGI app returned before the end of its response body")


def _emit(w: ResponseWriter, started: list[Any], body: bytes, more: bool) -> None:
    """One http.response.body message, written (on the lane's thread with lanes). A
    response that announced trailers is chunked and ends with them."""
    status, headers, with_trailers = started
    if not w.started:
        # A response sent in one message gets Content-Length, unless trailers follow.
        w.start(status, headers, None if more or with_trailers else len(body))
    w.write(body)
    if not more and not with_trailers:
        w.end()


async def _settle(task: Any) -> None:
    if task is not None:
        try:
            await task
        except BaseException:
            pass
