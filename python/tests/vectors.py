"""Reading conformance/vectors/*.json in place (never a copy), as conformance/README.md says."""

from __future__ import annotations

import json
from pathlib import Path

VECTORS_DIR = Path(__file__).resolve().parents[2] / "conformance" / "vectors"

# The environment the wire layer gives every fixture before a vector's own env: a watchdog
# with default limits (PROTOCOL.md §2.3, §7.1, §7.2).
BASE_ENV = {
    "AFTERBURN_PROTOCOL": "1",
    "AFTERBURN_FDS": "3,4",
    "AFTERBURN_WORKER_ID": "1",
    "AFTERBURN_MAX_HEADER_BYTES": "32768",
    "AFTERBURN_MAX_BODY_BYTES": "67108864",
}


def load(kind: str) -> list[dict]:
    """Every vector of the given kind; fails when the folder has none (the tests must not
    pass by finding nothing)."""
    files = sorted(p for p in VECTORS_DIR.glob("*.json") if p.name != "schema.json")
    if not files:
        raise AssertionError(f"no vector files in {VECTORS_DIR}")
    out = [v for f in files for v in json.loads(f.read_text())["vectors"] if v["kind"] == kind]
    if not out:
        raise AssertionError(f"no {kind!r} vectors in {VECTORS_DIR}")
    return out


def segments(vector: dict) -> list[bytes]:
    """The request as bytes, one item per segment: latin-1 strings or {"repeat", "times"}."""
    out = []
    for seg in vector["request"]:
        if isinstance(seg, str):
            out.append(seg.encode("latin-1"))
        else:
            out.append(seg["repeat"].encode("latin-1") * seg["times"])
    return out


def env(vector: dict) -> dict[str, str]:
    return {**BASE_ENV, **vector.get("env", {})}


def compare_fields(what: str, got: list, want: list) -> list[str]:
    """Per-name matching of field lists (conformance/README.md, "Field lists")."""
    errors = []
    for name in {n for n, _ in want}:
        g = [v for n, v in got if n == name]
        w = [v for n, v in want if n == name]
        if g != w:
            errors.append(f"{what} {name!r}: got {g!r}; want {w!r}")
    if want == [] and got:
        errors.append(f"{what}: got {got!r}; want none")
    return errors


def check_echo(expect: dict, got: dict) -> list[str]:
    """Differences between an echo expectation and an echo-format dict."""
    want = expect["echo"]
    errors = []
    for key in ("method", "path", "query", "body_b64", "body_len", "request_id"):
        if key in want and got.get(key) != want[key]:
            errors.append(f"{key}: got {got.get(key)!r}; want {want[key]!r}")
    if "headers" in want:
        errors += compare_fields("header", [tuple(p) for p in got["headers"]], [tuple(p) for p in want["headers"]])
    if "trailers" in want:
        errors += compare_fields("trailer", [tuple(p) for p in got["trailers"]], [tuple(p) for p in want["trailers"]])
    for name in expect.get("absent_headers", []):
        if any(n == name for n, _ in got["headers"]):
            errors.append(f"header {name!r} present; want absent")
    return errors


def ids(vectors: list[dict]) -> list[str]:
    return [v["id"] for v in vectors]


def check_response(want: dict, got) -> list[str]:
    """Differences between a `response` expectation (conformance/README.md) and a parsed
    response (afterburn_runtime.testing.TestResponse)."""
    import base64

    errors = []
    if "status" in want and got.status != want["status"]:
        errors.append(f"status: got {got.status}; want {want['status']}")
    if "headers" in want:
        errors += compare_fields("header", list(got.headers), [tuple(p) for p in want["headers"]])
    for name in want.get("absent_headers", []):
        if name in got.headers:
            errors.append(f"header {name!r}: got {got.headers.get_all(name)!r}; want absent")
    for name, member in want.get("lists", []):
        # A set-valued field: exactly one, holding member (README "Field lists").
        values = got.headers.get_all(name)
        if len(values) != 1 or member not in [m.strip() for m in values[0].split(",")]:
            errors.append(f"header {name!r}: got {values!r}; want one list holding {member!r}")
    if "chunked" in want and got.chunked != want["chunked"]:
        errors.append(f"chunked: got {got.chunked}; want {want['chunked']}")
    if want.get("no_body") and got.body:
        errors.append(f"body: got {got.body!r}; want none")
    if "body_b64" in want and got.body != base64.b64decode(want["body_b64"]):
        errors.append(f"body: got {got.body!r}; want {base64.b64decode(want['body_b64'])!r}")
    if "json" in want:
        body = got.json()
        for key, value in want["json"].items():
            if body.get(key) != value:
                errors.append(f"json {key!r}: got {body.get(key)!r}; want {value!r}")
    return errors
