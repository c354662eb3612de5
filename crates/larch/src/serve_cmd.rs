//! `larch serve`: open (or create) the data directory and run the directory server until
//! SIGTERM or SIGINT, then write a snapshot and exit 0. `--demo-tls` turns TLS on with a
//! self-signed demo CA ([`larch_server::tls::demo`]).
//!
//! In steps:
//! 1. read the configuration; an error in it is said on standard error (there is no error
//!    log yet) and the exit status is 1;
//! 2. install the error log of `[error_log]` ([`crate::error_log`]); from here on every
//!    message is a `tracing` event, and a failure that ends the server is logged there
//!    (and said on standard error as well when the error log is a file);
//! 3. raise the open-files limit (soft `RLIMIT_NOFILE`) to the hard one and say so: the
//!    connection limit follows it unless `limits.max_connections` is set
//!    ([`larch_server::net::limits`]);
//! 4. start the runtime and the metrics endpoint (`[metrics] listen`: alive, not ready),
//!    open the store, set up a new data directory, hand the directory to the endpoint
//!    (ready), start the SIGHUP handler, the `[[replication]]` consumers
//!    ([`larch_server::syncrepl`]), the cluster node (`[cluster]`,
//!    [`larch_server::cluster`]) and the listeners;
//! 5. on SIGTERM or SIGINT, stop serving, stop the consumers, close the access log, write a
//!    snapshot.
//!
//! SIGHUP reopens the error log, the access log and the audit log by name (for logrotate), reads the
//! configuration file's `error_log.level` again and uses it at once (the other keys take
//! effect at the next start, and a message says so when the file differs), and reloads the
//! TLS certificate, key and client CA files (new connections use them; a failed reload
//! keeps the old ones and says why).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use larch_server::config::ServerConfig;
use larch_server::directory::Directory;
use larch_server::metrics::MetricsEndpoint;
use larch_server::tls::demo::{self, DemoFiles};
use larch_store::{OpenReport, StartupSnapshot};
use tracing::{debug, error, info, warn};

use crate::error_log::ErrorLog;

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

/// Runs the server; the exit status says whether it stopped cleanly.
pub fn serve(a: ServeArgs) -> ExitCode {
    // Step 1: before the error log exists, errors go to standard error.
    let (config, demo_files) = match load_config(a.config.as_deref(), a.demo_tls) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("larch: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Step 2.
    let log = match ErrorLog::install(&config.error_log) {
        Ok(l) => Arc::new(l),
        Err(e) => {
            eprintln!("larch: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&a, config, demo_files, Arc::clone(&log)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            // Whoever started the server (a terminal, a service manager, a test) learns
            // why it stopped without looking for the file.
            if log.file().is_some() {
                eprintln!("larch: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Reads the configuration file (the embedded defaults without one), with the demo TLS
/// files of `--demo-tls` applied before it is validated, so that its ldaps:// listeners
/// are accepted.
fn load_config(path: Option<&Path>, demo_tls: bool) -> Result<(ServerConfig, Option<DemoFiles>), String> {
    let mut demo_files = None;
    let mut with_demo = |c: &mut ServerConfig| {
        if demo_tls {
            demo_files = Some(demo::apply(c));
        }
    };
    let config = match path {
        Some(path) => ServerConfig::load_with(path, with_demo),
        None => {
            let mut c = ServerConfig::default();
            with_demo(&mut c);
            c.validate().map(|()| c)
        }
    };
    let demo_files = demo_files.transpose().map_err(|e| e.to_string())?;
    let config = config.map_err(|e| e.to_string())?;
    Ok((config, demo_files))
}

/// Step 3: the soft open-files limit up to the hard one, said in the error log.
fn raise_open_files_limit() {
    let text = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |n| n.to_string());
    match larch_server::net::fd_limit::raise_to_hard() {
        Ok(r) if r.from == r.to => info!(open_files_limit = %text(r.to), "open-files limit (soft = hard)"),
        Ok(r) => info!(
            from = %text(r.from),
            to = %text(r.to),
            "raised the open-files limit to the hard limit"
        ),
        Err(e) => warn!(
            error = %e,
            open_files_limit = %text(larch_server::net::fd_limit::soft()),
            "cannot raise the open-files limit to the hard limit; keeping the soft one"
        ),
    }
}

/// What opening did after a crash beyond replaying the log: leftover temporary snapshot
/// files removed, a snapshot due at once because the replayed log was long
/// ([`larch_store::schedule`]).
fn log_recovery(r: &OpenReport) {
    for path in &r.removed_temp_files {
        warn!(
            file = %path.display(),
            "removed a leftover temporary snapshot file (a snapshot write was interrupted by a crash or an error)"
        );
    }
    match &r.startup_snapshot {
        StartupSnapshot::NotDue => {}
        StartupSnapshot::Background => info!(
            replayed = r.replayed,
            "the log replayed at startup reached store.snapshot_after_records: writing a snapshot now, in the \
             background"
        ),
        StartupSnapshot::Written { info, time } => info!(
            replayed = r.replayed,
            snapshot = %info.path.display(),
            lsn = info.lsn,
            seconds = (time.as_secs_f64() * 1000.0).round() / 1000.0,
            "the log replayed at startup was over twice store.snapshot_after_records (an earlier snapshot did \
             not complete): wrote a snapshot before serving"
        ),
        StartupSnapshot::Failed { problem } => warn!(
            replayed = r.replayed,
            problem = %problem,
            "the snapshot due after the long replayed log failed; serving anyway (the log holds every change), \
             retrying in the background"
        ),
    }
}

/// Steps 3 to 5.
fn run(
    a: &ServeArgs,
    config: ServerConfig,
    demo_files: Option<DemoFiles>,
    log: Arc<ErrorLog>,
) -> Result<(), String> {
    info!(
        version = %env!("CARGO_PKG_VERSION"),
        config = %a.config.as_deref().map_or("(embedded defaults)".into(), |p| p.display().to_string()),
        error_log_level = %log.level(),
        "starting"
    );
    if let Some(files) = demo_files {
        let verb = if files.created { "created" } else { "using" };
        info!(
            dir = %files.certificate.parent().unwrap_or(&files.certificate).display(),
            "--demo-tls: {verb} a demo CA and server certificate; clients trust it with LDAPTLS_CACERT={}",
            files.ca.display()
        );
    }
    raise_open_files_limit();
    let threads = larch_server::workers::threads_for(config.server.worker_threads);
    let started = Instant::now();
    let data_dir = config.server.data_dir.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .max_blocking_threads(larch_server::password::gate::blocking_threads())
        .thread_name("larch-worker")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    // The metrics endpoint answers before the store is loaded: alive, not yet ready.
    let metrics = match config.metrics.listen {
        None => None,
        Some(addr) => {
            let m = runtime
                .block_on(MetricsEndpoint::start(addr))
                .map_err(|e| format!("metrics.listen {addr}: {e}"))?;
            info!(url = %format!("http://{}/metrics", m.local), "metrics endpoint listening");
            Some(m)
        }
    };
    let fetched = start_from_snapshot(&config, &runtime);
    // A cluster node readies its data directory before the store opens on it: a single
    // server's data is converted on the node that bootstraps the cluster, refused on another.
    larch_server::cluster::existing_data::prepare(&config)
        .map_err(|e| format!("{}: cluster: {e}", data_dir.display()))?;
    let (dir, startup) = Directory::open(config).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    if fetched {
        match dir
            .replication
            .seed_from_snapshot(&dir.store, &dir.schema, &dir.suffixes, dir.optypes)
        {
            Ok(n) => info!(
                csns = n,
                "replication: the snapshot's context CSNs are the replica's cookie"
            ),
            Err(e) => {
                warn!(error = %e, "replication: cannot store the snapshot's cookie; the first session refreshes in full")
            }
        }
    }
    crate::alloc::release_free_memory();
    let r = &startup.report;
    if let Some(cut) = &r.wal_cut {
        warn!(
            segment = %cut.path.display(),
            offset = cut.offset,
            discarded = cut.discarded,
            reason = %cut.reason,
            "the transaction log had a damaged tail, which was cut"
        );
    }
    info!(
        entries = r.entries,
        data_dir = %data_dir.display(),
        replayed = r.replayed,
        seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        "loaded the directory"
    );
    log_recovery(r);
    for dn in &startup.created {
        info!(dn = %dn, "created the entry");
    }
    if dir.acl.is_default_policy() {
        info!("access control: the default policy (no [[access]] rule configured)");
    } else {
        info!(
            rules = dir.acl.len(),
            "access control: the configured [[access]] rules"
        );
    }
    let d = &dir.config.directory;
    if let Some(password) = &startup.generated_admin_password {
        warn!(
            dn = %d.admin_dn,
            password = %password,
            "generated the admin password (shown once, stored hashed; set {} before the first start to choose it, \
             or later to reset it)",
            d.admin_password_env
        );
        // Shown once and needed to administer the server: never only in a file the
        // operator may not read, nor filtered out by `level = "error"`.
        if log.file().is_some() || !tracing::enabled!(tracing::Level::WARN) {
            eprintln!(
                "larch: generated password of `{}` (shown once, stored hashed; set {} before the first start \
                 to choose it, or later to reset it):\n{password}",
                d.admin_dn, d.admin_password_env
            );
        }
    }
    if startup.admin_password_reset {
        warn!(
            dn = %d.admin_dn,
            env = %d.admin_password_env,
            "the admin password was reset from the environment"
        );
    }
    if let Some(tls) = &dir.tls {
        let c = tls.certificate();
        info!(
            subject = %c.subject,
            serial = %c.serial,
            not_after = %c.not_after,
            "TLS certificate loaded"
        );
    }
    let dir = Arc::new(dir);
    if let Some(m) = &metrics {
        m.ready(Arc::clone(&dir));
    }
    // Registered before the listeners open, so no SIGHUP or SIGTERM can find its default
    // action (ending the process) once clients can connect.
    let (hangup, stop) = {
        let _in_runtime = runtime.enter();
        let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(|e| format!("cannot handle SIGHUP: {e}"))?;
        (hangup, shutdown_signal()?)
    };
    let reload = Reload {
        dir: Arc::clone(&dir),
        log,
        config_path: a.config.clone(),
        demo_tls: a.demo_tls,
    };
    runtime.spawn(reload_on_sighup(reload, hangup));
    // The read-replica consumers (`[[replication]]`) start on the loaded, set-up store.
    let consumers = if dir.replication.is_empty() {
        None
    } else {
        Some(dir.replication.start(
            &dir.store,
            &dir.schema,
            &dir.suffixes,
            dir.optypes,
            dir.config.limits.max_pdu_bytes,
            runtime.handle(),
        )?)
    };
    // A cluster node joins its cluster before clients can connect: its writes go through
    // the cluster, and the first leader sets the directory up.
    let cluster = match dir.config.cluster {
        None => None,
        Some(_) => Some(runtime.block_on(larch_server::cluster::start(Arc::clone(&dir)))?),
    };
    let served = runtime.block_on(larch_server::net::run(dir.clone(), stop, |bound| {
        for b in bound {
            info!(url = %b, "listening");
        }
    }));
    if let Some(c) = consumers {
        // Before the store closes: a batch already with the writer completes, no other.
        runtime.block_on(c.stop());
    }
    if let Some(c) = cluster {
        // The engine stops before the store closes: no entry is applied after it.
        runtime.block_on(c.stop());
    }
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN_WAIT);
    if let Some(log) = &dir.access_log {
        log.close();
    }
    if let Some(log) = &dir.audit_log {
        // Every change committed so far is written before the store closes.
        log.close();
    }
    served.map_err(|e| e.to_string())?;
    info!("stopping: writing a snapshot");
    dir.store
        .close(true)
        .map_err(|e| format!("closing the store: {e}"))?;
    info!("stopped");
    Ok(())
}

/// What SIGHUP reloads.
struct Reload {
    dir: Arc<Directory>,
    log: Arc<ErrorLog>,
    /// The configuration file (`None`: the embedded defaults, nothing to read again).
    config_path: Option<PathBuf>,
    demo_tls: bool,
}

/// A new replica whose table says `start_from = "snapshot"` and whose data directory holds
/// no store yet fetches its provider's snapshot first
/// (`larch_server::syncrepl::bootstrap`); true when it did. A failed fetch is reported and
/// leaves the directory empty: the consumer then refreshes in full.
fn start_from_snapshot(config: &ServerConfig, runtime: &tokio::runtime::Runtime) -> bool {
    use larch_server::config::StartFrom;
    use larch_server::syncrepl::bootstrap;
    let Some(table) = config
        .replication
        .iter()
        .find(|r| r.start_from == StartFrom::Snapshot)
    else {
        return false;
    };
    let data = &config.server.data_dir;
    if !bootstrap::is_empty_data_dir(data) {
        return false;
    }
    info!(rid = table.rid, provider = %table.provider, "replication: fetching the provider's snapshot");
    match runtime.block_on(bootstrap::fetch_snapshot(
        table,
        data,
        config.limits.max_pdu_bytes,
    )) {
        Ok(f) => {
            info!(
                rid = table.rid,
                lsn = f.lsn,
                octets = f.octets,
                entries = f.entries,
                seconds = (f.elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
                "replication: started from the provider's snapshot"
            );
            true
        }
        Err(e) => {
            warn!(
                rid = table.rid,
                provider = %table.provider,
                error = %e,
                "replication: cannot fetch the provider's snapshot; the replica starts empty and refreshes in full"
            );
            false
        }
    }
}

/// On every SIGHUP: reopens the error log, the access log and the audit log by name
/// (after logrotate moved them), reads `error_log.level` again, and reloads the TLS files; logs what
/// happened.
async fn reload_on_sighup(r: Reload, mut hangup: tokio::signal::unix::Signal) {
    while hangup.recv().await.is_some() {
        if let Err(e) = r.log.reopen() {
            error!(
                path = %r.log.file().unwrap_or(Path::new("")).display(),
                error = %e,
                "SIGHUP: cannot reopen the error log; writing on to the file open until now"
            );
        }
        r.reread_level();
        if let Some(log) = &r.dir.access_log {
            log.reopen();
        }
        if let Some(log) = &r.dir.audit_log {
            log.reopen();
        }
        match &r.dir.tls {
            None => debug!("SIGHUP: no [tls] configured, no certificate to reload"),
            Some(tls) => match tls.reload() {
                Ok(c) => info!(
                    subject = %c.subject,
                    serial = %c.serial,
                    not_after = %c.not_after,
                    "SIGHUP: TLS reloaded; new connections use it"
                ),
                Err(e) => error!(
                    error = %e,
                    "SIGHUP: TLS reload failed, the previous certificate stays in use"
                ),
            },
        }
    }
}

impl Reload {
    /// Reads the configuration file again and puts its `error_log.level` in force; says
    /// when the file holds other changes, which wait for the next start, and keeps the
    /// level when the file cannot be used.
    fn reread_level(&self) {
        let old = self.log.level();
        let Some(path) = &self.config_path else {
            info!(error_log_level = %old, "SIGHUP: no configuration file (embedded defaults); the error log level stays");
            return;
        };
        let new = match load_config(Some(path), self.demo_tls) {
            Ok((c, _)) => c,
            Err(e) => {
                error!(
                    error_log_level = %old,
                    error = %e,
                    "SIGHUP: the configuration file cannot be used; the error log level stays"
                );
                return;
            }
        };
        let running = &self.dir.config;
        let waiting: Vec<&str> = [
            ("error_log.path", new.error_log.path != running.error_log.path),
            (
                "error_log.format",
                new.error_log.format != running.error_log.format,
            ),
        ]
        .into_iter()
        .filter_map(|(key, changed)| changed.then_some(key))
        .collect();
        if !waiting.is_empty() {
            warn!(
                keys = %waiting.join(", "),
                "SIGHUP: [error_log] keys changed in the file take effect at the next start \
                 (SIGHUP reads only error_log.level again)"
            );
        }
        let mut rest = new.clone();
        rest.error_log = running.error_log.clone();
        if rest != *running {
            info!(
                "SIGHUP: the configuration file has other changes; they take effect at the next start \
                 (SIGHUP reads only error_log.level again, and the TLS files)"
            );
        }
        let level = new.error_log.level;
        if level == old {
            info!(error_log_level = %old, "SIGHUP: error log level unchanged");
            return;
        }
        // Said under the more verbose of the two levels: after the change when it shows
        // more, before it when it shows less.
        let said = || info!(from = %old, to = %level, "SIGHUP: error log level changed");
        if level < old {
            said();
        }
        if let Err(e) = self.log.set_level(level) {
            error!(error_log_level = %old, "SIGHUP: {e}; the error log level stays");
            return;
        }
        if level > old {
            said();
        }
    }
}

/// A future that completes on SIGTERM or SIGINT, both handled from this call on (inside the
/// runtime). Called before the listeners open: registered only when first polled, after
/// the accept loops had started, a SIGTERM sent to a server already answering binds could
/// meet the default action and end the process without its shutdown snapshot.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("cannot handle SIGTERM: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("cannot handle SIGINT: {e}"))?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
