"""The template of fork mode and the start of each worker forked from it (PROTOCOL.md §2.6).

A process started with ``AFTERBURN_CONTROL_FD`` is a template: once user initialisation is
done it answers the handshake listing ``fork`` (``_serve.run``), closes fds 3 and 4 and
comes here. It reads one control message at a time (``_control``); for each ``fork
<slot>`` it double-forks:

    template ── fork ──▶ middle ── fork ──▶ worker
       │                   │ writes the worker's pid on a pipe, exits at once
       │ reads the pid, reaps the middle, then answers ``forked <slot> <pid>``
       ▼
    next message

so the worker is re-parented to the watchdog (a child subreaper) and the watchdog can never
see a pid whose exit it could miss. ``Template.serve`` returns only in a worker, once it is
set up as §2.6 says, and the caller then serves fds 3 and 4 as any worker. In the template
it ends with SystemExit: 0 when the control socket ends (shutdown, §9.4), non-zero on a
malformed message.
"""

from __future__ import annotations

# Imported here, in the template, so that every worker shares them rather than importing.
import ctypes
import fcntl
import gc
import os
import signal
import socket
import sys
import tempfile
import time
import warnings

from . import _alarm, _children, _control, _forksafety, _hooks, _state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_INT = 4  # sizeof(int): one descriptor in SCM_RIGHTS
# Room for more descriptors than a fork request carries, so that a message with too many
# is seen (and its descriptors closed) rather than cut silently (MSG_CTRUNC is checked too).
_ANC_SPACE = socket.CMSG_SPACE(16 * _INT)
PR_SET_PDEATHSIG = 1

# Looked up once, in the template: each worker would otherwise pay a dlopen for it.
_prctl = ctypes.CDLL(None, use_errno=True).prctl

# The fork the template calls, for both forks; tests replace it to simulate EAGAIN.
fork: Callable[[], int] = os.fork

# Python 3.12+ warns in os.fork() when the process has more than one OS thread, counted from
# /proc/self/stat, so NumPy's OpenBLAS pool counts. By then §2.6's fork-safety rule
# (_forksafety.probe) has judged this fork safe, so exactly that warning is silenced around
# the template's own forks; any other warning, and the same one elsewhere, is left alone.
_THREADS_WARNING = r"This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks in the child\."


def _fork() -> int:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_THREADS_WARNING, category=DeprecationWarning)
        return fork()


def log(message: str) -> None:
    _state.log(f"afterburn: template: {message}")


class Template:
    def __init__(self, control_fd: int) -> None:
        self.sock = socket.socket(fileno=control_fd)
        self.sock.set_inheritable(False)
        # §2.6: the template's parent is the watchdog, which workers must end up under.
        self.watchdog = os.getppid()
        self.pid = os.getpid()
        self.frozen = False
        self.children = _children.Children(self.sock)  # fork-child's workers (§2.6)
        # §2.7: where workers of the single fork make their temporary directories, given once.
        self.tmpdir_root = os.environ.get("AFTERBURN_TMPDIR_ROOT")

    def serve(self) -> str:
        """Answers fork requests until the control socket ends; returns the slot in a worker."""
        while True:
            try:
                self.children.await_message()
            except (BrokenPipeError, ConnectionResetError):
                log("control socket closed; exiting")  # the watchdog shut down meanwhile
                raise SystemExit(0) from None
            data, fds, truncated = self._receive()
            if not data and not fds:
                # §2.6, §9.4: shutdown; workers still forked once die with the template.
                log("control socket closed; exiting")
                raise SystemExit(0)
            try:
                request = _control.parse(data, len(fds), truncated)
                if type(request) is _control.Reap:
                    if not self.children.reap(request.pid):
                        raise _control.ControlError(f"reap of pid {request.pid}, not a worker reported exited")
                    continue
            except _control.ControlError as e:
                _close_all(fds)
                log(f"protocol error on the control socket: {e}")
                raise SystemExit(1) from None
            reply = self._fork(request, fds)
            if reply is None:
                return request.slot  # this process is the new worker, set up
            _close_all(fds)  # the template keeps none of the worker's pipes
            try:
                self.sock.send(reply)
            except (BrokenPipeError, ConnectionResetError):
                log("control socket closed; exiting")  # the watchdog shut down meanwhile
                raise SystemExit(0) from None

    def _receive(self) -> tuple[bytes, list[int], bool]:
        try:
            # Close-on-exec from the start: the template never execs, but _move_fds counts on it.
            data, ancdata, flags, _ = self.sock.recvmsg(_control.MAX_MESSAGE, _ANC_SPACE, socket.MSG_CMSG_CLOEXEC)
        except ConnectionResetError:
            return b"", [], False  # the control socket ended
        fds: list[int] = []
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % _INT
                fds += [int.from_bytes(payload[i:i + _INT], sys.byteorder) for i in range(0, usable, _INT)]
        truncated = bool(flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC))
        return data, fds, truncated

    def _fork(self, request: _control.ForkRequest, fds: list[int]) -> bytes | None:
        """One double fork (§2.6 steps 1-3). Returns the answer in the template, None in
        the new worker."""
        slot = request.slot
        _flush()
        try:
            _hooks.run_before_fork()
        except _hooks.HookError as e:
            log(f"fork of slot {slot} failed: {e}")
            return _control.failed(slot, str(e))
        reason = _forksafety.probe()  # after the hooks, which may stop threads
        aio = sys.modules.get("afterburn_runtime._aio")
        if reason is None and aio is not None:
            reason = aio.unrenewable()  # a loop a worker could not have to itself
        if reason is not None:
            log(f"fork of slot {slot} failed: {reason}")
            return _control.failed(slot, reason)
        if not self.frozen:
            _preload()
            # §2.6 "What is shared": objects made during initialisation move to a permanent
            # generation the collector never visits, so its bookkeeping writes do not unshare
            # their pages in every worker; workers enable the collector again.
            gc.collect()
            gc.freeze()
            gc.disable()
            self.frozen = True
        _flush()
        if request.child:
            return self._fork_once(request, fds)
        r, w = os.pipe()
        try:
            middle = _fork()
        except OSError as e:
            os.close(r)
            os.close(w)
            reason = _control.os_reason(e)
            log(f"fork of slot {slot} failed: {reason}")
            return _control.failed(slot, reason)
        if middle == 0:
            self._middle(request, fds, r, w)  # returns only in the worker
            return None
        os.close(w)
        answer = _read_line(r)
        os.close(r)
        os.waitpid(middle, 0)  # §2.6 step 3: reap the middle before answering
        if answer[:1].isdigit():
            return _control.forked(slot, int(answer))
        reason = answer[1:] if answer.startswith("!") else "the middle process exited without a worker pid"
        log(f"fork of slot {slot} failed: {reason}")
        return _control.failed(slot, reason)

    def _fork_once(self, request: _control.ForkRequest, fds: list[int]) -> bytes | None:
        """The single fork of ``fork-child`` (§2.6): the worker stays this process's child,
        watched through a pidfd. Returns the answer in the template, None in the worker."""
        slot = request.slot
        try:
            pid = _fork()
        except OSError as e:
            reason = _control.os_reason(e)
            log(f"fork of slot {slot} failed: {reason}")
            return _control.failed(slot, reason)
        if pid == 0:
            _become_worker(request, fds, self)
            return None
        try:
            os.setpgid(pid, pid)  # as the worker does: a group leader before its pid is known
        except OSError:
            pass  # the worker did it first, or is gone (its exit is reported)
        try:
            self.children.add(pid)
        except OSError as e:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            if self.tmpdir_root is not None:
                # §2.7: it may have made its temporary directory already, and with no pid
                # answered the watchdog cannot find it. Dead and reaped, it makes no more;
                # its pid is not reused before the next fork, which is this process's.
                _remove_tmpdirs_of(self.tmpdir_root, pid)
            reason = f"pidfd_open: {_control.os_reason(e)}"
            log(f"fork of slot {slot} failed: {reason}")
            return _control.failed(slot, reason)
        return _control.forked(slot, pid)

    def _middle(self, request: _control.ForkRequest, fds: list[int], r: int, w: int) -> None:
        """The middle process: forks the worker, tells the template its pid, exits at once
        (§2.6 step 2). Returns only in the worker."""
        try:
            os.close(r)
            try:
                pid = _fork()
            except OSError as e:
                os.write(w, f"!{_control.os_reason(e)}\n".encode())
                os._exit(0)
            if pid != 0:
                # As a shell does: the parent too puts the child in its own group, so it is
                # a group leader before the watchdog can learn its pid and signal the group.
                try:
                    os.setpgid(pid, pid)
                except OSError:
                    pass  # the worker did it first, or is gone (the watchdog will see)
                os.write(w, f"{pid}\n".encode())
                os._exit(0)
        except BaseException:
            os._exit(1)  # whatever happens, the middle never returns into the template's code
        os.close(w)
        _become_worker(request, fds, self)


# What this library imports lazily and a request may need. Without them here, every worker
# imports them again at its first request: under isolation=request that is every request
# (§2.6 "What is shared", §2.7).
_PRELOAD = ("json", "urllib.parse", "traceback", "afterburn_runtime._cancel", "afterburn_runtime._logger")


def _preload() -> None:
    import importlib

    for name in _PRELOAD:
        importlib.import_module(name)


def _become_worker(request: _control.ForkRequest, fds: list[int], template: Template) -> None:
    """§2.6 "The worker, before it runs any user code"."""
    global unasked
    slot = request.slot
    os.setpgid(0, 0)  # §2.1: a process group of its own, which the watchdog signals whole
    unasked = request.unasked
    _move_fds(fds)
    template.sock.close()  # a close, not a shutdown: the template's socket goes on
    keep = {0, 1, 2, 3, 4}
    aio = sys.modules.get("afterburn_runtime._aio")
    if aio is not None:
        keep.update(aio.renew_after_fork())
    _close_others(keep)
    os.environ["AFTERBURN_WORKER_ID"] = slot
    tmpdir = request.tmpdir
    if request.child and template.tmpdir_root is not None:
        tmpdir = _own_tmpdir(template.tmpdir_root)
    if tmpdir is not None:
        # §2.7: a temporary directory of the request's own, which the watchdog removes once
        # this process is gone; tempfile caches the directory it found, so it looks again.
        os.environ["TMPDIR"] = tmpdir
        tempfile.tempdir = None
    if request.child:
        _await_template(template.pid)
    else:
        _await_watchdog(template.watchdog)
    gc.enable()
    _reseed()
    _alarm.after_fork()  # before the after_fork hooks: what they set is theirs to keep
    try:
        _hooks.run_after_fork()
    except _hooks.HookError as e:
        # §9.1: an initialisation failure: the reason on stderr, exit non-zero.
        import traceback

        cause = e.__cause__ or e
        tb = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
        _state.log(f"afterburn: worker {slot}: {e}\n{tb}")
        raise SystemExit(1) from None


# What a worker of the single fork adds to its handshake reply: the temporary directory it
# made (§2.7, §3.2); empty in the template and in every other worker.
handshake_fields = ""
# Whether this worker was forked with "fork-child <slot> unasked" (§2.6): it writes its
# handshake reply without reading a handshake request; False in every other process.
unasked = False
_MKDIR_TRIES = 100


def _own_tmpdir(root: str) -> str:
    """§2.7: a worker of the single fork makes its temporary directory itself, in the root
    the watchdog gave the template, named after its pid (so that the watchdog finds it even
    should this worker die before naming it), and names it in its handshake reply. A worker
    that cannot is a failed fork: the reason on stderr, exit 1 before the handshake (§2.6)."""
    global handshake_fields
    # As mkdtemp does, without its random names: the pid makes the name unique among live
    # processes, and a number after it steps past the directory of an earlier process of
    # the same pid that the watchdog has not removed yet. One system call, where mkdtemp
    # also pays for seeding a generator.
    pid = os.getpid()
    for n in range(_MKDIR_TRIES):
        path = f"{root}/{pid}-{n}"
        try:
            os.mkdir(path, 0o700)
            break
        except FileExistsError:
            continue
        except OSError as e:
            _state.log(f"afterburn: worker: cannot make its temporary directory in {root}: {_control.os_reason(e)}")
            raise SystemExit(1) from None
    else:
        _state.log(f"afterburn: worker: cannot make its temporary directory in {root}: "
                   f"{root}/{pid}-0 to -{_MKDIR_TRIES - 1} all exist")
        raise SystemExit(1)
    if not path.isascii() or any(c in path for c in "\r\n\0"):
        os.rmdir(path)
        _state.log(f"afterburn: worker: its temporary directory {path!r} cannot be named in a field")
        raise SystemExit(1)
    handshake_fields = f"AfterBurn-Tmpdir: {path}\r\n"
    return path


def _remove_tmpdirs_of(root: str, pid: int) -> None:
    """Removes what a worker of the single fork, killed before its pid was answered, made in
    the root: directories named after its pid and a dash (§2.7), without following links."""
    import shutil  # lazy: a failed fork only

    prefix = f"{pid}-"
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _move_fds(fds: list[int]) -> None:
    """Moves the four descriptors of a fork request onto 3, 4, 1 and 2 (§2.6). They arrive
    close-on-exec (MSG_CMSG_CLOEXEC); the log pipes are made inheritable (processes the
    handler starts log too), the protocol pipes stay close-on-exec (they must not keep the
    watchdog's pipes open, §2.4). Where no descriptor to move sits on a target of another
    (the usual 3, 4, 6, 7: the template's own 3 and 4 are closed), each moves in place with
    one dup2 and one close, none for one already in place; otherwise by way of numbers above
    them all, so no dup2 lands on a descriptor still to be moved."""
    targets = (3, 4, 1, 2)
    if all(fd == target or fd not in targets for fd, target in zip(fds, targets)):
        for fd, target in zip(fds, targets):
            if fd != target:
                os.dup2(fd, target, inheritable=target <= 2)
                os.close(fd)
            elif target <= 2:
                os.set_inheritable(fd, True)
        return
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds]
    _close_all(fds)
    for fd, target in zip(high, targets):
        os.dup2(fd, target, inheritable=target <= 2)
        os.close(fd)


def _close_others(keep: set[int]) -> None:
    """Lets go of every descriptor of the template's but ``keep`` (§2.6): the pid pipe's
    end and whatever initialisation opened (a file, a socket, a pool's connections).

    Each is pointed at /dev/null rather than freed: a Python object of the template's (a
    file, a socket, a client's connection) still holds its number, and would one day read,
    write or close whatever the worker opens next under that number. On /dev/null it reads
    EOF, writes nowhere and closes harmlessly, and nothing of the template's is shared."""
    try:
        open_fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(5, os.sysconf("SC_OPEN_MAX")))
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        for fd in open_fds:
            if fd not in keep and fd != null:
                try:
                    os.fstat(fd)
                except OSError:
                    continue  # the listing's own descriptor, already closed
                os.dup2(null, fd, inheritable=False)
    finally:
        os.close(null)


def _await_watchdog(watchdog: int) -> None:
    """Waits until the middle has exited and this process was re-parented, then asks to be
    killed when its parent dies, and checks the parent is (still) the watchdog (§2.6)."""
    middle = os.getppid()
    deadline = time.monotonic() + 10
    while os.getppid() == middle and middle != watchdog:
        if time.monotonic() > deadline:
            log(f"worker: the middle process {middle} has not exited after 10 s")
            raise SystemExit(1)
        time.sleep(0.0002)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    parent = os.getppid()
    if parent != watchdog:
        log(f"worker: re-parented to pid {parent}, not the watchdog {watchdog}: the watchdog died, "
            "or is not a child subreaper (PR_SET_CHILD_SUBREAPER); exiting")
        raise SystemExit(1)


def _await_template(template: int) -> None:
    """A worker forked once (§2.6): asks to be killed when the template dies, then checks
    the template is still its parent (it may have died before the request took effect)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != template:
        log(f"worker: the template {template} died before this worker was set up; exiting")
        raise SystemExit(1)


def _reseed() -> None:
    """Random generators must differ between workers (§2.6). ``random`` reseeds itself in a
    fork child (os.register_at_fork); NumPy's legacy global generator does not."""
    # numpy.random only: NumPy 2 imports it lazily, and one imported first in the worker
    # is seeded there anyway.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        try:
            np_random.seed()  # fresh entropy from the OS
        except Exception as e:  # a NumPy too broken to reseed: say so, go on
            log(f"worker: could not reseed numpy.random: {e}")


def _read_line(fd: int) -> str:
    buf = b""
    while b"\n" not in buf:
        data = os.read(fd, 256)
        if not data:
            break
        buf += data
    return buf.partition(b"\n")[0].decode(errors="replace")


def _flush() -> None:
    # §2.6 step 1: what the standard streams buffer would otherwise be written twice, by
    # the template and by the worker.
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def serve_template(control_fd: int) -> str:
    """Runs the template on ``control_fd``; returns the slot in each new worker."""
    return Template(control_fd).serve()
