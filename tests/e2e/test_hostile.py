"""Hostile input, as a reliability suite of its own: a private server (TLS on an extra
ldaps:// listener, the test data below) is sent every file of the shared third-party PDU
corpus, seeded mutations of valid requests of every operation and control
(`bermutate.py`), 10,000-deep filters, requests over the PDU limit, slow drips,
half-open connections, resets in the middle of a response, and garbage on the LDAPS port.

Each test:
  1. takes the data's hash first (`data_hash`: every entry outside the scratch subtree with
     every user and operational attribute, sorted, SHA-256);
  2. sends its input in batches, over connections of its own; each exchange must end
     (an answer, or the end of the stream) within a deadline, and whatever comes back must
     be well-formed LDAPMessages, where a message with ID 0 can only be a Notice of
     Disconnection and is the last (`read_messages`);
  3. after each batch checks that the server process is alive, that a known search gets
     exactly its known answer, and that the data's hash is unchanged (`assert_serving`);
  4. prints what it sent (files, PDUs, connections) and what came back, on one line
     starting `hostile:` (run with `-s` to see them; docs/reliability.md reports them).

The mutated writes run as `cn=fuzzer,ou=scratch` (a `{SSHA}` password, so a bind costs
no password hashing), which may write under `ou=scratch` only: a write that succeeds
stays there, and the hash leaves that subtree out.

Short form by default (CI); `LARCH_RELIABILITY_LONG=1` (`scripts/reliability.sh --long`)
sends many more mutations, drips and resets. `LARCH_HOSTILE_SEED=<n>` replays the
mutations of a run: every run prints its seed, and so does every failure.
"""

import base64
import hashlib
import os
import random
import selectors
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import time

import pytest

import bermutate
import ldapwire as w
from conftest import corpus_dir, free_port, make_server, reliability_long
from ldaputil import assert_result, ldapadd_ok, ldif_entry
from test_tls import Pki, tls_toml

pytestmark = pytest.mark.reliability

LONG = reliability_long()
CORPUS = corpus_dir()
BASE = "dc=example,dc=com"
DATA = f"ou=data,{BASE}"
SCRATCH = f"ou=scratch,{BASE}"
BULK = f"ou=bulk,{BASE}"
FUZZER_DN = f"cn=fuzzer,{SCRATCH}"
FUZZER_PW = "hostile-fuzzer-secret"
NAMES = {"base": BASE, "data": DATA, "scratch": SCRATCH, "fuzzer_dn": FUZZER_DN, "fuzzer_pw": FUZZER_PW}
PEOPLE = 20
# The bulk subtree: more octets than both ends' socket buffers hold (Linux autotunes a send
# buffer up to 4 MiB), so a subtree search of it is still being written when the client
# resets the connection.
BULK_ENTRIES = 400
BULK_DESCRIPTION_BYTES = 16000

# Mutated requests sent (the short form keeps the suite well under two minutes on 2 cores).
MUTATED_PDUS = 60_000 if LONG else 3_000
# Most requests on one connection before its sentinel (a batch is 1 to this many).
MAX_PDUS_PER_CONNECTION = 16
# One request in this many of a batch is a valid one, so connections also do real work.
VALID_ONE_IN = 5
# Connections between two checks of the server (alive, known search, hash).
CHECK_EVERY_CONNECTIONS = 100
# Slow drips: connections dripping at once, and the pause between two octets.
DRIP_CONNECTIONS = 64 if LONG else 8
DRIP_PAUSE_S = 0.01 if LONG else 0.002
# Resets in the middle of a response: one after another, then this many at once.
RESETS = 200 if LONG else 20
RESETS_AT_ONCE = 16 if LONG else 4
# Half-open connections of each kind.
HALF_OPEN = 100 if LONG else 10
# TLS garbage: connections per kind of garbage.
TLS_GARBAGE = 100 if LONG else 10
# Nesting of the deep filters (RFC 4511 sets no bound; Larch's decoder takes 64 levels).
DEEP_FILTER_LEVELS = 10_000
# The oversized request: twice the default `max_pdu_bytes` (8 MiB).
OVERSIZED_PDU_BYTES = 16 * 1024 * 1024
OVERSIZED_AT_ONCE = 4
# How much the server's peak RSS may grow while it refuses OVERSIZED_AT_ONCE oversized
# requests: far less than one of them, so none was buffered.
OVERSIZED_RSS_GROWTH_BOUND = 8 * 1024 * 1024
# How long one exchange may take before the test calls it a hang (not a measurement).
EXCHANGE_DEADLINE_S = 30.0
# How long the server may take to close connections the client reset (its file
# descriptors back to where they were).
CLOSE_DEADLINE_S = 30.0
# The servers that end the session after a Notice of Disconnection, as RFC 4511 section
# 4.4.1 says (slapd sends one for an unknown protocolOp tag and some undecodable requests,
# then goes on reading: test_corpus.py's not_slapd marker).
NOTICE_ENDS_THE_SESSION = {"larch"}
# The same for the whole corpus back to back on one connection.
STREAM_DEADLINE_S = 120.0
SENTINEL_ID = 2147483646

SEED = int(os.environ.get("LARCH_HOSTILE_SEED") or random.SystemRandom().randrange(1 << 32))


# ----------------------------------------------------------------------------- the server


def ssha(password):
    salt = os.urandom(8)
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()


ACCESS_TOML = f"""
[[access]]
attrs = ["userPassword"]
by = [
  {{ who = "self", access = "=wx" }},
  {{ who = "anonymous", access = "auth" }},
]

[[access]]
dn = "{SCRATCH}"
scope = "subtree"
by = [
  {{ dn = "{FUZZER_DN}", access = "write" }},
  {{ who = "*", access = "read" }},
]

[[access]]
by = [{{ who = "*", access = "read" }}]
"""
SLAPD_ACCESS = f"""
access to dn.subtree="{SCRATCH}" attrs=userPassword
  by self write
  by anonymous auth
  by * none
access to dn.subtree="{SCRATCH}"
  by dn.exact="{FUZZER_DN}" write
  by * read
"""


def hostile_data_ldif():
    parts = [ldif_entry(DATA, {"objectClass": "organizationalUnit", "ou": "data"})]
    for i in range(PEOPLE):
        parts.append(ldif_entry(f"cn=p{i},{DATA}", {
            "objectClass": ["inetOrgPerson", "posixAccount"], "cn": f"p{i}", "sn": ["smith", "jones"][i % 2],
            "mail": f"p{i}@example.com", "uid": f"p{i}", "uidNumber": str(1000 + i), "gidNumber": "100",
            "homeDirectory": f"/home/p{i}", "description": f"person {i}"}))
    parts.append(ldif_entry(f"cn=staff,{DATA}", {
        "objectClass": "groupOfNames", "cn": "staff", "member": [f"cn=p{i},{DATA}" for i in range(5)]}))
    parts.append(ldif_entry(SCRATCH, {"objectClass": "organizationalUnit", "ou": "scratch"}))
    parts.append(ldif_entry(FUZZER_DN, {"objectClass": "person", "cn": "fuzzer", "sn": "fuzzer",
                                        "userPassword": ssha(FUZZER_PW)}))
    parts.append(ldif_entry(BULK, {"objectClass": "organizationalUnit", "ou": "bulk"}))
    for i in range(BULK_ENTRIES):
        parts.append(ldif_entry(f"cn=b{i:05d},{BULK}", {
            "objectClass": "person", "cn": f"b{i:05d}", "sn": "bulk",
            "description": (f"{i:05d}" * (BULK_DESCRIPTION_BYTES // 5 + 1))[:BULK_DESCRIPTION_BYTES]}))
    return "".join(parts)


@pytest.fixture(scope="module")
def hostile(request):
    """The private server of this module, loaded with the test data; `srv.ldaps_port` is
    its ldaps:// listener (Larch only: the suite's slapd has no TLS)."""
    tmp = tempfile.mkdtemp(prefix="larch-e2e-hostile-")
    srv = None
    try:
        extra = {}
        if request.config.getoption("--server") == "larch":
            os.makedirs(os.path.join(tmp, "pki"))
            pki = Pki(os.path.join(tmp, "pki"))
            cert, key = pki.issue("server", "/O=Larch e2e/CN=localhost", 0x1001)
            ldaps_port = free_port()
            extra = {"larch_extra_listen": [f"ldaps://127.0.0.1:{ldaps_port}"],
                     "larch_extra_toml": tls_toml(cert, key) + ACCESS_TOML}
        else:
            ldaps_port = None
            pki = None
            extra = {"slapd_extra_db": SLAPD_ACCESS}
        os.makedirs(os.path.join(tmp, "server"))
        srv = make_server(request.config, os.path.join(tmp, "server"), **extra)
        srv.start()
        srv.ldaps_port = ldaps_port
        srv.pki = pki
        ldapadd_ok(srv, hostile_data_ldif())
        yield srv
        report_process(srv)
    finally:
        status = srv.stop() if srv is not None else 0
        stderr = srv.stderr_tail() if srv is not None else ""
        shutil.rmtree(tmp, ignore_errors=True)
    assert status == 0, f"exit status {status} on SIGTERM (after the hostile suite); stderr:\n{stderr}"


# ----------------------------------------------------------------------------- exchanges


def exchange(host, port, data, deadline_s=EXCHANGE_DEADLINE_S, half_close=True):
    """Sends data while reading whatever comes back, half-closes (unless told not to), and
    reads to the end of the stream; returns (octets received, how it ended: "eof",
    "reset" or "timeout")."""
    s = socket.create_connection((host, port), timeout=deadline_s)
    s.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    deadline = time.monotonic() + deadline_s
    received = bytearray()
    view = memoryview(data)
    sent = 0
    ended = "timeout"
    try:
        while time.monotonic() < deadline:
            events = sel.select(timeout=max(0.0, deadline - time.monotonic()))
            for _, mask in events:
                if mask & selectors.EVENT_WRITE:
                    try:
                        sent += s.send(view[sent:sent + 65536])
                    except BlockingIOError:
                        continue
                    except OSError:
                        sent = len(data)  # the server closed first: read what it sent
                    if sent >= len(data):
                        sel.modify(s, selectors.EVENT_READ)
                        if half_close:
                            try:
                                s.shutdown(socket.SHUT_WR)
                            except OSError:
                                pass
                if mask & selectors.EVENT_READ:
                    try:
                        chunk = s.recv(65536)
                    except BlockingIOError:
                        continue
                    except ConnectionResetError:
                        return bytes(received), "reset"
                    if not chunk:
                        return bytes(received), "eof"
                    received += chunk
        return bytes(received), ended
    finally:
        sel.close()
        s.close()


def read_messages(received, ended, notice_is_last=True):
    """The LDAPMessages in what a server sent; returns (messages, problem or None).
    notice_is_last: whether a Notice of Disconnection must be the last message (see
    NOTICE_ENDS_THE_SESSION)."""
    messages = []
    pos = 0
    while pos < len(received):
        try:
            _, _, end = w.read_tlv(received, pos)
        except w.WireError:
            if ended == "reset":
                break  # a reset may cut the last message
            return messages, f"the stream ended inside a message: {received[pos:pos + 32].hex()}"
        try:
            messages.append(w.Message(received[pos:end]))
        except (w.WireError, IndexError, ValueError) as e:
            return messages, f"undecodable LDAPMessage: {e}: {received[pos:end][:64].hex()}"
        pos = end
    for i, m in enumerate(messages):
        if m.msgid == 0:
            if m.op != w.EXTENDED_RESPONSE or m.response_name != w.NOTICE_OF_DISCONNECTION_OID:
                return messages, f"message ID 0 that is not a Notice of Disconnection: {m!r}"
            after = [(m.msgid, hex(m.op)) for m in messages[i + 1:]]
            if after and notice_is_last:
                return messages, f"{len(after)} messages after a Notice of Disconnection: {after[:6]}"
    return messages, None


def sentinel():
    return w.message(SENTINEL_ID, w.whoami())


class Tally:
    """What a test sent and what came back."""

    def __init__(self, name, srv):
        self.name = name
        self.notice_is_last = srv.kind in NOTICE_ENDS_THE_SESSION
        self.counts = {}
        self.problems = []

    def add(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def record(self, what, received, ended):
        """Counts one exchange's outcome; a problem (hang, bad message) is kept with `what`."""
        self.add("connections")
        messages, problem = read_messages(received, ended, self.notice_is_last)
        if ended == "timeout":
            problem = problem or f"neither the end of the stream nor a reset within {EXCHANGE_DEADLINE_S}s"
        if ended == "reset":
            self.add("resets")
        if problem:
            self.problems.append(f"{what}: {problem}")
        for m in messages:
            if m.msgid == 0:
                self.add("notices")
            elif m.msgid == SENTINEL_ID:
                self.add("sentinels")
            else:
                self.add("answers")
        return messages

    def report(self, **extra):
        figures = " ".join(f"{k}={v}" for k, v in {**self.counts, **extra}.items())
        print(f"\nhostile: {self.name}: {figures} crashes=0 seed={SEED}")

    def assert_no_problem(self):
        assert not self.problems, (f"seed {SEED}: {len(self.problems)} problems:\n" + "\n".join(self.problems[:40]))


# ----------------------------------------------------------------------------- checks


def admin_connection(srv):
    c = w.RawConnection(srv.host, srv.port, timeout=EXCHANGE_DEADLINE_S)
    assert_result(c.request(1, w.bind_simple(srv.admin_dn, srv.admin_pw))[-1], "success")
    return c


def data_dump(srv):
    """Every entry outside the scratch subtree with all its attributes, sorted (referral
    and alias entries as themselves): {dn: [(attribute, sorted values)]}."""
    c = admin_connection(srv)
    try:
        answer = c.request(2, w.search(BASE, w.SCOPE_SUB, attrs=["*", "+"]),
                           controls=[w.control(bermutate.MANAGE_DSA_IT)])
    finally:
        c.close()
    assert_result(answer[-1], "success")
    scratch = SCRATCH.lower()
    entries = {}
    for m in answer[:-1]:
        if m.op != w.SEARCH_ENTRY:
            continue
        dn = m.dn.lower()
        if dn == scratch or dn.endswith("," + scratch):
            continue
        entries[dn] = sorted((k.lower(), sorted(v)) for k, v in m.attrs.items())
    assert len(entries) >= PEOPLE + BULK_ENTRIES, len(entries)
    return entries


def data_hash(srv):
    """SHA-256 of the data's dump, with the dump: (hash, dump)."""
    dump = data_dump(srv)
    return hashlib.sha256(repr(sorted(dump.items())).encode()).hexdigest(), dump


def dump_difference(before, after):
    """What changed between two dumps, for a person."""
    lines = [f"removed: {dn}" for dn in sorted(set(before) - set(after))]
    lines += [f"added: {dn}: {after[dn]}" for dn in sorted(set(after) - set(before))]
    for dn in sorted(set(before) & set(after)):
        if before[dn] != after[dn]:
            old, new = dict(before[dn]), dict(after[dn])
            changed = {a: (old.get(a), new.get(a)) for a in set(old) | set(new) if old.get(a) != new.get(a)}
            lines.append(f"changed: {dn}: {changed}")
    return "\n".join(lines[:20])


def assert_known_search(srv):
    c = w.RawConnection(srv.host, srv.port, timeout=EXCHANGE_DEADLINE_S)
    try:
        answer = c.request(1, w.search(DATA, w.SCOPE_SUB, w.f_eq("uid", "p7"), attrs=["cn", "sn", "mail"]))
    finally:
        c.close()
    assert_result(answer[-1], "success")
    entries = [(m.dn.lower(), {k.lower(): v for k, v in m.attrs.items()}) for m in answer[:-1]]
    assert entries == [(f"cn=p7,{DATA}", {"cn": [b"p7"], "sn": [b"jones"], "mail": [b"p7@example.com"]})], entries


def assert_serving(srv, before, what):
    """The checks after each batch: alive, the known search, the data's hash (`before` is
    what `data_hash` gave first)."""
    assert srv.alive(), f"seed {SEED}: the server died during {what}; stderr:\n{srv.stderr_tail()}"
    assert_known_search(srv)
    digest, dump = data_hash(srv)
    assert digest == before[0], (f"seed {SEED}: the data changed during {what}:\n"
                                 f"{dump_difference(before[1], dump)}")


def proc_status(pid, key):
    """A value of /proc/<pid>/status in bytes (kB lines) or as a number."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                fields = line.split()
                return int(fields[1]) * (1024 if fields[-1] == "kB" else 1)
    raise KeyError(key)


def report_process(srv):
    """Prints the server's CPU time, peak RSS and threads after the suite."""
    with open(f"/proc/{srv.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    print(f"\nhostile: server process: cpu_s={cpu:.1f} peak_rss_mib={proc_status(srv.pid, 'VmHWM') / 2**20:.0f} "
          f"threads={proc_status(srv.pid, 'Threads')} fds={open_fds(srv.pid)}")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for_fds(srv, at_most):
    """Waits until the server holds no more file descriptors than `at_most` (connections
    a client reset are closed); returns the count."""
    deadline = time.monotonic() + CLOSE_DEADLINE_S
    while True:
        n = open_fds(srv.pid)
        if n <= at_most or time.monotonic() > deadline:
            return n
        time.sleep(0.05)


# ----------------------------------------------------------------------------- the corpus

corpus_missing = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared PDU corpus is absent at {CORPUS} "
                                                                "(set LARCH_CORPUS to its directory)")


def corpus_files():
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


@corpus_missing
def test_corpus_each_file_on_its_own_connection(hostile):
    files = corpus_files()
    assert len(files) > 600, f"only {len(files)} files under {CORPUS}"
    before = data_hash(hostile)
    tally = Tally("corpus, one connection per file", hostile)
    octets = 0
    for i, f in enumerate(files):
        data = f.read_bytes()
        octets += len(data)
        received, ended = exchange(hostile.host, hostile.port, data + sentinel())
        tally.record(str(f.relative_to(CORPUS)), received, ended)
        assert hostile.alive(), f"the server died on {f.relative_to(CORPUS)}"
        if (i + 1) % CHECK_EVERY_CONNECTIONS == 0:
            assert_serving(hostile, before, f"the corpus, up to {f.relative_to(CORPUS)}")
    assert_serving(hostile, before, "the corpus")
    tally.report(files=len(files), octets=octets)
    tally.assert_no_problem()
    # Some files are valid requests: some answers are ordinary ones, and after some the
    # connection went on to the sentinel.
    assert tally.counts.get("answers", 0) > 0 and tally.counts.get("sentinels", 0) > 0, tally.counts


@corpus_missing
def test_corpus_back_to_back_on_one_connection(hostile):
    """Every file, each followed by a sentinel with its own message ID, on one connection;
    when the server ends the connection (a file it cannot read), the stream goes on, on a
    new connection, from the file after the last one whose sentinel was answered, leaving
    out the file that ended it."""
    files = corpus_files()
    ids = {i: 1_000_000 + i for i in range(len(files))}
    before = data_hash(hostile)
    tally = Tally("corpus, back to back", hostile)
    start = 0
    culprits = []
    while start < len(files):
        stream = b"".join(f.read_bytes() + w.message(ids[i], w.whoami()) for i, f in enumerate(files) if i >= start)
        received, ended = exchange(hostile.host, hostile.port, stream, deadline_s=STREAM_DEADLINE_S)
        messages = tally.record(f"the stream from {files[start].relative_to(CORPUS)}", received, ended)
        assert hostile.alive(), f"the server died on the stream from {files[start].relative_to(CORPUS)}"
        answered = [m.msgid - 1_000_000 for m in messages
                    if m.op == w.EXTENDED_RESPONSE and 1_000_000 <= m.msgid < 1_000_000 + len(files)]
        last = max(answered, default=start - 1)
        if last >= len(files) - 1:
            break
        culprits.append(str(files[last + 1].relative_to(CORPUS)))
        start = last + 2
    assert_serving(hostile, before, "the corpus back to back")
    tally.report(files=len(files), streams_ended_by_a_file=len(culprits))
    tally.assert_no_problem()


# ----------------------------------------------------------------------------- mutations


def reset_sandbox(srv):
    """The entries the catalogue's writes aim at, recreated (and anything the fuzzer made
    under the scratch subtree removed), by the admin; the fuzzer's password too."""
    c = admin_connection(srv)
    try:
        found = c.request(2, w.search(SCRATCH, w.SCOPE_SUB, attrs=["1.1"]),
                          controls=[w.control(bermutate.MANAGE_DSA_IT)])
        dns = [m.dn for m in found[:-1] if m.op == w.SEARCH_ENTRY]
        dns = [d for d in dns if d.lower() not in (SCRATCH.lower(), FUZZER_DN.lower())]
        dns.sort(key=lambda d: d.count(","), reverse=True)
        msgid = 3
        for dn in dns:
            answer = c.request(msgid, bermutate.delete(dn), controls=[w.control(bermutate.MANAGE_DSA_IT)])
            assert answer[-1].code in (0, 32), (dn, answer[-1])
            msgid += 1
        for dn, attrs in bermutate.sandbox_ldif(NAMES):
            op = bermutate.add(dn, [(a, v if isinstance(v, list) else [v]) for a, v in attrs.items()])
            answer = c.request(msgid, op)
            assert answer[-1].code in (0, 68), (dn, answer[-1])
            msgid += 1
        op = bermutate.modify(FUZZER_DN, [(2, "userPassword", [ssha(FUZZER_PW)])])
        assert_result(c.request(msgid, op)[-1], "success")
    finally:
        c.close()


@pytest.mark.not_slapd("slapd lets any bound client send a Modify with no change to any entry, which rewrites its "
                       "modifiersName, modifyTimestamp and entryCSN: the data's hash changes whenever a mutation "
                       "empties a Modify's change list (test_an_empty_modify_by_a_reader_changes_nothing)")
def test_mutated_pdus(hostile):
    print(f"\nhostile: mutated PDUs, seed {SEED} (replay: LARCH_HOSTILE_SEED={SEED})")
    mutator = bermutate.Mutator(SEED, NAMES)
    rng = random.Random(SEED ^ 0x5EED)
    reset_sandbox(hostile)
    before = data_hash(hostile)
    tally = Tally("mutated PDUs", hostile)
    sent = valid = 0
    connections = 0
    while sent < MUTATED_PDUS:
        n = min(rng.randint(1, MAX_PDUS_PER_CONNECTION), MUTATED_PDUS - sent)
        names = []
        parts = [w.message(1, w.bind_simple(FUZZER_DN, FUZZER_PW))]
        for k in range(n):
            if rng.randrange(VALID_ONE_IN) == 0:
                name, data = mutator.valid(k + 2)
                valid += 1
            else:
                name, data = mutator.mutate(k + 2)
                sent += 1
            names.append(name)
            parts.append(data)
        parts.append(sentinel())
        received, ended = exchange(hostile.host, hostile.port, b"".join(parts))
        tally.record(f"connection {connections} ({'; '.join(names)})", received, ended)
        connections += 1
        assert hostile.alive(), (f"seed {SEED}: the server died on connection {connections - 1}: {names}; "
                                 f"stderr:\n{hostile.stderr_tail()}")
        if connections % CHECK_EVERY_CONNECTIONS == 0:
            assert_serving(hostile, before, f"the mutations up to connection {connections - 1}")
            reset_sandbox(hostile)
    assert_serving(hostile, before, "the mutations")
    reset_sandbox(hostile)
    tally.report(mutated_pdus=sent, valid_pdus=valid, catalogue=len(mutator.items))
    tally.assert_no_problem()


@pytest.mark.not_slapd("slapd checks access only on the changes listed, so a Modify with none succeeds for any "
                       "bound client and stamps the entry with its modifiersName")
def test_an_empty_modify_by_a_reader_changes_nothing(hostile):
    """Found by the mutations (a Modify whose change list a mutation emptied): a client
    that may only read an entry sends a Modify with no change; it is refused with
    insufficientAccessRights and the entry keeps its modifiersName, modifyTimestamp and
    entryCSN."""
    reset_sandbox(hostile)
    before = data_hash(hostile)
    for who in ((FUZZER_DN, FUZZER_PW), ("", "")):
        c = w.RawConnection(hostile.host, hostile.port, timeout=EXCHANGE_DEADLINE_S)
        try:
            assert_result(c.request(1, w.bind_simple(*who))[-1], "success")
            done = c.request(2, w.seq(w.octets(f"cn=p1,{DATA}"), w.seq(), tag=bermutate.MODIFY_REQUEST))[-1]
        finally:
            c.close()
        assert_result(done, "insufficientAccessRights")
        assert done.diag, "no diagnostic message"
        assert_serving(hostile, before, f"an empty modify by {who[0] or 'an anonymous client'}")


# ----------------------------------------------------------------------------- the Notice, last

@pytest.mark.not_slapd("slapd closes the connection on an LDAPMessage without a message ID, with no Notice of "
                       "Disconnection and no answer to the requests still in flight")
def test_notice_of_disconnection_is_the_last_message(hostile):
    """RFC 4511 section 4.4.1: after a Notice of Disconnection the server ends the session,
    so nothing may follow it, also when a pipelined search and write are still running
    (the mutations found Larch answering them after the Notice)."""
    reset_sandbox(hostile)
    c = w.RawConnection(hostile.host, hostile.port, timeout=EXCHANGE_DEADLINE_S)
    try:
        assert_result(c.request(1, w.bind_simple(FUZZER_DN, FUZZER_PW))[-1], "success")
        c.send(w.message(2, w.search(BULK, w.SCOPE_SUB, attrs=["*"]))
               + w.message(3, bermutate.modify(f"cn=t0,ou=sandbox,{SCRATCH}", [(2, "description", ["late"])]))
               + b"\x30\x00")
        messages = []
        while True:
            m = c.recv()
            if m is None:
                break
            messages.append(m)
    finally:
        c.close()
    ids = [m.msgid for m in messages]
    assert 0 in ids, "no Notice of Disconnection"
    assert ids.index(0) == len(ids) - 1, f"{len(ids) - 1 - ids.index(0)} messages after the Notice"


# ----------------------------------------------------------------------------- deep filters


def deep_filter(levels, kinds):
    """A filter nested `levels` deep, each level one of `kinds` (not, and, or) in turn,
    built inside out without recursion."""
    f = w.f_eq("cn", "p1")
    for i in range(levels):
        kind = kinds[i % len(kinds)]
        f = w.f_not(f) if kind == "not" else (w.f_and(f) if kind == "and" else w.f_or(f))
    return f


@pytest.mark.not_slapd("slapd closes the connection, with no answer, on a filter nested deeper than its decoder "
                       "takes; Larch answers protocolError and goes on")
def test_deep_filters(hostile):
    before = data_hash(hostile)
    tally = Tally("10,000-deep filters", hostile)
    shapes = [["not"], ["and"], ["or"], ["not", "and", "or"]]
    for shape in shapes:
        filt = deep_filter(DEEP_FILTER_LEVELS, shape)
        for where in ("filter", "assertion control"):
            if where == "filter":
                op, controls = w.search(DATA, w.SCOPE_SUB, filt, attrs=["1.1"]), None
            else:
                op, controls = w.search(DATA, w.SCOPE_BASE, attrs=["1.1"]), [bermutate.c_assertion(filt)]
            data = w.message(2, op, controls) + sentinel()
            received, ended = exchange(hostile.host, hostile.port, data)
            messages = tally.record(f"{'/'.join(shape)} in the {where}", received, ended)
            done = [m for m in messages if m.msgid == 2]
            assert len(done) == 1 and done[0].op == w.SEARCH_DONE, (shape, where, messages)
            assert_result(done[0], "protocolError")
            assert done[0].diag, "no diagnostic message"
            # The connection goes on: the sentinel is answered.
            assert any(m.msgid == SENTINEL_ID for m in messages), (shape, where, messages)
            assert_serving(hostile, before, f"a {'/'.join(shape)} filter in the {where}")
    tally.report(levels=DEEP_FILTER_LEVELS, filters=len(shapes) * 2)
    tally.assert_no_problem()


# ----------------------------------------------------------------------------- oversized requests


def oversized_header(msgid=2):
    """The start of an AddRequest announcing OVERSIZED_PDU_BYTES in all."""
    inner = OVERSIZED_PDU_BYTES - 20
    return b"\x30\x84" + struct.pack(">I", inner + 9) + b"\x02\x01" + bytes([msgid]) + b"\x68\x84" + struct.pack(
        ">I", inner) + w.octets(f"cn=big,{SCRATCH}")


def send_oversized(srv, results, i):
    data = oversized_header() + os.urandom(1 << 16) * (OVERSIZED_PDU_BYTES // (1 << 16))
    results[i] = exchange(srv.host, srv.port, data, half_close=False)


@pytest.mark.larch_only("slapd closes a connection over sockbuf_max_incoming without a Notice of Disconnection")
def test_requests_over_the_pdu_limit(hostile):
    before = data_hash(hostile)
    tally = Tally("16 MiB requests", hostile)
    hwm_before = proc_status(hostile.pid, "VmHWM")
    results = [None] * OVERSIZED_AT_ONCE
    threads = [threading.Thread(target=send_oversized, args=(hostile, results, i)) for i in range(OVERSIZED_AT_ONCE)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hwm_after = proc_status(hostile.pid, "VmHWM")
    for i, (received, ended) in enumerate(results):
        messages = tally.record(f"oversized request {i}", received, ended)
        # A Notice of Disconnection, then the end of the stream; the request itself is never
        # answered.
        assert [m.msgid for m in messages] == [0], messages
        assert_result(messages[0], "protocolError")
        assert messages[0].diag, "the Notice says nothing"
    growth = hwm_after - hwm_before
    assert growth < OVERSIZED_RSS_GROWTH_BOUND, f"peak RSS grew by {growth} octets refusing {OVERSIZED_AT_ONCE} " \
                                                f"requests of {OVERSIZED_PDU_BYTES}"
    assert_serving(hostile, before, "the oversized requests")
    tally.report(requests=OVERSIZED_AT_ONCE, request_octets=OVERSIZED_PDU_BYTES, peak_rss_growth=growth)
    tally.assert_no_problem()


# ----------------------------------------------------------------------------- slow drips


def drip(srv, results, i, data):
    """Sends data one octet at a time, DRIP_PAUSE_S apart, then reads the answers."""
    c = w.RawConnection(srv.host, srv.port, timeout=EXCHANGE_DEADLINE_S)
    try:
        for b in data:
            c.send(bytes([b]))
            time.sleep(DRIP_PAUSE_S)
        out = []
        while True:
            m = c.recv()
            assert m is not None, "the server closed a dripping connection"
            out.append(m)
            if m.msgid == SENTINEL_ID:
                break
        results[i] = out
    except Exception as e:  # noqa: BLE001 - reported by the test
        results[i] = e
    finally:
        c.close()


def test_slow_drips(hostile):
    before = data_hash(hostile)
    data = (w.message(1, w.bind_simple(FUZZER_DN, FUZZER_PW))
            + w.message(2, w.search(DATA, w.SCOPE_SUB, w.f_eq("uid", "p7"), attrs=["cn"]))
            + sentinel())
    results = [None] * DRIP_CONNECTIONS
    threads = [threading.Thread(target=drip, args=(hostile, results, i, data)) for i in range(DRIP_CONNECTIONS)]
    for t in threads:
        t.start()
    # Meanwhile a client that does not drip is served.
    served_meanwhile = 0
    while any(t.is_alive() for t in threads):
        assert_known_search(hostile)
        served_meanwhile += 1
        time.sleep(0.05)
    for t in threads:
        t.join()
    for i, out in enumerate(results):
        assert not isinstance(out, Exception), f"drip {i}: {out!r}"
        assert_result(out[0], "success")
        assert [m.dn.lower() for m in out if m.op == w.SEARCH_ENTRY] == [f"cn=p7,{DATA}"]
        assert [m.msgid for m in out if m.op in w.RESULT_OPS] == [1, 2, SENTINEL_ID]
    assert served_meanwhile > 0
    assert_serving(hostile, before, "the slow drips")
    Tally("slow drips", hostile).report(connections=DRIP_CONNECTIONS, octets_each=len(data), pause_s=DRIP_PAUSE_S,
                               served_meanwhile=served_meanwhile)


# ----------------------------------------------------------------------------- half-open


HALF_OPEN_REQUEST = w.message(2, w.search(DATA, w.SCOPE_SUB, w.f_eq("uid", "p7"), attrs=["cn"]))


def test_half_open_in_the_middle_of_a_pdu(hostile):
    """The client shuts down its writing side in the middle of a PDU: the server ends the
    connection (at most a Notice of Disconnection), it does not wait for the rest."""
    before = data_hash(hostile)
    tally = Tally("half-open in the middle of a PDU", hostile)
    rng = random.Random(SEED)
    for i in range(HALF_OPEN):
        cut = rng.randrange(1, len(HALF_OPEN_REQUEST))
        received, ended = exchange(hostile.host, hostile.port, HALF_OPEN_REQUEST[:cut])
        messages = tally.record(f"cut at {cut} of {len(HALF_OPEN_REQUEST)}", received, ended)
        assert all(m.msgid == 0 for m in messages), messages
    assert_serving(hostile, before, "the half-open connections")
    tally.report(cut_pdus=HALF_OPEN)
    tally.assert_no_problem()


@pytest.mark.not_slapd("slapd closes a connection at the end of its input stream without answering the requests "
                       "read before it")
def test_half_open_after_whole_requests(hostile):
    """The client shuts down its writing side right after a whole request: the request is
    answered, then the connection ends."""
    before = data_hash(hostile)
    tally = Tally("half-open after a whole request", hostile)
    for i in range(HALF_OPEN):
        received, ended = exchange(hostile.host, hostile.port, HALF_OPEN_REQUEST)
        messages = tally.record("whole request", received, ended)
        assert [m.msgid for m in messages if m.op in w.RESULT_OPS] == [2], messages
        assert [m.dn.lower() for m in messages if m.op == w.SEARCH_ENTRY] == [f"cn=p7,{DATA}"]
    assert_serving(hostile, before, "the half-open connections")
    tally.report(requests=HALF_OPEN)
    tally.assert_no_problem()


# ----------------------------------------------------------------------------- resets mid-response


def reset_mid_response(srv):
    """A subtree search of the bulk entries; after its first entry, the client resets the
    connection (SO_LINGER 0) while the server is still writing."""
    c = w.RawConnection(srv.host, srv.port, timeout=EXCHANGE_DEADLINE_S, rcvbuf=4096)
    try:
        c.send(w.message(2, w.search(BULK, w.SCOPE_SUB, attrs=["*"])))
        first = c.recv()
        assert first is not None and first.msgid == 2, first
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        c.close()


def test_resets_mid_response(hostile):
    before = data_hash(hostile)
    fds_before = open_fds(hostile.pid)
    for _ in range(RESETS):
        reset_mid_response(hostile)
    errors = []

    def one():
        try:
            reset_mid_response(hostile)
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    for _ in range(max(1, RESETS // RESETS_AT_ONCE)):
        threads = [threading.Thread(target=one) for _ in range(RESETS_AT_ONCE)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    fds_after = wait_for_fds(hostile, fds_before)
    assert fds_after <= fds_before, f"the server still holds {fds_after - fds_before} more descriptors " \
                                    f"{CLOSE_DEADLINE_S}s after the resets"
    assert_serving(hostile, before, "the resets")
    Tally("resets mid-response", hostile).report(connections=RESETS + max(1, RESETS // RESETS_AT_ONCE) * RESETS_AT_ONCE,
                                        resets=RESETS + max(1, RESETS // RESETS_AT_ONCE) * RESETS_AT_ONCE)


# ----------------------------------------------------------------------------- the LDAPS port


def client_hello():
    """The first record of a real TLS handshake with the server's ldaps port (made by
    Python's ssl on a memory BIO)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def flip_one_bit(rng, data):
    data = bytearray(data)
    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def tls_garbage(rng):
    """(kind, octets) of one hostile opening of a TLS connection."""
    hello = client_hello()
    kinds = {
        "random octets": rng.randbytes(rng.choice([1, 5, 100, 4096, 70000])),
        "record header, garbage body": b"\x16\x03\x01\x02\x00" + rng.randbytes(512),
        "record longer than TLS allows": b"\x16\x03\x03\xff\xff" + rng.randbytes(1024),
        "alert record": b"\x15\x03\x03\x00\x02\x02\x28",
        "truncated ClientHello": hello[:rng.randrange(1, len(hello))],
        "ClientHello with a bit flipped": flip_one_bit(rng, hello),
        "ClientHello then garbage": hello + rng.randbytes(2048),
        "plaintext LDAP bind": w.message(1, w.bind_simple()),
        "plaintext LDAP search": w.message(2, w.search(BASE, w.SCOPE_BASE)),
        "plaintext StartTLS": w.message(1, w.extended(bermutate.START_TLS_OID)),
    }
    return kinds


def ldaps_whoami(srv):
    ctx = ssl.create_default_context(cafile=str(srv.pki.ca))
    raw = socket.create_connection(("127.0.0.1", srv.ldaps_port), timeout=EXCHANGE_DEADLINE_S)
    with ctx.wrap_socket(raw, server_hostname="localhost") as s:
        s.sendall(w.message(1, w.whoami()))
        buf = b""
        while True:
            try:
                _, _, end = w.read_tlv(buf, 0)
                break
            except w.WireError:
                chunk = s.recv(65536)
                assert chunk, "the ldaps connection closed before the answer"
                buf += chunk
        m = w.Message(buf[:end])
    assert_result(m, "success")


@pytest.mark.larch_only("the suite's slapd is configured without TLS")
def test_garbage_on_the_ldaps_port(hostile):
    before = data_hash(hostile)
    rng = random.Random(SEED)
    sent = {}
    for _ in range(TLS_GARBAGE):
        for kind, data in tls_garbage(rng).items():
            received, ended = exchange("127.0.0.1", hostile.ldaps_port, data)
            assert ended in ("eof", "reset"), f"{kind}: the server neither closed nor reset within " \
                                              f"{EXCHANGE_DEADLINE_S}s"
            # Nothing but TLS comes back: a handshake record (a ClientHello got its answer
            # before the garbage after it was read) or an alert, never LDAP in plaintext.
            assert not received or received[0] in (0x15, 0x16), f"{kind}: {received[:16].hex()}"
            sent[kind] = sent.get(kind, 0) + 1
        assert hostile.alive(), f"the server died on garbage on the ldaps port; stderr:\n{hostile.stderr_tail()}"
        ldaps_whoami(hostile)
    assert_serving(hostile, before, "the garbage on the ldaps port")
    Tally("garbage on the LDAPS port", hostile).report(connections=sum(sent.values()), kinds=len(sent))
