//! A cluster node: openraft started on a replicated store, and the store's writer's
//! [`Replicator`] (how the writer proposes writes and waits for them to be applied).
//! Membership changes are [`crate::membership`]'s; a follower's referrals name the leader's
//! LDAP URL as the cluster's configuration records it ([`Member`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use larch_store::consensus::{Applied, Leadership, Proposal, ReplicateError, Replicator, WriteBatch};
use larch_store::wal::Lsn;
use larch_store::Store;
use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::metrics::RaftServerMetrics;
use openraft::network::RaftNetworkFactory;
use openraft::{Config, Raft, RaftMetrics, ServerState, SnapshotPolicy};
use tokio::runtime::Handle;

use crate::log_store::LogStore;
use crate::member::Member;
use crate::membership::{self, MembershipError};
use crate::network::ReadIndex;
use crate::read_index::ReadBarrier;
use crate::state_machine::StateMachine;
use crate::types::{lsn_of, Larch, NodeId};

/// Why a node could not start or act.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The store is not a replicated one, or has a replicator already.
    #[error("the store is not a replicated store, or another cluster node runs on it")]
    NotReplicated,
    /// openraft refused its configuration.
    #[error("bad cluster configuration: {0}")]
    Config(String),
    /// The node is a member of a cluster already (initialize refused).
    #[error("this node is already a member of a cluster")]
    AlreadyInitialized,
    /// openraft failed to start or act.
    #[error("cluster: {0}")]
    Raft(String),
    /// The cluster cannot answer now (no leader, no majority, or too slow).
    #[error("{0}")]
    Unavailable(String),
    /// The data directory holds data this node cannot start a cluster from, or converting
    /// it failed ([`crate::existing_data`]).
    #[error("{0}")]
    ExistingData(String),
}

/// Timing of the consensus engine.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How often the leader sends heartbeats.
    pub heartbeat: Duration,
    /// A follower that hears nothing for a random time in this range stands for election.
    pub election_min: Duration,
    /// See `election_min`.
    pub election_max: Duration,
    /// How long the writer waits for a write to be committed before answering
    /// `unavailable`; also how long a membership change waits for each configuration.
    pub commit_timeout: Duration,
    /// A node writes a snapshot after this many entries were applied since its last one,
    /// and then purges its log up to `log_kept_after_snapshot` entries before it.
    pub snapshot_after_entries: u64,
    /// Entries of the log kept before a node's newest snapshot: a follower that is behind
    /// by fewer catches up from the log, one further behind is sent the snapshot.
    pub log_kept_after_snapshot: u64,
    /// A node being added that takes no entry of the log for this long is not added
    /// ([`crate::membership`]).
    pub catch_up_stall: Duration,
}

/// Default of [`Timing::log_kept_after_snapshot`].
pub const DEFAULT_LOG_KEPT_AFTER_SNAPSHOT: u64 = 10_000;

/// Default of [`Timing::snapshot_after_entries`]: an entry holds one batch of writes, up to
/// a few thousand under load, so this is some millions of writes at most, about as many
/// as a single server's log holds before its snapshot
/// ([`larch_store::DEFAULT_SNAPSHOT_AFTER_RECORDS`]).
pub const DEFAULT_SNAPSHOT_AFTER_ENTRIES: u64 = 100_000;

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            heartbeat: Duration::from_millis(100),
            election_min: Duration::from_millis(400),
            election_max: Duration::from_millis(800),
            commit_timeout: Duration::from_secs(10),
            snapshot_after_entries: DEFAULT_SNAPSHOT_AFTER_ENTRIES,
            log_kept_after_snapshot: DEFAULT_LOG_KEPT_AFTER_SNAPSHOT,
            catch_up_stall: Duration::from_secs(15),
        }
    }
}

/// openraft's configuration from Larch's timing (snapshots: see
/// [`crate::state_machine`]).
pub fn raft_config(timing: &Timing) -> Result<Config, ClusterError> {
    let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    Config {
        cluster_name: "larch".into(),
        heartbeat_interval: millis(timing.heartbeat),
        election_timeout_min: millis(timing.election_min),
        election_timeout_max: millis(timing.election_max),
        snapshot_policy: SnapshotPolicy::LogsSinceLast(timing.snapshot_after_entries.max(1)),
        max_in_snapshot_log_to_keep: timing.log_kept_after_snapshot,
        install_snapshot_timeout: millis(crate::network::SNAPSHOT_TRANSFER_CEILING),
        ..Config::default()
    }
    .validate()
    .map_err(|e| ClusterError::Config(e.to_string()))
}

/// One running node.
pub struct ClusterNode {
    id: NodeId,
    raft: Raft<Larch>,
    state_machine: StateMachine,
    read_barrier: ReadBarrier,
    on_lead: Arc<OnceLock<LeadHook>>,
    timing: Timing,
    /// Held while a membership change runs: one at a time.
    changing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ClusterNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterNode")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What a node does when it starts to lead, before its first write of the term
/// ([`ClusterNode::set_on_lead`]).
pub type LeadHook = Arc<dyn Fn(Leadership) + Send + Sync>;

impl ClusterNode {
    /// Starts node `id` on `store` (opened with `replicated` set) with `network`, its Raft
    /// state in `state_dir`, and makes it the store's replicator. A data directory that
    /// held a single server's data was readied before the store opened
    /// ([`crate::existing_data::prepare`]): this refuses such data.
    pub async fn start<N>(
        id: NodeId,
        store: &Store,
        state_dir: &Path,
        network: N,
        timing: Timing,
    ) -> Result<ClusterNode, ClusterError>
    where
        N: RaftNetworkFactory<Larch> + ReadIndex + Clone,
    {
        let reads: Arc<dyn ReadIndex> = Arc::new(network.clone());
        let log = LogStore::open(
            Arc::clone(store.wal()),
            Arc::clone(store.storage()),
            store.wal_dir().to_path_buf(),
            state_dir.to_path_buf(),
        )
        .map_err(|e| ClusterError::Raft(e.to_string()))?;
        let state_machine =
            StateMachine::new(store.clone(), state_dir).map_err(|e| ClusterError::Raft(e.to_string()))?;
        let config = Arc::new(raft_config(&timing)?);
        let raft = Raft::new(id, config, network, log, state_machine.clone())
            .await
            .map_err(|e| ClusterError::Raft(e.to_string()))?;
        let on_lead = Arc::new(OnceLock::new());
        let proposer = Proposer {
            id,
            raft: raft.clone(),
            handle: Handle::current(),
            timeout: timing.commit_timeout,
            on_lead: Arc::clone(&on_lead),
            led_term: AtomicU64::new(0),
        };
        if !store.set_replicator(Arc::new(proposer)) {
            let _ = raft.shutdown().await;
            return Err(ClusterError::NotReplicated);
        }
        Ok(ClusterNode {
            id,
            read_barrier: ReadBarrier::new(id, raft.clone(), reads, timing.commit_timeout),
            raft,
            state_machine,
            on_lead,
            timing,
            changing: tokio::sync::Mutex::new(()),
        })
    }

    /// Makes a new cluster of `members` (on one node, once, before any other call).
    pub async fn initialize(&self, members: BTreeMap<NodeId, Member>) -> Result<(), ClusterError> {
        match self.raft.initialize(members).await {
            Ok(()) => Ok(()),
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Err(ClusterError::AlreadyInitialized),
            Err(e) => Err(ClusterError::Raft(e.to_string())),
        }
    }

    /// On the leader: adds node `id`, reached at `member`, as a learner, waits until it
    /// has caught up with the log, then makes it a voter ([`crate::membership`]). Returns
    /// once the new configuration is committed.
    pub async fn add_node(&self, id: NodeId, member: Member) -> Result<(), MembershipError> {
        let _one = self.one_change()?;
        let t = &self.timing;
        membership::add_node(
            &self.raft,
            self.id,
            id,
            member,
            t.commit_timeout,
            t.catch_up_stall,
        )
        .await
    }

    /// On the leader: removes node `id` (which may be down) from the cluster
    /// ([`crate::membership`]). Returns once the configuration without it is committed.
    pub async fn remove_node(&self, id: NodeId) -> Result<(), MembershipError> {
        let _one = self.one_change()?;
        membership::remove_node(&self.raft, self.id, id, self.timing.commit_timeout).await
    }

    fn one_change(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, MembershipError> {
        self.changing.try_lock().map_err(|_| {
            MembershipError::InProgress("another membership change is under way on this node".into())
        })
    }

    /// Sets what this node does each time it starts to lead: `hook` runs on the store's
    /// writer thread before the first write of each term it leads, once the node has
    /// applied every entry of the terms before (a new leader raising its CSN generator to
    /// its predecessors' last CSN, say). `false` if a hook was set already.
    pub fn set_on_lead(&self, hook: LeadHook) -> bool {
        self.on_lead.set(hook).is_ok()
    }

    /// The leader this node follows: its number when another node leads, `None` when
    /// this node leads or knows of no leader (an election). Cheap: no copy of the
    /// engine's metrics.
    pub fn leader_elsewhere(&self) -> Option<NodeId> {
        self.raft
            .metrics()
            .borrow()
            .current_leader
            .filter(|l| *l != self.id)
    }

    /// Where clients reach node `id`, as the cluster's configuration records it.
    pub fn client_url(&self, id: NodeId) -> Option<String> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        let member = metrics.membership_config.membership().get_node(&id)?;
        member.client_url().map(str::to_string)
    }

    /// This node's number.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The engine (for the transport, and for tests).
    pub fn raft(&self) -> &Raft<Larch> {
        &self.raft
    }

    /// What the engine reports now.
    pub fn metrics(&self) -> RaftMetrics<NodeId, Member> {
        self.raft.metrics().borrow().clone()
    }

    /// This node's view of the cluster, in plain terms.
    pub fn status(&self) -> crate::status::Status {
        crate::status::Status::from_metrics(&self.raft.metrics().borrow())
    }

    /// Returns once this node's store holds every write acknowledged (by any node) before
    /// the call: a linearizable read may then read it ([`crate::read_index`]). Fails when
    /// no leader confirms itself with a majority, or this node does not catch up, within
    /// the commit timeout.
    pub async fn read_barrier(&self) -> Result<(), ClusterError> {
        self.read_barrier.wait().await.map_err(ClusterError::Unavailable)
    }

    /// Returns once this node has applied the entry at `lsn` (a write the leader said it
    /// applied), or fails after `timeout`.
    pub async fn wait_applied(&self, lsn: Lsn, timeout: Duration) -> Result<(), ClusterError> {
        if lsn == 0 || self.applied_lsn() >= lsn {
            return Ok(());
        }
        self.raft
            .wait(Some(timeout))
            .applied_index_at_least(Some(lsn - 1), "a write the leader applied")
            .await
            .map(|_| ())
            .map_err(|e| ClusterError::Unavailable(e.to_string()))
    }

    /// The LSN of the last entry applied to the store.
    pub fn applied_lsn(&self) -> Lsn {
        self.state_machine.applied_lsn()
    }

    /// Stops the engine (the store stays open; its writes then fail).
    pub async fn shutdown(&self) -> Result<(), ClusterError> {
        self.raft
            .shutdown()
            .await
            .map_err(|e| ClusterError::Raft(e.to_string()))
    }
}

/// The store's writer's way into the cluster.
struct Proposer {
    id: NodeId,
    raft: Raft<Larch>,
    handle: Handle,
    timeout: Duration,
    on_lead: Arc<OnceLock<LeadHook>>,
    /// The last term whose first write ran the lead hook.
    led_term: AtomicU64,
}

impl Proposer {
    /// Runs the lead hook before the first write of a term this node leads.
    fn starting_to_lead(&self, leadership: Leadership) -> Leadership {
        if self.led_term.load(Ordering::Acquire) != leadership.term {
            if let Some(hook) = self.on_lead.get() {
                hook(leadership);
            }
            self.led_term.store(leadership.term, Ordering::Release);
        }
        leadership
    }
}

impl Replicator for Proposer {
    fn ready(&self) -> Result<Leadership, ReplicateError> {
        // Read in place: the metrics hold the membership and every follower's progress,
        // which a clone per batch would copy.
        let (leadership, last, applied) = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            if metrics.state != ServerState::Leader || metrics.current_leader != Some(self.id) {
                return Err(not_leader(&metrics));
            }
            let leadership = Leadership {
                term: metrics.current_term,
                node: self.id,
            };
            (
                leadership,
                metrics.last_log_index,
                metrics.last_applied.map(|l| l.index),
            )
        };
        if applied >= last {
            return Ok(self.starting_to_lead(leadership));
        }
        // A new leader applies the entries of earlier terms once its blank entry commits.
        self.handle
            .block_on(
                self.raft
                    .wait(Some(self.timeout))
                    .applied_index_at_least(last, "the leader applies its log"),
            )
            .map(|_| self.starting_to_lead(leadership))
            .map_err(|e| ReplicateError::Unavailable(e.to_string()))
    }

    fn propose(&self, batch: WriteBatch) -> Result<Box<dyn Proposal>, ReplicateError> {
        let rx = self
            .handle
            .block_on(self.raft.client_write_ff(batch))
            .map_err(|fatal| ReplicateError::Unavailable(fatal.to_string()))?;
        let (raft, id, timeout) = (self.raft.clone(), self.id, self.timeout);
        let answer = async move {
            let mut server = raft.server_metrics();
            let answer = tokio::select! {
                answer = tokio::time::timeout(timeout, rx) => answer,
                () = lost_leadership(&mut server, id) => {
                    return Err(ReplicateError::Unavailable(
                        "this node stopped leading before the write was committed".into(),
                    ));
                }
            };
            match answer {
                Err(_) => Err(ReplicateError::Unavailable(format!(
                    "not committed within {timeout:?}"
                ))),
                Ok(Err(_)) => Err(ReplicateError::Unavailable("the engine stopped".into())),
                Ok(Ok(Ok(response))) => match response.data {
                    Applied::Write => Ok(lsn_of(&response.log_id)),
                    Applied::Superseded => Err(ReplicateError::Superseded),
                    other => Err(ReplicateError::Unavailable(format!(
                        "the write was applied as {other:?}"
                    ))),
                },
                Ok(Ok(Err(ClientWriteError::ForwardToLeader(_)))) => {
                    Err(not_leader(&raft.metrics().borrow()))
                }
                Ok(Ok(Err(e))) => Err(ReplicateError::Unavailable(e.to_string())),
            }
        };
        Ok(Box::new(Pending {
            handle: self.handle.clone(),
            answer: Box::pin(answer),
        }))
    }
}

/// A batch proposed by [`Proposer`]: its answer, waited for on the engine's runtime.
struct Pending {
    handle: Handle,
    answer: Pin<Box<dyn Future<Output = Result<Lsn, ReplicateError>> + Send>>,
}

impl Proposal for Pending {
    fn wait(self: Box<Self>) -> Result<Lsn, ReplicateError> {
        let Pending { handle, answer } = *self;
        handle.block_on(answer)
    }
}

/// The refusal of a node that does not lead: the leader's LDAP URL as the cluster's
/// configuration records it, for a referral.
fn not_leader(metrics: &RaftMetrics<NodeId, Member>) -> ReplicateError {
    let url = metrics.current_leader.and_then(|l| {
        let member = metrics.membership_config.membership().get_node(&l)?;
        member.client_url().map(str::to_string)
    });
    ReplicateError::NotLeader { leader: url }
}

/// Returns once node `me` no longer leads, or its engine stopped: a write it proposed
/// may then never be answered. It watches the server's metrics, which change with its
/// role, leader, vote or membership only: the whole metrics change at every step of every
/// write, and woke the thread waiting for a proposal each time (several times a batch).
async fn lost_leadership(
    metrics: &mut tokio::sync::watch::Receiver<RaftServerMetrics<NodeId, Member>>,
    me: NodeId,
) {
    loop {
        {
            let m = metrics.borrow_and_update();
            if m.state != ServerState::Leader || m.current_leader != Some(me) {
                return;
            }
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}
