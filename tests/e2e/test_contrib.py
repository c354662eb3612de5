"""What ships in contrib/systemd and what docs/operations.md tells operators to run:

* `systemd-analyze verify` accepts the unit (a copy whose ExecStart names the binary under
  test, since verify needs it to exist); its output must not mention the unit at all,
  because verify exits 0 on unknown keys and bad values and only says so;
* the unit and the example configuration agree: the data directory and the access log are
  in the directories the unit creates and lets the server write;
* the example larch.toml is accepted by `larch check-config` (with its absolute paths moved
  into a temporary directory and a certificate made for the test);
* `larch serve`, run under strace on that configuration through a workload touching what
  the unit confines (plain, StartTLS and LDAPS clients, writes, failed binds, cn=Monitor,
  the metrics endpoint, SIGHUP, an online backup, SIGTERM), makes only system calls the
  unit's SystemCallFilter allows, opens sockets only of its RestrictAddressFamilies, and
  maps no memory writable and executable (MemoryDenyWriteExecute);
* every `larch` command in a sh block of docs/operations.md and contrib/systemd/README.md
  exists (`larch <command> --help` exits 0) and takes every option shown with it; every
  relative link of both files leads to a file and heading that exist; the guide's
  Prometheus snippets pass `promtool check`.

systemd-analyze (Debian package systemd) is needed for the unit's checks: they are skipped
when it is missing unless LARCH_REQUIRE_SYSTEMD_ANALYZE is set. The system call check also
needs strace and is skipped without it; promtool as in test_metrics.py
(LARCH_REQUIRE_PROMETHEUS)."""

import os
import re
import shlex
import shutil
import subprocess
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import free_port

pytestmark = pytest.mark.larch_only("Larch's unit file, example configuration and guide")

REPO = Path(__file__).resolve().parents[2]
CONTRIB = REPO / "contrib" / "systemd"
UNIT = CONTRIB / "larch.service"
EXAMPLE_TOML = CONTRIB / "larch.toml"
GUIDE = REPO / "docs" / "operations.md"
GUIDES = [GUIDE, CONTRIB / "README.md"]
# The ExecStart the unit and its README document.
EXEC_START = "/usr/local/bin/larch serve --config /etc/larch/larch.toml"
ADMIN_DN = "cn=admin,dc=example,dc=com"
ADMIN_PW = "contrib-Admin-pw"
DEADLINE_S = 30.0


def need_systemd_analyze():
    tool = shutil.which("systemd-analyze")
    if tool is None:
        if os.environ.get("LARCH_REQUIRE_SYSTEMD_ANALYZE"):
            pytest.fail("systemd-analyze is missing (Debian package systemd) and LARCH_REQUIRE_SYSTEMD_ANALYZE is set")
        pytest.skip("systemd-analyze is missing (Debian package systemd)")
    return tool


@pytest.fixture
def larch_bin(request):
    return request.config.getoption("--larch-bin")


def unit_settings(text):
    """{key: [value, ...]} of the unit's assignments (every section; comments skipped)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


# ---------------------------------------------------------------- the unit


def test_systemd_analyze_verify_accepts_the_unit(tmp_path, larch_bin):
    tool = need_systemd_analyze()
    text = UNIT.read_text()
    assert text.count(f"ExecStart={EXEC_START}\n") == 1, "the unit's ExecStart is not the documented one"
    copy = tmp_path / "larch.service"
    copy.write_text(text.replace(f"ExecStart={EXEC_START}", f"ExecStart={larch_bin} serve --config /etc/larch/larch.toml"))
    p = subprocess.run([tool, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    # verify says "Unknown key", "Failed to parse ..." and exits 0 all the same: any line
    # naming the unit is a finding.
    about_unit = [l for l in (p.stdout + p.stderr).splitlines() if "larch.service" in l]
    assert p.returncode == 0 and not about_unit, f"exit {p.returncode}:\n{p.stdout}{p.stderr}"


def test_the_unit_and_the_example_configuration_agree():
    settings = unit_settings(UNIT.read_text())
    toml = tomllib.loads(EXAMPLE_TOML.read_text())
    state = "/var/lib/" + settings["StateDirectory"][0]
    logs = "/var/log/" + settings["LogsDirectory"][0]
    writable = [p.lstrip("-") for v in settings["ReadWritePaths"] for p in v.split()]
    assert state in writable and logs in writable, writable
    data_dir = toml["server"]["data_dir"]
    access_log = toml["access_log"]["path"]
    assert data_dir.startswith(state + "/"), (data_dir, state)
    assert access_log.startswith(logs + "/"), (access_log, logs)
    assert settings["EnvironmentFile"] == ["/etc/larch/larch.env"]
    assert toml["directory"]["admin_password_env"] == "LARCH_ADMIN_PASSWORD"
    # The server writes online backups itself: the README's and the guide's directory.
    assert "-/var/backups/larch" in settings["ReadWritePaths"][0].split()
    assert "/var/backups/larch" in GUIDE.read_text()


# ---------------------------------------------------------------- the example configuration


def make_certificate(d):
    d.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", str(d / "server.key"), "-out", str(d / "server.pem"), "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def localized_example(root, ldap_port=None, ldaps_port=None, metrics_port=None):
    """The example configuration with /etc/larch, /var/lib/larch and /var/log/larch moved
    below root (a certificate made in root/etc/larch/tls), and optionally other ports."""
    text = EXAMPLE_TOML.read_text()
    for path in ("/etc/larch/tls/server.pem", "/etc/larch/tls/server.key", "/var/lib/larch/data",
                 "/var/log/larch/access", "ldap://0.0.0.0:389", "ldaps://0.0.0.0:636", "127.0.0.1:9330"):
        assert path in text, f"{path} is no longer in {EXAMPLE_TOML}: update this test"
    for d in ("/etc/larch", "/var/lib/larch", "/var/log/larch"):
        text = text.replace(f'"{d}/', f'"{root}{d}/')
        (root / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    make_certificate(root / "etc/larch/tls")
    if ldap_port:
        text = text.replace("ldap://0.0.0.0:389", f"ldap://127.0.0.1:{ldap_port}")
        text = text.replace("ldaps://0.0.0.0:636", f"ldaps://127.0.0.1:{ldaps_port}")
        text = text.replace('"127.0.0.1:9330"', f'"127.0.0.1:{metrics_port}"')
    path = root / "larch.toml"
    path.write_text(text)
    return path


def test_the_example_configuration_is_accepted(tmp_path, larch_bin):
    conf = localized_example(tmp_path)
    p = subprocess.run([larch_bin, "check-config", str(conf)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith(f"{conf}: ok"), p.stdout
    assert "tls           on" in p.stdout and "ldaps://0.0.0.0:636" in p.stdout, p.stdout


# ---------------------------------------------------------------- what the hardening allows


def allowed_syscalls(tool, filters):
    """The system calls a unit's SystemCallFilter= lines allow (sets expanded with
    `systemd-analyze syscall-filter`; `~` lines deny)."""
    listing = subprocess.run([tool, "syscall-filter", "--no-pager"], capture_output=True, text=True).stdout
    groups, current = {}, None
    for line in listing.splitlines():
        if line.startswith("@"):
            current = line.strip()
            groups[current] = []
        elif line.strip() and not line.strip().startswith("#") and current:
            groups[current].append(line.strip())

    def expand(name):
        if not name.startswith("@"):
            return {name}
        assert name in groups, f"systemd-analyze does not know {name}"
        return set().union(*(expand(x) for x in groups[name]))

    allowed = set()
    for value in filters:
        deny = value.startswith("~")
        names = set().union(*(expand(x) for x in value.lstrip("~").split()))
        allowed = allowed - names if deny else allowed | names
    return allowed


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode().strip()
    except OSError as e:
        return None, str(e)


def ldap(tool, *args, env, input=None):
    p = subprocess.run([tool, *args], capture_output=True, text=True, env=env, input=input, timeout=60)
    return p


def traced_pid(trace):
    """The PID of the process strace started: the one that made the first execve."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        m = re.search(r"^(\d+) +execve\(", trace.read_text() if trace.exists() else "", re.M)
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    raise AssertionError("strace started no process")


def test_the_server_stays_within_the_units_system_call_filter(tmp_path, larch_bin):
    tool = need_systemd_analyze()
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is missing (Debian package strace)")
    settings = unit_settings(UNIT.read_text())
    allowed = allowed_syscalls(tool, settings["SystemCallFilter"])
    families = set(settings["RestrictAddressFamilies"][0].split())
    assert settings["MemoryDenyWriteExecute"] == ["true"]

    ports = [free_port() for _ in range(3)]
    conf = localized_example(tmp_path, *ports)
    with conf.open("a") as f:
        f.write(f'\n[audit_log]\nenabled = true\npath = "{tmp_path}/var/log/larch/audit"\n')
    url, ldaps_url, metrics = f"ldap://127.0.0.1:{ports[0]}", f"ldaps://127.0.0.1:{ports[1]}", f"http://127.0.0.1:{ports[2]}"
    trace = tmp_path / "strace.out"
    env = dict(os.environ, LARCH_ADMIN_PASSWORD=ADMIN_PW, LDAPTLS_CACERT=str(tmp_path / "etc/larch/tls/server.pem"))
    stderr = (tmp_path / "serve.stderr").open("w")
    proc = subprocess.Popen([strace, "-f", "-qq", "-o", str(trace), larch_bin, "serve", "--config", str(conf)],
                            env=env, stdout=stderr, stderr=stderr)
    try:
        pid = traced_pid(trace)
        deadline = time.monotonic() + DEADLINE_S
        while http_get(f"{metrics}/readyz") != (200, "ready"):
            assert proc.poll() is None, (tmp_path / "serve.stderr").read_text()
            assert time.monotonic() < deadline, "not ready in time"
            time.sleep(0.1)
        admin = ["-x", "-D", ADMIN_DN, "-w", ADMIN_PW]
        people = "dn: ou=people,dc=example,dc=com\nobjectClass: organizationalUnit\nou: people\n\n" + "".join(
            f"dn: uid=u{i},ou=people,dc=example,dc=com\nobjectClass: inetOrgPerson\nuid: u{i}\ncn: U {i}\nsn: S{i}\n"
            f"userPassword: pw{i}\n\n" for i in range(200))
        p = ldap("ldapadd", "-H", ldaps_url, *admin, env=env, input=people)
        assert p.returncode == 0, p.stderr
        p = ldap("ldapsearch", "-H", url, "-x", "-b", "dc=example,dc=com", "(objectClass=*)", "cn", env=env)
        assert p.returncode == 0 and p.stdout.count("\ndn: ") >= 200, p.stderr
        p = ldap("ldapmodify", "-H", url, "-ZZ", *admin, env=env,
                 input="dn: uid=u1,ou=people,dc=example,dc=com\nchangetype: modify\nreplace: sn\nsn: New\n")
        assert p.returncode == 0, p.stderr
        for _ in range(7):  # into the failed-bind throttle
            ldap("ldapwhoami", "-H", url, "-x", "-D", "uid=u2,ou=people,dc=example,dc=com", "-w", "wrong", env=env)
        p = ldap("ldapsearch", "-H", url, "-ZZ", *admin, "-b", "cn=Monitor", "(objectClass=*)", "*", "+", env=env)
        assert p.returncode == 0, p.stderr
        assert http_get(f"{metrics}/metrics")[0] == 200 and http_get(f"{metrics}/healthz") == (200, "ok")
        os.kill(pid, 1)  # SIGHUP: logs reopened, configuration read, TLS reloaded
        (tmp_path / "admin.pw").write_text(ADMIN_PW + "\n")
        p = subprocess.run([larch_bin, "backup", "-H", url, "-D", ADMIN_DN, "-y", str(tmp_path / "admin.pw"),
                            "--to", str(tmp_path / "backups/one")], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        p = ldap("ldapwhoami", "-H", url, "-x", "-D", ADMIN_DN, "-w", ADMIN_PW, env=env)
        assert p.returncode == 0, p.stderr
        os.kill(pid, 15)
        assert proc.wait(timeout=60) == 0, (tmp_path / "serve.stderr").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = (tmp_path / "serve.stderr").read_text()
    assert "SIGHUP: TLS reloaded" in log and "stopped" in log, log

    used, socket_families, wx = set(), set(), []
    for line in trace.read_text().splitlines():
        m = re.match(r"^\d+\s+([a-z0-9_]+)\((.*)", line)
        if not m:
            continue
        name, args = m.groups()
        used.add(name)
        if name in ("socket", "socketpair"):
            socket_families.add(args.split(",")[0])
        if name == "mmap" and "PROT_WRITE" in args and "PROT_EXEC" in args:
            wx.append(line)
        if name in ("mprotect", "pkey_mprotect") and "PROT_EXEC" in args:
            wx.append(line)
    assert len(used) > 30 and "accept4" in used and "fsync" in used, sorted(used)
    assert not used - allowed, f"system calls outside SystemCallFilter: {sorted(used - allowed)}"
    assert socket_families and socket_families <= families, (socket_families, families)
    assert not wx, wx


# ---------------------------------------------------------------- the guide


def code_blocks(path, languages):
    """[(language, text)] of the fenced blocks of a Markdown file."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", path.read_text(), re.M | re.S)
            if m.group(1) in languages]


def larch_invocations(script):
    """The argument lists of every `larch` command of a shell snippet (after env
    assignments, sudo or `runuser -u USER --`; in pipelines and lists too)."""
    script = re.sub(r"\\\n", " ", script)
    found = []
    for line in script.splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = "#"
        words, commands = list(lex), [[]]
        for w in words:
            if w in ("|", "||", "&&", ";", "&"):
                commands.append([])
            else:
                commands[-1].append(w)
        for cmd in commands:
            while cmd and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", cmd[0]):
                cmd = cmd[1:]
            if cmd[:1] == ["runuser"] and "--" in cmd:
                cmd = cmd[cmd.index("--") + 1:]
            if cmd and os.path.basename(cmd[0]) == "larch":
                args = []
                for w in cmd[1:]:
                    if w in ("<", ">", ">>", "2>"):
                        break
                    args.append(w)
                found.append(args)
    return found


def test_every_larch_command_in_the_guide_exists(larch_bin):
    checked = set()
    for path in GUIDES:
        for _, block in code_blocks(path, {"sh"}):
            for args in larch_invocations(block):
                # The command words: as long as the command has subcommands (`schema check`).
                command, rest = [], list(args)
                while rest and not rest[0].startswith("-"):
                    p = subprocess.run([larch_bin, *command, rest[0], "--help"], capture_output=True, text=True,
                                       timeout=30)
                    assert p.returncode == 0, f"{path.name}: `larch {' '.join(args)}`: " \
                                              f"`larch {' '.join(command + rest[:1])}` is not a command: {p.stderr}"
                    command.append(rest.pop(0))
                    if "\nCommands:" not in p.stdout:
                        break
                p = subprocess.run([larch_bin, *command, "--help"], capture_output=True, text=True, timeout=30)
                assert p.returncode == 0, p.stderr
                helptext = p.stdout
                for word in rest:
                    if re.match(r"^--?[A-Za-z]", word):
                        option = word.split("=", 1)[0]
                        assert re.search(rf"(?<![\w-]){re.escape(option)}\b", helptext), \
                            f"{path.name}: `larch {' '.join(args)}`: `larch {' '.join(command)}` has no option {option}"
                checked.add(" ".join(command) or "(no command)")
    # The guide's own sections: the parser found them, so the check above was not empty.
    assert {"serve", "check-config", "import", "passwd", "status", "backup", "restore"} <= checked, checked


def heading_anchors(path):
    """GitHub's anchors of a Markdown file's headings (outside code blocks)."""
    anchors, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_every_link_of_the_guide_leads_somewhere():
    count = 0
    for path in GUIDES:
        text = re.sub(r"^```.*?^```$", "", path.read_text(), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            assert dest.exists(), f"{path.name}: link to {target}: no {dest}"
            if anchor:
                assert anchor in heading_anchors(dest), f"{path.name}: link to {target}: no such heading in {dest.name}"
            count += 1
    assert count >= 20, count


def test_the_guides_prometheus_snippets_pass_promtool(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("LARCH_REQUIRE_PROMETHEUS"):
            pytest.fail("promtool is missing (Debian package prometheus) and LARCH_REQUIRE_PROMETHEUS is set")
        pytest.skip("promtool is missing (Debian package prometheus)")
    kinds = []
    for i, (_, block) in enumerate(code_blocks(GUIDE, {"yaml"})):
        f = tmp_path / f"snippet{i}.yml"
        f.write_text(block)
        kind = "rules" if block.startswith("groups:") else "config"
        p = subprocess.run([promtool, "check", kind, str(f)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"promtool check {kind}:\n{block}\n{p.stdout}{p.stderr}"
        kinds.append(kind)
    assert sorted(kinds) == ["config", "rules"], kinds
