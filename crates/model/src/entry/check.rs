//! Schema checking of a whole entry (RFC 4512 sections 2.4 and 2.5): what an add must
//! pass, and what a modified entry must still pass.
//!
//! Steps, in order, each failing with its RFC 4511 result code:
//! 1. values: syntax (21), duplicates under the equality rule (20), SINGLE-VALUE (19);
//! 2. object classes: present and known (65), exactly one structural chain (65);
//! 3. MUST of every class and superclass present (65); every user attribute allowed by some
//!    class, its supertypes counted, unless `extensibleObject` (65);
//! 4. the RDN's values present in the entry (64).

use super::{Attribute, Entry};
use crate::dn::DnSchema;
use crate::error::ModelError;
use crate::schema::{AttributeTypeId, ObjectClassId, Schema};

/// OID of `extensibleObject` (RFC 4512 section 5.3).
const EXTENSIBLE_OBJECT: &str = "1.3.6.1.4.1.1466.101.120.111";
/// OID of `objectClass`.
const OBJECT_CLASS: &str = "2.5.4.0";
/// Longest chain of attribute supertypes followed. Resolution refuses cycles, so real
/// chains are short (`cn` -> `name`); the bound only keeps a broken schema from looping.
const MAX_SUPERTYPE_CHAIN: usize = 64;

/// What a successful check learnt about the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedEntry {
    /// The structural object class (the value of `structuralObjectClass`).
    pub structural: ObjectClassId,
    /// Every object class of the entry: those listed and all their superclasses.
    pub classes: Vec<ObjectClassId>,
}

/// Checks an entry against the schema. See the module documentation for the rules.
pub fn check_entry(entry: &Entry, schema: &Schema) -> Result<CheckedEntry, ModelError> {
    for a in &entry.attrs {
        check_values(a, schema)?;
    }
    let checked = check_object_classes(entry, schema)?;
    check_rdn_present(entry, schema)?;
    Ok(checked)
}

fn type_name(schema: &Schema, id: AttributeTypeId) -> &str {
    schema.attribute_type_by_id(id).map_or("?", |t| t.name())
}

/// Syntax, duplicates and SINGLE-VALUE for one attribute.
pub fn check_values(a: &Attribute, schema: &Schema) -> Result<(), ModelError> {
    let Some(t) = schema.attribute_type_by_id(a.ty) else {
        return Err(ModelError::UndefinedAttributeType(
            "an attribute type is not defined".into(),
        ));
    };
    if t.single_value && a.values.len() > 1 {
        return Err(ModelError::ConstraintViolation(format!(
            "attribute `{}` is single-valued and was given {} values",
            t.name(),
            a.values.len()
        )));
    }
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(a.values.len());
    for (i, v) in a.values.iter().enumerate() {
        if !t.syntax.validate(v) {
            return Err(ModelError::InvalidAttributeSyntax(format!(
                "{}: value #{i} invalid per syntax ({})",
                t.name(),
                t.syntax.description
            )));
        }
        let mut key = Vec::with_capacity(v.len());
        match t.equality {
            Some(rule) => rule.normalize(v, &mut key).map_err(|e| {
                ModelError::InvalidAttributeSyntax(format!("{}: value #{i} cannot be matched: {e}", t.name()))
            })?,
            None => key.extend_from_slice(v),
        }
        keys.push(key);
    }
    keys.sort_unstable();
    if keys.windows(2).any(|w| w[0] == w[1]) {
        return Err(ModelError::AttributeOrValueExists(format!(
            "attribute `{}` has the same value more than once",
            t.name()
        )));
    }
    Ok(())
}

/// Object class rules: classes known, one structural chain, MUST and MAY.
pub fn check_object_classes(entry: &Entry, schema: &Schema) -> Result<CheckedEntry, ModelError> {
    let checked = structural_chain(entry, schema)?;
    check_must_and_may(entry, schema, &checked.classes)?;
    Ok(checked)
}

/// The entry's object classes (listed and inherited) and its one structural class: every
/// class known (65), exactly one structural chain (65).
pub fn structural_chain(entry: &Entry, schema: &Schema) -> Result<CheckedEntry, ModelError> {
    let oc_type = schema
        .attribute_type(OBJECT_CLASS)
        .ok_or_else(|| ModelError::ObjectClassViolation("the schema has no objectClass attribute".into()))?;
    let values: Vec<&Vec<u8>> = entry
        .attributes_of(oc_type.id)
        .flat_map(|a| a.values.iter())
        .collect();
    if values.is_empty() {
        return Err(ModelError::ObjectClassViolation(
            "no objectClass attribute".into(),
        ));
    }
    let mut listed = Vec::with_capacity(values.len());
    for v in values {
        let name = String::from_utf8_lossy(v);
        let class = schema
            .object_class(name.trim())
            // An objectClass value is an OID (RFC 4512 2.4.1): one that names no class is not
            // a valid value, and slapd answers invalidAttributeSyntax.
            .ok_or_else(|| {
                ModelError::InvalidAttributeSyntax(format!("unrecognized objectClass `{name}`"))
            })?;
        listed.push(class);
    }
    let mut classes: Vec<ObjectClassId> = Vec::new();
    for c in &listed {
        classes.push(c.id);
        classes.extend_from_slice(c.superclasses());
    }
    classes.sort_unstable();
    classes.dedup();

    // The structural classes must form one chain: one of them inherits from all others.
    let structural: Vec<_> = classes
        .iter()
        .filter_map(|&id| schema.object_class_by_id(id))
        .filter(|c| c.kind == crate::schema::ObjectClassKind::Structural)
        .collect();
    let most_specific = structural
        .iter()
        .find(|c| structural.iter().all(|other| c.is_subclass_of(other.id)))
        .ok_or_else(|| {
            if structural.is_empty() {
                ModelError::ObjectClassViolation("no structural object class provided".into())
            } else {
                let names: Vec<&str> = structural.iter().map(|c| c.name()).collect();
                ModelError::ObjectClassViolation(format!(
                    "invalid structural object class chain ({})",
                    names.join("/")
                ))
            }
        })?;

    Ok(CheckedEntry {
        structural: most_specific.id,
        classes,
    })
}

/// MUST of every class present; every user attribute allowed by some class (its supertypes
/// counted) unless the entry is an `extensibleObject`.
fn check_must_and_may(entry: &Entry, schema: &Schema, classes: &[ObjectClassId]) -> Result<(), ModelError> {
    let class_objects: Vec<_> = classes
        .iter()
        .filter_map(|&id| schema.object_class_by_id(id))
        .collect();
    for c in &class_objects {
        for &must in c.all_must() {
            if entry.attributes_of(must).next().is_none() {
                return Err(ModelError::ObjectClassViolation(format!(
                    "object class `{}` requires attribute `{}`",
                    c.name(),
                    type_name(schema, must)
                )));
            }
        }
    }
    let extensible = class_objects.iter().any(|c| c.oid == EXTENSIBLE_OBJECT);
    if !extensible {
        for a in &entry.attrs {
            let Some(t) = schema.attribute_type_by_id(a.ty) else {
                continue;
            };
            if t.is_operational() {
                continue;
            }
            let allowed = class_objects
                .iter()
                .any(|c| c.allows(a.ty) || supertypes(schema, a.ty).any(|sup| c.allows(sup)));
            if !allowed {
                return Err(ModelError::ObjectClassViolation(format!(
                    "attribute `{}` not allowed by the entry's object classes",
                    t.name()
                )));
            }
        }
    }
    Ok(())
}

/// The supertypes of an attribute type, nearest first (the type itself excluded).
fn supertypes(schema: &Schema, id: AttributeTypeId) -> impl Iterator<Item = AttributeTypeId> + '_ {
    let mut next = schema.attribute_type_by_id(id).and_then(|t| t.sup);
    let mut steps = 0usize;
    std::iter::from_fn(move || {
        let current = next?;
        steps += 1;
        if steps > MAX_SUPERTYPE_CHAIN {
            return None;
        }
        next = schema.attribute_type_by_id(current).and_then(|t| t.sup);
        Some(current)
    })
}

/// Every value of the entry's RDN must be one of the entry's values (RFC 4512 2.3.1).
pub fn check_rdn_present(entry: &Entry, schema: &Schema) -> Result<(), ModelError> {
    let Some(rdn) = entry.dn.rdns.first() else {
        return Ok(());
    };
    for ava in &rdn.avas {
        let Some(attr) = schema.dn_attribute(&ava.attr) else {
            return Err(ModelError::UndefinedAttributeType(format!(
                "attribute type `{}` is not defined",
                ava.attr
            )));
        };
        let t = schema.attribute_type(&ava.attr).map(|t| t.id);
        let present = match (t, attr.equality) {
            (Some(id), Some(rule)) => {
                let mut want = Vec::new();
                rule.normalize(&ava.value, &mut want).is_ok()
                    && entry.attributes_of(id).flat_map(|a| a.values.iter()).any(|v| {
                        let mut key = Vec::new();
                        rule.normalize(v, &mut key).is_ok() && key == want
                    })
            }
            _ => false,
        };
        if !present {
            return Err(ModelError::NamingViolation(format!(
                "value of naming attribute `{}` is not present in the entry",
                ava.attr
            )));
        }
    }
    Ok(())
}

/// Refuses client-supplied values of NO-USER-MODIFICATION attributes (19); the server
/// maintains those itself.
pub fn check_user_modifiable(ty: AttributeTypeId, schema: &Schema) -> Result<(), ModelError> {
    match schema.attribute_type_by_id(ty) {
        Some(t) if t.no_user_modification => Err(ModelError::ConstraintViolation(format!(
            "attribute `{}` is maintained by the server and cannot be set by a client",
            t.name()
        ))),
        _ => Ok(()),
    }
}
