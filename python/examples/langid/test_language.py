"""The flagship example under the real watchdog in fork mode (-spawn fork, PROTOCOL.md §2.6):
the model is loaded once, in the template, and forked workers answer real predictions.
Skipped when the examples' extra (langid) is not installed: `make test-python` installs it."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("langid", reason="the examples' extra is not installed (pip install -e 'python[examples]')")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
WATCHDOG = ROOT / "go" / "bin" / "afterburn-watchdog"

TEXTS = {
    "Ceci est une phrase écrite en français, pour voir.": "fr",
    "Dies ist ein deutscher Satz über das Wetter von morgen.": "de",
    "This is an English sentence about tomorrow's weather.": "en",
    "Esta es una frase en español sobre el tiempo de mañana.": "es",
    "これは日本語の文です。": "ja",
}


class ForkedService:
    """The watchdog with two workers forked from one template of language.py; ready once its
    log says where it listens and /_/ready answers 200 with both workers started by fork."""

    def __init__(self) -> None:
        if not WATCHDOG.exists():
            pytest.fail(f"{WATCHDOG} is missing: build it with `make go/bin/afterburn-watchdog`")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python" / "src"), str(HERE)]))
        self.proc = subprocess.Popen(
            [str(WATCHDOG), "-spawn", "fork", "-workers", "2", "-port", "0", "-metrics_port", "0",
             "-listen_host", "127.0.0.1", "-prefix_logs=false", "--",
             sys.executable, "-m", "afterburn_runtime", "language:handle"],
            env=env, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.addr: str | None = None
        listening = threading.Event()

        def read_log() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                if self.addr is None and "listening on " in line:
                    self.addr = line.split("listening on ", 1)[1].split()[0]
                    listening.set()

        threading.Thread(target=read_log, daemon=True).start()
        if not listening.wait(30):
            self.fail("the watchdog never logged its address")
        deadline = time.monotonic() + 60
        while True:
            status, body = self.request("GET", "/_/ready")
            if status == 200 and body.get("started", {}).get("fork") == 2:
                break
            if time.monotonic() > deadline:
                self.fail(f"not ready with two forked workers: {status} {body}")
            time.sleep(0.01)  # polling the watchdog's readiness signal, as the suite does

    def fail(self, why: str) -> None:
        self.stop()
        pytest.fail(why + ":\n" + "".join(self.lines))

    def request(self, method: str, path: str, payload: object = None) -> tuple[int, dict]:
        assert self.addr is not None
        host, port = self.addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            body = None if payload is None else json.dumps(payload).encode()
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, json.loads(data) if data else {}
        finally:
            conn.close()

    def stop(self) -> str:
        self.proc.terminate()  # SIGTERM: graceful shutdown (§9.4)
        self.proc.wait(timeout=30)
        return "".join(self.lines)


@pytest.fixture(scope="module")
def service():
    s = ForkedService()
    yield s
    s.stop()


@pytest.mark.parametrize("text, want", TEXTS.items(), ids=list(TEXTS.values()))
def test_detects_the_language(service: ForkedService, text: str, want: str) -> None:
    status, got = service.request("POST", "/detect", {"text": text})
    assert status == 200, got
    assert got["language"] == want and got["probability"] > 0.9, got
    assert got["candidates"][0] == [want, got["probability"]]


def test_detects_a_batch(service: ForkedService) -> None:
    status, got = service.request("POST", "/detect", {"texts": list(TEXTS)})
    assert status == 200, got
    assert [r["language"] for r in got["results"]] == list(TEXTS.values())


def test_the_model_was_loaded_once_by_the_template(service: ForkedService) -> None:
    status, info = service.request("GET", "/")
    assert status == 200, info
    assert info["languages"] == 97
    assert info["loaded_by_pid"] != info["pid"]  # a forked worker, not the process that loaded
    assert info["worker_id"] in {"1", "2"}
    log = "".join(service.lines)
    assert log.count("langid model for 97 languages loaded") == 1, log


@pytest.mark.parametrize("payload", [{"txt": "x"}, {"texts": []}, {"texts": [1]}, [1, 2]])
def test_bad_input_is_a_400_naming_the_shape(service: ForkedService, payload: object) -> None:
    status, got = service.request("POST", "/detect", payload)
    assert status == 400 and "text" in got["error"], got
