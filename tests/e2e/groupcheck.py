"""Checks and crash cycles the group tests share (test_groups.py, test_member_uid.py).

`assert_member_of_consistent` recomputes, from the groups a connection can read, what
every entry's memberOf must hold and compares (the check `larch verify` makes on a data
directory, written again here so that the server's own code is not the judge).
`kill9_cycles` runs writer threads against a server, kills it with SIGKILL at a random
moment, restarts it and runs a check, a number of times.
"""

import random
import threading

from ldaputil import assert_result, search_entries, values

GROUP_CLASSES = {"groupofnames", "groupofuniquenames", "groupofmembers"}


def norm(dn):
    """A DN compared loosely: RDNs trimmed and lowercased (enough for the tests' names)."""
    return ",".join(part.strip().lower() for part in dn.split(","))


def assert_member_of_consistent(conn, base):
    """Every entry below base holds in memberOf exactly the groups that list it."""
    res, entries = search_entries(conn, base, attrs=["objectClass", "member", "uniqueMember", "memberOf"])
    assert_result(res, "success")
    by_dn = {norm(e["dn"]): e for e in entries}
    expected = {dn: set() for dn in by_dn}
    for dn, e in by_dn.items():
        classes = {c.lower() for c in values(e, "objectClass")}
        if not classes & GROUP_CLASSES:
            continue
        listed = values(e, "member") + values(e, "uniqueMember")
        for m in listed:
            if norm(m) in expected:
                expected[norm(m)].add(dn)
    for dn, e in by_dn.items():
        found = {norm(v) for v in values(e, "memberOf")}
        assert found == expected[dn], f"{dn}: memberOf {sorted(found)}, its groups say {sorted(expected[dn])}"


def kill9_cycles(srv, writer, *, cycles, writers, kill_after_s, check, seed=0):
    """`cycles` times: `writers` threads run `writer(srv, stop, seed)` until stopped, the
    server is killed with SIGKILL after a random delay drawn from `kill_after_s` (seconds)
    and restarted, the threads stopped, then `check()` runs. A writer returns when `stop`
    is set or its connection fails (the kill closes it mid-request)."""
    rnd = random.Random(seed)
    for cycle in range(cycles):
        stop = threading.Event()
        threads = [threading.Thread(target=writer, args=(srv, stop, seed + cycle * 10 + i)) for i in range(writers)]
        for t in threads:
            t.start()
        threading.Event().wait(rnd.uniform(*kill_after_s))
        srv.kill9_and_restart()
        stop.set()
        for t in threads:
            t.join()
        check()
