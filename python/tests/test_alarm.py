"""Cancellation at the deadline with one lane (PROTOCOL.md §5.2, §2.5 "Cancellation", §8.3):
the alarm that raises Cancelled in a synchronous handler on the main thread 50 ms after its
deadline, the flag, the event loop's task cancellation, and what the alarm must never do
(cut a response, reach a later request, clobber the application's own SIGALRM handler)."""

from __future__ import annotations

import asyncio
import io
import signal
import threading
import time

import pytest
from workers import HANDSHAKE, Worker

from afterburn_runtime import Cancelled, Response, _alarm
from afterburn_runtime._conn import Conn
from afterburn_runtime._parser import DEFAULT_MAX_HEAD, RequestHead, RequestParser
from afterburn_runtime._exchange import exchange
from afterburn_runtime.testing import call, call_wsgi, parse_response


def test_cancelled_is_a_base_exception_that_except_exception_does_not_swallow() -> None:
    assert issubclass(Cancelled, BaseException) and not issubclass(Cancelled, Exception)

    def handler(req):
        try:
            time.sleep(5)
        except Exception:  # the retry loop's catch-all: the cancellation goes through it
            return "swallowed"

    t0 = time.monotonic()
    resp = call(handler, timeout_ms=50)
    assert resp.status == 500 and resp.json()["type"] == "handler_error"  # §8.3
    assert time.monotonic() - t0 < 2


def test_the_alarm_interrupts_a_sleeping_handler_50ms_after_its_deadline() -> None:
    seen = {}

    def handler(req):
        t0 = time.monotonic()
        try:
            time.sleep(5)
        except Cancelled:
            seen["after"] = time.monotonic() - t0
            seen["flag"] = req.cancelled
            return {"cleaned_up": True}
        return {"cleaned_up": False}

    resp = call(handler, timeout_ms=100)
    # A handler that catches it and returns is answered normally (the watchdog drains it).
    assert (resp.status, resp.json()) == (200, {"cleaned_up": True})
    assert 0.14 <= seen["after"] < 1.0, seen  # the deadline + 50 ms (§2.5), not before
    assert seen["flag"] is True


def test_an_escaping_cancellation_is_answered_handler_error_and_logged(capfd) -> None:
    resp = call(lambda req: time.sleep(5), timeout_ms=30, request_id="rid-esc")
    assert (resp.status, resp.headers.get("afterburn-error")) == (500, "handler_error")
    assert resp.json()["request_id"] == "rid-esc"
    assert "[rid-esc] afterburn: GET / was cancelled" in capfd.readouterr().err


def test_the_timer_left_after_the_handler_returns_does_nothing() -> None:
    # The timer is lazy (_alarm): it stays set after the exchange, and goes off harmlessly.
    resp = call(lambda req: "quick", timeout_ms=100)
    assert resp.body == b"quick"
    time.sleep(0.2)  # past the deadline + grace of that request: nothing is raised here
    assert call(lambda req: {"cancelled": req.cancelled}, timeout_ms=100).json() == {"cancelled": False}


def test_steady_exchanges_set_the_timer_once_not_per_request(monkeypatch) -> None:
    # Issue 30: two setitimer calls per request were a third of a plain exchange's syscalls.
    sets = []
    real = signal.setitimer

    def counting(which, seconds, interval=0.0):
        sets.append(seconds)
        return real(which, seconds, interval)

    monkeypatch.setattr(signal, "setitimer", counting)
    monkeypatch.setattr(_alarm, "_timer_at", None)
    for _ in range(20):
        assert call(lambda req: "quick", timeout_ms=10_000).body == b"quick"
    assert len(sets) == 1, sets  # set by the first exchange, left for the next ones
    assert 10.0 < sets[0] <= 10.05  # the deadline + GRACE (§2.5), never stopped with 0
    real(signal.ITIMER_REAL, 0)
    _alarm._timer_at = None


def test_an_earlier_timer_re_arms_for_the_exchange_then_running() -> None:
    # A quick exchange leaves its timer (30 ms + grace); the next one has a later deadline:
    # when the old timer goes off during it, it is not cancelled then, but at its own time.
    assert call(lambda req: "quick", timeout_ms=30).body == b"quick"
    seen = {}

    def handler(req):
        t0 = time.monotonic()
        try:
            time.sleep(5)
        except Cancelled:
            seen["after"] = time.monotonic() - t0
        return "done"

    assert call(handler, timeout_ms=400).body == b"done"
    assert 0.44 <= seen["after"] < 2.0, seen


def test_a_later_exchange_with_an_earlier_deadline_sets_the_timer_sooner() -> None:
    assert call(lambda req: "quick", timeout_ms=10_000).body == b"quick"  # leaves a 10 s timer
    t0 = time.monotonic()
    resp = call(lambda req: time.sleep(5), timeout_ms=50)
    assert resp.status == 500 and time.monotonic() - t0 < 1.0
    signal.setitimer(signal.ITIMER_REAL, 0)
    _alarm._timer_at = None


def test_a_stale_alarm_does_not_reach_the_next_request() -> None:
    # A SIGALRM already on its way when one exchange ended (or one the application raised)
    # arrives while the next handler runs, long before that one's deadline.
    def handler(req):
        signal.raise_signal(signal.SIGALRM)
        time.sleep(0.05)
        return "not cancelled"

    resp = call(handler, timeout_ms=2000)
    assert (resp.status, resp.body) == (200, b"not cancelled")


def test_a_handler_that_saw_the_flag_is_not_interrupted_while_it_stops() -> None:
    def handler(req):
        if not req.cancellation.wait(5):
            return "never cancelled"
        time.sleep(0.2)  # cleaning up, well past the alarm's time
        return "stopped cleanly"

    for _ in range(3):  # the flag and the alarm fire at the same instant: either order
        try:
            resp = call(handler, timeout_ms=30)
        except Cancelled:  # pragma: no cover - reported below
            pytest.fail("Cancelled escaped the exchange")
        assert resp.status in (200, 500)
        if resp.status == 200:
            assert resp.body == b"stopped cleanly"


def test_wsgi_apps_on_the_main_thread_get_the_alarm_too() -> None:
    def app(environ, start_response):
        try:
            time.sleep(5)
            body = b"slept"
        except Cancelled:
            body = b"cancelled"
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [body]

    assert call_wsgi(app, timeout_ms=30).body == b"cancelled"


def test_an_async_handler_on_one_lane_is_cancelled_as_a_task() -> None:
    async def handler(req):
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return {"task_cancelled": True}
        return {"task_cancelled": False}

    t0 = time.monotonic()
    assert call(handler, timeout_ms=30).json() == {"task_cancelled": True}
    assert time.monotonic() - t0 < 2

    async def escapes(req):
        await asyncio.sleep(5)

    assert call(escapes, timeout_ms=30).json()["type"] == "handler_error"


def test_threads_the_handler_started_are_not_interrupted() -> None:
    finished = []
    done = threading.Event()

    def work():
        time.sleep(0.2)
        finished.append(True)
        done.set()

    def handler(req):
        threading.Thread(target=work).start()
        try:
            done.wait()
        except Cancelled:
            done.wait()  # the thread ran on; only the main thread got the exception
            return "waited after the cancellation"
        return "waited"

    assert call(handler, timeout_ms=20).body == b"waited after the cancellation"
    assert finished == [True]


def test_a_handler_on_another_thread_has_the_flag_only() -> None:
    out = {}

    def handler(req):
        time.sleep(0.2)
        return {"cancelled": req.cancelled}

    t = threading.Thread(target=lambda: out.setdefault("resp", call(handler, timeout_ms=20)))
    t.start()
    t.join()
    assert out["resp"].json() == {"cancelled": True}


def test_the_applications_own_sigalrm_handler_is_left_alone(capfd) -> None:
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(True))
    try:
        def handler(req):
            end = time.monotonic() + 0.2
            while time.monotonic() < end and not req.cancelled:
                time.sleep(0.01)
            return {"cancelled": req.cancelled}

        assert call(handler, timeout_ms=20).json() == {"cancelled": True}  # the flag only
        assert signal.getsignal(signal.SIGALRM) is not _alarm._on_alarm
        assert fired == []
        assert "SIGALRM already has a handler of the application's own" in capfd.readouterr().err
    finally:
        signal.signal(signal.SIGALRM, previous)
        _alarm._warned = False


def test_without_setitimer_a_handler_has_the_flag_only(monkeypatch, capfd) -> None:
    monkeypatch.delattr(signal, "setitimer")
    monkeypatch.setattr(_alarm, "_unusable", None)  # decided again, without setitimer
    monkeypatch.setattr(_alarm, "_warned", False)

    def handler(req):
        while not req.cancellation.wait(0.01):
            pass
        return {"cancelled": req.cancelled}

    assert call(handler, timeout_ms=20).json() == {"cancelled": True}
    assert "this platform has no signal.setitimer" in capfd.readouterr().err
    monkeypatch.undo()
    _alarm._unusable = None


def test_the_alarm_is_held_during_a_write_and_never_cuts_the_response() -> None:
    # The response pipe's write blocks (a full pipe) past the alarm's time: SIGALRM must be
    # held by the kernel for the whole write (pthread_sigmask), and the response whole.
    body = b"x" * 100_000
    seen = {}
    out = bytearray()

    def write(data):
        if "held" not in seen:
            time.sleep(0.15)  # the deadline + 50 ms passes during this write
            # Held by the kernel (blocked in this thread; with other threads alive, Linux
            # may hand it to one of them instead, and the library's shield holds it).
            armed = _alarm.current()
            seen["held"] = signal.SIGALRM in signal.sigpending() or (armed is not None and armed.pending)
            seen["threads"] = threading.active_count()
        out.extend(data)
        return len(data)

    raw = b"GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 20\r\n\r\n"
    conn = Conn(io.BytesIO(raw).read, write, RequestParser(DEFAULT_MAX_HEAD, 0))
    head = conn.event()
    assert isinstance(head, RequestHead)
    assert exchange(conn, head, _plain(lambda req: Response(body))) == 0
    assert seen["held"] is True  # not delivered inside the write
    resp, rest = parse_response(bytes(out))
    assert (resp.status, resp.complete, len(resp.body), rest) == (200, True, len(body), b"")


def test_a_streamed_response_is_cut_only_between_whole_chunks() -> None:
    # Each write is shielded: Cancelled lands between chunks, never inside one, and the
    # response ends incomplete (no last chunk), as §8.3 asks of a failure after the head.
    def handler(req):
        def pieces():
            for _ in range(100):
                time.sleep(0.01)
                yield b"y" * 1000
        return Response(pieces())

    resp = call(handler, timeout_ms=100)
    assert resp.status == 200 and resp.chunked and not resp.complete
    assert resp.worker_exit == 1
    assert len(resp.body) % 1000 == 0 and 0 < len(resp.body) < 100_000


def _plain(handler):
    from afterburn_runtime._handler import plain_responder

    return plain_responder(handler, lambda: None)


# -- the fixture's /wait-cancel on one lane, as a real process (conformance contract B) ------

FIXTURES = {
    "plain": ["-m", "afterburn_runtime", "afterburn_fixture:handle"],
    "wsgi": ["-m", "afterburn_runtime", "--wsgi", "wsgi_fixture:app"],
    "asgi": ["-m", "afterburn_runtime", "--asgi", "asgi_fixture:app"],
}


@pytest.mark.parametrize("style", sorted(FIXTURES))
def test_the_fixture_observes_the_cancellation_on_one_lane(style: str) -> None:
    w = Worker(FIXTURES[style])
    w.send(HANDSHAKE)
    assert w.response(timeout=30).status == 200
    t0 = time.monotonic()
    w.send(b"GET /wait-cancel?ms=5000 HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-one-lane\r\n"
           b"AfterBurn-Timeout-Ms: 200\r\nAfterBurn-Exchange: t1\r\n\r\n")
    resp = w.response(timeout=10)
    elapsed = time.monotonic() - t0
    assert (resp.status, resp.json(), resp.headers.get("afterburn-exchange")) == (200, {"cancelled": True}, "t1")
    assert 0.2 <= elapsed < 3, elapsed
    # The next request on the worker is not cancelled.
    w.send(b"GET /wait-cancel?ms=100 HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 5000\r\n"
           b"AfterBurn-Exchange: t2\r\n\r\n")
    assert w.response(timeout=10).json() == {"cancelled": False}
    status, log = w.wait()
    assert status == 0, log
    assert "cancelled rid-one-lane" in log, log

