//! What the access log records: [`Event`], one per connection event and per operation.
//!
//! The request path hands an event to the log ([`super::AccessLog`]), which formats its
//! lines at once into the thread's buffer ([`super::buffers`]): an event borrows what it
//! prints (the request PDU, the result's texts) and is never copied.
//!
//! The times of an event (`time`, `received`, `finished`) are monotonic nanoseconds
//! ([`crate::clock::Mono`]) when the request path makes it, so that no request reads the
//! wall clock; the buffers map them to the wall clock ([`Event::map_times`]) just before
//! formatting.

use std::net::SocketAddr;

use larch_proto::LdapMessage;

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
    /// The request as the request path decoded it, when the outcome carried it: the log
    /// reads its lines' fields from it instead of from `request`.
    pub decoded: Option<&'a LdapMessage<'a>>,
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
