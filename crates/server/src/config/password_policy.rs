//! `[password_policy]`: the default password policy (draft-behera-ldap-password-policy-10,
//! as OpenLDAP's `ppolicy_default`), for every account whose entry names no `pwdPolicy`
//! entry in `pwdPolicySubentry`. What each key does, and how Larch enforces it, is in
//! `crate::ppolicy` and `docs/security.md`.
//!
//! Keys and defaults (each the draft's `pwd*` attribute of the same meaning):
//! - `enabled` (true): the policy is enforced at all (`false`: no rule, no bookkeeping,
//!   the control ignored, as slapd without the overlay);
//! - `min_length` (0), `check_quality` (1: check when the value can be checked);
//! - `in_history` (0), `min_age` ("0"), `max_age` ("0": never expires),
//!   `expire_warning` ("0"), `grace_logins` (0);
//! - `lockout` (false), `max_failures` (5), `lockout_duration` ("15m"; "0": until an
//!   administrator unlocks), `failure_count_interval` ("15m"; "0": failures are forgotten
//!   only by a successful bind);
//! - `must_change` (false), `allow_user_change` (true), `safe_modify` (false).
//!
//! The defaults change nothing for a directory that sets none of them except that a
//! password change records `pwdChangedTime`, and that an account's
//! `pwdAccountLockedTime`, `pwdStartTime` and `pwdEndTime` are honoured.

use std::time::Duration;

use serde::Deserialize;

use super::raw::RawDuration;
use super::ConfigError;

/// Highest `password_policy.in_history`: a new password is checked against each value of
/// the history (a hash to verify, tens of milliseconds for argon2), so the history is kept
/// short enough for a change to stay quick.
pub const MAX_IN_HISTORY: u32 = 64;

/// Highest `password_policy.max_failures`: the failure times kept on an entry number at
/// most this, so a failure storm cannot grow an entry without bound.
pub const MAX_POLICY_FAILURES: u32 = 1000;

/// Highest `password_policy.grace_logins` (each grace login is a value kept on the entry).
pub const MAX_GRACE_LOGINS: u32 = 1000;

/// Default `password_policy.max_failures`: the number 389 DS and most guides use.
pub const DEFAULT_POLICY_MAX_FAILURES: u32 = 5;

/// Default `password_policy.lockout_duration` and `failure_count_interval`: long enough to
/// stop guessing, short enough that a locked-out person waits rather than calls for help.
pub const DEFAULT_LOCKOUT_DURATION: Duration = Duration::from_secs(15 * 60);

/// `[password_policy]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordPolicySettings {
    /// `password_policy.enabled`.
    pub enabled: bool,
    /// `password_policy.min_length`: characters (octets, as slapd counts them).
    pub min_length: u32,
    /// `password_policy.check_quality`: 0 none, 1 check when possible, 2 must check.
    pub check_quality: u8,
    /// `password_policy.in_history`.
    pub in_history: u32,
    /// `password_policy.min_age`.
    pub min_age: Duration,
    /// `password_policy.max_age` (zero: never expires).
    pub max_age: Duration,
    /// `password_policy.expire_warning`.
    pub expire_warning: Duration,
    /// `password_policy.grace_logins`.
    pub grace_logins: u32,
    /// `password_policy.lockout`.
    pub lockout: bool,
    /// `password_policy.max_failures`.
    pub max_failures: u32,
    /// `password_policy.lockout_duration` (zero: until unlocked by an administrator).
    pub lockout_duration: Duration,
    /// `password_policy.failure_count_interval` (zero: until a successful bind).
    pub failure_count_interval: Duration,
    /// `password_policy.must_change`.
    pub must_change: bool,
    /// `password_policy.allow_user_change`.
    pub allow_user_change: bool,
    /// `password_policy.safe_modify`.
    pub safe_modify: bool,
}

impl Default for PasswordPolicySettings {
    fn default() -> PasswordPolicySettings {
        PasswordPolicySettings {
            enabled: true,
            min_length: 0,
            check_quality: 1,
            in_history: 0,
            min_age: Duration::ZERO,
            max_age: Duration::ZERO,
            expire_warning: Duration::ZERO,
            grace_logins: 0,
            lockout: false,
            max_failures: DEFAULT_POLICY_MAX_FAILURES,
            lockout_duration: DEFAULT_LOCKOUT_DURATION,
            failure_count_interval: DEFAULT_LOCKOUT_DURATION,
            must_change: false,
            allow_user_change: true,
            safe_modify: false,
        }
    }
}

/// `[password_policy]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPasswordPolicy {
    pub enabled: Option<bool>,
    pub min_length: Option<u32>,
    pub check_quality: Option<u8>,
    pub in_history: Option<u32>,
    pub min_age: Option<RawDuration>,
    pub max_age: Option<RawDuration>,
    pub expire_warning: Option<RawDuration>,
    pub grace_logins: Option<u32>,
    pub lockout: Option<bool>,
    pub max_failures: Option<u32>,
    pub lockout_duration: Option<RawDuration>,
    pub failure_count_interval: Option<RawDuration>,
    pub must_change: Option<bool>,
    pub allow_user_change: Option<bool>,
    pub safe_modify: Option<bool>,
}

/// `value` when at most `max`, else an error naming `key`.
fn at_most(key: &str, value: u32, max: u32) -> Result<u32, ConfigError> {
    if value > max {
        return Err(ConfigError::invalid(
            key,
            format!("{value} is more than the largest, {max}"),
        ));
    }
    Ok(value)
}

impl PasswordPolicySettings {
    pub(crate) fn from_raw(raw: RawPasswordPolicy) -> Result<PasswordPolicySettings, ConfigError> {
        let d = PasswordPolicySettings::default();
        let dur = |key: &str, raw: Option<RawDuration>, default: Duration| match raw {
            Some(r) => super::duration(&format!("password_policy.{key}"), &r),
            None => Ok(default),
        };
        let check_quality = raw.check_quality.unwrap_or(d.check_quality);
        if check_quality > 2 {
            return Err(ConfigError::invalid(
                "password_policy.check_quality",
                format!(
                    "{check_quality} is not a level: 0 (no check), 1 (check when possible) or 2 (must check)"
                ),
            ));
        }
        let max_failures = at_most(
            "password_policy.max_failures",
            raw.max_failures.unwrap_or(d.max_failures),
            MAX_POLICY_FAILURES,
        )?;
        let lockout = raw.lockout.unwrap_or(d.lockout);
        if lockout && max_failures == 0 {
            return Err(ConfigError::invalid(
                "password_policy.max_failures",
                "0 with `lockout = true` would never lock an account: give the number of failures that locks it",
            ));
        }
        Ok(PasswordPolicySettings {
            enabled: raw.enabled.unwrap_or(d.enabled),
            min_length: raw.min_length.unwrap_or(d.min_length),
            check_quality,
            in_history: at_most(
                "password_policy.in_history",
                raw.in_history.unwrap_or(d.in_history),
                MAX_IN_HISTORY,
            )?,
            min_age: dur("min_age", raw.min_age, d.min_age)?,
            max_age: dur("max_age", raw.max_age, d.max_age)?,
            expire_warning: dur("expire_warning", raw.expire_warning, d.expire_warning)?,
            grace_logins: at_most(
                "password_policy.grace_logins",
                raw.grace_logins.unwrap_or(d.grace_logins),
                MAX_GRACE_LOGINS,
            )?,
            lockout,
            max_failures,
            lockout_duration: dur("lockout_duration", raw.lockout_duration, d.lockout_duration)?,
            failure_count_interval: dur(
                "failure_count_interval",
                raw.failure_count_interval,
                d.failure_count_interval,
            )?,
            must_change: raw.must_change.unwrap_or(d.must_change),
            allow_user_change: raw.allow_user_change.unwrap_or(d.allow_user_change),
            safe_modify: raw.safe_modify.unwrap_or(d.safe_modify),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_bounds_and_levels() {
        let p = PasswordPolicySettings::from_raw(RawPasswordPolicy::default()).unwrap();
        assert_eq!(p, PasswordPolicySettings::default());
        let raw = RawPasswordPolicy {
            min_length: Some(8),
            lockout: Some(true),
            max_failures: Some(3),
            lockout_duration: Some(RawDuration::Text("0".into())),
            ..RawPasswordPolicy::default()
        };
        let p = PasswordPolicySettings::from_raw(raw).unwrap();
        assert_eq!(
            (p.min_length, p.max_failures, p.lockout_duration),
            (8, 3, Duration::ZERO)
        );
        let refused = |raw: RawPasswordPolicy| PasswordPolicySettings::from_raw(raw).unwrap_err().to_string();
        let e = refused(RawPasswordPolicy {
            check_quality: Some(3),
            ..RawPasswordPolicy::default()
        });
        assert!(e.contains("password_policy.check_quality"), "{e}");
        let e = refused(RawPasswordPolicy {
            in_history: Some(MAX_IN_HISTORY + 1),
            ..RawPasswordPolicy::default()
        });
        assert!(e.contains("password_policy.in_history"), "{e}");
        let e = refused(RawPasswordPolicy {
            lockout: Some(true),
            max_failures: Some(0),
            ..RawPasswordPolicy::default()
        });
        assert!(e.contains("never lock"), "{e}");
        let e = refused(RawPasswordPolicy {
            max_age: Some(RawDuration::Text("30".into())),
            ..RawPasswordPolicy::default()
        });
        assert!(e.contains("password_policy.max_age"), "{e}");
    }
}
