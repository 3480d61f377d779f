"""The deadline alarm in fork mode (PROTOCOL.md §5.2, §2.6): a synchronous handler of a
worker forked from a template is interrupted by SIGALRM 50 ms after its deadline, as an
exec'd worker's is (test_alarm.py). The worker must start with no alarm of the template's:
fork(2) clears pending signals and interval timers, but SIGALRM blocked on the template's
main thread would be inherited and hold back every alarm of the worker."""

from __future__ import annotations

import pytest
from test_fork import Template, subreaper  # noqa: F401  (autouse: forked workers are our children)

NO_ALARM = {"blocked": False, "pending": False, "timer": 0.0}


@pytest.mark.parametrize("env", [{}, {"FORK_APP_ALARM_LEFT": "1"}], ids=["template", "template-leaving-an-alarm"])
def test_a_forked_workers_sync_handler_is_cancelled_by_the_alarm(env: dict[str, str]) -> None:
    t = Template(env=env)
    t.handshake()
    reply, w = t.fork(1)
    assert w is not None, reply
    w.handshake()
    assert w.info()["sigalrm"] == NO_ALARM  # before any request: nothing of the template's

    w.send(b"GET /sleep HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-fork-alarm\r\n"
           b"AfterBurn-Timeout-Ms: 200\r\nAfterBurn-Exchange: a1\r\n\r\n")
    resp = w.response(timeout=10)
    got = resp.json()
    assert (resp.status, resp.headers.get("afterburn-exchange")) == (200, "a1"), got
    assert got["cancelled_after"] is not None, "the 5 s sleep was never interrupted"
    assert 0.24 <= got["cancelled_after"] < 2, got  # the deadline + 50 ms (§2.5), not before
    assert got["flag"] is True

    # The next response is far larger than the pipe holds, so its writes block until read,
    # under a deadline of its own: nothing of the cancelled request's may cut it (§8.3).
    size = 1 << 20
    w.send(b"GET /large?size=%d HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 5000\r\n"
           b"AfterBurn-Exchange: a2\r\n\r\n" % size)
    big = w.response(timeout=10)
    assert (big.status, big.complete, len(big.body), big.headers.get("afterburn-exchange")) == (200, True, size, "a2")
    assert big.body == b"z" * size
    # Nothing blocked or pending after the exchanges; the timer is lazy (_alarm): the last
    # exchange's, left running, never one of the template's.
    left = w.info()["sigalrm"]
    assert (left["blocked"], left["pending"]) == (False, False), left
    assert left["timer"] <= 5.05, left

    status, out, err = w.wait()
    assert status == 0, err
    t_status, t_log = t.close()
    assert t_status == 0, t_log
    if env:
        # The template really forked with SIGALRM blocked, pending and its timer armed.
        assert "before_fork: SIGALRM {'blocked': True, 'pending': True, 'timer': 9" in t_log, t_log
