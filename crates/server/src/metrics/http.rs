//! The endpoint's HTTP/1.1 listener and its bounds, so that a client of this port cannot
//! cost the server much: at most [`MAX_CONNECTIONS`] connections at once (later ones wait
//! in the kernel's backlog until one ends), a request head of at most [`MAX_HEAD_BYTES`]
//! (a longer one is answered 431 and the connection closed), each head read within
//! [`HEAD_TIMEOUT`] (the clock also runs while a kept-alive connection is idle between
//! requests, so an idle or slow client is closed), and a connection closed after
//! [`CONNECTION_LIFETIME`] whatever it does.
//!
//! HTTP itself is hyper's (see the crate's `Cargo.toml` for why a crate here): this file
//! only accepts, bounds, and hands each request to [`super::routes`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::routes::{respond, State};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The largest request head read (hyper's read buffer; it refuses less than 8 KiB).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Time to send a request head, counted from the end of the previous answer on a
/// kept-alive connection.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a connection is kept, requests included.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);
/// The pause after a failed `accept` (out of descriptors, most likely) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The listener's bounds; [`Limits::default`] is the named constants above (tests shorten
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once.
    pub max_connections: usize,
    /// The largest request head read (at least 8,192: hyper's own floor).
    pub max_head_bytes: usize,
    /// Time to send a request head.
    pub head_timeout: Duration,
    /// The longest a connection is kept.
    pub connection_lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: MAX_CONNECTIONS,
            max_head_bytes: MAX_HEAD_BYTES,
            head_timeout: HEAD_TIMEOUT,
            connection_lifetime: CONNECTION_LIFETIME,
        }
    }
}

/// Accepts connections on `listener` and serves each on its own task, within `limits`.
pub(super) async fn accept(listener: TcpListener, state: Arc<State>, limits: Limits) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // hyper panics below its floor; a smaller figure is taken as the floor.
    let head_bytes = limits.max_head_bytes.max(8 * 1024);
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let state = state.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(respond(&state, &req)) }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.head_timeout)
                .max_buf_size(head_bytes)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(limits.connection_lifetime, conn).await;
        });
    }
}
