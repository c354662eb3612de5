"""memberUid kept in step with member (docs/groups.md, "RFC 2307 and 2307bis on one
tree"): on a posixGroup that also is a groupOfNames or groupOfUniqueNames (the rfc2307bis
schema), with `groups.sync_member_uid = true`. slapd has no such overlay: every test is
Larch's own.

`assert_in_step` recomputes, from the entries alone, what memberUid must hold (the uid
values of the entries member names, plus values naming no entry) and what member must
hold, and compares. The SSSD tests ask SSSD's own queries (the filters its LDAP provider
builds with the sssd-ldap(5) defaults, `ldap_schema = rfc2307` reading memberUid and
`rfc2307bis` reading member) and check both modes give the same groups; on a tree of 10,000
people and 1,000 groups made by `larch gen --posix` and `larch import`, SSSD's and
Keycloak's LDAP federation queries are checked against what the generated LDIF implies.
Kill -9 cycles of writers through both attributes end in the same recompute, memberOf's,
and `larch verify`.
"""

import base64
import random
import shutil
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

import ldap3
import pytest
from ldap3.utils.conv import escape_filter_chars

import conftest
from groupcheck import assert_member_of_consistent, kill9_cycles, norm
from ldaputil import add_ok, assert_result, connect, search_entries, values

pytestmark = pytest.mark.larch_only("memberUid kept in step with member is Larch's [groups] sync_member_uid")

LARCH_TOML = '[schema]\nbuiltin = "rfc2307bis"\n[groups]\nsync_member_uid = true\n'
# sssd-ldap(5) defaults: ldap_user_object_class posixAccount, ldap_user_name uid,
# ldap_group_object_class posixGroup, ldap_group_name cn, ldap_group_member memberUid
# (rfc2307) or member (rfc2307bis).
SSSD_USER_ATTRS = ["uid", "userPassword", "uidNumber", "gidNumber", "gecos", "homeDirectory",
                   "loginShell", "modifyTimestamp", "shadowLastChange", "krbPrincipalName"]
SSSD_GROUP_ATTRS = ["cn", "userPassword", "gidNumber", "modifyTimestamp"]

# The filters SSSD's LDAP provider (src/providers/ldap/ldap_id.c, sdap_async_initgroups.c,
# sdap_async_enum.c) builds for a POSIX domain without ID mapping, with the default maps.
SSSD_HAS_UID_NUMBER = "(&(uidNumber=*)(!(uidNumber=0)))"
SSSD_HAS_GID_NUMBER = "(&(gidNumber=*)(!(gidNumber=0)))"
SSSD_ENUM_USERS = "(&(objectclass=posixAccount)(uid=*)(uidNumber=*)(gidNumber=*))"
SSSD_ENUM_GROUPS = f"(&(objectClass=posixGroup)(cn=*){SSSD_HAS_GID_NUMBER})"
# sssd-ldap(5) ldap_page_size.
SSSD_PAGE_SIZE = 1000


def sssd_user_filter(attr, value):
    """getpwnam (attr uid) and getpwuid (attr uidNumber)."""
    return f"(&({attr}={escape_filter_chars(value)})(objectclass=posixAccount)(uid=*){SSSD_HAS_UID_NUMBER})"


def sssd_group_filter(attr, value):
    """getgrnam (attr cn) and getgrgid (attr gidNumber)."""
    return f"(&({attr}={escape_filter_chars(value)})(objectClass=posixGroup)(cn=*){SSSD_HAS_GID_NUMBER})"


def sssd_initgroups(conn, base, name, dn):
    """The groups of a user as SSSD's initgroups finds them: (rfc2307, by memberUid=name;
    rfc2307bis, by member=DN), each a sorted list of normalized DNs."""
    res, by_uid = search_entries(
        conn, base, f"(&(memberUid={escape_filter_chars(name)})(objectClass=posixGroup)(cn=*){SSSD_HAS_GID_NUMBER})",
        attrs=SSSD_GROUP_ATTRS + ["memberUid"])
    assert_result(res, "success")
    res, by_dn = search_entries(conn, base, f"(&(member={escape_filter_chars(dn)})(objectClass=posixGroup)(cn=*))",
                                attrs=SSSD_GROUP_ATTRS + ["member"])
    assert_result(res, "success")
    return sorted(norm(e["dn"]) for e in by_uid), sorted(norm(e["dn"]) for e in by_dn)


def paged_dns(conn, base, filt, attrs, page_size):
    """Every entry a paged search (RFC 2696) returns, as normalized DNs, with the size of
    each page; each page holds at most page_size entries."""
    found, pages, cookie = [], [], None
    while True:
        conn.search(base, filt, attributes=attrs, paged_size=page_size, paged_cookie=cookie)
        assert_result(conn.result, "success")
        page = [r for r in conn.response if r.get("type") == "searchResEntry"]
        assert len(page) <= page_size
        pages.append(len(page))
        found.extend(norm(e["dn"]) for e in page)
        cookie = conn.result["controls"]["1.2.840.113556.1.4.319"]["value"]["cookie"]
        if not cookie:
            return found, pages


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


def user(conn, top, uid, number, rdn="uid"):
    dn = f"{rdn}={uid},ou=people,{top}"
    add_ok(conn, dn, {"objectClass": ["inetOrgPerson", "posixAccount"], "cn": uid, "sn": uid, "uid": uid,
                      "uidNumber": str(number), "gidNumber": "100", "homeDirectory": f"/home/{uid}"})
    return dn


def group(conn, top, name, number, members=(), uids=(), cls="groupOfNames"):
    dn = f"cn={name},ou=groups,{top}"
    attr = "uniqueMember" if cls == "groupOfUniqueNames" else "member"
    attrs = {"objectClass": [cls, "posixGroup"], "cn": name, "gidNumber": str(number),
             attr: list(members) or [""]}
    if uids:
        attrs["memberUid"] = list(uids)
    add_ok(conn, dn, attrs)
    return dn


def read(conn, dn, attr):
    res, entries = search_entries(conn, dn, scope=ldap3.BASE, attrs=[attr])
    assert_result(res, "success")
    return values(entries[0], attr)


def assert_in_step(conn, top, foreign=lambda u: u.startswith("local")):
    """Every posixGroup's memberUid holds its members' uid values and its member (or
    uniqueMember) the entries its memberUid values name (each uid held by one entry); a
    memberUid value that names no entry is one `foreign` accepts (a name clients wrote),
    never a stale uid."""
    res, people = search_entries(conn, f"ou=people,{top}", "(objectClass=posixAccount)", attrs=["uid"])
    assert_result(res, "success")
    uid_of = {norm(p["dn"]): values(p, "uid") for p in people}
    dn_of = {u: dn for dn, us in uid_of.items() for u in us}
    res, groups = search_entries(conn, f"ou=groups,{top}", "(objectClass=posixGroup)",
                                 attrs=["member", "uniqueMember", "memberUid"])
    assert_result(res, "success")
    for g in groups:
        members = {norm(m) for m in values(g, "member") + values(g, "uniqueMember") if m}
        uids = set(values(g, "memberUid"))
        want_uids = {u for m in members for u in uid_of.get(m, [])}
        assert want_uids <= uids, f"{g['dn']}: memberUid {sorted(uids)} lacks {sorted(want_uids - uids)}"
        for u in uids:
            if u in dn_of:
                assert dn_of[u] in members, f"{g['dn']}: memberUid {u} but member lacks {dn_of[u]}"
            # A memberUid of an entry's former uid would be stale.
        stale = {u for u in uids if u not in dn_of and not foreign(u)}
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
        res, found = search_entries(conn, top, sssd_user_filter("uid", name), attrs=SSSD_USER_ATTRS)
        assert_result(res, "success")
        assert [norm(e["dn"]) for e in found] == [norm(dn)]
        by_uid, by_dn = sssd_initgroups(conn, base, name, dn)
        assert by_uid == by_dn, name
    # Group lookups by name: memberUid (rfc2307) and member (rfc2307bis) name the same people.
    for g in groups[:20]:
        name = g.split(",")[0][3:]
        res, found = search_entries(conn, base, sssd_group_filter("cn", name),
                                    attrs=SSSD_GROUP_ATTRS + ["memberUid", "member"])
        assert_result(res, "success")
        (entry,) = found
        from_dns = sorted(norm(m).split(",")[0][4:] for m in values(entry, "member") if m)
        assert sorted(u.lower() for u in values(entry, "memberUid")) == from_dns


def member_of(conn, dn):
    return sorted(norm(v) for v in read(conn, dn, "memberOf"))


def test_an_entry_added_renamed_or_changed_into_a_listed_uid_joins_member(t):
    """A memberUid value naming no entry yet names the entry that later takes that uid:
    added with it, renamed into it, or given it by a modify."""
    conn, top, p = t
    g = group(conn, top, f"{p}g", 2001, uids=[f"{p}late", f"{p}moved", f"{p}changed"])
    assert [m for m in read(conn, g, "member") if m] == []
    late = user(conn, top, f"{p}late", 1001)
    assert norm(late) in [norm(m) for m in read(conn, g, "member")]
    assert member_of(conn, late) == [norm(g)]
    # Renamed into a listed uid (the old RDN value deleted: the uid changes).
    other = user(conn, top, f"{p}other", 1002)
    assert conn.modify_dn(other, f"uid={p}moved", delete_old_dn=True), conn.result
    moved = f"uid={p}moved,ou=people,{top}"
    assert norm(moved) in [norm(m) for m in read(conn, g, "member")]
    assert member_of(conn, moved) == [norm(g)]
    # Given a listed uid by a modify (its RDN is cn: the uid is any attribute).
    third = user(conn, top, f"{p}third", 1003, rdn="cn")
    assert conn.modify(third, {"uid": [(ldap3.MODIFY_ADD, [f"{p}changed"])]}), conn.result
    assert norm(third) in [norm(m) for m in read(conn, g, "member")]
    assert f"{p}third" in read(conn, g, "memberUid")
    assert member_of(conn, third) == [norm(g)]
    assert_in_step(conn, top)
    assert_member_of_consistent(conn, top)


def test_an_entry_added_under_a_listed_dn_brings_its_uid(t):
    """A member DN naming no entry yet: the entry added under it brings its uid."""
    conn, top, p = t
    later = f"uid={p}later,ou=people,{top}"
    g = group(conn, top, f"{p}g", 2001, members=[later])
    assert read(conn, g, "memberUid") == []
    user(conn, top, f"{p}later", 1001)
    assert read(conn, g, "memberUid") == [f"{p}later"]
    assert_in_step(conn, top)


def test_group_of_unique_names_and_posix_group_are_kept_in_step(t):
    conn, top, p = t
    a = user(conn, top, f"{p}a", 1001)
    b = user(conn, top, f"{p}b", 1002)
    c = user(conn, top, f"{p}c", 1003)
    g = group(conn, top, f"{p}ug", 2001, members=[a], uids=[f"{p}b"], cls="groupOfUniqueNames")
    assert sorted(norm(m) for m in read(conn, g, "uniqueMember")) == sorted([norm(a), norm(b)])
    assert sorted(read(conn, g, "memberUid")) == sorted([f"{p}a", f"{p}b"])
    assert read(conn, g, "member") == []
    assert conn.modify(g, {"uniqueMember": [(ldap3.MODIFY_ADD, [c])]}), conn.result
    assert f"{p}c" in read(conn, g, "memberUid")
    assert conn.modify(g, {"memberUid": [(ldap3.MODIFY_DELETE, [f"{p}a"])]}), conn.result
    assert norm(a) not in [norm(m) for m in read(conn, g, "uniqueMember")]
    assert member_of(conn, a) == []
    assert member_of(conn, b) == [norm(g)]
    # A member renamed and one deleted reach the group's memberUid.
    assert conn.modify_dn(b, f"uid={p}bb", delete_old_dn=True), conn.result
    assert sorted(read(conn, g, "memberUid")) == sorted([f"{p}bb", f"{p}c"])
    assert conn.delete(c), conn.result
    assert read(conn, g, "memberUid") == [f"{p}bb"]
    # A uid listed before its entry exists.
    assert conn.modify(g, {"memberUid": [(ldap3.MODIFY_ADD, [f"{p}d"])]}), conn.result
    d = user(conn, top, f"{p}d", 1004)
    assert norm(d) in [norm(m) for m in read(conn, g, "uniqueMember")]
    assert member_of(conn, d) == [norm(g)]
    assert_in_step(conn, top)
    assert_member_of_consistent(conn, top)


def larch(server_or_config, *args, timeout=300):
    """Runs the larch binary with args; returns the CompletedProcess."""
    binary = server_or_config.larch_bin if hasattr(server_or_config, "larch_bin") \
        else server_or_config.getoption("--larch-bin")
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout)


IMPORT_LDIF = """dn: dc=example,dc=com
objectClass: dcObject
objectClass: organization
dc: example
o: example

dn: ou=people,dc=example,dc=com
objectClass: organizationalUnit
ou: people

dn: ou=groups,dc=example,dc=com
objectClass: organizationalUnit
ou: groups
{people}
dn: cn=bydn,ou=groups,dc=example,dc=com
objectClass: groupOfNames
objectClass: posixGroup
cn: bydn
gidNumber: 2001
member: uid=i0,ou=people,dc=example,dc=com
member: uid=i1,ou=people,dc=example,dc=com

dn: cn=mixed,ou=groups,dc=example,dc=com
objectClass: groupOfNames
objectClass: posixGroup
cn: mixed
gidNumber: 2002
member: uid=i2,ou=people,dc=example,dc=com
memberUid: i3
memberUid: localonly

dn: cn=unique,ou=groups,dc=example,dc=com
objectClass: groupOfUniqueNames
objectClass: posixGroup
cn: unique
gidNumber: 2003
uniqueMember: uid=i0,ou=people,dc=example,dc=com
memberUid: i1

dn: cn=plain,ou=groups,dc=example,dc=com
objectClass: groupOfNames
cn: plain
member: uid=i3,ou=people,dc=example,dc=com
"""


def test_import_brings_member_and_member_uid_in_step_and_verify_checks_it(request):
    """`larch import` with sync_member_uid on computes both attributes (and memberOf from the
    members that adds); without it the LDIF's values stay, and `larch verify` with the
    setting on names a group that is not in step."""
    people = "".join(f"""
dn: uid=i{i},ou=people,dc=example,dc=com
objectClass: inetOrgPerson
objectClass: posixAccount
cn: i{i}
sn: i{i}
uid: i{i}
uidNumber: {1000 + i}
gidNumber: 100
homeDirectory: /home/i{i}
""" for i in range(4))
    tmp = Path(tempfile.mkdtemp(prefix="larch-e2e-memberuid-import-"))
    try:
        ldif = tmp / "in.ldif"
        ldif.write_text(IMPORT_LDIF.format(people=people))
        for name, data in (("on", "on"), ("off", "off"), ("check-off", "off")):
            sync = "false" if name == "off" else "true"
            (tmp / f"{name}.toml").write_text(f'[server]\ndata_dir = "{data}"\n[schema]\nbuiltin = "rfc2307bis"\n'
                                              f'[groups]\nsync_member_uid = {sync}\n')
        # Without the setting: stored as the LDIF has them; verify with it on refuses.
        done = larch(request.config, "import", "--config", str(tmp / "off.toml"), str(ldif))
        assert done.returncode == 0, done.stderr
        assert "memberUid" not in done.stdout
        done = larch(request.config, "verify", "--config", str(tmp / "off.toml"))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "memberUid        not checked" in done.stdout
        done = larch(request.config, "verify", "--config", str(tmp / "check-off.toml"))
        assert done.returncode == 1, done.stdout
        assert "POSIX groups not in step" in done.stdout and "cn=bydn,ou=groups,dc=example,dc=com" in done.stdout
        # With it: three groups brought in step (not the one that is no posixGroup).
        done = larch(request.config, "import", "--config", str(tmp / "on.toml"), str(ldif))
        assert done.returncode == 0, done.stderr
        assert "member and memberUid brought in step: 3 POSIX groups updated" in done.stdout, done.stdout
        done = larch(request.config, "verify", "--config", str(tmp / "on.toml"))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "memberUid        ok" in done.stdout and "memberOf         ok" in done.stdout, done.stdout
        out = tmp / "out.ldif"
        done = larch(request.config, "export", "--config", str(tmp / "on.toml"), "-o", str(out))
        assert done.returncode == 0, done.stderr
        entries = parse_ldif(out.read_bytes())
        person = {f"i{i}": f"uid=i{i},ou=people,dc=example,dc=com" for i in range(4)}

        def got(dn, attr):
            return sorted(norm(v) if attr != "memberUid" else v for v in entries[norm(dn)].get(attr.lower(), []))

        bydn, mixed = "cn=bydn,ou=groups,dc=example,dc=com", "cn=mixed,ou=groups,dc=example,dc=com"
        unique, plain = "cn=unique,ou=groups,dc=example,dc=com", "cn=plain,ou=groups,dc=example,dc=com"
        assert got(bydn, "memberUid") == ["i0", "i1"]
        assert got(mixed, "member") == sorted(norm(person[u]) for u in ("i2", "i3"))
        assert got(mixed, "memberUid") == ["i2", "i3", "localonly"]
        assert got(unique, "uniqueMember") == sorted(norm(person[u]) for u in ("i0", "i1"))
        assert got(unique, "memberUid") == ["i0", "i1"]
        assert got(plain, "member") == [norm(person["i3"])] and got(plain, "memberUid") == []
        # memberOf follows the members the import added.
        assert got(person["i3"], "memberOf") == sorted([norm(mixed), norm(plain)])
        assert got(person["i1"], "memberOf") == sorted([norm(bydn), norm(unique)])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def parse_ldif(data):
    """The records of an LDIF: {normalized DN: {lowercased attribute: [values]}} (folded
    lines joined, base64 values decoded)."""
    lines = []
    for raw in data.decode("utf-8").split("\n"):
        if raw.startswith(" ") and lines:
            lines[-1] += raw[1:]
        else:
            lines.append(raw)
    records, current = {}, None
    for line in lines + [""]:
        if not line:
            if current is not None:
                records[norm(current["dn"][0])] = current
            current = None
            continue
        if line.startswith("#") or line.startswith("version:"):
            continue
        name, _, rest = line.partition(":")
        value = base64.b64decode(rest[2:]).decode("utf-8") if rest.startswith(":") else rest.lstrip(" ")
        current = current if current is not None else {}
        current.setdefault(name.lower(), []).append(value)
    return records


# Kill cycles of the crash test, and the random delay before each kill (seconds).
CRASH_CYCLES = 4
CRASH_KILL_AFTER_S = (0.2, 1.0)
CRASH_USERS = 30


def test_member_and_member_uid_survive_kill_9(request):
    """Writers change memberships through member and through memberUid, delete and re-add
    users, rename them (changing their uid) away and back; the server is killed with
    SIGKILL at a random moment; after each restart every posixGroup's member and memberUid
    agree and every memberOf is what the groups give, recomputed from scratch; at the end
    `larch verify` checks the data directory (memberUid and memberOf)."""
    tmp = tempfile.mkdtemp(prefix="larch-e2e-memberuid-crash-")
    srv = conftest.make_server(request.config, tmp, larch_extra_toml=LARCH_TOML)
    try:
        srv.start()
        conn = connect(srv, srv.admin_dn, srv.admin_pw)
        top = f"ou=crash,{conftest.BASE}"
        add_ok(conn, top, {"objectClass": ["organizationalUnit"], "ou": "crash"})
        add_ok(conn, f"ou=people,{top}", {"objectClass": ["organizationalUnit"], "ou": "people"})
        add_ok(conn, f"ou=groups,{top}", {"objectClass": ["organizationalUnit"], "ou": "groups"})
        names = [f"k{i}" for i in range(CRASH_USERS)]
        users = [user(conn, top, n, 3000 + i) for i, n in enumerate(names)]
        groups = []
        for j in range(8):
            chosen = range(j * 3, j * 3 + 8)
            if j % 2:
                groups.append(group(conn, top, f"kg{j}", 4000 + j, members=[users[i] for i in chosen]))
            else:
                groups.append(group(conn, top, f"kg{j}", 4000 + j, uids=[names[i] for i in chosen]))
        conn.unbind()
        # memberUid values clients write name these users; one may name no entry while its
        # user is deleted. A renamed user's other uid (k3x) is never written by a client:
        # left behind in a memberUid it would be stale.
        written = set(names)

        def check():
            c = connect(srv, srv.admin_dn, srv.admin_pw)
            assert_in_step(c, top, foreign=lambda u: u in written)
            assert_member_of_consistent(c, top)
            c.unbind()

        check()

        def writer(s, stop, seed):
            _crash_writer(s, top, names, groups, stop, seed)

        kill9_cycles(srv, writer, cycles=CRASH_CYCLES, writers=4, kill_after_s=CRASH_KILL_AFTER_S, check=check,
                     seed=25)
        assert srv.stop() == 0
        verify = larch(srv, "verify", "--config", str(srv.workdir / "larch.toml"), timeout=120)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert "memberUid        ok" in verify.stdout and "memberOf         ok" in verify.stdout, verify.stdout
    finally:
        if srv.alive():
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _crash_writer(srv, top, names, groups, stop, seed):
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
            i = rnd.randrange(len(names))
            name = names[i]
            dn = f"uid={name},ou=people,{top}"
            if op < 0.2:
                c.modify(grp, {"member": [(rnd.choice([ldap3.MODIFY_ADD, ldap3.MODIFY_DELETE]), [dn])]})
            elif op < 0.45:
                c.modify(grp, {"memberUid": [(rnd.choice([ldap3.MODIFY_ADD, ldap3.MODIFY_DELETE]), [name])]})
            elif op < 0.55:
                # Both attributes in one modify: one membership added, another removed.
                other = names[rnd.randrange(len(names))]
                c.modify(grp, {"member": [(ldap3.MODIFY_ADD, [dn])],
                               "memberUid": [(ldap3.MODIFY_DELETE, [other])]})
            elif op < 0.75:
                # A user deleted and added again: its uid leaves its groups' memberUid, and
                # comes back to the groups whose memberUid named it meanwhile.
                c.delete(dn)
                c.add(dn, attributes={"objectClass": ["inetOrgPerson", "posixAccount"], "cn": name, "sn": name,
                                      "uid": name, "uidNumber": str(3000 + i), "gidNumber": "100",
                                      "homeDirectory": f"/home/{name}"})
            else:
                # A user renamed away and back, its uid with its RDN.
                c.modify_dn(dn, f"uid={name}x", delete_old_dn=True)
                c.modify_dn(f"uid={name}x,ou=people,{top}", f"uid={name}", delete_old_dn=True)
    except Exception:  # noqa: BLE001 - the kill closes the connection mid-request
        pass
    finally:
        try:
            c.unbind()
        except Exception:  # noqa: BLE001 - already closed by the kill
            pass


# The generated tree of the SSSD and Keycloak test: `larch gen --posix` (crates/bench/src/gen.rs).
GEN_PEOPLE = 10_000
GEN_GROUPS = 1_000
GEN_MEMBERS = 50
GEN_OUS = 4
PEOPLE_BASE = f"ou=People,{conftest.BASE}"
GROUPS_BASE = f"ou=Groups,{conftest.BASE}"
# Keycloak's LDAP federation (federation/ldap: LDAPIdentityStore, UserRolesRetrieveStrategy):
# conditions, then one (objectclass=X) per configured class; the user classes of its
# default settings for other vendors; the group mapper's class and membership attribute.
KEYCLOAK_USER_CLASSES = "(objectclass=inetOrgPerson)(objectclass=organizationalPerson)"
KEYCLOAK_IN_CHAIN = "1.2.840.113556.1.4.1941"
# Keycloak's batchSizeForSync default.
KEYCLOAK_PAGE_SIZE = 1000


@pytest.fixture(scope="module")
def generated(request):
    """A server on the tree `larch gen --posix` makes (groups listing members in member
    only), imported with sync_member_uid on (which fills memberUid) and checked by `larch
    verify`; with the LDIF's records, from which the tests compute every answer."""
    tmp = Path(tempfile.mkdtemp(prefix="larch-e2e-memberuid-gen-"))
    (tmp / "server").mkdir()
    srv = conftest.make_server(request.config, tmp / "server", larch_extra_toml=LARCH_TOML)
    try:
        done = larch(srv, "gen", "-n", str(GEN_PEOPLE), "--groups", str(GEN_GROUPS), "--group-members",
                     str(GEN_MEMBERS), "--ous", str(GEN_OUS), "--posix",
                     "-o", str(tmp / "gen"))
        assert done.returncode == 0, done.stderr
        ldif = tmp / "gen" / "data.ldif"
        config = str(srv.workdir / "larch.toml")
        done = larch(srv, "import", "--config", config, str(ldif))
        assert done.returncode == 0, done.stderr
        assert f"member and memberUid brought in step: {GEN_GROUPS} POSIX groups updated" in done.stdout, done.stdout
        done = larch(srv, "verify", "--config", config)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "memberUid        ok" in done.stdout, done.stdout
        records = parse_ldif(ldif.read_bytes())
        srv.start()
        yield srv, GeneratedTree(records)
        status = srv.stop()
        assert status == 0, srv.stderr_tail()
    finally:
        if srv.alive():
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


class GeneratedTree:
    """What the generated LDIF says: people and groups by normalized DN, and who is in
    which group."""

    def __init__(self, records):
        self.people = {dn: r for dn, r in records.items() if "posixaccount" in
                       {c.lower() for c in r["objectclass"]}}
        self.groups = {dn: r for dn, r in records.items() if "posixgroup" in
                       {c.lower() for c in r["objectclass"]}}
        self.groups_of = defaultdict(set)
        for dn, g in self.groups.items():
            for m in g["member"]:
                self.groups_of[norm(m)].add(dn)
        self.by_uid = {p["uid"][0]: dn for dn, p in self.people.items()}
        assert len(self.people) == GEN_PEOPLE and len(self.groups) == GEN_GROUPS

    def uid(self, dn):
        return self.people[dn]["uid"][0]


def test_generated_tree_sssd_queries(generated):
    """SSSD's lookups on 10,000 POSIX users and 1,000 POSIX groups, in both schemas."""
    srv, tree = generated
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    base = conftest.BASE
    people = sorted(tree.people)
    for dn in people[::40]:
        person = tree.people[dn]
        name = person["uid"][0]
        # getpwnam and getpwuid: the one entry, with its POSIX attributes.
        for attr, value in (("uid", name), ("uidNumber", person["uidnumber"][0])):
            res, found = search_entries(conn, base, sssd_user_filter(attr, value), attrs=SSSD_USER_ATTRS)
            assert_result(res, "success")
            assert [norm(e["dn"]) for e in found] == [dn], (attr, value)
            for a in ("uidNumber", "gidNumber", "homeDirectory", "loginShell", "gecos"):
                assert values(found[0], a) == person[a.lower()], (dn, a)
        # initgroups: by memberUid (rfc2307; the import wrote those values) and by member
        # (rfc2307bis), both what the generated groups say.
        by_uid, by_dn = sssd_initgroups(conn, base, name, dn)
        assert by_uid == by_dn == sorted(tree.groups_of[dn]), name
    for dn in sorted(tree.groups)[::10]:
        g = tree.groups[dn]
        members = sorted(norm(m) for m in g["member"])
        for attr, value in (("cn", g["cn"][0]), ("gidNumber", g["gidnumber"][0])):
            res, found = search_entries(conn, base, sssd_group_filter(attr, value),
                                        attrs=SSSD_GROUP_ATTRS + ["memberUid", "member"])
            assert_result(res, "success")
            assert [norm(e["dn"]) for e in found] == [dn], (attr, value)
            assert values(found[0], "gidNumber") == g["gidnumber"]
            assert sorted(norm(m) for m in values(found[0], "member")) == members
            assert sorted(values(found[0], "memberUid")) == sorted(tree.uid(m) for m in members)
    # A user's primary group (its gidNumber) is a group getgrgid finds.
    person = tree.people[people[7]]
    res, found = search_entries(conn, base, sssd_group_filter("gidNumber", person["gidnumber"][0]), attrs=["cn"])
    assert_result(res, "success")
    assert len(found) == 1 and norm(found[0]["dn"]) in tree.groups
    # Enumeration, paged as SSSD pages it.
    users, pages = paged_dns(conn, base, SSSD_ENUM_USERS, SSSD_USER_ATTRS, SSSD_PAGE_SIZE)
    assert sorted(users) == people and len(pages) >= GEN_PEOPLE // SSSD_PAGE_SIZE
    groups, _ = paged_dns(conn, base, SSSD_ENUM_GROUPS, SSSD_GROUP_ATTRS + ["memberUid"], SSSD_PAGE_SIZE)
    assert sorted(groups) == sorted(tree.groups)
    # A name and a number no entry has.
    for filt in (sssd_user_filter("uid", "user.nobody"), sssd_user_filter("uidNumber", "1"),
                 sssd_group_filter("gidNumber", "1")):
        res, found = search_entries(conn, base, filt, attrs=["1.1"])
        assert_result(res, "success")
        assert found == [], filt
    conn.unbind()


def test_generated_tree_keycloak_queries(generated):
    """Keycloak's LDAP federation on the same tree: users by username and by email, the
    group mapper's three ways to find a user's groups (member attribute, memberOf, and the
    recursive in-chain rule, over groups nested two levels above the generated ones), and
    the full user sync, paged."""
    srv, tree = generated
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    # Nesting: Dept k lists ten generated groups, Division lists the departments.
    generated_groups = sorted(tree.groups)
    outer = defaultdict(set)  # group -> the groups that list it
    depts = []
    for k in range(5):
        dept = f"cn=Dept {k},{GROUPS_BASE}"
        inner = generated_groups[k * 37:k * 37 + 10]
        add_ok(conn, dept, {"objectClass": ["groupOfNames"], "cn": f"Dept {k}", "member": inner})
        for g in inner:
            outer[g].add(norm(dept))
        depts.append(dept)
    division = f"cn=Division,{GROUPS_BASE}"
    add_ok(conn, division, {"objectClass": ["groupOfNames"], "cn": "Division", "member": depts})
    for d in depts:
        outer[norm(d)].add(norm(division))

    def chain(direct):
        seen, todo = set(), list(direct)
        while todo:
            g = todo.pop()
            if g not in seen:
                seen.add(g)
                todo.extend(outer[g])
        return seen

    try:
        people = sorted(tree.people)
        for dn in people[::50]:
            person = tree.people[dn]
            user_filter = f"(&(uid={escape_filter_chars(person['uid'][0])}){KEYCLOAK_USER_CLASSES})"
            res, found = search_entries(conn, PEOPLE_BASE, user_filter,
                                        attrs=["uid", "cn", "sn", "mail", "entryUUID", "createTimestamp",
                                               "modifyTimestamp", "memberOf"])
            assert_result(res, "success")
            assert [norm(e["dn"]) for e in found] == [dn]
            # GET_GROUPS_FROM_USER_MEMBEROF_ATTRIBUTE.
            assert sorted(norm(v) for v in values(found[0], "memberOf")) == sorted(tree.groups_of[dn])
            mail = person["mail"][0]
            res, found = search_entries(conn, PEOPLE_BASE, f"(&(mail={escape_filter_chars(mail)}){KEYCLOAK_USER_CLASSES})",
                                        attrs=["uid", "mail"])
            assert_result(res, "success")
            assert sorted(norm(e["dn"]) for e in found) == sorted(
                d for d, p in tree.people.items() if p["mail"] == [mail])
            # LOAD_GROUPS_BY_MEMBER_ATTRIBUTE and its recursive form.
            res, found = search_entries(conn, GROUPS_BASE, f"(&(member={escape_filter_chars(dn)})(objectclass=groupOfNames))",
                                        attrs=["cn", "member"])
            assert_result(res, "success")
            assert sorted(norm(e["dn"]) for e in found) == sorted(tree.groups_of[dn])
            res, found = search_entries(
                conn, GROUPS_BASE,
                f"(&(member:{KEYCLOAK_IN_CHAIN}:={escape_filter_chars(dn)})(objectclass=groupOfNames))", attrs=["cn"])
            assert_result(res, "success")
            assert sorted(norm(e["dn"]) for e in found) == sorted(chain(tree.groups_of[dn])), dn
        # Someone in a nested group, so the recursive answer is more than the direct one.
        nested = next(dn for dn in people if any(outer[g] for g in tree.groups_of[dn]))
        res, found = search_entries(
            conn, GROUPS_BASE,
            f"(&(member:{KEYCLOAK_IN_CHAIN}:={escape_filter_chars(nested)})(objectclass=groupOfNames))", attrs=["1.1"])
        assert_result(res, "success")
        assert norm(division) in {norm(e["dn"]) for e in found}
        # The full sync: every user, a page at a time.
        synced_users, pages = paged_dns(conn, PEOPLE_BASE, f"(&{KEYCLOAK_USER_CLASSES})", ["uid", "mail"],
                                        KEYCLOAK_PAGE_SIZE)
        assert sorted(synced_users) == people and len(pages) >= GEN_PEOPLE // KEYCLOAK_PAGE_SIZE
    finally:
        conn.delete(division)
        for d in depts:
            conn.delete(d)
        conn.unbind()
