# The entry program of the python3-afterburn template. The watchdog runs
#     python -m afterburn_runtime index:handle
# in each worker: the launcher moves the protocol off stdout first, then imports this module
# (and so the function), then serves `handle` until the watchdog stops the worker.
from function.handler import handle

__all__ = ["handle"]
