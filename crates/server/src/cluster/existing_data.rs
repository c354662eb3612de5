//! Step 0 of a cluster node's start, before its store opens ([`Directory::open`]): a single
//! server's data in the data directory (its own, a `larch restore`d backup, `larch
//! import`'s output) becomes the new cluster's starting point on the node with
//! `cluster.bootstrap`, and is refused on any other ([`larch_cluster::existing_data`]).
//!
//! [`Directory::open`]: crate::directory::Directory::open

use larch_cluster::existing_data::{self, Prepared};
use larch_store::StoreOptions;
use tracing::info;

use super::{first_members, STATE_DIR};
use crate::config::cluster::ClusterSettings;

/// Converts or refuses the data in `options.dir` for the node `settings` describe; the
/// error is one line naming what to do.
pub fn prepare(settings: &ClusterSettings, options: &StoreOptions) -> Result<(), String> {
    let members = settings.bootstrap.then(|| first_members(settings));
    let state_dir = options.dir.join(STATE_DIR);
    match existing_data::prepare(options, &state_dir, settings.node_id, members.as_ref()) {
        Ok(Prepared::Nothing) => Ok(()),
        Ok(Prepared::Converted { lsn, entries }) => {
            info!(
                lsn,
                entries,
                members = settings.members.len(),
                "cluster: made this single server's data the new cluster's starting point (cluster.bootstrap); \
                 the other members are sent it"
            );
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}
