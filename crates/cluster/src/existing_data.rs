//! Starting a cluster from existing data: a single server's data directory (its own, a
//! `larch restore`d backup, or `larch import`'s output) becomes the starting point of a new
//! cluster on the node that bootstraps it. The other first members start empty; when this
//! node leads, they are sent its snapshot (their log is behind its), as a new node is.
//!
//! [`prepare`] runs before the node's store opens as a cluster node's, and before openraft
//! starts. It looks at the data directory
//! ([`larch_store::consensus::existing::inspect`]) and:
//! 1. does nothing for an empty directory or a cluster node's (a bootstrapping node whose
//!    cluster exists already never converts again);
//! 2. refuses a single server's data on a node that does not bootstrap (only the
//!    bootstrapping node may hold existing data), or beside a cluster's state (a vote in
//!    `raft-state`);
//! 3. on the bootstrapping node, opens the store as a single server (its log replayed) and
//!    converts it ([`Store::convert_to_replicated`]) with the consensus state at its LSN
//!    `n` ([`starting_state`]): the last entry is `(term 0, this node, index n - 1)`, one
//!    that no leader appended (every leader's term is at least 1), and the configuration
//!    is every first member, each a voter. Then the store is closed.
//!
//! At its start openraft finds the snapshot's entry beyond the (empty) log and records the
//! log as purged up to it; the node campaigns, the empty members vote for it (their log is
//! behind), and the leader sends them its snapshot. A crash during step 3 leaves the single
//! server's directory, converted again at the next start, or the converted one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use larch_store::consensus::existing::{inspect, DataKind};
use larch_store::consensus::index_of_lsn;
use larch_store::wal::Lsn;
use larch_store::{Store, StoreOptions};
use openraft::{CommittedLeaderId, LogId, Membership, StoredMembership};

use crate::member::Member;
use crate::node::ClusterError;
use crate::raft_state;
use crate::snapshot_state::SnapshotState;
use crate::types::NodeId;

/// What [`prepare`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// Nothing: the directory is empty or a cluster node's.
    Nothing,
    /// A single server's data was made the cluster's starting point.
    Converted {
        /// The LSN of the converted version (the log goes on after it).
        lsn: Lsn,
        /// Its entries.
        entries: usize,
    },
}

/// The refusal of a single server's data on a node that does not bootstrap: one line for
/// the error log, naming what to do.
pub const NOT_BOOTSTRAPPING: &str = "the data directory holds a single server's data: only the node that \
    bootstraps the cluster (cluster.bootstrap = true) may start on existing data; empty this node's data \
    directory (docs/cluster.md, \"Starting from existing data\")";

/// Readies the data directory of `options` (with the node's Raft state in `state_dir`) for
/// node `id`: `bootstrap` holds the first members when this node creates the cluster. See
/// the module documentation.
pub fn prepare(
    options: &StoreOptions,
    state_dir: &Path,
    id: NodeId,
    bootstrap: Option<&BTreeMap<NodeId, Member>>,
) -> Result<Prepared, ClusterError> {
    let refuse = |why: String| Err(ClusterError::ExistingData(why));
    let storage = &*options.storage;
    let kind = inspect(storage, &options.dir).map_err(|e| ClusterError::ExistingData(e.to_string()))?;
    let DataKind::SingleServer { .. } = kind else {
        return Ok(Prepared::Nothing);
    };
    let state =
        raft_state::read(storage, state_dir).map_err(|e| ClusterError::ExistingData(e.to_string()))?;
    if state.vote.is_some() {
        return refuse(format!(
            "the data directory holds a single server's data but {} a cluster's state: restore the data directory \
             from a backup, or empty it to join as a new node",
            state_dir.display()
        ));
    }
    let Some(members) = bootstrap else {
        return refuse(NOT_BOOTSTRAPPING.into());
    };
    if !members.contains_key(&id) {
        return refuse(format!(
            "node {id} is not among the first members (cluster.members)"
        ));
    }
    convert(options, id, members)
}

/// Step 3: the store opened as a single server, converted, closed.
fn convert(
    options: &StoreOptions,
    id: NodeId,
    members: &BTreeMap<NodeId, Member>,
) -> Result<Prepared, ClusterError> {
    let failed = |e: larch_store::StoreError| {
        ClusterError::ExistingData(format!("cannot convert the single server's data: {e}"))
    };
    let mut single = options.clone();
    single.replicated = false;
    single.snapshot_interval = None;
    single.snapshot_after_records = None;
    let (store, _) = Store::open(single).map_err(failed)?;
    let converted = store.convert_to_replicated(|lsn| starting_state(id, lsn, members).encode());
    let entries = store.current().len();
    let closed = store.close(false);
    let lsn = converted.map_err(failed)?;
    closed.map_err(failed)?;
    Ok(Prepared::Converted { lsn, entries })
}

/// The consensus state of the converted version at `lsn`: its last entry is
/// `(term 0, node id, index lsn - 1)`, and every member of `members` votes.
pub fn starting_state(id: NodeId, lsn: Lsn, members: &BTreeMap<NodeId, Member>) -> SnapshotState {
    let index = index_of_lsn(lsn).unwrap_or_default();
    let last = LogId::new(CommittedLeaderId::new(0, id), index);
    let voters: BTreeSet<NodeId> = members.keys().copied().collect();
    SnapshotState {
        last,
        membership: StoredMembership::new(Some(last), Membership::new(vec![voters], members.clone())),
    }
}
