//! Delete (RFC 4511 section 4.8), with the Subtree Delete control.
//!
//! [`prepare_delete`], on the connection: the DN parses (`invalidDNSyntax`, 34); the root
//! DSE and the subschema subentry cannot be deleted, nor anything outside the naming
//! contexts (`unwillingToPerform`, 53).
//!
//! [`apply_delete`], on the writer thread:
//! 1. the entry exists (`noSuchObject`, 32, with the deepest existing ancestor as
//!    matchedDN);
//! 2. access control: `delete` on the parent's `children` and on the entry
//!    (`insufficientAccessRights`, 50); the Assertion control matches it
//!    (`assertionFailed`, 122);
//! 3. it is a leaf (`notAllowedOnNonLeaf`, 66), unless the Subtree Delete control is
//!    present: then the whole subtree is collected first (at most
//!    [`MAX_SUBTREE_DELETE`] entries, else `adminLimitExceeded`, 11, and nothing is
//!    deleted) and deleted deepest first, every entry after its subordinates, in one
//!    transaction, each entry passing the same access check. The subtree walk lists
//!    parents before children, so its reverse lists
//!    children first and each delete removes a leaf, which the store cannot refuse;
//! 4. the Pre-Read control reads the entry before it goes.
//!
//! A naming context may be deleted like any other entry (when it is a leaf, or with the
//! Subtree Delete control), as slapd allows.

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::StoredEntry;
use larch_proto::{DelRequest, ResultCode};
use larch_store::{EntryId, WriteTxn};

use super::assertion::PreparedAssertion;
use super::read_entry::ReadControls;
use super::{check_target, find_entry, Target, WriteContext};
use crate::controls::{RequestControls, ResponseControl};
use crate::error::OpError;
use crate::hooks::{NewState, PendingWrite, WriteKind};

/// Most entries one Subtree Delete removes. Every entry deleted is one log record built
/// while the single writer thread holds every other update back, so an unbounded subtree
/// would stall all writers for as long as it takes; larger subtrees are deleted in parts.
pub const MAX_SUBTREE_DELETE: usize = 100_000;

/// A Delete ready for the writer thread.
#[derive(Debug, Clone)]
pub struct PreparedDelete {
    dn: Dn,
    norm: NormDn,
    subtree: bool,
    assertion: Option<PreparedAssertion>,
    reads: ReadControls,
}

/// Parses and checks a DelRequest (see the module documentation).
pub fn prepare_delete(
    ctx: &WriteContext<'_>,
    req: &DelRequest<'_>,
    controls: &RequestControls<'_>,
) -> Result<PreparedDelete, OpError> {
    let dir = ctx.dir;
    dir.check_writable()?;
    let (dn, norm) = NormDn::parse(req.dn, &*dir.schema)?;
    check_target(dir, &norm, &dn.to_string(), Target::Delete)?;
    ctx.check_early(|access, version| match version.find(&norm) {
        Some(id) => access.check_delete(version, id),
        None => Ok(()),
    })?;
    Ok(PreparedDelete {
        dn,
        norm,
        subtree: controls.subtree_delete,
        assertion: PreparedAssertion::new(controls, &dir.schema),
        reads: ReadControls::new(controls, &dir.schema, &dir.optypes),
    })
}

/// Deletes the entry, or its whole subtree (see the module documentation). Returns the
/// response controls.
pub fn apply_delete(
    txn: &mut WriteTxn<'_>,
    ctx: &WriteContext<'_>,
    op: PreparedDelete,
) -> Result<Vec<ResponseControl>, OpError> {
    let dir = ctx.dir;
    let shown = op.dn.to_string();
    let version = txn.version();
    let access = ctx.access(version);
    let id = find_entry(version, &op.norm, &shown, &access)?;
    access.check_delete(version, id)?;
    if let Some(a) = &op.assertion {
        a.check_stored(version, id, &dir.optypes, &access)?;
    }
    let victims: Vec<EntryId> = if version.has_children(id) {
        if !op.subtree {
            return Err(OpError::new(
                ResultCode::NOT_ALLOWED_ON_NON_LEAF,
                format!("cannot delete `{shown}`: subordinate objects must be deleted first"),
            ));
        }
        let mut all: Vec<EntryId> = version.subtree(id).take(MAX_SUBTREE_DELETE + 1).collect();
        if all.len() > MAX_SUBTREE_DELETE {
            return Err(OpError::new(
                ResultCode::ADMIN_LIMIT_EXCEEDED,
                format!(
                    "the subtree of `{shown}` holds more than {MAX_SUBTREE_DELETE} entries, the most one \
                     delete removes; delete parts of it first"
                ),
            ));
        }
        // Confirm the walk saw the whole subtree (every entry but the root is somebody's
        // child), so no delete below can meet a non-leaf after earlier ones were made.
        let children: usize = all.iter().map(|&e| version.child_count(e)).sum();
        if children + 1 != all.len() {
            return Err(OpError::new(
                ResultCode::OTHER,
                format!("the subtree of `{shown}` could not be listed completely; nothing was deleted"),
            ));
        }
        // Every entry of the subtree needs the same rights as the entry itself.
        for &e in all.iter().skip(1) {
            access.check_delete(version, e)?;
        }
        all.reverse();
        all
    } else {
        vec![id]
    };
    let controls: Vec<ResponseControl> = op
        .reads
        .pre_read(version, id, &dir.optypes, &access)?
        .into_iter()
        .collect();
    let victims = victims.into_iter().map(|v| (v, StoredEntry::default())).collect();
    let hook_ctx = ctx.hook_context();
    let mut write = PendingWrite::new(WriteKind::Delete, NewState::Delete { victims }, &hook_ctx);
    dir.hooks.before_change(&mut write, txn.version(), &hook_ctx)?;
    dir.hooks.commit(txn, &write, &hook_ctx)?;
    Ok(controls)
}
