#!/usr/bin/env bash
# Runs the conformance suite (its arguments) and passes when the checks that fail are exactly
# those of KNOWN (a file of ids, # comments) that ran: a listed check that passes fails the run too, so
# the list never goes stale (protobuf's conformance keeps such lists; STYLE.md).
#
#   java/fixture-spring/conformance.sh KNOWN conformance/bin/afterburn-conformance ARGS...
set -uo pipefail
known=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
[ "$status" -le 1 ] || exit "$status" # 2: a usage or set-up error, not a result
got=$(sed -n 's/^FAIL \([^ ]*\) .*/\1/p' "$out" | sort -u)
want=$(grep -v '^#' "$known" | grep -v '^$' | sort -u)
unexpected=$(comm -23 <(echo "$got") <(echo "$want") | grep -v '^$' || true)
passed=$(sed -n 's/^PASS \([^ ]*\) .*/\1/p' "$out" | sort -u)
fixed=$(comm -12 <(echo "$passed") <(echo "$want") | grep -v '^$' || true) # a check not run (-run) is neither
if [ -n "$unexpected" ] || [ -n "$fixed" ]; then
    [ -n "$unexpected" ] && echo "conformance: failed and not in $known: $(echo $unexpected)"
    [ -n "$fixed" ] && echo "conformance: listed in $known but did not fail (take it off the list): $(echo $fixed)"
    exit 1
fi
echo "conformance: the failures are exactly the known ones of $known ($(echo "$want" | grep -c . || true))"
