"""Hostile input: every PDU of the shared third-party corpus (see its PROVENANCE.md: PROTOS
c06-ldapv3-enc, Strozhevsky's BER suite, rusticata's ldap-parser assets, the Apache
Directory LDAP API codec tests) sent on a connection of its own.

For each file:
  1. connect and send the file's octets (the server may close before it has read them all);
  2. when the file is exactly one complete TLV, a WhoAmI with message ID SENTINEL_ID
     follows it: the server has dealt with the file once it answers that, or closes;
     otherwise (a truncated or over-long frame) the client half-closes instead, so the
     server sees the end of the stream;
  3. read until the sentinel's answer or the end of the stream, within a deadline;
  4. whatever came back must be well-formed LDAPMessages; a message with ID 0 must be a
     Notice of Disconnection (ExtendedResponse 1.3.6.1.4.1.1466.20036) and be the last.
After all of them the server still takes new connections, and the directory is exactly as
it was before (a dump of every entry with every attribute, compared)."""

import socket
import time

import pytest

import ldapwire as w
from conftest import corpus_dir
from ldaputil import assert_result, connect, dump_subtree

CORPUS = corpus_dir()
# How long one file may keep the server busy before the test calls it a hang.
PER_FILE_DEADLINE_S = 10.0


def corpus_files():
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


SENTINEL_ID = 2147483646


def is_one_complete_tlv(data):
    try:
        _, _, end = w.read_tlv(data, 0)
    except w.WireError:
        return False
    return end == len(data)


def send_one(server, data):
    """Sends data on a fresh connection; returns (messages, sentinel answered, problem or None)."""
    with_sentinel = is_one_complete_tlv(data)
    s = socket.create_connection((server.host, server.port), timeout=PER_FILE_DEADLINE_S)
    deadline = time.monotonic() + PER_FILE_DEADLINE_S
    buf = b""
    messages = []
    sentinel = False
    reset = False
    try:
        try:
            if with_sentinel:
                s.sendall(data + w.message(SENTINEL_ID, w.whoami()))
            else:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server closed first (EPIPE, ECONNRESET, ENOTCONN): allowed, read what it sent
        while not sentinel:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return messages, sentinel, f"neither an answer nor the end of the stream within {PER_FILE_DEADLINE_S}s"
            s.settimeout(remaining)
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                reset = True
                break
            except socket.timeout:
                continue
            if not chunk:
                break
            buf += chunk
            while buf:
                try:
                    _, _, end = w.read_tlv(buf, 0)
                except w.WireError:
                    break  # incomplete so far
                try:
                    m = w.Message(buf[:end])
                except (w.WireError, IndexError, ValueError) as e:
                    return messages, sentinel, f"undecodable LDAPMessage: {e}: {buf[:end][:64].hex()}"
                buf = buf[end:]
                messages.append(m)
                if m.msgid == SENTINEL_ID and m.op == w.EXTENDED_RESPONSE:
                    sentinel = True
    finally:
        s.close()
    if buf and not reset and not sentinel:
        return messages, sentinel, f"the stream ended inside a message: {buf[:64].hex()}"
    for m in messages:
        if m.msgid == 0 and (m.op != w.EXTENDED_RESPONSE or m.response_name != w.NOTICE_OF_DISCONNECTION_OID):
            return messages, sentinel, f"message ID 0 that is not a Notice of Disconnection: {m!r}"
    return messages, sentinel, None


def run_corpus(server):
    """Sends every file; returns [(relative path, messages, sentinel answered, problem)]."""
    out = []
    for f in corpus_files():
        messages, sentinel, problem = send_one(server, f.read_bytes())
        out.append((str(f.relative_to(CORPUS)), messages, sentinel, problem))
        assert server.alive(), f"the server died on {f.relative_to(CORPUS)}"
    return out


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared PDU corpus is absent at {CORPUS} "
                                                "(set LARCH_CORPUS to its directory)")
def test_every_corpus_file(server, admin):
    files = corpus_files()
    assert len(files) > 100, f"only {len(files)} files under {CORPUS}"
    before = dump_subtree(admin, server.base)
    problems = []
    answered = disconnected = survived = 0
    for name, messages, sentinel, problem in run_corpus(server):
        if problem:
            problems.append(f"{name}: {problem}")
        if any(m.msgid == 0 for m in messages):
            disconnected += 1
        if any(m.msgid not in (0, SENTINEL_ID) for m in messages):
            answered += 1
        if sentinel:
            survived += 1
    assert not problems, f"{len(problems)} of {len(files)} files:\n" + "\n".join(problems[:50])
    # Some files are valid requests, so some answers are ordinary ones, and after some the
    # connection goes on.
    assert answered > 0 and survived > 0, (answered, survived, disconnected)
    # The server still serves new connections, and nothing changed.
    c = w.RawConnection(server.host, server.port)
    try:
        assert_result(c.request(1, w.bind_simple())[-1], "success")
        answer = c.request(2, w.search(server.base, w.SCOPE_BASE, attrs=["1.1"]))
        assert_result(answer[-1], "success")
        assert [m.dn for m in answer[:-1]] == [server.base]
    finally:
        c.close()
    admin.unbind()
    fresh = connect(server, server.admin_dn, server.admin_pw)
    assert dump_subtree(fresh, server.base) == before
    fresh.unbind()


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared PDU corpus is absent at {CORPUS}")
@pytest.mark.not_slapd("slapd sends a Notice of Disconnection (protocolError, \"unknown LDAP request\") for an "
                       "unknown protocolOp tag and then keeps the connection and answers the next request")
def test_notice_of_disconnection_ends_the_session(server):
    # RFC 4511 section 4.4.1: after a Notice of Disconnection the server terminates the
    # session, so nothing follows it (in particular no answer to the sentinel).
    late = []
    for name, messages, sentinel, problem in run_corpus(server):
        ids = [m.msgid for m in messages]
        if 0 in ids and ids.index(0) != len(ids) - 1:
            late.append(f"{name}: {ids}")
    assert not late, f"{len(late)} files:\n" + "\n".join(late[:50])
