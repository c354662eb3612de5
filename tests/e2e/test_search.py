"""Search (RFC 4511 section 4.5): scopes, limits, typesOnly, attribute selection,
operational attributes, missing and invalid bases, alias dereferencing, referrals."""

import re

import ldap3
import pytest

import ldapwire
from ldaputil import (MANAGE_DSA_IT, add_ok, assert_diagnostic, assert_result, attr_names, connect, dns_of,
                      ldif_entry, ldapadd_ok, raw_attr_names, raw_search, search_entries, values)

USER_ATTRS = {"objectclass", "cn", "sn", "description"}
OPERATIONAL = {"createtimestamp", "modifytimestamp", "creatorsname", "modifiersname", "entryuuid", "entrycsn",
               "structuralobjectclass", "entrydn", "hassubordinates", "subschemasubentry"}


@pytest.fixture
def tree(admin, subtree):
    """subtree
         ou=a
           cn=a1, cn=a2
           ou=deep
             cn=d1
         cn=top (a leaf beside ou=a)"""
    add_ok(admin, f"ou=a,{subtree}", {"objectClass": ["organizationalUnit"], "ou": "a"})
    for cn in ("a1", "a2"):
        add_ok(admin, f"cn={cn},ou=a,{subtree}", {"objectClass": ["person"], "sn": cn, "description": "x"})
    add_ok(admin, f"ou=deep,ou=a,{subtree}", {"objectClass": ["organizationalUnit"], "ou": "deep"})
    add_ok(admin, f"cn=d1,ou=deep,ou=a,{subtree}", {"objectClass": ["person"], "sn": "d1"})
    add_ok(admin, f"cn=top,{subtree}", {"objectClass": ["person"], "sn": "top"})
    return subtree


def test_scope_base(admin, tree):
    res, entries = search_entries(admin, f"ou=a,{tree}", scope=ldap3.BASE)
    assert_result(res, "success")
    assert dns_of(entries) == {f"ou=a,{tree}"}


def test_scope_one_level(admin, tree):
    res, entries = search_entries(admin, f"ou=a,{tree}", scope=ldap3.LEVEL)
    assert_result(res, "success")
    assert dns_of(entries) == {f"cn=a1,ou=a,{tree}", f"cn=a2,ou=a,{tree}", f"ou=deep,ou=a,{tree}"}


def test_scope_one_level_of_a_leaf_is_empty(admin, tree):
    res, entries = search_entries(admin, f"cn=top,{tree}", scope=ldap3.LEVEL)
    assert_result(res, "success")
    assert entries == []


def test_scope_subtree(admin, tree):
    res, entries = search_entries(admin, f"ou=a,{tree}", scope=ldap3.SUBTREE)
    assert_result(res, "success")
    assert dns_of(entries) == {f"ou=a,{tree}", f"cn=a1,ou=a,{tree}", f"cn=a2,ou=a,{tree}",
                               f"ou=deep,ou=a,{tree}", f"cn=d1,ou=deep,ou=a,{tree}"}


def test_scope_subordinate(server, tree):
    # scope 3 (draft-sermersheim-ldap-subordinate-scope): the subtree without its base.
    # ldap3 only sends scopes 0-2, so this goes on the wire by hand.
    entries, _, done = raw_search(server, f"ou=a,{tree}", scope=ldapwire.SCOPE_SUBORDINATE, attrs=["1.1"])
    assert_result(done, "success")
    assert {e.dn.lower() for e in entries} == {f"cn=a1,ou=a,{tree}", f"cn=a2,ou=a,{tree}",
                                               f"ou=deep,ou=a,{tree}", f"cn=d1,ou=deep,ou=a,{tree}"}


def test_every_entry_is_returned_once(admin, tree):
    res, entries = search_entries(admin, tree)
    assert_result(res, "success")
    dns = [e["dn"].lower() for e in entries]
    assert len(dns) == len(set(dns)) == 7


def test_client_size_limit_below_the_server_limit(server, admin, subtree):
    ldapadd_ok(server, "".join(
        ldif_entry(f"cn=s{i},{subtree}", {"objectClass": "person", "cn": f"s{i}", "sn": "s"}) for i in range(10)))
    admin.search(subtree, "(objectClass=person)", attributes=["cn"], size_limit=3)
    assert_result(admin, "sizeLimitExceeded")
    entries = [e for e in admin.response if e["type"] == "searchResEntry"]
    assert len(entries) == 3
    assert all(e["dn"].lower().endswith(subtree) for e in entries)
    # Exactly the limit is not exceeded.
    admin.search(subtree, "(objectClass=person)", attributes=["cn"], size_limit=10)
    assert_result(admin, "success")
    assert len([e for e in admin.response if e["type"] == "searchResEntry"]) == 10


def test_server_size_limit_applies_to_anonymous(anon, bulk):
    # The server's limit (500, OpenLDAP's default `sizelimit`) caps a search that asks for
    # more; the entries up to the limit are sent, then sizeLimitExceeded.
    base, n = bulk
    assert n > 500
    anon.search(base, "(objectClass=person)", attributes=["1.1"], size_limit=0)
    assert_result(anon, "sizeLimitExceeded")
    assert len([e for e in anon.response if e["type"] == "searchResEntry"]) == 500
    anon.search(base, "(objectClass=person)", attributes=["1.1"], size_limit=1000)
    assert_result(anon, "sizeLimitExceeded")
    assert len([e for e in anon.response if e["type"] == "searchResEntry"]) == 500


def test_time_limit_is_accepted(admin, tree):
    admin.search(tree, "(objectClass=*)", attributes=["1.1"], time_limit=30)
    assert_result(admin, "success")
    assert len([e for e in admin.response if e["type"] == "searchResEntry"]) == 7


def test_types_only(server, tree):
    entries, _, done = raw_search(server, f"cn=a1,ou=a,{tree}", scope=ldapwire.SCOPE_BASE, types_only=True)
    assert_result(done, "success")
    assert len(entries) == 1
    assert raw_attr_names(entries[0]) == {"objectclass", "cn", "sn", "description"}
    assert all(v == [] for v in entries[0].attrs.values()), entries[0].attrs


@pytest.mark.parametrize("attrs", [[], ["*"]], ids=["none", "star"])
def test_all_user_attributes_and_no_operational(server, tree, attrs):
    entries, _, done = raw_search(server, f"cn=a1,ou=a,{tree}", scope=ldapwire.SCOPE_BASE, attrs=attrs)
    assert_result(done, "success")
    assert raw_attr_names(entries[0]) == USER_ATTRS


def test_plus_gives_operational_attributes_only(server, tree):
    entries, _, done = raw_search(server, f"cn=a1,ou=a,{tree}", scope=ldapwire.SCOPE_BASE, attrs=["+"])
    assert_result(done, "success")
    names = raw_attr_names(entries[0])
    assert OPERATIONAL <= names, OPERATIONAL - names
    assert not (names & USER_ATTRS)


def test_star_and_plus_give_both(server, tree):
    entries, _, done = raw_search(server, f"cn=a1,ou=a,{tree}", scope=ldapwire.SCOPE_BASE, attrs=["*", "+"])
    assert_result(done, "success")
    names = raw_attr_names(entries[0])
    assert USER_ATTRS | OPERATIONAL <= names


def test_one_one_gives_no_attributes(server, tree):
    entries, _, done = raw_search(server, tree, scope=ldapwire.SCOPE_SUB, attrs=["1.1"])
    assert_result(done, "success")
    assert len(entries) == 7
    assert all(e.attrs == {} for e in entries)


def test_named_operational_attribute_with_star(server, tree):
    entries, _, done = raw_search(server, f"cn=a1,ou=a,{tree}", scope=ldapwire.SCOPE_BASE,
                                  attrs=["*", "createTimestamp"])
    assert_result(done, "success")
    assert raw_attr_names(entries[0]) == USER_ATTRS | {"createtimestamp"}


def test_named_attributes_only(server, tree):
    entries, _, done = raw_search(server, f"cn=a1,ou=a,{tree}", scope=ldapwire.SCOPE_BASE,
                                  attrs=["SN", "entryDN"])
    assert_result(done, "success")
    assert raw_attr_names(entries[0]) == {"sn", "entrydn"}
    assert entries[0].attrs[next(k for k in entries[0].attrs if k.lower() == "sn")] == [b"a1"]


def test_operational_attribute_values(admin, server, tree):
    dn = f"cn=a1,ou=a,{tree}"
    res, entries = search_entries(admin, dn, scope=ldap3.BASE, attrs=["+"])
    assert_result(res, "success")
    e = entries[0]
    assert values(e, "entryDN")[0].lower() == dn
    assert values(e, "structuralObjectClass") == ["person"]
    assert values(e, "subschemaSubentry")[0].lower() == "cn=subschema"
    assert values(e, "creatorsName")[0].lower() == server.admin_dn
    assert values(e, "modifiersName")[0].lower() == server.admin_dn
    assert values(e, "hasSubordinates") == ["FALSE"]
    assert re.fullmatch(r"\d{14}Z", values(e, "createTimestamp")[0])
    assert re.fullmatch(r"\d{14}Z", values(e, "modifyTimestamp")[0])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", values(e, "entryUUID")[0])
    # OpenLDAP's CSN format: YYYYmmddHHMMSS.ffffffZ#cccccc#sid#mod
    assert re.fullmatch(r"\d{14}\.\d{6}Z#[0-9a-f]{6}#[0-9a-f]{3}#[0-9a-f]{6}", values(e, "entryCSN")[0])
    res, entries = search_entries(admin, f"ou=a,{tree}", scope=ldap3.BASE, attrs=["hasSubordinates"])
    assert values(entries[0], "hasSubordinates") == ["TRUE"]


def test_entry_uuids_are_distinct(admin, tree):
    res, entries = search_entries(admin, tree, attrs=["entryUUID"])
    uuids = [values(e, "entryUUID")[0] for e in entries]
    assert len(uuids) == len(set(uuids)) == 7


def test_attribute_options(admin, subtree):
    dn = f"cn=opt,{subtree}"
    add_ok(admin, dn, {"objectClass": ["person"], "sn": "Options", "cn": "opt", "cn;lang-en": "Colour",
                       "cn;lang-fr": "Couleur"})
    # The subtype alone.
    res, entries = search_entries(admin, dn, scope=ldap3.BASE, attrs=["cn;lang-en"])
    assert_result(res, "success")
    assert {k.lower(): sorted(v) for k, v in entries[0]["raw_attributes"].items() if v} == {"cn;lang-en": [b"Colour"]}
    # The base type selects every subtype as well (RFC 4512 section 2.5.2).
    res, entries = search_entries(admin, dn, scope=ldap3.BASE, attrs=["cn"])
    got = {k.lower(): sorted(v) for k, v in entries[0]["raw_attributes"].items() if v}
    assert got == {"cn": [b"opt"], "cn;lang-en": [b"Colour"], "cn;lang-fr": [b"Couleur"]}
    # A filter on the subtype matches only its values; on the base type, all of them.
    res, entries = search_entries(admin, subtree, "(cn;lang-fr=couleur)", attrs=["1.1"])
    assert dns_of(entries) == {dn}
    res, entries = search_entries(admin, subtree, "(cn;lang-en=couleur)", attrs=["1.1"])
    assert entries == []
    res, entries = search_entries(admin, subtree, "(cn=couleur)", attrs=["1.1"])
    assert dns_of(entries) == {dn}


def test_unknown_attribute_in_the_list_is_ignored(server, tree):
    entries, _, done = raw_search(server, f"cn=a1,ou=a,{tree}", scope=ldapwire.SCOPE_BASE,
                                  attrs=["noSuchAttributeAnywhere", "sn"])
    assert_result(done, "success")
    assert raw_attr_names(entries[0]) == {"sn"}


def test_missing_base_gives_no_such_object_with_matched_dn(admin, tree):
    admin.search(f"cn=x,cn=y,ou=deep,ou=a,{tree}", "(objectClass=*)")
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == f"ou=deep,ou=a,{tree}"
    assert [e for e in admin.response if e["type"] == "searchResEntry"] == []
    admin.search(f"ou=nowhere,{tree}", "(objectClass=*)", search_scope=ldap3.BASE)
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == tree


def test_missing_suffix_child_matches_the_suffix(admin, server):
    admin.search(f"ou=no-such-unit,{server.base}", "(objectClass=*)")
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == server.base


def test_base_outside_every_naming_context(admin):
    admin.search("o=nowhere", "(objectClass=*)")
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"] == ""


def test_invalid_base_dn(admin):
    admin.search("this is not a DN", "(objectClass=*)")
    assert_result(admin, "invalidDNSyntax")
    assert_diagnostic(admin)


# ----------------------------------------------------------------------------- aliases


@pytest.fixture
def aliases(admin, subtree):
    """subtree: ou=people (cn=alice), ou=aliases (cn=toPeople -> ou=people)."""
    people = f"ou=people,{subtree}"
    add_ok(admin, people, {"objectClass": ["organizationalUnit"], "ou": "people"})
    add_ok(admin, f"cn=alice,{people}", {"objectClass": ["person"], "sn": "Liddell"})
    add_ok(admin, f"ou=aliases,{subtree}", {"objectClass": ["organizationalUnit"], "ou": "aliases"})
    alias = f"cn=toPeople,ou=aliases,{subtree}"
    add_ok(admin, alias, {"objectClass": ["alias", "extensibleObject"], "aliasedObjectName": people})
    return subtree, people, alias


DEREF = {"never": ldap3.DEREF_NEVER, "searching": ldap3.DEREF_SEARCH, "finding": ldap3.DEREF_BASE,
         "always": ldap3.DEREF_ALWAYS}


@pytest.mark.parametrize("mode,dereferenced", [("never", False), ("searching", False), ("finding", True),
                                               ("always", True)])
def test_alias_as_search_base(admin, aliases, mode, dereferenced):
    subtree, people, alias = aliases
    res, entries = search_entries(admin, alias, scope=ldap3.BASE, dereference_aliases=DEREF[mode])
    assert_result(res, "success")
    assert dns_of(entries) == ({people.lower()} if dereferenced else {alias.lower()})


@pytest.mark.parametrize("mode,dereferenced", [("never", False), ("searching", True), ("finding", False),
                                               ("always", True)])
def test_alias_inside_the_scope(admin, aliases, mode, dereferenced):
    subtree, people, alias = aliases
    base = f"ou=aliases,{subtree}"
    res, entries = search_entries(admin, base, scope=ldap3.SUBTREE, dereference_aliases=DEREF[mode])
    assert_result(res, "success")
    if dereferenced:
        # The alias is replaced by its target, which becomes the vertex of a further
        # subtree search (RFC 4511 section 4.5.1.3).
        assert dns_of(entries) == {base.lower(), people.lower(), f"cn=alice,{people}".lower()}
    else:
        assert dns_of(entries) == {base.lower(), alias.lower()}


def test_alias_one_level_dereferenced(admin, aliases):
    subtree, people, alias = aliases
    res, entries = search_entries(admin, f"ou=aliases,{subtree}", scope=ldap3.LEVEL,
                                  dereference_aliases=ldap3.DEREF_SEARCH)
    assert_result(res, "success")
    assert dns_of(entries) == {people.lower()}


# ----------------------------------------------------------------------------- referrals


@pytest.fixture
def referral(admin, subtree):
    """subtree: cn=ref (a referral to ldap://other.example.com/ou=elsewhere,...), ou=local."""
    ref = f"cn=ref,{subtree}"
    add_ok(admin, ref, {"objectClass": ["referral", "extensibleObject"],
                        "ref": "ldap://other.example.com/ou=elsewhere,dc=example,dc=com"})
    add_ok(admin, f"ou=local,{subtree}", {"objectClass": ["organizationalUnit"], "ou": "local"})
    return subtree, ref


def test_subtree_search_returns_a_continuation_reference(admin, referral):
    subtree, ref = referral
    admin.search(subtree, "(objectClass=*)", attributes=["1.1"])
    assert_result(admin, "success")
    refs = [r for r in admin.response if r["type"] == "searchResRef"]
    entries = [r for r in admin.response if r["type"] == "searchResEntry"]
    assert dns_of(entries) == {subtree, f"ou=local,{subtree}"}
    assert len(refs) == 1
    assert len(refs[0]["uri"]) == 1
    assert refs[0]["uri"][0].lower().startswith("ldap://other.example.com/ou=elsewhere,dc=example,dc=com")


def test_base_below_a_referral_gives_referral(admin, referral):
    subtree, ref = referral
    admin.search(f"cn=x,{ref}", "(objectClass=*)")
    assert_result(admin, "referral")
    assert admin.result["dn"].lower() == ref
    assert admin.result["referrals"]
    assert all(u.lower().startswith("ldap://other.example.com/") for u in admin.result["referrals"])


def test_manage_dsa_it_returns_the_referral_entry(admin, referral):
    subtree, ref = referral
    admin.search(ref, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["ref", "objectClass"],
                 controls=[MANAGE_DSA_IT])
    assert_result(admin, "success")
    entries = [r for r in admin.response if r["type"] == "searchResEntry"]
    assert dns_of(entries) == {ref}
    assert values(entries[0], "ref") == ["ldap://other.example.com/ou=elsewhere,dc=example,dc=com"]
    # And a subtree search with ManageDsaIT has no references, only entries.
    admin.search(subtree, "(objectClass=*)", attributes=["1.1"], controls=[MANAGE_DSA_IT])
    assert_result(admin, "success")
    assert [r for r in admin.response if r["type"] == "searchResRef"] == []
    assert dns_of([r for r in admin.response if r["type"] == "searchResEntry"]) == {subtree, ref,
                                                                                    f"ou=local,{subtree}"}


def test_update_below_a_referral_gives_referral(admin, referral):
    subtree, ref = referral
    admin.add(f"cn=x,{ref}", attributes={"objectClass": ["person"], "sn": "x"})
    assert_result(admin, "referral")
    assert admin.result["dn"].lower() == ref
    assert admin.result["referrals"]


def test_writes_at_or_below_a_referral_without_write_access_give_referral(server, admin, referral):
    """RFC 3296: without ManageDsaIT an update whose target is a referral entry or lies below
    one gets a referral; Larch checks this before access control, for every update, so a
    user who may not write there is told where the entry is held rather than
    insufficientAccessRights (50). slapd's back-mdb does the same for modify, for the delete
    of an entry below the referral and for compare, but checks the parent's access first for
    an add below the referral entry, a rename below it and the delete of the referral entry
    itself."""
    subtree, ref = referral
    user = f"uid=alice,{subtree}"
    add_ok(admin, user, {"objectClass": ["inetOrgPerson"], "uid": "alice", "cn": "Alice",
                         "sn": "Liddell", "userPassword": "alice-pw"})
    conn = connect(server, user, "alice-pw")
    assert_result(conn, "success")
    below = f"cn=x,{ref}"
    access_first = "insufficientAccessRights" if server.kind == "slapd" else "referral"
    cases = [
        ("add below", lambda: conn.add(below, attributes={"objectClass": ["person"], "sn": "x"}),
         access_first),
        ("modify below", lambda: conn.modify(below, {"sn": [(ldap3.MODIFY_REPLACE, ["y"])]}), "referral"),
        ("delete below", lambda: conn.delete(below), "referral"),
        ("rename below", lambda: conn.modify_dn(below, "cn=y"), access_first),
        ("modify the referral entry",
         lambda: conn.modify(ref, {"description": [(ldap3.MODIFY_REPLACE, ["y"])]}), "referral"),
        ("delete the referral entry", lambda: conn.delete(ref), access_first),
        ("compare below", lambda: conn.compare(below, "sn", "x"), "referral"),
    ]
    for what, op, expected in cases:
        op()
        assert conn.result["description"] == expected, (what, conn.result)
        if expected == "referral":
            assert conn.result["dn"].lower() == ref, (what, conn.result)
            assert all(u.startswith("ldap://other.example.com/") for u in conn.result["referrals"]), what
    # With ManageDsaIT the referral entry is an ordinary entry: the access check refuses.
    conn.modify(ref, {"description": [(ldap3.MODIFY_REPLACE, ["y"])]}, controls=[MANAGE_DSA_IT])
    assert_result(conn, "insufficientAccessRights")
    # Outside the referral, the write is refused as before.
    conn.add(f"cn=x,{subtree}", attributes={"objectClass": ["person"], "sn": "x"})
    assert_result(conn, "insufficientAccessRights")
    conn.unbind()


def test_anonymous_reads_the_same_entries(anon, admin, tree):
    res_a, ea = search_entries(admin, tree, attrs=["cn", "sn"])
    res_b, eb = search_entries(anon, tree, attrs=["cn", "sn"])
    assert_result(res_b, "success")
    assert dns_of(ea) == dns_of(eb)
    assert {e["dn"].lower(): attr_names(e) for e in ea} == {e["dn"].lower(): attr_names(e) for e in eb}
