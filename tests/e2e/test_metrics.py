"""The metrics endpoint (`[metrics] listen`, docs/monitoring.md): /metrics in Prometheus'
text format, read by Prometheus' own tools: `promtool check metrics` accepts it, and a real
Prometheus server (Debian's `prometheus` package), started by the test with a scrape
configuration for Larch, answers a PromQL query with the count of what the test did.
/healthz and /readyz answer as documented, also during a long start (a large data directory
loading), when the server is alive but not ready.

The Prometheus parts need `promtool` and `prometheus`; they are skipped when those are
missing unless LARCH_REQUIRE_PROMETHEUS is set (scripts/test.sh sets it and installs the
package)."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import ldap3
import pytest

import ldaputil
from conftest import LdapServer, free_port
from ldaputil import assert_result

pytestmark = pytest.mark.larch_only("the metrics endpoint is Larch's")

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")


def need(tool, name):
    if tool is None:
        if os.environ.get("LARCH_REQUIRE_PROMETHEUS"):
            pytest.fail(f"{name} is missing (Debian package prometheus) and LARCH_REQUIRE_PROMETHEUS is set")
        pytest.skip(f"{name} is missing (Debian package prometheus)")


def get(url):
    """(status, headers, body text) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def samples(text):
    """{(name, frozenset(labels)): value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(s, name, **labels):
    return s[(name, frozenset(labels.items()))]


@pytest.fixture
def served(make_extra_server):
    port = free_port()
    srv = make_extra_server(larch_extra_toml=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    return srv, f"http://127.0.0.1:{port}"


def test_metrics_count_what_a_client_did_and_only_grow(served):
    srv, base = served
    status, headers, before_text = get(base + "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    before = samples(before_text)
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    assert_result(conn, "success")
    for _ in range(5):
        conn.search(srv.base, "(objectClass=*)", attributes=["1.1"])
        assert conn.result["result"] == 0
    conn.compare(srv.admin_dn, "cn", "admin")
    bad = ldaputil.connect(srv, srv.admin_dn, "wrong")
    assert bad.result["result"] == 49
    bad.unbind()
    anonymous = ldaputil.connect(srv)
    assert anonymous.result["result"] == 0
    anonymous.unbind()
    # SASL PLAIN without TLS: answered (refused or not), and counted under its method.
    plain = ldap3.Connection(
        ldap3.Server(srv.host, port=srv.port, get_info=ldap3.NONE),
        authentication=ldap3.SASL,
        sasl_mechanism=ldap3.PLAIN,
        sasl_credentials=(None, f"dn:{srv.admin_dn}", srv.admin_pw),
        raise_exceptions=False,
        auto_bind=ldap3.AUTO_BIND_NONE,
    )
    plain.open()
    plain.bind()
    plain_outcome = "success" if plain.result["result"] == 0 else "failure"
    plain.unbind()
    conn.unbind()
    time.sleep(0.2)
    after_text = get(base + "/metrics")[2]
    after = samples(after_text)

    def delta(name, **labels):
        # A result code appears once it has been answered: absent before means 0.
        key = (name, frozenset(labels.items()))
        return after[key] - before.get(key, 0)

    assert delta("larch_operations_completed_total", op="search") == 5
    assert delta("larch_operations_completed_total", op="compare") == 1
    assert delta("larch_operations_completed_total", op="bind") == 4
    assert delta("larch_binds_total", method="simple", result="success") == 1
    assert delta("larch_binds_total", method="simple", result="failure") == 1
    assert delta("larch_binds_total", method="anonymous", result="success") == 1
    assert delta("larch_binds_total", method="sasl_plain", result=plain_outcome) == 1
    assert delta("larch_results_total", code="49", result="invalidCredentials") == 1
    assert delta("larch_operation_duration_seconds_count", op="search") == 5
    assert value(after, "larch_operation_duration_seconds_bucket", op="search", le="+Inf") == \
        value(after, "larch_operation_duration_seconds_count", op="search")
    assert value(after, "larch_store_entries") >= 2
    assert value(after, "larch_store_writable") == 1
    # Counters only grow.
    for key, v in before.items():
        if key[0].endswith("_total") or key[0].endswith("_bucket") or key[0].endswith("_count"):
            assert after.get(key, v) >= v, key
    # Prometheus' own checker accepts the text.
    need(PROMTOOL, "promtool")
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=after_text, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr


def test_health_readiness_and_other_requests(served):
    _, base = served
    assert get(base + "/healthz")[:1] == (200,)
    status, _, body = get(base + "/readyz")
    assert (status, body) == (200, "ready\n")
    assert get(base + "/nothing")[0] == 404
    req = urllib.request.Request(base + "/metrics", method="POST", data=b"x")
    try:
        urllib.request.urlopen(req, timeout=10)
        raise AssertionError("POST accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 405 and e.headers["Allow"] == "GET, HEAD"


# Entries of the data directory the slow start loads: about a second of loading on the
# 2-core test machine, while a poll of /readyz takes a few milliseconds.
SLOW_START_ENTRIES = 80_000


def test_readyz_says_loading_during_a_long_start_then_ready(request, tmp_path):
    larch_bin = request.config.getoption("--larch-bin")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    srv = LdapServer("larch", tmp_path, larch_bin=larch_bin,
                     larch_extra_toml=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    gen = tmp_path / "gen"
    subprocess.run([larch_bin, "gen", "-n", str(SLOW_START_ENTRIES), "-o", str(gen), "--password-scheme",
                    "CLEARTEXT"], check=True, capture_output=True, timeout=60)
    subprocess.run([larch_bin, "import", "--data", str(srv.workdir / "data"), "--creator", srv.admin_dn,
                    str(gen / "data.ldif")], check=True, capture_output=True, timeout=60)
    srv.spawn()
    try:
        answers = []  # (status, body) of /readyz, in order, from the first that answered
        while_loading = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert srv.proc.poll() is None, srv.stderr_tail()
            try:
                status, _, body = get(base + "/readyz")
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.002)  # not listening yet
                continue
            answers.append((status, body))
            if status == 200:
                break
            if while_loading is None:
                healthz = get(base + "/healthz")[:1]
                metrics = get(base + "/metrics")[0]
                if get(base + "/readyz")[0] == 503:  # still loading after both answers
                    while_loading = (healthz, metrics)
            time.sleep(0.005)
        assert answers, "the metrics endpoint never answered"
        assert answers[0] == (503, "not ready: the store is loading\n"), answers[:3]
        assert answers[-1] == (200, "ready\n"), answers[-3:]
        assert set(answers[:-1]) == {(503, "not ready: the store is loading\n")}
        assert while_loading == ((200,), 503), while_loading
        srv.wait_ready()
        assert value(samples(get(base + "/metrics")[2]), "larch_store_entries") >= SLOW_START_ENTRIES
    finally:
        status = srv.stop()
    assert status == 0, srv.stderr_tail()


def test_a_prometheus_server_scrapes_larch(served, tmp_path):
    need(PROMETHEUS, "prometheus")
    srv, base = served
    target = base.removeprefix("http://")
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    for _ in range(7):
        conn.search(srv.base, "(objectClass=*)", attributes=["1.1"])
    conn.compare(srv.admin_dn, "cn", "admin")
    conn.compare(srv.admin_dn, "cn", "admin")
    conn.compare(srv.admin_dn, "cn", "admin")
    conn.unbind()
    port = free_port()
    (tmp_path / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: larch
    static_configs:
      - targets: ["{target}"]
""")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"))
    try:
        query = urllib.parse.quote('larch_operations_completed_total{job="larch",op="compare"}')
        deadline = time.monotonic() + 30
        got = None
        while time.monotonic() < deadline:
            try:
                _, _, body = get(f"http://127.0.0.1:{port}/api/v1/query?query={query}")
                result = json.loads(body)["data"]["result"]
                if result:
                    got = float(result[0]["value"][1])
                    break
            except (urllib.error.URLError, ConnectionError, KeyError, ValueError):
                pass
            time.sleep(0.5)
        assert got == 3, (got, (tmp_path / "prometheus.log").read_text()[-2000:])
        _, _, body = get(f"http://127.0.0.1:{port}/api/v1/query?query=up%7Bjob%3D%22larch%22%7D")
        assert json.loads(body)["data"]["result"][0]["value"][1] == "1"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def test_shipped_alert_rules_pass_promtool():
    need(PROMTOOL, "promtool")
    rules = Path(__file__).resolve().parents[2] / "contrib" / "prometheus" / "larch-alerts.yml"
    p = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout
    config = rules.parent / "prometheus.yml"
    p = subprocess.run([PROMTOOL, "check", "config", str(config)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
