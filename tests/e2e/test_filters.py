"""Search filters (RFC 4511 section 4.5.1.7, RFC 4515 strings, RFC 4526 absolute true and
false): every filter kind against a small directory whose expected matches are listed by
hand."""

import ldap3
import pytest

import ldapwire
from ldaputil import add_ok, assert_result, raw_search

PEOPLE = [
    # uid, cn, sn, uidNumber
    ("u0", "Alice Smith", "Smith", 1000),
    ("u1", "Bob Smyth", "Smyth", 1001),
    ("u2", "Carol Jones", "Jones", 1002),
    ("u3", "dave smith", "smith", 1003),
]
ALL = {"top", "people", "u0", "u1", "u2", "u3"}


@pytest.fixture
def people(admin, subtree):
    add_ok(admin, f"ou=people,{subtree}", {"objectClass": ["organizationalUnit"], "ou": "people"})
    for uid, cn, sn, num in PEOPLE:
        add_ok(admin, f"uid={uid},ou=people,{subtree}", {
            "objectClass": ["inetOrgPerson", "posixAccount"], "uid": uid, "cn": cn, "sn": sn,
            "uidNumber": str(num), "gidNumber": "100", "homeDirectory": f"/home/{uid}"})
    return subtree


def names(subtree, dns):
    """Short names of the DNs: the subtree itself is 'top', others their RDN value."""
    out = set()
    for dn in dns:
        dn = dn.lower()
        out.add("top" if dn == subtree else dn.split(",")[0].split("=", 1)[1])
    return out


def matches(conn, subtree, filt):
    conn.search(subtree, filt, search_scope=ldap3.SUBTREE, attributes=["1.1"])
    assert_result(conn, "success")
    return names(subtree, [e["dn"] for e in conn.response if e["type"] == "searchResEntry"])


CASES = [
    # equality
    ("(sn=smith)", {"u0", "u3"}),
    ("(SN=SMITH)", {"u0", "u3"}),
    ("(uid=u2)", {"u2"}),
    ("(uidNumber=1001)", {"u1"}),
    ("(objectClass=posixAccount)", {"u0", "u1", "u2", "u3"}),
    ("(objectClass=organizationalUnit)", {"top", "people"}),
    ("(cn=alice smith)", {"u0"}),
    ("(cn=alice  smith)", {"u0"}),  # insignificant space handling (RFC 4518)
    ("(cn=alice)", set()),
    # substrings
    ("(cn=a*)", {"u0"}),
    ("(cn=*smith)", {"u0", "u3"}),
    ("(cn=*o*)", {"u1", "u2"}),
    ("(cn=a*i*h)", {"u0"}),
    ("(cn=*l*c*)", {"u0"}),
    ("(cn=b*y*h)", {"u1"}),
    ("(cn=*ar*o*)", {"u2"}),
    ("(sn=sm*)", {"u0", "u1", "u3"}),
    ("(cn=*x*)", set()),
    # ordering
    ("(uidNumber>=1002)", {"u2", "u3"}),
    ("(uidNumber>=1003)", {"u3"}),
    ("(uidNumber<=1001)", {"u0", "u1"}),
    ("(uidNumber<=999)", set()),
    # cn has no ORDERING rule: the item is Undefined, and so is its negation.
    ("(cn>=c)", set()),
    ("(!(cn>=c))", set()),
    # presence
    ("(uidNumber=*)", {"u0", "u1", "u2", "u3"}),
    ("(objectClass=*)", ALL),
    ("(description=*)", set()),
    # approximate (sound-alike; both Soundex and OpenLDAP's phonetic code agree on these)
    ("(sn~=Smith)", {"u0", "u1", "u3"}),
    ("(sn~=Jonas)", {"u2"}),
    ("(sn~=Carol)", set()),
    # extensible
    ("(cn:caseExactMatch:=Alice Smith)", {"u0"}),
    ("(cn:caseExactMatch:=alice smith)", set()),
    ("(sn:2.5.13.5:=smith)", {"u3"}),
    ("(sn:=smith)", {"u0", "u3"}),
    ("(:caseIgnoreMatch:=smith)", {"u0", "u3"}),
    ("(ou:dn:=people)", {"people", "u0", "u1", "u2", "u3"}),
    ("(:dn:caseIgnoreMatch:=people)", {"people", "u0", "u1", "u2", "u3"}),
    ("(uid:dn:=u1)", {"u1"}),
    # and / or / not
    ("(&(objectClass=posixAccount)(sn=smith))", {"u0", "u3"}),
    ("(|(uid=u1)(uid=u2))", {"u1", "u2"}),
    ("(!(sn=smith))", {"top", "people", "u1", "u2"}),
    ("(&(objectClass=posixAccount)(!(uidNumber>=1002)))", {"u0", "u1"}),
    ("(|(&(sn=smith)(uidNumber<=1000))(&(!(cn=*o*))(uid=u3)))", {"u0", "u3"}),
    ("(&(|(sn=smith)(sn=jones))(|(uidNumber>=1002)(cn=alice*)))", {"u0", "u2", "u3"}),
    ("(!(!(uid=u1)))", {"u1"}),
    # an attribute type the schema does not know: Undefined, never an error
    ("(fooBarUnknown=x)", set()),
    ("(!(fooBarUnknown=x))", set()),
    ("(|(fooBarUnknown=x)(uid=u1))", {"u1"}),
    ("(&(fooBarUnknown=x)(uid=u1))", set()),
    ("(fooBarUnknown=*)", set()),
]


@pytest.mark.parametrize("filt,expected", CASES, ids=[c[0] for c in CASES])
def test_filter(admin, people, filt, expected):
    assert matches(admin, people, filt) == expected


def test_deeply_nested_filter(admin, people):
    filt = "(uid=u1)"
    for i in range(40):
        filt = f"(&(objectClass=*){filt})" if i % 2 else f"(|(uid=nobody){filt})"
    assert matches(admin, people, filt) == {"u1"}


def test_escaped_assertion_values(admin, people):
    dn = f"cn=star\\2Aparen\\28x\\29,{people}"
    add_ok(admin, dn, {"objectClass": ["person"], "cn": "star*paren(x)", "sn": "back\\slash"})
    assert matches(admin, people, r"(cn=star\2aparen\28x\29)") == {"star*paren(x)"}
    assert matches(admin, people, r"(cn=star\2a*)") == {"star*paren(x)"}
    assert matches(admin, people, r"(sn=back\5cslash)") == {"star*paren(x)"}
    # An unescaped * is a wildcard.
    assert matches(admin, people, r"(cn=star*x\29)") == {"star*paren(x)"}


@pytest.mark.parametrize("filt,expected", [
    (ldapwire.f_and(), ALL),
    (ldapwire.f_or(), set()),
    (ldapwire.f_not(ldapwire.f_or()), ALL),
    (ldapwire.f_not(ldapwire.f_and()), set()),
    (ldapwire.f_and(ldapwire.f_and(), ldapwire.f_eq("uid", "u1")), {"u1"}),
    (ldapwire.f_or(ldapwire.f_or(), ldapwire.f_eq("uid", "u2")), {"u2"}),
], ids=["(&)", "(|)", "(!(|))", "(!(&))", "(&(&)(uid=u1))", "(|(|)(uid=u2))"])
def test_absolute_true_and_false(server, people, filt, expected):
    # RFC 4526; ldap3 cannot write an empty and/or, so these go on the wire by hand.
    entries, _, done = raw_search(server, people, filt=filt, attrs=["1.1"])
    assert_result(done, "success")
    assert names(people, [e.dn for e in entries]) == expected


def test_filter_evaluation_is_the_same_for_anonymous(anon, people):
    assert matches(anon, people, "(&(sn=smith)(uidNumber>=1001))") == {"u3"}
