"""The Python benchmark function with a synthetic model, for fork mode's memory figures
(bench/README.md, "Fork mode"): MODEL_MIB MiB of float64 weights (512 by default) written at
start-up, so every page is anonymous and private-dirty, as a model unpacked into NumPy arrays
is (a file-backed model is shared in exec mode too and would flatter nothing).

    GET /model   sums MODEL_SAMPLES weights spread evenly over the whole array (a read: it
                 shares, never copies) and answers {"sum": N}, the same N every time
    GET /pid     this worker's pid (the crash-to-answering measurement)
    GET /        Hello, world!  (any other body is echoed, as every benchmark function does)
"""
import os

import numpy as np

from afterburn_runtime import Response, serve

GREETING = b"Hello, world!\n"
MIB = int(os.environ.get("MODEL_MIB", "512"))
SAMPLES = int(os.environ.get("MODEL_SAMPLES", "1024"))

# arange writes every element, so every page is dirtied here, at initialisation: in the
# template under -spawn fork, in every worker under exec.
WEIGHTS = np.arange(MIB << 17, dtype=np.float64)  # 2^20 / 8 float64s per MiB
SAMPLE = WEIGHTS[:: max(1, WEIGHTS.size // SAMPLES)]


def handle(req):
    if req.path == "/model":
        return Response(b'{"sum": %d}\n' % int(SAMPLE.sum()), content_type="application/json")
    if req.path == "/pid":
        return Response(b"%d\n" % os.getpid(), content_type="text/plain")
    length = int(req.headers.get("content-length") or 0)
    if length == 0:
        return Response(GREETING, content_type="text/plain")
    return Response(req.body, content_type="text/plain")


serve(handle)
