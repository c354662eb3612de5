#!/usr/bin/env bash
# The end-to-end suite (tests/e2e): real LDAP clients (Python's ldap3 and OpenLDAP's
# ldap-utils) against a running server over TCP.
#
#   scripts/e2e.sh [--server larch|slapd] [pytest args...]
#
#   --server larch   (default) `larch serve`, from $LARCH_BIN or target/release/larch; this
#                    script does not build it (cargo build --release -p larch first).
#   --server slapd   OpenLDAP's slapd (back-mdb) configured the same way, which shows that
#                    every test checks real LDAP behaviour; the tests that are Larch's own
#                    are skipped there, each with its reason.
#
# What it does, in order:
#   1. installs Debian's ldap-utils if ldapsearch is missing, the OpenLDAP and SASL headers
#      python-ldap is built against; for --server larch, openssl and libsasl2-modules if
#      missing (the TLS tests make certificates with openssl and bind with SASL PLAIN, whose
#      client plugin that package holds) and 389-ds-base if /usr/bin/logconv is missing
#      (the access log tests count the log with 389 Directory Server's analyser, logconv)
#      and slapd if missing (test_migrate.py migrates a slapd it configures to Larch);
#      for --server slapd the slapd package if it is missing (non-interactive; a packaged
#      service is kept from starting by a temporary policy-rc.d, and slapd's is stopped and
#      disabled if it runs anyway);
#   2. creates or reuses a virtual environment at ${LARCH_E2E_VENV:-target/e2e-venv} with
#      the pinned packages of tests/e2e/requirements.txt (reinstalled when that file
#      changes);
#   3. runs pytest on tests/e2e with -q -rs (the summary line and every skip's reason);
#      extra arguments go to pytest (-k, -x, a file, ...).
# The exit status is pytest's. The shared PDU corpus is read from ../shared/ldap-corpus
# beside the repository, or from $LARCH_CORPUS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

server=larch
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=${2:?--server needs larch or slapd}; shift 2 ;;
    --server=*) server=${1#--server=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$server" in
  larch|slapd) ;;
  *) echo "e2e.sh: --server must be larch or slapd, not '$server'" >&2; exit 2 ;;
esac

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# ---------------------------------------------------------------- 1. system packages
apt_install() { # packages...
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Keep a packaged service from starting during the installation.
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  echo "slapd slapd/no_configuration boolean true" | as_root debconf-set-selections 2>/dev/null || true
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  if [ "$made_policy" = 1 ]; then as_root rm -f /usr/sbin/policy-rc.d; fi
}
if ! command -v ldapsearch >/dev/null 2>&1; then
  apt_install ldap-utils
fi
if [ "$server" = larch ]; then
  missing=()
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  compgen -G "/usr/lib/*/sasl2/libplain.so*" >/dev/null || missing+=(libsasl2-modules)
  [ -x /usr/bin/logconv ] || missing+=(389-ds-base)
  # test_migrate.py configures a slapd of its own and migrates it to Larch.
  [ -x /usr/sbin/slapd ] && [ -x /usr/sbin/slapcat ] || missing+=(slapd)
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
fi
if [ "$server" = slapd ] && { [ ! -x /usr/sbin/slapd ] || [ ! -x /usr/sbin/slapadd ]; }; then
  apt_install slapd
  # If the packaged service runs anyway, stop and disable it (it is not ours to use).
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    as_root systemctl disable --now slapd >/dev/null 2>&1 || true
  elif [ -f /run/slapd/slapd.pid ]; then
    as_root service slapd stop >/dev/null 2>&1 || true
  fi
fi
command -v ldapsearch >/dev/null || { echo "e2e.sh: ldap-utils could not be installed" >&2; exit 1; }
# python-ldap publishes no Linux wheels: pip builds it against OpenLDAP's and Cyrus SASL's
# headers.
if ! dpkg -s libldap2-dev libsasl2-dev >/dev/null 2>&1; then
  apt_install libldap2-dev libsasl2-dev
fi

# ---------------------------------------------------------------- 2. python packages
venv=${LARCH_E2E_VENV:-$root/target/e2e-venv}
req=$root/tests/e2e/requirements.txt
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! cmp -s "$req" "$venv/.e2e-requirements" 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  cp "$req" "$venv/.e2e-requirements"
fi

# ---------------------------------------------------------------- 3. the suite
export LARCH_E2E_SERVER=$server
export LARCH_BIN=${LARCH_BIN:-$root/target/release/larch}
export PYTHONDONTWRITEBYTECODE=1
status=0
"$venv/bin/python" -m pytest "$root/tests/e2e" -q -rs --server "$server" ${args[@]+"${args[@]}"} || status=$?
exit "$status"
