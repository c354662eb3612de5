"""Online backup and restore (docs/backup.md): `larch backup` against a running server under
a write load, `larch restore` into a new data directory, a second server on it.

The write load is one client writing in sequence (each write waits for the one before), so
the order of its writes is the order of their LSNs: a counter entry's description replaced
with 1, 2, 3, ... and, every fourth step, an entry added. A backup restores the state of one
LSN, so the restored subtree must equal the state after exactly the prefix of that
sequence ending at the backup's end LSN (the LSN before the sequence is read from a backup
taken before it), one that holds at least every write acknowledged before `larch backup`
started.

Also: a bind that is not the administrator's is refused (insufficientAccessRights), a
wrong password and a directory that is not empty make `larch backup` exit 1 with one line;
a damaged backup is refused by `larch restore` naming the file; `kill -9` of the server
while it writes a backup leaves its data directory sound (every acknowledged write there
after a restart) and the partial backup without a manifest, which restore refuses.
Each server here is this module's own, on its own directory; each is stopped by its PID.
"""

import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import ldap3
import pytest

import conftest
import ldaputil
from ldaputil import add_ok, assert_result

pytestmark = pytest.mark.larch_only("Larch's backup extended operation and its larch backup/restore commands")

BASE = conftest.BASE
SUB = f"ou=bk,{BASE}"
COUNTER = f"cn=counter,{SUB}"
# Writes acknowledged before the backup starts, and how long the load goes on after it.
WRITES_BEFORE = 60
WRITE_AFTER_S = 0.3
# Every ADD_EVERY-th step of the sequence adds an entry instead of bumping the counter.
ADD_EVERY = 4
# The kill -9 test: entries that make its snapshot take long enough to be killed during,
# and how many times it tries to land the kill before the backup completes.
FILLER_ENTRIES = 1500
FILLER_BYTES = 3000
KILL_ATTEMPTS = 5
# The one line `larch backup` prints on success.
SUMMARY = re.compile(r"^backup written to (\S+): LSN (\d+) \(snapshot at (\d+)\), (\d+) entries, ")


@pytest.fixture
def workdir():
    d = Path(tempfile.mkdtemp(prefix="larch-e2e-backup-"))
    servers = []
    yield d, servers
    for s in servers:
        if s.alive():
            s.stop()
    shutil.rmtree(d, ignore_errors=True)


def new_server(pytestconfig, root, name, servers):
    """A started server of its own in root/name; its data directory is root/name/data."""
    d = root / name
    d.mkdir()
    srv = conftest.LdapServer("larch", d, larch_bin=pytestconfig.getoption("--larch-bin"))
    servers.append(srv)
    srv.start()
    return srv


def larch(pytestconfig, *args, timeout=60):
    return subprocess.run([pytestconfig.getoption("--larch-bin"), *args], capture_output=True, text=True,
                          timeout=timeout)


def backup(pytestconfig, srv, to, dn=None, pw=None):
    return larch(pytestconfig, "backup", "-H", srv.url, "-D", dn or srv.admin_dn, "-w", pw or srv.admin_pw,
                 "--to", str(to))


def one_line_failure(p):
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def admin_conn(srv):
    c = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    assert_result(c, "success")
    return c


def setup_subtree(srv):
    c = admin_conn(srv)
    add_ok(c, SUB, {"objectClass": "organizationalUnit", "ou": "bk"})
    add_ok(c, COUNTER, {"objectClass": "person", "sn": "c", "description": "0"})
    return c


def step(i):
    """Write i of the sequence: ("add", i) or ("set", i)."""
    return ("add", i) if i % ADD_EVERY == 0 else ("set", i)


def state_after(k):
    """The subtree's (counter, added entries) after the first k writes."""
    counter, added = 0, set()
    for i in range(1, k + 1):
        kind, n = step(i)
        if kind == "add":
            added.add(n)
        else:
            counter = n
    return counter, added


def read_state(srv):
    c = admin_conn(srv)
    _, entries = ldaputil.search_entries(c, SUB, "(objectClass=person)", attrs=["description"])
    c.unbind()
    counter, added = None, set()
    for e in entries:
        dn = e["dn"].lower()
        if dn == COUNTER.lower():
            counter = int(e["raw_attributes"]["description"][0])
        else:
            added.add(int(re.match(r"cn=a(\d+),", dn).group(1)))
    return counter, added


class Writer(threading.Thread):
    """The sequential write load; `acked` is how many writes were acknowledged, `sent` how
    many were sent (at most one more)."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.conn = admin_conn(srv)
        self.acked = 0
        self.sent = 0
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                i = self.acked + 1
                kind, n = step(i)
                self.sent = i
                if kind == "add":
                    self.conn.add(f"cn=a{n},{SUB}", attributes={"objectClass": "person", "sn": "a"})
                else:
                    self.conn.modify(COUNTER, {"description": [(ldap3.MODIFY_REPLACE, [str(n)])]})
                assert_result(self.conn, "success")
                self.acked = i
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e


def test_backup_under_writes_restores_exactly_a_prefix(pytestconfig, workdir):
    root, servers = workdir
    live = new_server(pytestconfig, root, "live", servers)
    setup_subtree(live)
    # A backup before the load: its end LSN is the LSN the write sequence starts after.
    p = backup(pytestconfig, live, root / "before")
    assert p.returncode == 0, p.stderr
    base_lsn = int(SUMMARY.match(p.stdout).group(2))
    writer = Writer(live)
    writer.start()
    while writer.acked < WRITES_BEFORE and writer.error is None:
        time.sleep(0.005)
    acked_before = writer.acked
    to = root / "backup"
    p = backup(pytestconfig, live, to)
    time.sleep(WRITE_AFTER_S)
    writer.stop.set()
    writer.join(10)
    assert writer.error is None, writer.error
    assert p.returncode == 0, p.stderr
    m = SUMMARY.match(p.stdout.strip())
    assert m and len(p.stdout.strip().splitlines()) == 1, p.stdout
    assert (to / "MANIFEST").is_file()
    assert writer.acked > acked_before, "the writes went on during the backup"
    sent = writer.sent
    assert live.stop() == 0

    restored_dir = root / "restored"
    restored_dir.mkdir()
    r = larch(pytestconfig, "restore", "--from", str(to), "--data", str(restored_dir / "data"))
    assert r.returncode == 0, r.stderr
    again = conftest.LdapServer("larch", restored_dir, larch_bin=pytestconfig.getoption("--larch-bin"))
    servers.append(again)
    again.start()
    found = read_state(again)
    # Each write changes the state, so at most one prefix matches: the one of the end LSN.
    prefixes = [k for k in range(sent + 1) if state_after(k) == found]
    assert prefixes == [int(m.group(2)) - base_lsn], (found, prefixes, m.group(0), base_lsn)
    assert prefixes[0] >= acked_before, (prefixes, acked_before)
    assert again.stop() == 0

    # A damaged copy is refused, naming the file; nothing is written.
    damaged = root / "damaged"
    shutil.copytree(to, damaged)
    snap = next((damaged / "snapshots").glob("snapshot-*.snap"))
    data = bytearray(snap.read_bytes())
    data[len(data) // 2] ^= 0x40
    snap.write_bytes(bytes(data))
    line = one_line_failure(larch(pytestconfig, "restore", "--from", str(damaged), "--data",
                                  str(root / "never")))
    assert str(snap) in line and "CRC32C" in line, line
    assert not (root / "never").exists()


def test_backup_refusals(pytestconfig, workdir):
    root, servers = workdir
    srv = new_server(pytestconfig, root, "refusals", servers)
    c = setup_subtree(srv)
    user = f"cn=user,{SUB}"
    add_ok(c, user, {"objectClass": "person", "sn": "u", "userPassword": "user-secret"})
    line = one_line_failure(backup(pytestconfig, srv, root / "b1", dn=user, pw="user-secret"))
    assert "insufficientAccessRights" in line, line
    assert not (root / "b1").exists()
    # The same refusal through a plain LDAP client.
    uc = ldaputil.connect(srv, user, "user-secret")
    uc.extended("2.25.268705614682925665270291760309126455850.1.1", b"\x30\x04\x80\x02/x")
    assert uc.result["result"] == 50, uc.result
    uc.unbind()
    line = one_line_failure(backup(pytestconfig, srv, root / "b2", pw="wrong"))
    assert "invalidCredentials" in line, line
    busy = root / "busy"
    busy.mkdir()
    (busy / "something").write_text("x")
    line = one_line_failure(backup(pytestconfig, srv, busy))
    assert "unwillingToPerform" in line and "not empty" in line, line
    line = one_line_failure(backup(pytestconfig, srv, "relative/dir"))
    assert "unwillingToPerform" in line and "absolute" in line, line
    # The backup OID is published.
    c.search("", "(objectClass=*)", search_scope=ldap3.BASE, attributes=["supportedExtension"])
    exts = c.response[0]["raw_attributes"]["supportedExtension"]
    assert b"2.25.268705614682925665270291760309126455850.1.1" in exts
    c.unbind()


def test_kill9_during_a_backup(pytestconfig, workdir):
    root, servers = workdir
    srv = new_server(pytestconfig, root, "killed", servers)
    c = setup_subtree(srv)
    filler = "".join(
        ldaputil.ldif_entry(f"cn=f{i},{SUB}", {"objectClass": "person", "sn": "f",
                                               "description": (f"{i:06x}" * FILLER_BYTES)[:FILLER_BYTES]})
        for i in range(FILLER_ENTRIES))
    ldaputil.ldapadd_ok(srv, filler)
    acked = []
    for attempt in range(KILL_ATTEMPTS):
        for i in range(5):
            dn = f"cn=k{attempt}-{i},{SUB}"
            add_ok(c, dn, {"objectClass": "person", "sn": "k"})
            acked.append(dn)
        to = root / f"partial{attempt}"
        proc = subprocess.Popen([pytestconfig.getoption("--larch-bin"), "backup", "-H", srv.url, "-D",
                                 srv.admin_dn, "-w", srv.admin_pw, "--to", str(to)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not (to / "snapshots").is_dir() and time.monotonic() < deadline:
            time.sleep(0.0005)
        srv.kill9()
        proc.wait(10)
        landed = not (to / "MANIFEST").exists()
        srv.start()
        c = admin_conn(srv)
        _, entries = ldaputil.search_entries(c, SUB, "(cn=k*)", attrs=["1.1"])
        assert {e["dn"].lower() for e in entries} == {d.lower() for d in acked}
        if landed:
            line = one_line_failure(larch(pytestconfig, "restore", "--from", str(to), "--data",
                                          str(root / "never")))
            assert "MANIFEST" in line and "incomplete" in line, line
            assert not (root / "never").exists()
            break
    else:
        pytest.fail(f"the kill never landed during a backup in {KILL_ATTEMPTS} attempts")
    c.unbind()
    # The restarted server still takes a backup.
    p = backup(pytestconfig, srv, root / "after")
    assert p.returncode == 0, p.stderr
    assert srv.stop() == 0
