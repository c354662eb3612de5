"""`larch migrate` (docs/migration.md) against a real slapd from Debian's package.

The procedure:
  1. a slapd.d is made with `slapadd -n0` (cn=config with a config rootDN, the stock
     schemas) and slapd started on a loopback port picked here, stopped by its PID;
  2. through cn=config, over LDAP: a custom schema (cn=schema child with
     olcObjectIdentifier, olcAttributeTypes, olcObjectClasses), modules (memberof, refint,
     unique, pw-sha2), two mdb databases with indexes, limits, access rules (some that
     cannot be mapped: ssf=, set=, a limit for one DN) and overlays (memberof, refint,
     unique);
  3. entries added over LDAP, passwords stored in several schemes (slappasswd's hashes);
  4. `slapcat` of each database, `larch migrate`, `larch check-config`, `larch serve` on
     what it wrote;
  5. both servers answer the same searches (user and operational attributes), binds with
     every stored hash, and compares, identically; the report lists exactly what cannot be
     mapped;
  6. the same configuration as a slapd.conf gives the same report (and an unknown
     directive in it is refused with its line, nothing written);
  7. `larch export` loaded into a stock slapd with `slapadd`: slapcat's dump equals the
     export.
"""

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import ldap
import ldap.modlist
import ldif
import pytest

from conftest import free_port

pytestmark = pytest.mark.larch_only("migrates from a slapd it runs itself")

SLAPD = "/usr/sbin/slapd"
SCHEMA_DIR = Path("/etc/ldap/schema")
CONFIG_DN = "cn=admin,cn=config"
CONFIG_PW = "config-secret"
BASE = "dc=example,dc=com"
SECOND = "o=second"
ADMIN_DN = f"cn=admin,{BASE}"
ADMIN_PW = "migrate-Admin-1"
MANAGER_DN = f"cn=manager,{SECOND}"
DEADLINE_S = 30.0

CUSTOM_SCHEMA = """dn: cn=larchtest,cn=schema,cn=config
objectClass: olcSchemaConfig
cn: larchtest
olcObjectIdentifier: LarchTest 1.3.6.1.4.1.99999.7
olcAttributeTypes: ( LarchTest:1 NAME 'employeeBadge' EQUALITY caseIgnoreMatch
  SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
olcObjectClasses: ( LarchTest:2 NAME 'badgeHolder' SUP top AUXILIARY
  MAY ( employeeBadge ) )
"""

# (uid, password, slappasswd arguments)
USERS = [
    ("alice", "alice-pw", ["-h", "{SSHA}"]),
    ("bob", "bob-pw", ["-h", "{CRYPT}", "-c", "$6$%.16s"]),
    ("carol", "carol-pw", ["-h", "{SMD5}"]),
    ("dave", "dave-pw", ["-h", "{SHA}"]),
    ("erin", "erin-pw", ["-o", "module-load=pw-sha2", "-h", "{SSHA512}"]),
]


def slappasswd(pw, args):
    return subprocess.run(["/usr/sbin/slappasswd", "-o", "module-path=/usr/lib/ldap", *args, "-s", pw],
                          check=True, capture_output=True, text=True).stdout.strip()


def schema_ldif(name):
    """A stock schema's cn=config LDIF, comments removed."""
    lines = [l for l in (SCHEMA_DIR / f"{name}.ldif").read_text().splitlines() if not l.startswith("#")]
    return "\n".join(lines).strip() + "\n"


def wait_port(port, proc, what):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def stop(proc):
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def bootstrap_slapd_d(d, extra=""):
    """A slapd.d made by slapadd -n0: global settings, modules, stock schemas, the config
    database with a rootDN, and `extra` (further cn=config entries)."""
    d.mkdir()
    text = f"""dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: {d.parent}/slapd.pid
olcArgsFile: {d.parent}/slapd.args

dn: cn=module{{0}},cn=config
objectClass: olcModuleList
cn: module{{0}}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

""" + "\n".join(schema_ldif(n) for n in ["core", "cosine", "inetorgperson", "nis"]) + f"""
dn: olcDatabase={{-1}}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {{-1}}frontend

dn: olcDatabase={{0}}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {{0}}config
olcRootDN: {CONFIG_DN}
olcRootPW: {CONFIG_PW}

{extra}"""
    (d.parent / f"{d.name}.ldif").write_text(text)
    p = subprocess.run(["/usr/sbin/slapadd", "-n0", "-F", str(d), "-l", str(d.parent / f"{d.name}.ldif")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def add(conn, dn, attrs):
    conn.add_s(dn, ldap.modlist.addModlist({k: [v.encode() if isinstance(v, str) else v for v in vs]
                                           for k, vs in attrs.items()}))


def connect(port, dn=None, pw=None):
    c = ldap.initialize(f"ldap://127.0.0.1:{port}")
    c.protocol_version = 3
    c.set_option(ldap.OPT_REFERRALS, 0)
    if dn:
        c.simple_bind_s(dn, pw)
    return c


def configure(port, root, rootpw):
    """Step 2: schema, modules, databases, overlays, through cn=config."""
    c = connect(port, CONFIG_DN, CONFIG_PW)
    parser = ldif.LDIFRecordList(io.StringIO(CUSTOM_SCHEMA))
    parser.parse()
    for dn, entry in parser.all_records:
        c.add_s(dn, ldap.modlist.addModlist(entry))
    c.modify_s("cn=module{0},cn=config", [(ldap.MOD_ADD, "olcModuleLoad",
                                            [b"memberof", b"refint", b"unique", b"pw-sha2"])])
    c.modify_s("cn=config", [(ldap.MOD_REPLACE, "olcSizeLimit", [b"250"]),
                             (ldap.MOD_REPLACE, "olcTimeLimit", [b"120"]),
                             (ldap.MOD_REPLACE, "olcIdleTimeout", [b"600"])])
    (root / "db1").mkdir()
    (root / "db2").mkdir()
    add(c, "olcDatabase={1}mdb,cn=config", {
        "objectClass": ["olcDatabaseConfig", "olcMdbConfig"],
        "olcDatabase": ["{1}mdb"],
        "olcDbDirectory": [str(root / "db1")],
        "olcSuffix": [BASE],
        "olcRootDN": [ADMIN_DN],
        "olcRootPW": [rootpw],
        "olcDbIndex": ["objectClass eq,pres", "cn,sn eq,sub", "uid eq", "mail eq,subinitial",
                       "employeeBadge eq", "member eq"],
        "olcLimits": [f'dn.exact="uid=alice,ou=people,{BASE}" size=3'],
        "olcAccess": [
            "{0}to attrs=userPassword by self write by anonymous auth by * none",
            f'{{1}}to dn.subtree="ou=secret,{BASE}" by ssf=128 users read by * none',
            f'{{2}}to dn.subtree="ou=people,{BASE}" attrs=employeeBadge by set="user/uid & [nobody]" write '
            f'by users read by * none',
            "{3}to * by self write by users read by anonymous read",
        ],
    })
    add(c, "olcOverlay={0}memberof,olcDatabase={1}mdb,cn=config", {
        "objectClass": ["olcOverlayConfig", "olcMemberOf"], "olcOverlay": ["{0}memberof"]})
    add(c, "olcOverlay={1}refint,olcDatabase={1}mdb,cn=config", {
        "objectClass": ["olcOverlayConfig", "olcRefintConfig"], "olcOverlay": ["{1}refint"],
        "olcRefintAttribute": ["member"]})
    add(c, "olcOverlay={2}unique,olcDatabase={1}mdb,cn=config", {
        "objectClass": ["olcOverlayConfig", "olcUniqueConfig"], "olcOverlay": ["{2}unique"],
        "olcUniqueURI": ["ldap:///?uid?sub"]})
    add(c, "olcDatabase={2}mdb,cn=config", {
        "objectClass": ["olcDatabaseConfig", "olcMdbConfig"],
        "olcDatabase": ["{2}mdb"],
        "olcDbDirectory": [str(root / "db2")],
        "olcSuffix": [SECOND],
        "olcRootDN": [MANAGER_DN],
        "olcRootPW": ["manager-pw"],
        "olcDbIndex": ["objectClass eq", "ou eq"],
        "olcAccess": ["{0}to * by * read"],
    })
    c.unbind_s()


def populate(port, rootpw):
    """Step 3."""
    c = connect(port, ADMIN_DN, ADMIN_PW)
    add(c, BASE, {"objectClass": ["dcObject", "organization"], "dc": ["example"], "o": ["Example"]})
    add(c, ADMIN_DN, {"objectClass": ["organizationalRole", "simpleSecurityObject"], "cn": ["admin"],
                      "userPassword": [rootpw]})
    for ou in ["people", "groups", "secret"]:
        add(c, f"ou={ou},{BASE}", {"objectClass": ["organizationalUnit"], "ou": [ou]})
    for i, (uid, pw, args) in enumerate(USERS):
        add(c, f"uid={uid},ou=people,{BASE}", {
            "objectClass": ["inetOrgPerson", "badgeHolder"], "uid": [uid], "cn": [uid.title()],
            "sn": [f"{uid.title()}son"], "mail": [f"{uid}@example.com"], "employeeBadge": [f"B-{1000 + i}"],
            "userPassword": [slappasswd(pw, args)]})
    add(c, f"cn=staff,ou=groups,{BASE}", {
        "objectClass": ["groupOfNames"], "cn": ["staff"],
        "member": [f"uid={u},ou=people,{BASE}" for u in ("alice", "bob", "carol")]})
    add(c, f"cn=vault,ou=secret,{BASE}", {"objectClass": ["organizationalRole"], "cn": ["vault"],
                                           "description": ["hidden from plain connections"]})
    c.unbind_s()
    m = connect(port, MANAGER_DN, "manager-pw")
    add(m, SECOND, {"objectClass": ["organization"], "o": ["second"]})
    add(m, f"ou=things,{SECOND}", {"objectClass": ["organizationalUnit"], "ou": ["things"],
                                    "description": ["in the second database"]})
    m.unbind_s()


@pytest.fixture(scope="module")
def migrated(request):
    """Steps 1 to 4: a configured, populated slapd and the Larch migrated from it, both
    running. Yields a dict of what the tests need."""
    if not Path(SLAPD).exists():
        pytest.skip("slapd is not installed (Debian's slapd package)")
    larch_bin = request.config.getoption("--larch-bin")
    root = Path(tempfile.mkdtemp(prefix="larch-e2e-migrate-"))
    procs = []
    try:
        bootstrap_slapd_d(root / "slapd.d")
        slapd_port = free_port()
        err = open(root / "slapd.stderr", "wb")
        slapd = subprocess.Popen([SLAPD, "-d", "0", "-F", str(root / "slapd.d"),
                                  "-h", f"ldap://127.0.0.1:{slapd_port}/"],
                                 stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        procs.append(slapd)
        wait_port(slapd_port, slapd, "slapd")
        rootpw = slappasswd(ADMIN_PW, ["-h", "{SSHA}"])
        configure(slapd_port, root, rootpw)
        populate(slapd_port, rootpw)
        ldifs = []
        for name, base in [("example", BASE), ("second", SECOND)]:
            out = root / f"{name}.ldif"
            p = subprocess.run(["/usr/sbin/slapcat", "-F", str(root / "slapd.d"), "-b", base, "-l", str(out)],
                               capture_output=True, text=True)
            assert p.returncode == 0, p.stderr
            ldifs.append(out)
        args = [larch_bin, "migrate", "--slapd-config", str(root / "slapd.d"), "--out", str(root / "larch"),
                "--json"]
        for l in ldifs:
            args += ["--ldif", str(l)]
        started = time.monotonic()
        run = subprocess.run(args, capture_output=True, text=True, timeout=120)
        migrate_seconds = time.monotonic() - started
        assert run.returncode == 3, (run.returncode, run.stdout, run.stderr)
        report = json.loads(run.stdout)
        config = root / "larch" / "larch.toml"
        check = subprocess.run([larch_bin, "check-config", str(config)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        larch_port = free_port()
        text = config.read_text().replace('listen = ["ldap://127.0.0.1:3389"]',
                                          f'listen = ["ldap://127.0.0.1:{larch_port}"]')
        config.write_text(text + "\n[bind_throttle]\nexempt_loopback = true\n")
        env = {k: v for k, v in os.environ.items() if k != "LARCH_ADMIN_PASSWORD"}
        lerr = open(root / "larch.stderr", "wb")
        larch = subprocess.Popen([larch_bin, "serve", "--config", str(config)], env=env,
                                 stdin=subprocess.DEVNULL, stdout=lerr, stderr=lerr)
        procs.append(larch)
        wait_port(larch_port, larch, "larch serve")
        yield {"root": root, "report": report, "slapd": slapd_port, "larch": larch_port, "ldifs": ldifs,
               "larch_bin": larch_bin, "config": config, "larch_proc": larch, "seconds": migrate_seconds}
    finally:
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(root, ignore_errors=True)


def dropped(report):
    return sorted(i["what"] for i in report["items"] if i["fate"] == "dropped")


# What cannot be mapped, exactly: the two clauses needing SSF and sets, the limit for one
# DN, the second database's rootDN (Larch has one admin). memberof and refint map to
# [groups], unique to [uniqueness].
EXPECTED_DROPPED_CN_CONFIG = sorted([
    f'access to dn.subtree=ou=secret,{BASE} by ssf=128 users read by * none: by ssf=128 users read',
    f'access to dn.subtree=ou=people,{BASE} attrs=employeeBadge by set=user/uid & [nobody] write by users read '
    f'by * none: by set=user/uid & [nobody] write',
    f'olcLimits: dn.exact="uid=alice,ou=people,{BASE}" size=3',
    f"olcRootDN: {MANAGER_DN}",
])


def test_report_lists_exactly_the_unmappable_parts(migrated):
    r = migrated["report"]
    assert dropped(r) == EXPECTED_DROPPED_CN_CONFIG, json.dumps(r, indent=1)
    assert r["exit_status"] == 3
    carried = [i["what"] for i in r["items"] if i["fate"] == "carried"]
    assert any("larchtest" in w for w in carried), carried
    assert "5 userPassword" not in carried
    for scheme in ["{SSHA}", "{CRYPT}", "{SMD5}", "{SHA}", "{SSHA512}"]:
        assert any(w.startswith(f"userPassword {scheme} ") for w in carried), (scheme, carried)
    # memberof and refint became [groups]; slapd's memberOf values agree with the groups.
    assert "overlay memberof" in carried and "overlay refint" in carried, carried
    assert "overlay unique" in carried, carried
    assert "memberOf values" in carried, carried
    # Every dropped item names its slapd.d file and line.
    for i in r["items"]:
        if i["fate"] == "dropped":
            assert i["file"] and "slapd.d" in i["file"] and i["line"] > 0, i
    assert migrated["seconds"] < 30


def normalize(entries):
    """{dn (lowercase): {attr (lowercase): sorted values}}."""
    out = {}
    for dn, attrs in entries:
        if dn is None:
            continue
        out[dn.lower()] = {k.lower(): sorted(v) for k, v in attrs.items()}
    return out


def search_both(migrated, base, filt, attrs, who=None):
    results = []
    for port in (migrated["slapd"], migrated["larch"]):
        c = connect(port, *(who or (None, None)))
        try:
            results.append(normalize(c.search_s(base, ldap.SCOPE_SUBTREE, filt, attrs)))
        except ldap.LDAPError as e:
            results.append(type(e).__name__)
        finally:
            c.unbind_s()
    return results


SEARCHES = [
    (BASE, "(objectClass=*)", ["*"]),
    (BASE, "(employeeBadge=B-100*)", ["cn", "employeeBadge", "mail"]),
    (BASE, "(uid=alice)", ["*", "entryUUID", "entryCSN", "createTimestamp", "modifyTimestamp",
                           "creatorsName", "modifiersName", "structuralObjectClass"]),
    (BASE, "(&(objectClass=inetOrgPerson)(mail=*example*))", ["uid", "sn"]),
    (BASE, "(member=uid=bob,ou=people,dc=example,dc=com)", ["cn"]),
    (f"ou=secret,{BASE}", "(objectClass=*)", ["*"]),
    (SECOND, "(objectClass=*)", ["*", "entryUUID", "creatorsName"]),
]


# alice has a size limit of her own (olcLimits), which is not carried over (listed in the
# report): bob is the user the searches run as.
@pytest.mark.parametrize("who", [None, (f"uid=bob,ou=people,{BASE}", "bob-pw"), (ADMIN_DN, ADMIN_PW)],
                         ids=["anonymous", "user", "admin"])
def test_both_servers_answer_searches_alike(migrated, who):
    for base, filt, attrs in SEARCHES:
        slapd, larch = search_both(migrated, base, filt, attrs, who)
        assert slapd == larch, (base, filt, who, slapd, larch)
        if who is None and base == f"ou=secret,{BASE}":
            assert slapd == "NO_SUCH_OBJECT" or slapd == {}, slapd


def test_binds_with_every_stored_hash(migrated):
    for uid, pw, _ in USERS:
        dn = f"uid={uid},ou=people,{BASE}"
        for port in (migrated["slapd"], migrated["larch"]):
            connect(port, dn, pw).unbind_s()
            with pytest.raises(ldap.INVALID_CREDENTIALS):
                connect(port, dn, pw + "x")
    for port in (migrated["slapd"], migrated["larch"]):
        connect(port, ADMIN_DN, ADMIN_PW).unbind_s()


def test_compares_alike(migrated):
    cases = [(f"uid=alice,ou=people,{BASE}", "employeeBadge", b"B-1000"),
             (f"uid=alice,ou=people,{BASE}", "employeeBadge", b"B-9"),
             (f"cn=staff,ou=groups,{BASE}", "member", f"uid=carol,ou=people,{BASE}".encode()),
             (f"ou=things,{SECOND}", "description", b"in the second database")]
    for who in [None, (f"uid=bob,ou=people,{BASE}", "bob-pw")]:
        for dn, attr, value in cases:
            answers = []
            for port in (migrated["slapd"], migrated["larch"]):
                c = connect(port, *(who or (None, None)))
                try:
                    answers.append(c.compare_s(dn, attr, value))
                except ldap.LDAPError as e:
                    answers.append(type(e).__name__)
                finally:
                    c.unbind_s()
            assert answers[0] == answers[1], (dn, attr, who, answers)


SLAPD_CONF = """include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
objectidentifier LarchTest 1.3.6.1.4.1.99999.7
attributetype ( LarchTest:1 NAME 'employeeBadge' EQUALITY caseIgnoreMatch
  SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
objectclass ( LarchTest:2 NAME 'badgeHolder' SUP top AUXILIARY
  MAY ( employeeBadge ) )
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
moduleload refint
moduleload unique
moduleload pw-sha2
pidfile {root}/c.pid
argsfile {root}/c.args
sizelimit 250
timelimit 120
idletimeout 600

database mdb
suffix "{base}"
rootdn "{admin}"
rootpw {rootpw}
directory {root}/db1
index objectClass eq,pres
index cn,sn eq,sub
index uid eq
index mail eq,subinitial
index employeeBadge eq
index member eq
limits dn.exact="uid=alice,ou=people,{base}" size=3
access to attrs=userPassword by self write by anonymous auth by * none
access to dn.subtree="ou=secret,{base}" by ssf=128 users read by * none
access to dn.subtree="ou=people,{base}" attrs=employeeBadge
  by set="user/uid & [nobody]" write
  by users read
  by * none
access to *
  by dynacl/aci write
  by self write
  by users read
  by anonymous read
overlay memberof
overlay refint
refint_attributes member
overlay unique
unique_uri ldap:///?uid?sub

database mdb
suffix "{second}"
rootdn "{manager}"
rootpw manager-pw
directory {root}/db2
index objectClass eq
index ou eq
access to * by * read
"""


def test_the_same_from_slapd_conf(migrated, tmp_path):
    rootpw = slappasswd(ADMIN_PW, ["-h", "{SSHA}"])
    conf = tmp_path / "slapd.conf"
    conf.write_text(SLAPD_CONF.format(root=tmp_path, base=BASE, admin=ADMIN_DN, rootpw=rootpw, second=SECOND,
                                      manager=MANAGER_DN))
    args = [migrated["larch_bin"], "migrate", "--slapd-config", str(conf), "--out", str(tmp_path / "out"),
            "--json"]
    for l in migrated["ldifs"]:
        args += ["--ldif", str(l)]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stderr
    report = json.loads(run.stdout)
    got = dropped(report)
    # The same parts as from cn=config, named as slapd.conf writes them, and the dynacl clause.
    assert len(got) == len(EXPECTED_DROPPED_CN_CONFIG) + 1, json.dumps(got, indent=1)
    assert any("dynacl/aci" in w for w in got), got
    assert any(w.startswith("limits dn.exact=") for w in got), got
    for i in report["items"]:
        if i["fate"] == "dropped" and i["file"]:
            assert i["file"] == str(conf) and i["line"] > 0, i
    check = subprocess.run([migrated["larch_bin"], "check-config", str(tmp_path / "out" / "larch.toml")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    # Both migrations wrote the same rules, indexes and limits.
    def settings(path):
        return [l for l in path.read_text().splitlines()
                if l and not l.startswith("#") and "listen" not in l and "bind_throttle" not in l
                and "exempt_loopback" not in l and not l.startswith("files") and "schema/" not in l]
    assert settings(tmp_path / "out" / "larch.toml") == settings(migrated["config"])


def test_bad_input_is_refused_with_file_and_line_and_nothing_written(migrated, tmp_path):
    conf = tmp_path / "slapd.conf"
    conf.write_text("include /etc/ldap/schema/core.schema\nsizelimit 10\n\ndatabase mdb\nsuffix dc=x\n"
                    "indx cn eq\n")
    out = tmp_path / "out"
    run = subprocess.run([migrated["larch_bin"], "migrate", "--slapd-config", str(conf), "--ldif",
                          str(migrated["ldifs"][0]), "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 1
    assert f"{conf}:6: unknown directive `indx`" in run.stderr, run.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [conf]
    broken = tmp_path / "broken.schema"
    broken.write_text("attributetype ( 1.3.6.1.4.1.99999.9.1 NAME 'okAttr'\n"
                      "  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n\n"
                      "attributetype ( 1.3.6.1.4.1.99999.9.2 NAME 'badAttr'\n"
                      "  EQUALITY noSuchMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n")
    conf.write_text(f"include /etc/ldap/schema/core.schema\ninclude {broken}\ndatabase mdb\nsuffix dc=x\n")
    run = subprocess.run([migrated["larch_bin"], "migrate", "--slapd-config", str(conf), "--ldif",
                          str(migrated["ldifs"][0]), "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 1
    assert f"{broken}:4" in run.stderr and "noSuchMatch" in run.stderr, run.stderr
    assert not out.exists()


def parse_ldif(path):
    parser = ldif.LDIFRecordList(open(path, "rb"))
    parser.parse()
    return normalize(parser.all_records)


def test_export_loads_into_slapd_with_slapadd(migrated, tmp_path):
    """`larch export` -> slapadd into a stock slapd with the same schema -> slapcat: the
    same entries, operational attributes included."""
    exported = tmp_path / "export.ldif"
    run = subprocess.run([migrated["larch_bin"], "export", "--config", str(migrated["config"]),
                          "--base", BASE, "-o", str(exported)], capture_output=True, text=True)
    # The server holds the data directory; export reads its snapshot and log without writing.
    assert run.returncode == 0, run.stderr
    (tmp_path / "db").mkdir()
    # memberOf is the memberof overlay's attribute in slapd: the module is loaded, as the
    # slapd migrated from had it.
    bootstrap_slapd_d(tmp_path / "slapd.d", CUSTOM_SCHEMA + f"""
dn: cn=module{{1}},cn=config
objectClass: olcModuleList
cn: module{{1}}
olcModulePath: /usr/lib/ldap
olcModuleLoad: memberof

dn: olcDatabase={{1}}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {{1}}mdb
olcDbDirectory: {tmp_path}/db
olcSuffix: {BASE}

dn: olcOverlay={{0}}memberof,olcDatabase={{1}}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcMemberOf
olcOverlay: {{0}}memberof
""")
    p = subprocess.run(["/usr/sbin/slapadd", "-q", "-F", str(tmp_path / "slapd.d"), "-b", BASE, "-l",
                        str(exported)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    dump = tmp_path / "dump.ldif"
    p = subprocess.run(["/usr/sbin/slapcat", "-F", str(tmp_path / "slapd.d"), "-b", BASE, "-l", str(dump)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert parse_ldif(dump) == parse_ldif(exported)
    # And what Larch holds is what slapd held, memberOf included (compared as DNs: Larch
    # writes a group's DN as the group is named).
    def dn_values_folded(entries):
        for attrs in entries.values():
            if "memberof" in attrs:
                attrs["memberof"] = sorted(v.lower() for v in attrs["memberof"])
        return entries
    original = dn_values_folded(parse_ldif(migrated["ldifs"][0]))
    assert dn_values_folded(parse_ldif(exported)) == original
