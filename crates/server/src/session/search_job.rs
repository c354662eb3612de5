//! A large search as a job on the directory's search threads ([`crate::workers`]), which
//! never holds a thread while its client does not read.
//!
//! How a job runs:
//! 1. when more than [`MAX_WAITING_SEARCHES_PER_THREAD`] searches wait for each thread, a
//!    new one is answered `busy` (51) at once; else the connection hands the prepared
//!    search over with one of its
//!    [`SEARCHES_PER_CONNECTION`] search places (the reading side waits, as a task, for a
//!    free one) and its operation permit;
//! 2. a step ([`SearchJob::step`]) runs the search ([`PreparedSearch::step`]) until it
//!    ends or pauses; its sink ([`JobSink`]) hands each full buffer to the connection's
//!    queue without waiting ([`OutSender::try_send`]);
//! 3. when the queue (or the server's budget) has no room, the sink keeps the buffer and
//!    asks for a pause; the job then hands its next step to the connection's outbox (or
//!    the budget), which submits it again once the writer has taken chunks out (or octets
//!    were given back), and the thread goes on with another job;
//! 4. a step that ran [`SEARCH_TURN`] also pauses, and the job goes to the back of the
//!    threads' queue, so that long searches take turns with short ones;
//! 5. a resumed job first sends the buffer it kept (and waits again if there is still no
//!    room), unless its operation was abandoned or cancelled meanwhile, which ends it;
//! 6. at the end the SearchResultDone (or `canceled`) is appended through the operation's
//!    [`Completion`] and sent the same way; the job then drops its places, and the
//!    operation leaves the connection's table of operations in flight.
//!
//! A connection's memory for its searches is thus bounded: its queue's
//! [`super::writer::CONNECTION_BUFFERED_OUTPUT`], plus one buffer (about
//! [`SEARCH_FLUSH_BYTES`] and an entry) per search place; the server's, by
//! [`crate::output_budget::MAX_BUFFERED_OUTPUT`]. The threads are the pool's, whatever
//! clients do.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use larch_proto::ResultCode;
use tokio::sync::OwnedSemaphorePermit;

use super::complete::{Completion, Ending};
use super::inflight::{OpGuard, StopRequest};
use super::writer::{NotSent, OutSender};
use crate::directory::Directory;
use crate::error::OpError;
use crate::outcome::Reply;
use crate::response::ResponseSink;
use crate::search::run::SearchEnd;
use crate::search::sync::PersistHandoff;
use crate::search::{PagedSearches, PreparedSearch, Step};
use crate::syncprov::persist::{Offer, PersistSink, StopAsked};
use crate::workers::WorkersHandle;

/// Octets a search gathers before handing them to the connection's queue.
pub const SEARCH_FLUSH_BYTES: usize = 64 * 1024;

/// Large searches one connection runs at once; the next waits for a place (and the
/// connection reads no further request meanwhile). Enough to keep every search thread
/// busy from one connection on most machines, few enough that one connection cannot
/// crowd out the others on the threads' queue, and a bound on the buffers a connection
/// that stops reading holds.
pub const SEARCHES_PER_CONNECTION: usize = 4;

/// Searches (new ones, resumed ones, ones whose turn is over) that may wait for each search
/// thread before a new large search is answered `busy` (51) instead of queued: with turns
/// of [`SEARCH_TURN`], a waiting search gets a thread within about 0.64 s however many
/// clients ask, and an overload is refused rather than answered ever later.
pub const MAX_WAITING_SEARCHES_PER_THREAD: usize = 64;

/// How long one step of a search runs before it lets the next job take the thread.
pub const SEARCH_TURN: Duration = Duration::from_millis(10);

/// Where a job stands.
enum Stage {
    /// Searching.
    Running(PreparedSearch),
    /// Over: what is left in the buffer goes out, then the job ends.
    Sending,
}

/// A large search between its steps (see the module documentation).
pub(crate) struct SearchJob {
    stage: Stage,
    dir: Arc<Directory>,
    paged: Arc<Mutex<PagedSearches>>,
    completion: Completion,
    sink: JobSink,
    workers: WorkersHandle,
    /// The connection's operation permit and search place, held to the end.
    _places: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

/// The sink of a job's steps.
struct JobSink {
    buf: Vec<u8>,
    tx: OutSender,
    guard: OpGuard,
    /// The connection is gone.
    gone: bool,
    /// Octets handed to the connection so far.
    sent: u64,
    /// Why the step must pause: no room for the buffer.
    blocked: Option<Blocked>,
    /// When this step's turn is over.
    turn_ends: Instant,
}

/// What a full buffer waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocked {
    /// Room in the connection's queue.
    Connection,
    /// Room in the server's budget.
    Server,
}

impl JobSink {
    /// Hands the buffer to the connection if it has room; notes what it waits for if not.
    fn send_buffer(&mut self) {
        if self.buf.is_empty() || self.gone {
            return;
        }
        let chunk = std::mem::take(&mut self.buf);
        let n = chunk.len() as u64;
        match self.tx.try_send(chunk) {
            Ok(()) => self.sent += n,
            Err(NotSent::ConnectionFull(chunk)) => {
                self.buf = chunk;
                self.blocked = Some(Blocked::Connection);
            }
            Err(NotSent::ServerFull(chunk)) => {
                self.buf = chunk;
                self.blocked = Some(Blocked::Server);
            }
            Err(NotSent::Closed) => self.gone = true,
        }
    }
}

impl ResponseSink for JobSink {
    fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    fn flush(&mut self) -> bool {
        if self.buf.len() >= SEARCH_FLUSH_BYTES && self.blocked.is_none() {
            self.send_buffer();
        }
        !self.stopped()
    }

    fn stopped(&self) -> bool {
        let stop = self.gone || self.guard.state().stopped();
        if stop {
            self.guard.state().note_seen_stop();
        }
        stop
    }

    fn should_pause(&mut self) -> bool {
        self.blocked.is_some() || Instant::now() >= self.turn_ends
    }
}

impl SearchJob {
    /// Starts `search` on the directory's search threads (step 1).
    pub(crate) fn start(
        search: PreparedSearch,
        dir: Arc<Directory>,
        paged: Arc<Mutex<PagedSearches>>,
        completion: Completion,
        tx: OutSender,
        guard: OpGuard,
        places: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    ) {
        let workers = dir.search_workers.handle();
        let job = Box::new(SearchJob {
            stage: Stage::Running(search),
            dir,
            paged,
            completion,
            sink: JobSink {
                buf: Vec::new(),
                tx,
                guard,
                gone: false,
                sent: 0,
                blocked: None,
                turn_ends: Instant::now(),
            },
            workers: workers.clone(),
            _places: places,
        });
        workers.submit(Box::new(move || job.step()));
    }

    /// One step (steps 2 to 6).
    fn step(mut self: Box<Self>) {
        // Step 5: what the last step could not send goes first.
        if self.sink.blocked.take().is_some() && !self.sink.stopped() {
            self.sink.send_buffer();
            if self.sink.blocked.is_some() {
                return self.wait();
            }
        }
        let search = match std::mem::replace(&mut self.stage, Stage::Sending) {
            Stage::Running(search) => search,
            Stage::Sending => return self.send_rest(),
        };
        self.sink.turn_ends = Instant::now() + SEARCH_TURN;
        let msgid = self.completion.msgid();
        match search.step(&self.dir, msgid, &mut self.sink, &self.paged) {
            Step::Paused(rest) => {
                self.stage = Stage::Running(rest);
                if self.sink.stopped() {
                    // Abandoned meanwhile: the next step ends it at once.
                    self.sink.blocked = None;
                }
                if self.sink.blocked.is_some() {
                    self.wait();
                } else {
                    let workers = self.workers.clone();
                    workers.submit(Box::new(move || self.step()));
                }
            }
            Step::Done(mut end) => match end.persist.take() {
                Some(handoff) => self.persist(*handoff, end),
                None => {
                    self.end(end);
                    self.send_rest();
                }
            },
        }
    }

    /// Step 6: the final response through the completion.
    fn end(&mut self, mut end: SearchEnd) {
        // A search that saw a stop request has no result; a canceled one answers
        // `canceled`.
        let state = self.sink.guard.state().clone();
        if end.reply.is_none() && state.seen_stop() && state.stop_request() == StopRequest::Cancel {
            end.reply = Some(Reply::from(OpError::new(
                ResultCode::CANCELED,
                "the search was canceled",
            )));
            state.mark_canceled();
        }
        if self.sink.gone || (state.seen_stop() && state.stop_request() == StopRequest::Abandon) {
            // Nothing more goes to this client for this operation.
            self.sink.buf.clear();
        }
        let bytes = self.sink.sent + self.sink.buf.len() as u64;
        let ending = Ending::search(&end, bytes);
        self.completion.complete(&mut self.sink.buf, ending);
    }

    /// The refresh of a refreshAndPersist search is over (its final Sync Info message is
    /// in the buffer): the connection, the operation and its places go to the provider,
    /// which sends the buffer first, then the changes.
    fn persist(self: Box<Self>, handoff: PersistHandoff, end: SearchEnd) {
        let job = *self;
        let Some(provider) = job.dir.sync_provider.clone() else {
            return;
        };
        let msgid = job.completion.msgid();
        let (registration, search) = handoff.into_parts(msgid);
        let sink = PersistConnection {
            tx: job.sink.tx,
            guard: job.sink.guard,
            completion: job.completion,
            refreshed: end.entries,
            _places: job._places,
        };
        provider.go_live(registration, search, Box::new(sink), job.sink.buf);
    }

    /// Sends what is left after the end; waits for room if there is none. Dropping the
    /// job then releases its places.
    fn send_rest(mut self: Box<Self>) {
        self.sink.send_buffer();
        if self.sink.blocked.is_some() {
            self.wait();
        }
    }

    /// Hands the next step to what the buffer waits for (step 3).
    fn wait(self: Box<Self>) {
        let (tx, blocked, workers) = (self.sink.tx.clone(), self.sink.blocked, self.workers.clone());
        let resume: crate::output_budget::Resume =
            Box::new(move || workers.submit(Box::new(move || self.step())));
        match blocked {
            Some(Blocked::Server) => tx.wait_for_budget(resume),
            _ => tx.wait_for_room(resume),
        }
    }
}

/// A persistent search's connection, operation and places, held by the provider
/// ([`crate::syncprov::persist`]) until the search ends.
struct PersistConnection {
    tx: OutSender,
    guard: OpGuard,
    completion: Completion,
    /// Entries the refresh sent.
    refreshed: u32,
    _places: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

impl PersistSink for PersistConnection {
    fn offer(&mut self, chunk: Vec<u8>) -> Offer {
        match self.tx.try_send(chunk) {
            Ok(()) => Offer::Taken,
            Err(NotSent::ConnectionFull(chunk) | NotSent::ServerFull(chunk)) => Offer::Full(chunk),
            Err(NotSent::Closed) => Offer::Gone,
        }
    }

    fn stop_request(&self) -> StopAsked {
        match self.guard.state().stop_request() {
            StopRequest::None => StopAsked::None,
            StopRequest::Abandon => StopAsked::Abandon,
            StopRequest::Cancel => StopAsked::Cancel,
        }
    }

    fn finish(&mut self, reply: Option<Reply>, entries: u32, bytes: u64, out: &mut Vec<u8>) {
        let state = self.guard.state();
        if reply.is_none() {
            state.note_seen_stop();
        } else if state.stop_request() == StopRequest::Cancel {
            state.note_seen_stop();
            state.mark_canceled();
        }
        let end = SearchEnd {
            reply,
            entries: self.refreshed.saturating_add(entries),
            references: 0,
            notes: Default::default(),
            persist: None,
        };
        self.completion.complete(out, Ending::search(&end, bytes));
    }
}
