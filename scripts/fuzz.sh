#!/usr/bin/env bash
# Runs one cargo-fuzz target for a while, seeded from the third-party PDU corpus in
# ../shared/ldap-corpus (read in place, never copied into the repository) and from
# fuzz/seeds/. Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
#
#   scripts/fuzz.sh decode_pdu 600     # ten minutes
#   scripts/fuzz.sh filter_string 600
#   scripts/fuzz.sh dn_parse 600
#   scripts/fuzz.sh schema_parse 600
#   scripts/fuzz.sh wal_read 600
#   scripts/fuzz.sh ldif_parse 600
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh <decode_pdu|filter_string|dn_parse|schema_parse|wal_read|ldif_parse> [seconds]}
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
corpus_root=${LARCH_LDAP_CORPUS:-$root/../shared/ldap-corpus}
cd "$root/fuzz"
mkdir -p "corpus/$target"
seeds=()
case "$target" in
  decode_pdu)
    for d in "$corpus_root"/*/; do seeds+=("$d"); done
    ;;
  filter_string|dn_parse|schema_parse|wal_read|ldif_parse)
    seeds+=("seeds/$target")
    ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
exec cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
  -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
