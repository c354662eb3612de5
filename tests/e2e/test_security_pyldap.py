"""The default security policy seen through python-ldap (OpenLDAP's libldap underneath, as
SSSD, Keycloak's LDAP federation tests and most Python tools use it).

What a fresh server promises without any access rule configured:
  * userPassword is never returned to anyone but the admin: not by search (asked for by
    name or with `*`), not by compare, not by the pre-read and post-read controls;
  * anonymous clients and ordinary users cannot change other entries
    (insufficientAccessRights), a user can change its own password (Password Modify,
    RFC 3062) and then bind with the new one;
  * new passwords are stored hashed.
Each case is probed as anonymous, as the entry itself, as another user and as the admin.
slapd runs with the suite's usual `access to attrs=userPassword by self write by anonymous
auth by * none` rules, in which `write` includes reading one's own password; the cases
that depend on Larch's stricter default are marked.
"""

import ldap
import ldap.controls.readentry
import ldap.extop
import ldap.controls.simple
import pytest

import ldaputil

ALICE_PW = "alice-Secret-1"
BOB_PW = "bob-Secret-2"


def connect(server, who=None, password=None):
    """A python-ldap connection bound as `who` (anonymous if None)."""
    c = ldap.initialize(server.url, bytes_mode=False)
    c.set_option(ldap.OPT_PROTOCOL_VERSION, 3)
    c.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    c.set_option(ldap.OPT_TIMEOUT, 30)
    c.set_option(ldap.OPT_REFERRALS, 0)
    c.simple_bind_s(who or "", password or "")
    return c


@pytest.fixture
def people(server, subtree):
    """Two users (alice, bob) under the test's subtree, made by the admin with cleartext
    passwords; returns (alice_dn, bob_dn)."""
    admin = connect(server, server.admin_dn, server.admin_pw)
    dns = []
    for uid, pw in (("alice", ALICE_PW), ("bob", BOB_PW)):
        dn = f"uid={uid},{subtree}"
        admin.add_s(dn, [
            ("objectClass", [b"inetOrgPerson"]),
            ("uid", [uid.encode()]),
            ("cn", [uid.encode()]),
            ("sn", [uid.upper().encode()]),
            ("mail", [f"{uid}@example.com".encode()]),
            ("userPassword", [pw.encode()]),
        ])
        dns.append(dn)
    admin.unbind_s()
    return tuple(dns)


def read_attrs(conn, dn, attrs):
    """The attributes (lower-cased names) of `dn` returned by a base search for `attrs`."""
    result = conn.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)", attrs)
    assert len(result) == 1, result
    return {k.lower(): v for k, v in result[0][1].items()}


def test_user_password_readable_by_admin_only_through_search(server, people):
    alice, bob = people
    anon = connect(server)
    as_bob = connect(server, bob, BOB_PW)
    admin = connect(server, server.admin_dn, server.admin_pw)
    for conn in (anon, as_bob):
        for attrs in (["userPassword"], ["*"], ["*", "+"], None):
            got = read_attrs(conn, alice, attrs)
            assert "userpassword" not in got, (attrs, got)
        # The rest of the entry stays readable.
        assert read_attrs(conn, alice, ["mail"]) == {"mail": [b"alice@example.com"]}
    got = read_attrs(admin, alice, ["userPassword"])
    assert len(got["userpassword"]) == 1
    for c in (anon, as_bob, admin):
        c.unbind_s()


def test_a_filter_on_user_password_matches_nothing_for_others(server, people):
    alice, _ = people
    anon = connect(server)
    base = alice.split(",", 1)[1]
    # Presence of an attribute the client may not search is Undefined: no entry matches.
    assert anon.search_s(base, ldap.SCOPE_SUBTREE, "(userPassword=*)", ["1.1"]) == []
    admin = connect(server, server.admin_dn, server.admin_pw)
    assert len(admin.search_s(base, ldap.SCOPE_SUBTREE, "(userPassword=*)", ["1.1"])) == 2
    anon.unbind_s()
    admin.unbind_s()


@pytest.mark.larch_only("Larch's default lets a user change but never read its own password; "
                        "the suite's slapd rules say `by self write`, which includes read")
def test_user_password_hidden_from_the_entry_itself(server, people):
    alice, _ = people
    me = connect(server, alice, ALICE_PW)
    assert "userpassword" not in read_attrs(me, alice, ["userPassword"])
    assert "userpassword" not in read_attrs(me, alice, ["*"])
    me.unbind_s()


def test_compare_of_user_password_refused_to_others(server, people):
    alice, bob = people
    for conn in (connect(server), connect(server, bob, BOB_PW)):
        with pytest.raises(ldap.INSUFFICIENT_ACCESS):
            conn.compare_s(alice, "userPassword", ALICE_PW.encode())
        # Other attributes compare as usual.
        assert conn.compare_s(alice, "mail", b"alice@example.com") is True
        conn.unbind_s()


@pytest.mark.larch_only("new passwords are hashed by default; slapd stores them as given "
                        "unless the ppolicy overlay's hash_cleartext is configured")
def test_new_passwords_are_stored_hashed(server, people):
    alice, _ = people
    admin = connect(server, server.admin_dn, server.admin_pw)
    stored = read_attrs(admin, alice, ["userPassword"])["userpassword"][0]
    assert stored != ALICE_PW.encode()
    assert stored.startswith(b"{ARGON2}"), stored
    admin.unbind_s()


def test_writes_by_anonymous_and_other_users_are_refused(server, people):
    alice, bob = people
    anon = connect(server)
    expected = ldap.STRONG_AUTH_REQUIRED if server.kind == "slapd" else ldap.INSUFFICIENT_ACCESS
    with pytest.raises(expected):
        anon.modify_s(alice, [(ldap.MOD_REPLACE, "mail", [b"x@example.com"])])
    with pytest.raises(expected):
        anon.add_s(f"uid=eve,{alice.split(',', 1)[1]}", [
            ("objectClass", [b"inetOrgPerson"]), ("uid", [b"eve"]), ("cn", [b"eve"]), ("sn", [b"E"])])
    as_bob = connect(server, bob, BOB_PW)
    with pytest.raises(ldap.INSUFFICIENT_ACCESS):
        as_bob.modify_s(alice, [(ldap.MOD_REPLACE, "mail", [b"x@example.com"])])
    with pytest.raises(ldap.INSUFFICIENT_ACCESS):
        as_bob.modify_s(alice, [(ldap.MOD_REPLACE, "userPassword", [b"stolen"])])
    with pytest.raises(ldap.INSUFFICIENT_ACCESS):
        as_bob.delete_s(alice)
    # Nothing changed.
    admin = connect(server, server.admin_dn, server.admin_pw)
    assert read_attrs(admin, alice, ["mail"]) == {"mail": [b"alice@example.com"]}
    for c in (anon, as_bob, admin):
        c.unbind_s()
    connect(server, alice, ALICE_PW).unbind_s()


def test_self_password_change_with_password_modify(server, people):
    alice, _ = people
    me = connect(server, alice, ALICE_PW)
    me.passwd_s(alice, ALICE_PW, "alice-New-3")
    me.unbind_s()
    connect(server, alice, "alice-New-3").unbind_s()
    with pytest.raises(ldap.INVALID_CREDENTIALS):
        connect(server, alice, ALICE_PW)


def test_password_modify_generates_a_password_for_the_admin(server, people):
    alice, _ = people
    admin = connect(server, server.admin_dn, server.admin_pw)
    # python-ldap 3.4's extract_newpw trips over its own response class: read the value
    # (RFC 3062: SEQUENCE { genPasswd [0] OCTET STRING }) here.
    _, value = admin.passwd_s(alice, None, None)
    admin.unbind_s()
    generated = gen_passwd(value)
    assert len(generated) >= 8
    connect(server, alice, generated.decode()).unbind_s()


def gen_passwd(value):
    """genPasswd from a PasswdModifyResponseValue with short (< 128 octet) lengths."""
    assert value[0] == 0x30 and value[1] == len(value) - 2, value
    assert value[2] == 0x80 and value[3] == len(value) - 4, value
    return value[4:]


def test_password_modify_of_another_user_is_refused(server, people):
    alice, bob = people
    as_bob = connect(server, bob, BOB_PW)
    with pytest.raises(ldap.INSUFFICIENT_ACCESS):
        as_bob.passwd_s(alice, None, "taken-over")
    as_bob.unbind_s()
    connect(server, alice, ALICE_PW).unbind_s()


@pytest.mark.larch_only("under the suite's slapd rules `by self write` lets a user read its "
                        "own password back through the post-read control")
def test_read_entry_controls_never_carry_user_password(server, people):
    alice, _ = people
    me = connect(server, alice, ALICE_PW)
    pre = ldap.controls.readentry.PreReadControl(criticality=True, attrList=["userPassword", "uid"])
    post = ldap.controls.readentry.PostReadControl(criticality=True, attrList=["userPassword", "uid"])
    _, _, _, controls = me.modify_ext_s(alice, [(ldap.MOD_REPLACE, "userPassword", [b"alice-Next-4"])],
                                        serverctrls=[pre, post])
    seen = {c.controlType: {k.lower(): v for k, v in c.entry.items()} for c in controls}
    assert set(seen) == {pre.controlType, post.controlType}
    for attrs in seen.values():
        assert attrs.get("uid") == [b"alice"]
        assert "userpassword" not in attrs
    me.unbind_s()
    # The admin sees the value through the same controls.
    admin = connect(server, server.admin_dn, server.admin_pw)
    _, _, _, controls = admin.modify_ext_s(alice, [(ldap.MOD_REPLACE, "description", [b"seen"])],
                                           serverctrls=[ldap.controls.readentry.PostReadControl(
                                               criticality=True, attrList=["userPassword"])])
    assert "userPassword" in {k for c in controls for k in c.entry} or \
        "userpassword" in {k.lower() for c in controls for k in c.entry}
    admin.unbind_s()


@pytest.mark.larch_only("slapd needs authz-policy and authzTo values for proxied authorization")
def test_proxied_authorization_by_the_admin_and_by_a_user(server, people):
    alice, bob = people
    admin = connect(server, server.admin_dn, server.admin_pw)
    as_alice = ldap.controls.simple.ProxyAuthzControl(criticality=True, authzId=f"dn:{alice}".encode())
    # As alice, the admin sees what alice sees: no userPassword of bob.
    got = admin.search_ext_s(bob, ldap.SCOPE_BASE, "(objectClass=*)", ["userPassword", "uid"],
                             serverctrls=[as_alice])
    attrs = {k.lower() for k in got[0][1]}
    assert attrs == {"uid"}, attrs
    # and cannot change bob's entry.
    with pytest.raises(ldap.INSUFFICIENT_ACCESS):
        admin.modify_ext_s(bob, [(ldap.MOD_REPLACE, "mail", [b"x@example.com"])], serverctrls=[as_alice])
    # WhoAmI answers the assumed identity (RFC 4532 section 2).
    # (python-ldap's whoami_s passes its controls on unconverted, hence extop_s.)
    _, value = admin.extop_s(ldap.extop.ExtendedRequest("1.3.6.1.4.1.4203.1.11.3", None), serverctrls=[as_alice])
    assert value.decode().lower() == f"dn:{alice}".lower()
    # Password Modify runs as alice: her own password, with the old one; not bob's.
    admin.passwd_s(alice, ALICE_PW, "alice-Proxied-9", serverctrls=[as_alice])
    connect(server, alice, "alice-Proxied-9").unbind_s()
    with pytest.raises(ldap.INSUFFICIENT_ACCESS):
        admin.passwd_s(bob, None, "bob-Proxied-9", serverctrls=[as_alice])
    # Cancel does not run as another identity: the control is refused.
    with pytest.raises(ldap.UNAVAILABLE_CRITICAL_EXTENSION):
        admin.cancel_s(12345, serverctrls=[as_alice])
    admin.unbind_s()
    # A user without the proxy right is refused with proxiedAuthorizationDenied (123).
    me = connect(server, bob, BOB_PW)
    with pytest.raises(ldap.PROXIED_AUTHORIZATION_DENIED):
        me.search_ext_s(alice, ldap.SCOPE_BASE, "(objectClass=*)", ["uid"], serverctrls=[as_alice])
    me.unbind_s()
