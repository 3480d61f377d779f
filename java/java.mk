# Java: the Maven build in java/ (runtime library, servlet container, Spring Boot starter,
# conformance fixtures, examples). Included by the top-level Makefile; paths are relative to
# the repository root.
#
#   make test-java          unit tests (mvn verify: tests, jars, sources and javadoc jars; the
#                           Spring example's HTTP tests on Tomcat and under the watchdog)
#   make conformance-java   the conformance suite, both layers, against java/fixture
#   make conformance-java-frameworks  the e2e suite against the servlet and the Spring Boot
#                           fixtures, lanes off and on, and the CDS recipe's check (slow: make
#                           conformance-modes runs it)
#   make run-java           serve java/examples/hello through the watchdog on 127.0.0.1:$(RUN_PORT)
#   make run-java-spring    serve java/examples/spring-orders (Spring Boot) the same way, with its CDS archive
#   make java-spring-cds    the CDS archive of java/examples/spring-orders (java/cds/README.md)
#   make measure-java-spring-start  spawn-to-ready and PSS of Spring Boot workers, with and without the
#                           start-up recipe (Spring AOT and the archive; RUNS=7 for seven starts of each)
#   make bench-java-spring  Spring Boot over AfterBurn against Tomcat behind a proxy and alone (java/bench/README.md)
#
# Maven downloads everything from Maven Central into ~/.m2 (its registry cache) on the first
# run, and re-uses it afterwards without asking the registry again (all versions are releases);
# a stamp records the first complete build per change of a POM.

MVN ?= mvn
JAVA ?= java
# Never -q: it hides Surefire's summary.
JAVA_MVN := $(MVN) -B -Dstyle.color=never -f java/pom.xml

JAVA_POMS      := java/pom.xml java/runtime/pom.xml java/fixture/pom.xml java/examples/hello/pom.xml \
	java/servlet/pom.xml java/spring-boot-starter/pom.xml java/fixture-servlet/pom.xml java/fixture-spring/pom.xml \
	java/examples/spring-orders/pom.xml
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

.PHONY: test-java conformance-java conformance-java-lanes run-java clean-java \
	conformance-java-frameworks conformance-java-servlet conformance-java-servlet-lanes conformance-java-spring \
	conformance-java-spring-lanes test-java-cds java-spring-cds measure-java-spring-start run-java-spring bench-java-spring

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

# ---- Servlet and Spring Boot (issue 31) ---------------------------------------------------
JAVA_SERVLET_FIXTURE_JAR := java/fixture-servlet/target/afterburn-fixture-servlet.jar
JAVA_SPRING_FIXTURE_JAR  := java/fixture-spring/target/afterburn-fixture-spring.jar
JAVA_SPRING_FIXTURE_CDS  := java/fixture-spring/target/cds
JAVA_ORDERS_JAR          := java/examples/spring-orders/target/orders.jar
JAVA_ORDERS_CDS          := java/examples/spring-orders/target/cds
JAVA_CDS                 := java/cds/spring-cds.sh

# The e2e layer only: the wire layer starts one process per vector and tests the runtime's
# framing, which the servlet and Spring fixtures share with java/fixture (make conformance-java).
# C1 only and the serial collector, as for java/fixture: the suite starts many short-lived JVMs.
JAVA_SERVLET_FIXTURE_CMD := $(JAVA) -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp $(JAVA_SERVLET_FIXTURE_JAR) dev.afterburn.runtime.Main dev.afterburn.fixture.servlet.FixtureServlet
# The Spring fixture starts as the recipe starts a worker (java/cds/README.md): from its AOT code
# and its CDS archive, the same recipe as the example's (java/cds/spring-cds.sh command).
JAVA_SPRING_FIXTURE_CMD  := $(JAVA) -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dspring.aot.enabled=true -Xshare:auto -XX:SharedArchiveFile=$(JAVA_SPRING_FIXTURE_CDS)/app.jsa -jar $(JAVA_SPRING_FIXTURE_CDS)/app/afterburn-fixture-spring.jar
# A Spring Boot worker takes seconds to start on a loaded machine: each check gets 30 s.
JAVA_FRAMEWORK_FLAGS := -layer e2e -timeout 30s

$(JAVA_SPRING_FIXTURE_CDS)/app.jsa: $(JAVA_JAR_STAMP) $(JAVA_CDS)
	$(JAVA_CDS) archive $(JAVA_SPRING_FIXTURE_JAR) $(JAVA_SPRING_FIXTURE_CDS)

$(JAVA_ORDERS_CDS)/app.jsa: $(JAVA_JAR_STAMP) $(JAVA_CDS)
	$(JAVA_CDS) archive $(JAVA_ORDERS_JAR) $(JAVA_ORDERS_CDS)

java-spring-cds: $(JAVA_ORDERS_CDS)/app.jsa

# The recipe's test: the archive maps with -Xshare:on, Spring's and AfterBurn's classes come from it,
# the context comes from the AOT code, and that code refuses to start outside the watchdog.
test-java-cds: $(JAVA_ORDERS_CDS)/app.jsa
	$(JAVA_CDS) check $(JAVA_ORDERS_CDS)

conformance-java-servlet: $(WATCHDOG) $(CONFORMANCE) $(JAVA_JAR_STAMP)
	@echo "== java, a plain servlet on afterburn-servlet"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(JAVA_SERVLET_FIXTURE_CMD)" $(JAVA_FRAMEWORK_FLAGS) $(CONFORMANCE_FLAGS)

conformance-java-servlet-lanes: $(WATCHDOG) $(CONFORMANCE) $(JAVA_JAR_STAMP)
	@echo "== java, a plain servlet on afterburn-servlet, lanes: four lanes per worker (-lanes 4)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(JAVA_SERVLET_FIXTURE_CMD)" $(JAVA_FRAMEWORK_FLAGS) $(LANES_FLAGS) $(CONFORMANCE_FLAGS)

conformance-java-spring: $(WATCHDOG) $(CONFORMANCE) $(JAVA_SPRING_FIXTURE_CDS)/app.jsa
	@echo "== java, a Spring Boot MVC application with afterburn-spring-boot-starter"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(JAVA_SPRING_FIXTURE_CMD)" $(JAVA_FRAMEWORK_FLAGS) $(CONFORMANCE_FLAGS)

conformance-java-spring-lanes: $(WATCHDOG) $(CONFORMANCE) $(JAVA_SPRING_FIXTURE_CDS)/app.jsa
	@echo "== java, a Spring Boot MVC application with afterburn-spring-boot-starter, lanes: four lanes per worker (-lanes 4)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function "$(JAVA_SPRING_FIXTURE_CMD)" $(JAVA_FRAMEWORK_FLAGS) $(LANES_FLAGS) $(CONFORMANCE_FLAGS)

# One suite at a time (the machine has 2 CPUs): make conformance-modes runs this.
conformance-java-frameworks:
	$(MAKE) --no-print-directory conformance-java-servlet
	$(MAKE) --no-print-directory conformance-java-servlet-lanes
	$(MAKE) --no-print-directory conformance-java-spring
	$(MAKE) --no-print-directory conformance-java-spring-lanes
	$(MAKE) --no-print-directory test-java-cds

# RUNS: starts per mode (default 5). Read java/cds/README.md before trusting one run.
RUNS ?= 5
measure-java-spring-start: $(WATCHDOG) $(JAVA_ORDERS_CDS)/app.jsa
	java/cds/measure-start.sh $(JAVA_ORDERS_CDS) $(RUNS)

# Not run by any test target: it loads the machine for minutes (java/bench/README.md).
BENCH_JAVA_SPRING ?=
bench-java-spring: $(WATCHDOG) $(JAVA_ORDERS_CDS)/app.jsa
	env $(BENCH_JAVA_SPRING) java/bench/spring-bench.sh

run-java-spring: $(WATCHDOG) $(JAVA_ORDERS_CDS)/app.jsa
	@echo "serving java/examples/spring-orders (Spring Boot) on http://127.0.0.1:$(RUN_PORT)/ (Ctrl-C stops)"
	$(WATCHDOG) -listen_host 127.0.0.1 -port $(RUN_PORT) $(JAVA_RUN_FLAGS) -- $$($(JAVA_CDS) command $(JAVA_ORDERS_CDS))

clean-java:
	rm -rf java/target java/runtime/target java/fixture/target java/examples/hello/target \
		java/servlet/target java/spring-boot-starter/target java/fixture-servlet/target java/fixture-spring/target \
		java/examples/spring-orders/target
