"""Three `larch serve` processes as one cluster (`[cluster]`, docs/cluster.md), on
127.0.0.1 with ports the test picks.

- The cluster forms, the first leader creates the suffix and admin entries, a write on the
  leader reaches every node, and a follower refers a write to the leader (referral, the
  leader's LDAP URL); `/metrics` and `cn=Cluster,cn=Monitor` say who leads.
- A node killed while the cluster writes on, after its leader's log was purged behind a
  snapshot (`cluster.snapshot_after_entries`), is sent the leader's snapshot when it
  comes back, follows the log after it, and starts from that snapshot afterwards.
- With `cluster.reads = "linearizable"`, a search on a follower right after a write was
  acknowledged by the leader finds it; with the majority gone, a node refuses to read its
  data (unavailable) but still answers cn=Monitor.
- A node that starts to lead raises its CSNs past the newest in the directory: the
  entryCSN of a write after a failover follows the one before it.
- A single server's data starts a cluster: a `larch serve` without `[cluster]` filled over
  LDAP and stopped becomes the bootstrapping node of three; the two empty nodes are sent
  its data and every node serves every entry and a new write. A node that does not
  bootstrap refuses such data in one line of its error log.
- kill -9 of the leader at random moments while a client writes (20 cycles in CI;
  CLUSTER_CYCLES=N for the long form): a new leader within a bounded time, every
  acknowledged write on every node, all nodes converging to the same entries.

Every process is signalled by its PID only.
"""

import os
import random
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request

import ldap3
import pytest

import conftest
import ldaputil

pytestmark = pytest.mark.larch_only("Larch's cluster")

BASE = conftest.BASE
LEADER_DEADLINE_S = 30.0
CONVERGE_S = 60.0


def cycles():
    n = os.environ.get("CLUSTER_CYCLES")
    return int(n) if n else 20


class Cluster:
    """Three nodes on private directories, each with a `/metrics` listener. `cluster_toml`
    goes into every node's `[cluster]` table, `node_toml(srv)` into that node's (after
    `cluster_toml`), `extra_toml` before it."""

    def __init__(self, larch_bin, n=3, cluster_toml="", node_toml=None, extra_toml=""):
        self.larch_bin = larch_bin
        self.tmp = tempfile.mkdtemp(prefix="larch-e2e-cluster-")
        self.raft_ports = {i: conftest.free_port() for i in range(1, n + 1)}
        self.nodes = {}
        for i in range(1, n + 1):
            d = os.path.join(self.tmp, f"node{i}")
            os.mkdir(d)
            srv = conftest.LdapServer("larch", d, larch_bin=larch_bin)
            srv.node_id = i
            srv.metrics_port = conftest.free_port()
            self.nodes[i] = srv
        members = "".join(
            f'\n[[cluster.members]]\nid = {i}\nraft = "127.0.0.1:{self.raft_ports[i]}"\nldap_url = "{s.url}"\n'
            for i, s in self.nodes.items())
        for i, srv in self.nodes.items():
            toml = (f'\n[metrics]\nlisten = "127.0.0.1:{srv.metrics_port}"\n' + extra_toml
                    + f"\n[cluster]\nnode_id = {i}\nbootstrap = {'true' if i == 1 else 'false'}\n"
                    + cluster_toml + (node_toml(srv) if node_toml else "") + members)
            srv._setup_larch(toml)

    def start(self):
        for srv in self.nodes.values():
            srv.spawn()
        for srv in self.nodes.values():
            srv.wait_ready()

    def start_with_people(self):
        """Starts the nodes, waits for the set-up, adds ou=people; returns the leader."""
        self.start()
        leader = self.leader()
        self.set_up()
        ldaputil.ldapadd_ok(leader, ldaputil.ldif_entry(f"ou=people,{BASE}",
                                                        {"objectClass": "organizationalUnit", "ou": "people"}))
        return leader

    def close(self):
        statuses = [(s.node_id, s.stop(), s.stderr_tail()) for s in self.nodes.values() if s.alive()]
        shutil.rmtree(self.tmp, ignore_errors=True)
        for i, status, stderr in statuses:
            assert status == 0, f"node {i} exited with status {status}; stderr:\n{stderr}"

    def role(self, srv):
        """The node's role from its `/metrics`, or None when it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return None
        m = re.search(r'^larch_cluster_role\{role="(\w+)"\} 1$', text, re.M)
        return m.group(1) if m else None

    def leader(self, deadline_s=LEADER_DEADLINE_S):
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            for srv in self.nodes.values():
                if srv.alive() and self.role(srv) == "leader":
                    return srv
            time.sleep(0.05)
        raise AssertionError("no leader within %.0fs; stderr of the nodes:\n%s" % (
            deadline_s, "\n".join(s.stderr_tail()[-1500:] for s in self.nodes.values())))

    def followers(self, leader):
        return [s for s in self.nodes.values() if s is not leader and s.alive()]

    def set_up(self):
        """Waits until the leader has created the admin entry and every node has it."""
        end = time.monotonic() + CONVERGE_S
        while time.monotonic() < end:
            if all(can_bind(s) for s in self.nodes.values()):
                return
            time.sleep(0.1)
        raise AssertionError("the admin entry did not reach every node")


def can_bind(srv):
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw, bind=False)
    try:
        return conn.bind()
    except ldap3.core.exceptions.LDAPException:
        return False
    finally:
        try:
            conn.unbind()
        except ldap3.core.exceptions.LDAPException:
            pass


@pytest.fixture
def cluster(request):
    c = Cluster(request.config.getoption("--larch-bin"))
    c.start()
    yield c
    c.close()


def entries(srv):
    """DN -> description of every entry below ou=people (None when the node is down)."""
    try:
        conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    except ldap3.core.exceptions.LDAPException:
        return None
    try:
        ok = conn.search(f"ou=people,{BASE}", "(objectClass=*)", search_scope=ldap3.SUBTREE,
                         attributes=["description"], size_limit=0)
        if not ok and conn.result["result"] != 32:
            return None
        return {e.entry_dn.lower(): sorted(e.entry_attributes_as_dict.get("description", [])) for e in conn.entries}
    finally:
        conn.unbind()


def converge(cluster, deadline_s=CONVERGE_S):
    end = time.monotonic() + deadline_s
    seen = None
    while time.monotonic() < end:
        seen = [entries(s) for s in cluster.nodes.values()]
        if seen[0] is not None and all(x == seen[0] for x in seen):
            return seen[0]
        time.sleep(0.2)
    sizes = [None if x is None else len(x) for x in seen]
    raise AssertionError(f"the nodes did not converge (entries per node: {sizes})")


def person(i):
    return ldaputil.ldif_entry(f"cn=p{i},ou=people,{BASE}", {
        "objectClass": ["person"], "cn": f"p{i}", "sn": f"s{i}", "description": f"d{i}"})


def add_person(srv, i):
    """Adds cn=p<i> through `srv`: the LDAP result code (None when the node cannot be reached)."""
    try:
        conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    except ldap3.core.exceptions.LDAPException:
        return None
    try:
        conn.add(f"cn=p{i},ou=people,{BASE}", ["person"], {"cn": f"p{i}", "sn": f"s{i}", "description": f"d{i}"})
        return conn.result
    except ldap3.core.exceptions.LDAPException:
        return None
    finally:
        try:
            conn.unbind()
        except ldap3.core.exceptions.LDAPException:
            pass


def test_a_cluster_forms_replicates_and_refers_writes_to_its_leader(cluster):
    leader = cluster.leader()
    cluster.set_up()
    ldaputil.ldapadd_ok(leader, ldaputil.ldif_entry(f"ou=people,{BASE}",
                                                    {"objectClass": "organizationalUnit", "ou": "people"})
                        + "".join(person(i) for i in range(50)))
    state = converge(cluster)
    assert len(state) == 51
    assert state[f"cn=p7,ou=people,{BASE}"] == ["d7"]

    follower = next(s for s in cluster.nodes.values() if s is not leader)
    result = add_person(follower, 1000)
    assert result["result"] == 10, result
    assert result["referrals"] == [leader.url], result

    # cn=Monitor says the same as /metrics.
    conn = ldaputil.connect(follower, follower.admin_dn, follower.admin_pw)
    try:
        conn.search("cn=Cluster,cn=Monitor", "(objectClass=*)", search_scope=ldap3.SUBTREE,
                    attributes=["monitoredInfo", "monitorCounter"])
        info = {e.entry_dn.split(",")[0].lower(): e.entry_attributes_as_dict for e in conn.entries}
    finally:
        conn.unbind()
    assert info["cn=role"]["monitoredInfo"] == ["follower"], info
    assert info["cn=leader"]["monitoredInfo"] == [str(leader.node_id)], info
    assert info["cn=node"]["monitoredInfo"] == [str(follower.node_id)], info

    # `larch cluster status` says the same in two lines.
    r = cluster_status(cluster.larch_bin, follower)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"cluster: node {follower.node_id} follower, leader {leader.node_id}, term "), lines
    members = lines[1].removeprefix("cluster members: ").split(", ")
    assert sorted(m.split()[0] for m in members) == ["1", "2", "3"], lines
    assert all(m.endswith(" voter") for m in members), lines
    # Each member with its LDAP URL, as the cluster's configuration records it.
    assert {int(m.split()[0]): m.split()[2] for m in members} == {i: s.url for i, s in cluster.nodes.items()}, lines


def snapshot_lsns(srv):
    names = os.listdir(srv.workdir / "data" / "snapshots")
    return sorted(int(m.group(1), 16) for m in map(re.compile(r"^snapshot-([0-9a-f]{16})\.snap$").match, names) if m)


def oldest_log_lsn(srv):
    names = os.listdir(srv.workdir / "data" / "wal")
    return min(int(m.group(1), 16) for m in map(re.compile(r"^wal-([0-9a-f]{16})\.log$").match, names) if m)


def add_on_leader(cluster, i):
    """Adds cn=p<i> through whichever node leads; the result code."""
    end = time.monotonic() + LEADER_DEADLINE_S
    while True:
        r = add_person(cluster.leader(), i)
        if r is not None and r["result"] not in (10, 51, 52):
            return r["result"]
        assert time.monotonic() < end, f"add of p{i}: {r}"
        time.sleep(0.05)


def test_a_node_behind_the_purged_log_is_sent_the_leaders_snapshot(request):
    cluster = Cluster(request.config.getoption("--larch-bin"), cluster_toml="snapshot_after_entries = 20\n")
    try:
        leader = cluster.start_with_people()
        converge(cluster)
        behind = next(s for s in cluster.nodes.values() if s is not leader)
        behind.kill9()
        # One add per log entry: ten snapshots' worth, the log kept behind each only ten
        # entries long, far past what the stopped node holds.
        for i in range(200):
            assert add_on_leader(cluster, i) == 0
        end = time.monotonic() + CONVERGE_S
        while not any(lsn > 150 for lsn in snapshot_lsns(cluster.leader())):
            assert time.monotonic() < end, f"no snapshot on the leader: {snapshot_lsns(cluster.leader())}"
            time.sleep(0.1)
        behind.start()
        state = converge(cluster)
        assert len(state) == 201
        assert any(lsn > 150 for lsn in snapshot_lsns(behind)), snapshot_lsns(behind)
        # Its log starts again after the snapshot it was sent.
        assert oldest_log_lsn(behind) > 150, oldest_log_lsn(behind)
        # Killed again, it starts from that snapshot and follows the writes after it.
        behind.kill9()
        assert add_on_leader(cluster, 1000) == 0
        behind.start()
        assert len(converge(cluster)) == 202
    finally:
        cluster.close()


def search_person(srv, i):
    """Searches cn=p<i> on `srv`: (result code, entries found)."""
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    try:
        conn.search(f"ou=people,{BASE}", f"(cn=p{i})", search_scope=ldap3.SUBTREE, attributes=["cn"])
        return conn.result["result"], len(conn.entries)
    finally:
        conn.unbind()


def test_linearizable_reads_on_followers_see_every_acknowledged_write(request):
    cluster = Cluster(request.config.getoption("--larch-bin"), cluster_toml='reads = "linearizable"\n')
    try:
        leader = cluster.start_with_people()
        followers = [s for s in cluster.nodes.values() if s is not leader]
        for i in range(30):
            assert add_on_leader(cluster, i) == 0
            for srv in followers:
                assert search_person(srv, i) == (0, 1), f"node {srv.node_id} read without p{i}"

        # The majority gone: the last node cannot confirm a read of its data, and says so.
        for srv in followers:
            srv.kill9()
        started = time.monotonic()
        assert search_person(leader, 0)[0] == 52
        assert time.monotonic() - started < 30
        conn = ldaputil.connect(leader, leader.admin_dn, leader.admin_pw)
        try:
            assert conn.search("cn=Cluster,cn=Monitor", "(objectClass=*)", search_scope=ldap3.SUBTREE)
        finally:
            conn.unbind()
        for srv in followers:
            srv.start()
        end = time.monotonic() + CONVERGE_S
        while search_person(cluster.leader(), 29) != (0, 1):
            assert time.monotonic() < end, "reads did not come back once the majority did"
            time.sleep(0.2)
    finally:
        cluster.close()


def entry_csn(srv, i):
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    try:
        conn.search(f"cn=p{i},ou=people,{BASE}", "(objectClass=*)", search_scope=ldap3.BASE,
                    attributes=["entryCSN"])
        return conn.entries[0].entry_attributes_as_dict["entryCSN"][0]
    finally:
        conn.unbind()


def test_a_new_leaders_csns_follow_the_newest_in_the_directory(cluster):
    first = cluster.leader()
    cluster.set_up()
    ldaputil.ldapadd_ok(first, ldaputil.ldif_entry(f"ou=people,{BASE}",
                                                   {"objectClass": "organizationalUnit", "ou": "people"}))
    assert add_on_leader(cluster, 1) == 0
    before = entry_csn(cluster.leader(), 1)
    first = cluster.leader()
    first.kill9()
    assert add_on_leader(cluster, 2) == 0
    second = cluster.leader()
    after = entry_csn(second, 2)
    assert after > before, (before, after)
    # The same server ID: one provider's CSNs.
    assert after.split("#")[2] == before.split("#")[2], (before, after)
    lines = [line for line in second.stderr_tail().splitlines() if "this node leads" in line]
    assert lines and before in lines[-1], lines
    first.start()
    assert len(converge(cluster)) == 3


def cluster_status(larch_bin, srv):
    return subprocess.run([larch_bin, "cluster", "status", "-H", srv.url, "-D", srv.admin_dn, "-w", srv.admin_pw],
                          capture_output=True, text=True, timeout=60)


def test_cluster_status_on_a_server_that_is_not_a_cluster_node(request, server):
    r = cluster_status(request.config.getoption("--larch-bin"), server)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip().splitlines()[-1] == \
        "larch cluster status: the server is not a cluster node (no cn=Cluster,cn=Monitor)", r.stderr


def test_a_single_servers_data_starts_a_cluster(request):
    cluster = Cluster(request.config.getoption("--larch-bin"))
    first, third = cluster.nodes[1], cluster.nodes[3]
    try:
        # Node 1 first serves as a single server (no [cluster]), filled over LDAP, stopped.
        cluster_toml = (first.workdir / "larch.toml").read_text()
        first._setup_larch(f'\n[metrics]\nlisten = "127.0.0.1:{first.metrics_port}"\n')
        first.start()
        ldaputil.ldapadd_ok(first, ldaputil.ldif_entry(f"ou=people,{BASE}",
                                                       {"objectClass": "organizationalUnit", "ou": "people"})
                            + "".join(person(i) for i in range(40)))
        single = entries(first)
        assert len(single) == 41
        assert first.stop() == 0, first.stderr_tail()

        # A node that does not bootstrap refuses a copy of that data, in one line.
        shutil.copytree(first.workdir / "data", third.workdir / "data")
        third.spawn()
        assert third.proc.wait(timeout=60) != 0
        third.proc = None
        assert "only the node that bootstraps the cluster (cluster.bootstrap = true) may start on existing data" \
            in third.stderr_tail(), third.stderr_tail()
        shutil.rmtree(third.workdir / "data")

        # Node 1 again, now bootstrapping the cluster; nodes 2 and 3 start empty.
        (first.workdir / "larch.toml").write_text(cluster_toml)
        cluster.start()
        assert cluster.leader() is first
        assert "made this single server's data the new cluster's starting point" in first.stderr_path.read_text()
        assert converge(cluster) == single
        assert add_on_leader(cluster, 1000) == 0
        state = converge(cluster)
        assert len(state) == 42
        assert state[f"cn=p1000,ou=people,{BASE}"] == ["d1000"]
    finally:
        cluster.close()


def test_kill9_of_the_leader_loses_no_acknowledged_write(cluster):
    rng = random.Random(22)
    cluster.leader()
    cluster.set_up()
    ldaputil.ldapadd_ok(cluster.leader(), ldaputil.ldif_entry(f"ou=people,{BASE}",
                                                              {"objectClass": "organizationalUnit",
                                                               "ou": "people"}))
    acked = []
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            done = False
            for srv in list(cluster.nodes.values()):
                if not srv.alive():
                    continue
                r = add_person(srv, i)
                if r is None or r["result"] == 10:
                    continue
                if r["result"] == 0:
                    acked.append(i)
                done = True
                break
            if done:
                i += 1
            else:
                time.sleep(0.05)

    t = threading.Thread(target=writer)
    t.start()
    failovers = []
    try:
        for _ in range(cycles()):
            time.sleep(rng.uniform(0.2, 1.0))
            leader = cluster.leader()
            killed_at = time.monotonic()
            before = len(acked)
            leader.kill9()
            end = killed_at + LEADER_DEADLINE_S
            while len(acked) == before:
                assert time.monotonic() < end, "no write acknowledged after the leader was killed"
                time.sleep(0.01)
            failovers.append(time.monotonic() - killed_at)
            leader.start()
    finally:
        stop.set()
        t.join()
    state = converge(cluster)
    lost = [i for i in acked if f"cn=p{i},ou=people,{BASE}" not in state]
    assert not lost, f"acknowledged writes lost: {lost[:20]}"
    failovers.sort()
    print(f"{len(failovers)} leader kills, {len(acked)} writes acknowledged; kill -9 of the leader to the next "
          f"acknowledged write: median {failovers[len(failovers) // 2]:.2f}s, max {failovers[-1]:.2f}s")
