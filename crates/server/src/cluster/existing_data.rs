//! Step 0 of a cluster node's start, before its directory opens (`larch serve` calls
//! [`prepare`] before [`Directory::open`], as it fetches a new replica's snapshot): a
//! single server's data in the data directory (its own, a `larch restore`d backup, `larch
//! import`'s output) becomes the new cluster's starting point on the node with
//! `cluster.bootstrap`, and is refused on any other ([`larch_cluster::existing_data`]).
//!
//! [`Directory::open`]: crate::directory::Directory::open

use std::sync::Arc;

use larch_cluster::existing_data::{self, Prepared};
use tracing::info;

use super::{first_members, STATE_DIR};
use crate::config::ServerConfig;

/// Converts or refuses the data in `config`'s data directory when `config` makes this
/// server a cluster node; the error is one line naming what to do.
pub fn prepare(config: &ServerConfig) -> Result<(), String> {
    let Some(settings) = &config.cluster else {
        return Ok(());
    };
    let schema = config.schema().map_err(|e| e.to_string())?;
    let options = config.to_store_options(Arc::new(schema));
    let members = settings.bootstrap.then(|| first_members(settings));
    let state_dir = options.dir.join(STATE_DIR);
    match existing_data::prepare(&options, &state_dir, settings.node_id, members.as_ref()) {
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
