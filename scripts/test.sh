#!/usr/bin/env bash
# The whole test suite, from a fresh clone. Installs what the tests need (Debian's
# ldap-utils for the capture tests, 389-ds-base for its access log analyser `logconv`,
# prometheus for `promtool` and a real Prometheus server scraping Larch, systemd for
# `systemd-analyze verify` of the shipped unit, strace for its system call filter;
# rustfmt and clippy), then runs, in order:
#   1. formatting and lints (cargo fmt --check, clippy -D warnings, fuzz crate included);
#   2. a release build of the workspace;
#   3. every test of the workspace (unit, integration, doc tests);
#   4. the end-to-end suite (tests/e2e, scripts/e2e.sh): the release `larch serve` started
#      on loopback and driven by python ldap3 and ldap-utils (Python packages in a venv);
#   5. the loom model of the store's version cell (release, its own target directory);
#   6. the fuzz targets, built on stable and replayed over their seed corpora;
# and ends with one summary line: "summary: N passed, N failed".
#
# The third-party PDU corpus is read from ../shared/ldap-corpus (beside the clone), or
# from $LARCH_LDAP_CORPUS.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# A fresh clone builds everything once: incremental state would only take disk (3.6 GB
# for the workspace's tests).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
corpus=${LARCH_LDAP_CORPUS:-$root/../shared/ldap-corpus}
export LARCH_LDAP_CORPUS=$corpus

step() { printf '\n== %s\n' "$*"; }
# What the build trees take, after each build (a runner's disk is not large).
disk() { echo "disk: $(du -sh "$@" 2>/dev/null | awk '{ printf "%s %s  ", $2, $1 }')free $(df -h --output=avail . | tail -1 | tr -d ' ')"; }

step "set-up"
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
command -v ldapsearch >/dev/null 2>&1 || missing+=(ldap-utils)
command -v logconv >/dev/null 2>&1 || missing+=(389-ds-base)
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v strace >/dev/null 2>&1 || missing+=(strace)
if [ ${#missing[@]} -gt 0 ]; then
  as_root apt-get update -qq
  # 389-ds-base and prometheus ship services; keep the packages from starting them.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ "$made_policy" = 1 ]; then as_root rm -f /usr/sbin/policy-rc.d; fi
  # If prometheus' packaged service runs anyway (a policy-rc.d that was already there
  # allowed it), stop and disable it: the tests start their own Prometheus, on a port
  # they pick, and stop it by PID.
  if [[ " ${missing[*]} " == *" prometheus "* ]]; then
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
      as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
    else
      as_root service prometheus stop >/dev/null 2>&1 || true
    fi
  fi
fi
if command -v rustup >/dev/null 2>&1; then
  for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" || rustup component add "$component"
  done
fi
command -v ldapsearch >/dev/null || { echo "ldap-utils could not be installed" >&2; exit 1; }
command -v logconv >/dev/null || { echo "389-ds-base (logconv) could not be installed" >&2; exit 1; }
command -v promtool >/dev/null && command -v prometheus >/dev/null || { echo "prometheus (promtool, prometheus) could not be installed" >&2; exit 1; }
[ -d "$corpus" ] || { echo "the PDU corpus is missing at $corpus (set LARCH_LDAP_CORPUS)" >&2; exit 1; }
echo "cargo: $(cargo --version); ldap-utils: $(dpkg-query -W -f='${Version}' ldap-utils 2>/dev/null || echo unknown)"

step "format and lints"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --manifest-path fuzz/Cargo.toml --bins -- -D warnings

step "release build"
cargo build --workspace --release
disk target/release

step "tests"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
LARCH_REQUIRE_LDAP_UTILS=1 LARCH_REQUIRE_LOGCONV=1 cargo test --workspace 2>&1 | tee "$log" || status=$?
disk target/debug target/release

step "end-to-end: larch serve with ldap3 and ldap-utils"
e2e_status=0
LARCH_BIN="$root/target/release/larch" LARCH_REQUIRE_LOGCONV=1 LARCH_REQUIRE_PROMETHEUS=1 LARCH_REQUIRE_SYSTEMD_ANALYZE=1 ./scripts/e2e.sh --server larch 2>&1 | tee "$log.e2e" || e2e_status=$?
# pytest's summary ("N failed, N passed, N skipped in Ts") in cargo's form, for the total.
e2e_summary=$(grep -E '[0-9]+ (passed|failed|errors?)' "$log.e2e" | grep -E ' in [0-9.]+s' | tail -1 || true)
# awk alone (no grep in a pipeline: under pipefail a grep that finds nothing ends the script).
e2e_count() { awk -v what="$1" '{ for (i = 2; i <= NF; i++) if ($i ~ "^" what "[,]?$") s += $(i - 1) } END { print s + 0 }' <<<"$e2e_summary"; }
e2e_passed=$(e2e_count passed)
e2e_failed=$(( $(e2e_count failed) + $(e2e_count errors) + $(e2e_count error) ))
if [ "$e2e_status" -ne 0 ] && [ "$e2e_failed" -eq 0 ]; then e2e_failed=1; fi
if [ "$e2e_failed" -eq 0 ]; then e2e_word=ok; else e2e_word=FAILED; fi
echo "test result: $e2e_word. ${e2e_passed:-0} passed; $e2e_failed failed; 0 ignored; 0 measured; 0 filtered out" >>"$log"
rm -f "$log.e2e"

step "loom: the version cell's publication protocol, model-checked"
loom_status=0
# A separate target directory: --cfg loom rebuilds every dependency.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$root/target/loom" \
  cargo test -p larch-store --test loom_version_cell --release 2>&1 | tee -a "$log" || loom_status=$?
disk target/loom

step "fuzz targets: build on stable, replay the seed corpora"
fuzz_status=0
cargo build --manifest-path fuzz/Cargo.toml --bins
disk fuzz/target
fuzz_bin=$root/fuzz/target/debug
shopt -s nullglob
# target -> its seeds: the shared third-party PDUs for the decoder, fuzz/seeds/<target>
# for the others.
for target in decode_pdu filter_string dn_parse schema_parse wal_read ldif_parse; do
  if [ "$target" = decode_pdu ]; then seeds=("$corpus"/*/*); else seeds=(fuzz/seeds/"$target"/*); fi
  if [ "${#seeds[@]}" -eq 0 ]; then
    echo "test fuzz::$target ... FAILED (no seeds)"
    echo "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out" >>"$log"
    fuzz_status=1
  elif "$fuzz_bin/$target" "${seeds[@]}" >"$log.fuzz" 2>&1; then
    echo "test fuzz::$target replayed ${#seeds[@]} seeds ... ok"
    echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out" >>"$log"
  else
    cat "$log.fuzz"
    echo "test fuzz::$target ... FAILED"
    echo "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out" >>"$log"
    fuzz_status=1
  fi
done
rm -f "$log.fuzz"

passed=$(grep -Eo '^test result: [A-Za-z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed;' "$log" | awk '{s+=$1} END {print s+0}')
echo
echo "summary: $passed passed, $failed failed"
if [ "$status" -ne 0 ] || [ "$e2e_status" -ne 0 ] || [ "$loom_status" -ne 0 ] || [ "$fuzz_status" -ne 0 ] || [ "$failed" -ne 0 ]; then
  exit 1
fi
if [ "$passed" -eq 0 ]; then
  echo "no test ran" >&2
  exit 1
fi
