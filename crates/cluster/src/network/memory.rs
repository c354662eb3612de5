//! Nodes of one process reaching each other through a shared [`Router`], which can cut
//! links (a partition), drop a share of messages, and delay them, from a seed, so a test
//! that fails replays the same faults.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::Raft;

use super::{ReadIndex, ReadIndexResult};
use crate::types::{Larch, Member, NodeId};

/// The faults a router injects.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Links that carry nothing, each way named (from, to).
    pub cut: BTreeSet<(NodeId, NodeId)>,
    /// Share of messages dropped, in parts per thousand.
    pub drop_per_mille: u32,
    /// Longest delay added to a message (a uniform share of it).
    pub max_delay: Duration,
}

struct Shared {
    nodes: HashMap<NodeId, Raft<Larch>>,
    faults: Faults,
    /// xorshift64* state.
    rng: u64,
}

/// The nodes of one process and the faults between them. Clones share it.
#[derive(Clone)]
pub struct Router {
    shared: Arc<Mutex<Shared>>,
}

impl Router {
    /// A router whose random faults follow `seed`.
    pub fn new(seed: u64) -> Router {
        Router {
            shared: Arc::new(Mutex::new(Shared {
                nodes: HashMap::new(),
                faults: Faults::default(),
                rng: seed | 1,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `node` reachable.
    pub fn add(&self, id: NodeId, node: Raft<Larch>) {
        self.lock().nodes.insert(id, node);
    }

    /// Makes `node` unreachable (it stopped).
    pub fn remove(&self, id: NodeId) {
        self.lock().nodes.remove(&id);
    }

    /// Sets the faults.
    pub fn set_faults(&self, faults: Faults) {
        self.lock().faults = faults;
    }

    /// Cuts every link between `side` and the other nodes of `all`, both ways.
    pub fn partition(&self, side: &[NodeId], all: &[NodeId]) {
        let mut s = self.lock();
        s.faults.cut.clear();
        for a in side {
            for b in all.iter().filter(|b| !side.contains(b)) {
                s.faults.cut.insert((*a, *b));
                s.faults.cut.insert((*b, *a));
            }
        }
    }

    /// Restores every link (random faults stay).
    pub fn heal(&self) {
        self.lock().faults.cut.clear();
    }

    /// The network of node `from`.
    pub fn network(&self, from: NodeId) -> Network {
        Network {
            router: self.clone(),
            from,
        }
    }

    /// The target of a message from `from` to `to`, with the delay to add; an error if
    /// the message is lost.
    fn route(&self, from: NodeId, to: NodeId) -> Result<(Raft<Larch>, Duration), Unreachable> {
        let mut s = self.lock();
        let lost = |why: &str| {
            Unreachable::new(&std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                why.to_string(),
            ))
        };
        if s.faults.cut.contains(&(from, to)) {
            return Err(lost("the link is cut"));
        }
        let roll = next(&mut s.rng);
        if (roll % 1000) < u64::from(s.faults.drop_per_mille) {
            return Err(lost("the message was dropped"));
        }
        let delay = match s.faults.max_delay.as_micros() as u64 {
            0 => Duration::ZERO,
            max => Duration::from_micros(next(&mut s.rng) % max),
        };
        let node = s
            .nodes
            .get(&to)
            .cloned()
            .ok_or_else(|| lost("the node is down"))?;
        Ok((node, delay))
    }
}

fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Node `from`'s way to the others.
#[derive(Clone)]
pub struct Network {
    router: Router,
    from: NodeId,
}

impl RaftNetworkFactory<Larch> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, _node: &Member) -> Connection {
        Connection {
            router: self.router.clone(),
            from: self.from,
            to: target,
        }
    }
}

impl ReadIndex for Network {
    fn read_index(
        &self,
        leader: NodeId,
        _node: Member,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ReadIndexResult> + Send + 'static>> {
        let link = Connection {
            router: self.router.clone(),
            from: self.from,
            to: leader,
        };
        Box::pin(async move {
            let raft = link
                .target::<RaftError<NodeId>>()
                .await
                .map_err(|e| e.to_string())?;
            let read = tokio::time::timeout(timeout, raft.get_read_log_id())
                .await
                .map_err(|_| format!("no read index from node {leader} within {timeout:?}"))?
                .map_err(|e| e.to_string())?;
            link.reply_path::<RaftError<NodeId>>()
                .map_err(|e| e.to_string())?;
            Ok(read.0)
        })
    }
}

/// One direction of one link.
pub struct Connection {
    router: Router,
    from: NodeId,
    to: NodeId,
}

impl Connection {
    async fn target<E: std::error::Error>(&self) -> Result<Raft<Larch>, RPCError<NodeId, Member, E>> {
        let (node, delay) = self
            .router
            .route(self.from, self.to)
            .map_err(RPCError::Unreachable)?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Ok(node)
    }

    /// The reply may be lost too (the link may be cut meanwhile).
    fn reply_path<E: std::error::Error>(&self) -> Result<(), RPCError<NodeId, Member, E>> {
        let cut = self.router.lock().faults.cut.contains(&(self.to, self.from));
        if cut {
            let e = std::io::Error::new(std::io::ErrorKind::NotConnected, "the reply's link is cut");
            return Err(RPCError::Network(NetworkError::new(&e)));
        }
        Ok(())
    }
}

impl RaftNetwork<Larch> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Larch>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        let node = self.target().await?;
        let reply = node
            .append_entries(rpc)
            .await
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))?;
        self.reply_path()?;
        Ok(reply)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<Larch>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Member, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let node = self.target().await?;
        let reply = node
            .install_snapshot(rpc)
            .await
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))?;
        self.reply_path()?;
        Ok(reply)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        let node = self.target().await?;
        let reply = node
            .vote(rpc)
            .await
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))?;
        self.reply_path()?;
        Ok(reply)
    }
}
