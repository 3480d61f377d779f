# Release artifacts (issue 7): every package built as users get it. Included by the top-level
# Makefile; paths are relative to the repository root. .github/workflows/release.yml runs
# `make dist` on a v* tag and attaches everything in dist/ to the GitHub release.
#
#   make dist       into dist/: the Python wheel and sdist (twine-checked), the npm tarball
#                   (with its .d.ts types), for each published Maven artifact (afterburn-runtime,
#                   afterburn-shapes) the jar, -sources and -javadoc jars and a stand-alone POM,
#                   the watchdog as static linux/amd64 and linux/arm64 binaries tarred with
#                   LICENSE, and SHA256SUMS over all of them
#   make dist-test  installs each artifact in dist/ into a clean place outside the source tree
#                   (a venv, an npm project, a local Maven repository, `go install …@vX.Y.Z`
#                   from a file module proxy) and runs the whole conformance suite against the
#                   installed copy; DIST_TEST_LANGS="go python node java" picks languages.
#                   Not part of `make test`: it takes a few minutes and installs from registries.
#
# Versions: one for every package (checked below). A release tags vX.Y.Z, which starts
# release.yml. Go has no artifact in dist/: a Go module version is a tag whose prefix is the
# module's directory (https://go.dev/ref/mod#vcs-version), so a release tags, on the same
# commit, one tag per module of go/ (go/go.work lists them; `make dist-go-tags` prints them):
#   go/vX.Y.Z                         the watchdog's module (go install …/go/cmd/afterburn-watchdog@vX.Y.Z)
#   go/afterburn/vX.Y.Z               the library, github.com/afterburn-dev/afterburn/go/afterburn
#   go/afterburn/<adapter>/vX.Y.Z     each adapter: openfaas, lambda, cloudevents
# An adapter's go.mod must require the library at vX.Y.Z or lower on that commit (its replace
# directive applies in this checkout only). dist-test serves those versions from a file module
# proxy instead, built by tools/modproxy, and so does `make template-packages`
# (templates/templates.mk) for the Go templates.
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

.PHONY: dist dist-version dist-python dist-node dist-java dist-watchdog dist-test dist-go-tags

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
	for m in go/afterburn/*/go.mod; do \
		grep -q "github.com/afterburn-dev/afterburn/go/afterburn v$$v$$" $$m || { echo "dist: $$m does not require the library at v$$v"; exit 1; }; done; \
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

# ---- Java: each published artifact's jar, sources and javadoc jars, and its flattened POM ----
# afterburn-shapes (the OpenFaaS, Lambda and CloudEvents launchers) is what java11-afterburn
# builds on, afterburn-servlet and afterburn-spring-boot-starter what java-spring-afterburn
# builds on; their POMs name afterburn-runtime (and the starter afterburn-servlet), so all are
# published together.
DIST_JAVA_MODULES := runtime shapes servlet spring-boot-starter

dist-java:
	mkdir -p $(DIST)
	$(JAVA_MVN) -pl $(shell echo $(DIST_JAVA_MODULES) | tr ' ' ,) -am -DskipTests package
	@set -e; for m in $(DIST_JAVA_MODULES); do \
		a=afterburn-$$m-$(DIST_VERSION); \
		echo "dist-java: $$a"; \
		cp java/$$m/target/$$a.jar java/$$m/target/$$a-sources.jar java/$$m/target/$$a-javadoc.jar $(DIST)/; \
		cp java/$$m/target/.flattened-pom.xml $(DIST)/$$a.pom; \
		grep -q '<name>Apache License, Version 2.0</name>' $(DIST)/$$a.pom || { echo "dist-java: $$a.pom has no licence"; exit 1; }; \
		grep -q '<scm>' $(DIST)/$$a.pom || { echo "dist-java: $$a.pom has no <scm>"; exit 1; }; \
		! grep -q '<parent>' $(DIST)/$$a.pom || { echo "dist-java: $$a.pom names a parent"; exit 1; }; \
	done

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

# ---- Go: the tags a release pushes, one per module of the workspace ------------------------
dist-go-tags:
	@for d in $$(awk '/^use \(/ {u = 1; next} u && /^\)/ {u = 0} u && $$1 ~ /^\./ {print $$1}' go/go.work); do \
		case $$d in .) echo go/v$(DIST_VERSION) ;; *) echo go/$${d#./}/v$(DIST_VERSION) ;; esac; \
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
