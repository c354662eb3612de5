//! The Notice of Disconnection is the last message of a session (RFC 4511 section 4.4.1),
//! also when operations are still in flight as it is decided: a client pipelines writes and
//! a search, then a PDU whose envelope cannot be read; every operation before it is
//! answered, the Notice comes after all of them, and then the connection ends.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use larch_proto::frame::{frame, Frame};
use larch_proto::{LdapMessage, ProtocolOp, ResultCode};
use larch_server::config::{ListenUrl, ServerConfig};
use larch_server::directory::Directory;

use common::{fresh_data_dir, test_store};

/// Adds pipelined before the unreadable PDU: enough that the store's writer is still
/// working on them when the session reads it.
const PIPELINED_ADDS: i32 = 200;

struct Server {
    addr: SocketAddr,
    admin_dn: String,
    password: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start() -> Server {
        let mut config = ServerConfig::default();
        let data = fresh_data_dir("notice");
        test_store(&mut config, data);
        config.server.listen = vec![ListenUrl {
            tls: false,
            host: "127.0.0.1".into(),
            port: 0,
        }];
        let admin_dn = config.directory.admin_dn.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let (dir, startup) = Directory::open(config).unwrap();
            let dir = Arc::new(dir);
            let password = startup.generated_admin_password.unwrap();
            let shutdown = async {
                let _ = stop_rx.await;
            };
            runtime
                .block_on(larch_server::net::run(dir.clone(), shutdown, |b| {
                    ready_tx.send((b[0].addr, password)).unwrap();
                }))
                .unwrap();
            runtime.shutdown_timeout(Duration::from_secs(2));
            dir.store.close(false).unwrap();
        });
        let (addr, password) = ready_rx.recv_timeout(Duration::from_secs(60)).unwrap();
        Server {
            addr,
            admin_dn,
            password,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
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

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let len = (n as u32).to_be_bytes();
        out.push(0x84);
        out.extend_from_slice(&len);
    }
    out.extend_from_slice(content);
    out
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn int(n: i32) -> Vec<u8> {
    tlv(0x02, &n.to_be_bytes())
}

fn message(id: i32, op: Vec<u8>) -> Vec<u8> {
    tlv(0x30, &cat(&[int(id), op]))
}

fn bind(dn: &str, password: &str) -> Vec<u8> {
    tlv(
        0x60,
        &cat(&[int(3), tlv(0x04, dn.as_bytes()), tlv(0x80, password.as_bytes())]),
    )
}

fn add(dn: &str, cn: &str) -> Vec<u8> {
    let attr = |name: &str, value: &str| {
        tlv(
            0x30,
            &cat(&[
                tlv(0x04, name.as_bytes()),
                tlv(0x31, &tlv(0x04, value.as_bytes())),
            ]),
        )
    };
    let attrs = tlv(
        0x30,
        &cat(&[attr("objectClass", "person"), attr("cn", cn), attr("sn", "s")]),
    );
    tlv(0x68, &cat(&[tlv(0x04, dn.as_bytes()), attrs]))
}

fn subtree_search(base: &str) -> Vec<u8> {
    tlv(
        0x63,
        &cat(&[
            tlv(0x04, base.as_bytes()),
            tlv(0x0a, &[2]),
            tlv(0x0a, &[0]),
            int(0),
            int(0),
            tlv(0x01, &[0]),
            tlv(0x87, b"objectClass"),
            tlv(0x30, &[]),
        ]),
    )
}

/// (message ID, result code when the message is a result) of every message until the
/// server closes the connection.
fn read_all(stream: &mut TcpStream) -> Vec<(i32, Option<ResultCode>)> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        while let Ok(Frame::Complete(n)) = frame(&buf, 1 << 24) {
            let pdu: Vec<u8> = buf.drain(..n).collect();
            let m = LdapMessage::decode(&pdu).unwrap();
            let code = match &m.op {
                ProtocolOp::AddResponse(r) | ProtocolOp::SearchResultDone(r) => Some(r.code),
                ProtocolOp::BindResponse(r) => Some(r.result.code),
                ProtocolOp::ExtendedResponse(r) => Some(r.result.code),
                _ => None,
            };
            out.push((m.message_id, code));
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return out,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[test]
fn the_notice_comes_after_every_answer_in_flight() {
    let server = Server::start();
    let suffix = server.admin_dn.split_once(',').unwrap().1.to_owned();
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut requests = message(1, bind(&server.admin_dn, &server.password));
    for i in 0..PIPELINED_ADDS {
        requests.extend(message(
            2 + i,
            add(&format!("cn=n{i},{suffix}"), &format!("n{i}")),
        ));
    }
    let search_id = 2 + PIPELINED_ADDS;
    requests.extend(message(search_id, subtree_search(&suffix)));
    // An LDAPMessage with nothing in it: no message ID, no operation.
    requests.extend([0x30, 0x00]);
    stream.write_all(&requests).unwrap();
    let messages = read_all(&mut stream);

    let notice = messages
        .iter()
        .position(|m| m.0 == 0)
        .expect("a Notice of Disconnection");
    assert_eq!(
        notice,
        messages.len() - 1,
        "messages after the Notice: {:?}",
        &messages[notice..]
    );
    assert_eq!(messages[notice].1, Some(ResultCode::PROTOCOL_ERROR));
    for id in 1..search_id {
        let answers: Vec<_> = messages.iter().filter(|m| m.0 == id).collect();
        assert_eq!(answers.len(), 1, "message {id}: {answers:?}");
        assert_eq!(answers[0].1, Some(ResultCode::SUCCESS), "message {id}");
    }
    let done = messages
        .iter()
        .filter(|m| m.0 == search_id && m.1.is_some())
        .count();
    assert_eq!(done, 1, "the search's SearchResultDone");
}
