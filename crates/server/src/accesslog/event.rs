//! What the access log records: [`Event`], and its compact binary form in the per-thread
//! buffers.
//!
//! The request path does not format log lines. It appends one record per event to its
//! thread's buffer (a few fixed fields and a memcpy of the request PDU and the result's
//! texts); the log's writer thread reads the records back as [`Event`]s and formats them
//! (`format_389`, `format_json`, which read the fields they print from the request PDU
//! through `request`). Formatting a filter or a timestamp therefore never runs on a
//! connection's thread.
//!
//! Record layout (all integers little-endian; a "bytes" field is a u32 length then that
//! many octets):
//!
//! ```text
//! u32  length of the whole record, this field included
//! u64  monotonic time of the event in nanoseconds (the writer's merge order)
//! u8   kind: 1 connect, 2 tls, 3 refused, 4 close, 5 operation
//! ...  the kind's fields, in the order of the struct fields below (an operation's
//!      fixed fields first, in one block: see `OP_FIXED`)
//! ```
//!
//! The times of a record (`time`, `received`, `finished`) are monotonic nanoseconds
//! ([`crate::clock::Mono`]), so that no request reads the wall clock; the writer maps them to the
//! wall clock ([`Event::map_times`]) just before formatting.
//!
//! A record is written whole or not at all (a buffer that is full drops it and counts the
//! drop), and decoding checks every length against the record's end, so a bug in one
//! record cannot make the writer read past it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Nanoseconds since the Unix epoch (UTC): the time printed in a log line.
pub type WallNanos = u64;

pub use crate::outcome::CloseReason;

/// A connection was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    /// The connection's number (`conn=`), unique for the life of the process.
    pub conn: u64,
    /// When.
    pub time: WallNanos,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// The server's address the client connected to.
    pub local: Option<SocketAddr>,
    /// The socket's file descriptor (`fd=`, `slot=`), 0 where unknown.
    pub fd: u32,
    /// An `ldaps://` listener.
    pub ldaps: bool,
}

/// A TLS handshake completed (`ldaps://` or StartTLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls<'a> {
    /// The connection.
    pub conn: u64,
    /// When.
    pub time: WallNanos,
    /// The protocol version, as 389 prints it: `TLS1.2`, `TLS1.3`.
    pub version: &'a str,
    /// The cipher suite's IANA name, e.g. `TLS13_AES_128_GCM_SHA256`.
    pub cipher: &'a str,
    /// The symmetric key size in bits (128, 256).
    pub keysize: u32,
}

/// A connection refused at a limit: a Notice of Disconnection (`busy`) was sent and it
/// was closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused<'a> {
    /// The number the connection would have had.
    pub conn: u64,
    /// When.
    pub time: WallNanos,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// The server's address.
    pub local: Option<SocketAddr>,
    /// Why (the notice's text).
    pub reason: &'a str,
}

/// A connection closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    /// The connection.
    pub conn: u64,
    /// When.
    pub time: WallNanos,
    /// The number of the last operation read on it (`op=`), -1 when none was.
    pub op: i64,
    /// The socket's file descriptor, 0 where unknown.
    pub fd: u32,
    /// Why.
    pub reason: CloseReason,
}

/// One operation's outcome, with its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op<'a> {
    /// The connection.
    pub conn: u64,
    /// The operation's number on the connection (`op=`), from 0. -1 for a Notice of
    /// Disconnection that answers no operation.
    pub op: i64,
    /// The request's message ID (0 for a notice).
    pub msgid: i32,
    /// When the request was read.
    pub received: WallNanos,
    /// When the operation ended (its response was handed to the connection).
    pub finished: WallNanos,
    /// Nanoseconds the request waited before its work started (`wtime`).
    pub wait_ns: u64,
    /// Nanoseconds of work (`optime`); `etime` is their sum.
    pub work_ns: u64,
    /// The request's tag (`larch_proto::op_tag`), or 0 when it was not readable.
    pub request_tag: u8,
    /// The request PDU as received (a whole LDAPMessage), empty when there is none. It
    /// decodes, unless `undecodable`.
    pub request: &'a [u8],
    /// True when `request` could not be decoded (the operation was answered with
    /// `protocolError` or a Notice of Disconnection).
    pub undecodable: bool,
    /// The response's tag, 0 when nothing was sent (Abandon, Unbind, an abandoned
    /// operation).
    pub response_tag: u8,
    /// The result code.
    pub result: u32,
    /// The matched DN of the result.
    pub matched: &'a str,
    /// The diagnostic message of the result.
    pub message: &'a str,
    /// SearchResultEntry messages sent.
    pub entries: u32,
    /// SearchResultReference messages sent.
    pub references: u32,
    /// Octets sent in answer to this operation.
    pub bytes: u64,
    /// The DN the operation ran as (for a Bind: the identity it established), empty for
    /// anonymous.
    pub authz_dn: &'a str,
    /// For Abandon: the operation number of the abandoned operation, -1 when no operation
    /// with that message ID was in progress. For Cancel likewise. Otherwise -1.
    pub target_op: i64,
    /// The OIDs of the response controls, separated by spaces.
    pub response_controls: &'a str,
    /// Notes: `U` for a search that examined candidates no index gave (389's
    /// `notes=U`), `P` for a paged search's page, `A` for a search that examined every
    /// entry of its scope. Letters, possibly none.
    pub notes: &'a str,
}

/// One access-log event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    /// A connection was accepted.
    Connect(Connect),
    /// A TLS handshake completed.
    Tls(Tls<'a>),
    /// A connection was refused.
    Refused(Refused<'a>),
    /// A connection closed.
    Close(Close),
    /// An operation ended.
    Op(Op<'a>),
}

impl Event<'_> {
    /// Replaces every time of the event by `f` of it.
    pub fn map_times(&mut self, f: impl Fn(u64) -> u64) {
        match self {
            Event::Connect(c) => c.time = f(c.time),
            Event::Tls(t) => t.time = f(t.time),
            Event::Refused(r) => r.time = f(r.time),
            Event::Close(c) => c.time = f(c.time),
            Event::Op(o) => {
                o.received = f(o.received);
                o.finished = f(o.finished);
            }
        }
    }
}

const CONNECT: u8 = 1;
const TLS: u8 = 2;
const REFUSED: u8 = 3;
const CLOSE: u8 = 4;
const OP: u8 = 5;

/// Appends the record of `event`, stamped with the monotonic time `mono_ns`.
pub fn encode(out: &mut Vec<u8>, mono_ns: u64, event: &Event<'_>) {
    let start = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    put_u64(out, mono_ns);
    match event {
        Event::Connect(c) => {
            out.push(CONNECT);
            put_u64(out, c.conn);
            put_u64(out, c.time);
            put_addr(out, c.peer);
            put_addr(out, c.local);
            put_u32(out, c.fd);
            out.push(u8::from(c.ldaps));
        }
        Event::Tls(t) => {
            out.push(TLS);
            put_u64(out, t.conn);
            put_u64(out, t.time);
            put_bytes(out, t.version.as_bytes());
            put_bytes(out, t.cipher.as_bytes());
            put_u32(out, t.keysize);
        }
        Event::Refused(r) => {
            out.push(REFUSED);
            put_u64(out, r.conn);
            put_u64(out, r.time);
            put_addr(out, r.peer);
            put_addr(out, r.local);
            put_bytes(out, r.reason.as_bytes());
        }
        Event::Close(c) => {
            out.push(CLOSE);
            put_u64(out, c.conn);
            put_u64(out, c.time);
            put_u64(out, c.op as u64);
            put_u32(out, c.fd);
            out.push(c.reason as u8);
        }
        Event::Op(o) => {
            out.push(OP);
            encode_op(out, o);
        }
    }
    let len = u32::try_from(out.len() - start).unwrap_or(u32::MAX);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// The monotonic time and length of the record at the front of `buf`, without decoding it;
/// `None` when the header is cut or its length impossible.
pub fn peek(buf: &[u8]) -> Option<(u64, usize)> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    if len < 13 || len > buf.len() {
        return None;
    }
    Some((u64::from_le_bytes(buf.get(4..12)?.try_into().ok()?), len))
}

/// Reads the record at the front of `buf`: its monotonic time, the event, and the octets
/// it took. `None` when the record is damaged or incomplete (the rest of the buffer is
/// then dropped by the caller).
pub fn decode(buf: &[u8]) -> Option<(u64, Event<'_>, usize)> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    if len < 13 || len > buf.len() {
        return None;
    }
    let mut r = Cursor { b: &buf[4..len] };
    let mono = r.u64()?;
    let event = match r.u8()? {
        CONNECT => Event::Connect(Connect {
            conn: r.u64()?,
            time: r.u64()?,
            peer: r.addr()?,
            local: r.addr()?,
            fd: r.u32()?,
            ldaps: r.u8()? != 0,
        }),
        TLS => Event::Tls(Tls {
            conn: r.u64()?,
            time: r.u64()?,
            version: r.str()?,
            cipher: r.str()?,
            keysize: r.u32()?,
        }),
        REFUSED => Event::Refused(Refused {
            conn: r.u64()?,
            time: r.u64()?,
            peer: r.addr()?,
            local: r.addr()?,
            reason: r.str()?,
        }),
        CLOSE => Event::Close(Close {
            conn: r.u64()?,
            time: r.u64()?,
            op: r.u64()? as i64,
            fd: r.u32()?,
            reason: CloseReason::from_u8(r.u8()?)?,
        }),
        OP => Event::Op(decode_op(&mut r)?),
        _ => return None,
    };
    if !r.b.is_empty() {
        return None;
    }
    Some((mono, event, len))
}

/// An operation record's fixed part, in this order: conn, op, msgid, received, finished,
/// wait_ns, work_ns, bytes, target_op, result, entries, references, request_tag,
/// undecodable, response_tag, then the lengths of the six texts that follow it (request,
/// matched, message, authz_dn, response_controls, notes). Written and read as one block:
/// a field at a time was a length check each, a fifth of the request thread's cost of
/// the log (callgrind).
const OP_FIXED: usize = 8 * 9 + 4 * 3 + 3 + 4 * 6;

fn encode_op(out: &mut Vec<u8>, o: &Op<'_>) {
    let texts: [&[u8]; 6] = [
        o.request,
        o.matched.as_bytes(),
        o.message.as_bytes(),
        o.authz_dn.as_bytes(),
        o.response_controls.as_bytes(),
        o.notes.as_bytes(),
    ];
    let mut fixed = [0u8; OP_FIXED];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        fixed[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    for v in [
        o.conn,
        o.op as u64,
        u64::from(o.msgid as u32),
        o.received,
        o.finished,
        o.wait_ns,
        o.work_ns,
        o.bytes,
        o.target_op as u64,
    ] {
        put(&v.to_le_bytes());
    }
    for v in [o.result, o.entries, o.references] {
        put(&v.to_le_bytes());
    }
    put(&[o.request_tag, u8::from(o.undecodable), o.response_tag]);
    for text in &texts {
        put(&text_len(text).to_le_bytes());
    }
    out.extend_from_slice(&fixed);
    out.reserve(texts.iter().map(|t| t.len()).sum());
    for text in texts {
        out.extend_from_slice(&text[..text_len(text) as usize]);
    }
}

fn decode_op<'a>(r: &mut Cursor<'a>) -> Option<Op<'a>> {
    let fixed: &[u8; OP_FIXED] = r.take(OP_FIXED)?.try_into().ok()?;
    let u64_at = |i: usize| u64::from_le_bytes(fixed[i * 8..i * 8 + 8].try_into().unwrap_or_default());
    let u32_at = |at: usize| u32::from_le_bytes(fixed[at..at + 4].try_into().unwrap_or_default());
    let words = 8 * 9;
    let flags = words + 4 * 3;
    let lengths = flags + 3;
    let mut texts: [&[u8]; 6] = [&[]; 6];
    for (i, text) in texts.iter_mut().enumerate() {
        *text = r.take(u32_at(lengths + i * 4) as usize)?;
    }
    // Most of these texts are empty in most records: no call to check them.
    let str_at = |i: usize| match texts[i] {
        [] => Some(""),
        text => std::str::from_utf8(text).ok(),
    };
    Some(Op {
        conn: u64_at(0),
        op: u64_at(1) as i64,
        msgid: u64_at(2) as u32 as i32,
        received: u64_at(3),
        finished: u64_at(4),
        wait_ns: u64_at(5),
        work_ns: u64_at(6),
        bytes: u64_at(7),
        target_op: u64_at(8) as i64,
        result: u32_at(words),
        entries: u32_at(words + 4),
        references: u32_at(words + 8),
        request_tag: fixed[flags],
        undecodable: fixed[flags + 1] != 0,
        response_tag: fixed[flags + 2],
        request: texts[0],
        matched: str_at(1)?,
        message: str_at(2)?,
        authz_dn: str_at(3)?,
        response_controls: str_at(4)?,
        notes: str_at(5)?,
    })
}

/// A text's length as recorded (longer texts are cut at `u32::MAX` octets).
fn text_len(text: &[u8]) -> u32 {
    u32::try_from(text.len()).unwrap_or(u32::MAX)
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, u32::try_from(b.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(&b[..b.len().min(u32::MAX as usize)]);
}

/// An address: 0 none; 4 then 4 octets and a port; 6 then 16 octets and a port.
fn put_addr(out: &mut Vec<u8>, a: Option<SocketAddr>) {
    match a {
        None => out.push(0),
        Some(SocketAddr::V4(a)) => {
            out.push(4);
            out.extend_from_slice(&a.ip().octets());
            out.extend_from_slice(&a.port().to_le_bytes());
        }
        Some(SocketAddr::V6(a)) => {
            out.push(6);
            out.extend_from_slice(&a.ip().octets());
            out.extend_from_slice(&a.port().to_le_bytes());
        }
    }
}

struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.b.len() {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
    fn addr(&mut self) -> Option<Option<SocketAddr>> {
        Some(match self.u8()? {
            0 => None,
            4 => {
                let o: [u8; 4] = self.take(4)?.try_into().ok()?;
                let port = self.u16()?;
                Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(o)), port))
            }
            6 => {
                let o: [u8; 16] = self.take(16)?.try_into().ok()?;
                let port = self.u16()?;
                Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(o)), port))
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_op<'a>(request: &'a [u8]) -> Event<'a> {
        Event::Op(Op {
            conn: 7,
            op: 3,
            msgid: 4,
            received: 1_700_000_000_123_456_789,
            finished: 1_700_000_000_123_556_789,
            wait_ns: 1_000,
            work_ns: 99_000,
            request_tag: 0x63,
            request,
            undecodable: false,
            response_tag: 0x65,
            result: 32,
            matched: "dc=example,dc=com",
            message: "no such entry",
            entries: 0,
            references: 1,
            bytes: 120,
            authz_dn: "uid=a,dc=example,dc=com",
            target_op: -1,
            response_controls: "1.2.840.113556.1.4.319",
            notes: "U",
        })
    }

    #[test]
    fn every_kind_round_trips_and_records_follow_each_other() {
        let pdu = [0x30, 0x05, 0x02, 0x01, 0x04, 0x42, 0x00];
        let events = [
            Event::Connect(Connect {
                conn: 1,
                time: 5,
                peer: Some("127.0.0.1:40000".parse().unwrap()),
                local: Some("[::1]:389".parse().unwrap()),
                fd: 12,
                ldaps: true,
            }),
            Event::Tls(Tls {
                conn: 1,
                time: 6,
                version: "TLS1.3",
                cipher: "TLS13_AES_128_GCM_SHA256",
                keysize: 128,
            }),
            Event::Refused(Refused {
                conn: 2,
                time: 7,
                peer: None,
                local: None,
                reason: "busy",
            }),
            Event::Close(Close {
                conn: 1,
                time: 8,
                op: -1,
                fd: 12,
                reason: CloseReason::Idle,
            }),
            sample_op(&pdu),
        ];
        let mut buf = Vec::new();
        for (i, e) in events.iter().enumerate() {
            encode(&mut buf, i as u64, e);
        }
        let mut at = 0;
        for (i, e) in events.iter().enumerate() {
            let (mono, got, n) = decode(&buf[at..]).expect("decodes");
            assert_eq!(mono, i as u64);
            assert_eq!(&got, e);
            at += n;
        }
        assert_eq!(at, buf.len());
    }

    #[test]
    fn a_damaged_or_cut_record_is_refused() {
        let pdu = [0x30, 0x00];
        let mut buf = Vec::new();
        encode(&mut buf, 1, &sample_op(&pdu));
        for cut in 0..buf.len() {
            assert!(decode(&buf[..cut]).is_none(), "cut at {cut}");
        }
        let mut bad = buf.clone();
        bad[12] = 99; // the kind
        assert!(decode(&bad).is_none());
        let mut long = buf.clone();
        long[0] = long[0].wrapping_add(1); // declares one octet more than it holds
        long.push(0);
        assert!(decode(&long).is_none());
    }
}
