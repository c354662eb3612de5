"""TLS (RFC 4513 section 3): StartTLS and ldaps://, reloading the certificate with SIGHUP,
refusing a bad certificate at startup, the confidentiality policy, SASL EXTERNAL with a
client certificate and SASL PLAIN, `larch serve --demo-tls`.

The suite's slapd runs without TLS, so these tests are Larch's (larch_only).

How the certificates are made (`Pki`): OpenSSL's command-line tool, in a temporary
directory: a CA, then each certificate from a request signed with `openssl ca`, which can
set any validity period (an expired one too) and serial number.

The ldap-utils tools read their TLS settings from the environment (`tls_env`): the usual
LDAPNOINIT=1 of the suite would make them ignore LDAPTLS_CACERT, so instead the
configuration file and the user's ldaprc are pointed at empty files.
"""

import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

import ldap3
import pytest

import ldapwire
from conftest import free_port
from ldaputil import assert_result, connect, stalled_search, tool_env

larch = pytest.mark.larch_only("the suite's slapd is configured without TLS")

BASE = "dc=example,dc=com"
ADMIN_DN = "cn=admin,dc=example,dc=com"
START_TLS_OID = "1.3.6.1.4.1.1466.20037"
# How long a reload or a start may take before a test gives up waiting (not a measurement).
WAIT_S = 30.0


def openssl(*args, cwd):
    p = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0, f"openssl {' '.join(args)}: {p.stderr}"


class Pki:
    """A CA and the certificates the tests need, as files in `dir`."""

    CA_CONF = """
[ ca ]
default_ca = d
[ d ]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = p
copy_extensions = copy
unique_subject = no
preserve = yes
[ p ]
commonName = optional
[ req ]
distinguished_name = dn
[ dn ]
"""

    def __init__(self, dir):
        self.dir = Path(dir)
        (self.dir / "ca.cnf").write_text(self.CA_CONF)
        (self.dir / "index.txt").write_text("")
        self.ca = self.dir / "ca.pem"
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Larch e2e CA", "-days", "30",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=self.dir)

    def issue(self, name, subject, serial, server=True, start="20240101000000Z", end="20991231000000Z"):
        """Makes <name>.pem and <name>.key; returns (certificate path, key path)."""
        # X.509 v3 (a certificate without extensions would be v1, which TLS stacks refuse).
        ext = ["-addext", "keyUsage=critical,digitalSignature"]
        if server:
            ext += ["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-addext", "extendedKeyUsage=serverAuth"]
        else:
            ext += ["-addext", "extendedKeyUsage=clientAuth"]
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, *ext, cwd=self.dir)
        (self.dir / "serial").write_text(f"{serial:X}\n")
        openssl("ca", "-config", "ca.cnf", "-batch", "-notext", "-cert", "ca.pem", "-keyfile", "ca.key",
                "-in", f"{name}.csr", "-out", f"{name}.pem", "-startdate", start, "-enddate", end,
                cwd=self.dir)
        return self.dir / f"{name}.pem", self.dir / f"{name}.key"


@pytest.fixture(scope="module")
def pki():
    d = tempfile.mkdtemp(prefix="larch-e2e-pki-")
    try:
        p = Pki(d)
        p.server = p.issue("server", "/O=Larch e2e/CN=localhost", 0x1001)
        p.renewed = p.issue("renewed", "/O=Larch e2e/CN=localhost", 0x2002)
        p.expired = p.issue("expired", "/CN=localhost", 0x3003, start="20000101000000Z", end="20010101000000Z")
        p.admin = p.issue("admin", "/O=Larch e2e clients/CN=admin", 0x4004, server=False)
        p.nobody = p.issue("nobody", "/O=Larch e2e clients/CN=nobody", 0x5005, server=False)
        yield p
    finally:
        shutil.rmtree(d, ignore_errors=True)


def tls_toml(cert, key, ca=None, extra=""):
    text = f'[tls]\ncertificate = "{cert}"\nkey = "{key}"\n'
    if ca is not None:
        text += f'client_ca = "{ca}"\nclient_certificates = "request"\n'
    return text + extra


@pytest.fixture
def tls_server(make_extra_server, pki, tmp_path):
    """A Larch server with TLS: ldap:// (StartTLS) and ldaps://, client certificates
    requested, SASL EXTERNAL mapping CN=<x> to cn=<x>,dc=example,dc=com. The certificate
    files are copies, so a test may replace them."""
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    cert.write_bytes(pki.server[0].read_bytes())
    key.write_bytes(pki.server[1].read_bytes())
    ldaps_port = free_port()
    srv = make_extra_server(
        larch_extra_listen=[f"ldaps://127.0.0.1:{ldaps_port}"],
        larch_extra_toml=tls_toml(cert, key, pki.ca, '[sasl]\nexternal_map = "cn={CN},dc=example,dc=com"\n'),
    )
    srv.ldaps_url = f"ldaps://127.0.0.1:{ldaps_port}"
    srv.ldaps_port = ldaps_port
    srv.cert_file, srv.key_file = cert, key
    return srv


def tls_env(pki, tmp_path, cert=None):
    """Environment for ldap-utils over TLS: trust the test CA, optionally present a client
    certificate; no ldap.conf or ldaprc of the machine or the user."""
    env = tool_env()
    env.pop("LDAPNOINIT", None)
    empty = tmp_path / "ldap.conf"
    empty.write_text("")
    env.update({"LDAPCONF": str(empty), "LDAPRC": str(tmp_path / "no-ldaprc"), "HOME": str(tmp_path),
                "LDAPTLS_CACERT": str(pki.ca), "LDAPTLS_REQCERT": "demand"})
    if cert is not None:
        env["LDAPTLS_CERT"], env["LDAPTLS_KEY"] = str(cert[0]), str(cert[1])
    return env


def run(args, env, input_text=None):
    return subprocess.run(args, input=input_text, capture_output=True, text=True, timeout=60, env=env)


def peer_certificate(port, ca):
    """The certificate a new TLS connection to 127.0.0.1:port gets (verified against ca)."""
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return t.getpeercert()


def wrap(conn, ca):
    """Turns an ldapwire connection into a TLS one (after StartTLS)."""
    ctx = ssl.create_default_context(cafile=str(ca))
    conn.sock = ctx.wrap_socket(conn.sock, server_hostname="127.0.0.1")


# ----------------------------------------------------------------------------- StartTLS, ldaps


@larch
def test_ldapsearch_starttls_and_ldaps_return_data(tls_server, pki, tmp_path):
    env = tls_env(pki, tmp_path)
    for args in (["-ZZ", "-H", tls_server.url], ["-H", tls_server.ldaps_url]):
        p = run(["ldapsearch", "-x", *args, "-D", ADMIN_DN, "-w", tls_server.admin_pw, "-b", BASE,
                 "-s", "sub", "(objectClass=*)", "dn"], env)
        assert p.returncode == 0, p.stderr
        assert f"dn: {BASE}" in p.stdout and f"dn: {ADMIN_DN}" in p.stdout, p.stdout
    # Without the CA the client refuses the server: the certificate is really checked.
    env["LDAPTLS_CACERT"] = str(tmp_path / "ldap.conf")
    p = run(["ldapsearch", "-x", "-H", tls_server.ldaps_url, "-b", BASE, "-s", "base"], env)
    assert p.returncode != 0


@larch
def test_ldap3_over_tls(tls_server, pki):
    tls = ldap3.Tls(ca_certs_file=str(pki.ca), validate=ssl.CERT_REQUIRED)
    srv = ldap3.Server("127.0.0.1", port=tls_server.ldaps_port, use_ssl=True, tls=tls, get_info=ldap3.NONE)
    conn = ldap3.Connection(srv, ADMIN_DN, tls_server.admin_pw, raise_exceptions=False)
    assert conn.bind(), conn.result
    conn.search(BASE, "(objectClass=*)", search_scope=ldap3.BASE, attributes=["dc"])
    assert_result(conn, "success")
    assert conn.entries[0].dc.value == "example"
    conn.unbind()
    # StartTLS with ldap3.
    srv = ldap3.Server("127.0.0.1", port=tls_server.port, tls=tls, get_info=ldap3.NONE)
    conn = ldap3.Connection(srv, ADMIN_DN, tls_server.admin_pw, raise_exceptions=False)
    conn.open()
    assert conn.start_tls(), conn.result
    assert conn.bind(), conn.result
    assert conn.extend.standard.who_am_i() == f"dn:{ADMIN_DN}"
    conn.unbind()


@larch
def test_starttls_twice_is_refused(tls_server, pki):
    c = ldapwire.RawConnection(tls_server.host, tls_server.port)
    try:
        answer = c.request(1, ldapwire.extended(START_TLS_OID))[-1]
        assert_result(answer, "success")
        assert answer.response_name == START_TLS_OID
        wrap(c, pki.ca)
        answer = c.request(2, ldapwire.extended(START_TLS_OID))[-1]
        assert_result(answer, "operationsError")
        assert answer.diag
        # The TLS connection goes on.
        assert_result(c.request(3, ldapwire.whoami())[-1], "success")
    finally:
        c.close()


@larch
def test_starttls_with_a_value_is_a_protocol_error(tls_server):
    c = ldapwire.RawConnection(tls_server.host, tls_server.port)
    try:
        assert_result(c.request(1, ldapwire.extended(START_TLS_OID, b"x"))[-1], "protocolError")
        assert_result(c.request(2, ldapwire.whoami())[-1], "success")
    finally:
        c.close()


@larch
def test_request_sent_behind_starttls_closes_the_connection(tls_server):
    # The client must wait for the StartTLS response before its handshake; octets sent
    # earlier are no handshake, and the connection closes (slapd's TLS negotiation fails
    # on them the same way).
    c = ldapwire.RawConnection(tls_server.host, tls_server.port)
    try:
        c.send(ldapwire.message(1, ldapwire.extended(START_TLS_OID)) + ldapwire.message(2, ldapwire.whoami()))
        first = c.recv()
        assert first.msgid == 1
        assert_result(first, "success")
        assert c.recv() is None
    finally:
        c.close()


# ----------------------------------------------------------------------------- reload


@larch
def test_sighup_reloads_the_certificate_for_new_connections(tls_server, pki):
    assert peer_certificate(tls_server.ldaps_port, pki.ca)["serialNumber"] == "1001"
    tls = ldap3.Tls(ca_certs_file=str(pki.ca), validate=ssl.CERT_REQUIRED)
    srv = ldap3.Server("127.0.0.1", port=tls_server.ldaps_port, use_ssl=True, tls=tls, get_info=ldap3.NONE)
    old = ldap3.Connection(srv, ADMIN_DN, tls_server.admin_pw, raise_exceptions=False)
    assert old.bind(), old.result

    tls_server.cert_file.write_bytes(pki.renewed[0].read_bytes())
    tls_server.key_file.write_bytes(pki.renewed[1].read_bytes())
    os.kill(tls_server.pid, signal.SIGHUP)
    deadline = time.monotonic() + WAIT_S
    while peer_certificate(tls_server.ldaps_port, pki.ca)["serialNumber"] != "2002":
        assert time.monotonic() < deadline, f"no reload; stderr:\n{tls_server.stderr_tail()}"
        time.sleep(0.05)
    assert "TLS reloaded" in tls_server.stderr_tail()
    # StartTLS gets the new certificate too.
    c = ldapwire.RawConnection(tls_server.host, tls_server.port)
    try:
        assert_result(c.request(1, ldapwire.extended(START_TLS_OID))[-1], "success")
        wrap(c, pki.ca)
        assert c.sock.getpeercert()["serialNumber"] == "2002"
    finally:
        c.close()
    # The connection made before the reload keeps working.
    old.search(BASE, "(objectClass=*)", search_scope=ldap3.BASE)
    assert_result(old, "success")
    assert len(old.entries) == 1
    old.unbind()

    # A reload that fails keeps the certificate in use and says why.
    tls_server.cert_file.write_bytes(pki.expired[0].read_bytes())
    tls_server.key_file.write_bytes(pki.expired[1].read_bytes())
    os.kill(tls_server.pid, signal.SIGHUP)
    deadline = time.monotonic() + WAIT_S
    while "TLS reload failed" not in tls_server.stderr_tail():
        assert time.monotonic() < deadline, f"no failure reported; stderr:\n{tls_server.stderr_tail()}"
        time.sleep(0.05)
    assert "expired" in tls_server.stderr_tail()
    assert str(tls_server.cert_file) in tls_server.stderr_tail()
    assert peer_certificate(tls_server.ldaps_port, pki.ca)["serialNumber"] == "2002"
    assert tls_server.alive()


# ----------------------------------------------------------------------------- bad certificates


def start_larch_expecting_failure(server_bin, workdir, toml):
    (workdir / "larch.toml").write_text(toml)
    env = dict(os.environ, LARCH_ADMIN_PASSWORD="x")
    return subprocess.run([server_bin, "serve", "--config", str(workdir / "larch.toml")], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120)


@larch
@pytest.mark.parametrize("case", ["expired", "mismatched", "missing"])
def test_a_bad_certificate_stops_the_server_at_startup(request, pki, tmp_path, case):
    cert, key = pki.server
    if case == "expired":
        cert, key = pki.expired
        expect = ["expired on 2001-01-01 00:00:00 UTC", str(cert)]
    elif case == "mismatched":
        key = pki.renewed[1]
        expect = ["does not match", str(cert), str(key)]
    else:
        cert = tmp_path / "absent.pem"
        expect = [f"{cert}: the certificate file does not exist"]
    toml = (f'[server]\nlisten = ["ldap://127.0.0.1:{free_port()}"]\ndata_dir = "data"\n'
            + tls_toml(cert, key))
    p = start_larch_expecting_failure(request.config.getoption("--larch-bin"), tmp_path, toml)
    assert p.returncode != 0, p.stderr
    for e in expect:
        assert e in p.stderr, p.stderr


# ----------------------------------------------------------------------------- confidentiality


@larch
def test_require_tls_always(make_extra_server, pki, tmp_path):
    srv = make_extra_server(larch_extra_toml=tls_toml(*pki.server, extra='[security]\nrequire_tls = "always"\n'))
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    assert_result(conn, "confidentialityRequired")
    assert "StartTLS" in conn.result["message"]
    conn.unbind()
    # The same bind after StartTLS.
    tls = ldap3.Tls(ca_certs_file=str(pki.ca), validate=ssl.CERT_REQUIRED)
    server = ldap3.Server("127.0.0.1", port=srv.port, tls=tls, get_info=ldap3.NONE)
    conn = ldap3.Connection(server, srv.admin_dn, srv.admin_pw, raise_exceptions=False)
    conn.open()
    assert conn.start_tls(), conn.result
    assert conn.bind(), conn.result
    conn.add(f"ou=tls,{BASE}", "organizationalUnit")
    assert_result(conn, "success")
    conn.delete(f"ou=tls,{BASE}")
    assert_result(conn, "success")
    conn.unbind()
    # A write on a plain connection, and ldapsearch's plain simple bind.
    conn = connect(srv)
    conn.add(f"ou=plain,{BASE}", "organizationalUnit")
    assert_result(conn, "confidentialityRequired")
    conn.unbind()
    p = run(["ldapwhoami", "-x", "-H", srv.url, "-D", srv.admin_dn, "-w", srv.admin_pw], tls_env(pki, tmp_path))
    assert p.returncode == 13, (p.returncode, p.stderr)
    p = run(["ldapwhoami", "-x", "-ZZ", "-H", srv.url, "-D", srv.admin_dn, "-w", srv.admin_pw],
            tls_env(pki, tmp_path))
    assert p.returncode == 0 and p.stdout.strip() == f"dn:{ADMIN_DN}", p.stderr


# ----------------------------------------------------------------------------- SASL


@larch
def test_sasl_external_with_a_client_certificate(tls_server, pki, tmp_path):
    p = run(["ldapwhoami", "-Y", "EXTERNAL", "-H", tls_server.ldaps_url], tls_env(pki, tmp_path, pki.admin))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"dn:{ADMIN_DN}"
    p = run(["ldapwhoami", "-Y", "EXTERNAL", "-ZZ", "-H", tls_server.url], tls_env(pki, tmp_path, pki.admin))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"dn:{ADMIN_DN}"
    # A certificate whose entry does not exist.
    p = run(["ldapwhoami", "-Y", "EXTERNAL", "-H", tls_server.ldaps_url], tls_env(pki, tmp_path, pki.nobody))
    assert p.returncode == 49, (p.returncode, p.stderr)


@larch
def test_sasl_plain_over_starttls(tls_server, pki, tmp_path):
    env = tls_env(pki, tmp_path)
    p = run(["ldapwhoami", "-Y", "PLAIN", "-ZZ", "-H", tls_server.url, "-U", f"dn:{ADMIN_DN}",
             "-w", tls_server.admin_pw], env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"dn:{ADMIN_DN}"
    p = run(["ldapwhoami", "-Y", "PLAIN", "-ZZ", "-H", tls_server.url, "-U", f"dn:{ADMIN_DN}",
             "-w", tls_server.admin_pw + "x"], env)
    assert p.returncode == 49, (p.returncode, p.stderr)
    # The admin may take another identity (authzid).
    p = run(["ldapwhoami", "-Y", "PLAIN", "-ZZ", "-H", tls_server.url, "-U", f"dn:{ADMIN_DN}",
             "-X", f"dn:{BASE}", "-w", tls_server.admin_pw], env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"dn:{BASE}"


@larch
def test_root_dse_lists_starttls_and_the_mechanisms(tls_server):
    conn = connect(tls_server)
    conn.search("", "(objectClass=*)", search_scope=ldap3.BASE,
                attributes=["supportedExtension", "supportedSASLMechanisms"])
    assert_result(conn, "success")
    attrs = {k.lower(): [v.decode() for v in vs] for k, vs in conn.response[0]["raw_attributes"].items()}
    assert START_TLS_OID in attrs["supportedextension"]
    assert sorted(attrs["supportedsaslmechanisms"]) == ["EXTERNAL", "PLAIN"]
    conn.unbind()


# ----------------------------------------------------------------------------- --demo-tls


@larch
def test_demo_tls(request, tmp_path):
    port, ldaps_port = free_port(), free_port()
    (tmp_path / "larch.toml").write_text(
        f'[server]\nlisten = ["ldap://127.0.0.1:{port}", "ldaps://127.0.0.1:{ldaps_port}"]\ndata_dir = "data"\n')
    err = open(tmp_path / "stderr", "wb")
    env = dict(os.environ, LARCH_ADMIN_PASSWORD="demo-secret")
    proc = subprocess.Popen([request.config.getoption("--larch-bin"), "serve", "--demo-tls", "--config",
                             str(tmp_path / "larch.toml")], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            stdout=err, stderr=err)
    err.close()
    try:
        deadline = time.monotonic() + WAIT_S
        while b"listening url=ldaps://" not in (tmp_path / "stderr").read_bytes():
            assert proc.poll() is None, (tmp_path / "stderr").read_text()
            assert time.monotonic() < deadline, (tmp_path / "stderr").read_text()
            time.sleep(0.05)
        log = (tmp_path / "stderr").read_text()
        ca = tmp_path / "data" / "demo-tls" / "ca.pem"
        assert f"LDAPTLS_CACERT={ca.resolve()}" in log, log
        assert f"listening url=ldaps://127.0.0.1:{ldaps_port}" in log, log
        assert "listening url=ldaps://127.0.0.1:3636" not in log, "an ldaps listener was configured"
        env = tool_env()
        env.pop("LDAPNOINIT", None)
        empty = tmp_path / "ldap.conf"
        empty.write_text("")
        env.update({"LDAPCONF": str(empty), "HOME": str(tmp_path), "LDAPTLS_CACERT": str(ca)})
        for args in (["-ZZ", "-H", f"ldap://127.0.0.1:{port}"], ["-H", f"ldaps://127.0.0.1:{ldaps_port}"]):
            p = run(["ldapsearch", "-x", *args, "-b", BASE, "-s", "base", "dn"], env)
            assert p.returncode == 0, p.stderr
            assert f"dn: {BASE}" in p.stdout
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, (tmp_path / "stderr").read_text()


# ----------------------------------------------------------------------------- outstanding operations


@pytest.mark.larch_only("the suite's slapd has no TLS and answers StartTLS as an unknown operation "
                        "(protocolError); with TLS, its starttls.c refuses it with operationsError while "
                        "operations are outstanding, as Larch does")
def test_starttls_is_refused_while_operations_are_outstanding(server, bulk):
    """On the suite's server (no TLS): the outstanding operations are checked first, as in
    slapd's starttls.c, so the answer is operationsError rather than unavailable."""
    base, _ = bulk
    c, _ = stalled_search(server, base)
    try:
        c.send(ldapwire.message(3, ldapwire.extended(START_TLS_OID)))
        while True:
            m = c.recv()
            assert m is not None, "the server closed the connection"
            if m.msgid == 3:
                break
        assert_result(m, "operationsError")
    finally:
        c.close()


@larch
def test_the_access_log_records_tls_handshakes_and_starttls(tls_server, pki):
    """ldaps:// and StartTLS each give the access log a TLS line for their connection (the
    version and cipher the handshake agreed); StartTLS also its EXT request and RESULT
    (tag 120); the ldaps:// connection is logged as an SSL connection."""
    tls = ldap3.Tls(ca_certs_file=str(pki.ca), validate=ssl.CERT_REQUIRED)
    over_ldaps = ldap3.Connection(
        ldap3.Server("127.0.0.1", port=tls_server.ldaps_port, use_ssl=True, tls=tls, get_info=ldap3.NONE),
        ADMIN_DN, tls_server.admin_pw, raise_exceptions=False)
    assert over_ldaps.bind(), over_ldaps.result
    over_ldaps.unbind()
    starttls = ldap3.Connection(
        ldap3.Server("127.0.0.1", port=tls_server.port, tls=tls, get_info=ldap3.NONE),
        ADMIN_DN, tls_server.admin_pw, raise_exceptions=False)
    starttls.open()
    assert starttls.start_tls(), starttls.result
    assert starttls.bind(), starttls.result
    starttls.unbind()
    log = Path(tls_server.workdir) / "data" / "logs" / "access"
    deadline = time.monotonic() + 10
    while True:
        text = log.read_text() if log.exists() else ""
        if text.count(" closed - U1") >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    lines = text.splitlines()
    ssl_conns = [l.split(" conn=")[1].split()[0] for l in lines if "SSL connection from" in l]
    assert len(ssl_conns) == 1, text
    ext = [l for l in lines if ' EXT oid="1.3.6.1.4.1.1466.20037"' in l]
    assert len(ext) == 1, text
    tls_conn = ext[0].split(" conn=")[1].split()[0]
    op = ext[0].split(" op=")[1].split()[0]
    assert any(f" conn={tls_conn} op={op} RESULT err=0 tag=120 " in l for l in lines), text
    for conn in (ssl_conns[0], tls_conn):
        handshake = [l for l in lines if f" conn={conn} TLS1." in l]
        assert len(handshake) == 1 and "-bit " in handshake[0], text
        # The handshake's line comes before the connection's binds.
        assert lines.index(handshake[0]) < next(i for i, l in enumerate(lines) if f" conn={conn} op=" in l and " BIND " in l)
