"""The server as an RFC 4533 content-synchronization provider, followed by real OpenLDAP
slapd consumers (Debian's package, back-mdb, `syncrepl` directive), and by python-ldap's
syncrepl client for what a consumer cannot show (deletes sent as a delta, a present phase).

Against slapd the provider is slapd itself with the syncprov overlay and a session log,
so every test also shows that slapd-to-slapd replication behaves the same.

After each phase the consumer must hold exactly what the provider holds: every entry, its
user attributes, and the operational attributes a replica must keep (entryUUID,
entryCSN, createTimestamp, modifyTimestamp, creatorsName, modifiersName, memberOf).
"""

import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import ldap
import ldap.syncrepl
import ldap3
import pytest

import conftest
import ldapwire
from ldaputil import add_ok, assert_result, connect, delete_tree
from test_syncrepl_consumer import differences

SLAPD_GLOBAL = "moduleload syncprov"
SLAPD_DB = "overlay syncprov\nsyncprov-sessionlog 1000\nsyncprov-checkpoint 100 1\nindex entryCSN,entryUUID eq"
# Operational attributes a replica stores as its provider has them.
KEPT_OPERATIONAL = ("entryuuid", "entrycsn", "createtimestamp", "modifytimestamp", "creatorsname",
                    "modifiersname", "memberof")
# How long a consumer may take to converge after a change.
CONVERGE_S = 60.0
# Kill cycles of the provider under write load; SYNC_KILL_CYCLES for the long form.
KILL_CYCLES = int(os.environ.get("SYNC_KILL_CYCLES", "3"))


@pytest.fixture(scope="module")
def provider(request):
    yield from conftest.module_server(request, "larch-e2e-syncprov-", slapd_extra_global=SLAPD_GLOBAL,
                                      slapd_extra_db=SLAPD_DB)


class SlapdConsumer:
    """A slapd replica of the provider's whole suffix, on a port of its own, with an empty
    database to begin with; stopped by its PID."""

    def __init__(self, provider, kind="refreshAndPersist", rid=1):
        self.provider = provider
        self.workdir = Path(tempfile.mkdtemp(prefix="larch-e2e-consumer-"))
        (self.workdir / "mdb").mkdir()
        self.port = conftest.free_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        self.proc = None
        interval = ' interval=00:00:00:01' if kind == "refreshOnly" else ""
        (self.workdir / "slapd.conf").write_text(f"""{conftest.SLAPD_PREAMBLE}
moduleload memberof
pidfile {self.workdir}/slapd.pid
argsfile {self.workdir}/slapd.args
loglevel sync

database mdb
maxsize 1073741824
suffix "{conftest.BASE}"
rootdn "cn=replica-admin,{conftest.BASE}"
rootpw replica-secret
directory {self.workdir}/mdb
index objectClass eq
index entryCSN,entryUUID eq
syncrepl rid={rid:03d}
  provider={provider.url}
  bindmethod=simple
  binddn="{provider.admin_dn}"
  credentials="{provider.admin_pw}"
  searchbase="{conftest.BASE}"
  type={kind}{interval}
  retry="1 +"
  timeout=5
  attrs="*,+"
  schemachecking=off
""")

    def start(self):
        err = open(self.workdir / "slapd.stderr", "ab")
        self.proc = subprocess.Popen(
            ["/usr/sbin/slapd", "-d", "sync", "-f", str(self.workdir / "slapd.conf"), "-h", self.url + "/"],
            stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        err.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"slapd consumer exited: {self.stderr_tail()}"
            try:
                c = ldap3.Connection(ldap3.Server("127.0.0.1", port=self.port), auto_bind=True)
                c.unbind()
                return
            except ldap3.core.exceptions.LDAPException:
                time.sleep(0.05)
        raise RuntimeError(f"slapd consumer did not start: {self.stderr_tail()}")

    def stop(self):
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def stderr_tail(self):
        try:
            return (self.workdir / "slapd.stderr").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def connection(self):
        return ldap3.Connection(ldap3.Server("127.0.0.1", port=self.port), f"cn=replica-admin,{conftest.BASE}",
                                "replica-secret", auto_bind=True, raise_exceptions=False)

    def close(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture
def consumers(provider):
    made = []

    def make(**kw):
        c = SlapdConsumer(provider, **kw)
        made.append(c)
        c.start()
        return c

    yield make
    for c in made:
        c.close()


def dump(conn):
    """{normalized DN: (normalized DN, {attribute: sorted values})} of everything below the
    suffix that a replica must hold (the shape test_syncrepl_consumer's `differences`
    compares)."""
    conn.search(conftest.BASE, "(objectClass=*)", ldap3.SUBTREE, attributes=["*", "+"])
    out = {}
    for e in conn.response or []:
        if e.get("type") != "searchResEntry":
            continue
        attrs = {}
        for name, vals in e["raw_attributes"].items():
            key = name.lower()
            if key in KEPT_OPERATIONAL or not is_operational(key):
                attrs[key] = sorted(v.lower() if key in ("memberof",) else v for v in vals)
        out[e["dn"].lower()] = (e["dn"].lower(), attrs)
    return out


OPERATIONAL = {"structuralobjectclass", "entrydn", "subschemasubentry", "hassubordinates",
               "numsubordinates", "contextcsn", "transitivememberof", "pwdchangedtime",
               "pwdhistory", "pwdfailuretime", "pwdaccountlockedtime", "pwdreset"}


def is_operational(name):
    return name in OPERATIONAL or name in KEPT_OPERATIONAL


def provider_dump(provider):
    conn = connect(provider, provider.admin_dn, provider.admin_pw)
    try:
        return dump(conn)
    finally:
        conn.unbind()


def consumer_dump(consumer):
    conn = consumer.connection()
    try:
        return dump(conn)
    finally:
        conn.unbind()


def assert_converges(provider, consumer, timeout=CONVERGE_S):
    """Waits until the consumer holds exactly what the provider holds."""
    deadline = time.monotonic() + timeout
    while True:
        want = provider_dump(provider)
        got = consumer_dump(consumer)
        if want == got:
            return want
        if time.monotonic() > deadline:
            raise AssertionError(f"the consumer did not converge in {timeout}s: {len(want)} entries on the "
                                 f"provider, {len(got)} on the consumer; {'; '.join(differences(want, got))}\n"
                                 f"consumer stderr:\n{consumer.stderr_tail()}")
        time.sleep(0.2)


_counter = [0]


@pytest.fixture
def tree(provider):
    """(admin connection, a fresh subtree with people and groups below it)."""
    _counter[0] += 1
    conn = connect(provider, provider.admin_dn, provider.admin_pw)
    top = f"ou=s{_counter[0]},{conftest.BASE}"
    add_ok(conn, top, {"objectClass": ["organizationalUnit"], "ou": f"s{_counter[0]}"})
    yield conn, top
    if provider.alive():
        conn = connect(provider, provider.admin_dn, provider.admin_pw)
        delete_tree(conn, top)
        conn.unbind()


def populate(conn, top, people=100, groups=5):
    add_ok(conn, f"ou=people,{top}", {"objectClass": ["organizationalUnit"], "ou": "people"})
    add_ok(conn, f"ou=groups,{top}", {"objectClass": ["organizationalUnit"], "ou": "groups"})
    users = []
    for i in range(people):
        dn = f"uid=u{i},ou=people,{top}"
        add_ok(conn, dn, {"objectClass": ["inetOrgPerson"], "uid": f"u{i}", "cn": f"User {i}", "sn": f"S{i}",
                          "mail": f"u{i}@example.com"})
        users.append(dn)
    for g in range(groups):
        add_ok(conn, f"cn=g{g},ou=groups,{top}",
               {"objectClass": ["groupOfNames"], "cn": f"g{g}", "member": users[g::groups][:10]})
    return users


def test_refresh_and_persist_follows_every_kind_of_change(provider, consumers, tree):
    conn, top = tree
    users = populate(conn, top)
    consumer = consumers()
    assert_converges(provider, consumer)
    # Modifies, adds, deletes.
    conn.modify(users[0], {"cn": [(ldap3.MODIFY_REPLACE, ["Renamed Zero"])]})
    assert_result(conn, "success")
    conn.modify(f"cn=g0,ou=groups,{top}", {"member": [(ldap3.MODIFY_ADD, [users[1]])]})
    assert_result(conn, "success")
    add_ok(conn, f"uid=new,ou=people,{top}", {"objectClass": ["inetOrgPerson"], "uid": "new", "cn": "N",
                                              "sn": "N"})
    conn.delete(users[2])
    assert_result(conn, "success")
    assert_converges(provider, consumer)
    # A rename, and a subtree moved under another parent.
    conn.modify_dn(users[3], "uid=u3renamed")
    assert_result(conn, "success")
    add_ok(conn, f"ou=moved,{top}", {"objectClass": ["organizationalUnit"], "ou": "moved"})
    conn.modify_dn(f"ou=groups,{top}", "ou=groups", new_superior=f"ou=moved,{top}")
    assert_result(conn, "success")
    assert_converges(provider, consumer)


def test_refresh_only_polls(provider, consumers, tree):
    conn, top = tree
    users = populate(conn, top, people=30, groups=2)
    consumer = consumers(kind="refreshOnly", rid=2)
    assert_converges(provider, consumer)
    conn.modify(users[5], {"description": [(ldap3.MODIFY_ADD, ["polled"])]})
    conn.delete(users[6])
    assert_result(conn, "success")
    assert_converges(provider, consumer)


def test_a_returning_consumer_gets_what_it_missed_deletes_included(provider, consumers, tree):
    conn, top = tree
    users = populate(conn, top, people=40, groups=2)
    consumer = consumers(rid=3)
    assert_converges(provider, consumer)
    consumer.stop()
    for dn in users[:10]:
        conn.delete(dn)
        assert_result(conn, "success")
    conn.modify(users[20], {"sn": [(ldap3.MODIFY_REPLACE, ["Changed"])]})
    consumer.start()
    assert_converges(provider, consumer)


def test_a_cookie_older_than_the_session_log_gets_a_present_phase(provider, consumers, tree):
    """The provider restarts (its session log starts empty): a consumer that was away
    while entries were deleted gets a present phase, which removes them."""
    conn, top = tree
    users = populate(conn, top, people=40, groups=2)
    consumer = consumers(rid=4)
    assert_converges(provider, consumer)
    consumer.stop()
    conn.unbind()
    provider.restart()
    conn = connect(provider, provider.admin_dn, provider.admin_pw)
    for dn in users[10:20]:
        conn.delete(dn)
        assert_result(conn, "success")
    conn.unbind()
    consumer.start()
    assert_converges(provider, consumer)


def test_kill_9_of_the_provider_under_writes(provider, consumers, tree):
    """Writes go on while the provider is killed with SIGKILL and restarted; the consumer
    converges to exactly the provider's state after each cycle."""
    conn, top = tree
    users = populate(conn, top, people=50, groups=3)
    conn.unbind()
    consumer = consumers(rid=5)
    assert_converges(provider, consumer)
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    for cycle in range(KILL_CYCLES):
        stop = threading.Event()

        def load():
            n = 0
            while not stop.is_set():
                try:
                    c = connect(provider, provider.admin_dn, provider.admin_pw)
                except Exception:  # noqa: BLE001 - the provider is down for a moment
                    time.sleep(0.05)
                    continue
                try:
                    while not stop.is_set():
                        n += 1
                        dn = rnd.choice(users)
                        c.modify(dn, {"description": [(ldap3.MODIFY_REPLACE, [f"c{cycle}-{n}"])]})
                        if c.result.get("result") not in (0, None):
                            break
                except Exception:  # noqa: BLE001 - killed under the client
                    pass
                finally:
                    try:
                        c.unbind()
                    except Exception:  # noqa: BLE001
                        pass

        t = threading.Thread(target=load)
        t.start()
        time.sleep(rnd.uniform(0.3, 1.5))
        provider.kill9_and_restart()
        time.sleep(0.3)
        stop.set()
        t.join()
        assert_converges(provider, consumer), f"cycle {cycle}, seed {seed}"


# ---------------------------------------------------------------------------------------
# The protocol, read by python-ldap's syncrepl client.


class Follower(ldap.ldapobject.ReconnectLDAPObject, ldap.syncrepl.SyncreplConsumer):
    """A syncrepl client that records what the provider sends."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.cookie = None
        self.entries = {}
        self.deleted = []
        self.present = []
        self.refresh_done = False

    def syncrepl_get_cookie(self):
        return self.cookie

    def syncrepl_set_cookie(self, cookie):
        self.cookie = cookie

    def syncrepl_entry(self, dn, attributes, uuid):
        self.entries[uuid] = (dn, attributes)

    def syncrepl_delete(self, uuids):
        self.deleted.extend(uuids)

    def syncrepl_present(self, uuids, refreshDeletes=False):
        if uuids is not None:
            self.present.extend(uuids)

    def syncrepl_refreshdone(self):
        self.refresh_done = True


def follow(provider, base, cookie=None, mode="refreshOnly"):
    f = Follower(provider.url)
    f.simple_bind_s(provider.admin_dn, provider.admin_pw)
    f.cookie = cookie
    msgid = f.syncrepl_search(base, ldap.SCOPE_SUBTREE, mode=mode, filterstr="(objectClass=*)")
    if mode == "refreshOnly":
        while f.syncrepl_poll(msgid=msgid, all=1, timeout=30):
            pass
    return f, msgid


def test_a_recent_cookie_gets_only_the_delta(provider, tree):
    conn, top = tree
    users = populate(conn, top, people=20, groups=1)
    first, _ = follow(provider, top)
    assert len(first.entries) == 20 + 1 + 3
    cookie = first.cookie
    conn.delete(users[0])
    conn.modify(users[1], {"sn": [(ldap3.MODIFY_REPLACE, ["Delta"])]})
    assert_result(conn, "success")
    second, _ = follow(provider, top, cookie=cookie)
    changed = {dn.lower() for dn, _ in second.entries.values()}
    # The modified entry, and the group whose member list lost the deleted user.
    assert users[1].lower() in changed
    assert len(changed) <= 3, changed
    assert len(second.deleted) == 1
    assert second.cookie != cookie


def test_persist_sends_changes_as_they_commit(provider, tree):
    conn, top = tree
    populate(conn, top, people=5, groups=1)
    f, msgid = follow(provider, top, mode="refreshAndPersist")
    deadline = time.monotonic() + 10
    while not f.refresh_done and time.monotonic() < deadline:
        f.syncrepl_poll(msgid=msgid, timeout=1)
    assert f.refresh_done
    add_ok(conn, f"uid=live,ou=people,{top}", {"objectClass": ["inetOrgPerson"], "uid": "live", "cn": "L",
                                               "sn": "L"})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        f.syncrepl_poll(msgid=msgid, timeout=0.5)
        if any(dn.lower().startswith("uid=live,") for dn, _ in f.entries.values()):
            break
    assert any(dn.lower().startswith("uid=live,") for dn, _ in f.entries.values())
    if provider.kind == "larch":
        # cn=Monitor counts the live persistent search, and the session log holds changes.
        assert monitor_counter(provider, "cn=Persistent Searches,cn=Sync Provider,cn=Monitor") >= 1
        assert monitor_counter(provider, "cn=Session Log,cn=Sync Provider,cn=Monitor") >= 1
    f.abandon(msgid)
    f.unbind_s()
    if provider.kind == "larch":
        deadline = time.monotonic() + 10
        while monitor_counter(provider, "cn=Persistent Searches,cn=Sync Provider,cn=Monitor") > 0:
            assert time.monotonic() < deadline, "the abandoned persistent search is still counted"
            time.sleep(0.1)


def monitor_counter(srv, dn):
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    try:
        conn.search(dn, "(objectClass=*)", ldap3.BASE, attributes=["monitorCounter"])
        assert_result(conn, "success")
        return int(conn.response[0]["raw_attributes"]["monitorCounter"][0])
    finally:
        conn.unbind()


def test_a_cookie_that_does_not_parse_gets_a_full_refresh(provider, tree):
    conn, top = tree
    populate(conn, top, people=3, groups=1)
    f, _ = follow(provider, top, cookie="rid=001,csn=not-a-csn")
    assert len(f.entries) == 3 + 1 + 3
    assert f.cookie and "csn=" in f.cookie
    f.unbind_s()


def test_a_consumer_sees_only_what_it_may_read(provider, tree):
    """Access control applies to a synchronization: a user following the tree gets no
    other user's password."""
    conn, top = tree
    add_ok(conn, f"ou=people,{top}", {"objectClass": ["organizationalUnit"], "ou": "people"})
    for name in ("reader", "other"):
        add_ok(conn, f"uid={name},ou=people,{top}", {"objectClass": ["inetOrgPerson"], "uid": name, "cn": name,
                                                     "sn": name, "userPassword": f"{name}-Secret-1"})
    f = Follower(provider.url)
    f.simple_bind_s(f"uid=reader,ou=people,{top}", "reader-Secret-1")
    msgid = f.syncrepl_search(top, ldap.SCOPE_SUBTREE, mode="refreshOnly", attrlist=["*", "+"])
    while f.syncrepl_poll(msgid=msgid, all=1, timeout=30):
        pass
    by_dn = {dn.lower(): attrs for dn, attrs in f.entries.values()}
    other = by_dn[f"uid=other,ou=people,{top}".lower()]
    assert "userPassword" not in other and "sn" in other
    f.unbind_s()


STALLED_WRITES = 300
STALLED_DESCRIPTION = 20000


def test_a_consumer_that_stops_reading_holds_up_nobody(provider, tree):
    """A persistent search whose client never reads: the writes it would be sent go on at
    full speed, and other clients are answered at once."""
    conn, top = tree
    users = populate(conn, top, people=10, groups=1)
    stalled = ldapwire.RawConnection(provider.host, provider.port, rcvbuf=4096)
    answer = stalled.request(1, ldapwire.bind_simple(provider.admin_dn, provider.admin_pw))
    assert answer[-1].code == 0
    # Sync Request: refreshAndPersist, no cookie.
    sync = ldapwire.control("1.3.6.1.4.1.4203.1.9.1.1", True, ldapwire.seq(ldapwire.enum(3)))
    stalled.send(ldapwire.message(2, ldapwire.search(top, attrs=("*",)), [sync]))
    started = time.monotonic()
    for i in range(STALLED_WRITES):
        conn.modify(users[i % len(users)],
                    {"description": [(ldap3.MODIFY_REPLACE, [f"{i:06d}" * (STALLED_DESCRIPTION // 6)])]})
        assert_result(conn, "success")
    writing = time.monotonic() - started
    other = connect(provider, provider.admin_dn, provider.admin_pw)
    t0 = time.monotonic()
    other.search(top, "(uid=u1)", ldap3.SUBTREE, attributes=["cn"])
    assert_result(other, "success")
    assert time.monotonic() - t0 < 2.0
    other.unbind()
    # Far more was committed for the stalled consumer than its socket holds.
    assert STALLED_WRITES * STALLED_DESCRIPTION > 20 * 4096
    assert writing < 60, f"{STALLED_WRITES} writes took {writing:.1f}s with a stalled consumer"
    if provider.kind == "larch":
        # The provider shows how far behind the stalled search is.
        time.sleep(0.3)
        searches = provider_searches(provider)
        assert len(searches) == 1, searches
        lag = searches[0]
        assert lag["state"] == "persisting" and int(lag["lag changes"]) > 0 and float(lag["lag seconds"]) > 0, lag
    stalled.close()


def monitor_values(srv, base):
    """{lowercased cn: monitoredInfo or monitorCounter} of the entries right below `base`."""
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    try:
        conn.search(base, "(objectClass=*)", ldap3.LEVEL, attributes=["cn", "monitoredInfo", "monitorCounter"])
        assert_result(conn, "success")
        out = {}
        for e in conn.response:
            raw = e["raw_attributes"]
            value = raw.get("monitoredInfo") or raw.get("monitorCounter")
            out[raw["cn"][0].decode().lower()] = value[0].decode() if value else None
        return out
    finally:
        conn.unbind()


def provider_searches(provider):
    """The provider's refreshAndPersist searches as cn=Monitor shows them."""
    conn = connect(provider, provider.admin_dn, provider.admin_pw)
    try:
        conn.search("cn=Sync Provider,cn=Monitor", "(cn=Search *)", ldap3.LEVEL, attributes=["cn"])
        assert_result(conn, "success")
        dns = [e["dn"] for e in conn.response]
    finally:
        conn.unbind()
    return [monitor_values(provider, dn) for dn in dns]


def test_shutdown_ends_persistent_searches(provider, tree):
    """A persistent search does not hold up a shutdown: the server stops at once, and its
    consumer is told why (`unavailable`, 52; slapd just closes the connection)."""
    conn, top = tree
    populate(conn, top, people=3, groups=1)
    conn.unbind()
    f, msgid = follow(provider, top, mode="refreshAndPersist")
    deadline = time.monotonic() + 10
    while not f.refresh_done and time.monotonic() < deadline:
        f.syncrepl_poll(msgid=msgid, timeout=1)
    assert f.refresh_done
    started = time.monotonic()
    provider.restart()
    assert time.monotonic() - started < 8, "the shutdown waited for the persistent search"
    ended = None
    try:
        while f.syncrepl_poll(msgid=msgid, timeout=5):
            pass
    except (ldap.UNAVAILABLE, ldap.SERVER_DOWN) as e:
        ended = e
    assert ended is not None
    if provider.kind == "larch":
        assert isinstance(ended, ldap.UNAVAILABLE), ended
