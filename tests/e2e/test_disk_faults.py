"""Disk faults on a real disk: the data directory, then the access log, on a small tmpfs
that the test fills.

What must hold:
  * a full disk under the write-ahead log: every write (add, modify, delete, modify DN,
    Password Modify) gets `unavailable` (52) with a message naming the cause, on every
    connection; freeing the disk changes nothing until a restart (a failed write is never
    retried); searches, compares and binds still answer; the error log says it once;
    after kill -9 and a restart every acknowledged write is there and writes work again;
  * a full disk under the access log: the server answers as before; the error log says
    that lines are being lost, then, once there is room, that writing works again and how
    many lines were lost.

A tmpfs needs root and the right to mount (a privileged container or a machine). Where
the mount is refused the test says so and is skipped; in CI (CI=true, root on a fresh
machine) it must work and the test fails instead. Without it the same faults are covered
through the store's `Storage` trait: crates/store/tests/disk_faults.rs and
crates/server/tests/disk_faults.rs.
"""

import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import ldap3
import pytest
from ldap3 import MODIFY_REPLACE

import conftest
from ldaputil import assert_result, connect, dns_of, search_entries

pytestmark = [pytest.mark.reliability,
              pytest.mark.larch_only("Larch's answer to a full disk: slapd's back-mdb has its own")]

# The small disks. The data disk holds a fresh data directory and the log with the space
# it reserves ahead of its records (4 MiB, docs/formats.md) once per cycle of the long form
# (each cycle's writes use up one reservation); small enough to fill in a moment.
DATA_DISK = "64m"
LOG_DISK = "1m"
# Room left free for the writes that fill the disk: each add below logs about 2 KiB.
HEADROOM = 48 * 1024
# What the log's segment may hold reserved when the disk is filled: the writes use it up
# before they need the last HEADROOM (the next reservation does not fit, and the log then
# grows as written).
LOG_RESERVE = 4 * 1024 * 1024
# The longest wait for the access log's writer (it drains every 100 ms) to meet the disk.
LOG_WAIT_S = 20.0
THE_HALT = "the directory stopped accepting writes"


def mount_small_disk(path, size):
    """Mounts a tmpfs of `size` at `path`; skips (or, in CI, fails) when not permitted."""
    path.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        reason = (f"cannot mount a {size} tmpfs at {path} (needs root and CAP_SYS_ADMIN): "
                  f"{p.stderr.strip() or p.returncode}")
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must run this test on a real filesystem")
        pytest.skip(reason + "; the Storage-trait tests cover this fault")


def unmount(path):
    subprocess.run(["umount", str(path)], capture_output=True, text=True)


@contextmanager
def server_on_small_disk(request, disk_dir, size, extra_toml=""):
    """A Larch server in a fresh directory whose `disk_dir` (relative to it) is a small
    tmpfs; stopped (by PID) and unmounted at the end, whatever happened."""
    tmp = Path(tempfile.mkdtemp(prefix="larch-e2e-disk-"))
    disk = tmp / disk_dir
    srv = None
    mounted = False
    try:
        mount_small_disk(disk, size)
        mounted = True
        srv = conftest.make_server(request.config, tmp, larch_extra_toml=extra_toml)
        srv.start()
        yield srv, disk
    finally:
        if srv is not None and srv.alive():
            srv.stop()
        if mounted:
            unmount(disk)
        shutil.rmtree(tmp, ignore_errors=True)


def fill(disk, leave):
    """Writes a filler file that leaves `leave` octets free on `disk`; returns its path."""
    filler = disk / "filler"
    st = os.statvfs(disk)
    size = max(0, st.f_bavail * st.f_frsize - leave)
    with open(filler, "wb") as f:
        chunk = b"\0" * (1 << 16)
        try:
            while size > 0:
                f.write(chunk[:min(len(chunk), size)])
                size -= min(len(chunk), size)
            f.flush()
        except OSError:
            pass  # full already
    return filler


def admin_conn(srv):
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    assert_result(conn, "success")
    return conn


def unit_attrs(i):
    # About 2 KiB per record, so the headroom is gone after a few dozen adds.
    return {"objectClass": ["organizationalUnit"], "description": [f"{i:06d}-" + "x" * 2000]}


def units(conn, base):
    result, entries = search_entries(conn, base, "(objectClass=organizationalUnit)", attrs=["1.1"])
    assert_result(result, "success")
    return sorted(dns_of(entries))


def error_log_lines(srv, words):
    return [line for line in srv.stderr_path.read_text(errors="replace").splitlines() if words in line]


def fill_until_refused(srv, disk, acked, cycle):
    """Fills `disk` but for HEADROOM, then adds entries until one is refused (once the log's
    reserved space and the headroom are used up); returns the filler file and the refusal."""
    writer = admin_conn(srv)
    filler = fill(disk, HEADROOM)
    for i in range((LOG_RESERVE + HEADROOM) // 1024):
        dn = f"ou=fill{cycle}-{i},{srv.base}"
        writer.add(dn, attributes=unit_attrs(i))
        if writer.result["result"] != 0:
            return filler, writer.result
        acked.append(dn.lower())
    pytest.fail("the disk never filled")


def every_write_is_unavailable_and_reads_answer(srv, conn, acked, message):
    conn.add(f"ou=refused,{srv.base}", attributes=unit_attrs(0))
    assert_result(conn, "unavailable")
    assert conn.result["message"] == message
    conn.modify(acked[0], {"description": [(MODIFY_REPLACE, ["changed"])]})
    assert_result(conn, "unavailable")
    conn.delete(acked[1])
    assert_result(conn, "unavailable")
    conn.modify_dn(acked[2], "ou=renamed")
    assert_result(conn, "unavailable")
    conn.extend.standard.modify_password(srv.admin_dn, None, "a-new-admin-password")
    assert_result(conn, "unavailable")
    assert conn.result["message"] == message
    # Reads answer, with every acknowledged write.
    assert units(conn, srv.base) == sorted(acked)
    assert conn.compare(acked[0], "ou", acked[0].split(",")[0][3:]) is True


def test_a_full_disk_under_the_log_stops_writes_reads_go_on_and_a_restart_keeps_every_acknowledged_write(request):
    # The access log goes beside the configuration, off the small disk: this test is about
    # the log of the data.
    extra = '\n[access_log]\npath = "logs/access"\n'
    cycles = 10 if conftest.reliability_long() else 2
    with server_on_small_disk(request, "data", DATA_DISK, extra) as (srv, disk):
        first = admin_conn(srv)
        acked = []
        for i in range(5):
            dn = f"ou=before{i},{srv.base}"
            assert first.add(dn, attributes=unit_attrs(i)), first.result
            acked.append(dn.lower())
        for cycle in range(cycles):
            bystander = admin_conn(srv)
            filler, refused = fill_until_refused(srv, disk, acked, cycle)
            assert_result(refused, "unavailable")
            message = refused["message"]
            assert message == ("the directory cannot write: the write-ahead log failed to write "
                               "(No space left on device); restart the server once the disk is fixed"), message

            # Room again: still refused, on every connection, for every kind of write.
            os.remove(filler)
            for conn in (bystander, admin_conn(srv)):
                every_write_is_unavailable_and_reads_answer(srv, conn, acked, message)
            assert admin_conn(srv).bound, "binds still answer"
            halts = error_log_lines(srv, THE_HALT)
            assert len(halts) == cycle + 1, f"the halt is logged once per start: {halts}"
            assert "No space left on device" in halts[-1], halts[-1]

            # kill -9 (the log alone must hold every acknowledged write), restart.
            srv.kill9_and_restart()
            conn = admin_conn(srv)
            assert units(conn, srv.base) == sorted(acked), f"cycle {cycle}"
            dn = f"ou=after{cycle},{srv.base}"
            assert conn.add(dn, attributes=unit_attrs(cycle)), conn.result
            acked.append(dn.lower())
            conn.modify(acked[0], {"description": [(MODIFY_REPLACE, [f"after restart {cycle}"])]})
            assert_result(conn, "success")
            # The next cycle fills the disk again from what the log holds now.
        assert srv.stop() == 0, srv.stderr_tail()


def test_a_full_disk_under_the_access_log_loses_counted_lines_and_the_server_goes_on(request):
    with server_on_small_disk(request, "alog", LOG_DISK, '\n[access_log]\npath = "alog/access"\n') as (srv, disk):
        base = srv.base
        conn = admin_conn(srv)
        filler = fill(disk, 0)
        deadline = time.monotonic() + LOG_WAIT_S
        sent = 0
        while not error_log_lines(srv, "writing the access log failed"):
            assert time.monotonic() < deadline, "the access log never met the full disk:\n" + srv.stderr_tail()
            assert conn.search(base, "(objectClass=*)", search_scope=ldap3.BASE), conn.result
            sent += 1
            time.sleep(0.05)
        # The server answers as before, writes included.
        for i in range(20):
            assert conn.add(f"ou=while{i},{base}", attributes=unit_attrs(i)), conn.result
            assert conn.search(base, "(objectClass=*)", search_scope=ldap3.BASE), conn.result

        os.remove(filler)
        deadline = time.monotonic() + LOG_WAIT_S
        while not error_log_lines(srv, "writing the access log works again"):
            assert time.monotonic() < deadline, "the access log did not resume:\n" + srv.stderr_tail()
            assert conn.search(base, "(objectClass=*)", search_scope=ldap3.BASE), conn.result
            time.sleep(0.05)
        resumed = error_log_lines(srv, "writing the access log works again")[0]
        lost = int(re.search(r"lost=(\d+)", resumed).group(1))
        assert lost > 0, resumed
        assert len(error_log_lines(srv, "writing the access log failed")) == 1
        assert srv.stop() == 0, srv.stderr_tail()
