"""Delete (RFC 4511 section 4.8) and the subtree delete control (1.2.840.113556.1.4.805)."""

import ldap3
import pytest

from ldaputil import anonymous_write_refusal, add_ok, assert_diagnostic, assert_result, dns_of, search_entries

SUBTREE_DELETE = "1.2.840.113556.1.4.805"


def exists(admin, dn):
    admin.search(dn, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["1.1"])
    return admin.result["result"] == 0


def test_delete_leaf(admin, subtree):
    dn = f"cn=leaf,{subtree}"
    add_ok(admin, dn, {"objectClass": ["person"], "sn": "x"})
    admin.delete(dn)
    assert_result(admin, "success")
    assert not exists(admin, dn)
    # The parent has no subordinates any more.
    res, entries = search_entries(admin, subtree, scope=ldap3.BASE, attrs=["hasSubordinates"])
    assert entries[0]["raw_attributes"]["hasSubordinates"] == [b"FALSE"]
    # The name can be used again.
    add_ok(admin, dn, {"objectClass": ["person"], "sn": "y"})


def test_delete_non_leaf(admin, subtree):
    add_ok(admin, f"cn=parent,{subtree}", {"objectClass": ["person"], "sn": "x"})
    add_ok(admin, f"cn=child,cn=parent,{subtree}", {"objectClass": ["person"], "sn": "x"})
    admin.delete(f"cn=parent,{subtree}")
    assert_result(admin, "notAllowedOnNonLeaf")
    assert_diagnostic(admin)
    assert exists(admin, f"cn=parent,{subtree}")
    assert exists(admin, f"cn=child,cn=parent,{subtree}")


def test_delete_missing_entry(admin, subtree):
    admin.delete(f"cn=ghost,ou=nothere,{subtree}")
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == subtree


def test_delete_invalid_dn(admin):
    admin.delete("not a dn")
    assert_result(admin, "invalidDNSyntax")


def test_anonymous_cannot_delete(anon, admin, subtree, server):
    add_ok(admin, f"cn=keep,{subtree}", {"objectClass": ["person"], "sn": "x"})
    anon.delete(f"cn=keep,{subtree}")
    assert_result(anon, anonymous_write_refusal(server))
    assert exists(admin, f"cn=keep,{subtree}")


# slapd 2.5 parses the control (SLAP_CONTROL_X_TREE_DELETE) but back-mdb does not implement
# it: a critical one gets unavailableCriticalExtension (12).
NO_TREE_DELETE = ("back-mdb does not implement the subtree delete control "
                  "(slapd answers unavailableCriticalExtension (12))")


@pytest.mark.not_slapd(NO_TREE_DELETE)
def test_subtree_delete_control(admin, subtree):
    top = f"ou=doomed,{subtree}"
    add_ok(admin, top, {"objectClass": ["organizationalUnit"], "ou": "doomed"})
    for i in range(5):
        add_ok(admin, f"cn=c{i},{top}", {"objectClass": ["person"], "sn": "x"})
        add_ok(admin, f"cn=g{i},cn=c{i},{top}", {"objectClass": ["person"], "sn": "x"})
    add_ok(admin, f"cn=keep,{subtree}", {"objectClass": ["person"], "sn": "x"})
    admin.delete(top, controls=[(SUBTREE_DELETE, True, None)])
    assert_result(admin, "success")
    res, entries = search_entries(admin, subtree)
    assert dns_of(entries) == {subtree, f"cn=keep,{subtree}"}


@pytest.mark.not_slapd(NO_TREE_DELETE)
def test_subtree_delete_control_on_a_leaf(admin, subtree):
    add_ok(admin, f"cn=lone,{subtree}", {"objectClass": ["person"], "sn": "x"})
    admin.delete(f"cn=lone,{subtree}", controls=[(SUBTREE_DELETE, True, None)])
    assert_result(admin, "success")
    assert not exists(admin, f"cn=lone,{subtree}")


def test_subtree_delete_control_unsupported_is_refused_cleanly(server, admin, subtree):
    # Whatever a server does with the control, it never deletes a non-leaf partially: either
    # the whole subtree goes (success) or nothing does.
    top = f"ou=maybe,{subtree}"
    add_ok(admin, top, {"objectClass": ["organizationalUnit"], "ou": "maybe"})
    add_ok(admin, f"cn=c,{top}", {"objectClass": ["person"], "sn": "x"})
    admin.delete(top, controls=[(SUBTREE_DELETE, True, None)])
    code = admin.result["result"]
    if code == 0:
        assert not exists(admin, top) and not exists(admin, f"cn=c,{top}")
    else:
        assert_result(admin, "unavailableCriticalExtension")
        assert exists(admin, top) and exists(admin, f"cn=c,{top}")
