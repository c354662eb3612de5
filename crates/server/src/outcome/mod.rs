//! The first seam of the operation pipeline: every operation ends here.
//!
//! Whatever the operation (the eight requests, Abandon, Unbind, extended operations,
//! StartTLS, a PDU that does not decode, a connection refused at a limit), its end is one
//! [`Outcome`]: which connection and operation, the request as received, the [`Reply`] the
//! operation decided, what was sent (entries, references, octets), the time it waited and
//! worked, and the identity it ran as. Then, in this order:
//! 1. the response is encoded from the reply by the one encoder ([`respond::write`]); no
//!    operation encodes its own result;
//! 2. the [`Observers`] of the directory receive the outcome (the access log, and the
//!    counters behind `cn=Monitor` and `/metrics`, [`crate::monitor`]). An observer runs on the thread that completed
//!    the operation and must not block: the access log copies a record into a per-thread
//!    buffer and returns.
//!
//! Connections have events of their own ([`ConnectionEvent`]: accepted, TLS established,
//! refused, closed), delivered to the same observers.
//!
//! Where an operation ends: on the connection's task (reads that run inline, Bind, refused
//! writes), on a search worker thread (large searches), or on the store's writer thread (a
//! write, once its batch is durable). The session's `complete.rs` holds the two ways to
//! finish: inline, and through an owned completion that travels with the work.

mod bind_method;
pub mod respond;

pub use bind_method::{BindMethod, BIND_METHODS};

use std::net::SocketAddr;
use std::sync::Arc;

use larch_proto::{LdapMessage, MessageId, ResultCode};

use crate::clock::Mono;
use crate::controls::ResponseControl;
use crate::error::OpError;
use crate::identity::Identity;

/// What an operation decided to answer: the LDAPResult, the response controls, and for
/// an ExtendedResponse its name and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The result code.
    pub code: ResultCode,
    /// The matchedDN.
    pub matched_dn: String,
    /// The diagnostic message.
    pub message: String,
    /// Referral URIs (with `referral`, 10).
    pub referrals: Vec<String>,
    /// The response controls.
    pub controls: Vec<ResponseControl>,
    /// ExtendedResponse: the responseName.
    pub name: Option<&'static str>,
    /// ExtendedResponse: the responseValue.
    pub value: Option<Vec<u8>>,
}

impl Reply {
    /// `success` with nothing else.
    pub fn success() -> Reply {
        Reply::code(ResultCode::SUCCESS)
    }

    /// A result code with an empty message.
    pub fn code(code: ResultCode) -> Reply {
        Reply {
            code,
            matched_dn: String::new(),
            message: String::new(),
            referrals: Vec::new(),
            controls: Vec::new(),
            name: None,
            value: None,
        }
    }

    /// Success with these response controls.
    pub fn with_controls(mut self, controls: Vec<ResponseControl>) -> Reply {
        self.controls = controls;
        self
    }

    /// The reply of a result: success, or the error.
    pub fn from_result(result: Result<(), OpError>) -> Reply {
        match result {
            Ok(()) => Reply::success(),
            Err(e) => Reply::from(e),
        }
    }
}

impl From<OpError> for Reply {
    fn from(e: OpError) -> Reply {
        Reply {
            code: e.code,
            matched_dn: e.matched_dn,
            message: e.message,
            referrals: e.referrals,
            ..Reply::code(ResultCode::SUCCESS)
        }
    }
}

/// What an operation sent besides its final response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// SearchResultEntry messages.
    pub entries: u32,
    /// SearchResultReference messages.
    pub references: u32,
    /// Octets of every message of the operation, the final response included.
    pub bytes: u64,
}

/// Notes on how a search ran, as 389 Directory Server prints them after `notes=`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchNotes {
    /// Candidates came from a scan, not from an index (`U`, "unindexed").
    pub unindexed: bool,
    /// The search returned a page of a paged search (`P`).
    pub paged: bool,
}

impl SearchNotes {
    /// The notes as letters (`""`, `"U"`, `"P"`, `"U,P"`), as 389 prints them.
    pub fn letters(self) -> &'static str {
        match (self.unindexed, self.paged) {
            (false, false) => "",
            (true, false) => "U",
            (false, true) => "P",
            (true, true) => "U,P",
        }
    }
}

/// The operation's times (monotonic, [`Mono`]): when its request was read, when its work
/// started, when it ended. An observer that prints wall-clock times maps them itself (the
/// access log does so on its writer thread), so no operation reads the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    /// The request was read from the socket.
    pub received: Mono,
    /// Its work started (after the requests read before it on the connection); the same
    /// as `received` when no observer reads it ([`Observer::reads_start_time`]).
    pub started: Mono,
    /// Its response was handed to the connection.
    pub finished: Mono,
}

impl Times {
    /// The wait before the work started, in nanoseconds.
    #[inline]
    pub fn wait_nanos(&self) -> u64 {
        self.started.nanos_since(self.received)
    }

    /// The work, in nanoseconds.
    #[inline]
    pub fn work_nanos(&self) -> u64 {
        self.finished.nanos_since(self.started)
    }

    /// From receipt to end, in nanoseconds.
    #[inline]
    pub fn total_nanos(&self) -> u64 {
        self.finished.nanos_since(self.received)
    }
}

/// How one operation ended.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    /// The connection's number.
    pub conn: u64,
    /// The operation's number on the connection, from 0 (-1: a Notice of Disconnection that
    /// answers no operation).
    pub op: i64,
    /// The request's message ID (0 for a notice).
    pub msgid: MessageId,
    /// The request's operation tag (`larch_proto::op_tag`), 0 when unreadable.
    pub request_tag: u8,
    /// The request PDU as received (empty when there is none).
    pub request: &'a [u8],
    /// The request as the request path decoded it, when the operation ended where that
    /// is still at hand (a search run on the connection's task); an observer that prints
    /// the request reads it here rather than decoding `request` again.
    pub decoded: Option<&'a LdapMessage<'a>>,
    /// The request did not decode.
    pub undecodable: bool,
    /// The response's tag; 0 when none was sent (Abandon, Unbind, an abandoned operation).
    pub response_tag: u8,
    /// What was answered (`None` with no response).
    pub reply: Option<&'a Reply>,
    /// What was sent.
    pub sent: Sent,
    /// When.
    pub times: Times,
    /// The identity the operation ran as (a Bind: the identity it established).
    pub identity: &'a Identity,
    /// Abandon and Cancel: the number of the operation they named, -1 when none was in
    /// progress; -1 for every other operation.
    pub target_op: i64,
    /// A search's notes.
    pub notes: SearchNotes,
    /// A Bind that decoded: how it authenticated.
    pub bind_method: Option<BindMethod>,
}

/// Why a connection closed, with the code 389 Directory Server's `logconv` counts it under
/// (its table of closure codes; Larch uses the code whose meaning there fits, and codes of
/// its own, which logconv does not count, where none does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CloseReason {
    /// The client sent an Unbind (`U1`, "cleanly closed connections").
    Unbind = 1,
    /// The client closed the connection without an Unbind (`B1`, what 389 prints for an
    /// end of stream without Unbind).
    ClientClosed = 2,
    /// A request could not be framed or decoded; a Notice of Disconnection was sent
    /// (`B3`: 389's code for a BER element it could not read).
    BadPdu = 3,
    /// The idle timeout (`T1`).
    Idle = 4,
    /// A write to the client timed out or failed (`T2`, "IO block timeout exceeded").
    WriteTimeout = 5,
    /// The server shut down (`S1`, Larch's own).
    Shutdown = 6,
    /// A read failed: the client reset the connection (`A1`, "client aborted
    /// connections").
    ReadError = 7,
    /// The TLS handshake failed (`P2`, Larch's use: closed after a protocol failure).
    TlsFailed = 8,
    /// A request was larger than the PDU limit; a Notice of Disconnection was sent (`B2`,
    /// "Ber too big").
    PduTooLarge = 9,
}

impl CloseReason {
    /// The closure code.
    pub fn code(self) -> &'static str {
        match self {
            CloseReason::Unbind => "U1",
            CloseReason::ClientClosed => "B1",
            CloseReason::BadPdu => "B3",
            CloseReason::Idle => "T1",
            CloseReason::WriteTimeout => "T2",
            CloseReason::Shutdown => "S1",
            CloseReason::ReadError => "A1",
            CloseReason::TlsFailed => "P2",
            CloseReason::PduTooLarge => "B2",
        }
    }

    /// A short description.
    pub fn describe(self) -> &'static str {
        match self {
            CloseReason::Unbind => "client unbind",
            CloseReason::ClientClosed => "client closed the connection",
            CloseReason::BadPdu => "undecodable request",
            CloseReason::Idle => "idle timeout",
            CloseReason::WriteTimeout => "write timeout",
            CloseReason::Shutdown => "server shutdown",
            CloseReason::ReadError => "read error",
            CloseReason::TlsFailed => "TLS handshake failed",
            CloseReason::PduTooLarge => "request too large",
        }
    }

    /// The reason with number `v` (the `repr`), for decoding.
    pub fn from_u8(v: u8) -> Option<CloseReason> {
        Some(match v {
            1 => CloseReason::Unbind,
            2 => CloseReason::ClientClosed,
            3 => CloseReason::BadPdu,
            4 => CloseReason::Idle,
            5 => CloseReason::WriteTimeout,
            6 => CloseReason::Shutdown,
            7 => CloseReason::ReadError,
            8 => CloseReason::TlsFailed,
            9 => CloseReason::PduTooLarge,
            _ => return None,
        })
    }
}

/// Something that happened to a connection.
#[derive(Debug, Clone, Copy)]
pub enum ConnectionEvent<'a> {
    /// Accepted.
    Accepted {
        /// The connection's number.
        conn: u64,
        /// The client's address.
        peer: Option<SocketAddr>,
        /// The server's address.
        local: Option<SocketAddr>,
        /// The socket's descriptor (0 where unknown).
        fd: u32,
        /// An `ldaps://` listener.
        ldaps: bool,
    },
    /// A TLS handshake completed.
    Tls {
        /// The connection.
        conn: u64,
        /// `TLS1.2` or `TLS1.3`.
        version: &'a str,
        /// The cipher suite's name.
        cipher: &'a str,
        /// The symmetric key size in bits.
        keysize: u32,
    },
    /// Refused at a connection limit (a Notice of Disconnection with `busy` was sent).
    Refused {
        /// The number the connection would have had.
        conn: u64,
        /// The client's address.
        peer: Option<SocketAddr>,
        /// The server's address.
        local: Option<SocketAddr>,
        /// Why.
        reason: &'a str,
    },
    /// Closed.
    Closed {
        /// The connection.
        conn: u64,
        /// The number of the last operation read, -1 when none was.
        op: i64,
        /// The socket's descriptor (0 where unknown).
        fd: u32,
        /// Why.
        reason: CloseReason,
    },
}

/// Receives every outcome and connection event. Runs on the thread that completed the
/// operation: it must be quick and must not block.
pub trait Observer: Send + Sync + std::fmt::Debug {
    /// An operation with request tag `request_tag` started on connection `conn` (it was
    /// numbered; its outcome follows when it ends). Most observers need only the end; one
    /// that implements this says so with [`Observer::observes_initiated`].
    fn initiated(&self, _conn: u64, _request_tag: u8) {}
    /// Whether [`Observer::initiated`] does anything: operations call only the observers
    /// that say so.
    fn observes_initiated(&self) -> bool {
        false
    }
    /// Whether the observer reads [`Times::started`]. When none does, operations skip that
    /// clock read and report their receive time as their start.
    fn reads_start_time(&self) -> bool {
        true
    }
    /// An operation ended.
    fn operation(&self, outcome: &Outcome<'_>);
    /// Something happened to a connection.
    fn connection(&self, event: &ConnectionEvent<'_>);
}

/// The observers of a directory, in the order they are told.
#[derive(Debug, Default, Clone)]
pub struct Observers {
    list: Vec<Arc<dyn Observer>>,
    /// Those of `list` told when operations start.
    initiating: Vec<Arc<dyn Observer>>,
    /// Some observer reads [`Times::started`].
    start_time: bool,
}

impl Observers {
    /// Adds an observer.
    pub fn add(&mut self, observer: Arc<dyn Observer>) {
        self.start_time |= observer.reads_start_time();
        if observer.observes_initiated() {
            self.initiating.push(observer.clone());
        }
        self.list.push(observer);
    }

    /// True when nobody observes (operations then skip taking their times).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// True when some observer reads [`Times::started`] (operations then read the clock
    /// when their work starts).
    pub fn read_start_time(&self) -> bool {
        self.start_time
    }

    /// Tells every observer that an operation started.
    #[inline]
    pub fn initiated(&self, conn: u64, request_tag: u8) {
        for o in &self.initiating {
            o.initiated(conn, request_tag);
        }
    }

    /// Tells every observer how an operation ended.
    pub fn operation(&self, outcome: &Outcome<'_>) {
        for o in &self.list {
            o.operation(outcome);
        }
    }

    /// Tells every observer of a connection event.
    pub fn connection(&self, event: &ConnectionEvent<'_>) {
        for o in &self.list {
            o.connection(event);
        }
    }
}
