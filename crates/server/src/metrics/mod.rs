//! The metrics endpoint (`[metrics] listen`): an HTTP/1.1 listener serving
//! - `GET /metrics`: the server's figures in Prometheus' text format ([`exposition`]),
//!   rendered from one [`ServerReport`], the same report `cn=Monitor` shows;
//! - `GET /healthz`: 200 while the process serves HTTP at all;
//! - `GET /readyz`: 200 once the store is loaded and accepts writes; 503 with the reason
//!   while it loads (the log replays) or after a failed log write.
//!
//! It starts before the store opens ([`MetricsEndpoint::start`]), so a long start is seen
//! as "alive, not ready" rather than as a dead port, and is handed the directory when it
//! is open ([`MetricsEndpoint::ready`]). It has no authentication: bind it to loopback or
//! a management network.
//!
//! Bounds, so that a client of this port cannot cost the server much: at most
//! [`MAX_CONNECTIONS`] connections at once (later ones wait in the kernel's backlog), a
//! request head of at most [`MAX_HEAD_BYTES`], read within [`HEAD_TIMEOUT`], and a
//! connection closed after [`CONNECTION_LIFETIME`] whatever it does.

pub mod exposition;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::directory::Directory;
use crate::report::ServerReport;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The largest request head read.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Time to send a request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a connection is kept, requests included.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);

/// What the endpoint serves from.
#[derive(Debug, Default)]
struct State {
    dir: OnceLock<Arc<Directory>>,
}

/// A running metrics endpoint.
#[derive(Debug, Clone)]
pub struct MetricsEndpoint {
    state: Arc<State>,
    /// Where it listens.
    pub local: SocketAddr,
}

impl MetricsEndpoint {
    /// Binds `addr` and serves on the current tokio runtime (call inside it). Until
    /// [`MetricsEndpoint::ready`], `/readyz` and `/metrics` answer 503.
    pub async fn start(addr: SocketAddr) -> std::io::Result<MetricsEndpoint> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let state = Arc::new(State::default());
        tokio::spawn(accept(listener, state.clone()));
        Ok(MetricsEndpoint { state, local })
    }

    /// The directory is open: serve its figures.
    pub fn ready(&self, dir: Arc<Directory>) {
        let _ = self.state.dir.set(dir);
    }
}

async fn accept(listener: TcpListener, state: Arc<State>) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
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
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
        });
    }
}

/// The answer to one request.
fn respond(state: &State, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into());
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let dir = state.dir.get();
    match req.uri().path() {
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => match readiness(dir.map(|d| &**d)) {
            Ok(()) => text(StatusCode::OK, "ready\n".into()),
            Err(why) => text(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")),
        },
        "/metrics" => match dir {
            Some(dir) => {
                let body = exposition::render(&ServerReport::gather(dir, false));
                let mut r = Response::new(Full::new(Bytes::from(body)));
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static(exposition::CONTENT_TYPE));
                r
            }
            None => text(StatusCode::SERVICE_UNAVAILABLE, "the store is loading\n".into()),
        },
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: /metrics, /healthz, /readyz\n".into(),
        ),
    }
}

/// Whether the server is ready, and why not.
fn readiness(dir: Option<&Directory>) -> Result<(), String> {
    let dir = dir.ok_or("the store is loading")?;
    match dir.store.write_halt() {
        None => Ok(()),
        Some(halt) => Err(format!("writes halted after a failed log write ({halt})")),
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_ready_while_loading() {
        assert_eq!(readiness(None), Err("the store is loading".to_string()));
    }
}
