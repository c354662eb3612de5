//! The rules of a password change (Modify of userPassword, Password Modify, Add with a
//! password) and the history it keeps, as OpenLDAP's `ppolicy_modify`,
//! `check_password_quality` and `make_pwd_history_value` apply and write them.
//!
//! Whether a new password reuses the current one or one of the history is decided in two
//! steps, because verifying a hash can take tens of milliseconds and the store has one
//! writer:
//! 1. before the write, off the writer, the new password is verified against the stored
//!    values the entry holds then ([`reuse_candidates`]); the outcome is kept per value
//!    ([`ReuseCheck`]);
//! 2. in the writer's transaction, the write hook takes the values the entry holds now:
//!    one found in step 1 to match refuses the change, one step 1 did not see (a
//!    concurrent change came first) is verified there and then against the new password,
//!    kept for this ([`NewPassword::clear`]). Two concurrent changes of one password are so
//!    serialised: the second is checked against the password and history the first left,
//!    and only such a race costs the writer a verification.

use larch_model::entry::StoredRef;
use larch_proto::controls::PasswordPolicyError;
use larch_proto::ResultCode;

use super::account::AccountState;
use super::policy::{Policy, PolicyTypes};
use super::time;

/// The syntax OID OpenLDAP writes in every `pwdHistory` value (Octet String).
pub const HISTORY_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.40";

/// New passwords as the client sent them. Their `Debug` form shows how many there are,
/// never the octets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Cleartexts(pub Vec<Vec<u8>>);

impl std::fmt::Debug for Cleartexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cleartexts({} values)", self.0.len())
    }
}

/// The outcome of step 1 of the module documentation: the stored values a new password
/// was verified against before the write, those it does not match and those it does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReuseCheck {
    /// Stored values no new password verifies against.
    pub differ: Vec<Vec<u8>>,
    /// Stored values a new password verifies against.
    pub matched: Vec<Vec<u8>>,
}

/// What the operation knows of a new password that the write hook cannot see in the
/// entry (where it is already hashed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewPassword {
    /// The new values when the client sent the passwords themselves; `None` when one was
    /// already hashed (which only the administrator may store).
    pub clear: Option<Cleartexts>,
    /// The old password was given and verified: Password Modify's oldPasswd, or a Modify
    /// deleting the current value by naming it.
    pub old_given: bool,
    /// The new passwords verified against the entry's current password and history
    /// before the write (empty when the policy keeps no history, or for the
    /// administrator).
    pub reuse: ReuseCheck,
}

impl NewPassword {
    /// The length in octets of the shortest new value (`None`: one was hashed).
    pub fn shortest(&self) -> Option<usize> {
        self.clear.as_ref()?.0.iter().map(Vec::len).min()
    }

    /// The length in octets of the longest new value (`None`: one was hashed).
    pub fn longest(&self) -> Option<usize> {
        self.clear.as_ref()?.0.iter().map(Vec::len).max()
    }
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
/// safe modify, minimum age, quality and length, history (`reused`, asked last and only
/// when the policy keeps a history: it may verify hashes). `None`: the change may be made.
pub fn check_change(
    policy: &Policy,
    state: &AccountState,
    changer: Changer,
    new: &NewPassword,
    now: i64,
    reused: impl FnOnce() -> bool,
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
    if let Some(r) = check_quality(policy, new) {
        return Some(r);
    }
    if policy.in_history > 0 && reused() {
        return Some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::PasswordInHistory,
            "Password is in history of old passwords",
        ));
    }
    None
}

/// `pwdCheckQuality`, `pwdMinLength` and `pwdMaxLength` for new passwords (a hashed one
/// cannot be checked: refused at level 2, let through at 1), as slapd's
/// `check_password_quality`: too short (`passwordTooShort`), then too long
/// (`passwordTooLong`), both `constraintViolation` (19).
pub fn check_quality(policy: &Policy, new: &NewPassword) -> Option<Refusal> {
    use PasswordPolicyError as E;
    if policy.check_quality == 0 {
        return None;
    }
    let (Some(shortest), Some(longest)) = (new.shortest(), new.longest()) else {
        return (policy.check_quality == 2).then_some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::InsufficientPasswordQuality,
            "Password fails quality checking policy: a hashed value cannot be checked",
        ));
    };
    if shortest == 0 || shortest < policy.min_length as usize {
        return Some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::PasswordTooShort,
            "Password fails quality checking policy: it is shorter than the policy's minimum length",
        ));
    }
    if policy.max_length > 0 && longest > policy.max_length as usize {
        return Some(Refusal::new(
            ResultCode::CONSTRAINT_VIOLATION,
            E::PasswordTooLong,
            "Password fails quality checking policy: it is longer than the policy's maximum length",
        ));
    }
    None
}

/// The stored passwords a new password of the account whose attributes are `attrs` may
/// not reuse under a history of `in_history`: its current password values and the
/// `in_history` most recent of its `pwdHistory` (none at 0).
pub fn reuse_candidates(attrs: StoredRef<'_>, t: &PolicyTypes, in_history: u32) -> Vec<Vec<u8>> {
    if in_history == 0 {
        return Vec::new();
    }
    let values = |ty| -> Vec<Vec<u8>> {
        attrs
            .attribute(ty)
            .flat_map(|a| a.values.iter().map(<[u8]>::to_vec).collect::<Vec<_>>())
            .collect()
    };
    let history = values(t.history);
    let mut out = values(t.user_password);
    out.extend(
        history_to_check(&history, in_history)
            .into_iter()
            .map(<[u8]>::to_vec),
    );
    out
}

/// Step 2 of the module documentation: whether a new password reuses one of
/// `candidates` (the values the entry holds in the writer's transaction). `verify`
/// checks the new passwords against one stored value, and is asked only for the values
/// step 1 did not see.
pub fn reuses_now(
    candidates: &[Vec<u8>],
    checked: &ReuseCheck,
    mut verify: impl FnMut(&[u8]) -> bool,
) -> bool {
    if candidates.iter().any(|c| checked.matched.contains(c)) {
        return true;
    }
    candidates
        .iter()
        .filter(|c| !checked.differ.contains(c))
        .any(|c| verify(c))
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
            clear: Some(Cleartexts(vec![vec![b'x'; len]])),
            ..NewPassword::default()
        }
    }

    fn hashed() -> NewPassword {
        NewPassword::default()
    }

    #[test]
    fn quality_levels() {
        let p = |level, min| Policy {
            check_quality: level,
            min_length: min,
            ..Policy::empty()
        };
        assert_eq!(check_quality(&p(0, 8), &new(3)), None, "level 0 checks nothing");
        assert_eq!(
            check_quality(&p(1, 8), &new(3)).unwrap().error,
            PasswordPolicyError::PasswordTooShort
        );
        assert_eq!(check_quality(&p(1, 8), &new(8)), None);
        assert_eq!(
            check_quality(&p(1, 8), &hashed()),
            None,
            "a hash passes at level 1"
        );
        let r = check_quality(&p(2, 8), &hashed()).unwrap();
        assert_eq!(
            (r.code, r.error),
            (
                ResultCode::CONSTRAINT_VIOLATION,
                PasswordPolicyError::InsufficientPasswordQuality
            )
        );
    }

    #[test]
    fn max_length_refuses_the_longest_value_with_password_too_long() {
        let p = Policy {
            check_quality: 1,
            min_length: 4,
            max_length: 8,
            ..Policy::empty()
        };
        assert_eq!(check_quality(&p, &new(8)), None, "the maximum itself is allowed");
        let r = check_quality(&p, &new(9)).unwrap();
        assert_eq!(
            (r.code, r.error),
            (
                ResultCode::CONSTRAINT_VIOLATION,
                PasswordPolicyError::PasswordTooLong
            )
        );
        assert!(r.message.contains("longer"), "{}", r.message);
        // Two values: the shortest is held to the minimum, the longest to the maximum.
        let two = |a: usize, b: usize| NewPassword {
            clear: Some(Cleartexts(vec![vec![b'x'; a], vec![b'y'; b]])),
            ..NewPassword::default()
        };
        assert_eq!(
            check_quality(&p, &two(5, 12)).unwrap().error,
            PasswordPolicyError::PasswordTooLong
        );
        assert_eq!(
            check_quality(&p, &two(2, 12)).unwrap().error,
            PasswordPolicyError::PasswordTooShort,
            "too short is checked first, as in slapd"
        );
        // No maximum at 0, none at quality level 0, and a hash is not measured.
        let open = Policy {
            max_length: 0,
            ..p.clone()
        };
        assert_eq!(check_quality(&open, &new(1000)), None);
        let unchecked = Policy {
            check_quality: 0,
            ..p.clone()
        };
        assert_eq!(check_quality(&unchecked, &new(1000)), None);
        assert_eq!(check_quality(&p, &hashed()), None);
        assert!(
            !format!("{:?}", two(5, 12)).contains("xxxxx"),
            "no cleartext in Debug"
        );
    }

    #[test]
    fn reuse_is_decided_on_the_values_the_entry_holds_at_the_write() {
        let checked = ReuseCheck {
            differ: vec![b"{H}p0".to_vec()],
            matched: vec![b"{H}old".to_vec()],
        };
        let asked = std::cell::RefCell::new(Vec::new());
        let verify = |c: &[u8]| {
            asked.borrow_mut().push(c.to_vec());
            c == b"{H}p1"
        };
        // Nothing new since the check: no verification, no reuse.
        assert!(!reuses_now(&[b"{H}p0".to_vec()], &checked, verify));
        // A value seen to match, still there: reuse.
        assert!(reuses_now(
            &[b"{H}p0".to_vec(), b"{H}old".to_vec()],
            &checked,
            verify
        ));
        assert!(asked.borrow().is_empty());
        // A concurrent change put p1 in place: verified now, and refused.
        assert!(reuses_now(
            &[b"{H}p1".to_vec(), b"{H}p0".to_vec()],
            &checked,
            verify
        ));
        assert_eq!(*asked.borrow(), [b"{H}p1".to_vec()]);
        // A matched value the history has since dropped no longer counts.
        assert!(!reuses_now(&[b"{H}p2".to_vec()], &checked, |_| false));
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
        let no = || false;
        let r = check_change(&p, &s, Changer::Owner, &new(3), 0, no).unwrap();
        assert_eq!(
            (r.code, r.error),
            (
                ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
                PasswordPolicyError::PasswordModNotAllowed
            )
        );
        let r = check_change(&p, &s, Changer::Other, &new(3), 0, no).unwrap();
        assert_eq!(r.error, PasswordPolicyError::MustSupplyOldPassword);
        let with_old = NewPassword {
            old_given: true,
            ..new(3)
        };
        assert_eq!(
            check_change(&p, &s, Changer::Other, &with_old, 0, no)
                .unwrap()
                .error,
            PasswordPolicyError::PasswordTooShort
        );
        assert_eq!(check_change(&p, &s, Changer::Admin, &new(1), 0, || true), None);
        let history = Policy {
            in_history: 3,
            ..Policy::empty()
        };
        assert_eq!(
            check_change(&history, &s, Changer::Owner, &new(10), 0, || true)
                .unwrap()
                .error,
            PasswordPolicyError::PasswordInHistory
        );
        // Without a history the question is not asked.
        assert_eq!(
            check_change(&Policy::empty(), &s, Changer::Owner, &new(10), 0, || {
                panic!("asked")
            }),
            None
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
