//! `[bind_throttle]`: slowing down password guessing.
//!
//! Keys (the behaviour is described in [`crate::bind_throttle`]):
//! - `enabled` (true);
//! - `max_failures` (5): failed password checks of one account from one address within
//!   about `window` before its checks are held back;
//! - `max_failures_per_dn` (10): the same for one account from every address together
//!   (0: off);
//! - `max_failures_per_address` (0, off): the same for one address across every account;
//! - `window` ("60s"): a rule forgets one failure every `window / threshold`;
//! - `initial_delay` ("1s"), doubled with each further failure up to `max_delay` ("4s");
//! - `exempt_loopback` (false): whether clients on the loopback interface are exempt;
//! - `exempt` ([]): addresses or networks (`"10.0.0.5"`, `"192.0.2.0/24"`,
//!   `"2001:db8::/48"`) that are never counted nor held back.
//!
//! The table is its own (rather than part of a `[security]` table) so that it can be read
//! and documented on its own.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use serde::Deserialize;

use super::raw::RawDuration;
use super::ConfigError;

/// Default `bind_throttle.max_failures`: a person who mistypes a password a few times is
/// not held back; a program guessing one account from one address is after its fifth
/// wrong guess within a minute.
pub const DEFAULT_BIND_MAX_FAILURES: u32 = 5;

/// Default `bind_throttle.max_failures_per_dn`: twice `max_failures`, so that one address
/// alone (held to about `max_failures` a window by its own count) cannot make an account
/// slow for everyone, while guesses at one account from many addresses are held to about
/// ten a minute together.
pub const DEFAULT_BIND_MAX_FAILURES_PER_DN: u32 = 10;

/// Default `bind_throttle.max_failures_per_address`: off. The rule cannot tell apart the
/// clients behind one address (a NAT, a proxy, a web application binding for its users),
/// so on by default it would let one of them slow down everyone else's binds.
pub const DEFAULT_BIND_MAX_FAILURES_PER_ADDRESS: u32 = 0;

/// Default `bind_throttle.window`: the counts are of failures within about a minute; a
/// rule forgets one failure every `window / threshold` (12 s for `max_failures`).
pub const DEFAULT_BIND_FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// Default `bind_throttle.initial_delay`: the first bind held back waits a second.
pub const DEFAULT_BIND_INITIAL_DELAY: Duration = Duration::from_secs(1);

/// Default `bind_throttle.max_delay`: at most one guess per 4 s from one address (about
/// 21,600 a day instead of thousands a second), while a person who typed the password
/// wrong five times waits no more than that.
pub const DEFAULT_BIND_MAX_DELAY: Duration = Duration::from_secs(4);

/// Longest `bind_throttle.max_delay`: a bind held back keeps its connection and blocks
/// that connection's other requests; beyond a minute clients time out rather than wait.
pub const MAX_BIND_DELAY: Duration = Duration::from_secs(60);

/// Most `bind_throttle.exempt` entries: each bind from a throttled address looks at all of
/// them; a longer list belongs in a firewall.
pub const MAX_EXEMPT_NETWORKS: usize = 1024;

/// Highest threshold of every rule (`max_failures`, `max_failures_per_dn`,
/// `max_failures_per_address`): beyond it a rule would never act.
pub const MAX_BIND_MAX_FAILURES: u32 = 1_000_000;

/// An address or a network: `addr/prefix`, the prefix counting the leading bits that must
/// match (32 or 128 for a single address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNetwork {
    /// The network's address (bits beyond the prefix are ignored).
    pub addr: IpAddr,
    /// Leading bits that must match.
    pub prefix: u8,
}

impl IpNetwork {
    /// Parses `"192.0.2.7"`, `"192.0.2.0/24"`, `"2001:db8::1"` or `"2001:db8::/32"`.
    pub fn parse(text: &str) -> Result<IpNetwork, String> {
        let (addr_text, prefix_text) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr_text
            .trim()
            .parse()
            .map_err(|_| format!("`{text}` is not an IP address or a network such as 192.0.2.0/24"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix_text {
            None => max,
            Some(p) => {
                let p = p.trim();
                match p.parse::<u8>() {
                    Ok(n) if n <= max && !p.starts_with('+') => n,
                    _ => {
                        return Err(format!(
                            "`{text}`: the prefix length must be a number from 0 to {max}"
                        ))
                    }
                }
            }
        };
        Ok(IpNetwork { addr, prefix })
    }

    /// True when `ip` lies in this network. An IPv4 address given as IPv4-mapped IPv6
    /// (`::ffff:192.0.2.7`) is compared as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let (a, b, bits) = match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(i)) => (u128::from(u32::from(n)), u128::from(u32::from(i)), 32u32),
            (IpAddr::V6(n), IpAddr::V6(i)) => (u128::from(n), u128::from(i), 128u32),
            _ => return false,
        };
        let prefix = u32::from(self.prefix).min(bits);
        if prefix == 0 {
            return true;
        }
        let shift = bits - prefix;
        (a >> shift) == (b >> shift)
    }
}

impl fmt::Display for IpNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// `[bind_throttle]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindThrottleSettings {
    /// Whether failed binds slow down later binds from the same address.
    pub enabled: bool,
    /// Failures of one account from one address before its checks are held back.
    pub max_failures: u32,
    /// Failures of one account from every address before its checks are held back (0:
    /// off).
    pub max_failures_per_dn: u32,
    /// Failures from one address across accounts before its checks are held back (0: off).
    pub max_failures_per_address: u32,
    /// Each rule forgets one failure every `window / threshold`.
    pub window: Duration,
    /// The first delay; doubled with each further failure.
    pub initial_delay: Duration,
    /// The longest delay.
    pub max_delay: Duration,
    /// Clients on the loopback interface are exempt.
    pub exempt_loopback: bool,
    /// Addresses and networks that are exempt.
    pub exempt: Vec<IpNetwork>,
}

impl Default for BindThrottleSettings {
    fn default() -> Self {
        BindThrottleSettings {
            enabled: true,
            max_failures: DEFAULT_BIND_MAX_FAILURES,
            max_failures_per_dn: DEFAULT_BIND_MAX_FAILURES_PER_DN,
            max_failures_per_address: DEFAULT_BIND_MAX_FAILURES_PER_ADDRESS,
            window: DEFAULT_BIND_FAILURE_WINDOW,
            initial_delay: DEFAULT_BIND_INITIAL_DELAY,
            max_delay: DEFAULT_BIND_MAX_DELAY,
            exempt_loopback: false,
            exempt: Vec::new(),
        }
    }
}

/// `[bind_throttle]` as serde reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBindThrottle {
    pub enabled: Option<bool>,
    pub max_failures: Option<u64>,
    pub max_failures_per_dn: Option<u64>,
    pub max_failures_per_address: Option<u64>,
    pub window: Option<RawDuration>,
    pub initial_delay: Option<RawDuration>,
    pub max_delay: Option<RawDuration>,
    pub exempt_loopback: Option<bool>,
    pub exempt: Option<Vec<String>>,
}

impl BindThrottleSettings {
    /// The settings of a `[bind_throttle]` table; keys left out keep their defaults.
    pub(crate) fn from_raw(raw: RawBindThrottle) -> Result<BindThrottleSettings, ConfigError> {
        let mut s = BindThrottleSettings::default();
        if let Some(b) = raw.enabled {
            s.enabled = b;
        }
        let threshold = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(n) = raw.max_failures {
            s.max_failures = threshold(n);
        }
        if let Some(n) = raw.max_failures_per_dn {
            s.max_failures_per_dn = threshold(n);
        }
        if let Some(n) = raw.max_failures_per_address {
            s.max_failures_per_address = threshold(n);
        }
        if let Some(d) = raw.window {
            s.window = super::duration("bind_throttle.window", &d)?;
        }
        if let Some(d) = raw.initial_delay {
            s.initial_delay = super::duration("bind_throttle.initial_delay", &d)?;
        }
        if let Some(d) = raw.max_delay {
            s.max_delay = super::duration("bind_throttle.max_delay", &d)?;
        }
        if let Some(b) = raw.exempt_loopback {
            s.exempt_loopback = b;
        }
        if let Some(list) = raw.exempt {
            if list.len() > MAX_EXEMPT_NETWORKS {
                return Err(ConfigError::invalid(
                    "bind_throttle.exempt",
                    format!("at most {MAX_EXEMPT_NETWORKS} addresses or networks"),
                ));
            }
            s.exempt = list
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    IpNetwork::parse(t)
                        .map_err(|m| ConfigError::invalid(format!("bind_throttle.exempt[{i}]"), m))
                })
                .collect::<Result<_, _>>()?;
        }
        Ok(s)
    }

    /// Checks the bounds of every key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_BIND_MAX_FAILURES).contains(&self.max_failures) {
            return Err(ConfigError::invalid(
                "bind_throttle.max_failures",
                format!(
                    "{} is outside 1 to {MAX_BIND_MAX_FAILURES} (to turn the throttle off, set enabled = false)",
                    self.max_failures
                ),
            ));
        }
        for (key, n) in [
            ("bind_throttle.max_failures_per_dn", self.max_failures_per_dn),
            (
                "bind_throttle.max_failures_per_address",
                self.max_failures_per_address,
            ),
        ] {
            if n > MAX_BIND_MAX_FAILURES {
                return Err(ConfigError::invalid(
                    key,
                    format!("{n} is outside 0 (off) to {MAX_BIND_MAX_FAILURES}"),
                ));
            }
        }
        for (key, d) in [
            ("bind_throttle.window", self.window),
            ("bind_throttle.initial_delay", self.initial_delay),
        ] {
            if d.is_zero() {
                return Err(ConfigError::invalid(
                    key,
                    "must be more than 0 (to turn the throttle off, set enabled = false)",
                ));
            }
        }
        if self.max_delay < self.initial_delay {
            return Err(ConfigError::invalid(
                "bind_throttle.max_delay",
                format!(
                    "{} is shorter than bind_throttle.initial_delay ({})",
                    super::format_duration(self.max_delay),
                    super::format_duration(self.initial_delay)
                ),
            ));
        }
        if self.max_delay > MAX_BIND_DELAY {
            return Err(ConfigError::invalid(
                "bind_throttle.max_delay",
                format!(
                    "{} is longer than {}: a held-back bind keeps its connection waiting",
                    super::format_duration(self.max_delay),
                    super::format_duration(MAX_BIND_DELAY)
                ),
            ));
        }
        if self.exempt.len() > MAX_EXEMPT_NETWORKS {
            return Err(ConfigError::invalid(
                "bind_throttle.exempt",
                format!("at most {MAX_EXEMPT_NETWORKS} addresses or networks"),
            ));
        }
        Ok(())
    }

    /// True when binds from `ip` are never held back.
    pub fn is_exempt(&self, ip: IpAddr) -> bool {
        let loopback = match ip {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
            IpAddr::V4(v4) => v4.is_loopback(),
        };
        (self.exempt_loopback && loopback) || self.exempt.iter().any(|n| n.contains(ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_parse_and_match() {
        let n = IpNetwork::parse("192.0.2.0/24").unwrap();
        assert!(n.contains("192.0.2.200".parse().unwrap()));
        assert!(n.contains("::ffff:192.0.2.9".parse().unwrap()));
        assert!(!n.contains("192.0.3.1".parse().unwrap()));
        assert!(!n.contains("2001:db8::1".parse().unwrap()));
        let one = IpNetwork::parse("10.1.2.3").unwrap();
        assert_eq!(one.prefix, 32);
        assert!(one.contains("10.1.2.3".parse().unwrap()) && !one.contains("10.1.2.4".parse().unwrap()));
        let v6 = IpNetwork::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!v6.contains("2001:db9::1".parse().unwrap()));
        assert!(IpNetwork::parse("0.0.0.0/0")
            .unwrap()
            .contains("203.0.113.5".parse().unwrap()));
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "host.example",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "",
        ] {
            assert!(IpNetwork::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn exemptions_and_bounds() {
        let mut s = BindThrottleSettings::default();
        assert!(!s.is_exempt("127.0.0.1".parse().unwrap()));
        s.exempt_loopback = true;
        assert!(s.is_exempt("127.0.0.1".parse().unwrap()) && s.is_exempt("::1".parse().unwrap()));
        assert!(s.is_exempt("::ffff:127.0.0.1".parse().unwrap()));
        s.exempt = vec![IpNetwork::parse("198.51.100.0/24").unwrap()];
        assert!(s.is_exempt("198.51.100.7".parse().unwrap()));
        assert!(!s.is_exempt("198.51.101.7".parse().unwrap()));
        s.validate().unwrap();
        s.max_delay = Duration::from_millis(500);
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bind_throttle.max_delay"));
        s.max_delay = Duration::from_secs(61);
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bind_throttle.max_delay"));
        s.max_delay = DEFAULT_BIND_MAX_DELAY;
        s.max_failures = 0;
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bind_throttle.max_failures"));
        s.max_failures = DEFAULT_BIND_MAX_FAILURES;
        s.max_failures_per_dn = 0;
        s.max_failures_per_address = 0;
        s.validate().unwrap();
        s.max_failures_per_address = MAX_BIND_MAX_FAILURES + 1;
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bind_throttle.max_failures_per_address"));
    }
}
