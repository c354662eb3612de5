//! One provider to syncrepl consumers: the cluster's changes carry CSNs that only grow,
//! whichever node made them. Every node is given the same `sync_provider.server_id`, so
//! the CSNs share one server ID; and a node that starts to lead raises its CSN generator
//! to the newest `entryCSN` its store holds before its first write of the term
//! ([`larch_cluster::ClusterNode::set_on_lead`]: every entry of the terms before is
//! applied by then). Its changes therefore follow its predecessors' even when its clock is
//! behind theirs, and a consumer's cookie taken from any node holds on every other.
//!
//! The cost: one pass over the directory's entries on the store's writer thread, once per
//! term this node leads (the first write after a failover waits for it).

use std::sync::Arc;

use larch_cluster::ClusterNode;
use tracing::info;

use crate::directory::Directory;
use crate::syncrepl::cookie::CsnSet;

/// Sets `node`'s lead hook: the directory's CSN generator raised to the newest CSN its
/// store holds.
pub fn raise_when_leading(dir: &Arc<Directory>, node: &ClusterNode) {
    let Some(entry_csn) = dir.schema.attribute_type("entryCSN").map(|t| t.id) else {
        return;
    };
    let store = dir.store.clone();
    let csn = Arc::clone(&dir.csn);
    node.set_on_lead(Arc::new(move |leadership| {
        let version = store.current();
        let newest = CsnSet::of_entries(&version, version.entries().map(|e| e.id), entry_csn)
            .newest()
            .cloned();
        if let Some(newest) = &newest {
            csn.observe(newest.as_str());
        }
        info!(
            term = leadership.term,
            newest_csn = newest.as_ref().map_or("none", |c| c.as_str()),
            "cluster: this node leads; its CSNs follow the newest in the directory"
        );
    }));
}
