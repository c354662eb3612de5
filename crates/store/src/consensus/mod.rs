//! A store whose log is replicated: the seam between the store's single writer and a
//! consensus engine (the cluster, `larch-cluster`). The store knows nothing of the engine;
//! the engine knows nothing of entries and indexes.
//!
//! How a write goes, in steps:
//! 1. The writer thread takes a batch of jobs, as a single server's does, and asks the
//!    [`Replicator`] whether this node may write ([`Replicator::ready`]: it leads, and has
//!    applied every entry of its log, so its newest version is the cluster's).
//! 2. It runs the jobs on a copy of the newest version. The changes of every job that
//!    changed something become one [`WriteBatch`], stamped with the LSN it must land at
//!    ([`entry`] says why that makes a stale batch harmless): one log entry per batch, as
//!    a single server's group commit makes one fsync per batch.
//! 3. It hands the batch to [`Replicator::replicate`], which proposes it and returns once
//!    it is committed by a majority and applied here, or refused.
//! 4. The writer does not publish its copy: every node, this one included, applies
//!    committed entries through [`Store::apply_replicated`](crate::Store::apply_replicated)
//!    in log order, which publishes a version per call and feeds the change feed. Then each
//!    job's result is reported. The leader's writer leaves its copy as a [`Prepared`]
//!    version: when the entry applied is exactly that batch (appended under the leadership
//!    the writer saw, at the LSN it was computed for, onto the very version it was computed
//!    on), the copy is published instead of replaying the batch.
//! 5. The writer does not wait for a batch's commit before it takes the next: it computes
//!    the next batch on its copy of the version after the one in flight, stamped with the
//!    LSN after it, and proposes it too (at most [`MAX_IN_FLIGHT`] at once); a
//!    thread of its own waits for each batch's end and reports its jobs' results, in
//!    order. A batch computed on one that is not applied cannot land where it was computed
//!    to land (see [`entry`]), so no node applies it; the writer then waits for everything
//!    in flight to end and starts again from the newest version. The prepared copies form
//!    a [`PreparedChain`].
//!
//! The WAL holds the replicated log (the engine's log storage appends, truncates and reads
//! it; see [`entry`] for its payloads), so a committed write is on disk once on a majority
//! of nodes, and nothing is logged twice.
//!
//! Snapshots are written and installed when the engine asks
//! ([`Store::write_replicated_snapshot`](crate::Store::write_replicated_snapshot),
//! [`Store::install_replicated_snapshot`](crate::Store::install_replicated_snapshot)); a
//! single server's data becomes a cluster's starting point through [`existing`]. See
//! `docs/cluster.md`.

pub mod apply;
pub mod entry;
pub mod existing;
pub(crate) mod writer;

pub use writer::MAX_IN_FLIGHT;

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

pub use apply::Applied;
pub use entry::{
    encode_entry_into, encoded_len, index_of_lsn, leadership_of, lsn_of_index, BodyRef, EntryBody,
    EntryError, Leadership, ReplicatedEntry, WriteBatch,
};

use crate::version::Version;
use crate::wal::Lsn;

/// Why a write was not applied by the cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicateError {
    /// This node does not lead the cluster; `leader` names the one that does, when known
    /// (its client address, as configured).
    #[error("this server is not the cluster's leader{}", leader.as_ref().map(|l| format!(" ({l} is)")).unwrap_or_default())]
    NotLeader {
        /// The leader's client address, when known.
        leader: Option<String>,
    },
    /// The write's batch was committed at another place in the log than the one it was
    /// computed for (the leadership changed meanwhile), so no node applied it.
    #[error("the cluster's leadership changed while the write was made; it was not applied, try again")]
    Superseded,
    /// The write could not be committed in time, or the engine failed: it may still be
    /// committed later.
    #[error("the cluster could not commit the write ({0}); it may or may not be applied")]
    Unavailable(String),
}

/// The consensus engine, as the store's writer sees it.
pub trait Replicator: Send + Sync {
    /// Waits until this node may compute writes on its newest version (it leads and has
    /// applied its whole log), or says why it may not. Returns the leadership its entries
    /// are appended under now (the term may move on before the next proposal: a batch
    /// appended under another is then applied like any other node's).
    fn ready(&self) -> Result<Leadership, ReplicateError>;

    /// Proposes `batch` and returns at once; [`Proposal::wait`] waits for its end.
    /// Batches proposed one after another are appended to the log in that order.
    fn propose(&self, batch: WriteBatch) -> Result<Box<dyn Proposal>, ReplicateError>;

    /// Proposes `batch` and waits until it is committed and applied here (its LSN), or
    /// refused.
    fn replicate(&self, batch: WriteBatch) -> Result<Lsn, ReplicateError> {
        self.propose(batch)?.wait()
    }
}

/// A batch proposed to the cluster, not yet known to be committed.
pub trait Proposal: Send {
    /// Waits until the batch is committed and applied here (its LSN), or refused.
    fn wait(self: Box<Self>) -> Result<Lsn, ReplicateError>;
}

/// The leader's writer's copy of the version after one of its batches, left for the apply
/// path (step 4).
pub(crate) struct Prepared {
    /// The leadership the batch is appended under.
    pub leadership: Leadership,
    /// The LSN it was computed to land at.
    pub lsn: Lsn,
    /// The version it was computed on: a published one, or `None` when it was computed on
    /// the version of the batch before it in the [`PreparedChain`] (which was not
    /// published yet: that batch was still being replicated).
    pub base: Option<Arc<Version>>,
    /// The version with the batch applied.
    pub working: Version,
}

/// The leader's prepared versions, in the order their batches were proposed (step 5 of
/// the module documentation: the writer proposes a batch while the one before it is
/// replicated).
#[derive(Default)]
pub(crate) struct PreparedChain {
    /// Oldest first.
    pub queue: VecDeque<Prepared>,
    /// The LSN of the version the apply path last took from the chain, while the version
    /// at that LSN is that one: a batch computed on it (`base: None`) may be taken next.
    pub taken: Option<Lsn>,
    /// How many versions the apply path took from the chain (a figure for the store's
    /// statistics).
    pub taken_total: u64,
}

impl PreparedChain {
    /// Forgets every prepared version (a snapshot installed, a writer starting afresh).
    pub fn clear(&mut self) {
        self.queue.clear();
        self.taken = None;
    }
}

/// Where a replicated store's writer finds its replicator: set once, after the engine is
/// started on the store (which it needs as its state machine). Until then writes fail
/// with [`ReplicateError::Unavailable`].
pub type ReplicatorSlot = Arc<OnceLock<Arc<dyn Replicator>>>;
