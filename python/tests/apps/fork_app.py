"""A function for the fork-mode tests (PROTOCOL.md §2.6): a plain handler ``handle`` and an
ASGI app ``app`` that report what a worker forked from a template sees. Environment
switches make the template unsafe or faulty in the ways the tests need."""

import ctypes
import errno
import gc
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time

import afterburn_runtime
import afterburn_runtime._template as template

MODEL_FILE = open(__file__, "rb")  # a descriptor initialisation opened: no worker may keep it
AFTER_FORK = []

if os.environ.get("FORK_APP_NUMPY") == "1":
    import numpy  # starts OpenBLAS's thread pool

    numpy.random.random()  # the legacy global generator, seeded once, in the template

if os.environ.get("FORK_APP_THREAD") == "1":
    stop = threading.Event()
    threading.Thread(target=stop.wait, name="model-prefetch", daemon=True).start()

if os.environ.get("FORK_APP_NATIVE"):
    ctypes.CDLL(os.environ["FORK_APP_NATIVE"]).start_thread()

if os.environ.get("FORK_APP_EAGAIN") == "1":
    calls = []

    def flaky_fork():
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        return os.fork()

    template.fork = flaky_fork

if os.environ.get("FORK_APP_PY312_WARNING"):
    import warnings

    def warning_fork():
        # What Python 3.12+ does in os.fork() when /proc/self/stat counts more than one
        # thread: the warning, in the parent, after the fork. With "other" a second,
        # unrelated DeprecationWarning follows, which the template must not silence.
        pid = os.fork()
        if pid != 0:
            warnings.warn(f"This process (pid={os.getpid()}) is multi-threaded, use of fork() may lead to "
                          "deadlocks in the child.", DeprecationWarning, stacklevel=2)
            if os.environ["FORK_APP_PY312_WARNING"] == "other":
                warnings.warn("fork_app: some other deprecation", DeprecationWarning, stacklevel=2)
        return pid

    template.fork = warning_fork


@afterburn_runtime.before_fork
def report_gc():
    # The template's collector as the next fork finds it (frozen and off after the first).
    print(f"before_fork: gc enabled={gc.isenabled()} frozen={gc.get_freeze_count() > 0}", file=sys.stderr)


if os.environ.get("FORK_APP_BEFORE_FAIL") == "1":
    @afterburn_runtime.before_fork
    def refuse():
        raise ValueError("no forks\ntoday")


if os.environ.get("FORK_APP_ALARM_LEFT") == "1":
    @afterburn_runtime.before_fork
    def leave_an_alarm():
        # The template forks with SIGALRM blocked, pending and an interval timer armed (the
        # default action held back by the mask): none of it may reach a worker (§2.6, §5.2).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        signal.setitimer(signal.ITIMER_REAL, 100)
        signal.raise_signal(signal.SIGALRM)
        print(f"before_fork: SIGALRM {alarm_state()}", file=sys.stderr)


@afterburn_runtime.after_fork
def record():
    AFTER_FORK.append(os.getpid())
    if os.environ.get("FORK_APP_ATEXIT") == "1":
        import atexit
        atexit.register(lambda: print(f"atexit in {os.getpid()}", file=sys.stderr, flush=True))
    if os.environ.get("FORK_APP_AFTER_FAIL") == "1":
        raise RuntimeError("cannot connect")


def fds():
    """{descriptor: what it is} of this process."""
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            out[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass  # the listing's own descriptor, gone
    return out


def alarm_state():
    """SIGALRM as this process holds it: blocked, pending, and the interval timer's time left."""
    return {"blocked": signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, []),
            "pending": signal.SIGALRM in signal.sigpending(), "timer": signal.getitimer(signal.ITIMER_REAL)[0]}


CALLS = []  # one entry per call of the function in this process, whatever its kind


def info():
    np = sys.modules.get("numpy")
    CALLS.append(1)
    warm = sys.modules.get("afterburn_runtime._warm")
    return {
        "calls": len(CALLS), "warmed": None if warm is None else warm.warmed,
        "pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0),
        "worker_id": os.environ.get("AFTERBURN_WORKER_ID"),
        "random": random.random(), "numpy": None if np is None else float(np.random.random()),
        "gc_enabled": gc.isenabled(), "gc_frozen": gc.get_freeze_count(),
        "fds": fds(),
        "after_fork": AFTER_FORK,
        "tmpdir": tempfile.gettempdir(), "env_tmpdir": os.environ.get("TMPDIR"),
        "sigalrm": alarm_state(),
    }


def sleep_until_cancelled(req):
    """Sleeps up to 5 s; the alarm (§5.2) is to interrupt it 50 ms after the deadline."""
    start = time.monotonic()
    try:
        time.sleep(5)
    except afterburn_runtime.Cancelled:
        return {"cancelled_after": time.monotonic() - start, "flag": req.cancelled}
    return {"cancelled_after": None}


def handle(req):
    if req.path == "/print":
        print("hello from a worker")
        return "printed"
    if req.path == "/sleep":
        return sleep_until_cancelled(req)
    if req.path == "/large":
        return afterburn_runtime.Response(b"z" * int(req.arg("size", "0")))
    return info()


def wsgi(environ, start_response):
    body = json.dumps(info()).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                print(f"lifespan shutdown in {os.getpid()}", file=sys.stderr)
                await send({"type": "lifespan.shutdown.complete"})
                return
    import asyncio

    await asyncio.sleep(0.001)  # the loop's selector and self-pipe must work in a worker
    body = json.dumps(info()).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
