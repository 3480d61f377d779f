"""Running a real worker process on real pipes, as the watchdog (or the wire layer of the
conformance suite) does: fd mode on fds 3/4, stdio mode and the legacy set-up on 0/1."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from afterburn_runtime.testing import TestResponse, parse_response

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
HANDSHAKE = b"OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n"


class Worker:
    """A worker process. ``mode`` is "fd" (AFTERBURN_FDS=3,4), "stdio" (AFTERBURN_FDS=0,1)
    or "legacy" (no AFTERBURN_FDS: fds 0 and 1). ``extra_fds`` maps more descriptors of the
    child to descriptors of this process (a template's control socket, PROTOCOL.md §2.6)."""

    def __init__(self, args: list[str], mode: str = "fd", env: dict[str, str] | None = None,
                 extra_fds: dict[int, int] | None = None) -> None:
        extra = extra_fds or {}
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        log_r, log_w = os.pipe()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("AFTERBURN_")}
        full_env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HERE / "apps"), str(HERE / "fixture")])
        if mode == "fd":
            full_env["AFTERBURN_FDS"] = "3,4"
        elif mode == "stdio":
            full_env["AFTERBURN_FDS"] = "0,1"
        full_env.update(env or {})

        # pass_fds keeps 3 and 4, which child_fds makes the protocol pipes in fd mode.
        def child_fds() -> None:  # runs in the child between fork and exec
            # A worker gets SIGINT's default disposition, as the watchdog gives it: a test
            # runner started in the background (CI) has it ignored, and Python would then
            # never raise KeyboardInterrupt.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if mode == "fd":
                os.dup2(req_r, 3)
                os.dup2(resp_w, 4)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(log_w, 1)
            else:
                os.dup2(req_r, 0)
                os.dup2(resp_w, 1)
            os.dup2(log_w, 2)
            for target, source in extra.items():
                os.dup2(source, target)
            if extra:
                # A template must get no descriptor but its own (§2.2, §2.6): the copies
                # pass_fds kept would hold its pipes and its control socket open.
                for fd in {req_r, resp_w, log_w, *extra.values()} - {0, 1, 2, 3, 4, *extra}:
                    os.close(fd)

        self.proc = subprocess.Popen([sys.executable, *args], env=full_env, preexec_fn=child_fds,
                                     close_fds=True, pass_fds=(3, 4, req_r, resp_w, log_w, *extra, *extra.values()))
        for fd in (req_r, resp_w, log_w):
            os.close(fd)
        self.req = req_w
        self.resp = resp_r
        self.log = log_r
        self.pending = b""

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.req, view):]

    def close_requests(self) -> None:
        if self.req >= 0:
            os.close(self.req)
            self.req = -1

    def response(self, is_head: bool = False, timeout: float | None = None) -> TestResponse:
        """Reads one response from the response pipe (bytes after it are kept); with
        ``timeout``, fails when it has not fully arrived after that many seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                resp, rest = parse_response(self.pending, is_head)
                if resp.complete:
                    self.pending = rest
                    return resp
            except ValueError:
                pass
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.resp], [], [], left)[0]:
                    raise AssertionError(f"no complete response within {timeout} s; got {self.pending!r}")
            data = os.read(self.resp, 65536)
            if not data:
                resp, self.pending = parse_response(self.pending, is_head)
                return resp
            self.pending += data

    def rest(self) -> bytes:
        """Everything left on the response pipe up to its end."""
        out = self.pending
        while True:
            data = os.read(self.resp, 65536)
            if not data:
                self.pending = b""
                return out
            out += data

    def wait(self) -> tuple[int, str]:
        """Closes the request pipe, waits for the exit; returns (status, stderr)."""
        self.close_requests()
        status = self.proc.wait(timeout=30)
        chunks = []
        while True:
            data = os.read(self.log, 65536)
            if not data:
                break
            chunks.append(data)
        os.close(self.log)
        os.close(self.resp)
        return status, b"".join(chunks).decode(errors="replace")

    def handshake(self) -> TestResponse:
        self.send(HANDSHAKE)
        resp = self.response()
        assert resp.status == 200, resp
        assert resp.headers.get("afterburn-protocol") == "1"
        return resp
