"""Larch as an RFC 4533 (syncrepl) consumer of a real OpenLDAP provider.

Each test starts its own slapd provider (back-mdb with the syncprov overlay and a session
log of 100 changes) and a Larch consumer replicating its whole suffix, on loopback ports it
picks, and stops both by PID. After each phase both servers are searched with `*` and the
operational attributes syncrepl must carry, and every entry is compared: DN, user
attributes, entryUUID, entryCSN, createTimestamp, modifyTimestamp, creatorsName,
modifiersName.

Phases: the initial refresh of a few hundred entries; refreshAndPersist with adds,
modifies, deletes, a rename and a move of an entry with children; deletes while the
consumer is stopped, a few (the provider's session log answers with a delete phase) and
many (beyond the session log: a present phase); refreshOnly polling; kill -9 of the
consumer under a write load on the provider, cycle after cycle (3 cycles;
LARCH_SYNCREPL_CYCLES=N, or the reliability suites' long form, for more); a client write
to the replica, answered with referral (10) and the provider's URL; the same over StartTLS
with a client certificate the provider demands.

These tests need a Larch consumer: they are skipped with `--server slapd`.
"""

import os
import random
import shutil
import tempfile
import threading
import time
import urllib.request

import ldap3
import pytest

import conftest
import ldaputil
import ldapwire

pytestmark = pytest.mark.larch_only("Larch as a syncrepl consumer of slapd")

BASE = conftest.BASE
# How long both servers may take to agree after a phase.
CONVERGE_DEADLINE_S = 90.0
# The operational attributes a replica must carry exactly.
OPERATIONAL = ["entryUUID", "entryCSN", "createTimestamp", "modifyTimestamp", "creatorsName", "modifiersName"]
# Entries loaded before the consumer's first start.
INITIAL_ENTRIES = 300
RID = 7


def cycles():
    n = os.environ.get("LARCH_SYNCREPL_CYCLES")
    if n:
        return int(n)
    return 20 if conftest.reliability_long() else 3


class Pair:
    """A slapd provider and a Larch consumer of it, on private directories."""

    def __init__(self, larch_bin, mode="refreshAndPersist", interval="1s", pki=None, extra=""):
        self.tmp = tempfile.mkdtemp(prefix="larch-e2e-syncrepl-")
        os.mkdir(os.path.join(self.tmp, "provider"))
        os.mkdir(os.path.join(self.tmp, "consumer"))
        tls_global = ""
        tls_toml = ""
        if pki is not None:
            # StartTLS, and the provider demands a client certificate: the consumer's
            # handshake only succeeds with client_cert and client_key.
            cert, key = pki.server
            tls_global = (f"\nTLSCACertificateFile {pki.ca}\nTLSCertificateFile {cert}\n"
                          f"TLSCertificateKeyFile {key}\nTLSVerifyClient demand\n")
            ccert, ckey = pki.admin
            tls_toml = f'starttls = true\nca_file = "{pki.ca}"\nclient_cert = "{ccert}"\nclient_key = "{ckey}"\n'
        self.provider = conftest.LdapServer(
            "slapd", os.path.join(self.tmp, "provider"),
            slapd_extra_global="moduleload syncprov" + tls_global,
            slapd_extra_db="index entryCSN,entryUUID eq\noverlay syncprov\nsyncprov-checkpoint 100 1\n"
                           "syncprov-sessionlog 100\n")
        self.metrics_port = conftest.free_port()
        toml = f"""
[metrics]
listen = "127.0.0.1:{self.metrics_port}"

[[replication]]
rid = {RID}
provider = "{self.provider.url}"
bind_dn = "{conftest.ADMIN_DN}"
credentials = "{conftest.ADMIN_PW}"
base = "{BASE}"
mode = "{mode}"
interval = "{interval}"
retry = "1s +"
{tls_toml}{extra}"""
        self.consumer = conftest.LdapServer("larch", os.path.join(self.tmp, "consumer"), larch_bin=larch_bin,
                                            larch_extra_toml=toml)

    def close(self):
        statuses = []
        for srv in (self.consumer, self.provider):
            if srv.alive():
                statuses.append((srv.kind, srv.stop(), srv.stderr_tail()))
        shutil.rmtree(self.tmp, ignore_errors=True)
        for kind, status, stderr in statuses:
            assert status == 0, f"{kind} exited with status {status}; stderr:\n{stderr}"

    def admin(self, srv):
        conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
        ldaputil.assert_result(conn, "success")
        return conn

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            return r.read().decode()


@pytest.fixture
def pair(request):
    made = []

    def factory(**kw):
        p = Pair(request.config.getoption("--larch-bin"), **kw)
        made.append(p)
        return p

    yield factory
    for p in made:
        p.close()


def metric_state(text):
    """The state whose `larch_replication_state` sample is 1 (exactly one must be)."""
    on = [line.split('state="')[1].split('"')[0] for line in text.splitlines()
          if line.startswith(f'larch_replication_state{{rid="{RID}",') and line.endswith(" 1")]
    assert len(on) == 1, text
    return on[0]


def metric_changes(text):
    """`larch_replication_changes_applied_total` of the consumer."""
    for line in text.splitlines():
        if line.startswith(f'larch_replication_changes_applied_total{{rid="{RID}"}} '):
            return int(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no changes counter in:\n{text}")


def contents(srv):
    """Every entry of the suffix: {lowercased DN: (DN, {lowercased attribute: sorted values})}.
    Searched as the administrator with paging, so no size limit applies."""
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    try:
        entries = conn.extend.standard.paged_search(BASE, "(objectClass=*)", search_scope=ldap3.SUBTREE,
                                                    attributes=["*"] + OPERATIONAL, paged_size=200,
                                                    generator=False)
        out = {}
        for e in entries or []:
            if e.get("type") != "searchResEntry":
                continue
            attrs = {k.lower(): sorted(v) for k, v in e["raw_attributes"].items() if v}
            out[e["dn"].lower()] = (e["dn"], attrs)
        return out
    finally:
        conn.unbind()


def differences(a, b):
    """What differs between two `contents` (empty when equal), at most 10 lines."""
    out = []
    for dn in sorted(set(a) | set(b)):
        if dn not in b:
            out.append(f"only on the provider: {dn}")
        elif dn not in a:
            out.append(f"only on the consumer: {dn}")
        elif a[dn] != b[dn]:
            da, aa = a[dn]
            db, ab = b[dn]
            if da != db:
                out.append(f"DN written {da!r} vs {db!r}")
            for k in sorted(set(aa) | set(ab)):
                if aa.get(k) != ab.get(k):
                    out.append(f"{dn} {k}: provider {aa.get(k)} consumer {ab.get(k)}")
    return out[:10]


def assert_converges(p, deadline=CONVERGE_DEADLINE_S):
    """Waits until the consumer holds exactly the provider's entries; returns their count."""
    end = time.monotonic() + deadline
    last = None
    while time.monotonic() < end:
        want = contents(p.provider)
        got = contents(p.consumer)
        last = differences(want, got)
        if not last:
            for e in want.values():
                assert all(x.lower() in e[1] for x in OPERATIONAL), f"{e[0]} lacks operational attributes"
            return len(want)
        time.sleep(0.3)
    raise AssertionError("the consumer did not converge:\n" + "\n".join(last) +
                         f"\nconsumer stderr:\n{p.consumer.stderr_tail()}")


def person(i, prefix="p"):
    return ldaputil.ldif_entry(f"cn={prefix}{i:05d},ou=people,{BASE}", {
        "objectClass": "inetOrgPerson", "cn": f"{prefix}{i:05d}", "sn": f"s{i % 13}",
        "mail": f"{prefix}{i}@example.com", "description": f"entry {i}"})


def load_initial(p):
    ldif = ldaputil.ldif_entry(f"ou=people,{BASE}", {"objectClass": "organizationalUnit", "ou": "people"})
    ldif += ldaputil.ldif_entry(f"ou=groups,{BASE}", {"objectClass": "organizationalUnit", "ou": "groups"})
    ldif += "".join(person(i) for i in range(INITIAL_ENTRIES))
    ldaputil.ldapadd_ok(p.provider, ldif)


def start_pair(p):
    p.provider.start()
    load_initial(p)
    p.consumer.start()


def test_refresh_persist_renames_moves_and_deletes_while_stopped(pair):
    p = pair()
    start_pair(p)
    n = assert_converges(p)
    assert n >= INITIAL_ENTRIES + 4

    # refreshAndPersist: adds, modifies, deletes, a rename, a move of an entry with children.
    c = p.admin(p.provider)
    ldaputil.add_ok(c, f"ou=dept,ou=groups,{BASE}", {"objectClass": "organizationalUnit", "ou": "dept"})
    for i in range(5):
        ldaputil.add_ok(c, f"cn=m{i},ou=dept,ou=groups,{BASE}",
                        {"objectClass": "person", "cn": f"m{i}", "sn": "member"})
    for i in range(10):
        c.modify(f"cn=p{i:05d},ou=people,{BASE}", {"description": [(ldap3.MODIFY_REPLACE, [f"changed {i}"])],
                                                  "telephoneNumber": [(ldap3.MODIFY_ADD, [f"+1 555 {i:04d}"])]})
        ldaputil.assert_result(c, "success")
    for i in range(10, 20):
        c.delete(f"cn=p{i:05d},ou=people,{BASE}")
        ldaputil.assert_result(c, "success")
    c.modify_dn(f"cn=p00020,ou=people,{BASE}", "cn=renamed20", delete_old_dn=True)
    ldaputil.assert_result(c, "success")
    c.modify_dn(f"ou=dept,ou=groups,{BASE}", "ou=dept2", delete_old_dn=True, new_superior=f"ou=people,{BASE}")
    ldaputil.assert_result(c, "success")
    assert_converges(p)
    metrics = p.metrics()
    assert metric_state(metrics) == "persisting", metrics
    # The initial refresh and the changes since (the suffix and admin entries replaced too).
    assert metric_changes(metrics) >= INITIAL_ENTRIES + 30, metrics
    # cn=Monitor shows the consumer too.
    m = p.admin(p.consumer)
    _, entries = ldaputil.search_entries(m, f"cn=State,cn=Consumer {RID},cn=Replication,cn=Monitor",
                                         scope=ldap3.BASE, attrs=["monitoredInfo"])
    assert [ldaputil.values(e, "monitoredInfo") for e in entries] == [["persisting"]], entries
    _, entries = ldaputil.search_entries(m, f"cn=Provider,cn=Consumer {RID},cn=Replication,cn=Monitor",
                                         scope=ldap3.BASE, attrs=["monitoredInfo"])
    assert [ldaputil.values(e, "monitoredInfo") for e in entries] == [[p.provider.url]], entries
    m.unbind()

    # A few deletes and changes while the consumer is stopped: the session log answers.
    assert p.consumer.stop() == 0
    for i in range(30, 35):
        c.delete(f"cn=p{i:05d},ou=people,{BASE}")
        ldaputil.assert_result(c, "success")
    ldaputil.add_ok(c, f"cn=new1,ou=people,{BASE}", {"objectClass": "person", "cn": "new1", "sn": "n"})
    p.consumer.start()
    assert_converges(p)

    # More deletes than the session log holds: a present phase removes them.
    assert p.consumer.stop() == 0
    for i in range(100, 240):
        c.delete(f"cn=p{i:05d},ou=people,{BASE}")
        ldaputil.assert_result(c, "success")
    c.modify(f"cn=p00050,ou=people,{BASE}", {"description": [(ldap3.MODIFY_REPLACE, ["while stopped"])]})
    p.consumer.start()
    assert_converges(p)
    c.unbind()


def test_a_client_write_to_the_replica_is_referred_to_the_provider(pair):
    p = pair()
    start_pair(p)
    assert_converges(p)
    # The administrator too: only the consumer writes the replicated subtree.
    r = p.admin(p.consumer)
    target = f"cn=client,ou=people,{BASE}"
    r.add(target, attributes={"objectClass": "person", "cn": "client", "sn": "c"})
    ldaputil.assert_result(r, "referral")
    assert r.result["referrals"] == [f"{p.provider.url}/{target}"], r.result
    for op in (lambda: r.delete(f"cn=p00001,ou=people,{BASE}"),
               lambda: r.modify(f"cn=p00001,ou=people,{BASE}", {"sn": [(ldap3.MODIFY_REPLACE, ["x"])]}),
               lambda: r.modify_dn(f"cn=p00001,ou=people,{BASE}", "cn=moved")):
        op()
        ldaputil.assert_result(r, "referral")
        assert r.result["referrals"][0].startswith(p.provider.url + "/cn=p00001,"), r.result
    # Password Modify too (sent raw: ldap3 cannot read an extended response with referrals).
    w = ldapwire.RawConnection(p.consumer.host, p.consumer.port)
    try:
        assert w.request(1, ldapwire.bind_simple(p.consumer.admin_dn, p.consumer.admin_pw))[-1].code == 0
        value = ldapwire.seq(ldapwire.octets(f"cn=p00002,ou=people,{BASE}", tag=0x80),
                             ldapwire.octets("changed-Pw-1", tag=0x82))
        answer = w.request(2, ldapwire.extended("1.3.6.1.4.1.4203.1.11.1", value))[-1]
        assert answer.code == ldaputil.code_of("referral"), answer
        assert answer.referrals and answer.referrals[0].startswith(p.provider.url + "/cn=p00002,"), answer.referrals
    finally:
        w.close()
    # Reads are served.
    _, entries = ldaputil.search_entries(r, f"cn=p00001,ou=people,{BASE}", scope=ldap3.BASE)
    assert len(entries) == 1
    r.unbind()
    assert_converges(p)


def test_a_replica_of_slapd_chains_writes_to_it(pair):
    """`writes = "chain"` against slapd: the write is made by slapd as the client (slapd
    lets its rootdn, the replication identity here, proxy within its database)."""
    p = pair(extra='writes = "chain"\n')
    start_pair(p)
    user = f"cn=chained-user,ou=people,{BASE}"
    admin_p = p.admin(p.provider)
    # Hashed as slapd would (a replica does not verify cleartext values by default).
    ldaputil.add_ok(admin_p, user, {"objectClass": "inetOrgPerson", "cn": "chained-user", "sn": "u",
                                    "userPassword": conftest.slapd_password_hash("Chained-Secret-1")})
    assert_converges(p)
    me = ldaputil.connect(p.consumer, user, "Chained-Secret-1")
    me.modify(user, {"userPassword": [(ldap3.MODIFY_REPLACE, ["Chained-Secret-2"])]})
    ldaputil.assert_result(me, "success")
    me.unbind()
    ldaputil.connect(p.provider, user, "Chained-Secret-2").unbind()
    admin_p.search(user, "(objectClass=*)", ldap3.BASE, attributes=["modifiersName"])
    assert admin_p.response[0]["raw_attributes"]["modifiersName"][0].lower() == user.lower().encode()
    # The administrator adds through the replica; slapd's errors come back with their codes.
    r = p.admin(p.consumer)
    ldaputil.add_ok(r, f"cn=via-replica,ou=people,{BASE}", {"objectClass": "person", "cn": "via-replica",
                                                            "sn": "r"})
    r.delete(f"cn=nobody,ou=nowhere,{BASE}")
    ldaputil.assert_result(r, "noSuchObject")
    r.unbind()
    admin_p.unbind()
    assert_converges(p)


def test_refresh_only_polls(pair):
    p = pair(mode="refreshOnly", interval="1s")
    start_pair(p)
    assert_converges(p)
    c = p.admin(p.provider)
    ldaputil.add_ok(c, f"cn=ro1,ou=people,{BASE}", {"objectClass": "person", "cn": "ro1", "sn": "r"})
    c.modify(f"cn=p00003,ou=people,{BASE}", {"description": [(ldap3.MODIFY_REPLACE, ["polled"])]})
    ldaputil.assert_result(c, "success")
    c.delete(f"cn=p00004,ou=people,{BASE}")
    ldaputil.assert_result(c, "success")
    c.modify_dn(f"cn=p00005,ou=people,{BASE}", "cn=ro-renamed")
    ldaputil.assert_result(c, "success")
    assert_converges(p)
    c.unbind()
    metrics = p.metrics()
    # Between polls, or polling: never failing.
    assert metric_state(metrics) in ("idle", "connecting", "refreshing"), metrics
    assert metric_changes(metrics) >= INITIAL_ENTRIES, metrics


class WriteLoad:
    """Adds, modifies, renames and deletes on the provider from a thread until stopped."""

    def __init__(self, provider, seed):
        self.provider = provider
        self.seed = seed
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.done = 0
        self.error = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.live = []
        self.next = 0

    def run(self):
        try:
            c = ldaputil.connect(self.provider, self.provider.admin_dn, self.provider.admin_pw)
            while not self.stop.is_set():
                roll = self.rng.random()
                if roll < 0.5 or len(self.live) < 10:
                    name = f"w{self.seed}x{self.next}"
                    self.next += 1
                    ldaputil.add_ok(c, f"cn={name},ou=people,{BASE}",
                                    {"objectClass": "person", "cn": name, "sn": "load"})
                    self.live.append(name)
                elif roll < 0.75:
                    name = self.rng.choice(self.live)
                    c.modify(f"cn={name},ou=people,{BASE}",
                             {"description": [(ldap3.MODIFY_REPLACE, [f"v{self.rng.random()}"])]})
                    ldaputil.assert_result(c, "success")
                elif roll < 0.85:
                    i = self.rng.randrange(len(self.live))
                    old = self.live[i]
                    new = f"{old}r"
                    c.modify_dn(f"cn={old},ou=people,{BASE}", f"cn={new}")
                    ldaputil.assert_result(c, "success")
                    self.live[i] = new
                else:
                    name = self.live.pop(self.rng.randrange(len(self.live)))
                    c.delete(f"cn={name},ou=people,{BASE}")
                    ldaputil.assert_result(c, "success")
                self.done += 1
            c.unbind()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=60)


def test_kill9_under_write_load_converges_every_time(pair):
    p = pair()
    start_pair(p)
    assert_converges(p)
    rng = random.Random(4533)
    for cycle in range(cycles()):
        with WriteLoad(p.provider, seed=cycle) as load:
            time.sleep(rng.uniform(0.5, 2.0))
            p.consumer.kill9()
            time.sleep(rng.uniform(0.0, 1.0))
            p.consumer.start()
            time.sleep(rng.uniform(0.5, 2.0))
        assert load.error is None, load.error
        assert load.done > 0
        assert_converges(p)


@pytest.fixture(scope="module")
def pki():
    import test_tls  # the suite's certificate maker
    d = tempfile.mkdtemp(prefix="larch-e2e-syncrepl-pki-")
    try:
        p = test_tls.Pki(d)
        p.server = p.issue("server", "/O=Larch e2e/CN=localhost", 0x1001)
        p.admin = p.issue("replica", "/O=Larch e2e clients/CN=replica", 0x4004, server=False)
        yield p
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_starttls_with_a_client_certificate(pair, pki):
    p = pair(pki=pki)
    start_pair(p)
    assert_converges(p)
    c = p.admin(p.provider)
    ldaputil.add_ok(c, f"cn=tls1,ou=people,{BASE}", {"objectClass": "person", "cn": "tls1", "sn": "t"})
    c.unbind()
    assert_converges(p)
    assert metric_state(p.metrics()) == "persisting"
