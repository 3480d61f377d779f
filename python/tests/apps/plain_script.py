"""A plain handler served without the launcher: the script calls serve() itself."""

import os

import afterburn_runtime  # first: in stdio mode the import moves the protocol off fds 0 and 1

os.write(1, b"HTTP/1.1 200 banner after the import\r\n\r\n")
print("print after the import")


def handle(req):
    os.write(1, b"NOT HTTP\r\n")
    return afterburn_runtime.Response(b"script " + req.path.encode())


afterburn_runtime.serve(handle)
