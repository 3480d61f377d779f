# OpenFaaS templates (templates/): included by the top-level Makefile; paths are relative to
# the repository root.
#
#   make test-templates   for each template: stage the image's working directory natively,
#                         run the function's tests, serve it through the watchdog with the
#                         Dockerfile's CMD, environment and HEALTHCHECK, smoke-test, stop
#   make clean-templates  remove templates/.build (the test's venv and local Maven repository)
#
# There is no Docker engine here: templates/templates_test.go does what each Dockerfile does,
# with the library taken from this repository (templates/README.md, "How they are tested").
# Dockerfiles are linted by `make lint-dockerfile`.

TEMPLATES_BUILD  := templates/.build
TEMPLATES_PY_STAMP := $(TEMPLATES_BUILD)/python.stamp
# The pytest the python3-afterburn Dockerfile installs for the function's tests.
TEMPLATES_PYTEST := $(shell sed -n 's/^ARG PYTEST_VERSION=//p' templates/python3-afterburn/Dockerfile)

.PHONY: test-templates clean-templates

# The image's venv, natively: afterburn-runtime from this source tree (editable, so it never
# goes stale), and pytest beside it as the Dockerfile has it (--target, on PYTHONPATH).
$(TEMPLATES_PY_STAMP): python/pyproject.toml templates/python3-afterburn/Dockerfile
	rm -rf $(TEMPLATES_BUILD)/python-venv $(TEMPLATES_BUILD)/python-test-tools
	$(PYTHON_SYS) -m venv $(TEMPLATES_BUILD)/python-venv
	$(TEMPLATES_BUILD)/python-venv/bin/pip install -q --disable-pip-version-check -e python
	$(TEMPLATES_BUILD)/python-venv/bin/pip install -q --disable-pip-version-check \
		--target $(TEMPLATES_BUILD)/python-test-tools 'pytest==$(TEMPLATES_PYTEST)'
	touch $@

test-templates: $(WATCHDOG) $(TEMPLATES_PY_STAMP) $(NODE_STAMP) $(JAVA_JAR_STAMP)
	cd templates && $(GO) vet ./...
	cd templates && AFTERBURN_WATCHDOG=$(CURDIR)/$(WATCHDOG) TEMPLATES_BUILD=$(CURDIR)/$(TEMPLATES_BUILD) \
		$(GO) test -count=1 -v -timeout 15m ./... 2>&1 | grep -Ev '^=== (RUN|PAUSE)'

# The native stand-ins above (the venv, pytest, the test's local Maven repository).
clean-templates:
	rm -rf $(TEMPLATES_BUILD)
