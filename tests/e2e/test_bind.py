"""Bind (RFC 4511 section 4.2, RFC 4513 section 5.1): anonymous, unauthenticated, simple with
the admin's and a user's password, wrong passwords and unknown names, rebinding, version 2."""

import ldapwire
from ldaputil import add_ok, assert_diagnostic, assert_result, connect


def whoami(conn):
    conn.extended(ldapwire.WHOAMI_OID)
    assert_result(conn, "success")
    return (conn.result.get("responseValue") or b"").decode("utf-8")


def test_anonymous_bind_succeeds(server):
    conn = connect(server)
    assert_result(conn, "success")
    assert whoami(conn) == ""
    conn.unbind()


def test_unauthenticated_bind_is_refused(server):
    # A name with an empty password (RFC 4513 section 5.1.2). ldap3 refuses to send it, so
    # it goes on the wire by hand.
    c = ldapwire.RawConnection(server.host, server.port)
    try:
        answer = c.request(1, ldapwire.bind_simple(server.admin_dn, ""))[-1]
        assert answer.op == ldapwire.BIND_RESPONSE
        assert_result(answer, "unwillingToPerform")
        assert answer.diag
        # The connection is still usable and anonymous.
        answer = c.request(2, ldapwire.whoami())[-1]
        assert_result(answer, "success")
        assert (answer.response_value or b"") == b""
    finally:
        c.close()


def test_admin_bind_with_right_password(server):
    conn = connect(server, server.admin_dn, server.admin_pw)
    assert_result(conn, "success")
    assert whoami(conn).lower() == f"dn:{server.admin_dn}"
    conn.unbind()


def test_admin_bind_with_wrong_password(server):
    conn = connect(server, server.admin_dn, server.admin_pw + "x")
    assert_result(conn, "invalidCredentials")
    assert whoami(conn) == ""
    conn.unbind()


def test_user_bind_with_plain_user_password(server, admin, subtree):
    dn = f"uid=alice,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "alice", "cn": "Alice Liddell",
                       "sn": "Liddell", "userPassword": "wonderland"})
    conn = connect(server, dn, "wonderland")
    assert_result(conn, "success")
    assert whoami(conn).lower() == f"dn:{dn}".lower()
    conn.unbind()
    conn = connect(server, dn, "looking-glass")
    assert_result(conn, "invalidCredentials")
    conn.unbind()


def test_user_without_password_cannot_bind(server, admin, subtree):
    dn = f"uid=nopw,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "nopw", "cn": "No Password", "sn": "Password"})
    conn = connect(server, dn, "anything")
    assert_result(conn, "invalidCredentials")
    conn.unbind()


def test_unknown_dn_gives_invalid_credentials_without_hint(server):
    unknown = connect(server, f"cn=nobody,{server.base}", "whatever")
    assert_result(unknown, "invalidCredentials")
    wrong = connect(server, server.admin_dn, "whatever")
    assert_result(wrong, "invalidCredentials")
    # Nothing tells an unknown name from a wrong password: same code, same matchedDN,
    # same message.
    assert unknown.result["dn"] == wrong.result["dn"] == ""
    assert unknown.result["message"] == wrong.result["message"]
    unknown.unbind()
    wrong.unbind()


def test_unknown_dn_outside_the_naming_context(server):
    conn = connect(server, "cn=nobody,o=elsewhere", "whatever")
    assert_result(conn, "invalidCredentials")
    conn.unbind()


def test_rebind_changes_identity(server, admin, subtree):
    dn = f"uid=bob,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "bob", "cn": "Bob", "sn": "Builder",
                       "userPassword": "can-we-fix-it"})
    conn = connect(server, server.admin_dn, server.admin_pw)
    assert whoami(conn).lower() == f"dn:{server.admin_dn}"
    assert conn.rebind(user=dn, password="can-we-fix-it") is True
    assert_result(conn, "success")
    assert whoami(conn).lower() == f"dn:{dn}".lower()
    # A failed bind leaves the connection anonymous (RFC 4511 section 4.2.1).
    conn.rebind(user=dn, password="no-we-cannot")
    assert_result(conn, "invalidCredentials")
    assert whoami(conn) == ""
    conn.unbind()


def test_rebind_to_anonymous(server):
    c = ldapwire.RawConnection(server.host, server.port)
    try:
        assert_result(c.request(1, ldapwire.bind_simple(server.admin_dn, server.admin_pw))[-1], "success")
        assert c.request(2, ldapwire.whoami())[-1].response_value.decode().lower() == f"dn:{server.admin_dn}"
        assert_result(c.request(3, ldapwire.bind_simple("", ""))[-1], "success")
        assert (c.request(4, ldapwire.whoami())[-1].response_value or b"") == b""
    finally:
        c.close()


def test_bind_version_2_is_a_protocol_error(server):
    # ldap3 sends the version it is given.
    conn = connect(server, server.admin_dn, server.admin_pw, version=2)
    assert_result(conn, "protocolError")
    assert_diagnostic(conn)
    conn.unbind()


def test_bind_unknown_version_is_a_protocol_error(server):
    c = ldapwire.RawConnection(server.host, server.port)
    try:
        answer = c.request(1, ldapwire.bind_simple(server.admin_dn, server.admin_pw, version=4))[-1]
        assert answer.op == ldapwire.BIND_RESPONSE
        assert_result(answer, "protocolError")
    finally:
        c.close()


def test_sasl_unknown_mechanism(server):
    # SaslCredentials [3] with a mechanism nobody implements.
    sasl = ldapwire.seq(ldapwire.octets("X-NO-SUCH-MECHANISM"), tag=0xA3)
    bind = ldapwire.seq(ldapwire.integer(3), ldapwire.octets(""), sasl, tag=0x60)
    c = ldapwire.RawConnection(server.host, server.port)
    try:
        answer = c.request(1, bind)[-1]
        assert answer.op == ldapwire.BIND_RESPONSE
        assert_result(answer, "authMethodNotSupported")
    finally:
        c.close()
