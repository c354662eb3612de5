"""Helpers shared by the end-to-end tests: result-code checks, connections, LDIF loading,
subtree dumps and recursive deletion.

Invariants:
  * A result is always checked by number AND by its RFC 4511 name (`RESULT_NAMES`), and
    the name ldap3 reports must agree; diagnostic text is only ever checked to be present.
  * Every ldap3 connection made here has `raise_exceptions=False` (results are inspected,
    not caught) and `auto_referrals=False` (a referral is an answer under test, never
    something the client chases).
"""

import os
import subprocess
import time

import ldap3

import ldapwire

# RFC 4511 appendix A, RFC 3909 (cancel), RFC 4528 (assertion), RFC 4370 (proxied
# authorization).
RESULT_NAMES = {
    0: "success",
    1: "operationsError",
    2: "protocolError",
    3: "timeLimitExceeded",
    4: "sizeLimitExceeded",
    5: "compareFalse",
    6: "compareTrue",
    7: "authMethodNotSupported",
    8: "strongerAuthRequired",
    10: "referral",
    11: "adminLimitExceeded",
    12: "unavailableCriticalExtension",
    13: "confidentialityRequired",
    14: "saslBindInProgress",
    16: "noSuchAttribute",
    17: "undefinedAttributeType",
    18: "inappropriateMatching",
    19: "constraintViolation",
    20: "attributeOrValueExists",
    21: "invalidAttributeSyntax",
    32: "noSuchObject",
    33: "aliasProblem",
    34: "invalidDNSyntax",
    36: "aliasDereferencingProblem",
    48: "inappropriateAuthentication",
    49: "invalidCredentials",
    50: "insufficientAccessRights",
    51: "busy",
    52: "unavailable",
    53: "unwillingToPerform",
    54: "loopDetect",
    64: "namingViolation",
    65: "objectClassViolation",
    66: "notAllowedOnNonLeaf",
    67: "notAllowedOnRDN",
    68: "entryAlreadyExists",
    69: "objectClassModsProhibited",
    71: "affectsMultipleDSAs",
    80: "other",
    118: "canceled",
    119: "noSuchOperation",
    120: "tooLate",
    121: "cannotCancel",
    122: "assertionFailed",
    123: "authorizationDenied",
}
CODES = {name: code for code, name in RESULT_NAMES.items()}

# ldap3 spells two names differently from RFC 4511; everything else is identical.
_LDAP3_SPELLING = {"loopDetect": "loopDetected", "affectsMultipleDSAs": "affectMultipleDSAs"}


def code_of(name):
    """The number of an RFC 4511 result name."""
    return CODES[name]


def assert_result(result, name, *, code=None):
    """Checks an LDAP result by name and number.

    result: an ldap3 `Connection` (its last result), an ldap3 result dict, a
    `ldapwire.Message`, or an int. A non-success result must carry a non-empty diagnostic
    message when the server gave one in a result dict or message (checked separately by
    `assert_diagnostic`).
    """
    expected = CODES[name]
    if code is not None:
        assert code == expected, f"test bug: {name} is {expected}, not {code}"
    if isinstance(result, ldap3.Connection):
        result = result.result
    if isinstance(result, dict):
        got = result.get("result")
        desc = result.get("description")
        assert got == expected, (
            f"expected {name} ({expected}), got {RESULT_NAMES.get(got, '?')} ({got}): {result!r}")
        assert desc == _LDAP3_SPELLING.get(name, name), f"ldap3 names {got} {desc!r}"
        return
    if hasattr(result, "code"):
        got = result.code
        assert got == expected, (
            f"expected {name} ({expected}), got {RESULT_NAMES.get(got, '?')} ({got}): "
            f"matched={result.matched!r} diag={result.diag!r}")
        assert RESULT_NAMES[got] == name
        return
    assert result == expected, f"expected {name} ({expected}), got {RESULT_NAMES.get(result, '?')} ({result})"


def assert_diagnostic(result):
    """A failed operation's result carries a non-empty diagnostic message."""
    if isinstance(result, ldap3.Connection):
        result = result.result
    msg = result["message"] if isinstance(result, dict) else result.diag
    assert msg, f"empty diagnosticMessage in {result!r}"


SORT = "1.2.840.113556.1.4.473"
SORT_RESPONSE = "1.2.840.113556.1.4.474"


def sort_control(keys, critical=True):
    """keys: (attribute, orderingRule or None, reverse)."""
    encoded = []
    for attr, rule, reverse in keys:
        parts = [ldapwire.octets(attr)]
        if rule:
            parts.append(ldapwire.octets(rule, tag=0x80))
        if reverse:
            parts.append(ldapwire.boolean(True, tag=0x81))
        encoded.append(ldapwire.seq(*parts))
    return (SORT, critical, ldapwire.seq(*encoded))


def sort_result(conn):
    """sortResult of the SortResponse control (RFC 2891), or None without one."""
    ctl = (conn.result.get("controls") or {}).get(SORT_RESPONSE)
    if ctl is None:
        return None
    tag, content, _ = ldapwire.read_tlv(ctl["value"], 0)
    items = ldapwire.children(content)
    assert items[0][0] == 0x0A
    return ldapwire.to_int(items[0][1])


def connect(server, user=None, password=None, version=3, bind=True):
    """An ldap3 connection to the server under test, bound as `user` (anonymous if None)."""
    srv = ldap3.Server(server.host, port=server.port, get_info=ldap3.NONE, connect_timeout=10)
    conn = ldap3.Connection(
        srv,
        user=user,
        password=password,
        authentication=ldap3.SIMPLE if user is not None else ldap3.ANONYMOUS,
        raise_exceptions=False,
        auto_referrals=False,
        version=version,
        receive_timeout=30,
        auto_bind=ldap3.AUTO_BIND_NONE,
        check_names=False,
    )
    conn.open()
    if bind:
        conn.bind()
    return conn


def tool_env():
    """Environment for the ldap-utils tools: no user ldaprc or ldap.conf changes the test."""
    env = dict(os.environ)
    env["LDAPNOINIT"] = "1"
    return env


def run_tool(args, input_text=None, timeout=60):
    """Runs an ldap-utils tool; returns CompletedProcess (text)."""
    return subprocess.run(args, input=input_text, capture_output=True, text=True, timeout=timeout,
                          env=tool_env())


def ldapadd(server, ldif, continue_on_error=False):
    """Adds the LDIF records as the admin with one `ldapadd`; returns CompletedProcess."""
    args = ["ldapadd", "-x", "-H", server.url, "-D", server.admin_dn, "-w", server.admin_pw]
    if continue_on_error:
        args.append("-c")
    return run_tool(args, input_text=ldif)


def ldapadd_ok(server, ldif):
    """Adds the LDIF records as the admin; fails the test on any error."""
    p = ldapadd(server, ldif)
    assert p.returncode == 0, f"ldapadd failed ({p.returncode}): {p.stderr}"


def ldif_entry(dn, attrs):
    """One LDIF add record from a dict {attr: value or [values]}."""
    lines = [f"dn: {dn}"]
    for a, vs in attrs.items():
        if isinstance(vs, (str, bytes)):
            vs = [vs]
        for v in vs:
            lines.append(f"{a}: {v}")
    return "\n".join(lines) + "\n\n"


def add_ok(conn, dn, attrs):
    """Adds an entry through ldap3 and asserts success."""
    conn.add(dn, attributes=attrs)
    assert_result(conn, "success")


def search_entries(conn, base, filt="(objectClass=*)", scope=ldap3.SUBTREE, attrs=None, **kw):
    """Runs a search; returns (result dict, [entry dicts with 'dn' and 'raw_attributes'])."""
    conn.search(base, filt, search_scope=scope, attributes=attrs if attrs is not None else [], **kw)
    entries = [r for r in (conn.response or []) if r.get("type") == "searchResEntry"]
    return conn.result, entries


def dns_of(entries):
    """The set of normalized (lowercased) DNs of search entries."""
    return {e["dn"].lower() for e in entries}


def values(entry, attr):
    """The values of one attribute of an ldap3 search entry (raw bytes decoded as UTF-8),
    looked up without regard to case."""
    for k, v in entry["raw_attributes"].items():
        if k.lower() == attr.lower():
            return [x.decode("utf-8") for x in v]
    return []


def attr_names(entry):
    """The attribute descriptions an ldap3 search entry holds values of, lowercased (ldap3
    lists every requested attribute, with no values when the server sent none)."""
    return {k.lower() for k, v in entry["raw_attributes"].items() if v}


def raw_search(server, base, scope=ldapwire.SCOPE_SUB, filt=None, attrs=(), as_admin=True, controls=None,
               **kw):
    """A search sent byte by byte (for what ldap3 cannot express: scope subordinate,
    typesOnly, an exact attribute list, `(&)`); returns (entries, references, done) as
    `ldapwire.Message`s."""
    c = ldapwire.RawConnection(server.host, server.port)
    try:
        if as_admin:
            bound = c.request(1, ldapwire.bind_simple(server.admin_dn, server.admin_pw))[-1]
            assert bound.code == 0, bound.diag
        answer = c.request(2, ldapwire.search(base, scope, filt, attrs, **kw), controls=controls)
    finally:
        c.close()
    entries = [m for m in answer if m.op == ldapwire.SEARCH_ENTRY]
    refs = [m for m in answer if m.op == ldapwire.SEARCH_REFERENCE]
    return entries, refs, answer[-1]


def raw_attr_names(message):
    """The attribute descriptions of a raw search entry, lowercased."""
    return {k.lower() for k in message.attrs}


MANAGE_DSA_IT = ("2.16.840.1.113730.3.4.2", False, None)


def dump_subtree(conn, base):
    """Every entry at and below base with every user and operational attribute, as a sorted
    list of (dn, sorted attributes), referral and alias entries included as entries."""
    conn.search(base, "(objectClass=*)", search_scope=ldap3.SUBTREE, attributes=["*", "+"],
                controls=[MANAGE_DSA_IT], dereference_aliases=ldap3.DEREF_NEVER, paged_size=None)
    assert conn.result["result"] == 0, conn.result
    out = []
    for e in conn.response:
        if e.get("type") != "searchResEntry":
            continue
        attrs = sorted((k.lower(), sorted(v)) for k, v in e["raw_attributes"].items())
        out.append((e["dn"].lower(), attrs))
    return sorted(out)


def delete_tree(conn, dn):
    """Deletes dn and everything below it, deepest first (referral and alias entries as
    themselves: ManageDsaIT, no dereferencing). A missing dn is not an error."""
    conn.search(dn, "(objectClass=*)", search_scope=ldap3.SUBTREE, attributes=["1.1"],
                controls=[MANAGE_DSA_IT], dereference_aliases=ldap3.DEREF_NEVER)
    if conn.result["result"] == 32:
        return
    assert conn.result["result"] == 0, conn.result
    dns = [e["dn"] for e in conn.response if e.get("type") == "searchResEntry"]
    dns.sort(key=lambda d: d.count(","), reverse=True)
    for d in dns:
        conn.delete(d, controls=[MANAGE_DSA_IT])
        assert conn.result["result"] in (0, 32), (d, conn.result)


# Attempts at catching a search while it runs (Abandon, Cancel): a search is only still
# running when its client stops reading and the server blocks on a full socket; if the
# server ever finishes first (socket buffers larger than assumed), the test tries again
# before it gives up.
ATTEMPTS = 3
# How long to let the server fill both socket buffers before the Cancel or Abandon is sent.
FILL_WAIT_S = 0.2


def stalled_search(server, base):
    """A raw connection, bound as the admin, whose subtree search of base (message ID 2)
    has started and whose client has stopped reading (a small receive buffer); returns
    (connection, [the first message of the search])."""
    c = ldapwire.RawConnection(server.host, server.port, timeout=30, rcvbuf=4096)
    assert_result(c.request(1, ldapwire.bind_simple(server.admin_dn, server.admin_pw))[-1], "success")
    c.send(ldapwire.message(2, ldapwire.search(base, ldapwire.SCOPE_SUB)))
    first = c.recv()
    assert first is not None and first.msgid == 2
    time.sleep(FILL_WAIT_S)
    return c, [first]


def anonymous_write_refusal(server):
    """The result an anonymous update gets: slapd refuses every update from an anonymous
    session before access control with strongerAuthRequired ("modifications require
    authentication"); Larch's default policy answers insufficientAccessRights, the code
    access control gives (RFC 4511 does not name one for this case)."""
    return "strongerAuthRequired" if server.kind == "slapd" else "insufficientAccessRights"
