//! userPassword values that Add and Modify write: cleartext is hashed, pre-hashed values
//! are the administrator's, and a delete may name a password in cleartext.
//!
//! What happens to each userPassword value of an Add, or of a Modify's add and replace:
//! 1. a value that already carries the `{SCHEME}` of a scheme this server checks
//!    ([`password::is_prehashed`]) is stored as given when the administrator writes it
//!    (migrations); anyone else gets `constraintViolation` (19), as slapd's ppolicy answers
//!    a value it cannot check the quality of (`pwdCheckQuality 2`): a client could
//!    otherwise store a hash of a password nobody checked, or one copied from elsewhere;
//! 2. any other value (no scheme, or one this server does not know, which is then part of
//!    the password as in slapd) is hashed with `[password] default_scheme`
//!    ([`password::hash_new`]).
//!
//! A Modify's delete of listed userPassword values: a value that is stored as it stands
//! (a hash given by a client that read it, or a cleartext value) is deleted as usual; any
//! other value is taken as a cleartext password and replaced by every stored value it
//! verifies against, as slapd does for the old password of a "delete old, add new"
//! change; a value that verifies against none is left as it is, and the delete fails with
//! `noSuchAttribute` (16) like any absent value (unless Permissive Modify). The stored
//! values are read from the version current when the Modify is prepared; if the value
//! changed before the write, the delete names a value that is gone and fails the same way.
//!
//! Hashing and checking argon2 or PBKDF2 cost tens of milliseconds; they run in
//! [`gate::blocking_section`], which keeps the connection's tokio worker free.
//!
//! For the password policy hook, the cleartext is kept before it is hashed
//! ([`NewPassword`]): for its length, whether the change named the old password, and
//! whether it reuses the current password or one of the history the policy keeps. That
//! last is verified here, off the writer thread, against the version current when the
//! write is prepared; the hook decides it on the entry as the writer's transaction holds
//! it, verifying only what changed in between (`crate::ppolicy::change`).

use larch_model::dn::NormDn;
use larch_model::entry::{resolve_description, Entry};
use larch_proto::ber::Writer;
use larch_proto::{Change, ModifyOperation, PartialAttribute, ResultCode, SeqOf};
use larch_store::Version;

use super::WriteContext;
use crate::config::{DefaultScheme, PasswordSettings};
use crate::error::OpError;
use crate::identity::Identity;
use crate::password::{self, gate};
use crate::ppolicy::{Cleartexts, NewPassword, ReuseCheck};

/// True when hashing with `settings.default_scheme` is slow (argon2id, PBKDF2).
pub(crate) fn hashing_is_slow(settings: &PasswordSettings) -> bool {
    matches!(
        settings.default_scheme,
        DefaultScheme::Argon2id | DefaultScheme::Pbkdf2Sha512
    )
}

/// Hashes a cleartext password for storage, off the tokio worker when slow; a failure is
/// `other` (80) naming the entry.
pub(crate) fn hash_for_storage(
    settings: &PasswordSettings,
    cleartext: &[u8],
    shown: &str,
) -> Result<Vec<u8>, OpError> {
    let hash = || password::hash_new(settings, cleartext);
    let hashed = if hashing_is_slow(settings) {
        gate::blocking_section(hash)
    } else {
        hash()
    };
    hashed.map_err(|e| {
        OpError::new(
            ResultCode::OTHER,
            format!("userPassword of `{shown}`: cannot hash the new password: {e}"),
        )
    })
}

/// The value to store for a userPassword value given by the client (rules 1 and 2 of the
/// module documentation).
fn stored_form(ctx: &WriteContext<'_>, value: &[u8], shown: &str) -> Result<Vec<u8>, OpError> {
    let settings = &ctx.dir.config.password;
    if password::is_prehashed(value, settings) {
        if ctx.identity.is_admin() {
            return Ok(value.to_vec());
        }
        return Err(OpError::new(
            ResultCode::CONSTRAINT_VIOLATION,
            format!(
                "userPassword of `{shown}`: a value already hashed ({}) may only be stored by the administrator; \
                 send the password itself and the server hashes it",
                password::scheme_label(value)
            ),
        ));
    }
    hash_for_storage(settings, value, shown)
}

/// The new userPassword values as the password policy checks them: the cleartexts,
/// `None` when one is already hashed (it cannot be checked).
fn cleartexts(values: &[Vec<u8>], settings: &PasswordSettings) -> Option<Cleartexts> {
    if values.iter().any(|v| password::is_prehashed(v, settings)) {
        return None;
    }
    Some(Cleartexts(values.to_vec()))
}

/// Replaces every userPassword value of an entry being added by its stored form; what
/// the password policy needs to know of them (`None` without a userPassword).
pub(crate) fn prepare_entry(
    ctx: &WriteContext<'_>,
    entry: &mut Entry,
    shown: &str,
) -> Result<Option<NewPassword>, OpError> {
    let ty = ctx.dir.user_password;
    let mut facts = None;
    for attr in entry.attrs.iter_mut().filter(|a| a.ty == ty) {
        facts = Some(NewPassword {
            clear: cleartexts(&attr.values, &ctx.dir.config.password),
            ..NewPassword::default()
        });
        for v in attr.values.iter_mut() {
            *v = stored_form(ctx, v, shown)?;
        }
    }
    Ok(facts)
}

/// The stored passwords a new password of the entry of `attrs` may not reuse: its
/// current userPassword values and the `pwdInHistory` most recent of its `pwdHistory`.
/// None when no password policy applies, the policy keeps no history, or the
/// administrator writes (no rule applies to the administrator).
pub(crate) fn reuse_candidates(
    ctx: &WriteContext<'_>,
    version: &Version,
    norm: &NormDn,
    identity: &Identity,
) -> Vec<Vec<u8>> {
    let (Some(pp), false) = (&ctx.dir.password_policy, identity.is_admin()) else {
        return Vec::new();
    };
    let Some(entry) = version.find(norm).and_then(|id| version.entry(id)) else {
        return Vec::new();
    };
    let policy = pp.policy_for(version, entry.attrs(), &ctx.dir.schema);
    crate::ppolicy::change::reuse_candidates(entry.attrs(), &pp.types, policy.in_history)
}

/// Verifies the cleartexts `clear` against each of `candidates` (off the tokio worker when
/// one is of a slow scheme, unless `inline`: the caller is already off it): which of
/// them a new password matches, and which none does.
pub(crate) fn check_reuse(
    clear: &[Vec<u8>],
    candidates: &[Vec<u8>],
    settings: &PasswordSettings,
    inline: bool,
) -> ReuseCheck {
    if candidates.is_empty() || clear.is_empty() {
        return ReuseCheck::default();
    }
    let check = || {
        let mut out = ReuseCheck::default();
        for c in candidates {
            if clear.iter().any(|p| password::verify(p, c, settings)) {
                out.matched.push(c.clone());
            } else {
                out.differ.push(c.clone());
            }
        }
        out
    };
    if !inline && candidates.iter().any(|c| password::is_slow(c)) {
        gate::blocking_section(check)
    } else {
        check()
    }
}

/// The stored userPassword values of the entry `norm` in the current version.
fn current_values(ctx: &WriteContext<'_>, norm: &NormDn) -> Vec<Vec<u8>> {
    let version = ctx.dir.store.current();
    let Some(entry) = version.find(norm).and_then(|id| version.entry(id)) else {
        return Vec::new();
    };
    entry
        .attrs()
        .attribute(ctx.dir.user_password)
        .flat_map(|a| a.values.iter().map(<[u8]>::to_vec).collect::<Vec<_>>())
        .collect()
}

/// A Modify's changes with their userPassword values rewritten (see the module
/// documentation), encoded as `Change` TLVs back to back, and what the password policy
/// needs to know of the new password.
pub(crate) fn rewrite_changes(
    ctx: &WriteContext<'_>,
    changes: &SeqOf<'_, Change<'_>>,
    norm: &NormDn,
    shown: &str,
) -> Result<(Vec<u8>, NewPassword), OpError> {
    let schema = &*ctx.dir.schema;
    let settings = &ctx.dir.config.password;
    let mut stored: Option<Vec<Vec<u8>>> = None;
    let mut facts = NewPassword::default();
    // The cleartexts of every add and replace of userPassword; `None` once one is hashed.
    let mut clear: Option<Vec<Vec<u8>>> = Some(Vec::new());
    let mut any_new = false;
    // (operation, attribute description, values) of each change, owned.
    type OwnedChange<'d> = (ModifyOperation, &'d [u8], Vec<Vec<u8>>);
    let mut owned: Vec<OwnedChange<'_>> = Vec::new();
    for change in changes.iter() {
        let m = change.modification;
        let mut values: Vec<Vec<u8>> = m.values.iter().map(<[u8]>::to_vec).collect();
        let is_password =
            resolve_description(m.description, schema).is_ok_and(|(ty, _)| ty == ctx.dir.user_password);
        if is_password {
            match change.operation {
                ModifyOperation::Add | ModifyOperation::Replace => {
                    any_new |= !values.is_empty();
                    match (cleartexts(&values, settings), clear.as_mut()) {
                        (Some(c), Some(all)) => all.extend(c.0),
                        _ => clear = None,
                    }
                    for v in values.iter_mut() {
                        *v = stored_form(ctx, v, shown)?;
                    }
                }
                ModifyOperation::Delete if !values.is_empty() => {
                    let current = stored.get_or_insert_with(|| current_values(ctx, norm));
                    let (resolved, named_current) = resolve_deletes(values, current, settings);
                    values = resolved;
                    facts.old_given |= named_current;
                }
                _ => {}
            }
        }
        owned.push((change.operation, m.description, values));
    }
    if let (true, Some(clear)) = (any_new, clear) {
        let candidates = reuse_candidates(ctx, &ctx.dir.store.current(), norm, ctx.identity);
        facts.reuse = check_reuse(&clear, &candidates, settings, false);
        facts.clear = Some(Cleartexts(clear));
    }
    let value_refs: Vec<Vec<&[u8]>> = owned
        .iter()
        .map(|(_, _, vs)| vs.iter().map(Vec::as_slice).collect())
        .collect();
    let list: Vec<Change<'_>> = owned
        .iter()
        .zip(&value_refs)
        .map(|((operation, description, _), vs)| Change {
            operation: *operation,
            modification: PartialAttribute {
                description,
                values: SeqOf::from_items(vs),
            },
        })
        .collect();
    let mut out = Vec::new();
    SeqOf::from_items(&list).encode_contents(&mut Writer::new(&mut out));
    Ok((out, facts))
}

/// The values a userPassword delete names, cleartext passwords replaced by the stored
/// values they verify against (each value once), and whether one of them named a current
/// value (the old password, for the password policy's safe modify).
fn resolve_deletes(
    values: Vec<Vec<u8>>,
    current: &[Vec<u8>],
    settings: &PasswordSettings,
) -> (Vec<Vec<u8>>, bool) {
    fn push(v: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(values.len());
    let mut named_current = false;
    for v in values {
        named_current |= current.contains(&v);
        if current.contains(&v) || password::is_prehashed(&v, settings) {
            push(v, &mut out);
            continue;
        }
        let find = || {
            password::matching(&v, current, settings)
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        };
        let slow = current
            .iter()
            .take(password::MAX_VALUES_CHECKED)
            .any(|s| password::is_slow(s));
        let found = if slow {
            gate::blocking_section(find)
        } else {
            find()
        };
        if found.is_empty() {
            push(v, &mut out);
        } else {
            named_current = true;
            for s in found {
                push(s, &mut out);
            }
        }
    }
    (out, named_current)
}
