"""The WSGI app of the Python benchmarks, standard library only: an empty body gets the
greeting, any other body is answered back. gunicorn serves it as a peer (bench/README.md,
"Peers"), and AfterBurn's WSGI adapter the very same callable
(``python -m afterburn_runtime --wsgi wsgi_app:app``)."""

GREETING = b"Hello, world!\n"


def app(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else GREETING
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
