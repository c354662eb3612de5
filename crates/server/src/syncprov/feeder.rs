//! The provider's thread: it follows the store's change feed, keeps the session log, and
//! feeds the persistent searches (steps 1, 3 and 5 of [`super`]).
//!
//! 1. It reads the context CSNs of the version its subscription starts at (one pass over
//!    the directory's entryCSN values) and opens the session log at that version's LSN.
//! 2. Each batch: its changes become notes, the log takes them, every registered search
//!    queues them, and every live search gets a pass ([`super::persist`]). Every
//!    [`super::TICK`] without a batch, a pass only.
//! 3. A feed that cannot go on (the thread fell so far behind that the store removed the
//!    log segments it needed, or the log could not be read) is started again at the
//!    current version: the context CSNs are read again, the session log starts over
//!    empty, and every registered search ends with `e-syncRefreshRequired` (they missed
//!    changes); consumers come back with their cookies and get a present phase.
//! 4. When the server shuts down ([`super::SyncProvider::stop`]) or the store closes, the
//!    log closes, every live search ends with `unavailable` (52), and every search is
//!    dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use larch_model::schema::Schema;
use larch_store::{FeedError, FeedSubscription, Version};

use super::log::SessionLog;
use super::note::ChangeNote;
use super::persist::{Pass, PersistContext};
use super::{ProviderState, SyncProvider, TICK};
use crate::syncrepl::cookie::CsnSet;

/// How long the final messages of persistent searches may wait for their connections at
/// shutdown.
const SHUTDOWN_SEND: Duration = Duration::from_secs(1);

/// The thread's body.
pub(crate) fn run(
    provider: Arc<SyncProvider>,
    version: Arc<Version>,
    mut sub: FeedSubscription,
    schema: Arc<Schema>,
    ctx: PersistContext,
) {
    open_log(&provider, &version, &ctx);
    drop(version);
    while !provider.stopping() {
        match sub.recv_timeout(TICK) {
            Ok(Some(batch)) => {
                let notes: Vec<Arc<ChangeNote>> = batch
                    .changes()
                    .iter()
                    .map(|c| Arc::new(ChangeNote::of(c, &schema)))
                    .collect();
                let v = sub.current();
                let at = Instant::now();
                let mut state = provider.lock();
                if let Some(log) = &mut state.log {
                    for note in &notes {
                        log.push(Arc::clone(note));
                    }
                }
                for search in &mut state.searches {
                    search.enqueue(&notes, at);
                }
                pass_all(&mut state, &v, &ctx);
            }
            Ok(None) => {
                let v = sub.current();
                pass_all(&mut provider.lock(), &v, &ctx);
            }
            Err(FeedError::Closed) => break,
            Err(e) => {
                eprintln!(
                    "larch: sync provider: the change feed cannot go on ({e}); the session log starts \
                     again and every persistent search ends with e-syncRefreshRequired"
                );
                let v = sub.restart_at_current();
                open_log(&provider, &v, &ctx);
                for search in &mut provider.lock().searches {
                    search.overflowed = true;
                    search.queue.clear();
                }
            }
        }
    }
    shut_down(&provider);
}

/// Step 4: the log closes; every live search ends with `unavailable`, its final message
/// sent if its connection takes it within [`SHUTDOWN_SEND`]; then every search is dropped.
fn shut_down(provider: &SyncProvider) {
    let mut state = provider.lock();
    state.log = None;
    state.searches.retain_mut(|s| s.shut_down() == Pass::Keep);
    drop(state);
    let deadline = Instant::now() + SHUTDOWN_SEND;
    while Instant::now() < deadline && !provider.lock().searches.is_empty() {
        std::thread::sleep(TICK);
        let mut state = provider.lock();
        state.searches.retain_mut(|s| s.shut_down() == Pass::Keep);
    }
    let searches = std::mem::take(&mut provider.lock().searches);
    drop(searches);
}

/// Step 1 (and 3): the session log at version `v`.
fn open_log(provider: &SyncProvider, v: &Version, ctx: &PersistContext) {
    let context = CsnSet::of_entries(v, v.entries().map(|e| e.id), ctx.optypes.entry_csn);
    provider.lock().log = Some(SessionLog::new(v.lsn(), context, provider.capacity()));
}

/// A pass over every search; those that are over are dropped (outside the loop's borrow,
/// still under the lock: a live search's registration is disarmed, so dropping it takes
/// no lock).
fn pass_all(state: &mut ProviderState, v: &Version, ctx: &PersistContext) {
    state.searches.retain_mut(|s| s.pass(v, ctx) == Pass::Keep);
}
