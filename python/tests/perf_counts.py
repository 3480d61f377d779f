"""Per-request counts of the worker's own work, for a plain handler, the ASGI adapter and the
WSGI adapter serving the benchmark's apps (issue 30): counts that a busy machine does not
move, where a timing would be noise.

    python tests/perf_counts.py                  # hello and echo1k, every kind, 2000 requests
    python tests/perf_counts.py -n 500 --kinds asgi --top 25
    python tests/perf_counts.py --instructions   # also CPU instructions (valgrind)
    AFTERBURN_PY_ACCEL=off python tests/perf_counts.py   # the standard library only

Each worker is served in-process through the library's own serve loop (``_exchange``
``serve_stream``), as under the watchdog with one lane, from a request pipe that gives one
request per read (the watchdog writes a request's head, and a small body, in one write) to
a response pipe that counts its writes; the responses are parsed back and checked. After a
warm-up (the parser's and the writer's caches filled), N requests are served under
``sys.setprofile``, which counts:

- ``py calls``: Python function calls, coroutine and generator resumptions included;
- ``c calls``: calls of built-in (C) functions and methods made from Python;
- ``reads``/``writes``: reads of the request pipe and writes to the response pipe;

and, for the ASGI adapter on asyncio's own loop, the event loop's work: ``loop turns``
(``_run_once``), ``callbacks`` scheduled (``call_soon``, ``call_soon_threadsafe``),
``timers`` (``call_at``), ``tasks`` created and ``futures`` made. uvloop's loop is native
code: its turns and callbacks are not counted (shown as -).

``--instructions`` runs the same program under ``valgrind --tool=callgrind`` twice, with N
and 2N requests and without the profiler, and gives (I(2N) - I(N)) / N: the instructions
one request costs, start-up and warm-up cancelled out.

``--pipes plain:1,asgi:8,...`` also runs each kind as a real worker process on real pipes
with that many lanes (tests/perf_pipes.py), hello only, and gives per request its context
switches (unslowed) and every system call by name (strace -f -c, (S(2N) - S(N)) / N); with
``--instructions`` also the whole process's instructions (every thread, the pipe I/O and
the lanes' hand-offs included). ``AFTERBURN_PY_ACCEL`` is passed on to the workers.

Counts at the last change (issue 30, Python 3.11.7, hello, per request; "real" is a worker
process on real pipes, whole process, ``--pipes ... --instructions``; compare a change with
these):

    kind  lanes  loop     in-process instr  real instr  syscalls (real)      context switches
    plain 1      -        96.8k             90.9k       2: read, write       1
    wsgi  1      -        122.8k            118.1k      2: read, write       1
    asgi  1      asyncio  117.5k            112.6k      2: read, write       1
    asgi  1      uvloop   126.1k            121.2k      3: + epoll_pwait     1
    asgi  4      asyncio                    238.9k      read, write, ioctl, wake-ups  3.5
    asgi  4      uvloop                     193.1k      read, write, ioctl, wake-ups  3.7
    asgi  8      asyncio                    227.1k      read, write, ioctl, wake-ups  3.2
    asgi  8      uvloop                     192.6k      read, write, ioctl, wake-ups  3-8

Before that change: plain 100.1k and 6 syscalls (setitimer 2, rt_sigprocmask 2), WSGI 127.0k
and 6, ASGI with 4 lanes 340.4k (asyncio) / 274.9k (uvloop) and 10-12 context switches.
The wake-ups with lanes (futex, the loop's self-pipe) are counted by strace, whose own
slowing moves them: compare the pipe's reads and writes and the context switches instead.

The apps are the benchmark's (bench/functions/python): asgi_app.py and wsgi_app.py as they
are, and the plain handler of afterburn_fn.py (copied here: that file calls serve()).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
BENCH_APPS = HERE.parents[1] / "bench" / "functions" / "python"

from afterburn_runtime import Response  # noqa: E402
from afterburn_runtime._conn import Conn  # noqa: E402
from afterburn_runtime._exchange import serve_stream  # noqa: E402
from afterburn_runtime._parser import RequestParser  # noqa: E402
from afterburn_runtime.testing import parse_response  # noqa: E402

GREETING = b"Hello, world!\n"
WHOLE_BODY_MAX = 1 << 20


def plain_handle(req):  # bench/functions/python/afterburn_fn.py's handle
    length = int(req.headers.get("content-length") or 0)
    if length == 0:
        return Response(GREETING, content_type="text/plain")
    if length <= WHOLE_BODY_MAX:
        return Response(req.body, content_type="text/plain")
    return Response(req.stream(), headers=[("Content-Type", "text/plain"), ("Content-Length", str(length))])


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH_APPS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


BODY_1K = bytes(range(256)) * 4


def request(i: int, workload: str) -> bytes:
    """A request as the watchdog writes it (go/internal/watchdog/exchange writeHead): wrk's
    Host, the request id, an exchange token, the deadline, the framing; head and a small
    body in one write."""
    token = f"t{i:x}"
    if workload == "hello":
        return (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAfterBurn-Request-Id: r{i:08d}\r\n"
                f"AfterBurn-Exchange: {token}\r\nAfterBurn-Timeout-Ms: 10000\r\nContent-Length: 0\r\n\r\n").encode()
    return (f"POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/octet-stream\r\n"
            f"AfterBurn-Request-Id: r{i:08d}\r\nAfterBurn-Exchange: {token}\r\nAfterBurn-Timeout-Ms: 10000\r\n"
            f"Content-Length: {len(BODY_1K)}\r\n\r\n").encode() + BODY_1K


class Pipes:
    """The request pipe (one request per read, then EOF) and the response pipe."""

    def __init__(self, requests: list[bytes]) -> None:
        self.requests = requests[::-1]
        self.reads = 0
        self.writes = 0
        self.out = bytearray()

    def read(self, n: int) -> bytes:
        self.reads += 1
        return self.requests.pop() if self.requests else b""

    def write(self, data) -> int:
        self.writes += 1
        self.out += data
        return len(data)


class LoopCounts:
    """Counts what asyncio's own loop does, through instance attributes that shadow its
    methods (asyncio calls them as self.name; uvloop's are native, and not counted)."""

    NAMES = ("_run_once", "call_soon", "call_soon_threadsafe", "call_at", "create_future")

    def __init__(self) -> None:
        self.counts = dict.fromkeys(self.NAMES + ("tasks",), 0)
        self.loop = None

    def attach(self, loop) -> None:
        self.loop = loop
        if not hasattr(type(loop), "_run_once"):
            self.counts = None  # uvloop: not countable
            return
        for name in self.NAMES:
            original = getattr(loop, name)
            setattr(loop, name, self._counting(name, original))
        counts = self.counts
        import asyncio

        def factory(loop, coro, **kw):
            counts["tasks"] += 1
            return asyncio.Task(coro, loop=loop, **kw)

        loop.set_task_factory(factory)

    def _counting(self, name, original):
        counts = self.counts

        def counted(*args, **kw):
            counts[name] += 1
            return original(*args, **kw)

        return counted

    def reset(self) -> None:
        if self.counts is not None:
            for k in self.counts:
                self.counts[k] = 0


def make_worker(kind: str):
    """(respond, close, loop) for one kind of worker."""
    if kind == "plain":
        from afterburn_runtime._handler import plain_responder

        return plain_responder(plain_handle, lambda: None), lambda: None, None
    if kind == "wsgi":
        from afterburn_runtime._wsgi import wsgi_responder

        return wsgi_responder(_load("wsgi_app")), lambda: None, None
    from afterburn_runtime._asgi import AsgiAdapter

    adapter = AsgiAdapter(_load("asgi_app"))
    adapter.startup()  # the lifespan, as serve_asgi runs it before the handshake
    return adapter.respond, adapter.shutdown, adapter.runner.loop


def serve(kind: str, workload: str, warmup: int, n: int, profile: bool, top: int) -> dict:
    respond, close, loop = make_worker(kind)
    loop_counts = LoopCounts()
    if loop is not None:
        loop_counts.attach(loop)
    serve_lane = getattr(respond, "__self__", None)
    lane = getattr(serve_lane, "serve_lane", None)

    def run(first: int, count: int) -> Pipes:
        pipes = Pipes([request(first + i, workload) for i in range(count)])
        conn = Conn(pipes.read, pipes.write, RequestParser(65536 + 1024, 64 << 20))
        if lane is not None:  # an adapter that serves its lane itself
            status = lane(conn, "")
        else:
            status = serve_stream(conn, respond)
        assert status == 0, f"{kind}: the serve loop ended with {status}"
        return pipes

    def check(pipes: Pipes, first: int, count: int) -> None:
        rest = bytes(pipes.out)
        for i in range(count):
            resp, rest = parse_response(rest)
            want = GREETING if workload == "hello" else BODY_1K
            assert resp.status == 200 and resp.body == want, f"{kind} {workload} #{i}: {resp.status} {resp.body[:80]!r}"
            assert resp.headers.get("afterburn-exchange") == f"t{first + i:x}"
        assert rest == b""

    check(run(0, warmup), 0, warmup)
    loop_counts.reset()
    calls = {"call": 0, "c_call": 0}
    per_function: dict = {}
    if profile:
        own = __file__

        def tracer(frame, event, arg):
            if frame.f_code.co_filename == own:
                return  # this driver's pipes and counters, and what they call
            if event == "call":
                calls["call"] += 1
                if top:
                    code = frame.f_code
                    key = f"{Path(code.co_filename).name}:{code.co_firstlineno} {code.co_name}"
                    per_function[key] = per_function.get(key, 0) + 1
            elif event == "c_call":
                calls["c_call"] += 1
                if top:
                    key = f"<c> {getattr(arg, '__qualname__', repr(arg))}"
                    per_function[key] = per_function.get(key, 0) + 1

        sys.setprofile(tracer)
    try:
        pipes = run(warmup, n)
    finally:
        sys.setprofile(None)
    if profile:  # under valgrind (no profiler) only the serving is counted
        check(pipes, warmup, n)
    close()
    out = {
        "py calls": calls["call"] / n if profile else None,
        "c calls": calls["c_call"] / n if profile else None,
        "reads": (pipes.reads - 1) / n,  # the EOF read is the stream's, not a request's
        "writes": pipes.writes / n,
    }
    lc = loop_counts.counts if loop is not None else None
    out["loop turns"] = None if lc is None else lc["_run_once"] / n
    out["callbacks"] = None if lc is None else (lc["call_soon"] + lc["call_soon_threadsafe"]) / n
    out["timers"] = None if lc is None else lc["call_at"] / n
    out["tasks"] = None if lc is None else lc["tasks"] / n
    out["futures"] = None if lc is None else lc["create_future"] / n
    if top:
        out["top"] = sorted(((c / n, k) for k, c in per_function.items()), reverse=True)[:top]
    return out


COLUMNS = ("py calls", "c calls", "loop turns", "callbacks", "timers", "tasks", "futures", "reads", "writes")


def fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if v == int(v) else f"{v:.2f}"


def instructions(kind: str, workload: str, n: int, warmup: int) -> float | None:
    """(I(2N) - I(N)) / N under callgrind, without the profiler."""
    totals = []
    for count in (n, 2 * n):
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, __file__, "--child", kind, workload, str(warmup), str(count)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
        m = re.search(r"Collected : (\d+)", p.stderr) or re.search(r"refs:\s+([\d,]+)", p.stderr)
        if p.returncode != 0 or m is None:
            sys.stderr.write(p.stderr[-2000:])
            return None
        totals.append(int(m.group(1).replace(",", "")))
    return (totals[1] - totals[0]) / n


def pipes_report(specs: str, n: int, warmup: int, with_instructions: bool) -> None:
    """Real workers on real pipes (tests/perf_pipes.py), hello, one line per kind:lanes."""
    import perf_pipes

    env = {k: v for k, v in os.environ.items() if k == "AFTERBURN_PY_ACCEL"}
    print(f"\nreal worker, real pipes, hello, one request in flight per lane (AFTERBURN_PY_ACCEL="
          f"{env.get('AFTERBURN_PY_ACCEL', 'auto')}): per request")
    print(f"{'kind':<6} {'lanes':>5} {'ctxsw':>7} {'syscalls':>9} {'instr':>9}  by name")
    for spec in specs.split(","):
        kind, _, lanes_text = spec.partition(":")
        lanes = int(lanes_text or "1")

        def make(i: int) -> bytes:
            return request(i, "hello")

        ctx = perf_pipes.serve(kind, lanes, make, warmup, n, env=env)["ctxsw"]
        calls = perf_pipes.strace_counts(kind, lanes, make, warmup, max(n // 2, 500), env)
        ins = perf_pipes.instructions(kind, lanes, make, warmup, max(n // 4, 200), env) if with_instructions else None
        named = " ".join(f"{k} {fmt(round(v, 2))}" for k, v in calls.items())
        print(f"{kind:<6} {lanes:>5} {fmt(round(ctx, 2)):>7} {fmt(round(sum(calls.values()), 2)):>9} "
              f"{fmt(round(ins)) if ins is not None else '-':>9}  {named}", flush=True)


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--child":  # one run under valgrind: no profiler, no output
        kind, workload, warmup, n = argv[1], argv[2], int(argv[3]), int(argv[4])
        serve(kind, workload, warmup, n, profile=False, top=0)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=2000, help="requests counted per kind and workload")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--kinds", default="plain,asgi,wsgi")
    ap.add_argument("--workloads", default="hello,echo1k")
    ap.add_argument("--top", type=int, default=0, help="also list the N most called functions per request")
    ap.add_argument("--instructions", action="store_true", help="also CPU instructions per request (valgrind)")
    ap.add_argument("--pipes", default="", help="also real workers on real pipes: kind:lanes,... (e.g. asgi:8)")
    args = ap.parse_args(argv)
    try:
        from afterburn_runtime import _accel

        accel = _accel.describe()
    except ImportError:
        accel = "none (this library has none)"
    print(f"python {sys.version.split()[0]}; accelerators: {accel}")
    header = f"{'kind':<6} {'workload':<8} " + " ".join(f"{c:>10}" for c in COLUMNS)
    if args.instructions:
        header += f" {'instr':>10}"
    print(header)
    tops = []
    for workload in args.workloads.split(","):
        for kind in args.kinds.split(","):
            r = serve(kind, workload, args.warmup, args.n, profile=True, top=args.top)
            line = f"{kind:<6} {workload:<8} " + " ".join(f"{fmt(r[c]):>10}" for c in COLUMNS)
            if args.instructions:
                ins = instructions(kind, workload, max(args.n // 4, 200), args.warmup)
                line += f" {fmt(round(ins)) if ins is not None else '-':>10}"
            print(line, flush=True)
            if args.top:
                tops.append((kind, workload, r["top"]))
    if args.pipes:
        pipes_report(args.pipes, args.n, args.warmup, args.instructions)
    for kind, workload, top in tops:
        print(f"\n{kind} {workload}: calls per request")
        for c, name in top:
            print(f"  {c:8.2f}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
