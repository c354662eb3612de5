//! A tiny in-process LDAP server for tests of the load client (and for measuring the
//! client's own ceiling): it answers every request at once and counts what it received.
//!
//! Answers: a simple bind succeeds with the password `password` (or anonymously) and
//! fails with `invalidCredentials` otherwise; a search whose filter is an equality
//! assertion returns one entry, `uid=<value>,ou=People,dc=example,dc=com` (with `cn` unless
//! `1.1` was asked), except for the value `missing`, which finds nothing; any other filter
//! returns nothing; modify, add and delete succeed; unbind closes the connection.
//! Everything is encoded and decoded with `larch-proto`.
//!
//! TLS ([`FakeServer::start_tls`]): with `ldaps`, every connection starts with a TLS
//! handshake; otherwise connections are plain and StartTLS (RFC 4511 section 4.14) is
//! answered `success` (responseName set) and followed by the handshake. Without TLS,
//! StartTLS is answered `unavailable`, as slapd does without a certificate; on a connection
//! already under TLS, `operationsError`. The server counts the handshakes it saw, full and
//! resumed, so tests can check the client's own counts against it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use larch_proto::frame::{frame, Frame};
use larch_proto::{
    exop, Authentication, BindResponse, ExtendedResponse, FilterNode, LdapMessage, LdapResult,
    PartialAttribute, ProtocolOp, ResultCode, SearchResultEntry, SeqOf,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// What the fake server received.
#[derive(Debug, Default)]
pub struct FakeCounts {
    /// Accepted connections.
    pub connections: AtomicU64,
    /// Bind requests.
    pub binds: AtomicU64,
    /// Search requests.
    pub searches: AtomicU64,
    /// Modify requests.
    pub modifies: AtomicU64,
    /// Add requests.
    pub adds: AtomicU64,
    /// Delete requests.
    pub deletes: AtomicU64,
    /// Unbind requests.
    pub unbinds: AtomicU64,
    /// StartTLS requests.
    pub starttls: AtomicU64,
    /// Full TLS handshakes completed (with or without a HelloRetryRequest).
    pub tls_full: AtomicU64,
    /// Resumed TLS handshakes completed.
    pub tls_resumed: AtomicU64,
    /// TLS handshakes that failed.
    pub tls_failed: AtomicU64,
    /// Anything else.
    pub other: AtomicU64,
}

/// TLS for the fake server.
#[derive(Clone)]
pub struct FakeTls {
    /// The server's rustls configuration (certificate, key, session cache and tickets).
    pub config: Arc<rustls::ServerConfig>,
    /// True: `ldaps://` (TLS from the first octet); false: plain LDAP accepting StartTLS.
    pub ldaps: bool,
}

/// What StartTLS gets on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TlsState {
    /// No TLS configured: `unavailable`.
    Unavailable,
    /// Plain connection of a TLS-capable server: `success`, then the handshake.
    Offered,
    /// Already under TLS: `operationsError`.
    Active,
}

/// What `answer` asks of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Continue,
    Close,
    StartTls,
}

impl FakeCounts {
    /// The value of one counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::SeqCst)
    }
}

/// A running fake server; it stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    ldaps: bool,
    counts: Arc<FakeCounts>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a server on `127.0.0.1` on a free port, on its own thread.
    pub fn start() -> std::io::Result<FakeServer> {
        Self::start_with_latency(Duration::ZERO)
    }

    /// Like [`FakeServer::start`], but every batch of answers waits `latency` before it is
    /// sent, so operations are still in flight whenever the client looks.
    pub fn start_with_latency(latency: Duration) -> std::io::Result<FakeServer> {
        Self::start_with(latency, None)
    }

    /// Like [`FakeServer::start`], with TLS: `ldaps://` or StartTLS on `ldap://`.
    pub fn start_tls(tls: FakeTls) -> std::io::Result<FakeServer> {
        Self::start_with(Duration::ZERO, Some(tls))
    }

    fn start_with(latency: Duration, tls: Option<FakeTls>) -> std::io::Result<FakeServer> {
        let ldaps = tls.as_ref().is_some_and(|t| t.ldaps);
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let counts = Arc::new(FakeCounts::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let c = counts.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("fake-ldap".into())
            .spawn(move || {
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async move {
                    let Ok(listener) = TcpListener::from_std(std_listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept_loop(listener, c, latency, tls) => {}
                    }
                });
            })?;
        Ok(FakeServer {
            addr,
            ldaps,
            counts,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ldap://127.0.0.1:PORT` (`ldaps://` for an ldaps server).
    pub fn url(&self) -> String {
        let scheme = if self.ldaps { "ldaps" } else { "ldap" };
        format!("{scheme}://{}", self.addr)
    }

    /// The counters, once they have stopped moving: requests a client sent just before it
    /// went away may still be in the server's socket buffer when the client returns, so
    /// this waits until nothing changed for 200 ms (at most 3 s).
    pub fn counts(&self) -> &FakeCounts {
        let c = &self.counts;
        let total = || {
            [
                &c.connections,
                &c.binds,
                &c.searches,
                &c.modifies,
                &c.adds,
                &c.deletes,
                &c.unbinds,
                &c.starttls,
                &c.tls_full,
                &c.tls_resumed,
                &c.tls_failed,
                &c.other,
            ]
            .iter()
            .map(|a| a.load(Ordering::SeqCst))
            .sum::<u64>()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        let mut last = total();
        while std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            let now = total();
            if now == last {
                break;
            }
            last = now;
        }
        c
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    counts: Arc<FakeCounts>,
    latency: Duration,
    tls: Option<FakeTls>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        counts.connections.fetch_add(1, Ordering::SeqCst);
        let _ = stream.set_nodelay(true);
        tokio::task::spawn_local(connection(stream, counts.clone(), latency, tls.clone()));
    }
}

async fn connection(mut stream: TcpStream, counts: Arc<FakeCounts>, latency: Duration, tls: Option<FakeTls>) {
    let Some(tls) = tls else {
        serve(&mut stream, &counts, latency, TlsState::Unavailable).await;
        return;
    };
    if !tls.ldaps && serve(&mut stream, &counts, latency, TlsState::Offered).await != Next::StartTls {
        return;
    }
    let Ok(mut stream) = TlsAcceptor::from(tls.config).accept(stream).await else {
        counts.tls_failed.fetch_add(1, Ordering::SeqCst);
        return;
    };
    let counter = match stream.get_ref().1.handshake_kind() {
        Some(rustls::HandshakeKind::Resumed) => &counts.tls_resumed,
        _ => &counts.tls_full,
    };
    counter.fetch_add(1, Ordering::SeqCst);
    serve(&mut stream, &counts, latency, TlsState::Active).await;
}

/// Answers requests until the client goes away or unbinds ([`Next::Close`]), or asks for
/// StartTLS and was told yes ([`Next::StartTls`], the answer already sent).
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    counts: &FakeCounts,
    latency: Duration,
    tls: TlsState,
) -> Next {
    let mut buf = vec![0u8; 64 * 1024];
    let (mut lo, mut hi) = (0, 0);
    let mut out = Vec::with_capacity(64 * 1024);
    loop {
        if hi == buf.len() {
            buf.copy_within(lo..hi, 0);
            hi -= lo;
            lo = 0;
            if hi == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
        }
        let n = match stream.read(&mut buf[hi..]).await {
            Ok(0) | Err(_) => return Next::Close,
            Ok(n) => n,
        };
        hi += n;
        let mut next = Next::Continue;
        while let Ok(Frame::Complete(len)) = frame(&buf[lo..hi], 1 << 20) {
            let Ok(msg) = LdapMessage::decode(&buf[lo..lo + len]) else {
                return Next::Close;
            };
            lo += len;
            next = answer(&msg, counts, tls, &mut out);
            if next != Next::Continue {
                break;
            }
        }
        if lo == hi {
            lo = 0;
            hi = 0;
        }
        if !out.is_empty() {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            if stream.write_all(&out).await.is_err() {
                return Next::Close;
            }
            out.clear();
        }
        if next != Next::Continue {
            return next;
        }
    }
}

/// Appends the answer to `msg`; says whether the connection goes on, closes, or starts TLS.
fn answer(msg: &LdapMessage<'_>, counts: &FakeCounts, tls: TlsState, out: &mut Vec<u8>) -> Next {
    let id = msg.message_id;
    let ok = LdapResult::success();
    match msg.op {
        ProtocolOp::BindRequest(b) => {
            counts.binds.fetch_add(1, Ordering::SeqCst);
            let good = match b.authentication {
                Authentication::Simple(pw) => b.name.is_empty() || pw == b"password",
                _ => false,
            };
            let code = if good {
                ResultCode::SUCCESS
            } else {
                ResultCode::INVALID_CREDENTIALS
            };
            let resp = BindResponse {
                result: LdapResult::new(code, b"", b""),
                server_sasl_creds: None,
            };
            LdapMessage::new(id, ProtocolOp::BindResponse(resp)).encode(out);
        }
        ProtocolOp::SearchRequest(s) => {
            counts.searches.fetch_add(1, Ordering::SeqCst);
            if let FilterNode::Equality(ava) = s.filter.node() {
                if ava.value != b"missing" {
                    let mut dn = b"uid=".to_vec();
                    dn.extend_from_slice(ava.value);
                    dn.extend_from_slice(b",ou=People,dc=example,dc=com");
                    let no_attrs = s.attributes.iter().any(|a| a == b"1.1");
                    let cn: [&[u8]; 1] = [ava.value];
                    let attrs = [PartialAttribute {
                        description: b"cn",
                        values: SeqOf::from_items(&cn),
                    }];
                    let entry = SearchResultEntry {
                        object_name: &dn,
                        attributes: SeqOf::from_items(if no_attrs { &attrs[..0] } else { &attrs[..] }),
                    };
                    LdapMessage::new(id, ProtocolOp::SearchResultEntry(entry)).encode(out);
                }
            }
            LdapMessage::new(id, ProtocolOp::SearchResultDone(ok)).encode(out);
        }
        ProtocolOp::ModifyRequest(_) => {
            counts.modifies.fetch_add(1, Ordering::SeqCst);
            LdapMessage::new(id, ProtocolOp::ModifyResponse(ok)).encode(out);
        }
        ProtocolOp::AddRequest(_) => {
            counts.adds.fetch_add(1, Ordering::SeqCst);
            LdapMessage::new(id, ProtocolOp::AddResponse(ok)).encode(out);
        }
        ProtocolOp::DelRequest(_) => {
            counts.deletes.fetch_add(1, Ordering::SeqCst);
            LdapMessage::new(id, ProtocolOp::DelResponse(ok)).encode(out);
        }
        ProtocolOp::UnbindRequest => {
            counts.unbinds.fetch_add(1, Ordering::SeqCst);
            return Next::Close;
        }
        ProtocolOp::ExtendedRequest(x) if x.name == exop::START_TLS.as_bytes() => {
            counts.starttls.fetch_add(1, Ordering::SeqCst);
            let (result, next) = match tls {
                TlsState::Offered => (ok, Next::StartTls),
                TlsState::Unavailable => (
                    LdapResult::new(ResultCode::UNAVAILABLE, b"", b"TLS is not configured"),
                    Next::Continue,
                ),
                TlsState::Active => (
                    LdapResult::new(ResultCode::OPERATIONS_ERROR, b"", b"TLS already started"),
                    Next::Continue,
                ),
            };
            let resp = ExtendedResponse {
                result,
                name: Some(exop::START_TLS.as_bytes()),
                value: None,
            };
            LdapMessage::new(id, ProtocolOp::ExtendedResponse(resp)).encode(out);
            return next;
        }
        _ => {
            counts.other.fetch_add(1, Ordering::SeqCst);
        }
    }
    Next::Continue
}
