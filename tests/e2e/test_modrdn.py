"""Modify DN (RFC 4511 section 4.9): renames with and without deleteOldRDN, moves of whole
subtrees under a new superior, and the ways a rename can fail."""

import ldap3
import pytest

from ldaputil import anonymous_write_refusal, add_ok, assert_diagnostic, assert_result, dns_of, search_entries, values


def read(admin, dn, *attrs):
    res, entries = search_entries(admin, dn, scope=ldap3.BASE, attrs=list(attrs) or ["*", "+"])
    assert_result(res, "success")
    return entries[0]


def exists(admin, dn):
    admin.search(dn, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["1.1"])
    return admin.result["result"] == 0


@pytest.fixture
def tree(admin, subtree):
    """subtree: ou=a (cn=c1 (cn=g1), cn=c2), ou=b."""
    add_ok(admin, f"ou=a,{subtree}", {"objectClass": ["organizationalUnit"], "ou": "a"})
    add_ok(admin, f"cn=c1,ou=a,{subtree}", {"objectClass": ["person"], "sn": "one"})
    add_ok(admin, f"cn=g1,cn=c1,ou=a,{subtree}", {"objectClass": ["person"], "sn": "grandchild"})
    add_ok(admin, f"cn=c2,ou=a,{subtree}", {"objectClass": ["person"], "sn": "two"})
    add_ok(admin, f"ou=b,{subtree}", {"objectClass": ["organizationalUnit"], "ou": "b"})
    return subtree


def test_rename_delete_old_rdn(admin, tree):
    old = f"cn=c2,ou=a,{tree}"
    uuid = values(read(admin, old, "entryUUID"), "entryUUID")
    admin.modify_dn(old, "cn=c2new", delete_old_dn=True)
    assert_result(admin, "success")
    assert not exists(admin, old)
    e = read(admin, f"cn=c2new,ou=a,{tree}")
    assert values(e, "cn") == ["c2new"]
    assert values(e, "sn") == ["two"]
    assert values(e, "entryUUID") == uuid  # the same entry, renamed
    assert values(e, "entryDN")[0].lower() == f"cn=c2new,ou=a,{tree}"


def test_rename_keep_old_rdn(admin, tree):
    admin.modify_dn(f"cn=c2,ou=a,{tree}", "cn=c2new", delete_old_dn=False)
    assert_result(admin, "success")
    assert sorted(values(read(admin, f"cn=c2new,ou=a,{tree}", "cn"), "cn")) == ["c2", "c2new"]


def test_rename_to_another_attribute_type(admin, subtree):
    dn = f"cn=jo,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "sn": "x", "uid": "jo1"})
    admin.modify_dn(dn, "uid=jo1", delete_old_dn=False)
    assert_result(admin, "success")
    e = read(admin, f"uid=jo1,{subtree}", "cn", "uid")
    assert values(e, "cn") == ["jo"] and values(e, "uid") == ["jo1"]
    # Now drop the cn value: cn is a MUST of person, so deleteOldRDN would leave the entry
    # without one.
    admin.modify_dn(f"uid=jo1,{subtree}", "uid=jo2", delete_old_dn=True)
    assert_result(admin, "success")
    assert values(read(admin, f"uid=jo2,{subtree}", "uid"), "uid") == ["jo2"]


def test_rename_that_drops_a_must_value(admin, subtree):
    dn = f"cn=only,{subtree}"
    add_ok(admin, dn, {"objectClass": ["person"], "sn": "x"})
    # The new RDN's type is not allowed by person.
    admin.modify_dn(dn, "uid=only", delete_old_dn=False)
    assert_result(admin, "objectClassViolation")
    # Deleting the old RDN would leave person without its MUST cn.
    admin.modify_dn(dn, "sn=x", delete_old_dn=True)
    assert_result(admin, "objectClassViolation")
    assert exists(admin, dn)


def test_rename_a_non_leaf(admin, tree):
    admin.modify_dn(f"ou=a,{tree}", "ou=renamed")
    assert_result(admin, "success")
    res, entries = search_entries(admin, f"ou=renamed,{tree}")
    assert dns_of(entries) == {f"ou=renamed,{tree}", f"cn=c1,ou=renamed,{tree}", f"cn=g1,cn=c1,ou=renamed,{tree}",
                               f"cn=c2,ou=renamed,{tree}"}
    assert values(read(admin, f"cn=g1,cn=c1,ou=renamed,{tree}", "entryDN"), "entryDN")[0].lower() == \
        f"cn=g1,cn=c1,ou=renamed,{tree}"
    assert not exists(admin, f"ou=a,{tree}")


def test_move_subtree_to_new_superior(admin, tree):
    uuids = {e["dn"].lower(): values(e, "entryUUID") for e in search_entries(admin, f"ou=a,{tree}",
                                                                              attrs=["entryUUID"])[1]}
    admin.modify_dn(f"ou=a,{tree}", "ou=a", new_superior=f"ou=b,{tree}")
    assert_result(admin, "success")
    res, entries = search_entries(admin, f"ou=b,{tree}", attrs=["entryUUID", "entryDN"])
    assert dns_of(entries) == {f"ou=b,{tree}", f"ou=a,ou=b,{tree}", f"cn=c1,ou=a,ou=b,{tree}",
                               f"cn=g1,cn=c1,ou=a,ou=b,{tree}", f"cn=c2,ou=a,ou=b,{tree}"}
    for e in entries:
        assert values(e, "entryDN")[0].lower() == e["dn"].lower()
        old = e["dn"].lower().replace(",ou=b,", ",")
        if old in uuids:
            assert values(e, "entryUUID") == uuids[old]
    assert not exists(admin, f"ou=a,{tree}")
    # One-level and filtered searches see the children at their new place.
    res, entries = search_entries(admin, f"ou=a,ou=b,{tree}", "(sn=grandchild)")
    assert dns_of(entries) == {f"cn=g1,cn=c1,ou=a,ou=b,{tree}"}
    res, entries = search_entries(admin, f"ou=a,ou=b,{tree}", scope=ldap3.LEVEL)
    assert dns_of(entries) == {f"cn=c1,ou=a,ou=b,{tree}", f"cn=c2,ou=a,ou=b,{tree}"}


def test_move_and_rename_at_once(admin, tree):
    admin.modify_dn(f"cn=c1,ou=a,{tree}", "cn=moved", delete_old_dn=True, new_superior=f"ou=b,{tree}")
    assert_result(admin, "success")
    assert exists(admin, f"cn=g1,cn=moved,ou=b,{tree}")
    assert values(read(admin, f"cn=moved,ou=b,{tree}", "cn"), "cn") == ["moved"]


@pytest.mark.not_slapd("slapd 2.5.13 back-mdb answers other (80) \"DN index add failed\" when renaming an "
                       "entry that received a subtree by an earlier move")
def test_rename_the_new_parent_of_a_moved_subtree(admin, tree):
    admin.modify_dn(f"ou=a,{tree}", "ou=a", new_superior=f"ou=b,{tree}")
    assert_result(admin, "success")
    admin.modify_dn(f"ou=b,{tree}", "ou=b2")
    assert_result(admin, "success")
    assert exists(admin, f"cn=g1,cn=c1,ou=a,ou=b2,{tree}")


def test_rename_onto_an_existing_entry(admin, tree):
    admin.modify_dn(f"cn=c1,ou=a,{tree}", "cn=c2")
    assert_result(admin, "entryAlreadyExists")
    admin.modify_dn(f"ou=b,{tree}", "ou=b", new_superior=f"ou=a,{tree}")
    assert_result(admin, "success")
    admin.modify_dn(f"cn=c2,ou=a,{tree}", "ou=b", new_superior=f"ou=a,{tree}")
    assert_result(admin, "entryAlreadyExists")
    assert exists(admin, f"cn=c1,ou=a,{tree}") and exists(admin, f"cn=c2,ou=a,{tree}")


def test_new_superior_missing(admin, tree):
    admin.modify_dn(f"cn=c1,ou=a,{tree}", "cn=c1", new_superior=f"ou=nowhere,{tree}")
    assert_result(admin, "noSuchObject")
    assert exists(admin, f"cn=c1,ou=a,{tree}")


def test_rename_missing_entry(admin, tree):
    admin.modify_dn(f"cn=ghost,ou=a,{tree}", "cn=spirit")
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == f"ou=a,{tree}"


def test_move_below_itself(admin, tree):
    admin.modify_dn(f"ou=a,{tree}", "ou=a", new_superior=f"cn=c1,ou=a,{tree}")
    assert_result(admin, "unwillingToPerform")
    assert_diagnostic(admin)
    assert exists(admin, f"cn=g1,cn=c1,ou=a,{tree}")


def test_rename_onto_itself(admin, tree):
    dn = f"cn=c2,ou=a,{tree}"
    before = read(admin, dn)
    admin.modify_dn(dn, "cn=c2", delete_old_dn=True)
    assert_result(admin, "success")
    after = read(admin, dn)
    assert values(after, "cn") == ["c2"]
    assert values(after, "entryUUID") == values(before, "entryUUID")


def test_rename_changing_only_the_case(admin, tree):
    admin.modify_dn(f"cn=c2,ou=a,{tree}", "cn=C2", delete_old_dn=True)
    assert_result(admin, "success")
    e = read(admin, f"cn=c2,ou=a,{tree}", "cn")
    assert e["dn"].split(",")[0] == "cn=C2"
    assert values(e, "cn") == ["C2"]


def test_invalid_new_rdn(admin, tree):
    admin.modify_dn(f"cn=c2,ou=a,{tree}", "not an rdn")
    assert_result(admin, "invalidDNSyntax")
    # An attribute type the schema does not know cannot name an entry; slapd treats the
    # RDN as invalid.
    admin.modify_dn(f"cn=c2,ou=a,{tree}", "fooBarUnknown=x")
    assert_result(admin, "invalidDNSyntax")


def test_anonymous_cannot_rename(anon, tree, server):
    anon.modify_dn(f"cn=c2,ou=a,{tree}", "cn=anon")
    assert_result(anon, anonymous_write_refusal(server))
