"""tests/perf_counts.py keeps working, and the counts it reports stay where issue 30 brought
them: per request one read of the request pipe and one write of the response pipe for
every kind of worker, and the ASGI adapter (one lane) no task, future, timer or turn of the
event loop, in no more Python calls than a plain handler."""

from __future__ import annotations

import shutil

import perf_counts
import pytest
from loops import ACCEL, HAVE_UVLOOP, use_loop


@pytest.fixture(scope="module")
def counts() -> dict:
    with use_loop("asyncio"):
        return {(kind, workload): perf_counts.serve(kind, workload, warmup=20, n=100, profile=True, top=0)
                for kind in ("plain", "asgi", "wsgi") for workload in ("hello", "echo1k")}


@pytest.mark.parametrize("kind", ["plain", "asgi", "wsgi"])
@pytest.mark.parametrize("workload", ["hello", "echo1k"])
def test_one_read_and_one_write_per_request(counts: dict, kind: str, workload: str) -> None:
    c = counts[kind, workload]
    assert (c["reads"], c["writes"]) == (1, 1), c


@pytest.mark.parametrize("workload", ["hello", "echo1k"])
def test_asgi_needs_no_turn_of_the_loop(counts: dict, workload: str) -> None:
    # What the loop does for the stream's start and end (and the lifespan's shutdown) is the
    # same however many requests the stream holds: none of it is per request.
    with use_loop("asyncio"):
        longer = perf_counts.serve("asgi", workload, warmup=20, n=200, profile=False, top=0)
    c = counts["asgi", workload]
    for what in ("loop turns", "callbacks", "tasks", "futures", "timers"):
        assert round(c[what] * 100) == round(longer[what] * 200), (what, c, longer)


@pytest.mark.parametrize("workload", ["hello", "echo1k"])
def test_adapters_cost_about_what_a_plain_handler_does(counts: dict, workload: str) -> None:
    plain = counts["plain", workload]["py calls"]
    assert counts["asgi", workload]["py calls"] <= plain, counts
    # environ, start_response, wsgi.input: a few calls a plain handler has no need of.
    assert counts["wsgi", workload]["py calls"] <= plain + 8, counts


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize("loop", ["asyncio", pytest.param("uvloop", marks=pytest.mark.skipif(
    not HAVE_UVLOOP, reason="uvloop not installed"))])
def test_with_lanes_the_loop_writes_a_small_response_itself(loop: str) -> None:
    # A real ASGI worker with two lanes: its response pipe is empty when the response is
    # framed, so the loop writes it (one FIONREAD ioctl, one write) with no hand-off to the
    # lane's thread for it (Conn.send_now).
    import perf_pipes

    calls = perf_pipes.strace_counts("asgi", 2, lambda i: perf_counts.request(i, "hello"), 20, 200,
                                     {"AFTERBURN_PY_ACCEL": ACCEL[loop]})
    assert calls.get("ioctl") == 1, calls
    if loop == "asyncio":  # its wake-ups are sendto/recvfrom; uvloop's are reads and writes too
        assert (calls.get("write"), calls.get("read")) == (1, 1), calls
