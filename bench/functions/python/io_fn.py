"""The Python function of the lanes scenario (bench/README.md, "Lanes"): GET /io waits 50 ms
with ``await asyncio.sleep``, as a handler awaiting a database or another service does, and
answers 1 KiB. An ``async def`` handler runs as a task on the worker's one event loop, so with
lanes one worker's requests wait together (python/README.md, "Lanes"). Any other request gets
the greeting of every benchmark function."""
import asyncio

from afterburn_runtime import Response, serve

GREETING = b"Hello, world!\n"
KIB = b"abcdefghijklmnop" * 64


async def handle(req):
    if req.path != "/io":
        return Response(GREETING, content_type="text/plain")
    await asyncio.sleep(0.05)
    return Response(KIB, content_type="text/plain")


serve(handle)
