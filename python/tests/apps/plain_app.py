"""A plain handler for the process tests: it writes to fd 1 in every way a handler can."""

import ctypes
import os
import sys

from afterburn_runtime import Response

BANNER = os.environ.get("APP_BANNER")
if BANNER:
    # Import-time output, before the library serves (PROTOCOL.md §2.4: the launcher
    # protects it; a watchdog in stdio mode must never see it on the response pipe).
    print(BANNER)
    os.write(1, (BANNER + "\n").encode())

if os.environ.get("APP_INIT_FAIL") == "1":
    raise RuntimeError("APP_INIT_FAIL=1")


def handle(req):
    if req.path == "/fd1":
        # A C-level write to fd 1 and a libc printf, as a C extension would do.
        os.write(1, b"HTTP/1.1 500 raw write to fd 1\r\n\r\n")
        libc = ctypes.CDLL(None)
        libc.printf(b"HTTP/1.1 500 printf from C\r\n\r\n")
        libc.fflush(None)
        print("HTTP/1.1 500 print")
        sys.stdout.flush()
        return Response(b"clean")
    if req.path == "/stdin":
        return Response(repr(sys.stdin.read()))  # /dev/null: the request bytes stay the library's
    if req.path == "/throw":
        raise ValueError("secret-token-123")
    return Response(b"hello " + req.body)
