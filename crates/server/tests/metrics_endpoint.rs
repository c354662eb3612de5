//! The metrics endpoint over loopback TCP, with plain sockets as the client:
//! - readiness from loading (before the directory is handed over) to ready, then to
//!   writes halted once the disk under the log fails (the store on a `GatedStorage`);
//! - every counter of `/metrics` only grows between two scrapes of a directory serving
//!   LDAP, and the operations counted are the ones a client did;
//! - the listener's bounds: a request head over the limit is refused with 431, an idle or
//!   slow client is closed after the head timeout (also between requests), and no more
//!   connections than the limit are served at once.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::gated::{Gate, GatedStorage};
use common::{fresh_data_dir, test_store};
use larch_proto::frame::{frame, Frame};
use larch_proto::{
    Authentication, BindRequest, DerefAliases, LdapMessage, MessageId, OwnedFilter, ProtocolOp, ResultCode,
    SearchRequest, SearchScope, SeqOf,
};
use larch_server::config::{ListenUrl, ServerConfig};
use larch_server::directory::Directory;
use larch_server::metrics::{Limits, MetricsEndpoint};
use larch_store::storage::{FsStorage, Storage};

/// How long a test waits for an answer it expects.
const ANSWER_WAIT: Duration = Duration::from_secs(20);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn open(name: &str, storage: Arc<dyn Storage>) -> (Arc<Directory>, std::path::PathBuf) {
    let data = fresh_data_dir(name);
    let mut config = ServerConfig::default();
    test_store(&mut config, data.clone());
    config.server.listen = vec![ListenUrl {
        tls: false,
        host: "127.0.0.1".into(),
        port: 0,
    }];
    let (dir, _) = Directory::open_on(config, storage).unwrap();
    (Arc::new(dir), data)
}

/// One HTTP answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: String,
    body: String,
}

/// Reads one answer from `tcp` (`buf` keeps what was read past it).
fn read_answer(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Answer> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buf[..end].to_vec()).unwrap();
            let status = head.split(' ').nth(1).unwrap().parse().unwrap();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let mut chunk = [0u8; 8192];
                let n = tcp.read(&mut chunk).unwrap();
                assert!(n > 0, "closed in a body");
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = String::from_utf8(buf[end + 4..end + 4 + length].to_vec()).unwrap();
            buf.drain(..end + 4 + length);
            return Some(Answer {
                status,
                headers: head,
                body,
            });
        }
        let mut chunk = [0u8; 8192];
        match tcp.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(ANSWER_WAIT)).unwrap();
    tcp
}

/// `GET path` on a connection of its own.
fn get(addr: SocketAddr, path: &str) -> Answer {
    let mut tcp = connect(addr);
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    read_answer(&mut tcp, &mut Vec::new()).expect("an answer")
}

/// The samples of an exposition: `name{labels}` to value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (key, value) = l.rsplit_once(' ').unwrap();
            let value = if value == "+Inf" {
                f64::INFINITY
            } else {
                value.parse().unwrap()
            };
            (key.to_string(), value)
        })
        .collect()
}

#[test]
fn readiness_goes_from_loading_to_ready_to_writes_halted() {
    let rt = runtime();
    let endpoint = rt
        .block_on(MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()))
        .unwrap();
    let addr = endpoint.local;

    // Alive, not ready: the directory is not open yet.
    let a = get(addr, "/healthz");
    assert_eq!((a.status, a.body.as_str()), (200, "ok\n"));
    let a = get(addr, "/readyz");
    assert_eq!(
        (a.status, a.body.as_str()),
        (503, "not ready: the store is loading\n")
    );
    assert_eq!(get(addr, "/metrics").status, 503);

    let gate = Arc::new(Gate::default());
    let (dir, data) = open("metrics-ready", Arc::new(GatedStorage(Arc::clone(&gate))));
    endpoint.ready(Arc::clone(&dir));
    let a = get(addr, "/readyz");
    assert_eq!((a.status, a.body.as_str()), (200, "ready\n"));
    let a = get(addr, "/metrics");
    assert_eq!(a.status, 200);
    assert!(
        a.headers
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{}",
        a.headers
    );
    assert_eq!(samples(&a.body)["larch_store_writable"], 1.0);

    // The disk fills: the next write fails, and the store stops taking writes.
    gate.full.store(true, Ordering::SeqCst);
    let admin = dir.store.current().find(&dir.admin_dn).unwrap();
    assert!(dir.store.write(move |txn| txn.delete(admin)).is_err());
    assert!(dir.write_halt().is_some());
    let a = get(addr, "/readyz");
    assert_eq!(a.status, 503);
    assert!(
        a.body.starts_with(
            "not ready: writes halted after a failed log write (the write-ahead log failed to write"
        ),
        "{}",
        a.body
    );
    assert!(a.body.contains("no space left on device (test)"), "{}", a.body);
    assert_eq!(a.body.lines().count(), 1, "{:?}", a.body);
    assert_eq!(get(addr, "/healthz").status, 200, "still alive");
    assert_eq!(samples(&get(addr, "/metrics").body)["larch_store_writable"], 0.0);

    let _ = dir.store.close(false);
    drop(rt);
    let _ = std::fs::remove_dir_all(&data);
}

/// A blocking LDAP client of anonymous binds and root DSE searches.
struct Ldap {
    tcp: TcpStream,
    buf: Vec<u8>,
    next_id: MessageId,
}

impl Ldap {
    /// Sends `op` and reads up to its final answer; the result code.
    fn request(&mut self, op: ProtocolOp<'_>) -> ResultCode {
        let id = self.next_id;
        self.next_id += 1;
        let mut out = Vec::new();
        LdapMessage {
            message_id: id,
            op,
            controls: None,
        }
        .encode(&mut out);
        self.tcp.write_all(&out).unwrap();
        loop {
            if let Ok(Frame::Complete(n)) = frame(&self.buf, 1 << 20) {
                let pdu: Vec<u8> = self.buf.drain(..n).collect();
                match LdapMessage::decode(&pdu).unwrap().op {
                    ProtocolOp::SearchResultEntry(_) => continue,
                    ProtocolOp::BindResponse(r) => return r.result.code,
                    ProtocolOp::SearchResultDone(r) => return r.code,
                    other => panic!("unexpected {}", other.name()),
                }
            }
            let mut chunk = [0u8; 4096];
            let n = self.tcp.read(&mut chunk).unwrap();
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn anonymous_bind(&mut self) -> ResultCode {
        self.request(ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: b"",
            authentication: Authentication::Simple(b""),
        }))
    }

    fn root_dse(&mut self) -> ResultCode {
        let filter = OwnedFilter::parse("(objectClass=*)").unwrap();
        self.request(ProtocolOp::SearchRequest(SearchRequest {
            base: b"",
            scope: SearchScope::Base,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(&[b"namingContexts".as_slice()]),
        }))
    }
}

#[test]
fn counters_only_grow_between_two_scrapes_and_count_what_a_client_did() {
    let rt = runtime();
    let (dir, data) = open("metrics-grow", Arc::new(FsStorage));
    let endpoint = rt
        .block_on(MetricsEndpoint::start("127.0.0.1:0".parse().unwrap()))
        .unwrap();
    endpoint.ready(Arc::clone(&dir));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = rt.spawn(larch_server::net::run(
        Arc::clone(&dir),
        async {
            let _ = stop_rx.await;
        },
        move |b| ready_tx.send(b[0].addr).unwrap(),
    ));
    let ldap_addr = ready_rx.recv_timeout(ANSWER_WAIT).unwrap();
    let mut ldap = Ldap {
        tcp: connect(ldap_addr),
        buf: Vec::new(),
        next_id: 1,
    };
    // One round first, so that every family the client touches has its samples.
    assert_eq!(ldap.anonymous_bind(), ResultCode::SUCCESS);
    assert_eq!(ldap.root_dse(), ResultCode::SUCCESS);

    let before = samples(&get(endpoint.local, "/metrics").body);
    const SEARCHES: usize = 6;
    assert_eq!(ldap.anonymous_bind(), ResultCode::SUCCESS);
    for _ in 0..SEARCHES {
        assert_eq!(ldap.root_dse(), ResultCode::SUCCESS);
    }
    let after = samples(&get(endpoint.local, "/metrics").body);

    let grows = |key: &str| {
        let name = key.split('{').next().unwrap();
        name.ends_with("_total")
            || name.ends_with("_bucket")
            || name.ends_with("_count")
            || name.ends_with("_sum")
    };
    let mut checked = 0;
    for (key, v) in &before {
        if grows(key) {
            let now = after.get(key).unwrap_or_else(|| panic!("{key} vanished"));
            assert!(now >= v, "{key}: {v} then {now}");
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} counters");
    let delta = |key: &str| after[key] - before.get(key).copied().unwrap_or(0.0);
    assert_eq!(
        delta(r#"larch_operations_completed_total{op="search"}"#),
        SEARCHES as f64
    );
    assert_eq!(
        delta(r#"larch_operations_initiated_total{op="search"}"#),
        SEARCHES as f64
    );
    assert_eq!(delta(r#"larch_operations_completed_total{op="bind"}"#), 1.0);
    assert_eq!(
        delta(r#"larch_binds_total{method="anonymous",result="success"}"#),
        1.0
    );
    assert_eq!(
        delta(r#"larch_results_total{code="0",result="success"}"#),
        SEARCHES as f64 + 1.0
    );
    assert_eq!(
        delta(r#"larch_operation_duration_seconds_count{op="search"}"#),
        SEARCHES as f64
    );
    assert_eq!(delta(r#"larch_entries_sent_total"#), SEARCHES as f64);
    assert_eq!(after["larch_connections"], 1.0);

    drop(ldap);
    let _ = stop_tx.send(());
    rt.block_on(served).unwrap().unwrap();
    let _ = dir.store.close(false);
    drop(rt);
    let _ = std::fs::remove_dir_all(&data);
}

/// `tcp` is closed, at most after a 408 (hyper's answer to a head that did not come in
/// time).
fn closed_after_timeout(tcp: &mut TcpStream, buf: &mut Vec<u8>, what: &str) {
    if let Some(a) = read_answer(tcp, buf) {
        assert_eq!(a.status, 408, "{what}: {a:?}");
        assert!(read_answer(tcp, buf).is_none(), "{what}: closed after the 408");
    }
}

#[test]
fn the_listener_refuses_big_heads_closes_idle_clients_and_serves_at_most_its_limit() {
    let rt = runtime();
    let limits = Limits {
        max_connections: 2,
        max_head_bytes: 8 * 1024,
        head_timeout: Duration::from_millis(1500),
        connection_lifetime: Duration::from_secs(60),
    };
    let endpoint = rt
        .block_on(MetricsEndpoint::start_with(
            "127.0.0.1:0".parse().unwrap(),
            limits,
        ))
        .unwrap();
    let addr = endpoint.local;

    // A head over the limit: 431, and the connection closed.
    let mut tcp = connect(addr);
    let big = "a".repeat(16 * 1024);
    write!(tcp, "GET /healthz HTTP/1.1\r\nHost: test\r\nX-Big: {big}\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    let a = read_answer(&mut tcp, &mut buf).expect("an answer");
    assert_eq!(a.status, 431);
    assert!(
        read_answer(&mut tcp, &mut buf).is_none(),
        "closed after a refused head"
    );

    // A client that sends half a head, and one that goes quiet after an answer on a
    // kept-alive connection: both closed after the head timeout.
    let started = Instant::now();
    let mut slow = connect(addr);
    slow.write_all(b"GET /heal").unwrap();
    let mut idle = connect(addr);
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let mut idle_buf = Vec::new();
    assert_eq!(read_answer(&mut idle, &mut idle_buf).unwrap().status, 200);
    closed_after_timeout(&mut slow, &mut Vec::new(), "half a head");
    closed_after_timeout(&mut idle, &mut idle_buf, "idle keep-alive");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1400) && waited < Duration::from_secs(10),
        "{waited:?}"
    );

    // Two quiet connections take both places: a third is answered only once the head
    // timeout has closed one of them.
    let _quiet: Vec<TcpStream> = (0..2).map(|_| connect(addr)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    assert_eq!(get(addr, "/healthz").status, 200);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1000),
        "answered beside two held places after {waited:?}"
    );
    // With the places free again, an answer comes at once.
    let started = Instant::now();
    assert_eq!(get(addr, "/healthz").status, 200);
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "{:?}",
        started.elapsed()
    );
    drop(rt);
}
