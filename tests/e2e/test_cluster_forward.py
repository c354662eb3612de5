"""A cluster follower forwards its clients' writes to the leader (`cluster.writes`,
docs/cluster.md "Clients"): three `larch serve` processes on 127.0.0.1, ports the test
picks, each follower bound at the leader as the administrator (who may proxy).

- Writes through a follower succeed (result 0, no referral followed), reach every node,
  and run as the client: access control refuses a user's write (50) through the follower;
  pre-read and post-read controls come back, so do password policy controls, and
  Password Modify (an extended operation) is forwarded too.
- kill -9 of the leader: once a new leader is elected, the follower left forwards to it.
- A write that already carries the forwarding mark is not forwarded again (a follower
  refers it), so a write crosses at most one hop.
- With `cluster.writes = "refer"`, a follower answers a write with a referral to the leader.

Every process is signalled by its PID only.
"""

import os
import time

import ldap
import ldap3
import pytest
from ldap.controls import DecodeControlTuples
from ldap.controls.ppolicy import PasswordPolicyControl
from ldap3.protocol.rfc4527 import post_read_control, pre_read_control

import conftest
import ldaputil
from test_cluster import CONVERGE_S, LEADER_DEADLINE_S, Cluster

pytestmark = pytest.mark.larch_only("Larch's cluster")

BASE = conftest.BASE
PEOPLE = f"ou=people,{BASE}"
USER = f"uid=u1,{PEOPLE}"
USER_PW = "first-Secret-1"
PRE_READ = "1.3.6.1.1.13.1"
POST_READ = "1.3.6.1.1.13.2"
# The control a follower marks a forwarded write with (Larch's arc, .2.1).
FORWARDED = "2.25.268705614682925665270291760309126455850.2.1"
POLICY_TOML = '\n[password_policy]\nmin_length = 8\n'


def forwarding_toml(writes):
    """The `cluster.writes` lines of a node (`writes` None: the key left out); forwarding
    binds as the administrator, its password in a file."""
    def node_toml(srv):
        if writes == "forward":
            with open(os.path.join(srv.workdir, "forward.pw"), "w") as f:
                f.write(srv.admin_pw + "\n")
            return (f'writes = "forward"\nbind_dn = "{srv.admin_dn}"\n'
                    'credentials_file = "forward.pw"\n')
        return "" if writes is None else f'writes = "{writes}"\n'
    return node_toml


def cluster_of(request, writes):
    c = Cluster(request.config.getoption("--larch-bin"), node_toml=forwarding_toml(writes), extra_toml=POLICY_TOML)
    c.start()
    return c


@pytest.fixture
def forwarding(request):
    c = cluster_of(request, "forward")
    yield c
    c.close()


@pytest.fixture
def referring(request):
    c = cluster_of(request, "refer")
    yield c
    c.close()


def description_everywhere(cluster, dn, expected):
    """Waits until every live node shows `expected` as the description of `dn`."""
    end = time.monotonic() + CONVERGE_S
    seen = None
    while time.monotonic() < end:
        seen = [description(s, dn) for s in cluster.nodes.values() if s.alive()]
        if all(x == expected for x in seen):
            return
        time.sleep(0.1)
    raise AssertionError(f"{dn}: descriptions per node {seen}, expected {expected}")


def description(srv, dn):
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    try:
        if not conn.search(dn, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["description"]):
            return None
        return sorted(conn.entries[0].entry_attributes_as_dict.get("description", []))
    finally:
        conn.unbind()


def add_people(leader):
    ldaputil.ldapadd_ok(leader, ldaputil.ldif_entry(PEOPLE, {"objectClass": "organizationalUnit", "ou": "people"}))


def pyldap(srv, dn, password):
    conn = ldap.initialize(srv.url)
    conn.set_option(ldap.OPT_PROTOCOL_VERSION, 3)
    conn.set_option(ldap.OPT_REFERRALS, 0)
    conn.simple_bind_s(dn, password)
    return conn


def test_a_follower_forwards_writes_as_the_client(forwarding):
    leader = forwarding.leader()
    forwarding.set_up()
    add_people(leader)
    follower = forwarding.followers(leader)[0]
    admin = ldaputil.connect(follower, follower.admin_dn, follower.admin_pw)
    try:
        # An Add through the follower: result 0 from the leader, with its post-read control.
        admin.add(f"cn=f1,{PEOPLE}", ["person"], {"cn": "f1", "sn": "s", "description": "one"},
                  controls=[post_read_control(["cn", "creatorsName"])])
        assert admin.result["result"] == 0, admin.result
        assert not admin.result.get("referrals"), admin.result
        post = {k.lower(): v for k, v in admin.result["controls"][POST_READ]["value"]["result"].items()}
        assert post["cn"] == ["f1"]
        assert [v.lower() for v in post["creatorsname"]] == [follower.admin_dn]
        description_everywhere(forwarding, f"cn=f1,{PEOPLE}", ["one"])

        # A Modify with pre-read and post-read.
        admin.modify(f"cn=f1,{PEOPLE}", {"description": [(ldap3.MODIFY_REPLACE, ["two"])]},
                     controls=[pre_read_control(["description"]), post_read_control(["description"])])
        assert admin.result["result"] == 0, admin.result
        assert admin.result["controls"][PRE_READ]["value"]["result"] == {"description": ["one"]}
        assert admin.result["controls"][POST_READ]["value"]["result"] == {"description": ["two"]}
        description_everywhere(forwarding, f"cn=f1,{PEOPLE}", ["two"])

        # A ModifyDN and a Delete.
        admin.modify_dn(f"cn=f1,{PEOPLE}", "cn=f2")
        assert admin.result["result"] == 0, admin.result
        description_everywhere(forwarding, f"cn=f2,{PEOPLE}", ["two"])
        admin.delete(f"cn=f2,{PEOPLE}")
        assert admin.result["result"] == 0, admin.result
        description_everywhere(forwarding, f"cn=f2,{PEOPLE}", None)

        # The leader's answer is passed on, an error too.
        admin.delete(f"cn=absent,{PEOPLE}")
        assert admin.result["result"] == 32, admin.result

        admin.add(USER, ["inetOrgPerson"], {"cn": "u1", "sn": "u1", "uid": "u1", "userPassword": USER_PW,
                                            "description": "mine"})
        assert admin.result["result"] == 0, admin.result
    finally:
        admin.unbind()
    description_everywhere(forwarding, USER, ["mine"])

    # Access control applies to the client, not to the follower's Bind (the admin): by
    # default a user may replace its own userPassword and nothing else.
    user = ldaputil.connect(follower, USER, USER_PW)
    try:
        user.modify(USER, {"description": [(ldap3.MODIFY_REPLACE, ["changed"])]})
        assert user.result["result"] == 50, user.result
    finally:
        user.unbind()
    assert description(leader, USER) == ["mine"]

    # Password policy: a short password is refused by the leader with the policy control.
    conn = pyldap(follower, USER, USER_PW)
    try:
        with pytest.raises(ldap.CONSTRAINT_VIOLATION) as refused:
            conn.modify_ext_s(USER, [(ldap.MOD_REPLACE, "userPassword", [b"short"])],
                              serverctrls=[PasswordPolicyControl()])
        ctrls = DecodeControlTuples(refused.value.args[0].get("ctrls", []))
        policy = [c for c in ctrls if isinstance(c, PasswordPolicyControl)]
        assert policy and policy[0].error == 6, ctrls  # passwordTooShort

        # Password Modify (an extended operation) through the follower.
        conn.passwd_s(USER, USER_PW, "second-Secret-2")
    finally:
        conn.unbind_s()
    end = time.monotonic() + CONVERGE_S
    while not all(can_bind_as(s, USER, "second-Secret-2") for s in forwarding.nodes.values()):
        assert time.monotonic() < end, "the new password did not reach every node"
        time.sleep(0.1)
    assert forwarding.role(follower) == "follower"


def test_a_forwarded_write_is_not_forwarded_again(forwarding):
    """A write that carries the forwarding mark runs where it arrives: a follower refers it."""
    leader = forwarding.leader()
    forwarding.set_up()
    add_people(leader)
    follower = forwarding.followers(leader)[0]
    conn = ldaputil.connect(follower, follower.admin_dn, follower.admin_pw)
    try:
        conn.add(f"cn=marked,{PEOPLE}", ["person"], {"cn": "marked", "sn": "s"}, controls=[(FORWARDED, False, None)])
        assert conn.result["result"] == 10, conn.result
        assert conn.result["referrals"] == [leader.url], conn.result
    finally:
        conn.unbind()


def can_bind_as(srv, dn, password):
    conn = ldaputil.connect(srv, dn, password, bind=False)
    try:
        return conn.bind()
    finally:
        conn.unbind()


def add_through(srv, name):
    """Adds cn=<name> below ou=people through `srv` as the admin: the result (None when
    the node cannot be reached)."""
    try:
        conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    except ldap3.core.exceptions.LDAPException:
        return None
    try:
        conn.add(f"cn={name},{PEOPLE}", ["person"], {"cn": name, "sn": "s", "description": name})
        return conn.result
    except ldap3.core.exceptions.LDAPException:
        return None
    finally:
        try:
            conn.unbind()
        except ldap3.core.exceptions.LDAPException:
            pass


def test_a_follower_forwards_to_the_new_leader_after_a_kill9(forwarding):
    leader = forwarding.leader()
    forwarding.set_up()
    add_people(leader)
    for follower in forwarding.followers(leader):
        r = add_through(follower, f"before{follower.node_id}")
        assert r is not None and r["result"] == 0, r

    leader.kill9()
    new_leader = forwarding.leader()
    assert new_leader is not leader
    [follower] = forwarding.followers(new_leader)
    # Until the follower hears of the new leader its writes may find none (52) or the
    # old one gone (52); they are never referred.
    end = time.monotonic() + LEADER_DEADLINE_S
    while True:
        r = add_through(follower, "after")
        assert r is not None and r["result"] in (0, 51, 52), r
        if r["result"] == 0:
            break
        assert time.monotonic() < end, f"the follower did not forward to the new leader: {r}"
        time.sleep(0.1)
    assert forwarding.role(follower) == "follower"
    description_everywhere(forwarding, f"cn=after,{PEOPLE}", ["after"])
    leader.start()
    description_everywhere(forwarding, f"cn=after,{PEOPLE}", ["after"])


def test_a_follower_refers_writes_when_configured(referring):
    leader = referring.leader()
    referring.set_up()
    add_people(leader)
    follower = referring.followers(leader)[0]
    r = add_through(follower, "referred")
    assert r["result"] == 10, r
    assert r["referrals"] == [leader.url], r
    assert description(leader, f"cn=referred,{PEOPLE}") is None
