#!/usr/bin/env bash
# bench/compare.sh: OpenLDAP slapd and Larch side by side, same data, same workloads, one run.
#
# What it does, in order:
#   1. installs Debian's slapd and ldap-utils if missing (non-interactive; the packaged
#      service is kept from starting, and stopped and disabled if it runs anyway);
#   2. builds `larch` (release) unless --larch-bin is given, and generates the data with
#      `larch gen` (N inetOrgPerson entries, {SSHA} password "password");
#   3. slapd: a private instance in a work directory (slapd.conf, back-mdb, suffix
#      dc=example,dc=com, equality indexes on objectClass cn sn mail uid member uniqueMember,
#      "anonymous may read everything but userPassword" ACL), loaded with `slapadd -q`
#      (timed), started on ldap://127.0.0.1:PORT pinned to one CPU (startup timed), disk
#      size of the mdb directory, RSS per entry from /proc after a full read;
#   4. the same for Larch: `larch import` of the same LDIF (timed), `larch serve` pinned to
#      the same CPU with the same suffix, admin DN and password (startup timed); both
#      servers stay up for the measurements (the one not measured is idle);
#   5. the workloads, each with `larch bench` pinned to the other CPU and --server-pid:
#      search all attributes, search 1.1, auth on the same connection, auth on a new
#      connection per operation, modify, mixed 80/20. Each workload runs --rounds times
#      (default 3) on each server, the servers taking turns (slapd then Larch, then Larch
#      then slapd, ...), so that both meet the same state of a shared, noisy machine; the
#      table gives each server's median round (by ops/s; the lower middle one for an even
#      count) and, with several rounds, the ratio of each round;
#   6. prints the tables (Markdown; one gives each server's CPU per operation and the part
#      of it spent in the kernel, from /proc/PID/stat), and with --update-docs replaces the block between
#      `<!-- compare:N:begin -->` and `<!-- compare:N:end -->` in docs/benchmarks.md.
# slapd is stopped by its PID (trap), never by name.
#
# With --tls: a CA and a server certificate (EC P-256, for 127.0.0.1 and localhost) are made
# with openssl in the work directory; slapd gets TLSCACertificateFile, TLSCertificateFile and
# TLSCertificateKeyFile and listens on ldap:// and ldaps://; the workloads are the auth on a
# new connection per operation over plain LDAP, ldaps:// (the client's default key exchange
# groups, X25519MLKEM768 first; X25519 only, as an OpenSSL 3.0 client; TLS 1.2 only) and
# StartTLS, and search 1.1 over plain and ldaps:// (long-lived connections), with
# `larch bench --ca-file`. Further tables give each TLS flow as a share of plain, and what
# TLS negotiated and how many handshakes were resumed. The block in
# docs/benchmarks.md is `<!-- compare-tls:N:begin -->` ... `end`. Larch serves the same
# certificate (larch_tls_setup).
#
# Usage: bench/compare.sh [--entries N[,N...]] [--duration SECS] [--warmup SECS]
#          [--server-cpu C] [--client-cpu C] [--connections N] [--depth N]
#          [--larch-bin PATH] [--workdir DIR (kept)] [--keep] [--update-docs] [--progress]
#          [--quiet-wait SECS]   (wait up to SECS for an idle machine before each measurement)
#          [--rounds N]          (runs of each workload on each server, taking turns; default 3)
#          [--nice N]            (scheduling priority of server and client; default -20 as
#                                 root, so other work on a shared machine cannot take their CPUs)
#          [--tls]               (the TLS workloads instead of the usual ones; see above)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
orig_args=("$@")
entries=100000
duration=10
warmup=3
server_cpu=0
client_cpu=1
connections=16
depth=8
auth_connections=16
larch_bin=
workdir=
keep=0
update_docs=0
quiet=--quiet
quiet_wait=300
nice_level=-20
rounds=3
suffix="dc=example,dc=com"
rootdn="cn=admin,$suffix"
rootpw=secret
tls=0

while [ $# -gt 0 ]; do
  case "$1" in
    --entries) entries=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --client-cpu) client_cpu=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --auth-connections) auth_connections=$2; shift 2 ;;
    --larch-bin) larch_bin=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --update-docs) update_docs=1; shift ;;
    --progress) quiet=; shift ;;
    --quiet-wait) quiet_wait=$2; shift 2 ;;
    --nice) nice_level=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --tls) tls=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//; /^set -euo/d'; exit 0 ;;
    *) echo "compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# Several sizes (--entries 100000,1000000): one complete run per size, in order.
if [[ "$entries" == *,* ]]; then
  IFS=, read -ra sizes <<<"$entries"
  for n in "${sizes[@]}"; do "$0" "${orig_args[@]}" --entries "$n"; done
  exit 0
fi

say() { printf '== %s\n' "$*" >&2; }
# pinned CPU and scheduling priority for a server or the client
pinned() { # pinned CPU command...
  local cpu=$1; shift
  if [ "$(id -u)" -eq 0 ] && [ "$nice_level" != 0 ]; then
    nice -n "$nice_level" taskset -c "$cpu" "$@"
  else
    taskset -c "$cpu" "$@"
  fi
}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# ---------------------------------------------------------------- 1. packages
install_openldap() {
  if [ -x /usr/sbin/slapd ] && command -v ldapsearch >/dev/null && command -v slapadd >/dev/null; then
    return
  fi
  say "installing slapd and ldap-utils (apt-get)"
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Keep the packaged service from starting during the installation.
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  echo "slapd slapd/no_configuration boolean true" | as_root debconf-set-selections
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends slapd ldap-utils >/dev/null
  if [ "$made_policy" = 1 ]; then as_root rm -f /usr/sbin/policy-rc.d; fi
  # If the packaged service runs anyway, stop and disable it (it is not ours to use).
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    as_root systemctl disable --now slapd >/dev/null 2>&1 || true
  elif [ -f /run/slapd/slapd.pid ]; then
    as_root service slapd stop >/dev/null 2>&1 || true
  fi
}
install_openldap
command -v taskset >/dev/null || { echo "compare.sh: taskset (util-linux) is required" >&2; exit 1; }
if [ "$tls" = 1 ]; then
  command -v openssl >/dev/null || { echo "compare.sh: --tls needs openssl (to make the certificates)" >&2; exit 1; }
fi

# ---------------------------------------------------------------- 2. larch and the data
if [ -z "$larch_bin" ]; then
  say "building larch (release)"
  (cd "$root" && cargo build --release -q -p larch)
  larch_bin="${CARGO_TARGET_DIR:-$root/target}/release/larch"
fi
[ -x "$larch_bin" ] || { echo "compare.sh: no larch binary at $larch_bin" >&2; exit 1; }

made_workdir=0
if [ -z "$workdir" ]; then workdir=$(mktemp -d /tmp/larch-compare.XXXXXX); made_workdir=1; fi
mkdir -p "$workdir"
data=$workdir/data
slapd_pid=
larch_pid=
declare -A result

cleanup() {
  # Our instance's PID file lives in our work directory, so this is our slapd.
  if [ -z "$slapd_pid" ] && [ -s "$workdir/slapd/slapd.pid" ]; then slapd_pid=$(cat "$workdir/slapd/slapd.pid"); fi
  if [ -n "$slapd_pid" ] && kill -0 "$slapd_pid" 2>/dev/null; then
    kill "$slapd_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$slapd_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ -n "$larch_pid" ] && kill -0 "$larch_pid" 2>/dev/null; then
    kill "$larch_pid" 2>/dev/null || true
    for _ in $(seq 600); do kill -0 "$larch_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ "$keep" = 0 ] && [ "$made_workdir" = 1 ]; then rm -rf "$workdir"; else say "kept $workdir"; fi
}
trap cleanup EXIT

say "generating $entries entries"
"$larch_bin" gen -n "$entries" -o "$data" --seed 1 >&2

# tls_certificates: a CA and a server certificate it signed, for 127.0.0.1 and localhost,
# in $tls_dir (ca.pem, server.pem, server.key); the client trusts ca.pem.
tls_dir=$workdir/tls
tls_certificates() {
  rm -rf "$tls_dir"
  mkdir -p "$tls_dir"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$tls_dir/ca.key" -out "$tls_dir/ca.pem" -days 7 \
    -subj "/CN=compare.sh test CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req "${ec[@]}" -keyout "$tls_dir/server.key" -out "$tls_dir/server.csr" -subj "/CN=localhost" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
    >"$tls_dir/server.ext"
  openssl x509 -req -in "$tls_dir/server.csr" -CA "$tls_dir/ca.pem" -CAkey "$tls_dir/ca.key" -CAcreateserial \
    -out "$tls_dir/server.pem" -days 7 -extfile "$tls_dir/server.ext" 2>/dev/null
}
if [ "$tls" = 1 ]; then
  say "making a CA and a server certificate (openssl) in $tls_dir"
  tls_certificates
fi

free_port() {
  # Below the ephemeral range: a port the client used for its own connections may still be
  # held by TIME_WAIT sockets, and the server could not bind it.
  local low p
  low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range)
  for p in $(seq 13890 14890); do
    [ "$p" -lt "$low" ] || break
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "compare.sh: no free port below $low" >&2; exit 1
}

busy_cores() { # cores the machine kept busy over one second
  local a b
  a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
  sleep 1
  b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
  awk -v a="$a" -v b="$b" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }'
}

# wait_quiet: other work on the machine (builds, ...) distorts every figure; wait up to
# $quiet_wait seconds for the machine to be idle (< 0.25 cores busy) before a measurement.
wait_quiet() {
  local waited=0 busy
  while :; do
    busy=$(busy_cores)
    if awk -v b="$busy" 'BEGIN { exit !(b < 0.25) }'; then return; fi
    if [ "$waited" -ge "$quiet_wait" ]; then
      say "warning: the machine is busy ($busy cores used by others); measuring anyway"
      return
    fi
    [ "$waited" = 0 ] && say "waiting for the machine to be idle ($busy cores busy)"
    waited=$((waited + 1))
  done
}

# ---------------------------------------------------------------- 3. slapd
slapd_dir=$workdir/slapd
slapd_setup() {
  rm -rf "$slapd_dir"
  mkdir -p "$slapd_dir/mdb"
  local maxsize=$(( (entries / 100000 + 1) * 1073741824 ))
  cat >"$slapd_dir/slapd.conf" <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile $slapd_dir/slapd.pid
argsfile $slapd_dir/slapd.args
loglevel 0
sizelimit 500
$(if [ "$tls" = 1 ]; then printf 'TLSCACertificateFile %s\nTLSCertificateFile %s\nTLSCertificateKeyFile %s\n' \
  "$tls_dir/ca.pem" "$tls_dir/server.pem" "$tls_dir/server.key"; fi)

database mdb
maxsize $maxsize
suffix "$suffix"
rootdn "$rootdn"
rootpw $rootpw
directory $slapd_dir/mdb
index objectClass eq
index cn,sn,mail,uid eq
index member,uniqueMember eq

access to attrs=userPassword
  by self write
  by anonymous auth
  by * none
access to *
  by self write
  by * read
EOF
}

# slapd_import: prints the seconds slapadd took.
slapd_import() {
  local t0 t1
  t0=$(now)
  /usr/sbin/slapadd -q -f "$slapd_dir/slapd.conf" -l "$data/data.ldif" >"$slapd_dir/slapadd.log" 2>&1 \
    || { cat "$slapd_dir/slapadd.log" >&2; exit 1; }
  t1=$(now)
  elapsed "$t0" "$t1"
}

wait_ldap() { # URL: until a base search of the suffix answers
  local url=$1 i
  for i in $(seq 3000); do
    if ldapsearch -x -H "$url" -b "$suffix" -s base -LLL 1.1 >/dev/null 2>&1; then return 0; fi
    sleep 0.01
  done
  return 1
}

# slapd_start: starts slapd pinned to the server CPU; sets slapd_pid, slapd_url (and with
# --tls slapd_ldaps_url) and result[slapd,startup] (seconds until it answered). Not to be
# run in a subshell.
slapd_start() {
  local port t0 t1 listen
  port=$(free_port)
  slapd_url="ldap://127.0.0.1:$port/"
  listen=$slapd_url
  if [ "$tls" = 1 ]; then
    # Another free port: free_port only sees ports something listens on.
    local p2
    for p2 in $(seq $((port + 1)) $((port + 100))); do
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$p2") 2>/dev/null; then break; fi
    done
    slapd_ldaps_url="ldaps://127.0.0.1:$p2/"
    listen="$slapd_url $slapd_ldaps_url"
  fi
  t0=$(now)
  pinned "$server_cpu" /usr/sbin/slapd -f "$slapd_dir/slapd.conf" -h "$listen"
  for _ in $(seq 500); do [ -s "$slapd_dir/slapd.pid" ] && break; sleep 0.01; done
  slapd_pid=$(cat "$slapd_dir/slapd.pid")
  wait_ldap "$slapd_url" || { echo "compare.sh: slapd did not answer on $slapd_url" >&2; exit 1; }
  t1=$(now)
  result[slapd,startup]=$(elapsed "$t0" "$t1")
}

slapd_stop() {
  if [ -n "$slapd_pid" ]; then
    kill "$slapd_pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$slapd_pid" 2>/dev/null || break; sleep 0.1; done
    slapd_pid=
  fi
}

# ---------------------------------------------------------------- 5. Larch
# Same contract as slapd_*: a private data directory and configuration in $workdir/larch,
# the same LDIF imported offline (timed), the server pinned to the server CPU (its worker
# threads follow the CPUs it may use), the same admin DN and password.
larch_dir=$workdir/larch
larch_serve_available() { "$larch_bin" serve --help >/dev/null 2>&1; }
larch_setup() {
  rm -rf "$larch_dir"
  mkdir -p "$larch_dir"
  larch_port=$(free_port)
  cat >"$larch_dir/larch.toml" <<EOF
[server]
listen = ["ldap://127.0.0.1:$larch_port"]
data_dir = "data"

[directory]
suffix = "$suffix"
admin_dn = "$rootdn"

[limits]
size_limit = 500
EOF
}

# larch_import: prints the seconds `larch import` took.
larch_import() {
  local t0 t1
  t0=$(now)
  "$larch_bin" import --data "$larch_dir/data" --creator "$rootdn" "$data/data.ldif" >"$larch_dir/import.log" 2>&1 \
    || { cat "$larch_dir/import.log" >&2; exit 1; }
  t1=$(now)
  elapsed "$t0" "$t1"
}

# larch_start: like slapd_start. Not to be run in a subshell.
larch_start() {
  local t0 t1 prefix=()
  larch_url="ldap://127.0.0.1:$larch_port/"
  if [ "$(id -u)" -eq 0 ] && [ "$nice_level" != 0 ]; then prefix=(nice -n "$nice_level"); fi
  t0=$(now)
  # nice and taskset exec the server, so $! is the server's PID.
  LARCH_ADMIN_PASSWORD=$rootpw "${prefix[@]}" taskset -c "$server_cpu" \
    "$larch_bin" serve --config "$larch_dir/larch.toml" >"$larch_dir/serve.log" 2>&1 &
  larch_pid=$!
  wait_ldap "$larch_url" || { cat "$larch_dir/serve.log" >&2; echo "compare.sh: larch did not answer on $larch_url" >&2; exit 1; }
  t1=$(now)
  result[larch,startup]=$(elapsed "$t0" "$t1")
}

larch_stop() {
  if [ -n "$larch_pid" ]; then
    kill "$larch_pid" 2>/dev/null || true
    for _ in $(seq 600); do kill -0 "$larch_pid" 2>/dev/null || break; sleep 0.1; done
    larch_pid=
  fi
}
NA_LARCH="not measured: larch serve did not start"

# ---------------------------------------------------------------- Larch over TLS
# larch_tls_setup: adds to $larch_dir/larch.toml the certificate ($tls_dir/server.pem), its
# key ($tls_dir/server.key) and an ldaps:// listener on a second free port (the ldap://
# listener offers StartTLS with the same certificate), and sets larch_ldaps_url. Call it
# after larch_setup, not in a subshell (it sets variables).
larch_tls_setup() {
  # Another free port: free_port only sees ports something listens on, and nothing listens
  # on $larch_port yet.
  local p2
  for p2 in $(seq $((larch_port + 1)) $((larch_port + 100))); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p2") 2>/dev/null; then break; fi
  done
  larch_ldaps_url="ldaps://127.0.0.1:$p2/"
  sed -i "s|^listen = \[\"ldap://127.0.0.1:$larch_port\"\]|listen = [\"ldap://127.0.0.1:$larch_port\", \"ldaps://127.0.0.1:$p2\"]|" \
    "$larch_dir/larch.toml"
  grep -q "ldaps://127.0.0.1:$p2" "$larch_dir/larch.toml" \
    || { echo "compare.sh: could not add the ldaps:// listener to $larch_dir/larch.toml" >&2; exit 1; }
  printf '\n[tls]\ncertificate = "%s"\nkey = "%s"\n' "$tls_dir/server.pem" "$tls_dir/server.key" \
    >>"$larch_dir/larch.toml"
}

# ---------------------------------------------------------------- 4. workloads
# run_workload NAME URL LDAPS_URL PID: runs one workload, prints larch bench's key=value
# line. Workloads ending in -ldaps use LDAPS_URL, those ending in -starttls add --starttls;
# both trust the CA of tls_certificates.
run_workload() {
  local name=$1 url=$2 ldaps_url=$3 pid=$4
  local tls_args=()
  case "$name" in
    *-ldaps) url=$ldaps_url; tls_args=(--ca-file "$tls_dir/ca.pem") ;;
    *-ldaps12) url=$ldaps_url; tls_args=(--ca-file "$tls_dir/ca.pem" --tls-version 1.2) ;;
    *-ldapsx25519) url=$ldaps_url; tls_args=(--ca-file "$tls_dir/ca.pem" --tls-groups X25519) ;;
    *-starttls) tls_args=(--starttls --ca-file "$tls_dir/ca.pem") ;;
  esac
  name=${name%-ldaps}
  name=${name%-ldaps12}
  name=${name%-ldapsx25519}
  name=${name%-starttls}
  local common=(-H "$url" "${tls_args[@]}" --server-pid "$pid" --duration "${duration}s" --warmup "${warmup}s"
                --line $quiet)
  local args
  case "$name" in
    search-all) args=(-W search -f '(cn={})' -a all --values "$data/cn.txt" -c "$connections" -d "$depth") ;;
    search-1.1) args=(-W search -f '(cn={})' -a none --values "$data/cn.txt" -c "$connections" -d "$depth") ;;
    auth-same) args=(-W auth --auth-connection same --auth-values "$data/uid.txt" -c "$auth_connections") ;;
    auth-new) args=(-W auth --auth-connection new --auth-values "$data/uid.txt" -c "$auth_connections") ;;
    modify) args=(-W modify --dns "$data/dn.txt" -D "$rootdn" -w "$rootpw" -c "$connections" -d "$depth") ;;
    mixed) args=(-W mixed --search-percent 80 -f '(cn={})' -a all --values "$data/cn.txt" --dns "$data/dn.txt"
                 -D "$rootdn" -w "$rootpw" -c "$connections" -d "$depth") ;;
  esac
  pinned "$client_cpu" "$larch_bin" bench "${common[@]}" "${args[@]}"
}

field() { # field KEY LINE
  local kv
  for kv in $2; do
    if [ "${kv%%=*}" = "$1" ]; then echo "${kv#*=}"; return; fi
  done
  echo "-"
}

workloads=(search-all search-1.1 auth-same auth-new modify mixed)
if [ "$tls" = 1 ]; then
  workloads=(auth-new auth-new-ldaps auth-new-ldapsx25519 auth-new-starttls auth-new-ldaps12 search-1.1 search-1.1-ldaps)
fi

server_pid() { if [ "$1" = slapd ]; then echo "$slapd_pid"; else echo "$larch_pid"; fi; }
server_url() { if [ "$1" = slapd ]; then echo "$slapd_url"; else echo "$larch_url"; fi; }
server_ldaps_url() { if [ "$1" = slapd ]; then echo "${slapd_ldaps_url:-}"; else echo "${larch_ldaps_url:-}"; fi; }

# scan_server NAME (slapd|larch): reads every entry once (as the rootdn, no size limit),
# timed, so that RSS counts the data set; records the RSS.
scan_server() {
  local s=$1 pid url
  pid=$(server_pid "$s"); url=$(server_url "$s")
  local t0 t1
  t0=$(now)
  ldapsearch -x -H "$url" -D "$rootdn" -w "$rootpw" -b "$suffix" -LLL -z 0 '(objectClass=*)' >/dev/null
  t1=$(now)
  result[$s,scan]=$(elapsed "$t0" "$t1")
  local rss
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
  result[$s,rss_kib]=$rss
  result[$s,rss_per_entry]=$(awk -v r="$rss" -v n="$entries" 'BEGIN { printf "%.0f", r * 1024 / n }')
}

# measure SERVER WORKLOAD ROUND: one run, kept as result[SERVER,WORKLOAD,ROUND].
measure() {
  local s=$1 w=$2 r=$3 line
  wait_quiet
  say "$s: $w (round $r of $rounds)"
  line=$(run_workload "$w" "$(server_url "$s")" "$(server_ldaps_url "$s")" "$(server_pid "$s")")
  echo "   $line" >&2
  result[$s,$w,$r]=$line
}

# median_round SERVER WORKLOAD: the round whose ops/s is the median (the lower middle one
# for an even count).
median_round() {
  local s=$1 w=$2 r
  for r in $(seq "$rounds"); do
    echo "$(field ops_per_sec "${result[$s,$w,$r]}") $r"
  done | sort -g | awk -v n="$rounds" 'NR == int((n + 1) / 2) { print $2 }'
}

say "slapd: configuring, importing with slapadd -q"
slapd_setup
result[slapd,import]=$(slapd_import)
result[slapd,disk_kib]=$(du -sk "$slapd_dir/mdb" | awk '{ print $1 }')
say "slapd: starting on CPU $server_cpu"
slapd_start
scan_server slapd

larch_ok=0
servers=(slapd)
if larch_serve_available && larch_setup; then
  if [ "$tls" = 1 ]; then larch_tls_setup; fi
  result[larch,import]=$(larch_import)
  result[larch,disk_kib]=$(du -sk "$workdir/larch" | awk '{ print $1 }')
  say "larch: starting on CPU $server_cpu"
  larch_start
  scan_server larch
  larch_ok=1
  servers=(slapd larch)
else
  say "larch: $NA_LARCH"
fi

for w in "${workloads[@]}"; do
  for r in $(seq "$rounds"); do
    order=("${servers[@]}")
    if [ $((r % 2)) = 0 ] && [ "${#servers[@]}" = 2 ]; then order=(larch slapd); fi
    for s in "${order[@]}"; do measure "$s" "$w" "$r"; done
  done
  for s in "${servers[@]}"; do result[$s,$w]=${result[$s,$w,$(median_round "$s" "$w")]}; done
done
slapd_stop
larch_stop

# ---------------------------------------------------------------- 6. the table
slapd_version=$(/usr/sbin/slapd -VV 2>&1 | sed -n 's/.*slapd \([0-9][0-9.]*\).*/\1/p' | head -1)
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
label() {
  case "$1" in
    search-all) echo "search, all attributes" ;;
    search-1.1) echo "search, no attributes (1.1)" ;;
    auth-same) echo "auth (search+bind), same connection" ;;
    auth-new) echo "auth, new connection per operation" ;;
    modify) echo "modify (replace description)" ;;
    mixed) echo "mixed 80% search / 20% modify" ;;
    auth-new-ldaps) echo "auth, new ldaps:// connection per operation" ;;
    auth-new-starttls) echo "auth, new connection + StartTLS per operation" ;;
    auth-new-ldaps12) echo "auth, new ldaps:// connection per operation, TLS 1.2 only" ;;
    auth-new-ldapsx25519) echo "auth, new ldaps:// connection per operation, X25519 offered only" ;;
    search-1.1-ldaps) echo "search, no attributes (1.1), over ldaps://" ;;
  esac
}
ratio() { # larch slapd -> "Nx" or -
  if [ "$larch_ok" = 1 ] && [ "$1" != - ] && [ "$2" != - ]; then
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'
  else
    echo "-"
  fi
}
cpu_pct() { # cpu_pct LINE CPU: how busy that CPU was, in percent
  local list
  list=$(field cpu_busy "$1")
  echo "$list" | awk -F, -v i="$2" '{ if ($(i + 1) == "") print "-"; else printf "%.0f%%", $(i + 1) * 100 }'
}
larch_cell() { if [ "$larch_ok" = 1 ]; then echo "$1"; else echo "$NA_LARCH"; fi; }

table() {
  local prio=""
  if [ "$(id -u)" -eq 0 ] && [ "$nice_level" != 0 ]; then prio=", both at nice $nice_level"; fi
  echo "Run $(date -u +%Y-%m-%d), $entries entries, $cpu_model ($(nproc) vCPU), Linux $(uname -r)," \
       "OpenLDAP slapd $slapd_version (Debian), $("$larch_bin" --version). slapd on CPU $server_cpu," \
       "client on CPU $client_cpu$prio; ${duration} s measured after ${warmup} s warm-up per workload;" \
       "$connections connections x depth $depth ($auth_connections connections for auth)."
  if [ "$rounds" -gt 1 ]; then
    echo "Each workload ran $rounds times on each server, the servers taking turns; the figures are each" \
         "server's median round by ops/s, and the last column the ratio of each round."
  fi
  echo
  local by_round_head="" by_round_rule=""
  if [ "$rounds" -gt 1 ]; then by_round_head=" Larch / slapd, each round |"; by_round_rule=" ---: |"; fi
  echo "| workload | slapd ops/s | slapd p50 / p99 µs | slapd process CPU (cores) | slapd µs/op | CPU $server_cpu (slapd) busy | client process CPU (cores) | CPU $client_cpu (client) busy | kernel + other (cores) | errors | Larch ops/s | Larch p50 / p99 µs | Larch µs/op | Larch / slapd |$by_round_head"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |$by_round_rule"
  local w l s_ops
  for w in "${workloads[@]}"; do
    l=${result[slapd,$w]}
    s_ops=$(field ops_per_sec "$l")
    local lar=- lar_ops=- lar_lat=- lar_us=-
    if [ "$larch_ok" = 1 ]; then
      local ll=${result[larch,$w]}
      lar_ops=$(field ops_per_sec "$ll"); lar=$(printf '%.0f' "$lar_ops")
      lar_lat="$(printf '%.0f' "$(field p50_us "$ll")") / $(printf '%.0f' "$(field p99_us "$ll")")"
      lar_us=$(field server_us_per_op "$ll")
    fi
    local others
    others=$(awk -v m="$(field machine_cores "$l")" -v c="$(field client_cores "$l")" -v s="$(field server_cores "$l")" \
      'BEGIN { o = m - c - s; if (o < 0) o = 0; printf "%.2f", o }')
    local by_round=""
    if [ "$rounds" -gt 1 ]; then
      local r each=()
      for r in $(seq "$rounds"); do
        if [ "$larch_ok" = 1 ]; then
          each+=("$(ratio "$(field ops_per_sec "${result[larch,$w,$r]}")" "$(field ops_per_sec "${result[slapd,$w,$r]}")")")
        else
          each+=(-)
        fi
      done
      by_round=" ${each[*]} |"
    fi
    printf '| %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%s\n' "$(label "$w")" \
      "$(printf '%.0f' "$s_ops")" "$(printf '%.0f' "$(field p50_us "$l")")" "$(printf '%.0f' "$(field p99_us "$l")")" \
      "$(field server_cores "$l")" "$(field server_us_per_op "$l")" "$(cpu_pct "$l" "$server_cpu")" \
      "$(field client_cores "$l")" "$(cpu_pct "$l" "$client_cpu")" "$others" \
      "$(field errors "$l")" "$(larch_cell "$lar")" "$lar_lat" "$lar_us" "$(ratio "$lar_ops" "$s_ops")" "$by_round"
  done
  echo
  echo "The server's CPU per operation (median round) and the part of it spent in the kernel (system"
  echo "calls and the network stack, which both servers pay for the same packets):"
  echo
  echo "| workload | slapd µs/op | of which kernel | Larch µs/op | of which kernel | Larch kernel share |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
  for w in "${workloads[@]}"; do
    l=${result[slapd,$w]}
    local lk=(- - -)
    if [ "$larch_ok" = 1 ]; then
      local ll=${result[larch,$w]}
      lk=("$(field server_us_per_op "$ll")" "$(field server_kernel_us_per_op "$ll")"
          "$(awk -v t="$(field server_us_per_op "$ll")" -v k="$(field server_kernel_us_per_op "$ll")" \
             'BEGIN { if (t > 0) printf "%.0f%%", 100 * k / t; else print "-" }')")
    fi
    printf '| %s | %s | %s | %s | %s | %s |\n' "$(label "$w")" "$(field server_us_per_op "$l")" \
      "$(field server_kernel_us_per_op "$l")" "${lk[@]}"
  done
  echo
  echo "| measure | slapd | Larch | ratio |"
  echo "| --- | ---: | --- | ---: |"
  printf '| import (slapadd -q / larch import), s; ratio = slapd time / Larch time | %s | %s | %s |\n' "${result[slapd,import]}" \
    "$(larch_cell "${result[larch,import]:-}")" "$(ratio "${result[slapd,import]}" "${result[larch,import]:--}")"
  printf '| startup until the first answer, s | %s | %s | - |\n' "${result[slapd,startup]}" \
    "$(larch_cell "${result[larch,startup]:-}")"
  printf '| RSS after reading every entry, MiB | %s | %s | - |\n' "$(( result[slapd,rss_kib] / 1024 ))" \
    "$(larch_cell "$(( ${result[larch,rss_kib]:-0} / 1024 ))")"
  printf '| RSS per entry, octets | %s | %s | - |\n' "${result[slapd,rss_per_entry]}" \
    "$(larch_cell "${result[larch,rss_per_entry]:-}")"
  printf '| database on disk, MiB | %s | %s | - |\n' "$(( result[slapd,disk_kib] / 1024 ))" \
    "$(larch_cell "$(( ${result[larch,disk_kib]:-0} / 1024 ))")"
  printf '| full read of every entry (ldapsearch), s | %s | %s | - |\n' "${result[slapd,scan]}" \
    "$(larch_cell "${result[larch,scan]:-}")"
  if [ "$tls" = 1 ]; then
    echo
    echo "Each TLS flow as a share of the same flow in plain LDAP on the same server (ops/s; and the server's"
    echo "CPU per operation, plain / TLS):"
    echo
    echo "| workload | slapd ops/s, % of plain | slapd µs/op, plain / TLS | Larch ops/s, % of plain | Larch µs/op, plain / TLS |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    local base
    for w in "${workloads[@]}"; do
      case "$w" in auth-new-*) base=auth-new ;; search-1.1-*) base=search-1.1 ;; *) continue ;; esac
      local cells=() srv
      for srv in slapd larch; do
        if [ "$srv" = larch ] && [ "$larch_ok" != 1 ]; then cells+=(- -); continue; fi
        local lt=${result[$srv,$w]} lp=${result[$srv,$base]}
        cells+=("$(awk -v t="$(field ops_per_sec "$lt")" -v p="$(field ops_per_sec "$lp")" \
          'BEGIN { if (p > 0) printf "%.0f (%.0f%%)", t, 100 * t / p; else print "-" }')")
        cells+=("$(field server_us_per_op "$lp") / $(field server_us_per_op "$lt")")
      done
      printf '| %s | %s | %s | %s | %s |\n' "$(label "$w")" "${cells[@]}"
    done
    echo
    echo "TLS as negotiated (first connection of each run), and the handshakes of the operations measured"
    echo "(per-operation workloads; the long-lived connections shake hands before the window):"
    echo
    echo "| workload | server | TLS version | cipher suite | key exchange | certificate verified | handshakes full | handshakes resumed | set-up and warm-up handshakes |"
    echo "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |"
    for w in "${workloads[@]}"; do
      for srv in slapd larch; do
        [ "$srv" = larch ] && [ "$larch_ok" != 1 ] && continue
        l=${result[$srv,$w]}
        [ "$(field transport "$l")" = plain ] && continue
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(label "$w")" "$srv" "$(field tls_version "$l")" \
          "$(field tls_cipher "$l")" "$(field tls_group "$l")" "$(field tls_verified "$l")" "$(field tls_full "$l")" \
          "$(field tls_resumed "$l")" "$(field tls_other "$l")"
      done
    done
  fi
}

out=$(table)
echo "$out"

if [ "$update_docs" = 1 ]; then
  doc=$root/docs/benchmarks.md
  marker=compare
  if [ "$tls" = 1 ]; then marker=compare-tls; fi
  begin="<!-- $marker:$entries:begin -->"
  end="<!-- $marker:$entries:end -->"
  if grep -qF "$begin" "$doc" && grep -qF "$end" "$doc"; then
    tmp=$(mktemp)
    printf '%s\n' "$out" >"$tmp.block"
    awk -v b="$begin" -v e="$end" -v f="$tmp.block" '
      $0 == b { print; while ((getline line < f) > 0) print line; skip = 1; next }
      $0 == e { skip = 0 }
      !skip { print }' "$doc" >"$tmp"
    mv "$tmp" "$doc"
    rm -f "$tmp.block"
    say "updated $doc ($begin)"
  else
    say "no $begin / $end markers in $doc; table not written there"
  fi
fi
