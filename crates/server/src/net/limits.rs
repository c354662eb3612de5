//! Connection limits: in total and (optionally) per client address, counted when a
//! connection is accepted and when it closes (never on the request path).
//!
//! The total follows the file-descriptor limit unless `limits.max_connections` is set:
//! 1. `larch serve` raises the soft `RLIMIT_NOFILE` to the hard one ([`super::fd_limit`]);
//! 2. [`connection_limit`] takes that soft limit less [`FD_RESERVE`], the descriptors the
//!    server needs besides its clients' sockets, so that a full house of connections
//!    never leaves the store unable to open its next log segment (389 DS does the same with
//!    `nsslapd-maxdescriptors` less `nsslapd-reservedescriptors`; slapd sizes its
//!    connection table by the descriptor table);
//! 3. a connection over a limit is told why with a Notice of Disconnection (`busy`, 51)
//!    and closed; at most [`MAX_REFUSALS_IN_FLIGHT`] such notices are being written at
//!    once (each holds the refused socket up to a second), the others are closed at once,
//!    so that a flood of refused connections stays within the reserve.
//!
//! There is no per-address cap by default (`limits.max_connections_per_ip`): behind a
//! NAT, a load balancer or a connection-pooling proxy every client has one address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// File descriptors kept for the server's own use when the connection limit follows the
/// file-descriptor limit. What they are for, at most:
/// - 3 standard streams, about 16 of the runtime (epoll, event and signal descriptors);
/// - 64 listeners (`MAX_LISTEN_URLS`);
/// - the store: the log segment being written and the next, the data directory (fsync),
///   a snapshot being written, snapshot and segment files read at start or by a change
///   feed catching up, about 16;
/// - the access, audit and error logs, each with its next file while rotating: 6;
/// - TLS certificate, key and CA files while reloading: 3;
/// - [`MAX_REFUSALS_IN_FLIGHT`] refused sockets being told why: 64;
///
/// about 170; 256 leaves room for the allocator, `/proc` and `/dev/urandom` reads and
/// libraries.
pub const FD_RESERVE: u64 = 256;

/// The connection limit when the file-descriptor limit is too low to leave any after the
/// reserve (a soft limit below [`FD_RESERVE`] + 64): the server still serves a few
/// clients, and says the limit should be raised.
pub const MIN_CONNECTIONS: usize = 64;

/// Refused connections being sent their Notice of Disconnection at once; beyond it a
/// refused connection is closed without one (see the module documentation, step 3).
pub const MAX_REFUSALS_IN_FLIGHT: usize = 64;

/// Where the connection limit in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSource {
    /// `limits.max_connections`.
    Configured,
    /// The soft file-descriptor limit, less [`FD_RESERVE`].
    FdLimit(u64),
    /// The file-descriptor limit leaves less than [`MIN_CONNECTIONS`]: that many.
    FdLimitTooLow(u64),
    /// No file-descriptor limit (unlimited, or not readable): `usize::MAX`.
    Unlimited,
}

/// The connection limit in force: `configured` when set, else from `fd_soft`, the soft
/// file-descriptor limit (module documentation, step 2).
pub fn connection_limit(configured: Option<usize>, fd_soft: Option<u64>) -> (usize, LimitSource) {
    if let Some(n) = configured {
        return (n, LimitSource::Configured);
    }
    match fd_soft {
        None => (usize::MAX, LimitSource::Unlimited),
        Some(fds) => {
            let left = usize::try_from(fds.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX);
            if left < MIN_CONNECTIONS {
                (MIN_CONNECTIONS, LimitSource::FdLimitTooLow(fds))
            } else {
                (left, LimitSource::FdLimit(fds))
            }
        }
    }
}

/// Counts open connections against the total and the per-address limits.
#[derive(Debug)]
pub struct ConnectionLimits {
    max_total: usize,
    max_per_ip: Option<usize>,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The total limit is reached.
    Total(usize),
    /// `max_connections_per_ip` are open from this address.
    PerIp(usize),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Total(n) => write!(
                f,
                "the server has its maximum of {n} connections open; try again later"
            ),
            Refusal::PerIp(n) => write!(
                f,
                "your address has its maximum of {n} connections open (limits.max_connections_per_ip); \
                 close one and try again"
            ),
        }
    }
}

/// One counted connection; dropping it releases the count.
#[derive(Debug)]
pub struct ConnectionSlot {
    limits: Arc<ConnectionLimits>,
    ip: IpAddr,
}

impl ConnectionLimits {
    /// Limits of `max_total` connections, `max_per_ip` from one address (`None`: no cap).
    pub fn new(max_total: usize, max_per_ip: Option<usize>) -> Arc<ConnectionLimits> {
        Arc::new(ConnectionLimits {
            max_total,
            max_per_ip,
            open: Mutex::new((0, HashMap::new())),
        })
    }

    /// Counts a connection from `ip`, or says which limit it would exceed.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionSlot, Refusal> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.0 >= self.max_total {
            return Err(Refusal::Total(self.max_total));
        }
        if let Some(max) = self.max_per_ip {
            let from_ip = open.1.entry(ip).or_insert(0);
            if *from_ip >= max {
                return Err(Refusal::PerIp(max));
            }
            *from_ip += 1;
        }
        open.0 += 1;
        Ok(ConnectionSlot {
            limits: self.clone(),
            ip,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().unwrap_or_else(|e| e.into_inner());
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_per_address_counts() {
        let l = ConnectionLimits::new(3, Some(2));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let a1 = l.admit(a).unwrap();
        let _a2 = l.admit(a).unwrap();
        assert_eq!(l.admit(a).unwrap_err(), Refusal::PerIp(2));
        let _b1 = l.admit(b).unwrap();
        assert_eq!(l.admit(b).unwrap_err(), Refusal::Total(3));
        drop(a1);
        assert_eq!(l.open(), 2);
        let _a3 = l.admit(a).unwrap();
        assert_eq!(l.admit(b).unwrap_err(), Refusal::Total(3));
    }

    #[test]
    fn without_a_per_address_cap_one_address_may_take_the_total() {
        let l = ConnectionLimits::new(1000, None);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let slots: Vec<_> = (0..1000).map(|_| l.admit(a).unwrap()).collect();
        assert_eq!(l.admit(a).unwrap_err(), Refusal::Total(1000));
        drop(slots);
        assert_eq!(l.open(), 0);
    }

    #[test]
    fn the_limit_follows_the_descriptor_limit_unless_configured() {
        assert_eq!(
            connection_limit(Some(10), Some(1_048_576)),
            (10, LimitSource::Configured)
        );
        assert_eq!(
            connection_limit(None, Some(1_048_576)),
            (1_048_320, LimitSource::FdLimit(1_048_576))
        );
        assert_eq!(
            connection_limit(None, Some(1024)),
            (768, LimitSource::FdLimit(1024))
        );
        assert_eq!(
            connection_limit(None, Some(100)),
            (MIN_CONNECTIONS, LimitSource::FdLimitTooLow(100))
        );
        assert_eq!(connection_limit(None, None), (usize::MAX, LimitSource::Unlimited));
    }
}
