//! The load client's TLS session store: what a crowd of reconnecting clients would hold.
//!
//! A run's connections share one `rustls::ClientConfig` and so one session store (see
//! [`crate::tls`]). rustls' own `ClientSessionMemoryCache` keeps at most 8 TLS 1.3 tickets per
//! server, which is right for one application but not for a load client standing in for many:
//! with 16 connections in flight against a saturated server, the server answers its queued
//! ClientHellos in a batch, 8 of them find a ticket and 8 do a full handshake, however many
//! tickets the previous batch sent back (the server sends 2 per handshake). The measured flow
//! then is "half the clients have never connected before", not "clients reconnect".
//!
//! [`ClientSessions`] keeps up to [`ClientSessions::tickets_per_server`] tickets per server
//! (twice the connections of the run, at least [`MIN_TICKETS_PER_SERVER`]), newest first, and
//! hands each out once as RFC 8446 section 4.6.1 asks; TLS 1.2 sessions and key exchange
//! hints are kept one per server like rustls does (every TLS 1.2 connection resumes the
//! newest session).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// Fewest TLS 1.3 tickets kept per server: rustls' own per-server limit.
pub const MIN_TICKETS_PER_SERVER: usize = 8;

/// What is remembered about one server.
#[derive(Default)]
struct ServerSessions {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    /// Oldest first.
    tls13: VecDeque<Tls13ClientSessionValue>,
}

/// Session store for a run of `connections` concurrent connections (see the module doc).
pub struct ClientSessions {
    tickets_per_server: usize,
    servers: Mutex<HashMap<ServerName<'static>, ServerSessions>>,
}

impl std::fmt::Debug for ClientSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSessions")
            .field("tickets_per_server", &self.tickets_per_server)
            .finish_non_exhaustive()
    }
}

impl ClientSessions {
    /// A store for a run with `connections` connections in flight.
    pub fn new(connections: usize) -> Self {
        ClientSessions {
            tickets_per_server: connections.saturating_mul(2).max(MIN_TICKETS_PER_SERVER),
            servers: Mutex::new(HashMap::new()),
        }
    }

    /// TLS 1.3 tickets kept per server; the oldest is dropped beyond this.
    pub fn tickets_per_server(&self) -> usize {
        self.tickets_per_server
    }

    fn with<R>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut ServerSessions) -> R) -> R {
        // A panic while holding the lock leaves plain data behind; keep using it.
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        let key = name.to_owned();
        f(servers.entry(key).or_default())
    }
}

impl ClientSessionStore for ClientSessions {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.with(&server_name, |s| s.kx_hint = Some(group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(server_name, |s| s.kx_hint)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(&server_name, |s| s.tls12 = Some(value));
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(server_name, |s| s.tls12.clone())
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.with(server_name, |s| s.tls12 = None);
    }

    fn insert_tls13_ticket(&self, server_name: ServerName<'static>, value: Tls13ClientSessionValue) {
        let limit = self.tickets_per_server;
        self.with(&server_name, |s| {
            if s.tls13.len() >= limit {
                s.tls13.pop_front();
            }
            s.tls13.push_back(value);
        });
    }

    fn take_tls13_ticket(&self, server_name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.with(server_name, |s| s.tls13.pop_back())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ticket_limit_follows_the_connections() {
        assert_eq!(
            ClientSessions::new(0).tickets_per_server(),
            MIN_TICKETS_PER_SERVER
        );
        assert_eq!(
            ClientSessions::new(3).tickets_per_server(),
            MIN_TICKETS_PER_SERVER
        );
        assert_eq!(ClientSessions::new(16).tickets_per_server(), 32);
        assert_eq!(ClientSessions::new(usize::MAX).tickets_per_server(), usize::MAX);
    }

    #[test]
    fn hints_are_kept_per_server() {
        let s = ClientSessions::new(1);
        let a = ServerName::try_from("a.example").unwrap();
        let b = ServerName::try_from("b.example").unwrap();
        assert_eq!(s.kx_hint(&a), None);
        s.set_kx_hint(a.clone(), NamedGroup::X25519);
        assert_eq!(s.kx_hint(&a), Some(NamedGroup::X25519));
        assert_eq!(s.kx_hint(&b), None);
        assert!(s.tls12_session(&a).is_none());
        assert!(s.take_tls13_ticket(&a).is_none());
    }
}
