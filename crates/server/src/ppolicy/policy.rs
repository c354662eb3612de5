//! A password policy: the configured default (`[password_policy]`) or a `pwdPolicy`
//! entry, and the attribute types it and the account state are kept in.

use larch_model::entry::StoredRef;
use larch_model::schema::{AttributeTypeId, ObjectClassId, Schema};

use super::time::MICROS;
use crate::config::{PasswordPolicySettings, MAX_GRACE_LOGINS, MAX_IN_HISTORY, MAX_POLICY_FAILURES};

/// The rules of one policy, durations in microseconds (0: off, as in the draft).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `pwdMinLength`.
    pub min_length: u32,
    /// `pwdMaxLength` (0: no maximum).
    pub max_length: u32,
    /// `pwdCheckQuality`: 0 none, 1 check when possible, 2 must check.
    pub check_quality: u8,
    /// `pwdInHistory`.
    pub in_history: u32,
    /// `pwdMinAge`.
    pub min_age: i64,
    /// `pwdMaxAge`.
    pub max_age: i64,
    /// `pwdExpireWarning`.
    pub expire_warning: i64,
    /// `pwdGraceAuthNLimit`.
    pub grace_logins: u32,
    /// `pwdGraceExpiry`: how long after expiry grace logins may be used (0: for ever).
    pub grace_expiry: i64,
    /// `pwdLockout`.
    pub lockout: bool,
    /// `pwdMaxFailure`.
    pub max_failures: u32,
    /// `pwdLockoutDuration` (0: until unlocked).
    pub lockout_duration: i64,
    /// `pwdFailureCountInterval` (0: until a successful bind).
    pub failure_count_interval: i64,
    /// `pwdMinDelay`: the first delay after a failed bind (0: no delay).
    pub min_delay: i64,
    /// `pwdMaxDelay`: the longest delay (`pwdMinDelay` when not set, as in slapd; one below
    /// `pwdMinDelay` makes every delay this long, as in slapd).
    pub max_delay: i64,
    /// `pwdMaxIdle`: how long an account may go without a successful bind (0: for ever).
    pub max_idle: i64,
    /// `pwdMustChange`.
    pub must_change: bool,
    /// `pwdAllowUserChange`.
    pub allow_user_change: bool,
    /// `pwdSafeModify`.
    pub safe_modify: bool,
    /// How the server keeps `pwdLastSuccess` (a setting of the server, not of the entry).
    pub last_success: LastSuccess,
}

/// When a successful bind records `pwdLastSuccess` (slapd's `lastbind` and
/// `lastbind-precision`, which are settings of its database, not of a policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LastSuccess {
    /// Record it under every policy (`password_policy.record_last_success`); without it,
    /// only under a policy with `pwdMaxIdle`, which needs it.
    pub always: bool,
    /// Leave a recorded time alone while it is younger than this (microseconds; at least
    /// a second is always used, the precision of the value).
    pub precision: i64,
}

impl Policy {
    /// The empty policy of a `pwdPolicy` entry that sets nothing (the draft's defaults,
    /// which are slapd's): users may change their password, nothing else applies.
    pub fn empty() -> Policy {
        Policy {
            min_length: 0,
            max_length: 0,
            check_quality: 0,
            in_history: 0,
            min_age: 0,
            max_age: 0,
            expire_warning: 0,
            grace_logins: 0,
            grace_expiry: 0,
            lockout: false,
            max_failures: 0,
            lockout_duration: 0,
            failure_count_interval: 0,
            min_delay: 0,
            max_delay: 0,
            max_idle: 0,
            must_change: false,
            allow_user_change: true,
            safe_modify: false,
            last_success: LastSuccess::default(),
        }
    }

    /// The configured default policy.
    pub fn from_settings(s: &PasswordPolicySettings) -> Policy {
        let micros = |d: std::time::Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        Policy {
            min_length: s.min_length,
            max_length: s.max_length,
            check_quality: s.check_quality,
            in_history: s.in_history,
            min_age: micros(s.min_age),
            max_age: micros(s.max_age),
            expire_warning: micros(s.expire_warning),
            grace_logins: s.grace_logins,
            grace_expiry: micros(s.grace_expiry),
            lockout: s.lockout,
            max_failures: s.max_failures,
            lockout_duration: micros(s.lockout_duration),
            failure_count_interval: micros(s.failure_count_interval),
            min_delay: micros(s.min_delay),
            // Unset: the minimum, as slapd assumes.
            max_delay: micros(if s.max_delay.is_zero() {
                s.min_delay
            } else {
                s.max_delay
            }),
            max_idle: micros(s.max_idle),
            must_change: s.must_change,
            allow_user_change: s.allow_user_change,
            safe_modify: s.safe_modify,
            last_success: LastSuccess {
                always: s.record_last_success,
                precision: micros(s.last_success_precision),
            },
        }
    }

    /// The policy a `pwdPolicy` entry's attributes give: each attribute present replaces
    /// the empty policy's value; an integer that does not read, or is negative, leaves it
    /// (slapd refuses the whole entry; an entry Larch stores has passed its syntax check).
    /// Counts are capped by the configuration's bounds. An unset `pwdMaxDelay` is
    /// `pwdMinDelay`, as slapd assumes.
    /// `last_success` is the server's (see [`LastSuccess`]).
    pub fn from_entry(attrs: StoredRef<'_>, t: &PolicyTypes, last_success: LastSuccess) -> Policy {
        let mut p = Policy::empty();
        let first = |ty: AttributeTypeId| attrs.attribute(ty).find_map(|a| a.values.iter().next());
        let int = |ty| first(ty).and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u64>().ok());
        let count = |ty, max: u32| int(ty).map(|n| n.min(u64::from(max)) as u32);
        let secs = |ty| {
            int(ty).map(|n| {
                i64::try_from(n)
                    .unwrap_or(i64::MAX / MICROS)
                    .min(i64::MAX / MICROS)
                    * MICROS
            })
        };
        let flag = |ty| first(ty).map(|v| v.eq_ignore_ascii_case(b"TRUE"));
        if let Some(n) = count(t.min_length, u32::MAX) {
            p.min_length = n;
        }
        if let Some(n) = count(t.max_length, u32::MAX) {
            p.max_length = n;
        }
        if let Some(n) = int(t.check_quality) {
            p.check_quality = n.min(2) as u8;
        }
        if let Some(n) = count(t.in_history, MAX_IN_HISTORY) {
            p.in_history = n;
        }
        if let Some(n) = secs(t.min_age) {
            p.min_age = n;
        }
        if let Some(n) = secs(t.max_age) {
            p.max_age = n;
        }
        if let Some(n) = secs(t.expire_warning) {
            p.expire_warning = n;
        }
        if let Some(n) = count(t.grace_logins, MAX_GRACE_LOGINS) {
            p.grace_logins = n;
        }
        if let Some(n) = secs(t.grace_expiry) {
            p.grace_expiry = n;
        }
        if let Some(b) = flag(t.lockout) {
            p.lockout = b;
        }
        if let Some(n) = count(t.max_failures, MAX_POLICY_FAILURES) {
            p.max_failures = n;
        }
        if let Some(n) = secs(t.lockout_duration) {
            p.lockout_duration = n;
        }
        if let Some(n) = secs(t.failure_count_interval) {
            p.failure_count_interval = n;
        }
        if let Some(n) = secs(t.min_delay) {
            p.min_delay = n;
        }
        if let Some(n) = secs(t.max_delay) {
            p.max_delay = n;
        }
        if p.max_delay == 0 {
            p.max_delay = p.min_delay;
        }
        if let Some(n) = secs(t.max_idle) {
            p.max_idle = n;
        }
        if let Some(b) = flag(t.must_change) {
            p.must_change = b;
        }
        if let Some(b) = flag(t.allow_user_change) {
            p.allow_user_change = b;
        }
        if let Some(b) = flag(t.safe_modify) {
            p.safe_modify = b;
        }
        p.last_success = last_success;
        p
    }
}

/// The attribute types of the password policy schema (`ppolicy.schema`), resolved once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct PolicyTypes {
    pub user_password: AttributeTypeId,
    pub pwd_policy: ObjectClassId,
    pub object_class: AttributeTypeId,
    // The account's state.
    pub changed_time: AttributeTypeId,
    pub locked_time: AttributeTypeId,
    pub failure_time: AttributeTypeId,
    pub history: AttributeTypeId,
    pub grace_use_time: AttributeTypeId,
    pub reset: AttributeTypeId,
    pub policy_subentry: AttributeTypeId,
    pub start_time: AttributeTypeId,
    pub end_time: AttributeTypeId,
    pub tmp_lockout_end: AttributeTypeId,
    pub last_success: AttributeTypeId,
    // The policy.
    pub min_age: AttributeTypeId,
    pub max_age: AttributeTypeId,
    pub in_history: AttributeTypeId,
    pub check_quality: AttributeTypeId,
    pub min_length: AttributeTypeId,
    pub max_length: AttributeTypeId,
    pub expire_warning: AttributeTypeId,
    pub grace_logins: AttributeTypeId,
    pub grace_expiry: AttributeTypeId,
    pub lockout: AttributeTypeId,
    pub lockout_duration: AttributeTypeId,
    pub max_failures: AttributeTypeId,
    pub failure_count_interval: AttributeTypeId,
    pub min_delay: AttributeTypeId,
    pub max_delay: AttributeTypeId,
    pub max_idle: AttributeTypeId,
    pub must_change: AttributeTypeId,
    pub allow_user_change: AttributeTypeId,
    pub safe_modify: AttributeTypeId,
}

impl PolicyTypes {
    /// The types in `schema`, or the name of the first one it lacks (a schema loaded
    /// without `ppolicy.schema`).
    pub fn new(schema: &Schema) -> Result<PolicyTypes, &'static str> {
        let ty = |name: &'static str| schema.attribute_type(name).map(|a| a.id).ok_or(name);
        Ok(PolicyTypes {
            user_password: ty("userPassword")?,
            pwd_policy: schema
                .object_class("pwdPolicy")
                .map(|c| c.id)
                .ok_or("pwdPolicy")?,
            object_class: ty("objectClass")?,
            changed_time: ty("pwdChangedTime")?,
            locked_time: ty("pwdAccountLockedTime")?,
            failure_time: ty("pwdFailureTime")?,
            history: ty("pwdHistory")?,
            grace_use_time: ty("pwdGraceUseTime")?,
            reset: ty("pwdReset")?,
            policy_subentry: ty("pwdPolicySubentry")?,
            start_time: ty("pwdStartTime")?,
            end_time: ty("pwdEndTime")?,
            tmp_lockout_end: ty("pwdAccountTmpLockoutEnd")?,
            last_success: ty("pwdLastSuccess")?,
            min_age: ty("pwdMinAge")?,
            max_age: ty("pwdMaxAge")?,
            in_history: ty("pwdInHistory")?,
            check_quality: ty("pwdCheckQuality")?,
            min_length: ty("pwdMinLength")?,
            max_length: ty("pwdMaxLength")?,
            expire_warning: ty("pwdExpireWarning")?,
            grace_logins: ty("pwdGraceAuthNLimit")?,
            grace_expiry: ty("pwdGraceExpiry")?,
            lockout: ty("pwdLockout")?,
            lockout_duration: ty("pwdLockoutDuration")?,
            max_failures: ty("pwdMaxFailure")?,
            failure_count_interval: ty("pwdFailureCountInterval")?,
            min_delay: ty("pwdMinDelay")?,
            max_delay: ty("pwdMaxDelay")?,
            max_idle: ty("pwdMaxIdle")?,
            must_change: ty("pwdMustChange")?,
            allow_user_change: ty("pwdAllowUserChange")?,
            safe_modify: ty("pwdSafeModify")?,
        })
    }
}
