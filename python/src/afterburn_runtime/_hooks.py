"""Before-fork and after-fork hooks of fork mode (PROTOCOL.md §2.6).

A template (a process started with ``AFTERBURN_CONTROL_FD``) runs the before-fork hooks in
itself before every fork, and every forked worker runs the after-fork hooks before it
serves. Register them as with ``os.register_at_fork``, or as decorators::

    @afterburn_runtime.after_fork
    def connect():
        global DB
        DB = open_pool()        # a pool per worker, not one shared by all (§2.6)

Without fork mode no hook ever runs. Hooks run in the order they were registered.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Hook = Callable[[], object]

_before: list[Hook] = []
_after: list[Hook] = []


class HookError(Exception):
    """A hook raised; the message names the hook and its exception, on one line."""


def before_fork(fn: Hook) -> Hook:
    """Registers ``fn()`` to run in the template before each fork. A hook that raises fails
    that fork (the watchdog is told which hook, §2.6) and the template lives on."""
    _before.append(fn)
    return fn


def after_fork(fn: Hook) -> Hook:
    """Registers ``fn()`` to run in each forked worker before it serves: open connections,
    thread pools and clients here. A hook that raises is an initialisation failure: the
    worker logs it and exits 1 (§9.1)."""
    _after.append(fn)
    return fn


def hook_name(fn: object) -> str:
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return f"{module}.{name}"


def _run(hooks: list[Hook], kind: str) -> None:
    for fn in list(hooks):
        try:
            fn()
        except Exception as e:
            message = " ".join(str(e).split())  # one line: it travels in a control message
            raise HookError(f"{kind} hook {hook_name(fn)} raised {type(e).__name__}"
                            + (f": {message}" if message else "")) from e


def run_before_fork() -> None:
    _run(_before, "before_fork")


def run_after_fork() -> None:
    _run(_after, "after_fork")
