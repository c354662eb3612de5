"""Larch replicating to Larch, and a chain slapd -> Larch -> slapd.

- A Larch consumer of a Larch provider: the initial refresh, then adds, modifies, deletes,
  renames, a subtree move and group membership changes while persisting; after each phase
  both hold the same entries with the same entryUUID, entryCSN, timestamps, names,
  memberOf and transitiveMemberOf.
- kill -9 at random moments during a write load, of the provider and of the consumer in
  turn (20 cycles in CI; SYNC_LARCH_CYCLES=N for more): the consumer converges to exactly
  the provider's state after every cycle.
- slapd provider -> Larch (consumer of slapd, provider to the next) -> slapd consumer: the
  last one ends up with what the first holds.

The comparison helpers and the write load are the consumer tests' (test_syncrepl_consumer).
"""

import os
import random
import shutil
import subprocess
import tempfile
import time
import urllib.request

import ldap
import ldap.controls.readentry
import ldap3
import pytest

import conftest
import ldaputil
from test_syncrepl_consumer import WriteLoad, contents, differences, person
from test_syncrepl_provider import SlapdConsumer, monitor_values, provider_searches

pytestmark = pytest.mark.larch_only("Larch replicating to Larch")

BASE = conftest.BASE
OPERATIONAL = ["entryUUID", "entryCSN", "createTimestamp", "modifyTimestamp", "creatorsName", "modifiersName",
               "memberOf", "transitiveMemberOf"]
CONVERGE_S = 90.0
INITIAL = 200


def cycles():
    n = os.environ.get("SYNC_LARCH_CYCLES")
    return int(n) if n else 20


def replication_toml(rid, provider):
    return f"""
[[replication]]
rid = {rid}
provider = "{provider.url}"
bind_dn = "{provider.admin_dn}"
credentials = "{provider.admin_pw}"
base = "{BASE}"
retry = "1s +"
"""


class Chain:
    """Servers on private directories, stopped by PID at the end."""

    def __init__(self, larch_bin):
        self.larch_bin = larch_bin
        self.tmp = tempfile.mkdtemp(prefix="larch-e2e-synclarch-")
        self.servers = []

    def server(self, kind, name, **kw):
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        srv = conftest.LdapServer(kind, d, larch_bin=self.larch_bin, **kw)
        self.servers.append(srv)
        return srv

    def close(self):
        statuses = [(s.kind, s.stop(), s.stderr_tail()) for s in reversed(self.servers) if s.alive()]
        shutil.rmtree(self.tmp, ignore_errors=True)
        for kind, status, stderr in statuses:
            assert status == 0, f"{kind} exited with status {status}; stderr:\n{stderr}"


@pytest.fixture
def chain(request):
    c = Chain(request.config.getoption("--larch-bin"))
    yield c
    c.close()


def full_contents(srv):
    """`contents` with memberOf and transitiveMemberOf too (what Larch replicas copy)."""
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    try:
        return paged_contents(conn, ["*"] + OPERATIONAL)
    finally:
        conn.unbind()


def paged_contents(conn, attributes):
    """Every entry below the suffix, in `contents`' shape, read with paging."""
    entries = conn.extend.standard.paged_search(BASE, "(objectClass=*)", search_scope=ldap3.SUBTREE,
                                                attributes=attributes, paged_size=200, generator=False)
    return {e["dn"].lower(): (e["dn"], {k.lower(): sorted(v) for k, v in e["raw_attributes"].items() if v})
            for e in entries or [] if e.get("type") == "searchResEntry"}


def converge(provider, consumer, read=full_contents, deadline=CONVERGE_S):
    end = time.monotonic() + deadline
    last = None
    while time.monotonic() < end:
        want, got = read(provider), read(consumer)
        last = differences(want, got)
        if not last:
            return want
        time.sleep(0.3)
    raise AssertionError("the consumer did not converge:\n" + "\n".join(last) +
                         f"\nconsumer stderr:\n{consumer.stderr_tail()}")


def load(srv, n=INITIAL):
    ldif = ldaputil.ldif_entry(f"ou=people,{BASE}", {"objectClass": "organizationalUnit", "ou": "people"})
    ldif += ldaputil.ldif_entry(f"ou=groups,{BASE}", {"objectClass": "organizationalUnit", "ou": "groups"})
    ldif += "".join(person(i) for i in range(n))
    ldaputil.ldapadd_ok(srv, ldif)


def larch_pair(chain, metrics=False):
    """A loaded Larch provider and a Larch replica of it (rid 11), each with a `/metrics`
    listener (its port as `.metrics_port`) when asked."""
    def listener(srv_extra=""):
        if not metrics:
            return srv_extra, None
        port = conftest.free_port()
        return srv_extra + f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n', port

    toml, port = listener()
    provider = chain.server("larch", "provider", larch_extra_toml=toml)
    provider.metrics_port = port
    provider.start()
    load(provider)
    toml, port = listener(replication_toml(11, provider))
    consumer = chain.server("larch", "consumer", larch_extra_toml=toml)
    consumer.metrics_port = port
    consumer.start()
    return provider, consumer


def metrics_text(srv):
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=10) as r:
        return r.read().decode()


def metric_lines(text, name):
    """The sample lines of metric `name`."""
    return [line for line in text.splitlines() if line.startswith(name + "{") or line.startswith(name + " ")]


def promtool_accepts(text):
    promtool = shutil.which("promtool")
    if promtool is None:
        return
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_larch_replica_of_larch_follows_every_kind_of_change(chain):
    provider, consumer = larch_pair(chain)
    first = converge(provider, consumer)
    assert len(first) == INITIAL + 4
    c = ldaputil.connect(provider, provider.admin_dn, provider.admin_pw)
    people = [f"cn=p{i:05d},ou=people,{BASE}" for i in range(INITIAL)]
    ldaputil.add_ok(c, f"cn=inner,ou=groups,{BASE}", {"objectClass": "groupOfNames", "cn": "inner",
                                                      "member": people[:3]})
    ldaputil.add_ok(c, f"cn=outer,ou=groups,{BASE}", {"objectClass": "groupOfNames", "cn": "outer",
                                                      "member": [f"cn=inner,ou=groups,{BASE}", people[5]]})
    c.modify(people[10], {"description": [(ldap3.MODIFY_REPLACE, ["changed"])]})
    ldaputil.assert_result(c, "success")
    c.delete(people[11])
    ldaputil.assert_result(c, "success")
    want = converge(provider, consumer)
    assert want[people[0].lower()][1]["transitivememberof"], "the nested group's member has transitiveMemberOf"
    c.modify_dn(people[12], "cn=renamed")
    ldaputil.assert_result(c, "success")
    ldaputil.add_ok(c, f"ou=archive,{BASE}", {"objectClass": "organizationalUnit", "ou": "archive"})
    c.modify_dn(f"ou=groups,{BASE}", "ou=groups", new_superior=f"ou=archive,{BASE}")
    ldaputil.assert_result(c, "success")
    c.delete(people[0])
    ldaputil.assert_result(c, "success")
    c.unbind()
    converge(provider, consumer)


def test_lag_and_state_are_watched_on_both_sides(chain):
    """The provider shows each persistent search (who, state, changes sent, lag in changes
    and seconds); the replica its lag and the delay of the last change."""
    provider, consumer = larch_pair(chain, metrics=True)
    converge(provider, consumer)
    c = ldaputil.connect(provider, provider.admin_dn, provider.admin_pw)
    for i in range(5):
        c.modify(f"cn=p{i:05d},ou=people,{BASE}", {"description": [(ldap3.MODIFY_REPLACE, [f"lag {i}"])]})
        ldaputil.assert_result(c, "success")
    c.unbind()
    converge(provider, consumer)
    deadline = time.monotonic() + 10
    while True:
        searches = provider_searches(provider)
        replica = monitor_values(consumer, "cn=Consumer 11,cn=Replication,cn=Monitor")
        settled = (len(searches) == 1 and searches[0]["lag changes"] == "0"
                   and searches[0]["changes sent"] not in (None, "0") and replica["lag seconds"] == "0.000")
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(searches) == 1, searches
    s = searches[0]
    assert s["rid"] == "11" and s["state"] == "persisting", s
    assert s["identity"].lower() == provider.admin_dn.lower(), s
    assert s["peer"].startswith("127.0.0.1:"), s
    assert int(s["changes sent"]) >= 5 and s["lag changes"] == "0" and s["lag seconds"] == "0.000", s
    assert s["csn"] != "none", s
    assert replica["lag seconds"] == "0.000", replica
    assert replica["last change delay"] != "none" and float(replica["last change delay"]) < 10, replica
    # The same in /metrics, which Prometheus' checker accepts.
    text = metrics_text(provider)
    lines = metric_lines(text, "larch_syncprov_consumer_lag_changes")
    assert len(lines) == 1 and 'rid="11"' in lines[0] and lines[0].endswith(" 0"), lines
    assert metric_lines(text, "larch_syncprov_context_csn_time_seconds"), text
    promtool_accepts(text)
    text = metrics_text(consumer)
    assert metric_lines(text, "larch_replication_lag_seconds") == ['larch_replication_lag_seconds{rid="11"} 0'], text
    assert len(metric_lines(text, "larch_replication_last_change_delay_seconds")) == 1, text
    assert len(metric_lines(text, "larch_replication_last_csn_time_seconds")) == 1, text
    promtool_accepts(text)

    # Stopped, the replica's lag grows from the moment it stopped being in step.
    provider.stop()
    time.sleep(1.5)
    lag = monitor_values(consumer, "cn=Consumer 11,cn=Replication,cn=Monitor")["lag seconds"]
    assert 1.0 <= float(lag) < 60, lag
    provider.start()
    converge(provider, consumer)


CHAINER = f"cn=chainer,ou=people,{BASE}"


def test_a_replica_chains_writes_to_its_provider(chain):
    """`writes = "chain"`: writes sent to the replica are made on the provider as the client
    (its access rights, its name in modifiersName), the provider's answers come back
    whole, and the change returns through replication."""
    provider = chain.server("larch", "provider")
    provider.start()
    load(provider)
    admin_p = ldaputil.connect(provider, provider.admin_dn, provider.admin_pw)
    ldaputil.add_ok(admin_p, CHAINER, {"objectClass": "inetOrgPerson", "cn": "chainer", "sn": "c",
                                       "userPassword": "Chain-Secret-1"})
    replica = chain.server("larch", "replica",
                           larch_extra_toml=replication_toml(11, provider) + 'writes = "chain"\n')
    replica.start()
    converge(provider, replica)

    # A user changes its own password through the replica (the default policy lets it).
    me = ldaputil.connect(replica, CHAINER, "Chain-Secret-1")
    me.modify(CHAINER, {"userPassword": [(ldap3.MODIFY_REPLACE, ["Chain-Secret-2"])]})
    ldaputil.assert_result(me, "success")
    ldaputil.connect(provider, CHAINER, "Chain-Secret-2").unbind()
    admin_p.search(CHAINER, "(objectClass=*)", ldap3.BASE, attributes=["modifiersName"])
    assert admin_p.response[0]["raw_attributes"]["modifiersName"] == [CHAINER.encode()]
    # Its rights are the provider's rules for it, not the replica's bind identity's.
    me.modify(CHAINER, {"description": [(ldap3.MODIFY_REPLACE, ["not mine to write"])]})
    ldaputil.assert_result(me, "insufficientAccessRights")
    # Password Modify (RFC 3062) through the replica.
    assert me.extend.standard.modify_password(user=CHAINER, old_password="Chain-Secret-2",
                                              new_password="Chain-Secret-3") is True, me.result
    me.unbind()
    ldaputil.connect(provider, CHAINER, "Chain-Secret-3").unbind()

    # The administrator adds, renames and deletes through the replica; errors come back
    # with their codes and matched DN.
    admin_r = ldaputil.connect(replica, replica.admin_dn, replica.admin_pw)
    added = f"cn=chained,ou=people,{BASE}"
    ldaputil.add_ok(admin_r, added, {"objectClass": "person", "cn": "chained", "sn": "c"})
    admin_r.add(added, attributes={"objectClass": "person", "cn": "chained", "sn": "c"})
    ldaputil.assert_result(admin_r, "entryAlreadyExists")
    admin_r.delete(f"cn=nobody,ou=nowhere,{BASE}")
    ldaputil.assert_result(admin_r, "noSuchObject")
    assert admin_r.result["dn"].lower() == BASE.lower(), admin_r.result
    admin_r.modify_dn(added, "cn=chained2")
    ldaputil.assert_result(admin_r, "success")
    admin_r.unbind()
    want = converge(provider, replica)
    assert f"cn=chained2,ou=people,{BASE}".lower() in want

    # Response controls come back: the post-read control of a modify.
    pl = ldap.initialize(replica.url)
    pl.simple_bind_s(replica.admin_dn, replica.admin_pw)
    post = ldap.controls.readentry.PostReadControl(criticality=True, attrList=["description"])
    _, _, _, controls = pl.modify_ext_s(CHAINER, [(ldap.MOD_REPLACE, "description", [b"read back"])],
                                        serverctrls=[post])
    assert [c.entry.get("description") for c in controls] == [[b"read back"]], controls

    # The provider away: a chained write is answered `unavailable`, naming it; back, the
    # next write goes through (the pooled connection it closed is not used).
    provider.stop()
    try:
        pl.modify_s(CHAINER, [(ldap.MOD_REPLACE, "description", [b"while away"])])
        raise AssertionError("a chained write succeeded with the provider stopped")
    except ldap.UNAVAILABLE as e:
        assert provider.url.split("//")[1] in e.args[0].get("info", ""), e
    provider.start()
    pl.modify_s(CHAINER, [(ldap.MOD_REPLACE, "description", [b"back again"])])
    pl.unbind_s()
    admin_p = ldaputil.connect(provider, provider.admin_dn, provider.admin_pw)
    admin_p.search(CHAINER, "(objectClass=*)", ldap3.BASE, attributes=["description"])
    assert admin_p.response[0]["raw_attributes"]["description"] == [b"back again"]
    admin_p.unbind()
    converge(provider, replica)


def test_kill9_of_provider_and_consumer_in_turn_under_writes(chain):
    provider, consumer = larch_pair(chain)
    converge(provider, consumer)
    rng = random.Random(4533)
    for cycle in range(cycles()):
        victim = provider if cycle % 2 == 0 else consumer
        with WriteLoad(provider, seed=cycle) as writes:
            time.sleep(rng.uniform(0.3, 1.0))
            if victim is provider:
                # The load's connection dies with the provider: stop it first.
                writes.stop.set()
            victim.kill9()
            time.sleep(rng.uniform(0.0, 0.5))
            victim.start()
            time.sleep(rng.uniform(0.3, 1.0))
        if victim is consumer:
            assert writes.error is None, writes.error
        converge(provider, consumer, read=contents)
    converge(provider, consumer)


def test_slapd_to_larch_to_slapd(chain):
    first = chain.server("slapd", "first", slapd_extra_global="moduleload syncprov",
                         slapd_extra_db="index entryCSN,entryUUID eq\noverlay syncprov\nsyncprov-sessionlog 100\n")
    first.start()
    load(first, 100)
    middle = chain.server("larch", "middle", larch_extra_toml=replication_toml(21, first))
    middle.start()
    converge(first, middle, read=contents)
    last = SlapdConsumer(middle, rid=22)
    try:
        last.start()
        modify_and_delete(first, 1, 2, "through the chain")
        converge(first, middle, read=contents)
        end = time.monotonic() + CONVERGE_S
        while True:
            want = contents(first)
            got = slapd_contents(last)
            diff = differences(want, got)
            if not diff:
                break
            assert time.monotonic() < end, "the last replica did not converge:\n" + "\n".join(diff) + \
                f"\n{last.stderr_tail()}"
            time.sleep(0.3)
    finally:
        last.close()


def modify_and_delete(srv, modified, deleted, description):
    """As the admin: a new description for person `modified`, and person `deleted` deleted."""
    c = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    c.modify(f"cn=p{modified:05d},ou=people,{BASE}", {"description": [(ldap3.MODIFY_REPLACE, [description])]})
    ldaputil.assert_result(c, "success")
    c.delete(f"cn=p{deleted:05d},ou=people,{BASE}")
    ldaputil.assert_result(c, "success")
    c.unbind()


def slapd_contents(consumer):
    """`contents` of a SlapdConsumer (bound as its own rootdn)."""
    conn = consumer.connection()
    try:
        return paged_contents(conn, ["*", "entryUUID", "entryCSN", "createTimestamp", "modifyTimestamp",
                                     "creatorsName", "modifiersName"])
    finally:
        conn.unbind()


def test_a_new_replica_starts_from_the_providers_snapshot(chain):
    """`start_from = "snapshot"`: the replica receives the provider's snapshot file, then
    only the changes after it (its change counter stays far below the entry count)."""
    provider = chain.server("larch", "provider")
    provider.start()
    load(provider, 1000)
    port = conftest.free_port()
    consumer = chain.server("larch", "consumer", larch_extra_toml=replication_toml(31, provider) +
                            f'start_from = "snapshot"\n\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    consumer.start()
    converge(provider, consumer)
    log = consumer.stderr_path.read_text(errors="replace")
    assert "started from the provider's snapshot" in log, log[-3000:]
    applied = changes_applied(port, 31)
    assert applied < 100, f"{applied} changes applied: the replica refreshed instead"
    modify_and_delete(provider, 3, 4, "after the snapshot")
    converge(provider, consumer)
    # Restarted, it goes on from its cookie (its data directory is no longer empty).
    consumer.kill9_and_restart()
    converge(provider, consumer)


def changes_applied(port, rid):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(f'larch_replication_changes_applied_total{{rid="{rid}"}} '):
            return int(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no changes counter:\n{text}")
