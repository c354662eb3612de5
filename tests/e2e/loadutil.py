"""Helpers of the load suites (overload, soak): a private `larch serve` on generated data,
`larch bench` as the load, a probe client that times a new client's bind and search, and a
sampler of the server process's memory, threads and file descriptors.

Everything is started on loopback, on ports the tests pick, and stopped by PID.
"""

import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path

import ldapwire
from conftest import LdapServer, BASE

# The password `larch gen` gives its users (`larch bench --auth-password`'s default).
GEN_PASSWORD = "password"


def loaded_server(request, tmp, entries, extra_toml=""):
    """A started LdapServer whose data directory was imported from `larch gen -n entries`
    first (as bench/ab.sh does). Returns (server, gen_dir)."""
    larch_bin = request.config.getoption("--larch-bin")
    srv = LdapServer("larch", tmp, larch_bin=larch_bin, larch_extra_toml=extra_toml)
    gen = Path(tmp) / "gen"
    subprocess.run([larch_bin, "gen", "-n", str(entries), "-o", str(gen), "--seed", "1"],
                   check=True, capture_output=True)
    cns = (gen / "cn.txt").read_text().splitlines()
    (gen / "sn.txt").write_text("\n".join(sorted({c.split()[-1] for c in cns if c})) + "\n")
    subprocess.run([larch_bin, "import", "--data", str(srv.workdir / "data"), "--creator", srv.admin_dn,
                    str(gen / "data.ldif")], check=True, capture_output=True)
    srv.start()
    return srv, gen


class Bench:
    """`larch bench` running in the background with --json; `result()` waits for it."""

    def __init__(self, server, args, duration_s):
        self.proc = subprocess.Popen(
            [str(server.larch_bin), "bench", "-H", server.url, "--server-pid", str(server.pid),
             "--duration", f"{duration_s}s", "--warmup", "0s", "--json", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self, timeout):
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, f"larch bench failed ({self.proc.returncode}): {err[-2000:]}"
        return json.loads(out)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def codes(report):
    """{code: count} of the non-success result codes of a bench report."""
    out = {}
    for c in report.get("result_codes", []):
        out[c["code"]] = out.get(c["code"], 0) + c["count"]
    return out


def process_stats(pid):
    """(RSS MiB, threads, open file descriptors) of a process."""
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


class Sampler(threading.Thread):
    """Samples process_stats(pid) every `every_s` until stopped: `samples` holds
    (seconds since start, RSS MiB, threads, fds)."""

    def __init__(self, pid, every_s):
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.samples = []
        self.halt = threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self.halt.is_set():
            try:
                self.samples.append((time.monotonic() - self.t0, *process_stats(self.pid)))
            except OSError:
                return
            self.halt.wait(self.every_s)

    def stop(self):
        self.halt.set()
        self.join()


def probe_once(server, user_dn, password, timeout_s=30):
    """A new client: connect, simple bind, a base search. Returns (bind s, search s), or
    raises when the server does not answer in time."""
    t0 = time.monotonic()
    c = ldapwire.RawConnection(server.host, server.port, timeout=timeout_s)
    try:
        answer = c.request(1, ldapwire.bind_simple(user_dn, password))
        t_bind = time.monotonic() - t0
        assert answer[-1].code == 0, answer[-1]
        t1 = time.monotonic()
        answer = c.request(2, ldapwire.search(user_dn, ldapwire.SCOPE_BASE))
        assert answer[-1].code == 0, answer[-1]
        return t_bind, time.monotonic() - t1
    finally:
        c.close()


class Prober(threading.Thread):
    """Runs probe_once every `every_s` until stopped; `times` holds (t, bind s, search s)
    and `failures` what went wrong."""

    def __init__(self, server, user_dn, password, every_s):
        super().__init__(daemon=True)
        self.args = (server, user_dn, password)
        self.every_s = every_s
        self.times, self.failures = [], []
        self.halt = threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self.halt.is_set():
            try:
                b, s = probe_once(*self.args)
                self.times.append((time.monotonic() - self.t0, b, s))
            except Exception as e:  # noqa: BLE001 - recorded, the test asserts on it
                self.failures.append(repr(e))
            self.halt.wait(self.every_s)

    def stop(self):
        self.halt.set()
        self.join()


def summary(values):
    """'median X ms, p99 Y ms, max Z ms' of seconds."""
    if not values:
        return "no samples"
    v = sorted(values)
    p99 = v[min(len(v) - 1, int(len(v) * 0.99))]
    return f"median {statistics.median(v) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {v[-1] * 1000:.1f} ms"


def first_user():
    return f"uid=user.0,ou=People,{BASE}"
