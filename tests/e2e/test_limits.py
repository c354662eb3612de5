"""Configured limits, on a second server started for this module with small limits.

Larch reads them from `[limits]` in larch.toml (docs/configuration.md). slapd gets the
nearest equivalents, so the same assertions are checked against it:
`sizelimit size.soft=5 size.hard=5 size.unchecked=10` (more than 10 candidates for the
filter -> adminLimitExceeded, as Larch's lookthrough_limit for a search no index serves), `sockbuf_max_incoming 1024` (the
largest PDU from an anonymous client) and `idletimeout 1`. slapd has no per-address
connection limit, so that test is Larch's only.

Data: ou=l with 8 entries sn=same (indexed: 8 candidates, under the lookthrough limit) and
4 with sn=other; nothing indexes description."""

import shutil
import socket
import tempfile
import time

import pytest

import ldapwire as w
from conftest import make_server
from ldaputil import assert_result, connect, ldapadd_ok, ldif_entry

# Deadline for the server to close an idle connection configured to time out after 1 s.
IDLE_CLOSE_DEADLINE_S = 15.0

LARCH_LIMITS = """
[limits]
size_limit = 5
lookthrough_limit = 10
max_pdu_bytes = 1024
idle_timeout = "1s"
"""
SLAPD_LIMITS = """
sizelimit size.soft=5 size.hard=5 size.unchecked=10
sockbuf_max_incoming 1024
idletimeout 1
"""


@pytest.fixture(scope="module")
def limited(request):
    tmp = tempfile.mkdtemp(prefix="larch-e2e-limits-")
    srv = None
    try:
        srv = make_server(request.config, tmp, larch_extra_toml=LARCH_LIMITS, slapd_extra_global=SLAPD_LIMITS)
        srv.start()
        base = f"ou=l,{srv.base}"
        ldif = [ldif_entry(base, {"objectClass": "organizationalUnit", "ou": "l"})]
        for i in range(12):
            ldif.append(ldif_entry(f"cn=p{i},{base}", {
                "objectClass": "person", "sn": "same" if i < 8 else "other", "description": f"entry {i}"}))
        ldapadd_ok(srv, "".join(ldif))
        srv.limited_base = base
        yield srv
    finally:
        status = srv.stop() if srv is not None else 0
        stderr = srv.stderr_tail() if srv is not None else ""
        shutil.rmtree(tmp, ignore_errors=True)
    assert status == 0, f"exit status {status} on SIGTERM; stderr:\n{stderr}"


def test_size_limit(limited):
    conn = connect(limited)
    conn.search(limited.limited_base, "(sn=same)", attributes=["1.1"])
    assert_result(conn, "sizeLimitExceeded")
    assert len([e for e in conn.response if e["type"] == "searchResEntry"]) == 5
    conn.search(limited.limited_base, "(sn=same)", attributes=["1.1"], size_limit=3)
    assert_result(conn, "sizeLimitExceeded")
    assert len([e for e in conn.response if e["type"] == "searchResEntry"]) == 3
    conn.search(limited.limited_base, "(sn=other)", attributes=["1.1"])
    assert_result(conn, "success")
    assert len([e for e in conn.response if e["type"] == "searchResEntry"]) == 4
    conn.unbind()


def test_lookthrough_limit(limited):
    conn = connect(limited)
    # No index serves description: 13 entries to examine, more than 10.
    conn.search(limited.limited_base, "(description=*entry 1*)", attributes=["1.1"])
    assert_result(conn, "adminLimitExceeded")
    # An indexed filter stays under it.
    conn.search(limited.limited_base, "(cn=p3)", attributes=["1.1"])
    assert_result(conn, "success")
    assert len([e for e in conn.response if e["type"] == "searchResEntry"]) == 1
    conn.unbind()


def test_max_pdu_size(limited):
    small = w.search(limited.limited_base, w.SCOPE_ONE, w.f_eq("cn", "x" * 300), attrs=["1.1"])
    c = w.RawConnection(limited.host, limited.port)
    try:
        assert_result(c.request(1, small)[-1], "success")
    finally:
        c.close()
    big = w.search(limited.limited_base, w.SCOPE_ONE, w.f_eq("cn", "x" * 3000), attrs=["1.1"])
    assert len(w.message(2, big)) > 1024
    c = w.RawConnection(limited.host, limited.port)
    try:
        try:
            c.send(w.message(2, big))
        except (BrokenPipeError, ConnectionResetError):
            pass
        # The connection is closed, after at most a Notice of Disconnection; the search is
        # never answered.
        try:
            m = c.recv()
        except ConnectionResetError:
            m = None
        if m is not None:
            assert m.msgid == 0 and m.response_name == w.NOTICE_OF_DISCONNECTION_OID, m
            assert c.recv() is None
    finally:
        c.close()
    # Other connections are unaffected.
    c = w.RawConnection(limited.host, limited.port)
    try:
        assert_result(c.request(3, w.whoami())[-1], "success")
    finally:
        c.close()


def assert_closed_when_idle(c):
    """Sending nothing more, the server closes the connection (after at most a Notice of
    Disconnection) well within the deadline."""
    m = c.recv(timeout=IDLE_CLOSE_DEADLINE_S)
    if m is not None:
        assert m.msgid == 0 and m.response_name == w.NOTICE_OF_DISCONNECTION_OID, m
        assert c.recv(timeout=IDLE_CLOSE_DEADLINE_S) is None


def test_idle_timeout(limited):
    c = w.RawConnection(limited.host, limited.port, timeout=IDLE_CLOSE_DEADLINE_S)
    try:
        assert_result(c.request(1, w.whoami())[-1], "success")
        assert_closed_when_idle(c)
    finally:
        c.close()


def test_a_connection_in_use_is_not_idle(limited):
    """Requests every 0.3 s for three times the idle timeout: each is answered (the idle
    time counts from the last request); then silence closes the connection."""
    c = w.RawConnection(limited.host, limited.port, timeout=IDLE_CLOSE_DEADLINE_S)
    try:
        started = time.monotonic()
        msgid = 0
        while time.monotonic() - started < 3.0:
            msgid += 1
            assert_result(c.request(msgid, w.whoami())[-1], "success")
            time.sleep(0.3)
        assert_closed_when_idle(c)
    finally:
        c.close()


@pytest.mark.larch_only("slapd has no limit on connections per client address")
def test_max_connections_per_ip(make_extra_server):
    srv = make_extra_server(larch_extra_toml="\n[limits]\nmax_connections_per_ip = 3\n")
    conns = []
    try:
        # The readiness probe's connection may still count until the server has seen it
        # close, so each of the three is retried until served.
        for i in range(3):
            conns.append(open_served(srv))
        # The fourth is closed at once, after at most a Notice of Disconnection.
        extra = w.RawConnection(srv.host, srv.port)
        try:
            try:
                extra.send(w.message(1, w.whoami()))
                m = extra.recv()
            except (BrokenPipeError, ConnectionResetError):
                m = None
            if m is not None:
                assert m.msgid == 0 and m.response_name == w.NOTICE_OF_DISCONNECTION_OID, m
        finally:
            extra.close()
        # Once one closes, a new connection is served again (as soon as the server has seen
        # the close).
        conns.pop().close()
        open_served(srv).close()
    finally:
        for c in conns:
            c.close()


def open_served(srv, within_s=10):
    """A connection whose WhoAmI was answered with success, retried while the server still
    counts connections it has not yet seen close."""
    deadline = time.monotonic() + within_s
    while True:
        c = w.RawConnection(srv.host, srv.port)
        try:
            answer = c.request(1, w.whoami())[-1]
            if answer.msgid == 1:
                assert_result(answer, "success")
                return c
        except (w.WireError, ConnectionResetError, BrokenPipeError, socket.timeout):
            pass
        c.close()
        assert time.monotonic() < deadline, "no connection served within the limit"
        time.sleep(0.05)
