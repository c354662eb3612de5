//! This server as a node of a cluster (`[cluster]`, `docs/cluster.md`): the store's log is
//! the cluster's replicated log (`larch_cluster`), writes are made on the leader and
//! applied by every node, and a follower forwards a client's write to the leader
//! ([`crate::forwarding`]), or refers it to the leader's LDAP URL as the cluster's
//! configuration records it (`crate::error`'s mapping of
//! [`ReplicateError::NotLeader`]).
//!
//! Starting, in steps:
//! 0. before the directory opens (`larch serve` calls [`existing_data::prepare`]): a single
//!    server's data in the data directory becomes the new cluster's starting point on the
//!    node with `cluster.bootstrap`, and is refused on any other;
//!
//! then, once the directory is open ([`start`]):
//! 1. the Raft transport's security: plain TCP, or TLS with client certificates
//!    ([`tls`]);
//! 2. the node on the directory's store ([`larch_cluster::ClusterNode`]);
//! 3. the transport's listener (`cluster.listen`);
//! 4. with `cluster.bootstrap`, on a node whose store and log are empty: the cluster of
//!    `cluster.members` is created, each member's Raft address and LDAP URL in its first
//!    configuration (a node without `bootstrap` waits for a leader to send it the log,
//!    configurations included: `larch cluster add-node` on the leader,
//!    `session/cluster_membership.rs`);
//! 5. the forwarding of client writes to the leader, when `cluster.writes` says so
//!    ([`crate::forwarding`]);
//! 6. the directory's set-up, made by the first leader ([`setup`]).
//!
//! With `cluster.reads = "linearizable"`, searches and compares wait for the leader's
//! read index first ([`crate::linearizable`]). A node that starts to lead raises its CSN
//! generator to the newest CSN in the directory ([`csn`]).
//!
//! [`ReplicateError::NotLeader`]: larch_store::consensus::ReplicateError::NotLeader

pub mod csn;
pub mod existing_data;
pub mod setup;
pub mod tls;

use std::collections::BTreeMap;
use std::sync::Arc;

use larch_cluster::network::tcp::{self, Security, TcpNetwork};
use larch_cluster::status::Role;
use larch_cluster::{ClusterError, ClusterNode, Member, Timing};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::cluster::{log_kept_after_snapshot, ClusterSettings, ClusterWrites};
use crate::directory::Directory;
use crate::forwarding::Forwarding;

/// The directory below the data directory that holds the node's vote and committed hint
/// (`larch_cluster::raft_state`, `larch_cluster::log_store`).
pub const STATE_DIR: &str = "cluster";

/// A running node: stop it before the store closes.
pub struct ClusterRun {
    /// The node.
    pub node: Arc<ClusterNode>,
    stop: watch::Sender<bool>,
}

impl ClusterRun {
    /// Stops the transport and the engine.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Err(e) = self.node.shutdown().await {
            tracing::warn!(error = %e, "cluster: the engine did not stop cleanly");
        }
    }
}

/// Steps 1 to 6, on the runtime: the node runs once this returns.
pub async fn start(dir: Arc<Directory>) -> Result<ClusterRun, String> {
    let Some(settings) = dir.config.cluster.clone() else {
        return Err("no [cluster] table".into());
    };
    let security = transport_security(&dir, &settings)?;
    let state_dir = dir.config.server.data_dir.join(STATE_DIR);
    let node = ClusterNode::start(
        settings.node_id,
        &dir.store,
        &state_dir,
        TcpNetwork::new(settings.node_id, &security),
        Timing {
            snapshot_after_entries: settings.snapshot_after_entries,
            log_kept_after_snapshot: log_kept_after_snapshot(settings.snapshot_after_entries),
            ..Timing::default()
        },
    )
    .await
    .map_err(|e| format!("cluster: {e}"))?;
    csn::raise_when_leading(&dir, &node);
    let node = Arc::new(node);
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|e| format!("cluster.listen {}: {e}", settings.listen))?;
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(tcp::serve(listener, node.raft().clone(), security, stopped));
    info!(
        node_id = settings.node_id,
        listen = %settings.listen,
        tls = settings.tls,
        members = settings.members.len(),
        "cluster: node started"
    );
    if settings.bootstrap && dir.store.current().lsn() == 0 && node.status().last_log_lsn == 0 {
        bootstrap(&node, &settings).await?;
    }
    let _ = dir.cluster.set(Arc::clone(&node));
    forward_writes(&dir, &node, &settings)?;
    let watched = Arc::clone(&node);
    tokio::spawn(setup::set_up_when_leading(Arc::clone(&dir), move || {
        watched.status().role == Role::Leader
    }));
    Ok(ClusterRun { node, stop })
}

/// Step 1.
fn transport_security(dir: &Directory, settings: &ClusterSettings) -> Result<Security, String> {
    if !settings.tls {
        return Ok(Security::Plain);
    }
    let tls = dir
        .config
        .tls
        .as_ref()
        .ok_or_else(|| "cluster.tls needs [tls]".to_string())?;
    let (server, client) = tls::transport_configs(tls).map_err(|e| format!("cluster.tls: {e}"))?;
    Ok(Security::Tls { server, client })
}

/// Step 5: a follower forwards client writes to the leader, or refers them there.
fn forward_writes(
    dir: &Directory,
    node: &Arc<ClusterNode>,
    settings: &ClusterSettings,
) -> Result<(), String> {
    match &settings.writes {
        ClusterWrites::Forward(f) => {
            let forwarding =
                Forwarding::new(Arc::clone(node), settings, f, dir.config.limits.max_pdu_bytes)?;
            let _ = dir.cluster_forwarding.set(forwarding);
            info!(bind_dn = %f.bind_dn, "cluster: a follower forwards client writes to the leader");
        }
        ClusterWrites::Refer => info!("cluster: a follower refers client writes to the leader (cluster.writes)"),
        ClusterWrites::ReferWithoutCredentials => warn!(
            "cluster: a follower refers client writes to the leader: set cluster.bind_dn and cluster.credentials \
             (or credentials_file) to forward them, or cluster.writes = \"refer\" to say so (docs/cluster.md)"
        ),
    }
    Ok(())
}

/// The first members as the cluster's first configuration records them: each one's Raft
/// address and LDAP URL.
fn first_members(settings: &ClusterSettings) -> BTreeMap<u64, Member> {
    settings
        .members
        .iter()
        .map(|m| {
            let url = m.ldap_url.clone().unwrap_or_default();
            (m.id, Member::new(m.raft.clone(), url))
        })
        .collect()
}

/// Step 4: the cluster of every member, made by this node.
async fn bootstrap(node: &ClusterNode, settings: &ClusterSettings) -> Result<(), String> {
    match node.initialize(first_members(settings)).await {
        Ok(()) => {
            info!(
                members = settings.members.len(),
                "cluster: created the cluster (cluster.bootstrap)"
            );
            Ok(())
        }
        // Already a member of a cluster (its vote is recorded, or it has a log).
        Err(ClusterError::AlreadyInitialized) => {
            info!("cluster: cluster.bootstrap: this node is a member of a cluster already");
            Ok(())
        }
        Err(e) => Err(format!("cluster.bootstrap: {e}")),
    }
}
