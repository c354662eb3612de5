#!/usr/bin/env python3
"""Server CPU of a membership change against a plain modify, on the tree of
bench/nested_groups.py served by `larch serve` (docs/benchmarks.md, "Groups").

    bench/member_cost.py --url ldap://127.0.0.1:PORT --pid PID [--ops 4000] [--rounds 3]

Each round runs, on one connection bound as the admin, one request in flight:
  plain   replace the description of a random level-0 group;
  add     add a random user to a random level-0 group (its memberOf and its chain change);
  delete  delete that user from that group again (the same changes undone).
and reads the server's CPU time (utime + stime of /proc/PID/stat) around each batch. It
prints one line per kind and round, then the medians and their ratios to `plain`.
"""

import argparse
import os
import random
import statistics
import time

import ldap3

BASE = "dc=example,dc=com"
ADMIN = f"cn=admin,{BASE}"
LEVEL0_GROUPS = 8000
USERS = 100_000


def server_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def group(k):
    return f"cn=g0-{k},ou=groups,{BASE}"


def user(i):
    return f"uid=u{i},ou=people,{BASE}"


def timed(pid, conn, requests):
    """Runs the requests; returns server CPU µs per request."""
    before = server_cpu_seconds(pid)
    for request in requests:
        request(conn)
        # 20: the random user was in the group already (25 in 100,000); 16: gone again.
        assert conn.result["result"] in (0, 16, 20), conn.result
    return (server_cpu_seconds(pid) - before) * 1e6 / len(requests)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--password", default="secret")
    p.add_argument("--ops", type=int, default=4000)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    conn = ldap3.Connection(ldap3.Server(a.url), ADMIN, a.password, auto_bind=True)
    rnd = random.Random(1)
    results = {"plain": [], "add": [], "delete": []}
    for r in range(a.rounds):
        # Users above 90,000 that no level-0 group of the run lists yet: a fresh pick each time.
        pairs = [(rnd.randrange(LEVEL0_GROUPS), 90_000 + rnd.randrange(10_000)) for _ in range(a.ops)]
        pairs = list({(g, u): None for g, u in pairs})
        plain = [lambda c, g=g: c.modify(group(g), {"description": [(ldap3.MODIFY_REPLACE, [f"round {r}"])]})
                 for g, _ in pairs]
        add = [lambda c, g=g, u=u: c.modify(group(g), {"member": [(ldap3.MODIFY_ADD, [user(u)])]})
               for g, u in pairs]
        delete = [lambda c, g=g, u=u: c.modify(group(g), {"member": [(ldap3.MODIFY_DELETE, [user(u)])]})
                  for g, u in pairs]
        for kind, requests in (("plain", plain), ("add", add), ("delete", delete)):
            us = timed(a.pid, conn, requests)
            results[kind].append(us)
            print(f"round {r + 1} {kind:6} {len(requests)} modifies: {us:.1f} server µs each", flush=True)
        time.sleep(0.5)
    base = statistics.median(results["plain"])
    for kind, values in results.items():
        m = statistics.median(values)
        print(f"median {kind:6} {m:.1f} server µs/op  ({m / base:.2f}x plain)")


if __name__ == "__main__":
    main()
