"""Connection limits that fit real deployments (Larch's `[limits]`, docs/server.md).

- By default there is no cap per client address and the total follows the server's
  open-files limit: 1,000 idle connections from 127.0.0.1 are all served, and a new
  client still binds and searches.
- A connection over `max_connections` or `max_connections_per_ip` is told why (a Notice of
  Disconnection with `busy`, 51, and a reason), logged in the access log, and closed; the
  open ones keep working.
- When `accept` itself fails (the server out of file descriptors) the server neither dies
  nor spins: it retries, says so in its error log a bounded number of times, and accepts
  again once descriptors are freed.

slapd has none of these settings (its connection table follows its descriptor table and it
has no per-address cap), so these tests are Larch's only."""

import re
import resource
import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest

import ldapwire as w
from conftest import LdapServer
from ldaputil import assert_result

# Idle connections the default configuration must accept from one address.
IDLE_CONNECTIONS = 1000

# How long to wait for the access log's writer thread to write a line.
LINE_DEADLINE_S = 10.0

# The open-files limit (soft and hard) of the server started short of descriptors, and
# the connections opened against it: more than it can accept.
SHORT_FD_LIMIT = 128
SHORT_FD_CONNECTIONS = 200


def raise_own_fd_limit(needed):
    """Raises this process's soft open-files limit (the client side of the test holds one
    descriptor per connection) to the hard limit; skips when that is not enough."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        target = hard if hard != resource.RLIM_INFINITY else needed
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        pytest.skip(f"this process may open only {soft} files, fewer than {needed}")


def rss_kib(pid):
    """The resident set size of a process, in KiB (from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def whoami_ok(c, msgid):
    assert_result(c.request(msgid, w.whoami())[-1], "success")


def assert_refused(srv, reason):
    """A new connection is refused: the Notice of Disconnection (busy, with a reason that
    matches `reason`), then the end of the stream."""
    c = w.RawConnection(srv.host, srv.port)
    try:
        notice = c.recv()
        assert notice is not None and notice.msgid == 0, notice
        assert notice.response_name == w.NOTICE_OF_DISCONNECTION_OID, notice
        assert notice.code == 51, notice
        assert_result(notice, "busy")
        assert re.search(reason, notice.diag), notice.diag
        assert c.recv() is None
    finally:
        c.close()


def access_log_text(srv):
    try:
        return (Path(srv.workdir) / "data" / "logs" / "access").read_text()
    except FileNotFoundError:
        return ""


def wait_for_log_line(srv, pattern):
    rx = re.compile(pattern, re.M)
    deadline = time.monotonic() + LINE_DEADLINE_S
    while not rx.search(access_log_text(srv)):
        assert time.monotonic() < deadline, f"no access log line matching {pattern!r}:\n{access_log_text(srv)[-2000:]}"
        time.sleep(0.05)


def bind_and_search(srv):
    """A new client binds as the admin and searches the suffix."""
    c = w.RawConnection(srv.host, srv.port)
    try:
        assert_result(c.request(1, w.bind_simple(srv.admin_dn, srv.admin_pw))[-1], "success")
        answer = c.request(2, w.search(srv.base, w.SCOPE_BASE, w.f_present("objectClass"), attrs=["1.1"]))
        assert_result(answer[-1], "success")
        assert [m.dn for m in answer if m.op == w.SEARCH_ENTRY] == [srv.base]
    finally:
        c.close()


@pytest.mark.larch_only("slapd has no connection limit settings of this kind")
def test_a_thousand_idle_connections_from_one_address_are_served(make_extra_server):
    raise_own_fd_limit(IDLE_CONNECTIONS + 200)
    srv = make_extra_server()
    before = rss_kib(srv.pid)
    conns = []
    try:
        for _ in range(IDLE_CONNECTIONS):
            conns.append(w.RawConnection(srv.host, srv.port))
        # Every one was accepted (a refused one would get a notice and the end of the
        # stream instead of an answer).
        for i, c in enumerate(conns):
            whoami_ok(c, i + 1)
        held = rss_kib(srv.pid)
        print(f"\nserver RSS: {before} KiB with no client, {held} KiB with {IDLE_CONNECTIONS} idle connections "
              f"({(held - before) / IDLE_CONNECTIONS:.1f} KiB each)")
        bind_and_search(srv)
        # The idle ones are still served.
        whoami_ok(conns[0], 5000)
        whoami_ok(conns[-1], 5000)
    finally:
        for c in conns:
            c.close()
    assert " refused from " not in access_log_text(srv)


@pytest.mark.larch_only("slapd has no connection limit settings of this kind")
def test_a_connection_over_max_connections_is_told_why(make_extra_server):
    srv = make_extra_server(larch_extra_toml="\n[limits]\nmax_connections = 3\n")
    conns = []
    try:
        # The readiness probe's connection may still be closing: wait until 3 are served.
        deadline = time.monotonic() + 10
        while len(conns) < 3:
            c = w.RawConnection(srv.host, srv.port)
            try:
                whoami_ok(c, 1)
                conns.append(c)
            except (w.WireError, AssertionError, ConnectionResetError):
                c.close()
                assert time.monotonic() < deadline, "three connections were not served"
                time.sleep(0.05)
        assert_refused(srv, r"maximum of 3 connections")
        wait_for_log_line(srv, r" refused from 127\.0\.0\.1 to 127\.0\.0\.1 - .*maximum of 3 connections")
        # The open ones keep working, and a bind and search on one of them too.
        for i, c in enumerate(conns):
            whoami_ok(c, 10 + i)
        assert_result(conns[0].request(20, w.bind_simple(srv.admin_dn, srv.admin_pw))[-1], "success")
        answer = conns[0].request(21, w.search(srv.base, w.SCOPE_BASE, w.f_present("objectClass"), attrs=["1.1"]))
        assert_result(answer[-1], "success")
        # Once one closes, a new connection is served.
        conns.pop().close()
        deadline = time.monotonic() + 10
        while True:
            c = w.RawConnection(srv.host, srv.port)
            try:
                whoami_ok(c, 1)
                conns.append(c)
                break
            except (w.WireError, AssertionError, ConnectionResetError):
                c.close()
                assert time.monotonic() < deadline, "no connection served after one was closed"
                time.sleep(0.05)
    finally:
        for c in conns:
            c.close()


@pytest.mark.larch_only("slapd has no limit on connections per client address")
def test_max_connections_per_ip_still_caps_one_address(make_extra_server):
    srv = make_extra_server(larch_extra_toml="\n[limits]\nmax_connections_per_ip = 2\n")
    conns = []
    try:
        deadline = time.monotonic() + 10
        while len(conns) < 2:
            c = w.RawConnection(srv.host, srv.port)
            try:
                whoami_ok(c, 1)
                conns.append(c)
            except (w.WireError, AssertionError, ConnectionResetError):
                c.close()
                assert time.monotonic() < deadline, "two connections were not served"
                time.sleep(0.05)
        assert_refused(srv, r"your address has its maximum of 2 connections open")
        wait_for_log_line(srv, r" refused from 127\.0\.0\.1 .*maximum of 2 connections")
        for i, c in enumerate(conns):
            whoami_ok(c, 10 + i)
    finally:
        for c in conns:
            c.close()


def short_of_descriptors_server(config, tmp):
    """A Larch server whose open-files limit (soft and hard) is SHORT_FD_LIMIT, through a
    shell wrapper (`ulimit -n` sets both), with max_connections set above what it can hold."""
    real = Path(config.getoption("--larch-bin")).resolve()
    wrapper = Path(tmp) / "larch-short-fds"
    wrapper.write_text(f"#!/bin/sh\nulimit -n {SHORT_FD_LIMIT} || exit 97\nexec {real} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    work = Path(tmp) / "server"
    work.mkdir()
    return LdapServer("larch", work, larch_bin=str(wrapper),
                      larch_extra_toml="\n[limits]\nmax_connections = 1000\n")


@pytest.mark.larch_only("Larch's accept loop")
def test_running_out_of_descriptors_neither_kills_nor_spins_the_accept_loop(request):
    raise_own_fd_limit(SHORT_FD_CONNECTIONS + 200)
    tmp = tempfile.mkdtemp(prefix="larch-e2e-fds-")
    srv = short_of_descriptors_server(request.config, tmp)
    conns = []
    try:
        srv.start()
        # More connections than the server has descriptors for: the kernel completes them
        # all (the listener's queue), the server accepts as many as it can.
        for _ in range(SHORT_FD_CONNECTIONS):
            conns.append(w.RawConnection(srv.host, srv.port, timeout=20))
        for i, c in enumerate(conns):
            c.send(w.message(i + 1, w.whoami()))
        # The server accepts in the queue's order: the answered ones come first; after the
        # first that gets no answer, none does.
        answered = []
        waiting = []
        for i, c in enumerate(conns):
            m = None
            if not waiting:
                try:
                    m = c.recv(timeout=1 if answered else 10)
                except TimeoutError:
                    pass
            (answered if m is not None and m.msgid == i + 1 else waiting).append(c)
        assert answered and waiting, (len(answered), len(waiting))
        time.sleep(2)
        assert srv.alive()
        stderr = srv.stderr_tail()
        assert "cannot accept connections" in stderr, stderr
        # Rate-limited: not a line per retry (20 a second).
        assert stderr.count("cannot accept connections") <= 3, stderr
        # Accepted connections keep working meanwhile.
        whoami_ok(answered[0], 1000)
        # Descriptors freed: the waiting connections are accepted and answered.
        for c in answered[1:]:
            c.close()
        for i, c in enumerate(waiting):
            m = c.recv(timeout=20)
            assert m is not None and m.code == 0, m
        deadline = time.monotonic() + 10
        while "accepting connections again" not in srv.stderr_tail():
            assert time.monotonic() < deadline, srv.stderr_tail()
            time.sleep(0.05)
        whoami_ok(answered[0], 1001)
    finally:
        for c in conns:
            c.close()
        status = srv.stop()
        stderr = srv.stderr_tail()
        shutil.rmtree(tmp, ignore_errors=True)
    assert status == 0, f"exit status {status}; stderr:\n{stderr}"
