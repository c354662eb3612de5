"""Membership changes of a running cluster of `larch serve` processes (docs/cluster.md,
"Adding and removing nodes"), on 127.0.0.1 with ports the test picks.

- Three nodes form a cluster and take writes; a fourth starts with only itself in
  `[[cluster.members]]` and `bootstrap = false`, and `larch cluster add-node`, asked of a
  follower (which refers it to the leader), adds it: it holds every entry, receives new
  writes, and `larch cluster status` lists four voters.
- The refusals: an id that is a member already, an unknown id, a new node that never
  answers (it is not added), a non-administrator, no server at the URL; each exits 1 with
  a one-line reason.
- A follower that is down is removed; then the leader removes itself: the others elect a
  leader among themselves and go on taking writes.

Every process is signalled by its PID only.
"""

import os
import subprocess
import time

import pytest

import conftest
import ldaputil
import ldapwire
import test_cluster as tc

pytestmark = pytest.mark.larch_only("Larch's cluster")

BASE = conftest.BASE
# A new node that takes no entry for this long is not added (Timing::catch_up_stall, 15 s),
# plus the time to withdraw it.
STALL_S = 15
COMMAND_TIMEOUT_S = 120
# Larch's remove-node extended operation (docs/cluster.md, "Adding and removing nodes").
REMOVE_NODE_OID = "2.25.268705614682925665270291760309126455850.1.4"


def larch_cluster(larch_bin, srv, *args, dn=None, pw=None, url=None):
    """`larch cluster <args>` against `srv` (or `url`) as the admin (or `dn`/`pw`)."""
    cmd = [larch_bin, "cluster", *args, "-H", url or srv.url, "-D", dn or srv.admin_dn, "-w", pw or srv.admin_pw]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)


def failed_with(r, command, *words):
    """Exit status 1 and one line `larch cluster <command>: ...` holding every word."""
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"larch cluster {command}: "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def members(larch_bin, srv):
    """`larch cluster status` on `srv`: {id: kind} of the members it lists."""
    r = tc.cluster_status(larch_bin, srv)
    assert r.returncode == 0, r.stderr
    line = r.stdout.splitlines()[1].removeprefix("cluster members: ")
    return {int(m.split()[0]): m.split()[-1] for m in line.split(", ")}


def joining_node(c, node_id):
    """A node on an empty directory that lists only itself, without `ldap_url`: it learns
    the cluster from the leader once added. Started; returns it and its Raft address."""
    d = os.path.join(c.tmp, f"node{node_id}")
    os.mkdir(d)
    srv = conftest.LdapServer("larch", d, larch_bin=c.larch_bin)
    srv.node_id = node_id
    srv.metrics_port = conftest.free_port()
    raft = f"127.0.0.1:{conftest.free_port()}"
    srv._setup_larch(f'\n[metrics]\nlisten = "127.0.0.1:{srv.metrics_port}"\n'
                     f"\n[cluster]\nnode_id = {node_id}\nbootstrap = false\n"
                     f'\n[[cluster.members]]\nid = {node_id}\nraft = "{raft}"\n')
    srv.start()
    return srv, raft


def new_leader(c, old, deadline_s=tc.LEADER_DEADLINE_S):
    """The node that leads, once it is not `old`."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        srv = c.leader(deadline_s)
        if srv is not old:
            return srv
        time.sleep(0.1)
    raise AssertionError(f"node {old.node_id} still leads after {deadline_s}s")


def write_ok(srv, i):
    r = tc.add_person(srv, i)
    assert r is not None and r["result"] == 0, r


@pytest.fixture
def three(request):
    c = tc.Cluster(request.config.getoption("--larch-bin"))
    c.start()
    yield c
    c.close()


def test_nodes_join_and_leave_a_running_cluster(three):
    c, larch = three, three.larch_bin
    leader = c.leader()
    c.set_up()
    people = ldaputil.ldif_entry(f"ou=people,{BASE}", {"objectClass": "organizationalUnit", "ou": "people"})
    ldaputil.ldapadd_ok(leader, people + "".join(tc.person(i) for i in range(30)))
    assert len(tc.converge(c)) == 31

    # A fourth node, added through a follower (which refers the command to the leader).
    n4, raft4 = joining_node(c, 4)
    follower = next(s for s in c.nodes.values() if s is not leader)
    r = larch_cluster(larch, follower, "add-node", "--id", "4", "--raft", raft4, "--ldap-url", n4.url)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.strip() == f"node 4 at {raft4} ({n4.url}) added as a voter", r.stdout
    c.nodes[4] = n4
    state = tc.converge(c)
    assert len(state) == 31 and state[f"cn=p7,ou=people,{BASE}"] == ["d7"]
    write_ok(leader, 100)
    assert f"cn=p100,ou=people,{BASE}" in tc.converge(c)
    assert members(larch, n4) == {1: "voter", 2: "voter", 3: "voter", 4: "voter"}

    # A follower asked directly answers with a referral to the leader's LDAP URL (on the
    # wire: ldap3 cannot decode an ExtendedResponse carrying a referral).
    wire = ldapwire.RawConnection(follower.host, follower.port)
    try:
        bound = wire.request(1, ldapwire.bind_simple(follower.admin_dn, follower.admin_pw))
        assert bound[-1].code == 0, bound[-1]
        value = ldapwire.seq(ldapwire.integer(9, tag=0x80))
        answer = wire.request(2, ldapwire.extended(REMOVE_NODE_OID, value))[-1]
        assert answer.code == 10 and answer.referrals == [leader.url], (answer.code, answer.diag, answer.referrals)
    finally:
        wire.close()

    # Refusals, each one line and exit status 1; nothing changes.
    r = larch_cluster(larch, leader, "add-node", "--id", "4", "--raft", raft4, "--ldap-url", n4.url)
    failed_with(r, "add-node", "unwillingToPerform(53)", "node 4 is a member already")
    r = larch_cluster(larch, leader, "remove-node", "--id", "9")
    failed_with(r, "remove-node", "unwillingToPerform(53)", "node 9 is not a member")
    nowhere = f"127.0.0.1:{conftest.free_port()}"
    started = time.monotonic()
    r = larch_cluster(larch, leader, "add-node", "--id", "5", "--raft", nowhere,
                      "--ldap-url", f"ldap://{nowhere}")
    failed_with(r, "add-node", "unwillingToPerform(53)", "node 5 did not catch up", "It was not added")
    assert time.monotonic() - started >= STALL_S
    conn = ldaputil.connect(leader, leader.admin_dn, leader.admin_pw)
    try:
        assert conn.add(f"cn=operator,ou=people,{BASE}", ["person"],
                        {"cn": "operator", "sn": "o", "userPassword": "operator-pw"}), conn.result
    finally:
        conn.unbind()
    r = larch_cluster(larch, leader, "remove-node", "--id", str(follower.node_id),
                      dn=f"cn=operator,ou=people,{BASE}", pw="operator-pw")
    failed_with(r, "remove-node", "insufficientAccessRights(50)")
    r = larch_cluster(larch, leader, "remove-node", "--id", "2", url=f"ldap://127.0.0.1:{conftest.free_port()}")
    failed_with(r, "remove-node", "cannot connect to")
    assert members(larch, leader) == {1: "voter", 2: "voter", 3: "voter", 4: "voter"}

    # A follower that is down (not node 4) leaves.
    down = next(s for i, s in c.nodes.items() if s is not leader and i != 4)
    assert down.stop() == 0, down.stderr_tail()
    del c.nodes[down.node_id]
    r = larch_cluster(larch, leader, "remove-node", "--id", str(down.node_id))
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.strip() == f"node {down.node_id} removed from the cluster"
    assert sorted(members(larch, leader)) == sorted(c.nodes)
    write_ok(leader, 101)

    # The leader leaves: the two others elect a leader and take writes.
    r = larch_cluster(larch, leader, "remove-node", "--id", str(leader.node_id))
    assert r.returncode == 0, (r.stdout, r.stderr)
    successor = new_leader(c, leader)
    assert leader.stop() == 0, leader.stderr_tail()
    del c.nodes[leader.node_id]
    end = time.monotonic() + tc.LEADER_DEADLINE_S
    while True:
        r = tc.add_person(successor, 102)
        if r is not None and r["result"] == 0:
            break
        assert time.monotonic() < end, f"the new leader takes no write: {r}"
        time.sleep(0.1)
    state = tc.converge(c)
    assert all(f"cn=p{i},ou=people,{BASE}" in state for i in (100, 101, 102)), sorted(state)
    assert members(larch, successor) == {s: "voter" for s in c.nodes}


def test_the_commands_fail_in_one_line_without_a_cluster(request, server):
    larch = request.config.getoption("--larch-bin")
    r = larch_cluster(larch, server, "remove-node", "--id", "2")
    failed_with(r, "remove-node", "unwillingToPerform(53)", "not a cluster node")
    r = larch_cluster(larch, server, "add-node", "--id", "2", "--raft", "127.0.0.1:1",
                      "--ldap-url", "ldap://127.0.0.1:2", url=f"ldap://127.0.0.1:{conftest.free_port()}")
    failed_with(r, "add-node", "cannot connect to")
    r = subprocess.run([larch, "cluster", "add-node", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "--ldap-url" in r.stdout and "learner" in r.stdout, r.stdout
