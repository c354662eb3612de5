#!/usr/bin/env bash
# Interleaved A/B of two Larch variants on the same data: two builds (the cost of a change)
# or two configurations (the cost of a feature, e.g. the access log on and off).
#
#   bench/ab.sh --a-bin PATH [--a-toml TEXT] [--a-name NAME]
#               --b-bin PATH [--b-toml TEXT] [--b-name NAME]
#               [--entries N] [--duration S] [--warmup S] [--rounds N]
#               [--workloads "search-1.1 search-1.1-d1 auth-same modify modify-d1"]
#               [--a-consumers N] [--b-consumers N]
#
# What it does:
#   1. `larch gen` N entries (seeded), `larch import` them once per variant;
#   2. both servers up at once, each on CPU 0 (taskset), the client on CPU 1, so the
#      variants meet the same machine state;
#   3. every workload runs --rounds times per variant, the variants taking turns
#      (A then B, B then A, ...), with `larch bench --line --server-pid`;
#   4. prints one table: per workload and variant the median round's operations per second
#      and server CPU per operation (all threads of the server process, user + kernel),
#      then B/A ratios for each round.
# Workloads: search-1.1 / search-all (8 connections x 8 in flight), search-1.1-d1 (16
# connections, one request in flight each), search-large-d1 (16 x 1: one surname, some
# hundreds of entries with all their attributes, a search run on the search threads),
# auth-same (search+bind on the same connection), modify (8 x 8) and modify-d1 (16 x 1).
# --a-consumers / --b-consumers N: N content-synchronization consumers in refreshAndPersist
# mode follow the variant the whole time (`ldapsearch -E sync=rp` of every entry with all
# attributes into a file, on CPU 1 with the client); measuring starts once each has
# finished its refresh. Their own CPU is on the client's side: compare the server's µs per
# operation.
# Servers are stopped by PID at the end. Loopback only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
a_bin= b_bin= a_toml= b_toml= a_name=A b_name=B
entries=100000 duration=6 warmup=2 rounds=3 a_consumers=0 b_consumers=0
workloads="search-1.1 search-1.1-d1 auth-same modify modify-d1"
while [ $# -gt 0 ]; do
  case "$1" in
    --a-bin) a_bin=$2; shift 2 ;;
    --b-bin) b_bin=$2; shift 2 ;;
    --a-toml) a_toml=$2; shift 2 ;;
    --b-toml) b_toml=$2; shift 2 ;;
    --a-name) a_name=$2; shift 2 ;;
    --b-name) b_name=$2; shift 2 ;;
    --entries) entries=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --a-consumers) a_consumers=$2; shift 2 ;;
    --b-consumers) b_consumers=$2; shift 2 ;;
    *) echo "ab.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$a_bin" ] && [ -x "$b_bin" ] || { echo "ab.sh: --a-bin and --b-bin must be executables" >&2; exit 2; }
command -v taskset >/dev/null || { echo "ab.sh: taskset is required" >&2; exit 1; }
say() { printf '== %s\n' "$*" >&2; }
work=$(mktemp -d /tmp/larch-ab.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
suffix="dc=example,dc=com" rootdn="cn=admin,dc=example,dc=com" rootpw=ab-secret
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ldap() { # URL
  for _ in $(seq 600); do
    ldapsearch -x -H "$1" -b "" -s base '(objectClass=*)' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

say "generating $entries entries"
"$a_bin" gen -n "$entries" -o "$work/data" --seed 1 >&2
# The surnames: the last word of each cn.
awk '{ print $NF }' "$work/data/cn.txt" | sort -u >"$work/data/sn.txt"
declare -A url pid
for v in a b; do
  bin_var=${v}_bin toml_var=${v}_toml
  bin=${!bin_var} extra=${!toml_var}
  mkdir -p "$work/$v"
  port=$(free_port)
  printf '[server]\nlisten = ["ldap://127.0.0.1:%s"]\ndata_dir = "data"\n\n[directory]\nsuffix = "%s"\nadmin_dn = "%s"\n\n[limits]\nsize_limit = 500\n%b\n' \
    "$port" "$suffix" "$rootdn" "$extra" >"$work/$v/larch.toml"
  say "variant $v: importing"
  "$bin" import --data "$work/$v/data" --creator "$rootdn" "$work/data/data.ldif" >"$work/$v/import.log" 2>&1
  LARCH_ADMIN_PASSWORD=$rootpw taskset -c 0 "$bin" serve --config "$work/$v/larch.toml" >"$work/$v/serve.log" 2>&1 &
  pid[$v]=$!
  pids+=("${pid[$v]}")
  url[$v]="ldap://127.0.0.1:$port/"
  wait_ldap "${url[$v]}" || { cat "$work/$v/serve.log" >&2; exit 1; }
done

# The consumers: each writes what it receives to a file (`ldapsearch` prints "refresh
# done" when its refresh is over), and keeps reading every change after it.
for v in a b; do
  n_var=${v}_consumers
  for i in $(seq 1 "${!n_var}"); do
    taskset -c 1 ldapsearch -x -H "${url[$v]}" -D "$rootdn" -w "$rootpw" -b "$suffix" -E sync=rp '(objectClass=*)' '*' '+' \
      >"$work/$v/consumer$i.ldif" 2>&1 &
    pids+=("$!")
  done
  for i in $(seq 1 "${!n_var}"); do
    for _ in $(seq 1200); do tail -c 4096 "$work/$v/consumer$i.ldif" | grep -q "refresh done" && break; sleep 0.5; done
    tail -c 4096 "$work/$v/consumer$i.ldif" | grep -q "refresh done" || { echo "ab.sh: consumer $i of $v did not finish its refresh" >&2; exit 1; }
  done
  [ "${!n_var}" = 0 ] || say "variant $v: ${!n_var} consumers refreshed"
done

run() { # variant workload
  local v=$1 w=$2 args
  case "$w" in
    search-1.1) args=(-W search -f '(cn={})' -a none --values "$work/data/cn.txt" -c 8 -d 8) ;;
    search-all) args=(-W search -f '(cn={})' -a all --values "$work/data/cn.txt" -c 8 -d 8) ;;
    search-1.1-d1) args=(-W search -f '(cn={})' -a none --values "$work/data/cn.txt" -c 16 -d 1) ;;
    search-large-d1) args=(-W search -f '(sn={})' -a all --values "$work/data/sn.txt" -c 16 -d 1) ;;
    auth-same) args=(-W auth --auth-connection same --auth-values "$work/data/uid.txt" -c 16) ;;
    modify) args=(-W modify --dns "$work/data/dn.txt" -D "$rootdn" -w "$rootpw" -c 8 -d 8) ;;
    modify-d1) args=(-W modify --dns "$work/data/dn.txt" -D "$rootdn" -w "$rootpw" -c 16 -d 1) ;;
    *) echo "ab.sh: unknown workload $w" >&2; exit 2 ;;
  esac
  taskset -c 1 "$a_bin" bench -H "${url[$v]}" --server-pid "${pid[$v]}" --duration "${duration}s" \
    --warmup "${warmup}s" --line -q "${args[@]}"
}
field() { local kv; for kv in $2; do [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }; done; echo "-"; }

declare -A res
for w in $workloads; do
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then order="a b"; else order="b a"; fi
    for v in $order; do
      say "$w round $r: $v"
      res[$v,$w,$r]=$(run "$v" "$w")
    done
  done
done

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else print a[int((NR + 1) / 2)] }'; }
echo
echo "| workload | $a_name ops/s | $a_name server µs/op | $b_name ops/s | $b_name server µs/op | $b_name/$a_name ops by round | $b_name/$a_name µs/op by round |"
echo "|---|---|---|---|---|---|---|"
for w in $workloads; do
  cells=()
  for v in a b; do
    cells+=("$(for r in $(seq "$rounds"); do field ops_per_sec "${res[$v,$w,$r]}"; done | median)")
    cells+=("$(for r in $(seq "$rounds"); do field server_us_per_op "${res[$v,$w,$r]}"; done | median)")
  done
  ops=() us=()
  for r in $(seq "$rounds"); do
    ops+=("$(awk -v b="$(field ops_per_sec "${res[b,$w,$r]}")" -v a="$(field ops_per_sec "${res[a,$w,$r]}")" 'BEGIN { printf "%.3f", b / a }')")
    us+=("$(awk -v b="$(field server_us_per_op "${res[b,$w,$r]}")" -v a="$(field server_us_per_op "${res[a,$w,$r]}")" 'BEGIN { printf "%.3f", b / a }')")
  done
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$w" "${cells[@]}" "${ops[*]}" "${us[*]}"
done
