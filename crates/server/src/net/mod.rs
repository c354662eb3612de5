//! The network front end: listeners, connection limits, and orderly shutdown.
//!
//! [`run`] binds every URL of `server.listen` (`ldaps://` ones need `[tls]`: their
//! connections start with the TLS handshake; `ldap://` ones offer StartTLS when TLS is
//! configured), accepts connections (each counted against the connection limits of
//! [`limits`], which follow the file-descriptor limit of [`fd_limit`], and served by
//! [`crate::session::serve`] on the tokio runtime), and on shutdown:
//! 1. stops accepting and tells every connection to stop reading requests;
//! 2. waits up to [`SHUTDOWN_GRACE`] for operations in flight to finish (every write
//!    already handed to the store is answered; persistent searches are ended by the
//!    synchronization provider, [`crate::syncprov`]);
//! 3. closes whatever is still open (searches still running are abandoned) and returns.
//!
//! The caller then closes the store, which writes a snapshot.

pub mod fd_limit;
pub mod limits;
pub mod listener;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use larch_proto::ResultCode;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::directory::Directory;
use crate::outcome::{respond, ConnectionEvent};
use crate::session::inflight::InFlight;
use crate::session::{self, Closing, ConnectionContext};
use limits::{ConnectionLimits, LimitSource, MAX_REFUSALS_IN_FLIGHT};

/// How long shutdown waits for operations in flight before closing connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long the accept loop waits after `accept` failed (out of file descriptors, out of
/// memory for a socket) before trying again: the pending connection stays in the kernel's
/// queue, so retrying at once would spin on the same error; 50 ms is 20 tries a second,
/// and a freed descriptor is used soon after.
pub const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(50);

/// While `accept` keeps failing, the error log says so at most once per this interval
/// (with the number of failures since), not once per retry.
pub const ACCEPT_FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// How long a refused connection's Notice of Disconnection may take to write.
pub const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A listen address could not be bound.
    #[error("cannot listen on {url}: {source}")]
    Bind {
        /// The URL.
        url: String,
        /// Why.
        source: std::io::Error,
    },
    /// An `ldaps://` URL without TLS.
    #[error("cannot listen on {0}: LDAPS needs TLS, which is not configured on this server")]
    NoTls(String),
}

/// A bound listener, as [`run`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The address the socket is bound to.
    pub addr: SocketAddr,
    /// `ldaps://` (TLS from the first byte).
    pub tls: bool,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", if self.tls { "ldaps" } else { "ldap" }, self.addr)
    }
}

/// What shutdown needs of a live connection: its close flag and its operations.
type LiveConnection = (Arc<Closing>, Arc<InFlight>);

/// Live connections, so that shutdown can close them.
#[derive(Debug, Default)]
struct Registry {
    next: AtomicU64,
    live: Mutex<HashMap<u64, LiveConnection>>,
}

impl Registry {
    /// The number of the next connection (accepted or refused), from 1.
    fn next_conn(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn insert(&self, key: u64, closing: Arc<Closing>, inflight: Arc<InFlight>) {
        self.lock().insert(key, (closing, inflight));
    }

    fn remove(&self, key: u64) {
        self.lock().remove(&key);
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    fn close_all(&self) {
        for (closing, inflight) in self.lock().values() {
            inflight.abandon_all();
            closing.close();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, LiveConnection>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves `dir` on its configured listen URLs until `shutdown` completes. `ready` is
/// called with the bound listeners once every one is up.
pub async fn run(
    dir: Arc<Directory>,
    shutdown: impl Future<Output = ()>,
    ready: impl FnOnce(&[Bound]),
) -> Result<(), ServeError> {
    let mut listeners = Vec::new();
    for url in &dir.config.server.listen {
        let text = format!(
            "{}://{}:{}",
            if url.tls { "ldaps" } else { "ldap" },
            url.host,
            url.port
        );
        if url.tls && dir.tls.is_none() {
            return Err(ServeError::NoTls(text));
        }
        let host = url.host.trim_start_matches('[').trim_end_matches(']');
        let listener = listener::bind(host, url.port)
            .await
            .map_err(|source| ServeError::Bind { url: text, source })?;
        listeners.push((listener, url.tls));
    }
    let bound: Vec<Bound> = listeners
        .iter()
        .filter_map(|(l, tls)| l.local_addr().ok().map(|addr| Bound { addr, tls: *tls }))
        .collect();
    ready(&bound);

    let conn_limits = connection_limits(&dir);
    let refusals = Arc::new(Semaphore::new(MAX_REFUSALS_IN_FLIGHT));
    let registry = Arc::new(Registry::default());
    let (drain_tx, drain_rx) = watch::channel(false);
    let mut accepters = Vec::new();
    for (listener, ldaps) in listeners {
        accepters.push(tokio::spawn(accept_loop(
            listener,
            ldaps,
            dir.clone(),
            conn_limits.clone(),
            refusals.clone(),
            registry.clone(),
            drain_rx.clone(),
        )));
    }
    shutdown.await;
    for a in &accepters {
        a.abort();
    }
    let _ = drain_tx.send(true);
    // Persistent searches never finish by themselves: they end now.
    if let Some(provider) = &dir.sync_provider {
        provider.stop();
    }
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    while registry.len() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    registry.close_all();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while registry.len() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// The connection limits of `dir`'s configuration, the total following the soft
/// file-descriptor limit unless configured ([`limits::connection_limit`]); the error log
/// says which limits are in force and why.
fn connection_limits(dir: &Directory) -> Arc<ConnectionLimits> {
    let configured = &dir.config.limits;
    let fd_soft = fd_limit::soft();
    let (total, source) = limits::connection_limit(configured.max_connections, fd_soft);
    if let Some(m) = &dir.monitor {
        m.set_connection_limit(total as u64);
    }
    let per_ip = configured.max_connections_per_ip;
    let per_ip_text = per_ip.map_or_else(|| "none".to_string(), |n| n.to_string());
    match source {
        LimitSource::Configured => {
            tracing::info!(max_connections = total, per_address = %per_ip_text, "connection limit: limits.max_connections");
            let (room, _) = limits::connection_limit(None, fd_soft);
            if let (Some(fds), true) = (fd_soft, total > room) {
                tracing::warn!(
                    max_connections = total,
                    open_files_limit = fds,
                    "limits.max_connections is above what the open-files limit leaves for clients ({room}): \
                     past it, accepting connections fails until some close; raise LimitNOFILE"
                );
            }
        }
        LimitSource::FdLimit(fds) => tracing::info!(
            max_connections = total,
            per_address = %per_ip_text,
            open_files_limit = fds,
            reserve = limits::FD_RESERVE,
            "connection limit: the open-files limit less the reserve for the server's own files"
        ),
        LimitSource::FdLimitTooLow(fds) => tracing::warn!(
            max_connections = total,
            per_address = %per_ip_text,
            open_files_limit = fds,
            "the open-files limit is too low to serve many clients; raise it (ulimit -n, LimitNOFILE)"
        ),
        LimitSource::Unlimited => tracing::info!(
            per_address = %per_ip_text,
            "connection limit: none (no open-files limit)"
        ),
    }
    ConnectionLimits::new(total, per_ip)
}

/// A run of failed `accept` calls, reported at most once per
/// [`ACCEPT_FAILURE_LOG_INTERVAL`].
#[derive(Debug, Default)]
struct AcceptFailures {
    /// Failures since the last report.
    unreported: u64,
    /// When the run was last reported (`None`: no run going on).
    reported: Option<tokio::time::Instant>,
}

impl AcceptFailures {
    fn failed(&mut self, listener: &str, e: &std::io::Error) {
        self.unreported += 1;
        let now = tokio::time::Instant::now();
        if self
            .reported
            .is_some_and(|at| now.duration_since(at) < ACCEPT_FAILURE_LOG_INTERVAL)
        {
            return;
        }
        tracing::warn!(
            listener = %listener,
            error = %e,
            failures = self.unreported,
            "cannot accept connections (connections already open are served); retrying every {} ms",
            ACCEPT_RETRY_DELAY.as_millis()
        );
        self.unreported = 0;
        self.reported = Some(now);
    }

    fn accepted(&mut self, listener: &str) {
        if self.reported.take().is_some() {
            tracing::info!(listener = %listener, failures = self.unreported, "accepting connections again");
            self.unreported = 0;
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    ldaps: bool,
    dir: Arc<Directory>,
    limits: Arc<ConnectionLimits>,
    refusals: Arc<Semaphore>,
    registry: Arc<Registry>,
    draining: watch::Receiver<bool>,
) {
    let mut failures = AcceptFailures::default();
    let local = listener
        .local_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(e) => {
                failures.failed(&local, &e);
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        failures.accepted(&local);
        let conn = registry.next_conn();
        match limits.admit(peer.ip()) {
            Ok(slot) => {
                let closing = Arc::new(Closing::default());
                let inflight = Arc::new(InFlight::default());
                let key = conn;
                registry.insert(key, closing.clone(), inflight.clone());
                let ctx = ConnectionContext {
                    dir: dir.clone(),
                    draining: draining.clone(),
                    ldaps,
                    conn,
                };
                let registry = registry.clone();
                tokio::spawn(async move {
                    session::serve(stream, peer, ctx, closing, inflight).await;
                    registry.remove(key);
                    drop(slot);
                });
            }
            Err(refusal) => {
                let why = refusal.to_string();
                dir.observers.connection(&ConnectionEvent::Refused {
                    conn,
                    peer: Some(peer),
                    local: stream.local_addr().ok(),
                    reason: &why,
                });
                // On an `ldaps://` listener the client expects a TLS handshake, not a
                // plaintext notice: it is just closed; so is one past the refusals
                // already being written.
                match refusals.clone().try_acquire_owned() {
                    Ok(permit) if !ldaps => {
                        tokio::spawn(async move {
                            refuse(stream, why).await;
                            drop(permit);
                        });
                    }
                    _ => drop(stream),
                }
            }
        }
    }
}

/// Tells a refused client why (a Notice of Disconnection with `busy`) and closes.
async fn refuse(mut stream: TcpStream, why: String) {
    let mut out = Vec::new();
    respond::write_notice(&mut out, &respond::notice(ResultCode::BUSY, why));
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, async {
        stream.write_all(&out).await?;
        stream.shutdown().await
    })
    .await;
}
