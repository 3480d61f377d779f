"""Prints the installed versions of the distributions named on the command line, and the
interpreter's, on one line: how the benchmark report names a Python peer
(``uvicorn 0.54.0, httptools 0.9.0, uvloop 0.23.0; CPython 3.11.7``). A module of the
standard library is named as such (``http.server; CPython 3.11.7``)."""
import platform
import sys
from importlib.metadata import version


def named(name):
    if name in sys.stdlib_module_names or name.partition(".")[0] in sys.stdlib_module_names:
        return name
    return "%s %s" % (name, version(name))


interpreter = "%s %s" % (platform.python_implementation(), platform.python_version())
print("; ".join([", ".join(named(name) for name in sys.argv[1:]), interpreter]))
