//! The throttle's memory: a fixed table of failure counts, each a leaky count with a
//! reservation of the next password check it allows.
//!
//! Shape:
//! 1. [`THROTTLE_SHARDS`] shards of [`THROTTLE_WAYS`] [`Record`]s, each shard behind its own
//!    mutex; nothing grows with the number of addresses or names a client uses;
//! 2. a record counts failures of one [`Key`]: an (address, account) pair, an account, or
//!    an address. The shard is chosen by a keyed hash (random key per process, so a client
//!    cannot aim its names or addresses at one shard): of the account for the first two
//!    kinds, so that one lock covers both records a bind looks at; of the address for the
//!    third;
//! 3. a count leaks: one failure is forgotten every `leak` period of its rule
//!    ([`Record::settle`], whole failures, so that "n failures" means n), and a record
//!    whose count is 0 is free;
//! 4. a shard that is full replaces a free record, else the one with the lowest count (the
//!    oldest among equals): junk failures spread over many names cannot push out the count
//!    of an account under attack, which is the highest in its shard.
//!
//! Costs: a look-up scans one shard (16 records of at most 72 octets) under its lock; a lock is
//! held for a few comparisons, never across an await.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Shards of the table (each with its own lock, so binds of different accounts rarely
/// wait for each other).
pub const THROTTLE_SHARDS: usize = 1024;

/// Records per shard.
pub const THROTTLE_WAYS: usize = 16;

/// Most failure counts remembered at once: 16,384 records of at most [`RECORD_BYTES`]
/// octets (1.2 MB), however many addresses and names clients use.
pub const MAX_TRACKED_COUNTS: usize = THROTTLE_SHARDS * THROTTLE_WAYS;

/// The size of a [`Record`] (checked at compile time), for the bound above.
pub const RECORD_BYTES: usize = 72;

const _: () = assert!(std::mem::size_of::<Record>() <= RECORD_BYTES);

/// Where binds come from: an IPv4 address, or the /64 network of an IPv6 address (the
/// block one host usually holds, so that a host cannot escape its count by changing its
/// interface identifier). IPv4-mapped IPv6 counts as IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// An IPv4 address.
    V4(u32),
    /// The first 64 bits of an IPv6 address.
    V6Net(u64),
}

impl Origin {
    /// The origin of a client address.
    pub fn of(ip: IpAddr) -> Origin {
        match ip {
            IpAddr::V4(v4) => Origin::V4(u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Origin::V4(u32::from(v4)),
                None => Origin::V6Net((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

/// The account a password is checked for: a keyed hash of its normalized DN (64 bits with
/// a random key: two names share a count with a chance of 2^-64, and a client cannot
/// choose names that collide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Account(pub(super) u64);

/// What a record counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// Failures of one account from one origin.
    Pair(Origin, Account),
    /// Failures of one account from every origin.
    Account(Account),
    /// Failures from one origin, whatever the account.
    Origin(Origin),
}

/// The three rules, in the order of [`Key`]'s kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `max_failures`: one account from one address.
    Pair = 0,
    /// `max_failures_per_dn`: one account from every address.
    Account = 1,
    /// `max_failures_per_address`: one address, every account.
    Origin = 2,
}

impl Key {
    /// The rule that counts this key.
    pub fn rule(&self) -> Rule {
        match self {
            Key::Pair(..) => Rule::Pair,
            Key::Account(_) => Rule::Account,
            Key::Origin(_) => Rule::Origin,
        }
    }
}

/// One key's failures.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    /// What is counted.
    pub key: Key,
    /// Failures still counted.
    pub count: u32,
    /// Leaks are counted up to this time.
    pub settled: Instant,
    /// The earliest time the next password check this record holds back may run.
    pub next_free: Instant,
}

impl Record {
    fn new(key: Key, now: Instant) -> Record {
        Record {
            key,
            count: 0,
            settled: now,
            next_free: now,
        }
    }

    /// Forgets the failures that leaked away by `now`, one per `leak` (step 3 of the module
    /// documentation); the part of a period not yet complete is kept.
    pub fn settle(&mut self, leak: Duration, now: Instant) {
        let elapsed = now.saturating_duration_since(self.settled);
        if self.count == 0 {
            self.settled = now;
            return;
        }
        let leak_ns = leak.as_nanos().max(1);
        let leaked = elapsed.as_nanos() / leak_ns;
        if leaked >= u128::from(self.count) {
            self.count = 0;
            self.settled = now;
        } else {
            // `leaked` is below `count`, a u32.
            let leaked = leaked as u32;
            self.count -= leaked;
            self.settled += leak.saturating_mul(leaked);
        }
    }
}

/// The table (see the module documentation).
#[derive(Debug)]
pub struct Table {
    hasher: RandomState,
    ways: usize,
    /// The leak period of each [`Rule`].
    leaks: [Duration; 3],
    shards: Box<[Mutex<Vec<Record>>]>,
}

/// One locked shard.
pub struct Shard<'a> {
    records: MutexGuard<'a, Vec<Record>>,
    ways: usize,
    leaks: [Duration; 3],
}

impl Table {
    /// A table of `shards` x `ways` records whose rules leak one failure per `leaks[rule]`.
    pub fn new(shards: usize, ways: usize, leaks: [Duration; 3]) -> Table {
        Table {
            hasher: RandomState::new(),
            ways: ways.max(1),
            leaks,
            shards: (0..shards.max(1)).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    /// The account of a normalized DN.
    pub fn account(&self, norm_dn: &str) -> Account {
        Account(self.hasher.hash_one(norm_dn))
    }

    /// The shard holding `key` (step 2 of the module documentation), locked.
    pub fn lock(&self, key: Key) -> Shard<'_> {
        let h = match key {
            Key::Pair(_, a) | Key::Account(a) => self.hasher.hash_one(a),
            Key::Origin(o) => self.hasher.hash_one(o),
        };
        let i = (h % self.shards.len() as u64) as usize;
        // `i` is below the length by construction; the fallback is never taken.
        let shard = self.shards.get(i).unwrap_or(&self.shards[0]);
        Shard {
            records: shard.lock().unwrap_or_else(|e| e.into_inner()),
            ways: self.ways,
            leaks: self.leaks,
        }
    }

    /// Records still counting failures at `now`.
    pub fn tracked(&self, now: Instant) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
                for r in s.iter_mut() {
                    r.settle(self.leaks[r.key.rule() as usize], now);
                }
                s.iter().filter(|r| r.count > 0).count()
            })
            .sum()
    }

    /// Records held, counting or not (never more than the table's size).
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
}

impl Shard<'_> {
    fn leak(&self, key: Key) -> Duration {
        self.leaks[key.rule() as usize]
    }

    /// The record of `key`, settled at `now`, when there is one.
    pub fn find(&mut self, key: Key, now: Instant) -> Option<&mut Record> {
        let leak = self.leak(key);
        let r = self.records.iter_mut().find(|r| r.key == key)?;
        r.settle(leak, now);
        Some(r)
    }

    /// The record of `key`, settled at `now`; a new one (step 4 of the module
    /// documentation) when there is none.
    pub fn find_or_insert(&mut self, key: Key, now: Instant) -> &mut Record {
        let leaks = self.leaks;
        let i = match self.records.iter().position(|r| r.key == key) {
            Some(i) => i,
            None if self.records.len() < self.ways => {
                self.records.push(Record::new(key, now));
                self.records.len() - 1
            }
            None => {
                for r in self.records.iter_mut() {
                    r.settle(leaks[r.key.rule() as usize], now);
                }
                let victim = self
                    .records
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, r)| (r.count, r.settled))
                    .map_or(0, |(i, _)| i);
                self.records[victim] = Record::new(key, now);
                victim
            }
        };
        let r = &mut self.records[i];
        r.settle(leaks[key.rule() as usize], now);
        r
    }

    /// Forgets the record of `key`.
    pub fn remove(&mut self, key: Key) {
        if let Some(i) = self.records.iter().position(|r| r.key == key) {
            self.records.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_leak_one_whole_failure_per_period() {
        let t0 = Instant::now();
        let key = Key::Origin(Origin::V4(1));
        let mut r = Record::new(key, t0);
        r.count = 3;
        r.settle(Duration::from_secs(10), t0 + Duration::from_secs(9));
        assert_eq!(r.count, 3);
        r.settle(Duration::from_secs(10), t0 + Duration::from_secs(25));
        assert_eq!(r.count, 1);
        // The 5 s of the period begun at 20 s are kept: the last failure leaks at 30 s.
        r.settle(Duration::from_secs(10), t0 + Duration::from_secs(29));
        assert_eq!(r.count, 1);
        r.settle(Duration::from_secs(10), t0 + Duration::from_secs(30));
        assert_eq!(r.count, 0);
    }

    #[test]
    fn ipv6_counts_by_network_and_mapped_ipv4_as_ipv4() {
        let a = Origin::of("2001:db8:1:2::1".parse().unwrap());
        assert_eq!(a, Origin::of("2001:db8:1:2::ffff".parse().unwrap()));
        assert_ne!(a, Origin::of("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(
            Origin::of("::ffff:192.0.2.7".parse().unwrap()),
            Origin::of("192.0.2.7".parse().unwrap())
        );
    }
}
