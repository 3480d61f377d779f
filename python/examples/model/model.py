"""An AfterBurn function that loads a "model" once and then answers in microseconds.

The model is a word-bigram language model trained, at import time, on the docstrings of
a few hundred standard-library modules: real work (reading and tokenising a few MB of
text) standing in for loading numpy arrays or a tokenizer. The watchdog starts this
process once; every request after that reuses the model.

    make run-python            # or, from the repository root:
    go/bin/afterburn-watchdog -listen_host 127.0.0.1 -port 8080 -- \\
        env PYTHONPATH=python/examples/model python/.venv/bin/python -m afterburn_runtime model:handle

    curl http://127.0.0.1:8080/                       # what was loaded, when, how long it took
    curl 'http://127.0.0.1:8080/generate?prompt=return&n=20'   # tokens streamed as produced
    curl -d 'the value of the' http://127.0.0.1:8080/next      # the likeliest next words
"""

from __future__ import annotations

import os
import pkgutil
import re
import sys
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone

from afterburn_runtime import Request, Response

# -- initialisation: runs once, when the launcher imports this module ------------------------

_started = time.perf_counter()
LOADED_AT = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def _corpus() -> list[str]:
    """Docstrings of the standard library's pure-Python modules."""
    texts = []
    stdlib = os.path.dirname(os.__file__)
    for info in pkgutil.iter_modules([stdlib]):
        path = os.path.join(stdlib, info.name + ".py")
        try:
            with open(path, encoding="utf-8") as f:
                source = f.read()
        except OSError:
            continue
        texts.extend(re.findall(r'"""(.*?)"""', source, re.DOTALL))
    return texts


def _train(texts: list[str]) -> dict[str, Counter[str]]:
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        words = _WORD.findall(text.lower())
        for a, b in zip(words, words[1:]):
            table[a][b] += 1
    return dict(table)


MODEL = _train(_corpus())
INIT_MS = round((time.perf_counter() - _started) * 1000, 1)
print(f"model: {len(MODEL)} words loaded in {INIT_MS} ms", file=sys.stderr)  # goes to the logs

_served = 0


# -- the handler ------------------------------------------------------------------------------


def handle(req: Request) -> Response:
    global _served
    _served += 1
    if req.path == "/generate":
        return generate(req)
    if req.path == "/next":
        return next_words(req)
    return Response.json({
        "model": "word bigrams over standard-library docstrings",
        "vocabulary": len(MODEL),
        "loaded_at": LOADED_AT,
        "init_ms": INIT_MS,
        "requests_served": _served,
        "pid": os.getpid(),
        "worker_id": os.environ.get("AFTERBURN_WORKER_ID", ""),
        "request_id": req.request_id,
    })


def generate(req: Request) -> Response:
    """Streams up to n words after the prompt, one chunk per word, as a token stream."""
    word = (req.arg("prompt") or "the").lower()
    n = min(int(req.arg("n") or "20"), 200)

    def tokens():
        nonlocal word
        yield word
        for _ in range(n):
            following = MODEL.get(word)
            if not following:
                break
            word = following.most_common(1)[0][0]
            yield " " + word
        yield "\n"

    return Response(tokens(), headers={"Content-Type": "text/plain; charset=utf-8"})


def next_words(req: Request) -> Response:
    words = _WORD.findall(req.text().lower())
    last = words[-1] if words else "the"
    following = MODEL.get(last, Counter())
    total = sum(following.values()) or 1
    return Response.json({
        "after": last,
        "next": [{"word": w, "p": round(c / total, 4)} for w, c in following.most_common(5)],
    })
