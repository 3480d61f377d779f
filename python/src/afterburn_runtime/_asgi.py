"""serve_asgi: an ASGI 3 application (HTTP scope and lifespan) as the handler.

With one lane (PROTOCOL.md §2.1) the whole request stream is one task on an event loop that
lives as long as the worker (``serve_lane``): each request's app call is awaited in that
task, with no task, future or timer of its own, so an app that never waits for anything
costs no turn of the loop at all. Only when the app does wait does its exchange get a timer
for its deadline (§5.2), which cancels the task. Request body bytes are read from the
request pipe with a blocking read when the app asks for them (``receive``), and a response
sent in one message leaves in one write.

With lanes (§2.5) the requests of all lanes are tasks on that loop, now on a thread of its
own; ``receive`` and ``send`` then do their pipe I/O on the lane's thread (``lane_call``),
so one lane's slow body or full response pipe never blocks the loop, and the watchdog's
cancellation cancels the task. Two shortcuts spare most requests those hand-offs, where the
loop cannot block: body bytes already read with the head are taken on the loop
(``Conn.body_ready``), and a response is framed on the loop and written from it when the
lane's response pipe is empty and the response fits in it (``Conn.send_now``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import types
from urllib.parse import unquote

from ._aio import DEADLINE_GRACE, Runner, lane_call
from ._exchange import serve_stream_async
from ._state import log, log_exception
from ._writer import IncompleteResponse, _raw_head_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from ._conn import Conn
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
        self._task: Any = None  # with one lane, the task that serves the stream (serve_lane)
        self._ready: Any = None  # its loop's ready callbacks, when the loop shows them

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
        """One exchange as a task of its own (lanes, §2.5; ``testing.call_asgi``)."""
        assert self.runner is not None
        self.runner.run(_Exchange(self, req, w, False).run(), req)

    def serve_lane(self, conn: Conn, reply_head: str) -> int:
        """Serves the worker's one lane (§2.1) as one task: every exchange is awaited in it
        (``serve_stream_async``). Returns as ``_exchange.serve_lane`` does."""
        assert self.runner is not None
        try:
            return self.runner.run(self._serve(conn, reply_head))
        except OSError as e:
            log(f"afterburn: the response pipe is closed; the watchdog is gone ({e})")
            return 1

    async def _serve(self, conn: Conn, reply_head: str) -> int:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        # The loop's ready callbacks, where it shows them (asyncio's; uvloop's does not).
        self._ready = getattr(task.get_loop(), "_ready", None)
        return await serve_stream_async(conn, self._respond_in_task, reply_head)

    async def _respond_in_task(self, req: Request, w: ResponseWriter) -> None:
        task = self._task
        try:
            await _in_this_task(_Exchange(self, req, w, True).run(), req, task)
        except asyncio.CancelledError:
            # The deadline's timer cancelled the task (§5.2); as with a task of its own
            # (Runner.run): an Exception, which the exchange answers.
            raise concurrent.futures.CancelledError() from None
        finally:
            # The task serves the next exchange: no cancellation of this one may stay
            # requested (asyncio.timeout and TaskGroup count them, Python 3.11+).
            uncancel = getattr(task, "uncancel", None)
            if uncancel is not None:
                while task.cancelling():
                    uncancel()
        ready = self._ready
        if ready is None or ready:
            # Work the app left ready (a task it started, a callback): one turn of the loop,
            # as a task of its own per exchange would have given it, before the next
            # blocking read of the request pipe.
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                uncancel = getattr(task, "uncancel", None)
                if uncancel is not None:
                    while task.cancelling():
                        uncancel()


@types.coroutine
def _in_this_task(coro: Coroutine[Any, Any, Any], req: Request, task: asyncio.Task[Any]) -> Any:
    """Awaits ``coro`` in the current task (``yield from`` by hand): when coro first waits,
    a timer of the loop cancels the task at the deadline + GRACE (§5.2, as _aio's
    _until_cancelled does for a task of its own); a coro that never waits costs none."""
    try:
        value = coro.send(None)
    except StopIteration as e:
        return e.value
    timer = None
    if req.deadline is not None:
        timer = task.get_loop().call_at(req.deadline + DEADLINE_GRACE, _expire, req, task)
    try:
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                value = coro.throw(exc)
            else:
                value = coro.send(sent)
    except StopIteration as e:
        return e.value
    finally:
        if timer is not None:
            timer.cancel()


def _expire(req: Request, task: asyncio.Task[Any]) -> None:
    req.cancellation.fire()  # req.cancelled, for code that polls it
    task.cancel()


class _Exchange:
    """One HTTP exchange of the app: its scope, ``receive`` and ``send``. ``direct``: the
    pipe I/O is called here (one lane); else through ``lane_call`` (lanes, §2.5)."""

    __slots__ = ("adapter", "req", "w", "direct", "conn", "has_body", "remaining", "body_done", "start", "finished",
                 "body_ended", "trailers", "done", "done_event")

    def __init__(self, adapter: AsgiAdapter, req: Request, w: ResponseWriter, direct: bool) -> None:
        self.adapter = adapter
        self.req = req
        self.w = w
        self.direct = direct
        # With lanes, the lane's Conn (the writer sends through its bound send), whose held
        # body bytes and empty response pipe the loop can use without the lane's thread.
        conn = None if direct else getattr(w._send, "__self__", None)
        self.conn: Conn | None = conn if hasattr(conn, "send_now") else None
        # A request without a body has no body source (_exchange.begin_exchange).
        self.has_body = not req._done
        self.remaining: int | None = None  # body bytes still to come, when the length is known
        if self.has_body:
            length = req.headers.get("content-length")
            if length is not None:
                self.remaining = int(length)
        self.body_done = False  # the last http.request message was given
        self.start: tuple[int, list[Any], bool] | None = None  # http.response.start: status, headers, trailers
        self.finished = False  # the response ended (its last body message, or its trailers)
        self.body_ended = False  # the last body message was sent; trailers may follow
        self.trailers: list[tuple[str, str]] = []
        self.done = False  # the response ended, or the app returned
        self.done_event: asyncio.Event | None = None  # made when receive() waits for the end

    async def receive(self) -> dict[str, Any]:
        if self.body_done:
            # Nothing more will come: "disconnect" once the response is over, as a
            # server reports a client that is gone.
            if not self.done:
                if self.done_event is None:
                    self.done_event = asyncio.Event()
                await self.done_event.wait()
            return {"type": "http.disconnect"}
        if not self.has_body:
            self.body_done = True
            return {"type": "http.request", "body": b"", "more_body": False}
        req = self.req
        conn = self.conn
        if self.direct or conn is not None and (req._buf or conn.body_ready()):
            # One lane; or bytes already held (a small body comes with its head): no read.
            data = req.read(_READ_SIZE)
        else:
            data = await lane_call(req.read, _READ_SIZE)
        remaining = self.remaining
        if remaining is not None:
            remaining -= len(data)
            self.remaining = remaining
            more = remaining > 0
        else:
            more = bool(data)
        if not more:
            self.body_done = True
        return {"type": "http.request", "body": data, "more_body": more}

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.body":
            start = self.start
            if start is None:
                raise RuntimeError("http.response.body before http.response.start")
            if self.done or self.body_ended:
                raise RuntimeError("http.response.body after the response body ended")
            body = message.get("body", b"")
            more = message.get("more_body", False)
            if self.direct:
                _emit(self.w, start, body, more)
            else:
                await self._lane_send(_emit, self.w, start, body, more)
            if not more:
                self.body_ended = True
                if not start[2]:
                    self.finished = self.done = True
                    if self.done_event is not None:
                        self.done_event.set()
        elif kind == "http.response.start":
            if self.start is not None:
                raise RuntimeError("http.response.start sent twice")
            # The headers stay bytes: the writer decodes them once per distinct head (_writer).
            self.start = (message["status"], list(message.get("headers", ())), bool(message.get("trailers", False)))
        elif kind == "http.response.trailers":
            # The HTTP Trailers extension: after the last body message of a response
            # started with "trailers": True; sent once more_trailers is false.
            start = self.start
            if not (start is not None and start[2] and self.body_ended) or self.finished:
                raise RuntimeError("http.response.trailers without a body that announced them")
            self.trailers.extend((n.decode("latin-1"), v.decode("latin-1")) for n, v in message.get("headers", ()))
            if not message.get("more_trailers", False):
                if self.direct:
                    self.w.end(self.trailers)
                else:
                    await self._lane_send(self.w.end, self.trailers)
                self.finished = self.done = True
                if self.done_event is not None:
                    self.done_event.set()
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    async def _lane_send(self, frame: Callable[..., None], *args: Any) -> None:
        """With lanes (§2.5): ``frame(*args)`` frames the response on the loop, and what it
        would send is written from here when the lane's response pipe can take it without
        blocking (Conn.send_now), else by the lane's thread (lane_call): one hand-off to
        the lane's thread and back saved on most responses."""
        conn = self.conn
        if conn is None:
            await lane_call(frame, *args)
            return
        w = self.w
        parts: list[bytes] = []
        w._send = parts.extend
        try:
            frame(*args)
        finally:
            w._send = conn.send
        if parts and not conn.send_now(parts):
            await lane_call(conn.send, parts)

    async def run(self) -> None:
        req, w = self.req, self.w
        path = req.path
        scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": "1.0" if req.http_version == "HTTP/1.0" else "1.1",
            "method": req.method,
            "scheme": "http",
            "path": unquote(path) if "%" in path else path,
            "raw_path": path.encode("latin-1"),
            "query_string": req.query.encode("latin-1"),
            "root_path": "",
            "headers": [(n.encode("latin-1"), v.encode("latin-1")) for n, v in req.headers._pairs
                        if n != "transfer-encoding"],
            "client": None,
            "server": None,
            "state": self.adapter.state.copy(),
            # PROTOCOL.md §5.3: the protocol's metadata, under the library's own name; the
            # Request gives what ASGI has no place for (request trailers).
            "extensions": {"afterburn": {"request_id": req.request_id, "deadline": req.deadline,
                                         "request": req},
                           # The HTTP Trailers extension: a response may end with trailer fields.
                           "http.response.trailers": {}},
        }
        try:
            await self.adapter.app(scope, self.receive, self.send)
        except Exception as e:
            if not self.finished:
                raise
            # The app answered, then raised (Starlette's ServerErrorMiddleware sends its
            # 500 and re-raises): the response is complete and honest, so log the
            # exception as a server does and keep serving.
            log_exception(req.request_id, req, e)
        finally:
            if not self.done:
                self.done = True
                if self.done_event is not None:
                    self.done_event.set()
        if not w.started:
            raise RuntimeError("the ASGI app returned without sending a response")
        if not self.finished:
            raise IncompleteResponse("the ASGI app returned before the end of its response body")


def _emit(w: ResponseWriter, start: tuple[int, list[Any], bool], body: bytes, more: bool) -> None:
    """One http.response.body message, written (on the lane's thread with lanes). A
    response sent in one message gets Content-Length and leaves in one write, unless
    trailers follow: a response that announced trailers is chunked and ends with them."""
    status, headers, with_trailers = start
    if not w.started:
        if not more and not with_trailers:
            w.write_whole(status, headers, body, _raw_head_lines)
            return
        w.start(status, headers, None, _raw_head_lines)
    w.write(body)
    if not more and not with_trailers:
        w.end()


async def _settle(task: Any) -> None:
    if task is not None:
        try:
            await task
        except BaseException:
            pass
