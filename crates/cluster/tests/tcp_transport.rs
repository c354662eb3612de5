//! The TCP transport: three nodes on 127.0.0.1 replicate over plain TCP and over mutual
//! TLS; a node whose certificate is not from the cluster's CA cannot take part (the others
//! still elect and write); a peer sending garbage is disconnected and the node serves on;
//! a caller sees an unreachable node, a silent one (timeout) and a dropped connection as
//! openraft expects, and dials again after each.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{add, add_suffix, content, start_node_with, write, Cluster, Node};
use larch_cluster::network::codec::{decode_frame_body, encode_frame, frame_len, Message};
use larch_cluster::network::tcp::{serve, serve_with, PeerLimits, Security, TcpNetwork};
use larch_cluster::types::{Larch, Member};
use larch_store::consensus::ReplicateError;
use larch_store::storage::FaultStorage;
use larch_store::StoreError;
use openraft::error::RPCError;
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{VoteRequest, VoteResponse};
use openraft::Vote;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose,
};
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Nodes linked over TCP, each served on its own listener.
struct TcpCluster {
    cluster: Cluster,
    addresses: BTreeMap<u64, String>,
    shutdown: watch::Sender<bool>,
}

impl TcpCluster {
    /// Nodes numbered from 1, one per entry of `security`, on ports the system picks;
    /// initialized on node 1 with all of them as voters.
    async fn start(security: BTreeMap<u64, Security>) -> TcpCluster {
        let (shutdown, stop) = watch::channel(false);
        let mut addresses = BTreeMap::new();
        let mut nodes = BTreeMap::new();
        for (id, security) in &security {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addresses.insert(*id, listener.local_addr().unwrap().to_string());
            let network = TcpNetwork::new(*id, security);
            let node = start_node_with(*id, FaultStorage::new(0x7cb ^ id), network).await;
            let raft = node.node.raft().clone();
            tokio::spawn(serve(listener, raft, security.clone(), stop.clone()));
            nodes.insert(*id, node);
        }
        let members: BTreeMap<u64, Member> = addresses
            .iter()
            .map(|(id, a)| (*id, Member::new(a, format!("ldap://{a}"))))
            .collect();
        nodes[&1].node.initialize(members).await.unwrap();
        TcpCluster {
            cluster: Cluster::of_nodes(nodes),
            addresses,
            shutdown,
        }
    }

    fn node(&self, id: u64) -> &Node {
        &self.cluster.nodes[&id]
    }

    async fn stop(self) {
        let _ = self.shutdown.send(true);
        self.cluster.stop().await;
    }
}

fn plain(n: u64) -> BTreeMap<u64, Security> {
    (1..=n).map(|id| (id, Security::Plain)).collect()
}

/// A certificate authority.
struct Ca {
    der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca {
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    fn roots(&self) -> RootCertStore {
        let mut roots = RootCertStore::empty();
        roots.add(self.der.clone()).unwrap();
        roots
    }

    /// A node's certificate, valid for 127.0.0.1, for both ends of a connection.
    fn node_cert(&self, id: u64) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, format!("node {id}"));
        params.distinguished_name = dn;
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            cert.der().clone(),
            PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Mutual TLS for a node holding a certificate from `holds` and trusting peers whose
/// certificates come from `trusts`.
fn mutual_tls(trusts: &Ca, holds: &Ca, id: u64) -> Security {
    let (cert, key) = holds.node_cert(id);
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(trusts.roots()), provider())
        .build()
        .unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![cert.clone()], key.clone_key())
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(trusts.roots())
        .with_client_auth_cert(vec![cert], key)
        .unwrap();
    Security::Tls {
        server: Arc::new(server),
        client: Arc::new(client),
    }
}

/// Writes the suffix and `count` entries on the leader, checks a follower refuses a write
/// and names the leader; returns the leader.
async fn write_on_the_leader(c: &TcpCluster, count: usize) -> u64 {
    let leader = c.cluster.leader(Duration::from_secs(10)).await;
    let store = &c.node(leader).store;
    add_suffix(store).await;
    for i in 0..count {
        write(store, add(&format!("e{i}"), &format!("v{i}")))
            .await
            .unwrap()
            .unwrap();
    }
    let twice = write(store, add("e0", "again")).await.unwrap();
    assert!(matches!(twice, Err(StoreError::AlreadyExists)), "{twice:?}");
    assert_eq!(content(&store.current()).len(), count + 1);
    leader
}

async fn a_follower_names_the_leader(c: &TcpCluster, leader: u64) {
    let follower = c.cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    let refused = write(&c.node(follower).store, add("x", "y")).await;
    match refused {
        Err(StoreError::Replication(ReplicateError::NotLeader { leader: named })) => {
            assert_eq!(named, Some(format!("ldap://{}", c.addresses[&leader])));
        }
        other => panic!("a follower took a write: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_on_the_leader_reach_every_node_over_tcp() {
    let c = TcpCluster::start(plain(3)).await;
    let leader = write_on_the_leader(&c, 20).await;
    let state = c.cluster.converged(Duration::from_secs(10)).await;
    assert_eq!(state.len(), 21);
    assert_eq!(
        state.get("cn=e7,dc=example,dc=com").map(String::as_str),
        Some("v7")
    );
    a_follower_names_the_leader(&c, leader).await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_on_the_leader_reach_every_node_over_mutual_tls() {
    let ca = Ca::new("larch cluster CA");
    let security = (1..=3).map(|id| (id, mutual_tls(&ca, &ca, id))).collect();
    let c = TcpCluster::start(security).await;
    let leader = write_on_the_leader(&c, 10).await;
    let state = c.cluster.converged(Duration::from_secs(10)).await;
    assert_eq!(state.len(), 11);
    a_follower_names_the_leader(&c, leader).await;
    c.stop().await;
}

/// A vote request that changes nothing (term 0 is below any node's), to see whether a
/// node answers a caller.
async fn harmless_vote(network: &mut TcpNetwork, target: u64, addr: &str) -> Result<(), String> {
    let mut client = network.new_client(target, &Member::new(addr, "")).await;
    let request = VoteRequest::new(Vote::new(0, 99), None);
    match client.vote(request, RPCOption::new(Duration::from_secs(5))).await {
        Ok(reply) if !reply.vote_granted => Ok(()),
        Ok(reply) => panic!("a vote of term 0 was granted: {reply:?}"),
        Err(e @ (RPCError::Network(_) | RPCError::Unreachable(_))) => Err(e.to_string()),
        Err(other) => panic!("an unexpected error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_whose_certificate_is_not_from_the_ca_cannot_take_part() {
    let ca = Ca::new("larch cluster CA");
    let rogue = Ca::new("another CA");
    // Node 3 trusts the cluster's CA, but its own certificate comes from another one.
    let mut security: BTreeMap<u64, Security> = (1..=2).map(|id| (id, mutual_tls(&ca, &ca, id))).collect();
    security.insert(3, mutual_tls(&ca, &rogue, 3));
    let c = TcpCluster::start(security.clone()).await;

    // Nodes 1 and 2 are a majority: they elect and write.
    let leader = write_on_the_leader(&c, 5).await;
    assert_ne!(leader, 3);
    let follower = 3 - leader;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while content(&c.node(follower).store.current()).len() != 6 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the follower did not catch up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Node 3 got nothing, and its calls are refused.
    assert!(content(&c.node(3).store.current()).is_empty());
    assert_eq!(c.node(3).node.applied_lsn(), 0);
    let mut impostor = TcpNetwork::new(3, &security[&3]);
    let refused = harmless_vote(&mut impostor, leader, &c.addresses[&leader]).await;
    let why = refused.expect_err("the leader answered a peer with a foreign certificate");
    assert!(why.contains("UnknownCA"), "refused for another reason: {why}");
    let mut member = TcpNetwork::new(follower, &security[&follower]);
    harmless_vote(&mut member, leader, &c.addresses[&leader])
        .await
        .unwrap();
    c.stop().await;
}

/// Sends `octets` on a new connection to `addr`; true if the server then closes it.
async fn closed_after(addr: &str, octets: &[u8]) -> bool {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(octets).await.unwrap();
    let mut rest = Vec::new();
    match tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await {
        Ok(Ok(_)) => rest.is_empty(),
        Ok(Err(_reset)) => true,
        Err(_still_open) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_peer_sending_garbage_is_disconnected_and_the_node_serves_on() {
    let c = TcpCluster::start(plain(1)).await;
    let addr = c.addresses[&1].clone();
    c.cluster.leader(Duration::from_secs(10)).await;

    let mut unknown_kind = 9u32.to_le_bytes().to_vec();
    unknown_kind.extend_from_slice(&[0xee; 9]);
    let mut beyond_the_limit = u32::MAX.to_le_bytes().to_vec();
    beyond_the_limit.extend_from_slice(b"and some more");
    let mut a_reply_as_request = 10u32.to_le_bytes().to_vec();
    a_reply_as_request.push(4); // an append-entries reply
    a_reply_as_request.extend_from_slice(&[0; 9]); // request ID, then "success"
    for garbage in [
        &b"GET / HTTP/1.1\r\nHost: larch\r\n\r\n"[..],
        &unknown_kind,
        &beyond_the_limit,
        &a_reply_as_request,
        &[1, 0, 0, 0, 1][..],
    ] {
        assert!(closed_after(&addr, garbage).await, "still open after {garbage:?}");
    }

    // The node still answers calls and takes writes.
    harmless_vote(&mut TcpNetwork::new(2, &Security::Plain), 1, &addr)
        .await
        .unwrap();
    let store = &c.node(1).store;
    add_suffix(store).await;
    c.stop().await;
}

/// Reads one reply frame from `stream`: its request ID and whether it is a vote's answer.
async fn read_reply(stream: &mut TcpStream) -> (u64, bool) {
    let mut prefix = [0; 4];
    stream.read_exact(&mut prefix).await.unwrap();
    let mut body = vec![0; frame_len(prefix).unwrap()];
    stream.read_exact(&mut body).await.unwrap();
    let (id, reply) = decode_frame_body(&body).unwrap();
    (id, matches!(reply, Message::VoteResponse(_)))
}

/// Connections read through a buffer: requests that arrive together, or an octet at a
/// time, are each answered, in order, and nothing of the next one is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_arriving_together_or_an_octet_at_a_time_are_each_answered() {
    let c = TcpCluster::start(plain(1)).await;
    let addr = c.addresses[&1].clone();
    c.cluster.leader(Duration::from_secs(10)).await;
    let vote = |id| {
        let request = Message::VoteRequest(VoteRequest::new(Vote::new(0, 99), None));
        encode_frame(id, &request).unwrap()
    };

    let mut together = TcpStream::connect(&addr).await.unwrap();
    let three: Vec<u8> = [vote(1), vote(2), vote(3)].concat();
    together.write_all(&three).await.unwrap();
    for id in 1..=3 {
        assert_eq!(read_reply(&mut together).await, (id, true));
    }

    let mut trickle = TcpStream::connect(&addr).await.unwrap();
    trickle.set_nodelay(true).unwrap();
    for octet in vote(7).iter().chain(vote(8).iter()) {
        trickle.write_all(&[*octet]).await.unwrap();
        trickle.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(read_reply(&mut trickle).await, (7, true));
    assert_eq!(read_reply(&mut trickle).await, (8, true));
    c.stop().await;
}

/// What a scripted peer does with the one request of a connection it accepts.
#[derive(Clone, Copy, Debug)]
enum Peer {
    /// Reads the request and closes the connection without a reply.
    Hangs,
    /// Answers the request with a vote reply, then reads nothing more on that connection.
    Answers,
}

/// Accepts one connection per step of `script` and plays it.
async fn scripted_peer(listener: TcpListener, script: Vec<Peer>) {
    let mut open = Vec::new();
    for step in script {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut prefix = [0; 4];
        stream.read_exact(&mut prefix).await.unwrap();
        let mut body = vec![0; frame_len(prefix).unwrap()];
        stream.read_exact(&mut body).await.unwrap();
        let (request_id, request) = decode_frame_body(&body).unwrap();
        assert!(matches!(request, Message::VoteRequest(_)), "{request:?}");
        match step {
            Peer::Hangs => drop(stream),
            Peer::Answers => {
                let reply = Message::VoteResponse(VoteResponse::new(Vote::new(1, 1), None, false));
                stream
                    .write_all(&encode_frame(request_id, &reply).unwrap())
                    .await
                    .unwrap();
                // The connection stays open, and silent.
                open.push(stream);
            }
        }
    }
    // Keeps the answered connections open until the test ends.
    std::future::pending::<()>().await;
}

async fn vote_within(client: &mut impl RaftNetwork<Larch>, ttl: Duration) -> RpcResult {
    let request = VoteRequest::new(Vote::new(0, 99), None);
    match client.vote(request, RPCOption::new(ttl)).await {
        Ok(_) => RpcResult::Answered,
        Err(RPCError::Unreachable(_)) => RpcResult::Unreachable,
        Err(RPCError::Timeout(_)) => RpcResult::Timeout,
        Err(RPCError::Network(_)) => RpcResult::Network,
        Err(other) => panic!("an unexpected error: {other:?}"),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum RpcResult {
    Answered,
    Unreachable,
    Timeout,
    Network,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_fails_as_openraft_expects_and_dials_again() {
    // Nothing listens on a port just released.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let mut network = TcpNetwork::new(1, &Security::Plain);
    let mut client = network.new_client(2, &Member::new(&addr, "")).await;
    assert_eq!(
        vote_within(&mut client, Duration::from_secs(5)).await,
        RpcResult::Unreachable
    );

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let script = vec![Peer::Hangs, Peer::Answers, Peer::Answers];
    let peer = tokio::spawn(scripted_peer(listener, script));
    let mut client = network.new_client(2, &Member::new(&addr, "")).await;
    let ttl = Duration::from_millis(300);
    // The connection is dropped mid-call; the next call dials again.
    assert_eq!(vote_within(&mut client, ttl).await, RpcResult::Network);
    assert_eq!(vote_within(&mut client, ttl).await, RpcResult::Answered);
    // The same connection carries the next call (a new one would be answered), and the
    // peer stays silent on it past the TTL.
    let started = tokio::time::Instant::now();
    assert_eq!(vote_within(&mut client, ttl).await, RpcResult::Timeout);
    assert!(started.elapsed() < Duration::from_secs(3));
    // The abandoned connection is not reused: a new one is dialed and answered.
    assert_eq!(vote_within(&mut client, ttl).await, RpcResult::Answered);
    peer.abort();
}

/// A second listener for node 1 of `c`, served with `limits`; its address.
async fn second_listener(c: &TcpCluster, limits: PeerLimits) -> (String, tokio::sync::watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let raft = c.node(1).node.raft().clone();
    tokio::spawn(serve_with(listener, raft, Security::Plain, stopped, limits));
    (addr, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connections_beyond_the_limit_are_closed_and_a_freed_slot_serves_again() {
    let c = TcpCluster::start(plain(1)).await;
    c.cluster.leader(Duration::from_secs(10)).await;
    let limits = PeerLimits {
        max_connections: 4,
        idle_timeout: Duration::from_secs(60),
    };
    let (addr, _stop) = second_listener(&c, limits).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(&addr).await.unwrap());
    }
    // Accepted in order: the four are in before the fifth is tried.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(closed_after(&addr, &[]).await, "a fifth connection was kept");
    // One leaves: its slot serves a real caller.
    drop(idle.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match harmless_vote(&mut TcpNetwork::new(2, &Security::Plain), 1, &addr).await {
            Ok(()) => break,
            Err(e) => assert!(tokio::time::Instant::now() < deadline, "no slot came free: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_connection_without_requests_is_closed_after_the_idle_timeout() {
    let c = TcpCluster::start(plain(1)).await;
    c.cluster.leader(Duration::from_secs(10)).await;
    let limits = PeerLimits {
        max_connections: 4,
        idle_timeout: Duration::from_millis(300),
    };
    let (addr, _stop) = second_listener(&c, limits).await;
    // Silent, and half a frame: both closed by the server within closed_after's 5 s.
    assert!(closed_after(&addr, &[]).await, "a silent connection stayed open");
    assert!(
        closed_after(&addr, &[40, 0]).await,
        "a connection stuck inside a frame stayed open"
    );
    // A caller that sends requests is served.
    harmless_vote(&mut TcpNetwork::new(2, &Security::Plain), 1, &addr)
        .await
        .unwrap();
    c.stop().await;
}
