//! The rules of a password change (Modify of userPassword, Password Modify, Add with a
//! password) and the history it keeps, as OpenLDAP's `ppolicy_modify`,
//! `check_password_quality` and `make_pwd_history_value` apply and write them.

use larch_proto::controls::PasswordPolicyError;
use larch_proto::ResultCode;

use super::account::AccountState;
use super::policy::Policy;
use super::time;

/// The syntax OID OpenLDAP writes in every `pwdHistory` value (Octet String).
pub const HISTORY_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.40";

/// What the operation knows of a new password that the write hook cannot see in the
/// entry (where it is already hashed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewPassword {
    /// Its length in octets when the client sent the password itself; `None` for a value
    /// that was already hashed (which only the administrator may store).
    pub clear_len: Option<usize>,
    /// The old password was given and verified: Password Modify's oldPasswd, or a Modify
    /// deleting the current value by naming it.
    pub old_given: bool,
    /// The new password is the current one or one of the history the policy keeps
    /// (verified before the write, where checking hashes may take long).
    pub in_history: bool,
}

/// Why a password change is refused: the result code, the control's error, the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The result code.
    pub code: ResultCode,
    /// The password policy control's error.
    pub error: PasswordPolicyError,
    /// The diagnostic message (slapd's words).
    pub message: &'static str,
}

impl Refusal {
    const fn new(code: ResultCode, error: PasswordPolicyError, message: &'static str) -> Refusal {
        Refusal { code, error, message }
    }
}

/// Who changes a password, for the rules that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changer {
    /// The administrator: no rule applies (slapd's password administrator).
    Admin,
    /// The account itself.
    Owner,
    /// Anyone else the access rules allow.
    Other,
}

/// The rules a change to a new password breaks, in slapd's order: user change allowed,
/// safe modify, minimum age, quality, history. `None`: the change may be made.
pub fn check_change(
    policy: &Policy,
    state: &AccountState,
    changer: Changer,
    new: &NewPassword,
    now: i64,
) -> Option<Refusal> {
    use PasswordPolicyError as E;
    if changer == Changer::Admin {
        return None;
    }
    if !policy.allow_user_change && changer == Changer::Owner {
        return Some(Refusal::new(
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
            E::PasswordModNotAllowed,
            "User alteration of password is not allowed",
        ));
    }
    if policy.safe_modify && !new.old_given {
        return Some(Refusal::new(
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
            E::MustSupplyOldPassword,
            "Must supply old password to be changed as well as new one",
        ));
    }
    if state.too_young(policy, now) {
        return Some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::PasswordTooYoung,
            "Password is too young to change",
        ));
    }
    if let Some(r) = check_quality(policy, new.clear_len) {
        return Some(r);
    }
    if policy.in_history > 0 && new.in_history {
        return Some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::PasswordInHistory,
            "Password is in history of old passwords",
        ));
    }
    None
}

/// `pwdCheckQuality` and `pwdMinLength` for a new password of `clear_len` octets
/// (`None`: hashed, so it cannot be checked: refused at level 2, let through at 1).
pub fn check_quality(policy: &Policy, clear_len: Option<usize>) -> Option<Refusal> {
    use PasswordPolicyError as E;
    if policy.check_quality == 0 {
        return None;
    }
    match clear_len {
        None if policy.check_quality == 2 => Some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::InsufficientPasswordQuality,
            "Password fails quality checking policy: a hashed value cannot be checked",
        )),
        None => None,
        Some(n) if n == 0 || n < policy.min_length as usize => Some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::PasswordTooShort,
            "Password fails quality checking policy: it is shorter than the policy's minimum length",
        )),
        Some(_) => None,
    }
}

/// A `pwdHistory` value: `time#syntaxOID#length#value`, the time in seconds.
pub fn history_value(at: i64, stored: &[u8]) -> Vec<u8> {
    let mut v = format!("{}#{HISTORY_SYNTAX}#{}#", time::format_secs(at), stored.len()).into_bytes();
    v.extend_from_slice(stored);
    v
}

/// The time and stored password of a `pwdHistory` value (`None`: not in the format).
pub fn parse_history(v: &[u8]) -> Option<(i64, &[u8])> {
    let mut parts = v.splitn(4, |&c| c == b'#');
    let at = time::parse(parts.next()?)?;
    let _syntax = parts.next()?;
    let len: usize = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let value = parts.next()?;
    (value.len() == len).then_some((at, value))
}

/// The history values whose passwords a new one is checked against, newest first: the
/// `in_history` most recent readable ones.
pub fn history_to_check(values: &[Vec<u8>], in_history: u32) -> Vec<&[u8]> {
    let mut dated: Vec<(i64, &[u8])> = values.iter().filter_map(|v| parse_history(v)).collect();
    dated.sort_by_key(|d| std::cmp::Reverse(d.0));
    dated
        .into_iter()
        .take(in_history as usize)
        .map(|(_, p)| p)
        .collect()
}

/// The `pwdHistory` values after a change at `now` replaces the password values `old`:
/// the old values added, the oldest removed beyond `in_history` (none kept at 0).
pub fn history_after(values: &[Vec<u8>], old: &[Vec<u8>], in_history: u32, now: i64) -> Vec<Vec<u8>> {
    if in_history == 0 {
        return Vec::new();
    }
    let mut dated: Vec<(i64, Vec<u8>)> = values
        .iter()
        .filter_map(|v| parse_history(v).map(|(at, _)| (at, v.clone())))
        .collect();
    dated.extend(old.iter().map(|o| (now, history_value(now, o))));
    dated.sort_by_key(|(at, _)| *at);
    let drop = dated.len().saturating_sub(in_history as usize);
    dated.drain(..drop);
    dated.into_iter().map(|(_, v)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppolicy::time::MICROS;

    fn new(len: usize) -> NewPassword {
        NewPassword {
            clear_len: Some(len),
            ..NewPassword::default()
        }
    }

    #[test]
    fn quality_levels() {
        let p = |level, min| Policy {
            check_quality: level,
            min_length: min,
            ..Policy::empty()
        };
        assert_eq!(check_quality(&p(0, 8), Some(3)), None, "level 0 checks nothing");
        assert_eq!(
            check_quality(&p(1, 8), Some(3)).unwrap().error,
            PasswordPolicyError::PasswordTooShort
        );
        assert_eq!(check_quality(&p(1, 8), Some(8)), None);
        assert_eq!(check_quality(&p(1, 8), None), None, "a hash passes at level 1");
        let r = check_quality(&p(2, 8), None).unwrap();
        assert_eq!(
            (r.code, r.error),
            (
                ResultCode::CONSTRAINT_VIOLATION,
                PasswordPolicyError::InsufficientPasswordQuality
            )
        );
    }

    #[test]
    fn rules_in_slapds_order_and_the_admin_bypasses_them() {
        let p = Policy {
            allow_user_change: false,
            safe_modify: true,
            check_quality: 1,
            min_length: 8,
            ..Policy::empty()
        };
        let s = AccountState::default();
        let r = check_change(&p, &s, Changer::Owner, &new(3), 0).unwrap();
        assert_eq!(
            (r.code, r.error),
            (
                ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
                PasswordPolicyError::PasswordModNotAllowed
            )
        );
        let r = check_change(&p, &s, Changer::Other, &new(3), 0).unwrap();
        assert_eq!(r.error, PasswordPolicyError::MustSupplyOldPassword);
        let with_old = NewPassword {
            old_given: true,
            ..new(3)
        };
        assert_eq!(
            check_change(&p, &s, Changer::Other, &with_old, 0).unwrap().error,
            PasswordPolicyError::PasswordTooShort
        );
        assert_eq!(check_change(&p, &s, Changer::Admin, &new(1), 0), None);
        let history = Policy {
            in_history: 3,
            ..Policy::empty()
        };
        let reused = NewPassword {
            in_history: true,
            ..new(10)
        };
        assert_eq!(
            check_change(&history, &s, Changer::Owner, &reused, 0)
                .unwrap()
                .error,
            PasswordPolicyError::PasswordInHistory
        );
    }

    #[test]
    fn history_values_in_openldaps_format() {
        let at = 1_700_000_000 * MICROS;
        let v = history_value(at, b"{SSHA}abc");
        assert_eq!(v, b"20231114221320Z#1.3.6.1.4.1.1466.115.121.1.40#9#{SSHA}abc");
        assert_eq!(parse_history(&v), Some((at, &b"{SSHA}abc"[..])));
        // A value holding '#' reads whole; a wrong length does not read.
        let hash = history_value(at, b"a#b");
        assert_eq!(parse_history(&hash).unwrap().1, b"a#b");
        assert_eq!(
            parse_history(b"20231114221320Z#1.3.6.1.4.1.1466.115.121.1.40#5#abc"),
            None
        );
    }

    #[test]
    fn history_is_trimmed_to_its_length_oldest_out() {
        let mut h: Vec<Vec<u8>> = Vec::new();
        for n in 1..=5i64 {
            h = history_after(&h, &[format!("p{n}").into_bytes()], 3, n * MICROS);
        }
        let kept: Vec<&[u8]> = h.iter().map(|v| parse_history(v).unwrap().1).collect();
        assert_eq!(kept, [&b"p3"[..], b"p4", b"p5"]);
        assert_eq!(history_to_check(&h, 2), [&b"p5"[..], b"p4"]);
        assert!(history_after(&h, &[b"p6".to_vec()], 0, 6 * MICROS).is_empty());
    }
}
