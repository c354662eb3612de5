//! Password policy (draft-behera-ldap-password-policy-10, as OpenLDAP's ppolicy overlay
//! and 389 DS enforce it): which policy governs an account, what its state means for a
//! bind, the rules of a password change, and the response control.
//!
//! - [`policy`]: a policy (`[password_policy]`, or the `pwdPolicy` entry an account's
//!   `pwdPolicySubentry` names) and the schema's types;
//! - [`account`]: the state kept on an account (`pwdAccountLockedTime`,
//!   `pwdAccountTmpLockoutEnd`, `pwdFailureTime`, `pwdChangedTime`, `pwdLastSuccess`,
//!   `pwdGraceUseTime`, `pwdReset`, `pwdStartTime`, `pwdEndTime`) and the bind's
//!   decisions, pure functions of the state, the policy and the time;
//! - [`change`]: a password change's rules (user change allowed, safe modify, minimum age,
//!   quality and length, history) and `pwdHistory`'s format;
//! - [`state`]: the state written into an entry after a bind or a change;
//! - [`time`]: the GeneralizedTime values, in microseconds.
//!
//! Who uses it: the Bind (`crate::auth::policy`: the decisions, and the bookkeeping write
//! of failures and grace logins), the write hook (`crate::hooks` `ppolicy.rs`: the change
//! rules and the state a change writes), the connection (a connection whose password must
//! be changed may do nothing else).

pub mod account;
pub mod change;
pub mod policy;
pub mod state;
pub mod time;

use larch_model::dn::NormDn;
use larch_model::entry::StoredRef;
use larch_model::schema::Schema;
use larch_proto::controls::{PasswordPolicyError, PasswordPolicyResponse, PasswordPolicyWarning};
use larch_store::Version;

use crate::config::PasswordPolicySettings;
use crate::controls::ResponseControl;

pub use account::{AccountState, AccountUpdate, BindVerdict};
pub use change::{Changer, Cleartexts, NewPassword, Refusal, ReuseCheck};
pub use policy::{LastSuccess, Policy, PolicyTypes};

/// The password policy of a directory: the default policy and the schema's types.
#[derive(Debug, Clone)]
pub struct PasswordPolicy {
    /// The policy of accounts that name no `pwdPolicy` entry.
    pub default: Policy,
    /// The schema's password policy types.
    pub types: PolicyTypes,
}

impl PasswordPolicy {
    /// The policy `settings` configure over `schema`: `None` when turned off, or when the
    /// schema lacks the password policy types (their name is logged).
    pub fn configured(settings: &PasswordPolicySettings, schema: &Schema) -> Option<PasswordPolicy> {
        if !settings.enabled {
            return None;
        }
        match PolicyTypes::new(schema) {
            Ok(types) => Some(PasswordPolicy {
                default: Policy::from_settings(settings),
                types,
            }),
            Err(missing) => {
                tracing::warn!(
                    "password policy is off: the schema has no `{missing}` (load ppolicy.schema, part of the standard set)"
                );
                None
            }
        }
    }

    /// The policy of the account whose attributes are `attrs`, in `version`: the
    /// `pwdPolicy` entry its `pwdPolicySubentry` names, or the default. A subentry that is
    /// missing or not a `pwdPolicy` gives the empty policy, as in slapd (and is logged).
    pub fn policy_for(&self, version: &Version, attrs: StoredRef<'_>, schema: &Schema) -> Policy {
        let t = &self.types;
        let Some(name) = attrs
            .attribute(t.policy_subentry)
            .find_map(|a| a.values.iter().next())
        else {
            return self.default.clone();
        };
        let found = NormDn::from_text(name, schema)
            .ok()
            .and_then(|norm| version.find(&norm))
            .and_then(|id| version.entry(id))
            .filter(|e| self.is_policy_entry(e.attrs(), schema));
        match found {
            Some(e) => Policy::from_entry(e.attrs(), t, self.default.last_success),
            None => {
                tracing::warn!(
                    subentry = %String::from_utf8_lossy(name),
                    "pwdPolicySubentry names no pwdPolicy entry: the empty policy applies"
                );
                Policy {
                    last_success: self.default.last_success,
                    ..Policy::empty()
                }
            }
        }
    }

    /// Whether the entry of `attrs` is of class `pwdPolicy`.
    fn is_policy_entry(&self, attrs: StoredRef<'_>, schema: &Schema) -> bool {
        attrs.attribute(self.types.object_class).any(|a| {
            a.values.iter().any(|v| {
                std::str::from_utf8(v)
                    .ok()
                    .and_then(|name| schema.object_class(name))
                    .is_some_and(|c| c.id == self.types.pwd_policy)
            })
        })
    }
}

/// The password policy response control.
pub fn response_control(
    warning: Option<PasswordPolicyWarning>,
    error: Option<PasswordPolicyError>,
) -> ResponseControl {
    ResponseControl::typed(&PasswordPolicyResponse { warning, error })
}
