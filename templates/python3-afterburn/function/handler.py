"""Your function. The worker imports this module once, then calls handle() per request."""

from afterburn_runtime import Request, Response

# Start-up work goes here, at module level: it runs once per worker, before the worker is
# reported ready (load a model, open a connection pool, build a table).
GREETING = "Hello"


def handle(req: Request) -> Response:
    # print() is safe: it goes to the watchdog's log, never into a response.
    print(f"{req.method} {req.path} (request {req.request_id})")
    if req.method == "POST":
        # Echo the body back with its content type.
        return Response(req.body, content_type=req.headers.get("content-type", "application/octet-stream"))
    name = req.arg("name") or "world"
    return Response(f"{GREETING}, {name}!\n")
