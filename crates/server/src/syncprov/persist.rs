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
//!    The last message of each write carries the cookie of the consumer's state once it has
//!    applied it: the CSNs the refresh ended with, raised by the write's CSN. The other
//!    changes of a write (those its hooks made to other entries: memberOf, referential
//!    integrity) share that CSN, and go without a cookie: slapd's consumer ignores a
//!    message whose cookie is not newer than the one it holds, and a cookie given before
//!    the write's last change would let a consumer that disconnects there skip the rest.
//!    A write whose changes all go unsent leaves the cookie where it was until the next
//!    message.
//!
//! Memory per search is bounded: [`MAX_QUEUED_NOTES`] queued notes (shared with the
//! session log), and [`PERSIST_FLUSH_BYTES`] octets plus one message waiting for the
//! connection. The thread never waits for a client.

use std::collections::VecDeque;
use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_proto::controls::SyncStateKind;
use larch_proto::{MessageId, ResultCode};
use larch_store::{EntryId, Version};

use super::cookie::format_cookie;
use super::note::{ChangeNote, NoteKind};
use crate::acl::AccessRules;
use crate::error::OpError;
use crate::opattrs::OperationalTypes;
use crate::outcome::Reply;
use crate::search::sync::{dn_in_scope, entry_uuid, write_state_entry, EntryTest, PersistHandoff};
use crate::session::inflight::StopRequest;

/// Changes queued for one persistent search before it is ended with
/// `e-syncRefreshRequired`: a consumer this far behind catches up faster from a delta
/// than from a queue that keeps growing.
pub const MAX_QUEUED_NOTES: usize = 100_000;

/// Octets of messages a live search prepares before it hands them to the connection; also
/// what it keeps waiting when the connection has no room (plus one message).
pub const PERSIST_FLUSH_BYTES: usize = 256 * 1024;

/// What a persistent search writes to: its connection (implemented by the session).
pub(crate) trait PersistSink: Send {
    /// Hands `chunk` to the connection without waiting.
    fn offer(&mut self, chunk: Vec<u8>) -> Offer;
    /// What the client asked of the operation (Abandon or Cancel), if anything.
    fn stop_request(&self) -> StopRequest;
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

/// One registered persistent search.
pub(crate) struct Persistent {
    pub id: u64,
    /// Notes not yet turned into messages (step 1 and 2).
    pub queue: VecDeque<Arc<ChangeNote>>,
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
    pub handoff: Box<PersistHandoff>,
    pub sink: Box<dyn PersistSink>,
    pub msgid: MessageId,
    /// Octets waiting for the connection.
    pub out: Vec<u8>,
    pub test: EntryTest,
    pub entries: u32,
    pub bytes: u64,
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
    pub fn refreshing(id: u64) -> Persistent {
        Persistent {
            id,
            queue: VecDeque::new(),
            overflowed: false,
            stage: Stage::Refreshing,
        }
    }

    /// Queues the notes of a batch (never more than [`MAX_QUEUED_NOTES`]).
    pub fn enqueue(&mut self, notes: &[Arc<ChangeNote>]) {
        if self.overflowed || matches!(self.stage, Stage::Closing(..)) {
            return;
        }
        if self.queue.len() + notes.len() > MAX_QUEUED_NOTES {
            self.overflowed = true;
            self.queue.clear();
            return;
        }
        self.queue.extend(notes.iter().cloned());
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
            StopRequest::Abandon => return Some(Ending::Abandoned),
            StopRequest::Cancel => return Some(Ending::Canceled),
            StopRequest::None => {}
        }
        overflowed.then_some(Ending::RefreshRequired)
    }

    /// Step 2: sends what waits, turns queued notes into messages, sends them.
    fn pump(&mut self, queue: &mut VecDeque<Arc<ChangeNote>>, v: &Version, ctx: &PersistContext) -> Pass {
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
            if queue.is_empty() {
                return Pass::Keep;
            }
            while self.out.len() < PERSIST_FLUSH_BYTES {
                let Some(note) = queue.pop_front() else { break };
                // The last note of a write (the next has another CSN, or the batch ended:
                // a batch never ends inside a write) carries the cookie.
                let write_ends = queue.front().is_none_or(|next| next.csn != note.csn);
                self.write_note(&note, write_ends, v, ctx);
            }
        }
    }

    /// Step 4: the message of one note, if any; with the cookie when `write_ends`.
    fn write_note(&mut self, note: &ChangeNote, write_ends: bool, v: &Version, ctx: &PersistContext) {
        if write_ends {
            if let Some(csn) = &note.csn {
                self.handoff.context.raise(csn);
            }
        }
        let Some(uuid) = note.uuid else { return };
        let search = &self.handoff.search;
        let scope = search.scope();
        let base = &self.handoff.base;
        let in_scope = |dn: &Option<NormDn>| dn.as_ref().is_some_and(|dn| dn_in_scope(base, scope, dn));
        let current = match note.kind {
            NoteKind::Delete => None,
            _ => note
                .new_dn
                .as_ref()
                .and_then(|dn| v.find(dn))
                .filter(|&id| entry_uuid(v, ctx.optypes.entry_uuid, id) == Some(uuid)),
        };
        let test = &mut self.test;
        let admitted =
            current.filter(|&id| search.admits(&ctx.rules, v, id, &mut test.filters, &mut test.scratch));
        let cookie = write_ends.then(|| format_cookie(self.handoff.rid, ctx.sid, &self.handoff.context));
        let cookie = cookie.as_deref().map(str::as_bytes);
        if let Some(id) = admitted {
            let state = if note.kind == NoteKind::Add {
                SyncStateKind::Add
            } else {
                SyncStateKind::Modify
            };
            search.write_synced(
                &mut self.out,
                &mut test.entry_buf,
                self.msgid,
                &ctx.optypes,
                &ctx.rules,
                v,
                id,
                (state, &uuid, cookie),
            );
            self.entries += 1;
            return;
        }
        let was_or_is_in_scope = match note.kind {
            NoteKind::Add => false,
            NoteKind::Modify => in_scope(&note.new_dn),
            NoteKind::Rename => in_scope(&note.old_dn) || in_scope(&note.new_dn),
            NoteKind::Delete => in_scope(&note.old_dn),
        };
        if was_or_is_in_scope {
            let dn = deleted_dn(note, current, v);
            write_state_entry(
                &mut self.out,
                self.msgid,
                dn.as_bytes(),
                &[],
                SyncStateKind::Delete,
                &uuid,
                cookie,
            );
            self.entries += 1;
        }
    }
}

/// The DN a delete message names: the deleted entry's as stored, else the entry's
/// current DN, else the normalized one the note holds.
fn deleted_dn(note: &ChangeNote, current: Option<EntryId>, v: &Version) -> String {
    if let Some(dn) = &note.deleted_dn {
        return dn.to_string();
    }
    if let Some(id) = current {
        return v.dn(id);
    }
    note.new_dn
        .as_ref()
        .or(note.old_dn.as_ref())
        .map_or_else(String::new, |d| d.as_str().to_string())
}
