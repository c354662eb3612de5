//! Linearizable reads on a cluster node (`crate::cluster`) (`cluster.reads = "linearizable"`): before a
//! search or compare of the directory's data, the node waits until it holds every write
//! acknowledged before the request ([`larch_cluster::ClusterNode::read_barrier`]: the
//! leader's read index, asked once per round of readers). Entries the server computes
//! (the root DSE, the subschema, `cn=Monitor`) are read at once: a node cut off from its
//! cluster still answers its monitoring.
//!
//! A node that cannot confirm the read within the commit timeout (no leader, no majority)
//! answers `unavailable` (52): the read was not made.

use larch_proto::ResultCode;

use crate::directory::Directory;
use crate::error::OpError;

/// Waits, when `dir` is a cluster node configured for linearizable reads and `base` names
/// the directory's data, until this node holds every write acknowledged before the call.
pub async fn barrier(dir: &Directory, base: &[u8]) -> Result<(), OpError> {
    let linearizable = dir.config.cluster.as_ref().is_some_and(|c| c.linearizable_reads);
    if !linearizable || computed(base) {
        return Ok(());
    }
    let Some(node) = dir.cluster.get() else {
        return Err(OpError::new(
            ResultCode::UNAVAILABLE,
            "this cluster node has not started yet; the read was not made",
        ));
    };
    node.read_barrier().await.map_err(|e| {
        OpError::new(
            ResultCode::UNAVAILABLE,
            format!("a linearizable read could not be confirmed: {e}; the read was not made"),
        )
    })
}

/// Whether `dn` (as the client wrote it) names an entry the server computes rather than
/// stores: the root DSE, the subschema entry, or an entry under `cn=Monitor`.
fn computed(dn: &[u8]) -> bool {
    let dn = dn.trim_ascii();
    let ends_with = |suffix: &[u8]| {
        dn.len() >= suffix.len() && dn[dn.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    };
    dn.is_empty() || dn.eq_ignore_ascii_case(b"cn=subschema") || ends_with(b"cn=monitor")
}

#[cfg(test)]
mod tests {
    use super::computed;

    #[test]
    fn the_entries_the_server_computes_are_read_at_once() {
        for dn in [
            "",
            " ",
            "cn=Subschema",
            "cn=Monitor",
            "cn=Cluster,cn=Monitor",
            "CN=Role,CN=Cluster,CN=MONITOR",
        ] {
            assert!(computed(dn.as_bytes()), "{dn}");
        }
        for dn in [
            "dc=example,dc=com",
            "cn=monitor-admins,ou=groups,dc=example,dc=com",
            "cn=x",
        ] {
            assert!(!computed(dn.as_bytes()), "{dn}");
        }
    }
}
