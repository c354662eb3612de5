"""memberUid kept in step with member (docs/groups.md, "RFC 2307 and 2307bis on one
tree"): on a posixGroup that also is a groupOfNames (the rfc2307bis schema), with
`groups.sync_member_uid = true`. slapd has no such overlay: every test is Larch's own.

`assert_in_step` recomputes, from the entries alone, what memberUid must hold (the uid
values of the entries member names, plus values naming no entry) and what member must
hold, and compares; the SSSD test asks SSSD's own default queries (sssd-ldap(5):
`ldap_schema = rfc2307` reads memberUid, `rfc2307bis` reads member) for every user and
checks both modes give the same groups.
"""

import random

import ldap3
import pytest

import conftest
from ldaputil import add_ok, assert_result, connect, search_entries, values

pytestmark = pytest.mark.larch_only("memberUid kept in step with member is Larch's [groups] sync_member_uid")

LARCH_TOML = '[schema]\nbuiltin = "rfc2307bis"\n[groups]\nsync_member_uid = true\n'
# sssd-ldap(5) defaults: ldap_user_object_class posixAccount, ldap_user_name uid,
# ldap_group_object_class posixGroup, ldap_group_name cn, ldap_group_member memberUid
# (rfc2307) or member (rfc2307bis).
SSSD_USER_ATTRS = ["uid", "userPassword", "uidNumber", "gidNumber", "gecos", "homeDirectory",
                   "loginShell", "modifyTimestamp", "shadowLastChange", "krbPrincipalName"]
SSSD_GROUP_ATTRS = ["cn", "userPassword", "gidNumber", "modifyTimestamp"]


@pytest.fixture(scope="module")
def sync_server(request):
    yield from conftest.module_server(request, "larch-e2e-memberuid-", larch_extra_toml=LARCH_TOML)


_counter = [0]


@pytest.fixture
def t(sync_server):
    """(admin connection, a fresh subtree with ou=people and ou=groups, a uid prefix)."""
    _counter[0] += 1
    n = _counter[0]
    conn = connect(sync_server, sync_server.admin_dn, sync_server.admin_pw)
    top = f"ou=m{n},{conftest.BASE}"
    add_ok(conn, top, {"objectClass": ["organizationalUnit"], "ou": f"m{n}"})
    add_ok(conn, f"ou=people,{top}", {"objectClass": ["organizationalUnit"], "ou": "people"})
    add_ok(conn, f"ou=groups,{top}", {"objectClass": ["organizationalUnit"], "ou": "groups"})
    yield conn, top, f"m{n}"
    conn.unbind()


def norm(dn):
    return ",".join(part.strip().lower() for part in dn.split(","))


def user(conn, top, uid, number, rdn="uid"):
    dn = f"{rdn}={uid},ou=people,{top}"
    add_ok(conn, dn, {"objectClass": ["inetOrgPerson", "posixAccount"], "cn": uid, "sn": uid, "uid": uid,
                      "uidNumber": str(number), "gidNumber": "100", "homeDirectory": f"/home/{uid}"})
    return dn


def group(conn, top, name, number, members=(), uids=()):
    dn = f"cn={name},ou=groups,{top}"
    attrs = {"objectClass": ["groupOfNames", "posixGroup"], "cn": name, "gidNumber": str(number),
             "member": list(members) or [""]}
    if uids:
        attrs["memberUid"] = list(uids)
    add_ok(conn, dn, attrs)
    return dn


def read(conn, dn, attr):
    res, entries = search_entries(conn, dn, scope=ldap3.BASE, attrs=[attr])
    assert_result(res, "success")
    return values(entries[0], attr)


def assert_in_step(conn, top):
    """Every posixGroup's memberUid holds its members' uid values and its member the
    entries its memberUid values name (each uid held by one entry)."""
    res, people = search_entries(conn, f"ou=people,{top}", "(objectClass=posixAccount)", attrs=["uid"])
    assert_result(res, "success")
    uid_of = {norm(p["dn"]): values(p, "uid") for p in people}
    dn_of = {u: dn for dn, us in uid_of.items() for u in us}
    res, groups = search_entries(conn, f"ou=groups,{top}", "(objectClass=posixGroup)", attrs=["member", "memberUid"])
    assert_result(res, "success")
    for g in groups:
        members = {norm(m) for m in values(g, "member") if m}
        uids = set(values(g, "memberUid"))
        want_uids = {u for m in members for u in uid_of.get(m, [])}
        assert want_uids <= uids, f"{g['dn']}: memberUid {sorted(uids)} lacks {sorted(want_uids - uids)}"
        for u in uids:
            if u in dn_of:
                assert dn_of[u] in members, f"{g['dn']}: memberUid {u} but member lacks {dn_of[u]}"
            # A memberUid of an entry's former uid would be stale.
        stale = {u for u in uids if u not in dn_of and not u.startswith("local")}
        assert not stale, f"{g['dn']}: memberUid names no entry: {sorted(stale)}"


def test_member_and_member_uid_follow_each_other(t):
    conn, top, p = t
    a = user(conn, top, f"{p}a", 1001)
    b = user(conn, top, f"{p}b", 1002)
    c = user(conn, top, f"{p}c", 1003)
    g = group(conn, top, f"{p}g", 2001, members=[a], uids=[f"{p}b", "local1"])
    assert sorted(norm(m) for m in read(conn, g, "member")) == sorted([norm(a), norm(b)])
    assert sorted(read(conn, g, "memberUid")) == sorted([f"{p}a", f"{p}b", "local1"])
    assert conn.modify(g, {"member": [(ldap3.MODIFY_ADD, [c])]}), conn.result
    assert f"{p}c" in read(conn, g, "memberUid")
    assert conn.modify(g, {"member": [(ldap3.MODIFY_DELETE, [a])]}), conn.result
    assert f"{p}a" not in read(conn, g, "memberUid")
    assert conn.modify(g, {"memberUid": [(ldap3.MODIFY_DELETE, [f"{p}b"])]}), conn.result
    assert norm(b) not in [norm(m) for m in read(conn, g, "member")]
    assert conn.modify(g, {"memberUid": [(ldap3.MODIFY_ADD, [f"{p}a"])]}), conn.result
    assert norm(a) in [norm(m) for m in read(conn, g, "member")]
    # memberOf follows the members memberUid added.
    assert norm(g) in [norm(v) for v in read(conn, a, "memberOf")]
    assert_in_step(conn, top)


def test_a_members_uid_rename_and_delete_reach_its_groups(t):
    conn, top, p = t
    a = user(conn, top, f"{p}a", 1001)
    b = user(conn, top, f"{p}b", 1002, rdn="cn")
    g = group(conn, top, f"{p}g", 2001, members=[a, b])
    assert conn.modify_dn(a, f"uid={p}x", delete_old_dn=True), conn.result
    assert conn.modify(b, {"uid": [(ldap3.MODIFY_REPLACE, [f"{p}y"])]}), conn.result
    assert sorted(read(conn, g, "memberUid")) == sorted([f"{p}x", f"{p}y"])
    assert conn.delete(f"uid={p}x,ou=people,{top}"), conn.result
    assert read(conn, g, "memberUid") == [f"{p}y"]
    assert_in_step(conn, top)


def test_sssd_queries_in_both_schemas_see_one_membership(t):
    conn, top, p = t
    rng = random.Random(25)
    users = [user(conn, top, f"{p}u{i}", 10000 + i) for i in range(300)]
    groups = []
    for j in range(60):
        chosen = rng.sample(range(len(users)), rng.randint(1, 20))
        # Half the groups are written through member, half through memberUid.
        if j % 2:
            groups.append(group(conn, top, f"{p}g{j}", 20000 + j, members=[users[i] for i in chosen]))
        else:
            groups.append(group(conn, top, f"{p}g{j}", 20000 + j, uids=[f"{p}u{i}" for i in chosen]))
    # Some changes afterwards, through either attribute.
    for j in range(0, 60, 3):
        i = rng.randrange(len(users))
        attr, val = ("member", users[i]) if j % 2 else ("memberUid", f"{p}u{i}")
        assert conn.modify(groups[j], {attr: [(ldap3.MODIFY_ADD, [val])]}) or conn.result["result"] == 20, conn.result
    assert_in_step(conn, top)
    base = f"ou=groups,{top}"
    for i in range(0, 300, 7):
        name, dn = f"{p}u{i}", users[i]
        res, found = search_entries(conn, top, f"(&(uid={name})(objectclass=posixAccount))", attrs=SSSD_USER_ATTRS)
        assert_result(res, "success")
        assert [norm(e["dn"]) for e in found] == [norm(dn)]
        # rfc2307 initgroups, then rfc2307bis initgroups.
        res, by_uid = search_entries(conn, base, f"(&(memberUid={name})(objectclass=posixGroup)(cn=*))",
                                     attrs=SSSD_GROUP_ATTRS + ["memberUid"])
        assert_result(res, "success")
        res, by_dn = search_entries(conn, base, f"(&(member={dn})(objectclass=posixGroup)(cn=*))",
                                    attrs=SSSD_GROUP_ATTRS + ["member"])
        assert_result(res, "success")
        assert sorted(norm(e["dn"]) for e in by_uid) == sorted(norm(e["dn"]) for e in by_dn), name
    # Group lookups by name: memberUid (rfc2307) and member (rfc2307bis) name the same people.
    for g in groups[:20]:
        name = g.split(",")[0][3:]
        res, found = search_entries(conn, base, f"(&(cn={name})(objectclass=posixGroup))",
                                    attrs=SSSD_GROUP_ATTRS + ["memberUid", "member"])
        assert_result(res, "success")
        (entry,) = found
        from_dns = sorted(norm(m).split(",")[0][4:] for m in values(entry, "member") if m)
        assert sorted(u.lower() for u in values(entry, "memberUid")) == from_dns
