//! Writing an account's password policy state into its new entry: after a bind (a
//! failure, a grace login, failures cleared) and after a password change.

use larch_model::entry::{Entry, Options};

use super::account::{delay_after_failure, failures_after, AccountState, AccountUpdate};
use super::change::history_after;
use super::policy::{Policy, PolicyTypes};
use super::time;

/// Sets (or with no values removes) one attribute without options.
fn set(entry: &mut Entry, ty: larch_model::schema::AttributeTypeId, values: Vec<Vec<u8>>) {
    entry.set_values(ty, &Options::none(), values);
}

/// Whether `entry` has any value of `ty`.
fn has(entry: &Entry, ty: larch_model::schema::AttributeTypeId) -> bool {
    entry.attributes_of(ty).next().is_some()
}

/// Writes what a bind decided into the account's entry (whose state is `state`, read from
/// the same entry in the writer's transaction). Returns false when nothing changes.
///
/// - a failure: its time, the oldest beyond `pwdMaxFailure` dropped; at `pwdMaxFailure`
///   `pwdAccountLockedTime`, else with `pwdMinDelay` the end of the delay in
///   `pwdAccountTmpLockoutEnd` (seconds, as slapd writes it);
/// - a success: failures, a lapsed lock and a delay removed (slapd leaves a passed delay
///   on the entry; it holds nothing back once passed), and `pwdLastSuccess` when due;
/// - a grace login: the same, and one more `pwdGraceUseTime`.
pub fn apply_bind_update(
    entry: &mut Entry,
    state: &AccountState,
    t: &PolicyTypes,
    policy: &Policy,
    update: AccountUpdate,
    now: i64,
) -> bool {
    let lapsed = state.lock_status(policy, now) == super::account::LockStatus::Lapsed;
    let before = entry.attrs.clone();
    if lapsed {
        set(entry, t.locked_time, Vec::new());
    }
    match update {
        AccountUpdate::RecordFailure => {
            let (kept, locks) = failures_after(state, policy, now);
            set(
                entry,
                t.failure_time,
                kept.into_iter()
                    .map(|f| time::format_micros(f).into_bytes())
                    .collect(),
            );
            if locks {
                set(entry, t.locked_time, vec![time::format_secs(now).into_bytes()]);
            } else if let Some(end) = delay_after_failure(state, policy, now) {
                set(
                    entry,
                    t.tmp_lockout_end,
                    vec![time::format_secs(end).into_bytes()],
                );
            }
        }
        AccountUpdate::Succeeded => record_success(entry, state, t, policy, now),
        AccountUpdate::UseGrace => {
            record_success(entry, state, t, policy, now);
            entry.push_value(
                t.grace_use_time,
                &Options::none(),
                time::format_micros(now).into_bytes(),
            );
        }
    }
    entry.attrs != before
}

/// What every successful bind writes: failures and a delay removed, `pwdLastSuccess` when
/// due (an entry that has nothing of it is left alone).
fn record_success(entry: &mut Entry, state: &AccountState, t: &PolicyTypes, policy: &Policy, now: i64) {
    set(entry, t.failure_time, Vec::new());
    set(entry, t.tmp_lockout_end, Vec::new());
    if state.last_success_due(policy, now) {
        set(entry, t.last_success, vec![time::format_secs(now).into_bytes()]);
    }
}

/// What a password change writes besides the password (slapd's `ppolicy_modify`):
/// `pwdChangedTime` (removed when the password is), no more grace logins, lock, failures
/// or `pwdLastSuccess` (the idle time then counts from `pwdChangedTime`), nor a failure's
/// delay (which slapd leaves); `pwdReset` set when an administrator resets another account's password
/// under `pwdMustChange`, else removed, unless the request itself set it; the old values
/// into `pwdHistory`, trimmed to `pwdInHistory` (removed at 0).
pub struct ChangeRecord<'a> {
    /// The policy.
    pub policy: &'a Policy,
    /// The password values before the change.
    pub old_passwords: &'a [Vec<u8>],
    /// The `pwdHistory` values before the change.
    pub old_history: &'a [Vec<u8>],
    /// An administrator changes another account's password.
    pub admin_reset: bool,
    /// The request wrote `pwdReset` itself.
    pub reset_given: bool,
    /// The time of the change.
    pub now: i64,
}

/// Writes a password change's state into the new entry (see [`ChangeRecord`]).
pub fn apply_password_change(entry: &mut Entry, t: &PolicyTypes, c: &ChangeRecord<'_>) {
    let has_password = has(entry, t.user_password);
    let changed = if has_password {
        vec![time::format_secs(c.now).into_bytes()]
    } else {
        Vec::new()
    };
    set(entry, t.changed_time, changed);
    set(entry, t.grace_use_time, Vec::new());
    set(entry, t.locked_time, Vec::new());
    set(entry, t.failure_time, Vec::new());
    set(entry, t.tmp_lockout_end, Vec::new());
    set(entry, t.last_success, Vec::new());
    if !c.reset_given {
        let reset = if c.policy.must_change && c.admin_reset && has_password {
            vec![b"TRUE".to_vec()]
        } else {
            Vec::new()
        };
        set(entry, t.reset, reset);
    }
    let history = history_after(c.old_history, c.old_passwords, c.policy.in_history, c.now);
    set(entry, t.history, history);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppolicy::account::LockedTime;
    use crate::ppolicy::time::MICROS;
    use larch_model::dn::{Dn, NormDn};
    use larch_model::schema::Schema;

    fn entry(schema: &Schema) -> Entry {
        let (dn, norm): (Dn, NormDn) = NormDn::parse(b"uid=u,dc=example,dc=com", schema).unwrap();
        Entry::new(dn, norm)
    }

    #[test]
    fn a_failure_storm_locks_and_keeps_at_most_max_failures() {
        let schema = Schema::builtin().unwrap();
        let t = PolicyTypes::new(&schema).unwrap();
        let policy = Policy {
            lockout: true,
            max_failures: 3,
            ..Policy::empty()
        };
        let mut e = entry(&schema);
        for n in 1..=10i64 {
            let state = AccountState::read(e.to_stored().as_ref(), &t);
            assert!(apply_bind_update(
                &mut e,
                &state,
                &t,
                &policy,
                AccountUpdate::RecordFailure,
                n * MICROS
            ));
        }
        let state = AccountState::read(e.to_stored().as_ref(), &t);
        assert_eq!(state.failures.len(), 3);
        assert!(matches!(state.locked, Some(LockedTime::At(_))));
        // A success clears the failures; with nothing left, nothing changes.
        assert!(apply_bind_update(
            &mut e,
            &state,
            &t,
            &policy,
            AccountUpdate::Succeeded,
            11 * MICROS
        ));
        let state = AccountState::read(e.to_stored().as_ref(), &t);
        assert!(state.failures.is_empty());
        assert!(!apply_bind_update(
            &mut e,
            &state,
            &t,
            &policy,
            AccountUpdate::Succeeded,
            12 * MICROS
        ));
    }

    #[test]
    fn a_failure_writes_its_delay_and_a_success_its_time() {
        let schema = Schema::builtin().unwrap();
        let t = PolicyTypes::new(&schema).unwrap();
        let policy = Policy {
            lockout: true,
            max_failures: 3,
            min_delay: 2 * MICROS,
            max_delay: 3 * MICROS,
            max_idle: 86_400 * MICROS,
            ..Policy::empty()
        };
        let at = 1_700_000_000 * MICROS;
        let mut e = entry(&schema);
        let read = |e: &Entry| AccountState::read(e.to_stored().as_ref(), &t);
        let fail = |e: &mut Entry, now: i64| {
            let state = read(e);
            apply_bind_update(e, &state, &t, &policy, AccountUpdate::RecordFailure, now)
        };
        fail(&mut e, at + 7);
        assert_eq!(
            read(&e).delayed_until,
            Some(Some(at + 2 * MICROS)),
            "seconds, as slapd"
        );
        fail(&mut e, at + 10 * MICROS);
        assert_eq!(
            read(&e).delayed_until,
            Some(Some(at + 13 * MICROS)),
            "doubled, then at the maximum"
        );
        // The third failure locks instead of delaying (the delay before it stays).
        fail(&mut e, at + 20 * MICROS);
        let state = read(&e);
        assert_eq!(state.locked, Some(LockedTime::At(at + 20 * MICROS)));
        assert_eq!(state.delayed_until, Some(Some(at + 13 * MICROS)));
        // A success clears failures and the delay and records pwdLastSuccess.
        let later = at + 1000 * MICROS;
        assert!(apply_bind_update(
            &mut e,
            &state,
            &t,
            &policy,
            AccountUpdate::Succeeded,
            later
        ));
        let state = read(&e);
        assert!(state.failures.is_empty() && state.delayed_until.is_none());
        assert_eq!(state.last_success, Some(later));
        // Within the precision (here the value's own, a second) nothing is written again.
        assert!(!apply_bind_update(
            &mut e,
            &state,
            &t,
            &policy,
            AccountUpdate::Succeeded,
            later + MICROS / 2
        ));
        // A password change removes pwdLastSuccess (the idle time counts from the change).
        e.push_value(t.user_password, &Options::none(), b"{SSHA}x".to_vec());
        let record = ChangeRecord {
            policy: &policy,
            old_passwords: &[],
            old_history: &[],
            admin_reset: false,
            reset_given: false,
            now: later + 2 * MICROS,
        };
        apply_password_change(&mut e, &t, &record);
        let state = read(&e);
        assert_eq!(state.last_success, None);
        assert_eq!(state.changed, Some(later + 2 * MICROS));
    }

    #[test]
    fn a_change_records_time_history_and_reset() {
        let schema = Schema::builtin().unwrap();
        let t = PolicyTypes::new(&schema).unwrap();
        let policy = Policy {
            in_history: 2,
            must_change: true,
            ..Policy::empty()
        };
        let mut e = entry(&schema);
        e.push_value(t.user_password, &Options::none(), b"{SSHA}new".to_vec());
        e.push_value(
            t.failure_time,
            &Options::none(),
            b"20240101000000.000000Z".to_vec(),
        );
        let record = ChangeRecord {
            policy: &policy,
            old_passwords: &[b"{SSHA}old".to_vec()],
            old_history: &[],
            admin_reset: true,
            reset_given: false,
            now: 1_700_000_000 * MICROS,
        };
        apply_password_change(&mut e, &t, &record);
        let state = AccountState::read(e.to_stored().as_ref(), &t);
        assert_eq!(state.changed, Some(1_700_000_000 * MICROS));
        assert!(state.reset && state.failures.is_empty());
        let history = &e.attributes_of(t.history).next().unwrap().values;
        assert_eq!(history.len(), 1);
        assert!(history[0].ends_with(b"#9#{SSHA}old"));
        // The owner's own change clears pwdReset.
        let own = ChangeRecord {
            admin_reset: false,
            ..record
        };
        apply_password_change(&mut e, &t, &own);
        assert!(!AccountState::read(e.to_stored().as_ref(), &t).reset);
    }
}
