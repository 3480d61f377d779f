"""The example, tested in-process with the library's test helper (no watchdog)."""

import model

from afterburn_runtime.testing import call


def test_info_shows_the_one_time_initialisation() -> None:
    first = call(model.handle, "GET", "/").json()
    second = call(model.handle, "GET", "/").json()
    assert first["vocabulary"] > 1000
    assert first["loaded_at"] == second["loaded_at"] and first["init_ms"] == second["init_ms"]
    assert second["requests_served"] == first["requests_served"] + 1


def test_generate_streams_tokens() -> None:
    resp = call(model.handle, "GET", "/generate?prompt=return&n=5")
    assert resp.status == 200 and resp.chunked
    assert resp.text.startswith("return ") and resp.text.endswith("\n")


def test_next_words() -> None:
    resp = call(model.handle, "POST", "/next", body="the value of")
    body = resp.json()
    assert body["after"] == "of" and body["next"]
