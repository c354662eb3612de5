//! The failed-bind throttle: failed password checks slow down later guesses at the same
//! account, from the same address and from everywhere, without holding back anyone
//! else's correct password.
//!
//! Rules (`[bind_throttle]` in the configuration; `docs/security.md` compares them with
//! 389 DS's account lockout and OpenLDAP's ppolicy):
//! 1. a failure is a password check that failed: a name/password bind (simple or SASL
//!    PLAIN) answered `invalidCredentials` (wrong password, unknown name, no usable
//!    userPassword), or a Password Modify whose old password is wrong. Other refusals (a
//!    malformed DN, anonymous binds, SASL EXTERNAL, whose certificate TLS has checked) do
//!    not count, and are never held back;
//! 2. failures are counted three ways, each by a rule with its own threshold: per
//!    (address, account) pair (`max_failures`), per account from every address
//!    (`max_failures_per_dn`), and per address across accounts (`max_failures_per_address`,
//!    off by default). The account is the bind DN, normalized; an address is an IPv4
//!    address or an IPv6 /64 ([`Origin`]);
//! 3. each count leaks: one failure is forgotten every `window / threshold`, so a rule holds
//!    back once more than about `threshold` failures came within `window`, and a slow
//!    trickle of failures (one a minute) never adds up;
//! 4. a check is held back by every rule whose count has reached its threshold: the pair
//!    and account rules space the checks of that account (from that address, from
//!    everywhere) by a delay that starts at `initial_delay` and doubles with each further
//!    failure up to `max_delay`, whatever connection they come on (more connections do
//!    not guess faster); the wait comes before the password is checked, so it says nothing
//!    about the answer;
//! 5. a check the pair or account rule would hold back longer than `max_delay` (several
//!    binds of one account at once) is refused with `unwillingToPerform` (53) at once,
//!    without checking its password, saying when to try again. The address rule never
//!    refuses: it delays by at most `max_delay`, since what it counts may be someone
//!    else's failures on other accounts (a NAT, a proxy). So no bind is ever refused
//!    because of failures on other accounts, and with the address rule off (the default)
//!    none is even delayed by them;
//! 6. a successful check clears its (address, account) pair and takes that pair's
//!    failures back from the account's and the address's counts: a person who mistyped
//!    and then got it right is not held back afterwards. It does not clear failures that
//!    came from other addresses: a client that knows one account's password can neither
//!    reset the count of another account, nor the count others ran up on this one;
//! 7. exempt addresses (`exempt`, `exempt_loopback`) are never counted nor held back.
//!
//! Memory is bounded by the fixed table of [`table`]: [`MAX_TRACKED_COUNTS`] counts, a
//! lock held only for a few comparisons, never across an await: the caller gets a
//! [`Decision`] and waits outside. A check takes at most two locks, one after the other
//! (the address's shard, then the account's, which holds both the pair and the account
//! record).
//!
//! Time is passed in (`now`), so that tests drive the clock.

pub mod table;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::config::BindThrottleSettings;
pub use table::{Account, Origin, MAX_TRACKED_COUNTS, THROTTLE_SHARDS, THROTTLE_WAYS};
use table::{Key, Rule, Table};

/// What to do with a password check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Check the password now.
    Proceed,
    /// Wait this long, then check the password.
    Wait(Duration),
    /// Answer `unwillingToPerform` without checking: checks of this account must wait
    /// this long.
    Refuse {
        /// When the account's next check would run.
        retry_after: Duration,
    },
}

/// The throttle: shared by every connection (it lives in the `Directory`).
#[derive(Debug)]
pub struct BindThrottle {
    settings: BindThrottleSettings,
    table: Table,
}

impl BindThrottle {
    /// A throttle with `settings` and the standard table size.
    pub fn new(settings: BindThrottleSettings) -> BindThrottle {
        Self::with_table(settings, THROTTLE_SHARDS, THROTTLE_WAYS)
    }

    fn with_table(settings: BindThrottleSettings, shards: usize, ways: usize) -> BindThrottle {
        let leak = |threshold: u32| settings.window / threshold.max(1);
        let leaks = [
            leak(settings.max_failures),
            leak(settings.max_failures_per_dn),
            leak(settings.max_failures_per_address),
        ];
        BindThrottle {
            table: Table::new(shards, ways, leaks),
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &BindThrottleSettings {
        &self.settings
    }

    /// The account of a bind DN (normalized; a name that cannot be normalized is counted
    /// under the empty one).
    pub fn account(&self, norm_dn: &str) -> Account {
        self.table.account(norm_dn)
    }

    fn applies(&self, ip: IpAddr) -> bool {
        self.settings.enabled && !self.settings.is_exempt(ip)
    }

    /// A rule's threshold (0: the rule is off).
    fn threshold(&self, rule: Rule) -> u32 {
        let s = &self.settings;
        match rule {
            Rule::Pair => s.max_failures,
            Rule::Account => s.max_failures_per_dn,
            Rule::Origin => s.max_failures_per_address,
        }
    }

    /// Whether a record of `rule` counting `count` failures holds checks back.
    fn holds(&self, rule: Rule, count: u32) -> bool {
        let threshold = self.threshold(rule);
        threshold > 0 && count >= threshold
    }

    /// The delay a record of `rule` with `count` failures (at least its threshold) spaces
    /// checks by.
    fn delay_for(&self, rule: Rule, count: u32) -> Duration {
        let s = &self.settings;
        let doublings = count.saturating_sub(self.threshold(rule)).min(31);
        s.initial_delay.saturating_mul(1u32 << doublings).min(s.max_delay)
    }

    /// Decides about a password check for `account` from `ip` arriving at `now` (rules 4
    /// and 5). A check told to wait has its place reserved.
    pub fn check(&self, ip: IpAddr, account: Account, now: Instant) -> Decision {
        if !self.applies(ip) {
            return Decision::Proceed;
        }
        let origin = Origin::of(ip);
        let max_delay = self.settings.max_delay;
        // The address rule first: it never refuses, so its reservation is capped. When the
        // pair or account rule then refuses, that reservation stays: it holds the
        // address's later checks back by at most one more delay, within the cap.
        let mut slot = now;
        if self.threshold(Rule::Origin) > 0 {
            let mut shard = self.table.lock(Key::Origin(origin));
            if let Some(r) = shard.find(Key::Origin(origin), now) {
                if self.holds(Rule::Origin, r.count) {
                    slot = r.next_free.clamp(now, now + max_delay);
                    let delay = self.delay_for(Rule::Origin, r.count);
                    r.next_free = r.next_free.max(slot + delay);
                }
            }
        }
        // Then the pair and the account, under one lock.
        let keys = [Key::Pair(origin, account), Key::Account(account)];
        let mut shard = self.table.lock(keys[1]);
        let mut own = now;
        for key in keys {
            if let Some(r) = shard.find(key, now) {
                if self.holds(key.rule(), r.count) {
                    own = own.max(r.next_free);
                }
            }
        }
        let own_wait = own - now;
        if own_wait > max_delay {
            return Decision::Refuse {
                retry_after: own_wait,
            };
        }
        let slot = slot.max(own);
        for key in keys {
            if let Some(r) = shard.find(key, now) {
                if self.holds(key.rule(), r.count) {
                    let delay = self.delay_for(key.rule(), r.count);
                    r.next_free = r.next_free.max(slot + delay);
                }
            }
        }
        match slot - now {
            d if d.is_zero() => Decision::Proceed,
            d => Decision::Wait(d),
        }
    }

    /// [`BindThrottle::check`] at the current time.
    pub fn check_now(&self, ip: IpAddr, account: Account) -> Decision {
        self.check(ip, account, Instant::now())
    }

    /// Counts a failed password check for `account` from `ip` at `now` (rules 2 and 3).
    pub fn record_failure(&self, ip: IpAddr, account: Account, now: Instant) {
        if !self.applies(ip) {
            return;
        }
        let origin = Origin::of(ip);
        {
            let mut shard = self.table.lock(Key::Account(account));
            for key in [Key::Pair(origin, account), Key::Account(account)] {
                if self.threshold(key.rule()) > 0 {
                    self.count_failure(shard.find_or_insert(key, now), now);
                }
            }
        }
        if self.threshold(Rule::Origin) > 0 {
            let key = Key::Origin(origin);
            let mut shard = self.table.lock(key);
            self.count_failure(shard.find_or_insert(key, now), now);
        }
    }

    fn count_failure(&self, r: &mut table::Record, now: Instant) {
        r.count = r.count.saturating_add(1);
        let rule = r.key.rule();
        if self.holds(rule, r.count) {
            r.next_free = r.next_free.max(now + self.delay_for(rule, r.count));
        }
    }

    /// Counts a successful password check for `account` from `ip` at `now` (rule 6).
    pub fn record_success(&self, ip: IpAddr, account: Account, now: Instant) {
        if !self.applies(ip) {
            return;
        }
        let origin = Origin::of(ip);
        let pair = Key::Pair(origin, account);
        let own = {
            let mut shard = self.table.lock(Key::Account(account));
            let Some(own) = shard.find(pair, now).map(|r| r.count) else {
                return;
            };
            shard.remove(pair);
            if let Some(r) = shard.find(Key::Account(account), now) {
                r.count = r.count.saturating_sub(own);
            }
            own
        };
        if own > 0 && self.threshold(Rule::Origin) > 0 {
            let key = Key::Origin(origin);
            let mut shard = self.table.lock(key);
            if let Some(r) = shard.find(key, now) {
                r.count = r.count.saturating_sub(own);
            }
        }
    }

    /// Failure counts remembered at `now` (pairs, accounts and addresses).
    pub fn tracked(&self, now: Instant) -> usize {
        self.table.tracked(now)
    }
}

#[cfg(test)]
mod tests;
