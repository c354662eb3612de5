"""A small LDAPv3 wire client for the end-to-end tests.

What it is: a BER encoder for the few requests the tests send byte by byte (the things a
library client cannot send: pipelined and out-of-order message IDs, Abandon and Cancel of a
search in flight, the subordinate scope, a version-2 bind, hostile PDUs), and a BER decoder
for whatever a server answers, with a connection that reads one LDAPMessage at a time.

Invariants:
  * The encoder writes minimal definite lengths (RFC 4511 section 5.1).
  * The decoder never trusts the peer: a truncated or malformed answer raises
    `WireError`, and `RawConnection.recv` waits at most until its deadline.

How a message is read (`RawConnection.recv`):
  1. buffer octets until a whole TLV header is present (tag, length octets);
  2. buffer until the announced content is present;
  3. decode that one TLV as an LDAPMessage into a `Message`, keeping the rest buffered.
"""

import socket
import time

# ----------------------------------------------------------------------------- encoding


def _length(n):
    if n < 0x80:
        return bytes([n])
    out = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(out)]) + out


def tlv(tag, content):
    """One TLV with a single-octet tag."""
    return bytes([tag]) + _length(len(content)) + content


def _int_content(n):
    length = max(1, (n.bit_length() + 8) // 8)
    return n.to_bytes(length, "big", signed=True)


def integer(n, tag=0x02):
    """An INTEGER (or ENUMERATED with tag 0x0a, or any implicit tag)."""
    return tlv(tag, _int_content(n))


def enum(n):
    """An ENUMERATED."""
    return integer(n, 0x0A)


def octets(s, tag=0x04):
    """An OCTET STRING from str (UTF-8) or bytes."""
    if isinstance(s, str):
        s = s.encode("utf-8")
    return tlv(tag, s)


def boolean(b, tag=0x01):
    """A BOOLEAN (TRUE as 0xff)."""
    return tlv(tag, b"\xff" if b else b"\x00")


def seq(*parts, tag=0x30):
    """A SEQUENCE (or any constructed tag) of already encoded parts."""
    return tlv(tag, b"".join(parts))


# Filters (RFC 4511 section 4.5.1.7).


def f_and(*fs):
    """and [0] SET OF Filter."""
    return seq(*fs, tag=0xA0)


def f_or(*fs):
    """or [1] SET OF Filter."""
    return seq(*fs, tag=0xA1)


def f_not(f):
    """not [2] Filter."""
    return seq(f, tag=0xA2)


def f_eq(attr, value):
    """equalityMatch [3] AttributeValueAssertion."""
    return seq(octets(attr), octets(value), tag=0xA3)


def f_present(attr):
    """present [7] AttributeDescription."""
    return octets(attr, tag=0x87)


# Requests.

SCOPE_BASE, SCOPE_ONE, SCOPE_SUB, SCOPE_SUBORDINATE = 0, 1, 2, 3
DEREF_NEVER, DEREF_SEARCHING, DEREF_FINDING, DEREF_ALWAYS = 0, 1, 2, 3


def control(oid, critical=False, value=None):
    """One Control."""
    parts = [octets(oid)]
    if critical:
        parts.append(boolean(True))
    if value is not None:
        parts.append(octets(value))
    return seq(*parts)


def message(msgid, op, controls=None):
    """An LDAPMessage around an encoded protocolOp (controls: a list of encoded Control)."""
    parts = [integer(msgid), op]
    if controls:
        parts.append(seq(*controls, tag=0xA0))
    return seq(*parts)


def bind_simple(name="", password="", version=3):
    """BindRequest [APPLICATION 0] with simple authentication [0]."""
    return seq(integer(version), octets(name), octets(password, tag=0x80), tag=0x60)


def unbind():
    """UnbindRequest [APPLICATION 2] NULL."""
    return b"\x42\x00"


def search(base, scope=SCOPE_SUB, filt=None, attrs=(), size_limit=0, time_limit=0, types_only=False,
           deref=DEREF_NEVER):
    """SearchRequest [APPLICATION 3]."""
    if filt is None:
        filt = f_present("objectClass")
    return seq(
        octets(base),
        enum(scope),
        enum(deref),
        integer(size_limit),
        integer(time_limit),
        boolean(types_only),
        filt,
        seq(*[octets(a) for a in attrs]),
        tag=0x63,
    )


def abandon(msgid):
    """AbandonRequest [APPLICATION 16] MessageID."""
    return integer(msgid, tag=0x50)


def extended(oid, value=None):
    """ExtendedRequest [APPLICATION 23]."""
    parts = [octets(oid, tag=0x80)]
    if value is not None:
        parts.append(octets(value, tag=0x81))
    return seq(*parts, tag=0x77)


WHOAMI_OID = "1.3.6.1.4.1.4203.1.11.3"
CANCEL_OID = "1.3.6.1.1.8"
NOTICE_OF_DISCONNECTION_OID = "1.3.6.1.4.1.1466.20036"


def cancel(msgid):
    """Cancel extended request (RFC 3909): cancelRequestValue ::= SEQUENCE { cancelID MessageID }."""
    return extended(CANCEL_OID, seq(integer(msgid)))


def whoami():
    """WhoAmI extended request (RFC 4532)."""
    return extended(WHOAMI_OID)


# ----------------------------------------------------------------------------- decoding


class WireError(Exception):
    """A malformed or truncated answer from the server."""


def read_tlv(buf, pos):
    """Reads one TLV at pos; returns (tag, content, next_pos). Raises WireError."""
    if pos + 2 > len(buf):
        raise WireError("truncated TLV header")
    tag = buf[pos]
    if tag & 0x1F == 0x1F:
        raise WireError("multi-octet tag")
    first = buf[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    elif first == 0x80:
        raise WireError("indefinite length")
    else:
        n = first & 0x7F
        if n > 4 or pos + n > len(buf):
            raise WireError("bad long length")
        length = int.from_bytes(buf[pos:pos + n], "big")
        pos += n
    if pos + length > len(buf):
        raise WireError("truncated TLV content")
    return tag, buf[pos:pos + length], pos + length


def children(content):
    """The TLVs inside a constructed content, as a list of (tag, content)."""
    out = []
    pos = 0
    while pos < len(content):
        tag, c, pos = read_tlv(content, pos)
        out.append((tag, c))
    return out


def to_int(content):
    """A BER INTEGER/ENUMERATED content as int."""
    if not content:
        raise WireError("empty INTEGER")
    return int.from_bytes(content, "big", signed=True)


# protocolOp tags of the responses.
BIND_RESPONSE = 0x61
SEARCH_ENTRY = 0x64
SEARCH_DONE = 0x65
SEARCH_REFERENCE = 0x73
MODIFY_RESPONSE = 0x67
ADD_RESPONSE = 0x69
DELETE_RESPONSE = 0x6B
MODDN_RESPONSE = 0x6D
COMPARE_RESPONSE = 0x6F
EXTENDED_RESPONSE = 0x78
INTERMEDIATE_RESPONSE = 0x79
RESULT_OPS = {BIND_RESPONSE, SEARCH_DONE, MODIFY_RESPONSE, ADD_RESPONSE, DELETE_RESPONSE, MODDN_RESPONSE,
              COMPARE_RESPONSE, EXTENDED_RESPONSE}


class Message:
    """One decoded LDAPMessage from the server.

    Attributes: msgid, op (the protocolOp tag), and for results: code, matched, diag,
    referrals, response_name, response_value; for entries: dn, attrs {type: [bytes]};
    for references: uris.
    """

    def __init__(self, raw):
        self.raw = raw
        tag, content, end = read_tlv(raw, 0)
        if tag != 0x30 or end != len(raw):
            raise WireError("not an LDAPMessage")
        parts = children(content)
        if len(parts) < 2 or parts[0][0] != 0x02:
            raise WireError("no messageID")
        self.msgid = to_int(parts[0][1])
        self.op, body = parts[1]
        self.controls = parts[2][1] if len(parts) > 2 else None
        self.code = None
        self.matched = None
        self.diag = None
        self.referrals = []
        self.response_name = None
        self.response_value = None
        self.dn = None
        self.attrs = {}
        self.uris = []
        if self.op in RESULT_OPS:
            items = children(body)
            if len(items) < 3 or items[0][0] != 0x0A:
                raise WireError("bad LDAPResult")
            self.code = to_int(items[0][1])
            self.matched = items[1][1].decode("utf-8", "replace")
            self.diag = items[2][1].decode("utf-8", "replace")
            for t, c in items[3:]:
                if t == 0xA3:
                    self.referrals = [u.decode("utf-8", "replace") for _, u in children(c)]
                elif t == 0x8A:
                    self.response_name = c.decode("ascii", "replace")
                elif t == 0x8B:
                    self.response_value = c
        elif self.op == SEARCH_ENTRY:
            items = children(body)
            self.dn = items[0][1].decode("utf-8", "replace")
            for _, pa in children(items[1][1]):
                typ, vals = children(pa)
                self.attrs[typ[1].decode("utf-8", "replace")] = [v for _, v in children(vals[1])]
        elif self.op == SEARCH_REFERENCE:
            self.uris = [u.decode("utf-8", "replace") for _, u in children(body)]

    def __repr__(self):
        return f"Message(msgid={self.msgid}, op=0x{self.op:02x}, code={self.code}, dn={self.dn!r})"


class RawConnection:
    """A TCP connection speaking raw LDAPMessages; `recv` returns one `Message` or None at EOF."""

    def __init__(self, host, port, timeout=10.0, rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # Before connect, so the advertised window stays small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.timeout = timeout
        self.buf = b""

    def send(self, data):
        """Sends octets (one or several encoded messages)."""
        self.sock.sendall(data)

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no complete answer before the deadline")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            return False
        if not chunk:
            return False
        self.buf += chunk
        return True

    def recv_raw(self, timeout=None):
        """The octets of the next whole LDAPMessage, or None at end of stream."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while True:
            if len(self.buf) >= 2:
                first = self.buf[1]
                header = 2 + (first & 0x7F if first & 0x80 else 0)
                if len(self.buf) >= header:
                    if first & 0x80:
                        n = first & 0x7F
                        if n == 0 or n > 4:
                            raise WireError("bad length in the server's answer")
                        length = int.from_bytes(self.buf[2:header], "big")
                    else:
                        length = first
                    if len(self.buf) >= header + length:
                        raw, self.buf = self.buf[:header + length], self.buf[header + length:]
                        return raw
            if not self._fill(deadline):
                if self.buf:
                    raise WireError("connection closed inside a message")
                return None

    def recv(self, timeout=None):
        """The next `Message`, or None at end of stream."""
        raw = self.recv_raw(timeout)
        return None if raw is None else Message(raw)

    def request(self, msgid, op, controls=None, timeout=None):
        """Sends one request and returns every message up to and including its final answer."""
        self.send(message(msgid, op, controls))
        out = []
        while True:
            m = self.recv(timeout)
            if m is None:
                raise WireError("connection closed before the answer")
            out.append(m)
            if m.msgid == msgid and m.op in RESULT_OPS:
                return out

    def close(self):
        """Closes the socket."""
        try:
            self.sock.close()
        except OSError:
            pass
