//! What the server knows of the client at the other end of a connection, besides the
//! identity it is bound as: where it connects from and whether the connection is
//! protected by TLS. Access rules (peer address), the confidentiality policy and the bind
//! throttle read it.

use std::net::SocketAddr;

/// The far end of one connection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Client {
    /// The client's address (`None` where there is no socket, as in tests that run
    /// operations directly).
    pub addr: Option<SocketAddr>,
    /// True once the connection is protected by TLS (an `ldaps://` listener, or after
    /// StartTLS).
    pub tls: bool,
}

impl Client {
    /// A plain connection from `addr`.
    pub fn plain(addr: SocketAddr) -> Client {
        Client {
            addr: Some(addr),
            tls: false,
        }
    }

    /// True when the client connects over the loopback interface.
    pub fn is_loopback(&self) -> bool {
        self.addr.is_some_and(|a| a.ip().is_loopback())
    }
}
