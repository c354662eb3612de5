//! Add (RFC 4511 section 4.7).
//!
//! [`prepare_add`], on the connection, in slapd's order:
//! 1. the DN parses and normalizes (`invalidDNSyntax`, 34); the root DSE and the subschema
//!    subentry already exist (`entryAlreadyExists`, 68);
//! 2. at least one attribute (`protocolError`, 2); every description resolves
//!    (`undefinedAttributeType`, 17);
//! 3. each RDN value is fit to name an entry, as slapd requires (`namingViolation`, 64):
//!    in string form, of a user attribute type that is neither collective nor obsolete
//!    and has an equality rule; RDN values missing from the attributes are added,
//!    as slapd's `entry_naming_check` does, unless the type is single-valued and holds
//!    another value (64);
//! 4. the DN lies within a naming context (`unwillingToPerform`, 53);
//! 5. no NO-USER-MODIFICATION attribute is given, whoever asks (`constraintViolation`, 19);
//! 6. the entry passes the schema check (`larch_model::entry::check::check_entry`);
//! 7. access control, early (see [`crate::acl::ops`]);
//! 8. userPassword values are hashed, or refused when pre-hashed by anyone but the
//!    administrator (`constraintViolation`, 19; see [`super::userpassword`]).
//!
//! [`apply_add`], on the writer thread:
//! 1. the operational attributes are set from the operation's stamp;
//! 2. the Assertion control is checked against the new entry (`assertionFailed`, 122);
//! 3. the entry must not exist (68) and its parent must, unless the DN is a configured
//!    suffix (`noSuchObject`, 32, with the deepest existing ancestor as matchedDN);
//! 4. access control: `add` on the parent's `children` and on the new entry
//!    (`insufficientAccessRights`, 50);
//! 5. the store adds it; the Post-Read control reads it back (what the requester may read).

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::check::{check_entry, check_user_modifiable, CheckedEntry};
use larch_model::entry::{resolve_description, Entry, Options};
use larch_model::schema::Schema;
use larch_proto::{AddRequest, ResultCode};
use larch_store::{Lookup, WriteTxn};

use super::assertion::PreparedAssertion;
use super::read_entry::ReadControls;
use super::{
    check_in_naming_context, check_naming_attributes, check_special, equality_key, userpassword, Target,
    WriteContext,
};
use crate::controls::{RequestControls, ResponseControl};
use crate::error::OpError;
use crate::hooks::{NewState, PendingWrite, WriteKind};
use crate::ppolicy::NewPassword;

/// An Add ready for the writer thread.
#[derive(Debug, Clone)]
pub struct PreparedAdd {
    /// The entry, checked against the schema, its RDN values present.
    entry: Entry,
    /// What the schema check found (the structural class).
    checked: CheckedEntry,
    /// The DN is a configured suffix: no parent entry needed.
    naming_context: bool,
    assertion: Option<PreparedAssertion>,
    reads: ReadControls,
    /// What the password policy needs to know of the entry's userPassword.
    password: Option<NewPassword>,
}

/// Parses and checks an AddRequest (see the module documentation).
pub fn prepare_add(
    ctx: &WriteContext<'_>,
    req: &AddRequest<'_>,
    controls: &RequestControls<'_>,
) -> Result<PreparedAdd, OpError> {
    let dir = ctx.dir;
    dir.check_writable()?;
    let schema = &*dir.schema;
    let dn = Dn::parse(req.entry)?;
    // A DN of known types that still cannot be normalized uses a type that cannot name an
    // entry (no equality rule): slapd answers namingViolation there, invalidDNSyntax for
    // an unknown type.
    let norm = NormDn::normalize(&dn, schema).map_err(|e| {
        let known = dn
            .rdns
            .iter()
            .flat_map(|r| &r.avas)
            .all(|a| schema.attribute_type(&a.attr).is_some());
        let code = if known {
            ResultCode::NAMING_VIOLATION
        } else {
            ResultCode::INVALID_DN_SYNTAX
        };
        OpError::new(code, format!("`{dn}`: {e}"))
    })?;
    let shown = dn.to_string();
    check_special(dir, &norm, &shown, Target::Add)?;
    if req.attributes.is_empty() {
        return Err(OpError::protocol(format!(
            "add of `{shown}`: no attributes provided"
        )));
    }
    let mut entry = Entry::new(dn, norm);
    for a in req.attributes.iter() {
        let (ty, options) = resolve_description(a.description, schema)?;
        for v in a.values.iter() {
            entry.push_value(ty, &options, v.to_vec());
        }
    }
    add_rdn_values(&mut entry, schema)?;
    check_in_naming_context(dir, &entry.norm_dn, &shown)?;
    for a in &entry.attrs {
        check_user_modifiable(a.ty, schema)?;
    }
    let checked = check_entry(&entry, schema)?;
    let naming_context = dir.suffixes.contains(&entry.norm_dn);
    ctx.check_early(|access, version| access.check_add(version, &entry, naming_context))?;
    let password = userpassword::prepare_entry(ctx, &mut entry, &shown)?;
    Ok(PreparedAdd {
        password,
        naming_context,
        entry,
        checked,
        assertion: PreparedAssertion::new(controls, schema),
        reads: ReadControls::new(controls, schema, &dir.optypes),
    })
}

/// Checks the RDN's types and adds the RDN values the entry lacks (slapd's
/// `entry_naming_check` with `add_naming`).
fn add_rdn_values(entry: &mut Entry, schema: &Schema) -> Result<(), OpError> {
    let Some(rdn) = entry.dn.rdns.first().cloned() else {
        return Ok(());
    };
    check_naming_attributes(&rdn.avas, schema)?;
    let none = Options::none();
    for ava in &rdn.avas {
        let naming = |msg: String| OpError::new(ResultCode::NAMING_VIOLATION, msg);
        let Some(t) = schema.attribute_type(&ava.attr) else {
            return Err(naming(format!("naming attribute `{}` is not defined", ava.attr)));
        };
        let Some(want) = equality_key(schema, t.id, &ava.value) else {
            return Err(naming(format!(
                "value of naming attribute `{}` is invalid",
                ava.attr
            )));
        };
        match entry.attribute(t.id, &none) {
            Some(a)
                if a.values
                    .iter()
                    .any(|v| equality_key(schema, t.id, v).as_ref() == Some(&want)) => {}
            Some(a) if t.single_value && !a.values.is_empty() => {
                return Err(naming(format!(
                    "value of single-valued naming attribute `{}` conflicts with value present in entry",
                    ava.attr
                )))
            }
            _ => entry.push_value(t.id, &none, ava.value.clone()),
        }
    }
    Ok(())
}

/// Adds the entry (see the module documentation). Returns the response controls.
pub fn apply_add(
    txn: &mut WriteTxn<'_>,
    ctx: &WriteContext<'_>,
    op: PreparedAdd,
) -> Result<Vec<ResponseControl>, OpError> {
    let dir = ctx.dir;
    let PreparedAdd {
        entry,
        checked,
        naming_context,
        assertion,
        reads,
        password,
    } = op;
    // The new state and the hooks first (the operational attributes), so that access
    // control and the assertion see the entry as it will be stored (see `crate::hooks`).
    let state = NewState::Add {
        entry,
        checked,
        naming_context,
    };
    let hook_ctx = ctx.hook_context();
    let mut write = PendingWrite::new(WriteKind::Add, state, &hook_ctx).with_password(password);
    dir.hooks.before_change(&mut write, txn.version(), &hook_ctx)?;
    let Some(entry) = write.state.entry() else {
        return Err(OpError::new(ResultCode::OTHER, "a hook removed the entry to add"));
    };
    if let Some(a) = &assertion {
        a.check_new(entry, &dir.optypes, &dir.schema)?;
    }
    let shown = entry.dn.to_string();
    let version = txn.version();
    let access = ctx.access(version);
    if version.find(&entry.norm_dn).is_some() {
        return Err(OpError::new(
            ResultCode::ENTRY_ALREADY_EXISTS,
            format!("entry `{shown}` already exists"),
        ));
    }
    if !naming_context {
        if let Some(parent) = entry.norm_dn.parent() {
            if let Lookup::Missing { matched } = version.lookup(&parent) {
                let parent_shown = entry.dn.parent().map(|p| p.to_string()).unwrap_or_default();
                return Err(OpError {
                    matched_dn: access.matched_dn(version, matched),
                    ..OpError::new(
                        ResultCode::NO_SUCH_OBJECT,
                        format!("cannot add `{shown}`: the parent entry `{parent_shown}` does not exist"),
                    )
                });
            }
        }
    }
    access.check_add(version, entry, naming_context)?;
    let id = dir.hooks.commit(txn, &write, &hook_ctx)?;
    Ok(reads
        .post_read(txn.version(), id, &dir.optypes, &access)?
        .into_iter()
        .collect())
}
