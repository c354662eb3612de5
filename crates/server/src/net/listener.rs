//! Listening sockets: what `run` binds for each `server.listen` URL.
//!
//! Besides what `TcpListener::bind` does (resolve the host, try each address, reuse the
//! address of a previous run), the socket is set up once for all the connections it
//! accepts:
//! - `TCP_NODELAY` on the listener: Linux gives every accepted socket the listener's
//!   option, so a connection needs no `setsockopt` of its own (one system call less per
//!   connection; elsewhere the session still sets it, `session::serve`). LDAP is request
//!   and response: Nagle's delay would hold a response's last segment back;
//! - a backlog of [`LISTEN_BACKLOG`] (std and mio use 128): a burst of clients connecting at
//!   once waits in the kernel's queue instead of being refused or retrying (slapd uses
//!   2048).

use std::io;
use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// Connections the kernel queues for a listener before `accept` takes them (capped by
/// `net.core.somaxconn`, 4096 on current kernels).
pub const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `host:port` set up as the module documentation says: the first address
/// `host` resolves to that can be bound, else the last error.
pub async fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host((host, port)).await? {
        match bind_addr(addr) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{host}` resolves to no address"),
        )
    }))
}

fn bind_addr(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_have_nodelay_without_setting_it() {
        let listener = bind("127.0.0.1", 0).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, peer) = listener.accept().await.unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        // What `session::serve` relies on on Linux.
        #[cfg(target_os = "linux")]
        assert!(accepted.nodelay().unwrap());
        let _ = accepted;
    }

    #[tokio::test]
    async fn a_port_in_use_is_an_error_and_a_name_resolves() {
        let first = bind("localhost", 0).await.unwrap();
        let port = first.local_addr().unwrap().port();
        let again = bind(&first.local_addr().unwrap().ip().to_string(), port).await;
        assert_eq!(again.unwrap_err().kind(), io::ErrorKind::AddrInUse);
    }
}
