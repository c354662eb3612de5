//! The Assertion control (RFC 4528) on updates and Compare: the operation proceeds only when
//! its target entry matches the control's filter, else it fails with `assertionFailed`
//! (122) and changes nothing.
//!
//! How:
//! 1. [`PreparedAssertion::new`] compiles the filter once, on the connection, so the
//!    prepared operation owns it (the filter's octets live in the request buffer);
//! 2. on the writer thread (or on a version, for Compare) the filter is evaluated against
//!    the entry's stored attributes plus its computed ones (entryDN, hasSubordinates,
//!    numSubordinates, subschemaSubentry), so `(hasSubordinates=FALSE)` can guard a
//!    delete. For an Add, the target is the entry being added (as slapd evaluates it),
//!    with the operational attributes the add sets;
//! 3. on a stored entry, each type the requester may not search (access control) is
//!    hidden: an assertion on it is Undefined, as in a search filter, so the control
//!    cannot reveal values the requester may not see;
//! 4. only TRUE passes: FALSE and Undefined (RFC 4511 section 4.5.1.7) both fail.

use larch_model::dn::Dn;
use larch_model::entry::{Attribute, Entry, Options, StoredEntry, StoredRef};
use larch_model::filter::CompiledFilter;
use larch_model::schema::Schema;
use larch_proto::ResultCode;
use larch_store::{EntryId, Version};

use crate::acl::ops::OpAccess;
use crate::acl::Target;
use crate::controls::RequestControls;
use crate::error::OpError;
use crate::opattrs::{OperationalTypes, SUBSCHEMA_SUBENTRY_DN};

/// A compiled Assertion control, owned.
#[derive(Debug, Clone)]
pub struct PreparedAssertion {
    filter: CompiledFilter,
}

impl PreparedAssertion {
    /// Compiles the Assertion control of `controls`, if there is one.
    pub fn new(controls: &RequestControls<'_>, schema: &Schema) -> Option<PreparedAssertion> {
        controls.assertion.map(|f| PreparedAssertion {
            filter: CompiledFilter::compile(f, schema),
        })
    }

    /// Checks entry `id` of `version` (stored and computed attributes, without those
    /// `access` may not search).
    pub fn check_stored(
        &self,
        version: &Version,
        id: EntryId,
        optypes: &OperationalTypes,
        access: &OpAccess<'_>,
    ) -> Result<(), OpError> {
        let dn_text = version.dn(id);
        let Some(view) = version.entry(id) else {
            return Err(OpError::no_such_object(&dn_text, ""));
        };
        let mut attrs = stored_attributes(view.attrs());
        for ty in optypes.computed_types() {
            if let Some(values) = optypes.computed(version, id, ty) {
                attrs.push(Attribute {
                    ty,
                    options: Options::none(),
                    values,
                });
            }
        }
        let dn = if self.filter.needs_dn() {
            Dn::parse(dn_text.as_bytes()).ok()
        } else {
            None
        };
        let hidden = access
            .entry(Target::Stored { version, id })
            .hide_unsearchable(&self.filter, version.schema());
        self.check(
            hidden.as_ref().unwrap_or(&self.filter),
            &StoredEntry::build(&attrs),
            dn.as_ref(),
            version.schema(),
            &dn_text,
        )
    }

    /// Checks an entry about to be added: its attributes, with the computed ones it will
    /// have (its DN, no subordinates).
    pub fn check_new(
        &self,
        entry: &Entry,
        optypes: &OperationalTypes,
        schema: &Schema,
    ) -> Result<(), OpError> {
        let dn_text = entry.dn.to_string();
        let mut attrs = entry.attrs.clone();
        let computed: [(_, &[u8]); 4] = [
            (optypes.entry_dn, dn_text.as_bytes()),
            (optypes.has_subordinates, b"FALSE"),
            (optypes.num_subordinates, b"0"),
            (optypes.subschema_subentry, SUBSCHEMA_SUBENTRY_DN.as_bytes()),
        ];
        for (ty, value) in computed {
            attrs.push(Attribute {
                ty,
                options: Options::none(),
                values: vec![value.to_vec()],
            });
        }
        self.check(
            &self.filter,
            &StoredEntry::build(&attrs),
            Some(&entry.dn),
            schema,
            &dn_text,
        )
    }

    fn check(
        &self,
        filter: &CompiledFilter,
        stored: &StoredEntry,
        dn: Option<&Dn>,
        schema: &Schema,
        shown: &str,
    ) -> Result<(), OpError> {
        let mut scratch = Vec::new();
        if filter.matches(stored.as_ref(), dn, schema, &mut scratch) {
            Ok(())
        } else {
            Err(OpError::new(
                ResultCode::ASSERTION_FAILED,
                format!("entry `{shown}` does not match the filter of the assertion control"),
            ))
        }
    }
}

/// The owned attributes of a stored entry.
fn stored_attributes(stored: StoredRef<'_>) -> Vec<Attribute> {
    stored
        .attributes()
        .map(|a| Attribute {
            ty: a.ty,
            options: a.options(),
            values: a.values.iter().map(<[u8]>::to_vec).collect(),
        })
        .collect()
}
