"""The Python benchmark function on the AfterBurn library: an empty body gets a greeting,
any other body is answered back — small ones whole, large ones streamed piece by piece as
they arrive, so a 100 MiB echo holds only a piece in memory."""
from afterburn_runtime import Response, serve

GREETING = b"Hello, world!\n"
WHOLE_BODY_MAX = 1 << 20


def handle(req):
    length = int(req.headers.get("content-length") or 0)
    if length == 0:
        return Response(GREETING, content_type="text/plain")
    if length <= WHOLE_BODY_MAX:
        return Response(req.body, content_type="text/plain")
    return Response(req.stream(), headers=[("Content-Type", "text/plain"), ("Content-Length", str(length))])


serve(handle)
