"""Python's own minimal HTTP server, the upstream of the "HTTP proxy mode" baseline: the
stdlib http.server on 127.0.0.1:$PORT, keep-alive (HTTP/1.1), Nagle's algorithm off (without
it every response stalls ~40 ms behind a delayed ACK and the comparison is a sham)."""
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GREETING = b"Hello, world!\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else GREETING
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format, *args):  # no per-request log line, like the other servers
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8080"))), Handler)
print("server: listening on %s:%d" % server.server_address, file=sys.stderr, flush=True)
server.serve_forever()
