//! Where the load client's connections come from.
//!
//! Against an IPv4 loopback server each new connection gets its own source address in
//! 127.0.0.0/8, 127.0.0.2 to 127.0.0.254 in turn (the whole /8 is the loopback interface's
//! on Linux). With the one source address 127.0.0.1, a workload that opens a connection per
//! operation (`-W auth --auth-connection new`) leaves tens of thousands of the client's
//! ports in TIME_WAIT (the client closes first, after its Unbind, as ldapsearch does), and
//! the kernel's search for a free ephemeral port in `connect()` then cost the client about
//! 60 µs of CPU per connection at 14,500 connections/s (`perf record`: spin locks under
//! `__inet_hash_connect` / `__inet_check_established`): the client's limit, not the
//! server's, for every server measured. Clients on a real network come from many
//! addresses; spreading the source address restores that. Other servers are connected to
//! from the address the system picks.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::net::{TcpSocket, TcpStream};

/// Source addresses used against an IPv4 loopback server: 127.0.0.2 and the 252 after it.
pub const LOOPBACK_SOURCES: u32 = 253;

static NEXT_SOURCE: AtomicU32 = AtomicU32::new(0);

/// The source address of the next connection to `server`, when the client picks one.
pub fn source_for(server: SocketAddr) -> Option<SocketAddr> {
    match server {
        SocketAddr::V4(v4) if v4.ip().is_loopback() => {
            let n = NEXT_SOURCE.fetch_add(1, Ordering::Relaxed) % LOOPBACK_SOURCES;
            let last = u8::try_from(2 + n).unwrap_or(2);
            Some(SocketAddr::from((Ipv4Addr::new(127, 0, 0, last), 0)))
        }
        _ => None,
    }
}

/// A TCP connection to `server` with Nagle's algorithm off (requests are whole PDUs).
pub async fn connect(server: SocketAddr) -> io::Result<TcpStream> {
    let stream = match source_for(server) {
        Some(source) => {
            let socket = TcpSocket::new_v4()?;
            socket.bind(source)?;
            socket.connect(server).await?
        }
        None => TcpStream::connect(server).await?,
    };
    stream.set_nodelay(true)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_servers_get_spread_sources_others_none() {
        let lo: SocketAddr = "127.0.0.1:389".parse().unwrap();
        let seen: std::collections::HashSet<_> = (0..LOOPBACK_SOURCES)
            .map(|_| source_for(lo).unwrap().ip())
            .collect();
        assert_eq!(seen.len(), LOOPBACK_SOURCES as usize);
        assert!(seen
            .iter()
            .all(|ip| ip.is_loopback() && *ip != Ipv4Addr::LOCALHOST));
        assert_eq!(source_for("192.0.2.1:389".parse().unwrap()), None);
        assert_eq!(source_for("[::1]:389".parse().unwrap()), None);
    }

    #[tokio::test]
    async fn connects_to_a_loopback_listener_from_another_loopback_address() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = listener.local_addr().unwrap();
        let (client, accepted) = tokio::join!(connect(server), listener.accept());
        let (client, (_, peer)) = (client.unwrap(), accepted.unwrap());
        assert_eq!(client.local_addr().unwrap(), peer);
        assert_ne!(peer.ip(), std::net::IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(client.nodelay().unwrap());
    }
}
