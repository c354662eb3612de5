"""The published subschema is self-consistent (RFC 4512 section 4.2), read over LDAP from
`cn=Subschema` and checked mechanically:
  1. every object class's SUP names a published class, and its MUST and MAY published
     attribute types; every attribute type's SUP a published type;
  2. no attribute type is both MUST and MAY of one class, counting the MUST it inherits;
  3. the `cn=Subschema` entry conforms to its own object classes: each is published, every
     MUST of each (and of their superclasses) is present, every attribute it holds is a
     published type that one of its classes allows (extensibleObject allows any user
     attribute; operational attributes are the server's), and structuralObjectClass is its
     most specific structural class.

How a description is read (`parse_description`): the value is split into tokens (`(`,
`)`, quoted strings, bare words; `$` separates list items), the first word after `(` is
the OID, then each keyword takes a parenthesised list, one quoted string or word, or
nothing (the flag keywords)."""

import re

import pytest

import ldapwire as w
from ldaputil import assert_result, raw_search

SUBSCHEMA_DN = "cn=Subschema"
FLAGS = {"OBSOLETE", "ABSTRACT", "STRUCTURAL", "AUXILIARY", "SINGLE-VALUE", "COLLECTIVE",
         "NO-USER-MODIFICATION"}
TOKEN = re.compile(r"\s*(\(|\)|\$|'(?:[^'\\]|\\.)*'|[^\s()$']+)")


def tokens(value):
    """The tokens of one description; quoted strings keep their quotes."""
    out = []
    pos = 0
    value = value.strip()
    while pos < len(value):
        m = TOKEN.match(value, pos)
        assert m, f"cannot read {value[pos:]!r} in {value!r}"
        out.append(m.group(1))
        pos = m.end()
    return out


def unquote(token):
    return token[1:-1] if token.startswith("'") else token


def parse_description(value):
    """{'OID': oid, keyword: [values] or True} from one RFC 4512 description."""
    toks = tokens(value)
    assert toks[0] == "(" and toks[-1] == ")", value
    out = {"OID": toks[1]}
    i = 2
    while i < len(toks) - 1:
        keyword = toks[i]
        i += 1
        if keyword in FLAGS:
            out[keyword] = True
        elif toks[i] == "(":
            items = []
            i += 1
            while toks[i] != ")":
                if toks[i] != "$":
                    items.append(unquote(toks[i]))
                i += 1
            i += 1
            out[keyword] = items
        else:
            out[keyword] = [unquote(toks[i])]
            i += 1
    return out


class Published:
    """The attribute types and object classes of cn=Subschema, by lower-case name and OID."""

    def __init__(self, entry):
        values = {k.lower(): [v.decode("utf-8") for v in vs] for k, vs in entry.attrs.items()}
        self.types = {}
        self.classes = {}
        for value in values["attributetypes"]:
            d = parse_description(value)
            for key in [d["OID"], *d.get("NAME", [])]:
                self.types[key.lower()] = d
        for value in values["objectclasses"]:
            d = parse_description(value)
            for key in [d["OID"], *d.get("NAME", [])]:
                self.classes[key.lower()] = d
        self.class_values = [parse_description(v) for v in values["objectclasses"]]
        self.type_values = [parse_description(v) for v in values["attributetypes"]]

    def type_oid(self, name):
        d = self.types.get(name.lower())
        return d["OID"] if d else None

    def lineage(self, cls):
        """The class and all its superclasses (an explicit stack, each once)."""
        out, stack, seen = [], [cls], set()
        while stack:
            c = stack.pop()
            if c["OID"] in seen:
                continue
            seen.add(c["OID"])
            out.append(c)
            stack.extend(self.classes[s.lower()] for s in c.get("SUP", []) if s.lower() in self.classes)
        return out

    def must_of(self, cls):
        return {self.type_oid(n) for c in self.lineage(cls) for n in c.get("MUST", [])}

    def may_of(self, cls):
        return {self.type_oid(n) for c in self.lineage(cls) for n in c.get("MAY", [])}

    def is_user_type(self, d):
        return d.get("USAGE", ["userApplications"])[0] == "userApplications"


def subschema_entry(server):
    entries, _, done = raw_search(server, SUBSCHEMA_DN, scope=w.SCOPE_BASE, filt=w.f_present("objectClass"),
                                  attrs=["*", "+"], as_admin=False)
    assert_result(done, "success")
    assert len(entries) == 1, entries
    return entries[0]


@pytest.fixture(scope="module")
def subschema(server):
    entry = subschema_entry(server)
    return entry, Published(entry)


def label(d):
    return (d.get("NAME") or [d["OID"]])[0]


@pytest.mark.not_slapd("slapd hides from attributeTypes the types its subentry and subschema classes name "
                       "(subtreeSpecification, dITStructureRules, nameForms, dITContentRules)")
def test_every_reference_is_published(subschema):
    _, pub = subschema
    assert len(pub.class_values) > 20 and len(pub.type_values) > 100
    problems = []
    for c in pub.class_values:
        for sup in c.get("SUP", []):
            if sup.lower() not in pub.classes:
                problems.append(f"class {label(c)}: SUP {sup} is not a published class")
        for keyword in ("MUST", "MAY"):
            for name in c.get(keyword, []):
                if pub.type_oid(name) is None:
                    problems.append(f"class {label(c)}: {keyword} {name} is not a published attribute type")
    for t in pub.type_values:
        for sup in t.get("SUP", []):
            if pub.type_oid(sup) is None:
                problems.append(f"attribute type {label(t)}: SUP {sup} is not a published type")
    assert not problems, "\n".join(problems)


@pytest.mark.not_slapd("slapd publishes classes as their files write them: nis.schema's ipProtocol and oncRpc "
                       "have description, core.schema's residentialPerson l, both MUST and MAY")
def test_no_type_is_both_must_and_may(subschema):
    _, pub = subschema
    problems = []
    for c in pub.class_values:
        must = pub.must_of(c)
        for name in c.get("MAY", []):
            if pub.type_oid(name) in must:
                problems.append(f"class {label(c)}: {name} is both MUST and MAY")
    assert not problems, "\n".join(problems)


@pytest.mark.not_slapd("slapd's cn=Subschema is a subentry without the subtreeSpecification that class requires")
def test_the_subschema_entry_conforms_to_its_classes(subschema):
    entry, pub = subschema
    attrs = {k.lower(): vs for k, vs in entry.attrs.items()}
    names = [v.decode() for v in attrs["objectclass"]]
    classes = []
    for name in names:
        assert name.lower() in pub.classes, f"objectClass {name} is not published"
        classes.append(pub.classes[name.lower()])
    problems = []
    classes = [s for c in classes for s in pub.lineage(c)]
    required = set().union(*(pub.must_of(c) for c in classes))
    allowed = required | set().union(*(pub.may_of(c) for c in classes))
    extensible = any(c["OID"] == "1.3.6.1.4.1.1466.101.120.111" for c in classes)
    present = {}
    for attr in entry.attrs:
        d = pub.types.get(attr.split(";")[0].lower())
        if d is None:
            problems.append(f"{attr} is not a published attribute type")
            continue
        present[d["OID"]] = attr
        if d["OID"] in allowed or not pub.is_user_type(d) or extensible:
            continue
        problems.append(f"{attr} is allowed by none of {names}")
    for c in classes:
        for name in c.get("MUST", []):
            if pub.type_oid(name) not in present:
                problems.append(f"{name} is required by {label(c)} and absent")
    # The structural classes form one chain; structuralObjectClass is its most specific.
    structural = [c for c in classes if c.get("STRUCTURAL") or not (c.get("ABSTRACT") or c.get("AUXILIARY"))]
    most_specific = [c for c in structural
                     if all(o is c or o in pub.lineage(c) for o in structural)]
    assert len(most_specific) == 1, f"no single structural chain in {names}"
    soc = [v.decode().lower() for v in attrs.get("structuralobjectclass", [])]
    expected = {n.lower() for n in [most_specific[0]["OID"], *most_specific[0].get("NAME", [])]}
    if len(soc) != 1 or soc[0] not in expected:
        problems.append(f"structuralObjectClass {soc} is not {label(most_specific[0])}")
    assert not problems, "\n".join(problems)


def test_the_parser_reads_what_it_should():
    # The reader itself, on a value with every shape: a quoted list, a $ list, flags, a
    # single word, an extension.
    d = parse_description("( 1.2.3 NAME ( 'a' 'b' ) DESC 'x \\27y' SUP top STRUCTURAL MUST ( cn $ sn ) "
                          "MAY description X-ORIGIN 'RFC 1' )")
    assert d == {"OID": "1.2.3", "NAME": ["a", "b"], "DESC": ["x \\27y"], "SUP": ["top"], "STRUCTURAL": True,
                 "MUST": ["cn", "sn"], "MAY": ["description"], "X-ORIGIN": ["RFC 1"]}
