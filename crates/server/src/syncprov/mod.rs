//! The content synchronization provider (RFC 4533, OpenLDAP's `syncprov`): what lets
//! replicas (OpenLDAP's syncrepl, Larch's own consumer) and clients that follow a
//! directory (SSSD, Keycloak, identity connectors) stay in step with this server.
//!
//! Parts, one file each:
//! - cookies in OpenLDAP's form and the CSN sets they carry are the consumer's
//!   ([`crate::syncrepl::cookie`]), one reading and writing for both sides;
//! - [`note`]: what is kept of one committed change;
//! - [`log`]: the session log of recent changes and the context CSNs, which decide how a
//!   cookie is answered (full, present phase, or delta);
//! - [`persist`]: persistent searches and how a change becomes a message;
//! - [`feeder`]: the one thread that follows the store's change feed, keeps the log and
//!   feeds every persistent search;
//! - the refresh itself is a search: [`crate::search::sync`].
//!
//! # Protocol
//! 1. At startup, [`SyncProvider::start`] subscribes to the store's change feed at the
//!    current version and starts the thread, which reads the directory's context CSNs
//!    (the largest `entryCSN` per server ID) from that version, then opens the session
//!    log. Until then a synchronization request is answered `busy` (51).
//! 2. A search with the Sync Request control calls [`SyncProvider::begin`]: under the
//!    provider's lock, the log plans the refresh from the cookie, the cookie to send at
//!    its end is the log's context, and a refreshAndPersist search is registered (it
//!    receives every change the log takes after this point). The refresh then reads a
//!    version taken after this call, so it misses nothing.
//! 3. For each batch the feed delivers, the thread notes its changes, appends them to the
//!    log, queues them for every registered search and passes over the live ones
//!    ([`persist`]), all under the lock; every [`TICK`] without a batch it passes over
//!    them again (to send what a full connection could not take, and to end abandoned
//!    searches).
//! 4. When its refresh is over, a search goes live ([`SyncProvider::go_live`]).
//! 5. When the store closes, the feed ends and the thread drops every search (their
//!    connections are closing).
//!
//! # Invariants
//! - A registered search receives the note of every change committed after its
//!   registration, in commit order, or ends with `e-syncRefreshRequired`.
//! - The writer never waits for the provider (the feed's own guarantee), and the provider
//!   never waits for a client ([`persist`]).
//! - The thread holds no handle that keeps the store open: it reads versions through its
//!   feed subscription.

pub(crate) mod feeder;
pub mod log;
pub mod note;
pub(crate) mod persist;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use larch_model::schema::Schema;
use larch_proto::ResultCode;
use larch_store::Store;

use self::log::{RefreshPlan, SessionLog};
pub use self::persist::{Follower, Lag};
use self::persist::{Live, PersistContext, PersistSearch, PersistSink, Persistent, Stage};
use crate::acl::AccessRules;
use crate::error::OpError;
use crate::opattrs::OperationalTypes;
use crate::syncrepl::cookie::CsnSet;

/// How often the thread passes over the persistent searches when no change comes: the
/// longest a message waits after its connection has room again, and after an Abandon.
pub const TICK: Duration = Duration::from_millis(50);

/// The synchronization provider of a directory (see the module documentation).
pub struct SyncProvider {
    sid: u16,
    capacity: usize,
    state: Mutex<ProviderState>,
    stop: AtomicBool,
}

impl std::fmt::Debug for SyncProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncProvider")
            .field("sid", &self.sid)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// What the lock guards.
pub(crate) struct ProviderState {
    /// `None` until the thread has read the context CSNs (step 1).
    pub log: Option<SessionLog>,
    pub searches: Vec<Persistent>,
    next_id: u64,
}

/// How a refresh begins (step 2).
#[derive(Debug)]
pub struct Begun {
    /// How the cookie is answered.
    pub plan: RefreshPlan,
    /// The CSNs of the cookie sent at the end of the refresh.
    pub context: CsnSet,
    /// The registration of a refreshAndPersist search.
    pub registration: Option<Registration>,
}

/// A persistent search's place with the provider. Dropped before its search goes live (a
/// refresh that failed or was abandoned), it unregisters the search.
pub struct Registration {
    provider: Arc<SyncProvider>,
    id: u64,
    armed: bool,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("id", &self.id).finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if self.armed {
            self.provider.lock().searches.retain(|s| s.id != self.id);
        }
    }
}

/// What the provider reports (cn=Monitor, `/metrics`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderStatus {
    /// The session log is open (step 1 is over).
    pub ready: bool,
    /// Changes in the session log.
    pub session_log: usize,
    /// The context CSNs, `;`-separated.
    pub context_csn: String,
    /// refreshAndPersist searches still in their refresh.
    pub refreshing: usize,
    /// Live persistent searches.
    pub persistent: usize,
    /// Every registered persistent search, oldest first.
    pub followers: Vec<FollowerStatus>,
}

/// One persistent search, as monitoring shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerStatus {
    /// The provider's number for the search.
    pub id: u64,
    /// Who follows.
    pub who: Follower,
    /// `refreshing`, `persisting` or `closing`.
    pub stage: &'static str,
    /// Entries sent since the refresh ended.
    pub changes_sent: u64,
    /// How far it is behind.
    pub lag: Lag,
    /// The CSN of the newest change its connection has taken, once live.
    pub through_csn: Option<String>,
}

impl SyncProvider {
    /// A provider for server ID `sid` whose session log keeps `capacity` changes; not
    /// started.
    pub fn new(sid: u16, capacity: usize) -> Arc<SyncProvider> {
        Arc::new(SyncProvider {
            sid,
            capacity,
            state: Mutex::new(ProviderState {
                log: None,
                searches: Vec::new(),
                next_id: 1,
            }),
            stop: AtomicBool::new(false),
        })
    }

    /// Step 1: subscribes to `store`'s change feed and starts the thread.
    pub fn start(
        self: &Arc<Self>,
        store: &Store,
        schema: Arc<Schema>,
        rules: Arc<AccessRules>,
        optypes: OperationalTypes,
    ) -> io::Result<()> {
        let (version, sub) = store
            .subscribe_at_current()
            .map_err(|e| io::Error::other(format!("cannot follow the store's changes: {e}")))?;
        let ctx = PersistContext {
            rules,
            optypes,
            sid: self.sid,
        };
        let provider = Arc::clone(self);
        std::thread::Builder::new()
            .name("larch-syncprov".into())
            .spawn(move || feeder::run(provider, version, sub, schema, ctx))?;
        Ok(())
    }

    /// Asks the thread to end every persistent search and stop, at its next pass (it also
    /// stops when the store closes): the server is shutting down.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// The server ID cookies name.
    pub fn sid(&self) -> u16 {
        self.sid
    }

    /// The session log's capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, ProviderState> {
        // Every update is a push, a removal or a pass that leaves each search whole; a
        // poisoned lock (a pass that panicked) still guards consistent data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Step 2: plans the refresh of a consumer whose cookie holds `cookie`, and registers
    /// it when it persists (`who`: for monitoring).
    pub fn begin(self: &Arc<Self>, cookie: &CsnSet, persist: bool, who: Follower) -> Result<Begun, OpError> {
        let mut state = self.lock();
        let Some(log) = &state.log else {
            return Err(OpError::new(
                ResultCode::BUSY,
                "the synchronization provider is starting (reading the directory's context CSNs); try again",
            ));
        };
        let plan = log.plan(cookie);
        let context = log.context().clone();
        let registration = persist.then(|| {
            let id = state.next_id;
            state.next_id += 1;
            state.searches.push(Persistent::refreshing(id, who));
            Registration {
                provider: Arc::clone(self),
                id,
                armed: true,
            }
        });
        Ok(Begun {
            plan,
            context,
            registration,
        })
    }

    /// Step 4: the refresh of `registration`'s search is over: `search` is what decides
    /// its messages from now on, `backlog` what its job could not send yet. A search no
    /// longer registered (the provider fell behind the log and dropped every search, or
    /// the server is shutting down) ends at once.
    pub(crate) fn go_live(
        &self,
        mut registration: Registration,
        search: Box<dyn PersistSearch>,
        mut sink: Box<dyn PersistSink>,
        backlog: Vec<u8>,
    ) {
        registration.armed = false;
        let id = registration.id;
        let mut state = self.lock();
        let found = state.searches.iter_mut().find(|s| s.id == id);
        let Some(search_entry) = found.filter(|_| !self.stopping()) else {
            drop(state);
            let mut out = backlog;
            out.clear();
            let e = if self.stopping() {
                OpError::new(
                    ResultCode::UNAVAILABLE,
                    "the server is shutting down; resume with the last cookie",
                )
            } else {
                OpError::new(
                    ResultCode::E_SYNC_REFRESH_REQUIRED,
                    "the provider restarted its change log during the refresh; refresh again",
                )
            };
            let reply = crate::outcome::Reply::from(e);
            sink.finish(Some(reply), 0, 0, &mut out);
            let _ = sink.offer(out);
            return;
        };
        search_entry.stage = Stage::Live(Box::new(Live::new(search, sink, backlog)));
    }

    /// What the provider reports.
    pub fn status(&self) -> ProviderStatus {
        let state = self.lock();
        let live = state
            .searches
            .iter()
            .filter(|s| matches!(s.stage, Stage::Live(_)))
            .count();
        ProviderStatus {
            ready: state.log.is_some(),
            session_log: state.log.as_ref().map_or(0, SessionLog::len),
            context_csn: state
                .log
                .as_ref()
                .map_or_else(String::new, |l| l.context().joined()),
            refreshing: state.searches.len() - live,
            persistent: live,
            followers: followers(&state.searches, Instant::now()),
        }
    }
}

/// What monitoring shows of each search.
fn followers(searches: &[Persistent], now: Instant) -> Vec<FollowerStatus> {
    searches
        .iter()
        .map(|s| {
            let (changes_sent, through_csn) = match &s.stage {
                Stage::Live(live) => (u64::from(live.entries), live.through_csn.clone()),
                Stage::Refreshing | Stage::Closing(..) => (0, None),
            };
            FollowerStatus {
                id: s.id,
                who: s.who.clone(),
                stage: s.stage_name(),
                changes_sent,
                lag: s.lag(now),
                through_csn,
            }
        })
        .collect()
}
