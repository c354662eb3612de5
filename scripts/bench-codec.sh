#!/usr/bin/env bash
# Runs the codec benchmarks (larch-proto against rasn-ldap and ldap-parser on the same
# octets) and prints the Markdown table used in docs/benchmarks.md, from criterion's own
# estimates (median, with the 95% confidence interval of the mean slope when present).
#
#   scripts/bench-codec.sh            # full run (criterion defaults)
#   QUICK=1 scripts/bench-codec.sh    # shorter measurement, for a look
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
if [ "${QUICK:-0}" = 1 ]; then args+=(--warm-up-time 1 --measurement-time 3); fi
rm -rf target/criterion
cargo bench -p larch-proto --bench codec -- "${args[@]}" >&2
python3 - <<'PY'
import json, pathlib
rows = []
for bench in sorted(pathlib.Path("target/criterion").glob("*/*/new/benchmark.json")):
    meta = json.loads(bench.read_text())
    est = json.loads((bench.parent / "estimates.json").read_text())
    med = est["median"]["point_estimate"]
    lo = est["median"]["confidence_interval"]["lower_bound"]
    hi = est["median"]["confidence_interval"]["upper_bound"]
    rows.append((meta["group_id"], meta["function_id"], med, lo, hi))
def fmt(ns):
    return f"{ns:,.0f} ns" if ns >= 100 else f"{ns:.1f} ns"
print("| benchmark | implementation | median | 95% CI of the median |")
print("| --- | --- | ---: | --- |")
for group, func, med, lo, hi in rows:
    print(f"| {group} | {func} | {fmt(med)} | {fmt(lo)} to {fmt(hi)} |")
PY
