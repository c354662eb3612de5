"""A seeded BER mutator over valid LDAP requests, for the hostile-input suite.

What it is: a catalogue of valid LDAPMessages (`catalogue`): every operation (Bind simple
and SASL, Search with every filter kind, Modify, Add, Delete, ModifyDN, Compare, Abandon,
Unbind, and the extended operations WhoAmI, Password Modify, Cancel, StartTLS, an unknown
one) and every control Larch implements (paged results, sort, assertion, pre-read,
post-read, ManageDsaIT, permissive modify, subtree delete, proxied authorization) plus
controls it does not (sync, subentries, an unknown OID, critical and not); and `Mutator`,
which turns one of them into a hostile variant.

How a variant is made (`Mutator.mutate`), all from one `random.Random(seed)`, so a seed
replays a run exactly:
  1. pick a valid message from the catalogue and parse it into a tree of TLVs (`Node`);
  2. apply one to three tree mutations: a length field corrupted (off by one, zero,
     indefinite, non-minimal, huge, more length octets than any decoder takes), a tag
     replaced or two tags swapped, a node nested in up to 1,000 constructed TLVs, a child
     dropped, duplicated or swapped with a sibling, a content truncated (lengths above it
     recomputed), grown to up to 64 KiB, or an INTEGER replaced by an edge value;
  3. encode, then apply zero to two octet mutations: bits flipped, an octet set to an edge
     value, the encoding truncated.
Each variant is named by what was done to it (`kinds`), so a failure says which mutation.
"""

import random
from dataclasses import dataclass, field

import ldapwire as w

# ----------------------------------------------------------------------------- the tree


@dataclass
class Node:
    """One TLV: a single-octet tag, and either children (constructed) or content octets.
    `raw_length`, when set, replaces the encoded length octets (a corrupted length)."""
    tag: int
    children: list = field(default_factory=list)
    content: bytes = b""
    constructed: bool = False
    raw_length: bytes = None

    def body(self):
        """The content octets (children encoded)."""
        return b"".join(_encode(c) for c in self.children) if self.constructed else self.content

    def encode(self):
        return _encode(self)

    def walk(self):
        """Every node at and below this one, with its parent (None for the root); an
        explicit stack (a nested variant can be 1,000 deep)."""
        out, stack = [], [(self, None)]
        while stack:
            node, parent = stack.pop()
            out.append((node, parent))
            if node.constructed:
                stack.extend((c, node) for c in node.children)
        return out


def _encode(root):
    """The octets of a tree, children before parents with an explicit stack (a nested
    variant is deeper than Python's recursion limit)."""
    done = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node.constructed and not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in node.children)
            continue
        body = b"".join(done[id(c)] for c in node.children) if node.constructed else node.content
        length = node.raw_length if node.raw_length is not None else w._length(len(body))
        done[id(node)] = bytes([node.tag]) + length + body
    return done[id(root)]


def parse(data):
    """The tree of one valid encoding (the catalogue's own messages: definite lengths,
    single-octet tags)."""
    tag, content, end = w.read_tlv(data, 0)
    assert end == len(data)
    return _parse_node(tag, content)


def _parse_node(tag, content):
    if tag & 0x20:
        kids = [_parse_node(t, c) for t, c in w.children(content)]
        return Node(tag, children=kids, constructed=True)
    return Node(tag, content=content)


# ----------------------------------------------------------------------------- the catalogue

SASL = 0xA3
ADD_REQUEST, MODIFY_REQUEST, DEL_REQUEST, MODDN_REQUEST, COMPARE_REQUEST = 0x68, 0x66, 0x4A, 0x6C, 0x6E

PAGED = "1.2.840.113556.1.4.319"
SORT = "1.2.840.113556.1.4.473"
ASSERTION = "1.3.6.1.1.12"
PRE_READ = "1.3.6.1.1.13.1"
POST_READ = "1.3.6.1.1.13.2"
MANAGE_DSA_IT = "2.16.840.1.113730.3.4.2"
PERMISSIVE_MODIFY = "1.2.840.113556.1.4.1413"
SUBTREE_DELETE = "1.2.840.113556.1.4.805"
PROXIED_AUTHZ = "2.16.840.1.113730.3.4.18"
SYNC = "1.3.6.1.4.1.4203.1.9.1.1"
SUBENTRIES = "1.3.6.1.4.1.4203.1.10.1"
PASSWORD_MODIFY_OID = "1.3.6.1.4.1.4203.1.11.1"
START_TLS_OID = "1.3.6.1.4.1.1466.20037"


def sasl_bind(mechanism, credentials=None, name=""):
    parts = [w.octets(mechanism)]
    if credentials is not None:
        parts.append(w.octets(credentials))
    return w.seq(w.integer(3), w.octets(name), w.seq(*parts, tag=SASL), tag=0x60)


def substrings(attr, initial=None, any_=(), final=None):
    parts = []
    if initial is not None:
        parts.append(w.octets(initial, tag=0x80))
    parts += [w.octets(a, tag=0x81) for a in any_]
    if final is not None:
        parts.append(w.octets(final, tag=0x82))
    return w.seq(w.octets(attr), w.seq(*parts), tag=0xA4)


def ava(tag, attr, value):
    return w.seq(w.octets(attr), w.octets(value), tag=tag)


def extensible(rule=None, attr=None, value="x", dn_attrs=False):
    parts = []
    if rule:
        parts.append(w.octets(rule, tag=0x81))
    if attr:
        parts.append(w.octets(attr, tag=0x82))
    parts.append(w.octets(value, tag=0x83))
    if dn_attrs:
        parts.append(w.boolean(True, tag=0x84))
    return w.seq(*parts, tag=0xA9)


def partial_attribute(attr, values):
    return w.seq(w.octets(attr), w.seq(*[w.octets(v) for v in values], tag=0x31))


def modify(dn, changes):
    """changes: (operation 0 add / 1 delete / 2 replace / 3 increment, attr, values)."""
    return w.seq(w.octets(dn), w.seq(*[w.seq(w.enum(op), partial_attribute(a, vs)) for op, a, vs in changes]),
                 tag=MODIFY_REQUEST)


def add(dn, attrs):
    return w.seq(w.octets(dn), w.seq(*[partial_attribute(a, vs) for a, vs in attrs]), tag=ADD_REQUEST)


def delete(dn):
    return w.octets(dn, tag=DEL_REQUEST)


def moddn(dn, newrdn, delete_old=True, new_superior=None):
    parts = [w.octets(dn), w.octets(newrdn), w.boolean(delete_old)]
    if new_superior is not None:
        parts.append(w.octets(new_superior, tag=0x80))
    return w.seq(*parts, tag=MODDN_REQUEST)


def compare(dn, attr, value):
    return w.seq(w.octets(dn), w.seq(w.octets(attr), w.octets(value)), tag=COMPARE_REQUEST)


def password_modify(user=None, old=None, new=None):
    parts = []
    for tag, v in ((0x80, user), (0x81, old), (0x82, new)):
        if v is not None:
            parts.append(w.octets(v, tag=tag))
    return w.extended(PASSWORD_MODIFY_OID, w.seq(*parts))


def c_paged(size=5, cookie=b""):
    return w.control(PAGED, True, w.seq(w.integer(size), w.octets(cookie)))


def c_sort(*keys, critical=True):
    encoded = []
    for attr, rule, reverse in keys:
        parts = [w.octets(attr)]
        if rule:
            parts.append(w.octets(rule, tag=0x80))
        if reverse:
            parts.append(w.boolean(True, tag=0x81))
        encoded.append(w.seq(*parts))
    return w.control(SORT, critical, w.seq(*encoded))


def c_assertion(filt):
    return w.control(ASSERTION, True, filt)


def c_read(oid, attrs):
    return w.control(oid, True, w.seq(*[w.octets(a) for a in attrs]))


def catalogue(names):
    """The valid requests, as (name, protocolOp octets, [encoded controls]).

    names: a dict with base, data (a subtree with entries under cn=p0..), scratch (a
    subtree the fuzzer may write), fuzzer_dn, fuzzer_pw."""
    base, data, scratch = names["base"], names["data"], names["scratch"]
    fz, fzpw = names["fuzzer_dn"], names["fuzzer_pw"]
    sand = f"ou=sandbox,{scratch}"
    target = f"cn=t0,{sand}"
    eq = w.f_eq("cn", "p1")
    filters = {
        "present": w.f_present("objectClass"),
        "eq": eq,
        "substrings": substrings("cn", "p", ["1", "2"], "9"),
        "ge": ava(0xA5, "uidNumber", "1005"),
        "le": ava(0xA6, "sn", "m"),
        "approx": ava(0xA8, "sn", "smyth"),
        "extensible": extensible("caseIgnoreMatch", "cn", "P1"),
        "extensible-dn": extensible(None, "ou", "data", dn_attrs=True),
        "and": w.f_and(eq, w.f_present("sn"), w.f_not(w.f_eq("sn", "zz"))),
        "or": w.f_or(eq, w.f_eq("uid", "p2"), substrings("mail", None, [], "example.com")),
        "not": w.f_not(w.f_and(w.f_or(eq), w.f_not(w.f_present("cn")))),
        "true": w.seq(tag=0xA0),
        "false": w.seq(tag=0xA1),
        "undefined-type": w.f_eq("noSuchType", "x"),
    }
    out = []
    for fname, filt in filters.items():
        out.append((f"search/{fname}", w.search(data, w.SCOPE_SUB, filt, attrs=["cn", "sn", "mail"]), []))
    out += [
        ("search/base-all", w.search(data, w.SCOPE_BASE, attrs=["*", "+"]), []),
        ("search/one-1.1", w.search(data, w.SCOPE_ONE, attrs=["1.1"], size_limit=3), []),
        ("search/subordinate", w.search(base, w.SCOPE_SUBORDINATE, w.f_eq("ou", "data"), types_only=True), []),
        ("search/rootdse", w.search("", w.SCOPE_BASE, attrs=["+"]), []),
        ("search/subschema", w.search("cn=Subschema", w.SCOPE_BASE, attrs=["objectClasses"]), []),
        ("search/options", w.search(data, w.SCOPE_SUB, eq, attrs=["cn;lang-en", "description;binary"],
                                    deref=w.DEREF_ALWAYS, time_limit=5), []),
        ("search+paged", w.search(data, w.SCOPE_SUB), [c_paged(3)]),
        ("search+paged-cookie", w.search(data, w.SCOPE_SUB), [c_paged(3, b"\x00\x01bogus")]),
        ("search+sort", w.search(data, w.SCOPE_SUB), [c_sort(("sn", None, True), ("cn", "caseIgnoreOrderingMatch",
                                                                                 False))]),
        ("search+sort+paged", w.search(data, w.SCOPE_SUB), [c_sort(("cn", None, False)), c_paged(2)]),
        ("search+assertion", w.search(data, w.SCOPE_BASE), [c_assertion(w.f_present("ou"))]),
        ("search+manageDsaIT", w.search(data, w.SCOPE_SUB), [w.control(MANAGE_DSA_IT)]),
        ("search+proxied", w.search(data, w.SCOPE_BASE), [w.control(PROXIED_AUTHZ, True, f"dn:{fz}")]),
        ("search+sync", w.search(data, w.SCOPE_SUB), [w.control(SYNC, True, w.seq(w.enum(1)))]),
        ("search+subentries", w.search(data, w.SCOPE_SUB), [w.control(SUBENTRIES, False, w.boolean(True))]),
        ("search+unknown-critical", w.search(data, w.SCOPE_BASE), [w.control("1.2.3.4.5.6", True, b"x")]),
        ("bind/simple", w.bind_simple(fz, fzpw), []),
        ("bind/anonymous", w.bind_simple(), []),
        ("bind/wrong-password", w.bind_simple(fz, "wrong"), []),
        ("bind/v2", w.bind_simple(version=2), []),
        ("bind/sasl-plain", sasl_bind("PLAIN", f"\0{fz}\0{fzpw}".encode()), []),
        ("bind/sasl-external", sasl_bind("EXTERNAL"), []),
        ("bind/sasl-unknown", sasl_bind("DIGEST-MD5", b"x"), []),
        ("modify/replace", modify(target, [(2, "description", ["d1", "d2"])]), []),
        ("modify/add-delete", modify(target, [(0, "telephoneNumber", ["+1 555 0100"]), (1, "telephoneNumber", [])]),
         []),
        ("modify/increment", modify(target, [(3, "uidNumber", ["1"])]), []),
        ("modify+permissive", modify(target, [(0, "description", ["d1"])]), [w.control(PERMISSIVE_MODIFY)]),
        ("modify+pre+post", modify(target, [(2, "sn", ["s"])]), [c_read(PRE_READ, ["sn"]), c_read(POST_READ, ["*"])]),
        ("modify+assertion", modify(target, [(2, "sn", ["t"])]), [c_assertion(w.f_eq("sn", "s"))]),
        ("modify/outside", modify(f"cn=p1,{data}", [(2, "sn", ["hostile"])]), []),
        ("add", add(f"cn=n0,{sand}", [("objectClass", ["person"]), ("cn", ["n0"]), ("sn", ["n"])]), []),
        ("add+post", add(f"cn=n1,{sand}", [("objectClass", ["inetOrgPerson"]), ("cn", ["n1"]), ("sn", ["n"]),
                                            ("mail", ["n1@example.com"])]), [c_read(POST_READ, ["cn", "+"])]),
        ("add/outside", add(f"cn=n2,{data}", [("objectClass", ["person"]), ("cn", ["n2"]), ("sn", ["n"])]), []),
        ("add/schema-violation", add(f"cn=n3,{sand}", [("objectClass", ["person"]), ("cn", ["n3"])]), []),
        ("delete", delete(f"cn=t1,{sand}"), []),
        ("delete+pre+assertion", delete(f"cn=t2,{sand}"), [c_read(PRE_READ, ["cn"]), c_assertion(w.f_present("cn"))]),
        ("delete+subtree", delete(f"ou=sub,{sand}"), [w.control(SUBTREE_DELETE, True)]),
        ("delete+manageDsaIT", delete(f"cn=t3,{sand}"), [w.control(MANAGE_DSA_IT)]),
        ("delete/outside", delete(f"cn=p2,{data}"), []),
        ("modrdn", moddn(f"cn=t4,{sand}", "cn=t4b"), []),
        ("modrdn+superior", moddn(f"cn=t5,{sand}", "cn=t5", False, f"ou=sub,{sand}"), [c_read(POST_READ, ["cn"])]),
        ("modrdn/outside", moddn(f"cn=p3,{data}", "cn=p3b"), []),
        ("compare", compare(f"cn=p1,{data}", "sn", "smith"), []),
        ("compare+assertion+proxied", compare(f"cn=p1,{data}", "cn", "p1"),
         [c_assertion(w.f_present("cn")), w.control(PROXIED_AUTHZ, True, "")]),
        ("abandon", w.abandon(1), []),
        ("unbind", w.unbind(), []),
        ("extended/whoami", w.whoami(), []),
        ("extended/password-modify", password_modify(f"cn=t0,{sand}", None, "new-secret"), []),
        ("extended/password-modify-generate", password_modify(f"cn=t0,{sand}"), []),
        ("extended/cancel", w.cancel(1), []),
        ("extended/starttls", w.extended(START_TLS_OID), []),
        ("extended/unknown", w.extended("1.2.3.4.5", b"\x30\x00"), []),
    ]
    return out


def sandbox_ldif(names):
    """The entries the catalogue's writes aim at (recreated before each batch of them)."""
    sand = f"ou=sandbox,{names['scratch']}"
    entries = [(sand, {"objectClass": "organizationalUnit", "ou": "sandbox"}),
               (f"ou=sub,{sand}", {"objectClass": "organizationalUnit", "ou": "sub"})]
    for i in range(6):
        entries.append((f"cn=t{i},{sand}", {"objectClass": "inetOrgPerson", "cn": f"t{i}", "sn": "s"}))
    entries.append((f"cn=leaf,ou=sub,{sand}", {"objectClass": "person", "cn": "leaf", "sn": "l"}))
    return entries


# ----------------------------------------------------------------------------- mutations

INTERESTING_TAGS = [0x00, 0x01, 0x02, 0x04, 0x05, 0x0A, 0x1F, 0x30, 0x31, 0x3F, 0x42, 0x50, 0x60, 0x63, 0x66,
                    0x68, 0x77, 0x78, 0x7F, 0x80, 0x81, 0x87, 0x9F, 0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA9, 0xBF,
                    0xFF]
NEST_TAGS = [0x30, 0x31, 0xA0, 0xA1, 0xA2, 0xA3, 0x63, 0x04]
NEST_DEPTHS = [1, 2, 3, 64, 65, 1000]
EDGE_INTS = [b"", b"\x00", b"\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x80\x00\x00\x00",
             b"\xff" * 9, b"\x01" + b"\x00" * 8, b"\x00" * 20]
EDGE_OCTETS = [0x00, 0x01, 0x7F, 0x80, 0x81, 0x84, 0xFF]
# Largest content a grown field gets: past every small buffer, far below the PDU limit.
MAX_GROWTH_OCTETS = 64 * 1024


def corrupt_length(rng, node):
    """Length octets that do not say the content's length, or say it oddly."""
    actual = len(node.body())
    choice = rng.randrange(9)
    if choice == 0:
        return w._length(max(0, actual + rng.choice([-2, -1, 1, 2])))
    if choice == 1:
        return b"\x00"
    if choice == 2:
        return b"\x80"  # indefinite
    if choice == 3:
        return b"\x84" + actual.to_bytes(4, "big")  # non-minimal but valid
    if choice == 4:
        return b"\x84" + rng.randrange(0x7FFFFFFF, 0xFFFFFFFF).to_bytes(4, "big")
    if choice == 5:
        return b"\x88" + rng.randrange(1 << 63).to_bytes(8, "big")
    if choice == 6:
        return b"\x9f" + b"\x00" * 30 + bytes([min(actual, 255)])  # more length octets than allowed
    if choice == 7:
        return b"\xff"
    return b"\x7f"


def _tree_mutation(rng, root):
    """One mutation of the tree in place (the root may be replaced); returns (root, kind)."""
    nodes = root.walk()
    node, parent = rng.choice(nodes)
    kind = rng.choice(["length", "tag", "tag-swap", "nest", "drop", "dup", "swap", "truncate-inner", "grow",
                       "int"])
    if kind == "length":
        node.raw_length = corrupt_length(rng, node)
    elif kind == "tag":
        node.tag = rng.choice(INTERESTING_TAGS)
    elif kind == "tag-swap":
        other, _ = rng.choice(nodes)
        node.tag, other.tag = other.tag, node.tag
    elif kind == "nest":
        depth = rng.choice(NEST_DEPTHS)
        wrapped = node
        for _ in range(depth):
            wrapped = Node(rng.choice(NEST_TAGS), children=[wrapped], constructed=True)
        if parent is None:
            root = wrapped
        else:
            parent.children[parent.children.index(node)] = wrapped
    elif kind in ("drop", "dup", "swap") and parent is not None:
        i = parent.children.index(node)
        if kind == "drop":
            del parent.children[i]
        elif kind == "dup":
            parent.children.insert(i, Node(node.tag, children=list(node.children), content=node.content,
                                           constructed=node.constructed))
        elif len(parent.children) > 1:
            j = rng.randrange(len(parent.children))
            parent.children[i], parent.children[j] = parent.children[j], parent.children[i]
    elif kind == "truncate-inner":
        if node.constructed and node.children:
            node.children = node.children[:rng.randrange(len(node.children))]
        else:
            node.content = node.content[:rng.randrange(len(node.content) + 1)]
    elif kind == "grow" and not node.constructed:
        size = rng.choice([127, 128, 255, 256, MAX_GROWTH_OCTETS - 1, MAX_GROWTH_OCTETS])
        node.content = (node.content or b"x") * (size // max(1, len(node.content)) + 1)
        node.content = node.content[:size]
    elif kind == "int" and not node.constructed:
        node.content = rng.choice(EDGE_INTS)
    return root, kind


def _octet_mutation(rng, data):
    kind = rng.choice(["flip", "octet", "truncate"])
    data = bytearray(data)
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == "octet":
        data[rng.randrange(len(data))] = rng.choice(EDGE_OCTETS)
    else:
        data = data[:rng.randrange(1, len(data))] if len(data) > 1 else data
    return bytes(data), kind


class Mutator:
    """Hostile variants of the catalogue's messages, from one seed (see the module doc)."""

    def __init__(self, seed, names):
        self.rng = random.Random(seed)
        self.items = catalogue(names)

    def mutate(self, msgid):
        """(name of the valid message and the mutations applied, the octets)."""
        rng = self.rng
        name, op, controls = rng.choice(self.items)
        root = parse(w.message(msgid, op, controls))
        kinds = []
        for _ in range(rng.randint(1, 3)):
            root, kind = _tree_mutation(rng, root)
            kinds.append(kind)
        data = root.encode()
        for _ in range(rng.choice([0, 0, 1, 2])):
            data, kind = _octet_mutation(rng, data)
            kinds.append(kind)
        return f"{name} [{', '.join(kinds)}]", data

    def valid(self, msgid):
        """One valid message of the catalogue, unchanged (batches mix them in, so that a
        connection also does real work between hostile requests)."""
        name, op, controls = self.rng.choice(self.items)
        return name, w.message(msgid, op, controls)
