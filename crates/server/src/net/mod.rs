//! The network front end: listeners, connection limits, and orderly shutdown.
//!
//! [`run`] binds every URL of `server.listen` (`ldaps://` ones need `[tls]`: their
//! connections start with the TLS handshake; `ldap://` ones offer StartTLS when TLS is
//! configured), accepts connections (each counted against the connection limits and
//! served by [`crate::session::serve`] on the tokio runtime), and on shutdown:
//! 1. stops accepting and tells every connection to stop reading requests;
//! 2. waits up to [`SHUTDOWN_GRACE`] for operations in flight to finish (every write
//!    already handed to the store is answered);
//! 3. closes whatever is still open (searches still running are abandoned) and returns.
//!
//! The caller then closes the store, which writes a snapshot.

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
use tokio::sync::watch;

use crate::directory::Directory;
use crate::outcome::{respond, ConnectionEvent};
use crate::session::inflight::InFlight;
use crate::session::{self, Closing, ConnectionContext};
use limits::ConnectionLimits;

/// How long shutdown waits for operations in flight before closing connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

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

    let limits = &dir.config.limits;
    let conn_limits = ConnectionLimits::new(limits.max_connections, limits.max_connections_per_ip);
    let registry = Arc::new(Registry::default());
    let (drain_tx, drain_rx) = watch::channel(false);
    let mut accepters = Vec::new();
    for (listener, ldaps) in listeners {
        accepters.push(tokio::spawn(accept_loop(
            listener,
            ldaps,
            dir.clone(),
            conn_limits.clone(),
            registry.clone(),
            drain_rx.clone(),
        )));
    }
    shutdown.await;
    for a in &accepters {
        a.abort();
    }
    let _ = drain_tx.send(true);
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

async fn accept_loop(
    listener: TcpListener,
    ldaps: bool,
    dir: Arc<Directory>,
    limits: Arc<ConnectionLimits>,
    registry: Arc<Registry>,
    draining: watch::Receiver<bool>,
) {
    // Set while accepting fails, so that a run of failures is reported once.
    let mut failing = false;
    let local = listener
        .local_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(e) => {
                if !failing {
                    tracing::warn!(
                        listener = %local,
                        error = %e,
                        "cannot accept connections; retrying every 50 ms"
                    );
                    failing = true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if failing {
            tracing::info!(listener = %local, "accepting connections again");
            failing = false;
        }
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
                // plaintext notice: it is just closed.
                if ldaps {
                    drop(stream);
                } else {
                    tokio::spawn(refuse(stream, why));
                }
            }
        }
    }
}

/// Tells a refused client why (a Notice of Disconnection with `busy`) and closes.
async fn refuse(mut stream: TcpStream, why: String) {
    let mut out = Vec::new();
    respond::write_notice(&mut out, &respond::notice(ResultCode::BUSY, why));
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&out)).await;
    let _ = stream.shutdown().await;
}
