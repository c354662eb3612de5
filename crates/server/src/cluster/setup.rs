//! Setting up a cluster's directory: the suffix and admin entries a single server creates
//! when it opens are created by the cluster's first leader, once, through the cluster. Every
//! node watches until they exist; a node that leads while they do not creates them
//! ([`Directory::set_up_missing`]), and says so as a single server would.

use std::sync::Arc;
use std::time::Duration;

use larch_store::StoreError;
use tracing::{error, info, warn};

use crate::directory::{Directory, DirectoryError};

/// How often a node looks again.
const CHECK_EVERY: Duration = Duration::from_millis(200);

/// Runs until the directory is set up (or the setup fails for a reason other than the
/// cluster, which is logged).
pub async fn set_up_when_leading(dir: Arc<Directory>, is_leader: impl Fn() -> bool + Send + 'static) {
    loop {
        if dir.is_set_up() {
            return;
        }
        if is_leader() {
            let d = Arc::clone(&dir);
            match tokio::task::spawn_blocking(move || d.set_up_missing()).await {
                Ok(Ok(startup)) => {
                    for dn in &startup.created {
                        info!(dn = %dn, "cluster: created the entry");
                    }
                    if let Some(password) = &startup.generated_admin_password {
                        warn!(
                            dn = %dir.config.directory.admin_dn,
                            password = %password,
                            "cluster: generated the admin password (shown once, on this node only, stored hashed; set \
                             {} on every node before the first start to choose it)",
                            dir.config.directory.admin_password_env
                        );
                    }
                    if startup.admin_password_reset {
                        warn!(dn = %dir.config.directory.admin_dn, "cluster: the admin password was reset from the environment");
                    }
                }
                // Leadership moved meanwhile: the next leader does it.
                Ok(Err(DirectoryError::Store(StoreError::Replication(_)))) => {}
                Ok(Err(e)) => {
                    error!(error = %e, "cluster: cannot set up the directory");
                    return;
                }
                Err(e) => {
                    error!(error = %e, "cluster: the set-up task failed");
                    return;
                }
            }
        }
        tokio::time::sleep(CHECK_EVERY).await;
    }
}
