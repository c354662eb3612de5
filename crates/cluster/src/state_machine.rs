//! openraft's state machine: the store. Committed entries are applied through
//! [`Store::apply_replicated`], which publishes a version per call and feeds the change
//! feed; the last applied log ID and the newest configuration are kept here.
//!
//! Snapshots are the store's own snapshot files, with the consensus state at their LSN
//! ([`SnapshotState`]) in their header:
//! - **building** (openraft asks after [`crate::Timing::snapshot_after_entries`] entries):
//!   the current version and the applied state are taken together (under the lock
//!   [`StateMachine::apply`] holds while it publishes), then the version is written paced,
//!   beside the applies that go on;
//! - **sending**: the newest snapshot file is opened and openraft streams it in chunks;
//! - **receiving**: the chunks are written into [`RECEIVING_FILE`] in the node's state
//!   directory, then the store installs the file ([`Store::install_replicated_snapshot`]:
//!   checked whole, renamed into the snapshot directory, its version published), and
//!   openraft purges the log it covers;
//! - **starting**: the store loaded its newest snapshot; its header says which entry it
//!   holds, and openraft applies the committed entries after it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use larch_store::consensus::{Applied, ReplicatedEntry};
use larch_store::wal::Lsn;
use larch_store::{ReplicatedSnapshot, Store};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    AnyError, EntryPayload, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StorageIOError, StoredMembership,
};
use tokio::io::AsyncWriteExt;

use crate::snapshot_file::SnapshotFile;
use crate::snapshot_state::SnapshotState;
use crate::types::{into_replicated, lsn_of, Entry, Larch, Member, NodeId};

/// The file a snapshot sent by the leader is written into, in the node's state directory
/// (on the data directory's file system, so the store renames it into place).
pub const RECEIVING_FILE: &str = "snapshot.receiving";

/// What has been applied.
#[derive(Debug, Clone, Default)]
struct AppliedState {
    last: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, Member>,
}

/// Entries whose writes take at most this many octets are applied on the engine's state
/// machine task: a batch's replay is short CPU work with no I/O (the leader's is a publish of
/// its writer's version), and a hop to a blocking thread and back would cost more than it
/// spares the runtime. Larger ones (a subtree delete, an import through LDAP) go to a
/// blocking thread, so that the runtime's workers keep serving.
pub const INLINE_APPLY_OCTETS: usize = 256 << 10;

/// The state machine; clones share it.
#[derive(Clone)]
pub struct StateMachine {
    store: Store,
    /// Held while a version is published, so that a snapshot's version and state match.
    applied: Arc<Mutex<AppliedState>>,
    /// The LSN of the last applied entry, readable without the lock.
    applied_lsn: Arc<AtomicU64>,
    receiving: PathBuf,
}

fn lock(m: &Mutex<AppliedState>) -> MutexGuard<'_, AppliedState> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn snapshot_err(verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError<NodeId> {
    StorageIOError::new(ErrorSubject::Snapshot(None), verb, AnyError::error(e.to_string())).into()
}

impl StateMachine {
    /// Applies `entries` to the store (the last is `last`, a configuration among them
    /// `membership`) and records how far it has applied, under the lock that keeps a
    /// snapshot's version and state together.
    fn publish(
        &self,
        entries: &[(Lsn, ReplicatedEntry)],
        membership: Option<StoredMembership<NodeId, Member>>,
        last: LogId<NodeId>,
    ) -> Result<Vec<Applied>, StorageError<NodeId>> {
        let mut state = lock(&self.applied);
        let done = self
            .store
            .apply_replicated(entries.iter().map(|(lsn, e)| (*lsn, e)))
            .map_err(|e| StorageIOError::apply(last, AnyError::error(e.to_string())))?;
        if let Some(m) = membership {
            state.membership = m;
        }
        state.last = Some(last);
        self.applied_lsn.store(lsn_of(&last), Ordering::Release);
        Ok(done)
    }

    /// The state machine over `store` (a replicated store, as opened: holding its newest
    /// snapshot's version or nothing), receiving snapshots into `state_dir`.
    pub fn new(store: Store, state_dir: &Path) -> Result<StateMachine, StorageError<NodeId>> {
        let mut applied = AppliedState::default();
        let lsn = store.current().lsn();
        if lsn > 0 {
            let state = newest_state(&store)?
                .filter(|(snapshot, _, _)| snapshot.lsn == lsn)
                .ok_or_else(|| {
                    snapshot_err(
                        ErrorVerb::Read,
                        format!("the store holds LSN {lsn} but no snapshot at it says which entry that is"),
                    )
                })?
                .2;
            applied.last = Some(state.last);
            applied.membership = state.membership;
        }
        Ok(StateMachine {
            store,
            applied: Arc::new(Mutex::new(applied)),
            applied_lsn: Arc::new(AtomicU64::new(lsn)),
            receiving: state_dir.join(RECEIVING_FILE),
        })
    }

    /// Waits until this node's own log has `last` on disk. A leader's entry can be
    /// committed by the followers before the leader's log has flushed it (the leader does
    /// not wait for its flush before replicating, vendor/openraft/LARCH.md); nothing is
    /// published before it is durable here too, so a version, a snapshot and the change
    /// feed never get ahead of the node's own log. A follower's entries, and a leader's
    /// whose flush was quicker than the followers' answers, are there already.
    async fn local_log_holds(&self, last: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let wal = self.store.wal();
        let lsn = lsn_of(&last);
        if wal.last_lsn() >= lsn {
            return Ok(());
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        wal.on_acknowledged(
            lsn,
            Box::new(move |flushed| {
                let _ = tx.send(flushed);
            }),
        );
        let flushed = rx.await.map_err(|_| {
            StorageIOError::apply(
                last,
                AnyError::error("the log stopped before the entry was flushed"),
            )
        })?;
        flushed.map_err(|e| StorageIOError::apply(last, AnyError::error(e.to_string())).into())
    }

    /// The LSN of the last applied entry.
    pub fn applied_lsn(&self) -> u64 {
        self.applied_lsn.load(Ordering::Acquire)
    }

    /// The snapshot at the current version, written unless the newest is at it already
    /// (on the calling thread: a blocking one).
    fn write_snapshot(&self) -> Result<Snapshot<Larch>, StorageError<NodeId>> {
        let (version, state) = {
            let applied = lock(&self.applied);
            let Some(last) = applied.last else {
                return Err(snapshot_err(ErrorVerb::Write, "nothing applied yet"));
            };
            let state = SnapshotState {
                last,
                membership: applied.membership.clone(),
            };
            (self.store.current(), state)
        };
        if version.lsn() != lsn_of(&state.last) {
            return Err(snapshot_err(
                ErrorVerb::Write,
                format!(
                    "the published version is at LSN {} but the last applied entry at LSN {}",
                    version.lsn(),
                    lsn_of(&state.last)
                ),
            ));
        }
        let (written, reader) = self
            .store
            .write_replicated_snapshot(&version, &state.encode())
            .map_err(|e| snapshot_err(ErrorVerb::Write, e))?;
        drop(version);
        let file = SnapshotFile::reading(self.store.storage(), &written.path, reader)
            .map_err(|e| snapshot_err(ErrorVerb::Read, e))?;
        Ok(Snapshot {
            meta: meta_of(&state),
            snapshot: Box::new(file),
        })
    }
}

/// The store's newest snapshot and the state its header carries.
fn newest_state(
    store: &Store,
) -> Result<Option<(ReplicatedSnapshot, SnapshotFile, SnapshotState)>, StorageError<NodeId>> {
    let Some((snapshot, reader)) = store
        .newest_replicated_snapshot()
        .map_err(|e| snapshot_err(ErrorVerb::Read, e))?
    else {
        return Ok(None);
    };
    let state = SnapshotState::decode(&snapshot.consensus)
        .map_err(|e| snapshot_err(ErrorVerb::Read, format!("{}: {e}", snapshot.path.display())))?;
    let file = SnapshotFile::reading(store.storage(), &snapshot.path, reader)
        .map_err(|e| snapshot_err(ErrorVerb::Read, e))?;
    Ok(Some((snapshot, file, state)))
}

/// openraft's description of a snapshot with `state`.
fn meta_of(state: &SnapshotState) -> SnapshotMeta<NodeId, Member> {
    let last = state.last;
    SnapshotMeta {
        last_log_id: Some(last),
        last_membership: state.membership.clone(),
        snapshot_id: format!(
            "{}-{}-{}",
            last.leader_id.term, last.leader_id.node_id, last.index
        ),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StorageError<NodeId>> + Send + 'static,
) -> Result<T, StorageError<NodeId>> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| snapshot_err(ErrorVerb::Write, e))?
}

impl RaftSnapshotBuilder<Larch> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Larch>, StorageError<NodeId>> {
        let this = self.clone();
        blocking(move || this.write_snapshot()).await
    }
}

impl RaftStateMachine<Larch> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, Member>), StorageError<NodeId>> {
        let applied = lock(&self.applied).clone();
        Ok((applied.last, applied.membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        // The entries' writes are taken, not copied: openraft hands them over.
        let mut last = None;
        let mut membership = None;
        let mut octets = 0;
        let replicated: Vec<_> = entries
            .into_iter()
            .map(|e| {
                if let EntryPayload::Membership(m) = &e.payload {
                    membership = Some(StoredMembership::new(Some(e.log_id), m.clone()));
                }
                if let EntryPayload::Normal(batch) = &e.payload {
                    octets += batch.writes.iter().flatten().map(Vec::len).sum::<usize>();
                }
                last = Some(e.log_id);
                (lsn_of(&e.log_id), into_replicated(e))
            })
            .collect();
        let Some(last) = last else {
            return Ok(Vec::new());
        };
        self.local_log_holds(last).await?;
        let this = self.clone();
        let publish = move || this.publish(&replicated, membership, last);
        if octets <= INLINE_APPLY_OCTETS {
            return publish();
        }
        tokio::task::spawn_blocking(publish)
            .await
            .map_err(|e| StorageIOError::apply(last, AnyError::error(e.to_string())))?
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotFile>, StorageError<NodeId>> {
        let file = SnapshotFile::create(self.store.storage(), &self.receiving)
            .map_err(|e| snapshot_err(ErrorVerb::Write, format!("{}: {e}", self.receiving.display())))?;
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Member>,
        mut snapshot: Box<SnapshotFile>,
    ) -> Result<(), StorageError<NodeId>> {
        snapshot
            .flush()
            .await
            .map_err(|e| snapshot_err(ErrorVerb::Write, e))?;
        drop(snapshot);
        let expected = meta.last_log_id;
        let this = self.clone();
        blocking(move || {
            let mut applied = lock(&this.applied);
            let installed = this
                .store
                .install_replicated_snapshot(&this.receiving)
                .map_err(|e| snapshot_err(ErrorVerb::Read, e))?;
            let state =
                SnapshotState::decode(&installed.consensus).map_err(|e| snapshot_err(ErrorVerb::Read, e))?;
            // The file names the entry it holds; openraft's description must agree.
            if Some(state.last) != expected {
                return Err(snapshot_err(
                    ErrorVerb::Read,
                    format!(
                        "the snapshot holds entry {} but was sent as {expected:?}",
                        state.last
                    ),
                ));
            }
            applied.last = Some(state.last);
            applied.membership = state.membership;
            this.applied_lsn.store(installed.lsn, Ordering::Release);
            Ok(())
        })
        .await
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Larch>>, StorageError<NodeId>> {
        let store = self.store.clone();
        blocking(move || {
            // Open, the file stays readable to the end even if a newer one replaces it
            // (on the real file system).
            let Some((_, file, state)) = newest_state(&store)? else {
                return Ok(None);
            };
            Ok(Some(Snapshot {
                meta: meta_of(&state),
                snapshot: Box::new(file),
            }))
        })
        .await
    }
}
