"""Extended operations (RFC 4511 section 4.12): WhoAmI (RFC 4532), Cancel (RFC 3909) and
an unknown request name."""

import pytest

import ldapwire as w
from ldaputil import ATTEMPTS, RESULT_NAMES, add_ok, assert_result, connect, stalled_search


def test_whoami_anonymous(anon):
    anon.extended(w.WHOAMI_OID)
    assert_result(anon, "success")
    assert (anon.result.get("responseValue") or b"") == b""


def test_whoami_admin(server, admin):
    admin.extended(w.WHOAMI_OID)
    assert_result(admin, "success")
    assert admin.result["responseValue"].decode().lower() == f"dn:{server.admin_dn}"


def test_whoami_user(server, admin, subtree):
    dn = f"uid=who,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "who", "cn": "Who", "sn": "Who",
                       "userPassword": "who-pw"})
    conn = connect(server, dn, "who-pw")
    conn.extended(w.WHOAMI_OID)
    assert_result(conn, "success")
    assert conn.result["responseValue"].decode().lower() == f"dn:{dn}"
    conn.unbind()


def test_whoami_with_a_value_is_a_protocol_error(server):
    c = w.RawConnection(server.host, server.port)
    try:
        answer = c.request(1, w.extended(w.WHOAMI_OID, b"unexpected"))[-1]
        assert answer.op == w.EXTENDED_RESPONSE
        assert_result(answer, "protocolError")
    finally:
        c.close()


def test_unknown_extended_operation(admin):
    admin.extended("1.3.6.1.4.1.99999.1.2.3")
    assert_result(admin, "protocolError")
    # The connection goes on.
    admin.extended(w.WHOAMI_OID)
    assert_result(admin, "success")


def test_cancel_a_running_search(server, bulk):
    base, n = bulk
    for attempt in range(ATTEMPTS):
        c, got = stalled_search(server, base)
        try:
            c.send(w.message(3, w.cancel(2)))
            while True:
                m = c.recv()
                assert m is not None, "the server closed the connection"
                got.append(m)
                if m.msgid == 3:
                    break
            done = [m for m in got if m.msgid == 2 and m.op == w.SEARCH_DONE]
            cancel = got[-1]
            assert cancel.op == w.EXTENDED_RESPONSE
            assert len(done) == 1, "the canceled search must end with exactly one SearchResultDone"
            if done[0].code == 0:
                # The search ended before the Cancel arrived: then Cancel has nothing to cancel.
                assert RESULT_NAMES.get(cancel.code) in ("noSuchOperation", "tooLate"), cancel.code
                continue
            assert_result(done[0], "canceled")
            assert_result(cancel, "success")
            entries = [m for m in got if m.msgid == 2 and m.op == w.SEARCH_ENTRY]
            assert len(entries) < n
            # Nothing else of msgid 2 comes, and the connection goes on.
            rest = c.request(4, w.whoami())
            assert [m.msgid for m in rest] == [4]
            assert_result(rest[-1], "success")
            return
        finally:
            c.close()
    pytest.fail(f"the search finished before the Cancel arrived in {ATTEMPTS} attempts")


def test_cancel_unknown_message_id(server):
    c = w.RawConnection(server.host, server.port)
    try:
        answer = c.request(1, w.cancel(777))[-1]
        assert answer.op == w.EXTENDED_RESPONSE
        assert_result(answer, "noSuchOperation")
    finally:
        c.close()


def test_cancel_a_finished_operation(server):
    c = w.RawConnection(server.host, server.port)
    try:
        assert_result(c.request(1, w.whoami())[-1], "success")
        answer = c.request(2, w.cancel(1))[-1]
        assert_result(answer, "noSuchOperation")
    finally:
        c.close()


def test_cancel_without_a_value(server):
    c = w.RawConnection(server.host, server.port)
    try:
        answer = c.request(1, w.extended(w.CANCEL_OID))[-1]
        assert answer.op == w.EXTENDED_RESPONSE
        assert_result(answer, "protocolError")
    finally:
        c.close()
