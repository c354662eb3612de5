//! The metrics endpoint (`[metrics] listen`): an HTTP/1.1 listener serving
//! - `GET /metrics`: the server's figures in Prometheus' text format ([`exposition`]),
//!   rendered from one [`crate::report::ServerReport`], the same report `cn=Monitor` shows;
//! - `GET /healthz`: 200 while the process serves HTTP at all;
//! - `GET /readyz`: 200 once the store is loaded and accepts writes; 503 with the reason
//!   while it loads (the log replays) or after a failed log write ([`routes::Readiness`]).
//!
//! It starts before the store opens ([`MetricsEndpoint::start`]), so a long start is seen
//! as "alive, not ready" rather than as a dead port, and is handed the directory when it
//! is open ([`MetricsEndpoint::ready`]). It has no authentication: bind it to loopback or
//! a management network. Its bounds (connections, request head size and time, connection
//! lifetime) are in [`http`].

pub mod exposition;
pub mod http;
pub mod routes;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::directory::Directory;
pub use http::{Limits, CONNECTION_LIFETIME, HEAD_TIMEOUT, MAX_CONNECTIONS, MAX_HEAD_BYTES};
use routes::State;

/// A running metrics endpoint.
#[derive(Debug, Clone)]
pub struct MetricsEndpoint {
    state: Arc<State>,
    /// Where it listens.
    pub local: SocketAddr,
}

impl MetricsEndpoint {
    /// Binds `addr` and serves on the current tokio runtime (call inside it) within the
    /// default [`Limits`]. Until [`MetricsEndpoint::ready`], `/readyz` and `/metrics`
    /// answer 503.
    pub async fn start(addr: SocketAddr) -> std::io::Result<MetricsEndpoint> {
        MetricsEndpoint::start_with(addr, Limits::default()).await
    }

    /// [`MetricsEndpoint::start`] within `limits`.
    pub async fn start_with(addr: SocketAddr, limits: Limits) -> std::io::Result<MetricsEndpoint> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let state = Arc::new(State::default());
        tokio::spawn(http::accept(listener, state.clone(), limits));
        Ok(MetricsEndpoint { state, local })
    }

    /// The directory is open: serve its figures.
    pub fn ready(&self, dir: Arc<Directory>) {
        let _ = self.state.dir.set(dir);
    }
}
