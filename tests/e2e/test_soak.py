"""Soak: mixed load (searches and modifies) with snapshots written while it runs, for 60 s
(30 minutes in the long form). After the warm-up the server's memory stays flat and its
threads and file descriptors do not grow (issue: "Soak"); the samples are printed
(docs/reliability.md, "Soak").
"""

import shutil
import tempfile

import pytest

import loadutil
from conftest import reliability_long

ENTRIES = 20000
# A snapshot every few seconds of this load (each modify is one log record).
SNAPSHOT_AFTER_RECORDS = 20000
# The first part of the run is warm-up (indexes, allocator arenas, buffers reach their
# working size): the memory is compared after it.
WARMUP_SHARE = 0.3
# RSS may move by this much after the warm-up (allocator noise, a snapshot's buffers).
RSS_DRIFT_MIB = 48
# Threads and file descriptors may differ by this much between samples (a snapshot's
# thread and file come and go).
HANDLE_SLACK = 3


@pytest.mark.reliability
@pytest.mark.larch_only("Larch's memory, threads and snapshots under load")
def test_soak_memory_flat_and_no_handle_or_thread_growth(request):
    duration = 1800 if reliability_long() else 60
    every = 10.0 if reliability_long() else 1.0
    tmp = tempfile.mkdtemp(prefix="larch-e2e-soak-")
    server = None
    try:
        extra = f"[store]\nsnapshot_after_records = {SNAPSHOT_AFTER_RECORDS}\n"
        server, gen = loadutil.loaded_server(request, tmp, ENTRIES, extra)
        snapshots_dir = server.workdir / "data" / "snapshots"
        snapshots_before = set(snapshots_dir.glob("*.snap"))
        sampler = loadutil.Sampler(server.pid, every)
        sampler.start()
        load = loadutil.Bench(server, ["-W", "mixed", "--search-percent", "80", "-f", "(cn={})", "-a", "all",
                                       "--values", str(gen / "cn.txt"), "--dns", str(gen / "dn.txt"),
                                       "-D", server.admin_dn, "-w", server.admin_pw, "-c", "8", "-d", "4"],
                              duration)
        try:
            report = load.result(timeout=duration + 120)
        finally:
            load.stop()
        sampler.stop()
        samples = sampler.samples
        assert len(samples) >= 10, samples
        warm = [s for s in samples if s[0] >= duration * WARMUP_SHARE]
        rss = [s[1] for s in warm]
        # Threads and descriptors after the warm-up too: the load's connections open in the
        # first second, and the store's load threads end after the start.
        threads = [s[2] for s in warm]
        fds = [s[3] for s in warm]
        print(f"soak: {duration} s, {report['ops_per_sec']:.0f} ops/s, {report['ok']} ok, "
              f"codes {loadutil.codes(report)}")
        print(f"RSS after warm-up: {min(rss):.0f}..{max(rss):.0f} MiB "
              f"(first {rss[0]:.0f}, last {rss[-1]:.0f}); threads {min(threads)}..{max(threads)}; "
              f"fds {min(fds)}..{max(fds)}")
        step = max(1, len(samples) // 12)
        print("samples (s, RSS MiB, threads, fds): " +
              "; ".join(f"{t:.0f} {r:.0f} {n} {f}" for t, r, n, f in samples[::step]))
        snapshots = set(snapshots_dir.glob("*.snap")) - snapshots_before
        print(f"snapshots written during the run and kept: {sorted(p.name for p in snapshots)}")

        assert report["errors"] == 0, (loadutil.codes(report), report["client_errors"])
        assert snapshots, "a snapshot was written during the run"
        assert max(rss) - min(rss) < RSS_DRIFT_MIB, f"RSS moved from {min(rss):.0f} to {max(rss):.0f} MiB"
        assert rss[-1] - rss[0] < RSS_DRIFT_MIB
        assert max(threads) - min(threads) <= HANDLE_SLACK, threads
        assert max(fds) - min(fds) <= HANDLE_SLACK, fds
    finally:
        if server is not None:
            status = server.stop()
            assert status == 0, server.stderr_tail()
        shutil.rmtree(tmp, ignore_errors=True)
