"""Password policy (draft-behera-ldap-password-policy-10; docs/security.md, "Password
policy"): lockout after failures and unlock after the duration, admin reset and must-change,
expiry with grace logins and their time limit (pwdGraceExpiry), history, minimum and maximum
length, the delay after a failure (pwdMinDelay, pwdMaxDelay), the idle limit (pwdMaxIdle,
pwdLastSuccess), and the password policy control as `ldapwhoami -e ppolicy` prints it and
python-ldap's `PasswordPolicyControl` decodes it.

Against slapd the same tests run with its ppolicy overlay, whose default policy entry holds
the values Larch's `[password_policy]` is given here, and with `lastbind on` (slapd
enforces pwdMaxIdle only on a database that records pwdLastSuccess); the accounts of the
other tests name further `pwdPolicy` entries in `pwdPolicySubentry` on both servers.
"""

import calendar
import re
import subprocess
import time

import ldap
import pytest
from ldap.controls import DecodeControlTuples
from ldap.controls.ppolicy import PasswordPolicyControl

import conftest
from ldaputil import add_ok, connect, tool_env

POLICIES = f"ou=policies,{conftest.BASE}"
DEFAULT_POLICY = f"cn=default,{POLICIES}"
EXPIRING_POLICY = f"cn=expiring,{POLICIES}"
GRACE_EXPIRY_POLICY = f"cn=grace-expiry,{POLICIES}"
DELAY_POLICY = f"cn=delay,{POLICIES}"
IDLE_POLICY = f"cn=idle,{POLICIES}"
LOCKOUT_SECONDS = 2
MAX_AGE_SECONDS = 2
MAX_LENGTH = 32
GRACE_EXPIRY_SECONDS = 3
MIN_DELAY_SECONDS = 1
MAX_DELAY_SECONDS = 2
MAX_IDLE_SECONDS = 2

LARCH_TOML = f"""[password_policy]
min_length = 8
check_quality = 1
in_history = 2
lockout = true
max_failures = 3
lockout_duration = "{LOCKOUT_SECONDS}s"
failure_count_interval = "0"
must_change = true
max_length = {MAX_LENGTH}
last_success_precision = "0"
"""
SLAPD_GLOBAL = "moduleload ppolicy"
SLAPD_DB = f'lastbind on\noverlay ppolicy\nppolicy_default "{DEFAULT_POLICY}"\nppolicy_use_lockout'

# The same default policy as a pwdPolicy entry, for slapd (Larch reads its configuration).
DEFAULT_POLICY_ATTRS = {
    "objectClass": ["organizationalRole", "pwdPolicy"],
    "cn": "default",
    "pwdAttribute": "userPassword",
    "pwdMinLength": "8",
    "pwdMaxLength": str(MAX_LENGTH),
    "pwdCheckQuality": "1",
    "pwdInHistory": "2",
    "pwdLockout": "TRUE",
    "pwdMaxFailure": "3",
    "pwdLockoutDuration": str(LOCKOUT_SECONDS),
    "pwdFailureCountInterval": "0",
    "pwdMustChange": "TRUE",
}
EXPIRING_POLICY_ATTRS = {
    "objectClass": ["organizationalRole", "pwdPolicy"],
    "cn": "expiring",
    "pwdAttribute": "userPassword",
    "pwdMaxAge": str(MAX_AGE_SECONDS),
    "pwdGraceAuthNLimit": "2",
}
GRACE_EXPIRY_POLICY_ATTRS = {
    "objectClass": ["organizationalRole", "pwdPolicy"],
    "cn": "grace-expiry",
    "pwdAttribute": "userPassword",
    "pwdMaxAge": str(MAX_AGE_SECONDS),
    "pwdGraceAuthNLimit": "5",
    "pwdGraceExpiry": str(GRACE_EXPIRY_SECONDS),
}
DELAY_POLICY_ATTRS = {
    "objectClass": ["organizationalRole", "pwdPolicy"],
    "cn": "delay",
    "pwdAttribute": "userPassword",
    "pwdLockout": "TRUE",
    "pwdMaxFailure": "10",
    "pwdFailureCountInterval": "0",
    "pwdMinDelay": str(MIN_DELAY_SECONDS),
    "pwdMaxDelay": str(MAX_DELAY_SECONDS),
}
IDLE_POLICY_ATTRS = {
    "objectClass": ["organizationalRole", "pwdPolicy"],
    "cn": "idle",
    "pwdAttribute": "userPassword",
    "pwdLockout": "TRUE",
    "pwdMaxFailure": "10",
    "pwdMaxIdle": str(MAX_IDLE_SECONDS),
}


@pytest.fixture(scope="module")
def pp_server(request):
    def policies(srv):
        admin = connect(srv, srv.admin_dn, srv.admin_pw)
        add_ok(admin, POLICIES, {"objectClass": ["organizationalUnit"], "ou": "policies"})
        add_ok(admin, DEFAULT_POLICY, DEFAULT_POLICY_ATTRS)
        add_ok(admin, EXPIRING_POLICY, EXPIRING_POLICY_ATTRS)
        add_ok(admin, GRACE_EXPIRY_POLICY, GRACE_EXPIRY_POLICY_ATTRS)
        add_ok(admin, DELAY_POLICY, DELAY_POLICY_ATTRS)
        add_ok(admin, IDLE_POLICY, IDLE_POLICY_ATTRS)
        add_ok(admin, f"ou=pp,{conftest.BASE}", {"objectClass": ["organizationalUnit"], "ou": "pp"})
        admin.unbind()

    yield from conftest.module_server(request, "larch-e2e-ppolicy-", setup=policies, larch_extra_toml=LARCH_TOML,
                                      slapd_extra_global=SLAPD_GLOBAL, slapd_extra_db=SLAPD_DB)


_counter = [0]


def new_user(srv, password, **extra):
    """A fresh account below ou=pp, added by the administrator; its DN."""
    _counter[0] += 1
    name = f"u{_counter[0]}"
    dn = f"uid={name},ou=pp,{conftest.BASE}"
    admin = connect(srv, srv.admin_dn, srv.admin_pw)
    attrs = {"objectClass": ["inetOrgPerson"], "cn": name, "sn": name, "uid": name, "userPassword": password}
    attrs.update(extra)
    add_ok(admin, dn, attrs)
    admin.unbind()
    return dn


def pl(srv):
    conn = ldap.initialize(srv.url)
    conn.set_option(ldap.OPT_PROTOCOL_VERSION, 3)
    return conn


def policy_of(ctrls):
    """The decoded PasswordPolicyControl among response controls, or None."""
    for c in ctrls or []:
        if isinstance(c, PasswordPolicyControl):
            return c
    return None


def bind(srv, dn, password):
    """A simple bind with the request control: (result code, decoded control or None,
    connection)."""
    conn = pl(srv)
    try:
        _, _, _, ctrls = conn.simple_bind_s(dn, password, serverctrls=[PasswordPolicyControl()])
        return 0, policy_of(ctrls), conn
    except ldap.LDAPError as e:
        info = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
        ctrls = DecodeControlTuples(info.get("ctrls", []))
        return info.get("result", -1), policy_of(ctrls), conn


ERRORS = ["passwordExpired", "accountLocked", "changeAfterReset", "passwordModNotAllowed",
          "mustSupplyOldPassword", "insufficientPasswordQuality", "passwordTooShort",
          "passwordTooYoung", "passwordInHistory", "passwordTooLong"]


def error_of(ctrl):
    """The draft's name of the control's error (python-ldap gives its number)."""
    if ctrl is None or ctrl.error is None:
        return None
    return ERRORS[ctrl.error]


def attribute(srv, dn, name):
    admin = pl(srv)
    admin.simple_bind_s(srv.admin_dn, srv.admin_pw)
    [(_, attrs)] = admin.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)", [name])
    admin.unbind_s()
    return [v.decode() for v in next((vs for k, vs in attrs.items() if k.lower() == name.lower()), [])]


def test_lockout_after_max_failures_then_unlock_after_the_duration(pp_server):
    dn = new_user(pp_server, "Right-Pass-1")
    for _ in range(3):
        code, _, _ = bind(pp_server, dn, "wrong-password")
        assert code == 49
    assert attribute(pp_server, dn, "pwdAccountLockedTime"), "locked after the third failure"
    assert len(attribute(pp_server, dn, "pwdFailureTime")) == 3
    code, ctrl, _ = bind(pp_server, dn, "Right-Pass-1")
    assert code == 49, "the right password does not open a locked account"
    assert ctrl is not None and error_of(ctrl) == "accountLocked"
    time.sleep(LOCKOUT_SECONDS + 1.5)
    code, ctrl, conn = bind(pp_server, dn, "Right-Pass-1")
    assert code == 0, "unlocked once the lockout duration has passed"
    assert conn.whoami_s() == f"dn:{dn}"
    assert attribute(pp_server, dn, "pwdFailureTime") == [], "a success clears the failures"


def test_a_success_before_the_maximum_clears_the_failures(pp_server):
    dn = new_user(pp_server, "Right-Pass-2")
    for _ in range(2):
        assert bind(pp_server, dn, "wrong-password")[0] == 49
    assert bind(pp_server, dn, "Right-Pass-2")[0] == 0
    assert attribute(pp_server, dn, "pwdFailureTime") == []
    for _ in range(2):
        assert bind(pp_server, dn, "wrong-password")[0] == 49
    assert bind(pp_server, dn, "Right-Pass-2")[0] == 0, "the count started again"


def test_permanent_lock_refuses_the_right_password(pp_server):
    dn = new_user(pp_server, "Right-Pass-3")
    admin = pl(pp_server)
    admin.simple_bind_s(pp_server.admin_dn, pp_server.admin_pw)
    admin.modify_s(dn, [(ldap.MOD_REPLACE, "pwdAccountLockedTime", [b"000001010000Z"])])
    code, ctrl, _ = bind(pp_server, dn, "Right-Pass-3")
    assert code == 49 and error_of(ctrl) == "accountLocked"
    admin.modify_s(dn, [(ldap.MOD_DELETE, "pwdAccountLockedTime", None)])
    assert bind(pp_server, dn, "Right-Pass-3")[0] == 0


def test_min_length_refused_with_password_too_short(pp_server):
    dn = new_user(pp_server, "Long-Enough-1")
    _, _, conn = bind(pp_server, dn, "Long-Enough-1")
    with pytest.raises(ldap.CONSTRAINT_VIOLATION) as e:
        conn.modify_ext_s(dn, [(ldap.MOD_REPLACE, "userPassword", [b"short"])],
                          serverctrls=[PasswordPolicyControl()])
    ctrl = policy_of(DecodeControlTuples(e.value.args[0].get("ctrls", [])))
    assert error_of(ctrl) == "passwordTooShort"
    conn.modify_s(dn, [(ldap.MOD_REPLACE, "userPassword", [b"Long-Enough-2"])])
    assert bind(pp_server, dn, "Long-Enough-2")[0] == 0
    assert attribute(pp_server, dn, "pwdChangedTime"), "a change records its time"


def test_history_refuses_the_current_and_recent_passwords(pp_server):
    dn = new_user(pp_server, "History-Pass-1")
    _, _, conn = bind(pp_server, dn, "History-Pass-1")
    conn.passwd_s(dn, "History-Pass-1", "History-Pass-2")
    with pytest.raises(ldap.CONSTRAINT_VIOLATION):
        conn.passwd_s(dn, "History-Pass-2", "History-Pass-2")
    with pytest.raises(ldap.CONSTRAINT_VIOLATION):
        conn.passwd_s(dn, "History-Pass-2", "History-Pass-1")
    history = attribute(pp_server, dn, "pwdHistory")
    assert len(history) == 1
    stamp, syntax, length, value = history[0].split("#", 3)
    assert syntax == "1.3.6.1.4.1.1466.115.121.1.40" and int(length) == len(value)
    conn.passwd_s(dn, "History-Pass-2", "History-Pass-3")
    conn.passwd_s(dn, "History-Pass-3", "History-Pass-4")
    assert len(attribute(pp_server, dn, "pwdHistory")) == 2, "trimmed to pwdInHistory"
    # History-Pass-1 has left the history of two: it may be used again.
    conn.passwd_s(dn, "History-Pass-4", "History-Pass-1")


def test_admin_reset_must_be_changed_before_anything_else(pp_server):
    dn = new_user(pp_server, "Before-Reset-1")
    admin = pl(pp_server)
    admin.simple_bind_s(pp_server.admin_dn, pp_server.admin_pw)
    admin.modify_s(dn, [(ldap.MOD_REPLACE, "userPassword", [b"Reset-By-Admin"])])
    assert attribute(pp_server, dn, "pwdReset") == ["TRUE"]
    code, ctrl, conn = bind(pp_server, dn, "Reset-By-Admin")
    assert code == 0 and error_of(ctrl) == "changeAfterReset"
    with pytest.raises(ldap.INSUFFICIENT_ACCESS):
        conn.search_s(conftest.BASE, ldap.SCOPE_BASE)
    conn.passwd_s(dn, "Reset-By-Admin", "Chosen-By-User-1")
    assert conn.search_s(dn, ldap.SCOPE_BASE, attrlist=["uid"])[0][0].lower() == dn.lower()
    assert attribute(pp_server, dn, "pwdReset") == []
    code, ctrl, _ = bind(pp_server, dn, "Chosen-By-User-1")
    assert code == 0 and error_of(ctrl) is None


def test_expiry_with_grace_logins_then_refusal(pp_server):
    dn = new_user(pp_server, "Expiring-Pass-1", pwdPolicySubentry=EXPIRING_POLICY)
    assert attribute(pp_server, dn, "pwdChangedTime"), "passwords age under this policy"
    time.sleep(MAX_AGE_SECONDS + 1.5)
    code, ctrl, _ = bind(pp_server, dn, "Expiring-Pass-1")
    assert code == 0 and ctrl.graceAuthNsRemaining == 1
    out = subprocess.run(
        ["ldapwhoami", "-x", "-H", pp_server.url, "-D", dn, "-w", "Expiring-Pass-1", "-e", "ppolicy"],
        capture_output=True, text=True, env=tool_env(), timeout=30)
    assert out.returncode == 0, out.stderr
    assert "Password expired, 0 grace logins remain" in out.stdout + out.stderr
    code, ctrl, _ = bind(pp_server, dn, "Expiring-Pass-1")
    assert code == 49 and error_of(ctrl) == "passwordExpired"
    assert len(attribute(pp_server, dn, "pwdGraceUseTime")) == 2


def test_ldapwhoami_prints_the_reset_state(pp_server):
    dn = new_user(pp_server, "Whoami-Pass-1")
    admin = pl(pp_server)
    admin.simple_bind_s(pp_server.admin_dn, pp_server.admin_pw)
    admin.modify_s(dn, [(ldap.MOD_REPLACE, "userPassword", [b"Whoami-Reset-1"])])
    out = subprocess.run(
        ["ldapwhoami", "-x", "-H", pp_server.url, "-D", dn, "-w", "Whoami-Reset-1", "-e", "ppolicy"],
        capture_output=True, text=True, env=tool_env(), timeout=30)
    text = out.stdout + out.stderr
    assert "Password must be changed" in text, text


def test_supported_control_is_advertised(pp_server):
    conn = pl(pp_server)
    [(_, attrs)] = conn.search_s("", ldap.SCOPE_BASE, "(objectClass=*)", ["supportedControl"])
    assert b"1.3.6.1.4.1.42.2.27.8.5.1" in attrs["supportedControl"]


def eventually(read, timeout=5.0):
    """`read()` once it is truthy (a successful bind's record is written after the answer),
    or its last value after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    value = read()
    while not value and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def generalized_seconds(value):
    """Seconds since the epoch of a GeneralizedTime `YYYYmmddHHMMSS[.ffffff]Z` (fraction
    dropped)."""
    return calendar.timegm(time.strptime(value[:14], "%Y%m%d%H%M%S"))


def test_max_length_refused_with_password_too_long(pp_server):
    dn = new_user(pp_server, "Long-Enough-3")
    _, _, conn = bind(pp_server, dn, "Long-Enough-3")
    too_long = "L" * (MAX_LENGTH + 1)
    with pytest.raises(ldap.CONSTRAINT_VIOLATION) as e:
        conn.modify_ext_s(dn, [(ldap.MOD_REPLACE, "userPassword", [too_long.encode()])],
                          serverctrls=[PasswordPolicyControl()])
    ctrl = policy_of(DecodeControlTuples(e.value.args[0].get("ctrls", [])))
    assert error_of(ctrl) == "passwordTooLong"
    with pytest.raises(ldap.CONSTRAINT_VIOLATION):
        conn.passwd_s(dn, "Long-Enough-3", too_long)
    at_most = "M" * MAX_LENGTH
    conn.passwd_s(dn, "Long-Enough-3", at_most)
    assert bind(pp_server, dn, at_most)[0] == 0, "the maximum itself is allowed"


def test_grace_logins_end_after_grace_expiry(pp_server):
    dn = new_user(pp_server, "Grace-Expiry-1", pwdPolicySubentry=GRACE_EXPIRY_POLICY)
    # Expired after MAX_AGE_SECONDS; grace logins for GRACE_EXPIRY_SECONDS after that.
    time.sleep(MAX_AGE_SECONDS + 1)
    code, ctrl, _ = bind(pp_server, dn, "Grace-Expiry-1")
    assert code == 0 and ctrl.graceAuthNsRemaining == 4
    time.sleep(GRACE_EXPIRY_SECONDS + 1)
    code, ctrl, _ = bind(pp_server, dn, "Grace-Expiry-1")
    assert code == 49 and error_of(ctrl) == "passwordExpired", "grace logins left, but not their time"
    assert len(attribute(pp_server, dn, "pwdGraceUseTime")) == 1


def slapd_survives_min_delay():
    """Whether the installed slapd delays binds without crashing: before 2.5.15 and 2.6.5 its
    ppolicy writes pwdAccountTmpLockoutEnd through an uninitialised buffer and aborts
    (ITS#10028); Debian 12's 2.5.13 is one of those."""
    out = subprocess.run(["/usr/sbin/slapd", "-VV"], capture_output=True, text=True, timeout=30)
    found = re.search(r"slapd (\d+)\.(\d+)\.(\d+)", out.stdout + out.stderr)
    if not found:
        return False
    version = tuple(int(n) for n in found.groups())
    return version >= (2, 6, 5) or (2, 5, 15) <= version < (2, 6, 0)


def test_a_failure_delays_the_next_bind_doubling_up_to_max_delay(pp_server):
    if pp_server.kind == "slapd" and not slapd_survives_min_delay():
        pytest.skip("this slapd aborts on the first delayed bind under pwdMinDelay (ITS#10028, "
                    "fixed in 2.5.15 and 2.6.5)")
    dn = new_user(pp_server, "Delayed-Pass-1", pwdPolicySubentry=DELAY_POLICY)

    def fail_and_measure():
        """A wrong password; the delay it set, in seconds after the failure."""
        assert bind(pp_server, dn, "wrong-password")[0] == 49
        [end] = attribute(pp_server, dn, "pwdAccountTmpLockoutEnd")
        last = max(attribute(pp_server, dn, "pwdFailureTime"))
        return generalized_seconds(end) - generalized_seconds(last)

    # slapd: pwdMinDelay << (failures already counted), at most pwdMaxDelay. The delay's end
    # is kept in whole seconds, so a failure late in a second holds the account back for
    # less than pwdMinDelay: the first one is made just after a second begins.
    time.sleep(1.02 - time.time() % 1)
    assert fail_and_measure() == MIN_DELAY_SECONDS
    code, ctrl, _ = bind(pp_server, dn, "Delayed-Pass-1")
    assert code == 49 and error_of(ctrl) == "accountLocked", "the right password waits for the delay"
    assert len(attribute(pp_server, dn, "pwdFailureTime")) == 1, "a held-back bind is no failure"
    time.sleep(MIN_DELAY_SECONDS + 1)
    assert fail_and_measure() == 2 * MIN_DELAY_SECONDS
    time.sleep(2 * MIN_DELAY_SECONDS + 1)
    assert fail_and_measure() == MAX_DELAY_SECONDS, "doubled again, held to the maximum"
    assert bind(pp_server, dn, "Delayed-Pass-1")[0] == 49
    time.sleep(MAX_DELAY_SECONDS + 1)
    code, ctrl, conn = bind(pp_server, dn, "Delayed-Pass-1")
    assert code == 0 and conn.whoami_s() == f"dn:{dn}"
    assert eventually(lambda: attribute(pp_server, dn, "pwdFailureTime") == []), "a success clears the failures"


def test_an_idle_account_is_refused_until_its_password_changes(pp_server):
    dn = new_user(pp_server, "Idle-Pass-1", pwdPolicySubentry=IDLE_POLICY)
    assert bind(pp_server, dn, "Idle-Pass-1")[0] == 0
    assert eventually(lambda: attribute(pp_server, dn, "pwdLastSuccess")), "a success is recorded"
    time.sleep(MAX_IDLE_SECONDS + 1.5)
    code, ctrl, _ = bind(pp_server, dn, "Idle-Pass-1")
    assert code == 49 and error_of(ctrl) == "accountLocked", "unused for longer than pwdMaxIdle"
    admin = pl(pp_server)
    admin.simple_bind_s(pp_server.admin_dn, pp_server.admin_pw)
    admin.modify_s(dn, [(ldap.MOD_REPLACE, "userPassword", [b"Idle-Pass-2"])])
    assert attribute(pp_server, dn, "pwdLastSuccess") == [], "a change restarts the idle time"
    code, _, conn = bind(pp_server, dn, "Idle-Pass-2")
    assert code == 0 and conn.whoami_s() == f"dn:{dn}"
