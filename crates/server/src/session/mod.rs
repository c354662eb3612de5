//! One client connection: reading requests, running them, and sending the responses.
//!
//! How a connection works:
//! 1. the reading side reads as much as the socket has into its buffer, frames every
//!    complete PDU ([`larch_proto::frame::frame`], which refuses a PDU above the size
//!    limit from its header) and decodes each in place, borrowing from the buffer;
//! 2. each request is dispatched ([`dispatch`]): small searches, compares and extended
//!    operations run inline and append their responses to one output buffer; large
//!    searches run as jobs on the directory's search threads (`search_job`), at most
//!    [`SEARCHES_PER_CONNECTION`] at once per connection, and never wait on a thread for
//!    the client to read; writes are handed to the store's writer thread and answered
//!    when their batch is durable;
//! 3. after the last complete PDU of the read, the output buffer goes to the writing side
//!    ([`writer`]) in one piece: written to the socket at once when nothing else is
//!    waiting to be written, else queued for the writer task, which coalesces it with
//!    whatever else is ready into one socket write;
//! 4. operations that outlive the read are registered in [`inflight`] so that Abandon and
//!    Cancel can find them, and each holds one of the connection's
//!    `max_ops_per_connection` permits; when none is left, the reading side waits;
//! 5. Bind waits until no operation is in flight (it changes who later operations run
//!    as), and no new request is read meanwhile; the failed-bind throttle may hold it back,
//!    and a slow password check runs on a blocking thread (`bind.rs`);
//! 6. on an `ldaps://` listener the TLS handshake comes first ([`crate::tls`]); on an
//!    `ldap://` one, StartTLS ([`starttls`]) answers in plaintext, then the writing side
//!    hands its half of the socket back and the handshake runs on the whole socket; the
//!    halves of the protected stream ([`stream`]) then serve the rest of the connection.
//!
//! Hostile input: a PDU that cannot be framed or whose envelope does not decode gets a
//! Notice of Disconnection (`protocolError`) and the connection closes; a PDU whose
//! envelope decodes but whose operation does not gets that operation's response with
//! `protocolError` and the connection goes on. The Notice is the last message (RFC 4511
//! section 4.4.1): reading stops, the operations still in flight answer through the
//! writer task, and once it has sent everything and handed the socket back, the session
//! writes the Notice and closes.

mod backup;
mod bind;
mod bind_outcome;
mod chain;
mod cluster_membership;
mod complete;
mod dispatch;
pub mod inflight;
mod password_modify;
mod restricted;
mod search_job;
mod snapshot_transfer;
mod starttls;
mod stream;
mod writer;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use larch_proto::frame::{frame, Frame};
use larch_proto::LdapMessage;
use larch_store::StoreReader;
use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, Semaphore};

use crate::client::Client;
use crate::clock::Mono;
use crate::directory::Directory;
use crate::identity::Identity;
use crate::lookup::LastBase;
use crate::monitor::connections::ConnectionStats;
use crate::outcome::{CloseReason, ConnectionEvent};
use crate::search::PagedSearches;
use inflight::InFlight;
use stream::Conn;

pub use search_job::{SEARCHES_PER_CONNECTION, SEARCH_FLUSH_BYTES, SEARCH_TURN};
use writer::{DoneSender, OutSender, Outbox};
pub use writer::{CONNECTION_BUFFERED_OUTPUT, MAX_COALESCED_BYTES, OUT_QUEUE_CHUNKS};

/// Octets read from the socket at a time once a client sends more than [`READ_START`] at
/// once (the buffer grows for a larger PDU, up to the PDU limit).
pub const READ_CHUNK: usize = 64 * 1024;

/// The read buffer of a connection that sends little at a time (one request, then waits
/// for the answer, as most clients do): what an idle connection keeps. A read that fills it
/// grows it to [`READ_CHUNK`]; once a large buffer is emptied by a small read it shrinks
/// back, so thousands of idle connections hold a few KiB each, not 64.
pub const READ_START: usize = 4 * 1024;

/// The room the responses to one read start with: an exact search's entry and its
/// SearchResultDone, or a few pipelined requests' answers, without growing the buffer on
/// the way (growing it from empty was two allocations and a copy per search).
pub const OUT_START: usize = 1024;

/// A connection's "close now" flag: set when the socket fails, a write times out, or the
/// server shuts down hard.
#[derive(Debug, Default)]
pub struct Closing {
    closed: AtomicBool,
    notify: Notify,
}

impl Closing {
    /// Closes.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Waits until closed.
    pub async fn closed(&self) {
        loop {
            let n = self.notify.notified();
            if self.is_closed() {
                return;
            }
            n.await;
        }
    }
}

/// What the server shares with each connection.
#[derive(Debug)]
pub struct ConnectionContext {
    /// The directory.
    pub dir: Arc<Directory>,
    /// Set when the server stops accepting requests (shutdown): connections stop reading,
    /// let their operations finish, and close.
    pub draining: tokio::sync::watch::Receiver<bool>,
    /// True on an `ldaps://` listener: the TLS handshake comes before the first request.
    pub ldaps: bool,
    /// The connection's number (the access log's `conn=`).
    pub conn: u64,
}

/// The state of one connection, owned by its reading side.
pub(crate) struct Session {
    dir: Arc<Directory>,
    /// The connection's number.
    conn: u64,
    /// The number the next operation gets.
    next_op: i64,
    /// When the last read completed (the requests it brought were received then).
    received: Mono,
    /// The connection ends because a request could not be read (Notice of
    /// Disconnection): why.
    bad_pdu: Option<CloseReason>,
    identity: Arc<Identity>,
    /// The bound account's password was reset and must be changed first (password
    /// policy's `pwdMustChange`): until a password change succeeds, other operations are
    /// refused (`restricted.rs`). Cleared by the change's completion, on the writer's side.
    must_change: Arc<std::sync::atomic::AtomicBool>,
    /// The request being dispatched carries the password policy request control.
    asks_policy: bool,
    /// Where the client connects from and whether TLS protects the connection.
    client: Arc<Client>,
    reader: StoreReader,
    inflight: Arc<InFlight>,
    permits: Arc<Semaphore>,
    /// The connection's places for large searches ([`SEARCHES_PER_CONNECTION`]).
    search_places: Arc<Semaphore>,
    max_ops: u32,
    paged: Arc<Mutex<PagedSearches>>,
    out_tx: OutSender,
    done_tx: DoneSender,
    /// Set when the connection must stop reading (Unbind, an undecodable PDU).
    stop_reading: bool,
    /// An Unbind was received.
    unbound: bool,
    /// The certificate the client presented in the TLS handshake (SASL EXTERNAL).
    peer_cert: Option<CertificateDer<'static>>,
    /// Set when StartTLS succeeded: the handshake follows once the response is sent.
    start_tls: bool,
    /// The last search base normalized on this connection.
    last_base: LastBase,
    /// The connection's line in `cn=Connections,cn=Monitor` (with the monitor on).
    stats: Option<Arc<ConnectionStats>>,
}

/// Serves one accepted connection from `peer` until it closes. `closing` lets the server
/// close it.
pub async fn serve(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    ctx: ConnectionContext,
    closing: Arc<Closing>,
    inflight: Arc<InFlight>,
) {
    // On Linux the socket has TCP_NODELAY from its listener (`net::listener`).
    #[cfg(not(target_os = "linux"))]
    let _ = stream.set_nodelay(true);
    let dir = ctx.dir.clone();
    let conn_id = ctx.conn;
    let fd = socket_fd(&stream);
    dir.observers.connection(&ConnectionEvent::Accepted {
        conn: conn_id,
        peer: Some(peer),
        local: stream.local_addr().ok(),
        fd,
        ldaps: ctx.ldaps,
    });
    let (conn, peer_cert) = if ctx.ldaps {
        let handshake = match ctx.dir.tls.clone() {
            Some(tls) => tokio::select! {
                h = tls.handshake(stream) => h,
                _ = closing.closed() => None,
            },
            None => None,
        };
        match handshake {
            Some((s, cert)) => {
                tls_established(&dir, conn_id, &s);
                (Conn::Tls(Box::new(s)), cert)
            }
            None => {
                let reason = if closing.is_closed() {
                    CloseReason::Shutdown
                } else {
                    CloseReason::TlsFailed
                };
                dir.observers.connection(&ConnectionEvent::Closed {
                    conn: conn_id,
                    op: -1,
                    fd,
                    reason,
                });
                return;
            }
        }
    } else {
        (Conn::Plain(stream), None)
    };
    let client = Client {
        addr: Some(peer),
        tls: matches!(conn, Conn::Tls(_)),
    };
    let (mut rd, wr) = conn.split();
    let limits = ctx.dir.config.limits.clone();
    let (outbox, out_tx, done_tx, queues) = Outbox::new(closing.clone(), ctx.dir.output_budget.clone());
    outbox.install(wr);
    let mut writer = Some(tokio::spawn(writer::run(outbox, queues, limits.write_timeout)));
    let max_ops = u32::try_from(limits.max_ops_per_connection.max(1)).unwrap_or(u32::MAX >> 4);
    let mut session = Session {
        reader: ctx.dir.reader(),
        dir: ctx.dir,
        conn: conn_id,
        next_op: 0,
        received: Mono::now(),
        bad_pdu: None,
        identity: Arc::new(Identity::Anonymous),
        must_change: Arc::default(),
        asks_policy: false,
        client: Arc::new(client),
        inflight,
        permits: Arc::new(Semaphore::new(max_ops as usize)),
        search_places: Arc::new(Semaphore::new(SEARCHES_PER_CONNECTION)),
        max_ops,
        paged: Arc::new(Mutex::new(PagedSearches::default())),
        out_tx,
        done_tx,
        stop_reading: false,
        unbound: false,
        peer_cert,
        start_tls: false,
        last_base: LastBase::default(),
        stats: dir.monitor.as_ref().and_then(|m| m.connections.get(conn_id)),
    };
    let mut draining = ctx.draining;
    let mut buf: Vec<u8> = Vec::with_capacity(READ_START);
    let mut start = 0usize;
    let max_pdu = limits.max_pdu_bytes;
    // The futures a read races against live as long as the connection, so a read does not
    // register and cancel a timer and two wake-ups each time. The idle timer is moved
    // lazily: it fires `idle_timeout` after the read that armed it, and a connection that
    // read since then is given the rest of its time from its last read.
    let closed = closing.closed();
    let drain_flag = draining.clone();
    let drained = draining.changed();
    let idle_timeout = limits.idle_timeout;
    let idle = tokio::time::sleep(idle_timeout.unwrap_or(Duration::ZERO));
    tokio::pin!(closed, drained, idle);
    let mut last_read = Mono::now();
    // The client ended the session itself (Unbind, or end of stream): nothing unread is
    // left that a close could turn into a reset.
    let mut client_left = false;
    // Why the loop ended, when not for a reason the session records (Unbind, a bad PDU).
    let mut reason = CloseReason::Shutdown;
    // What the read that ended the session with a Notice of Disconnection produced, the
    // Notice last: written once every operation still in flight has answered.
    let mut last_words = Vec::new();
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(if buf.capacity() < READ_START {
                READ_START
            } else {
                READ_CHUNK
            });
        }
        // The read first: when a request is waiting, the other waits are not polled (and
        // their flags are checked after the read instead).
        let read = tokio::select! {
            biased;
            r = rd.read_buf(&mut buf) => r,
            _ = &mut closed => {
                reason = CloseReason::WriteTimeout;
                break;
            }
            _ = &mut drained => break,
            _ = &mut idle, if idle_timeout.is_some() => {
                let t = idle_timeout.unwrap_or_default();
                let now = Mono::now();
                if now.since(last_read) >= t {
                    if session.inflight.is_empty() {
                        reason = CloseReason::Idle;
                        break;
                    }
                    // Operations still run: wait a whole period more.
                    last_read = now;
                }
                let rest = t.saturating_sub(now.since(last_read));
                idle.as_mut().reset(tokio::time::Instant::now() + rest);
                continue;
            }
        };
        match read {
            Ok(0) => {
                client_left = true;
                reason = CloseReason::ClientClosed;
                break;
            }
            Err(_) => {
                reason = CloseReason::ReadError;
                break;
            }
            Ok(_) => {}
        }
        if closing.is_closed() {
            reason = CloseReason::WriteTimeout;
            break;
        }
        if drain_flag.has_changed().unwrap_or(true) {
            break;
        }
        // One clock read per read serves the idle timer and the requests' receive time.
        if idle_timeout.is_some() || !session.dir.observers.is_empty() {
            let now = Mono::now();
            last_read = now;
            session.received = now;
        }
        let mut out = Vec::with_capacity(OUT_START);
        loop {
            match frame(&buf[start..], max_pdu) {
                Ok(Frame::Complete(n)) => {
                    let pdu = &buf[start..start + n];
                    start += n;
                    session.handle_pdu(pdu, &mut out).await;
                    if session.stop_reading || session.start_tls {
                        break;
                    }
                }
                Ok(Frame::Incomplete { total }) => {
                    if let Some(total) = total {
                        buf.reserve(total.saturating_sub(buf.len() - start));
                    }
                    break;
                }
                Err(e) => {
                    let start_of_pdu = &buf[start..buf.len().min(start + 16)];
                    session.disconnect(
                        0,
                        start_of_pdu,
                        true,
                        format!("the request cannot be read: {e}"),
                        &mut out,
                    );
                    break;
                }
            }
        }
        if session.bad_pdu.is_some() {
            last_words = out;
            break;
        }
        if !out.is_empty() && session.out_tx.write(out).await.is_err() {
            break;
        }
        if session.stop_reading {
            break;
        }
        if session.start_tls {
            session.start_tls = false;
            // Octets after the StartTLS request: the client did not wait for the response.
            // slapd hands them to its TLS negotiation, which fails and closes the
            // connection; they are no handshake here either.
            if start < buf.len() {
                break;
            }
            buf.clear();
            start = 0;
            match session.upgrade(rd, writer.take(), &closing).await {
                Some((r, w)) => {
                    rd = r;
                    writer = Some(w);
                    continue;
                }
                None => {
                    reason = CloseReason::TlsFailed;
                    break;
                }
            }
        }
        // Keep unread octets at the front of the buffer; a large buffer that a small read
        // emptied shrinks back (see READ_START).
        if start > 0 {
            let read = start;
            buf.drain(..start);
            start = 0;
            if buf.is_empty() && read < READ_START && buf.capacity() > READ_START {
                buf.shrink_to(READ_START);
            }
        }
    }
    // Requests no longer arrive. Operations still running finish (a write's result is
    // durable and its response is sent), unless the connection is closing hard.
    if closing.is_closed() {
        session.inflight.abandon_all();
    }
    let client_left = client_left || session.unbound;
    if session.unbound {
        reason = CloseReason::Unbind;
    } else if let Some(why) = session.bad_pdu {
        reason = why;
    }
    let last_op = session.next_op - 1;
    drop(session);
    if let Some(writer) = writer {
        // The writer task ends once every operation still in flight has sent its answer
        // (they hold senders into its queues), and hands the socket back.
        if let Ok(Some(mut socket)) = writer.await {
            if !last_words.is_empty() {
                let write = async {
                    socket.write_all(&last_words).await?;
                    socket.flush().await
                };
                let _ = tokio::time::timeout(limits.write_timeout, write).await;
            }
            if client_left {
                socket.finish_after_client_left(limits.write_timeout).await;
            } else {
                // The server ends the session (an error's Notice of Disconnection, the
                // idle timeout, shutdown): a shutdown sends the FIN after everything
                // written, even if unread requests make the close a reset.
                let _ = tokio::time::timeout(limits.write_timeout, socket.shutdown()).await;
            }
        }
    }
    closing.close();
    dir.observers.connection(&ConnectionEvent::Closed {
        conn: conn_id,
        op: last_op,
        fd,
        reason,
    });
}

/// The socket's file descriptor, for the access log (`fd=`); 0 where there is none.
fn socket_fd(stream: &TcpStream) -> u32 {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        u32::try_from(stream.as_raw_fd()).unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = stream;
        0
    }
}

/// Reports a completed TLS handshake to the observers.
pub(crate) fn tls_established(
    dir: &Directory,
    conn: u64,
    stream: &tokio_rustls::server::TlsStream<TcpStream>,
) {
    if dir.observers.is_empty() {
        return;
    }
    let (version, cipher, keysize) = crate::tls::negotiated(stream.get_ref().1);
    dir.observers.connection(&ConnectionEvent::Tls {
        conn,
        version,
        cipher,
        keysize,
    });
}

impl Session {
    /// Handles one framed PDU.
    async fn handle_pdu(&mut self, pdu: &[u8], out: &mut Vec<u8>) {
        match LdapMessage::decode(pdu) {
            Ok(msg) => self.dispatch(msg, pdu, out).await,
            Err(e) => self.undecodable(pdu, e, out),
        }
    }
}
