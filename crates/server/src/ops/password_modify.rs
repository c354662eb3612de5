//! The Password Modify extended operation (RFC 3062): a user changes a password, or the
//! administrator sets one, without knowing how it is stored.
//!
//! [`prepare_password_modify`], on the connection, in slapd's order (`passwd.c`):
//! 1. an anonymous client gets `strongerAuthRequired` (8), "only authenticated users may
//!    change passwords";
//! 2. an empty oldPasswd or newPasswd is `unwillingToPerform` (53);
//! 3. the target is userIdentity when given and not empty (it must be a DN:
//!    `invalidDNSyntax`, 34), else the bound identity; the root DSE has no password (53);
//!    the subschema subentry and a DN outside every naming context are `unwillingToPerform`
//!    (53) as for a Modify;
//! 4. without ManageDsaIT, a target at or below a referral entry gets `referral` (10);
//! 5. the access rules must give the requester `add` and `delete` on the target's
//!    userPassword (`insufficientAccessRights`, 50);
//! 6. the entry must exist: `noSuchObject` (32) with matchedDN; when oldPasswd was given,
//!    `unwillingToPerform` (53) "unwilling to verify old password", as slapd answers;
//! 7. the entry's userPassword values are kept for the old-password check.
//!
//! [`PreparedPasswordModify::finish`], which may run on a blocking thread (it is slow for
//! argon2 and PBKDF2): checks oldPasswd against the kept values (a mismatch is 53,
//! "unwilling to verify old password"), generates a password of
//! [`password::GENERATED_PASSWORD_LEN`] characters when newPasswd is absent, and hashes
//! the new password with `[password] default_scheme`. As in slapd, newPasswd is always
//! hashed, whatever it looks like: it is a password, never a stored form.
//!
//! [`apply_password_modify`], on the store's writer thread: the entry still exists (32),
//! its userPassword values (without options) are replaced by the new hash, the schema
//! check runs (an entry whose classes do not allow userPassword gets
//! `objectClassViolation`, 65), and modifyTimestamp, modifiersName and entryCSN are
//! updated. The response (with genPasswd when generated) is sent once the change is
//! durable.

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::check::check_entry;
use larch_model::entry::{Entry, Options};
use larch_proto::exop::PasswordModifyRequest;
use larch_proto::ResultCode;
use larch_store::{Lookup, Version, WriteTxn};

use super::{check_target, userpassword, Target, WriteContext};
use crate::acl::ops::OpAccess;
use crate::acl::{Privileges, Target as AclTarget, What};
use crate::config::PasswordSettings;
use crate::error::OpError;
use crate::hooks::{NewState, PendingWrite, WriteKind};
use crate::lookup::referral_above;
use crate::password;
use crate::ppolicy::{Cleartexts, NewPassword};

/// The answer to a wrong or unverifiable old password, as slapd words it.
const OLD_PASSWORD_REFUSED: &str = "unwilling to verify old password";

/// A Password Modify whose target is known and allowed; the passwords are still to be
/// checked and hashed ([`PreparedPasswordModify::finish`]).
#[derive(Debug, Clone)]
pub struct PreparedPasswordModify {
    dn: Dn,
    norm: NormDn,
    old: Option<Vec<u8>>,
    new: Option<Vec<u8>>,
    /// The target's userPassword values when prepared (for the old-password check).
    stored: Vec<Vec<u8>>,
    /// The stored passwords the password policy's history forbids reusing.
    reuse: Vec<Vec<u8>>,
}

/// A Password Modify ready for the writer thread.
#[derive(Debug, Clone)]
pub struct ReadyPasswordModify {
    dn: Dn,
    norm: NormDn,
    hashed: Vec<u8>,
    /// The password the server generated (returned as genPasswd).
    pub generated: Option<String>,
    /// What the password policy needs to know of the new password.
    password: NewPassword,
}

/// Why [`PreparedPasswordModify::finish`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishError {
    /// oldPasswd did not verify (the failed-bind throttle counts it as a failure).
    OldPassword(OpError),
    /// Generating or hashing failed.
    Other(OpError),
}

impl FinishError {
    /// The error to answer.
    pub fn into_op_error(self) -> OpError {
        match self {
            FinishError::OldPassword(e) | FinishError::Other(e) => e,
        }
    }
}

/// Whether the requester may set the password of `target`: `add` and `delete` (what a
/// replace of userPassword needs) on its userPassword under the access rules. A target
/// that does not exist is left to the lookup that follows for the entry itself and the
/// administrator, and refused for anyone else (so that the answer does not tell whether
/// the entry exists).
fn may_set_password(ctx: &WriteContext<'_>, version: &Version, target: &NormDn) -> bool {
    if ctx.identity.is_admin() {
        return true;
    }
    let Some(id) = version.find(target) else {
        return ctx.identity.norm_dn() == Some(target);
    };
    let access = OpAccess::new(&ctx.dir.acl, ctx.identity, ctx.client, version);
    let mut entry = access.entry(AclTarget::Stored { version, id });
    let what = What::Attribute(ctx.dir.user_password);
    entry.allows(what, Privileges::ADD) && entry.allows(what, Privileges::DELETE)
}

/// Checks a Password Modify request against `version` (see the module documentation).
pub fn prepare_password_modify(
    ctx: &WriteContext<'_>,
    version: &Version,
    req: &PasswordModifyRequest<'_>,
    manage_dsa_it: bool,
) -> Result<PreparedPasswordModify, OpError> {
    let dir = ctx.dir;
    dir.check_writable()?;
    if !ctx.identity.is_authenticated() {
        return Err(OpError::new(
            ResultCode::STRONGER_AUTH_REQUIRED,
            "only authenticated users may change passwords",
        ));
    }
    if req.old_password.is_some_and(<[u8]>::is_empty) {
        return Err(OpError::unwilling("old password value is empty"));
    }
    if req.new_password.is_some_and(<[u8]>::is_empty) {
        return Err(OpError::unwilling("new password value is empty"));
    }
    let (dn, norm) = match req.user_identity.filter(|id| !id.is_empty()) {
        Some(id) => NormDn::parse(id, &*dir.schema).map_err(|e| {
            OpError::new(
                ResultCode::INVALID_DN_SYNTAX,
                format!(
                    "Password Modify: userIdentity `{}` is not a DN: {}",
                    String::from_utf8_lossy(id),
                    e.reason
                ),
            )
        })?,
        None => match ctx.identity.norm_dn() {
            Some(norm) => (Dn::parse(ctx.identity.dn().as_bytes())?, norm.clone()),
            None => return Err(OpError::unwilling("no entry is bound to change the password of")),
        },
    };
    let shown = dn.to_string();
    if norm.is_root() {
        return Err(OpError::unwilling("no password is associated with the Root DSE"));
    }
    check_target(dir, &norm, &shown, Target::Modify)?;
    if !manage_dsa_it {
        if let Some(e) = referral_above(version, ctx.dir.referral_class.as_ref(), &norm, &shown) {
            return Err(e);
        }
    }
    if !may_set_password(ctx, version, &norm) {
        return Err(OpError::new(
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
            format!("no write access to the userPassword of `{shown}` (see the access rules)"),
        ));
    }
    let entry = match version.lookup(&norm) {
        Lookup::Found(id) => version.entry(id),
        Lookup::Missing { matched } => {
            if req.old_password.is_some() {
                return Err(OpError::unwilling(OLD_PASSWORD_REFUSED));
            }
            return Err(OpError::no_such_object(
                &shown,
                ctx.access(version).matched_dn(version, matched),
            ));
        }
    };
    let stored = entry
        .map(|e| {
            e.attrs()
                .attribute(dir.user_password)
                .flat_map(|a| a.values.iter().map(<[u8]>::to_vec).collect::<Vec<_>>())
                .take(password::MAX_VALUES_CHECKED)
                .collect()
        })
        .unwrap_or_default();
    let reuse = userpassword::reuse_candidates(ctx, version, &norm, ctx.identity);
    Ok(PreparedPasswordModify {
        reuse,
        dn,
        norm,
        old: req.old_password.map(<[u8]>::to_vec),
        new: req.new_password.map(<[u8]>::to_vec),
        stored,
    })
}

impl PreparedPasswordModify {
    /// The entry whose password is changed (the failed-bind throttle counts a wrong old
    /// password under it).
    pub fn target(&self) -> &NormDn {
        &self.norm
    }

    /// True when the request carries an old password to check.
    pub fn checks_old_password(&self) -> bool {
        self.old.is_some()
    }

    /// True when [`Self::finish`] is slow (an argon2, PBKDF2 or crypt value to check, or a
    /// slow default scheme to hash with): it must not run on a connection thread.
    pub fn is_slow(&self, settings: &PasswordSettings) -> bool {
        userpassword::hashing_is_slow(settings)
            || (self.old.is_some() && self.stored.iter().any(|v| password::is_slow(v)))
            || self.reuse.iter().any(|v| password::is_slow(v))
    }

    /// Checks the old password, generates the new one if none was given, and hashes it
    /// (see the module documentation). Slow: see [`Self::is_slow`].
    pub fn finish(self, settings: &PasswordSettings) -> Result<ReadyPasswordModify, FinishError> {
        if let Some(old) = &self.old {
            if !password::verify_any(old, &self.stored, settings) {
                return Err(FinishError::OldPassword(OpError::unwilling(OLD_PASSWORD_REFUSED)));
            }
        }
        let (new, generated) = match self.new {
            Some(p) => (p, None),
            None => {
                let p = password::generate_len(password::GENERATED_PASSWORD_LEN).map_err(|e| {
                    FinishError::Other(OpError::new(
                        ResultCode::OTHER,
                        format!("password generation failed: {e}"),
                    ))
                })?;
                (p.clone().into_bytes(), Some(p))
            }
        };
        let clear = vec![new.clone()];
        let facts = NewPassword {
            reuse: userpassword::check_reuse(&clear, &self.reuse, settings, true),
            clear: Some(Cleartexts(clear)),
            old_given: self.old.is_some(),
        };
        let hashed = password::hash_new(settings, &new).map_err(|e| {
            FinishError::Other(OpError::new(
                ResultCode::OTHER,
                format!("userPassword of `{}`: cannot hash the new password: {e}", self.dn),
            ))
        })?;
        Ok(ReadyPasswordModify {
            dn: self.dn,
            norm: self.norm,
            hashed,
            generated,
            password: facts,
        })
    }
}

/// Replaces the target's userPassword (see the module documentation).
pub fn apply_password_modify(
    txn: &mut WriteTxn<'_>,
    ctx: &WriteContext<'_>,
    op: ReadyPasswordModify,
) -> Result<(), OpError> {
    let dir = ctx.dir;
    let schema = &*dir.schema;
    let shown = op.dn.to_string();
    let version = txn.version();
    let id = super::find_entry(version, &op.norm, &shown, &ctx.access(version))?;
    let view = version
        .entry(id)
        .ok_or_else(|| OpError::no_such_object(&shown, ""))?;
    let dn = Dn::parse(version.dn(id).as_bytes()).unwrap_or(op.dn);
    let mut entry = Entry::from_stored(dn, op.norm, view.attrs());
    entry.set_values(dir.user_password, &Options::none(), vec![op.hashed]);
    check_entry(&entry, schema)?;
    let hook_ctx = ctx.hook_context();
    let mut write = PendingWrite::new(
        WriteKind::PasswordModify,
        NewState::Modify { id, entry },
        &hook_ctx,
    )
    .with_password(Some(op.password));
    dir.hooks.before_change(&mut write, txn.version(), &hook_ctx)?;
    dir.hooks.commit(txn, &write, &hook_ctx)?;
    Ok(())
}
