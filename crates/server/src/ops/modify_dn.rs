//! Modify DN (RFC 4511 section 4.9): rename an entry, move it under a new superior, or
//! both; its subtree follows (the store names parents by ID, so children keep their
//! records and their DNs change with their ancestor's).
//!
//! [`prepare_modify_dn`], on the connection, in slapd's order:
//! 1. the DN, the new RDN (exactly one RDN) and the newSuperior parse
//!    (`invalidDNSyntax`, 34); each new RDN value is fit to name an entry
//!    (`namingViolation`, 64, the rules of an Add's RDN);
//! 2. the root DSE and the subschema subentry cannot be renamed (`unwillingToPerform`, 53);
//! 3. the new DN may not lie below the entry ("cannot place an entry below itself") nor
//!    above it (53), as slapd refuses both before any lookup;
//! 4. the DN lies within a naming context (53); a naming context can be renamed only to
//!    another configured suffix (53); the new DN must lie within a naming context
//!    (`affectsMultipleDSAs`, 71, slapd's "cannot rename between DSAs");
//! 5. access control, early (see [`crate::acl::ops`]).
//!
//! [`apply_modify_dn`], on the writer thread:
//! 1. the entry exists (`noSuchObject`, 32, with matchedDN);
//! 2. the new parent exists unless the new DN is a configured suffix (32, with the deepest
//!    existing ancestor of the new superior as matchedDN); access control
//!    (`insufficientAccessRights`, 50; see [`crate::acl::ops`]); the entry matches the
//!    Assertion control (`assertionFailed`, 122); no other entry has the new DN
//!    (`entryAlreadyExists`, 68; renaming an entry to its own name, e.g. to change the
//!    case of a value, is allowed);
//! 3. the new entry is computed on a copy: each value of the new RDN is added unless
//!    present (under the type's equality rule); with deleteOldRDN each value of the old RDN
//!    that is not also in the new RDN is removed; the result passes the schema check (an
//!    attribute not allowed or a MUST attribute left without values: `objectClassViolation`,
//!    65; a second value of a single-valued type: `constraintViolation`, 19);
//! 4. modifyTimestamp, modifiersName and entryCSN are updated; the store renames the entry
//!    in one change; Pre-Read shows it before (old DN), Post-Read after (new DN).

use larch_model::dn::{Ava, Dn, NormDn, Rdn};
use larch_model::entry::check::check_entry;
use larch_model::entry::{Entry, Options};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_proto::{ModifyDnRequest, ResultCode};
use larch_store::{EntryId, Lookup, Version, WriteTxn};

use super::assertion::PreparedAssertion;
use super::read_entry::ReadControls;
use super::{
    check_in_naming_context, check_naming_attributes, check_special, equality_key, find_entry,
    within_naming_context, Target, WriteContext,
};
use crate::acl::ops::OpAccess;
use crate::controls::{RequestControls, ResponseControl};
use crate::error::OpError;
use crate::hooks::{NewState, PendingWrite, WriteKind};

/// A Modify DN ready for the writer thread.
#[derive(Debug, Clone)]
pub struct PreparedModifyDn {
    dn: Dn,
    norm: NormDn,
    new_rdn: Rdn,
    new_dn: Dn,
    new_norm: NormDn,
    delete_old_rdn: bool,
    /// The entry moves: a newSuperior other than its parent was given.
    moves: bool,
    /// The new DN is a configured suffix (no parent entry needed).
    naming_context: bool,
    assertion: Option<PreparedAssertion>,
    reads: ReadControls,
}

fn invalid_dn(what: &str, text: &[u8], e: impl std::fmt::Display) -> OpError {
    OpError::new(
        ResultCode::INVALID_DN_SYNTAX,
        format!("invalid {what} `{}`: {e}", String::from_utf8_lossy(text)),
    )
}

/// Parses and checks a ModifyDNRequest (see the module documentation).
pub fn prepare_modify_dn(
    ctx: &WriteContext<'_>,
    req: &ModifyDnRequest<'_>,
    controls: &RequestControls<'_>,
) -> Result<PreparedModifyDn, OpError> {
    let dir = ctx.dir;
    dir.check_writable()?;
    let schema = &*dir.schema;
    let (dn, norm) = NormDn::parse(req.entry, schema).map_err(|e| invalid_dn("DN", req.entry, e))?;
    let rdn_dn = Dn::parse(req.new_rdn).map_err(|e| invalid_dn("new RDN", req.new_rdn, e))?;
    let [new_rdn] = rdn_dn.rdns.as_slice() else {
        return Err(invalid_dn("new RDN", req.new_rdn, "it must be exactly one RDN"));
    };
    let new_rdn = new_rdn.clone();
    let superior = match req.new_superior {
        Some(s) => Dn::parse(s).map_err(|e| invalid_dn("newSuperior", s, e))?,
        None => dn.parent().unwrap_or_default(),
    };
    let mut rdns = Vec::with_capacity(superior.rdns.len() + 1);
    rdns.push(new_rdn.clone());
    rdns.extend(superior.rdns);
    let new_dn = Dn { rdns };
    let new_norm = NormDn::normalize(&new_dn, schema).map_err(|e| {
        OpError::new(
            ResultCode::INVALID_DN_SYNTAX,
            format!("invalid new DN `{new_dn}`: {e}"),
        )
    })?;
    check_naming_attributes(&new_rdn.avas, schema)?;
    let shown = dn.to_string();
    check_special(dir, &norm, &shown, Target::Rename)?;
    if new_norm != norm && new_norm.is_within(&norm) {
        return Err(OpError::unwilling(format!(
            "cannot place `{shown}` below itself (new DN `{new_dn}`)"
        )));
    }
    if new_norm.is_ancestor_of(&norm) {
        return Err(OpError::unwilling(format!(
            "cannot place `{shown}` above itself (new DN `{new_dn}`)"
        )));
    }
    check_in_naming_context(dir, &norm, &shown)?;
    let naming_context = dir.suffixes.contains(&new_norm);
    if dir.suffixes.contains(&norm) && !naming_context {
        return Err(OpError::unwilling(format!(
            "cannot rename the naming context `{shown}` to `{new_dn}`: the new DN is not a configured suffix"
        )));
    }
    if !within_naming_context(dir, &new_norm) {
        return Err(OpError::new(
            ResultCode::AFFECTS_MULTIPLE_DSAS,
            format!("cannot rename `{shown}` to `{new_dn}`: the new DN is not within a naming context of this server"),
        ));
    }
    let moves = req.new_superior.is_some() && new_norm.parent() != norm.parent();
    let prepared = PreparedModifyDn {
        dn,
        norm,
        new_rdn,
        new_dn,
        new_norm,
        delete_old_rdn: req.delete_old_rdn,
        moves,
        naming_context,
        assertion: PreparedAssertion::new(controls, schema),
        reads: ReadControls::new(controls, schema, &dir.optypes),
    };
    ctx.check_early(|access, version| match version.find(&prepared.norm) {
        Some(id) => check_access(access, version, id, &prepared),
        None => Ok(()),
    })?;
    Ok(prepared)
}

/// The RDN of entry `id` as stored (the request may spell it differently; both normalize
/// alike), else the request's.
fn stored_rdn(version: &Version, id: EntryId, requested: &Dn) -> Option<Rdn> {
    Dn::parse(version.dn(id).as_bytes())
        .ok()
        .and_then(|d| d.rdns.into_iter().next())
        .or_else(|| requested.rdns.first().cloned())
}

/// The access check of renaming entry `id` of `version` (see [`crate::acl::ops`]): the
/// new superior's `children` when it exists (a missing one is the caller's noSuchObject),
/// `add` on the new RDN's types, `delete` on the types of old RDN values that go.
fn check_access(
    access: &OpAccess<'_>,
    version: &Version,
    id: EntryId,
    op: &PreparedModifyDn,
) -> Result<(), OpError> {
    if access.requester.is_admin() {
        return Ok(());
    }
    let schema = version.schema();
    let new_parent = if !op.moves {
        None
    } else if op.naming_context {
        Some(Some(0))
    } else {
        Some(op.new_norm.parent().and_then(|p| version.find(&p)))
    };
    let new_keys = rdn_keys(&op.new_rdn.avas, schema)?;
    let added: Vec<AttributeTypeId> = new_keys.iter().map(|(t, _, _)| *t).collect();
    let mut removed = Vec::new();
    if op.delete_old_rdn {
        if let Some(old) = stored_rdn(version, id, &op.dn) {
            for (ty, key, _) in rdn_keys(&old.avas, schema)? {
                if !new_keys.iter().any(|(t, k, _)| *t == ty && *k == key) {
                    removed.push(ty);
                }
            }
        }
    }
    access.check_rename(version, id, new_parent, &added, &removed)
}

/// Renames the entry (see the module documentation). Returns the response controls.
pub fn apply_modify_dn(
    txn: &mut WriteTxn<'_>,
    ctx: &WriteContext<'_>,
    op: PreparedModifyDn,
) -> Result<Vec<ResponseControl>, OpError> {
    let dir = ctx.dir;
    let schema = &*dir.schema;
    let shown = op.dn.to_string();
    let new_shown = op.new_dn.to_string();
    let version = txn.version();
    let access = ctx.access(version);
    let id = find_entry(version, &op.norm, &shown, &access)?;
    if !op.naming_context {
        if let Some(parent) = op.new_norm.parent() {
            if let Lookup::Missing { matched } = version.lookup(&parent) {
                let parent_shown = op.new_dn.parent().map(|p| p.to_string()).unwrap_or_default();
                return Err(OpError {
                    matched_dn: access.matched_dn(version, matched),
                    ..OpError::new(
                        ResultCode::NO_SUCH_OBJECT,
                        format!("cannot move `{shown}`: the new superior `{parent_shown}` does not exist"),
                    )
                });
            }
        }
    }
    check_access(&access, version, id, &op)?;
    if let Some(a) = &op.assertion {
        a.check_stored(version, id, &dir.optypes, &access)?;
    }
    if version.find(&op.new_norm).is_some_and(|other| other != id) {
        return Err(OpError::new(
            ResultCode::ENTRY_ALREADY_EXISTS,
            format!("cannot rename `{shown}`: entry `{new_shown}` already exists"),
        ));
    }
    let mut controls: Vec<ResponseControl> = op
        .reads
        .pre_read(version, id, &dir.optypes, &access)?
        .into_iter()
        .collect();
    let view = version
        .entry(id)
        .ok_or_else(|| OpError::no_such_object(&shown, ""))?;
    let old_rdn = stored_rdn(version, id, &op.dn);
    let mut entry = Entry::from_stored(op.new_dn, op.new_norm, view.attrs());
    let new_keys = rdn_keys(&op.new_rdn.avas, schema)?;
    for (ty, key, ava) in &new_keys {
        match find_value(&entry, *ty, key, schema) {
            None => entry.push_value(*ty, &Options::none(), ava.value.clone()),
            // With deleteOldRDN the new RDN's spelling replaces an equal value (a rename
            // that changes only the case, as slapd does).
            Some(i) if op.delete_old_rdn => {
                let mut values = entry
                    .attribute(*ty, &Options::none())
                    .map(|a| a.values.clone())
                    .unwrap_or_default();
                if let Some(v) = values.get_mut(i) {
                    v.clone_from(&ava.value);
                }
                entry.set_values(*ty, &Options::none(), values);
            }
            Some(_) => {}
        }
    }
    if op.delete_old_rdn {
        let old_keys = match &old_rdn {
            Some(rdn) => rdn_keys(&rdn.avas, schema)?,
            None => Vec::new(),
        };
        for (ty, key, _) in &old_keys {
            if new_keys.iter().any(|(t, k, _)| t == ty && k == key) {
                continue;
            }
            if let Some(i) = find_value(&entry, *ty, key, schema) {
                let mut values = entry
                    .attribute(*ty, &Options::none())
                    .map(|a| a.values.clone())
                    .unwrap_or_default();
                values.remove(i);
                entry.set_values(*ty, &Options::none(), values);
            }
        }
    }
    check_entry(&entry, schema)?;
    let state = NewState::Rename {
        id,
        entry,
        naming_context: op.naming_context,
    };
    let hook_ctx = ctx.hook_context();
    let mut write = PendingWrite::new(WriteKind::ModifyDn, state, &hook_ctx);
    dir.hooks.before_change(&mut write, txn.version(), &hook_ctx)?;
    dir.hooks.commit(txn, &write, &hook_ctx)?;
    controls.extend(op.reads.post_read(txn.version(), id, &dir.optypes, &access)?);
    Ok(controls)
}

/// One AVA of an RDN with its type and equality key.
type KeyedAva<'a> = (AttributeTypeId, Vec<u8>, &'a Ava);

/// The (type, equality key, AVA) of each AVA of an RDN.
fn rdn_keys<'a>(avas: &'a [Ava], schema: &Schema) -> Result<Vec<KeyedAva<'a>>, OpError> {
    avas.iter()
        .map(|ava| {
            let invalid = || {
                OpError::new(
                    ResultCode::NAMING_VIOLATION,
                    format!("value of naming attribute `{}` is invalid", ava.attr),
                )
            };
            let t = schema.attribute_type(&ava.attr).ok_or_else(invalid)?;
            let key = equality_key(schema, t.id, &ava.value).ok_or_else(invalid)?;
            Ok((t.id, key, ava))
        })
        .collect()
}

/// The position of the value with equality key `key` in the option-less attribute `ty` of
/// `entry` (the attribute an RDN names, as in slapd).
fn find_value(entry: &Entry, ty: AttributeTypeId, key: &[u8], schema: &Schema) -> Option<usize> {
    entry
        .attribute(ty, &Options::none())?
        .values
        .iter()
        .position(|v| equality_key(schema, ty, v).as_deref() == Some(key))
}
