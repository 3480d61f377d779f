"""The single fork, the library's side (PROTOCOL.md §2.6, "Workers that stay the template's
children", capability ``fork-child``): a template driven over its control socket as the
watchdog drives it under isolation=request."""

from __future__ import annotations

import os
import signal
import time

import pytest
from workers import HANDSHAKE
from templates import ASGI, PLAIN, Forked, Template, gone_with_its_template, read_all, stat, subreaper, until  # noqa: F401  (autouse)

from afterburn_runtime import _control


def fork_child(t: Template, slot: int) -> tuple[bytes, Forked | None]:
    return t.fork(slot, child=True)


def reap(t: Template, pid: int) -> None:
    """The watchdog's word (§2.6): no answer; the template reaps the pid."""
    t.sock.send(b"reap %d\n" % pid)
    until(f"pid {pid} reaped", lambda: stat(pid) is None)


def test_worker_stays_the_templates_child_and_is_reaped_only_on_the_watchdogs_word(tmp_path) -> None:
    t = Template(env={"AFTERBURN_ISOLATION": "request", "AFTERBURN_TMPDIR_ROOT": str(tmp_path)})
    t.handshake()
    reply, w = fork_child(t, 1)
    assert w is not None, reply
    assert reply == b"forked 1 %d\n" % w.pid
    hs = w.handshake()
    got = w.info()
    assert got["ppid"] == t.proc.proc.pid  # one fork: the template's child, no middle
    assert got["pgid"] == w.pid  # §2.1: a group of its own
    # §2.7: it made its TMPDIR itself, in the root, after its pid, and named it in its reply.
    mine = hs.headers.get("afterburn-tmpdir")
    assert mine is not None and os.path.dirname(mine) == str(tmp_path), hs.headers
    assert os.path.basename(mine).startswith(f"{w.pid}-")
    assert got["tmpdir"] == got["env_tmpdir"] == mine
    assert os.stat(mine).st_mode & 0o777 == 0o700

    w.close_requests()  # §2.7: EOF after its exchange; it exits at once
    assert t.sock.recv(1024) == b"exited %d exit 0\n" % w.pid
    # §2.6: not reaped: the pid, and its group's id, cannot be reused yet.
    assert stat(w.pid) == ("Z", t.proc.proc.pid)
    time.sleep(0.1)
    assert stat(w.pid) == ("Z", t.proc.proc.pid)
    reap(t, w.pid)

    reply, w2 = fork_child(t, 1)  # the template serves on
    assert w2 is not None, reply
    w2.handshake()
    os.kill(w2.pid, signal.SIGKILL)
    assert t.sock.recv(1024) == b"exited %d signal 9\n" % w2.pid
    reap(t, w2.pid)
    status, log = t.close()
    assert status == 0, log


def test_worker_that_cannot_make_its_tmpdir_exits_before_its_handshake_saying_why(tmp_path) -> None:
    """§2.7: a failed fork, as the watchdog sees it: the worker exits 1 before its handshake,
    the reason on its stderr; the template reports the exit and serves on."""
    root = tmp_path / "gone"
    t = Template(env={"AFTERBURN_ISOLATION": "request", "AFTERBURN_TMPDIR_ROOT": str(root)})
    t.handshake()
    reply, w = fork_child(t, 1)
    assert w is not None, reply
    assert t.sock.recv(1024) == b"exited %d exit 1\n" % w.pid
    assert w.rest() == b""  # no handshake reply
    err = read_all(w.log)
    assert f"cannot make its temporary directory in {root}: ENOENT: No such file or directory" in err, err
    reap(t, w.pid)
    root.mkdir()
    reply, w = fork_child(t, 1)
    assert w is not None, reply
    assert os.path.dirname(w.handshake().headers.get("afterburn-tmpdir", "")) == str(root)
    status, log = t.close()
    assert status == 0, log
    gone_with_its_template(w.pid)


def test_worker_forked_unasked_answers_the_handshake_without_one(tmp_path) -> None:
    """§2.6, capability ``unasked-handshake``: a template lists it beside ``fork-child``; a worker
    forked with ``fork-child <slot> unasked`` writes its handshake reply, its TMPDIR named, with
    no handshake request written to it, then serves; a repeated handshake (§3.5) is answered as
    ever. Without ``unasked`` nothing comes before the watchdog's handshake."""
    t = Template(env={"AFTERBURN_ISOLATION": "request", "AFTERBURN_TMPDIR_ROOT": str(tmp_path)})
    t.proc.send(HANDSHAKE)
    caps = t.proc.response(timeout=20).headers.get("afterburn-capabilities", "")
    assert [c.strip() for c in caps.split(",")] == ["exchange", "fork", "fork-child", "unasked-handshake"], caps
    reply, w = t.fork(1, child=True, unasked=True)
    assert w is not None, reply
    hs = w.response(timeout=10)  # nothing was sent to it
    assert hs.status == 200 and hs.headers.get("afterburn-protocol") == "1", hs
    assert os.path.dirname(hs.headers.get("afterburn-tmpdir", "")) == str(tmp_path), hs.headers
    assert w.info()["tmpdir"] == hs.headers["afterburn-tmpdir"]
    w.handshake()  # §3.5: a repeated handshake is asked, and answered
    w.close_requests()
    assert t.sock.recv(1024) == b"exited %d exit 0\n" % w.pid
    reap(t, w.pid)

    reply, w = fork_child(t, 1)  # asked as before
    assert w is not None, reply
    with pytest.raises(AssertionError):
        w.response(timeout=0.3)
    w.handshake()
    status, log = t.close()
    assert status == 0, log
    gone_with_its_template(w.pid)


# A template whose workers wait, in an after-fork hook, until the watchdog's end of their
# response pipe is closed (POLLERR on fd 4): the unasked reply then finds no reader.
_READER_GONE_FIRST = """
import runpy, select, sys, time
import afterburn_runtime

@afterburn_runtime.after_fork
def wait_for_the_reader_to_go():
    p = select.poll()
    p.register(4, select.POLLOUT)
    deadline = time.monotonic() + 10
    while not any(ev & select.POLLERR for _, ev in p.poll(100)):
        assert time.monotonic() < deadline, "the response pipe's reader stayed"
        time.sleep(0.001)

sys.argv = ["afterburn_runtime", "fork_app:handle"]
runpy.run_module("afterburn_runtime", run_name="__main__")
"""


def test_unasked_reply_into_a_closed_pipe_exits_1_saying_why(tmp_path) -> None:
    """A worker forked unasked whose response pipe has no reader (the watchdog gone) cannot
    write its reply: it says why on its stderr and exits 1, as a failed fork (§2.6)."""
    t = Template(["-c", _READER_GONE_FIRST], env={"AFTERBURN_ISOLATION": "request", "AFTERBURN_TMPDIR_ROOT": str(tmp_path)})
    t.handshake()
    reply, w = t.fork(1, child=True, unasked=True)
    assert w is not None, reply
    os.close(w.resp)
    assert t.sock.recv(1024) == b"exited %d exit 1\n" % w.pid
    err = read_all(w.log)
    assert "the response pipe is closed; the watchdog is gone" in err, err
    reap(t, w.pid)
    status, log = t.close()
    assert status == 0, log


# A template whose pidfd_open fails once its worker has made its temporary directory: the
# worker got that far, and its pid will never reach the watchdog (§2.6 "Errors", §2.7).
_PIDFD_FAILS = """
import errno, os, runpy, sys, time
from afterburn_runtime import _children

def add(self, pid):
    root = os.environ["AFTERBURN_TMPDIR_ROOT"]
    deadline = time.monotonic() + 10
    while not any(n.startswith(f"{pid}-") for n in os.listdir(root)):
        assert time.monotonic() < deadline, "the worker made no directory"
        time.sleep(0.001)
    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

_children.Children.add = add
sys.argv = ["afterburn_runtime", "fork_app:handle"]
runpy.run_module("afterburn_runtime", run_name="__main__")
"""


def test_fork_that_fails_after_the_fork_leaves_no_temporary_directory(tmp_path) -> None:
    """§2.7: a template that cannot watch the worker it forked answers "failed", kills and
    reaps it, and removes the directory the worker had made: the watchdog, with no pid, could
    not."""
    t = Template(["-c", _PIDFD_FAILS], env={"AFTERBURN_ISOLATION": "request", "AFTERBURN_TMPDIR_ROOT": str(tmp_path)})
    t.handshake()
    reply, w = fork_child(t, 1)
    assert w is None
    assert reply == b"failed 1 pidfd_open: EMFILE: Too many open files\n", reply
    assert os.listdir(tmp_path) == []
    status, log = t.close()
    assert status == 0, log


def test_reap_of_a_pid_not_reported_exited_is_a_protocol_error() -> None:
    t = Template()
    t.handshake()
    reply, w = fork_child(t, 1)
    assert w is not None, reply
    t.sock.send(b"reap %d\n" % w.pid)  # alive: not the watchdog's to reap yet
    assert t.sock.recv(1024) == b""
    status, log = t.close()
    assert status == 1 and f"reap of pid {w.pid}, not a worker reported exited" in log, log
    gone_with_its_template(w.pid)


def test_template_killed_takes_its_workers_with_it() -> None:
    t = Template()
    t.handshake()
    workers = []
    for slot in (1, 2):
        reply, w = fork_child(t, slot)
        assert w is not None, reply
        w.handshake()  # set up: PR_SET_PDEATHSIG armed
        workers.append(w)
    os.kill(t.proc.proc.pid, signal.SIGKILL)
    t.proc.wait()
    for w in workers:
        # Re-parented to this process (a child subreaper, as the watchdog is) and killed.
        status = gone_with_its_template(w.pid)
        assert status is None or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL), status


def test_control_socket_end_with_a_worker_alive_exits_0_and_the_worker_dies() -> None:
    t = Template()
    t.handshake()
    reply, w = fork_child(t, 1)
    assert w is not None, reply
    w.handshake()
    status, log = t.close()
    assert status == 0, log
    gone_with_its_template(w.pid)


# -- the pure parts ---------------------------------------------------------------------


@pytest.mark.parametrize("data, nfds, want", [
    (b"fork-child 1\n", 4, _control.ForkRequest("1", None, True)),
    (b"fork-child 12 unasked\n", 4, _control.ForkRequest("12", None, True, True)),
    (b"fork 2\n", 4, _control.ForkRequest("2", None, False)),
    (b"reap 1234\n", 0, _control.Reap(1234)),
])
def test_parse(data: bytes, nfds: int, want: object) -> None:
    assert _control.parse(data, nfds) == want


@pytest.mark.parametrize("data, nfds, truncated", [
    (b"fork-child 0\n", 4, False),
    (b"fork-child 1\n", 3, False),
    (b"fork-child 1 rel\n", 4, False),
    (b"fork-child 1 unasked \n", 4, False),
    (b"fork-child 1 unasked\n", 3, False),
    (b"fork-child unasked\n", 4, False),
    (b"fork 1 unasked\n", 4, False),
    (b"fork-child 3 /tmp/afterburn-requests-x/w3-7\n", 4, False),  # §2.7: the worker makes its own
    (b"fork-child1\n", 4, False),
    (b"reap 0\n", 0, False),
    (b"reap 012\n", 0, False),
    (b"reap -5\n", 0, False),
    (b"reap x\n", 0, False),
    (b"reap 12", 0, False),
    (b"reap 12\n", 4, False),
    (b"reap 12\n", 0, True),
    (b"reap 1234567890\n", 0, False),
])
def test_parse_rejects(data: bytes, nfds: int, truncated: bool) -> None:
    with pytest.raises(_control.ControlError):
        _control.parse(data, nfds, truncated)


@pytest.mark.parametrize("code, status, want", [
    (os.CLD_EXITED, 0, b"exited 42 exit 0\n"),
    (os.CLD_EXITED, 3, b"exited 42 exit 3\n"),
    (os.CLD_KILLED, 9, b"exited 42 signal 9\n"),
    (os.CLD_DUMPED, 11, b"exited 42 signal 11\n"),
])
def test_exit_report(code: int, status: int, want: bytes) -> None:
    assert _control.exited(42, os.waitid_result((42, 0, signal.SIGCHLD, status, code))) == want



@pytest.mark.parametrize("layout", [
    (3, 4, 6, 7),  # the usual: the template's own 3 and 4 closed, 5 its control socket
    (6, 7, 8, 9),  # none in place, none on a target
    (6, 7, 3, 4),  # on each other's targets: by way of high numbers
    (4, 3, 2, 1),
])
def test_move_fds_puts_each_pipe_on_its_number_with_the_right_inheritance(layout: tuple[int, ...]) -> None:
    """§2.6: request read end on 3, response write end on 4 (close-on-exec), stdout and
    stderr log pipes on 1 and 2 (inherited by what the handler starts), wherever they arrive."""
    from afterburn_runtime import _template

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        try:
            os.close(r)
            pipes = [os.pipe() for _ in range(4)]
            inos = [os.fstat(p[0]).st_ino for p in pipes]
            high = [os.dup(p[0]) + 100 for p in pipes]  # numbers out of the way first
            for p, h in zip(pipes, high):
                os.dup2(p[0], h)
            for p in pipes:
                os.close(p[0])
                os.close(p[1])
            for h, fd in zip(high, layout):
                os.dup2(h, fd, inheritable=False)  # as MSG_CMSG_CLOEXEC delivers them
                os.close(h)
            _template._move_fds(list(layout))
            got = [(os.fstat(t).st_ino, os.get_inheritable(t)) for t in (3, 4, 1, 2)]
            want = list(zip(inos, (False, False, True, True)))
            moved_away = [fd for fd in layout if fd not in (1, 2, 3, 4) and _open(fd)]
            os.write(w, repr((got == want, moved_away)).encode())
        finally:
            os._exit(0)
    os.close(w)
    report = os.read(r, 1024).decode()
    os.close(r)
    os.waitpid(pid, 0)
    assert report == "(True, [])", report


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.mark.parametrize("args", [PLAIN, ASGI], ids=["plain", "asgi"])
def test_worker_of_one_request_warms_up_unseen_by_the_function(tmp_path, args) -> None:
    """§2.7 "Warm spares": a worker forked for one request has run the library's synthetic
    request by the time it answers its handshake, and the function never saw it: its first
    request is the first call of the function in that process."""
    t = Template(args, env={"AFTERBURN_ISOLATION": "request", "AFTERBURN_TMPDIR_ROOT": str(tmp_path)})
    t.handshake()
    reply, w = fork_child(t, 1)
    assert w is not None, reply
    w.handshake()
    got = w.info()
    assert got["warmed"] is True, got
    assert got["calls"] == 1, got
    w.close_requests()
    assert t.sock.recv(1024) == b"exited %d exit 0\n" % w.pid
    reap(t, w.pid)
    status, log = t.close()
    assert status == 0, log
    assert "warming up failed" not in log, log


def test_worker_of_a_pool_does_not_warm_up() -> None:
    """A worker forked to serve many requests (isolation=none) warms up on its first request
    like any worker: no synthetic request."""
    t = Template()
    t.handshake()
    reply, w = t.fork(1)
    assert w is not None, reply
    w.handshake()
    got = w.info()
    assert got["warmed"] is not True, got
    assert got["calls"] == 1, got
    status, _, _ = w.wait()
    assert status == 0
    status, log = t.close()
    assert status == 0, log
