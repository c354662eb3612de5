//! Connection limits: in total and per client address, counted when a connection is
//! accepted and when it closes (never on the request path).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Counts open connections against `max_connections` and `max_connections_per_ip`.
#[derive(Debug)]
pub struct ConnectionLimits {
    max_total: usize,
    max_per_ip: usize,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `max_connections` are open.
    Total(usize),
    /// `max_connections_per_ip` are open from this address.
    PerIp(usize),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Total(n) => write!(f, "the server has its maximum of {n} connections open"),
            Refusal::PerIp(n) => write!(f, "your address has its maximum of {n} connections open"),
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
    /// Limits of `max_total` connections, `max_per_ip` from one address.
    pub fn new(max_total: usize, max_per_ip: usize) -> Arc<ConnectionLimits> {
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
        let from_ip = open.1.entry(ip).or_insert(0);
        if *from_ip >= self.max_per_ip {
            return Err(Refusal::PerIp(self.max_per_ip));
        }
        *from_ip += 1;
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
        let l = ConnectionLimits::new(3, 2);
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
}
