"""The Python function of the "fork per request" baseline: a classic-watchdog function that
reads the request body on stdin and writes the response body to stdout, started once per
request. Empty body: a greeting; otherwise the body echoed."""
import sys

body = sys.stdin.buffer.read()
sys.stdout.buffer.write(body or b"Hello, world!\n")
