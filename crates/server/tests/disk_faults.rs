//! A running server whose disk fails under the store's write-ahead log (the store's files
//! go through a `GatedStorage`): a full disk, then fsyncs failing. Clients talk to it over
//! TCP.
//!
//! What must hold: from the first failure on, every write (add, modify, delete, modify
//! DN, Password Modify) on every connection, the one that met the failure or another, old
//! or new, gets `unavailable` (52) with the same message naming the cause and what to do;
//! the disk working again changes nothing (a failed fsync is never retried); searches,
//! compares and binds still answer; the directory's health says why; after a restart on a
//! sound disk every acknowledged write is there and writes work again.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::gated::{Gate, GatedStorage};
use common::{fresh_data_dir, test_store, with_add, with_modify};
use larch_proto::exop::{ExtendedValue, PasswordModifyRequest};
use larch_proto::frame::{frame, Frame};
use larch_proto::{
    Authentication, BindRequest, CompareRequest, DelRequest, DerefAliases, LdapMessage, MessageId,
    ModifyDnRequest, ModifyOperation, OwnedFilter, ProtocolOp, ResultCode, SearchRequest, SearchScope, SeqOf,
};
use larch_server::config::{ListenUrl, ServerConfig};
use larch_server::directory::Directory;
use larch_store::storage::{FsStorage, Storage};
use larch_store::wal::SyncPolicy;

const SUFFIX: &str = "dc=example,dc=com";
const ADMIN: &str = "cn=admin,dc=example,dc=com";
const PASSWORD: &str = "disk-faults-admin-secret";
const PASSWORD_ENV: &str = "LARCH_TEST_DISK_FAULTS_ADMIN_PASSWORD";

/// A server on a loopback port, its store on `storage`.
struct Server {
    addr: SocketAddr,
    dir: Arc<Directory>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(data: PathBuf, storage: Arc<dyn Storage>, sync: SyncPolicy) -> Server {
        let mut config = ServerConfig::default();
        test_store(&mut config, data);
        config.store.sync = sync;
        // The same password on every start, from a variable of this test's own.
        std::env::set_var(PASSWORD_ENV, PASSWORD);
        config.directory.admin_password_env = PASSWORD_ENV.to_string();
        config.server.listen = vec![ListenUrl {
            tls: false,
            host: "127.0.0.1".into(),
            port: 0,
        }];
        let (dir, _) = Directory::open_on(config, storage).unwrap();
        let dir = Arc::new(dir);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let served = Arc::clone(&dir);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let shutdown = async {
                let _ = stop_rx.await;
            };
            runtime
                .block_on(larch_server::net::run(served, shutdown, |b| {
                    ready_tx.send(b[0].addr).unwrap();
                }))
                .unwrap();
            runtime.shutdown_timeout(Duration::from_secs(2));
        });
        let addr = ready_rx.recv_timeout(Duration::from_secs(60)).unwrap();
        Server {
            addr,
            dir,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Stops serving and closes the store; returns what closing said.
    fn stop(mut self) -> Result<(), String> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.dir.store.close(false).map_err(|e| e.to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One response: its result code and message, and the entries a search returned.
#[derive(Debug)]
struct Answer {
    code: ResultCode,
    diag: String,
    entries: usize,
}

/// A blocking LDAP client.
struct Conn {
    tcp: TcpStream,
    buf: Vec<u8>,
    next_id: MessageId,
}

impl Conn {
    fn bound(addr: SocketAddr) -> Conn {
        let tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut c = Conn {
            tcp,
            buf: Vec::new(),
            next_id: 1,
        };
        let a = c.bind();
        assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);
        c
    }

    fn bind(&mut self) -> Answer {
        self.request(ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: ADMIN.as_bytes(),
            authentication: Authentication::Simple(PASSWORD.as_bytes()),
        }))
    }

    fn request(&mut self, op: ProtocolOp<'_>) -> Answer {
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
        let mut entries = 0;
        loop {
            if let Ok(Frame::Complete(n)) = frame(&self.buf, 1 << 20) {
                let pdu: Vec<u8> = self.buf.drain(..n).collect();
                let m = LdapMessage::decode(&pdu).unwrap();
                assert_eq!(m.message_id, id);
                let result = match m.op {
                    ProtocolOp::SearchResultEntry(_) => {
                        entries += 1;
                        continue;
                    }
                    ProtocolOp::BindResponse(r) => r.result,
                    ProtocolOp::ExtendedResponse(r) => r.result,
                    ProtocolOp::SearchResultDone(r)
                    | ProtocolOp::AddResponse(r)
                    | ProtocolOp::ModifyResponse(r)
                    | ProtocolOp::DelResponse(r)
                    | ProtocolOp::ModifyDnResponse(r)
                    | ProtocolOp::CompareResponse(r) => r,
                    other => panic!("unexpected {}", other.name()),
                };
                return Answer {
                    code: result.code,
                    diag: String::from_utf8_lossy(result.diagnostic_message).into_owned(),
                    entries,
                };
            }
            let mut chunk = [0u8; 4096];
            let n = self.tcp.read(&mut chunk).unwrap();
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn add(&mut self, dn: &str) -> Answer {
        let ou = dn
            .split(',')
            .next()
            .unwrap()
            .trim_start_matches("ou=")
            .to_string();
        let attrs = [
            ("objectClass", vec!["organizationalUnit"]),
            ("ou", vec![ou.as_str()]),
        ];
        with_add(dn, &attrs, |req| self.request(ProtocolOp::AddRequest(req)))
    }

    fn modify(&mut self, dn: &str, description: &str) -> Answer {
        let values = [description];
        let changes = [(ModifyOperation::Replace, "description", &values[..])];
        with_modify(dn, &changes, |req| self.request(ProtocolOp::ModifyRequest(req)))
    }

    fn delete(&mut self, dn: &str) -> Answer {
        self.request(ProtocolOp::DelRequest(DelRequest { dn: dn.as_bytes() }))
    }

    fn rename(&mut self, dn: &str, new_rdn: &str) -> Answer {
        self.request(ProtocolOp::ModifyDnRequest(ModifyDnRequest {
            entry: dn.as_bytes(),
            new_rdn: new_rdn.as_bytes(),
            delete_old_rdn: true,
            new_superior: None,
        }))
    }

    fn password_modify(&mut self, who: &str) -> Answer {
        let req = PasswordModifyRequest {
            user_identity: Some(who.as_bytes()),
            old_password: None,
            new_password: Some(b"a-new-password-for-the-test"),
        };
        let mut buf = Vec::new();
        let ext = req.to_request(&mut buf);
        self.request(ProtocolOp::ExtendedRequest(ext))
    }

    /// A subtree search of the suffix for organizational units: the entries found.
    fn units(&mut self) -> Answer {
        let filter = OwnedFilter::parse("(objectClass=organizationalUnit)").unwrap();
        self.request(ProtocolOp::SearchRequest(SearchRequest {
            base: SUFFIX.as_bytes(),
            scope: SearchScope::Subtree,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(&[b"1.1".as_slice()]),
        }))
    }

    fn compare_ou(&mut self, dn: &str, value: &str) -> Answer {
        self.request(ProtocolOp::CompareRequest(CompareRequest {
            entry: dn.as_bytes(),
            ava: larch_proto::AttributeValueAssertion {
                description: b"ou",
                value: value.as_bytes(),
            },
        }))
    }
}

fn unit(name: &str) -> String {
    format!("ou={name},{SUFFIX}")
}

/// Every kind of write from `conn`: each must get 52 with `message`.
fn every_write_is_unavailable(conn: &mut Conn, message: &str, tag: &str) {
    let answers = [
        ("add", conn.add(&unit(&format!("refused-{tag}")))),
        ("modify", conn.modify(&unit("kept0"), "refused")),
        ("delete", conn.delete(&unit("kept1"))),
        ("modify DN", conn.rename(&unit("kept2"), "ou=renamed")),
        ("password modify", conn.password_modify(ADMIN)),
        // Writes that would fail anyway get the same answer: the halt is checked first.
        ("add of an existing entry", conn.add(&unit("kept0"))),
        ("delete of a DN that does not parse", conn.delete("no DN at all")),
    ];
    for (what, a) in answers {
        assert_eq!(a.code, ResultCode::UNAVAILABLE, "{tag}: {what}: {}", a.diag);
        assert_eq!(
            a.diag, message,
            "{tag}: {what}: the same message on every connection"
        );
    }
}

/// Reads still answer, on the last durable state.
fn reads_answer(conn: &mut Conn, units: usize) {
    let found = conn.units();
    assert_eq!(found.code, ResultCode::SUCCESS, "{}", found.diag);
    assert_eq!(found.entries, units);
    let cmp = conn.compare_ou(&unit("kept0"), "kept0");
    assert_eq!(cmp.code, ResultCode::COMPARE_TRUE, "{}", cmp.diag);
}

/// The disk fails through `fail` (and works again through `heal`): the server answers as
/// the module documentation says; then a restart on the real filesystem recovers.
fn run(name: &str, sync: SyncPolicy, fail: impl Fn(&Gate), heal: impl Fn(&Gate), op: &str, cause: &str) {
    let data = fresh_data_dir(name);
    let gate = Arc::new(Gate::default());
    let server = Server::start(data.clone(), Arc::new(GatedStorage(Arc::clone(&gate))), sync);
    let mut first = Conn::bound(server.addr);
    let mut other = Conn::bound(server.addr);
    let mut acked = Vec::new();
    for i in 0..3 {
        let dn = unit(&format!("kept{i}"));
        let a = first.add(&dn);
        assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);
        acked.push(dn);
    }
    assert!(server.dir.write_halt().is_none());

    fail(&gate);
    let met = first.modify(&unit("kept0"), "changed while the disk fails");
    assert_eq!(met.code, ResultCode::UNAVAILABLE, "{}", met.diag);
    let message = format!(
        "the directory cannot write: the write-ahead log failed to {op} ({cause}); \
         restart the server once the disk is fixed"
    );
    assert_eq!(met.diag, message);
    let halt = server
        .dir
        .write_halt()
        .expect("the health says writes are halted");
    assert_eq!((halt.op.as_str(), halt.cause.as_str()), (op, cause));
    assert!(halt.path.starts_with(&data), "{}", halt.path.display());

    let syncs = gate.syncs.load(Ordering::SeqCst);
    heal(&gate);
    every_write_is_unavailable(&mut other, &message, "another connection");
    every_write_is_unavailable(&mut first, &message, "the connection that met it");
    let mut late = Conn::bound(server.addr);
    every_write_is_unavailable(&mut late, &message, "a new connection");
    assert_eq!(
        gate.syncs.load(Ordering::SeqCst),
        syncs,
        "no fsync after the failure"
    );
    for conn in [&mut first, &mut other, &mut late] {
        reads_answer(conn, acked.len());
    }
    assert_eq!(late.bind().code, ResultCode::SUCCESS, "binds still answer");

    let closed = server.stop().unwrap_err();
    assert!(
        closed.contains("the store accepts no writes"),
        "closing reports the halt: {closed}"
    );
    assert!(closed.contains(cause), "{closed}");

    // A restart on a sound disk: every acknowledged write, nothing else, writes again.
    let server = Server::start(data.clone(), Arc::new(FsStorage), sync);
    assert!(server.dir.write_halt().is_none());
    let mut conn = Conn::bound(server.addr);
    reads_answer(&mut conn, acked.len());
    let modified = conn.modify(&unit("kept0"), "after the restart");
    assert_eq!(modified.code, ResultCode::SUCCESS, "{}", modified.diag);
    assert_eq!(conn.add(&unit("new")).code, ResultCode::SUCCESS);
    server.stop().unwrap();
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn a_full_disk_under_the_log_makes_every_write_unavailable_and_reads_go_on() {
    run(
        "disk-full",
        SyncPolicy::None,
        |g| g.full.store(true, Ordering::SeqCst),
        |g| g.full.store(false, Ordering::SeqCst),
        "write",
        "no space left on device (test)",
    );
}

#[test]
fn a_failed_fsync_makes_every_write_unavailable_for_good_and_reads_go_on() {
    run(
        "fsync-fails",
        SyncPolicy::Always,
        |g| g.fail_syncs.store(true, Ordering::SeqCst),
        |g| g.fail_syncs.store(false, Ordering::SeqCst),
        "sync",
        "Input/output error",
    );
}
