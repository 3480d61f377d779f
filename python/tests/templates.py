"""A template process driven over its pipes and its control socket as the watchdog drives it
(PROTOCOL.md §2.6), shared by the tests of the double fork (test_fork.py) and of the single
fork (test_fork_child.py). The ``subreaper`` fixture makes this process a child subreaper, as
the watchdog is, so forked workers, and what they leave behind, become its children."""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from workers import HANDSHAKE, Worker

PR_SET_CHILD_SUBREAPER = 36
PLAIN = ["-m", "afterburn_runtime", "fork_app:handle"]
ASGI = ["-m", "afterburn_runtime", "--asgi", "fork_app:app"]
GET = b"GET /%s HTTP/1.1\r\nHost: fn\r\n\r\n"


@pytest.fixture(scope="module", autouse=True)
def subreaper() -> Iterator[None]:
    """Autouse in each module that imports it: forked workers are this process's children."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, os.strerror(ctypes.get_errno())
    yield
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def read_all(fd: int) -> str:
    """Everything on fd up to its end; closes it."""
    chunks = []
    while True:
        data = os.read(fd, 65536)
        if not data:
            os.close(fd)
            return b"".join(chunks).decode(errors="replace")
        chunks.append(data)


def stat(pid: int) -> tuple[str, int] | None:
    """(state, parent) of pid, None once it is gone (reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):  # gone between the open and the read
        return None
    return fields[0], int(fields[1])


def until(what: str, cond: Callable[[], bool]) -> None:
    """Waits up to 10 s for cond; fails naming what it waited for."""
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.002)


def gone_with_its_template(pid: int) -> int | None:
    """A worker of a template that ended dies with it (§2.6: PR_SET_PDEATHSIG) and is
    re-parented to this process, the subreaper, which reaps it as the watchdog would: its
    wait status, or None when it was gone already."""
    until(f"worker {pid} gone with its template", lambda: stat(pid) in (None, ("Z", os.getpid())))
    if stat(pid) is None:
        return None
    return os.waitpid(pid, 0)[1]


class Forked(Worker):
    """A worker the template forked: its four pipes, held here as the watchdog holds them."""

    def __init__(self, pid: int, req: int, resp: int, out: int, err: int) -> None:  # noqa: D107
        self.pid, self.req, self.resp, self.out, self.log, self.pending = pid, req, resp, out, err, b""

    def info(self) -> dict:
        self.send(GET % b"info")
        resp = self.response(timeout=10)
        assert resp.status == 200, resp
        return resp.json()

    def wait(self) -> tuple[int, str, str]:  # type: ignore[override]
        """Closes the request pipe; (exit status, stdout, stderr)."""
        self.close_requests()
        deadline = time.monotonic() + 20
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            assert time.monotonic() < deadline, f"worker {self.pid} did not exit"
            time.sleep(0.005)
        os.close(self.resp)
        return os.waitstatus_to_exitcode(status), read_all(self.out), read_all(self.log)


class Template:
    def __init__(self, args: list[str] = PLAIN, env: dict[str, str] | None = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # A number no dup2 of Worker's set-up lands on.
        high = fcntl.fcntl(theirs.fileno(), fcntl.F_DUPFD_CLOEXEC, 50)
        theirs.close()
        full_env = {"AFTERBURN_CONTROL_FD": "5", "AFTERBURN_WORKER_ID": "0", **(env or {})}
        self.proc = Worker(args, "fd", full_env, extra_fds={5: high})
        os.close(high)
        ours.settimeout(20)
        self.sock = ours

    def handshake(self) -> bytes:
        self.proc.send(HANDSHAKE)
        self.proc.response(timeout=20)
        return self.proc.pending  # nothing after the reply

    def send(self, text: bytes, fds: list[int]) -> bytes:
        socket.send_fds(self.sock, [text], fds)
        return self.sock.recv(1024)

    def fork(self, slot: int, tmpdir: str | None = None, child: bool = False,
             unasked: bool = False) -> tuple[bytes, Forked | None]:
        """Sends ``fork <slot> [<tmpdir>]``, or with ``child`` the single fork's ``fork-child``
        (§2.6), with ``unasked`` as ``fork-child <slot> unasked``, with the worker's four pipes;
        (the answer, the worker when it was forked)."""
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = b"fork-child %d" % slot if child else b"fork %d" % slot
        if tmpdir is not None:
            request += b" " + os.fsencode(tmpdir)
        if unasked:
            request += b" unasked"
        try:
            reply = self.send(request + b"\n", [req_r, resp_w, out_w, err_w])
        finally:
            for fd in (req_r, resp_w, out_w, err_w):
                os.close(fd)
        if not reply.startswith(b"forked "):
            for fd in (req_w, resp_r, out_r, err_r):
                os.close(fd)
            return reply, None
        pid = int(reply.split()[2])
        return reply, Forked(pid, req_w, resp_r, out_r, err_r)

    def close(self) -> tuple[int, str]:
        """Ends the control socket (shutdown, §9.4); (exit status, log)."""
        self.sock.close()
        return self.proc.wait()
