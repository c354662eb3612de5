//! The writing side of a connection: one task that owns the socket's write half and sends
//! whatever the operations produced, coalescing everything ready into one write.
//!
//! Two queues feed it:
//! - a bounded one ([`OUT_QUEUE_CHUNKS`] chunks) for the reading side and for searches
//!   running on worker threads: when the client stops reading, they wait here, and the
//!   reading side stops reading requests (back-pressure instead of unbounded memory);
//! - an unbounded one for the results of writes, sent from the store's writer thread,
//!   which must never block; it holds at most one response per operation in flight, and
//!   operations in flight are limited per connection.
//!
//! A write that does not complete within the write timeout closes the connection: a
//! client that stops reading is disconnected rather than holding buffers forever.
//!
//! When every sender is gone the task hands its half of the socket back (the session shuts
//! it down, or, after StartTLS, runs the TLS handshake on it); after a failure it closes
//! the connection and returns nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::stream::ConnWrite;
use super::Closing;

/// Chunks the bounded queue holds before its senders wait.
pub const OUT_QUEUE_CHUNKS: usize = 64;

/// Most octets gathered into one socket write (more waits for the next).
pub const MAX_COALESCED_BYTES: usize = 256 * 1024;

/// The writer task: runs until every sender is gone (then returns the socket's half) or
/// the socket fails (then closes the connection and returns `None`).
pub(crate) async fn run(
    mut socket: ConnWrite,
    mut out: mpsc::Receiver<Vec<u8>>,
    mut done: mpsc::UnboundedReceiver<Vec<u8>>,
    write_timeout: Duration,
    closing: Arc<Closing>,
) -> Option<ConnWrite> {
    let mut out_open = true;
    let mut done_open = true;
    while out_open || done_open {
        let mut buf = tokio::select! {
            chunk = out.recv(), if out_open => match chunk {
                Some(c) => c,
                None => { out_open = false; continue; }
            },
            chunk = done.recv(), if done_open => match chunk {
                Some(c) => c,
                None => { done_open = false; continue; }
            },
        };
        while buf.len() < MAX_COALESCED_BYTES {
            match out.try_recv().or_else(|_| done.try_recv()) {
                Ok(more) => buf.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        if closing.is_closed() {
            return None;
        }
        // The flush sends what TLS buffered; on a plain socket it does nothing.
        let write = async {
            socket.write_all(&buf).await?;
            socket.flush().await
        };
        match tokio::time::timeout(write_timeout, write).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => {
                closing.close();
                return None;
            }
        }
    }
    Some(socket)
}
