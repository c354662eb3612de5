"""Modify (RFC 4511 section 4.6), increment (RFC 4525), the permissive modify control
(1.2.840.113556.1.4.1413), and the operational attributes a modify updates."""

import time

import ldap3
import pytest
from ldap3 import MODIFY_ADD, MODIFY_DELETE, MODIFY_INCREMENT, MODIFY_REPLACE

from ldaputil import anonymous_write_refusal, add_ok, assert_diagnostic, assert_result, connect, search_entries, values

PERMISSIVE = ("1.2.840.113556.1.4.1413", True, None)


@pytest.fixture
def person(admin, subtree):
    dn = f"uid=m,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson", "posixAccount", "shadowAccount"], "uid": "m",
                       "cn": ["m", "Em"], "sn": "Mod", "uidNumber": "10", "gidNumber": "1",
                       "homeDirectory": "/home/m", "description": ["d1", "d2"]})
    return dn


def read(admin, dn, *attrs):
    res, entries = search_entries(admin, dn, scope=ldap3.BASE, attrs=list(attrs) or ["*", "+"])
    assert_result(res, "success")
    return entries[0]


def test_add_values(admin, person):
    admin.modify(person, {"description": [(MODIFY_ADD, ["d3"])], "mail": [(MODIFY_ADD, ["m@example.com"])]})
    assert_result(admin, "success")
    e = read(admin, person, "description", "mail")
    assert sorted(values(e, "description")) == ["d1", "d2", "d3"]
    assert values(e, "mail") == ["m@example.com"]


def test_delete_values_and_attributes(admin, person):
    admin.modify(person, {"description": [(MODIFY_DELETE, ["D1"])]})  # caseIgnoreMatch finds d1
    assert_result(admin, "success")
    assert values(read(admin, person, "description"), "description") == ["d2"]
    admin.modify(person, {"description": [(MODIFY_DELETE, [])]})
    assert_result(admin, "success")
    assert values(read(admin, person, "description"), "description") == []


def test_replace(admin, person):
    admin.modify(person, {"description": [(MODIFY_REPLACE, ["only"])]})
    assert_result(admin, "success")
    assert values(read(admin, person, "description"), "description") == ["only"]
    # Replace with no values removes the attribute; on an absent attribute it is a no-op.
    admin.modify(person, {"description": [(MODIFY_REPLACE, [])], "mail": [(MODIFY_REPLACE, [])]})
    assert_result(admin, "success")
    e = read(admin, person, "description", "mail")
    assert values(e, "description") == [] and values(e, "mail") == []


def test_increment(admin, person):
    admin.modify(person, {"uidNumber": [(MODIFY_INCREMENT, [5])]})
    assert_result(admin, "success")
    assert values(read(admin, person, "uidNumber"), "uidNumber") == ["15"]
    admin.modify(person, {"uidNumber": [(MODIFY_INCREMENT, [-20])]})
    assert_result(admin, "success")
    assert values(read(admin, person, "uidNumber"), "uidNumber") == ["-5"]


def test_increment_absent_attribute(admin, person):
    # RFC 4525: the attribute must exist.
    admin.modify(person, {"shadowMin": [(MODIFY_INCREMENT, [1])]})
    assert_result(admin, "noSuchAttribute")


def test_increment_non_integer_attribute(admin, person):
    admin.modify(person, {"description": [(MODIFY_INCREMENT, [1])]})
    assert_result(admin, "constraintViolation")
    assert_diagnostic(admin)


def test_increment_by_a_non_integer(admin, person):
    admin.modify(person, {"uidNumber": [(MODIFY_INCREMENT, ["abc"])]})
    assert_result(admin, "invalidAttributeSyntax")


def test_several_changes_in_order(admin, person):
    # Applied in the order given: delete all, add one, add another, delete the first.
    admin.modify(person, {"description": [(MODIFY_DELETE, []), (MODIFY_ADD, ["a"]), (MODIFY_ADD, ["b"]),
                                          (MODIFY_DELETE, ["a"])]})
    assert_result(admin, "success")
    assert values(read(admin, person, "description"), "description") == ["b"]


def test_all_or_nothing(admin, person):
    before = read(admin, person)
    # The first change would succeed, the second fails: nothing is applied.
    admin.modify(person, {"description": [(MODIFY_ADD, ["new"])], "mail": [(MODIFY_DELETE, ["nope@example.com"])]})
    assert_result(admin, "noSuchAttribute")
    after = read(admin, person)
    assert after["raw_attributes"] == before["raw_attributes"]
    admin.modify(person, {"uidNumber": [(MODIFY_INCREMENT, [1])], "sn": [(MODIFY_DELETE, [])]})
    assert_result(admin, "objectClassViolation")
    assert read(admin, person)["raw_attributes"] == before["raw_attributes"]


def test_delete_missing_value(admin, person):
    admin.modify(person, {"description": [(MODIFY_DELETE, ["nope"])]})
    assert_result(admin, "noSuchAttribute")
    assert_diagnostic(admin)
    admin.modify(person, {"mail": [(MODIFY_DELETE, [])]})
    assert_result(admin, "noSuchAttribute")


@pytest.mark.not_slapd("slapd 2.5 accepts the control but answers noSuchAttribute (16) with an empty "
                       "message when a value to delete is missing: modify_delete_vindex (mods.c) skips "
                       "the value and returns the lookup's code anyway")
def test_permissive_modify_missing_value(admin, person):
    admin.modify(person, {"description": [(MODIFY_DELETE, ["nope"])]}, controls=[PERMISSIVE])
    assert_result(admin, "success")
    assert sorted(values(read(admin, person, "description"), "description")) == ["d1", "d2"]
    admin.modify(person, {"description": [(MODIFY_DELETE, ["nope", "d1"])]}, controls=[PERMISSIVE])
    assert_result(admin, "success")
    assert values(read(admin, person, "description"), "description") == ["d2"]


def test_permissive_modify_missing_attribute_and_existing_value(admin, person):
    admin.modify(person, {"mail": [(MODIFY_DELETE, [])]}, controls=[PERMISSIVE])
    assert_result(admin, "success")
    admin.modify(person, {"description": [(MODIFY_ADD, ["D1", "d9"])]}, controls=[PERMISSIVE])
    assert_result(admin, "success")
    assert sorted(values(read(admin, person, "description"), "description")) == ["d1", "d2", "d9"]


def test_add_existing_value(admin, person):
    admin.modify(person, {"description": [(MODIFY_ADD, ["D1"])]})
    assert_result(admin, "attributeOrValueExists")
    assert_diagnostic(admin)


def test_remove_rdn_value_is_refused(admin, person):
    before = read(admin, person)
    admin.modify(person, {"uid": [(MODIFY_DELETE, ["m"])]})
    assert admin.result["result"] != 0
    admin.modify(person, {"uid": [(MODIFY_REPLACE, ["other"])]})
    assert admin.result["result"] != 0
    assert read(admin, person)["raw_attributes"] == before["raw_attributes"]


@pytest.mark.not_slapd("slapd answers namingViolation (64) instead of RFC 4511's notAllowedOnRDN (67)")
def test_remove_rdn_value_gives_not_allowed_on_rdn(admin, person):
    # RFC 4511 section 4.6: removing a distinguished value gives notAllowedOnRDN.
    admin.modify(person, {"uid": [(MODIFY_DELETE, ["m"])]})
    assert_result(admin, "notAllowedOnRDN")
    admin.modify(person, {"uid": [(MODIFY_DELETE, [])]})
    assert_result(admin, "notAllowedOnRDN")
    admin.modify(person, {"uid": [(MODIFY_REPLACE, ["other"])]})
    assert_result(admin, "notAllowedOnRDN")


def test_other_values_of_the_rdn_attribute_can_go(admin, person):
    admin.modify(person, {"cn": [(MODIFY_DELETE, ["Em"])]})
    assert_result(admin, "success")
    assert values(read(admin, person, "cn"), "cn") == ["m"]


def test_change_structural_class(admin, person):
    admin.modify(person, {"objectClass": [(MODIFY_REPLACE, ["account", "posixAccount", "shadowAccount"])]})
    assert_result(admin, "objectClassModsProhibited")
    assert_diagnostic(admin)


def test_add_unrelated_structural_class(admin, person):
    admin.modify(person, {"objectClass": [(MODIFY_ADD, ["organizationalUnit"])], "ou": [(MODIFY_ADD, ["x"])]})
    assert_result(admin, "objectClassViolation")


def test_add_and_remove_auxiliary_class(admin, subtree):
    dn = f"cn=aux,{subtree}"
    add_ok(admin, dn, {"objectClass": ["person"], "sn": "x"})
    admin.modify(dn, {"objectClass": [(MODIFY_ADD, ["extensibleObject"])], "mail": [(MODIFY_ADD, ["a@b.c"])]})
    assert_result(admin, "success")
    # The class allows mail; removing the class while mail stays is a violation.
    admin.modify(dn, {"objectClass": [(MODIFY_DELETE, ["extensibleObject"])]})
    assert_result(admin, "objectClassViolation")
    admin.modify(dn, {"objectClass": [(MODIFY_DELETE, ["extensibleObject"])], "mail": [(MODIFY_DELETE, [])]})
    assert_result(admin, "success")


def test_delete_must_attribute(admin, person):
    admin.modify(person, {"sn": [(MODIFY_DELETE, [])]})
    assert_result(admin, "objectClassViolation")


def test_undefined_attribute(admin, person):
    admin.modify(person, {"fooBarUnknown": [(MODIFY_ADD, ["x"])]})
    assert_result(admin, "undefinedAttributeType")


def test_invalid_syntax(admin, person):
    admin.modify(person, {"uidNumber": [(MODIFY_REPLACE, ["ten"])]})
    assert_result(admin, "invalidAttributeSyntax")


def test_second_value_of_single_value_attribute(admin, person):
    admin.modify(person, {"uidNumber": [(MODIFY_ADD, ["11"])]})
    assert_result(admin, "constraintViolation")


def test_no_user_modification_attribute(admin, person):
    admin.modify(person, {"createTimestamp": [(MODIFY_REPLACE, ["20200101000000Z"])]})
    assert_result(admin, "constraintViolation")
    admin.modify(person, {"entryUUID": [(MODIFY_REPLACE, ["12345678-1234-1234-1234-123456789012"])]})
    assert_result(admin, "constraintViolation")


def test_modify_missing_entry(admin, subtree):
    admin.modify(f"cn=ghost,{subtree}", {"description": [(MODIFY_ADD, ["x"])]})
    assert_result(admin, "noSuchObject")
    assert admin.result["dn"].lower() == subtree


def test_anonymous_cannot_modify(anon, person, server):
    anon.modify(person, {"description": [(MODIFY_ADD, ["x"])]})
    assert_result(anon, anonymous_write_refusal(server))


def test_modify_updates_operational_attributes(server, admin, subtree):
    dn = f"uid=self,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "self", "cn": "Self", "sn": "Self",
                       "userPassword": "self-pw"})
    before = read(admin, dn)
    # Timestamps have one-second resolution; wait for the next second so the change shows.
    time.sleep(1.05)
    user = connect(server, dn, "self-pw")
    assert_result(user, "success")
    # A user may change their own password under both servers' default policies.
    user.modify(dn, {"userPassword": [(MODIFY_REPLACE, ["self-pw-2"])]})
    assert_result(user, "success")
    user.unbind()
    after = read(admin, dn)
    assert values(after, "modifiersName")[0].lower() == dn
    assert values(after, "creatorsName") == values(before, "creatorsName")
    assert values(after, "createTimestamp") == values(before, "createTimestamp")
    assert values(after, "entryUUID") == values(before, "entryUUID")
    assert values(after, "modifyTimestamp")[0] > values(before, "modifyTimestamp")[0]
    assert values(after, "entryCSN")[0] > values(before, "entryCSN")[0]
