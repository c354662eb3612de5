//! Compare (RFC 4511 section 4.10): does an entry hold a value of an attribute?
//!
//! Steps, in slapd's order, each failure with its result code:
//! 1. the DN parses (`invalidDNSyntax`, 34);
//! 2. the attribute description names a known type (`undefinedAttributeType`, 17) that
//!    has an equality rule (`inappropriateMatching`, 18), and the assertion value is valid
//!    for that rule (`invalidAttributeSyntax`, 21);
//! 3. the entry exists (`noSuchObject`, 32, with the deepest existing ancestor as
//!    matchedDN); the requester has `compare` on the asserted type, else
//!    `insufficientAccessRights` (50), or `noSuchObject` without `disclose` on the entry
//!    (as slapd); the entry matches the Assertion control (`assertionFailed`, 122);
//! 4. the values looked at are those of the type and of its subtypes (RFC 4511: "the
//!    attribute or a subtype"), in attributes carrying at least the description's options,
//!    and, for a computed type (entryDN, hasSubordinates, numSubordinates,
//!    subschemaSubentry), the computed value; none at all is `noSuchAttribute` (16), as
//!    slapd answers;
//! 5. a value whose equality key equals the assertion's is `compareTrue` (6), else
//!    `compareFalse` (5). Values of `objectClass` and `structuralObjectClass` name classes
//!    and compare as slapd's `objectSubClassMatch` does: a value matches when its class is
//!    the asserted class or a subclass of it (`person` and `2.5.6.6` name one class, and
//!    every class matches `top`); an asserted class the schema does not know matches
//!    nothing.

use larch_model::dn::NormDn;
use larch_model::entry::split_description;
use larch_model::schema::{ObjectClass, Schema};
use larch_proto::{CompareRequest, ResultCode};
use larch_store::Version;

use super::assertion::PreparedAssertion;
use super::find_entry;
use crate::acl::ops::OpAccess;
use crate::client::Client;
use crate::controls::RequestControls;
use crate::directory::Directory;
use crate::error::OpError;
use crate::identity::Identity;

/// OIDs of `objectClass` and `structuralObjectClass`, whose values are class names or OIDs.
const CLASS_TYPES: [&str; 2] = ["2.5.4.0", "2.5.21.9"];

/// Runs a Compare on `version` for `identity` connected as `client`: `Ok(true)` is
/// compareTrue (6), `Ok(false)` compareFalse (5).
pub fn compare(
    dir: &Directory,
    version: &Version,
    identity: &Identity,
    client: &Client,
    req: &CompareRequest<'_>,
    controls: &RequestControls<'_>,
) -> Result<bool, OpError> {
    let schema = &*dir.schema;
    let (dn, norm) = NormDn::parse(req.entry, schema)?;
    let shown = dn.to_string();
    let description = String::from_utf8_lossy(req.ava.description);
    let undefined = || {
        OpError::new(
            ResultCode::UNDEFINED_ATTRIBUTE_TYPE,
            format!("attribute type `{description}` is not defined"),
        )
    };
    let (name, options) = split_description(req.ava.description).ok_or_else(undefined)?;
    let t = schema.attribute_type(name).ok_or_else(undefined)?;
    let Some(rule) = t.equality else {
        return Err(OpError::new(
            ResultCode::INAPPROPRIATE_MATCHING,
            format!("attribute type `{}` has no equality matching rule", t.name()),
        ));
    };
    let class_values = CLASS_TYPES.contains(&t.oid.as_str());
    let mut asserted = Vec::new();
    if !class_values && rule.normalize(req.ava.value, &mut asserted).is_err() {
        return Err(OpError::new(
            ResultCode::INVALID_ATTRIBUTE_SYNTAX,
            format!("compare of `{description}`: the value does not conform to the assertion syntax"),
        ));
    }
    let access = OpAccess::new(&dir.acl, identity, client, version);
    let id = find_entry(version, &norm, &shown, &access)?;
    access.check_compare(version, id, t.id, &shown)?;
    if let Some(a) = PreparedAssertion::new(controls, schema) {
        a.check_stored(version, id, &dir.optypes, &access)?;
    }
    let view = version
        .entry(id)
        .ok_or_else(|| OpError::no_such_object(&shown, ""))?;
    let mut values: Vec<Vec<u8>> = Vec::new();
    let mut present = false;
    for a in view.attrs().attributes() {
        if schema.is_subtype(a.ty, t.id) && options.is_subset_of_str(a.options_str()) {
            present = true;
            values.extend(a.values.iter().map(<[u8]>::to_vec));
        }
    }
    if options.is_empty() {
        if let Some(computed) = dir.optypes.computed(version, id, t.id) {
            present = true;
            values.extend(computed);
        }
    }
    if !present {
        return Err(OpError::new(
            ResultCode::NO_SUCH_ATTRIBUTE,
            format!("entry `{shown}` has no attribute `{description}`"),
        ));
    }
    if class_values {
        let Some(wanted) = class(schema, req.ava.value) else {
            return Ok(false);
        };
        return Ok(values
            .iter()
            .any(|v| class(schema, v).is_some_and(|c| c.is_subclass_of(wanted.id))));
    }
    let mut key = Vec::new();
    Ok(values.iter().any(|v| {
        key.clear();
        rule.normalize(v, &mut key).is_ok() && key == asserted
    }))
}

/// The object class a value names (by name or OID).
fn class<'s>(schema: &'s Schema, value: &[u8]) -> Option<&'s ObjectClass> {
    schema.object_class(String::from_utf8_lossy(value).trim())
}
