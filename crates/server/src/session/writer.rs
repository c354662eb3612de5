//! The writing side of a connection: the [`Outbox`] that everything answering on the
//! connection sends through, and the writer task behind it.
//!
//! Responses reach the socket one of two ways:
//! - **at once, from the reading side** ([`Outbox::write_now`]): after a read's requests
//!   ran inline, their responses are written to the socket without waiting, when nothing
//!   else is waiting to be written. This is the common case (a search answered from the
//!   index, a bind) and it costs no task hop: the writer task is not woken, no queue is
//!   touched, no write timer is set;
//! - **through the writer task**: one task that takes the socket while it writes and sends
//!   whatever the operations produced, coalescing everything ready into one write. Two
//!   queues feed it:
//!   - a bounded one ([`OUT_QUEUE_CHUNKS`] chunks) for the reading side and for searches
//!     running on worker threads: when the client stops reading, the reading side waits
//!     here (a task, no thread) and stops reading requests (back-pressure instead of
//!     unbounded memory); a search never waits: when the queue holds
//!     [`CONNECTION_BUFFERED_OUTPUT`] octets or its chunks, or the server holds its
//!     [`crate::output_budget::MAX_BUFFERED_OUTPUT`], the search hands its resumption to the
//!     outbox ([`OutSender::wait_for_room`]) or to the server's budget and leaves its
//!     thread; the writer task resumes the outbox's waiters each time it takes chunks out
//!     (the count is lowered before the waiters are looked at, under the lock a waiter
//!     checks the count under, so none is forgotten), and when it ends (the connection
//!     closes: the resumed searches find it closed and end);
//!   - an unbounded one for the results of writes, sent from the store's writer thread,
//!     which must never block; it holds at most one response per operation in flight, and
//!     operations in flight are limited per connection.
//!
//! Order: the socket's writing half sits in the outbox's slot while the writer task has
//! nothing to do, and the writer takes it out before it counts a chunk as taken from a
//! queue. A write at once happens only when the socket is in the slot and no chunk is
//! counted as queued, both seen under the slot's lock, so it never overtakes a response
//! that was queued before it. Octets a write at once could not send (the client reads
//! slowly) stay in the slot, and the writer task, woken by an empty chunk, sends them
//! before anything it takes from the queues.
//!
//! A write that does not complete within the write timeout closes the connection: a
//! client that stops reading is disconnected rather than holding buffers forever.
//!
//! When every sender is gone the task hands its half of the socket back (the session shuts
//! it down, or, after StartTLS, runs the TLS handshake on it); after a failure it closes
//! the connection and returns nothing.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::stream::ConnWrite;
use super::Closing;
use crate::output_budget::{OutputBudget, Resume};

/// Chunks the bounded queue holds before its senders wait.
pub const OUT_QUEUE_CHUNKS: usize = 64;

/// Octets waiting in one connection's queues beyond which its searches wait for the writer
/// (they may pass it by one chunk each): enough to keep a fast client's socket busy (four
/// coalesced writes), little enough that thousands of connections stay small.
pub const CONNECTION_BUFFERED_OUTPUT: usize = 4 * MAX_COALESCED_BYTES;

/// Most octets gathered into one socket write (more waits for the next).
pub const MAX_COALESCED_BYTES: usize = 256 * 1024;

/// Where a connection's responses go (see the module documentation).
pub(crate) struct Outbox {
    slot: Mutex<Slot>,
    /// Chunks sent into the queues that the writer task has not taken yet.
    queued: AtomicUsize,
    /// Their octets.
    queued_bytes: AtomicUsize,
    /// Searches waiting for room in this connection's queue.
    waiting: Mutex<Vec<Resume>>,
    /// The server's count of waiting octets.
    budget: Arc<OutputBudget>,
    closing: Arc<Closing>,
}

/// What the writer task leaves behind while it waits.
struct Slot {
    /// The socket's writing half; `None` while the writer task writes (and before the
    /// socket is installed).
    socket: Option<ConnWrite>,
    /// Octets a write at once accepted but could not send; the writer task sends them
    /// first.
    unsent: Vec<u8>,
}

/// The receiving ends of an outbox's queues, for its writer task.
pub(crate) struct Queues {
    out: mpsc::Receiver<Vec<u8>>,
    done: mpsc::UnboundedReceiver<Vec<u8>>,
}

/// A sender into the bounded queue (the reading side, searches on worker threads).
#[derive(Clone)]
pub(crate) struct OutSender {
    tx: mpsc::Sender<Vec<u8>>,
    outbox: Arc<Outbox>,
}

/// A sender into the unbounded queue (the results of writes, from the store's thread).
#[derive(Clone)]
pub(crate) struct DoneSender {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    outbox: Arc<Outbox>,
}

/// The queue is gone: the connection is closing.
#[derive(Debug)]
pub(crate) struct Closed;

/// Why [`OutSender::try_send`] did not take a chunk.
#[derive(Debug)]
pub(crate) enum NotSent {
    /// This connection's queue is full: the chunk comes back; wait with
    /// [`OutSender::wait_for_room`].
    ConnectionFull(Vec<u8>),
    /// The server holds its most octets: the chunk comes back; wait on the budget.
    ServerFull(Vec<u8>),
    /// The connection is closing.
    Closed,
}

impl Outbox {
    /// A new outbox with no socket yet ([`Outbox::install`]), its two senders and the
    /// queues for its writer task.
    pub(crate) fn new(
        closing: Arc<Closing>,
        budget: Arc<OutputBudget>,
    ) -> (Arc<Outbox>, OutSender, DoneSender, Queues) {
        let outbox = Arc::new(Outbox {
            slot: Mutex::new(Slot {
                socket: None,
                unsent: Vec::new(),
            }),
            queued: AtomicUsize::new(0),
            queued_bytes: AtomicUsize::new(0),
            waiting: Mutex::new(Vec::new()),
            budget,
            closing,
        });
        let (out_tx, out) = mpsc::channel(OUT_QUEUE_CHUNKS);
        let (done_tx, done) = mpsc::unbounded_channel();
        let out_tx = OutSender {
            tx: out_tx,
            outbox: outbox.clone(),
        };
        let done_tx = DoneSender {
            tx: done_tx,
            outbox: outbox.clone(),
        };
        (outbox, out_tx, done_tx, Queues { out, done })
    }

    /// Puts the socket's writing half in place.
    pub(crate) fn install(&self, socket: ConnWrite) {
        self.lock().socket = Some(socket);
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes `chunk` to the socket now, if that can be done without waiting and without
    /// overtaking anything queued. Returns what the caller must still queue: `None` when
    /// nothing; the whole chunk when it could not be written now; an empty chunk, to wake
    /// the writer task, when part of it (or, on TLS, its flush) waits in the slot.
    pub(crate) fn write_now(&self, chunk: Vec<u8>) -> Option<Vec<u8>> {
        let mut slot = self.lock();
        if self.queued.load(Ordering::Acquire) != 0 || !slot.unsent.is_empty() {
            return Some(chunk);
        }
        let Some(socket) = slot.socket.as_mut() else {
            return Some(chunk);
        };
        if self.closing.is_closed() {
            // The writer task would drop it too.
            return None;
        }
        // No waker to wake: whatever is not done here is the writer task's, which polls
        // the socket with its own.
        let mut cx = Context::from_waker(Waker::noop());
        let mut sent = 0;
        while sent < chunk.len() {
            match Pin::new(&mut *socket).poll_write(&mut cx, &chunk[sent..]) {
                Poll::Ready(Ok(0)) => return self.failed(),
                Poll::Ready(Ok(n)) => sent += n,
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(_)) => return self.failed(),
                Poll::Pending => break,
            }
        }
        // On a plain socket the flush does nothing; on TLS it sends what rustls buffered.
        let flushed = match Pin::new(&mut *socket).poll_flush(&mut cx) {
            Poll::Ready(Ok(())) => true,
            Poll::Ready(Err(_)) => return self.failed(),
            Poll::Pending => false,
        };
        if sent == chunk.len() && flushed {
            return None;
        }
        let mut rest = chunk;
        rest.drain(..sent);
        slot.unsent = rest;
        Some(Vec::new())
    }

    /// Counts a chunk of `n` octets as queued (the server's budget included).
    fn count(&self, n: usize) {
        self.budget.take(n);
        self.count_here(n);
    }

    /// Counts a chunk of `n` octets in this connection's queue only (the caller took the
    /// budget's octets itself).
    fn count_here(&self, n: usize) {
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.queued_bytes.fetch_add(n, Ordering::SeqCst);
    }

    /// Uncounts a chunk of `n` octets: the writer took it, or its queue turned out to be
    /// gone or full.
    fn uncount(&self, n: usize) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
        self.queued_bytes.fetch_sub(n, Ordering::SeqCst);
        self.budget.give(n);
    }

    /// Uncounts a chunk whose queue turned out to be gone.
    fn unqueue(&self, n: usize) -> Closed {
        self.uncount(n);
        Closed
    }

    fn waiting(&self) -> MutexGuard<'_, Vec<Resume>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resumes every search waiting for room in this connection's queue (the writer took
    /// chunks out, the connection closes, or an operation was abandoned or cancelled and
    /// must see it).
    pub(crate) fn resume_waiting(&self) {
        let resumed = std::mem::take(&mut *self.waiting());
        for resume in resumed {
            resume();
        }
    }

    /// The socket failed: the connection closes, like after a failed write of the task.
    fn failed(&self) -> Option<Vec<u8>> {
        self.closing.close();
        None
    }
}

impl OutSender {
    /// Queues `chunk`, waiting while the queue is full.
    pub(crate) async fn send(&self, chunk: Vec<u8>) -> Result<(), Closed> {
        let n = chunk.len();
        self.outbox.count(n);
        self.tx.send(chunk).await.map_err(|_| self.outbox.unqueue(n))
    }

    /// True while this connection's queue has room for a search's chunk.
    fn has_room(&self) -> bool {
        self.outbox.queued_bytes.load(Ordering::SeqCst) < CONNECTION_BUFFERED_OUTPUT && self.tx.capacity() > 0
    }

    /// Queues `chunk` if the connection's queue and the server's budget have room, without
    /// waiting (a search on a worker thread).
    pub(crate) fn try_send(&self, chunk: Vec<u8>) -> Result<(), NotSent> {
        if self.outbox.closing.is_closed() {
            return Err(NotSent::Closed);
        }
        if !self.has_room() {
            return Err(NotSent::ConnectionFull(chunk));
        }
        let n = chunk.len();
        if !self.outbox.budget.try_take(n) {
            return Err(NotSent::ServerFull(chunk));
        }
        self.outbox.count_here(n);
        match self.tx.try_send(chunk) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(chunk)) => {
                self.outbox.uncount(n);
                Err(NotSent::ConnectionFull(chunk))
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.outbox.uncount(n);
                Err(NotSent::Closed)
            }
        }
    }

    /// Keeps `resume` until the writer task takes chunks out of this connection's queue or
    /// the connection closes; runs it at once if either happened since `try_send` found no
    /// room.
    pub(crate) fn wait_for_room(&self, resume: Resume) {
        let mut waiting = self.outbox.waiting();
        if self.has_room() || self.outbox.closing.is_closed() {
            drop(waiting);
            resume();
            return;
        }
        waiting.push(resume);
    }

    /// Keeps `resume` until the server's budget has room again.
    pub(crate) fn wait_for_budget(&self, resume: Resume) {
        self.outbox.budget.wait(resume);
    }

    /// Resumes the searches waiting for room on this connection (see
    /// [`Outbox::resume_waiting`]).
    pub(crate) fn resume_waiting(&self) {
        self.outbox.resume_waiting();
    }

    /// Writes `chunk` at once when it can ([`Outbox::write_now`]), else queues it.
    pub(crate) async fn write(&self, chunk: Vec<u8>) -> Result<(), Closed> {
        match self.outbox.write_now(chunk) {
            None => Ok(()),
            Some(rest) => self.send(rest).await,
        }
    }
}

impl DoneSender {
    /// Queues `chunk` (never waits).
    pub(crate) fn send(&self, chunk: Vec<u8>) -> Result<(), Closed> {
        let n = chunk.len();
        self.outbox.count(n);
        self.tx.send(chunk).map_err(|_| self.outbox.unqueue(n))
    }
}

/// The writer task's queues, which, when the task ends however it ends, close, give back
/// the count of the chunks left in them, and resume the outbox's waiting searches (on
/// every ending but the last sender's going, the connection is closed first, so the
/// resumed searches find it closed).
struct Draining {
    outbox: Arc<Outbox>,
    out: mpsc::Receiver<Vec<u8>>,
    done: mpsc::UnboundedReceiver<Vec<u8>>,
}

impl Drop for Draining {
    fn drop(&mut self) {
        self.out.close();
        self.done.close();
        while let Ok(chunk) = self.out.try_recv().or_else(|_| self.done.try_recv()) {
            self.outbox.uncount(chunk.len());
        }
        self.outbox.resume_waiting();
    }
}

/// The writer task: runs until every sender is gone (then returns the socket's half) or
/// the socket fails (then closes the connection and returns `None`).
pub(crate) async fn run(outbox: Arc<Outbox>, queues: Queues, write_timeout: Duration) -> Option<ConnWrite> {
    let Queues { out, done } = queues;
    let mut q = Draining {
        outbox: outbox.clone(),
        out,
        done,
    };
    let mut out_open = true;
    let mut done_open = true;
    while out_open || done_open {
        let first = tokio::select! {
            chunk = q.out.recv(), if out_open => match chunk {
                Some(c) => c,
                None => { out_open = false; continue; }
            },
            chunk = q.done.recv(), if done_open => match chunk {
                Some(c) => c,
                None => { done_open = false; continue; }
            },
        };
        // Take the socket before counting the chunk as taken (see the module docs).
        let (mut socket, mut buf) = {
            let mut slot = outbox.lock();
            outbox.uncount(first.len());
            match slot.socket.take() {
                Some(socket) => (socket, std::mem::take(&mut slot.unsent)),
                // Only this task takes it: never, but not a reason to panic.
                None => {
                    drop(slot);
                    outbox.closing.close();
                    return None;
                }
            }
        };
        buf.extend_from_slice(&first);
        while buf.len() < MAX_COALESCED_BYTES {
            match q.out.try_recv().or_else(|_| q.done.try_recv()) {
                Ok(more) => {
                    outbox.uncount(more.len());
                    buf.extend_from_slice(&more);
                }
                Err(_) => break,
            }
        }
        // Room was made: the searches waiting for it go on while this write goes out.
        outbox.resume_waiting();
        if outbox.closing.is_closed() {
            return None;
        }
        // The flush sends what TLS buffered; on a plain socket it does nothing.
        let write = async {
            socket.write_all(&buf).await?;
            socket.flush().await
        };
        match tokio::time::timeout(write_timeout, write).await {
            Ok(Ok(())) => outbox.install(socket),
            Ok(Err(_)) | Err(_) => {
                outbox.closing.close();
                return None;
            }
        }
    }
    outbox.lock().socket.take()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    /// A connected pair on loopback: the server side's writing half in a new outbox, and
    /// the client side.
    async fn pair() -> (
        Arc<Outbox>,
        OutSender,
        DoneSender,
        Queues,
        TcpStream,
        tokio::net::tcp::OwnedReadHalf,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (server_read, server_write) = server.into_split();
        let (outbox, out_tx, done_tx, queues) =
            Outbox::new(Arc::new(Closing::default()), Arc::new(OutputBudget::default()));
        outbox.install(ConnWrite::Plain(server_write));
        (outbox, out_tx, done_tx, queues, client, server_read)
    }

    async fn read_exactly(client: &mut TcpStream, n: usize) -> Vec<u8> {
        let mut got = vec![0; n];
        client.read_exact(&mut got).await.unwrap();
        got
    }

    #[tokio::test]
    async fn a_write_at_once_reaches_the_socket_without_the_writer_task() {
        let (outbox, _out, _done, _queues, mut client, _keep) = pair().await;
        assert!(outbox.write_now(b"hello".to_vec()).is_none());
        assert_eq!(read_exactly(&mut client, 5).await, b"hello");
    }

    #[tokio::test]
    async fn a_write_at_once_never_overtakes_a_queued_chunk() {
        let (outbox, out, done, queues, mut client, _keep) = pair().await;
        // A search on a worker thread queued a chunk; the writer task has not run yet.
        out.send(b"first".to_vec()).await.unwrap();
        let back = outbox.write_now(b"second".to_vec());
        assert_eq!(back.as_deref(), Some(&b"second"[..]));
        out.send(back.unwrap()).await.unwrap();
        let writer = tokio::spawn(run(outbox.clone(), queues, Duration::from_secs(5)));
        assert_eq!(read_exactly(&mut client, 11).await, b"firstsecond");
        // Once the writer task is idle again, writes go at once.
        drop((out, done));
        assert!(writer.await.unwrap().is_some());
    }

    #[tokio::test]
    async fn what_a_write_at_once_could_not_send_goes_before_anything_queued_later() {
        let (outbox, out, done, queues, mut client, _keep) = pair().await;
        // More than the socket buffers hold while the client does not read.
        let big: Vec<u8> = (0..16u32 << 20).map(|i| (i % 251) as u8).collect();
        let back = outbox.write_now(big.clone());
        assert_eq!(back.as_deref(), Some(&[][..]), "the rest waits in the slot");
        // Another sender's chunk is queued before the wake-up chunk.
        done.send(b"after".to_vec()).unwrap();
        out.send(back.unwrap()).await.unwrap();
        // Meanwhile the reading side cannot write at once.
        assert!(outbox.write_now(b"x".to_vec()).is_some());
        let writer = tokio::spawn(run(outbox.clone(), queues, Duration::from_secs(30)));
        let got = read_exactly(&mut client, big.len() + 5).await;
        assert!(
            got[..big.len()] == big[..],
            "the big chunk arrives whole and first"
        );
        assert_eq!(&got[big.len()..], b"after");
        drop((out, done));
        assert!(writer.await.unwrap().is_some());
    }
}
