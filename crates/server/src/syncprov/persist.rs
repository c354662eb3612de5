//! Persistent searches (RFC 4533 refreshAndPersist): registered when the refresh begins,
//! live once it is over, fed with the notes of every committed change by the provider's
//! thread ([`super::feeder`]), which sends what each search must see.
//!
//! A persistent search's life:
//! 1. **Refreshing**: registered by [`super::SyncProvider::begin`] before the refresh reads
//!    the directory; the notes of later changes queue up for it.
//! 2. **Live**: [`super::SyncProvider::go_live`] hands over the search (its scope, filter,
//!    access rights and attributes), the connection, and the refresh's last octets not yet
//!    sent. On each pass the thread sends what is pending, then turns queued notes into
//!    messages (step 4) until [`PERSIST_FLUSH_BYTES`] octets wait, and hands them to the
//!    connection without waiting; what the connection cannot take stays for the next pass.
//! 3. **Closing**: the final SearchResultDone waits for room, then the search is dropped
//!    (its places on the connection with it). A search ends when its client abandons it
//!    (nothing more is sent), cancels it (`canceled`, 118), closes the connection, or falls
//!    behind by more than [`MAX_QUEUED_NOTES`] changes (`e-syncRefreshRequired`, 4096: the
//!    consumer starts again from the last cookie it received, which a delta answers), or
//!    the server shuts down (`unavailable`, 52).
//! 4. A note becomes at most one message, against the current version of the directory:
//!    - an entry that this search returns now (in scope, matching, readable, the same
//!      entryUUID) goes out whole with state `add` (an add) or `modify` (a modify or a
//!      rename, which a consumer applies by UUID);
//!    - otherwise, a delete, or a change of an entry that was or is in scope, goes out as
//!      `delete` with the entry's UUID (a consumer ignores the UUID of an entry it never
//!      had, so a delete for an entry that left the search is safe even if it never was
//!      in it);
//!    - an add the search does not return sends nothing.
//!
//!    The message of the last change of each write (the feed says which change ends its
//!    write) carries the cookie of the consumer's state once it has applied it: the CSNs
//!    the refresh ended with, raised by every CSN of the writes since. The other changes
//!    of a write go without a cookie: those its hooks made to other entries (memberOf,
//!    referential integrity) share its CSN, and a replica applies a batch of its
//!    provider's changes, of many CSNs, as one write; slapd's consumer ignores a message
//!    whose cookie is not newer than the one it holds, and a cookie given before a write's
//!    last change would let a consumer that disconnects there skip the rest. A write whose
//!    last change goes unsent leaves the cookie where it was until the next message.
//!
//! Memory per search is bounded: [`MAX_QUEUED_NOTES`] queued notes (shared with the
//! session log), and [`PERSIST_FLUSH_BYTES`] octets plus one message waiting for the
//! connection. The thread never waits for a client.
//!
//! # Lag
//! A search's lag ([`Persistent::lag`]) is what the provider has committed and the
//! consumer's connection has not yet taken: the changes queued, plus those whose
//! messages wait in the search's buffer; in seconds, the age of the oldest of them (from
//! when the thread took its batch from the feed). Changes the search skips (out of its
//! scope) count until they are passed over. Octets the connection has taken but the
//! client has not yet read are not counted: the connection's own limits bound those.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use larch_proto::ResultCode;
use larch_store::Version;

use super::note::ChangeNote;
use crate::acl::AccessRules;
use crate::error::OpError;
use crate::opattrs::OperationalTypes;
use crate::outcome::Reply;

/// Changes queued for one persistent search before it is ended with
/// `e-syncRefreshRequired`: a consumer this far behind catches up faster from a delta
/// than from a queue that keeps growing.
pub const MAX_QUEUED_NOTES: usize = 100_000;

/// Octets of messages a live search prepares before it hands them to the connection; also
/// what it keeps waiting when the connection has no room (plus one message).
pub const PERSIST_FLUSH_BYTES: usize = 256 * 1024;

/// What the client asked of a persistent search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopAsked {
    /// Nothing.
    None,
    /// Abandon: nothing more is sent.
    Abandon,
    /// Cancel: the search ends with `canceled` (118).
    Cancel,
}

/// The search side of a persistent search, which the provider does not know: which
/// changes it returns and how (implemented by the search, `crate::search::sync`).
pub(crate) trait PersistSearch: Send {
    /// Step 4: appends the message of `note` to `out`, against version `v`, if the
    /// consumer must be told of it; true when it wrote one.
    fn write_note(&mut self, note: &ChangeNote, v: &Version, ctx: &PersistContext, out: &mut Vec<u8>)
        -> bool;
}

/// What a persistent search writes to: its connection (implemented by the session).
pub(crate) trait PersistSink: Send {
    /// Hands `chunk` to the connection without waiting.
    fn offer(&mut self, chunk: Vec<u8>) -> Offer;
    /// What the client asked of the operation (Abandon or Cancel), if anything.
    fn stop_request(&self) -> StopAsked;
    /// Ends the operation: appends the SearchResultDone of `reply` (none: the search was
    /// abandoned) to `out` and reports the outcome, with `entries` sent in `bytes`.
    fn finish(&mut self, reply: Option<Reply>, entries: u32, bytes: u64, out: &mut Vec<u8>);
}

/// What became of a chunk offered to a connection.
#[derive(Debug)]
pub(crate) enum Offer {
    /// Queued.
    Taken,
    /// No room now: the chunk comes back.
    Full(Vec<u8>),
    /// The connection is closing.
    Gone,
}

/// What the thread needs besides the search: the access rules and the operational types.
#[derive(Debug, Clone)]
pub(crate) struct PersistContext {
    pub rules: Arc<AccessRules>,
    pub optypes: OperationalTypes,
    pub sid: u16,
}

/// Who follows the directory through a persistent search, for monitoring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Follower {
    /// The connection's number (as in `cn=Connection N,cn=Connections,cn=Monitor`).
    pub conn: u64,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// The identity the search runs as (empty: anonymous).
    pub authz_dn: String,
    /// The replica ID its cookie names, if any.
    pub rid: Option<u16>,
    /// The search base, as the client wrote it.
    pub base: String,
    /// When the search began.
    pub since: SystemTime,
}

/// A note waiting for a search, with when the thread took it from the feed.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub note: Arc<ChangeNote>,
    pub at: Instant,
}

/// How far a search is behind (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lag {
    /// Changes committed that the connection has not yet taken.
    pub changes: u64,
    /// The age of the oldest of them (zero when there is none).
    pub age: Duration,
}

/// One registered persistent search.
pub(crate) struct Persistent {
    pub id: u64,
    /// Who follows.
    pub who: Follower,
    /// Notes not yet turned into messages (step 1 and 2).
    pub queue: VecDeque<Queued>,
    /// More than [`MAX_QUEUED_NOTES`] queued at some point: the search must end with
    /// `e-syncRefreshRequired`.
    pub overflowed: bool,
    pub stage: Stage,
}

/// Where a persistent search stands.
pub(crate) enum Stage {
    /// Step 1.
    Refreshing,
    /// Step 2.
    Live(Box<Live>),
    /// Step 3: the final octets, waiting for room.
    Closing(Box<dyn PersistSink>, Vec<u8>),
}

/// A live persistent search.
pub(crate) struct Live {
    pub search: Box<dyn PersistSearch>,
    pub sink: Box<dyn PersistSink>,
    /// Octets waiting for the connection.
    pub out: Vec<u8>,
    pub entries: u32,
    pub bytes: u64,
    /// Notes passed over into `out` since the connection last took it, and when the
    /// oldest of them was queued.
    pub in_out: u64,
    pub in_out_since: Option<Instant>,
    /// The CSN of the newest change the connection has taken (sent or skipped).
    pub through_csn: Option<String>,
    /// The CSN of the newest change passed over into `out`.
    pub out_csn: Option<String>,
}

impl Live {
    /// A search whose refresh is over, with `backlog` octets of it not yet sent.
    pub fn new(search: Box<dyn PersistSearch>, sink: Box<dyn PersistSink>, backlog: Vec<u8>) -> Live {
        Live {
            search,
            sink,
            out: backlog,
            entries: 0,
            bytes: 0,
            in_out: 0,
            in_out_since: None,
            through_csn: None,
            out_csn: None,
        }
    }
}

/// What a pass did with a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Keep it.
    Keep,
    /// Drop it: it is over.
    Drop,
}

impl Persistent {
    /// A search registered for its refresh (step 1).
    pub fn refreshing(id: u64, who: Follower) -> Persistent {
        Persistent {
            id,
            who,
            queue: VecDeque::new(),
            overflowed: false,
            stage: Stage::Refreshing,
        }
    }

    /// Queues the notes of a batch taken from the feed at `at` (never more than
    /// [`MAX_QUEUED_NOTES`]).
    pub fn enqueue(&mut self, notes: &[Arc<ChangeNote>], at: Instant) {
        if self.overflowed || matches!(self.stage, Stage::Closing(..)) {
            return;
        }
        if self.queue.len() + notes.len() > MAX_QUEUED_NOTES {
            self.overflowed = true;
            self.queue.clear();
            return;
        }
        self.queue.extend(notes.iter().map(|note| Queued {
            note: Arc::clone(note),
            at,
        }));
    }

    /// How far the search is behind at `now`.
    pub fn lag(&self, now: Instant) -> Lag {
        let (in_out, since) = match &self.stage {
            Stage::Live(live) => (live.in_out, live.in_out_since),
            Stage::Refreshing | Stage::Closing(..) => (0, None),
        };
        let oldest = since.or_else(|| self.queue.front().map(|q| q.at));
        Lag {
            changes: self.queue.len() as u64 + in_out,
            age: oldest.map_or(Duration::ZERO, |t| now.saturating_duration_since(t)),
        }
    }

    /// The stage's name, as monitoring shows it.
    pub fn stage_name(&self) -> &'static str {
        match self.stage {
            Stage::Refreshing => "refreshing",
            Stage::Live(_) => "persisting",
            Stage::Closing(..) => "closing",
        }
    }

    /// Ends the search because the server shuts down: a live one with `unavailable` (52),
    /// a refreshing one is only dropped (its refresh, when over, finds it gone and ends
    /// the same way). What cannot be sent at once is kept for [`Persistent::pass`].
    pub fn shut_down(&mut self) -> Pass {
        match std::mem::replace(&mut self.stage, Stage::Refreshing) {
            Stage::Refreshing => Pass::Drop,
            Stage::Closing(sink, out) => self.close(sink, out),
            Stage::Live(live) => self.end(*live, Ending::ShuttingDown),
        }
    }

    /// One pass of the thread over this search (steps 2 and 3) on version `v`.
    pub fn pass(&mut self, v: &Version, ctx: &PersistContext) -> Pass {
        match std::mem::replace(&mut self.stage, Stage::Refreshing) {
            Stage::Refreshing => Pass::Keep,
            Stage::Closing(sink, out) => self.close(sink, out),
            Stage::Live(mut live) => {
                if let Some(end) = live.ending(self.overflowed) {
                    return self.end(*live, end);
                }
                match live.pump(&mut self.queue, v, ctx) {
                    Pass::Keep => {
                        self.stage = Stage::Live(live);
                        Pass::Keep
                    }
                    Pass::Drop => Pass::Drop,
                }
            }
        }
    }

    /// Ends a live search with `end` (step 3).
    fn end(&mut self, mut live: Live, end: Ending) -> Pass {
        let mut out = std::mem::take(&mut live.out);
        let reply = match end {
            Ending::Abandoned => {
                out.clear();
                None
            }
            Ending::Canceled => Some(Reply::from(OpError::new(
                ResultCode::CANCELED,
                "the persistent search was canceled",
            ))),
            Ending::ShuttingDown => {
                out.clear();
                Some(Reply::from(OpError::new(
                    ResultCode::UNAVAILABLE,
                    "the server is shutting down; resume with the last cookie",
                )))
            }
            Ending::RefreshRequired => {
                // What was not sent is dropped: the consumer's last cookie is the one of
                // the last message it received, and it starts again from there.
                out.clear();
                Some(Reply::from(OpError::new(
                    ResultCode::E_SYNC_REFRESH_REQUIRED,
                    format!(
                        "the consumer fell more than {MAX_QUEUED_NOTES} changes behind; \
                         refresh from the last cookie"
                    ),
                )))
            }
        };
        let bytes = live.bytes + out.len() as u64;
        live.sink.finish(reply, live.entries, bytes, &mut out);
        let Live { sink, .. } = live;
        self.queue.clear();
        self.close(sink, out)
    }

    /// Sends the final octets, or keeps them for the next pass (step 3).
    fn close(&mut self, mut sink: Box<dyn PersistSink>, out: Vec<u8>) -> Pass {
        if out.is_empty() {
            return Pass::Drop;
        }
        match sink.offer(out) {
            Offer::Taken | Offer::Gone => Pass::Drop,
            Offer::Full(out) => {
                self.stage = Stage::Closing(sink, out);
                Pass::Keep
            }
        }
    }
}

/// Why a live search ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Abandoned,
    Canceled,
    RefreshRequired,
    ShuttingDown,
}

impl Live {
    /// Whether the search must end now, and how.
    fn ending(&self, overflowed: bool) -> Option<Ending> {
        match self.sink.stop_request() {
            StopAsked::Abandon => return Some(Ending::Abandoned),
            StopAsked::Cancel => return Some(Ending::Canceled),
            StopAsked::None => {}
        }
        overflowed.then_some(Ending::RefreshRequired)
    }

    /// Step 2: sends what waits, turns queued notes into messages, sends them.
    fn pump(&mut self, queue: &mut VecDeque<Queued>, v: &Version, ctx: &PersistContext) -> Pass {
        loop {
            if !self.out.is_empty() {
                let chunk = std::mem::take(&mut self.out);
                let n = chunk.len() as u64;
                match self.sink.offer(chunk) {
                    Offer::Taken => self.bytes += n,
                    Offer::Full(chunk) => {
                        self.out = chunk;
                        return Pass::Keep;
                    }
                    Offer::Gone => return Pass::Drop,
                }
            }
            self.taken();
            if queue.is_empty() {
                return Pass::Keep;
            }
            while self.out.len() < PERSIST_FLUSH_BYTES {
                let Some(q) = queue.pop_front() else { break };
                self.in_out += 1;
                self.in_out_since.get_or_insert(q.at);
                if let Some(csn) = &q.note.csn {
                    self.out_csn = Some(csn.as_str().to_string());
                }
                if self.search.write_note(&q.note, v, ctx, &mut self.out) {
                    self.entries += 1;
                }
            }
        }
    }

    /// The connection took everything in `out` (or `out` held nothing for the notes
    /// passed over): those notes are no longer behind.
    fn taken(&mut self) {
        self.in_out = 0;
        self.in_out_since = None;
        if let Some(csn) = self.out_csn.take() {
            self.through_csn = Some(csn);
        }
    }
}
