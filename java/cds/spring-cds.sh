#!/usr/bin/env bash
# The class-data-sharing recipe for a Spring Boot worker (java/cds/README.md), as one script.
#
#   java/cds/spring-cds.sh archive APP.jar DIR   extract APP.jar into DIR, train, write DIR/app.jsa
#   java/cds/spring-cds.sh check DIR             the archive maps (-Xshare:on) and holds Spring's and AfterBurn's classes
#   java/cds/spring-cds.sh command DIR           the worker command that starts with the archive
#
# Spring Boot's documented recipe (Java 17's dynamic archive): the extracted jar (class paths a
# JVM can map: no nested jars), a training run that exits once the context is refreshed
# (-Dspring.context.exit=onRefresh) with -XX:ArchiveClassesAtExit, then
# -XX:SharedArchiveFile at every start. The training run sets afterburn.enabled=true, so that
# the context it refreshes is the one a worker refreshes: the AfterBurn servlet container
# instead of Tomcat (it exits before the application is ready, so it never serves).
set -euo pipefail

JAVA=${JAVA:-java}
# The flags of a long-lived worker (java/README.md, "Launching"); training and serving must
# use the same collector for the archive's heap objects to be used.
WORKER_FLAGS=${WORKER_FLAGS:--XX:+UseSerialGC -Xmn32m}

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
    # 2. Train: start the context as a worker would, exit at refresh, dump the loaded classes.
    #    The JDK warns about classes CDS cannot store (generated reflection accessors): not errors.
    # shellcheck disable=SC2086
    if ! $JAVA $WORKER_FLAGS -XX:ArchiveClassesAtExit="$dir/app.jsa" -Dspring.context.exit=onRefresh \
        -Dafterburn.enabled=true -jar "$(jar_in "$dir")" </dev/null >"$dir/training.log" 2>&1; then
        tail -20 "$dir/training.log" >&2
        die "the training run failed (log: $dir/training.log)"
    fi
    [ -s "$dir/app.jsa" ] || die "the training run wrote no archive (log: $dir/training.log)"
    echo "spring-cds: $dir/app.jsa ($(du -h "$dir/app.jsa" | cut -f1)) for $(jar_in "$dir")"
    ;;
check)
    [ $# -eq 2 ] || die "usage: $0 check DIR"
    dir=$2
    [ -f "$dir/app.jsa" ] || die "$dir/app.jsa: no archive (run: $0 archive APP.jar $dir)"
    # -Xshare:on fails instead of falling back when the archive cannot be mapped (another JDK,
    # a changed jar); -Xlog:class+load says where each class came from. The run is the
    # training's (exit at refresh), so it loads what a worker's start loads.
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    # shellcheck disable=SC2086
    if ! $JAVA $WORKER_FLAGS -Xshare:on -XX:SharedArchiveFile="$dir/app.jsa" -Xlog:class+load=info \
        -Dspring.context.exit=onRefresh -Dafterburn.enabled=true -jar "$(jar_in "$dir")" </dev/null >"$log" 2>&1; then
        tail -20 "$log" >&2
        die "the JVM refused the archive with -Xshare:on"
    fi
    top=$(grep -c 'source: shared objects file (top)' "$log" || true)
    total=$(grep -c ' source: ' "$log" || true)
    for cls in org.springframework.boot.SpringApplication dev.afterburn.servlet.ServletContainer \
        dev.afterburn.spring.boot.AfterBurnServletWebServerFactory org.springframework.web.servlet.DispatcherServlet; do
        grep -q "^\[.*\]\[info\]\[class,load\] $cls source: shared objects file (top)" "$log" \
            || die "$cls was not loaded from the archive (of $total classes, $top came from it)"
    done
    [ "$top" -ge 3000 ] || die "only $top of $total classes came from the application archive; want at least 3000"
    echo "spring-cds: ok: $top of $total classes loaded from $dir/app.jsa"
    ;;
command)
    [ $# -eq 2 ] || die "usage: $0 command DIR"
    echo "$JAVA $WORKER_FLAGS -Xshare:auto -XX:SharedArchiveFile=$2/app.jsa -jar $(jar_in "$2")"
    ;;
*)
    die "usage: $0 archive APP.jar DIR | check DIR | command DIR"
    ;;
esac
