"""Request and response controls: simple paged results (RFC 2696), server-side sorting
(RFC 2891), assertion (RFC 4528), pre-read and post-read (RFC 4527), and criticality
(RFC 4511 section 4.1.11)."""

import ldap3
import pytest
from ldap3 import MODIFY_REPLACE
from ldap3.protocol.rfc4527 import post_read_control, pre_read_control

import ldapwire as w
from ldaputil import (add_ok, assert_diagnostic, assert_result, ldapadd_ok, ldif_entry, search_entries,
                      sort_control, sort_result, values)

PAGED = "1.2.840.113556.1.4.319"
ASSERTION = "1.3.6.1.1.12"
PRE_READ = "1.3.6.1.1.13.1"
POST_READ = "1.3.6.1.1.13.2"
UNKNOWN = "1.3.6.1.4.1.99999.17.42"


# ----------------------------------------------------------------------------- paged results


@pytest.fixture
def ninety_five(server, subtree):
    ldapadd_ok(server, "".join(ldif_entry(f"cn=p{i:03d},{subtree}", {"objectClass": "person", "sn": f"s{i}"})
                               for i in range(95)))
    return subtree


def test_paged_results(admin, ninety_five):
    cookie = None
    pages = []
    seen = []
    while True:
        admin.search(ninety_five, "(objectClass=person)", attributes=["cn"], paged_size=10, paged_cookie=cookie)
        assert_result(admin, "success")
        page = [e["dn"].lower() for e in admin.response if e["type"] == "searchResEntry"]
        pages.append(len(page))
        seen += page
        cookie = admin.result["controls"][PAGED]["value"]["cookie"]
        if not cookie:
            break
        assert len(pages) < 20, "the paged search does not end"
    assert pages == [10] * 9 + [5]
    assert len(seen) == len(set(seen)) == 95
    assert set(seen) == {f"cn=p{i:03d},{ninety_five}" for i in range(95)}


def test_paged_results_exact_multiple(admin, ninety_five):
    # 95 entries and a page of 95: one page, then an empty cookie.
    admin.search(ninety_five, "(objectClass=person)", attributes=["1.1"], paged_size=95)
    assert_result(admin, "success")
    assert len([e for e in admin.response if e["type"] == "searchResEntry"]) == 95
    cookie = admin.result["controls"][PAGED]["value"]["cookie"]
    if cookie:
        # A server may only learn that nothing is left on the next request.
        admin.search(ninety_five, "(objectClass=person)", attributes=["1.1"], paged_size=95, paged_cookie=cookie)
        assert_result(admin, "success")
        assert [e for e in admin.response if e["type"] == "searchResEntry"] == []
        assert not admin.result["controls"][PAGED]["value"]["cookie"]


def test_paged_results_abandoned_with_size_zero(admin, ninety_five):
    admin.search(ninety_five, "(objectClass=person)", attributes=["1.1"], paged_size=10)
    assert_result(admin, "success")
    cookie = admin.result["controls"][PAGED]["value"]["cookie"]
    assert cookie
    # RFC 2696: a page size of 0 with the cookie ends the paged search.
    admin.search(ninety_five, "(objectClass=person)", attributes=["1.1"], paged_size=0, paged_cookie=cookie)
    assert_result(admin, "success")
    assert [e for e in admin.response if e["type"] == "searchResEntry"] == []


def test_paged_results_invalid_cookie(admin, ninety_five):
    admin.search(ninety_five, "(objectClass=person)", attributes=["1.1"], paged_size=10,
                 paged_cookie=b"not-a-cookie-of-this-server")
    assert_result(admin, "protocolError")  # as slapd: "paged results cookie is invalid"
    assert_diagnostic(admin)


# ----------------------------------------------------------------------------- sorting


@pytest.fixture
def sortable(admin, subtree):
    for i, name in enumerate(["delta", "Alpha", "charlie", "bravo", "Echo"]):
        add_ok(admin, f"uid=p{i},{subtree}", {
            "objectClass": ["inetOrgPerson", "posixAccount"], "uid": f"p{i}", "cn": name, "sn": name.upper(),
            "uidNumber": str(100 - i * 7), "gidNumber": "1", "homeDirectory": "/h"})
    return subtree


def sorted_search(admin, base, keys, critical=True):
    admin.search(base, "(objectClass=posixAccount)", attributes=["cn", "uidNumber"],
                 controls=[sort_control(keys, critical)])
    return [(values(e, "cn")[0], int(values(e, "uidNumber")[0])) for e in admin.response
            if e["type"] == "searchResEntry"]


def test_sort_by_cn_with_ordering_rule(admin, sortable):
    got = sorted_search(admin, sortable, [("cn", "caseIgnoreOrderingMatch", False)])
    assert_result(admin, "success")
    assert [cn for cn, _ in got] == ["Alpha", "bravo", "charlie", "delta", "Echo"]
    assert sort_result(admin) == 0


def test_sort_by_cn_descending(admin, sortable):
    got = sorted_search(admin, sortable, [("cn", "caseIgnoreOrderingMatch", True)])
    assert_result(admin, "success")
    assert [cn for cn, _ in got] == ["Echo", "delta", "charlie", "bravo", "Alpha"]


def test_sort_by_sn_with_ordering_rule(admin, sortable):
    got = sorted_search(admin, sortable, [("sn", "caseIgnoreOrderingMatch", False)])
    assert_result(admin, "success")
    assert [cn for cn, _ in got] == ["Alpha", "bravo", "charlie", "delta", "Echo"]


def test_sort_by_integer_attribute(admin, sortable):
    got = sorted_search(admin, sortable, [("uidNumber", None, False)])
    assert_result(admin, "success")
    assert [n for _, n in got] == [72, 79, 86, 93, 100]
    got = sorted_search(admin, sortable, [("uidNumber", None, True)])
    assert [n for _, n in got] == [100, 93, 86, 79, 72]


def test_sort_by_two_keys(admin, subtree):
    for i, (sn, num) in enumerate([("b", 3), ("a", 2), ("b", 1), ("a", 4)]):
        add_ok(admin, f"uid=k{i},{subtree}", {
            "objectClass": ["inetOrgPerson", "posixAccount"], "uid": f"k{i}", "cn": f"k{i}", "sn": sn,
            "uidNumber": str(num), "gidNumber": "1", "homeDirectory": "/h"})
    got = sorted_search(admin, subtree, [("sn", "caseIgnoreOrderingMatch", False), ("uidNumber", None, True)])
    assert_result(admin, "success")
    assert [n for _, n in got] == [4, 2, 3, 1]


@pytest.mark.not_slapd("slapd's sssvlv overlay answers noSuchAttribute (16) instead of RFC 2891's "
                       "unavailableCriticalExtension (12)")
def test_critical_sort_on_unknown_attribute(admin, sortable):
    # RFC 2891 section 2: unavailableCriticalExtension, no entries, and the SortResponse
    # control naming the reason: noSuchAttribute (an unrecognized attribute type).
    got = sorted_search(admin, sortable, [("fooBarUnknown", None, False)], critical=True)
    assert_result(admin, "unavailableCriticalExtension")
    assert got == []
    assert sort_result(admin) == 16


@pytest.mark.not_slapd("slapd's sssvlv overlay fails the search with inappropriateMatching (18) even when "
                       "the sort control is not critical")
def test_non_critical_sort_that_cannot_be_done_returns_entries(admin, sortable):
    # RFC 2891 section 2: a non-critical sort the server cannot do still returns the
    # entries (unsorted), with the problem in the SortResponse control.
    got = sorted_search(admin, sortable, [("cn", None, False)], critical=False)  # cn has no ORDERING
    assert_result(admin, "success")
    assert len(got) == 5
    assert sort_result(admin) in (None, 18)


@pytest.mark.not_slapd("slapd's sssvlv overlay answers inappropriateMatching (18) instead of RFC 2891's "
                       "unavailableCriticalExtension (12)")
def test_critical_sort_that_cannot_be_done(admin, sortable):
    # RFC 2891 section 2: unavailableCriticalExtension, the SortResponse control saying
    # why (inappropriateMatching: cn has no ORDERING rule), and no entries.
    got = sorted_search(admin, sortable, [("cn", None, False)], critical=True)
    assert_result(admin, "unavailableCriticalExtension")
    assert got == []
    assert sort_result(admin) == 18


# ----------------------------------------------------------------------------- assertion


@pytest.fixture
def target(admin, subtree):
    dn = f"uid=as,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "as", "cn": "Assert", "sn": "Tion",
                       "description": "v1"})
    return dn


def assertion(filt):
    return (ASSERTION, True, filt)


def test_assertion_on_modify(admin, target):
    admin.modify(target, {"description": [(MODIFY_REPLACE, ["v2"])]},
                 controls=[assertion(w.f_eq("description", "v1"))])
    assert_result(admin, "success")
    admin.modify(target, {"description": [(MODIFY_REPLACE, ["v3"])]},
                 controls=[assertion(w.f_eq("description", "v1"))])
    assert_result(admin, "assertionFailed")
    res, entries = search_entries(admin, target, scope=ldap3.BASE, attrs=["description"])
    assert values(entries[0], "description") == ["v2"]


def test_assertion_on_search(admin, target, subtree):
    admin.search(target, "(objectClass=*)", search_scope=ldap3.BASE, controls=[assertion(w.f_eq("sn", "tion"))])
    assert_result(admin, "success")
    assert len([e for e in admin.response if e["type"] == "searchResEntry"]) == 1
    admin.search(target, "(objectClass=*)", search_scope=ldap3.BASE, controls=[assertion(w.f_eq("sn", "other"))])
    assert_result(admin, "assertionFailed")
    assert [e for e in admin.response if e["type"] == "searchResEntry"] == []
    # On a subtree search the assertion applies to the base entry.
    admin.search(subtree, "(objectClass=*)", controls=[assertion(w.f_eq("sn", "tion"))])
    assert_result(admin, "assertionFailed")
    admin.search(subtree, "(objectClass=*)", controls=[assertion(w.f_present("ou"))])
    assert_result(admin, "success")
    assert len([e for e in admin.response if e["type"] == "searchResEntry"]) == 2


def test_assertion_on_delete_and_compare(admin, target):
    admin.delete(target, controls=[assertion(w.f_eq("sn", "other"))])
    assert_result(admin, "assertionFailed")
    admin.compare(target, "sn", "tion", controls=[assertion(w.f_eq("sn", "other"))])
    assert_result(admin, "assertionFailed")
    admin.compare(target, "sn", "tion", controls=[assertion(w.f_eq("sn", "tion"))])
    assert_result(admin, "compareTrue")
    admin.delete(target, controls=[assertion(w.f_eq("sn", "tion"))])
    assert_result(admin, "success")


def test_malformed_assertion_filter(server, target):
    # Not a filter: protocolError, as a SearchResultDone or as a Notice of Disconnection.
    c = w.RawConnection(server.host, server.port)
    try:
        c.send(w.message(2, w.search(target, w.SCOPE_BASE), controls=[w.control(ASSERTION, True, b"\x00\x01")]))
        m = c.recv()
        assert m is not None, "the server closed the connection without an answer"
        assert m.msgid in (2, 0)
        if m.msgid == 0:
            assert m.response_name == w.NOTICE_OF_DISCONNECTION_OID
        else:
            assert m.op == w.SEARCH_DONE
        assert_result(m, "protocolError")
    finally:
        c.close()


# ----------------------------------------------------------------------------- pre-read / post-read


def test_pre_and_post_read_on_modify(server, admin, target):
    admin.modify(target, {"description": [(MODIFY_REPLACE, ["after"])]},
                 controls=[pre_read_control(["description"]), post_read_control(["description", "modifiersName"])])
    assert_result(admin, "success")
    ctl = admin.result["controls"]
    assert ctl[PRE_READ]["value"]["result"] == {"description": ["v1"]}
    post = {k.lower(): v for k, v in ctl[POST_READ]["value"]["result"].items()}
    assert post["description"] == ["after"]
    assert [v.lower() for v in post["modifiersname"]] == [server.admin_dn]


def test_post_read_on_add_and_pre_read_on_delete(admin, subtree):
    dn = f"cn=pr,{subtree}"
    admin.add(dn, attributes={"objectClass": ["person"], "sn": "x"},
              controls=[post_read_control(["entryUUID", "cn", "sn"])])
    assert_result(admin, "success")
    post = admin.result["controls"][POST_READ]["value"]["result"]
    assert post["cn"] == ["pr"] and post["sn"] == ["x"] and len(post["entryUUID"]) == 1
    admin.delete(dn, controls=[pre_read_control(["cn", "sn"])])
    assert_result(admin, "success")
    assert admin.result["controls"][PRE_READ]["value"]["result"] == {"cn": ["pr"], "sn": ["x"]}


def test_pre_and_post_read_on_modify_dn(admin, target, subtree):
    admin.modify_dn(target, "uid=renamed", controls=[pre_read_control(["uid"]),
                                                     post_read_control(["uid", "entryDN"])])
    assert_result(admin, "success")
    ctl = admin.result["controls"]
    assert ctl[PRE_READ]["value"]["result"] == {"uid": ["as"]}
    post = ctl[POST_READ]["value"]["result"]
    assert post["uid"] == ["renamed"]
    assert [v.lower() for v in post["entryDN"]] == [f"uid=renamed,{subtree}"]


# ----------------------------------------------------------------------------- criticality


def test_unknown_critical_control(admin, target):
    admin.search(target, "(objectClass=*)", search_scope=ldap3.BASE, controls=[(UNKNOWN, True, None)])
    assert_result(admin, "unavailableCriticalExtension")
    assert [e for e in admin.response if e["type"] == "searchResEntry"] == []
    admin.modify(target, {"description": [(MODIFY_REPLACE, ["never"])]}, controls=[(UNKNOWN, True, b"x")])
    assert_result(admin, "unavailableCriticalExtension")
    admin.extended(w.WHOAMI_OID, controls=[(UNKNOWN, True, None)])
    assert_result(admin, "unavailableCriticalExtension")
    res, entries = search_entries(admin, target, scope=ldap3.BASE, attrs=["description"])
    assert values(entries[0], "description") == ["v1"]


def test_unknown_non_critical_control_is_ignored(admin, target):
    admin.search(target, "(objectClass=*)", search_scope=ldap3.BASE, controls=[(UNKNOWN, False, b"whatever")])
    assert_result(admin, "success")
    assert len([e for e in admin.response if e["type"] == "searchResEntry"]) == 1
    admin.modify(target, {"description": [(MODIFY_REPLACE, ["v9"])]}, controls=[(UNKNOWN, False, None)])
    assert_result(admin, "success")


def test_critical_control_not_for_this_operation(admin, target):
    # Known controls that do not apply to a modify.
    admin.modify(target, {"description": [(MODIFY_REPLACE, ["never"])]},
                 controls=[(PAGED, True, w.seq(w.integer(5), w.octets("")))])
    assert_result(admin, "unavailableCriticalExtension")
    admin.modify(target, {"description": [(MODIFY_REPLACE, ["never"])]},
                 controls=[sort_control([("cn", "caseIgnoreOrderingMatch", False)], True)])
    assert_result(admin, "unavailableCriticalExtension")


def test_duplicate_control(admin, target):
    manage = ("2.16.840.1.113730.3.4.2", True, None)
    admin.search(target, "(objectClass=*)", search_scope=ldap3.BASE, controls=[manage, manage])
    assert_result(admin, "protocolError")
    assert_diagnostic(admin)
