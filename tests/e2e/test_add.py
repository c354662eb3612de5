"""Add (RFC 4511 section 4.7) and the schema checks an added entry goes through (RFC 4512)."""

import re

import ldap3

from ldaputil import anonymous_write_refusal, add_ok, assert_diagnostic, assert_result, ldapadd, search_entries, values


def read(admin, dn, attrs=("*", "+")):
    res, entries = search_entries(admin, dn, scope=ldap3.BASE, attrs=list(attrs))
    assert_result(res, "success")
    assert len(entries) == 1
    return entries[0]


def test_add_and_read_back(server, admin, subtree):
    dn = f"uid=jdoe,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "jdoe", "cn": "John Doe", "sn": "Doe",
                       "mail": ["jdoe@example.com", "john@example.com"], "description": "first"})
    e = read(admin, dn)
    assert e["dn"].lower() == dn
    assert sorted(values(e, "mail")) == ["jdoe@example.com", "john@example.com"]
    assert values(e, "cn") == ["John Doe"]
    assert sorted(v.lower() for v in values(e, "objectClass")) in (["inetorgperson"],
                                                                   ["inetorgperson", "organizationalperson",
                                                                    "person", "top"])
    # Operational attributes the server sets on add.
    assert values(e, "structuralObjectClass") == ["inetOrgPerson"]
    assert values(e, "creatorsName")[0].lower() == server.admin_dn
    assert values(e, "modifiersName")[0].lower() == server.admin_dn
    assert re.fullmatch(r"\d{14}Z", values(e, "createTimestamp")[0])
    assert values(e, "createTimestamp") == values(e, "modifyTimestamp")
    assert len(values(e, "entryUUID")) == 1
    assert len(values(e, "entryCSN")) == 1
    assert values(e, "entryDN")[0].lower() == dn
    # The parent now has a subordinate.
    assert values(read(admin, subtree, ["hasSubordinates"]), "hasSubordinates") == ["TRUE"]


def test_add_as_user_dn_is_recorded(server, admin, subtree):
    dn = f"uid=writer,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "writer", "cn": "W", "sn": "W"})
    e = read(admin, dn, ["creatorsName"])
    assert values(e, "creatorsName")[0].lower() == server.admin_dn


def test_add_existing_entry(admin, subtree):
    dn = f"cn=dup,{subtree}"
    add_ok(admin, dn, {"objectClass": ["person"], "sn": "x"})
    admin.add(dn, attributes={"objectClass": ["person"], "sn": "y"})
    assert_result(admin, "entryAlreadyExists")
    # The same name in another case and spacing is the same entry.
    admin.add(f"CN=DUP, {subtree.upper()}", attributes={"objectClass": ["person"], "sn": "y"})
    assert_result(admin, "entryAlreadyExists")
    assert values(read(admin, dn, ["sn"]), "sn") == ["x"]


def test_add_with_missing_parent(admin, subtree):
    admin.add(f"cn=child,ou=missing,ou=also-missing,{subtree}", attributes={"objectClass": ["person"], "sn": "x"})
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == subtree


def test_add_outside_every_naming_context(admin):
    # No naming context holds it and there is no superior to refer to: slapd answers
    # unwillingToPerform ("no global superior knowledge").
    admin.add("o=nowhere", attributes={"objectClass": ["organization"], "o": "nowhere"})
    assert_result(admin, "unwillingToPerform")
    assert_diagnostic(admin)


def test_add_missing_must_attribute(admin, subtree):
    admin.add(f"cn=nosn,{subtree}", attributes={"objectClass": ["person"]})
    assert_result(admin, "objectClassViolation")
    assert_diagnostic(admin)


def test_add_attribute_not_allowed(admin, subtree):
    admin.add(f"cn=nomail,{subtree}", attributes={"objectClass": ["person"], "sn": "x", "mail": "a@example.com"})
    assert_result(admin, "objectClassViolation")


def test_add_without_structural_class(admin, subtree):
    admin.add(f"cn=aux,{subtree}", attributes={"objectClass": ["posixAccount"], "cn": "aux", "uid": "aux",
                                               "uidNumber": "1", "gidNumber": "1", "homeDirectory": "/h"})
    assert_result(admin, "objectClassViolation")


def test_add_with_two_unrelated_structural_classes(admin, subtree):
    admin.add(f"cn=two,{subtree}", attributes={"objectClass": ["person", "organizationalUnit"], "sn": "x",
                                               "ou": "y"})
    assert_result(admin, "objectClassViolation")


def test_add_unknown_object_class(admin, subtree):
    # An objectClass value the schema does not know is not a valid OID/descr of a class:
    # slapd answers invalidAttributeSyntax.
    admin.add(f"cn=unk,{subtree}", attributes={"objectClass": ["person", "noSuchObjectClass"], "sn": "x"})
    assert_result(admin, "invalidAttributeSyntax")


def test_add_undefined_attribute_type(admin, subtree):
    admin.add(f"cn=undef,{subtree}", attributes={"objectClass": ["person"], "sn": "x", "fooBarUnknown": "1"})
    assert_result(admin, "undefinedAttributeType")
    assert_diagnostic(admin)


def test_add_invalid_attribute_syntax(admin, subtree):
    admin.add(f"uid=badnum,{subtree}", attributes={
        "objectClass": ["account", "posixAccount"], "uid": "badnum", "cn": "x", "uidNumber": "twelve",
        "gidNumber": "1", "homeDirectory": "/h"})
    assert_result(admin, "invalidAttributeSyntax")
    assert_diagnostic(admin)


def test_add_empty_value_where_syntax_forbids(admin, subtree):
    admin.add(f"cn=emptytel,{subtree}", attributes={"objectClass": ["person"], "sn": "x", "telephoneNumber": ""})
    assert_result(admin, "invalidAttributeSyntax")


def test_add_two_values_of_single_value_attribute(admin, subtree):
    admin.add(f"uid=twonum,{subtree}", attributes={
        "objectClass": ["account", "posixAccount"], "uid": "twonum", "cn": "x", "uidNumber": ["1", "2"],
        "gidNumber": "1", "homeDirectory": "/h"})
    assert_result(admin, "constraintViolation")
    assert_diagnostic(admin)


def test_add_no_user_modification_attribute(admin, subtree):
    admin.add(f"cn=nousermod,{subtree}", attributes={"objectClass": ["person"], "sn": "x",
                                                     "createTimestamp": "20200101000000Z"})
    assert_result(admin, "constraintViolation")
    admin.add(f"cn=nousermod2,{subtree}", attributes={"objectClass": ["person"], "sn": "x",
                                                      "entryUUID": "12345678-1234-1234-1234-123456789012"})
    assert_result(admin, "constraintViolation")


def test_add_duplicate_value(admin, subtree):
    admin.add(f"cn=dupval,{subtree}", attributes={"objectClass": ["person"], "sn": ["x", "x"]})
    assert_result(admin, "attributeOrValueExists")
    # Duplicates under the attribute's equality rule (caseIgnoreMatch) too.
    admin.add(f"cn=dupval2,{subtree}", attributes={"objectClass": ["person"], "sn": ["Smith", "SMITH"]})
    assert_result(admin, "attributeOrValueExists")


def test_add_rdn_value_absent_from_the_attributes(server, admin, subtree):
    # RFC 4511 section 4.7: the entry is made of the attributes "along with those from the
    # RDN"; slapd adds the RDN value. Sent with ldapadd so no client library helps.
    dn = f"cn=fromrdn,{subtree}"
    p = ldapadd(server, f"dn: {dn}\nobjectClass: person\nsn: x\n")
    assert p.returncode == 0, p.stderr
    assert values(read(admin, dn, ["cn"]), "cn") == ["fromrdn"]
    # Another value of the RDN's type is kept beside it.
    dn2 = f"cn=second,{subtree}"
    p = ldapadd(server, f"dn: {dn2}\nobjectClass: person\nsn: x\ncn: other\n")
    assert p.returncode == 0, p.stderr
    assert sorted(values(read(admin, dn2, ["cn"]), "cn")) == ["other", "second"]


def test_add_multi_valued_rdn(admin, subtree):
    dn = f"cn=m+sn=n,{subtree}"
    add_ok(admin, dn, {"objectClass": ["person"]})
    e = read(admin, dn, ["cn", "sn"])
    assert values(e, "cn") == ["m"] and values(e, "sn") == ["n"]


def test_naming_violation_single_valued_rdn_conflict(admin, subtree):
    # The RDN says uidNumber=5, the entry says 6, and uidNumber is SINGLE-VALUE.
    admin.add(f"uidNumber=5,{subtree}", attributes={
        "objectClass": ["account", "posixAccount"], "uid": "x", "cn": "x", "uidNumber": "6", "gidNumber": "1",
        "homeDirectory": "/h"})
    assert_result(admin, "namingViolation")
    assert_diagnostic(admin)


def test_naming_violation_operational_rdn(admin, subtree):
    admin.add(f"createTimestamp=20200101000000Z,{subtree}", attributes={"objectClass": ["person"], "cn": "x",
                                                                        "sn": "x"})
    assert_result(admin, "namingViolation")


def test_naming_violation_rdn_without_equality_rule(admin, subtree):
    # facsimileTelephoneNumber has no EQUALITY rule, so it cannot name an entry.
    admin.add(f"facsimileTelephoneNumber=123,{subtree}", attributes={"objectClass": ["organizationalRole"],
                                                                     "cn": "x"})
    assert_result(admin, "namingViolation")


def test_rdn_attribute_not_allowed_by_the_classes(admin, subtree):
    admin.add(f"uid=notallowed,{subtree}", attributes={"objectClass": ["person"], "cn": "x", "sn": "x"})
    assert_result(admin, "objectClassViolation")


def test_add_invalid_dn(admin):
    admin.add("not a dn", attributes={"objectClass": ["person"], "sn": "x"})
    assert_result(admin, "invalidDNSyntax")


def test_add_under_a_leaf_is_allowed(admin, subtree):
    # LDAP has no structure rules by default: any entry may have children.
    add_ok(admin, f"cn=leaf,{subtree}", {"objectClass": ["person"], "sn": "x"})
    add_ok(admin, f"cn=child,cn=leaf,{subtree}", {"objectClass": ["person"], "sn": "y"})


def test_anonymous_cannot_add(anon, admin, subtree, server):
    anon.add(f"cn=anon,{subtree}", attributes={"objectClass": ["person"], "sn": "x"})
    assert_result(anon, anonymous_write_refusal(server))
    assert_diagnostic(anon)
    admin.search(f"cn=anon,{subtree}", "(objectClass=*)", search_scope=ldap3.BASE)
    assert_result(admin, "noSuchObject")
