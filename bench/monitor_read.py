#!/usr/bin/env python3
"""Times full reads of cn=Monitor with many connections open (docs/benchmarks.md,
"Monitoring").

    bench/monitor_read.py --port PORT [--host 127.0.0.1] [--connections 1000] [--reads 50]
                          [--admin-dn DN] [--password PW] [--metrics http://HOST:PORT/metrics]
                          [--server-pid PID]

Opens --connections connections, each with an anonymous Bind answered (so each is a
session with an entry under cn=Connections), then, on one more connection bound as the
admin, sends --reads subtree searches of cn=Monitor for every attribute ('*' and '+') one
after the other, timing each from the request's send to the last octet of its
SearchResultDone. The responses are framed, not decoded, so the figure is the server's time
plus the transfer, not a client's parsing. Prints the entries per read and the median, 90th
percentile and maximum in milliseconds, and exits 1 if a read failed. With --metrics, then
times as many GETs of /metrics (a fresh HTTP connection each, as Prometheus' first scrape)
with the connections still open. With --server-pid, also prints the server's CPU time per
read (user and system, from /proc/PID/stat around the reads): on a shared machine, where the
elapsed time includes waiting for a core, the figure to compare between builds."""

import argparse
import os
import resource
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
import ldapwire as w  # noqa: E402

SEARCH_RESULT_ENTRY = 0x64
SEARCH_RESULT_DONE = 0x65


class Reader:
    """Frames LDAPMessages from a socket without copying what is left at each message."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.pos = 0

    def message_tag(self):
        """The protocolOp tag of the next message: read from the message's first octets
        (SEQUENCE header, then the messageID INTEGER, then the protocolOp's tag), so
        framing costs the client little beside the server's time."""
        while True:
            framed = self._frame()
            if framed is not None:
                return framed
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf = self.buf[self.pos:] + chunk
            self.pos = 0

    def _frame(self):
        buf, pos = self.buf, self.pos
        if len(buf) - pos < 2:
            return None
        first = buf[pos + 1]
        if first < 0x80:
            header, length = 2, first
        else:
            n = first & 0x7F
            if len(buf) - pos < 2 + n:
                return None
            header, length = 2 + n, int.from_bytes(buf[pos + 2:pos + 2 + n], "big")
        end = pos + header + length
        if end > len(buf):
            return None
        id_at = pos + header
        op_tag = buf[id_at + 2 + buf[id_at + 1]]
        self.pos = end
        return op_tag


def cpu_seconds(pid):
    """User plus system CPU time of process `pid` (every thread), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def request(sock, msgid, op):
    sock.sendall(w.message(msgid, op))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--reads", type=int, default=50)
    ap.add_argument("--admin-dn", default="cn=admin,dc=example,dc=com")
    ap.add_argument("--password", default=os.environ.get("LARCH_ADMIN_PASSWORD", "secret"))
    ap.add_argument("--metrics", help="also time GET of this /metrics URL, --reads times")
    ap.add_argument("--server-pid", type=int, help="print the server's CPU time per read")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.connections + 64)), hard))

    idle = []
    for _ in range(args.connections):
        s = socket.create_connection((args.host, args.port))
        request(s, 1, w.bind_simple())
        tag = Reader(s).message_tag()
        assert tag == 0x61, tag
        idle.append(s)

    admin = socket.create_connection((args.host, args.port))
    admin.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request(admin, 1, w.bind_simple(args.admin_dn, args.password))
    reader = Reader(admin)
    tag = reader.message_tag()
    assert tag == 0x61
    times = []
    entries = 0
    cpu_before = cpu_seconds(args.server_pid) if args.server_pid else 0.0
    for i in range(args.reads):
        started = time.perf_counter()
        request(admin, i + 2, w.search("cn=Monitor", w.SCOPE_SUB, attrs=("*", "+")))
        entries = 0
        while True:
            tag = reader.message_tag()
            if tag == SEARCH_RESULT_ENTRY:
                entries += 1
            elif tag == SEARCH_RESULT_DONE:
                break
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(f"connections={args.connections} entries_per_read={entries} reads={args.reads} "
          f"median_ms={statistics.median(times):.2f} p90_ms={times[int(len(times) * 0.9) - 1]:.2f} "
          f"max_ms={times[-1]:.2f}")
    if args.server_pid:
        cpu_ms = (cpu_seconds(args.server_pid) - cpu_before) * 1000 / args.reads
        print(f"server_cpu_ms_per_read={cpu_ms:.2f}")
    if args.metrics:
        import urllib.request
        scrapes = []
        for _ in range(args.reads):
            started = time.perf_counter()
            with urllib.request.urlopen(args.metrics, timeout=10) as r:
                size = len(r.read())
            scrapes.append((time.perf_counter() - started) * 1000)
        scrapes.sort()
        print(f"metrics: connections={args.connections} bytes={size} scrapes={args.reads} "
              f"median_ms={statistics.median(scrapes):.2f} p90_ms={scrapes[int(len(scrapes) * 0.9) - 1]:.2f} "
              f"max_ms={scrapes[-1]:.2f}")
    for s in idle:
        s.close()
    admin.close()
    return 0 if entries > args.connections else 1


if __name__ == "__main__":
    sys.exit(main())
