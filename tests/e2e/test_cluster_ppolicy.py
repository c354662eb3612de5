"""Password policy across a cluster (docs/cluster.md, "Password policy across nodes"):
three `larch serve` processes on 127.0.0.1, ports the test picks; followers forward writes
to the leader and hand it the outcome of every bind they decide under password policy.

- Failures on every node count toward one lockout: one wrong password on each node locks
  the account (`pwdMaxFailure` 3), on every node; the right password is then refused
  everywhere with `accountLocked`.
- A bind on a follower is answered once that follower holds its record: right after a
  failure there, the follower itself shows the new `pwdFailureTime`.
- A success on a follower clears the failures made on other nodes.
- With the leader frozen, a follower's failed bind is answered within seconds (its record
  waits at most 5 s), not after the forwarding's 30 s.
- The bind outcome operation is the administrator's and the forwarding identity's only:
  a user gets `insufficientAccessRights` (50); a server that is not a cluster node
  answers `unwillingToPerform` (53).

Every process is signalled by its PID only.
"""

import os
import signal
import time

import ldap
import pytest
from ldap.controls import DecodeControlTuples
from ldap.controls.ppolicy import PasswordPolicyControl

import conftest
import ldaputil
from test_cluster import CONVERGE_S, Cluster
from test_cluster_forward import PEOPLE, add_people, forwarding_toml

pytestmark = pytest.mark.larch_only("Larch's cluster")

BIND_OUTCOME = "2.25.268705614682925665270291760309126455850.1.5"
PASSWORD = "Right-Pass-1"
POLICY_TOML = """
[password_policy]
lockout = true
max_failures = 3
lockout_duration = "300s"
failure_count_interval = "0"
"""


@pytest.fixture
def cluster(request):
    c = Cluster(request.config.getoption("--larch-bin"), node_toml=forwarding_toml("forward"),
                extra_toml=POLICY_TOML)
    c.start()
    yield c
    c.close()


def add_user(leader, name):
    dn = f"uid={name},{PEOPLE}"
    ldaputil.ldapadd_ok(leader, ldaputil.ldif_entry(dn, {
        "objectClass": "inetOrgPerson", "uid": name, "cn": name, "sn": name, "userPassword": PASSWORD}))
    return dn


def bind(srv, dn, password):
    """A simple bind with the policy control: (result code, the control's error number or
    None)."""
    conn = ldap.initialize(srv.url)
    conn.set_option(ldap.OPT_PROTOCOL_VERSION, 3)
    conn.set_option(ldap.OPT_REFERRALS, 0)
    try:
        conn.simple_bind_s(dn, password, serverctrls=[PasswordPolicyControl()])
        return 0, None
    except ldap.LDAPError as e:
        info = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
        ctrls = [c for c in DecodeControlTuples(info.get("ctrls", [])) if isinstance(c, PasswordPolicyControl)]
        return info.get("result", -1), (ctrls[0].error if ctrls else None)
    finally:
        conn.unbind_s()


def values(srv, dn, name):
    conn = ldap.initialize(srv.url)
    conn.simple_bind_s(srv.admin_dn, srv.admin_pw)
    try:
        [(_, attrs)] = conn.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)", [name])
    finally:
        conn.unbind_s()
    return next((vs for k, vs in attrs.items() if k.lower() == name.lower()), [])


def everywhere(cluster, dn, name, count):
    """Waits until every node holds `count` values of `name` in `dn`."""
    end = time.monotonic() + CONVERGE_S
    seen = None
    while time.monotonic() < end:
        seen = [len(values(s, dn, name)) for s in cluster.nodes.values()]
        if all(n == count for n in seen):
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} of {dn}: {seen} values per node, expected {count}")


ACCOUNT_LOCKED = 1


def test_failures_on_every_node_lock_the_account_everywhere(cluster):
    leader = cluster.leader()
    cluster.set_up()
    add_people(leader)
    dn = add_user(leader, "locked")
    everywhere(cluster, dn, "uid", 1)
    first, second = cluster.followers(leader)

    assert bind(first, dn, "wrong-1") == (49, None)
    # The follower answered once it held the record: it shows the failure at once.
    assert len(values(first, dn, "pwdFailureTime")) == 1
    assert bind(second, dn, "wrong-2") == (49, None)
    assert len(values(second, dn, "pwdFailureTime")) == 2
    assert bind(leader, dn, "wrong-3") == (49, None)

    everywhere(cluster, dn, "pwdAccountLockedTime", 1)
    everywhere(cluster, dn, "pwdFailureTime", 3)
    for srv in cluster.nodes.values():
        assert bind(srv, dn, PASSWORD) == (49, ACCOUNT_LOCKED), f"node {srv.node_id}"
    # A locked account's binds record nothing more.
    assert len(values(leader, dn, "pwdFailureTime")) == 3


def test_a_success_on_a_follower_clears_failures_made_elsewhere(cluster):
    leader = cluster.leader()
    cluster.set_up()
    add_people(leader)
    dn = add_user(leader, "cleared")
    everywhere(cluster, dn, "uid", 1)
    first, second = cluster.followers(leader)

    assert bind(leader, dn, "wrong-1")[0] == 49
    assert bind(first, dn, "wrong-2")[0] == 49
    everywhere(cluster, dn, "pwdFailureTime", 2)
    assert bind(second, dn, PASSWORD) == (0, None)
    everywhere(cluster, dn, "pwdFailureTime", 0)
    # Two more failures do not reach the lock: the count started again.
    assert bind(first, dn, "wrong-3")[0] == 49
    assert bind(second, dn, "wrong-4")[0] == 49
    assert bind(first, dn, PASSWORD) == (0, None)


def bind_outcome_value(dn):
    """A BindOutcomeRequest (failure, time 1) for `dn` (shorter than 128 octets)."""
    body = b"\x80" + bytes([len(dn)]) + dn.encode() + b"\x81\x01\x00\x82\x01\x01"
    return b"\x30" + bytes([len(body)]) + body


def extended_result(srv, dn, password, value):
    conn = ldaputil.connect(srv, dn, password)
    try:
        conn.extended(BIND_OUTCOME, value)
        return conn.result["result"]
    finally:
        conn.unbind()


def test_only_the_forwarding_identity_may_record_a_bind(cluster, server):
    leader = cluster.leader()
    cluster.set_up()
    add_people(leader)
    dn = add_user(leader, "victim")
    value = bind_outcome_value(dn)
    assert extended_result(leader, dn, PASSWORD, value) == 50
    assert values(leader, dn, "pwdFailureTime") == []
    assert extended_result(leader, leader.admin_dn, leader.admin_pw, value) == 0
    assert len(values(leader, dn, "pwdFailureTime")) == 1
    assert extended_result(leader, leader.admin_dn, leader.admin_pw, b"\x30\x00") == 2
    # A single server is no cluster node.
    assert extended_result(server, server.admin_dn, server.admin_pw, bind_outcome_value(server.admin_dn)) == 53


def test_a_failed_bind_on_a_follower_is_answered_when_the_leader_does_not_answer(cluster):
    """With the leader frozen (SIGSTOP: its connections stay open, nothing answers), a
    follower's failed bind waits for its record at most 5 s, not the forwarding's 30 s."""
    leader = cluster.leader()
    cluster.set_up()
    add_people(leader)
    dn = add_user(leader, "frozen")
    everywhere(cluster, dn, "uid", 1)
    follower = cluster.followers(leader)[0]
    # The follower's connections to the leader are made and pooled first.
    assert bind(follower, dn, "wrong-1")[0] == 49
    os.kill(leader.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert bind(follower, dn, "wrong-2")[0] == 49
        took = time.monotonic() - started
    finally:
        os.kill(leader.pid, signal.SIGCONT)
    assert took < 15, f"a failed bind took {took:.1f} s with the leader frozen"
    assert bind(follower, dn, PASSWORD) == (0, None)
