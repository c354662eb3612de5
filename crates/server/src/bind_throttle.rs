//! The failed-bind throttle: failed simple binds from one client address slow down that
//! address's later binds, so that guessing passwords online is slow.
//!
//! Rules (`[bind_throttle]` in the configuration):
//! 1. a failed bind is a name/password bind answered `invalidCredentials` (wrong password,
//!    unknown name, no usable userPassword); other refusals (a malformed DN, anonymous or
//!    SASL binds) do not count;
//! 2. an address's failures count while each comes less than `window` after the previous
//!    one; once `window` passes without a failure the address is forgotten;
//! 3. from `max_failures` failures on, every name/password bind from the address is held
//!    back before its password is checked (so the wait says nothing about the answer):
//!    the delay starts at `initial_delay` and doubles with each further failure up to
//!    `max_delay`, and binds from one address are spaced by that delay, whatever the
//!    connection they come on (opening more connections does not guess faster);
//! 4. a bind that would wait more than `max_delay` (several connections of one address
//!    binding at once) is answered `unwillingToPerform` (53) at once, without checking its
//!    password, saying when to try again;
//! 5. a successful bind does not erase the address's failures: an attacker holding one
//!    valid account could otherwise reset its counter between guesses at others. The
//!    failures age out with `window` only. A person who mistyped a password a few times
//!    is held back at most `max_delay` per bind until then;
//! 6. IPv4 addresses (also IPv4-mapped IPv6) count one by one; IPv6 addresses count by
//!    their /64 network, the block one host usually holds, so that a host cannot escape the
//!    count by changing its interface identifier;
//! 7. exempt addresses (`exempt`, `exempt_loopback`) are never counted nor held back.
//!
//! Memory is bounded: [`MAX_TRACKED_ADDRESSES`] records in [`THROTTLE_SHARDS`] shards of
//! [`THROTTLE_WAYS`] records, each shard behind its own mutex, chosen by a keyed hash of the
//! address (the key is random per process, so a client cannot aim its addresses at one
//! shard). A shard that is full replaces a forgotten record, else the one whose last failure
//! is oldest. A lock is held only for a few comparisons, never across an await: the caller
//! gets a [`Decision`] and waits outside.
//!
//! Time is passed in (`now`), so that tests drive the clock.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::BindThrottleSettings;

/// Shards of the table (each with its own lock, so binds from different addresses rarely
/// wait for each other).
pub const THROTTLE_SHARDS: usize = 1024;

/// Records per shard.
pub const THROTTLE_WAYS: usize = 16;

/// Most addresses the throttle remembers at once: 16,384 records of about 56 octets, under
/// a mebibyte however many addresses a client uses.
pub const MAX_TRACKED_ADDRESSES: usize = THROTTLE_SHARDS * THROTTLE_WAYS;

/// What to do with a name/password bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Check the password now.
    Proceed,
    /// Wait this long, then check the password.
    Wait(Duration),
    /// Answer `unwillingToPerform` without checking: the address must wait this long.
    Refuse {
        /// When the address's next bind would be checked.
        retry_after: Duration,
    },
}

/// Who is counted: an IPv4 address, or the /64 network of an IPv6 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    V4(u32),
    V6Net(u64),
}

impl Key {
    fn of(ip: IpAddr) -> Key {
        match ip {
            IpAddr::V4(v4) => Key::V4(u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Key::V4(u32::from(v4)),
                None => Key::V6Net((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

/// One address's failures.
#[derive(Debug, Clone, Copy)]
struct Record {
    key: Key,
    failures: u32,
    last_failure: Instant,
    /// The earliest time the address's next bind is checked.
    next_free: Instant,
}

/// The throttle: shared by every connection (it lives in the `Directory`).
#[derive(Debug)]
pub struct BindThrottle {
    settings: BindThrottleSettings,
    hasher: RandomState,
    ways: usize,
    shards: Box<[Mutex<Vec<Record>>]>,
}

impl BindThrottle {
    /// A throttle with `settings` and the standard table size.
    pub fn new(settings: BindThrottleSettings) -> BindThrottle {
        Self::with_table(settings, THROTTLE_SHARDS, THROTTLE_WAYS)
    }

    fn with_table(settings: BindThrottleSettings, shards: usize, ways: usize) -> BindThrottle {
        BindThrottle {
            settings,
            hasher: RandomState::new(),
            ways: ways.max(1),
            shards: (0..shards.max(1)).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &BindThrottleSettings {
        &self.settings
    }

    fn applies(&self, ip: IpAddr) -> bool {
        self.settings.enabled && !self.settings.is_exempt(ip)
    }

    fn shard(&self, key: Key) -> std::sync::MutexGuard<'_, Vec<Record>> {
        let i = (self.hasher.hash_one(key) % self.shards.len() as u64) as usize;
        // `i` is below the length by construction; the fallback is never taken.
        let shard = self.shards.get(i).unwrap_or(&self.shards[0]);
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self, r: &Record, now: Instant) -> bool {
        now.saturating_duration_since(r.last_failure) < self.settings.window
    }

    /// The delay after `failures` failures (at least `max_failures`).
    fn delay_for(&self, failures: u32) -> Duration {
        let s = &self.settings;
        let doublings = failures.saturating_sub(s.max_failures).min(31);
        s.initial_delay.saturating_mul(1u32 << doublings).min(s.max_delay)
    }

    /// Decides about a name/password bind from `ip` arriving at `now` (see the module
    /// documentation, rules 3 and 4). A bind told to wait has its place reserved.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Decision {
        self.check_at(ip, || now)
    }

    /// [`BindThrottle::check`] at the current time, read only when the address has a
    /// record (most binds come from addresses without failures).
    pub fn check_now(&self, ip: IpAddr) -> Decision {
        self.check_at(ip, Instant::now)
    }

    fn check_at(&self, ip: IpAddr, now: impl FnOnce() -> Instant) -> Decision {
        if !self.applies(ip) {
            return Decision::Proceed;
        }
        let key = Key::of(ip);
        let mut shard = self.shard(key);
        let Some(r) = shard.iter_mut().find(|r| r.key == key) else {
            return Decision::Proceed;
        };
        let now = now();
        if !self.live(r, now) || r.failures < self.settings.max_failures {
            return Decision::Proceed;
        }
        let delay = self.delay_for(r.failures);
        let slot = r.next_free.max(now);
        let wait = slot - now;
        if wait > self.settings.max_delay {
            return Decision::Refuse { retry_after: wait };
        }
        r.next_free = slot + delay;
        if wait.is_zero() {
            Decision::Proceed
        } else {
            Decision::Wait(wait)
        }
    }

    /// Counts a failed bind from `ip` at `now`.
    pub fn record_failure(&self, ip: IpAddr, now: Instant) {
        if !self.applies(ip) {
            return;
        }
        let key = Key::of(ip);
        let window = self.settings.window;
        let mut shard = self.shard(key);
        let i = match shard.iter().position(|r| r.key == key) {
            Some(i) => i,
            None => {
                let fresh = Record {
                    key,
                    failures: 0,
                    last_failure: now,
                    next_free: now,
                };
                if shard.len() < self.ways {
                    shard.push(fresh);
                    shard.len() - 1
                } else {
                    // A forgotten record first, else the one whose last failure is oldest.
                    let victim = shard
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, r)| {
                            (
                                now.saturating_duration_since(r.last_failure) < window,
                                r.last_failure,
                            )
                        })
                        .map_or(0, |(i, _)| i);
                    if let Some(slot) = shard.get_mut(victim) {
                        *slot = fresh;
                    }
                    victim
                }
            }
        };
        let delay_after = |failures| self.delay_for(failures);
        let max_failures = self.settings.max_failures;
        let Some(r) = shard.get_mut(i) else { return };
        if !self.live(r, now) {
            r.failures = 0;
            r.next_free = now;
        }
        r.failures = r.failures.saturating_add(1);
        r.last_failure = now;
        if r.failures >= max_failures {
            r.next_free = r.next_free.max(now + delay_after(r.failures));
        }
    }

    /// Addresses remembered at `now` (failures not yet forgotten).
    pub fn tracked(&self, now: Instant) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock().unwrap_or_else(|e| e.into_inner());
                s.iter().filter(|r| self.live(r, now)).count()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IpNetwork;

    const A: &str = "192.0.2.1";
    const B: &str = "192.0.2.2";

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn settings() -> BindThrottleSettings {
        BindThrottleSettings {
            enabled: true,
            max_failures: 3,
            window: Duration::from_secs(60),
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(4),
            exempt_loopback: false,
            exempt: Vec::new(),
        }
    }

    /// A clock: `t(ms)` is `ms` milliseconds after a fixed start.
    fn clock() -> impl Fn(u64) -> Instant {
        let base = Instant::now();
        move |ms| base + Duration::from_millis(ms)
    }

    #[test]
    fn nothing_happens_below_the_threshold() {
        let t = clock();
        let th = BindThrottle::new(settings());
        assert_eq!(th.check(ip(A), t(0)), Decision::Proceed);
        th.record_failure(ip(A), t(0));
        th.record_failure(ip(A), t(10));
        assert_eq!(th.check(ip(A), t(20)), Decision::Proceed);
        // Another address is not affected by A's failures.
        th.record_failure(ip(A), t(30));
        assert_eq!(th.check(ip(B), t(40)), Decision::Proceed);
        assert_ne!(th.check(ip(A), t(40)), Decision::Proceed);
    }

    #[test]
    fn delays_double_up_to_the_cap_and_successes_do_not_reset() {
        let t = clock();
        let th = BindThrottle::new(settings());
        for ms in [0, 1, 2] {
            th.record_failure(ip(A), t(ms));
        }
        // One client retrying as soon as it is answered: each bind is held back, checked,
        // fails, and the next delay doubles (1 s, 2 s, 4 s) up to the 4 s cap.
        assert_eq!(th.check(ip(A), t(2)), Decision::Wait(Duration::from_secs(1)));
        th.record_failure(ip(A), t(1002));
        assert_eq!(th.check(ip(A), t(1002)), Decision::Wait(Duration::from_secs(2)));
        th.record_failure(ip(A), t(3002));
        assert_eq!(th.check(ip(A), t(3002)), Decision::Wait(Duration::from_secs(4)));
        th.record_failure(ip(A), t(7002));
        assert_eq!(th.check(ip(A), t(7002)), Decision::Wait(Duration::from_secs(4)));
        for n in 0..20 {
            th.record_failure(ip(A), t(11_002 + n));
        }
        assert_eq!(th.check(ip(A), t(11_021)), Decision::Wait(Duration::from_secs(4)));
        // That bind (checked at 15.021 s) succeeds: nothing is reset, the next one waits.
        assert_eq!(th.check(ip(A), t(15_021)), Decision::Wait(Duration::from_secs(4)));
    }

    #[test]
    fn a_queue_longer_than_the_cap_is_refused() {
        let t = clock();
        let th = BindThrottle::new(settings());
        for n in 0..8 {
            th.record_failure(ip(A), t(n)); // delay at the 4 s cap
        }
        assert_eq!(th.check(ip(A), t(7)), Decision::Wait(Duration::from_secs(4)));
        // Reserved until 11.007 s: a second bind would wait 8 s, above the cap.
        assert_eq!(
            th.check(ip(A), t(7)),
            Decision::Refuse {
                retry_after: Duration::from_secs(8)
            }
        );
        // Refusals reserve nothing: once the first has gone, the next one waits again.
        assert_eq!(th.check(ip(A), t(4007)), Decision::Wait(Duration::from_secs(4)));
    }

    #[test]
    fn failures_are_forgotten_after_the_window_without_failure() {
        let t = clock();
        let th = BindThrottle::new(settings());
        // Failures 50 s apart stay in one run: the window restarts with each.
        for s in [0, 50, 100] {
            th.record_failure(ip(A), t(s * 1000));
        }
        assert!(matches!(th.check(ip(A), t(100_500)), Decision::Wait(_)));
        assert_eq!(th.tracked(t(100_500)), 1);
        // 60 s after the last failure the address is forgotten and starts from zero.
        assert_eq!(th.check(ip(A), t(160_000)), Decision::Proceed);
        assert_eq!(th.tracked(t(160_000)), 0);
        th.record_failure(ip(A), t(160_000));
        th.record_failure(ip(A), t(160_001));
        assert_eq!(th.check(ip(A), t(160_002)), Decision::Proceed);
    }

    #[test]
    fn exempt_disabled_and_ipv6_networks() {
        let t = clock();
        let mut s = settings();
        s.exempt = vec![IpNetwork::parse("198.51.100.0/24").unwrap()];
        s.exempt_loopback = true;
        let th = BindThrottle::new(s.clone());
        for n in 0..10 {
            th.record_failure(ip("198.51.100.9"), t(n));
            th.record_failure(ip("127.0.0.1"), t(n));
            // Addresses of one /64 count together; IPv4-mapped IPv6 counts as IPv4.
            th.record_failure(ip(&format!("2001:db8:1:2::{n:x}")), t(n));
            th.record_failure(ip("::ffff:192.0.2.77"), t(n));
        }
        assert_eq!(th.check(ip("198.51.100.9"), t(20)), Decision::Proceed);
        assert_eq!(th.check(ip("127.0.0.1"), t(20)), Decision::Proceed);
        assert!(matches!(
            th.check(ip("2001:db8:1:2::ffff"), t(20)),
            Decision::Wait(_)
        ));
        assert_eq!(th.check(ip("2001:db8:1:3::1"), t(20)), Decision::Proceed);
        assert!(matches!(th.check(ip("192.0.2.77"), t(20)), Decision::Wait(_)));
        assert_eq!(th.tracked(t(20)), 2);
        s.enabled = false;
        let off = BindThrottle::new(s);
        for n in 0..10 {
            off.record_failure(ip(A), t(n));
        }
        assert_eq!(off.check(ip(A), t(20)), Decision::Proceed);
        assert_eq!(off.tracked(t(20)), 0);
    }

    #[test]
    fn the_table_never_holds_more_than_its_bound() {
        let t = clock();
        let th = BindThrottle::with_table(settings(), 2, 4);
        for n in 0..200u32 {
            let a = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n));
            th.record_failure(a, t(u64::from(n)));
        }
        assert!(th.tracked(t(200)) <= 8, "{}", th.tracked(t(200)));
        let held: usize = th.shards.iter().map(|s| s.lock().unwrap().len()).sum();
        assert!(held <= 8);
        // The newest address survived eviction (the oldest records went first).
        let newest = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + 199));
        for ms in 201..203 {
            th.record_failure(newest, t(ms));
        }
        assert!(matches!(th.check(newest, t(203)), Decision::Wait(_)));
        assert_eq!(MAX_TRACKED_ADDRESSES, 16_384);
    }
}
