#!/usr/bin/env bash
# Spring Boot over AfterBurn against the same application on its embedded Tomcat, behind
# of-watchdog's http mode (a reverse proxy) and alone (java/bench/README.md).
#
#   java/bench/spring-bench.sh            measure (needs wrk and a quiet machine: minutes)
#   CHECK=1 java/bench/spring-bench.sh    start every configuration once and check its answers; no load
#
# Settings (environment): DURATION (10s per run), WARMUP (20s per configuration, before its
# first run: the JIT compiles the request path), REPS (3), CONNS ("1 8"), WORKERS (1) and
# LANES (8) for AfterBurn, SERVER_CPU (1) and LOAD_CPU (0) for taskset, OUT (a directory for
# the raw wrk output and the table; default java/bench/results/DATE).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
JAVA=${JAVA:-java}
WATCHDOG=$REPO/go/bin/afterburn-watchdog
JAR=$REPO/java/examples/spring-orders/target/orders.jar
CDS=$REPO/java/examples/spring-orders/target/cds
PROXY=$REPO/java/bench/target/http-proxy
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-20s}
REPS=${REPS:-3}
CONNS=${CONNS:-"1 8"}
WORKERS=${WORKERS:-1}
LANES=${LANES:-8}
SERVER_CPU=${SERVER_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
OUT=${OUT:-$REPO/java/bench/results/$(date -u +%Y-%m-%dT%H%M%SZ)}
FLAGS="-XX:+UseSerialGC -Xmn32m"

die() { echo "spring-bench: $*" >&2; exit 2; }
[ -x "$WATCHDOG" ] || die "$WATCHDOG is not built (make go/bin/afterburn-watchdog)"
[ -f "$JAR" ] && [ -f "$CDS/app.jsa" ] || die "run make java-spring-cds first (the example's jar and its archive)"
if [ ! -x "$PROXY" ] || [ -n "$(find bench/cmd/http-proxy -newer "$PROXY" -name '*.go')" ]; then
    # The benchmark suite's reverse proxy (of-watchdog's http mode), built here from bench/'s module.
    mkdir -p "$(dirname "$PROXY")"
    (cd bench && go build -o "$PROXY" ./cmd/http-proxy)
fi
if [ -z "${CHECK:-}" ]; then
    command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk, as make bench-tools does)"
fi
pin() { if command -v taskset >/dev/null; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }
# serve CPU CMD...: in the background, as this shell's own child with the server's pid in
# SRV_PID (a function run with & is a subshell: exec makes the server that subshell).
serve() {
    if command -v taskset >/dev/null; then exec taskset -c "$1" "${@:2}"; else exec "${@:2}"; fi
}

TMP=$(mktemp -d)
SRV_PID=
stop_server() {
    if [ -n "$SRV_PID" ]; then
        kill "$SRV_PID" 2>/dev/null || true
        wait "$SRV_PID" 2>/dev/null || true
        SRV_PID=
    fi
}
trap 'stop_server; rm -rf "$TMP"' EXIT

# wait_log REGEXP: the first capture of REGEXP in the server's log, once it appears (its own signal).
wait_log() {
    for _ in $(seq 1 12000); do
        v=$(sed -n "s/.*$1.*/\1/p" "$TMP/server.log" | head -1)
        [ -n "$v" ] && { echo "$v"; return 0; }
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.01
    done
    cat "$TMP/server.log" >&2
    die "no line matching $1 from the server"
}

wait_ok() { # wait_ok URL: until it answers 200
    for _ in $(seq 1 12000); do
        curl -sf -o /dev/null "$1" && return 0
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.01
    done
    cat "$TMP/server.log" >&2
    die "$1 never answered 200"
}

# start CONFIG: starts it on the server CPU; sets BASE.
start() {
    : >"$TMP/server.log"
    case $1 in
    afterburn)
        # The watchdog and its workers on the pipes; the workers start from the CDS archive.
        serve "$SERVER_CPU" "$WATCHDOG" -listen_host 127.0.0.1 -port 0 -metrics_port 0 -workers "$WORKERS" -lanes "$LANES" \
            -- $JAVA $FLAGS -Xshare:auto -XX:SharedArchiveFile="$CDS/app.jsa" -jar "$CDS/app/orders.jar" 2>"$TMP/server.log" &
        SRV_PID=$!
        BASE=http://$(wait_log 'listening on \([0-9.:]*\)')
        wait_ok "$BASE/_/ready"
        ;;
    proxy)
        # of-watchdog's http mode: a Go reverse proxy in front of the application on Tomcat.
        serve "$SERVER_CPU" "$PROXY" -addr 127.0.0.1:0 -upstream_wait 120s -- \
            sh -c "exec $JAVA $FLAGS -Xshare:auto -XX:SharedArchiveFile=$CDS/app.jsa -jar $CDS/app/orders.jar --server.port=\$PORT" \
            >"$TMP/server.log" 2>&1 &
        SRV_PID=$!
        BASE=http://$(wait_log 'http-proxy: listening on \([0-9.:]*\)')
        wait_ok "$BASE/actuator/health"
        ;;
    tomcat)
        # The application alone on its embedded Tomcat: what a client of it would see without AfterBurn.
        serve "$SERVER_CPU" $JAVA $FLAGS -Xshare:auto -XX:SharedArchiveFile="$CDS/app.jsa" -jar "$CDS/app/orders.jar" \
            --server.port=0 --server.address=127.0.0.1 >"$TMP/server.log" 2>&1 &
        SRV_PID=$!
        BASE=http://127.0.0.1:$(wait_log 'Tomcat started on port \([0-9]*\)')
        wait_ok "$BASE/actuator/health"
        ;;
    esac
}

check_answers() {
    [ "$(curl -sf "$BASE/")" = "Hello, world!" ] || die "$1: GET / did not answer Hello, world!"
    head -c 1024 /dev/zero | tr '\0' x >"$TMP/k"
    cmp -s <(curl -sf -H 'Content-Type: application/octet-stream' --data-binary @"$TMP/k" "$BASE/") "$TMP/k" \
        || die "$1: POST / did not echo 1 KiB"
}

cat >"$TMP/echo1k.lua" <<'LUA'
wrk.method = "POST"
wrk.body = string.rep("x", 1024)
wrk.headers["Content-Type"] = "application/octet-stream"
LUA

if [ -n "${CHECK:-}" ]; then
    for config in afterburn proxy tomcat; do
        start "$config"
        check_answers "$config"
        echo "spring-bench: $config answers on $BASE"
        stop_server
    done
    echo "spring-bench: every configuration answers (no load was run)"
    exit 0
fi

mkdir -p "$OUT"
echo "| configuration | workload | c | req/s (median of $REPS) | p99 (median) |" >"$OUT/table.md"
echo "|---|---|---|---|---|" >>"$OUT/table.md"
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.3f\n", v}'; }
declare -A RPS
for config in afterburn proxy tomcat; do
    start "$config"
    check_answers "$config"
    pin "$LOAD_CPU" wrk -t1 -c8 -d"$WARMUP" "$BASE/" >/dev/null
    pin "$LOAD_CPU" wrk -t1 -c8 -d"$WARMUP" -s "$TMP/echo1k.lua" "$BASE/" >/dev/null
    for workload in hello echo1k; do
        script=(); [ "$workload" = echo1k ] && script=(-s "$TMP/echo1k.lua")
        for c in $CONNS; do
            : >"$TMP/rps"; : >"$TMP/p99"
            for rep in $(seq 1 "$REPS"); do
                f="$OUT/$config-$workload-c$c-$rep.txt"
                pin "$LOAD_CPU" wrk -t1 -c"$c" -d"$DURATION" --latency "${script[@]}" "$BASE/" >"$f"
                grep -q 'Non-2xx\|Socket errors' "$f" && die "$config $workload c=$c: errors, see $f"
                awk '/^Requests\/sec:/ {print $2}' "$f" >>"$TMP/rps"
                awk '$1 == "99%" {print $2}' "$f" | to_ms >>"$TMP/p99"
            done
            rps=$(median <"$TMP/rps") p99=$(median <"$TMP/p99")
            RPS[$config-$workload-$c]=$rps
            echo "| $config | $workload | $c | $rps | $p99 ms |" | tee -a "$OUT/table.md"
        done
    done
    stop_server
done
{
    echo
    for workload in hello echo1k; do
        for c in $CONNS; do
            awk -v a="${RPS[afterburn-$workload-$c]}" -v p="${RPS[proxy-$workload-$c]}" -v t="${RPS[tomcat-$workload-$c]}" \
                -v w="$workload" -v c="$c" 'BEGIN {printf "%s c=%s: afterburn / proxy %.2f x, afterburn / tomcat alone %.2f x\n", w, c, a / p, a / t}'
        done
    done
    echo
    echo "AfterBurn: $WORKERS worker(s) x $LANES lanes; every JVM: $FLAGS with the CDS archive; server on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$OUT/table.md"
echo
echo "worker start with and without the CDS archive:"
java/cds/measure-start.sh "$CDS" "${RUNS:-5}" | tee -a "$OUT/table.md"
echo "spring-bench: $OUT/table.md"
