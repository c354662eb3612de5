"""Overload: more connections and deeper pipelines of large searches than the server can
serve, for 10 s (60 s in the long form). What must hold (issue: "Overload"):
  * a new client's bind and search keep a bounded latency all along;
  * queues are bounded: the server's memory and threads stay within their bounds, and the
    excess is refused with `busy` (51) rather than queued ever longer;
  * once the load stops, the server answers at once.
Peak RSS and threads are printed (docs/reliability.md, "Overload").
"""

import tempfile
import shutil
import time

import pytest

import loadutil
from conftest import reliability_long

# About 120 entries for each of the generated surnames: each search runs on the search threads.
ENTRIES = 40000
CONNECTIONS = 200
DEPTH = 64
# A new client's bind and search under the load: at the median within this, and never
# beyond the worst (a busy 2-core test machine running the load client too).
PROBE_MEDIAN_S = 0.25
PROBE_WORST_S = 3.0
# After the load: answered at once.
RECOVERED_WITHIN_S = 0.1
# Memory the load may add to the idle server: the bounded queues (1 MiB a connection plus a
# buffer per search place) are capped at 128 MiB for all clients together; the rest is the
# connections' read buffers and the searches' working sets.
MAX_RSS_GROWTH_MIB = 512


def cores():
    import os
    return len(os.sched_getaffinity(0))


@pytest.mark.reliability
@pytest.mark.larch_only("Larch's queues, search threads and thread bound")
def test_overload_is_refused_not_queued_and_the_server_recovers_at_once(request):
    duration = 60 if reliability_long() else 10
    tmp = tempfile.mkdtemp(prefix="larch-e2e-overload-")
    server = None
    try:
        server, gen = loadutil.loaded_server(request, tmp, ENTRIES)
        user = loadutil.first_user()
        idle_rss, idle_threads, idle_fds = loadutil.process_stats(server.pid)
        sampler = loadutil.Sampler(server.pid, 0.25)
        sampler.start()
        prober = loadutil.Prober(server, user, loadutil.GEN_PASSWORD, 0.2)
        load = loadutil.Bench(server, ["-W", "search", "-f", "(sn={})", "-a", "all",
                                       "--values", str(gen / "sn.txt"), "-c", str(CONNECTIONS),
                                       "-d", str(DEPTH)], duration)
        try:
            time.sleep(1)
            prober.start()
            report = load.result(timeout=duration + 120)
        finally:
            load.stop()
            prober.stop()
        sampler.stop()
        # Recovery: the first new client after the load.
        t_bind, t_search = loadutil.probe_once(server, user, loadutil.GEN_PASSWORD)

        peak_rss = max(s[1] for s in sampler.samples)
        peak_threads = max(s[2] for s in sampler.samples)
        binds = [b for _, b, _ in prober.times]
        searches = [s for _, _, s in prober.times]
        busy = loadutil.codes(report).get(51, 0)
        print(f"load: {CONNECTIONS} connections x {DEPTH} deep, {duration} s: "
              f"{report['ops_per_sec']:.0f} searches/s answered, {report['ok']} ok, {busy} busy, "
              f"other codes {loadutil.codes(report)}, client errors {report['client_errors']}")
        print(f"admitted searches' latency: median {report['latency']['p50_us'] / 1000:.1f} ms, "
              f"p99 {report['latency']['p99_us'] / 1000:.1f} ms, max {report['latency']['max_us'] / 1000:.1f} ms")
        print(f"new client under load ({len(prober.times)} probes): bind {loadutil.summary(binds)}; "
              f"search {loadutil.summary(searches)}")
        print(f"server: RSS {idle_rss:.0f} MiB idle, {peak_rss:.0f} MiB peak; threads {idle_threads} idle, "
              f"{peak_threads} peak; after the load: bind {t_bind * 1000:.1f} ms, search {t_search * 1000:.1f} ms")

        assert not prober.failures, prober.failures[:5]
        assert prober.times, "no probe ran"
        for what, values in (("bind", binds), ("search", searches)):
            values = sorted(values)
            assert values[len(values) // 2] < PROBE_MEDIAN_S, f"a new client's {what}: {loadutil.summary(values)}"
            assert values[-1] < PROBE_WORST_S, f"a new client's {what}: {loadutil.summary(values)}"
        assert report["ok"] > 0, "the admitted searches were answered"
        unexpected = {c: n for c, n in loadutil.codes(report).items() if c not in (51,)}
        assert not unexpected, f"only busy may refuse a search under overload: {unexpected}"
        assert peak_threads <= 3 * cores() + 10, f"{peak_threads} threads"
        assert peak_rss - idle_rss < MAX_RSS_GROWTH_MIB, f"RSS grew from {idle_rss:.0f} to {peak_rss:.0f} MiB"
        assert t_bind + t_search < RECOVERED_WITHIN_S * 2
    finally:
        if server is not None:
            status = server.stop()
            assert status == 0, server.stderr_tail()
        shutil.rmtree(tmp, ignore_errors=True)
