"""Crash cycles: writes of every kind from many connections, `kill -9` of the server at a
random moment, during a snapshot and during the replay of a long log at startup; after
each restart every acknowledged write is there and every unacknowledged one is there
whole or not at all. docs/reliability.md ("Crash cycles") reports the figures.

The driver, per cycle:
  1. WRITERS threads, each on its own connection bound as the admin and owning its own
     entries (so its model of them is exact), send one write at a time: an add, a modify of
     three attributes at once, a delete, a modify DN (new RDN, half of them to the other
     container) or a Password Modify. A write is recorded as in flight before it is sent and
     applied to the thread's model when its success arrives (acknowledged). Two pump
     connections pipeline windows of modifies of the filler entries (one per entry per
     window), for volume: a longer log, larger snapshots, many writes in flight at a kill.
  2. The server is killed with SIGKILL, by its PID, at a moment the cycle's kind chooses:
     `random` (a random delay into the writes), `snapshot` (as soon as a temporary snapshot
     file appears; it counts when the file is still there once the process is gone, and the
     next start must then report removing it), `replay` (the run before it had the snapshot
     triggers off and pumped REPLAY_LOG_RECORDS modifies; the start after the kill is itself
     killed at a random point of its replay, before it has loaded the directory).
  3. It is started again, timed from spawn to the first answered Bind; what the start
     logged is read: records replayed (never more than the bound of docs/store.md,
     "Startup after a crash", after a run with the triggers on), a snapshot before serving
     after the long log, the leftover temporary file removed.
  4. Checked strictly: each writer's entries (DN and attributes) equal its model exactly,
     either without its write in flight or with all of it; the password of every entry
     binds (an in-flight Password Modify: exactly one of the old and new ones does); each
     filler entry holds its acknowledged value or the one in flight.
  5. The models take the state found and the next cycle starts from it.
At the end the server is stopped cleanly and started again: that start is the clean-start
time the crash restarts are compared with.
"""

import os
import random
import re
import shutil
import tempfile
import threading
import time

import pytest

import conftest
import ldapwire
import ldapwrite
from ldapwire import message

pytestmark = [pytest.mark.reliability,
              pytest.mark.larch_only("kill -9 cycles of larch serve, read through its snapshot files and error log")]

BASE = conftest.BASE
CRASH = f"ou=crash,{BASE}"
CONTAINERS = ("a", "b")
FILLER = f"ou=filler,{BASE}"

# Cycles: the CI form, and the long form (LARCH_RELIABILITY_LONG=1).
CYCLES_SHORT = 20
CYCLES_LONG = 500
# Writer connections, and the most entries each keeps (adds stop there, deletes resume).
WRITERS = 8
MAX_ENTRIES_PER_WRITER = 12
# Filler entries and the random octets of each value (hex, twice as many characters):
# about 3 MB of snapshot that compresses poorly, so a snapshot takes long enough to be
# killed in the middle of.
FILLER_ENTRIES = 3000
FILLER_RANDOM_OCTETS = 500
# Pump connections and how many modifies each pipelines before reading the answers.
PUMPS = 2
PUMP_WINDOW = 200
# The store settings: a snapshot every SNAPSHOT_TRIGGER log records or SNAPSHOT_INTERVAL.
SNAPSHOT_TRIGGER = 500
SNAPSHOT_INTERVAL = "2s"
# What a `replay` cycle's run pumps with the triggers off before its kill: a replay of 50 ms
# (idle 2-core machine, about 6.5 us a record) to several tenths of a second (busy), long
# enough to kill a start in the middle of it from Python.
REPLAY_LOG_RECORDS = 8000
# A `random` kill comes this long after the writes start (seconds, uniform).
RANDOM_KILL_S = (0.05, 1.0)
# How long a `snapshot` cycle waits for a temporary snapshot file before killing anyway.
SNAPSHOT_WAIT_S = 6.0
# Kind of each cycle by its index modulo 4.
KINDS = ("random", "snapshot", "random", "replay")
# Socket timeout of the driver's connections: only a dead server makes one wait this long.
IO_TIMEOUT_S = 30.0


def cycles():
    return CYCLES_LONG if conftest.reliability_long() else CYCLES_SHORT


def store_toml(triggers_on):
    """The [store] and [password] tables: SSHA so the password checks cost little."""
    after, every = (SNAPSHOT_TRIGGER, SNAPSHOT_INTERVAL) if triggers_on else (0, "0")
    return (f'[store]\nsnapshot_after_records = {after}\nsnapshot_interval = "{every}"\n'
            '[password]\ndefault_scheme = "ssha"\n')


def entry_dn(name, container):
    return f"cn={name},ou={container},{CRASH}"


def connect(srv, timeout=IO_TIMEOUT_S):
    """A raw connection bound as the admin."""
    c = ldapwire.RawConnection(srv.host, srv.port, timeout=timeout)
    answer = c.request(1, ldapwire.bind_simple(srv.admin_dn, srv.admin_pw))
    assert answer[-1].code == 0, f"admin bind answered {answer[-1].code} {answer[-1].diag}"
    return c


def pipeline(c, ops, first_id):
    """Sends ops in one write and returns {message ID: result code} of the answers read;
    stops early (returns what it has) when the connection dies."""
    c.send(b"".join(message(first_id + i, op) for i, op in enumerate(ops)))
    codes = {}
    while len(codes) < len(ops):
        m = c.recv()
        if m is None:
            break
        if m.op in ldapwire.RESULT_OPS:
            codes[m.msgid] = (m.code, m.diag)
    return codes


# ----------------------------------------------------------------------------- the model

class Entry:
    """A writer's entry as the server must hold it: container, attributes, password."""

    def __init__(self, container, attrs, password=None):
        self.container = container
        self.attrs = attrs  # lower-case type -> sorted list of values
        self.password = password

    def copy(self):
        return Entry(self.container, {k: list(v) for k, v in self.attrs.items()}, self.password)


class Op:
    """One write: what is sent (`pdu`) and what it does to a model (`apply`)."""

    def __init__(self, kind, name, pdu, apply):
        self.kind, self.name, self.pdu, self._apply = kind, name, pdu, apply

    def apply(self, model):
        out = {n: e.copy() for n, e in model.items()}
        self._apply(out)
        return out


def visible(model):
    """{DN (lower case): attributes} of a model, as a search shows it."""
    return {entry_dn(n, e.container).lower(): e.attrs for n, e in model.items()}


class Writer:
    """One connection's writes and the exact model of its entries (see the module doc)."""

    def __init__(self, k, seed):
        self.k = k
        self.rng = random.Random(seed)
        self.model = {}
        self.serial = 0
        self.acked = 0
        self.inflight = None
        self.failure = None

    def fresh(self):
        self.serial += 1
        return self.serial

    def name(self):
        return f"w{self.k}n{self.fresh()}"

    def next_op(self):
        r = self.rng.random()
        if not self.model or (r < 0.3 and len(self.model) < MAX_ENTRIES_PER_WRITER):
            return self.op_add()
        name = self.rng.choice(sorted(self.model))
        if r < 0.55:
            return self.op_modify(name)
        if r < 0.7:
            return self.op_rename(name)
        if r < 0.85:
            return self.op_password(name)
        return self.op_delete(name)

    def op_add(self):
        name, s, container = self.name(), self.serial, self.rng.choice(CONTAINERS)
        attrs = {"objectclass": ["person", "top"], "cn": [name], "sn": [f"s{s}"],
                 "description": sorted([f"d{s}a", f"d{s}b"])}
        sent = {"objectClass": ["top", "person"], "cn": [name], "sn": [f"s{s}"],
                "description": [f"d{s}a", f"d{s}b"]}

        def apply(m):
            m[name] = Entry(container, attrs)
        return Op("add", name, ldapwrite.add(entry_dn(name, container), sent), apply)

    def op_modify(self, name):
        e, s = self.model[name], self.fresh()
        phones = e.attrs.get("telephonenumber", [])
        desc = [f"m{s}a", f"m{s}b", f"m{s}c"]
        changes = [(ldapwrite.MOD_REPLACE, "description", desc), (ldapwrite.MOD_REPLACE, "sn", [f"s{s}"])]
        if len(phones) >= 3:
            gone = phones[0]
            changes.append((ldapwrite.MOD_DELETE, "telephoneNumber", [gone]))
            new_phones = phones[1:]
        else:
            phone = f"+1 555 {s:07d}"
            changes.append((ldapwrite.MOD_ADD, "telephoneNumber", [phone]))
            new_phones = sorted(phones + [phone])

        def apply(m):
            a = m[name].attrs
            a["description"] = sorted(desc)
            a["sn"] = [f"s{s}"]
            if new_phones:
                a["telephonenumber"] = new_phones
            else:
                a.pop("telephonenumber", None)
        return Op("modify", name, ldapwrite.modify(entry_dn(name, e.container), changes), apply)

    def op_rename(self, name):
        e, new = self.model[name], self.name()
        move = self.rng.random() < 0.5
        target = [c for c in CONTAINERS if c != e.container][0] if move else e.container
        pdu = ldapwrite.modify_dn(entry_dn(name, e.container), f"cn={new}", True,
                                  f"ou={target},{CRASH}" if move else None)

        def apply(m):
            moved = m.pop(name)
            moved.container = target
            moved.attrs["cn"] = [new]
            m[new] = moved
        return Op("modrdn", name, pdu, apply)

    def op_password(self, name):
        e, pw = self.model[name], f"p{self.k}-{self.fresh()}"

        def apply(m):
            m[name].password = pw
        return Op("passwd", name, ldapwrite.password_modify(user=entry_dn(name, e.container), new=pw), apply)

    def op_delete(self, name):
        e = self.model[name]

        def apply(m):
            del m[name]
        return Op("delete", name, ldapwrite.delete(entry_dn(name, e.container)), apply)

    def run(self, srv, stop):
        """Writes until `stop` or until the connection dies (the kill)."""
        try:
            c = connect(srv)
        except (OSError, ldapwire.WireError, TimeoutError):
            return
        msgid = 1
        try:
            while not stop.is_set():
                op = self.next_op()
                msgid += 1
                self.inflight = op
                try:
                    answer = c.request(msgid, op.pdu)
                except (OSError, ldapwire.WireError, TimeoutError):
                    return  # killed: the write stays in flight
                final = answer[-1]
                if final.code != 0:
                    self.failure = f"{op.kind} of {op.name} answered {final.code}: {final.diag}"
                    self.inflight = None
                    return
                self.model = op.apply(self.model)
                self.inflight = None
                self.acked += 1
        finally:
            c.close()


class Pump:
    """Pipelined modifies of the filler entries `k`, `k + PUMPS`, ...: per entry the value
    acknowledged and the one in flight (at most one per entry per window)."""

    def __init__(self, k):
        self.k = k
        self.entries = list(range(k, FILLER_ENTRIES, PUMPS))
        self.acked = {i: 0 for i in self.entries}
        self.inflight = {}
        self.serial = 0
        self.acked_count = 0
        self.sent = 0
        self.failure = None

    def run(self, srv, stop, limit=None):
        """Windows of modifies until `stop`, the connection dies, or `limit` were sent."""
        try:
            c = connect(srv)
        except (OSError, ldapwire.WireError, TimeoutError):
            return
        rng = random.Random(self.k)
        try:
            while not stop.is_set() and (limit is None or self.sent < limit):
                self.serial += 1
                window = rng.sample(self.entries, PUMP_WINDOW)
                ops, by_id = [], {}
                for j, i in enumerate(window):
                    self.inflight[i] = self.serial
                    ops.append(ldapwrite.modify(f"cn=f{i},{FILLER}", [
                        (ldapwrite.MOD_REPLACE, "description", [filler_value(i, self.serial)])]))
                    by_id[2 + j] = i
                self.sent += len(ops)
                try:
                    codes = pipeline(c, ops, 2)
                except (OSError, ldapwire.WireError, TimeoutError):
                    return
                for msgid, (code, diag) in codes.items():
                    i = by_id[msgid]
                    if code != 0:
                        self.failure = f"modify of filler {i} answered {code}: {diag}"
                        return
                    self.acked[i] = self.serial
                    del self.inflight[i]
                    self.acked_count += 1
                if len(codes) < len(ops):
                    return
        finally:
            c.close()


def filler_value(i, serial):
    return f"{i}:{serial}:" + os.urandom(FILLER_RANDOM_OCTETS).hex()


# ----------------------------------------------------------------------------- the check

class Tally:
    """What the cycles did and found."""

    def __init__(self):
        self.cycles = 0
        self.acked_checked = 0
        self.unacked_applied = 0
        self.unacked_absent = 0
        self.kills = {"random": 0, "snapshot": 0, "replay": 0}
        self.snapshot_misses = 0
        self.replay_misses = 0
        self.temp_files_removed = 0
        self.snapshots_before_serving = 0
        self.restart_s = []
        self.max_replayed = 0
        self.max_replay_bound = 0
        self.clean_start_s = []
        # The slowest restart's records replayed and snapshot before serving (seconds).
        self.slowest = (0, 0.0)

    def line(self):
        worst = max(self.restart_s) if self.restart_s else 0.0
        median = sorted(self.restart_s)[len(self.restart_s) // 2] if self.restart_s else 0.0
        clean = max(self.clean_start_s) if self.clean_start_s else 0.0
        return (f"crash cycles: {self.cycles} cycles, {self.acked_checked} acknowledged writes checked (0 lost), "
                f"unacknowledged: {self.unacked_applied} found applied, {self.unacked_absent} found absent "
                f"(0 half-applied); kills: {self.kills['random']} random, {self.kills['snapshot']} during a "
                f"snapshot, {self.kills['replay']} during startup replay (missed: {self.snapshot_misses} "
                f"snapshot kills found no snapshot, {self.replay_misses} replay kills came after the replay); "
                f"{self.temp_files_removed} leftover temporary snapshot files removed at startup, "
                f"{self.snapshots_before_serving} snapshots written before serving; restart after a crash: "
                f"max {worst:.3f} s ({self.slowest[0]} records replayed, {self.slowest[1]:.3f} s of snapshot before "
                f"serving), median {median:.3f} s, clean start {clean:.3f} s; most records replayed "
                f"after a run with the snapshot triggers on: {self.max_replayed} (bound at that start "
                f"{self.max_replay_bound})")


def search_all(c, base, attrs):
    """Every entry below base (subtree, the base excluded): {DN lower: {type lower: sorted values}}."""
    out = {}
    answer = c.request(900, ldapwire.search(base, ldapwire.SCOPE_ONE if base == FILLER else ldapwire.SCOPE_SUB,
                                            ldapwire.f_eq("objectClass", "person") if base == CRASH else None,
                                            attrs))
    assert answer[-1].code == 0, f"search of {base} answered {answer[-1].code}: {answer[-1].diag}"
    for m in answer:
        if m.op == ldapwire.SEARCH_ENTRY:
            out[m.dn.lower()] = {t.lower(): sorted(v.decode() for v in vals) for t, vals in m.attrs.items()}
    return out


def binds(srv, dn, password):
    """The result code of a simple Bind as dn with password (on its own connection)."""
    c = ldapwire.RawConnection(srv.host, srv.port, timeout=IO_TIMEOUT_S)
    try:
        return c.request(1, ldapwire.bind_simple(dn, password))[-1].code
    finally:
        c.close()


def password_state(srv, model, name):
    """Which password of model[name] binds: True if it does (or the model has none)."""
    e = model[name]
    if e.password is None:
        return True
    return binds(srv, entry_dn(name, e.container), e.password) == 0


def check_writer(srv, w, found, tally):
    """Step 4 for one writer; w.model becomes the state found."""
    prefix = f"cn=w{w.k}n"
    mine = {dn: a for dn, a in found.items() if dn.startswith(prefix)}
    before = w.model
    after = w.inflight.apply(before) if w.inflight is not None else None
    matches = []
    if mine == visible(before):
        matches.append("absent")
    if after is not None and mine == visible(after):
        matches.append("applied")
    assert matches, (f"writer {w.k}: the entries found match neither the acknowledged state nor it with the "
                     f"write in flight ({w.inflight.kind + ' of ' + w.inflight.name if w.inflight else 'none'}):\n"
                     f"found {sorted(mine.items())}\nacknowledged {sorted(visible(before).items())}")
    if len(matches) == 2:
        # A Password Modify changes no visible attribute: the password decides.
        name = w.inflight.name
        new_code = binds(srv, entry_dn(name, after[name].container), after[name].password)
        assert new_code in (0, 49), f"writer {w.k}: bind as {name} answered {new_code}"
        old = before[name].password
        if old is not None:
            old_code = binds(srv, entry_dn(name, before[name].container), old)
            assert (new_code == 0) != (old_code == 0), (
                f"writer {w.k}: Password Modify of {name} in flight: the new password answers {new_code}, "
                f"the old one {old_code}; exactly one must bind")
        matches = ["applied" if new_code == 0 else "absent"]
    state = after if matches[0] == "applied" else before
    for name in state:
        if w.inflight is not None and w.inflight.kind == "passwd" and name == w.inflight.name:
            continue  # decided above
        assert password_state(srv, state, name), f"writer {w.k}: the password of {name} does not bind"
    if w.inflight is not None:
        if matches[0] == "applied":
            tally.unacked_applied += 1
        else:
            tally.unacked_absent += 1
    tally.acked_checked += w.acked
    w.model, w.inflight, w.acked = state, None, 0


def check_pump(p, found, tally):
    """Step 4 for one pump: each entry's value is the acknowledged one or the one in flight."""
    for i in p.entries:
        values = found.get(f"cn=f{i},{FILLER}".lower(), {}).get("description")
        assert values and len(values) == 1, f"filler {i}: description {values!r}"
        serial = int(values[0].split(":")[1])
        want = {p.acked[i]} | ({p.inflight[i]} if i in p.inflight else set())
        assert serial in want, f"filler {i}: holds write {serial}, acknowledged {p.acked[i]}, in flight " \
                               f"{p.inflight.get(i)}"
        if i in p.inflight:
            if serial == p.inflight[i]:
                tally.unacked_applied += 1
            else:
                tally.unacked_absent += 1
        p.acked[i] = serial
    tally.acked_checked += p.acked_count
    p.inflight, p.acked_count, p.sent = {}, 0, 0


# ----------------------------------------------------------------------------- the server

class Crashing:
    """The server under the cycles: spawn, timed start, kill, and what each start logged."""

    def __init__(self, srv):
        self.srv = srv
        self.log_from = 0

    def configure(self, triggers_on):
        toml = (self.srv.workdir / "larch.toml").read_text()
        head = toml.split("[store]")[0]
        (self.srv.workdir / "larch.toml").write_text(head + store_toml(triggers_on) +
                                                     "\n[bind_throttle]\nexempt_loopback = true\n")

    def spawn(self):
        self.log_from = self.srv.stderr_path.stat().st_size if self.srv.stderr_path.exists() else 0
        started = time.monotonic()
        self.srv.spawn()
        return started

    def start(self):
        """Spawn and wait for the first answered Bind; returns the seconds it took."""
        started = self.spawn()
        self.srv.wait_ready()
        return time.monotonic() - started

    def start_log(self):
        """What the latest start has written to the error log so far."""
        with open(self.srv.stderr_path, "rb") as f:
            f.seek(self.log_from)
            return f.read().decode("utf-8", "replace")

    def loaded(self):
        """(records replayed, seconds) once the latest start has loaded the directory."""
        m = re.search(r"loaded the directory .*replayed=(\d+) seconds=([0-9.]+)", self.start_log())
        return (int(m.group(1)), float(m.group(2))) if m else None

    def temp_files(self):
        d = self.srv.workdir / "data" / "snapshots"
        return [n for n in os.listdir(d) if n.endswith(".tmp")] if d.exists() else []


def kill_at_random(crash, rng):
    time.sleep(rng.uniform(*RANDOM_KILL_S))
    crash.srv.kill9()
    return "random"


def kill_during_snapshot(crash, rng, tally):
    deadline = time.monotonic() + SNAPSHOT_WAIT_S
    while not crash.temp_files() and time.monotonic() < deadline:
        time.sleep(0.0005)
    time.sleep(rng.uniform(0, 0.003))
    crash.srv.kill9()
    if crash.temp_files():
        return "snapshot"
    tally.snapshot_misses += 1
    return "random"


def kill_during_replay(crash, rng, per_record_s, clean_open_s, records):
    """Spawns the server and kills it at a random point of its replay of `records` log
    records, estimated from earlier starts. Returns the kind of kill made: `replay` when
    the start had not loaded the directory and left no temporary snapshot file (the
    snapshot written before serving comes after the replay, still before that log line),
    `snapshot` when it left one, `random` when it had loaded the directory already."""
    started = crash.spawn()
    delay = clean_open_s + rng.uniform(0.1, 0.9) * records * per_record_s
    while time.monotonic() < started + delay and crash.loaded() is None:
        time.sleep(0.001)
    crash.srv.kill9()
    if crash.loaded() is not None:
        return "random"
    return "snapshot" if crash.temp_files() else "replay"


def run_writes(crash, writers, pumps, kind, rng, tally):
    """Step 1 and 2: the writes, then the kill the cycle's kind asks for; returns the kind of
    kill made."""
    stop = threading.Event()
    limit = REPLAY_LOG_RECORDS // PUMPS if kind == "replay" else None
    threads = [threading.Thread(target=w.run, args=(crash.srv, stop), daemon=True) for w in writers]
    threads += [threading.Thread(target=p.run, args=(crash.srv, stop, limit), daemon=True) for p in pumps]
    for t in threads:
        t.start()
    if kind == "snapshot":
        made = kill_during_snapshot(crash, rng, tally)
    elif kind == "replay":
        for t in threads[len(writers):]:
            t.join(IO_TIMEOUT_S * 4)
        made = kill_at_random(crash, rng)
    else:
        made = kill_at_random(crash, rng)
    if made == "random" and crash.temp_files():
        made = "snapshot"  # a random kill that landed in a snapshot write
    stop.set()
    for t in threads:
        t.join(IO_TIMEOUT_S)
        assert not t.is_alive(), "a writer did not stop after the kill"
    for x in [*writers, *pumps]:
        assert x.failure is None, x.failure
    return made


def writes_sent(writers, pumps):
    return sum(w.acked + (w.inflight is not None) for w in writers) + sum(p.sent for p in pumps)


def setup_data(srv):
    c = connect(srv)
    try:
        ops = [ldapwrite.add(CRASH, {"objectClass": ["organizationalUnit"], "ou": ["crash"]})]
        ops += [ldapwrite.add(f"ou={x},{CRASH}", {"objectClass": ["organizationalUnit"], "ou": [x]})
                for x in CONTAINERS]
        ops += [ldapwrite.add(FILLER, {"objectClass": ["organizationalUnit"], "ou": ["filler"]})]
        for op in ops:
            assert c.request(2, op)[-1].code == 0
        for first in range(0, FILLER_ENTRIES, PUMP_WINDOW):
            batch = [ldapwrite.add(f"cn=f{i},{FILLER}", {"objectClass": ["applicationProcess"], "cn": [f"f{i}"],
                                                          "description": [filler_value(i, 0)]})
                     for i in range(first, min(first + PUMP_WINDOW, FILLER_ENTRIES))]
            codes = pipeline(c, batch, 10)
            assert all(code == 0 for code, _ in codes.values()) and len(codes) == len(batch)
    finally:
        c.close()


@pytest.fixture
def crash_server(request):
    tmp = tempfile.mkdtemp(prefix="larch-e2e-crash-")
    srv = conftest.make_server(request.config, tmp, larch_extra_toml=store_toml(True))
    yield srv
    status = srv.stop()
    stderr = srv.stderr_tail()
    shutil.rmtree(tmp, ignore_errors=True)
    assert status == 0, f"larch exited with status {status} on SIGTERM; stderr:\n{stderr}"


def test_crash_cycles(crash_server, capsys):
    srv = crash_server
    rng = random.Random(int(os.environ.get("LARCH_CRASH_SEED", "19")))
    crash = Crashing(srv)
    tally = Tally()
    crash.start()
    setup_data(srv)
    srv.stop()  # a clean stop writes a snapshot: the next start is a clean start
    tally.clean_start_s.append(crash.start())
    clean_open_s = crash.loaded()[1]
    writers = [Writer(k, rng.random()) for k in range(WRITERS)]
    pumps = [Pump(k) for k in range(PUMPS)]
    per_record_s = 75e-6  # replay cost of one record, refined from every start's log
    replay_scale = 1.0  # how much of the estimated replay a kill may wait for
    triggers_on = True  # the running server's snapshot triggers
    for cycle in range(cycles()):
        kind = KINDS[cycle % len(KINDS)]
        tally.kills[run_writes(crash, writers, pumps, kind, rng, tally)] += 1
        sent = writes_sent(writers, pumps)
        # docs/store.md, "Startup after a crash": after a run with the triggers on, a start
        # replays at most twice the trigger plus what that run wrote.
        bound = 2 * SNAPSHOT_TRIGGER + sent if triggers_on else None
        if not triggers_on:
            crash.configure(triggers_on=True)
        if kind == "replay":
            made = kill_during_replay(crash, rng, per_record_s * replay_scale, clean_open_s, sent)
            tally.kills[made] += 1
            tally.replay_misses += made != "replay"
            # A kill that came after the replay aims earlier next time.
            replay_scale = min(1.0, replay_scale * 1.1) if made == "replay" else replay_scale * 0.6
        left_temp = bool(crash.temp_files())
        restart_s = crash.start()
        triggers_on = True
        replayed, seconds = crash.loaded()
        tally.restart_s.append(restart_s)
        if restart_s >= max(tally.restart_s):
            tally.slowest = (replayed, snapshot_seconds(crash.start_log()))
        log = crash.start_log()
        check_start_log(cycle, log, replayed, bound, left_temp, tally)
        if replayed > 1000:
            per_record_s = max(1e-6, (seconds - snapshot_seconds(log) - clean_open_s) / replayed)
        check_data(srv, writers, pumps, tally)
        tally.cycles += 1
        if KINDS[(cycle + 1) % len(KINDS)] == "replay":
            # The next run makes the log long: the triggers off, from a clean start.
            crash.configure(triggers_on=False)
            srv.stop()
            crash.start()
            triggers_on = False
    srv.stop()
    tally.clean_start_s.append(crash.start())
    with capsys.disabled():
        print("\n" + tally.line())
    assert tally.kills["snapshot"] > 0 and tally.kills["replay"] > 0, tally.line()


def snapshot_seconds(log):
    """How long the snapshot written before serving took (part of the start's load time)."""
    m = re.search(r"wrote a snapshot before serving.*seconds=([0-9.]+)", log)
    return float(m.group(1)) if m else 0.0


def check_start_log(cycle, log, replayed, bound, left_temp, tally):
    """Step 3: what the start after a crash logged."""
    if bound is not None:
        assert replayed <= bound, f"cycle {cycle}: replayed {replayed} log records, over the bound {bound}"
    if bound is not None and replayed > tally.max_replayed:
        tally.max_replayed, tally.max_replay_bound = replayed, bound
    removed = log.count("removed a leftover temporary snapshot file")
    if left_temp:
        assert removed, f"cycle {cycle}: a temporary snapshot file was left and the start did not remove it"
    tally.temp_files_removed += removed
    if replayed >= 2 * SNAPSHOT_TRIGGER:
        assert "wrote a snapshot before serving" in log, \
            f"cycle {cycle}: replayed {replayed} records and wrote no snapshot before serving:\n{log}"
        tally.snapshots_before_serving += 1
    elif replayed >= SNAPSHOT_TRIGGER:
        assert "writing a snapshot now, in the background" in log, \
            f"cycle {cycle}: replayed {replayed} records and started no snapshot:\n{log}"


def check_data(srv, writers, pumps, tally):
    """Steps 4 and 5."""
    c = connect(srv)
    try:
        found = search_all(c, CRASH, ["cn", "sn", "description", "telephoneNumber", "objectClass"])
        fillers = search_all(c, FILLER, ["description"])
    finally:
        c.close()
    stray = [dn for dn in found if not dn.startswith("cn=w")]
    assert not stray, f"entries no writer made: {stray[:5]}"
    for w in writers:
        check_writer(srv, w, found, tally)
    for p in pumps:
        check_pump(p, fillers, tally)
