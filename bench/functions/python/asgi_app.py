"""The ASGI app of the Python benchmarks, standard library only: an empty body gets the
greeting, any other body is answered back. uvicorn serves it as a peer (bench/README.md,
"Peers") and AfterBurn's ASGI adapter serves the very same object
(``python -m afterburn_runtime --asgi asgi_app:app``), so the two columns differ only in
the server."""

GREETING = b"Hello, world!\n"


async def app(scope, receive, send):
    if scope["type"] == "lifespan":  # uvicorn asks; nothing to set up
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    chunks = []
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks) if chunks else GREETING
    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})
