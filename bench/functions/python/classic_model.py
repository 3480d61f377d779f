"""The Python "fork per request" baseline of the isolation scenario (bench/README.md,
"Isolation"): a classic-watchdog function started for every request that pays what a process
per request pays without a template: the interpreter, NumPy's import and MODEL_MIB MiB of
model written at start-up (512 by default, as model_fn.py), then answers {"sum": N} on stdout
as GET /model does."""
import os
import sys

import numpy as np

MIB = int(os.environ.get("MODEL_MIB", "512"))
SAMPLES = int(os.environ.get("MODEL_SAMPLES", "1024"))
WEIGHTS = np.arange(MIB << 17, dtype=np.float64)
SAMPLE = WEIGHTS[:: max(1, WEIGHTS.size // SAMPLES)]
sys.stdin.buffer.read()
sys.stdout.buffer.write(b'{"sum": %d}\n' % int(SAMPLE.sum()))
