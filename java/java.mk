# Java: the Maven build in java/ (runtime library, conformance fixture, examples/hello).
# Included by the top-level Makefile; paths are relative to the repository root.
#
#   make test-java          unit tests (mvn verify: tests, jars, sources and javadoc jars)
#   make conformance-java   the conformance suite, both layers, against java/fixture
#   make run-java           serve java/examples/hello through the watchdog on 127.0.0.1:$(RUN_PORT)
#
# Maven downloads everything from Maven Central into ~/.m2 (its registry cache) on the first
# run, and re-uses it afterwards without asking the registry again (all versions are releases);
# a stamp records the first complete build per change of a POM.

MVN ?= mvn
JAVA ?= java
# Never -q: it hides Surefire's summary.
JAVA_MVN := $(MVN) -B -Dstyle.color=never -f java/pom.xml

JAVA_POMS      := java/pom.xml java/runtime/pom.xml java/fixture/pom.xml java/examples/hello/pom.xml
JAVA_POMS      += java/shapes/pom.xml
JAVA_SOURCES   := $(shell find java -name '*.java' -not -path '*/target/*')
JAVA_M2_STAMP  := java/target/m2.stamp
JAVA_JAR_STAMP := java/target/jars.stamp
JAVA_FIXTURE_JAR := java/fixture/target/afterburn-fixture.jar
JAVA_HELLO_JAR   := java/examples/hello/target/hello.jar

JAVA_FIXTURE_JSA := java/fixture/target/afterburn-fixture.jsa

# The suite starts one fixture JVM per wire vector: C1 only, serial GC, and a class-data
# sharing archive of the fixture's own classes (made by a first run, below) roughly halve
# each start. -Xshare:auto falls back to normal class loading if the archive is unusable.
JAVA_FIXTURE_FLAGS ?= -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
JAVA_FIXTURE_RUN := -cp $(JAVA_FIXTURE_JAR) dev.afterburn.runtime.Main dev.afterburn.fixture.Fixture
JAVA_FIXTURE_CMD := $(JAVA) $(JAVA_FIXTURE_FLAGS) -Xshare:auto -XX:SharedArchiveFile=$(JAVA_FIXTURE_JSA) $(JAVA_FIXTURE_RUN)
# A long-lived worker serves one request at a time: the serial collector and a small young
# generation keep GC pauses well under a millisecond (README, "Launching").
JAVA_WORKER_FLAGS ?= -XX:+UseSerialGC -Xmn32m
JAVA_HELLO_CMD   := $(JAVA) $(JAVA_WORKER_FLAGS) -cp $(JAVA_HELLO_JAR) dev.afterburn.runtime.Main dev.afterburn.examples.hello.Hello

.PHONY: test-java conformance-java conformance-java-lanes run-java clean-java

# Resolve the dependencies and build plugins once per change of a POM.
$(JAVA_M2_STAMP): $(JAVA_POMS)
	$(JAVA_MVN) -DskipTests package
	mkdir -p $(@D) && touch $@

$(JAVA_JAR_STAMP): $(JAVA_M2_STAMP) $(JAVA_SOURCES)
	$(JAVA_MVN) -DskipTests package
	touch $@

# The watchdog is built first, so the tests that run under it must not be skipped here
# (WatchdogTest skips them on a fresh clone without Go; see WatchdogBinary).
test-java: $(JAVA_M2_STAMP) $(WATCHDOG)
	$(JAVA_MVN) -Dafterburn.watchdog.required=true verify
	touch $(JAVA_JAR_STAMP)

# A handshake and one request in stdio mode, then EOF: the classes they load go to the archive.
$(JAVA_FIXTURE_JSA): $(JAVA_JAR_STAMP)
	rm -f $@
	printf 'OPTIONS * HTTP/1.1\r\nHost: a\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\nPOST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi' \
	    | AFTERBURN_FDS=0,1 $(JAVA) $(JAVA_FIXTURE_FLAGS) -XX:ArchiveClassesAtExit=$@ $(JAVA_FIXTURE_RUN) > /dev/null

conformance-java: $(WATCHDOG) $(CONFORMANCE) $(JAVA_JAR_STAMP) $(JAVA_FIXTURE_JSA)
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(JAVA_FIXTURE_CMD)" $(CONFORMANCE_FLAGS)

# PROTOCOL.md §2.5: the whole suite with four lanes per worker (make conformance-modes runs it).
conformance-java-lanes: $(WATCHDOG) $(CONFORMANCE) $(JAVA_JAR_STAMP) $(JAVA_FIXTURE_JSA)
	@echo "== java, lanes: four lanes per worker (-lanes 4)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(JAVA_FIXTURE_CMD)" $(LANES_FLAGS) $(CONFORMANCE_FLAGS)

# JAVA_RUN_FLAGS: more watchdog flags, e.g. -metrics_port 0 (java/README.md's doc test uses it).
JAVA_RUN_FLAGS ?=
run-java: $(WATCHDOG) $(JAVA_JAR_STAMP)
	@echo "serving java/examples/hello on http://127.0.0.1:$(RUN_PORT)/ (Ctrl-C stops)"
	$(WATCHDOG) -listen_host 127.0.0.1 -port $(RUN_PORT) $(JAVA_RUN_FLAGS) -- $(JAVA_HELLO_CMD)

clean-java:
	rm -rf java/target java/runtime/target java/fixture/target java/examples/hello/target
