//! A connection's byte stream, plain TCP or TLS, split into a reading and a writing half.
//!
//! The plain halves are tokio's owned TCP halves: no lock, the reading and writing tasks
//! use the socket independently, as before TLS existed; the only cost TLS adds to the
//! plain path is one `match` per poll. A TLS stream has one state for both directions
//! (rustls), so its halves are `tokio::io::split`'s, which take a short lock per poll.
//!
//! StartTLS needs the plain halves back as one socket ([`reunite`]) to run the handshake
//! on it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// A whole connection.
pub(crate) enum Conn {
    /// Plain LDAP.
    Plain(TcpStream),
    /// LDAP over TLS (boxed: the TLS state is large).
    Tls(Box<TlsStream<TcpStream>>),
}

impl Conn {
    /// The two halves.
    pub(crate) fn split(self) -> (ConnRead, ConnWrite) {
        match self {
            Conn::Plain(s) => {
                let (r, w) = s.into_split();
                (ConnRead::Plain(r), ConnWrite::Plain(w))
            }
            Conn::Tls(s) => {
                let (r, w) = tokio::io::split(*s);
                (ConnRead::Tls(r), ConnWrite::Tls(w))
            }
        }
    }
}

/// The reading half.
pub(crate) enum ConnRead {
    /// Plain.
    Plain(OwnedReadHalf),
    /// TLS.
    Tls(ReadHalf<TlsStream<TcpStream>>),
}

/// The writing half.
pub(crate) enum ConnWrite {
    /// Plain.
    Plain(OwnedWriteHalf),
    /// TLS.
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

/// The TCP socket of plain halves; `None` for TLS halves or halves of different sockets.
pub(crate) fn reunite(r: ConnRead, w: ConnWrite) -> Option<TcpStream> {
    match (r, w) {
        (ConnRead::Plain(r), ConnWrite::Plain(w)) => r.reunite(w).ok(),
        _ => None,
    }
}

impl ConnWrite {
    /// Ends the connection's sending side after the client has left (it sent an Unbind or
    /// closed its side): TLS sends its close_notify (RFC 8446 requires it before closing)
    /// and shuts TCP down; a plain connection sends nothing, since closing the socket, once
    /// the read half is dropped too, sends the same FIN a shutdown would (one system call
    /// less per connection).
    pub(crate) async fn finish_after_client_left(self, timeout: std::time::Duration) {
        match self {
            ConnWrite::Plain(w) => w.forget(),
            mut tls @ ConnWrite::Tls(_) => {
                let _ = tokio::time::timeout(timeout, tokio::io::AsyncWriteExt::shutdown(&mut tls)).await;
            }
        }
    }
}

impl AsyncRead for ConnRead {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnRead::Plain(r) => Pin::new(r).poll_read(cx, buf),
            ConnRead::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ConnWrite {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ConnWrite::Plain(w) => Pin::new(w).poll_write(cx, buf),
            ConnWrite::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnWrite::Plain(w) => Pin::new(w).poll_flush(cx),
            ConnWrite::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnWrite::Plain(w) => Pin::new(w).poll_shutdown(cx),
            ConnWrite::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}
