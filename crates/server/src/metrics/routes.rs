//! What the endpoint answers: `/metrics`, `/healthz`, `/readyz`, 404 for any other path and
//! 405 for any method but GET and HEAD. Readiness is three states: loading (no directory
//! yet), ready, and writes halted after a failed log write; each answer is one line, since
//! probes and people read it in logs.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use larch_store::WriteHalt;

use super::exposition;
use crate::directory::Directory;
use crate::report::ServerReport;

/// What the endpoint serves from: the directory, once it is open.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) dir: OnceLock<Arc<Directory>>,
}

/// Where the server is on its way to serving writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// The store is being opened (a snapshot loaded, the log replayed).
    Loading,
    /// Loaded, and writes are accepted.
    Ready,
    /// Writes are refused after a failed log write, until a restart (the failure).
    WritesHalted(String),
}

impl Readiness {
    /// The state of a server with `dir` open (`None`: still loading).
    pub fn of(dir: Option<&Directory>) -> Readiness {
        match dir {
            None => Readiness::Loading,
            Some(dir) => Readiness::from_halt(dir.write_halt().as_deref()),
        }
    }

    /// The state of a loaded store whose write halt is `halt`.
    pub fn from_halt(halt: Option<&WriteHalt>) -> Readiness {
        match halt {
            None => Readiness::Ready,
            Some(halt) => Readiness::WritesHalted(halt.to_string()),
        }
    }

    /// The `/readyz` answer: status and one line of text.
    pub fn answer(&self) -> (StatusCode, String) {
        match self {
            Readiness::Ready => (StatusCode::OK, "ready\n".into()),
            Readiness::Loading => (
                StatusCode::SERVICE_UNAVAILABLE,
                "not ready: the store is loading\n".into(),
            ),
            Readiness::WritesHalted(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "not ready: writes halted after a failed log write ({})\n",
                    one_line(why)
                ),
            ),
        }
    }
}

/// The answer to one request.
pub(super) fn respond<B>(state: &State, req: &Request<B>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into());
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let dir = state.dir.get();
    match req.uri().path() {
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => {
            let (status, body) = Readiness::of(dir.map(|d| &**d)).answer();
            text(status, body)
        }
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

/// `text` with every control character (a line feed in a file name, say) as a space.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
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
    use std::path::PathBuf;
    use std::time::SystemTime;

    use super::*;

    fn halt(path: &str) -> WriteHalt {
        WriteHalt {
            op: "sync".into(),
            path: PathBuf::from(path),
            cause: "Input/output error".into(),
            kind: std::io::ErrorKind::Other,
            since: SystemTime::now(),
            undo_failed: None,
        }
    }

    /// The status of `method path`; a 405 must name the methods allowed.
    fn get(state: &State, method: Method, path: &str) -> StatusCode {
        let req = Request::builder().method(method).uri(path).body(()).unwrap();
        let r = respond(state, &req);
        if r.status() == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(r.headers().get(ALLOW).unwrap(), "GET, HEAD");
        }
        r.status()
    }

    #[test]
    fn loading_then_ready_then_halted_each_with_one_line() {
        assert_eq!(Readiness::of(None), Readiness::Loading);
        assert_eq!(
            Readiness::Loading.answer(),
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "not ready: the store is loading\n".to_string()
            )
        );
        assert_eq!(Readiness::from_halt(None), Readiness::Ready);
        assert_eq!(Readiness::Ready.answer(), (StatusCode::OK, "ready\n".to_string()));
        let halted = Readiness::from_halt(Some(&halt("/data/wal/00000001.log")));
        let (status, body) = halted.answer();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            "not ready: writes halted after a failed log write (the write-ahead log failed to sync \
             /data/wal/00000001.log: Input/output error)\n"
        );
        // A file name with a line feed still makes one line.
        let (_, body) = Readiness::from_halt(Some(&halt("/data/a\nb"))).answer();
        assert_eq!(body.lines().count(), 1, "{body:?}");
        assert!(body.ends_with('\n'));
    }

    #[test]
    fn paths_and_methods_before_the_store_is_loaded() {
        let state = State::default();
        let cases = [
            (Method::GET, "/healthz", StatusCode::OK),
            (Method::HEAD, "/healthz", StatusCode::OK),
            (Method::GET, "/readyz", StatusCode::SERVICE_UNAVAILABLE),
            (Method::GET, "/metrics", StatusCode::SERVICE_UNAVAILABLE),
            (Method::GET, "/", StatusCode::NOT_FOUND),
            (Method::GET, "/metrics/x", StatusCode::NOT_FOUND),
            (Method::POST, "/metrics", StatusCode::METHOD_NOT_ALLOWED),
            (Method::PUT, "/healthz", StatusCode::METHOD_NOT_ALLOWED),
            (Method::DELETE, "/readyz", StatusCode::METHOD_NOT_ALLOWED),
            (Method::OPTIONS, "/nothing", StatusCode::METHOD_NOT_ALLOWED),
        ];
        for (method, path, status) in cases {
            assert_eq!(get(&state, method.clone(), path), status, "{method} {path}");
        }
    }
}
