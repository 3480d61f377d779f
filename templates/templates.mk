# OpenFaaS templates (templates/): included by the top-level Makefile; paths are relative to
# the repository root.
#
#   make test-templates   for each template: stage the image's working directory natively,
#                         run the function's tests, serve it through the watchdog with the
#                         Dockerfile's CMD, environment and HEALTHCHECK, smoke-test, stop
#   make template-packages  put the packages dist/ holds (make dist) into each template's
#                         packages/, where its Dockerfile installs the library from instead of
#                         the registry: the wheel, the npm tarball, the Maven jars and POMs, and
#                         for Go a file module proxy of go/afterburn and its adapters (tools/modproxy)
#   make test-templates-dist  the same test with the library installed from those packages by
#                         the Dockerfile's own RUN line, and the watchdog from dist/'s static
#                         linux binary: no registry for the project's own artefacts. Runs
#                         `make dist` first (DIST_REUSE=1: tests the dist/ already there). Not
#                         part of make test: make dist takes minutes; CI runs it after make test
#   make clean-templates  remove templates/.build and every template's packages/ but its README
#
# There is no Docker engine here: templates/templates_test.go does what each Dockerfile does,
# with the library taken from this repository (templates/README.md, "How they are tested").
# Dockerfiles are linted by `make lint-dockerfile`.

TEMPLATES_BUILD  := templates/.build
TEMPLATES_PY_STAMP := $(TEMPLATES_BUILD)/python.stamp
# The pytest the python3-afterburn Dockerfile installs for the function's tests.
TEMPLATES_PYTEST := $(shell sed -n 's/^ARG PYTEST_VERSION=//p' templates/python3-afterburn/Dockerfile)

.PHONY: test-templates clean-templates template-packages test-templates-dist

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

# ---- from the packages `make dist` makes (README.md, "Building from a checkout") ----------
# Each template's packages/ (a template has one: its README.md is committed) gets what its build stage installs, chosen by the stage's base image:
# python, node, maven (every jar with its POM; not the -sources and -javadoc jars) or golang (a
# module proxy of the library's modules at v$(DIST_VERSION), the versions a release tags:
# dist.mk). The watchdog's module is not there: the templates copy the watchdog's binary.
TEMPLATES_GOPROXY := $(TEMPLATES_BUILD)/goproxy
TEMPLATES_GO_MODULES = $(patsubst ./%,go/%,$(filter ./%,$(shell awk '/^use \(/ {u = 1; next} u && /^\)/ {u = 0} u && $$1 ~ /^\./ {print $$1}' go/go.work)))

template-packages:
	@[ -f $(DIST)/SHA256SUMS ] || { echo "template-packages: no $(DIST)/SHA256SUMS; run make dist first"; exit 1; }
	cd $(DIST) && sha256sum --quiet -c SHA256SUMS
	rm -rf $(TEMPLATES_GOPROXY) && mkdir -p $(TEMPLATES_BUILD)
	cd tools/modproxy && $(GO) build -o $(CURDIR)/$(TEMPLATES_BUILD)/modproxy .
	@set -e; for m in $(TEMPLATES_GO_MODULES); do \
		$(TEMPLATES_BUILD)/modproxy -dir $$m -version v$(DIST_VERSION) -out $(TEMPLATES_GOPROXY); done
	@set -e; for t in templates/*/; do \
		t=$${t%/}; p=$$t/packages; \
		[ -f $$p/README.md ] || { echo "template-packages: $$t: no packages/README.md, skipped"; continue; }; \
		find $$p -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +; \
		base=$$(sed -n 's/^FROM \([a-z]*\):.* AS build$$/\1/p' $$t/Dockerfile); \
		case $$base in \
		python) cp $(DIST)/afterburn_runtime-$(DIST_VERSION)-py3-none-any.whl $$p/ ;; \
		node) cp $(DIST)/afterburn-runtime-$(DIST_VERSION).tgz $$p/ ;; \
		maven) for pom in $(DIST)/afterburn-*-$(DIST_VERSION).pom; do cp $$pom $${pom%.pom}.jar $$p/; done ;; \
		golang) cp -R $(TEMPLATES_GOPROXY) $$p/goproxy ;; \
		*) echo "template-packages: $$t: no build stage FROM python, node, maven or golang"; exit 1 ;; \
		esac; \
		echo "template-packages: $$p: $$(cd $$p && ls | grep -vx README.md | tr '\n' ' ')"; \
	done

# The dist/ watchdog for this machine (linux/amd64 or linux/arm64), as the image would copy it.
TEMPLATES_DIST_ARCH     := $(patsubst x86_64,amd64,$(patsubst aarch64,arm64,$(shell uname -m)))
TEMPLATES_DIST_WATCHDOG  = $(TEMPLATES_BUILD)/dist-watchdog/afterburn-watchdog-$(DIST_VERSION)-linux-$(TEMPLATES_DIST_ARCH)/afterburn-watchdog

test-templates-dist: $(TEMPLATES_PY_STAMP)
	@if [ "$(DIST_REUSE)" = 1 ] && [ -f $(DIST)/SHA256SUMS ]; then echo "test-templates-dist: DIST_REUSE=1: testing the $(DIST)/ already there"; \
	else $(MAKE) --no-print-directory dist; fi
	@$(MAKE) --no-print-directory template-packages
	rm -rf $(TEMPLATES_BUILD)/dist-watchdog && mkdir -p $(TEMPLATES_BUILD)/dist-watchdog
	tar -C $(TEMPLATES_BUILD)/dist-watchdog -xzf $(DIST)/afterburn-watchdog-$(DIST_VERSION)-linux-$(TEMPLATES_DIST_ARCH).tar.gz
	cd templates && TEMPLATES_MODE=dist TEMPLATES_VERSION=$(DIST_VERSION) AFTERBURN_WATCHDOG=$(CURDIR)/$(TEMPLATES_DIST_WATCHDOG) \
		TEMPLATES_BUILD=$(CURDIR)/$(TEMPLATES_BUILD) $(GO) test -count=1 -v -timeout 20m ./... 2>&1 | grep -Ev '^=== (RUN|PAUSE)'

# The native stand-ins above (the venv, pytest, the test's local Maven repositories) and the
# packages template-packages put in the templates.
clean-templates:
	rm -rf $(TEMPLATES_BUILD)
	find templates/*/packages -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} + 2>/dev/null || true
