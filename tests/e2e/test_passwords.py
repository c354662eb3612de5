"""Passwords: the Password Modify extended operation (RFC 3062) with OpenLDAP's ldappasswd and
ldap3, binds against userPassword values in the storage schemes of other servers, how new
values are stored, a password change by Modify (delete the old value, add the new), and the
failed-bind throttle."""

import threading
import time

import pytest

import ldapwire as w
from ldaputil import add_ok, assert_diagnostic, assert_result, connect, run_tool, search_entries, values

PASSWORD_MODIFY_OID = "1.3.6.1.4.1.4203.1.11.1"


def person(admin, dn, password):
    uid = dn.split(",")[0].split("=")[1]
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": uid, "cn": uid, "sn": uid,
                       "userPassword": password})


def binds(server, dn, password):
    """True when a simple bind with dn/password succeeds (and says which failure otherwise)."""
    conn = connect(server, dn, password)
    ok = conn.result["result"] == 0
    if not ok:
        assert_result(conn, "invalidCredentials")
    conn.unbind()
    return ok


def stored_passwords(admin, dn):
    _, entries = search_entries(admin, dn, scope="BASE", attrs=["userPassword"])
    assert len(entries) == 1
    return values(entries[0], "userPassword")


def test_password_modify_is_advertised(anon):
    result, entries = search_entries(anon, "", scope="BASE", attrs=["supportedExtension"])
    assert_result(result, "success")
    assert PASSWORD_MODIFY_OID in values(entries[0], "supportedExtension")


def test_ldappasswd_self_change_with_old_password(server, admin, subtree):
    dn = f"uid=self,{subtree}"
    person(admin, dn, "old-pw")
    p = run_tool(["ldappasswd", "-x", "-H", server.url, "-D", dn, "-w", "old-pw", "-a", "old-pw", "-s", "new-pw"])
    assert p.returncode == 0, p.stderr
    assert binds(server, dn, "new-pw")
    assert not binds(server, dn, "old-pw")
    # A wrong old password: unwillingToPerform (53), as slapd answers, and nothing changes.
    p = run_tool(["ldappasswd", "-x", "-H", server.url, "-D", dn, "-w", "new-pw", "-a", "wrong", "-s", "x-pw"])
    # ldappasswd exits 1 on any failure and prints the result code.
    assert p.returncode != 0 and "(53)" in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert binds(server, dn, "new-pw")


def test_ldappasswd_admin_reset(server, admin, subtree):
    dn = f"uid=reset,{subtree}"
    person(admin, dn, "forgotten")
    p = run_tool(["ldappasswd", "-x", "-H", server.url, "-D", server.admin_dn, "-w", server.admin_pw,
                  "-s", "reset-pw", dn])
    assert p.returncode == 0, p.stderr
    assert binds(server, dn, "reset-pw")
    assert not binds(server, dn, "forgotten")


def test_ldappasswd_generated_password(server, admin, subtree):
    dn = f"uid=gen,{subtree}"
    person(admin, dn, "gen-pw")
    p = run_tool(["ldappasswd", "-x", "-H", server.url, "-D", dn, "-w", "gen-pw"])
    assert p.returncode == 0, p.stderr
    lines = [line for line in p.stdout.splitlines() if line.startswith("New password: ")]
    assert len(lines) == 1, p.stdout
    generated = lines[0][len("New password: "):]
    assert len(generated) >= 8
    assert binds(server, dn, generated)
    assert not binds(server, dn, "gen-pw")


def test_ldap3_modify_password(server, admin, subtree):
    dn = f"uid=l3,{subtree}"
    person(admin, dn, "l3-old")
    conn = connect(server, dn, "l3-old")
    assert conn.extend.standard.modify_password(user=dn, old_password="l3-old", new_password="l3-new") is True
    assert_result(conn, "success")
    # Without a new password the server generates one and returns it.
    generated = conn.extend.standard.modify_password(old_password="l3-new")
    assert_result(conn, "success")
    assert isinstance(generated, str) and len(generated) >= 8
    conn.unbind()
    assert binds(server, dn, generated)
    assert not binds(server, dn, "l3-new")


def test_password_modify_refusals(server, anon, admin, subtree):
    alice, bob = f"uid=alice,{subtree}", f"uid=bob,{subtree}"
    person(admin, alice, "alice-pw")
    person(admin, bob, "bob-pw")
    # Anonymous: strongerAuthRequired (8), as slapd.
    anon.extend.standard.modify_password(user=alice, new_password="x")
    assert_result(anon, "strongerAuthRequired")
    assert_diagnostic(anon)
    # Someone else's password: insufficientAccessRights (50).
    conn = connect(server, alice, "alice-pw")
    conn.extend.standard.modify_password(user=bob, new_password="stolen")
    assert_result(conn, "insufficientAccessRights")
    conn.unbind()
    assert binds(server, bob, "bob-pw")


def test_password_change_by_modify_delete_old_add_new(server, admin, subtree):
    dn = f"uid=mod,{subtree}"
    person(admin, dn, "mod-old")
    conn = connect(server, dn, "mod-old")
    conn.modify(dn, {"userPassword": [("MODIFY_DELETE", ["mod-old"]), ("MODIFY_ADD", ["mod-new"])]})
    assert_result(conn, "success")
    conn.unbind()
    assert binds(server, dn, "mod-new")
    assert not binds(server, dn, "mod-old")
    assert len(stored_passwords(admin, dn)) == 1


CORE_SCHEMES = [
    # slappasswd -h ... -s secret (OpenLDAP 2.5.13); schemes every slapd verifies.
    "{SSHA}ByikAYY/7TGVhG/VqOpB0RGKQit+OZI0",
    "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
    "{SMD5}2AtGWofT9s8/i7kWOyY2uAJaf+c=",
    "{CRYPT}$6$A1BU4EX3dE1Zssrv$tMvu95xenbk9MIjvx6T3qPcM3vyhDgnKw9PX3Xiz9FFDBXIe3MfeJvXqc3UbWfWGYJxAMbHiYVQeBUxEF4j3y.",
]
MODULE_SCHEMES = [
    # Schemes slapd verifies only with modules loaded (pw-sha2, pw-pbkdf2, argon2), and
    # 389-ds's and bcrypt values.
    "{SSHA512}dLVfyYp0GzGAHzd7Rvu3VrzMbHsvVCks9vSsX/YnvrfksK2YgwsW2FrlcM+aghXDhAsUcixlPQtf+ilauvRsAYPxWvgNpaw2",
    "{PBKDF2-SHA512}10000$wvS9xzvR0YaEbjmVNYUDpQ$2DDzdD6ObcN7FBQIYjwlqKOHUAsUS2PUmEuCke9MBVuip7tXyix"
    ".WQYjtvW7OoUf7xotAtc8VveP8KyccvifLQ",
    "{ARGON2}$argon2i$v=19$m=4096,t=3,p=1$375kujZoL5SYmukemNokBA$G1bmELYeux0qW+eSiSqNQVDE3Urybz5q1yyVuFO6mKI",
    "{CRYPT}$2b$08$KtsenlEfHfZQRZLk5jD8ZuzXJpiOwRy7CBvxxz7.nUPqLdK.g9Xs2",
]


@pytest.mark.parametrize("stored", CORE_SCHEMES)
def test_bind_against_values_stored_by_the_admin(server, admin, subtree, stored):
    dn = f"uid=scheme,{subtree}"
    person(admin, dn, stored)
    assert binds(server, dn, "secret")
    assert not binds(server, dn, "Secret")


@pytest.mark.larch_only("slapd verifies these only with modules this configuration does not load")
@pytest.mark.parametrize("stored", MODULE_SCHEMES)
def test_bind_against_module_schemes(server, admin, subtree, stored):
    dn = f"uid=scheme,{subtree}"
    person(admin, dn, stored)
    assert stored_passwords(admin, dn) == [stored], "the admin's pre-hashed value is stored as given"
    assert binds(server, dn, "secret")
    assert not binds(server, dn, "secret2")


@pytest.mark.larch_only("slapd without the ppolicy overlay stores userPassword as given")
def test_new_entry_password_is_stored_hashed(server, admin, subtree):
    dn = f"uid=hashed,{subtree}"
    person(admin, dn, "plain-pw")
    stored = stored_passwords(admin, dn)
    assert len(stored) == 1 and stored[0].startswith("{ARGON2}$argon2id$v=19$m=19456,t=2,p=1$"), stored
    assert binds(server, dn, "plain-pw")
    # Password Modify stores the default scheme too.
    p = run_tool(["ldappasswd", "-x", "-H", server.url, "-D", dn, "-w", "plain-pw", "-s", "other-pw"])
    assert p.returncode == 0, p.stderr
    stored = stored_passwords(admin, dn)
    assert len(stored) == 1 and stored[0].startswith("{ARGON2}$argon2id$"), stored


@pytest.mark.larch_only("slapd without the ppolicy overlay stores any value as given")
def test_pre_hashed_value_from_a_user_is_refused(server, admin, subtree):
    dn = f"uid=prehash,{subtree}"
    person(admin, dn, "mine")
    conn = connect(server, dn, "mine")
    conn.modify(dn, {"userPassword": [("MODIFY_REPLACE", [CORE_SCHEMES[0]])]})
    assert_result(conn, "constraintViolation")
    assert_diagnostic(conn)
    conn.unbind()
    assert binds(server, dn, "mine")


@pytest.mark.larch_only("the failed-bind throttle is Larch's ([bind_throttle])")
def test_failed_binds_hold_back_and_refuse_further_binds(make_extra_server):
    srv = make_extra_server(larch_extra_toml='[bind_throttle]\nmax_failures = 2\n'
                                             'initial_delay = "3s"\nmax_delay = "3s"\n')
    # Two wrong passwords from 127.0.0.1 (loopback is not exempt by default).
    for _ in range(2):
        assert not binds(srv, srv.admin_dn, "wrong")
    # The next bind is held back about 3 s before its password is checked. A second bind
    # sent meanwhile on another connection would have to wait 6 s, above max_delay: it is
    # refused at once with unwillingToPerform, without its password being looked at. Which
    # of the two the server takes first is its choice: one succeeds, the other is refused.
    first = w.RawConnection(srv.host, srv.port, timeout=20)
    second = w.RawConnection(srv.host, srv.port, timeout=20)
    try:
        answers = {}

        def bind_on(name, conn):
            answers[name] = conn.request(1, w.bind_simple(srv.admin_dn, srv.admin_pw))[-1]

        threads = [threading.Thread(target=bind_on, args=(n, c)) for n, c in (("first", first), ("second", second))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(answers) == ["first", "second"], answers
        by_code = sorted(answers.values(), key=lambda m: m.code)
        assert all(m.op == w.BIND_RESPONSE for m in by_code)
        assert_result(by_code[0], "success")
        assert_result(by_code[1], "unwillingToPerform")
        assert "try again" in by_code[1].diag
    finally:
        first.close()
        second.close()


# The delay of the throttle in the next test: long enough that a bind held back by it is
# told apart from one answered at once.
THROTTLE_DELAY_S = 2
# Failed binds sent at once at one account.
FAILED_BURST = 30
# "At once": well under THROTTLE_DELAY_S.
AT_ONCE_S = 1.0


def timed_bind(srv, dn, password):
    """A simple bind on a new connection: (the BindResponse, seconds it took)."""
    c = w.RawConnection(srv.host, srv.port, timeout=30)
    try:
        started = time.monotonic()
        answer = c.request(1, w.bind_simple(dn, password))[-1]
        return answer, time.monotonic() - started
    finally:
        c.close()


@pytest.mark.larch_only("the failed-bind throttle is Larch's ([bind_throttle])")
def test_failed_binds_at_one_account_do_not_hold_back_another(make_extra_server):
    """A burst of wrong passwords for uid=x from 127.0.0.1; then the admin's binds with the
    right password from the same address, four at once, all succeed at once, while guesses
    at uid=x stay held back."""
    srv = make_extra_server(larch_extra_toml=f'[bind_throttle]\ninitial_delay = "{THROTTLE_DELAY_S}s"\n'
                                             f'max_delay = "{THROTTLE_DELAY_S}s"\n')
    admin = connect(srv, srv.admin_dn, srv.admin_pw)
    x = f"uid=x,{srv.base}"
    person(admin, x, "right")
    admin.unbind()
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(timed_bind(srv, x, "wrong")[0]))
               for _ in range(FAILED_BURST)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(answers) == FAILED_BURST
    assert all(a.code in (49, 53) for a in answers), [a.code for a in answers]
    assert any(a.code == 49 for a in answers)

    admin_binds = []
    threads = [threading.Thread(target=lambda: admin_binds.append(timed_bind(srv, srv.admin_dn, srv.admin_pw)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(admin_binds) == 4
    for answer, took in admin_binds:
        assert_result(answer, "success")
        assert took < AT_ONCE_S, f"the admin's bind took {took:.2f} s"

    # Guessing at uid=x goes on being held back: a guess right after another waits the
    # delay, or is refused when the line for x is longer than that.
    timed_bind(srv, x, "wrong")
    answer, took = timed_bind(srv, x, "wrong")
    if answer.code == 53:
        assert "try again" in answer.diag, answer.diag
    else:
        assert answer.code == 49, answer
        assert took >= THROTTLE_DELAY_S * 0.75, f"a guess at uid=x took {took:.2f} s"
