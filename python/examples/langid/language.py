"""Language identification with a real pretrained model: the flagship of fork mode.

The model is langid.py's (Lui & Baldwin, 2012): a multinomial naive Bayes classifier over
byte n-grams for 97 languages, trained by its authors and shipped inside the ``langid``
package on PyPI (a compressed string in ``langid/langid.py``, nothing is fetched at run
time). Loading it unpacks NumPy arrays and a tokenizer automaton, about 1.5 s of start-up
that this module pays at import, once. Under ``-spawn fork`` the watchdog starts it once as
a template and forks every worker from it (PROTOCOL.md §2.6): the model is loaded once per
container, held once in memory, and a crashed worker is replaced in milliseconds.

    make run-python-langid     # or, from the repository root:
    go/bin/afterburn-watchdog -spawn fork -listen_host 127.0.0.1 -port 8080 -- \\
        env PYTHONPATH=python/examples/langid python/.venv/bin/python -m afterburn_runtime language:handle

    curl -d '{"text": "Ceci est une phrase en français."}' http://127.0.0.1:8080/detect
    curl -d '{"texts": ["hello world", "hola mundo", "guten Morgen"]}' http://127.0.0.1:8080/detect
    curl http://127.0.0.1:8080/        # the model, which process loaded it, which one answers

``LANGID_LANGUAGES=en,fr,de,...`` restricts the model to those languages (langid's
``set_languages``), which makes short texts more reliable when you know the candidates.
"""

from __future__ import annotations

import json
import os
import sys
import time

from afterburn_runtime import Request, Response

# -- initialisation: runs once, in the template under -spawn fork -----------------------------

_started = time.perf_counter()

from langid.langid import LanguageIdentifier  # noqa: E402  (timed with the load)
from langid.langid import model as _MODEL  # noqa: E402

IDENTIFIER = LanguageIdentifier.from_modelstring(_MODEL, norm_probs=True)
if os.environ.get("LANGID_LANGUAGES"):
    IDENTIFIER.set_languages([code.strip() for code in os.environ["LANGID_LANGUAGES"].split(",") if code.strip()])
LANGUAGES = sorted(IDENTIFIER.nb_classes)
INIT_MS = round((time.perf_counter() - _started) * 1000, 1)
LOADED_BY = os.getpid()  # in fork mode the template's pid, which no worker has
print(f"language: langid model for {len(LANGUAGES)} languages loaded in {INIT_MS} ms", file=sys.stderr)

MAX_TEXTS = 100  # texts in one request
TOP = 3  # candidates reported per text


def detect(text: str) -> dict:
    ranked = IDENTIFIER.rank(text)[:TOP]
    language, probability = ranked[0]
    return {
        "language": language,
        "probability": round(float(probability), 4),
        "candidates": [[code, round(float(p), 4)] for code, p in ranked],
    }


# -- the handler ------------------------------------------------------------------------------


def handle(req: Request) -> Response:
    if req.path == "/detect" and req.method == "POST":
        return _detect(req)
    if req.path == "/" and req.method == "GET":
        return Response.json({
            "model": "langid.py naive Bayes language identifier (from the langid package)",
            "languages": len(LANGUAGES),
            "init_ms": INIT_MS,
            "loaded_by_pid": LOADED_BY,
            "pid": os.getpid(),
            "worker_id": os.environ.get("AFTERBURN_WORKER_ID"),
            "usage": "POST /detect with {\"text\": \"...\"} or {\"texts\": [\"...\", ...]}",
        })
    return _error(404, f"no route {req.method} {req.path}: GET / or POST /detect")


def _detect(req: Request) -> Response:
    try:
        data = json.loads(req.body or b"null")
    except ValueError as e:
        return _error(400, f"the body is not JSON: {e}")
    if isinstance(data, dict) and isinstance(data.get("text"), str):
        return Response.json(detect(data["text"]))
    texts = data.get("texts") if isinstance(data, dict) else None
    if isinstance(texts, list) and all(isinstance(t, str) for t in texts) and 0 < len(texts) <= MAX_TEXTS:
        return Response.json({"results": [detect(t) for t in texts]})
    return _error(400, f'want {{"text": "..."}} or {{"texts": [...]}} with 1 to {MAX_TEXTS} strings')


def _error(status: int, message: str) -> Response:
    return Response.json({"error": message}, status=status)
