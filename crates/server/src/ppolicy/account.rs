//! An account's password policy state (the operational attributes on its entry) and what
//! it means for a bind: locked, held back after a failure (`pwdMinDelay`), idle too long
//! (`pwdMaxIdle`), outside its validity window, expired with or without grace logins
//! (`pwdGraceAuthNLimit` within `pwdGraceExpiry`), about to expire, reset. Pure functions
//! of the state, the policy and the time, as OpenLDAP 2.5's `account_locked` and
//! `ppolicy_bind_response` decide them.

use larch_model::entry::StoredRef;
use larch_proto::controls::{PasswordPolicyError, PasswordPolicyWarning};

use super::policy::{Policy, PolicyTypes};
use super::time::{self, MICROS};

/// The value of `pwdAccountLockedTime` that locks an account until an administrator
/// removes it, whatever the lockout duration (the draft, section 5.3.3).
pub const PERMANENT_LOCK: &str = "000001010000Z";

/// `pwdAccountLockedTime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockedTime {
    /// `000001010000Z`, or a value that does not read as a time (a lock fails closed).
    Permanent,
    /// Locked at this time.
    At(i64),
}

/// The state password policy keeps on an account's entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountState {
    /// `pwdChangedTime`.
    pub changed: Option<i64>,
    /// `pwdAccountLockedTime`.
    pub locked: Option<LockedTime>,
    /// `pwdFailureTime` values that read as times, oldest first.
    pub failures: Vec<i64>,
    /// How many `pwdGraceUseTime` values there are.
    pub grace_uses: u32,
    /// `pwdReset: TRUE`.
    pub reset: bool,
    /// `pwdStartTime` (`Some(None)`: present but unreadable).
    pub start: Option<Option<i64>>,
    /// `pwdEndTime` (`Some(None)`: present but unreadable).
    pub end: Option<Option<i64>>,
    /// `pwdAccountTmpLockoutEnd`: the end of the delay after a failure (`Some(None)`:
    /// present but unreadable, which holds the account back, as in slapd).
    pub delayed_until: Option<Option<i64>>,
    /// `pwdLastSuccess` (an unreadable value is taken as absent).
    pub last_success: Option<i64>,
}

/// Whether a lock is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockStatus {
    /// No lock.
    Unlocked,
    /// Locked now.
    Locked,
    /// A lock whose duration has passed: the bind goes on and the value is removed.
    Lapsed,
}

impl AccountState {
    /// Reads the state from an entry's attributes, in one pass over them (reading each
    /// type by itself would scan the stored entry once per type, on every bind).
    pub fn read(attrs: StoredRef<'_>, t: &PolicyTypes) -> AccountState {
        let mut failures: Vec<i64> = Vec::new();
        let mut grace_uses = 0u32;
        // The first value of each single-valued type, from its first attribute that has one.
        let (mut changed, mut locked, mut reset, mut start, mut end) = (None, None, None, None, None);
        let (mut delayed_until, mut last_success) = (None, None);
        for a in attrs.attributes() {
            if a.ty == t.failure_time {
                failures.extend(a.values.iter().filter_map(time::parse));
                continue;
            }
            if a.ty == t.grace_use_time {
                grace_uses += a.values.len() as u32;
                continue;
            }
            let slot = if a.ty == t.changed_time {
                &mut changed
            } else if a.ty == t.locked_time {
                &mut locked
            } else if a.ty == t.reset {
                &mut reset
            } else if a.ty == t.start_time {
                &mut start
            } else if a.ty == t.end_time {
                &mut end
            } else if a.ty == t.tmp_lockout_end {
                &mut delayed_until
            } else if a.ty == t.last_success {
                &mut last_success
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = a.values.iter().next();
            }
        }
        failures.sort_unstable();
        AccountState {
            changed: changed.and_then(time::parse),
            locked: locked.map(|v: &[u8]| match time::parse(v) {
                Some(at) if !v.starts_with(b"0000") => LockedTime::At(at),
                _ => LockedTime::Permanent,
            }),
            failures,
            grace_uses,
            reset: reset.is_some_and(|v: &[u8]| v.eq_ignore_ascii_case(b"TRUE")),
            start: start.map(time::parse),
            end: end.map(time::parse),
            delayed_until: delayed_until.map(time::parse),
            last_success: last_success.and_then(time::parse),
        }
    }

    /// Whether `pwdStartTime` and `pwdEndTime` allow the password at `now` (an unreadable
    /// value does not).
    pub fn in_validity_window(&self, now: i64) -> bool {
        let started = match self.start {
            None => true,
            Some(t) => t.is_some_and(|t| now >= t),
        };
        let ended = match self.end {
            None => false,
            Some(t) => t.is_none_or(|t| t <= now),
        };
        started && !ended
    }

    /// Whether the account is locked at `now`. A permanent lock holds whatever the policy
    /// (it is an administrator's); a lock with a time only under `pwdLockout`, for
    /// `pwdLockoutDuration` (0: until removed), as slapd decides. A lock time in the
    /// future is not yet in force.
    pub fn lock_status(&self, policy: &Policy, now: i64) -> LockStatus {
        match self.locked {
            None => LockStatus::Unlocked,
            Some(LockedTime::Permanent) => LockStatus::Locked,
            Some(LockedTime::At(_)) if !policy.lockout => LockStatus::Unlocked,
            Some(LockedTime::At(at)) if now < at => LockStatus::Unlocked,
            Some(LockedTime::At(_)) if policy.lockout_duration == 0 => LockStatus::Locked,
            Some(LockedTime::At(at)) if now < at.saturating_add(policy.lockout_duration) => {
                LockStatus::Locked
            }
            Some(LockedTime::At(_)) => LockStatus::Lapsed,
        }
    }

    /// Whether a failure's delay (`pwdAccountTmpLockoutEnd`, under `pwdLockout`) still
    /// holds the account back at `now`.
    pub fn delayed(&self, policy: &Policy, now: i64) -> bool {
        policy.lockout
            && match self.delayed_until {
                None => false,
                Some(end) => end.is_none_or(|end| now < end),
            }
    }

    /// Whether the account has gone longer than `pwdMaxIdle` (under `pwdLockout`) without a
    /// successful bind at `now`: since `pwdLastSuccess`, or without one since
    /// `pwdChangedTime`; never with neither (slapd's `account_locked`).
    pub fn idle(&self, policy: &Policy, now: i64) -> bool {
        policy.lockout
            && policy.max_idle > 0
            && self
                .last_success
                .or(self.changed)
                .is_some_and(|last| now > last.saturating_add(policy.max_idle))
    }

    /// Whether a successful bind at `now` records `pwdLastSuccess`: the policy keeps it
    /// (`pwdMaxIdle`, or the server records it always) and the recorded one is older than
    /// the precision (at least a second, the precision of the value).
    pub fn last_success_due(&self, policy: &Policy, now: i64) -> bool {
        let keeps = policy.max_idle > 0 || policy.last_success.always;
        let precision = policy.last_success.precision.max(MICROS);
        keeps && self.last_success.is_none_or(|last| now - last >= precision)
    }

    /// The failures that count at `now`: those within `pwdFailureCountInterval` (all of
    /// them when it is 0).
    pub fn counted_failures(&self, policy: &Policy, now: i64) -> impl Iterator<Item = i64> + '_ {
        let interval = policy.failure_count_interval;
        self.failures
            .iter()
            .copied()
            .filter(move |&t| interval == 0 || now <= t.saturating_add(interval))
    }

    /// Whether the password has outlived `pwdMaxAge` at `now` (never without a change
    /// time, as in slapd).
    pub fn expired(&self, policy: &Policy, now: i64) -> bool {
        policy.max_age > 0 && self.changed.is_some_and(|c| now - c > policy.max_age)
    }

    /// The grace logins an expired password has left at `now`: none once `pwdGraceExpiry`
    /// has passed since expiry, else `pwdGraceAuthNLimit` less those used.
    pub fn grace_left(&self, policy: &Policy, now: i64) -> u32 {
        let past_grace = policy.grace_expiry > 0
            && self
                .changed
                .is_some_and(|c| now - c > policy.max_age.saturating_add(policy.grace_expiry));
        if past_grace {
            return 0;
        }
        policy.grace_logins.saturating_sub(self.grace_uses)
    }

    /// Whether a password change at `now` comes before `pwdMinAge` (a reset password may
    /// always be changed).
    pub fn too_young(&self, policy: &Policy, now: i64) -> bool {
        policy.min_age > 0 && !self.reset && self.changed.is_some_and(|c| now - c < policy.min_age)
    }
}

/// What a bind must write to the account afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountUpdate {
    /// A failed password: one more `pwdFailureTime`, perhaps the lock or a delay.
    RecordFailure,
    /// A successful bind on an account with failures, a lapsed lock or a passed delay to
    /// remove, or a `pwdLastSuccess` to record.
    Succeeded,
    /// A grace login: one more `pwdGraceUseTime` (and what [`AccountUpdate::Succeeded`]
    /// writes).
    UseGrace,
}

/// How the policy ends a bind whose password has been checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BindVerdict {
    /// The bind fails with `invalidCredentials` (49) although the password was right.
    pub refused: bool,
    /// The warning of the response control.
    pub warning: Option<PasswordPolicyWarning>,
    /// The error of the response control.
    pub error: Option<PasswordPolicyError>,
    /// The connection may only change its password (`pwdReset` under `pwdMustChange`).
    pub must_change: bool,
    /// What to write to the account.
    pub update: Option<AccountUpdate>,
}

/// Before the password check: the error that refuses the bind at once (outside the
/// validity window, held back by a failure's delay, idle too long, locked), without
/// looking at the password and without counting a failure, as slapd's `ppolicy_bind`
/// does. Each is `accountLocked`, as in slapd.
pub fn refuse_before_check(state: &AccountState, policy: &Policy, now: i64) -> Option<PasswordPolicyError> {
    let refused = !state.in_validity_window(now)
        || state.delayed(policy, now)
        || state.idle(policy, now)
        || state.lock_status(policy, now) == LockStatus::Locked;
    refused.then_some(PasswordPolicyError::AccountLocked)
}

/// After the password check (`right`: it verified).
pub fn after_check(state: &AccountState, policy: &Policy, now: i64, right: bool) -> BindVerdict {
    let lapsed = state.lock_status(policy, now) == LockStatus::Lapsed;
    if !right {
        return BindVerdict {
            update: policy.lockout.then_some(AccountUpdate::RecordFailure),
            ..BindVerdict::default()
        };
    }
    let to_write = lapsed
        || !state.failures.is_empty()
        || state.delayed_until.is_some()
        || state.last_success_due(policy, now);
    let mut v = BindVerdict {
        update: to_write.then_some(AccountUpdate::Succeeded),
        ..BindVerdict::default()
    };
    if policy.must_change && state.reset {
        v.error = Some(PasswordPolicyError::ChangeAfterReset);
        v.must_change = true;
        return v;
    }
    if state.expired(policy, now) {
        let left = state.grace_left(policy, now);
        if left == 0 {
            v.refused = true;
            v.error = Some(PasswordPolicyError::PasswordExpired);
            v.update = None;
            return v;
        }
        v.warning = Some(PasswordPolicyWarning::GraceAuthNsRemaining(left - 1));
        v.update = Some(AccountUpdate::UseGrace);
        return v;
    }
    if let Some(changed) = state.changed {
        let left = policy.max_age - (now - changed);
        if policy.max_age > 0 && policy.expire_warning > 0 && left < policy.expire_warning {
            let secs = (left.max(0) / MICROS).min(i64::from(u32::MAX)) as u32;
            v.warning = Some(PasswordPolicyWarning::TimeBeforeExpiration(secs));
        }
    }
    v
}

/// The failure times to keep after a failure at `now`, oldest first, and whether they
/// lock the account: the failures that still count, at most `pwdMaxFailure` of them (the
/// oldest dropped), the new one last. Without `pwdMaxFailure` one is kept.
pub fn failures_after(state: &AccountState, policy: &Policy, now: i64) -> (Vec<i64>, bool) {
    let keep = policy.max_failures.max(1) as usize;
    let mut kept: Vec<i64> = state.counted_failures(policy, now).collect();
    let drop = (kept.len() + 1).saturating_sub(keep);
    kept.drain(..drop);
    kept.push(now);
    let locks = policy.lockout && policy.max_failures > 0 && kept.len() >= policy.max_failures as usize;
    (kept, locks)
}

/// The end of the delay a failure at `now` that does not lock imposes (`None`: no
/// delay), as slapd 2.5 computes it: `pwdMinDelay` doubled for each failure that already
/// counts, at most `pwdMaxDelay`. slapd keeps it in `pwdAccountTmpLockoutEnd`.
pub fn delay_after_failure(state: &AccountState, policy: &Policy, now: i64) -> Option<i64> {
    if !policy.lockout || policy.min_delay <= 0 {
        return None;
    }
    let before = state.counted_failures(policy, now).count();
    let doubled = u32::try_from(before)
        .ok()
        .and_then(|n| 1i64.checked_shl(n))
        .filter(|f| *f > 0)
        .and_then(|f| policy.min_delay.checked_mul(f))
        .unwrap_or(i64::MAX);
    Some(now.saturating_add(doubled.min(policy.max_delay.max(0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = MICROS;

    fn lockout(max: u32, duration: i64, interval: i64) -> Policy {
        Policy {
            lockout: true,
            max_failures: max,
            lockout_duration: duration * S,
            failure_count_interval: interval * S,
            ..Policy::empty()
        }
    }

    #[test]
    fn locks_hold_for_their_duration_and_the_permanent_one_always() {
        let p = lockout(3, 60, 0);
        let mut a = AccountState {
            locked: Some(LockedTime::At(1000 * S)),
            ..AccountState::default()
        };
        assert_eq!(
            a.lock_status(&p, 999 * S),
            LockStatus::Unlocked,
            "a lock in the future"
        );
        assert_eq!(a.lock_status(&p, 1000 * S), LockStatus::Locked);
        assert_eq!(a.lock_status(&p, 1059 * S), LockStatus::Locked);
        assert_eq!(a.lock_status(&p, 1060 * S), LockStatus::Lapsed);
        assert_eq!(
            a.lock_status(&lockout(3, 0, 0), 1_000_000 * S),
            LockStatus::Locked
        );
        assert_eq!(a.lock_status(&Policy::empty(), 1000 * S), LockStatus::Unlocked);
        a.locked = Some(LockedTime::Permanent);
        assert_eq!(a.lock_status(&Policy::empty(), 0), LockStatus::Locked);
        assert_eq!(
            refuse_before_check(&a, &p, 0),
            Some(PasswordPolicyError::AccountLocked)
        );
    }

    #[test]
    fn the_permanent_value_and_an_unreadable_one_are_permanent() {
        use larch_model::entry::{Attribute, Options, StoredEntry};
        let schema = larch_model::schema::Schema::builtin().unwrap();
        let t = PolicyTypes::new(&schema).unwrap();
        for v in [PERMANENT_LOCK, "not a time"] {
            let e = StoredEntry::build(&[Attribute {
                ty: t.locked_time,
                options: Options::none(),
                values: vec![v.as_bytes().to_vec()],
            }]);
            assert_eq!(
                AccountState::read(e.as_ref(), &t).locked,
                Some(LockedTime::Permanent),
                "{v}"
            );
        }
    }

    #[test]
    fn validity_window() {
        let a = AccountState {
            start: Some(Some(100 * S)),
            end: Some(Some(200 * S)),
            ..AccountState::default()
        };
        assert!(!a.in_validity_window(99 * S));
        assert!(a.in_validity_window(100 * S));
        assert!(!a.in_validity_window(200 * S));
        let unreadable = AccountState {
            end: Some(None),
            ..AccountState::default()
        };
        assert!(!unreadable.in_validity_window(0));
        assert_eq!(
            refuse_before_check(&unreadable, &Policy::empty(), 0),
            Some(PasswordPolicyError::AccountLocked)
        );
    }

    #[test]
    fn failures_lock_at_the_maximum_and_stay_bounded() {
        let p = lockout(3, 60, 0);
        let mut a = AccountState::default();
        for n in 1..=2 {
            let (kept, locks) = failures_after(&a, &p, n * S);
            assert!(!locks);
            a.failures = kept;
        }
        let (kept, locks) = failures_after(&a, &p, 3 * S);
        assert!(locks);
        assert_eq!(kept, [S, 2 * S, 3 * S]);
        a.failures = (0..100).map(|n| n * S).collect();
        let (kept, _) = failures_after(&a, &p, 100 * S);
        assert_eq!(kept, [98 * S, 99 * S, 100 * S], "bounded by the maximum");
        // Failures older than the interval do not count.
        let p = lockout(3, 60, 10);
        a.failures = vec![S, 2 * S];
        let (kept, locks) = failures_after(&a, &p, 20 * S);
        assert_eq!((kept, locks), (vec![20 * S], false));
    }

    #[test]
    fn a_failure_is_recorded_only_under_lockout_and_a_success_clears() {
        let a = AccountState {
            failures: vec![S],
            ..AccountState::default()
        };
        assert_eq!(after_check(&a, &Policy::empty(), 2 * S, false).update, None);
        let p = lockout(3, 60, 0);
        assert_eq!(
            after_check(&a, &p, 2 * S, false).update,
            Some(AccountUpdate::RecordFailure)
        );
        let ok = after_check(&a, &p, 2 * S, true);
        assert_eq!(ok.update, Some(AccountUpdate::Succeeded));
        assert!(!ok.refused);
        // Nothing to clear: nothing written.
        assert_eq!(
            after_check(&AccountState::default(), &p, 2 * S, true),
            BindVerdict::default()
        );
    }

    #[test]
    fn expiry_grace_and_warning() {
        let p = Policy {
            max_age: 100 * S,
            expire_warning: 30 * S,
            grace_logins: 2,
            ..Policy::empty()
        };
        let mut a = AccountState {
            changed: Some(0),
            ..AccountState::default()
        };
        assert_eq!(after_check(&a, &p, 50 * S, true).warning, None);
        assert_eq!(
            after_check(&a, &p, 80 * S, true).warning,
            Some(PasswordPolicyWarning::TimeBeforeExpiration(20))
        );
        let v = after_check(&a, &p, 101 * S, true);
        assert_eq!(v.warning, Some(PasswordPolicyWarning::GraceAuthNsRemaining(1)));
        assert_eq!(v.update, Some(AccountUpdate::UseGrace));
        a.grace_uses = 1;
        assert_eq!(
            after_check(&a, &p, 101 * S, true).warning,
            Some(PasswordPolicyWarning::GraceAuthNsRemaining(0))
        );
        a.grace_uses = 2;
        let v = after_check(&a, &p, 101 * S, true);
        assert!(v.refused);
        assert_eq!(v.error, Some(PasswordPolicyError::PasswordExpired));
        // No change time: never expires.
        a.changed = None;
        assert!(!after_check(&a, &p, 10_000 * S, true).refused);
    }

    #[test]
    fn a_reset_password_must_be_changed_only_under_must_change() {
        let a = AccountState {
            reset: true,
            ..AccountState::default()
        };
        let p = Policy {
            must_change: true,
            ..Policy::empty()
        };
        let v = after_check(&a, &p, 0, true);
        assert!(v.must_change && !v.refused);
        assert_eq!(v.error, Some(PasswordPolicyError::ChangeAfterReset));
        assert!(!after_check(&a, &Policy::empty(), 0, true).must_change);
    }

    #[test]
    fn grace_logins_end_with_grace_expiry() {
        let p = Policy {
            max_age: 100 * S,
            grace_logins: 5,
            grace_expiry: 50 * S,
            ..Policy::empty()
        };
        let a = AccountState {
            changed: Some(0),
            grace_uses: 1,
            ..AccountState::default()
        };
        // Expired at 100 s; grace logins until 150 s.
        let v = after_check(&a, &p, 150 * S, true);
        assert_eq!(v.warning, Some(PasswordPolicyWarning::GraceAuthNsRemaining(3)));
        assert_eq!(v.update, Some(AccountUpdate::UseGrace));
        let v = after_check(&a, &p, 150 * S + 1, true);
        assert!(v.refused, "grace logins left, but their time is over");
        assert_eq!(v.error, Some(PasswordPolicyError::PasswordExpired));
        assert_eq!(v.update, None);
        // Without pwdGraceExpiry they last.
        let open = Policy { grace_expiry: 0, ..p };
        assert!(!after_check(&a, &open, 10_000 * S, true).refused);
    }

    fn delays(min: i64, max: i64) -> Policy {
        Policy {
            min_delay: min * S,
            max_delay: max * S,
            ..lockout(10, 60, 0)
        }
    }

    #[test]
    fn a_failure_delays_the_next_bind_doubling_up_to_the_maximum() {
        let p = delays(1, 5);
        let mut a = AccountState::default();
        // slapd: pwdMinDelay << (failures already counted), at most pwdMaxDelay.
        let mut ends = Vec::new();
        for n in 0..5i64 {
            let now = 1000 * S * (n + 1);
            ends.push(delay_after_failure(&a, &p, now).unwrap() - now);
            a.failures.push(now);
        }
        assert_eq!(ends, [S, 2 * S, 4 * S, 5 * S, 5 * S]);
        // Failures outside the count interval do not double it.
        let counted = Policy {
            failure_count_interval: 10 * S,
            ..p.clone()
        };
        assert_eq!(delay_after_failure(&a, &counted, 100_000 * S), Some(100_001 * S));
        // No delay without pwdMinDelay or without pwdLockout; a huge count saturates.
        assert_eq!(delay_after_failure(&a, &lockout(10, 60, 0), S), None);
        let off = Policy {
            lockout: false,
            ..p.clone()
        };
        assert_eq!(delay_after_failure(&a, &off, S), None);
        a.failures = (0..200).collect();
        assert_eq!(delay_after_failure(&a, &p, 0), Some(5 * S));
    }

    #[test]
    fn a_delay_refuses_until_its_end_under_lockout_only() {
        let p = delays(2, 8);
        let mut a = AccountState {
            delayed_until: Some(Some(100 * S)),
            ..AccountState::default()
        };
        assert_eq!(
            refuse_before_check(&a, &p, 99 * S),
            Some(PasswordPolicyError::AccountLocked)
        );
        assert_eq!(refuse_before_check(&a, &p, 100 * S), None);
        let off = Policy {
            lockout: false,
            ..p.clone()
        };
        assert_eq!(refuse_before_check(&a, &off, 99 * S), None);
        // A success after the delay removes it.
        assert_eq!(
            after_check(&a, &p, 100 * S, true).update,
            Some(AccountUpdate::Succeeded)
        );
        a.delayed_until = Some(None);
        assert!(a.delayed(&p, i64::MAX), "an unreadable end holds, as in slapd");
    }

    #[test]
    fn an_idle_account_is_refused_from_its_last_success_or_change() {
        let p = Policy {
            max_idle: 100 * S,
            ..lockout(3, 60, 0)
        };
        let mut a = AccountState {
            changed: Some(0),
            ..AccountState::default()
        };
        assert_eq!(refuse_before_check(&a, &p, 100 * S), None);
        assert_eq!(
            refuse_before_check(&a, &p, 100 * S + 1),
            Some(PasswordPolicyError::AccountLocked),
            "idle since the change"
        );
        a.last_success = Some(50 * S);
        assert_eq!(refuse_before_check(&a, &p, 150 * S), None);
        assert!(a.idle(&p, 150 * S + 1));
        // Neither time: never idle; no pwdLockout: not enforced (slapd's account_locked).
        assert!(!AccountState::default().idle(&p, i64::MAX));
        let off = Policy {
            lockout: false,
            ..p.clone()
        };
        assert!(!a.idle(&off, 10_000 * S));
    }

    #[test]
    fn last_success_is_recorded_when_kept_and_older_than_the_precision() {
        let precise = |precision: i64, always: bool, max_idle: i64| Policy {
            max_idle,
            last_success: crate::ppolicy::LastSuccess {
                always,
                precision: precision * S,
            },
            ..lockout(3, 60, 0)
        };
        let mut a = AccountState::default();
        assert!(
            !a.last_success_due(&precise(60, false, 0), 0),
            "not kept without pwdMaxIdle"
        );
        assert!(a.last_success_due(&precise(60, true, 0), 0), "kept always");
        let p = precise(60, false, 86_400);
        assert!(a.last_success_due(&p, 0), "none yet");
        a.last_success = Some(1000 * S);
        assert!(!a.last_success_due(&p, 1059 * S));
        assert!(a.last_success_due(&p, 1060 * S));
        // Precision 0: once a second at most, the value's own precision.
        let p = precise(0, false, 86_400);
        assert!(!a.last_success_due(&p, 1000 * S + S / 2));
        assert!(a.last_success_due(&p, 1001 * S));
        // A success with nothing else to write still records it when due.
        let v = after_check(&a, &p, 1001 * S, true);
        assert_eq!(v.update, Some(AccountUpdate::Succeeded));
        assert_eq!(after_check(&a, &p, 1000 * S + 1, true).update, None);
    }

    #[test]
    fn min_age() {
        let p = Policy {
            min_age: 60 * S,
            ..Policy::empty()
        };
        let mut a = AccountState {
            changed: Some(0),
            ..AccountState::default()
        };
        assert!(a.too_young(&p, 59 * S));
        assert!(!a.too_young(&p, 60 * S));
        a.reset = true;
        assert!(!a.too_young(&p, 1), "a reset password may always be changed");
    }
}
