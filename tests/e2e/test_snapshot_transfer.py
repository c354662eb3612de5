"""Larch's snapshot transfer extended operation (docs/replication.md, "Starting a replica
from a snapshot"): the provider sends the snapshot file itself, piece by piece, each with
its CRC-32C; the file received is a snapshot another Larch server starts from, holding
the same entries with the same entryUUIDs. Only the administrator may ask.

Read with the raw wire client: the operation is Larch's own (slapd has none).
"""

import shutil
import tempfile
from pathlib import Path

import ldap3
import pytest

import conftest
import ldapwire
from ldaputil import add_ok, connect

pytestmark = pytest.mark.larch_only("Larch's own extended operation")

SNAPSHOT_TRANSFER = "2.25.268705614682925665270291760309126455850.1.2"
PEOPLE = 400


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


@pytest.fixture(scope="module")
def provider(request):
    def setup(srv):
        conn = connect(srv, srv.admin_dn, srv.admin_pw)
        add_ok(conn, f"ou=people,{conftest.BASE}", {"objectClass": ["organizationalUnit"], "ou": "people"})
        for i in range(PEOPLE):
            add_ok(conn, f"uid=p{i},ou=people,{conftest.BASE}",
                   {"objectClass": ["inetOrgPerson"], "uid": f"p{i}", "cn": f"P {i}", "sn": "P",
                    "description": "x" * 500})
        conn.unbind()

    yield from conftest.module_server(request, "larch-e2e-snapxfer-", setup=setup)


def transfer(srv, who=None, password=None, value=None):
    """(pieces [(offset, data, crc)], the final Message, lsn, octets)."""
    c = ldapwire.RawConnection(srv.host, srv.port, timeout=60)
    try:
        bound = c.request(1, ldapwire.bind_simple(who or srv.admin_dn, password or srv.admin_pw))
        assert bound[-1].code == 0
        c.send(ldapwire.message(2, ldapwire.extended(SNAPSHOT_TRANSFER, value)))
        pieces = []
        while True:
            m = c.recv()
            assert m is not None, "the connection closed before the transfer ended"
            if m.op == ldapwire.INTERMEDIATE_RESPONSE:
                pieces.append(piece_of(m))
                continue
            assert m.op == ldapwire.EXTENDED_RESPONSE
            lsn = octets = None
            if m.code == 0:
                _, done, _ = ldapwire.read_tlv(m.response_value, 0)
                fields = dict(ldapwire.children(done))
                lsn, octets = ldapwire.to_int(fields[0x80]), ldapwire.to_int(fields[0x81])
            return pieces, m, lsn, octets
    finally:
        c.close()


def piece_of(message):
    _, content, _ = ldapwire.read_tlv(message.raw, 0)
    body = ldapwire.children(content)[1][1]
    parts = dict(ldapwire.children(body))
    assert parts[0x80].decode() == SNAPSHOT_TRANSFER
    _, piece, _ = ldapwire.read_tlv(parts[0x81], 0)
    fields = dict(ldapwire.children(piece))
    return ldapwire.to_int(fields[0x80]), fields[0x81], ldapwire.to_int(fields[0x82])


def everything(srv):
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    conn.search(conftest.BASE, "(objectClass=*)", ldap3.SUBTREE, attributes=["entryUUID", "entryCSN", "description"])
    out = {e["dn"].lower(): e["raw_attributes"] for e in conn.response if e["type"] == "searchResEntry"}
    conn.unbind()
    return out


def test_the_file_received_is_a_snapshot_another_server_starts_from(provider, request):
    pieces, done, lsn, octets = transfer(provider)
    assert done.code == 0, done.diag
    assert pieces, "no piece"
    offset = 0
    for at, data, crc in pieces:
        assert at == offset
        assert crc32c(data) == crc
        offset += len(data)
    assert offset == octets
    assert lsn > 0
    work = Path(tempfile.mkdtemp(prefix="larch-e2e-snapfrom-"))
    try:
        snapshots = work / "data" / "snapshots"
        snapshots.mkdir(parents=True)
        (snapshots / f"snapshot-{lsn:016x}.snap").write_bytes(b"".join(d for _, d, _ in pieces))
        replica = conftest.LdapServer("larch", work, larch_bin=request.config.getoption("--larch-bin"))
        replica.start()
        try:
            want = everything(provider)
            got = everything(replica)
            assert len(got) == len(want) >= PEOPLE + 3
            for dn, attrs in want.items():
                assert got[dn]["entryUUID"] == attrs["entryUUID"], dn
                assert got[dn]["entryCSN"] == attrs["entryCSN"], dn
        finally:
            assert replica.stop() == 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_only_the_administrator_may_ask(provider):
    conn = connect(provider, provider.admin_dn, provider.admin_pw)
    dn = f"uid=plain,{conftest.BASE}"
    add_ok(conn, dn, {"objectClass": ["inetOrgPerson"], "uid": "plain", "cn": "p", "sn": "p",
                      "userPassword": "Plain-Secret-1"})
    conn.unbind()
    pieces, done, _, _ = transfer(provider, dn, "Plain-Secret-1")
    assert (pieces, done.code) == ([], 50)
    assert done.diag


def test_a_request_with_a_value_is_a_protocol_error(provider):
    pieces, done, _, _ = transfer(provider, value=b"\x04\x00")
    assert (pieces, done.code) == ([], 2)
