//! `larch serve`: open (or create) the data directory and run the directory server until
//! SIGTERM or SIGINT, then write a snapshot and exit 0. SIGHUP reopens the access and audit
//! logs by name (for logrotate) and reloads the TLS certificate, key and client CA files (new
//! connections use them; a failed reload keeps the old ones and says why). `--demo-tls` turns TLS on with a self-signed demo CA
//! ([`larch_server::tls::demo`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use larch_server::config::ServerConfig;
use larch_server::directory::Directory;
use larch_server::tls::demo;

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
    /// Turn TLS on with a self-signed demo CA and server certificate for localhost, made
    /// once under <data_dir>/demo-tls/: StartTLS on the ldap:// listeners, and
    /// ldaps://127.0.0.1:3636 unless an ldaps:// listener is configured. Clients trust it
    /// with LDAPTLS_CACERT=<data_dir>/demo-tls/ca.pem.
    #[arg(long)]
    demo_tls: bool,
}

/// Runs the server.
pub fn serve(a: ServeArgs) -> Result<(), String> {
    // --demo-tls turns TLS on before the configuration is validated, so that its ldaps://
    // listeners are accepted.
    let mut demo_files = None;
    let mut with_demo = |c: &mut ServerConfig| {
        if a.demo_tls {
            demo_files = Some(demo::apply(c));
        }
    };
    let config = match &a.config {
        Some(path) => ServerConfig::load_with(path, with_demo),
        None => {
            let mut c = ServerConfig::default();
            with_demo(&mut c);
            c.validate().map(|()| c)
        }
    };
    let demo_files = demo_files.transpose().map_err(|e| e.to_string())?;
    let config = config.map_err(|e| e.to_string())?;
    if let Some(files) = demo_files {
        let verb = if files.created { "created" } else { "using" };
        eprintln!(
            "larch: --demo-tls: {verb} a demo CA and server certificate in {}; clients trust it with\n  \
             LDAPTLS_CACERT={}",
            files.certificate.parent().unwrap_or(&files.certificate).display(),
            files.ca.display()
        );
    }
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
    if let Some(tls) = &dir.tls {
        let c = tls.certificate();
        eprintln!(
            "larch: TLS certificate `{}` (serial {}, valid until {})",
            c.subject, c.serial, c.not_after
        );
    }
    let dir = Arc::new(dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("larch-worker")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    // Registered before the listeners open, so no SIGHUP can find its default action
    // (ending the process) once clients can connect.
    let hangup = {
        let _in_runtime = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(|e| format!("cannot handle SIGHUP: {e}"))?
    };
    runtime.spawn(reload_on_sighup(dir.clone(), hangup));
    let served = runtime.block_on(larch_server::net::run(dir.clone(), shutdown_signal(), |bound| {
        for b in bound {
            eprintln!("larch: listening on {b}");
        }
    }));
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN_WAIT);
    if let Some(log) = &dir.access_log {
        log.close();
    }
    if let Some(log) = &dir.audit_log {
        // Every change committed so far is written before the store closes.
        log.close();
    }
    served.map_err(|e| e.to_string())?;
    eprintln!("larch: stopping: writing a snapshot");
    dir.store
        .close(true)
        .map_err(|e| format!("closing the store: {e}"))?;
    eprintln!("larch: stopped");
    Ok(())
}

/// On every SIGHUP, reopens the access and audit logs by name (after logrotate moved
/// them) and reloads the TLS files; says on standard error what happened.
async fn reload_on_sighup(dir: Arc<Directory>, mut hangup: tokio::signal::unix::Signal) {
    while hangup.recv().await.is_some() {
        if let Some(log) = &dir.access_log {
            log.reopen();
        }
        if let Some(log) = &dir.audit_log {
            log.reopen();
        }
        match &dir.tls {
            None => eprintln!("larch: SIGHUP: nothing to reload (no [tls] configured)"),
            Some(tls) => match tls.reload() {
                Ok(c) => eprintln!(
                    "larch: SIGHUP: TLS reloaded: certificate `{}` (serial {}, valid until {}); new connections use it",
                    c.subject, c.serial, c.not_after
                ),
                Err(e) => eprintln!("larch: SIGHUP: TLS reload failed, the previous certificate stays in use: {e}"),
            },
        }
    }
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
