# Release artifacts (issue 7): every package built as users get it. Included by the top-level
# Makefile; paths are relative to the repository root. .github/workflows/release.yml runs
# `make dist` on a v* tag and attaches everything in dist/ to the GitHub release.
#
#   make dist       into dist/: the Python wheel and sdist (twine-checked), the npm tarball
#                   (with its .d.ts types), the Maven jar, -sources and -javadoc jars and a
#                   stand-alone POM, the watchdog as static linux/amd64 and linux/arm64 binaries
#                   tarred with LICENSE, and SHA256SUMS over all of them
#   make dist-test  installs each artifact in dist/ into a clean place outside the source tree
#                   (a venv, an npm project, a local Maven repository, `go install …@vX.Y.Z`
#                   from a file module proxy) and runs the whole conformance suite against the
#                   installed copy; DIST_TEST_LANGS="go python node java" picks languages.
#                   Not part of `make test`: it takes a few minutes and installs from registries.
#
# Versions: one for every package (checked below). A release tags vX.Y.Z, which starts
# release.yml; its publish job tags go/vX.Y.Z on the same commit: the Go module lives in go/, so
# `go install github.com/afterburn-dev/afterburn/go/cmd/afterburn-watchdog@vX.Y.Z` looks for the
# tag go/vX.Y.Z (https://go.dev/ref/mod#vcs-version); dist-test serves that version from a
# file module proxy instead, built by tools/modproxy.
#
# Nothing is installed by hand: build and twine come from PyPI into .tools/dist-venv, the
# Python build backend (hatchling) from PyPI into build's isolated environment, Maven plugins
# from Maven Central, golang.org/x/mod (tools/modproxy) from the Go proxy.

DIST          := dist
# Python and npm packages are built from copies made here, outside the repository, so that no
# .gitignore, venv or node_modules of the work tree can leak into (or out of) them.
DIST_STAGE    ?= $(or $(TMPDIR),/tmp)/afterburn-dist-stage
DIST_VENV     := .tools/dist-venv
DIST_TEST_LANGS ?= go python node java
# Tar member times, for byte-identical watchdog tarballs from the same sources (1980-01-01,
# the module zip's own epoch, unless the release sets SOURCE_DATE_EPOCH).
SOURCE_DATE_EPOCH ?= 315532800
DIST_WATCHDOG_PLATFORMS := linux/amd64 linux/arm64

# One version for every package: the Python library's _version.py, checked against npm's
# package.json and the Maven POM (and against the tag when release.yml runs on one).
DIST_VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' python/src/afterburn_runtime/_version.py)

.PHONY: dist dist-version dist-python dist-node dist-java dist-watchdog dist-test

dist: dist-version
	rm -rf $(DIST) $(DIST_STAGE)
	mkdir -p $(DIST) $(DIST_STAGE)
	@$(MAKE) --no-print-directory dist-python dist-node dist-java dist-watchdog
	rm -rf $(DIST_STAGE)
	cd $(DIST) && sha256sum $$(ls | grep -vx SHA256SUMS) > SHA256SUMS
	@echo "== dist/ ($(DIST_VERSION))"; cd $(DIST) && ls -l | tail -n +2

dist-version:
	@v=$(DIST_VERSION); [ -n "$$v" ] || { echo "dist: no __version__ in python/src/afterburn_runtime/_version.py"; exit 1; }; \
	npm=$$(sed -n 's/^  "version": "\(.*\)",$$/\1/p' node/package.json); \
	mvn=$$(sed -n '0,/<artifactId>afterburn-parent<\/artifactId>/d; s/^  <version>\(.*\)<\/version>$$/\1/p' java/pom.xml | head -1); \
	[ "$$npm" = "$$v" ] && [ "$$mvn" = "$$v" ] || { echo "dist: versions differ: python $$v, node/package.json $$npm, java/pom.xml $$mvn"; exit 1; }; \
	if [ "$${GITHUB_REF_TYPE:-}" = tag ] && [ "$${GITHUB_REF_NAME:-}" != "v$$v" ]; then \
		echo "dist: tag $${GITHUB_REF_NAME} is not v$$v, the packages' version"; exit 1; fi; \
	echo "dist: version $$v"

# ---- Python: wheel and sdist, built by PyPA build from a copy of python/ that has LICENSE ---
$(DIST_VENV)/.stamp:
	$(PYTHON_SYS) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'build>=1.2' 'twine>=6.1'
	touch $@

dist-python: $(DIST_VENV)/.stamp
	rm -rf $(DIST_STAGE)/python && mkdir -p $(DIST_STAGE)/python
	tar -C python --exclude=__pycache__ --exclude='*.pyc' -cf - pyproject.toml README.md src | tar -C $(DIST_STAGE)/python -xf -
	cp LICENSE $(DIST_STAGE)/python/
	$(DIST_VENV)/bin/python -m build --outdir $(CURDIR)/$(DIST) $(DIST_STAGE)/python
	$(DIST_VENV)/bin/twine check --strict $(DIST)/afterburn_runtime-$(DIST_VERSION)-py3-none-any.whl $(DIST)/afterburn_runtime-$(DIST_VERSION).tar.gz
	@list=$$(unzip -Z1 $(DIST)/afterburn_runtime-$(DIST_VERSION)-py3-none-any.whl); \
	for f in afterburn_runtime/py.typed afterburn_runtime-$(DIST_VERSION).dist-info/licenses/LICENSE; do \
		grep -qx "$$f" <<< "$$list" || { echo "dist-python: $$f missing from the wheel"; exit 1; }; \
	done

# ---- Node: npm pack of a copy of node/ (the package.json "files" choose) with LICENSE -------
dist-node:
	rm -rf $(DIST_STAGE)/node && mkdir -p $(DIST_STAGE)/node
	tar -C node --exclude=./node_modules --exclude=./test --exclude='./*.tgz' -cf - . | tar -C $(DIST_STAGE)/node -xf -
	cp LICENSE $(DIST_STAGE)/node/
	cd $(DIST_STAGE)/node && $(NPM) pack --loglevel=error --pack-destination $(CURDIR)/$(DIST)
	@list=$$(tar -tzf $(DIST)/afterburn-runtime-$(DIST_VERSION).tgz); \
	for f in package/package.json package/LICENSE package/README.md package/index.js package/index.d.ts \
		package/testing.d.ts package/bin/afterburn.js; do \
		grep -qx "$$f" <<< "$$list" || { echo "dist-node: $$f missing from the tarball"; exit 1; }; \
	done

# ---- Java: the runtime jar, sources and javadoc jars, and the flattened (stand-alone) POM ---
dist-java:
	mkdir -p $(DIST)
	$(JAVA_MVN) -pl runtime -am -DskipTests package
	cp java/runtime/target/afterburn-runtime-$(DIST_VERSION).jar \
	   java/runtime/target/afterburn-runtime-$(DIST_VERSION)-sources.jar \
	   java/runtime/target/afterburn-runtime-$(DIST_VERSION)-javadoc.jar $(DIST)/
	cp java/runtime/target/.flattened-pom.xml $(DIST)/afterburn-runtime-$(DIST_VERSION).pom
	grep -q '<name>Apache License, Version 2.0</name>' $(DIST)/afterburn-runtime-$(DIST_VERSION).pom
	grep -q '<scm>' $(DIST)/afterburn-runtime-$(DIST_VERSION).pom
	! grep -q '<parent>' $(DIST)/afterburn-runtime-$(DIST_VERSION).pom

# ---- Go: the watchdog, static (CGO_ENABLED=0), one tarball per platform with LICENSE -------
# A static binary has no ELF interpreter (PT_INTERP); readelf checks that.
dist-watchdog:
	mkdir -p $(DIST)
	@set -e; for p in $(DIST_WATCHDOG_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=afterburn-watchdog-$(DIST_VERSION)-$$os-$$arch; \
		rm -rf $(DIST_STAGE)/$$name && mkdir -p $(DIST_STAGE)/$$name; \
		echo "go build $$name"; \
		(cd go && CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags='-s -w' \
			-o $(DIST_STAGE)/$$name/afterburn-watchdog ./cmd/afterburn-watchdog); \
		elf=$$(readelf -l $(DIST_STAGE)/$$name/afterburn-watchdog); \
		if grep -q INTERP <<< "$$elf"; then \
			echo "dist-watchdog: $$name is dynamically linked"; exit 1; fi; \
		cp LICENSE README.md $(DIST_STAGE)/$$name/; \
		tar -C $(DIST_STAGE) --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
			-cf - $$name | gzip -n -9 > $(DIST)/$$name.tar.gz; \
	done

# ---- dist-test: each artifact installed outside the tree, then the whole suite -------------
# tools/dist-test.sh prints each suite run's failures and a `N passed, N failed` line per
# artifact; it exits 1 when any check failed. It tests what is in dist/ (after checking
# SHA256SUMS), so a dist/ downloaded from a release can be tested too.
dist-test: $(CONFORMANCE)
	@[ -f $(DIST)/SHA256SUMS ] || { echo "dist-test: no $(DIST)/SHA256SUMS; run make dist first"; exit 1; }
	DIST=$(CURDIR)/$(DIST) VERSION=$(DIST_VERSION) CONFORMANCE=$(CURDIR)/$(CONFORMANCE) GO=$(GO) \
		PYTHON_SYS=$(PYTHON_SYS) NODE=$(NODE) NPM=$(NPM) MVN=$(MVN) JAVA=$(JAVA) \
		tools/dist-test.sh $(DIST_TEST_LANGS)
