"""Abandon (RFC 4511 section 4.11): a search in flight stops, nothing more is sent for it
(entries already sent are allowed), and the connection goes on."""

import pytest

import ldapwire as w
from ldaputil import ATTEMPTS, assert_result, stalled_search


def test_abandon_a_running_search(server, bulk):
    base, n = bulk
    for attempt in range(ATTEMPTS):
        c, got = stalled_search(server, base)
        try:
            c.send(w.message(3, w.abandon(2)) + w.message(4, w.whoami()))
            while True:
                m = c.recv()
                assert m is not None, "the server closed the connection"
                got.append(m)
                if m.msgid == 4:
                    break
            if any(m.msgid == 2 and m.op == w.SEARCH_DONE for m in got):
                # The search ended before the Abandon arrived; try again.
                assert len([m for m in got if m.msgid == 2 and m.op == w.SEARCH_ENTRY]) >= min(n, 500)
                continue
            assert_result(got[-1], "success")
            assert {m.msgid for m in got} <= {2, 4}
            assert all(m.op == w.SEARCH_ENTRY for m in got if m.msgid == 2)
            # Another round trip: still no SearchResultDone for the abandoned search.
            more = c.request(5, w.search(server.base, w.SCOPE_BASE, attrs=["1.1"]))
            assert [m.msgid for m in more if m.msgid != 2] == [5, 5]
            assert not any(m.msgid == 2 and m.op != w.SEARCH_ENTRY for m in more)
            assert_result(more[-1], "success")
            return
        finally:
            c.close()
    pytest.fail(f"the search finished before the Abandon arrived in {ATTEMPTS} attempts")


def test_abandon_unknown_message_id_is_ignored(server):
    c = w.RawConnection(server.host, server.port)
    try:
        c.send(w.message(1, w.abandon(999)))
        answer = c.request(2, w.whoami())
        # No answer to the Abandon: the first message is the WhoAmI response.
        assert [m.msgid for m in answer] == [2]
        assert_result(answer[-1], "success")
    finally:
        c.close()


def test_abandon_a_finished_search_is_ignored(server):
    c = w.RawConnection(server.host, server.port)
    try:
        first = c.request(1, w.search(server.base, w.SCOPE_BASE, attrs=["1.1"]))
        assert_result(first[-1], "success")
        c.send(w.message(2, w.abandon(1)))
        answer = c.request(3, w.whoami())
        assert [m.msgid for m in answer] == [3]
    finally:
        c.close()
