"""Fixtures of the end-to-end suite: one LDAP server for the whole run, connections, and a
fresh subtree per test.

The server under test is `larch serve` (`--server larch`, the default) or OpenLDAP's
slapd with back-mdb configured the same way (`--server slapd`), which proves that every
test asserts real LDAP behaviour. Tests that only make sense for one of them carry a
marker:
  * `@pytest.mark.larch_only("why")`: Larch's own configuration, limits or rootDSE values;
  * `@pytest.mark.not_slapd("why")`: RFC behaviour OpenLDAP 2.5 does not have (the reason
    names what slapd does instead).

How the session server is run (`LdapServer`):
  1. a fresh temporary directory holds the configuration and the data;
  2. a free port on 127.0.0.1 is picked (bind to port 0, read it, close it);
  3. Larch: `larch.toml` with that listener and `data_dir = "data"`, started as
     `LARCH_ADMIN_PASSWORD=<pw> larch serve --config <dir>/larch.toml`; on first start it
     creates the suffix entry and the admin entry itself.
     slapd: a private slapd.conf (back-mdb, same suffix, rootdn, schemas, indexes and size
     limit), the suffix and admin entries loaded with slapadd first, started in the
     foreground (`-d 0`) so the PID is the server's;
  4. ready = an anonymous Bind gets its BindResponse (polled until a deadline; if the
     process exits first, the failure shows its standard error);
  5. at the end: SIGTERM to that PID, wait, and the exit status must be 0.
The server is only ever signalled by its PID, never by name.
"""

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import ldaputil
import ldapwire

REPO = Path(__file__).resolve().parents[2]
BASE = "dc=example,dc=com"
ADMIN_DN = "cn=admin,dc=example,dc=com"
ADMIN_PW = "e2e-Admin-Secret"
# How long a server may take to start answering (a cold start builds indexes).
START_DEADLINE_S = 60.0
# How long a SIGTERM'd server may take to write its shutdown snapshot and exit.
STOP_DEADLINE_S = 60.0


def pytest_addoption(parser):
    parser.addoption("--server", default=os.environ.get("LARCH_E2E_SERVER", "larch"),
                     choices=["larch", "slapd"], help="server under test (default: larch)")
    parser.addoption("--larch-bin", default=os.environ.get("LARCH_BIN", str(REPO / "target/release/larch")),
                     help="the larch binary (default: $LARCH_BIN or target/release/larch)")
    parser.addoption("--run-slapd-differences", action="store_true",
                     help="with --server slapd, also run the not_slapd tests (to see that slapd still differs)")


def pytest_configure(config):
    config.addinivalue_line("markers", "larch_only(reason): Larch-specific behaviour; skipped on slapd")
    config.addinivalue_line("markers", "not_slapd(reason): RFC behaviour slapd 2.5 lacks; skipped on slapd")
    config.addinivalue_line("markers", "reliability: the reliability suites (crash cycles, faults, hostile "
                            "input, overload, soak); short form unless LARCH_RELIABILITY_LONG=1")
    if config.getoption("--server") == "larch":
        binary = Path(config.getoption("--larch-bin"))
        if not binary.is_file() or not os.access(binary, os.X_OK):
            pytest.exit(f"larch binary not found at {binary} (build it with `cargo build --release -p larch`, "
                        f"or set LARCH_BIN)", returncode=3)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--server") != "slapd":
        return
    names = ("larch_only",) if config.getoption("--run-slapd-differences") else ("larch_only", "not_slapd")
    for item in items:
        for name in names:
            mark = item.get_closest_marker(name)
            if mark is not None:
                why = mark.args[0] if mark.args else name
                prefix = "Larch-specific" if name == "larch_only" else "slapd differs"
                item.add_marker(pytest.mark.skip(reason=f"{prefix}: {why}"))


def reliability_long():
    """True when the reliability suites run their long form (`scripts/reliability.sh --long`)."""
    return os.environ.get("LARCH_RELIABILITY_LONG") == "1"


# Ports handed out below Linux's ephemeral range (32768-60999 by default): a port the
# kernel picked (`bind(0)`) is in that range, where the source port of any outgoing
# connection, a cluster node dialing its peers included, can take it before the server
# that was given it binds it.
_PORTS_FROM, _PORTS_TO = 20000, 32000

# Every port handed out, never handed out again: a port is free when picked, but a second
# pick before the first server binds it would find it free too (a cluster's nine ports are
# picked before its first node starts).
_handed_out = set()


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago, outside the ephemeral range,
    and not handed out before by this process."""
    for _ in range(100):
        port = random.randrange(_PORTS_FROM, _PORTS_TO)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _handed_out.add(port)
    return port


# The start of every slapd.conf the tests write: Debian's schemas and back-mdb.
SLAPD_PREAMBLE = """
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb"""


def slapd_password_hash(pw):
    """{SSHA} of pw, made by slappasswd (the form slapd stores)."""
    return subprocess.run(["/usr/sbin/slappasswd", "-h", "{SSHA}", "-s", pw], check=True,
                          capture_output=True, text=True).stdout.strip()


class LdapServer:
    """One server process on a private directory; see the module doc for the procedure.

    Public attributes: kind, host, port, url, base, admin_dn, admin_pw, pid, workdir.
    """

    def __init__(self, kind, workdir, larch_bin=None, larch_extra_toml="", slapd_extra_global="",
                 slapd_extra_db="", larch_extra_listen=()):
        self.kind = kind
        self.workdir = Path(workdir)
        self.host = "127.0.0.1"
        self.port = free_port()
        self.url = f"ldap://{self.host}:{self.port}"
        self.base = BASE
        self.admin_dn = ADMIN_DN
        self.admin_pw = ADMIN_PW
        self.larch_bin = larch_bin
        self.proc = None
        self.pid = None
        self.stderr_path = self.workdir / "server.stderr"
        # Further listen URLs of a Larch server (ldaps:// ones need a [tls] table).
        self.larch_extra_listen = list(larch_extra_listen)
        if kind == "larch":
            self._setup_larch(larch_extra_toml)
        else:
            self._setup_slapd(slapd_extra_global, slapd_extra_db)

    # ------------------------------------------------------------------ configuration

    def _setup_larch(self, extra_toml):
        # Every test binds from 127.0.0.1, and several bind with wrong passwords on
        # purpose (the admin's DN among them): the failed-bind throttle would hold back
        # the binds of those DNs in the tests after them. Loopback is exempt here unless a test configures the throttle itself
        # (test_passwords.py does, on its own server).
        if "[bind_throttle]" not in extra_toml:
            extra_toml += "\n[bind_throttle]\nexempt_loopback = true\n"
        (self.workdir / "larch.toml").write_text(
            "[server]\n"
            f"listen = [{', '.join(repr(u) for u in [self.url, *self.larch_extra_listen])}]\n"
            'data_dir = "data"\n' + extra_toml
        )

    def _setup_slapd(self, extra_global, extra_db):
        d = self.workdir
        (d / "mdb").mkdir()
        conf = f"""{SLAPD_PREAMBLE}
moduleload sssvlv
pidfile {d}/slapd.pid
argsfile {d}/slapd.args
loglevel none
sizelimit 500
timelimit 3600
{extra_global}

database mdb
maxsize 1073741824
suffix "{BASE}"
rootdn "{ADMIN_DN}"
rootpw {ADMIN_PW}
directory {d}/mdb
index objectClass eq,pres
index cn,sn,mail,uid eq
index member,uniqueMember eq
overlay sssvlv
{extra_db}

access to attrs=userPassword
  by self write
  by anonymous auth
  by * none
access to *
  by self write
  by * read
"""
        (d / "slapd.conf").write_text(conf)
        # The same two entries Larch creates on its first start.
        ldif = f"""dn: {BASE}
objectClass: top
objectClass: dcObject
objectClass: organization
dc: example
o: example

dn: {ADMIN_DN}
objectClass: simpleSecurityObject
objectClass: organizationalRole
cn: admin
userPassword: {slapd_password_hash(ADMIN_PW)}
"""
        (d / "init.ldif").write_text(ldif)
        p = subprocess.run(["/usr/sbin/slapadd", "-q", "-f", str(d / "slapd.conf"), "-l", str(d / "init.ldif")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"slapadd failed ({p.returncode}): {p.stderr}")

    # ------------------------------------------------------------------ process

    def start(self):
        """Starts the server and waits until it answers an anonymous Bind."""
        self.spawn()
        self._wait_ready()

    def spawn(self):
        """Starts the server process without waiting for it to answer (`wait_ready` does)."""
        err = open(self.stderr_path, "ab")
        if self.kind == "larch":
            env = dict(os.environ)
            env["LARCH_ADMIN_PASSWORD"] = self.admin_pw
            args = [str(self.larch_bin), "serve", "--config", str(self.workdir / "larch.toml")]
            cwd = self.workdir
        else:
            env = dict(os.environ)
            args = ["/usr/sbin/slapd", "-d", "0", "-f", str(self.workdir / "slapd.conf"), "-h", self.url + "/"]
            cwd = self.workdir
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        err.close()
        self.pid = self.proc.pid

    def wait_ready(self):
        """Waits until a spawned server answers an anonymous Bind (raises if it exits or
        does not answer within START_DEADLINE_S)."""
        self._wait_ready()

    def stderr_tail(self):
        """The last 4000 characters the server wrote to its standard error."""
        try:
            return self.stderr_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def _wait_ready(self):
        deadline = time.monotonic() + START_DEADLINE_S
        last = None
        while time.monotonic() < deadline:
            status = self.proc.poll()
            if status is not None:
                raise RuntimeError(f"{self.kind} exited with status {status} while starting; its stderr:\n"
                                   f"{self.stderr_tail()}")
            try:
                c = ldapwire.RawConnection(self.host, self.port, timeout=2)
                try:
                    answer = c.request(1, ldapwire.bind_simple())
                    if answer[-1].code == 0:
                        return
                    last = f"anonymous bind answered {answer[-1].code}"
                finally:
                    c.close()
            except (OSError, ldapwire.WireError, TimeoutError) as e:
                last = repr(e)
            time.sleep(0.02)
        raise RuntimeError(f"{self.kind} did not answer on {self.url} within {START_DEADLINE_S}s "
                           f"(last attempt: {last}); its stderr:\n{self.stderr_tail()}")

    def stop(self):
        """SIGTERM by PID, wait; returns the exit status."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        try:
            return proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RuntimeError(f"{self.kind} (pid {proc.pid}) did not exit within {STOP_DEADLINE_S}s of SIGTERM")

    def restart(self):
        """A clean stop (exit status 0 required) and a start on the same data."""
        status = self.stop()
        assert status == 0, f"{self.kind} exited with status {status} on SIGTERM; stderr:\n{self.stderr_tail()}"
        self.start()

    def kill9_and_restart(self):
        """SIGKILL by PID (no chance to flush anything) and a start on the same data."""
        self.kill9()
        self.start()

    def kill9(self):
        """SIGKILL by PID and wait for the process to be gone."""
        proc, self.proc = self.proc, None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    def alive(self):
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None


def make_server(config, tmp_root, **extra):
    """A configured (not yet started) LdapServer of the kind chosen on the command line."""
    kind = config.getoption("--server")
    return LdapServer(kind, tmp_root, larch_bin=config.getoption("--larch-bin"), **extra)


@pytest.fixture(scope="session")
def server(request):
    """The one server of the run (see the module doc)."""
    tmp = tempfile.mkdtemp(prefix=f"larch-e2e-{request.config.getoption('--server')}-")
    srv = None
    try:
        srv = make_server(request.config, tmp)
        srv.start()
    except (RuntimeError, OSError) as e:
        # Every test needs this server: end the run with the reason rather than failing
        # each test with the same message.
        if srv is not None:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.exit(f"the server under test did not start: {e}", returncode=3)
    yield srv
    status = srv.stop()
    stderr = srv.stderr_tail()
    shutil.rmtree(tmp, ignore_errors=True)
    assert status == 0, f"{srv.kind} exited with status {status} on SIGTERM; stderr:\n{stderr}"


def module_server(request, prefix, setup=None, **extra):
    """A started server of the kind chosen on the command line, for the tests of one module
    (a module-scoped fixture does `yield from module_server(...)`): configured with `extra`
    (as `make_server`), `setup(srv)` run once it answers, stopped by its PID after the
    module, and its exit status must be 0."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    srv = make_server(request.config, tmp, **extra)
    try:
        srv.start()
        if setup is not None:
            setup(srv)
    except BaseException:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    yield srv
    status = srv.stop()
    stderr = srv.stderr_tail()
    shutil.rmtree(tmp, ignore_errors=True)
    assert status == 0, f"{srv.kind} exited with status {status}; stderr:\n{stderr}"


@pytest.fixture
def make_extra_server(request):
    """Factory for a further, short-lived, started server with extra configuration:
    make_extra_server(larch_extra_toml=..., slapd_extra_global=..., slapd_extra_db=...).
    Each is stopped after the test, and must exit with status 0."""
    made = []

    def factory(**extra):
        tmp = tempfile.mkdtemp(prefix="larch-e2e-extra-")
        try:
            srv = make_server(request.config, tmp, **extra)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        made.append((srv, tmp))
        srv.start()
        return srv

    yield factory
    statuses = []
    for srv, tmp in made:
        statuses.append((srv.kind, srv.stop(), srv.stderr_tail()))
        shutil.rmtree(tmp, ignore_errors=True)
    for kind, status, stderr in statuses:
        assert status == 0, f"{kind} exited with status {status} on SIGTERM; stderr:\n{stderr}"


@pytest.fixture
def admin(server):
    """An ldap3 connection bound as the admin."""
    conn = ldaputil.connect(server, server.admin_dn, server.admin_pw)
    ldaputil.assert_result(conn, "success")
    yield conn
    _close(conn)


@pytest.fixture
def anon(server):
    """An anonymous ldap3 connection (anonymous Bind done)."""
    conn = ldaputil.connect(server)
    ldaputil.assert_result(conn, "success")
    yield conn
    _close(conn)


def _close(conn):
    """Unbinds; a connection the server dropped (a restart in the test) is just closed."""
    try:
        conn.unbind()
    except Exception:  # noqa: BLE001 - the connection may be gone already
        pass


_counter = [0]


@pytest.fixture
def subtree(server):
    """A fresh `ou=t<N>,dc=example,dc=com` made by the admin, deleted (with all below it)
    after the test."""
    _counter[0] += 1
    dn = f"ou=t{_counter[0]},{BASE}"
    conn = ldaputil.connect(server, server.admin_dn, server.admin_pw)
    ldaputil.delete_tree(conn, dn)
    conn.add(dn, attributes={"objectClass": ["organizationalUnit"], "ou": f"t{_counter[0]}"})
    ldaputil.assert_result(conn, "success")
    conn.unbind()
    yield dn
    if server.alive():
        conn = ldaputil.connect(server, server.admin_dn, server.admin_pw)
        ldaputil.delete_tree(conn, dn)
        conn.unbind()


# The bulk subtree: enough entries to pass the server's size limit (500), each large enough
# that a search of all of them cannot fit in the socket buffers of both ends (Linux allows
# up to 4 MiB of send buffer by default), so a search of it is still running when a client
# that stopped reading sends Abandon or Cancel.
BULK_ENTRIES = 600
BULK_DESCRIPTION_BYTES = 16000


@pytest.fixture(scope="session")
def bulk(server):
    """`ou=bulk,dc=example,dc=com` with BULK_ENTRIES person entries (cn=bNNNNN, sn=s<i mod 7>,
    a large description), loaded with one ldapadd; returns (dn, count). Never modified."""
    dn = f"ou=bulk,{BASE}"
    parts = [ldaputil.ldif_entry(dn, {"objectClass": "organizationalUnit", "ou": "bulk"})]
    for i in range(BULK_ENTRIES):
        parts.append(ldaputil.ldif_entry(f"cn=b{i:05d},{dn}", {
            "objectClass": "person", "cn": f"b{i:05d}", "sn": f"s{i % 7}",
            "description": (f"{i:05d}" * (BULK_DESCRIPTION_BYTES // 5 + 1))[:BULK_DESCRIPTION_BYTES]}))
    ldaputil.ldapadd_ok(server, "".join(parts))
    return dn, BULK_ENTRIES


def corpus_dir():
    """The shared third-party PDU corpus."""
    env = os.environ.get("LARCH_CORPUS") or os.environ.get("LARCH_LDAP_CORPUS")
    return Path(env) if env else REPO.parent / "shared" / "ldap-corpus"
