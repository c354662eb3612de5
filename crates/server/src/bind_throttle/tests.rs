//! The throttle's rules, one test each, on a driven clock.

use super::*;
use crate::config::IpNetwork;

const A: &str = "192.0.2.1";
const B: &str = "192.0.2.2";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Pair rule at 3, account rule at 6, address rule off; a 60 s window; delays 1 s to 4 s.
fn settings() -> BindThrottleSettings {
    BindThrottleSettings {
        enabled: true,
        max_failures: 3,
        max_failures_per_dn: 6,
        max_failures_per_address: 0,
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

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn a_pair_is_held_back_from_its_threshold_and_nobody_else_is() {
    let t = clock();
    let th = BindThrottle::new(settings());
    let (x, admin) = (th.account("uid=x,dc=example"), th.account("cn=admin,dc=example"));
    th.record_failure(ip(A), x, t(0));
    th.record_failure(ip(A), x, t(10));
    assert_eq!(th.check(ip(A), x, t(20)), Decision::Proceed);
    th.record_failure(ip(A), x, t(30));
    assert_eq!(
        th.check(ip(A), x, t(40)),
        Decision::Wait(Duration::from_millis(990))
    );
    // Another account from the same address, and the same account from another address
    // (below the account rule's threshold), are not held back at all.
    assert_eq!(th.check(ip(A), admin, t(40)), Decision::Proceed);
    assert_eq!(th.check(ip(B), x, t(40)), Decision::Proceed);
}

#[test]
fn delays_double_up_to_the_cap() {
    let t = clock();
    let th = BindThrottle::new(settings());
    let x = th.account("uid=x");
    for ms in [0, 1, 2] {
        th.record_failure(ip(A), x, t(ms));
    }
    // One client retrying as soon as it is answered: each check is held back, fails, and
    // the next delay doubles (1 s, 2 s, 4 s) up to the 4 s cap.
    assert_eq!(th.check(ip(A), x, t(2)), Decision::Wait(secs(1)));
    th.record_failure(ip(A), x, t(1002));
    assert_eq!(th.check(ip(A), x, t(1002)), Decision::Wait(secs(2)));
    th.record_failure(ip(A), x, t(3002));
    assert_eq!(th.check(ip(A), x, t(3002)), Decision::Wait(secs(4)));
    th.record_failure(ip(A), x, t(7002));
    assert_eq!(th.check(ip(A), x, t(7002)), Decision::Wait(secs(4)));
}

#[test]
fn a_queue_longer_than_the_cap_is_refused_for_that_account_only() {
    let t = clock();
    let th = BindThrottle::new(settings());
    let (x, admin) = (th.account("uid=x"), th.account("cn=admin"));
    for n in 0..6 {
        th.record_failure(ip(A), x, t(n)); // past the cap
    }
    assert_eq!(th.check(ip(A), x, t(5)), Decision::Wait(secs(4)));
    // Reserved until 8.005 s: a second check would wait 8 s, above the cap.
    assert_eq!(
        th.check(ip(A), x, t(5)),
        Decision::Refuse { retry_after: secs(8) }
    );
    // Refusals reserve nothing: once the first has gone, the next one waits again.
    assert_eq!(th.check(ip(A), x, t(4005)), Decision::Wait(secs(4)));
    // Four binds of another account from the same address at once: all go ahead.
    for _ in 0..4 {
        assert_eq!(th.check(ip(A), admin, t(4005)), Decision::Proceed);
    }
}

#[test]
fn guessing_one_account_from_many_addresses_is_held_back_everywhere() {
    let t = clock();
    let th = BindThrottle::new(settings());
    let (x, y) = (th.account("uid=x"), th.account("uid=y"));
    // Two failures from each of three addresses: no pair reaches 3, the account reaches 6.
    for (n, addr) in ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
        .iter()
        .enumerate()
    {
        th.record_failure(ip(addr), x, t(n as u64 * 2));
        th.record_failure(ip(addr), x, t(n as u64 * 2 + 1));
    }
    // A fourth address guessing at x is held back, its checks spaced by the account's
    // delay; once the line is longer than the cap, a fifth address is refused.
    let waits: Vec<Decision> = (0..4).map(|_| th.check(ip("198.51.100.4"), x, t(6))).collect();
    assert_eq!(waits[0], Decision::Wait(Duration::from_millis(999)));
    assert!(waits.iter().all(|d| matches!(d, Decision::Wait(_))), "{waits:?}");
    assert!(matches!(
        th.check(ip("198.51.100.5"), x, t(6)),
        Decision::Refuse { .. }
    ));
    // Another account is not affected.
    assert_eq!(th.check(ip("198.51.100.1"), y, t(6)), Decision::Proceed);
}

#[test]
fn a_success_clears_its_pair_and_only_its_own_failures() {
    let t = clock();
    let th = BindThrottle::new(settings());
    let x = th.account("uid=x");
    // A person mistypes 4 times from A, then gets it right: not held back afterwards.
    for n in 0..4 {
        th.record_failure(ip(A), x, t(n));
    }
    assert!(matches!(th.check(ip(A), x, t(10)), Decision::Wait(_)));
    th.record_success(ip(A), x, t(1010));
    assert_eq!(th.check(ip(A), x, t(1010)), Decision::Proceed);
    assert_eq!(th.tracked(t(1010)), 0);
    // Failures of x from B (5, one short of the account rule) stay when A succeeds: one
    // more from anywhere holds x back for every address.
    for n in 0..5 {
        th.record_failure(ip(B), x, t(2000 + n));
    }
    th.record_failure(ip(A), x, t(2010));
    th.record_success(ip(A), x, t(2020));
    assert_eq!(th.check(ip("192.0.2.3"), x, t(2030)), Decision::Proceed);
    th.record_failure(ip("192.0.2.3"), x, t(2040));
    assert!(matches!(th.check(ip("192.0.2.4"), x, t(2050)), Decision::Wait(_)));
    // A success of another account from B takes nothing back from x.
    let y = th.account("uid=y");
    th.record_success(ip(B), y, t(2060));
    assert!(matches!(
        th.check(ip(B), x, t(2070)),
        Decision::Wait(_) | Decision::Refuse { .. }
    ));
}

#[test]
fn a_trickle_of_failures_never_adds_up() {
    let t = clock();
    let th = BindThrottle::new(settings());
    let x = th.account("uid=x");
    // One failure every 59 s for an hour: the pair rule forgets one every 20 s.
    for n in 0..60u64 {
        th.record_failure(ip(A), x, t(n * 59_000));
        assert_eq!(
            th.check(ip(A), x, t(n * 59_000 + 1)),
            Decision::Proceed,
            "failure {n}"
        );
    }
    // A burst is remembered, then forgotten one failure per 20 s.
    for n in 0..3 {
        th.record_failure(ip(A), x, t(3_600_000 + n));
    }
    assert!(matches!(th.check(ip(A), x, t(3_600_010)), Decision::Wait(_)));
    assert_eq!(th.check(ip(A), x, t(3_620_010)), Decision::Proceed);
    assert_eq!(th.tracked(t(3_700_000)), 0);
}

#[test]
fn the_address_rule_is_off_by_default_and_never_refuses() {
    let t = clock();
    let th = BindThrottle::new(settings());
    let admin = th.account("cn=admin");
    // Spraying 100 accounts from A: each pair and account has one failure.
    for n in 0..100 {
        th.record_failure(ip(A), th.account(&format!("uid=u{n}")), t(n));
    }
    assert_eq!(th.check(ip(A), admin, t(100)), Decision::Proceed);

    let mut s = settings();
    s.max_failures_per_address = 10;
    let th = BindThrottle::new(s);
    for n in 0..100 {
        th.record_failure(ip(A), th.account(&format!("uid=u{n}")), t(n));
    }
    // Held back, but by at most max_delay, and never refused: four binds at once.
    for _ in 0..4 {
        match th.check(ip(A), admin, t(100)) {
            Decision::Wait(d) => assert!(d <= secs(4), "{d:?}"),
            other => panic!("{other:?}"),
        }
    }
    // Another address is not affected.
    assert_eq!(th.check(ip(B), admin, t(100)), Decision::Proceed);
}

#[test]
fn exempt_disabled_and_ipv6_networks() {
    let t = clock();
    let mut s = settings();
    s.exempt = vec![IpNetwork::parse("198.51.100.0/24").unwrap()];
    s.exempt_loopback = true;
    let th = BindThrottle::new(s.clone());
    let x = th.account("uid=x");
    for n in 0..10 {
        th.record_failure(ip("198.51.100.9"), x, t(n));
        th.record_failure(ip("127.0.0.1"), x, t(n));
    }
    assert_eq!(th.check(ip("198.51.100.9"), x, t(20)), Decision::Proceed);
    assert_eq!(th.check(ip("127.0.0.1"), x, t(20)), Decision::Proceed);
    assert_eq!(th.tracked(t(20)), 0);
    let y = th.account("uid=y");
    for n in 0..3 {
        // Addresses of one /64 count together.
        th.record_failure(ip(&format!("2001:db8:1:2::{n:x}")), y, t(n));
    }
    assert!(matches!(
        th.check(ip("2001:db8:1:2::ffff"), y, t(20)),
        Decision::Wait(_)
    ));
    assert_eq!(th.check(ip("2001:db8:1:3::1"), y, t(20)), Decision::Proceed);
    s.enabled = false;
    let off = BindThrottle::new(s);
    for n in 0..10 {
        off.record_failure(ip(A), x, t(n));
    }
    assert_eq!(off.check(ip(A), x, t(20)), Decision::Proceed);
    assert_eq!(off.tracked(t(20)), 0);
}

#[test]
fn the_table_never_holds_more_than_its_bound_and_keeps_the_highest_counts() {
    let t = clock();
    let th = BindThrottle::with_table(settings(), 2, 4);
    let x = th.account("uid=x");
    for n in 0..8 {
        th.record_failure(ip(A), x, t(n));
    }
    // Junk: 500 failures of 500 names from 500 addresses, two records each.
    for n in 0..500u32 {
        let a = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n));
        th.record_failure(a, th.account(&format!("uid=junk{n}")), t(100 + u64::from(n)));
    }
    assert!(th.table.held() <= 8, "{}", th.table.held());
    // The account under attack kept its counts: still held back.
    assert!(matches!(th.check(ip(A), x, t(700)), Decision::Wait(_)));
    assert!(matches!(
        th.check(ip(B), x, t(700)),
        Decision::Wait(_) | Decision::Refuse { .. }
    ));
    assert_eq!(MAX_TRACKED_COUNTS, 16_384);
}
