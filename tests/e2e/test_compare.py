"""Compare (RFC 4511 section 4.10)."""

import pytest

from ldaputil import add_ok, assert_result


@pytest.fixture
def entry(admin, subtree):
    dn = f"uid=cmp,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson", "posixAccount"], "uid": "cmp", "cn": ["Compare Me", "cmp"],
                       "sn": "Compare", "uidNumber": "42", "gidNumber": "7", "homeDirectory": "/home/cmp",
                       "cn;lang-de": "Vergleich"})
    return dn


@pytest.mark.parametrize("attr,value,result", [
    ("sn", "Compare", "compareTrue"),
    ("SN", "COMPARE", "compareTrue"),  # type by any name, value by the equality rule
    ("sn", "Other", "compareFalse"),
    ("cn", "cmp", "compareTrue"),
    ("cn", "compare  me", "compareTrue"),  # insignificant space
    ("uidNumber", "42", "compareTrue"),
    ("uidNumber", "43", "compareFalse"),
    ("objectClass", "POSIXACCOUNT", "compareTrue"),
    ("objectClass", "organizationalUnit", "compareFalse"),
    ("cn;lang-de", "vergleich", "compareTrue"),
    ("cn;lang-de", "cmp", "compareFalse"),
    ("cn", "Vergleich", "compareTrue"),  # the base type covers its subtypes
    ("2.5.4.4", "compare", "compareTrue"),  # sn by OID
])
def test_compare(admin, entry, attr, value, result):
    admin.compare(entry, attr, value)
    assert_result(admin, result)


def test_compare_absent_attribute(admin, entry):
    admin.compare(entry, "mail", "cmp@example.com")
    assert_result(admin, "noSuchAttribute")


def test_compare_missing_entry(admin, subtree):
    admin.compare(f"uid=ghost,{subtree}", "sn", "x")
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == subtree


def test_compare_undefined_type(admin, entry):
    admin.compare(entry, "fooBarUnknown", "x")
    assert_result(admin, "undefinedAttributeType")


def test_compare_anonymous(anon, entry):
    anon.compare(entry, "sn", "compare")
    assert_result(anon, "compareTrue")


def test_compare_operational_attribute(server, admin, entry):
    admin.compare(entry, "creatorsName", server.admin_dn.upper())
    assert_result(admin, "compareTrue")
    admin.compare(entry, "structuralObjectClass", "inetOrgPerson")
    assert_result(admin, "compareTrue")
