//! Nodes of different processes reaching each other over TCP, optionally inside TLS with
//! client certificates: [`TcpNetwork`] calls other nodes, [`serve`] answers their calls.
//! Messages travel as [`codec`](super::codec) frames: a request, then its reply with the
//! same request ID, one call at a time on each connection.
//!
//! The caller side dials a node's address (`host:port`, as its [`Member`] says) on its
//! first call and keeps the connection; a call that fails for any reason drops it, and the
//! next call dials again. Failures reach openraft as it expects them: a node that cannot
//! be dialed (or whose TLS handshake fails) is `Unreachable` (openraft then backs off), an
//! I/O error during a call is `Network`, a call that outlives [`RPCOption::hard_ttl`] is
//! `Timeout`, and the remote engine's own failure is `RemoteError` (or `Network` with its
//! text, when it cannot be rebuilt; see [`RemoteFailure`]).
//!
//! With [`Security::Tls`], both sides use the configurations the caller built: mutual TLS
//! is a server configuration that verifies client certificates and a client configuration
//! that presents one. A peer whose certificate is refused gets no answer at all. (In TLS
//! 1.3 the server checks the client's certificate after the client considers the handshake
//! done, so a refused client sees its first call fail as `Network`, not `Unreachable`.)

use std::error::Error;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, Timeout, Unreachable,
};
use openraft::network::{RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::Raft;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::codec::{
    decode_frame_body, encode_frame, frame_len, CodecError, Message, RemoteFailure, LENGTH_OCTETS,
};
use super::{snapshot_chunk_timeout, ReadIndex, ReadIndexResult};
use crate::types::{Larch, Member, NodeId};

/// How long a peer may take to complete the TLS handshake of a connection it opened.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the server pauses after failing to accept a connection (out of file
/// descriptors, say), so the failure does not spin.
const ACCEPT_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Whether connections between nodes are plain TCP or TLS.
#[derive(Clone)]
pub enum Security {
    /// Plain TCP: for a network that is trusted as it is.
    Plain,
    /// TLS: `server` for the connections a node accepts, `client` for those it opens.
    /// Mutual authentication is a `server` that requires client certificates (a
    /// `WebPkiClientVerifier`) and a `client` that presents one (`with_client_auth_cert`).
    Tls {
        /// The accepting side's configuration.
        server: Arc<rustls::ServerConfig>,
        /// The dialing side's configuration.
        client: Arc<rustls::ClientConfig>,
    },
}

/// Octets a connection reads from its socket at a time. A frame and the next one's length
/// usually arrive in one read; unbuffered, a frame cost a `recvfrom` for its length and
/// one per doubling of its body (about 13 per append on a follower, measured with `perf
/// stat`).
const READ_BUFFER_OCTETS: usize = 64 * 1024;

/// The most octets of a frame's body allocated before they arrive: a frame up to this size
/// is read into one allocation, a larger one grows as it comes (so a peer announcing a
/// large frame and sending nothing costs no more than this).
const BODY_PREALLOC_OCTETS: usize = 64 * 1024;

/// A connection, plain or TLS, either side.
trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin> Stream for T {}

/// A connection with its read buffer (writes pass straight through).
type BoxedStream = BufReader<Box<dyn Stream>>;

fn buffered(stream: Box<dyn Stream>) -> BoxedStream {
    BufReader::with_capacity(READ_BUFFER_OCTETS, stream)
}

/// Writes one encoded frame and flushes it (TLS holds data until then).
async fn write_frame(stream: &mut BoxedStream, frame: &[u8]) -> io::Result<()> {
    stream.write_all(frame).await?;
    stream.flush().await
}

/// Reads one frame. A malformed one is an error of kind `InvalidData`. The body is read
/// as it arrives, so a peer announcing a large frame and sending nothing costs at most
/// [`BODY_PREALLOC_OCTETS`].
async fn read_frame(stream: &mut BoxedStream) -> io::Result<(u64, Message)> {
    let mut prefix = [0; LENGTH_OCTETS];
    stream.read_exact(&mut prefix).await?;
    let len = frame_len(prefix).map_err(invalid_data)?;
    let mut body = Vec::with_capacity(len.min(BODY_PREALLOC_OCTETS));
    (&mut *stream).take(len as u64).read_to_end(&mut body).await?;
    if body.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connection closed inside a frame",
        ));
    }
    decode_frame_body(&body).map_err(invalid_data)
}

fn invalid_data(e: CodecError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The name a node's certificate must carry: the host part of its `host:port` address
/// (an IP address as such, IPv6 possibly in brackets).
fn server_name(addr: &str) -> io::Result<ServerName<'static>> {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _port)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the address {addr} names no host a certificate can be checked against: {e}"),
        )
    })
}

/// A node's way to the others: one [`TcpConnection`] per client openraft asks for, and
/// one kept for read index calls (made one at a time, [`crate::read_index`]).
#[derive(Clone)]
pub struct TcpNetwork {
    id: NodeId,
    tls: Option<Arc<rustls::ClientConfig>>,
    reads: Arc<tokio::sync::Mutex<Option<TcpConnection>>>,
}

impl TcpNetwork {
    /// The network of node `id`, dialing with `security`'s client side.
    pub fn new(id: NodeId, security: &Security) -> TcpNetwork {
        let tls = match security {
            Security::Plain => None,
            Security::Tls { client, .. } => Some(Arc::clone(client)),
        };
        TcpNetwork {
            id,
            tls,
            reads: Arc::default(),
        }
    }
}

impl ReadIndex for TcpNetwork {
    fn read_index(
        &self,
        leader: NodeId,
        node: Member,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ReadIndexResult> + Send + 'static>> {
        let this = self.clone();
        Box::pin(async move {
            let mut kept = this.reads.lock().await;
            let mut connection = match kept.take() {
                Some(c) if c.target == leader && c.node == node => c,
                _ => TcpConnection {
                    from: this.id,
                    target: leader,
                    node,
                    tls: this.tls.clone(),
                    stream: None,
                    last_request_id: 0,
                },
            };
            let option = RPCOption::new(timeout);
            let reply = connection
                .call::<std::convert::Infallible>(Message::ReadIndexRequest, &option, RPCTypes::AppendEntries)
                .await
                .map_err(|e| e.to_string())?;
            match reply {
                Message::ReadIndexResponse(read) => {
                    *kept = Some(connection);
                    Ok(read)
                }
                other => Err(format!("{} instead of a read index reply", other.name())),
            }
        })
    }
}

impl RaftNetworkFactory<Larch> for TcpNetwork {
    type Network = TcpConnection;

    async fn new_client(&mut self, target: NodeId, node: &Member) -> TcpConnection {
        TcpConnection {
            from: self.id,
            target,
            node: node.clone(),
            tls: self.tls.clone(),
            stream: None,
            last_request_id: 0,
        }
    }
}

/// Calls from one node to another, over one connection dialed on first use.
pub struct TcpConnection {
    from: NodeId,
    target: NodeId,
    node: Member,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The open connection, if any. Taken out during a call and put back only once the
    /// call succeeded, so a call that failed or was abandoned midway leaves none behind.
    stream: Option<BoxedStream>,
    last_request_id: u64,
}

type CallError<E> = RPCError<NodeId, Member, RaftError<NodeId, E>>;

impl TcpConnection {
    /// Opens the connection: TCP, then the TLS handshake if configured.
    async fn dial(&self) -> io::Result<BoxedStream> {
        let addr = &self.node.raft;
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let Some(config) = &self.tls else {
            return Ok(buffered(Box::new(tcp)));
        };
        let name = server_name(addr)?;
        let tls = TlsConnector::from(Arc::clone(config)).connect(name, tcp).await?;
        Ok(buffered(Box::new(tls)))
    }

    fn unreachable<E: Error>(&self, e: &io::Error) -> CallError<E> {
        let why = io::Error::new(
            e.kind(),
            format!("cannot reach node {} at {}: {e}", self.target, self.node.raft),
        );
        RPCError::Unreachable(Unreachable::new(&why))
    }

    fn network_error<E: Error>(&self, e: &io::Error) -> CallError<E> {
        let why = io::Error::new(
            e.kind(),
            format!(
                "the call to node {} at {} failed: {e}",
                self.target, self.node.raft
            ),
        );
        RPCError::Network(NetworkError::new(&why))
    }

    /// The error for a reply that is not the one asked for.
    fn unexpected<E: Error>(&self, reply: &Message, wanted: &str) -> CallError<E> {
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} instead of {wanted}", reply.name()),
        );
        self.network_error(&e)
    }

    /// The frame of `request`, with a new request ID. A request beyond the frame limit
    /// asks openraft to send fewer entries at a time.
    fn frame<E: Error>(&mut self, request: &Message) -> Result<(u64, Vec<u8>), CallError<E>> {
        self.last_request_id = self.last_request_id.wrapping_add(1);
        let request_id = self.last_request_id;
        match encode_frame(request_id, request) {
            Ok(frame) => Ok((request_id, frame)),
            Err(e) => match (e, request) {
                (CodecError::TooLarge(_), Message::AppendEntriesRequest(r)) if r.entries.len() > 1 => {
                    let hint = r.entries.len() as u64 / 2;
                    Err(RPCError::PayloadTooLarge(PayloadTooLarge::new_entries_hint(hint)))
                }
                (e, _) => Err(self.network_error(&invalid_data(e))),
            },
        }
    }

    /// Sends a frame and reads the reply to it, dialing first if there is no connection.
    async fn exchange<E: Error>(&mut self, request_id: u64, frame: &[u8]) -> Result<Message, CallError<E>> {
        let mut stream = match self.stream.take() {
            Some(stream) => stream,
            None => self.dial().await.map_err(|e| self.unreachable(&e))?,
        };
        let sent_and_read = async {
            write_frame(&mut stream, frame).await?;
            read_frame(&mut stream).await
        };
        let (reply_id, reply) = sent_and_read.await.map_err(|e| self.network_error(&e))?;
        if reply_id != request_id {
            let e = io::Error::new(io::ErrorKind::InvalidData, "a reply to another request");
            return Err(self.network_error(&e));
        }
        self.stream = Some(stream);
        Ok(reply)
    }

    /// One call: `request` sent, its reply returned, within `option`'s hard TTL; a remote
    /// error comes back as an error.
    async fn call<E: Error>(
        &mut self,
        request: Message,
        option: &RPCOption,
        action: RPCTypes,
    ) -> Result<Message, CallError<E>> {
        let (request_id, frame) = self.frame(&request)?;
        let ttl = option.hard_ttl();
        let reply = match tokio::time::timeout(ttl, self.exchange(request_id, &frame)).await {
            Ok(reply) => reply?,
            Err(_elapsed) => {
                return Err(RPCError::Timeout(Timeout {
                    action,
                    id: self.from,
                    target: self.target,
                    timeout: ttl,
                }))
            }
        };
        match reply {
            Message::RemoteError(failure) => Err(failure.into_rpc_error(self.target, &self.node)),
            reply => Ok(reply),
        }
    }
}

impl RaftNetwork<Larch> for TcpConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Larch>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        let reply = self
            .call(
                Message::AppendEntriesRequest(rpc),
                &option,
                RPCTypes::AppendEntries,
            )
            .await?;
        match reply {
            Message::AppendEntriesResponse(r) => Ok(r),
            other => Err(self.unexpected(&other, "an append-entries reply")),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<Larch>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Member, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let timeout = snapshot_chunk_timeout(rpc.offset, rpc.data.len(), rpc.done).min(option.hard_ttl());
        let reply = self
            .call(
                Message::InstallSnapshotRequest(rpc),
                &RPCOption::new(timeout),
                RPCTypes::InstallSnapshot,
            )
            .await?;
        match reply {
            Message::InstallSnapshotResponse(r) => Ok(r),
            other => Err(self.unexpected(&other, "an install-snapshot reply")),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        let reply = self
            .call(Message::VoteRequest(rpc), &option, RPCTypes::Vote)
            .await?;
        match reply {
            Message::VoteResponse(r) => Ok(r),
            other => Err(self.unexpected(&other, "a vote reply")),
        }
    }
}

/// Connections the transport serves at once, at most: a cluster has at most 9 members, and
/// openraft opens a few connections to each peer (replication, votes). A connection beyond
/// it is closed at once (counted at debug level), so a host that opens thousands of
/// connections costs no task and no buffer.
pub const MAX_PEER_CONNECTIONS: usize = 64;

/// How long a connection may stay without a whole request before it is closed: peers send
/// heartbeats every 100 ms on the connections they use, and dial again when one is gone.
pub const PEER_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The bounds [`serve_with`] keeps.
#[derive(Debug, Clone, Copy)]
pub struct PeerLimits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Time a connection may wait for a whole request.
    pub idle_timeout: Duration,
}

impl Default for PeerLimits {
    fn default() -> PeerLimits {
        PeerLimits {
            max_connections: MAX_PEER_CONNECTIONS,
            idle_timeout: PEER_IDLE_TIMEOUT,
        }
    }
}

/// Answers other nodes' calls to `raft` on the connections `listener` accepts, each in a
/// task of its own, until `shutdown` turns true (or its sender is dropped): then it stops
/// accepting and closes the connections it has.
///
/// A peer that sends a malformed frame, or something other than a request, is
/// disconnected (and a warning logged); one that fails the TLS handshake too. No frame
/// beyond [`MAX_FRAME_OCTETS`](super::codec::MAX_FRAME_OCTETS) is read; at most
/// [`MAX_PEER_CONNECTIONS`] connections are served, each closed after
/// [`PEER_IDLE_TIMEOUT`] without a request.
pub async fn serve(
    listener: TcpListener,
    raft: Raft<Larch>,
    security: Security,
    shutdown: watch::Receiver<bool>,
) {
    serve_with(listener, raft, security, shutdown, PeerLimits::default()).await;
}

/// [`serve`] with other bounds (tests).
pub async fn serve_with(
    listener: TcpListener,
    raft: Raft<Larch>,
    security: Security,
    mut shutdown: watch::Receiver<bool>,
    limits: PeerLimits,
) {
    let acceptor = match &security {
        Security::Plain => None,
        Security::Tls { server, .. } => Some(TlsAcceptor::from(Arc::clone(server))),
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    loop {
        let accepted = tokio::select! {
            () = shutdown_requested(&mut shutdown) => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((tcp, peer)) => {
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    tracing::debug!(%peer, "the Raft transport serves {} connections already; closed", limits.max_connections);
                    drop(tcp);
                    continue;
                };
                let connection =
                    serve_connection(tcp, peer, acceptor.clone(), raft.clone(), limits.idle_timeout);
                let mut shutdown = shutdown.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        () = connection => {}
                        () = shutdown_requested(&mut shutdown) => {}
                    }
                    drop(slot);
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "the Raft transport could not accept a connection");
                tokio::time::sleep(ACCEPT_RETRY_PAUSE).await;
            }
        }
    }
}

/// Returns once `shutdown` is true or can no longer change.
async fn shutdown_requested(shutdown: &mut watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow_and_update() {
            return;
        }
        if shutdown.changed().await.is_err() {
            return;
        }
    }
}

/// One accepted connection: the TLS handshake if configured, then its requests.
async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: Option<TlsAcceptor>,
    raft: Raft<Larch>,
    idle_timeout: Duration,
) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(%peer, error = %e, "cannot set TCP_NODELAY");
    }
    let stream: Box<dyn Stream> = match acceptor {
        None => Box::new(tcp),
        Some(acceptor) => match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => Box::new(tls),
            Ok(Err(e)) => {
                tracing::warn!(%peer, error = %e, "a peer failed the TLS handshake; disconnected");
                return;
            }
            Err(_elapsed) => {
                tracing::warn!(%peer, "a peer did not finish the TLS handshake in {HANDSHAKE_TIMEOUT:?}; disconnected");
                return;
            }
        },
    };
    answer_requests(buffered(stream), peer, &raft, idle_timeout).await;
}

/// Reads requests and writes their replies until the peer closes the connection,
/// misbehaves, or sends no whole request within `idle_timeout`.
async fn answer_requests(
    mut stream: BoxedStream,
    peer: SocketAddr,
    raft: &Raft<Larch>,
    idle_timeout: Duration,
) {
    loop {
        let Ok(read) = tokio::time::timeout(idle_timeout, read_frame(&mut stream)).await else {
            tracing::debug!(%peer, "a peer sent no request in {idle_timeout:?}; disconnected");
            return;
        };
        let (request_id, request) = match read {
            Ok(frame) => frame,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                tracing::warn!(%peer, error = %e, "a peer sent a malformed frame; disconnected");
                return;
            }
            Err(e) => {
                tracing::debug!(%peer, error = %e, "a peer's connection ended");
                return;
            }
        };
        let reply = match answer(raft, request).await {
            Ok(reply) => reply,
            Err(not_a_request) => {
                tracing::warn!(%peer, "a peer sent {not_a_request} where a request belongs; disconnected");
                return;
            }
        };
        let frame = match encode_frame(request_id, &reply) {
            Ok(frame) => frame,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "a reply could not be encoded; disconnected");
                return;
            }
        };
        if let Err(e) = write_frame(&mut stream, &frame).await {
            tracing::debug!(%peer, error = %e, "a reply could not be sent");
            return;
        }
    }
}

/// The engine's reply to `request`, or what the message is if it is no request.
async fn answer(raft: &Raft<Larch>, request: Message) -> Result<Message, &'static str> {
    Ok(match request {
        Message::VoteRequest(r) => match raft.vote(r).await {
            Ok(reply) => Message::VoteResponse(reply),
            Err(e) => Message::RemoteError(RemoteFailure::from_raft_error(&e)),
        },
        Message::AppendEntriesRequest(r) => match raft.append_entries(r).await {
            Ok(reply) => Message::AppendEntriesResponse(reply),
            Err(e) => Message::RemoteError(RemoteFailure::from_raft_error(&e)),
        },
        Message::InstallSnapshotRequest(r) => match raft.install_snapshot(r).await {
            Ok(reply) => Message::InstallSnapshotResponse(reply),
            Err(e) => Message::RemoteError(RemoteFailure::from_raft_error(&e)),
        },
        Message::ReadIndexRequest => match raft.get_read_log_id().await {
            Ok((read, _applied)) => Message::ReadIndexResponse(read),
            Err(e) => Message::RemoteError(RemoteFailure::from_raft_error(&e)),
        },
        other => return Err(other.name()),
    })
}
