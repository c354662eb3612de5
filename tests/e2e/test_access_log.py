"""The access log (`[access_log]` in docs/configuration.md, formats in docs/logs.md): what
Larch writes for each connection and operation, read back from the file after the server
stopped (SIGTERM makes it write every line it has), in 389 Directory Server's text format
(checked line by line, then counted by 389's own analyser `logconv`), in JSON, at each
level, and across SIGHUP reopens and size rotations under load.

Every test starts its own server (`make_extra_server`), so connection numbers start at 1
and every line of the file is accounted for. The first connection of each server is the
fixture's readiness probe: an anonymous Bind, then a close without Unbind (`B1`).

How a session is checked (`Recorder`): the test sends every request byte by byte
(`ldapwire`), one at a time, and records per connection what the log must say: the
request line (its exact text), then a RESULT with the code, response tag and entry count
the client received, the notes, and the closing code. The file's lines of that connection
must be those, in that order, and nothing else. slapd has no such log: every test is
Larch's only."""

import calendar
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import ldapwire as w
from ldaputil import assert_result

pytestmark = pytest.mark.larch_only("the access log is Larch's (389 Directory Server's format); slapd has none")

LOGCONV = "/usr/bin/logconv"
BASE = "dc=example,dc=com"
ADMIN_DN = "cn=admin,dc=example,dc=com"

PAGED_OID = "1.2.840.113556.1.4.319"
PASSWORD_MODIFY_OID = "1.3.6.1.4.1.4203.1.11.1"

# How long the server may take to write a line (it writes every 100 ms).
LINE_DEADLINE_S = 10.0


# ----------------------------------------------------------------------------- requests
# The requests ldapwire has no encoder for (RFC 4511 section 4).


def attribute_list(attrs, tag=0x30):
    """SEQUENCE OF SEQUENCE { type, SET OF value } from {type: [values]}."""
    return w.seq(*[w.seq(w.octets(t), w.seq(*[w.octets(v) for v in vs], tag=0x31)) for t, vs in attrs.items()],
                 tag=tag)


def add(dn, attrs):
    """AddRequest [APPLICATION 8]."""
    return w.seq(w.octets(dn), attribute_list(attrs), tag=0x68)


REPLACE = 2


def modify(dn, changes):
    """ModifyRequest [APPLICATION 6]; changes: [(operation, type, [values])]."""
    return w.seq(w.octets(dn), w.seq(*[
        w.seq(w.enum(op), w.seq(w.octets(t), w.seq(*[w.octets(v) for v in vs], tag=0x31)))
        for op, t, vs in changes]), tag=0x66)


def delete(dn):
    """DelRequest [APPLICATION 10] LDAPDN."""
    return w.octets(dn, tag=0x4A)


def modrdn(dn, newrdn, delete_old=True):
    """ModifyDNRequest [APPLICATION 12] without a new superior."""
    return w.seq(w.octets(dn), w.octets(newrdn), w.boolean(delete_old), tag=0x6C)


def compare(dn, attr, value):
    """CompareRequest [APPLICATION 14]."""
    return w.seq(w.octets(dn), w.seq(w.octets(attr), w.octets(value)), tag=0x6E)


def password_modify(user, new):
    """Password Modify (RFC 3062) with userIdentity [0] and newPasswd [2]."""
    return w.extended(PASSWORD_MODIFY_OID, w.seq(w.octets(user, tag=0x80), w.octets(new, tag=0x82)))


def paged(size, cookie=b""):
    """The simple paged results control (RFC 2696)."""
    return w.control(PAGED_OID, False, w.seq(w.integer(size), w.octets(cookie)))


def paged_cookie(done):
    """The cookie of the paged results control of a SearchResultDone (None without one)."""
    if done.controls is None:
        return None
    for _, ctl in w.children(done.controls):
        parts = w.children(ctl)
        if parts[0][1].decode() != PAGED_OID:
            continue
        value = [c for t, c in parts[1:] if t == 0x04][0]
        _, inner, _ = w.read_tlv(value, 0)
        return w.children(inner)[1][1]
    return None


# ----------------------------------------------------------------------------- the file


def log_dir(srv):
    """The default directory of the log: `logs` below the data directory."""
    return Path(srv.workdir) / "data" / "logs"


def log_path(srv):
    """The default log file, `<data_dir>/logs/access`."""
    return log_dir(srv) / "access"


def stop(srv):
    """Stops the server through the fixture's LdapServer.stop (SIGTERM to its PID, wait) and
    returns the exit status. The exited process stays attached, so the fixture's own stop
    after the test finds it exited and reads the same status."""
    proc = srv.proc
    status = srv.stop()
    srv.proc = proc
    assert status == 0, f"exit status {status} on SIGTERM; stderr:\n{srv.stderr_tail()}"
    return status


def read_text(path):
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""


def wait_for_probe(log):
    """Waits for the close of the fixture's readiness probe, the first connection."""
    return wait_for_line(log, r" conn=1 op=-?\d+ fd=\d+ closed - B1$")


def wait_for_line(path, pattern, deadline_s=LINE_DEADLINE_S):
    """Waits until a line of the file matches the regular expression; returns the match."""
    rx = re.compile(pattern, re.M)
    deadline = time.monotonic() + deadline_s
    while True:
        m = rx.search(read_text(path))
        if m:
            return m
        assert time.monotonic() < deadline, f"no line matching {pattern!r} in {path} within {deadline_s}s:\n" \
                                            f"{read_text(path)[-3000:]}"
        time.sleep(0.05)


MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                       "Nov", "Dec"], 1)}
LINE_389 = re.compile(r"^\[(\d\d)/([A-Z][a-z]{2})/(\d{4}):(\d\d):(\d\d):(\d\d)\.(\d{9}) \+0000\] conn=(\d+) (.+)$")


class Line:
    """One line of the 389 format: time (ns since the epoch), conn, and the rest after
    `conn=N `."""

    def __init__(self, text):
        m = LINE_389.match(text)
        assert m, f"not a 389 access log line: {text!r}"
        day, mon, year, hh, mm, ss, ns, conn, rest = m.groups()
        self.text = text
        self.time = calendar.timegm((int(year), MONTHS[mon], int(day), int(hh), int(mm), int(ss))) * 10**9 + int(ns)
        self.conn = int(conn)
        self.rest = rest
        op = re.match(r"op=(-?\d+) ", rest)
        self.op = int(op.group(1)) if op else None

    def __repr__(self):
        return self.text


def lines_389(*paths):
    """Every line of the files, parsed; each file must end with a whole line."""
    out = []
    for p in paths:
        text = read_text(p)
        assert text == "" or text.endswith("\n"), f"{p} ends inside a line: {text[-200:]!r}"
        out.extend(Line(t) for t in text.splitlines())
    return out


# ----------------------------------------------------------------------------- what the log must say

DURATIONS = r" wtime=(\d+)\.(\d{9}) optime=(\d+)\.(\d{9}) etime=(\d+)\.(\d{9})"
NOTES_TEXT = {"U": "Partially Unindexed Filter", "P": "Paged Search"}


def notes_field(notes):
    """` notes=U,P details="..."` as 389 writes it ("" without notes)."""
    if not notes:
        return ""
    return f' notes={",".join(notes)} details="{",".join(NOTES_TEXT[n] for n in notes)}"'


class Recorder:
    """The expected lines of every connection of one server (see the module doc)."""

    def __init__(self, srv):
        self.srv = srv
        self.expected = {}  # conn -> [regular expression of the rest of each line]
        self.ops = []  # dicts: conn, op, kind, err, tag, nentries, notes, bind_dn, request_dn
        self.closes = {}  # conn -> closing code
        self.refused = []
        self.next_conn = None

    def start_after_probe(self, level="default"):
        """Waits for the readiness probe's close and numbers the next connection after it."""
        log = log_path(self.srv)
        wait_for_probe(log)
        probes = {ln.conn for ln in lines_389(log)}
        assert probes == {1}, f"the readiness probe should be the only connection so far: {probes}"
        self.connected(1)
        request = 'BIND dn="" method=128 version=3' if level != "results" else None
        self.op(1, 0, "bind", request, 0, w.BIND_RESPONSE, bind_dn="", request_dn="")
        self.closed(1, 0, "B1")
        self.next_conn = 2

    def connected(self, conn):
        self.expected[conn] = [r"fd=(?P<fd>\d+) slot=(?P=fd) connection from 127\.0\.0\.1 to 127\.0\.0\.1"]

    def op(self, conn, op, kind, request, err, tag, nentries=0, notes="", bind_dn=None, request_dn=None):
        """An operation: its request line (None at the results level) and, when tag is not
        None, its RESULT."""
        if request is not None:
            self.expected[conn].append(re.escape(f"op={op} {request}"))
        if tag is not None:
            tail = notes_field(notes)
            if bind_dn is not None and tag == w.BIND_RESPONSE and err == 0:
                tail += f' dn="{bind_dn}"'
            self.expected[conn].append(
                re.escape(f"op={op} RESULT err={err} tag={tag} nentries={nentries}") + DURATIONS + re.escape(tail))
        self.ops.append(dict(conn=conn, op=op, kind=kind, err=err, tag=tag, nentries=nentries, notes=notes,
                             bind_dn=bind_dn, request_dn=request_dn))

    def closed(self, conn, last_op, code):
        self.expected[conn].append(re.escape(f"op={last_op} fd=") + r"(?P=fd)" + re.escape(f" closed - {code}"))
        self.closes[conn] = code

    def refuse(self, conn):
        self.expected[conn] = [r"refused from 127\.0\.0\.1 to 127\.0\.0\.1 - \S.*"]
        self.refused.append(conn)

    def client(self, level="default"):
        """A new raw connection, numbered in the order the server accepts them."""
        c = Client(self, self.next_conn, level)
        self.next_conn += 1
        return c

    def check_lines(self, lines):
        """Each connection's lines are the expected ones in order, and no line is left
        over; a RESULT's etime is its wtime + optime, and no line of an operation is dated
        before the request line."""
        by_conn = {}
        for ln in lines:
            by_conn.setdefault(ln.conn, []).append(ln)
        assert sorted(by_conn) == sorted(self.expected), (
            f"connections in the log {sorted(by_conn)}, expected {sorted(self.expected)}")
        for conn, patterns in self.expected.items():
            got = by_conn[conn]
            shown = "\n".join(ln.rest for ln in got)
            want = "\n".join(patterns)
            assert len(got) == len(patterns), f"conn={conn}: {len(got)} lines, expected {len(patterns)}:\n" \
                                              f"{shown}\n--- expected:\n{want}"
            m = re.fullmatch(want, shown)
            if m is None:
                for i, (ln, p) in enumerate(zip(got, patterns)):
                    # Which line differs (the fd of the connection line is a back-reference).
                    if re.fullmatch(p.replace("(?P=fd)", r"\d+"), ln.rest) is None:
                        pytest.fail(f"conn={conn} line {i}: {ln.rest!r}\ndoes not match {p!r}\nall lines:\n{shown}")
                pytest.fail(f"conn={conn}: the fd of the close is not the connection's:\n{shown}")
            received = {}
            for ln in got:
                d = re.search(DURATIONS, ln.rest)
                if d:
                    wt, op_t, et = (int(d.group(i)) * 10**9 + int(d.group(i + 1)) for i in (1, 3, 5))
                    assert et == wt + op_t, f"etime is not wtime + optime: {ln.text}"
                if ln.op is not None:
                    received.setdefault(ln.op, ln.time)
                    assert ln.time >= received[ln.op], f"a line dated before its request: {ln.text}"


class Client:
    """A raw connection whose requests are recorded with the answers they got."""

    def __init__(self, rec, conn, level="default"):
        self.rec = rec
        self.conn = conn
        self.level = level
        self.sock = w.RawConnection(rec.srv.host, rec.srv.port)
        self.msgid = 0
        self.next_op = 0
        rec.connected(conn)

    def request_line(self, text):
        return text if self.level != "results" else None

    def call(self, kind, line, op, controls=None, notes="", request_dn=None):
        """Sends one request, waits for its final answer, records what the log must say
        (the RESULT with the code, tag and entry count the client got)."""
        self.msgid += 1
        answer = self.sock.request(self.msgid, op, controls=controls)
        done = answer[-1]
        entries = sum(1 for m in answer if m.op == w.SEARCH_ENTRY)
        bind_dn = request_dn if kind == "bind" and done.code == 0 else None
        self.rec.op(self.conn, self.next_op, kind, self.request_line(line), done.code, done.op, entries, notes,
                    bind_dn, request_dn)
        self.next_op += 1
        return answer

    def bind(self, dn, password):
        return self.call("bind", f'BIND dn="{dn}" method=128 version=3', w.bind_simple(dn, password),
                         request_dn=dn)

    def search(self, base, scope, filt_text, filt, attrs=(), controls=None, notes=""):
        attr_text = "ALL" if not attrs else '"' + " ".join(attrs) + '"'
        line = f'SRCH base="{base}" scope={scope} filter="{filt_text}" attrs={attr_text}'
        return self.call("search", line, w.search(base, scope, filt, attrs), controls, notes)

    def abandon(self, msgid):
        """An Abandon: one line at every level, no RESULT."""
        self.msgid += 1
        self.sock.send(w.message(self.msgid, w.abandon(msgid)))
        self.rec.op(self.conn, self.next_op, "abandon", f"ABANDON targetop=NOTFOUND msgid={msgid}", None, None)
        self.next_op += 1

    def unbind(self):
        self.msgid += 1
        self.sock.send(w.message(self.msgid, w.unbind()))
        self.rec.op(self.conn, self.next_op, "unbind", self.request_line("UNBIND"), None, None)
        assert self.sock.recv() is None, "the server did not close the connection after the Unbind"
        self.sock.close()
        self.rec.closed(self.conn, self.next_op, "U1")

    def close(self, code="B1"):
        """Closes the socket without Unbind."""
        self.sock.close()
        self.rec.closed(self.conn, self.next_op - 1, code)


# ----------------------------------------------------------------------------- test 1: a session of every kind


def run_every_operation(make_extra_server):
    """One server (`max_connections_per_ip = 2`, the default log) and a session with every
    kind of operation and every way a connection ends, the server stopped; returns (server,
    Recorder, the log's lines).

    Connections: 1 the probe (B1); 2 the main session (Unbind: U1); 3 a search, then
    closed without Unbind (B1); 4 refused (2 already open); 5 an undecodable PDU (Notice of
    Disconnection: B3); 6 a Bind, still open when the server stops (S1)."""
    srv = make_extra_server(larch_extra_toml="\n[limits]\nmax_connections_per_ip = 2\n")
    rec = Recorder(srv)
    rec.start_after_probe()
    log = log_path(srv)
    ou = f"ou=al,{BASE}"
    alice = f"cn=alice,{ou}"
    bob = f"cn=bob,{ou}"

    main = rec.client()
    assert_result(main.bind(ADMIN_DN, "not-the-password")[-1], "invalidCredentials")
    assert_result(main.bind(ADMIN_DN, srv.admin_pw)[-1], "success")
    assert_result(main.call("add", f'ADD dn="{ou}"', add(ou, {"objectClass": ["organizationalUnit"],
                                                               "ou": ["al"]}))[-1], "success")
    assert_result(main.call("add", f'ADD dn="{alice}"', add(alice, {
        "objectClass": ["person"], "cn": ["alice"], "sn": ["alice"], "description": ["first user"],
        "userPassword": ["alice-pw-1"]}))[-1], "success")
    assert_result(main.call("add", f'ADD dn="{bob}"', add(bob, {
        "objectClass": ["person"], "cn": ["bob"], "sn": ["bob"], "description": ["second user"]}))[-1], "success")
    # cn has an equality index (the defaults); description has none: notes=U.
    answer = main.search(ou, w.SCOPE_SUB, "(cn=alice)", w.f_eq("cn", "alice"), ["cn", "sn"])
    assert_result(answer[-1], "success")
    assert [m.dn for m in answer if m.op == w.SEARCH_ENTRY] == [alice]
    answer = main.search(ou, w.SCOPE_ONE, "(description=first user)", w.f_eq("description", "first user"),
                         notes="U")
    assert [m.dn for m in answer if m.op == w.SEARCH_ENTRY] == [alice]
    # A paged search, one entry a page, to its end: every page's RESULT has notes=P.
    cookie = b""
    pages = 0
    while True:
        answer = main.search(ou, w.SCOPE_ONE, "(objectClass=person)", w.f_eq("objectClass", "person"), ["1.1"],
                             controls=[paged(1, cookie)], notes="P")
        assert_result(answer[-1], "success")
        pages += 1
        cookie = paged_cookie(answer[-1])
        assert cookie is not None, "no paged results control in the SearchResultDone"
        if not cookie:
            break
        assert pages < 5, "the paged search does not end"
    assert pages >= 2
    assert_result(main.call("mod", f'MOD dn="{alice}"', modify(alice, [(REPLACE, "description", ["changed"])]))[-1],
                  "success")
    assert_result(main.call("modrdn", f'MODRDN dn="{bob}" newrdn="cn=robert" newsuperior="(null)"',
                            modrdn(bob, "cn=robert"))[-1], "success")
    assert_result(main.call("cmp", f'CMP dn="{alice}" attr="sn"', compare(alice, "sn", "alice"))[-1], "compareTrue")
    assert_result(main.call("cmp", f'CMP dn="{alice}" attr="sn"', compare(alice, "sn", "nobody"))[-1],
                  "compareFalse")
    assert_result(main.call("del", f'DEL dn="cn=robert,{ou}"', delete(f"cn=robert,{ou}"))[-1], "success")
    answer = main.call("ext", f'EXT oid="{w.WHOAMI_OID}" name="whoami-plugin"', w.whoami())
    assert_result(answer[-1], "success")
    assert answer[-1].response_value == f"dn:{ADMIN_DN}".encode()
    assert_result(main.call("ext", f'EXT oid="{PASSWORD_MODIFY_OID}" name="passwd_modify_plugin"',
                            password_modify(alice, "alice-pw-2"))[-1], "success")

    # A second connection: a search of the root DSE; with the main one, this address now
    # has its 2 connections.
    other = rec.client()
    answer = other.search("", w.SCOPE_BASE, "(objectClass=*)", w.f_present("objectClass"), ["1.1"])
    assert_result(answer[-1], "success")
    # The third is refused: a Notice of Disconnection with busy, then the close.
    refused = w.RawConnection(srv.host, srv.port)
    try:
        notice = refused.recv()
        assert notice is not None and notice.msgid == 0 and notice.response_name == w.NOTICE_OF_DISCONNECTION_OID, \
            notice
        assert_result(notice, "busy")
        assert refused.recv() is None
    finally:
        refused.close()
    rec.refuse(rec.next_conn)
    rec.next_conn += 1
    other.close("B1")
    # Its slot is free once its close is logged.
    wait_for_line(log, rf" conn={other.conn} op=0 fd=\d+ closed - B1$")

    # An undecodable PDU (no message ID): a Notice of Disconnection (protocolError), the end.
    bad = rec.client()
    bad.sock.send(bytes.fromhex("3003040141"))
    notice = bad.sock.recv()
    assert notice is not None and notice.msgid == 0 and notice.response_name == w.NOTICE_OF_DISCONNECTION_OID, notice
    assert_result(notice, "protocolError")
    assert bad.sock.recv() is None
    bad.sock.close()
    rec.op(bad.conn, -1, "undecodable", "UNDECODABLE tag=0", notice.code, w.EXTENDED_RESPONSE)
    rec.closed(bad.conn, -1, "B3")

    # The main session: an Abandon of a message ID never used, then Unbind.
    main.abandon(999)
    main.unbind()
    wait_for_line(log, rf" conn={main.conn} op=\d+ fd=\d+ closed - U1$")
    wait_for_line(log, rf" conn={bad.conn} op=-1 fd=\d+ closed - B3$")

    # Still open when the server stops.
    last = rec.client()
    assert_result(last.bind("", "")[-1], "success")
    stop(srv)
    last.sock.close()
    rec.closed(last.conn, 0, "S1")
    return srv, rec, lines_389(log)


def test_389_lines_of_every_operation(make_extra_server):
    """Each connection's lines, in order: `connection from`, each request line with the
    fields 389 writes (BIND dn/method/version, SRCH base/scope/filter/attrs, ADD/MOD/DEL
    dn, MODRDN newrdn/newsuperior, CMP attr, EXT oid/name, ABANDON targetop/msgid,
    UNBIND, UNDECODABLE), its RESULT (err, tag, nentries as the client got them, etime =
    wtime + optime, notes=U for the unindexed filter and notes=P for each page, dn= after
    a successful Bind) and `closed - U1/B1/B3/S1`; the refused connection's line of its
    own; nothing else."""
    srv, rec, lines = run_every_operation(make_extra_server)
    rec.check_lines(lines)
    # The refused connection's line says why.
    refused = [ln for ln in lines if ln.conn in rec.refused]
    assert len(refused) == 1 and "maximum of 2 connections" in refused[0].rest, refused


def parse_logconv(out):
    """The counts logconv prints: {label: n} for `Label:   n` lines (first occurrence),
    {code: n} for the error table (`err=N   count   text`) and the connection codes."""
    counts, errors, codes = {}, {}, {}
    section = None
    for line in out.splitlines():
        m = re.match(r"^-{5,}\s+(.+?)\s+-{5,}\s*$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^\s*(?:- )?([A-Za-z][A-Za-z0-9 ()/']*?):\s+(\d+)(?:\s|$)", line)
        if m and section in (None, "Access Log Output"):
            counts.setdefault(m.group(1).strip(), int(m.group(2)))
        m = re.match(r"^err=(\d+)\s+(\d+)\s", line)
        if m and section == "Errors":
            errors[int(m.group(1))] = int(m.group(2))
        m = re.match(r"^([A-Z]\d)\s+(\d+)\s", line)
        if m and section == "Total Connection Codes":
            codes[m.group(1)] = int(m.group(2))
    return counts, errors, codes


def test_logconv_counts(make_extra_server):
    """389's analyser reads the file and counts what the test did: connections, each kind
    of operation, binds (anonymous, as the admin), results by code, paged and unindexed
    searches, closures by code (the refused connection is not a connection to it)."""
    logconv = require_logconv()
    srv, rec, lines = run_every_operation(make_extra_server)
    p = subprocess.run([logconv, "-V", "-d", ADMIN_DN, str(log_path(srv))], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, f"logconv failed ({p.returncode}): {p.stderr}\n{p.stdout}"
    counts, errors, codes = parse_logconv(p.stdout)

    kinds = Counter(o["kind"] for o in rec.ops)
    binds = [o for o in rec.ops if o["kind"] == "bind"]
    searches = [o for o in rec.ops if o["kind"] == "search"]
    results = [o for o in rec.ops if o["tag"] is not None]
    expected = {
        "Restarts": 1,  # a log whose first connection is conn=1
        "Total Connections": len(rec.expected) - len(rec.refused),
        "LDAP Connections": len(rec.expected) - len(rec.refused),
        "LDAPS Connections": 0,
        "Searches": kinds["search"],
        "Modifications": kinds["mod"],
        "Adds": kinds["add"],
        "Deletes": kinds["del"],
        "Mod RDNs": kinds["modrdn"],
        "Compares": kinds["cmp"],
        "Binds": kinds["bind"],
        "Unbinds": kinds["unbind"],
        "Extended Operations": kinds["ext"],
        "Abandoned Requests": kinds["abandon"],
        "Total Operations": sum(kinds[k] for k in ("search", "mod", "add", "del", "modrdn", "cmp", "bind", "ext",
                                                    "abandon")),
        "Total Results": len(results) + kinds["abandon"],
        "Paged Searches": sum(1 for o in searches if "P" in o["notes"]),
        "Unindexed Components": sum(1 for o in searches if "U" in o["notes"]),
        "Unindexed Searches": 0,
        "LDAP v3 Binds": kinds["bind"],
        "SASL Binds": 0,
        "Anonymous Binds": sum(1 for o in binds if o["request_dn"] == ""),
        # logconv counts the BIND lines naming the root DN given with -d, failed or not.
        "Directory Manager Binds": sum(1 for o in binds if o["request_dn"] == ADMIN_DN),
        "FDs Taken": len(rec.expected) - len(rec.refused),
        "FDs Returned": len(rec.closes),
    }
    got = {k: counts.get(k) for k in expected}
    assert got == expected, f"logconv's counts {got}\nexpected {expected}\n{p.stdout}"
    expected_errors = Counter(o["err"] for o in results)
    assert errors == dict(expected_errors), f"logconv's result codes {errors}, expected {dict(expected_errors)}"
    assert {0, 2, 5, 6, 49} <= set(errors)
    # S1 (server shutdown) is Larch's own code, which logconv does not count.
    expected_codes = dict(Counter(c for c in rec.closes.values() if c != "S1"))
    assert codes == expected_codes, f"logconv's closure codes {codes}, expected {expected_codes}"
    assert expected_codes == {"B1": 2, "U1": 1, "B3": 1}


# ----------------------------------------------------------------------------- test 2: JSON


def test_json_lines(make_extra_server):
    """`format = "json"`: every line is a JSON object with local_time, operation and
    conn_id; each request and RESULT carries op_id and msgid and the fields 389 DS writes
    (BIND bind_dn/version, ADD/DELETE target_dn, SEARCH base_dn/scope/filter/attrs,
    COMPARE target_dn/cmp_attr, RESULT tag/err/nentries/notes/bind_dn/wtime/optime/etime,
    DISCONNECT close_reason ending in the closing code), as the test did them."""
    srv = make_extra_server(larch_extra_toml='\n[access_log]\nformat = "json"\n')
    log = log_path(srv)
    # The probe's close (389's key order: local_time, operation, key, conn_id, ...).
    wait_for_line(log, r'"operation":"DISCONNECT","key":"[^"]*","conn_id":1,')
    ou = f"ou=js,{BASE}"
    c = w.RawConnection(srv.host, srv.port)
    try:
        assert_result(c.request(1, w.bind_simple(ADMIN_DN, srv.admin_pw))[-1], "success")
        assert_result(c.request(2, add(ou, {"objectClass": ["organizationalUnit"], "ou": ["js"]}))[-1], "success")
        answer = c.request(3, w.search(ou, w.SCOPE_SUB, w.f_eq("objectClass", "organizationalUnit"), ["ou", "cn"]))
        assert_result(answer[-1], "success")
        assert len(answer) == 2
        answer = c.request(4, w.search(ou, w.SCOPE_ONE, w.f_eq("description", "x")))
        assert_result(answer[-1], "success")
        assert len(answer) == 1
        assert_result(c.request(5, compare(ou, "ou", "nope"))[-1], "compareFalse")
        assert_result(c.request(6, delete(f"cn=ghost,{ou}"))[-1], "noSuchObject")
        c.send(w.message(7, w.unbind()))
        assert c.recv() is None
    finally:
        c.close()
    wait_for_line(log, r'"operation":"DISCONNECT","key":"[^"]*","conn_id":2,')
    stop(srv)

    text = read_text(log)
    assert text.endswith("\n")
    records = []
    for i, line in enumerate(text.splitlines()):
        try:
            r = json.loads(line)
        except ValueError as e:
            pytest.fail(f"line {i + 1} is not JSON ({e}): {line!r}")
        assert isinstance(r, dict), line
        assert isinstance(r.get("operation"), str) and isinstance(r.get("local_time"), str), line
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9} \+0000", r["local_time"]), line
        assert isinstance(r.get("conn_id"), int), line
        records.append(r)
    mine = [r for r in records if r["conn_id"] == 2]
    ops = [r["operation"] for r in mine]
    assert ops == ["CONNECTION", "BIND", "RESULT", "ADD", "RESULT", "SEARCH", "RESULT", "SEARCH", "RESULT",
                   "COMPARE", "RESULT", "DELETE", "RESULT", "UNBIND", "DISCONNECT"], mine
    conn = mine[0]
    assert conn["client_ip"] == "127.0.0.1" and conn["server_ip"] == "127.0.0.1", conn
    assert "op_id" not in conn, conn
    for r in mine[1:]:
        assert isinstance(r.get("op_id"), int), r
    op_ids = [r["op_id"] for r in mine[1:]]
    assert op_ids == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6], op_ids
    msgids = [r["msgid"] for r in mine[1:-1]]
    assert msgids == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7], msgids
    bind, search, search_u = mine[1], mine[5], mine[7]
    assert bind["bind_dn"] == ADMIN_DN and bind["version"] == 3, bind
    assert mine[3]["target_dn"] == ou, mine[3]
    assert (search["base_dn"], search["scope"], search["filter"], search["attrs"]) == (
        ou, 2, "(objectClass=organizationalUnit)", ["ou", "cn"]), search
    assert (search_u["base_dn"], search_u["scope"], search_u["filter"]) == (ou, 1, "(description=x)"), search_u
    assert "attrs" not in search_u, search_u  # all user attributes: no list
    assert mine[9]["target_dn"] == ou and mine[9]["cmp_attr"] == "ou", mine[9]
    assert mine[11]["target_dn"] == f"cn=ghost,{ou}", mine[11]
    results = [r for r in mine if r["operation"] == "RESULT"]
    got = [(r["tag"], r["err"], r["nentries"]) for r in results]
    assert got == [(97, 0, 0), (105, 0, 0), (101, 0, 1), (101, 0, 0), (111, 5, 0), (107, 32, 0)], got
    for r in results:
        times = [float(r[k]) for k in ("wtime", "optime", "etime")]
        assert all(t >= 0 for t in times) and abs(times[2] - times[0] - times[1]) < 2e-9, r
    assert [r.get("bind_dn") for r in results] == [ADMIN_DN, None, None, None, None, None], results
    # The unindexed search's note, with the search (as 389 writes notes A and U).
    assert [r.get("notes") for r in results] == [None, None, None, [
        {"note": "U", "description": "Partially Unindexed Filter", "base_dn": ou, "filter": "(description=x)",
         "scope": 1}], None, None], results
    assert mine[-1]["close_reason"].endswith(" - U1"), mine[-1]
    probe_close = [r for r in records if r["conn_id"] == 1 and r["operation"] == "DISCONNECT"]
    assert len(probe_close) == 1 and probe_close[0]["close_reason"].endswith(" - B1"), probe_close


# ----------------------------------------------------------------------------- test 3: levels


def test_results_level(make_extra_server):
    """`level = "results"`: no request line (no BIND, SRCH, ADD, CMP, UNBIND), but every
    RESULT, the Abandon's line, the connections and their closes."""
    srv = make_extra_server(larch_extra_toml='\n[access_log]\nlevel = "results"\n')
    rec = Recorder(srv)
    rec.start_after_probe("results")
    log = log_path(srv)
    ou = f"ou=lv,{BASE}"
    c = rec.client("results")
    assert_result(c.bind(ADMIN_DN, srv.admin_pw)[-1], "success")
    assert_result(c.call("add", None, add(ou, {"objectClass": ["organizationalUnit"], "ou": ["lv"]}))[-1], "success")
    answer = c.search(ou, w.SCOPE_BASE, "(objectClass=*)", w.f_present("objectClass"), ["ou"])
    assert len(answer) == 2
    assert_result(c.bind(ADMIN_DN, "wrong")[-1], "invalidCredentials")
    assert_result(c.call("cmp", None, compare(f"cn=ghost,{ou}", "cn", "x"))[-1], "noSuchObject")
    c.abandon(42)
    c.unbind()
    wait_for_line(log, rf" conn={c.conn} op=\d+ fd=\d+ closed - U1$")
    stop(srv)
    lines = lines_389(log)
    requests = [ln for ln in lines if re.search(r" (BIND|SRCH|ADD|MOD|DEL|MODRDN|CMP|EXT|UNBIND)( |$)", ln.rest)]
    assert not requests, f"request lines at the results level: {requests}"
    assert sum(1 for ln in lines if " RESULT " in ln.rest) == sum(1 for o in rec.ops if o["tag"] is not None) == 6
    rec.check_lines(lines)


def full_level_session(make_extra_server):
    """A server at `level = "full"`; as the admin: an Add, a base search with a size limit,
    a Compare and an Add that fail, a failed Bind, the Unbind; the server stopped. Returns
    (server, ou, the three failed results)."""
    srv = make_extra_server(larch_extra_toml='\n[access_log]\nlevel = "full"\n')
    log = log_path(srv)
    wait_for_probe(log)
    ou = f"ou=lv,{BASE}"
    c = w.RawConnection(srv.host, srv.port)
    try:
        assert_result(c.request(1, w.bind_simple(ADMIN_DN, srv.admin_pw))[-1], "success")
        assert_result(c.request(2, add(ou, {"objectClass": ["organizationalUnit"], "ou": ["lv"],
                                            "description": ["levels"]}))[-1], "success")
        assert len(c.request(3, w.search(ou, w.SCOPE_BASE, w.f_present("objectClass"), ["ou"], size_limit=7))) == 2
        failed_cmp = c.request(4, compare(f"cn=ghost,{ou}", "cn", "x"))[-1]
        assert_result(failed_cmp, "noSuchObject")
        failed_add = c.request(5, add(ou, {"objectClass": ["organizationalUnit"], "ou": ["lv"]}))[-1]
        assert_result(failed_add, "entryAlreadyExists")
        failed_bind = c.request(6, w.bind_simple(ADMIN_DN, "wrong"))[-1]
        assert_result(failed_bind, "invalidCredentials")
        c.send(w.message(7, w.unbind()))
        assert c.recv() is None
    finally:
        c.close()
    wait_for_line(log, r" conn=2 op=\d+ fd=\d+ closed - U1$")
    stop(srv)
    return srv, ou, failed_cmp, failed_add, failed_bind


def test_full_level(make_extra_server):
    """`level = "full"`: the attribute types of an Add, a search's deref/sizelimit/timelimit/
    attrsonly, and on every RESULT the authorization DN, the matched DN and, last, the
    diagnostic message the client got."""
    srv, ou, failed_cmp, failed_add, failed_bind = full_level_session(make_extra_server)
    log = log_path(srv)
    ops = {ln.op: [] for ln in lines_389(log) if ln.conn == 2 and ln.op is not None}
    for ln in lines_389(log):
        if ln.conn == 2 and ln.op is not None:
            ops[ln.op].append(ln.rest.split(" ", 1)[1])
    assert ops[1][0] == f'ADD dn="{ou}" attrs="objectClass ou description"', ops[1]
    # 389's fields, then the full level's, each once (their order is the formatter's).
    prefix = f'SRCH base="{ou}" scope=0 filter="(objectClass=*)" '
    assert ops[2][0].startswith(prefix), ops[2]
    assert sorted(ops[2][0][len(prefix):].split(" ")) == sorted(
        ['attrs="ou"', "deref=0", "sizelimit=7", "timelimit=0", "attrsonly=0"]), ops[2]
    # A success: the authorization DN, no matched DN, no message.
    assert re.fullmatch(r"RESULT err=0 tag=105 nentries=0" + DURATIONS + re.escape(f' authzdn="{ADMIN_DN}"'),
                        ops[1][1]), ops[1]
    # The failures: the matched DN and the message, as the client got them, last.
    assert failed_cmp.diag and failed_cmp.matched.lower() == ou.lower()
    assert re.fullmatch(r"RESULT err=32 tag=111 nentries=0" + DURATIONS + re.escape(
        f' authzdn="{ADMIN_DN}" matched="{failed_cmp.matched}" - {failed_cmp.diag}'), ops[3][1]), ops[3]
    assert failed_add.diag
    assert re.fullmatch(r"RESULT err=68 tag=105 nentries=0" + DURATIONS + re.escape(
        f' authzdn="{ADMIN_DN}" - {failed_add.diag}'), ops[4][1]), ops[4]
    assert failed_bind.diag
    assert re.fullmatch(r"RESULT err=49 tag=97 nentries=0" + DURATIONS + re.escape(f" - {failed_bind.diag}"),
                        ops[5][1]), ops[5]
    # Never a value: neither the passwords nor the added description.
    text = read_text(log)
    assert srv.admin_pw not in text and "levels" not in text


def require_logconv():
    """logconv's path; skips the test without it, unless LARCH_REQUIRE_LOGCONV=1."""
    if not os.access(LOGCONV, os.X_OK):
        if os.environ.get("LARCH_REQUIRE_LOGCONV") == "1":
            pytest.fail(f"{LOGCONV} is missing (Debian's 389-ds-base) and LARCH_REQUIRE_LOGCONV=1")
        pytest.skip(f"{LOGCONV} is missing (Debian's 389-ds-base; scripts/e2e.sh installs it)")
    return LOGCONV


def logconv_top(out, title):
    """The `count  value` rows of one of logconv's `----- Top 20 ... -----` tables."""
    rows = {}
    section = None
    for line in out.splitlines():
        m = re.match(r"^-{5,}\s+(.+?)\s+-{5,}\s*$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^(\d+)\s+(\S.*?)\s*$", line)
        if m and section == title:
            rows[m.group(2)] = int(m.group(1))
    return rows


def test_logconv_reads_the_full_level(make_extra_server):
    """The full level's extra request fields do not change what logconv reads: the search's
    filter, base and requested attributes come out as sent (logconv takes the filter to be
    everything between `filter="` and the line's last `" `)."""
    logconv = require_logconv()
    srv, ou, *_ = full_level_session(make_extra_server)
    p = subprocess.run([logconv, "-V", str(log_path(srv))], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"logconv failed ({p.returncode}): {p.stderr}\n{p.stdout}"
    counts, _, _ = parse_logconv(p.stdout)
    assert (counts.get("Searches"), counts.get("Adds"), counts.get("Compares"), counts.get("Binds")) == (1, 2, 1, 3), \
        p.stdout
    # logconv lowercases filters and bases.
    assert logconv_top(p.stdout, "Top 20 Search Filters") == {"(objectclass=*)": 1}, p.stdout
    assert logconv_top(p.stdout, "Top 20 Search Bases") == {ou.lower(): 1}, p.stdout
    assert logconv_top(p.stdout, "Top 20 Most Requested Attributes") == {"ou": 1}, p.stdout


# ----------------------------------------------------------------------------- test 4: reopen and rotation


class Load(threading.Thread):
    """A client sending small searches from a thread, pipelined `chunk` at a time and at
    most `rate` a second, until `stop_when()` is true and at least `minimum` were sent, then
    an Unbind; `sent` counts the answered searches.

    The rate keeps the log within what its writer is meant to keep up with: unpaced, one
    client can make more lines than the writer formats on a small machine, and the server
    then drops records by design (and says so in the log)."""

    def __init__(self, srv, minimum, stop_when=lambda: True, chunk=50, rate=3000, filt=None):
        super().__init__(daemon=True)
        self.sock = w.RawConnection(srv.host, srv.port, timeout=60)
        self.minimum = minimum
        self.stop_when = stop_when
        self.chunk = chunk
        self.rate = rate
        self.filt = filt if filt is not None else w.f_present("objectClass")
        self.sent = 0
        self.error = None

    def run(self):
        try:
            msgid = 0
            started = time.monotonic()
            while self.sent < self.minimum or not self.stop_when():
                batch = b"".join(w.message(msgid + i + 1, w.search(BASE, w.SCOPE_BASE, self.filt, ["1.1"]))
                                 for i in range(self.chunk))
                self.sock.send(batch)
                done = 0
                while done < self.chunk:
                    m = self.sock.recv()
                    assert m is not None, "the server closed the connection"
                    if m.op == w.SEARCH_DONE:
                        assert m.code == 0, m
                        done += 1
                msgid += self.chunk
                self.sent += self.chunk
                ahead = started + self.sent / self.rate - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            self.sock.send(w.message(msgid + 1, w.unbind()))
            assert self.sock.recv() is None
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e
        finally:
            self.sock.close()


def load_conn(lines, sent):
    """The connection of the load: the one with the most RESULT lines."""
    per_conn = Counter(ln.conn for ln in lines if " RESULT " in ln.rest)
    conn, n = per_conn.most_common(1)[0]
    return conn


def check_every_search_once(lines, conn, sent):
    """The load's connection has exactly one SRCH and one RESULT line for each of its
    operations 0..sent-1, the UNBIND as op `sent`, and its close."""
    mine = [ln for ln in lines if ln.conn == conn]
    results = Counter(ln.op for ln in mine if " RESULT " in ln.rest)
    requests = Counter(ln.op for ln in mine if " SRCH " in ln.rest)
    dup = {op: n for op, n in results.items() if n > 1}
    assert not dup, f"RESULT lines written twice: {sorted(dup.items())[:20]}"
    missing = sorted(set(range(sent)) - set(results))
    assert not missing, f"{len(missing)} RESULT lines missing of {sent}, e.g. ops {missing[:20]}"
    assert set(results) == set(range(sent)), sorted(set(results) - set(range(sent)))[:20]
    assert requests == results, "SRCH lines differ from RESULT lines"
    assert sum(1 for ln in mine if re.fullmatch(rf"op={sent} UNBIND", ln.rest)) == 1
    assert sum(1 for ln in mine if re.fullmatch(rf"op={sent} fd=\d+ closed - U1", ln.rest)) == 1


def test_sighup_reopens_under_load_without_losing_a_line(make_extra_server):
    """While a client searches (connection 2), the live file is renamed away five times,
    each time after the server wrote some of the load into it, and each followed by SIGHUP
    to the server's PID (logrotate's way): the server opens a new file each time; over all
    six files every search has its SRCH and RESULT line once, each file holds whole lines
    and some of the load's RESULT lines."""
    srv = make_extra_server()
    log = log_path(srv)
    wait_for_probe(log)
    renames = 5
    done_renaming = threading.Event()
    load = Load(srv, minimum=3000, stop_when=done_renaming.is_set)
    load.start()
    moved = []
    try:
        for k in range(1, renames + 1):
            # Let the load go on, and the server write some of it into the current file.
            start = load.sent
            deadline = time.monotonic() + 30
            while (load.sent < start + 300 or " conn=2 op=" not in read_text(log)) and load.is_alive():
                assert time.monotonic() < deadline, "the load does not progress"
                time.sleep(0.01)
            assert load.is_alive(), f"the load ended before rename {k}: {load.error!r}"
            target = Path(f"{log}.moved.{k}")
            os.rename(log, target)
            moved.append(target)
            os.kill(srv.pid, signal.SIGHUP)
            deadline = time.monotonic() + LINE_DEADLINE_S
            while not log.exists():
                assert time.monotonic() < deadline, f"no new {log} after SIGHUP {k}"
                time.sleep(0.01)
    finally:
        done_renaming.set()
        load.join(120)
    assert not load.is_alive(), "the load did not finish"
    assert load.error is None, repr(load.error)
    wait_for_line(log, r" op=\d+ fd=\d+ closed - U1$")
    stop(srv)
    files = moved + [log]
    per_file = [lines_389(f) for f in files]
    lines = [ln for lines in per_file for ln in lines]
    conn = load_conn(lines, load.sent)
    assert conn == 2, "the load should be the connection after the probe"
    for f, lines_of_file in zip(files, per_file):
        assert any(ln.conn == conn and " RESULT " in ln.rest for ln in lines_of_file), \
            f"{f.name} holds no RESULT line of the load"
    check_every_search_once(lines, conn, load.sent)
    # The other lines are the probe's 4, the load's connection line, and the SIGHUPs add none.
    assert len(lines) == 4 + 1 + 2 * load.sent + 2, (len(lines), load.sent)


ROTATED = re.compile(r"^access\.(\d{8}-\d{6})(\.\d+)?$")
# About 1,500 octets more per SRCH line: a megabyte of log every ~600 searches, several
# rotations a second at 3,000-4,000 searches a second.
LONG_FILTER = w.f_or(w.f_present("objectClass"), w.f_eq("description", "x" * 1500))


def rotated_files(srv):
    return sorted(p for p in log_dir(srv).iterdir() if ROTATED.match(p.name))


def test_size_rotation_under_load_loses_no_line(make_extra_server):
    """`max_size_mb = 1`: the server renames the file `access.YYYYmmdd-HHMMSS` (UTC, now)
    once a megabyte was written to it and goes on in a new one; over all the files (keep is
    large enough to keep them all) every search has its lines once, and each rotated file
    has at least the megabyte."""
    srv = make_extra_server(larch_extra_toml="\n[access_log]\nmax_size_mb = 1\nkeep = 50\n")
    log = log_path(srv)
    wait_for_probe(log)
    started = time.time()
    load = Load(srv, minimum=4500, filt=LONG_FILTER)
    load.start()
    load.join(300)
    assert not load.is_alive() and load.error is None, repr(load.error)
    wait_for_line(log, r" op=\d+ fd=\d+ closed - U1$")
    stop(srv)
    rotated = rotated_files(srv)
    # ~7.5 MB of log; a file is rotated at the first write after its megabyte, and one write
    # holds up to 100 ms of lines.
    assert len(rotated) >= 3, f"expected several rotations of ~7.5 MB of log: {os.listdir(log_dir(srv))}"
    for p in rotated:
        stamp = calendar.timegm(time.strptime(ROTATED.match(p.name).group(1), "%Y%m%d-%H%M%S"))
        assert started - 2 <= stamp <= time.time() + 2, f"{p.name} is not named for the time of rotation (UTC)"
        assert p.stat().st_size >= 1_000_000, f"{p.name} was rotated at {p.stat().st_size} octets"
    lines = [ln for p in rotated + [log] for ln in lines_389(p)]
    conn = load_conn(lines, load.sent)
    check_every_search_once(lines, conn, load.sent)


def test_size_rotation_honours_keep(make_extra_server):
    """`keep = 1`: after several rotations one rotated file is left, the newest: with the
    live file it holds the last operations of the load, each once, without a gap; and
    nothing but the live file and that one is left in the directory."""
    srv = make_extra_server(larch_extra_toml="\n[access_log]\nmax_size_mb = 1\nkeep = 1\n")
    log = log_path(srv)
    wait_for_probe(log)
    # Several rotations within one second (the resolution of the names), as on a busy
    # server: the load starts as a second begins and writes ~5 MB in 0.75 s.
    time.sleep(1 - time.time() % 1)
    load = Load(srv, minimum=3000, rate=4000, filt=LONG_FILTER)
    load.start()
    load.join(300)
    assert not load.is_alive() and load.error is None, repr(load.error)
    wait_for_line(log, r" op=\d+ fd=\d+ closed - U1$")
    stop(srv)
    rotated = rotated_files(srv)
    assert len(rotated) == 1, f"keep = 1, rotated files left: {[p.name for p in rotated]}"
    others = sorted(p.name for p in log_dir(srv).iterdir() if p.name != "access" and p not in rotated)
    assert not others, others
    lines = lines_389(rotated[0], log)
    conn = load_conn(lines, load.sent)
    ops = Counter(ln.op for ln in lines if ln.conn == conn and " RESULT " in ln.rest)
    assert max(n for n in ops.values()) == 1, "a RESULT line written twice"
    first, last = min(ops), max(ops)
    spans = {p.name: op_span(p, conn) for p in rotated + [log]}
    assert last == load.sent - 1 and set(ops) == set(range(first, last + 1)), (
        f"the files left do not hold the last operations of the load (0..{load.sent - 1}) without a gap: "
        f"operations in each file {spans}")
    # Earlier files were removed: the first operations are gone.
    assert first > 0, "no rotated file was removed"


def op_span(path, conn):
    """(first, last) operation number of the RESULT lines of conn in the file."""
    ops = [ln.op for ln in lines_389(path) if ln.conn == conn and " RESULT " in ln.rest]
    return (min(ops), max(ops)) if ops else None
