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
//! 3. the entry's DN is the stored one (for a Modify DN, the new DN in the post-read).

use larch_proto::controls::{PostReadResponse, PreReadResponse};
use larch_proto::{ResultCode, SearchResultEntry, SeqOf};
use larch_store::{EntryId, Version};

use crate::controls::{RequestControls, ResponseControl};
use crate::error::OpError;
use crate::opattrs::OperationalTypes;
use crate::search::Selection;

/// The attribute lists of an operation's read controls, owned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadControls {
    /// Pre-read: attributes of the entry before the update.
    pub pre: Option<Selection>,
    /// Post-read: attributes of the entry after the update.
    pub post: Option<Selection>,
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
        }
    }

    /// The pre-read response control for entry `id` of `version`, when asked for.
    pub fn pre_read(
        &self,
        version: &Version,
        id: EntryId,
        optypes: &OperationalTypes,
    ) -> Result<Option<ResponseControl>, OpError> {
        self.pre
            .as_ref()
            .map(|sel| {
                read_control(sel, version, id, optypes, |entry| {
                    ResponseControl::typed(&PreReadResponse { entry })
                })
            })
            .transpose()
    }

    /// The post-read response control for entry `id` of `version`, when asked for.
    pub fn post_read(
        &self,
        version: &Version,
        id: EntryId,
        optypes: &OperationalTypes,
    ) -> Result<Option<ResponseControl>, OpError> {
        self.post
            .as_ref()
            .map(|sel| {
                read_control(sel, version, id, optypes, |entry| {
                    ResponseControl::typed(&PostReadResponse { entry })
                })
            })
            .transpose()
    }
}

/// Encodes entry `id` with the attributes `sel` selects and wraps it with `wrap`.
fn read_control(
    sel: &Selection,
    version: &Version,
    id: EntryId,
    optypes: &OperationalTypes,
    wrap: impl FnOnce(SearchResultEntry<'_>) -> ResponseControl,
) -> Result<ResponseControl, OpError> {
    let dn = version.dn(id);
    let mut attrs = Vec::new();
    sel.write_attributes(version, id, optypes, false, &mut attrs);
    let attributes = SeqOf::decode_contents(&attrs).map_err(|e| {
        OpError::new(
            ResultCode::OTHER,
            format!("cannot encode the read control's entry `{dn}`: {e}"),
        )
    })?;
    Ok(wrap(SearchResultEntry {
        object_name: dn.as_bytes(),
        attributes,
    }))
}
