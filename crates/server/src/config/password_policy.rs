//! `[password_policy]`: the default password policy (draft-behera-ldap-password-policy-10,
//! as OpenLDAP's `ppolicy_default`), for every account whose entry names no `pwdPolicy`
//! entry in `pwdPolicySubentry`. What each key does, and how Larch enforces it, is in
//! `crate::ppolicy` and `docs/security.md`.
//!
//! Keys and defaults (each the draft's `pwd*` attribute of the same meaning):
//! - `enabled` (true): the policy is enforced at all (`false`: no rule, no bookkeeping,
//!   the control ignored, as slapd without the overlay);
//! - `min_length` (0), `max_length` (0: no maximum), `check_quality` (1: check when the
//!   value can be checked);
//! - `in_history` (0), `min_age` ("0"), `max_age` ("0": never expires),
//!   `expire_warning` ("0"), `grace_logins` (0), `grace_expiry` ("0": grace logins never
//!   run out of time);
//! - `lockout` (false), `max_failures` (5), `lockout_duration` ("15m"; "0": until an
//!   administrator unlocks), `failure_count_interval` ("15m"; "0": failures are forgotten
//!   only by a successful bind), `min_delay` and `max_delay` ("0": no delay after a
//!   failure), `max_idle` ("0": an account may stay unused for ever); these three act only
//!   under `lockout`, as in slapd;
//! - `must_change` (false), `allow_user_change` (true), `safe_modify` (false);
//! - `record_last_success` (false: `pwdLastSuccess` only under a policy with `pwdMaxIdle`),
//!   `last_success_precision` ("1m"), slapd's `lastbind` and `lastbind-precision`.
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

/// Default `password_policy.last_success_precision`: a successful bind rewrites
/// `pwdLastSuccess` at most once a minute (each rewrite is a write to the log), while an
/// idle limit, counted in days or weeks, is off by at most that much.
pub const DEFAULT_LAST_SUCCESS_PRECISION: Duration = Duration::from_secs(60);

/// `[password_policy]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordPolicySettings {
    /// `password_policy.enabled`.
    pub enabled: bool,
    /// `password_policy.min_length`: characters (octets, as slapd counts them).
    pub min_length: u32,
    /// `password_policy.max_length`: octets (0: no maximum).
    pub max_length: u32,
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
    /// `password_policy.grace_expiry` (zero: grace logins never run out of time).
    pub grace_expiry: Duration,
    /// `password_policy.lockout`.
    pub lockout: bool,
    /// `password_policy.max_failures`.
    pub max_failures: u32,
    /// `password_policy.lockout_duration` (zero: until unlocked by an administrator).
    pub lockout_duration: Duration,
    /// `password_policy.failure_count_interval` (zero: until a successful bind).
    pub failure_count_interval: Duration,
    /// `password_policy.min_delay` (zero: no delay after a failure).
    pub min_delay: Duration,
    /// `password_policy.max_delay` (zero: `min_delay`).
    pub max_delay: Duration,
    /// `password_policy.max_idle` (zero: no limit).
    pub max_idle: Duration,
    /// `password_policy.must_change`.
    pub must_change: bool,
    /// `password_policy.allow_user_change`.
    pub allow_user_change: bool,
    /// `password_policy.safe_modify`.
    pub safe_modify: bool,
    /// `password_policy.record_last_success`.
    pub record_last_success: bool,
    /// `password_policy.last_success_precision`.
    pub last_success_precision: Duration,
}

impl Default for PasswordPolicySettings {
    fn default() -> PasswordPolicySettings {
        PasswordPolicySettings {
            enabled: true,
            min_length: 0,
            max_length: 0,
            check_quality: 1,
            in_history: 0,
            min_age: Duration::ZERO,
            max_age: Duration::ZERO,
            expire_warning: Duration::ZERO,
            grace_logins: 0,
            grace_expiry: Duration::ZERO,
            lockout: false,
            max_failures: DEFAULT_POLICY_MAX_FAILURES,
            lockout_duration: DEFAULT_LOCKOUT_DURATION,
            failure_count_interval: DEFAULT_LOCKOUT_DURATION,
            min_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            max_idle: Duration::ZERO,
            must_change: false,
            allow_user_change: true,
            safe_modify: false,
            record_last_success: false,
            last_success_precision: DEFAULT_LAST_SUCCESS_PRECISION,
        }
    }
}

/// `[password_policy]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPasswordPolicy {
    pub enabled: Option<bool>,
    pub min_length: Option<u32>,
    pub max_length: Option<u32>,
    pub check_quality: Option<u8>,
    pub in_history: Option<u32>,
    pub min_age: Option<RawDuration>,
    pub max_age: Option<RawDuration>,
    pub expire_warning: Option<RawDuration>,
    pub grace_logins: Option<u32>,
    pub grace_expiry: Option<RawDuration>,
    pub lockout: Option<bool>,
    pub max_failures: Option<u32>,
    pub lockout_duration: Option<RawDuration>,
    pub failure_count_interval: Option<RawDuration>,
    pub min_delay: Option<RawDuration>,
    pub max_delay: Option<RawDuration>,
    pub max_idle: Option<RawDuration>,
    pub must_change: Option<bool>,
    pub allow_user_change: Option<bool>,
    pub safe_modify: Option<bool>,
    pub record_last_success: Option<bool>,
    pub last_success_precision: Option<RawDuration>,
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
        let min_length = raw.min_length.unwrap_or(d.min_length);
        let max_length = raw.max_length.unwrap_or(d.max_length);
        if max_length > 0 && max_length < min_length {
            return Err(ConfigError::invalid(
                "password_policy.max_length",
                format!("{max_length} is below min_length ({min_length}): no password would do"),
            ));
        }
        let min_delay = dur("min_delay", raw.min_delay, d.min_delay)?;
        let max_delay = dur("max_delay", raw.max_delay, d.max_delay)?;
        if !max_delay.is_zero() && max_delay < min_delay {
            return Err(ConfigError::invalid(
                "password_policy.max_delay",
                "is shorter than min_delay: give the longest delay, at least min_delay (or leave it out for min_delay)",
            ));
        }
        let max_idle = dur("max_idle", raw.max_idle, d.max_idle)?;
        for (key, set) in [
            ("min_delay", !min_delay.is_zero()),
            ("max_delay", !max_delay.is_zero()),
            ("max_idle", !max_idle.is_zero()),
        ] {
            if set && !lockout {
                return Err(ConfigError::invalid(
                    format!("password_policy.{key}"),
                    "acts only under `lockout = true` (as pwdLockout in slapd): set it, or leave this out",
                ));
            }
        }
        Ok(PasswordPolicySettings {
            enabled: raw.enabled.unwrap_or(d.enabled),
            min_length,
            max_length,
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
            grace_expiry: dur("grace_expiry", raw.grace_expiry, d.grace_expiry)?,
            lockout,
            max_failures,
            lockout_duration: dur("lockout_duration", raw.lockout_duration, d.lockout_duration)?,
            failure_count_interval: dur(
                "failure_count_interval",
                raw.failure_count_interval,
                d.failure_count_interval,
            )?,
            min_delay,
            max_delay,
            max_idle,
            must_change: raw.must_change.unwrap_or(d.must_change),
            allow_user_change: raw.allow_user_change.unwrap_or(d.allow_user_change),
            safe_modify: raw.safe_modify.unwrap_or(d.safe_modify),
            record_last_success: raw.record_last_success.unwrap_or(d.record_last_success),
            last_success_precision: dur(
                "last_success_precision",
                raw.last_success_precision,
                d.last_success_precision,
            )?,
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
            min_length: Some(8),
            max_length: Some(4),
            ..RawPasswordPolicy::default()
        });
        assert!(e.contains("password_policy.max_length"), "{e}");
        let e = refused(RawPasswordPolicy {
            lockout: Some(true),
            min_delay: Some(RawDuration::Text("10s".into())),
            max_delay: Some(RawDuration::Text("5s".into())),
            ..RawPasswordPolicy::default()
        });
        assert!(e.contains("password_policy.max_delay"), "{e}");
        let e = refused(RawPasswordPolicy {
            max_idle: Some(RawDuration::Text("90d".into())),
            ..RawPasswordPolicy::default()
        });
        assert!(
            e.contains("password_policy.max_idle") && e.contains("lockout"),
            "{e}"
        );
        let p = PasswordPolicySettings::from_raw(RawPasswordPolicy {
            lockout: Some(true),
            min_delay: Some(RawDuration::Text("2s".into())),
            max_idle: Some(RawDuration::Text("90d".into())),
            grace_expiry: Some(RawDuration::Text("1d".into())),
            max_length: Some(64),
            last_success_precision: Some(RawDuration::Text("0".into())),
            ..RawPasswordPolicy::default()
        })
        .unwrap();
        assert_eq!(
            (p.min_delay, p.max_delay, p.max_idle, p.grace_expiry, p.max_length),
            (
                Duration::from_secs(2),
                Duration::ZERO,
                Duration::from_secs(90 * 86_400),
                Duration::from_secs(86_400),
                64
            )
        );
        assert_eq!(p.last_success_precision, Duration::ZERO);
        let e = refused(RawPasswordPolicy {
            max_age: Some(RawDuration::Text("30".into())),
            ..RawPasswordPolicy::default()
        });
        assert!(e.contains("password_policy.max_age"), "{e}");
    }
}
