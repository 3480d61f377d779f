#!/usr/bin/env bash
# Spawn-to-ready and memory of Spring Boot workers with and without the start-up recipe
# (java/cds/README.md: Spring AOT and the CDS archive trained with it). Not a benchmark
# harness: a handful of starts, so run it on a quiet machine and read the spread it prints.
#
#   java/cds/measure-start.sh DIR [RUNS]
#
# DIR is what `spring-cds.sh archive` made (DIR/app/*.jar, DIR/app.jsa). For each mode, the
# same extracted jar with the same flags, the recipe's two flags the only difference
# (-Dspring.aot.enabled=true and -XX:SharedArchiveFile):
#   - RUNS times (default 5, modes alternating): a watchdog with one worker; the watchdog's own
#     afterburn_worker_init_duration_seconds (exec to handshake reply, PROTOCOL.md §3.1, §10.4);
#   - once: a watchdog with 4 workers; when all 4 are idle, the sum of their PSS
#     (/proc/PID/smaps_rollup: the archive's pages, mapped by every worker, count once in all).
set -euo pipefail

DIR=${1:?usage: measure-start.sh DIR [RUNS]}
RUNS=${2:-5}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WATCHDOG=${WATCHDOG:-$REPO/go/bin/afterburn-watchdog}
JAVA=${JAVA:-java}
[ -x "$WATCHDOG" ] || { echo "measure-start: $WATCHDOG is not built (make go/bin/afterburn-watchdog)" >&2; exit 2; }
jars=("$DIR"/app/*.jar)
[ -f "${jars[0]}" ] && [ -f "$DIR/app.jsa" ] || { echo "measure-start: run java/cds/spring-cds.sh archive APP.jar $DIR first" >&2; exit 2; }
JAR=${jars[0]}
FLAGS=${WORKER_FLAGS:-"-XX:+UseSerialGC -Xmn32m"} # the same for both modes
# plain: the application as it starts without the recipe (the same extracted jar and flags);
# recipe: the recipe's worker command, as spring-cds.sh prints it (AOT on, the archive mapped).
declare -A CMD=(
    [plain]="$JAVA $FLAGS -Xshare:auto -jar $JAR"
    [recipe]="$(JAVA=$JAVA WORKER_FLAGS=$FLAGS "$REPO/java/cds/spring-cds.sh" command "$DIR")"
)
for mode in plain recipe; do echo "$mode: ${CMD[$mode]}"; done
TMP=$(mktemp -d)
WD_PID=
cleanup() {
    [ -n "$WD_PID" ] && kill "$WD_PID" 2>/dev/null && wait "$WD_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# start_watchdog WORKERS CMD: starts it, sets WD_PID, ADDR and METRICS once it logs both.
start_watchdog() {
    local workers=$1 cmd=$2
    : >"$TMP/log"
    # shellcheck disable=SC2086
    "$WATCHDOG" -listen_host 127.0.0.1 -port 0 -metrics_port 0 -workers "$workers" -init_timeout 120s -- $cmd 2>"$TMP/log" &
    WD_PID=$!
    ADDR= METRICS=
    for _ in $(seq 1 1000); do
        ADDR=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$TMP/log" | head -1)
        METRICS=$(sed -n 's/.*metrics on \([0-9.:]*\).*/\1/p' "$TMP/log" | head -1)
        [ -n "$ADDR" ] && [ -n "$METRICS" ] && return 0
        sleep 0.01 # polling the watchdog's own log, its signal that it listens
    done
    echo "measure-start: the watchdog did not start:" >&2; cat "$TMP/log" >&2; exit 1
}

stop_watchdog() {
    kill "$WD_PID" && wait "$WD_PID" 2>/dev/null || true
    WD_PID=
}

metric() { # metric NAME: its value from /metrics, empty when absent or unreachable
    local text
    text=$(curl -sf "http://$METRICS/metrics") || return 0
    # awk reads to the end: an early exit would break curl's pipe, a failure under pipefail
    awk -v n="$1" '$1 == n && !done {print $2; done = 1}' <<<"$text"
}

wait_idle() { # wait_idle N: until N workers are idle (each answered its handshake)
    for _ in $(seq 1 12000); do
        [ "$(metric 'afterburn_workers{state="idle"}')" = "$1" ] && return 0
        sleep 0.01 # polling the watchdog's gauge
    done
    echo "measure-start: $1 workers never became idle:" >&2; tail -30 "$TMP/log" >&2; exit 1
}

declare -A INIT
for run in $(seq 1 "$RUNS"); do
    for mode in plain recipe; do
        start_watchdog 1 "${CMD[$mode]}"
        wait_idle 1
        s=$(metric afterburn_worker_init_duration_seconds_sum)
        INIT[$mode]+="$s "
        curl -sf "http://$ADDR/" >/dev/null || { echo "measure-start: the worker did not answer GET /" >&2; exit 1; }
        stop_watchdog
    done
done

pss_of_workers() { # the PSS in KiB of the watchdog's children, summed
    local total=0 pid kb
    for pid in $(ps -o pid= --ppid "$WD_PID"); do
        kb=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
        total=$((total + kb))
    done
    echo "$total"
}

declare -A PSS
for mode in plain recipe; do
    start_watchdog 4 "${CMD[$mode]}"
    wait_idle 4
    for _ in 1 2 3 4 5 6 7 8; do curl -sf "http://$ADDR/" >/dev/null; done # every worker past its first request
    PSS[$mode]=$(pss_of_workers)
    stop_watchdog
done

summary() { # seconds... -> "median X.XX s (min A, max B)"
    tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "median %.2f s (min %.2f, max %.2f, n=%d)", m, v[1], v[NR], NR}'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "Spring Boot worker start, $(basename "$JAR"), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in plain recipe; do
    printf '%-7s spawn-to-ready %s; PSS of 4 workers %d MiB\n' "$mode" "$(echo "${INIT[$mode]}" | summary)" $((PSS[$mode] / 1024))
done
p=$(echo "${INIT[plain]}" | median) c=$(echo "${INIT[recipe]}" | median)
awk -v p="$p" -v c="$c" -v pp="${PSS[plain]}" -v pc="${PSS[recipe]}" \
    'BEGIN {printf "recipe/plain: start %.2f x (medians), PSS of 4 workers %.2f x\n", c / p, pc / pp}'
# Each run starts one of each, back to back: the ratio within a run sees the same load.
read -ra P <<<"${INIT[plain]}"
read -ra R <<<"${INIT[recipe]}"
ratios=$(for i in "${!P[@]}"; do awk -v p="${P[$i]}" -v r="${R[$i]}" 'BEGIN {printf "%.2f\n", r / p}'; done | tr '\n' ' ')
printf 'recipe/plain, run by run: %s-> median %.2f x\n' "$ratios" "$(echo "$ratios" | median)"
