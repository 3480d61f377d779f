"""Fork mode, the library's side (PROTOCOL.md §2.6): a template process driven directly
over its pipes and its control socket, as the watchdog drives it (templates.py). This process
makes itself a child subreaper, as the watchdog does, so forked workers become its children."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess

import pytest
from templates import ASGI, GET, Template, subreaper  # noqa: F401  (subreaper: autouse)
from workers import HANDSHAKE

from afterburn_runtime import _control, _forksafety


def _foreign(fds: dict[str, str]) -> dict[int, str]:
    """The descriptors past fd 4 that are not /dev/null, the kind of a socket kept."""
    return {int(fd): "socket" if what.startswith("socket:") else what
            for fd, what in fds.items() if int(fd) > 4 and what != "/dev/null"}


def test_template_answers_the_handshake_listing_fork_then_forks_workers_that_serve() -> None:
    t = Template()
    t.proc.send(HANDSHAKE)
    hs = t.proc.response(timeout=20)
    assert (hs.status, hs.headers.get("afterburn-capabilities")) == (200, "exchange, fork, fork-child, unasked-handshake")  # §2.6, §3.2
    assert t.proc.rest() == b""  # fds 3 and 4 are closed after the reply: EOF, nothing more

    reply, w1 = t.fork(1)
    assert w1 is not None, reply
    assert reply == b"forked 1 %d\n" % w1.pid
    hs = w1.handshake()  # the exact bytes of §3.1 on the worker's own pipes
    assert hs.headers.get("afterburn-capabilities") == "exchange"  # a worker is no template
    got = w1.info()
    assert got["pid"] == w1.pid
    assert got["ppid"] == os.getpid()  # re-parented to the subreaper, the middle is gone
    assert got["pgid"] == w1.pid == os.getpgid(w1.pid)  # §2.1: a group of its own
    assert got["worker_id"] == "1"
    assert got["gc_enabled"] is True and got["gc_frozen"] > 0  # frozen by the template, on again here
    assert got["after_fork"] == [w1.pid]
    # Only the protocol's descriptors: not the control socket, not the pid pipe, not the
    # file initialisation opened (§2.6), whose number now names /dev/null.
    assert _foreign(got["fds"]) == {}, got["fds"]
    assert got["fds"]["0"] == "/dev/null"

    reply, w2 = t.fork(2)
    assert w2 is not None, reply
    w2.handshake()
    got2 = w2.info()
    assert got2["worker_id"] == "2" and got2["ppid"] == os.getpid()
    assert got2["random"] != got["random"]  # §2.6: generators differ between workers

    w2.send(GET % b"print")
    assert w2.response(timeout=10).body == b"printed"
    assert w1.wait() == (0, "", "")  # §9.4: EOF on its request pipe between requests
    status, out, err = w2.wait()
    assert status == 0 and out == "hello from a worker\n"  # its stdout is its own log pipe

    status, log = t.close()
    assert status == 0, log  # §2.6: a template exits 0 when its control socket ends
    assert "before_fork: gc enabled=True frozen=False" in log  # before the first fork
    assert "before_fork: gc enabled=False frozen=True" in log  # collect, freeze, disable: once
    assert "hello from a worker" not in log


def test_isolated_worker_gets_its_tmpdir_and_exits_at_once_after_eof(tmp_path) -> None:
    """§2.7: the fork request names the worker's TMPDIR, which it uses even though the
    template looked its own up already; under AFTERBURN_ISOLATION=request it exits at the EOF
    after its exchange without the interpreter's finalisation (atexit handlers do not run)."""
    t = Template(env={"AFTERBURN_ISOLATION": "request", "FORK_APP_ATEXIT": "1"})
    t.handshake()
    mine = tmp_path / "w1-1"
    mine.mkdir()
    reply, w = t.fork(1, str(mine))
    assert w is not None, reply
    w.handshake()
    got = w.info()
    assert (got["tmpdir"], got["env_tmpdir"]) == (str(mine), str(mine))
    status, out, err = w.wait()
    assert status == 0 and f"atexit in {w.pid}" not in err, err
    t.close()


def test_worker_without_isolation_runs_atexit_at_eof() -> None:
    """The contrast: a forked worker outside isolation=request finalises as usual."""
    t = Template(env={"FORK_APP_ATEXIT": "1"})
    t.handshake()
    reply, w = t.fork(1)
    assert w is not None, reply
    w.handshake()
    assert w.info()["env_tmpdir"] == os.environ.get("TMPDIR")  # the template's own, unchanged
    status, out, err = w.wait()
    assert status == 0 and f"atexit in {w.pid}" in err, err
    t.close()


def test_asgi_app_lifespan_runs_in_the_template_and_workers_get_their_own_loop() -> None:
    t = Template(ASGI)
    t.handshake()
    workers = []
    for slot in (1, 2):
        reply, w = t.fork(slot)
        assert w is not None, reply
        w.handshake()
        workers.append(w)
    infos = [w.info() for w in workers]
    for w, got in zip(workers, infos):
        assert got["pid"] == w.pid and got["ppid"] == os.getpid()
        # Besides 0-4, only the loop's own epoll instance and self-pipe, new in this worker.
        foreign = _foreign(got["fds"])
        assert sorted(foreign.values()) == ["anon_inode:[eventpoll]", "socket", "socket"], got["fds"]
    # Not the template's self-pipe, shared: each worker's is its own.
    pipes = [{v for v in got["fds"].values() if v.startswith("socket:")} for got in infos]
    assert not pipes[0] & pipes[1], pipes
    for w in workers:
        status, _, err = w.wait()
        assert status == 0 and f"lifespan shutdown in {w.pid}" in err, err
    status, log = t.close()
    assert status == 0 and f"lifespan shutdown in {t.proc.proc.pid}" in log, log


def test_wsgi_app_in_a_template() -> None:
    t = Template(["-m", "afterburn_runtime", "--wsgi", "fork_app:wsgi"])
    t.handshake()
    reply, w = t.fork(1)
    assert w is not None, reply
    w.handshake()
    got = w.info()
    assert got["worker_id"] == "1" and got["ppid"] == os.getpid() and _foreign(got["fds"]) == {}
    assert w.wait()[0] == 0
    assert t.close()[0] == 0


def test_numpy_imported_forks_and_workers_draw_different_numbers() -> None:
    pytest.importorskip("numpy")
    t = Template(env={"FORK_APP_NUMPY": "1"})
    t.handshake()
    tasks = len(os.listdir(f"/proc/{t.proc.proc.pid}/task"))
    assert tasks >= 2 or os.cpu_count() == 1  # OpenBLAS's pool is running in the template
    infos = []
    for slot in (1, 2):
        reply, w = t.fork(slot)
        assert w is not None, reply  # its pool is fork-safe (pthread_atfork)
        w.handshake()
        infos.append(w.info())
        assert w.wait()[0] == 0
    assert infos[0]["numpy"] != infos[1]["numpy"]  # the legacy global generator was reseeded
    assert infos[0]["random"] != infos[1]["random"]
    assert t.close()[0] == 0


def test_python_thread_in_the_template_fails_the_fork_naming_it() -> None:
    t = Template(env={"FORK_APP_THREAD": "1"})
    t.handshake()
    reply, w = t.fork(1)
    assert w is None
    assert reply.startswith(b"failed 1 ") and reply.endswith(b"\n") and reply.count(b"\n") == 1
    assert b"'model-prefetch'" in reply and b"after_fork" in reply
    assert t.close()[0] == 0


NATIVE_THREAD_C = b"""
#include <pthread.h>
#include <unistd.h>
static void *sleeper(void *arg) { for (;;) pause(); return arg; }
int start_thread(void) { pthread_t t; return pthread_create(&t, 0, sleeper, 0); }
"""


@pytest.fixture(scope="module")
def native_thread_lib(tmp_path_factory: pytest.TempPathFactory) -> str:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("native")
    (d / "thread.c").write_bytes(NATIVE_THREAD_C)
    subprocess.run([cc, "-shared", "-fPIC", "-pthread", "-o", str(d / "thread.so"), str(d / "thread.c")], check=True)
    return str(d / "thread.so")


def test_unknown_native_thread_fails_the_fork(native_thread_lib: str) -> None:
    t = Template(env={"FORK_APP_NATIVE": native_thread_lib})
    t.handshake()
    reply, w = t.fork(1)
    assert w is None
    assert reply.startswith(b"failed 1 refusing to fork with 1 native thread(s)"), reply
    assert b"after_fork" in reply and b"exec" in reply
    assert t.close()[0] == 0


def test_unknown_native_thread_beside_openblas_fails_the_fork(native_thread_lib: str) -> None:
    pytest.importorskip("numpy")
    t = Template(env={"FORK_APP_NATIVE": native_thread_lib, "FORK_APP_NUMPY": "1"})
    t.handshake()
    reply, w = t.fork(1)
    assert w is None and reply.startswith(b"failed 1 refusing to fork"), reply
    assert t.close()[0] == 0


def test_fork_failure_is_answered_and_the_template_keeps_serving() -> None:
    t = Template(env={"FORK_APP_EAGAIN": "1"})
    t.handshake()
    reply, w = t.fork(3)
    assert reply == b"failed 3 EAGAIN: Resource temporarily unavailable\n" and w is None
    reply, w = t.fork(3)
    assert w is not None, reply
    w.handshake()
    assert w.info()["worker_id"] == "3"
    assert w.wait()[0] == 0
    assert t.close()[0] == 0


def test_before_fork_hook_that_raises_fails_the_fork_naming_it() -> None:
    t = Template(env={"FORK_APP_BEFORE_FAIL": "1"})
    t.handshake()
    reply, w = t.fork(1)
    assert reply == b"failed 1 before_fork hook fork_app.refuse raised ValueError: no forks today\n"
    assert t.close()[0] == 0


def test_after_fork_hook_that_raises_is_an_initialisation_failure() -> None:
    t = Template(env={"FORK_APP_AFTER_FAIL": "1"})
    t.handshake()
    reply, w = t.fork(1)
    assert w is not None, reply
    status, _, err = w.wait()
    assert status == 1  # §9.1: exits before its handshake, the reason on stderr
    assert "after_fork hook fork_app.record raised RuntimeError: cannot connect" in err
    assert "Traceback" in err
    assert t.close()[0] == 0


def test_control_socket_eof_before_any_fork_exits_0() -> None:
    t = Template()
    t.handshake()
    status, log = t.close()
    assert status == 0, log


@pytest.mark.parametrize("text, nfds", [
    (b"fork x\n", 4),
    (b"fork 1\n", 3),
    (b"spawn 1\n", 4),
    (b"fork 1", 4),
])
def test_malformed_control_message_exits_non_zero(text: bytes, nfds: int) -> None:
    t = Template()
    t.handshake()
    pipes = [os.pipe() for _ in range(nfds)]
    socket.send_fds(t.sock, [text], [r for r, _ in pipes])
    for r, w in pipes:
        os.close(r)
        os.close(w)
    assert t.sock.recv(1024) == b""  # no answer: the template is gone
    status, log = t.close()
    assert status == 1 and "protocol error on the control socket" in log, log


def test_template_given_a_request_instead_of_the_handshake_exits_non_zero() -> None:
    t = Template()
    t.proc.send(GET % b"x")
    status, log = t.close()
    assert status == 1 and "before the handshake" in log


# -- the pure parts ---------------------------------------------------------------------


@pytest.mark.parametrize("data, nfds, slot, tmpdir", [
    (b"fork 1\n", 4, "1", None),
    (b"fork 12\n", 4, "12", None),
    # §2.7: under isolation=request the worker's temporary directory follows the slot.
    (b"fork 3 /tmp/afterburn-requests-x/w3-7\n", 4, "3", "/tmp/afterburn-requests-x/w3-7"),
    (b"fork 3 /tmp/a dir with spaces/w3-8\n", 4, "3", "/tmp/a dir with spaces/w3-8"),
])
def test_parse_fork(data: bytes, nfds: int, slot: str, tmpdir: str | None) -> None:
    # The double fork: neither fork-child nor its unasked handshake.
    assert _control.parse_fork(data, nfds) == _control.ForkRequest(slot, tmpdir, child=False, unasked=False)


@pytest.mark.parametrize("data, nfds, truncated", [
    (b"fork 0\n", 4, False),  # slot 0 is the template's
    (b"fork 01\n", 4, False),
    (b"fork -1\n", 4, False),
    (b"fork 1 \n", 4, False),
    (b"fork 1\r\n", 4, False),
    (b"fork \xd9\xa1\n", 4, False),  # a non-ASCII digit
    (b"fork 1\n", 0, False),
    (b"fork 1\n", 5, False),
    (b"fork 1\n", 4, True),
    (b"", 4, False),
    (b"fork 1 relative/dir\n", 4, False),  # §2.7: the temporary directory is absolute
    (b"fork 1 /tmp/x\ry\n", 4, False),
    (b"fork 1 /tmp/x\x00y\n", 4, False),
])
def test_parse_fork_rejects(data: bytes, nfds: int, truncated: bool) -> None:
    with pytest.raises(_control.ControlError):
        _control.parse_fork(data, nfds, truncated)


def test_answers_are_one_line_within_one_record() -> None:
    assert _control.forked("2", 4242) == b"forked 2 4242\n"
    long = _control.failed("2", "a\nb " + "é" * 400)
    assert long.startswith(b"failed 2 a b ") and long.endswith(b"...\n") and long.count(b"\n") == 1
    assert len(long) <= _control.MAX_MESSAGE
    long.decode()  # never a cut character
    assert _control.os_reason(OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))) == "ENOMEM: Cannot allocate memory"


@pytest.mark.parametrize("python_threads, tasks, openblas, refused", [
    ([], 1, None, False),
    ([], 2, None, True),  # a native thread nobody vouches for
    ([], 2, 2, False),  # NumPy on 2 CPUs: OpenBLAS's pool of 1
    ([], 4, 4, False),
    ([], 3, 2, True),  # one more than OpenBLAS's pool
    ([], 2, 1, True),  # a single-threaded OpenBLAS has no pool
    (["prefetch"], 2, None, True),
    (["prefetch"], 2, 4, True),  # a Python thread is never fork-safe
])
def test_fork_safety_rule(python_threads: list[str], tasks: int, openblas: int | None, refused: bool) -> None:
    reason = _forksafety.decide(python_threads, tasks, openblas)
    assert (reason is not None) == refused, reason
    if python_threads:
        assert "'prefetch'" in reason and "after_fork" in reason  # type: ignore[operator]


def test_exec_handshake_reply_lists_no_fork() -> None:
    # An exec worker lists lanes (§2.5) but never `fork`; a forked worker lists `exchange` only.
    from afterburn_runtime._exchange import FORKED_HEAD, handshake_head

    assert handshake_head(32) == ("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: python/0.1.0\r\n"
                                  "AfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: 32\r\n")
    assert FORKED_HEAD == ("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: python/0.1.0\r\n"
                           "AfterBurn-Capabilities: exchange\r\n")




def test_a_loop_that_cannot_be_renewed_refuses_the_fork() -> None:
    """§2.6: renewing a forked worker's event loop leans on asyncio's private attributes; a
    loop without them is named, so that the template refuses to fork rather than share its
    selector with every worker."""
    from afterburn_runtime import _aio

    class Bare:
        def is_closed(self) -> bool:
            return False

    class FakeRunner:
        loop = Bare()

    fake = FakeRunner()
    _aio._live.append(fake)  # type: ignore[arg-type]
    try:
        reason = _aio.unrenewable()
        assert reason is not None and "_selector" in reason and "exec" in reason
        import pytest

        with pytest.raises(RuntimeError):
            _aio.renew_after_fork()
    finally:
        _aio._live.remove(fake)  # type: ignore[arg-type]
    # asyncio's own loop has what renewal uses, on the Python that runs these tests.
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        assert all(hasattr(loop, name) for name in _aio._RENEWED)
    finally:
        loop.close()
