"""The administration commands of the `larch` binary (docs/commands.md), run as processes:
`larch passwd` (its values bound with against a real `larch serve`, and slappasswd's too),
`larch check-config`, `larch schema check`, and the data directory `import`, `export`
and `serve` share by default. Each command's success and its failure messages; every
failure is exit status 1 and `larch <command>: <reason>` on standard error."""

import os
import pty
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import ldap3
import pytest

from conftest import free_port

pytestmark = pytest.mark.larch_only("the larch binary's own commands")

# Every scheme `larch passwd -h` accepts (larch_server::password::named::SCHEME_NAMES).
SCHEMES = ["ARGON2", "SSHA", "SSHA256", "SSHA384", "SSHA512", "SHA", "SHA256", "SHA384", "SHA512", "SMD5",
           "MD5", "PBKDF2", "PBKDF2-SHA1", "PBKDF2-SHA256", "PBKDF2-SHA512", "PBKDF2_SHA256", "CRYPT",
           "CLEARTEXT"]
# slappasswd's schemes: built in, or from a module of Debian's slapd package. pw-pbkdf2 is
# not packaged by Debian, so slapd's {PBKDF2-*} values cannot be made here.
SLAPPASSWD = [(["-h", "{SSHA}"], "SSHA"), (["-h", "{SHA}"], "SHA"), (["-h", "{SMD5}"], "SMD5"),
              (["-h", "{MD5}"], "MD5"), (["-h", "{CRYPT}", "-c", "$6$%.16s"], "CRYPT-SHA512"),
              (["-h", "{CRYPT}", "-c", "$5$%.16s"], "CRYPT-SHA256"),
              (["-o", "module-load=pw-sha2", "-h", "{SSHA256}"], "SSHA256"),
              (["-o", "module-load=pw-sha2", "-h", "{SSHA512}"], "SSHA512"),
              (["-o", "module-load=pw-sha2", "-h", "{SHA256}"], "SHA256"),
              (["-o", "module-load=argon2", "-h", "{ARGON2}"], "ARGON2")]
SECRET = "Adm1n-cmd secret"
BASE = "dc=example,dc=com"
# How long a server may take to answer after it starts, and to stop after SIGTERM.
DEADLINE_S = 30.0


@pytest.fixture
def larch(request):
    binary = request.config.getoption("--larch-bin")

    def run(*args, cwd=None, input=None, env=None):
        return subprocess.run([binary, *args], cwd=cwd, input=input, capture_output=True, text=True,
                              env=env, timeout=60)
    run.binary = binary
    return run


def failed(result, command, *words):
    """Exit status 1, one line `larch <command>: ...` last on stderr, holding every word."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"larch {command}: "), result.stderr
    for w in words:
        assert w in result.stderr, (w, result.stderr)


# ----------------------------------------------------------------------------- passwd

def test_passwd_values_bind_on_a_real_server_and_slappasswd_values_too(larch, tmp_path):
    values = {}
    for scheme in SCHEMES:
        r = larch("passwd", "-h", "{" + scheme.lower() + "}", "-s", SECRET)
        assert r.returncode == 0, r.stderr
        value = r.stdout.rstrip("\n")
        assert "\n" not in value and value.startswith("{" + scheme + "}"), value
        values[f"larch-{scheme}"] = value
    bcrypt = larch("passwd", "-h", "CRYPT", "-c", "$2b$05$", "-s", SECRET)
    assert bcrypt.stdout.startswith("{CRYPT}$2b$05$"), bcrypt.stdout
    values["larch-BCRYPT"] = bcrypt.stdout.strip()
    # No -h: the server's own default, argon2id; a line of standard input when it is no terminal.
    default = larch("passwd", input=SECRET + "\n")
    assert default.returncode == 0 and default.stdout.startswith("{ARGON2}$argon2id$"), default
    values["larch-default"] = default.stdout.strip()
    from_file = tmp_path / "pw.txt"
    from_file.write_text(SECRET + "\nsecond line ignored\n")
    r = larch("passwd", "-h", "SSHA512", "-T", str(from_file))
    values["larch-file"] = r.stdout.strip()

    slappasswd = shutil.which("slappasswd") or ("/usr/sbin/slappasswd" if os.path.exists("/usr/sbin/slappasswd")
                                                 else None)
    if slappasswd is None:
        print("slappasswd is not installed (Debian package slapd): its values are not checked here")
    else:
        for args, name in SLAPPASSWD:
            r = subprocess.run([slappasswd, *args, "-s", SECRET], capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, (args, r.stderr)
            values[f"slapd-{name}"] = r.stdout.strip()

    # Every value stored by `larch import` (into the default data directory, which serve
    # then opens) and bound with: the server's verifier accepts it.
    ldif = [f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n",
            f"dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n"]
    for uid, value in values.items():
        ldif.append(f"dn: uid={uid},ou=people,{BASE}\nobjectClass: account\nobjectClass: simpleSecurityObject\n"
                    f"uid: {uid}\nuserPassword: {value}\n")
    (tmp_path / "users.ldif").write_text("\n".join(ldif))
    r = larch("import", "--suffix", BASE, "users.ldif", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "larch-data").is_dir()
    port = free_port()
    (tmp_path / "larch.toml").write_text(f'[server]\nlisten = ["ldap://127.0.0.1:{port}"]\n\n'
                                         '[password]\nallow_cleartext = true\n')
    env = dict(os.environ, LARCH_ADMIN_PASSWORD="admin-secret")
    proc = subprocess.Popen([larch.binary, "serve", "--config", "larch.toml"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        server = ldap3.Server(f"ldap://127.0.0.1:{port}", get_info=ldap3.NONE)
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                ldap3.Connection(server, auto_bind=True).unbind()
                break
            except ldap3.core.exceptions.LDAPException:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
        refused = []
        for uid in values:
            dn = f"uid={uid},ou=people,{BASE}"
            if not ldap3.Connection(server, user=dn, password=SECRET).bind():
                refused.append((uid, values[uid]))
            assert not ldap3.Connection(server, user=dn, password=SECRET + "x").bind(), uid
        assert not refused, refused
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE_S) == 0


def test_passwd_failures(larch, tmp_path):
    failed(larch("passwd", "-h", "{NOPE}", "-s", "x"), "passwd", "unknown scheme `{NOPE}`", "SSHA512")
    failed(larch("passwd", "-c", "$6$", "-s", "x"), "passwd", "-h CRYPT")
    failed(larch("passwd", "-h", "crypt", "-c", "$1$", "-s", "x"), "passwd", "$5$, $6$")
    failed(larch("passwd", "-s", ""), "passwd", "empty")
    failed(larch("passwd", input=""), "passwd", "no password")
    failed(larch("passwd", "-T", str(tmp_path / "missing")), "passwd", "cannot read")
    failed(larch("passwd", "-h", "crypt", "-c", "$2b$05$", "-s", "x" * 73), "passwd", "72 octets")
    help_text = larch("passwd", "--help").stdout
    assert "slappasswd" in help_text and "Examples:" in help_text and "PBKDF2_SHA256" in help_text


def run_on_pty(binary, args, answers):
    """Runs `larch passwd` with standard input and error on a terminal (a pty), answering
    each prompt in turn; returns (exit status, stdout, everything the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([binary, *args], stdin=slave, stderr=slave, stdout=subprocess.PIPE)
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + DEADLINE_S
    try:
        for prompt, answer in answers:
            while prompt not in shown:
                assert time.monotonic() < deadline, f"no prompt {prompt!r}: {shown!r}"
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    shown += os.read(master, 1024)
            os.write(master, answer)
        out = proc.stdout.read()
        status = proc.wait(timeout=DEADLINE_S)
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                break
            try:
                chunk = os.read(master, 1024)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return status, out.decode(), shown.decode(errors="replace")


def test_passwd_asks_twice_on_a_terminal_without_echo(larch):
    status, out, shown = run_on_pty(larch.binary, ["passwd", "-h", "SSHA"],
                                    [(b"New password:", b"first-Secret\n"),
                                     (b"Re-enter new password:", b"other-Secret\n")])
    assert status == 1, (out, shown)
    assert "larch passwd: the passwords do not match" in shown, shown
    assert "first-Secret" not in shown and "other-Secret" not in shown, f"echoed: {shown!r}"
    assert out == ""
    status, out, shown = run_on_pty(larch.binary, ["passwd", "-h", "SSHA"],
                                    [(b"New password:", b"same-Secret\n"),
                                     (b"Re-enter new password:", b"same-Secret\n")])
    assert status == 0, shown
    assert out.startswith("{SSHA}") and "same-Secret" not in shown, (out, shown)


# ------------------------------------------------------------------------ check-config

THREE_ERRORS = """# three mistakes, in three sections
[server]
listen = ["ldap://127.0.0.1:3389"]
worker_threads = "many"

[store]
sync = "sometimes"

[[access]]
attrs = ["noSuchAttribute"]
by = [{ who = "users", access = "read" }]
"""


def test_check_config_reports_every_error_with_its_line(larch, tmp_path):
    conf = tmp_path / "larch.toml"
    conf.write_text(THREE_ERRORS)
    r = larch("check-config", str(conf))
    failed(r, "check-config", f"{conf}: 3 errors")
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith(f"{conf}:4:18: `server.worker_threads`"), lines
    assert lines[1].startswith(f"{conf}:7:1: `store.sync`: `sometimes`"), lines
    assert lines[2].startswith(f"{conf}:10:10: `access[0].attrs[0]`"), lines
    assert "noSuchAttribute" in lines[2]
    # serve reads the file the same way and stops at the first of them.
    served = subprocess.run([larch.binary, "serve", "--config", str(conf)], capture_output=True, text=True,
                            timeout=60)
    assert served.returncode == 1 and lines[0] in served.stderr, served.stderr


def test_check_config_syntax_and_start_checks(larch, tmp_path):
    conf = tmp_path / "syntax.toml"
    conf.write_text("[server]\nlisten = [\"ldap://127.0.0.1:3389\"\n")
    r = larch("check-config", str(conf))
    failed(r, "check-config", "TOML syntax error")
    assert f"{conf}:2:" in r.stderr, r.stderr
    # What serve checks after the file: the TLS files, the data directory's parent.
    conf = tmp_path / "start.toml"
    conf.write_text('[server]\nlisten = ["ldaps://127.0.0.1:3636"]\ndata_dir = "no/such/parent/data"\n\n'
                    '[tls]\ncertificate = "missing-cert.pem"\nkey = "missing-key.pem"\n')
    r = larch("check-config", str(conf))
    failed(r, "check-config", "2 errors", "missing-cert.pem", "`server.data_dir`", "nor does its parent")
    failed(larch("check-config", str(tmp_path / "absent.toml")), "check-config", "cannot read")


def test_check_config_ok_with_a_summary(larch, tmp_path):
    conf = tmp_path / "larch.toml"
    conf.write_text('[server]\nlisten = ["ldap://127.0.0.1:3389", "ldap://[::1]:3389"]\n\n'
                    '[directory]\nsuffix = "dc=example,dc=com"\nextra_suffixes = ["o=other"]\n\n'
                    '[[access]]\nby = [{ who = "users", access = "read" }]\n')
    r = larch("check-config", str(conf))
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == f"{conf}: ok", out
    assert any(l.split()[:2] == ["listeners", "2"] for l in out), out
    assert any(l.split()[:2] == ["suffixes", "2"] for l in out), out
    assert any(l.split()[:3] == ["access", "rules", "1"] for l in out), out


# ------------------------------------------------------------------------ schema check

def test_schema_check(larch, tmp_path):
    good = tmp_path / "good.schema"
    good.write_text("objectidentifier myOID 1.3.6.1.4.1.99999\n"
                    "attributetype ( myOID:1 NAME 'myGoodAttr' SUP name )\n")
    bad = tmp_path / "bad.schema"
    bad.write_text("# a comment\n\nattributetype ( 1.3.6.1.4.1.99999.2 NAME 'myBadAttr'\n"
                   "  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 EQUALITY noSuchRule )\n")
    ldif = tmp_path / "good.ldif"
    ldif.write_text("dn: cn=mine,cn=schema,cn=config\nobjectClass: olcSchemaConfig\ncn: mine\n"
                    "olcAttributeTypes: ( 1.3.6.1.4.1.99999.3 NAME 'myLdifAttr' SUP name )\n"
                    "olcObjectClasses: ( 1.3.6.1.4.1.99999.4 NAME 'myClass' SUP top AUXILIARY MAY myLdifAttr )\n")
    r = larch("schema", "check", str(good), str(ldif))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{good}: ok", f"{ldif}: ok"], r.stdout
    r = larch("schema", "check", str(good), str(bad), str(ldif))
    failed(r, "schema check", "1 of 3 files refused", f"{bad}:3:", "noSuchRule")
    assert f"{good}: ok" in r.stdout and f"{ldif}: ok" in r.stdout
    # An element of the shipped schemas defined again is refused, naming the file and line.
    dup = tmp_path / "dup.schema"
    dup.write_text("\nattributetype ( 2.5.4.3 NAME 'cn' SUP name )\n")
    failed(larch("schema", "check", str(dup)), "schema check", f"{dup}:2:")
    failed(larch("schema", "check", str(tmp_path / "none.schema")), "schema check", "cannot read")
    assert larch("schema", "check").returncode == 2  # clap: a file is required


# -------------------------------------------------------------- the default data directory

def test_import_and_export_default_to_serves_data_directory(larch, tmp_path):
    (tmp_path / "in.ldif").write_text(f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\n"
                                      "dc: example\no: Example\n")
    r = larch("import", "in.ldif", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "larch-data").is_dir()
    r = larch("export", cwd=tmp_path)
    assert r.returncode == 0 and f"dn: {BASE}" in r.stdout, r.stderr
    assert larch("verify", cwd=tmp_path).returncode == 0
    failed(larch("import", "in.ldif", cwd=tmp_path), "import", "already holds a directory")
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    failed(larch("export", cwd=empty), "export", "larch-data is not a data directory")
    help_text = larch("import", "--help").stdout
    assert "[default: ./larch-data]" in help_text, help_text
