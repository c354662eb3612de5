"""The root DSE (RFC 4512 section 5.1) and the subschema subentry (section 4.2)."""

import subprocess

import ldap3
import pytest

from ldaputil import assert_result, raw_attr_names, raw_search

import ldapwire as w

WHOAMI = "1.3.6.1.4.1.4203.1.11.3"
CANCEL = "1.3.6.1.1.8"
ALL_OPERATIONAL = "1.3.6.1.4.1.4203.1.5.1"
TRUE_FALSE_FILTERS = "1.3.6.1.4.1.4203.1.5.3"
# Controls both servers implement.
CONTROLS = {
    "1.2.840.113556.1.4.319",  # simple paged results
    "1.2.840.113556.1.4.473",  # server-side sorting
    "1.3.6.1.1.12",  # assertion
    "1.3.6.1.1.13.1",  # pre-read
    "1.3.6.1.1.13.2",  # post-read
    "2.16.840.1.113730.3.4.2",  # ManageDsaIT
    "2.16.840.1.113730.3.4.18",  # proxied authorization
}
# Controls Larch implements and advertises; slapd implements permissive modify without
# advertising it (SLAP_CTRL_HIDE) and back-mdb has no subtree delete.
LARCH_CONTROLS = {
    "1.2.840.113556.1.4.1413",  # permissive modify
    "1.2.840.113556.1.4.805",  # subtree delete
}


def root_dse(server, attrs):
    entries, _, done = raw_search(server, "", scope=w.SCOPE_BASE, attrs=attrs, as_admin=False)
    assert_result(done, "success")
    assert len(entries) == 1
    assert entries[0].dn == ""
    return {k.lower(): [v.decode() for v in vs] for k, vs in entries[0].attrs.items()}


@pytest.fixture
def dse(server):
    return root_dse(server, ["*", "+"])


def test_naming_contexts(server, dse):
    assert [v.lower() for v in dse["namingcontexts"]] == [server.base]


def test_supported_ldap_version(dse):
    assert dse["supportedldapversion"] == ["3"]


def test_supported_controls(dse):
    assert CONTROLS <= set(dse["supportedcontrol"]), CONTROLS - set(dse["supportedcontrol"])


@pytest.mark.larch_only("permissive modify and subtree delete are advertised by Larch only")
def test_larch_supported_controls(dse):
    assert LARCH_CONTROLS <= set(dse["supportedcontrol"])


def test_supported_extensions(dse):
    assert {WHOAMI, CANCEL} <= set(dse["supportedextension"])


def test_supported_features(dse):
    assert {ALL_OPERATIONAL, TRUE_FALSE_FILTERS} <= set(dse["supportedfeatures"])


def test_subschema_subentry(dse):
    assert [v.lower() for v in dse["subschemasubentry"]] == ["cn=subschema"]


def test_root_dse_attributes_are_operational(server):
    # RFC 4512 section 5.1: with no attribute list (all user attributes), the root DSE's
    # operational attributes are not returned.
    plain = root_dse(server, [])
    assert "namingcontexts" not in plain and "supportedcontrol" not in plain
    named = root_dse(server, ["namingContexts", "supportedLDAPVersion"])
    assert set(named) == {"namingcontexts", "supportedldapversion"}


def test_root_dse_only_with_base_scope(server):
    # A one-level search of "" does not list the naming contexts as children of the root DSE
    # in every server; a base search with a filter that does not match returns nothing.
    entries, _, done = raw_search(server, "", scope=w.SCOPE_BASE, filt=w.f_eq("objectClass", "person"),
                                  as_admin=False)
    assert_result(done, "success")
    assert entries == []


@pytest.mark.larch_only("vendorName and vendorVersion are Larch's")
def test_vendor(server, dse):
    # RFC 3045: one value each; the version is the one `larch --version` prints.
    assert len(dse["vendorname"]) == 1 and "larch" in dse["vendorname"][0].lower()
    assert len(dse["vendorversion"]) == 1
    printed = subprocess.run([str(server.larch_bin), "--version"], capture_output=True, text=True,
                             check=True).stdout.split()
    assert printed, "larch --version printed nothing"
    assert printed[-1] in dse["vendorversion"][0]


def test_subschema(anon):
    anon.search("cn=Subschema", "(objectClass=subschema)", search_scope=ldap3.BASE,
                attributes=["objectClasses", "attributeTypes", "ldapSyntaxes", "matchingRules"])
    assert_result(anon, "success")
    entries = [e for e in anon.response if e["type"] == "searchResEntry"]
    assert len(entries) == 1
    raw = {k.lower(): [v.decode() for v in vs] for k, vs in entries[0]["raw_attributes"].items()}
    for a in ("objectclasses", "attributetypes", "ldapsyntaxes", "matchingrules"):
        assert raw.get(a), f"{a} missing from cn=Subschema"
    classes = raw["objectclasses"]
    inet = [c for c in classes if "NAME 'inetOrgPerson'" in c]
    assert len(inet) == 1 and inet[0].startswith("( 2.16.840.1.113730.3.2.2 ")
    assert "SUP organizationalPerson" in inet[0] and "STRUCTURAL" in inet[0]
    assert any("NAME 'posixAccount'" in c and "AUXILIARY" in c for c in classes)
    types = raw["attributetypes"]
    uidnum = [t for t in types if "NAME 'uidNumber'" in t]
    assert len(uidnum) == 1 and "SINGLE-VALUE" in uidnum[0] and "integerMatch" in uidnum[0]
    assert any("NAME 'createTimestamp'" in t and "NO-USER-MODIFICATION" in t for t in types)
    assert any(s.startswith("( 1.3.6.1.4.1.1466.115.121.1.27 ") for s in raw["ldapsyntaxes"])  # INTEGER
    assert any("NAME 'caseIgnoreMatch'" in m for m in raw["matchingrules"])


def test_subschema_entry_itself(server):
    entries, _, done = raw_search(server, "cn=Subschema", scope=w.SCOPE_BASE, filt=w.f_eq("objectClass", "subschema"),
                                  attrs=["objectClass", "cn"], as_admin=False)
    assert_result(done, "success")
    assert len(entries) == 1
    attrs = {k.lower(): [v.decode().lower() for v in vs] for k, vs in entries[0].attrs.items()}
    assert "subschema" in attrs["objectclass"]
    assert attrs["cn"] == ["subschema"]
    assert raw_attr_names(entries[0]) == {"objectclass", "cn"}
