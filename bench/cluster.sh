#!/usr/bin/env bash
# A 3-node cluster against a single server, side by side on one machine (docs/cluster.md):
# the ratio is what counts, since the three nodes share the machine's cores.
#
#   bench/cluster.sh --bin PATH [--entries N] [--duration S] [--warmup S] [--rounds N]
#                    [--workloads "modify-d1 modify search-d1"] [--toml TEXT]
#                    [--cluster-toml TEXT]
#
# What it does:
#   1. `larch gen` N entries (seeded); a single server and three cluster nodes on 127.0.0.1
#      (ports picked here; the cluster's Raft transport plain TCP), each with its own data
#      directory, `sync = always`;
#   2. loads the entries into both through LDAP (ldapadd: a cluster node cannot import
#      offline), the cluster's through its leader, and waits until every node holds them;
#   3. every workload runs --rounds times against each side, the sides taking turns;
#      writes go to the single server and to the cluster's leader, searches to the
#      single server and to a follower (read throughput on followers);
#   4. prints one table: per workload and side the median round's operations per second,
#      p50 and p99 latency and server CPU per operation (the cluster's: the node measured,
#      then all three nodes together, warm-up included), then cluster/single ratios by
#      round.
# --toml TEXT is added to every server's configuration (e.g. '[store]\nsync = "none"' to
# see what the disk's fsyncs cost). Workloads: modify-d1 (16 connections, one modify in flight each), modify (8 x 8
# pipelined), search-d1 (16 x 1, (cn=...) returning no attributes).
# --cluster-toml TEXT is added to the cluster nodes' [cluster] table (e.g.
# 'reads = "linearizable"' to see what a follower's linearizable reads cost).
# modify-d1-via-follower is modify-d1 sent to a follower, which forwards each write to the
# leader (give the nodes a Bind for it: --cluster-toml 'writes = "forward"\nbind_dn =
# "cn=admin,dc=example,dc=com"\ncredentials = "bench-secret"').
# Servers are stopped by PID at the end. Loopback only.
set -euo pipefail
bin= entries=2000 duration=5 warmup=1 rounds=3 extra= cluster_extra=
workloads="modify-d1 modify search-d1"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --entries) entries=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --toml) extra=$2; shift 2 ;;
    --cluster-toml) cluster_extra=$2; shift 2 ;;
    *) echo "cluster.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "cluster.sh: --bin must be an executable" >&2; exit 2; }
say() { printf '== %s\n' "$*" >&2; }
work=$(mktemp -d /tmp/larch-cluster-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
suffix="dc=example,dc=com" rootdn="cn=admin,dc=example,dc=com" rootpw=bench-secret
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ldap() { # URL
  for _ in $(seq 600); do
    ldapsearch -x -H "$1" -D "$rootdn" -w "$rootpw" -b "$rootdn" -s base '(objectClass=*)' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
count() { # URL: entries below the suffix
  ldapsearch -x -H "$1" -D "$rootdn" -w "$rootpw" -b "$suffix" -z 0 '(objectClass=*)' 1.1 2>/dev/null | grep -c '^dn:' || true
}
start() { # name extra-toml
  local d=$work/$1 port
  mkdir -p "$d"
  port=$(free_port)
  printf '[server]\nlisten = ["ldap://127.0.0.1:%s"]\ndata_dir = "data"\n\n[directory]\nsuffix = "%s"\nadmin_dn = "%s"\n\n[access_log]\nenabled = false\n%b\n' \
    "$port" "$suffix" "$rootdn" "$2" >"$d/larch.toml"
  LARCH_ADMIN_PASSWORD=$rootpw "$bin" serve --config "$d/larch.toml" >"$d/serve.log" 2>&1 &
  pids+=("$!")
  echo "$! ldap://127.0.0.1:$port/"
}

say "generating $entries entries"
"$bin" gen -n "$entries" -o "$work/gen" --seed 1 >&2
read -r single_pid single_url < <(start single "$extra")
# `start` ran in a subshell there: its PID list is not this shell's.
pids+=("$single_pid")
declare -A raft ldap_port node_pid node_url
members=
for i in 1 2 3; do raft[$i]=$(free_port); done
for i in 1 2 3; do
  # The node's LDAP port is picked in `start`; the members table needs it first.
  ldap_port[$i]=$(free_port)
  members+="\n[[cluster.members]]\nid = $i\nraft = \"127.0.0.1:${raft[$i]}\"\nldap_url = \"ldap://127.0.0.1:${ldap_port[$i]}\"\n"
done
for i in 1 2 3; do
  d=$work/node$i
  mkdir -p "$d"
  boot=false; [ "$i" = 1 ] && boot=true
  printf '[server]\nlisten = ["ldap://127.0.0.1:%s"]\ndata_dir = "data"\n\n[directory]\nsuffix = "%s"\nadmin_dn = "%s"\n\n[access_log]\nenabled = false\n%b\n\n[cluster]\nnode_id = %s\nbootstrap = %s\n%b\n%b\n' \
    "${ldap_port[$i]}" "$suffix" "$rootdn" "$extra" "$i" "$boot" "$cluster_extra" "$members" >"$d/larch.toml"
  LARCH_ADMIN_PASSWORD=$rootpw "$bin" serve --config "$d/larch.toml" >"$d/serve.log" 2>&1 &
  node_pid[$i]=$!
  pids+=("$!")
  node_url[$i]="ldap://127.0.0.1:${ldap_port[$i]}/"
done
wait_ldap "$single_url" || { cat "$work/single/serve.log" >&2; exit 1; }
for i in 1 2 3; do wait_ldap "${node_url[$i]}" || { cat "$work/node$i/serve.log" >&2; exit 1; }; done
leader=
for i in 1 2 3; do
  role=$(ldapsearch -x -H "${node_url[$i]}" -D "$rootdn" -w "$rootpw" -b "cn=Role,cn=Cluster,cn=Monitor" -s base monitoredInfo 2>/dev/null | awk '/^monitoredInfo:/ { print $2 }')
  [ "$role" = leader ] && leader=$i
done
[ -n "$leader" ] || { echo "cluster.sh: no leader" >&2; exit 1; }
follower=$(( leader % 3 + 1 ))
say "leader: node $leader, follower: node $follower"
for target in "$single_url" "${node_url[$leader]}"; do
  say "loading $entries entries into $target"
  ldapadd -x -c -H "$target" -D "$rootdn" -w "$rootpw" -f "$work/gen/data.ldif" >/dev/null 2>"$work/load.err" || true
done
want=$(count "$single_url")
for i in 1 2 3; do
  for _ in $(seq 300); do [ "$(count "${node_url[$i]}")" = "$want" ] && break; sleep 0.2; done
  [ "$(count "${node_url[$i]}")" = "$want" ] || { echo "cluster.sh: node $i holds $(count "${node_url[$i]}") of $want entries" >&2; exit 1; }
done
say "both hold $want entries"

run() { # side workload
  local side=$1 w=$2 args url pid
  case "$w" in
    modify-d1|modify-d1-via-follower) args=(-W modify --dns "$work/gen/dn.txt" -D "$rootdn" -w "$rootpw" -c 16 -d 1) ;;
    modify) args=(-W modify --dns "$work/gen/dn.txt" -D "$rootdn" -w "$rootpw" -c 8 -d 8) ;;
    search-d1) args=(-W search -f '(cn={})' -a none --values "$work/gen/cn.txt" -c 16 -d 1) ;;
    *) echo "cluster.sh: unknown workload $w" >&2; exit 2 ;;
  esac
  case "$side,$w" in
    single,*) url=$single_url pid=$single_pid ;;
    cluster,search*|cluster,*-via-follower) url=${node_url[$follower]} pid=${node_pid[$follower]} ;;
    cluster,*) url=${node_url[$leader]} pid=${node_pid[$leader]} ;;
  esac
  "$bin" bench -H "$url" --server-pid "$pid" --duration "${duration}s" --warmup "${warmup}s" --line -q "${args[@]}"
}
cpu_ticks() { # PIDs: utime + stime of all their threads, in clock ticks
  local p total=0
  for p in "$@"; do total=$(( total + $(awk '{ print $14 + $15 }' "/proc/$p/stat") )); done
  echo "$total"
}
field() { local kv; for kv in $2; do [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }; done; echo "-"; }
declare -A res
for w in $workloads; do
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then order="single cluster"; else order="cluster single"; fi
    for side in $order; do
      say "$w round $r: $side"
      if [ "$side" = cluster ]; then before=$(cpu_ticks "${node_pid[@]}"); fi
      res[$side,$w,$r]=$(run "$side" "$w")
      if [ "$side" = cluster ]; then
        # CPU of all three nodes (warm-up included) per operation measured: an upper bound.
        ticks=$(( $(cpu_ticks "${node_pid[@]}") - before ))
        all_us=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$(field ops "${res[$side,$w,$r]}")" \
          -v d="$duration" -v wu="$warmup" 'BEGIN { printf "%.1f", t / hz * 1e6 / (n * (d + wu) / d) }')
        res[$side,$w,$r]+=" nodes_us_per_op=$all_us"
      fi
      say "${res[$side,$w,$r]}"
    done
  done
done
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else print a[int((NR + 1) / 2)] }'; }
echo
echo "| workload | single ops/s | single p50/p99 µs | single server µs/op | cluster ops/s | cluster p50/p99 µs | cluster µs/op: leader, all nodes | cluster/single ops by round |"
echo "|---|---|---|---|---|---|---|---|"
for w in $workloads; do
  cells=()
  for side in single cluster; do
    cells+=("$(for r in $(seq "$rounds"); do field ops_per_sec "${res[$side,$w,$r]}"; done | median)")
    p50=$(for r in $(seq "$rounds"); do field p50_us "${res[$side,$w,$r]}"; done | median)
    p99=$(for r in $(seq "$rounds"); do field p99_us "${res[$side,$w,$r]}"; done | median)
    cells+=("$p50 / $p99")
    us=$(for r in $(seq "$rounds"); do field server_us_per_op "${res[$side,$w,$r]}"; done | median)
    if [ "$side" = cluster ]; then
      us+=", $(for r in $(seq "$rounds"); do field nodes_us_per_op "${res[$side,$w,$r]}"; done | median)"
    fi
    cells+=("$us")
  done
  ratios=()
  for r in $(seq "$rounds"); do
    ratios+=("$(awk -v c="$(field ops_per_sec "${res[cluster,$w,$r]}")" -v s="$(field ops_per_sec "${res[single,$w,$r]}")" 'BEGIN { printf "%.3f", c / s }')")
  done
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$w" "${cells[@]}" "${ratios[*]}"
done
