# Python library (python/): included by the top-level Makefile, so every path here is
# relative to the repository root. Everything is installed from PyPI by pip into the dev
# venv python/.venv; the stamp makes a second run quick. The venv has the opt-in
# accelerator (the `speed` extra: uvloop), so the tests and the conformance runs cover both
# paths: uvloop's loop (AFTERBURN_PY_ACCEL=on; auto, the default, uses it with lanes only)
# and the standard library's (AFTERBURN_PY_ACCEL=off).
#
#   make test-python         unit tests (pytest; reads conformance/vectors in place)
#   make conformance-python  the conformance suite: with and without the launcher, and
#                            the fixture as an ASGI app and as a WSGI app
#   make run-python          the example "model" function through the watchdog
#   make run-python-langid   the flagship example: a real pretrained model (langid), workers
#                            forked from one template (-spawn fork)

PYTHON_SYS   ?= python3
PY_VENV      := python/.venv
PY           := $(PY_VENV)/bin/python
PY_STAMP     := python/.stamp-venv
PY_FIXTURE_LAUNCHER := env PYTHONPATH=python/tests/fixture $(PY) -m afterburn_runtime afterburn_fixture:handle
PY_FIXTURE_SCRIPT   := $(PY) python/tests/fixture/serve_fixture.py
PY_FIXTURE_ASGI     := env PYTHONPATH=python/tests/fixture $(PY) -m afterburn_runtime --asgi asgi_fixture:app
PY_FIXTURE_ASGI_UVLOOP := env AFTERBURN_PY_ACCEL=on PYTHONPATH=python/tests/fixture $(PY) -m afterburn_runtime --asgi asgi_fixture:app
PY_FIXTURE_ASGI_STDLIB := env AFTERBURN_PY_ACCEL=off PYTHONPATH=python/tests/fixture $(PY) -m afterburn_runtime --asgi asgi_fixture:app
PY_FIXTURE_WSGI     := env PYTHONPATH=python/tests/fixture $(PY) -m afterburn_runtime --wsgi wsgi_fixture:app
PY_EXAMPLE   := env PYTHONPATH=python/examples/model $(PY) -m afterburn_runtime model:handle
PY_LANGID    := env PYTHONPATH=python/examples/langid $(PY) -m afterburn_runtime language:handle

.PHONY: test-python conformance-python conformance-python-fork conformance-python-isolation conformance-python-lanes run-python run-python-langid

$(PY_STAMP): python/pyproject.toml python/python.mk
	$(PYTHON_SYS) -m venv $(PY_VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'python[test,speed]'
	touch $@

# The examples' extra (langid and NumPy, from PyPI) in the same venv.
PY_EXAMPLES_STAMP := python/.stamp-examples
$(PY_EXAMPLES_STAMP): $(PY_STAMP) python/pyproject.toml
	$(PY) -m pip install --quiet --disable-pip-version-check -e 'python[examples]'
	touch $@

# Byte-compile the library (as a wheel install does): with PYTHONDONTWRITEBYTECODE set,
# every worker would otherwise compile it again at start-up, which costs cold start.
PY_SOURCES := $(wildcard python/src/afterburn_runtime/*.py)
PY_COMPILED := python/.stamp-compiled
$(PY_COMPILED): $(PY_STAMP) $(PY_SOURCES)
	$(PY) -m compileall -q python/src >/dev/null
	touch $@

# pytest exits 5 when it collected no test: that means the tests went missing, and it
# must fail this target rather than pass silently (so no `|| [ $$? = 5 ]` here).
test-python: $(PY_COMPILED) $(PY_EXAMPLES_STAMP) $(WATCHDOG)
	cd python && .venv/bin/python -m pytest -q

conformance-python: $(PY_COMPILED) $(WATCHDOG) $(CONFORMANCE)
	@echo "== python: with the launcher (python -m afterburn_runtime)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_LAUNCHER)" $(CONFORMANCE_FLAGS)
	@echo "== python: without the launcher (a script calling afterburn_runtime.serve)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_SCRIPT)" $(CONFORMANCE_FLAGS)
	@echo "== python: the fixture as an ASGI app (serve_asgi), on uvloop's loop (the speed extra, AFTERBURN_PY_ACCEL=on)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_ASGI_UVLOOP)" $(CONFORMANCE_FLAGS)
	@echo "== python: the fixture as an ASGI app, the standard library only (AFTERBURN_PY_ACCEL=off)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_ASGI_STDLIB)" $(CONFORMANCE_FLAGS)
	@echo "== python: the fixture as a WSGI app (serve_wsgi)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_WSGI)" $(CONFORMANCE_FLAGS)

# PROTOCOL.md §2.6: the whole suite again with every worker forked from a template
# (make conformance-modes runs it; make test runs only the fork checks, in every variant above).
conformance-python-fork: $(PY_COMPILED) $(WATCHDOG) $(CONFORMANCE)
	@echo "== python, fork mode: the launcher, every worker forked from a template (-spawn fork)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -watchdog-flags "-spawn fork" -function "$(PY_FIXTURE_LAUNCHER)" $(CONFORMANCE_FLAGS)
	@echo "== python, fork mode: the fixture as an ASGI app"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -watchdog-flags "-spawn fork" -function "$(PY_FIXTURE_ASGI)" $(CONFORMANCE_FLAGS)

# PROTOCOL.md §2.7: the whole suite with one fresh fork of the template per request (make
# conformance-modes runs it; make test runs only the isolation checks, in every variant above).
conformance-python-isolation: $(PY_COMPILED) $(WATCHDOG) $(CONFORMANCE)
	@echo "== python, isolation=request: the launcher, every request a fresh fork of the template"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -watchdog-flags "-spawn fork -isolation request" -function "$(PY_FIXTURE_LAUNCHER)" $(CONFORMANCE_FLAGS)
	@echo "== python, isolation=request: the fixture as an ASGI app"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -watchdog-flags "-spawn fork -isolation request" -function "$(PY_FIXTURE_ASGI)" $(CONFORMANCE_FLAGS)

# PROTOCOL.md §2.5: the whole suite with four lanes per worker, through the launcher
# (make conformance-modes runs it). Needs the Python library's lanes (streams).
conformance-python-lanes: $(PY_COMPILED) $(WATCHDOG) $(CONFORMANCE)
	@echo "== python, lanes: the launcher, four lanes per worker (-lanes 4)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_LAUNCHER)" $(LANES_FLAGS) $(CONFORMANCE_FLAGS)
	@echo "== python, lanes: the fixture as an ASGI app, its requests concurrent tasks on one event loop (uvloop's: auto with lanes)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_ASGI)" $(LANES_FLAGS) $(CONFORMANCE_FLAGS)
	@echo "== python, lanes: the same on asyncio's own loop (AFTERBURN_PY_ACCEL=off)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_ASGI_STDLIB)" $(LANES_FLAGS) $(CONFORMANCE_FLAGS)

run-python: $(PY_COMPILED) $(WATCHDOG)
	@echo "serving python/examples/model on http://127.0.0.1:$(RUN_PORT)/ (Ctrl-C stops)"
	$(WATCHDOG) -listen_host 127.0.0.1 -port $(RUN_PORT) -- $(PY_EXAMPLE)

# The flagship example: langid's pretrained model loaded once, in a template, and every
# worker forked from it (PROTOCOL.md §2.6). WORKERS=... sets the pool (default: one per CPU).
run-python-langid: $(PY_COMPILED) $(PY_EXAMPLES_STAMP) $(WATCHDOG)
	@echo "serving python/examples/langid on http://127.0.0.1:$(RUN_PORT)/ (Ctrl-C stops)"
	$(WATCHDOG) -spawn fork $(if $(WORKERS),-workers $(WORKERS)) -listen_host 127.0.0.1 -port $(RUN_PORT) -- $(PY_LANGID)
