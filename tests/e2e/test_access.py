"""Access control: the default policy (userPassword readable by the admin only, anonymous
writes refused, a user changing their own password), a custom rule set on a second server
probed as an anonymous client, the entry itself, another user, a group member and the
admin, and the proxied authorization control (RFC 4370), with ldap3 and ldap-utils.

slapd runs the usual OpenLDAP policy (`access to attrs=userPassword by self write by
anonymous auth by * none`, `access to * by self write by * read`): where Larch's default
differs (a user reads neither their own password nor writes their own entry), the test is
Larch's own."""

import ldap3
import pytest
from ldap3 import MODIFY_REPLACE
from ldap3.protocol.rfc4527 import post_read_control, pre_read_control

from ldaputil import (add_ok, assert_diagnostic, assert_result, attr_names, connect, ldapadd_ok, ldif_entry,
                      run_tool, sort_control, sort_result, values)

PROXIED_AUTHZ = "2.16.840.1.113730.3.4.18"
PRE_READ = "1.3.6.1.1.13.1"
POST_READ = "1.3.6.1.1.13.2"


def person(uid, password):
    return {"objectClass": ["inetOrgPerson"], "uid": uid, "cn": uid.title(), "sn": "Liddell",
            "mail": f"{uid}@example.com", "description": f"about {uid}", "userPassword": password}


@pytest.fixture
def people(admin, subtree):
    """alice and bob below the test's subtree; returns (alice_dn, bob_dn)."""
    alice, bob = f"uid=alice,{subtree}", f"uid=bob,{subtree}"
    add_ok(admin, alice, person("alice", "alice-pw"))
    add_ok(admin, bob, person("bob", "bob-pw"))
    return alice, bob


def bound(server, dn, password):
    conn = connect(server, dn, password)
    assert_result(conn, "success")
    return conn


def has_password(conn, dn):
    conn.search(dn, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["*", "userPassword"])
    assert_result(conn, "success")
    assert len(conn.response) == 1
    return "userpassword" in attr_names(conn.response[0])


# ------------------------------------------------------------------ the default policy


def test_password_is_hidden_from_anonymous_clients_and_other_users(server, admin, anon, people):
    alice, bob = people
    other = bound(server, bob, "bob-pw")
    for conn in (anon, other):
        assert not has_password(conn, alice)
        conn.search(alice, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["cn", "mail"])
        assert {"cn", "mail"} <= attr_names(conn.response[0])
        # A filter on it matches nothing, nor does its negation.
        for f in ("(userPassword=*)", "(userPassword=alice-pw)", "(!(userPassword=*))"):
            conn.search(alice, f, search_scope=ldap3.BASE, attributes=["1.1"])
            assert_result(conn, "success")
            assert conn.response == [], f
        conn.compare(alice, "userPassword", "alice-pw")
        assert_result(conn, "insufficientAccessRights")
        if server.kind == "larch":  # slapd sends no diagnostic message here
            assert_diagnostic(conn)
    # The admin reads it, and compares against the stored value (Compare matches stored
    # octets, as slapd's octetStringMatch does: Larch stores the password hashed, slapd as
    # given here).
    assert has_password(admin, alice)
    admin.search(alice, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["userPassword"])
    stored = admin.response[0]["raw_attributes"]["userPassword"][0]
    admin.compare(alice, "userPassword", stored)
    assert_result(admin, "compareTrue")
    other.unbind()


def test_password_is_hidden_from_ldapsearch(server, people):
    alice, _ = people
    anon = run_tool(["ldapsearch", "-x", "-LLL", "-H", server.url, "-b", alice, "-s", "base", "(objectClass=*)",
                     "userPassword", "cn"])
    assert anon.returncode == 0, anon.stderr
    assert "cn: Alice" in anon.stdout and "userPassword" not in anon.stdout
    root = run_tool(["ldapsearch", "-x", "-LLL", "-H", server.url, "-D", server.admin_dn, "-w", server.admin_pw,
                     "-b", alice, "-s", "base", "(objectClass=*)", "userPassword"])
    assert root.returncode == 0, root.stderr
    assert "userPassword:" in root.stdout


@pytest.mark.larch_only("slapd's `by self write` lets a user read their own password")
def test_password_is_hidden_from_its_own_entry(server, people):
    alice, _ = people
    me = bound(server, alice, "alice-pw")
    assert not has_password(me, alice)
    me.compare(alice, "userPassword", "alice-pw")
    assert_result(me, "insufficientAccessRights")
    # Changing it with pre-read and post-read: neither shows it.
    me.modify(alice, {"userPassword": [(MODIFY_REPLACE, ["alice-pw2"])]},
              controls=[pre_read_control(["userPassword", "cn"]), post_read_control(["*", "modifiersName"])])
    assert_result(me, "success")
    controls = me.result["controls"]
    pre = controls[PRE_READ]["value"]["result"]
    post = controls[POST_READ]["value"]["result"]
    assert {k.lower() for k, v in pre.items() if v} == {"cn"}
    assert "userpassword" not in {k.lower() for k, v in post.items() if v}
    assert [v.lower() for v in post["modifiersName"]] == [alice.lower()]
    me.unbind()
    # The new password works.
    bound(server, alice, "alice-pw2").unbind()


def test_a_user_changes_their_own_password(server, people):
    alice, bob = people
    me = bound(server, alice, "alice-pw")
    me.modify(alice, {"userPassword": [(MODIFY_REPLACE, ["new-alice-pw"])]})
    assert_result(me, "success")
    # Not someone else's.
    me.modify(bob, {"userPassword": [(MODIFY_REPLACE, ["mine-now"])]})
    assert_result(me, "insufficientAccessRights")
    me.unbind()
    assert_result(connect(server, alice, "alice-pw"), "invalidCredentials")
    bound(server, alice, "new-alice-pw").unbind()
    bound(server, bob, "bob-pw").unbind()
    # With ldapmodify too.
    p = run_tool(["ldapmodify", "-x", "-H", server.url, "-D", alice, "-w", "new-alice-pw"],
                 input_text=f"dn: {alice}\nchangetype: modify\nreplace: userPassword\nuserPassword: third-pw\n")
    assert p.returncode == 0, p.stderr
    bound(server, alice, "third-pw").unbind()


def test_users_may_not_write_other_entries(server, people):
    alice, bob = people
    other = bound(server, bob, "bob-pw")
    other.modify(alice, {"description": [(MODIFY_REPLACE, ["by bob"])]})
    assert_result(other, "insufficientAccessRights")
    if server.kind == "larch":  # slapd sends no diagnostic message here
        assert_diagnostic(other)
    other.delete(alice)
    assert_result(other, "insufficientAccessRights")
    other.unbind()


@pytest.mark.larch_only("slapd answers anonymous updates strongerAuthRequired; its `by self write` lets users "
                        "write their own entry")
def test_default_policy_refuses_anonymous_and_user_writes(server, admin, anon, people, subtree):
    alice, _ = people
    newdn = f"uid=eve,{subtree}"
    anon.add(newdn, attributes=person("eve", "x"))
    assert_result(anon, "insufficientAccessRights")
    anon.modify(alice, {"description": [(MODIFY_REPLACE, ["anon"])]})
    assert_result(anon, "insufficientAccessRights")
    anon.delete(alice)
    assert_result(anon, "insufficientAccessRights")
    anon.modify_dn(alice, "uid=alicia")
    assert_result(anon, "insufficientAccessRights")
    me = bound(server, alice, "alice-pw")
    me.modify(alice, {"description": [(MODIFY_REPLACE, ["mine"])]})
    assert_result(me, "insufficientAccessRights")
    me.add(newdn, attributes=person("eve", "x"))
    assert_result(me, "insufficientAccessRights")
    me.unbind()
    # ldap-utils report the code and the server's message.
    p = run_tool(["ldapmodify", "-x", "-H", server.url],
                 input_text=f"dn: {alice}\nchangetype: modify\nreplace: description\ndescription: x\n")
    assert p.returncode == 50, (p.returncode, p.stderr)
    assert "Insufficient access" in p.stderr and "anonymous" in p.stderr
    # Nothing changed.
    admin.search(alice, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["description"])
    assert values(admin.response[0], "description") == ["about alice"]


def sorted_dns(conn, base, keys, critical=True):
    conn.search(base, "(uid=*)", attributes=["1.1"], controls=[sort_control(keys, critical)])
    return [e["dn"].lower() for e in conn.response if e["type"] == "searchResEntry"]


@pytest.mark.not_slapd("slapd's sssvlv overlay sorts on attributes the client may not search")
def test_sort_on_the_password_is_refused_to_all_but_the_admin(server, admin, anon, people, subtree):
    # The order of values a client may not search is not disclosed: RFC 2891's sortResult
    # insufficientAccessRights (50); a critical sort fails the search.
    alice, bob = people
    user = bound(server, bob, "bob-pw")
    keys = [("userPassword", "octetStringOrderingMatch", False)]
    for conn in (anon, user):
        assert sorted_dns(conn, subtree, keys, critical=True) == []
        assert_result(conn, "unavailableCriticalExtension")
        assert_diagnostic(conn)
        assert sort_result(conn) == 50
        assert sorted(sorted_dns(conn, subtree, keys, critical=False)) == sorted([alice.lower(), bob.lower()])
        assert_result(conn, "success")
        assert sort_result(conn) == 50
    assert len(sorted_dns(admin, subtree, keys)) == 2
    assert_result(admin, "success")
    assert sort_result(admin) == 0
    user.unbind()


# ------------------------------------------------------------------ a custom rule set

BASE = "dc=example,dc=com"
PEOPLE = f"ou=people,{BASE}"
ALICE = f"uid=alice,{PEOPLE}"
BOB = f"uid=bob,{PEOPLE}"
CAROL = f"uid=carol,{PEOPLE}"
EDITORS = f"cn=editors,ou=groups,{BASE}"
SECRET = f"ou=secret,{BASE}"

CUSTOM_TOML = f"""
[access_proxy]
allow = [{{ dn = "{BOB}" }}]

[[access]]
attrs = ["userPassword"]
by = [
  {{ who = "self", access = "=wx" }},
  {{ who = "anonymous", access = "auth" }},
]

[[access]]
dn = "{PEOPLE}"
attrs = ["description"]
by = [
  {{ who = "self", access = "write" }},
  {{ group = "{EDITORS}", access = "write" }},
  {{ who = "users", access = "read" }},
]

[[access]]
dn = "{PEOPLE}"
by = [
  {{ group = "{EDITORS}", access = "write" }},
  {{ who = "*", access = "read" }},
]

[[access]]
dn = "{SECRET}"
by = [{{ who = "users", access = "disclose" }}]

[[access]]
by = [{{ who = "*", access = "read" }}]
"""


@pytest.fixture
def custom(make_extra_server):
    """A second server running CUSTOM_TOML with people alice, bob, carol, the group
    editors (carol) and ou=secret."""
    srv = make_extra_server(larch_extra_toml=CUSTOM_TOML)
    parts = [ldif_entry(PEOPLE, {"objectClass": "organizationalUnit", "ou": "people"})]
    for uid in ("alice", "bob", "carol"):
        dn = f"uid={uid},{PEOPLE}"
        parts.append(ldif_entry(dn, person(uid, f"{uid}-pw")))
    parts.append(ldif_entry(f"ou=groups,{BASE}", {"objectClass": "organizationalUnit", "ou": "groups"}))
    parts.append(ldif_entry(EDITORS, {"objectClass": "groupOfNames", "cn": "editors", "member": CAROL}))
    parts.append(ldif_entry(SECRET, {"objectClass": "organizationalUnit", "ou": "secret"}))
    parts.append(ldif_entry(f"cn=plans,{SECRET}", {"objectClass": "organizationalRole", "cn": "plans"}))
    ldapadd_ok(srv, "".join(parts))
    return srv


def describe(conn, dn, text):
    conn.modify(dn, {"description": [(MODIFY_REPLACE, [text])]})
    return conn.result


@pytest.mark.larch_only("Larch's rule language in a second server's configuration")
def test_custom_rules_as_each_requester(custom):
    anon = connect(custom)
    alice = bound(custom, ALICE, "alice-pw")
    bob = bound(custom, BOB, "bob-pw")
    carol = bound(custom, CAROL, "carol-pw")
    admin = bound(custom, custom.admin_dn, custom.admin_pw)
    # Reading: description of people for users only; ou=secret for the admin only.
    anon.search(PEOPLE, "(uid=*)", attributes=["cn", "description"])
    assert sorted(e["dn"].lower() for e in anon.response) == [ALICE, BOB, CAROL]
    assert all("description" not in attr_names(e) for e in anon.response)
    for conn in (alice, bob, carol, admin):
        conn.search(ALICE, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["description"])
        assert values(conn.response[0], "description") == ["about alice"]
    anon.search(SECRET, "(objectClass=*)")
    assert_result(anon, "noSuchObject")
    bob.search(SECRET, "(objectClass=*)")
    assert_result(bob, "insufficientAccessRights")
    for conn in (anon, bob):
        conn.search(BASE, "(objectClass=*)", attributes=["1.1"])
        assert_result(conn, "success")
        assert not any(e["dn"].lower().endswith(SECRET) for e in conn.response)
    admin.search(SECRET, "(objectClass=*)", attributes=["1.1"])
    assert len(admin.response) == 2
    # Writing: self its description, the editor anyone's, nobody else.
    assert_result(describe(alice, ALICE, "by alice"), "success")
    assert_result(describe(alice, BOB, "by alice"), "insufficientAccessRights")
    assert_result(describe(bob, ALICE, "by bob"), "insufficientAccessRights")
    assert_result(describe(anon, ALICE, "by anon"), "insufficientAccessRights")
    assert_result(describe(carol, BOB, "by carol"), "success")
    assert_result(describe(admin, BOB, "by admin"), "success")
    alice.modify(ALICE, {"mail": [(MODIFY_REPLACE, ["a@x"])]})
    assert_result(alice, "insufficientAccessRights")
    # The editor adds, renames and deletes people; a user may not.
    dave = f"uid=dave,{PEOPLE}"
    bob.add(dave, attributes={"objectClass": "inetOrgPerson", "uid": "dave", "cn": "Dave", "sn": "D"})
    assert_result(bob, "insufficientAccessRights")
    carol.add(dave, attributes={"objectClass": "inetOrgPerson", "uid": "dave", "cn": "Dave", "sn": "D"})
    assert_result(carol, "success")
    carol.modify_dn(dave, "uid=david")
    assert_result(carol, "success")
    bob.delete(f"uid=david,{PEOPLE}")
    assert_result(bob, "insufficientAccessRights")
    carol.delete(f"uid=david,{PEOPLE}")
    assert_result(carol, "success")
    # Group membership is read at each operation.
    admin.modify(EDITORS, {"member": [(MODIFY_REPLACE, [BOB])]})
    assert_result(admin, "success")
    assert_result(describe(carol, ALICE, "again"), "insufficientAccessRights")
    assert_result(describe(bob, ALICE, "by bob"), "success")
    # Compare.
    anon.compare(ALICE, "description", "by bob")
    assert_result(anon, "insufficientAccessRights")
    carol.compare(ALICE, "description", "by bob")
    assert_result(carol, "compareTrue")
    anon.compare(f"cn=plans,{SECRET}", "cn", "plans")
    assert_result(anon, "noSuchObject")
    for c in (anon, alice, bob, carol, admin):
        c.unbind()


@pytest.mark.larch_only("Larch's rule language in a second server's configuration")
def test_sort_keys_follow_the_search_right_of_each_entry(custom):
    admin = bound(custom, custom.admin_dn, custom.admin_pw)
    for dn, text in ((ALICE, "zz"), (BOB, "aa"), (CAROL, "mm")):
        assert_result(describe(admin, dn, text), "success")
    anon = connect(custom)
    alice = bound(custom, ALICE, "alice-pw")

    def order(conn, reverse):
        dns = sorted_dns(conn, PEOPLE, [("description", "caseIgnoreOrderingMatch", reverse)])
        assert_result(conn, "success")
        assert sort_result(conn) == 0
        return dns

    assert order(alice, False) == [BOB, CAROL, ALICE]
    assert order(alice, True) == [ALICE, CAROL, BOB]
    # Anonymous clients may search description outside ou=people but not below it: there
    # each entry counts as without a value, so both directions give the entries' own
    # order (as added), not the one of the values.
    assert order(anon, False) == [ALICE, BOB, CAROL]
    assert order(anon, True) == [ALICE, BOB, CAROL]
    for c in (anon, alice, admin):
        c.unbind()


@pytest.mark.larch_only("Larch's rule language in a second server's configuration")
def test_missing_entries_name_a_matched_entry_only_to_who_may_know_it(custom):
    # ou=secret is disclosed to users, hidden from anonymous clients: an operation on a
    # name below cn=plans,ou=secret that does not exist answers noSuchObject, with
    # cn=plans as matchedDN only for a requester with disclose on it (as a search).
    plans = f"cn=plans,{SECRET}"
    missing = f"cn=missing,{plans}"
    anon = connect(custom)
    bob = bound(custom, BOB, "bob-pw")
    admin = bound(custom, custom.admin_dn, custom.admin_pw)

    def attempts(conn):
        yield lambda: conn.delete(missing)
        yield lambda: conn.modify(missing, {"description": [(MODIFY_REPLACE, ["x"])]})
        yield lambda: conn.compare(missing, "cn", "missing")
        yield lambda: conn.modify_dn(missing, "cn=other")
        yield lambda: conn.add(f"cn=new,{missing}", attributes={"objectClass": "organizationalRole", "cn": "new"})
        yield lambda: conn.modify_dn(ALICE, "uid=alice", new_superior=missing)
        yield lambda: conn.search(missing, "(objectClass=*)")

    for conn, shown in ((anon, ""), (bob, plans), (admin, plans)):
        for i, attempt in enumerate(attempts(conn)):
            attempt()
            if i in (4, 5) and conn is not admin:
                # Neither may add below ou=secret nor move alice at all: refused before
                # the parent is looked up, naming nothing.
                assert_result(conn, "insufficientAccessRights")
                assert conn.result["dn"] == ""
                continue
            assert_result(conn, "noSuchObject")
            assert conn.result["dn"].lower() == shown, (i, conn.result)
    for c in (anon, bob, admin):
        c.unbind()


@pytest.mark.larch_only("slapd needs authz-policy for proxied authorization; Larch's access_proxy")
def test_proxied_authorization(custom):
    bob = bound(custom, BOB, "bob-pw")
    alice = bound(custom, ALICE, "alice-pw")
    # Bob holds the proxy right: as alice he may write alice's description, and the
    # change is recorded as hers.
    bob.modify(ALICE, {"description": [(MODIFY_REPLACE, ["as alice"])]},
               controls=[(PROXIED_AUTHZ, True, f"dn:{ALICE}".encode())])
    assert_result(bob, "success")
    admin = bound(custom, custom.admin_dn, custom.admin_pw)
    admin.search(ALICE, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["description", "modifiersName"])
    assert values(admin.response[0], "description") == ["as alice"]
    assert [v.lower() for v in values(admin.response[0], "modifiersName")] == [ALICE]
    # As anonymous (empty authzId) he reads no description.
    bob.search(PEOPLE, "(uid=*)", attributes=["description"], controls=[(PROXIED_AUTHZ, True, b"")])
    assert_result(bob, "success")
    assert all("description" not in attr_names(e) for e in bob.response)
    # Refusals: alice has no right; u: forms and unknown entries; a non-critical control.
    alice.search(PEOPLE, "(uid=*)", controls=[(PROXIED_AUTHZ, True, f"dn:{BOB}".encode())])
    assert_result(alice, "authorizationDenied")
    assert_diagnostic(alice)
    for authz in (b"u:alice", f"dn:uid=nobody,{PEOPLE}".encode()):
        bob.compare(ALICE, "cn", "Alice", controls=[(PROXIED_AUTHZ, True, authz)])
        assert_result(bob, "authorizationDenied")
    bob.search(PEOPLE, "(uid=*)", controls=[(PROXIED_AUTHZ, False, f"dn:{ALICE}".encode())])
    assert_result(bob, "protocolError")
    # ldapsearch -e '!authzid=...' (critical).
    ok = run_tool(["ldapsearch", "-x", "-LLL", "-H", custom.url, "-D", BOB, "-w", "bob-pw",
                   "-e", "!authzid=", "-b", ALICE, "-s", "base", "(objectClass=*)", "description", "cn"])
    assert ok.returncode == 0, ok.stderr
    assert "cn: Alice" in ok.stdout and "description" not in ok.stdout
    denied = run_tool(["ldapsearch", "-x", "-LLL", "-H", custom.url, "-D", ALICE, "-w", "alice-pw",
                       "-e", f"!authzid=dn:{BOB}", "-b", ALICE, "-s", "base", "(objectClass=*)"])
    assert denied.returncode == 123, (denied.returncode, denied.stderr)
    for c in (bob, alice, admin):
        c.unbind()


@pytest.mark.larch_only("the custom rule set is Larch's")
def test_custom_rules_bind_and_anonymous_search_via_ldapsearch(custom):
    anon = run_tool(["ldapsearch", "-x", "-LLL", "-H", custom.url, "-b", PEOPLE, "(uid=alice)", "description", "cn"])
    assert anon.returncode == 0, anon.stderr
    assert "cn: Alice" in anon.stdout and "description" not in anon.stdout
    user = run_tool(["ldapsearch", "-x", "-LLL", "-H", custom.url, "-D", BOB, "-w", "bob-pw",
                     "-b", PEOPLE, "(uid=alice)", "description"])
    assert user.returncode == 0, user.stderr
    assert "description: about alice" in user.stdout
    secret = run_tool(["ldapsearch", "-x", "-LLL", "-H", custom.url, "-b", SECRET, "(objectClass=*)"])
    assert secret.returncode == 32, (secret.returncode, secret.stderr)
