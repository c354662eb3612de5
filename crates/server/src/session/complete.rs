//! How an operation on a connection ends: its response encoded from its [`Reply`] and its
//! [`Outcome`] handed to the directory's observers (see [`crate::outcome`]).
//!
//! 1. [`Session::begin`] numbers the operation and notes when its work started (the
//!    request's read time is the connection's last read);
//! 2. an operation that ends on the connection's task calls [`Session::complete`] with the
//!    request PDU it still borrows;
//! 3. one that ends elsewhere (a search on a worker thread, a write on the store's writer
//!    thread, a Cancel waiting for its target) takes a [`Completion`]: the same trace with
//!    an owned copy of the request (made only when somebody observes) and the identity
//!    it ran as, and calls [`Completion::complete`] where it ends.

use std::sync::Arc;

use larch_proto::{op_tag, LdapMessage, MessageId, ResultCode};

use super::writer::DoneSender;
use super::Session;
use crate::clock::Mono;
use crate::directory::Directory;
use crate::identity::Identity;
use crate::monitor::connections::ConnectionStats;
use crate::outcome::{respond, BindMethod, Outcome, Reply, SearchNotes, Sent, Times};
use crate::search::run::SearchEnd;

/// An operation between its request and its end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpTrace {
    pub conn: u64,
    pub op: i64,
    pub msgid: MessageId,
    pub request_tag: u8,
    pub received: Mono,
    pub started: Mono,
}

/// How an operation ended, besides its trace and request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ending<'a> {
    /// The response's tag; 0 when nothing is sent.
    pub response_tag: u8,
    /// The answer (`None`: no response).
    pub reply: Option<&'a Reply>,
    /// What was sent before the final response (a search's entries and references).
    pub sent: Sent,
    pub notes: SearchNotes,
    pub target_op: i64,
    pub undecodable: bool,
    /// A Bind: how it authenticated.
    pub bind_method: Option<BindMethod>,
    /// The request as decoded, when it is at hand (see [`Outcome::decoded`]).
    pub decoded: Option<&'a LdapMessage<'a>>,
}

impl<'a> Ending<'a> {
    /// A plain response of kind `response_tag`.
    pub fn reply(response_tag: u8, reply: &'a Reply) -> Ending<'a> {
        Ending {
            response_tag,
            reply: Some(reply),
            ..Ending::silent()
        }
    }

    /// The end of a search, with what it wrote (`bytes` octets before its final
    /// response); no response when it stopped without one.
    pub fn search(end: &'a SearchEnd, bytes: u64) -> Ending<'a> {
        Ending {
            response_tag: if end.reply.is_some() {
                larch_proto::op_tag::SEARCH_RESULT_DONE
            } else {
                0
            },
            reply: end.reply.as_ref(),
            sent: Sent {
                entries: end.entries,
                references: end.references,
                bytes,
            },
            notes: end.notes,
            ..Ending::silent()
        }
    }

    /// No response (Unbind, Abandon, an abandoned operation).
    pub fn silent() -> Ending<'a> {
        Ending {
            response_tag: 0,
            reply: None,
            sent: Sent::default(),
            notes: SearchNotes::default(),
            target_op: -1,
            undecodable: false,
            bind_method: None,
            decoded: None,
        }
    }

    /// The same ending, with the request as the request path decoded it.
    pub fn with_request(self, decoded: &'a LdapMessage<'a>) -> Ending<'a> {
        Ending {
            decoded: Some(decoded),
            ..self
        }
    }
}

/// Writes the response of `ending` to `out` and tells the observers (step 2 and 3 of the
/// module documentation).
fn finish(
    dir: &Directory,
    stats: Option<&ConnectionStats>,
    trace: &OpTrace,
    request: &[u8],
    identity: &Identity,
    out: &mut Vec<u8>,
    ending: Ending<'_>,
) {
    let before = out.len();
    if let (Some(reply), true) = (ending.reply, ending.response_tag != 0) {
        respond::write(out, trace.msgid, ending.response_tag, reply);
    }
    // A Notice of Disconnection (operation -1) answers no operation the connection read.
    if let (Some(s), true) = (stats, trace.op >= 0) {
        s.completed();
        // A Bind's identity is the one it established (cn=Monitor's
        // monitorConnectionAuthzDN).
        let bound = ending.reply.is_some_and(|r| r.code == ResultCode::SUCCESS);
        if trace.request_tag == op_tag::BIND_REQUEST && bound {
            s.bound(identity.dn());
        }
    }
    if dir.observers.is_empty() {
        return;
    }
    let mut sent = ending.sent;
    sent.bytes += (out.len() - before) as u64;
    let outcome = Outcome {
        conn: trace.conn,
        op: trace.op,
        msgid: trace.msgid,
        request_tag: trace.request_tag,
        request,
        decoded: ending.decoded,
        undecodable: ending.undecodable,
        response_tag: if ending.reply.is_some() {
            ending.response_tag
        } else {
            0
        },
        reply: ending.reply,
        sent,
        times: Times {
            received: trace.received,
            started: trace.started,
            finished: Mono::now(),
        },
        identity,
        target_op: ending.target_op,
        notes: ending.notes,
        bind_method: ending.bind_method,
    };
    dir.observers.operation(&outcome);
}

/// The end of an operation that finishes away from the connection's task.
#[derive(Debug)]
pub(crate) struct Completion {
    dir: Arc<Directory>,
    stats: Option<Arc<ConnectionStats>>,
    trace: OpTrace,
    /// The request PDU (empty when nobody observes).
    request: Box<[u8]>,
    identity: Arc<Identity>,
}

impl Completion {
    /// The message ID the operation answers.
    pub fn msgid(&self) -> MessageId {
        self.trace.msgid
    }

    /// The operation's number on its connection.
    pub fn op(&self) -> i64 {
        self.trace.op
    }

    /// Ends a write that settled away from the connection's task (in the store's writer,
    /// or chained to a provider): its response, of kind `response`, goes to `tx`, unless
    /// the client abandoned it, when only its outcome is reported.
    pub(super) fn complete_write(&self, abandoned: bool, response: u8, reply: &Reply, tx: &DoneSender) {
        let mut out = Vec::new();
        if abandoned {
            let ending = Ending {
                reply: Some(reply),
                ..Ending::silent()
            };
            self.complete(&mut out, ending);
        } else {
            self.complete(&mut out, Ending::reply(response, reply));
            let _ = tx.send(out);
        }
    }

    /// Writes the response to `out` and reports the outcome.
    pub fn complete(&self, out: &mut Vec<u8>, ending: Ending<'_>) {
        finish(
            &self.dir,
            self.stats.as_deref(),
            &self.trace,
            &self.request,
            &self.identity,
            out,
            ending,
        );
    }
}

impl Session {
    /// Starts operation `msgid` (a request with tag `request_tag`): its number on the
    /// connection, and its times.
    pub(super) fn begin(&mut self, msgid: MessageId, request_tag: u8) -> OpTrace {
        let op = self.next_op;
        self.next_op += 1;
        if let Some(s) = &self.stats {
            s.received(op as u64, self.received);
        }
        self.dir.observers.initiated(self.conn, request_tag);
        self.trace(op, msgid, request_tag)
    }

    /// The trace of a Notice of Disconnection, which answers no operation: operation
    /// number -1, message ID 0; the connection's numbering goes on unchanged.
    pub(super) fn begin_notice(&self, request_tag: u8) -> OpTrace {
        self.trace(-1, 0, request_tag)
    }

    fn trace(&self, op: i64, msgid: MessageId, request_tag: u8) -> OpTrace {
        OpTrace {
            conn: self.conn,
            op,
            msgid,
            request_tag,
            received: self.received,
            started: if self.dir.observers.read_start_time() {
                Mono::now()
            } else {
                self.received
            },
        }
    }

    /// Ends an operation on the connection's task: its response goes to `out` (the read's
    /// output), its outcome to the observers. `identity`: who it ran as, when not the
    /// connection's.
    pub(super) fn complete(
        &self,
        trace: &OpTrace,
        request: &[u8],
        identity: Option<&Identity>,
        out: &mut Vec<u8>,
        ending: Ending<'_>,
    ) {
        let identity = identity.unwrap_or(&self.identity);
        finish(
            &self.dir,
            self.stats.as_deref(),
            trace,
            request,
            identity,
            out,
            ending,
        );
    }

    /// The owned end of `trace`, run as `identity`, for an operation that finishes away
    /// from this task.
    pub(super) fn completion(&self, trace: OpTrace, request: &[u8], identity: Arc<Identity>) -> Completion {
        Completion {
            dir: self.dir.clone(),
            stats: self.stats.clone(),
            trace,
            request: if self.dir.observers.is_empty() {
                Box::default()
            } else {
                request.into()
            },
            identity,
        }
    }
}
