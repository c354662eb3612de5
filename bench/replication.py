#!/usr/bin/env python3
"""Replication figures (docs/benchmarks.md, "Replication"): real servers on loopback, stopped
by PID.

  bench/replication.py --larch-bin PATH snapshot --entries 1000000
      A Larch provider holding N generated entries (`larch gen`, `larch import`); a new
      Larch replica with `start_from = "snapshot"` is started; prints the seconds from its
      start until it answers, and until it holds the provider's context CSN.

  bench/replication.py --larch-bin PATH catchup --entries 100000 --seconds 6 [--mode away|persist]
      A Larch provider with N entries, followed by a Larch replica and a slapd replica
      (refreshAndPersist), the provider takes modifies for S seconds (`larch bench -W
      modify`, 8 connections x 8 in flight):
      - away (the default): both replicas are stopped during the modifies and started
        again at once after; each comes back with its cookie and gets a delta (the last
        state of every entry that changed);
      - persist: both replicas follow during the modifies, every change sent as it commits.
      Prints for each the seconds from the start of the catch-up (away: the restart;
      persist: the end of the modifies) until it holds the provider's context CSN, and
      the provider's changes per second that makes (persist: over the modifies and that
      tail). A replica not caught up within
      --timeout seconds is reported with the rate at which the provider's connection to
      it took changes (persist: cn=Search N,cn=Sync Provider,cn=Monitor) and how far it
      still was.
      --slapd-dbnosync runs the slapd replica with `dbnosync` (no fsync per transaction).

Needs ldap3 (the e2e virtual environment has it) and, for catchup, Debian's slapd.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ldap3

SUFFIX = "dc=example,dc=com"
ADMIN = "cn=admin,dc=example,dc=com"
PASSWORD = "bench-Secret-1"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Proc:
    """A server process; stopped by its PID."""

    def __init__(self, args, cwd, env=None):
        self.log = open(Path(cwd) / "server.log", "ab")
        self.p = subprocess.Popen(args, cwd=cwd, env=env, stdout=self.log, stderr=self.log,
                                  stdin=subprocess.DEVNULL)

    def stop(self):
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.log.close()


def larch(bin_, work, name, extra=""):
    d = Path(work) / name
    d.mkdir(exist_ok=True)
    port = free_port()
    (d / "larch.toml").write_text(f'[server]\nlisten = ["ldap://127.0.0.1:{port}"]\ndata_dir = "data"\n\n'
                                  f'[directory]\nsuffix = "{SUFFIX}"\nadmin_dn = "{ADMIN}"\n\n'
                                  f'[bind_throttle]\nexempt_loopback = true\n{extra}')
    return d, port


def start_larch(bin_, d):
    env = dict(os.environ, LARCH_ADMIN_PASSWORD=PASSWORD)
    return Proc([bin_, "serve", "--config", str(d / "larch.toml")], d, env)


def answers(port, timeout=600.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            c = ldap3.Connection(ldap3.Server("127.0.0.1", port=port), auto_bind=True)
            c.unbind()
            return True
        except ldap3.core.exceptions.LDAPException:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answers on port {port}")


def connect(port, who=ADMIN, pw=PASSWORD):
    return ldap3.Connection(ldap3.Server("127.0.0.1", port=port), who, pw, auto_bind=True)


def provider_context(port, timeout=600.0):
    """The provider's context CSNs, once its synchronization provider has read them."""
    deadline = time.monotonic() + timeout
    while True:
        c = connect(port)
        c.search("cn=Context CSN,cn=Sync Provider,cn=Monitor", "(objectClass=*)", ldap3.BASE,
                 attributes=["monitoredInfo"])
        value = c.response[0]["raw_attributes"]["monitoredInfo"][0].decode()
        c.unbind()
        if value != "none":
            return set(value.split(";"))
        if time.monotonic() > deadline:
            raise RuntimeError("the provider's synchronization provider did not start")
        time.sleep(0.1)


def replica_context(port, who=ADMIN, pw=PASSWORD):
    try:
        c = connect(port, who, pw)
    except ldap3.core.exceptions.LDAPException:
        return set()
    c.search(SUFFIX, "(objectClass=*)", ldap3.BASE, attributes=["contextCSN"])
    values = c.response[0]["raw_attributes"].get("contextCSN", []) if c.response else []
    c.unbind()
    return {v.decode() for v in values}


def generate(bin_, work, entries):
    data = Path(work) / "gen"
    subprocess.run([bin_, "gen", "-n", str(entries), "-o", str(data), "--seed", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    return data


def provider_with(bin_, work, entries):
    data = generate(bin_, work, entries)
    d, port = larch(bin_, work, "provider")
    subprocess.run([bin_, "import", "--data", str(d / "data"), "--creator", ADMIN, str(data / "data.ldif")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = start_larch(bin_, d)
    answers(port)
    return p, port, data


def replication_toml(rid, port, extra=""):
    return (f'\n[[replication]]\nrid = {rid}\nprovider = "ldap://127.0.0.1:{port}"\nbind_dn = "{ADMIN}"\n'
            f'credentials = "{PASSWORD}"\nbase = "{SUFFIX}"\nretry = "1s +"\n{extra}')


def snapshot(args, work):
    provider, pport, _ = provider_with(args.larch_bin, work, args.entries)
    procs = [provider]
    try:
        want = provider_context(pport)
        d, port = larch(args.larch_bin, work, "replica", replication_toml(1, pport, 'start_from = "snapshot"\n'))
        started = time.monotonic()
        procs.append(start_larch(args.larch_bin, d))
        answers(port)
        serving = time.monotonic() - started
        while not want <= replica_context(port):
            time.sleep(0.05)
        caught_up = time.monotonic() - started
        print(f"snapshot start, {args.entries} entries: serving after {serving:.2f} s, "
              f"holding the provider's context CSN after {caught_up:.2f} s")
    finally:
        for p in reversed(procs):
            p.stop()


def slapd_consumer(work, pport, nosync=False):
    d = Path(work) / "slapd"
    (d / "mdb").mkdir(parents=True)
    port = free_port()
    (d / "slapd.conf").write_text(f"""
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
pidfile {d}/slapd.pid
database mdb
maxsize 8589934592
suffix "{SUFFIX}"
rootdn "cn=replica,{SUFFIX}"
rootpw {PASSWORD}
directory {d}/mdb
{"dbnosync" if nosync else ""}
index objectClass eq
index entryCSN,entryUUID eq
syncrepl rid=002 provider=ldap://127.0.0.1:{pport} bindmethod=simple binddn="{ADMIN}" credentials="{PASSWORD}"
  searchbase="{SUFFIX}" type=refreshAndPersist retry="1 +" attrs="*,+" schemachecking=off
""")
    return d, port


def start_slapd(d, port):
    return Proc(["/usr/sbin/slapd", "-d", "0", "-f", str(d / "slapd.conf"), "-h", f"ldap://127.0.0.1:{port}/"], d)


def sent_by_rid(pport):
    """{rid: changes sent} of the provider's persistent searches (cn=Monitor)."""
    c = connect(pport)
    c.search("cn=Sync Provider,cn=Monitor", "(objectClass=*)", ldap3.SUBTREE,
             attributes=["cn", "monitoredInfo", "monitorCounter"])
    searches = {}
    for e in c.response:
        parent = e["dn"].lower().split(",", 1)[1]
        if not parent.startswith("cn=search "):
            continue
        raw = e["raw_attributes"]
        v = raw.get("monitoredInfo") or raw.get("monitorCounter")
        searches.setdefault(parent, {})[raw["cn"][0].decode().lower()] = v[0].decode() if v else None
    c.unbind()
    return {int(s["rid"]): int(s["changes sent"]) for s in searches.values()
            if s.get("rid", "none") != "none" and s.get("state") == "persisting"}


def modify_load(args, pport, data):
    bench = subprocess.run([args.larch_bin, "bench", "-H", f"ldap://127.0.0.1:{pport}/", "-W", "modify",
                            "--dns", str(data / "dn.txt"), "-D", ADMIN, "-w", PASSWORD, "-c", "8", "-d", "8",
                            "--duration", f"{args.seconds}s", "--warmup", "0s", "--line", "-q"],
                           capture_output=True, text=True)
    if bench.returncode != 0:
        raise RuntimeError(f"larch bench: {bench.stderr}")
    return int(next(kv for kv in bench.stdout.split() if kv.startswith("ops=")).split("=")[1])


def catchup(args, work):
    provider, pport, data = provider_with(args.larch_bin, work, args.entries)
    procs = [provider]
    try:
        ld, lport = larch(args.larch_bin, work, "replica", replication_toml(1, pport))
        sd, sport = slapd_consumer(work, pport, args.slapd_dbnosync)
        replicas = {"larch": (lambda: start_larch(args.larch_bin, ld), lport, ADMIN, 1),
                    "slapd": (lambda: start_slapd(sd, sport), sport, f"cn=replica,{SUFFIX}", 2)}
        running = {name: start() for name, (start, _, _, _) in replicas.items()}
        want = provider_context(pport)
        for name, (_, port, who, _) in replicas.items():
            answers(port)
            while not want <= replica_context(port, who):
                time.sleep(0.2)
        if args.mode == "away":
            for p in running.values():
                p.stop()
        changes = modify_load(args, pport, data)
        want = provider_context(pport)
        started = time.monotonic()
        if args.mode == "away":
            running = {name: start() for name, (start, _, _, _) in replicas.items()}
        sent_at_start = sent_by_rid(pport)
        done = {}
        deadline = started + args.timeout
        while len(done) < len(replicas) and time.monotonic() < deadline:
            for name, (_, port, who, _) in replicas.items():
                if name not in done and want <= replica_context(port, who):
                    done[name] = time.monotonic() - started
            time.sleep(0.05)
        sent_at_end, waited = sent_by_rid(pport), time.monotonic() - started
        print(f"catch-up ({args.mode}) after {changes} modifies of {args.entries} entries in {args.seconds} s "
              f"({changes / args.seconds:.0f}/s):")
        for name, (_, _, _, rid) in replicas.items():
            if name in done:
                secs = done[name]
                # Persist: the replica applied the changes during the load and the tail.
                span = secs + (args.seconds if args.mode == "persist" else 0)
                print(f"  {name} replica: {secs:.2f} s ({changes / span:.0f} provider changes/s)")
            elif rid in sent_at_end:
                took = sent_at_end[rid] - sent_at_start.get(rid, 0)
                print(f"  {name} replica: not caught up within {args.timeout:.0f} s; its connection took "
                      f"{took} changes in {waited:.0f} s ({took / waited:.0f}/s), "
                      f"{sent_at_end[rid]} since its refresh")
            else:
                print(f"  {name} replica: not caught up within {args.timeout:.0f} s (still in its refresh)")
        procs.extend(running.values())
    finally:
        for p in reversed(procs):
            p.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--larch-bin", required=True)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("--entries", type=int, default=1_000_000)
    c = sub.add_parser("catchup")
    c.add_argument("--entries", type=int, default=100_000)
    c.add_argument("--seconds", type=int, default=6)
    c.add_argument("--mode", choices=["away", "persist"], default="away")
    c.add_argument("--timeout", type=float, default=600.0)
    c.add_argument("--slapd-dbnosync", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="larch-bench-repl-")
    try:
        {"snapshot": snapshot, "catchup": catchup}[args.what](args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
