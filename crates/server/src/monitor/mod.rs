//! What `cn=Monitor` and `/metrics` report about the server's own work: the counters, fed
//! by the operation pipeline, and the table of open connections.
//!
//! [`Monitor`] is one of the directory's observers ([`crate::outcome::Observer`]): it is
//! told when each operation starts and how it ended, and what happens to each connection,
//! and counts it in this thread's slot of [`counters::Counters`] (nothing shared is
//! written per operation). Connections are listed in [`connections::ConnectionTable`] when
//! accepted and taken off when closed; what changes per operation (operations received and
//! completed, the bound DN) is written by the session into the connection's own
//! [`connections::ConnectionStats`].
//!
//! Readers ([`crate::dse::monitor`] for `cn=Monitor`, the metrics endpoint) take
//! [`Monitor::totals`] and [`Monitor::connections`] and add what the store and the logs
//! report of themselves; nothing here knows LDAP entries or the exposition format.
//!
//! Modules: `counters` (per-thread slots, summed on read), `kinds` (operation kinds and
//! bind methods), `latency` (the histograms' buckets), `connections`.

pub mod connections;
pub mod counters;
pub mod kinds;
pub mod latency;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use larch_proto::ResultCode;

use crate::outcome::{ConnectionEvent, Observer, Outcome};
use connections::ConnectionTable;
use counters::{Counters, Totals};
use kinds::OpKind;

/// The server's counters and open connections.
#[derive(Debug)]
pub struct Monitor {
    counters: Counters,
    /// The open connections.
    pub connections: ConnectionTable,
    /// When the server started (`cn=Start,cn=Time,cn=Monitor`).
    pub started: SystemTime,
    /// The same moment on the monotonic clock (uptime).
    pub started_at: Instant,
    /// The connection limit in force (0 until the listeners start).
    connection_limit: AtomicU64,
}

impl Default for Monitor {
    fn default() -> Monitor {
        Monitor::new()
    }
}

impl Monitor {
    /// Every counter zero, no connection.
    pub fn new() -> Monitor {
        Monitor {
            counters: Counters::new(),
            connections: ConnectionTable::default(),
            started: SystemTime::now(),
            started_at: Instant::now(),
            connection_limit: AtomicU64::new(0),
        }
    }

    /// Records the connection limit in force.
    pub fn set_connection_limit(&self, limit: u64) {
        self.connection_limit.store(limit, Ordering::Relaxed);
    }

    /// The connection limit in force (0 before the listeners start).
    pub fn connection_limit(&self) -> u64 {
        self.connection_limit.load(Ordering::Relaxed)
    }

    /// Every counter, summed now.
    pub fn totals(&self) -> Totals {
        self.counters.totals()
    }
}

impl Observer for Monitor {
    #[inline]
    fn initiated(&self, _conn: u64, request_tag: u8) {
        if let Some(kind) = OpKind::of_request(request_tag) {
            self.counters.count(|t| t.initiated(kind));
        }
    }

    fn observes_initiated(&self) -> bool {
        true
    }

    /// Latencies run from the request's receipt to its end: the start of the work is not
    /// needed.
    fn reads_start_time(&self) -> bool {
        false
    }

    fn operation(&self, o: &Outcome<'_>) {
        // The common case: an operation read, decoded and numbered.
        let kind = match OpKind::of_request(o.request_tag) {
            Some(kind) if o.op >= 0 && !o.undecodable => kind,
            _ => return self.unusual_operation(o),
        };
        let nanos = o.times.total_nanos();
        let code = response_code(o);
        self.counters.count(|t| {
            t.completed(kind, nanos);
            t.answered(code, &o.sent);
            if let Some(method) = o.bind_method {
                t.bind(method, code == Some(ResultCode::SUCCESS.0));
            }
        });
    }

    fn connection(&self, event: &ConnectionEvent<'_>) {
        match *event {
            ConnectionEvent::Accepted {
                conn,
                peer,
                local,
                ldaps,
                ..
            } => {
                self.connections.open(conn, peer, local, ldaps);
                self.counters.count(|t| t.accepted());
            }
            ConnectionEvent::Tls {
                conn,
                version,
                cipher,
                ..
            } => {
                if let Some(c) = self.connections.get(conn) {
                    c.tls(version, cipher);
                }
                self.counters.count(|t| t.tls());
            }
            ConnectionEvent::Refused { .. } => self.counters.count(|t| t.refused()),
            ConnectionEvent::Closed { conn, reason, .. } => {
                self.connections.close(conn);
                self.counters.count(|t| t.closed(reason as u8));
            }
        }
    }
}

impl Monitor {
    /// [`Observer::operation`] for a request that did not decode and a Notice of
    /// Disconnection (which answers no operation): no kind, no latency.
    #[cold]
    #[inline(never)]
    fn unusual_operation(&self, o: &Outcome<'_>) {
        self.counters.count(|t| {
            if o.undecodable {
                t.undecodable();
            }
            t.answered(response_code(o), &o.sent);
        });
    }
}

/// The result code of the response `o` sent, if it sent one.
#[inline]
fn response_code(o: &Outcome<'_>) -> Option<u32> {
    o.reply.filter(|_| o.response_tag != 0).map(|r| r.code.0)
}
