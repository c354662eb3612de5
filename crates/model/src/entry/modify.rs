//! Applying a ModifyRequest's changes to an entry (RFC 4511 section 4.6, RFC 4525
//! increment), all or nothing: the caller applies to a copy and keeps it only on success.
//!
//! Per change, in order: resolve the description (17); refuse NO-USER-MODIFICATION types
//! from clients (19); then
//! - `add`: at least one value (2); each valid per syntax (21) and not present yet (20,
//!   skipped under Permissive Modify);
//! - `delete`: no values removes the attribute, which must exist (16); listed values must
//!   each be present (16), both skipped under Permissive Modify;
//! - `replace`: the values become the attribute's (none removes it, present or not);
//! - `increment`: exactly one integer value (19) added to every value of an existing (16)
//!   integer attribute (19).
//!
//! Afterwards: the structural class must not change (69), a value of the RDN must not be
//! gone (67), and the whole entry must pass [`super::check::check_entry`].

use larch_proto::{Change, ModifyOperation, SeqOf};

use super::check::{check_entry, check_user_modifiable, check_values, structural_chain, CheckedEntry};
use super::{resolve_description, Attribute, Entry, Options};
use crate::error::ModelError;
use crate::schema::{AttributeType, AttributeTypeId, Schema};

/// How to apply changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModifyOptions {
    /// Permissive Modify control: adding a present value or deleting an absent one is not
    /// an error.
    pub permissive: bool,
    /// The server itself is modifying (NO-USER-MODIFICATION does not apply).
    pub internal: bool,
}

/// Applies `changes` to `entry` in order and checks the result. On error the entry may be
/// half-changed: apply to a clone.
pub fn apply_changes(
    entry: &mut Entry,
    changes: SeqOf<'_, Change<'_>>,
    schema: &Schema,
    options: ModifyOptions,
) -> Result<CheckedEntry, ModelError> {
    let before = structural_chain(entry, schema).ok().map(|c| c.structural);
    for change in changes.iter() {
        apply_one(entry, &change, schema, options)?;
    }
    // As OpenLDAP does: a structural class change is reported before what it breaks.
    if let (Some(before), Ok(after)) = (before, structural_chain(entry, schema)) {
        if before != after.structural {
            let name = |id| schema.object_class_by_id(id).map_or("?", |c| c.name());
            return Err(ModelError::ObjectClassModsProhibited(format!(
                "the structural object class cannot change from `{}` to `{}`",
                name(before),
                name(after.structural)
            )));
        }
    }
    check_rdn_kept(entry, schema)?;
    check_entry(entry, schema)
}

fn key(t: &AttributeType, v: &[u8]) -> Option<Vec<u8>> {
    let mut k = Vec::with_capacity(v.len());
    match t.equality {
        Some(rule) => rule.normalize(v, &mut k).ok()?,
        None => k.extend_from_slice(v),
    }
    Some(k)
}

fn apply_one(
    entry: &mut Entry,
    change: &Change<'_>,
    schema: &Schema,
    opts: ModifyOptions,
) -> Result<(), ModelError> {
    let m = &change.modification;
    let (ty, options) = resolve_description(m.description, schema)?;
    if !opts.internal {
        check_user_modifiable(ty, schema)?;
    }
    let t = schema
        .attribute_type_by_id(ty)
        .ok_or_else(|| ModelError::UndefinedAttributeType("attribute type not defined".into()))?;
    let values: Vec<Vec<u8>> = m.values.iter().map(<[u8]>::to_vec).collect();
    match change.operation {
        ModifyOperation::Add => add(entry, t, &options, values, opts),
        ModifyOperation::Delete => delete(entry, t, &options, values, opts),
        ModifyOperation::Replace => {
            let a = Attribute {
                ty,
                options: options.clone(),
                values,
            };
            check_values(&a, schema)?;
            entry.set_values(ty, &options, a.values);
            Ok(())
        }
        ModifyOperation::Increment => increment(entry, t, &options, values),
    }
}

fn add(
    entry: &mut Entry,
    t: &AttributeType,
    options: &Options,
    values: Vec<Vec<u8>>,
    opts: ModifyOptions,
) -> Result<(), ModelError> {
    if values.is_empty() {
        return Err(ModelError::ProtocolError(format!(
            "modify/add of `{}` requires values",
            t.name()
        )));
    }
    let mut current: Vec<Vec<u8>> = entry
        .attribute(t.id, options)
        .map(|a| a.values.clone())
        .unwrap_or_default();
    let mut keys: Vec<Vec<u8>> = current.iter().filter_map(|v| key(t, v)).collect();
    for v in values {
        if !t.syntax.validate(&v) {
            return Err(ModelError::InvalidAttributeSyntax(format!(
                "{}: value invalid per syntax ({})",
                t.name(),
                t.syntax.description
            )));
        }
        let k = key(t, &v).ok_or_else(|| {
            ModelError::InvalidAttributeSyntax(format!("{}: value cannot be matched", t.name()))
        })?;
        if keys.contains(&k) {
            if opts.permissive {
                continue;
            }
            return Err(ModelError::AttributeOrValueExists(format!(
                "modify/add: {}: value #{} already exists",
                t.name(),
                current.len()
            )));
        }
        keys.push(k);
        current.push(v);
    }
    entry.set_values(t.id, options, current);
    Ok(())
}

fn delete(
    entry: &mut Entry,
    t: &AttributeType,
    options: &Options,
    values: Vec<Vec<u8>>,
    opts: ModifyOptions,
) -> Result<(), ModelError> {
    let Some(current) = entry.attribute(t.id, options).map(|a| a.values.clone()) else {
        if opts.permissive {
            return Ok(());
        }
        return Err(ModelError::NoSuchAttribute(format!(
            "modify/delete: {}: no such attribute",
            t.name()
        )));
    };
    if values.is_empty() {
        entry.set_values(t.id, options, Vec::new());
        return Ok(());
    }
    let mut keep: Vec<(Vec<u8>, Vec<u8>)> = current
        .into_iter()
        .map(|v| (key(t, &v).unwrap_or_default(), v))
        .collect();
    for v in values {
        let k = key(t, &v).unwrap_or_else(|| v.clone());
        match keep.iter().position(|(kk, _)| *kk == k) {
            Some(i) => {
                keep.remove(i);
            }
            None if opts.permissive => {}
            None => {
                return Err(ModelError::NoSuchAttribute(format!(
                    "modify/delete: {}: no such value",
                    t.name()
                )))
            }
        }
    }
    entry.set_values(t.id, options, keep.into_iter().map(|(_, v)| v).collect());
    Ok(())
}

fn increment(
    entry: &mut Entry,
    t: &AttributeType,
    options: &Options,
    values: Vec<Vec<u8>>,
) -> Result<(), ModelError> {
    let [delta] = values.as_slice() else {
        return Err(ModelError::ConstraintViolation(format!(
            "modify/increment of `{}` requires exactly one value",
            t.name()
        )));
    };
    if t.equality.map(|r| r.name) != Some("integerMatch") {
        return Err(ModelError::ConstraintViolation(format!(
            "modify/increment: `{}` is not an integer attribute",
            t.name()
        )));
    }
    let delta = parse_integer(delta).ok_or_else(|| {
        // As slapd: a value that does not follow the INTEGER syntax.
        ModelError::InvalidAttributeSyntax("modify/increment: the value is not an integer".into())
    })?;
    let Some(current) = entry.attribute(t.id, options).map(|a| a.values.clone()) else {
        return Err(ModelError::NoSuchAttribute(format!(
            "modify/increment: {}: no such attribute",
            t.name()
        )));
    };
    let mut next = Vec::with_capacity(current.len());
    for v in current {
        let n = parse_integer(&v)
            .and_then(|n| n.checked_add(delta))
            .ok_or_else(|| {
                ModelError::ConstraintViolation(format!("modify/increment: {}: out of range", t.name()))
            })?;
        next.push(n.to_string().into_bytes());
    }
    entry.set_values(t.id, options, next);
    Ok(())
}

/// An RFC 4517 Integer within `i128` (wider values cannot be incremented).
fn parse_integer(v: &[u8]) -> Option<i128> {
    let s = std::str::from_utf8(v).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// A modification must not remove a value of the entry's RDN (RFC 4511 section 4.6).
fn check_rdn_kept(entry: &Entry, schema: &Schema) -> Result<(), ModelError> {
    super::check::check_rdn_present(entry, schema).map_err(|e| match e {
        ModelError::NamingViolation(msg) => ModelError::NotAllowedOnRdn(msg),
        other => other,
    })
}

/// The attribute types a set of changes touches (for access control and indexing).
pub fn touched_types(changes: SeqOf<'_, Change<'_>>, schema: &Schema) -> Vec<AttributeTypeId> {
    let mut v: Vec<AttributeTypeId> = changes
        .iter()
        .filter_map(|c| {
            resolve_description(c.modification.description, schema)
                .ok()
                .map(|(t, _)| t)
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}
