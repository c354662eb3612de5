//! Modify (RFC 4511 section 4.6), with the Permissive Modify control.
//!
//! [`prepare_modify`], on the connection, in slapd's order:
//! 1. the DN parses (`invalidDNSyntax`, 34); the root DSE, the subschema subentry and DNs
//!    outside the naming contexts cannot be modified (`unwillingToPerform`, 53);
//! 2. each change names a known attribute type (`undefinedAttributeType`, 17); an add
//!    carries values and an increment exactly one (`protocolError`, 2); no change touches a
//!    NO-USER-MODIFICATION type (`constraintViolation`, 19);
//! 3. access control, early (see [`crate::acl::ops`]);
//! 4. the change list is copied so that the prepared operation owns it; userPassword
//!    values are hashed on the way, a pre-hashed one is refused unless the administrator
//!    writes it (`constraintViolation`, 19), and a delete may name a password in cleartext
//!    (see [`super::userpassword`]).
//!
//! [`apply_modify`], on the writer thread:
//! 1. the entry exists (`noSuchObject`, 32, with matchedDN); the requester may make every
//!    change (`insufficientAccessRights`, 50: `add`, `delete`, both for replace,
//!    `increment`, on each attribute); it matches the Assertion control
//!    (`assertionFailed`, 122);
//! 2. the changes are applied in order to a copy of the entry
//!    (`larch_model::entry::modify::apply_changes`: 16, 17, 19, 20, 21, 65, 67, 69 as the
//!    model maps them), all or nothing;
//! 3. the write hooks run (`crate::hooks`: modifyTimestamp, modifiersName and entryCSN
//!    are updated); the store replaces the entry in one change; Pre-Read and Post-Read
//!    show it before and after.

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::check::check_user_modifiable;
use larch_model::entry::modify::{apply_changes, ModifyOptions};
use larch_model::entry::{resolve_description, Entry};
use larch_proto::ber::Writer;
use larch_proto::{Change, ModifyOperation, ModifyRequest, SeqOf};
use larch_store::WriteTxn;

use super::assertion::PreparedAssertion;
use super::read_entry::ReadControls;
use super::{check_target, find_entry, userpassword, Target, WriteContext};
use crate::controls::{RequestControls, ResponseControl};
use crate::error::OpError;
use crate::hooks::{NewState, PendingWrite, WriteKind};
use crate::ppolicy::NewPassword;

/// A Modify ready for the writer thread.
#[derive(Debug, Clone)]
pub struct PreparedModify {
    dn: Dn,
    norm: NormDn,
    /// The changes as BER (`Change` TLVs back to back), validated when prepared.
    changes: Vec<u8>,
    permissive: bool,
    assertion: Option<PreparedAssertion>,
    reads: ReadControls,
    /// What the password policy needs to know of a new userPassword.
    password: Option<NewPassword>,
}

/// Parses and checks a ModifyRequest (see the module documentation).
pub fn prepare_modify(
    ctx: &WriteContext<'_>,
    req: &ModifyRequest<'_>,
    controls: &RequestControls<'_>,
) -> Result<PreparedModify, OpError> {
    let dir = ctx.dir;
    dir.check_writable()?;
    let schema = &*dir.schema;
    let (dn, norm) = NormDn::parse(req.object, schema)?;
    let shown = dn.to_string();
    check_target(dir, &norm, &shown, Target::Modify)?;
    let mut touches_password = false;
    for change in req.changes.iter() {
        let m = &change.modification;
        let (ty, _) = resolve_description(m.description, schema)?;
        touches_password |= ty == dir.user_password;
        let name = String::from_utf8_lossy(m.description);
        match change.operation {
            ModifyOperation::Add if m.values.is_empty() => {
                return Err(OpError::protocol(format!(
                    "modify/add of `{name}`: the operation requires values"
                )))
            }
            ModifyOperation::Increment if m.values.len() != 1 => {
                return Err(OpError::protocol(format!(
                    "modify/increment of `{name}`: the operation requires a single value"
                )))
            }
            _ => {}
        }
        check_user_modifiable(ty, schema)?;
    }
    ctx.check_early(|access, version| match version.find(&norm) {
        Some(id) => access.check_modify(version, id, req.changes),
        None => Ok(()),
    })?;
    let (changes, password) = if touches_password {
        let (changes, facts) = userpassword::rewrite_changes(ctx, &req.changes, &norm, &shown)?;
        (changes, Some(facts))
    } else {
        let mut changes = Vec::new();
        req.changes.encode_contents(&mut Writer::new(&mut changes));
        (changes, None)
    };
    Ok(PreparedModify {
        dn,
        norm,
        changes,
        permissive: controls.permissive_modify,
        assertion: PreparedAssertion::new(controls, schema),
        reads: ReadControls::new(controls, schema, &dir.optypes),
        password,
    })
}

/// Applies the changes (see the module documentation). Returns the response controls.
pub fn apply_modify(
    txn: &mut WriteTxn<'_>,
    ctx: &WriteContext<'_>,
    op: PreparedModify,
) -> Result<Vec<ResponseControl>, OpError> {
    let dir = ctx.dir;
    let schema = &*dir.schema;
    let shown = op.dn.to_string();
    let version = txn.version();
    let access = ctx.access(version);
    let id = find_entry(version, &op.norm, &shown, &access)?;
    let changes: SeqOf<'_, Change<'_>> = SeqOf::decode_contents(&op.changes)?;
    access.check_modify(version, id, changes)?;
    if let Some(a) = &op.assertion {
        a.check_stored(version, id, &dir.optypes, &access)?;
    }
    let mut controls: Vec<ResponseControl> = op
        .reads
        .pre_read(version, id, &dir.optypes, &access)?
        .into_iter()
        .collect();
    let view = version
        .entry(id)
        .ok_or_else(|| OpError::no_such_object(&shown, ""))?;
    // The stored DN names the RDN whose values must stay (the request may spell it
    // differently; both normalize alike).
    let dn = Dn::parse(version.dn(id).as_bytes()).unwrap_or(op.dn);
    let mut entry = Entry::from_stored(dn, op.norm, view.attrs());
    let options = ModifyOptions {
        permissive: op.permissive,
        internal: false,
    };
    apply_changes(&mut entry, changes, schema, options)?;
    let hook_ctx = ctx.hook_context();
    let mut write = PendingWrite::new(WriteKind::Modify, NewState::Modify { id, entry }, &hook_ctx)
        .with_password(op.password);
    dir.hooks.before_change(&mut write, txn.version(), &hook_ctx)?;
    dir.hooks.commit(txn, &write, &hook_ctx)?;
    controls.extend(op.reads.post_read(txn.version(), id, &dir.optypes, &access)?);
    Ok(controls)
}
