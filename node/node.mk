# Node.js library (node/): included by the top-level Makefile. Paths are relative to the
# repository root; $(WATCHDOG) and $(CONFORMANCE) are the top-level binaries.
#
#   make test-node         npm ci (once, stamped), type-check, Jest; ends "N passed, N failed"
#   make conformance-node  the conformance suite against node/test/fixture/fixture.js, both
#                          layers, then the e2e layer again through the afterburn launcher
#   make run-node          serve node/examples/hello on 127.0.0.1:$(RUN_PORT)

NODE ?= node
NPM  ?= npm

NODE_STAMP   := node/node_modules/.afterburn-npm-ci
NODE_FIXTURE := $(NODE) node/test/fixture/fixture.js

.PHONY: test-node conformance-node conformance-node-lanes run-node

# npm ci from the committed lock file, again only when package.json or the lock changes.
$(NODE_STAMP): node/package.json node/package-lock.json
	cd node && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

test-node: $(NODE_STAMP) $(WATCHDOG)
	cd node && ./node_modules/.bin/tsc --noEmit -p test/types
	cd node && ./node_modules/.bin/jest --ci

conformance-node: $(NODE_STAMP) $(WATCHDOG) $(CONFORMANCE)
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(NODE_FIXTURE)" $(CONFORMANCE_FLAGS)
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(NODE) node/bin/afterburn.js node/test/fixture/fixture.js" -layer e2e

# PROTOCOL.md §2.5: the whole suite with four lanes per worker (make conformance-modes runs it).
conformance-node-lanes: $(NODE_STAMP) $(WATCHDOG) $(CONFORMANCE)
	@echo "== node, lanes: four lanes per worker (-lanes 4)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(NODE_FIXTURE)" $(LANES_FLAGS) $(CONFORMANCE_FLAGS)

run-node: $(NODE_STAMP) $(WATCHDOG)
	@echo "serving node/examples/hello on http://127.0.0.1:$(RUN_PORT)/ (Ctrl-C stops)"
	$(WATCHDOG) -listen_host 127.0.0.1 -port $(RUN_PORT) -- $(NODE) node/bin/afterburn.js node/examples/hello/app.js
