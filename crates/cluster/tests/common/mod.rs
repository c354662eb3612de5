//! A cluster of nodes in one process for the tests: each node a replicated store on its
//! own in-memory, crashable storage, all linked by one fault-injecting router.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use larch_cluster::network::memory::Router;
use larch_cluster::network::ReadIndex;
use larch_cluster::types::{Larch, Member};
use larch_cluster::{ClusterNode, Timing};
use larch_model::dn::NormDn;
use larch_model::entry::{Entry, Options};
use larch_model::schema::Schema;
use larch_store::consensus::ReplicateError;
use larch_store::storage::FaultStorage;
use larch_store::wal::SyncPolicy;
use larch_store::{Store, StoreError, StoreOptions, Version};
use openraft::network::RaftNetworkFactory;
use openraft::ServerState;

pub const SUFFIX: &str = "dc=example,dc=com";

/// The built-in schema, loaded once per test binary.
pub fn schema() -> Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    Arc::clone(S.get_or_init(|| Arc::new(Schema::builtin().unwrap())))
}

/// Timing for tests: fast elections, short commit waits.
pub fn timing() -> Timing {
    Timing {
        heartbeat: Duration::from_millis(50),
        election_min: Duration::from_millis(200),
        election_max: Duration::from_millis(400),
        commit_timeout: Duration::from_secs(2),
        catch_up_stall: Duration::from_secs(2),
        ..Timing::default()
    }
}

/// [`timing`] with a snapshot every `every` entries and `kept` entries of log kept
/// before it.
pub fn snapshot_timing(every: u64, kept: u64) -> Timing {
    Timing {
        snapshot_after_entries: every,
        log_kept_after_snapshot: kept,
        ..timing()
    }
}

/// The entry a test writes: the suffix, or `cn=<name>` below it, with a description.
pub fn entry(dn: &str, value: &str) -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
    let mut e = Entry::new(dn.clone(), norm);
    let none = Options::none();
    let oc = s.attribute_type("objectClass").unwrap().id;
    if dn.rdns.len() == 2 {
        e.push_value(oc, &none, b"dcObject".to_vec());
        e.push_value(s.attribute_type("dc").unwrap().id, &none, b"example".to_vec());
    } else {
        e.push_value(oc, &none, b"applicationProcess".to_vec());
        let rdn_value = dn.rdns[0].avas[0].value.clone();
        e.push_value(s.attribute_type("cn").unwrap().id, &none, rdn_value);
    }
    e.push_value(
        s.attribute_type("description").unwrap().id,
        &none,
        value.as_bytes().to_vec(),
    );
    e
}

/// A write a test makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Add { dn: String, value: String },
    Modify { dn: String, value: String },
    Delete { dn: String },
}

/// Runs `op` through `store` (blocking: call from a blocking thread). The outer error is
/// the store's or the cluster's; the inner one the write's own refusal.
pub fn apply(store: &Store, op: Op) -> Result<Result<(), StoreError>, StoreError> {
    store.write(move |txn| -> Result<(), StoreError> {
        let s = schema();
        match op {
            Op::Add { dn, value } => {
                let e = entry(&dn, &value);
                let naming_context = e.norm_dn.as_str() == SUFFIX;
                txn.add(&e.dn, &e.norm_dn, &e.to_stored(), naming_context)
                    .map(drop)
            }
            Op::Modify { dn, value } => {
                let id = txn.version().find(&NormDn::parse(dn.as_bytes(), &*s).unwrap().1);
                let id = id.ok_or(StoreError::NoSuchEntry)?;
                let current = txn.version().dn(id);
                txn.modify(id, &entry(&current, &value).to_stored())
            }
            Op::Delete { dn } => {
                let id = txn.version().find(&NormDn::parse(dn.as_bytes(), &*s).unwrap().1);
                txn.delete(id.ok_or(StoreError::NoSuchEntry)?)
            }
        }
    })
}

/// [`apply`] from async code.
pub async fn write(store: &Store, op: Op) -> Result<Result<(), StoreError>, StoreError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || apply(&store, op))
        .await
        .unwrap()
}

/// The add of `cn=<name>` below the suffix.
pub fn add(name: &str, value: &str) -> Op {
    Op::Add {
        dn: format!("cn={name},{SUFFIX}"),
        value: value.into(),
    }
}

/// Adds the suffix entry through `store` (the leader's), which must take it.
pub async fn add_suffix(store: &Store) {
    let op = Op::Add {
        dn: SUFFIX.into(),
        value: "top".into(),
    };
    write(store, op).await.unwrap().unwrap();
}

/// A store's content: normalized DN -> description.
pub fn content(version: &Version) -> BTreeMap<String, String> {
    let s = schema();
    let desc = s.attribute_type("description").unwrap().id;
    version
        .entries()
        .map(|e| {
            let value = e
                .attrs()
                .attribute(desc)
                .next()
                .and_then(|a| {
                    a.values
                        .iter()
                        .next()
                        .map(|v| String::from_utf8(v.to_vec()).unwrap())
                })
                .unwrap_or_default();
            (version.norm_dn(e.id).as_str().to_string(), value)
        })
        .collect()
}

/// Opens a store on `storage` as a single server (`replicated` false) or a cluster node.
pub fn open_store(storage: &FaultStorage, replicated: bool) -> Store {
    Store::open(store_options(storage, replicated)).unwrap().0
}

/// The options [`open_store`] opens with.
pub fn store_options(storage: &FaultStorage, replicated: bool) -> StoreOptions {
    let mut options = StoreOptions::new(PathBuf::from("/data"), schema());
    options.storage = Arc::new(storage.clone());
    options.sync = SyncPolicy::Always;
    options.threads = 1;
    options.snapshot_interval = None;
    options.snapshot_after_records = None;
    options.segment_size_limit = 4096;
    options.replicated = replicated;
    options
}

/// One node.
pub struct Node {
    pub id: u64,
    pub storage: FaultStorage,
    pub store: Store,
    pub node: ClusterNode,
}

/// The nodes, and the router between them.
pub struct Cluster {
    pub router: Router,
    pub nodes: BTreeMap<u64, Node>,
    /// Storage of nodes that are down, kept for their restart.
    pub down: BTreeMap<u64, FaultStorage>,
    pub ids: Vec<u64>,
    /// The nodes' timing.
    pub timing: Timing,
}

/// Where clients reach node `id` (the memory transport needs no Raft address, but the
/// configuration records one).
pub fn address(id: u64) -> String {
    format!("ldap://127.0.0.{id}:389")
}

/// Node `id` as the cluster's configuration records it.
pub fn member(id: u64) -> Member {
    Member::new(format!("127.0.0.{id}:7389"), address(id))
}

async fn start_node(router: &Router, id: u64, storage: FaultStorage, timing: Timing) -> Node {
    let node = start_node_timed(id, storage, router.network(id), timing).await;
    router.add(id, node.node.raft().clone());
    node
}

/// Starts node `id` on `storage` with any transport; making it reachable is the caller's
/// part.
pub async fn start_node_with<N: RaftNetworkFactory<Larch> + ReadIndex + Clone>(
    id: u64,
    storage: FaultStorage,
    network: N,
) -> Node {
    start_node_timed(id, storage, network, timing()).await
}

/// [`start_node_with`] with `timing`.
pub async fn start_node_timed<N: RaftNetworkFactory<Larch> + ReadIndex + Clone>(
    id: u64,
    storage: FaultStorage,
    network: N,
    timing: Timing,
) -> Node {
    let store = open_store(&storage, true);
    let node = ClusterNode::start(id, &store, Path::new("/data/cluster"), network, timing)
        .await
        .unwrap();
    Node {
        id,
        storage,
        store,
        node,
    }
}

impl Cluster {
    /// A cluster of nodes started and initialized elsewhere (another transport: the
    /// router then reaches none of them).
    pub fn of_nodes(nodes: BTreeMap<u64, Node>) -> Cluster {
        Cluster {
            router: Router::new(0),
            ids: nodes.keys().copied().collect(),
            nodes,
            down: BTreeMap::new(),
            timing: timing(),
        }
    }

    /// `n` nodes numbered from 1, initialized on node 1; waits for a leader.
    pub async fn start(n: u64, seed: u64) -> Cluster {
        Cluster::start_timed(n, seed, timing()).await
    }

    /// [`Cluster::start`] with `timing`.
    pub async fn start_timed(n: u64, seed: u64, timing: Timing) -> Cluster {
        let router = Router::new(seed);
        let mut nodes = BTreeMap::new();
        for id in 1..=n {
            nodes.insert(
                id,
                start_node(&router, id, FaultStorage::new(seed ^ id), timing).await,
            );
        }
        let members: BTreeMap<u64, Member> = (1..=n).map(|id| (id, member(id))).collect();
        nodes[&1].node.initialize(members).await.unwrap();
        let cluster = Cluster {
            router,
            nodes,
            down: BTreeMap::new(),
            ids: (1..=n).collect(),
            timing,
        };
        cluster.leader(Duration::from_secs(10)).await;
        cluster
    }

    /// Nodes started on `storages` (numbered as given), none initialized here: one of them
    /// holds a cluster's starting point already ([`larch_cluster::existing_data`]); waits
    /// for a leader.
    pub async fn start_on(storages: BTreeMap<u64, FaultStorage>, seed: u64, timing: Timing) -> Cluster {
        let router = Router::new(seed);
        let mut nodes = BTreeMap::new();
        for (id, storage) in storages {
            nodes.insert(id, start_node(&router, id, storage, timing).await);
        }
        let cluster = Cluster {
            router,
            ids: nodes.keys().copied().collect(),
            nodes,
            down: BTreeMap::new(),
            timing,
        };
        cluster.leader(Duration::from_secs(10)).await;
        cluster
    }

    /// The node that leads, once one of the running nodes does.
    pub async fn leader(&self, within: Duration) -> u64 {
        let deadline = Instant::now() + within;
        loop {
            for (id, n) in &self.nodes {
                let m = n.node.metrics();
                if m.state == ServerState::Leader && m.current_leader == Some(*id) {
                    return *id;
                }
            }
            assert!(Instant::now() < deadline, "no leader within {within:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills node `id` as `kill -9` would: its engine stops, its store goes, and its
    /// storage keeps only what was fsynced.
    pub async fn kill(&mut self, id: u64) {
        let node = self.nodes.remove(&id).unwrap();
        self.router.remove(id);
        node.node.shutdown().await.unwrap();
        let store = node.store.clone();
        tokio::task::spawn_blocking(move || {
            let _ = store.close(false);
        })
        .await
        .unwrap();
        drop(node.node);
        drop(node.store);
        node.storage.crash();
        self.down.insert(id, node.storage);
    }

    /// Starts node `id` again on what its storage kept.
    pub async fn restart(&mut self, id: u64) {
        let storage = self.down.remove(&id).unwrap();
        let node = start_node(&self.router, id, storage, self.timing).await;
        self.nodes.insert(id, node);
    }

    /// Starts a new node `id` on empty storage, not yet a member.
    pub async fn add_fresh(&mut self, id: u64) {
        let node = start_node(&self.router, id, FaultStorage::new(id * 7919), self.timing).await;
        self.nodes.insert(id, node);
    }

    /// A follower's disk is lost: it leaves the cluster (through `leader`) and a new node
    /// `new_id` on empty storage joins in its place (a node's number is never reused once
    /// its data is gone). Returns the follower's number.
    pub async fn replace_a_follower(&mut self, leader: u64, new_id: u64) -> u64 {
        let gone = self.ids.iter().copied().find(|id| *id != leader).unwrap();
        self.kill(gone).await;
        self.down.remove(&gone);
        self.nodes[&leader].node.remove_node(gone).await.unwrap();
        self.ids.retain(|id| *id != gone);
        self.add_fresh(new_id).await;
        self.nodes[&leader]
            .node
            .add_node(new_id, member(new_id))
            .await
            .unwrap();
        self.ids.push(new_id);
        gone
    }

    /// Waits until every running node has applied as far as the leader and all hold the
    /// same content; returns it.
    pub async fn converged(&self, within: Duration) -> BTreeMap<String, String> {
        let deadline = Instant::now() + within;
        loop {
            let leader = self.leader(within).await;
            let target = self.nodes[&leader].node.metrics().last_log_index;
            let all_applied = self
                .nodes
                .values()
                .all(|n| n.node.metrics().last_applied.map(|l| l.index) >= target);
            if all_applied {
                let contents: BTreeSet<_> =
                    self.nodes.values().map(|n| content(&n.store.current())).collect();
                if contents.len() == 1 {
                    return contents.into_iter().next().unwrap();
                }
            }
            assert!(
                Instant::now() < deadline,
                "the nodes did not converge within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops every node.
    pub async fn stop(mut self) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            self.kill(id).await;
        }
    }
}

/// Whether a store error says the write was not applied, so a client may retry it
/// elsewhere: not the leader, or superseded.
pub fn surely_not_applied(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::Replication(ReplicateError::NotLeader { .. } | ReplicateError::Superseded)
    )
}
