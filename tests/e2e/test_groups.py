"""Groups: memberOf kept on every write that changes a membership, referential integrity
for deleted and renamed entries (docs/groups.md).

Against slapd the same tests run with its memberof overlay (`memberof-refint TRUE`, one
instance for groupOfNames/member and one for groupOfUniqueNames/uniqueMember) and its
refint overlay (`refint_attributes member uniqueMember`, `refint_nothing`), configured
alike: Larch's `[groups]` defaults, with the same placeholder for an emptied group.

After every step, `assert_consistent` (groupcheck.py) recomputes what each entry's memberOf
must hold from the groups it can read and compares (the check `larch verify` makes on a
data directory, written again here so that the server's own code is not the judge).
"""

import random
import shutil
import subprocess
import tempfile
import threading

import ldap3
import pytest

import conftest
from groupcheck import assert_member_of_consistent as assert_consistent
from groupcheck import kill9_cycles, norm
from ldaputil import add_ok, assert_result, connect, search_entries, values

PLACEHOLDER = "cn=nobody"
LARCH_TOML = f'[groups]\nempty_group_member = "{PLACEHOLDER}"\n'
SLAPD_GLOBAL = "moduleload memberof\nmoduleload refint"
SLAPD_DB = f"""overlay memberof
memberof-refint TRUE
overlay memberof
memberof-group-oc groupOfUniqueNames
memberof-member-ad uniqueMember
memberof-refint TRUE
overlay refint
refint_attributes member uniqueMember
refint_nothing {PLACEHOLDER}"""


@pytest.fixture(scope="module")
def groups_server(request):
    yield from conftest.module_server(request, "larch-e2e-groups-", larch_extra_toml=LARCH_TOML,
                                      slapd_extra_global=SLAPD_GLOBAL, slapd_extra_db=SLAPD_DB)


_counter = [0]


@pytest.fixture
def g(groups_server):
    """(admin connection, a fresh subtree with ou=people and ou=groups below it)."""
    _counter[0] += 1
    conn = connect(groups_server, groups_server.admin_dn, groups_server.admin_pw)
    top = f"ou=g{_counter[0]},{conftest.BASE}"
    add_ok(conn, top, {"objectClass": ["organizationalUnit"], "ou": f"g{_counter[0]}"})
    add_ok(conn, f"ou=people,{top}", {"objectClass": ["organizationalUnit"], "ou": "people"})
    add_ok(conn, f"ou=groups,{top}", {"objectClass": ["organizationalUnit"], "ou": "groups"})
    yield conn, top
    conn.unbind()


def user(conn, top, name):
    dn = f"uid={name},ou=people,{top}"
    add_ok(conn, dn, {"objectClass": ["inetOrgPerson"], "cn": name, "sn": name, "uid": name})
    return dn


def group(conn, top, name, members, cls="groupOfNames"):
    dn = f"cn={name},ou=groups,{top}"
    attr = "uniqueMember" if cls == "groupOfUniqueNames" else "member"
    add_ok(conn, dn, {"objectClass": [cls], "cn": name, attr: members})
    return dn


def member_of(conn, dn):
    res, entries = search_entries(conn, dn, scope=ldap3.BASE, attrs=["memberOf"])
    assert_result(res, "success")
    return sorted(norm(v) for v in values(entries[0], "memberOf"))


def members(conn, dn, attr="member"):
    res, entries = search_entries(conn, dn, scope=ldap3.BASE, attrs=[attr])
    assert_result(res, "success")
    return sorted(norm(v) for v in values(entries[0], attr))


def test_member_of_follows_the_groups_writes(g):
    conn, top = g
    u1, u2, u3 = (user(conn, top, n) for n in ("u1", "u2", "u3"))
    grp = group(conn, top, "staff", [u1, u2])
    assert member_of(conn, u1) == [norm(grp)]
    assert member_of(conn, u3) == []
    # Operational: not with "*", with "+" and by name.
    res, entries = search_entries(conn, u1, scope=ldap3.BASE, attrs=["*"])
    assert "memberof" not in {k.lower() for k, v in entries[0]["raw_attributes"].items() if v}
    res, entries = search_entries(conn, u1, scope=ldap3.BASE, attrs=["+"])
    assert [norm(v) for v in values(entries[0], "memberOf")] == [norm(grp)]
    # Filterable.
    res, found = search_entries(conn, top, f"(memberOf={grp})", attrs=["1.1"])
    assert sorted(norm(e["dn"]) for e in found) == sorted([norm(u1), norm(u2)])
    conn.modify(grp, {"member": [(ldap3.MODIFY_ADD, [u3])]})
    assert_result(conn, "success")
    assert member_of(conn, u3) == [norm(grp)]
    conn.modify(grp, {"member": [(ldap3.MODIFY_DELETE, [u1])]})
    assert_result(conn, "success")
    assert member_of(conn, u1) == []
    conn.modify(grp, {"member": [(ldap3.MODIFY_REPLACE, [u2])]})
    assert_result(conn, "success")
    assert member_of(conn, u3) == []
    assert member_of(conn, u2) == [norm(grp)]
    # A value respelled names the same entry: nothing changes for it.
    conn.modify(grp, {"member": [(ldap3.MODIFY_REPLACE, [u2.upper()])]})
    assert_result(conn, "success")
    assert member_of(conn, u2) == [norm(grp)]
    assert_consistent(conn, top)


@pytest.mark.not_slapd("slapd 2.5's memberof sets memberOf when a group changes, not when an entry it "
                       "already lists is added")
def test_an_entry_added_after_its_group_gets_member_of(g):
    conn, top = g
    later = f"uid=later,ou=people,{top}"
    grp = group(conn, top, "early", [later])
    assert member_of(conn, user(conn, top, "later")) == [norm(grp)]
    assert_consistent(conn, top)


def test_nested_groups_are_members_too(g):
    conn, top = g
    u = user(conn, top, "n1")
    inner = group(conn, top, "inner", [u])
    outer = group(conn, top, "outer", [inner])
    assert member_of(conn, inner) == [norm(outer)]
    assert member_of(conn, u) == [norm(inner)]
    assert_consistent(conn, top)


def test_renaming_and_deleting_a_group_update_its_members(g):
    conn, top = g
    u = user(conn, top, "r1")
    g1 = group(conn, top, "g1", [u])
    g2 = group(conn, top, "g2", [u])
    assert member_of(conn, u) == sorted([norm(g1), norm(g2)])
    conn.modify_dn(g1, "cn=g1new")
    assert_result(conn, "success")
    g1new = f"cn=g1new,ou=groups,{top}"
    assert member_of(conn, u) == sorted([norm(g1new), norm(g2)])
    conn.delete(g2)
    assert_result(conn, "success")
    assert member_of(conn, u) == [norm(g1new)]
    assert_consistent(conn, top)


def test_deleting_and_renaming_a_member_update_its_groups(g):
    conn, top = g
    u1, u2 = user(conn, top, "m1"), user(conn, top, "m2")
    grp = group(conn, top, "team", [u1, u2])
    conn.modify_dn(u1, "uid=m1new")
    assert_result(conn, "success")
    u1new = f"uid=m1new,ou=people,{top}"
    assert members(conn, grp) == sorted([norm(u1new), norm(u2)])
    assert member_of(conn, u1new) == [norm(grp)]
    conn.delete(u2)
    assert_result(conn, "success")
    assert members(conn, grp) == [norm(u1new)]
    assert_consistent(conn, top)


@pytest.mark.not_slapd("slapd 2.5's refint leaves the deleted DN in a group whose last member it is, "
                       "refint_nothing notwithstanding")
def test_the_last_member_deleted_leaves_the_placeholder(g):
    conn, top = g
    u = user(conn, top, "last")
    grp = group(conn, top, "lonely", [u])
    # The group's class requires a member: it keeps the placeholder.
    conn.delete(u)
    assert_result(conn, "success")
    assert members(conn, grp) == [PLACEHOLDER]
    assert_consistent(conn, top)


def test_moving_a_subtree_renames_every_name_below_it(g):
    conn, top = g
    u = user(conn, top, "s1")
    grp = group(conn, top, "movers", [u])
    add_ok(conn, f"ou=elsewhere,{top}", {"objectClass": ["organizationalUnit"], "ou": "elsewhere"})
    conn.modify_dn(f"ou=people,{top}", "ou=people", new_superior=f"ou=elsewhere,{top}")
    assert_result(conn, "success")
    moved = f"uid=s1,ou=people,ou=elsewhere,{top}"
    assert members(conn, grp) == [norm(moved)]
    assert member_of(conn, moved) == [norm(grp)]
    assert_consistent(conn, top)


@pytest.mark.not_slapd("slapd 2.5's memberof follows the rename of a group, not of an entry above it")
def test_renaming_the_container_of_groups_renames_member_of(g):
    conn, top = g
    u = user(conn, top, "t1")
    group(conn, top, "inside", [u])
    conn.modify_dn(f"ou=groups,{top}", "ou=teams")
    assert_result(conn, "success")
    assert member_of(conn, u) == [norm(f"cn=inside,ou=teams,{top}")]
    assert_consistent(conn, top)


def test_unique_member_groups(g):
    conn, top = g
    u1, u2 = user(conn, top, "q1"), user(conn, top, "q2")
    grp = group(conn, top, "uniq", [u1], cls="groupOfUniqueNames")
    assert member_of(conn, u1) == [norm(grp)]
    conn.modify(grp, {"uniqueMember": [(ldap3.MODIFY_ADD, [u2])]})
    assert_result(conn, "success")
    assert member_of(conn, u2) == [norm(grp)]
    conn.delete(u1)
    assert_result(conn, "success")
    assert members(conn, grp, "uniqueMember") == [norm(u2)]
    assert_consistent(conn, top)


def test_clients_cannot_write_member_of(g):
    conn, top = g
    u = user(conn, top, "w1")
    grp = group(conn, top, "w", [u])
    conn.add(f"uid=w2,ou=people,{top}", attributes={
        "objectClass": ["inetOrgPerson"], "cn": "w2", "sn": "w2", "uid": "w2", "memberOf": [grp]})
    assert_result(conn, "constraintViolation")
    conn.modify(u, {"memberOf": [(ldap3.MODIFY_DELETE, [grp])]})
    assert_result(conn, "constraintViolation")
    assert member_of(conn, u) == [norm(grp)]


@pytest.mark.not_slapd("slapd 2.5's memberof overlay was seen to leave memberOf values the groups no longer "
                       "give under concurrent group modifies: its changes to the members are separate operations")
def test_concurrent_membership_writes_stay_consistent(g, groups_server):
    """Eight connections add and remove members of shared groups, rename and delete users
    and groups at once; memberOf is right at the end."""
    conn, top = g
    users = [user(conn, top, f"c{i}") for i in range(24)]
    groups = [group(conn, top, f"cg{i}", random.sample(users, 5)) for i in range(6)]
    errors = []

    def work(seed):
        rnd = random.Random(seed)
        c = connect(groups_server, groups_server.admin_dn, groups_server.admin_pw)
        try:
            for _ in range(40):
                grp = rnd.choice(groups)
                op = rnd.random()
                if op < 0.4:
                    c.modify(grp, {"member": [(ldap3.MODIFY_ADD, [rnd.choice(users)])]})
                elif op < 0.8:
                    c.modify(grp, {"member": [(ldap3.MODIFY_DELETE, [rnd.choice(users)])]})
                else:
                    c.modify(grp, {"member": [(ldap3.MODIFY_REPLACE, rnd.sample(users, 3))]})
                # 16 and 20: value already there, or no such value: refused, nothing done.
                if c.result["result"] not in (0, 16, 20):
                    errors.append(c.result)
        finally:
            c.unbind()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert_consistent(conn, top)


# Kill cycles of the crash test, and the random delay before each kill (seconds).
CRASH_CYCLES = 5
CRASH_KILL_AFTER_S = (0.2, 1.0)


@pytest.mark.larch_only("kill -9 of larch serve, then `larch verify` of its data directory")
def test_member_of_and_members_survive_kill_9(request):
    """Writers change memberships, delete and re-add members and groups (writes whose hooks
    change many entries: one commit unit each), rename members back and forth; the server
    is killed with SIGKILL at a random moment; after each restart every memberOf is what
    the groups give, and at the end `larch verify` finds the data directory consistent."""
    tmp = tempfile.mkdtemp(prefix="larch-e2e-groups-crash-")
    srv = conftest.make_server(request.config, tmp, larch_extra_toml=LARCH_TOML)
    try:
        srv.start()
        conn = connect(srv, srv.admin_dn, srv.admin_pw)
        top = f"ou=crash,{conftest.BASE}"
        add_ok(conn, top, {"objectClass": ["organizationalUnit"], "ou": "crash"})
        add_ok(conn, f"ou=people,{top}", {"objectClass": ["organizationalUnit"], "ou": "people"})
        add_ok(conn, f"ou=groups,{top}", {"objectClass": ["organizationalUnit"], "ou": "groups"})
        users = [user(conn, top, f"k{i}") for i in range(40)]
        groups = [group(conn, top, f"kg{i}", users[i * 4:i * 4 + 12]) for i in range(8)]
        conn.unbind()

        def check():
            c = connect(srv, srv.admin_dn, srv.admin_pw)
            assert_consistent(c, top)
            c.unbind()

        kill9_cycles(srv, lambda s, stop, seed: _crash_writer(s, users, groups, stop, seed),
                     cycles=CRASH_CYCLES, writers=4, kill_after_s=CRASH_KILL_AFTER_S, check=check)
        assert srv.stop() == 0
        verify = subprocess.run([str(srv.larch_bin), "verify", "--data", str(srv.workdir / "data")],
                                capture_output=True, text=True, timeout=120)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert "memberOf         ok" in verify.stdout, verify.stdout
    finally:
        if srv.alive():
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _crash_writer(srv, users, groups, stop, seed):
    """One connection's writes until `stop` or the server goes away."""
    rnd = random.Random(seed)
    try:
        c = connect(srv, srv.admin_dn, srv.admin_pw)
    except Exception:  # noqa: BLE001 - the server may be gone already
        return
    try:
        while not stop.is_set():
            op = rnd.random()
            grp = rnd.choice(groups)
            u = rnd.choice(users)
            if op < 0.3:
                c.modify(grp, {"member": [(ldap3.MODIFY_ADD, [u])]})
            elif op < 0.5:
                c.modify(grp, {"member": [(ldap3.MODIFY_DELETE, [u])]})
            elif op < 0.65:
                # A member deleted and added again: referential integrity changes its groups.
                c.delete(u)
                name = u.split(",")[0].split("=")[1]
                c.add(u, attributes={"objectClass": ["inetOrgPerson"], "cn": name, "sn": name, "uid": name})
            elif op < 0.8:
                # A group deleted and made again: memberOf changes on every member.
                c.delete(grp)
                c.add(grp, attributes={"objectClass": ["groupOfNames"], "cn": grp.split(",")[0][3:],
                                       "member": rnd.sample(users, 10)})
            else:
                # A member renamed away and back.
                rdn, rest = u.split(",", 1)
                c.modify_dn(u, rdn + "x")
                c.modify_dn(f"{rdn}x,{rest}", rdn)
    except Exception:  # noqa: BLE001 - the kill closes the connection mid-request
        pass


IN_CHAIN = "1.2.840.113556.1.4.1941"


def chain_search(conn, base, filt):
    res, entries = search_entries(conn, base, filt, attrs=["1.1"])
    assert_result(res, "success")
    return sorted(norm(e["dn"]) for e in entries)


def transitive(conn, dn):
    res, entries = search_entries(conn, dn, scope=ldap3.BASE, attrs=["transitiveMemberOf"])
    assert_result(res, "success")
    return sorted(norm(v) for v in values(entries[0], "transitiveMemberOf"))


@pytest.mark.not_slapd("slapd 2.5 has no in-chain rule (its nestgroup overlay came in 2.6)")
def test_in_chain_follows_nested_groups_ten_deep(g):
    """g0 lists u; g1 lists g0; ... g9 lists g8. Every group above u finds it, u finds
    every group above it, and the rule combines with other filters."""
    conn, top = g
    u = user(conn, top, "deep")
    other = user(conn, top, "other")
    levels = []
    below = u
    for i in range(10):
        below = group(conn, top, f"level{i}", [below])
        levels.append(below)
    assert member_of(conn, u) == [norm(levels[0])]
    assert transitive(conn, u) == sorted(norm(x) for x in levels)
    for i, grp in enumerate(levels):
        members = chain_search(conn, top, f"(memberOf:{IN_CHAIN}:={grp})")
        assert members == sorted([norm(u)] + [norm(x) for x in levels[:i]]), grp
    assert chain_search(conn, top, f"(member:{IN_CHAIN}:={u})") == sorted(norm(x) for x in levels)
    # With other filters: people only, a negation, an OR with a plain equality.
    assert chain_search(conn, top, f"(&(objectClass=inetOrgPerson)(memberOf:{IN_CHAIN}:={levels[9]}))") \
        == [norm(u)]
    assert chain_search(conn, top,
                        f"(&(objectClass=inetOrgPerson)(!(memberOf:{IN_CHAIN}:={levels[9]})))") == [norm(other)]
    assert chain_search(conn, top, f"(|(uid=other)(member:{IN_CHAIN}:={levels[7]}))") \
        == sorted([norm(other), norm(levels[8]), norm(levels[9])])
    # The groups a group is not in, the same asserted twice, and scope base on one group.
    assert chain_search(conn, top, f"(&(objectClass=groupOfNames)(!(member:{IN_CHAIN}:={levels[7]})))") \
        == sorted(norm(x) for x in levels[:8])
    assert chain_search(conn, top, f"(&(member:{IN_CHAIN}:={u})(!(member:{IN_CHAIN}:={levels[4]})))") \
        == sorted(norm(x) for x in levels[:5])
    for base, found in ((levels[9], [norm(levels[9])]), (levels[0], [])):
        res, entries = search_entries(conn, base, f"(member:{IN_CHAIN}:={levels[7]})", scope=ldap3.BASE,
                                      attrs=["1.1"])
        assert_result(res, "success")
        assert [norm(e["dn"]) for e in entries] == found
    # Cutting the chain in the middle: the groups above the cut no longer hold u.
    conn.modify(levels[5], {"member": [(ldap3.MODIFY_REPLACE, [other])]})
    assert_result(conn, "success")
    assert transitive(conn, u) == sorted(norm(x) for x in levels[:5])
    assert chain_search(conn, top, f"(memberOf:{IN_CHAIN}:={levels[9]})") \
        == sorted([norm(other)] + [norm(x) for x in levels[5:9]])
    # A rename of a group in the middle renames it in every chain below it.
    conn.modify_dn(levels[2], "cn=renamed2")
    assert_result(conn, "success")
    assert norm(f"cn=renamed2,ou=groups,{top}") in transitive(conn, u)
    assert_consistent(conn, top)


@pytest.mark.not_slapd("slapd 2.5 has no in-chain rule (its nestgroup overlay came in 2.6)")
def test_in_chain_handles_a_cycle(g):
    conn, top = g
    u = user(conn, top, "cyc")
    a = group(conn, top, "ca", [u])
    b = group(conn, top, "cb", [a])
    conn.modify(a, {"member": [(ldap3.MODIFY_ADD, [b])]})
    assert_result(conn, "success")
    assert transitive(conn, u) == sorted([norm(a), norm(b)])
    # Each group of the cycle is in its own chain.
    assert transitive(conn, a) == sorted([norm(a), norm(b)])
    assert chain_search(conn, top, f"(memberOf:{IN_CHAIN}:={a})") == sorted([norm(u), norm(a), norm(b)])
    assert_consistent(conn, top)


@pytest.mark.not_slapd("slapd 2.5 has no in-chain rule (its nestgroup overlay came in 2.6)")
def test_a_thousand_members_and_a_nested_group(g):
    conn, top = g
    users = [f"uid=thousand{i},ou=people,{top}" for i in range(1000)]
    for i in range(1000):
        conn.add(users[i], attributes={"objectClass": ["inetOrgPerson"], "cn": f"thousand{i}", "sn": "t",
                                       "uid": f"thousand{i}"})
        assert_result(conn, "success")
    big = group(conn, top, "big", users)
    outer = group(conn, top, "outer", [big])
    assert len(chain_search(conn, top, f"(memberOf:{IN_CHAIN}:={outer})")) == 1001
    assert transitive(conn, users[500]) == sorted([norm(big), norm(outer)])
    conn.delete(outer)
    assert_result(conn, "success")
    assert transitive(conn, users[500]) == [norm(big)]
    conn.delete(big)
    assert_result(conn, "success")
    assert transitive(conn, users[0]) == []
    assert member_of(conn, users[999]) == []


# crates/server/src/groups/chain.rs
MAX_GROUP_NESTING = 32


@pytest.mark.larch_only("transitiveMemberOf and its depth bound are Larch's")
def test_the_chain_stops_at_the_nesting_bound(g):
    conn, top = g
    u = user(conn, top, "bounded")
    levels = []
    below = u
    for i in range(MAX_GROUP_NESTING + 3):
        below = group(conn, top, f"b{i}", [below])
        levels.append(below)
    assert transitive(conn, u) == sorted(norm(x) for x in levels[:MAX_GROUP_NESTING])
    assert transitive(conn, levels[0]) == sorted(norm(x) for x in levels[1:MAX_GROUP_NESTING + 1])
