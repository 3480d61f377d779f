# The entry program of the python3-http-afterburn template. The watchdog runs
#     python -m afterburn_runtime --openfaas index:handle
# in each worker: the launcher moves the protocol off stdout first, then imports this module
# (and so the function), then serves `handle(event, context)` as OpenFaaS's python3-http
# template does (PROTOCOL.md §13) until the watchdog stops the worker.
from function.handler import handle

__all__ = ["handle"]
