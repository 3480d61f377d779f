"""The deadline alarm: cancellation of a synchronous handler on the main thread (PROTOCOL.md
§5.2, §2.5 "Cancellation", §8.6).

Theory of operation. With one lane the handler runs on the main thread, and a thread cannot
be stopped from outside, but the main thread can be interrupted by a signal: Python runs a
signal's handler on the main thread between two bytecodes, and a handler that raises makes
the exception appear there, in the middle of the user's code (a ``time.sleep``, a blocking
socket read and a ``threading.Event.wait`` all wake for it). So for each exchange that has a
deadline, ``arm`` sets a one-shot ``ITIMER_REAL`` timer for the deadline + GRACE (the
library fires after the watchdog, whose 504 comes first, §2.5), and SIGALRM's handler raises
:class:`Cancelled` in the handler. ``disarm`` stops it when the handler (and its streamed
body) is done, before the library answers anything of its own.

Three things keep the exception from landing where it would do harm:

- **The library's own pipe I/O is shielded** (``Conn`` calls ``shield``/``unshield`` around
  every read and write of the protocol pipes): a signal that arrives then only marks the
  exchange, and the exception is raised once the I/O is complete, at ``unshield``, so a
  response is never cut in half and the request stream never loses bytes read but not yet
  parsed (§8.8 would follow). During a write SIGALRM is also blocked with
  ``pthread_sigmask``, so the kernel holds it and never interrupts the write half-way.
- **The event loop is paused**: while an async handler or body runs on the main thread's
  loop, that task is cancelled by a timer of the loop instead (``_aio``); an exception in
  the loop's own machinery would wreck it.
- **Stale signals are ignored**: each signal is checked against the exchange armed *now*
  and the clock; a signal that was already pending when an exchange ended, or one of the
  application's own, cannot reach the next request.

A handler that has already seen the cancellation through the flag (``req.cancelled`` true,
or ``req.cancellation.wait`` returning True) is not interrupted any more: it is stopping.

**The timer is lazy** (issue 30: two setitimer calls per request were a third of a plain
exchange's system calls). An exchange sets the timer only when none is running that fires
no later than its own deadline + GRACE; ending an exchange leaves the timer as it is. A
timer that goes off before the exchange then armed is due re-arms itself for that one
(the stale-signal check below), and one that goes off between exchanges or in one without
a deadline does nothing. Under steady traffic the timer is set about once per timeout, not
twice per request; a SIGALRM that does nothing may then come once per timeout period,
which Python code never sees (PEP 475 retries the system call it interrupted).

The alarm is only used when it can be used honestly: on the main thread, with one lane,
where ``signal.setitimer`` and ``signal.pthread_sigmask`` exist, and when SIGALRM has no
handler of the application's own. Otherwise a synchronous handler gets the flag only, and
the first time the reason is logged.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from _thread import get_ident

from ._cancel import GRACE
from ._errors import Cancelled
from ._state import log

try:  # signal's own functions, without the enum conversions of its wrappers (they cost µs)
    import _signal as _raw
except ImportError:  # pragma: no cover - not CPython
    _raw = signal  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

    from ._request import Request

# A deadline further away than this (about three years) never fires within a worker's life,
# and setitimer overflows on the largest AfterBurn-Timeout-Ms (§5.2): no alarm then, which
# never fires early.
_MAX_DELAY = 1e8

_SIGALRM = getattr(signal, "SIGALRM", None)
_SIGNALS = {_SIGALRM} if _SIGALRM is not None else set()


class Armed:
    """The alarm of one exchange while its handler runs."""

    __slots__ = ("req", "fire_at", "shielded", "paused", "pending", "unblock")

    def __init__(self, req: Request, fire_at: float) -> None:
        self.req = req
        self.fire_at = fire_at
        self.shielded = 0  # > 0 while the library reads or writes a pipe
        self.paused = 0  # > 0 while the main thread runs the event loop
        self.pending = False  # the alarm went off while shielded
        self.unblock = False  # a shield blocked SIGALRM (which was not blocked before)

    def seen(self) -> bool:
        """Whether the handler has already seen the cancellation (the flag, or Cancelled)."""
        c = self.req._cancel
        return c is not None and c.observed

    def interrupt(self) -> None:
        self.req.cancellation.observed = True
        raise Cancelled()

    def shield(self, mask: bool = True) -> None:
        """Holds the alarm back during the library's own pipe I/O (see the module doc).
        ``mask``: block SIGALRM too, for writes, so that the kernel never interrupts one
        half-way. A read needs no mask (what the library cares about is the bytes it read
        and not yet parsed, and a read interrupted before it read anything is retried,
        PEP 475), and a body is read in many pieces: two system calls each add up."""
        if mask and not self.unblock:
            self.unblock = _SIGALRM not in _raw.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        self.shielded += 1

    def unshield(self) -> None:
        """Ends a shield; raises Cancelled when the alarm went off during it. A held signal
        is delivered inside the pthread_sigmask call, while still shielded, so it only
        marks the exchange."""
        if self.shielded == 1 and self.unblock:
            self.unblock = False
            _raw.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        self.shielded -= 1
        if self.pending and not self.shielded and not self.paused:
            self.pending = False
            if not self.seen():
                self.interrupt()


# The main thread's ident (a property call less per exchange than main_thread().ident),
# renewed in a forked child, whose main thread is the one that forked (threading's own
# after-fork handler, registered before this one, has run by then).
_main_ident = threading.main_thread().ident


def _renew_main_ident() -> None:
    global _main_ident
    _main_ident = threading.main_thread().ident


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_main_ident)

# The exchange whose alarm is armed, on the main thread; None between exchanges.
_current: Armed | None = None
# When the process's ITIMER_REAL goes off (time.monotonic()), as this module last set it;
# None when it is not running (it went off, or never was set in this process).
_timer_at: float | None = None
# Why the alarm cannot be used in this process, once that is known ("" when it can).
_unusable: str | None = None
_warned = False


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    global _timer_at
    armed = _current
    now = time.monotonic()
    # Whatever sent this SIGALRM, the timer is taken as gone: at worst the next exchange
    # sets it again. (Kept when the signal came early by the clocks' rounding, it would
    # hold every later exchange's timer back.)
    _timer_at = None
    if armed is None:
        return  # set for an exchange that has ended: nothing to cancel any more
    if now < armed.fire_at:
        # Not this exchange's alarm (an earlier one's, left running when it ended, or one
        # the application raised): this exchange's own is what counts.
        _set_timer(armed.fire_at, armed.fire_at - now)
        return
    if armed.paused or armed.seen():
        return
    if armed.shielded:
        armed.pending = True
        return
    armed.interrupt()


def _why_unusable() -> str:
    global _unusable
    if _unusable is None:
        if not (hasattr(signal, "setitimer") and hasattr(signal, "pthread_sigmask") and _SIGNALS):
            _unusable = "this platform has no signal.setitimer or signal.pthread_sigmask"
        else:
            _unusable = ""
    if _unusable:
        return _unusable
    current = _raw.getsignal(_SIGALRM)
    if current is _on_alarm:
        return ""
    if current == signal.SIG_DFL:
        signal.signal(_SIGALRM, _on_alarm)
        return ""
    # The application's own SIGALRM handler (or SIG_IGN): not clobbered.
    return f"SIGALRM already has a handler of the application's own ({current!r})"


def arm(req: Request) -> Armed | None:
    """Arms the alarm for an exchange whose handler is about to run on this thread; None
    when it cannot be (see the module doc), and the handler then has the flag only."""
    global _current, _warned
    if req.deadline is None or get_ident() != _main_ident:
        return None
    # The usual case inline: usable, and SIGALRM's handler is still this module's.
    why = "" if _unusable == "" and _raw.getsignal(_SIGALRM) is _on_alarm else _why_unusable()
    if why:
        if not _warned:
            _warned = True
            log(f"afterburn: {why}: a synchronous handler is not interrupted at its deadline; "
                "it sees req.cancelled instead")
        return None
    fire_at = req.deadline + GRACE  # PROTOCOL.md §2.5: the watchdog's 504 first
    now = time.monotonic()
    delay = fire_at - now
    if delay > _MAX_DELAY:
        return None
    armed = Armed(req, fire_at)
    _current = armed
    timer_at = _timer_at
    if timer_at is None or timer_at > fire_at or timer_at < now - 1.0:
        # No timer, or one that goes off too late for this exchange (a timer that goes off
        # earlier re-arms itself for this one, _on_alarm), or one that should have gone
        # off a second ago (the application stopped it). A delay of 0 would disarm: a
        # deadline already past fires at once.
        _set_timer(fire_at, max(delay, 1e-6))
    return armed


def _set_timer(at: float, delay: float) -> None:
    global _timer_at
    _timer_at = at  # first: the signal may come as setitimer returns
    signal.setitimer(signal.ITIMER_REAL, delay)


def disarm(armed: Armed) -> None:
    """Ends the alarm of an exchange: from here on nothing of it reaches the thread. The
    timer is left running (see "The timer is lazy"): when it goes off, no exchange or a
    later one is armed, and it does nothing to either."""
    global _current
    if _current is armed:
        _current = None


def after_fork() -> None:
    """A worker forked from a template (PROTOCOL.md §2.6) starts with no alarm of the
    template's. fork(2) gives the child no pending signal and no interval timer, but the
    signal mask of the forking thread is inherited: SIGALRM left blocked on the template's
    main thread (by its initialisation or a before_fork hook) would hold back every alarm
    of this worker, and no handler would be interrupted at its deadline (§5.2). So it is
    unblocked here, before the worker runs any code of the application's, unless SIGALRM
    has a handler of the application's own, whose mask is the application's business."""
    global _current, _timer_at
    _current = None
    _timer_at = None  # fork(2): no timer in the child
    if not _SIGNALS or not hasattr(signal, "pthread_sigmask"):
        return
    handler = _raw.getsignal(_SIGALRM)
    if handler == signal.SIG_DFL or handler is _on_alarm:
        _raw.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)


def current() -> Armed | None:
    """The armed exchange on this thread, for the event loop to pause it."""
    if get_ident() != _main_ident:
        return None
    return _current

