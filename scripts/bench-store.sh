#!/usr/bin/env bash
# Store figures on N generated entries (default 1,000,000): import rate, startup time and
# memory per entry (median of 3 `larch verify` runs), equality lookup cost, durable commit
# rate with many writers, and the commit rate while a snapshot is written. Prints a
# Markdown summary (machine, commands, figures) on stdout; progress goes to stderr.
#
#   scripts/bench-store.sh            # 1,000,000 entries
#   scripts/bench-store.sh 50000      # a quick look
#
# Environment: WRITERS (64), SECONDS_PER_RUN (10), SYNC (always), LOOKUPS (1000000),
# TMPDIR (where the data directory goes: its filesystem decides the fsync cost).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-1000000}
WRITERS=${WRITERS:-64}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
SYNC=${SYNC:-always}
LOOKUPS=${LOOKUPS:-1000000}

case "$N" in
'' | *[!0-9]*)
    echo "usage: $0 [N]  (N: number of entries, a positive integer)" >&2
    exit 2
    ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/larch-bench-store.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "building (release)..." >&2
cargo build --release -p larch >&2
cargo build --release -p larch-store --example store_bench >&2
target=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
larch="$target/release/larch"
bench="$target/release/examples/store_bench"

# Runs a command, saving its stdout (JSON) in $work/$1.json and the command line (with the
# temporary directory shown as $DIR) in $work/$1.cmd.
run() {
    local name=$1
    shift
    echo "${*//$work/\$DIR}" | sed "s|$target/release/examples/|.../|; s|$target/release/||" >"$work/$name.cmd"
    echo "+ $(cat "$work/$name.cmd")" >&2
    "$@" >"$work/$name.json"
}

run gen "$larch" gen -n "$N" -o "$work/gen" --json
run import "$larch" import --data "$work/data" --json "$work/gen/data.ldif"
for i in 1 2 3; do
    run "verify$i" "$larch" verify --data "$work/data" --json
done
run lookup "$bench" lookup --data "$work/data" --uids "$work/gen/uid.txt" --lookups "$LOOKUPS" --json
run commit "$bench" commit --data "$work/data" --writers "$WRITERS" --seconds "$SECONDS_PER_RUN" \
    --sync "$SYNC" --json
# Fold the commit run's log into a snapshot, so the next open does not replay it.
run compact "$larch" snapshot --data "$work/data"
run snapshot "$bench" snapshot-under-load --data "$work/data" --writers "$WRITERS" \
    --seconds "$SECONDS_PER_RUN" --sync "$SYNC" --json

cpu=$(grep -m1 -E '^(model name|Model|cpu model)' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
mem=$(awk '/^MemTotal:/ {printf "%.1f GB", $2 / 1e6}' /proc/meminfo 2>/dev/null || true)
fs=$(df -T "$work" 2>/dev/null | awk 'NR == 2 {print $2}' || true)

WORK="$work" N="$N" CPU="${cpu:-unknown}" MEM="${mem:-unknown}" FS="${fs:-unknown}" \
    NPROC="$(nproc)" KERNEL="$(uname -sr)" python3 - <<'PY'
import json, os, statistics

work = os.environ["WORK"]
def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)
def cmd(name):
    with open(f"{work}/{name}.cmd") as f:
        return f.read().strip()

gen, imp = load("gen"), load("import")
verifies = [load(f"verify{i}") for i in (1, 2, 3)]
look, com, snap = load("lookup"), load("commit"), load("snapshot")
med = lambda f: statistics.median(f(v) for v in verifies)
entries = imp["entries"]

print(f"## Store benchmark: {int(os.environ['N']):,} people ({entries:,} entries)")
print()
print(f"Machine: {os.environ['NPROC']} CPUs, {os.environ['CPU']}, {os.environ['MEM']} RAM, "
      f"{os.environ['KERNEL']}; data directory on {os.environ['FS']}.")
print()
print("| figure | value |")
print("| --- | ---: |")
rows = [
    ("LDIF size", f"{gen['ldif_bytes'] / 1e6:,.1f} MB"),
    ("import time", f"{imp['seconds']:.2f} s"),
    ("import rate", f"{imp['entries_per_sec']:,.0f} entries/s"),
    ("snapshot size", f"{imp['snapshot_bytes'] / 1e6:,.1f} MB ({imp['snapshot_bytes'] / entries:.0f} octets/entry)"),
    ("startup: snapshot load (median of 3)", f"{med(lambda v: v['load_seconds']):.2f} s"),
    ("resident memory after load (median)", f"{med(lambda v: v['rss_bytes']) / 1e6:,.0f} MB "
        f"({med(lambda v: v['rss_per_entry']):,.0f} octets/entry)"),
    ("heap per entry: entries", f"{verifies[0]['heap']['entries']['per_entry']:.0f} octets"),
    ("heap per entry: DN index", f"{verifies[0]['heap']['dn_index']['per_entry']:.0f} octets"),
    ("heap per entry: children", f"{verifies[0]['heap']['children']['per_entry']:.1f} octets"),
    ("heap per entry: attribute indexes", f"{verifies[0]['heap']['attribute_indexes']['per_entry']:.0f} octets"),
    ("heap per entry: total", f"{verifies[0]['heap']['total']['per_entry']:.0f} octets"),
    ("consistency check", ("ok" if all(v["check"]["ok"] for v in verifies) else "FAILED")
        + f" ({med(lambda v: v['check']['seconds']):.2f} s)"),
    ("uid lookup + entry fetch, 1 thread", f"{look['lookup']['ns_per_lookup']:.0f} ns "
        f"({look['lookup']['lookups_per_sec'] / 1e6:.2f} M/s)"),
]
c = com["commit"]
rows += [
    (f"commits, {c['writers']} writers, sync {c['sync']}", f"{c['commits_per_sec']:,.0f} /s"),
    ("commit latency p50 / p99 / max", f"{c['p50_ms']:.2f} / {c['p99_ms']:.2f} / {c['max_ms']:.2f} ms"),
    ("mean batch (commits per published version)", f"{c['mean_batch']:.1f}"),
]
s = snap["snapshot_under_load"]
rows += [
    ("commits/s before the snapshot", f"{s['before']['commits_per_sec']:,.0f} (p99 {s['before']['p99_ms']:.2f} ms)"),
    ("commits/s during the snapshot", f"{s['during']['commits_per_sec']:,.0f} (p99 {s['during']['p99_ms']:.2f} ms)"),
    ("ratio during / before", f"{s['ratio']:.2f}"),
    ("snapshot under load", f"{s['snapshot']['seconds']:.2f} s, {s['snapshot']['bytes'] / 1e6:,.1f} MB"),
    ("store open before commit / snapshot runs", f"{com['open_seconds']:.2f} s / {snap['open_seconds']:.2f} s "
        f"(replaying {snap['replayed']:,} log records)"),
]
for name, value in rows:
    print(f"| {name} | {value} |")
print()
print("Commands ($DIR: a temporary directory):")
print()
print("```")
for name in ["gen", "import", "verify1", "lookup", "commit", "snapshot"]:
    print(cmd(name) + ("   # 3 times, median" if name == "verify1" else ""))
print("```")
PY
