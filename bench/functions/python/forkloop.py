"""The floors of one process per request (bench/README.md, "Isolation"): the benchmark
function's own initialisation, then as many rounds as fit in SECONDS of

    bare     fork, _exit in the child, waitpid: the physical floor of a process per request
    request  the same, the child first serving one GET / through the library's own core
             (afterburn_runtime.testing.call, no pipes and no watchdog): what a fresh
             CPython process pays to run one request, at best
    double   the double fork of PROTOCOL.md §2.6: a middle forks the worker, puts it in a
             group of its own, sends its pid and exits; the loop, a child subreaper as the
             watchdog is, reaps the middle, then the worker, which served one GET / as in
             request: the floor of a worker forked the way isolation=request forks one

and {"mode": M, "rounds_per_s": N, "rounds": N, "seconds": S, "cpu_s": C} on stdout, C being
the CPU time of the loop and its children (well under S means it did not have its CPU).

    python forkloop.py MODE SECONDS FUNCTION.py [ARGS...]

FUNCTION.py runs as its own __main__ until it calls afterburn_runtime.serve, which here runs
the loop instead of serving: the process that forks is the template as the watchdog's
isolation=request would fork it (imports, model, the library's lazy imports, gc.freeze)."""
import gc
import json
import os
import resource
import runpy
import sys
import time

import afterburn_runtime
from afterburn_runtime import _template, testing

MODE, SECONDS, SCRIPT = sys.argv[1], float(sys.argv[2]), sys.argv[3]
if MODE not in ("bare", "request", "double"):
    sys.exit(f"forkloop.py: unknown mode {MODE!r}: bare, request or double")
PR_SET_CHILD_SUBREAPER = 36


def loop(handler, *_args, **_kwargs):
    testing.call(handler)  # what the template's handshake warms, and the lazy imports
    _template._preload()
    gc.collect()
    gc.freeze()  # as the template does before its first fork (PROTOCOL.md §2.6)
    gc.disable()
    if MODE == "double":
        import ctypes
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the worker comes back here
    rounds, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < SECONDS:
        if MODE == "double":
            double_fork(handler)
        else:
            pid = os.fork()
            if pid == 0:
                if MODE == "request":
                    testing.call(handler)
                os._exit(0)
            os.waitpid(pid, 0)
        rounds += 1
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    print(json.dumps({"mode": MODE, "rounds_per_s": rounds / elapsed, "rounds": rounds, "seconds": elapsed,
                      "cpu_s": cpu}), flush=True)
    os._exit(0)


def double_fork(handler):
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(r)
        worker = os.fork()
        if worker == 0:
            os.close(w)
            testing.call(handler)
            os._exit(0)
        os.setpgid(worker, worker)
        os.write(w, b"%d\n" % worker)
        os._exit(0)
    os.close(w)
    worker = int(os.read(r, 64))
    os.close(r)
    os.waitpid(middle, 0)
    os.waitpid(worker, 0)


afterburn_runtime.serve = loop
sys.argv = sys.argv[3:]
runpy.run_path(SCRIPT, run_name="__main__")
