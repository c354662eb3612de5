#!/usr/bin/env bash
# The reliability suites in one command: crash cycles (kill -9 under writes), disk faults,
# hostile input, overload and soak, each against a real `larch serve` (the tests of
# tests/e2e marked `reliability`; docs/reliability.md says what each shows).
#
#   scripts/reliability.sh [--long] [pytest args...]
#
# Without --long each suite runs its short form, the one CI runs as part of
# scripts/test.sh (crash: 20 cycles, overload: 10 s, soak: 60 s); --long runs the long form
# (crash: 500 cycles, overload: 60 s, soak: 30 minutes). Builds nothing: it runs
# $LARCH_BIN or target/release/larch (cargo build --release -p larch first). Ends with
# pytest's summary line and one line "summary: N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
args=()
for a in "$@"; do
  case "$a" in
    --long) export LARCH_RELIABILITY_LONG=1 ;;
    *) args+=("$a") ;;
  esac
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
./scripts/e2e.sh --server larch -m reliability "${args[@]}" 2>&1 | tee "$log" || status=$?
line=$(grep -E '[0-9]+ (passed|failed)' "$log" | grep -E ' in [0-9.]+s' | tail -1 || true)
count() { awk -v what="$1" '{ for (i = 2; i <= NF; i++) if ($i ~ "^" what "[,]?$") s += $(i - 1) } END { print s + 0 }' <<<"$line"; }
failed=$(( $(count failed) + $(count errors) + $(count error) ))
echo "summary: $(count passed) passed, $failed failed"
exit "$status"
