"""Several requests in flight on one connection (RFC 4511 section 4.1.1.1): every request
is answered once, under its own message ID, whatever the IDs and their order."""

import random

import pytest

import ldapwire as w
from ldaputil import add_ok, assert_result


@pytest.fixture
def ten(admin, subtree):
    for i in range(10):
        add_ok(admin, f"cn=p{i},{subtree}", {"objectClass": ["person"], "sn": f"s{i}"})
    return subtree


def send_all_then_read(server, requests):
    """Sends every (msgid, op) in one write before reading anything; returns the answers
    grouped by message ID once every request has its final answer."""
    c = w.RawConnection(server.host, server.port, timeout=30)
    try:
        c.send(b"".join(w.message(mid, op) for mid, op in requests))
        pending = {mid for mid, _ in requests}
        by_id = {}
        while pending:
            m = c.recv()
            assert m is not None, f"the server closed the connection with {len(pending)} requests unanswered"
            assert m.msgid in by_id or m.msgid in pending, f"answer for unknown message ID {m.msgid}"
            by_id.setdefault(m.msgid, []).append(m)
            if m.op in w.RESULT_OPS:
                assert m.msgid in pending, f"second final answer for message ID {m.msgid}"
                pending.discard(m.msgid)
        return by_id
    finally:
        c.close()


def test_ten_pipelined_searches(server, ten):
    requests = []
    for i in range(100):
        # Each search names one entry, so each answer shows which request it belongs to.
        requests.append((i + 1, w.search(ten, w.SCOPE_ONE, w.f_eq("sn", f"s{i % 10}"), attrs=["sn"])))
    by_id = send_all_then_read(server, requests)
    assert set(by_id) == set(range(1, 101))
    for mid, answers in by_id.items():
        i = mid - 1
        assert [a.op for a in answers] == [w.SEARCH_ENTRY, w.SEARCH_DONE]
        assert answers[0].dn.lower() == f"cn=p{i % 10},{ten}"
        assert answers[0].attrs["sn"] == [f"s{i % 10}".encode()]
        assert_result(answers[1], "success")


def test_out_of_order_message_ids(server, ten):
    ids = [50, 3, 900, 2, 2147483647, 128, 127, 65536, 1]
    requests = [(mid, w.search(ten, w.SCOPE_ONE, w.f_eq("sn", f"s{k}"), attrs=["1.1"]))
                for k, mid in enumerate(ids)]
    by_id = send_all_then_read(server, requests)
    assert set(by_id) == set(ids)
    for k, mid in enumerate(ids):
        answers = by_id[mid]
        assert [a.op for a in answers] == [w.SEARCH_ENTRY, w.SEARCH_DONE]
        assert answers[0].dn.lower() == f"cn=p{k},{ten}"


def test_mixed_pipelined_operations(server, admin, ten):
    rng = random.Random(7)
    ids = rng.sample(range(1, 1_000_000), 60)
    requests = []
    expect = {}
    for k, mid in enumerate(ids):
        kind = k % 3
        if kind == 0:
            requests.append((mid, w.search(ten, w.SCOPE_SUB, w.f_present("objectClass"), attrs=["1.1"])))
            expect[mid] = ("search", 11)
        elif kind == 1:
            ava = w.seq(w.octets("sn"), w.octets(f"s{k % 10}"))
            requests.append((mid, w.seq(w.octets(f"cn=p{k % 10},{ten}"), ava, tag=0x6E)))
            expect[mid] = ("compare", None)
        else:
            requests.append((mid, w.whoami()))
            expect[mid] = ("whoami", None)
    by_id = send_all_then_read(server, requests)
    assert set(by_id) == set(ids)
    for mid, (kind, n) in expect.items():
        answers = by_id[mid]
        if kind == "search":
            assert len(answers) == n + 1 and all(a.op == w.SEARCH_ENTRY for a in answers[:-1])
            assert_result(answers[-1], "success")
        elif kind == "compare":
            assert [a.op for a in answers] == [w.COMPARE_RESPONSE]
            assert_result(answers[0], "compareTrue")
        else:
            assert [a.op for a in answers] == [w.EXTENDED_RESPONSE]
            assert_result(answers[0], "success")


def test_pipelined_writes_are_all_applied(server, admin, subtree):
    # Adds pipelined on one connection after a bind; each gets its own answer and every
    # entry exists afterwards.
    c = w.RawConnection(server.host, server.port, timeout=30)
    try:
        assert_result(c.request(1, w.bind_simple(server.admin_dn, server.admin_pw))[-1], "success")
        adds = []
        for i in range(50):
            attrs = w.seq(
                w.seq(w.octets("objectClass"), w.seq(w.octets("person"), tag=0x31)),
                w.seq(w.octets("sn"), w.seq(w.octets(f"n{i}"), tag=0x31)),
            )
            adds.append(w.message(100 + i, w.seq(w.octets(f"cn=w{i},{subtree}"), attrs, tag=0x68)))
        c.send(b"".join(adds))
        seen = set()
        while len(seen) < 50:
            m = c.recv()
            assert m is not None
            assert m.op == w.ADD_RESPONSE and m.msgid not in seen
            assert_result(m, "success")
            seen.add(m.msgid)
        assert seen == set(range(100, 150))
    finally:
        c.close()
    admin.search(subtree, "(objectClass=person)", attributes=["1.1"])
    assert len([e for e in admin.response if e["type"] == "searchResEntry"]) == 50


def test_unbind_behind_a_request_answers_it_then_ends_the_stream_cleanly(server):
    # A search and an Unbind in one segment: the search is answered, then the server
    # closes with an orderly end of stream (FIN), not a reset, so a client reading after
    # its Unbind sees EOF.
    c = w.RawConnection(server.host, server.port)
    c.send(w.message(1, w.search("", scope=w.SCOPE_BASE, attrs=["1.1"])) + w.message(2, w.unbind()))
    entry, done = c.recv(), c.recv()
    assert entry.msgid == 1 and entry.op == w.SEARCH_ENTRY
    assert done.msgid == 1 and done.op == w.SEARCH_DONE and done.code == 0
    c.sock.settimeout(10)
    assert c.sock.recv(1) == b""  # ConnectionResetError here would be a reset
    c.close()
