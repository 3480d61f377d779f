"""The cold-start baseline for Python: a worker that answers the AfterBurn handshake
(PROTOCOL.md §3.2) with canned bytes and imports nothing of the library, so the difference
to the library's cold start is what the library costs."""
import os

REPLY = (b"HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\n"
         b"AfterBurn-Library: bench-nolib/0\r\nContent-Length: 0\r\n\r\n")
rfd, wfd = (int(x) for x in os.environ.get("AFTERBURN_FDS", "0,1").split(","))
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = os.read(rfd, 4096)
    if not chunk:
        raise SystemExit(0)
    buf += chunk
os.write(wfd, REPLY)
while os.read(rfd, 4096):  # until the watchdog closes the pipe (§9.4)
    pass
