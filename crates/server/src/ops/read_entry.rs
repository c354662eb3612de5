//! The Pre-Read and Post-Read controls (RFC 4527): an update returns its target entry as it
//! was before (pre-read) or is after (post-read) the change, as a response control whose
//! value is a SearchResultEntry.
//!
//! How:
//! 1. [`ReadControls::new`] reads each control's attribute list into a [`Selection`] on
//!    the connection (an empty list selects every user attribute, `+` the operational
//!    ones, as for a search);
//! 2. on the writer thread, the pre-read entry is encoded from the transaction's version
//!    before the change, and the post-read entry after it, so each shows exactly the state
//!    the update left or found (computed attributes included when selected);
//! 3. the entry's DN is the stored one (for a Modify DN, the new DN in the post-read);
//! 4. access control applies as to a search: the requester needs `read` on the entry
//!    (else a non-critical control is left out and a critical one fails the operation with
//!    `insufficientAccessRights`, as slapd's `slap_read_controls`), and only the attributes
//!    it may read are returned.

use larch_proto::controls::{PostReadResponse, PreReadResponse};
use larch_proto::{ResultCode, SearchResultEntry, SeqOf};
use larch_store::{EntryId, Version};

use crate::acl::ops::OpAccess;
use crate::acl::{Privileges, Target, What};
use crate::controls::{RequestControls, ResponseControl};
use crate::error::OpError;
use crate::opattrs::OperationalTypes;
use crate::select::Selection;

/// The attribute lists of an operation's read controls, owned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadControls {
    /// Pre-read: attributes of the entry before the update.
    pub pre: Option<Selection>,
    /// Post-read: attributes of the entry after the update.
    pub post: Option<Selection>,
    /// Whether each control was critical (pre, post).
    pub critical: (bool, bool),
}

impl ReadControls {
    /// Reads the Pre-Read and Post-Read controls of `controls`.
    pub fn new(
        controls: &RequestControls<'_>,
        schema: &larch_model::schema::Schema,
        optypes: &OperationalTypes,
    ) -> ReadControls {
        ReadControls {
            pre: controls.pre_read.map(|a| Selection::parse(a, schema, optypes)),
            post: controls.post_read.map(|a| Selection::parse(a, schema, optypes)),
            critical: controls.read_critical,
        }
    }

    /// The pre-read response control for entry `id` of `version`, when asked for and
    /// allowed by `access`.
    pub fn pre_read(
        &self,
        version: &Version,
        id: EntryId,
        optypes: &OperationalTypes,
        access: &OpAccess<'_>,
    ) -> Result<Option<ResponseControl>, OpError> {
        let Some(sel) = &self.pre else { return Ok(None) };
        read_control(
            sel,
            version,
            id,
            optypes,
            access,
            self.critical.0,
            "pre-read",
            |entry| ResponseControl::typed(&PreReadResponse { entry }),
        )
    }

    /// The post-read response control for entry `id` of `version`, when asked for and
    /// allowed by `access`.
    pub fn post_read(
        &self,
        version: &Version,
        id: EntryId,
        optypes: &OperationalTypes,
        access: &OpAccess<'_>,
    ) -> Result<Option<ResponseControl>, OpError> {
        let Some(sel) = &self.post else { return Ok(None) };
        read_control(
            sel,
            version,
            id,
            optypes,
            access,
            self.critical.1,
            "post-read",
            |entry| ResponseControl::typed(&PostReadResponse { entry }),
        )
    }
}

/// Encodes entry `id` with the attributes `sel` selects and the requester may read, and
/// wraps it with `wrap`; `None` when the requester may not read the entry and the control
/// (`name`) is not `critical`.
#[allow(clippy::too_many_arguments)]
fn read_control(
    sel: &Selection,
    version: &Version,
    id: EntryId,
    optypes: &OperationalTypes,
    access: &OpAccess<'_>,
    critical: bool,
    name: &str,
    wrap: impl FnOnce(SearchResultEntry<'_>) -> ResponseControl,
) -> Result<Option<ResponseControl>, OpError> {
    let dn = version.dn(id);
    let mut entry_access = access.entry(Target::Stored { version, id });
    if !entry_access.allows(What::Entry, Privileges::READ) {
        if critical {
            return Err(OpError::new(
                ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
                format!("the critical {name} control asks for entry `{dn}`, which may not be read"),
            ));
        }
        return Ok(None);
    }
    let mut attrs = Vec::new();
    let mut readable = |t| entry_access.allows(What::Attribute(t), Privileges::READ);
    sel.write_attributes(version, id, optypes, false, &mut readable, &mut attrs);
    let attributes = SeqOf::decode_contents(&attrs).map_err(|e| {
        OpError::new(
            ResultCode::OTHER,
            format!("cannot encode the read control's entry `{dn}`: {e}"),
        )
    })?;
    Ok(Some(wrap(SearchResultEntry {
        object_name: dn.as_bytes(),
        attributes,
    })))
}
