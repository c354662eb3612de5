//! The live connections, for `cn=Connections,cn=Monitor`: one [`ConnectionStats`] per
//! open connection, listed from its acceptance to its close.
//!
//! The table is written twice per connection (accepted, closed), under one of
//! [`SHARDS`] locks picked by the connection's number, so thousands of connections
//! opening at once rarely wait on each other. What changes per operation (operations
//! received and completed, the last activity) is written by the connection's own code
//! into its `ConnectionStats`, which the session holds: an operation never looks the table
//! up.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use crate::clock::Mono;

/// Locks the table is split under.
pub const SHARDS: usize = 16;

/// One open connection.
#[derive(Debug)]
pub struct ConnectionStats {
    /// Its number (the access log's `conn=`).
    pub conn: u64,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// The server's address.
    pub local: Option<SocketAddr>,
    /// Accepted on an `ldaps://` listener.
    pub ldaps: bool,
    /// When it was accepted.
    pub started: SystemTime,
    /// Operations read (the next operation's number). Written by the connection's task.
    received: AtomicU64,
    /// Operations ended, wherever they ended.
    completed: AtomicU64,
    /// When the last request was read (a [`Mono`]'s nanoseconds).
    activity: AtomicU64,
    /// What changes rarely: the TLS version and cipher, the identity bound.
    rare: Mutex<Rare>,
}

#[derive(Debug, Default, Clone)]
struct Rare {
    tls: Option<(String, String)>,
    authz_dn: String,
}

/// What a reader sees of a connection at one moment.
#[derive(Debug, Clone)]
pub struct ConnectionView {
    /// Its number.
    pub conn: u64,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// The server's address.
    pub local: Option<SocketAddr>,
    /// Accepted on an `ldaps://` listener.
    pub ldaps: bool,
    /// When it was accepted.
    pub started: SystemTime,
    /// The last request read (the acceptance before any).
    pub activity: SystemTime,
    /// Operations read.
    pub received: u64,
    /// Operations ended.
    pub completed: u64,
    /// The TLS version and cipher suite, when TLS protects it.
    pub tls: Option<(String, String)>,
    /// The DN bound (empty: anonymous).
    pub authz_dn: String,
}

impl ConnectionStats {
    /// Operation `op` (the connection's operations are numbered from 0) was read at `at`.
    /// Only the connection's task calls this: two plain stores.
    #[inline]
    pub fn received(&self, op: u64, at: Mono) {
        self.received.store(op + 1, Ordering::Relaxed);
        self.activity.store(at.as_nanos(), Ordering::Relaxed);
    }

    /// An operation ended.
    #[inline]
    pub fn completed(&self) {
        self.completed.fetch_add(1, Ordering::Relaxed);
    }

    /// A Bind ended with `dn` bound (empty: anonymous).
    pub fn bound(&self, dn: &str) {
        let mut rare = lock(&self.rare);
        if rare.authz_dn != dn {
            // In place: a connection that binds again and again reuses the allocation.
            rare.authz_dn.clear();
            rare.authz_dn.push_str(dn);
        }
    }

    /// TLS now protects the connection.
    pub fn tls(&self, version: &str, cipher: &str) {
        lock(&self.rare).tls = Some((version.to_string(), cipher.to_string()));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The open connections.
#[derive(Debug)]
pub struct ConnectionTable {
    shards: [Mutex<HashMap<u64, Arc<ConnectionStats>>>; SHARDS],
    /// A moment on the monotonic clock, and `epoch_wall` the same moment on the wall clock:
    /// how activity times are shown.
    epoch: Mono,
    epoch_wall: SystemTime,
}

impl Default for ConnectionTable {
    fn default() -> ConnectionTable {
        ConnectionTable {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            epoch: Mono::now(),
            epoch_wall: SystemTime::now(),
        }
    }
}

impl ConnectionTable {
    fn shard(&self, conn: u64) -> MutexGuard<'_, HashMap<u64, Arc<ConnectionStats>>> {
        lock(&self.shards[(conn % SHARDS as u64) as usize])
    }

    /// Lists a connection just accepted.
    pub fn open(&self, conn: u64, peer: Option<SocketAddr>, local: Option<SocketAddr>, ldaps: bool) {
        let nanos = Mono::now().as_nanos();
        let stats = Arc::new(ConnectionStats {
            conn,
            peer,
            local,
            ldaps,
            started: SystemTime::now(),
            received: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            activity: AtomicU64::new(nanos),
            rare: Mutex::new(Rare::default()),
        });
        self.shard(conn).insert(conn, stats);
    }

    /// The stats of connection `conn`, while it is open.
    pub fn get(&self, conn: u64) -> Option<Arc<ConnectionStats>> {
        self.shard(conn).get(&conn).cloned()
    }

    /// Takes a closed connection off the list.
    pub fn close(&self, conn: u64) {
        self.shard(conn).remove(&conn);
    }

    /// How many connections are listed.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every open connection, by number.
    pub fn views(&self) -> Vec<ConnectionView> {
        let mut all: Vec<Arc<ConnectionStats>> = Vec::new();
        for s in &self.shards {
            all.extend(lock(s).values().cloned());
        }
        all.sort_by_key(|c| c.conn);
        all.iter().map(|c| self.view(c)).collect()
    }

    fn view(&self, c: &ConnectionStats) -> ConnectionView {
        let rare = lock(&c.rare).clone();
        let read = Mono::from_nanos(c.activity.load(Ordering::Relaxed));
        let activity = self.epoch_wall + read.since(self.epoch);
        ConnectionView {
            conn: c.conn,
            peer: c.peer,
            local: c.local,
            ldaps: c.ldaps,
            started: c.started,
            activity: activity.max(c.started),
            received: c.received.load(Ordering::Relaxed),
            completed: c.completed.load(Ordering::Relaxed),
            tls: rare.tls,
            authz_dn: rare.authz_dn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_appear_count_and_vanish() {
        let table = ConnectionTable::default();
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        table.open(7, Some(peer), None, false);
        table.open(3, None, None, true);
        let c = table.get(7).unwrap();
        c.received(0, Mono::now());
        c.received(1, Mono::now());
        c.completed();
        c.bound("uid=a,dc=example,dc=com");
        c.tls("TLS1.3", "TLS13_AES_128_GCM_SHA256");
        let views = table.views();
        assert_eq!(views.iter().map(|v| v.conn).collect::<Vec<_>>(), vec![3, 7]);
        let v = &views[1];
        assert_eq!((v.received, v.completed), (2, 1));
        assert_eq!(v.authz_dn, "uid=a,dc=example,dc=com");
        assert_eq!(v.peer, Some(peer));
        assert!(v.activity >= v.started);
        assert_eq!(v.tls.as_ref().map(|t| t.0.as_str()), Some("TLS1.3"));
        table.close(7);
        assert_eq!(table.len(), 1);
        assert!(table.get(7).is_none());
    }
}
