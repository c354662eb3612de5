//! `larch serve`: open (or create) the data directory and run the directory server until
//! SIGTERM or SIGINT, then write a snapshot and exit 0.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use larch_server::config::ServerConfig;
use larch_server::directory::Directory;

/// How long the runtime waits for worker threads (searches still running after the
/// shutdown grace period) before the store is closed.
const RUNTIME_SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// `larch serve`.
#[derive(Debug, Args, Default)]
pub struct ServeArgs {
    /// The configuration file (larch.toml); without it, the embedded defaults: data in
    /// ./larch-data, ldap://127.0.0.1:3389, suffix dc=example,dc=com.
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
}

/// Runs the server.
pub fn serve(a: ServeArgs) -> Result<(), String> {
    let config = match &a.config {
        Some(path) => ServerConfig::load(path).map_err(|e| e.to_string())?,
        None => ServerConfig::default(),
    };
    let threads = match config.server.worker_threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let started = Instant::now();
    let data_dir = config.server.data_dir.clone();
    let (dir, startup) = Directory::open(config).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    crate::alloc::release_free_memory();
    let r = &startup.report;
    if let Some(cut) = &r.wal_cut {
        eprintln!("larch: WARNING: the transaction log had a damaged tail, which was cut: {cut:?}");
    }
    eprintln!(
        "larch: {} entries in {} ({} log records replayed) in {:.2} s",
        r.entries,
        data_dir.display(),
        r.replayed,
        started.elapsed().as_secs_f64()
    );
    for dn in &startup.created {
        eprintln!("larch: created `{dn}`");
    }
    if dir.acl.is_default_policy() {
        eprintln!("larch: access control: the default policy (no [[access]] rule configured)");
    } else {
        eprintln!("larch: access control: {} [[access]] rules", dir.acl.len());
    }
    if let Some(password) = &startup.generated_admin_password {
        eprintln!(
            "larch: generated password of `{}` (shown once, stored hashed; set {} before the first start \
             to choose it, or later to reset it):\n{password}",
            dir.config.directory.admin_dn, dir.config.directory.admin_password_env
        );
    }
    if startup.admin_password_reset {
        eprintln!(
            "larch: the password of `{}` was reset from {}",
            dir.config.directory.admin_dn, dir.config.directory.admin_password_env
        );
    }
    let dir = Arc::new(dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("larch-worker")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let served = runtime.block_on(larch_server::net::run(dir.clone(), shutdown_signal(), |addrs| {
        for a in addrs {
            eprintln!("larch: listening on ldap://{a}");
        }
    }));
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN_WAIT);
    served.map_err(|e| e.to_string())?;
    eprintln!("larch: stopping: writing a snapshot");
    dir.store
        .close(true)
        .map_err(|e| format!("closing the store: {e}"))?;
    eprintln!("larch: stopped");
    Ok(())
}

/// Completes on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
    }
}
