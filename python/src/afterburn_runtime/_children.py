"""The workers of a template that forks once (PROTOCOL.md §2.6, "Workers that stay the
template's children", capability ``fork-child``).

A worker forked for ``fork-child`` stays the template's child. The template watches each
one through a pidfd, which becomes readable when the worker exits; it then reports the exit
(``exited <pid> exit <code>``) but does not reap: the pid stays a zombie, so neither it nor
the id of the worker's process group can be reused while the watchdog may still signal the
group. It reaps only at ``reap <pid>``, the watchdog's word. It never waits for any other
child (one the user's initialisation started is the user's to wait for).
"""

from __future__ import annotations

import os
import select
import socket

from . import _control


class Children:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.watched: dict[int, int] = {}  # pidfd -> pid, until its exit is reported
        self.reported: set[int] = set()  # pids reported exited, not yet reaped
        self.poller = select.poll()
        self.poller.register(sock.fileno(), select.POLLIN)

    def add(self, pid: int) -> None:
        """Watches a worker just forked. Raises OSError when no pidfd can be opened."""
        fd = os.pidfd_open(pid)  # close-on-exec, as pidfd_open(2) always makes it
        self.watched[fd] = pid
        self.poller.register(fd, select.POLLIN)

    def await_message(self) -> None:
        """Reports the exits of workers until the control socket has a record to read (or
        its end). Returns at once when no worker is watched: the read then blocks."""
        if not self.watched:
            return
        while True:
            ready = False
            for fd, _ in self.poller.poll():
                if fd == self.sock.fileno():
                    ready = True
                elif fd in self.watched:
                    self._report(fd)
            if ready or not self.watched:
                return

    def _report(self, fd: int) -> None:
        pid = self.watched[fd]
        status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if status is None:
            return  # not exited after all: poll again
        self.poller.unregister(fd)
        os.close(fd)
        del self.watched[fd]
        self.reported.add(pid)
        self.sock.send(_control.exited(pid, status))

    def reap(self, pid: int) -> bool:
        """Reaps a worker reported exited; False for any other pid (a protocol error)."""
        if pid not in self.reported:
            return False
        self.reported.discard(pid)
        os.waitpid(pid, 0)
        return True


def supported() -> bool:
    """Whether this process can watch its children through pidfds (Linux 5.3, Python 3.9)."""
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True
