//! openraft's state machine: the store. Committed entries are applied through
//! [`Store::apply_replicated`], which publishes a version per call and feeds the change
//! feed; the last applied log ID and the newest configuration are kept here.
//!
//! Snapshots are not built yet: the cluster is configured never to take one
//! ([`crate::node::raft_config`]), so no log is purged and no follower is sent one; a node
//! starts from an empty directory and replays its log. See `docs/cluster.md`.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use larch_store::consensus::Applied;
use larch_store::Store;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    AnyError, EntryPayload, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};

use crate::types::{lsn_of, to_replicated, Entry, Larch, Member, NodeId};

/// What has been applied.
#[derive(Debug, Clone, Default)]
struct AppliedState {
    last: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, Member>,
}

/// The state machine; clones share it.
#[derive(Clone)]
pub struct StateMachine {
    store: Store,
    applied: Arc<Mutex<AppliedState>>,
}

impl StateMachine {
    /// The state machine over `store` (a replicated store that holds nothing yet).
    pub fn new(store: Store) -> StateMachine {
        StateMachine {
            store,
            applied: Arc::default(),
        }
    }

    /// The last applied log ID.
    pub fn last_applied(&self) -> Option<LogId<NodeId>> {
        self.applied.lock().unwrap_or_else(|e| e.into_inner()).last
    }
}

fn no_snapshots() -> StorageError<NodeId> {
    StorageIOError::read_snapshot(
        None,
        AnyError::error("cluster snapshots are not built yet: this cluster never takes or installs one"),
    )
    .into()
}

impl RaftSnapshotBuilder<Larch> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Larch>, StorageError<NodeId>> {
        Err(no_snapshots())
    }
}

impl RaftStateMachine<Larch> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, Member>), StorageError<NodeId>> {
        let applied = self.applied.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Ok((applied.last, applied.membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let Some(last) = entries.last().map(|e| e.log_id) else {
            return Ok(Vec::new());
        };
        let store = self.store.clone();
        let applied = Arc::clone(&self.applied);
        tokio::task::spawn_blocking(move || {
            let replicated: Vec<_> = entries
                .iter()
                .map(|e| (lsn_of(&e.log_id), to_replicated(e)))
                .collect();
            let done = store
                .apply_replicated(replicated.iter().map(|(lsn, e)| (*lsn, e)))
                .map_err(|e| StorageIOError::apply(last, AnyError::error(e.to_string())))?;
            let mut state = applied.lock().unwrap_or_else(|e| e.into_inner());
            for entry in &entries {
                if let EntryPayload::Membership(m) = &entry.payload {
                    state.membership = StoredMembership::new(Some(entry.log_id), m.clone());
                }
            }
            state.last = Some(last);
            Ok(done)
        })
        .await
        .map_err(|e| StorageIOError::apply(last, AnyError::error(e.to_string())))?
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Err(no_snapshots())
    }

    async fn install_snapshot(
        &mut self,
        _meta: &SnapshotMeta<NodeId, Member>,
        _snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        Err(no_snapshots())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Larch>>, StorageError<NodeId>> {
        Ok(None)
    }
}
