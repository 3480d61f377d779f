"""Per-request counts of a real worker process on real pipes (issue 30), for
tests/perf_counts.py ``--pipes``: the worker is started as the watchdog starts it (fd mode,
lanes on fds 5.. with a cancel pipe when there are several), given the handshake, then a
warm-up and N requests, one in flight per lane, as the watchdog keeps them (§2.1, §2.5).

What it counts per request, each from the worker alone:

- ``syscalls``: every system call of every thread, by name, under ``strace -f -c``, run
  with N and 2N requests so that start-up cancels out: (S(2N) - S(N)) / N;
- ``instr``: user-space instructions under ``valgrind --tool=callgrind`` the same way
  (every thread; valgrind runs one at a time, which moves no count);
- ``ctxsw`` (voluntary + involuntary, /proc/PID/task/*/status) over the N requests of an
  unslowed run; CPU time is not reported: a shared machine moves it.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
BENCH_APPS = HERE.parents[1] / "bench" / "functions" / "python"
HANDSHAKE = b"OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n"

ARGS = {
    "plain": [str(BENCH_APPS / "afterburn_fn.py")],
    "asgi": ["-m", "afterburn_runtime", "--asgi", "asgi_app:app"],
    "wsgi": ["-m", "afterburn_runtime", "--wsgi", "wsgi_app:app"],
}


def _response_length(buf: bytes) -> int | None:
    """The length of the first whole response in buf (Content-Length framing), or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", buf[: end + 2])
    assert m is not None, buf[:300]
    n = end + 4 + int(m.group(1))
    return n if len(buf) >= n else None


class Worker:
    def __init__(self, kind: str, lanes: int, wrap: list[str], env: dict[str, str]) -> None:
        pairs = []  # (our write end, our read end, child's read, child's write) per lane
        for _ in range(lanes):
            rq_r, rq_w = os.pipe()
            rs_r, rs_w = os.pipe()
            pairs.append((rq_w, rs_r, rq_r, rs_w))
        cancel_r, cancel_w = os.pipe()
        targets = []  # child fd <- our fd
        for i, (_, _, r, w) in enumerate(pairs):
            targets += [(3 + 2 * i, r), (4 + 2 * i, w)]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("AFTERBURN_")}
        full_env.update(env)
        full_env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(BENCH_APPS)])
        full_env["AFTERBURN_FDS"] = "3,4"
        if lanes > 1:
            cfd = 3 + 2 * lanes
            targets.append((cfd, cancel_r))
            full_env["AFTERBURN_STREAM_FDS"] = ",".join(str(fd) for fd, _ in targets[2:-1])
            full_env["AFTERBURN_STREAM_CANCEL_FD"] = str(cfd)
        top = 3 + 2 * lanes + 1

        def child() -> None:  # between fork and exec: every source out of the way, then into place
            high = [(t, fcntl.fcntl(s, fcntl.F_DUPFD, top)) for t, s in targets]
            for t, h in high:
                os.dup2(h, t)
            os.closerange(top, 1024)

        self.proc = subprocess.Popen([*wrap, sys.executable, *ARGS[kind]], env=full_env, preexec_fn=child,
                                     close_fds=False, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _, _, r, w in pairs:
            os.close(r)
            os.close(w)
        os.close(cancel_r)
        self.cancel_w = cancel_w
        self.lanes = [(w, r) for w, r, _, _ in pairs]
        self.bufs = [b""] * lanes

    def exchange(self, lane: int, data: bytes) -> None:
        os.write(self.lanes[lane][0], data)

    def collect(self, pending: set[int]) -> list[tuple[int, bytes]]:
        """Waits for at least one response among the pending lanes; returns (lane, response)."""
        out = []
        fds = {self.lanes[i][1]: i for i in pending}
        ready, _, _ = select.select(list(fds), [], [], 60)
        assert ready, "no response in 60 s"
        for fd in ready:
            i = fds[fd]
            data = os.read(fd, 1 << 20)
            assert data, f"lane {i + 1}: the worker closed its response pipe: {self.proc.stderr.read()[-2000:]!r}"
            self.bufs[i] += data
            n = _response_length(self.bufs[i])
            if n is not None:
                out.append((i, self.bufs[i][:n]))
                self.bufs[i] = self.bufs[i][n:]
        return out

    def close(self) -> tuple[int, bytes]:
        for w, r in self.lanes:
            os.close(w)
        err = self.proc.stderr.read()
        rc = self.proc.wait(120)
        for w, r in self.lanes:
            os.close(r)
        os.close(self.cancel_w)
        return rc, err


def run_requests(worker: Worker, make, first: int, n: int) -> None:
    """n requests, one in flight per lane, as the watchdog keeps them."""
    lanes = len(worker.lanes)
    sent = 0
    pending: set[int] = set()
    for lane in range(min(lanes, n)):
        worker.exchange(lane, make(first + sent))
        pending.add(lane)
        sent += 1
    done = 0
    while done < n:
        for lane, resp in worker.collect(pending):
            assert resp.startswith(b"HTTP/1.1 200 "), resp[:200]
            done += 1
            pending.discard(lane)
            if sent < n:
                worker.exchange(lane, make(first + sent))
                pending.add(lane)
                sent += 1


def ctx_switches(pid: int) -> int:
    """Voluntary and involuntary context switches of every thread of pid so far."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/status") as f:
            total += sum(int(line.split()[-1]) for line in f if "ctxt_switches:" in line)
    return total


def serve(kind: str, lanes: int, make, warmup: int, n: int, wrap: list[str] | None = None,
          env: dict[str, str] | None = None) -> dict:
    worker = Worker(kind, lanes, wrap or [], env or {})
    worker.exchange(0, HANDSHAKE)
    (lane, resp), = worker.collect({0})
    assert resp.startswith(b"HTTP/1.1 200 "), resp
    run_requests(worker, make, 0, warmup)
    before = ctx_switches(worker.proc.pid)
    run_requests(worker, make, warmup, n)
    after = ctx_switches(worker.proc.pid)
    rc, err = worker.close()
    assert rc == 0, f"{kind}: exit {rc}: {err[-2000:]!r}"
    return {"ctxsw": (after - before) / n, "stderr": err}


def strace_counts(kind: str, lanes: int, make, warmup: int, n: int, env: dict[str, str]) -> dict[str, float]:
    """System calls per request by name, (S(2N) - S(N)) / N under strace -f -c."""
    totals = []
    for count in (n, 2 * n):
        out = f"/tmp/afterburn-perf-strace-{os.getpid()}.txt"
        serve(kind, lanes, make, warmup, count, ["strace", "-f", "-c", "-o", out], env)
        calls: dict[str, int] = {}
        with open(out) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                    calls[parts[-1]] = int(parts[3])
        os.unlink(out)
        totals.append(calls)
    names = set(totals[0]) | set(totals[1])
    per = {name: (totals[1].get(name, 0) - totals[0].get(name, 0)) / n for name in names}
    return {k: v for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v >= 0.005}


def instructions(kind: str, lanes: int, make, warmup: int, n: int, env: dict[str, str]) -> float | None:
    totals = []
    for count in (n, 2 * n):
        r = serve(kind, lanes, make, warmup, count, ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"],
                  env)
        text = r["stderr"].decode(errors="replace")
        m = re.search(r"Collected : (\d+)", text) or re.search(r"refs:\s+([\d,]+)", text)
        if m is None:
            return None
        totals.append(int(m.group(1).replace(",", "")))
    return (totals[1] - totals[0]) / n
