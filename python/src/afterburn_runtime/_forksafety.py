"""May a template fork now? (PROTOCOL.md §2.6, "What a template must not fork into")

``fork`` copies only the calling thread. Another thread that holds a lock at that instant
(the allocator's, the import lock, a logging handler's) leaves the worker with a lock that
is never released, and the worker deadlocks. The rule this library applies, before every
fork:

1. No Python thread but the main one may run (``threading.enumerate()``): refuse, naming
   them. Their fix is to start them in an ``after_fork`` hook, in each worker.
2. Native threads (``/proc/self/task``) beyond the main thread are allowed only when they
   can be the pool of OpenBLAS, which stops its threads around ``fork`` (it registers
   ``pthread_atfork`` handlers): an OpenBLAS library is mapped into the process and there
   are no more extra threads than its pool holds (its thread count − 1; NumPy's import
   starts that pool). Any other native thread is one this library does not know to be
   fork-safe: refuse.

The native check counts threads, it cannot tell them apart; what it guarantees is that no
unknown thread runs besides a full OpenBLAS pool. ``decide`` is the pure rule; ``probe``
reads the process.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_FIX_PYTHON = "start them in an after_fork hook (afterburn_runtime.after_fork), or use exec mode"
_FIX_NATIVE = ("start the library that made them in an after_fork hook (afterburn_runtime.after_fork), "
               "or use exec mode (-spawn exec)")

# The names under which an OpenBLAS build exports its thread count: the plain build, the
# 64-bit-integer one, and the builds NumPy and SciPy wheels bundle (scipy-openblas).
_OPENBLAS_THREADS = ("openblas_get_num_threads", "openblas_get_num_threads64_",
                     "scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads")


def decide(python_threads: Sequence[str], tasks: int, openblas_threads: int | None) -> str | None:
    """The reason to refuse a fork, on one line, or None to fork.

    ``python_threads``: names of the running Python threads other than the main one;
    ``tasks``: the native threads of the process, the main one included; ``openblas_threads``:
    the thread count of a mapped OpenBLAS (its pool holds one fewer), None without one."""
    if python_threads:
        names = ", ".join(repr(n) for n in python_threads)
        return (f"refusing to fork with {len(python_threads)} Python thread(s) running besides the "
                f"main thread: {names}; {_FIX_PYTHON}")
    extra = tasks - 1
    allowed = max(openblas_threads - 1, 0) if openblas_threads is not None else 0
    if extra > allowed:
        known = f" (OpenBLAS's pool accounts for {allowed})" if openblas_threads is not None else ""
        return (f"refusing to fork with {extra} native thread(s) running besides the main thread"
                f"{known}, not known to be fork-safe; {_FIX_NATIVE}")
    return None


def probe() -> str | None:
    """``decide`` on this process as it is now."""
    import threading

    main = threading.main_thread()
    python_threads = [t.name for t in threading.enumerate() if t is not main]
    try:
        tasks = len(os.listdir("/proc/self/task"))
    except OSError:
        tasks = 1  # no /proc (not Linux): nothing more to know
    openblas = None
    if tasks > 1 and not python_threads:
        openblas = openblas_threads()
    return decide(python_threads, tasks, openblas)


# The thread-count function of the OpenBLAS found mapped, once found: /proc/self/maps is
# long in a process that imported NumPy, and a template asks before every fork (§2.6, §2.7).
_openblas_count: Callable[[], int] | None = None


def openblas_threads() -> int | None:
    """The thread count of the OpenBLAS mapped into this process, None when none is (or it
    cannot be asked)."""
    global _openblas_count
    if _openblas_count is None:
        _openblas_count = _find_openblas()
        if _openblas_count is None:
            return None
    n = int(_openblas_count())
    return n if n > 0 else None


def _find_openblas() -> Callable[[], int] | None:
    """The thread-count function of the OpenBLAS mapped into this process, if any."""
    path = None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if "openblas" in line.lower() and "/" in line:
                    path = line[line.index("/"):].rstrip("\n")
                    break
    except OSError:
        return None
    if path is None:
        return None
    import ctypes

    try:
        lib = ctypes.CDLL(path)  # already loaded: this only takes a handle on it
    except OSError:
        return None
    for name in _OPENBLAS_THREADS:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            fn.argtypes = []
            return fn
    return None
