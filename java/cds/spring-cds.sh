#!/usr/bin/env bash
# The start-up recipe for a Spring Boot worker (java/cds/README.md), as one script: Spring AOT
# and an application class-data-sharing archive trained with it.
#
#   java/cds/spring-cds.sh archive APP.jar DIR   extract APP.jar into DIR, train, write DIR/app.jsa
#   java/cds/spring-cds.sh check DIR             the worker's start uses the archive and the AOT code (a test)
#   java/cds/spring-cds.sh command DIR           the worker command that starts with both
#
# APP.jar is built with spring-boot-maven-plugin's process-aot goal, run with the system
# property afterburn.enabled=true (the starter's condition is decided at build time then).
# Spring Boot's documented CDS recipe (Java 17's dynamic archive): the extracted jar (class
# paths a JVM can map: no nested jars), a training run with -XX:ArchiveClassesAtExit, then
# -XX:SharedArchiveFile at every start; training and workers start from the AOT code
# (-Dspring.aot.enabled=true). The training run is a worker's start up to its handshake, in
# stdio mode: it loads what a worker loads before it is ready, the runtime's handshake path
# included, and nothing a request loads (Spring's -Dspring.context.exit=onRefresh stops before
# those, and is what to use for an application whose start must not run its runners here).
set -euo pipefail

JAVA=${JAVA:-java}
# The flags of a long-lived worker (java/README.md, "Launching"); training and serving must
# use the same collector for the archive's heap objects to be used.
WORKER_FLAGS=${WORKER_FLAGS:--XX:+UseSerialGC -Xmn32m}
# Spring AOT: the application context from the code process-aot generated at build time
# (APP.jar must be built with spring-boot-maven-plugin's process-aot goal). Training and
# serving both run with it: the archive holds the classes of the AOT start.
AOT=-Dspring.aot.enabled=true
# The watchdog's handshake (PROTOCOL.md §3.1), as the training run reads it on stdin.
HANDSHAKE='OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n'

die() { echo "spring-cds: $*" >&2; exit 2; }

jar_in() { # the application jar the extraction wrote into DIR
    local dir=$1 jars=("$1"/app/*.jar)
    [ ${#jars[@]} -eq 1 ] && [ -f "${jars[0]}" ] || die "no single application jar in $dir/app (run: $0 archive APP.jar $dir)"
    echo "${jars[0]}"
}

case "${1:-}" in
archive)
    [ $# -eq 3 ] || die "usage: $0 archive APP.jar DIR"
    app=$2 dir=$3
    [ -f "$app" ] || die "$app: no such jar"
    rm -rf "$dir/app" "$dir/app.jsa"
    mkdir -p "$dir"
    # 1. Extract: DIR/app/APP.jar with a Class-Path to DIR/app/lib/*.jar.
    $JAVA -Djarmode=tools -jar "$app" extract --destination "$dir/app" >/dev/null
    # 2. Train: a worker's start up to its handshake, in stdio mode (PROTOCOL.md §2.2,
    #    AFTERBURN_FDS=0,1): the handshake on stdin, then EOF, which ends the worker as the
    #    watchdog's close does (§9.4). What it loaded (Spring's start from the AOT code, the
    #    servlet container, the runtime's classes that answer the handshake) goes to the archive.
    #    The JDK warns about classes CDS cannot store (generated reflection accessors): not errors.
    # shellcheck disable=SC2086
    if ! printf '%b' "$HANDSHAKE" | AFTERBURN_FDS=0,1 $JAVA $WORKER_FLAGS $AOT -XX:ArchiveClassesAtExit="$dir/app.jsa" \
        -jar "$(jar_in "$dir")" >"$dir/training.out" 2>"$dir/training.log" \
        || [ "$(head -c 15 "$dir/training.out")" != "HTTP/1.1 200 OK" ]; then
        tail -20 "$dir/training.log" >&2
        die "the training run failed or did not answer the handshake (log: $dir/training.log, protocol output: $dir/training.out)"
    fi
    [ -s "$dir/app.jsa" ] || die "the training run wrote no archive (log: $dir/training.log)"
    echo "spring-cds: $dir/app.jsa ($(du -h "$dir/app.jsa" | cut -f1)) for $(jar_in "$dir")"
    ;;
check)
    [ $# -eq 2 ] || die "usage: $0 check DIR"
    dir=$2
    [ -f "$dir/app.jsa" ] || die "$dir/app.jsa: no archive (run: $0 archive APP.jar $dir)"
    jar=$(jar_in "$dir")
    log=$(mktemp) out=$(mktemp) err=$(mktemp)
    trap 'rm -f "$log" "$out" "$err"' EXIT
    # 1. The worker's flags with -Xshare:on (fails instead of falling back when the archive
    #    cannot be mapped: another JDK, a changed jar) and -Xlog:class+load (where each class
    #    came from), through the handshake as in the training: it loads what a worker's start loads.
    # shellcheck disable=SC2086
    if ! printf '%b' "$HANDSHAKE" | AFTERBURN_FDS=0,1 $JAVA $WORKER_FLAGS $AOT -Xshare:on -XX:SharedArchiveFile="$dir/app.jsa" \
        -Xlog:class+load=info:file="$log" -jar "$jar" >"$out" 2>"$err" || [ "$(head -c 15 "$out")" != "HTTP/1.1 200 OK" ]; then
        tail -20 "$err" >&2
        die "the JVM refused the archive with -Xshare:on, or the AOT start failed (was APP.jar built with process-aot?)"
    fi
    top=$(grep -c 'source: shared objects file (top)' "$log" || true)
    total=$(grep -c ' source: ' "$log" || true)
    from_archive() { grep -q "^\[.*\]\[info\]\[class,load\] $1 source: shared objects file (top)" "$log"; }
    for cls in org.springframework.boot.SpringApplication dev.afterburn.servlet.ServletContainer \
        dev.afterburn.spring.boot.AfterBurnServletWebServerFactory org.springframework.web.servlet.DispatcherServlet \
        dev.afterburn.runtime.Worker io.netty.handler.codec.http.HttpRequestDecoder; do
        from_archive "$cls" || die "$cls was not loaded from the archive (of $total classes, $top came from it)"
    done
    [ "$top" -ge 3000 ] || die "only $top of $total classes came from the application archive; want at least 3000"
    # 2. The context came from the AOT code: Spring says so, the generated initializer and the
    #    starter's generated bean definitions were loaded (from the archive: trained with AOT on),
    #    and the configuration-class parser that a start without AOT runs was not loaded at all.
    grep -q 'Starting AOT-processed ' "$err" || die "Spring did not start from AOT code (no \"Starting AOT-processed\" in its log)"
    grep -q '__ApplicationContextInitializer source: shared objects file (top)' "$log" \
        || die "no AOT-generated ApplicationContextInitializer was loaded from the archive"
    from_archive 'dev.afterburn.spring.boot.AfterBurnAutoConfiguration__BeanDefinitions' \
        || die "the starter's AOT bean definitions were not loaded from the archive (process-aot without afterburn.enabled=true?)"
    ! grep -q 'org.springframework.context.annotation.ConfigurationClassParser ' "$log" \
        || die "ConfigurationClassParser was loaded: the context was built by reflection, not from the AOT code"
    generated=$(grep -c '__BeanDefinitions source: ' "$log" || true)
    # 3. The AOT code serves the pipes: started outside the watchdog it must refuse (AotBuild),
    #    never read its standard input as requests.
    # shellcheck disable=SC2086
    if env -u AFTERBURN_FDS -u AFTERBURN_PROTOCOL $JAVA $WORKER_FLAGS $AOT -Xshare:auto -XX:SharedArchiveFile="$dir/app.jsa" \
        -jar "$jar" </dev/null >"$err" 2>&1 || ! grep -q 'generated with afterburn.enabled=true' "$err"; then
        tail -20 "$err" >&2
        die "the AOT start outside the watchdog was not refused by the starter"
    fi
    echo "spring-cds: ok: $top of $total classes loaded from $dir/app.jsa; AOT context ($generated generated bean-definition classes)"
    ;;
command)
    [ $# -eq 2 ] || die "usage: $0 command DIR"
    echo "$JAVA $WORKER_FLAGS $AOT -Xshare:auto -XX:SharedArchiveFile=$2/app.jsa -jar $(jar_in "$2")"
    ;;
*)
    die "usage: $0 archive APP.jar DIR | check DIR | command DIR"
    ;;
esac
