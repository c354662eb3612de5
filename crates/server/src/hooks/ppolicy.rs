//! The password policy hook: the rules of a password change, and the state a change
//! records, as OpenLDAP's ppolicy overlay applies them in `ppolicy_add` and
//! `ppolicy_modify` (the rules are `crate::ppolicy::change`'s).
//!
//! | write | rules (not for the administrator) | what it records |
//! | --- | --- | --- |
//! | Add with a userPassword | quality (`pwdCheckQuality`, `pwdMinLength`, `pwdMaxLength`) | `pwdChangedTime` when the policy ages passwords (`pwdMaxAge` or `pwdMinAge`) |
//! | Modify or Password Modify that changes userPassword | user change allowed, safe modify, minimum age, quality and length, history | `pwdChangedTime` (removed with the password); no grace logins, lock, delay, failures or `pwdLastSuccess`; `pwdReset` set when the administrator resets another account's password under `pwdMustChange`, else removed, unless the request writes it; the old value into `pwdHistory` |
//!
//! A write that leaves the userPassword values as they were is not a password change,
//! and neither is a write of the account state alone (a bind's bookkeeping). What the hook
//! cannot see in the entry, where the new password is already hashed, the operation tells
//! it in [`PendingWrite::password`]: the cleartext, whether the old password was given,
//! and which stored passwords the new one was verified against before the writer (since
//! verifying hashes can take tens of milliseconds). The minimum age and the history are
//! decided here, in the writer's transaction, on the entry as it is at the write: of two
//! concurrent changes of one password the second sees the first (the history's two steps
//! are in `crate::ppolicy::change`). A refusal carries the control's error.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use larch_model::entry::{Entry, StoredRef};
use larch_model::schema::AttributeTypeId;
use larch_store::Version;

use super::{HookContext, NewState, PendingWrite, WriteHook};
use crate::config::PasswordSettings;
use crate::error::OpError;
use crate::password;
use crate::ppolicy::change::{
    check_change, check_quality, reuse_candidates, reuses_now, Changer, NewPassword, Refusal,
};
use crate::ppolicy::state::{apply_password_change, ChangeRecord};
use crate::ppolicy::time::{self, MICROS};
use crate::ppolicy::{AccountState, PasswordPolicy};

/// The password policy hook.
#[derive(Debug, Clone)]
pub struct PasswordPolicyHook {
    policy: Arc<PasswordPolicy>,
    /// How stored passwords verify (for the history check of a concurrent change).
    passwords: PasswordSettings,
}

impl PasswordPolicyHook {
    /// The hook enforcing `policy`, verifying stored passwords under `passwords`.
    pub fn new(policy: Arc<PasswordPolicy>, passwords: PasswordSettings) -> PasswordPolicyHook {
        PasswordPolicyHook { policy, passwords }
    }
}

/// The values of `ty` in an owned entry.
fn values_of(entry: &Entry, ty: AttributeTypeId) -> Vec<Vec<u8>> {
    entry
        .attributes_of(ty)
        .flat_map(|a| a.values.iter().cloned())
        .collect()
}

/// The values of `ty` in a stored entry.
fn stored_values(attrs: StoredRef<'_>, ty: AttributeTypeId) -> Vec<Vec<u8>> {
    attrs
        .attribute(ty)
        .flat_map(|a| a.values.iter().map(<[u8]>::to_vec).collect::<Vec<_>>())
        .collect()
}

/// A refusal as the operation's error.
fn refused(r: Refusal) -> OpError {
    OpError::new(r.code, r.message).with_policy(r.error)
}

/// Who changes the password of `entry`.
fn changer(ctx: &HookContext<'_>, entry: &Entry) -> Changer {
    if ctx.identity.is_admin() {
        Changer::Admin
    } else if ctx.identity.norm_dn() == Some(&entry.norm_dn) {
        Changer::Owner
    } else {
        Changer::Other
    }
}

impl PasswordPolicyHook {
    /// An Add: the quality rule, and `pwdChangedTime` when passwords age.
    fn on_add(
        &self,
        entry: &mut Entry,
        facts: &NewPassword,
        now: i64,
        ctx: &HookContext<'_>,
        version: &Version,
    ) -> Result<(), OpError> {
        let t = &self.policy.types;
        if entry.attributes_of(t.user_password).next().is_none() {
            return Ok(());
        }
        let policy = self
            .policy
            .policy_for(version, entry.to_stored().as_ref(), ctx.schema);
        if changer(ctx, entry) != Changer::Admin {
            if let Some(r) = check_quality(&policy, facts) {
                return Err(refused(r));
            }
        }
        let ages = policy.max_age > 0 || policy.min_age > 0;
        if ages && entry.attributes_of(t.changed_time).next().is_none() {
            entry.set_values(
                t.changed_time,
                &larch_model::entry::Options::none(),
                vec![time::format_secs(now).into_bytes()],
            );
        }
        Ok(())
    }

    /// A Modify or Password Modify: the rules when the password changes, then the state
    /// it records.
    fn on_modify(
        &self,
        entry: &mut Entry,
        old: StoredRef<'_>,
        facts: &NewPassword,
        now: i64,
        ctx: &HookContext<'_>,
        version: &Version,
    ) -> Result<(), OpError> {
        let t = &self.policy.types;
        let old_passwords = stored_values(old, t.user_password);
        let new_passwords = values_of(entry, t.user_password);
        if old_passwords == new_passwords {
            return Ok(());
        }
        let policy = self.policy.policy_for(version, old, ctx.schema);
        let state = AccountState::read(old, t);
        let who = changer(ctx, entry);
        if !new_passwords.is_empty() {
            let reused = || {
                let candidates = reuse_candidates(old, t, policy.in_history);
                reuses_now(&candidates, &facts.reuse, |stored| {
                    facts.clear.as_ref().is_some_and(|clear| {
                        clear
                            .0
                            .iter()
                            .any(|p| password::verify(p, stored, &self.passwords))
                    })
                })
            };
            if let Some(r) = check_change(&policy, &state, who, facts, now, reused) {
                return Err(refused(r));
            }
        }
        let old_history = stored_values(old, t.history);
        let record = ChangeRecord {
            policy: &policy,
            old_passwords: &old_passwords,
            old_history: &old_history,
            admin_reset: who == Changer::Admin,
            reset_given: stored_values(old, t.reset) != values_of(entry, t.reset),
            now,
        };
        apply_password_change(entry, t, &record);
        Ok(())
    }
}

impl WriteHook for PasswordPolicyHook {
    fn name(&self) -> &'static str {
        "password policy"
    }

    fn before_change(
        &self,
        write: &mut PendingWrite,
        version: &Version,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let now = write
            .stamp
            .time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX / MICROS));
        // A write that says nothing of a new password (an administrator's import, a
        // bind's bookkeeping) is one of a value already hashed.
        let facts = write.password.clone().unwrap_or_default();
        match &mut write.state {
            NewState::Add { entry, .. } => self.on_add(entry, &facts, now, ctx, version),
            NewState::Modify { id, entry } => match version.entry(*id) {
                Some(old) => self.on_modify(entry, old.attrs(), &facts, now, ctx, version),
                None => Ok(()),
            },
            NewState::Rename { .. } | NewState::Delete { .. } => Ok(()),
        }
    }
}
