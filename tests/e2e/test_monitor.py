"""cn=Monitor (docs/monitoring.md): the server's figures as entries laid out as OpenLDAP's
back-monitor lays them out, so that what reads slapd's cn=Monitor reads Larch's.

The tests that do not name Larch's own additions run on slapd too (`--server slapd`), with
slapd's monitor database configured the way its documentation shows: readable by the
admin only, as Larch's default policy has it.

Counting is checked by differences: the figures are read, a known set of operations is
done on another connection, and the figures are read again on the reading connection.
Between the two readings the reading connection itself completes one search (the first
reading's, which was still running when its own figures were gathered) and starts one (the
second reading)."""

import time

import ldap3
import pytest

import ldaputil
from ldaputil import assert_result, search_entries, values

MONITOR = "cn=Monitor"
OPERATIONS = "cn=Operations,cn=Monitor"
CONNECTIONS = "cn=Connections,cn=Monitor"

# slapd's monitor database, readable by the admin only (slapd-monitor(5)).
SLAPD_MONITOR_DB = """
database monitor
access to *
  by dn.exact="cn=admin,dc=example,dc=com" read
  by * none
"""


@pytest.fixture
def monitored(make_extra_server):
    """A fresh server whose figures count from its start, and an admin connection."""
    srv = make_extra_server(slapd_extra_db=SLAPD_MONITOR_DB)
    conn = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    assert_result(conn, "success")
    yield srv, conn
    conn.unbind()


def operation_counts(conn):
    """{kind: (initiated, completed)} from cn=Operations, as openldap_exporter reads it."""
    result, entries = search_entries(conn, OPERATIONS, "(objectClass=monitorOperation)",
                                     attrs=["monitorOpInitiated", "monitorOpCompleted"])
    assert result["result"] == 0, result
    counts = {}
    for e in entries:
        kind = e["dn"].split(",")[0].split("=")[1].lower()
        counts[kind] = (int(values(e, "monitorOpInitiated")[0]), int(values(e, "monitorOpCompleted")[0]))
    return counts


def counter(conn, dn):
    """The monitorCounter of one entry."""
    result, entries = search_entries(conn, dn, scope=ldap3.BASE, attrs=["monitorCounter"])
    assert result["result"] == 0, (dn, result)
    return int(values(entries[0], "monitorCounter")[0])


def test_operation_counts_equal_what_a_client_did(monitored):
    srv, mon = monitored
    before = operation_counts(mon)
    entries_before = counter(mon, "cn=Entries,cn=Statistics,cn=Monitor")

    work = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    assert_result(work, "success")
    base = f"ou=mon-{time.monotonic_ns()},{srv.base}"
    ldaputil.add_ok(work, base, {"objectClass": ["organizationalUnit"], "ou": base.split(",")[0][3:]})
    for i in range(3):
        ldaputil.add_ok(work, f"cn=p{i},{base}", {"objectClass": ["person"], "cn": f"p{i}", "sn": "x"})
    work.modify(f"cn=p0,{base}", {"sn": [(ldap3.MODIFY_REPLACE, ["y"])]})
    assert_result(work, "success")
    assert work.compare(f"cn=p1,{base}", "sn", "x") is True
    work.modify_dn(f"cn=p2,{base}", "cn=p3")
    assert_result(work, "success")
    work.delete(f"cn=p3,{base}")
    assert_result(work, "success")
    sent = 0
    for _ in range(4):
        result, found = search_entries(work, base, "(objectClass=person)")
        assert result["result"] == 0
        sent += len(found)
    work.unbind()
    # The unbind is counted when the server reads it: wait until the connection is gone.
    deadline = time.monotonic() + 10
    while True:
        after = operation_counts(mon)
        if after["unbind"][1] > before["unbind"][1] or time.monotonic() > deadline:
            break
        time.sleep(0.05)

    def delta(kind, i):
        return after[kind][i] - before[kind][i]

    expected = {"bind": 1, "add": 4, "modify": 1, "compare": 1, "modrdn": 1, "delete": 1, "unbind": 1,
                "abandon": 0, "extended": 0}
    for kind, n in expected.items():
        assert (delta(kind, 0), delta(kind, 1)) == (n, n), (kind, before[kind], after[kind])
    # The client's four searches; the reading connection completed its first reading and
    # the polls, and started as many readings as it completed plus the last.
    polls = after["search"][1] - before["search"][1] - 4
    assert polls >= 1
    assert delta("search", 0) == 4 + polls
    assert sent == 2 * 4
    # Entries sent between the two reads of cn=Entries: the client's; the first read's own
    # entry; and the 10 monitorOperation entries of each poll, the last one included (the
    # first reading's were counted before the first read of cn=Entries).
    entries_after = counter(mon, "cn=Entries,cn=Statistics,cn=Monitor")
    assert entries_after - entries_before == sent + 1 + 10 * (polls - 1)


def test_each_connection_has_an_entry_while_it_is_open(monitored):
    srv, mon = monitored
    other = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    assert_result(other, "success")
    port = other.socket.getsockname()[1]
    peer = f"IP=127.0.0.1:{port}"

    def entry_of_other():
        result, entries = search_entries(mon, CONNECTIONS, "(objectClass=monitorConnection)", attrs=["+"])
        assert result["result"] == 0, result
        return [e for e in entries if values(e, "monitorConnectionPeerAddress") == [peer]]

    found = entry_of_other()
    assert len(found) == 1, [e["dn"] for e in found]
    e = found[0]
    number = values(e, "monitorConnectionNumber")[0]
    assert e["dn"].lower() == f"cn=connection {number},{CONNECTIONS}".lower()
    assert values(e, "monitorConnectionAuthzDN") == [srv.admin_dn]
    assert values(e, "monitorConnectionProtocol") == ["3"]
    assert int(values(e, "monitorConnectionOpsReceived")[0]) >= 1
    assert values(e, "monitorConnectionStartTime")[0].endswith("Z")
    other.unbind()
    deadline = time.monotonic() + 10
    while entry_of_other():
        assert time.monotonic() < deadline, "the closed connection's entry stayed"
        time.sleep(0.05)
    # The current count follows.
    current = counter(mon, "cn=Current,cn=Connections,cn=Monitor")
    total = counter(mon, "cn=Total,cn=Connections,cn=Monitor")
    assert 1 <= current <= total


def test_openldap_exporter_queries_find_what_they_read(monitored):
    """The three searches openldap_exporter (github.com/tomcz/openldap_exporter) makes."""
    _, mon = monitored
    result, counters = search_entries(mon, MONITOR, "(objectClass=monitorCounterObject)", attrs=["monitorCounter"])
    assert result["result"] == 0
    dns = {e["dn"].lower() for e in counters}
    for dn in ("cn=bytes,cn=statistics,cn=monitor", "cn=pdu,cn=statistics,cn=monitor",
               "cn=entries,cn=statistics,cn=monitor", "cn=referrals,cn=statistics,cn=monitor",
               "cn=total,cn=connections,cn=monitor", "cn=current,cn=connections,cn=monitor"):
        assert dn in dns, sorted(dns)
    for e in counters:
        assert int(values(e, "monitorCounter")[0]) >= 0
    result, infos = search_entries(mon, MONITOR, "(objectClass=monitoredObject)", attrs=["monitoredInfo"])
    assert result["result"] == 0 and infos
    uptime = [e for e in infos if e["dn"].lower() == "cn=uptime,cn=time,cn=monitor"]
    assert len(uptime) == 1 and int(values(uptime[0], "monitoredInfo")[0]) >= 0
    result, ops = search_entries(mon, OPERATIONS, "(objectClass=monitorOperation)", attrs=["monitorOpCompleted"])
    assert result["result"] == 0
    assert {e["dn"].split(",")[0].lower() for e in ops} == {
        "cn=bind", "cn=unbind", "cn=search", "cn=compare", "cn=modify", "cn=modrdn", "cn=add", "cn=delete",
        "cn=abandon", "cn=extended"}


def test_the_root_dse_names_the_monitor_context(monitored):
    srv, mon = monitored
    anon = ldaputil.connect(srv)
    result, entries = search_entries(anon, "", scope=ldap3.BASE, attrs=["monitorContext"])
    assert result["result"] == 0
    assert [v.lower() for v in values(entries[0], "monitorContext")] == ["cn=monitor"]
    anon.unbind()


def test_only_the_admin_reads_it_by_default(monitored):
    srv, _ = monitored
    anon = ldaputil.connect(srv)
    result, entries = search_entries(anon, MONITOR, attrs=["+"])
    assert result["result"] in (32, 50) and not entries, result
    anon.unbind()


@pytest.mark.larch_only("Larch's rule language grants a monitoring account; slapd's monitor database has its own")
def test_an_access_rule_lets_a_monitoring_account_read_it(make_extra_server):
    srv = make_extra_server(larch_extra_toml="""
[[access]]
dn = "cn=Monitor"
by = [
  { dn = "cn=watcher,dc=example,dc=com", access = "read" },
]

[[access]]
attrs = ["userPassword"]
by = [
  { who = "self", access = "=wx" },
  { who = "anonymous", access = "auth" },
]

[[access]]
by = [
  { who = "*", access = "read" },
]
""")
    admin = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    ldaputil.add_ok(admin, "cn=watcher,dc=example,dc=com",
                    {"objectClass": ["person", "simpleSecurityObject"], "cn": "watcher", "sn": "w",
                     "userPassword": "watch-pw"})
    admin.unbind()
    watcher = ldaputil.connect(srv, "cn=watcher,dc=example,dc=com", "watch-pw")
    assert_result(watcher, "success")
    counts = operation_counts(watcher)
    assert counts["add"][1] >= 1
    watcher.unbind()
    anon = ldaputil.connect(srv)
    result, entries = search_entries(anon, MONITOR, attrs=["+"])
    assert result["result"] == 32 and not entries, result
    anon.unbind()


@pytest.mark.larch_only("monitor.enabled is Larch's switch")
def test_with_the_monitor_off_there_is_no_cn_monitor(make_extra_server):
    srv = make_extra_server(larch_extra_toml="\n[monitor]\nenabled = false\n")
    admin = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    result, entries = search_entries(admin, MONITOR, scope=ldap3.BASE)
    assert result["result"] == 32, result
    result, entries = search_entries(admin, "", scope=ldap3.BASE, attrs=["monitorContext"])
    assert values(entries[0], "monitorContext") == []
    admin.unbind()


@pytest.mark.larch_only("Larch's own entries: the store, results, binds")
def test_larch_store_results_and_binds_entries(monitored):
    srv, mon = monitored
    bad = ldaputil.connect(srv, srv.admin_dn, "wrong-password")
    assert bad.result["result"] == 49
    bad.unbind()
    entries_in_store = counter(mon, "cn=Entries,cn=Store,cn=Monitor")
    admin_reads = ldaputil.connect(srv, srv.admin_dn, srv.admin_pw)
    result, found = search_entries(admin_reads, srv.base, attrs=["1.1"])
    assert result["result"] == 0
    assert entries_in_store == len(found)
    admin_reads.unbind()
    assert counter(mon, "cn=simple failure,cn=Binds,cn=Monitor") >= 1
    assert counter(mon, "cn=invalidCredentials,cn=Results,cn=Monitor") >= 1
    result, health = search_entries(mon, "cn=Health,cn=Store,cn=Monitor", scope=ldap3.BASE, attrs=["monitoredInfo"])
    assert values(health[0], "monitoredInfo") == ["writable"]
    # A base below cn=Monitor that does not exist: noSuchObject with the entry above it.
    result, _ = search_entries(mon, "cn=Nothing,cn=Store,cn=Monitor", scope=ldap3.BASE)
    assert result["result"] == 32
    assert result["dn"].lower() == "cn=store,cn=monitor"


@pytest.mark.larch_only("larch status is Larch's command")
def test_larch_status_summarizes_cn_monitor(monitored):
    import subprocess
    srv, _ = monitored
    base = ["status", "-H", srv.url, "-D", srv.admin_dn]
    p = subprocess.run([srv.larch_bin, *base, "-w", srv.admin_pw], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("Larch "), lines
    assert any(l.startswith("connections: ") and " open, " in l for l in lines), lines
    ops = [l for l in lines if l.startswith("operations: ")]
    assert ops and "bind" in ops[0], lines
    store = [l for l in lines if l.startswith("store: ")]
    assert store and "writable" in store[0], lines
    # A wrong password: exit 1 and one line naming the refusal.
    p = subprocess.run([srv.larch_bin, *base, "-w", "wrong"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1
    assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1 and "invalidCredentials" in p.stderr
    # An account that may not read cn=Monitor: exit 1 and why.
    anon = subprocess.run([srv.larch_bin, "status", "-H", srv.url, "-D", "", "-w", ""], capture_output=True,
                          text=True, timeout=30)
    assert anon.returncode == 1 and "cn=Monitor" in anon.stderr, anon.stderr
