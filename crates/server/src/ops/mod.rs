//! The update operations (Add, Delete, Modify, Modify DN) and Compare, as RFC 4511
//! sections 4.6 to 4.10 define them, with OpenLDAP slapd's choices where the RFC is silent.
//!
//! Each update runs in two halves:
//! 1. `prepare_*` runs on the connection: it first refuses every write with `unavailable`
//!    (52) once the store has stopped accepting writes ([`Directory::check_writable`]: its
//!    write-ahead log failed), then parses the request (DNs, attribute descriptions, the
//!    new RDN), applies every rule that needs no current data (the root
//!    DSE and the subschema subentry cannot be written, the DN must lie within a naming
//!    context, NO-USER-MODIFICATION attributes are refused, an added entry passes the
//!    schema check), compiles the Assertion control's filter and reads the pre-read and
//!    post-read attribute lists. The result owns its data (`Send + 'static`): the request
//!    PDU's buffer is reused as soon as the connection reads the next request.
//! 2. `apply_*` runs on the store's single writer thread inside a [`WriteTxn`]: it looks
//!    the entry up in the current version, checks the assertion, computes the entry's new
//!    state completely, takes the operation's time and CSN ([`OpStamp::now`], so CSNs follow
//!    commit order), and only then makes its one change to the store (a subtree delete makes
//!    one per entry, after every check has passed).
//!
//! Invariants:
//! - a `WriteTxn` has no rollback, so an `apply_*` that returns an error has changed
//!   nothing: every check precedes the first change, and the store's own checks (parent,
//!   name, leaf) run before it changes anything;
//! - failures are [`OpError`]s carrying the RFC 4511 result code and, for
//!   `noSuchObject`, the DN of the deepest existing ancestor as matchedDN when the
//!   requester has `disclose` on it (`OpAccess::matched_dn`), else none;
//! - responses are not written here: `apply_*` returns the response controls (pre-read,
//!   post-read) and the connection encodes the result;
//! - referrals are decided before these functions are called; access control
//!   ([`crate::acl::ops`]) is checked twice: early in `prepare_*`, on the store's current
//!   version (a refusal there costs the writer nothing), and again in `apply_*` on the
//!   transaction's version, which is the check that counts (the parent, a rule's filter and
//!   group membership may change in between). Both come before any change.
//!
//! Compare ([`compare::compare`]) is a read: it runs inline on a [`Version`]. The Password
//! Modify extended operation ([`password_modify`], RFC 3062) is a write in the same two
//! halves; userPassword values of Add and Modify are hashed in [`userpassword`].
//!
//! [`WriteTxn`]: larch_store::WriteTxn
//! [`OpStamp::now`]: crate::opattrs::OpStamp::now
//! [`Version`]: larch_store::Version

pub mod add;
pub mod assertion;
pub mod compare;
pub mod delete;
pub mod modify;
pub mod modify_dn;
pub mod password_modify;
pub mod read_entry;
pub mod userpassword;

pub use add::{apply_add, prepare_add, PreparedAdd};
pub use compare::compare;
pub use delete::{apply_delete, prepare_delete, PreparedDelete, MAX_SUBTREE_DELETE};
pub use modify::{apply_modify, prepare_modify, PreparedModify};
pub use modify_dn::{apply_modify_dn, prepare_modify_dn, PreparedModifyDn};
pub use password_modify::{apply_password_modify, prepare_password_modify, PreparedPasswordModify};

use larch_model::dn::{Ava, NormDn};
use larch_model::schema::Schema;
use larch_proto::ResultCode;
use larch_store::{EntryId, Lookup, Version};

use crate::acl::ops::OpAccess;
use crate::client::Client;
use crate::directory::Directory;
use crate::error::OpError;
use crate::hooks::HookContext;
use crate::identity::Identity;
use crate::opattrs::SUBSCHEMA_SUBENTRY_DN;

/// What an update needs besides its request: the shared directory and who asks.
#[derive(Debug, Clone, Copy)]
pub struct WriteContext<'a> {
    /// The directory (configuration, schema, store, CSN generator).
    pub dir: &'a Directory,
    /// The identity the operation runs as (creatorsName, modifiersName).
    pub identity: &'a Identity,
    /// The client at the other end of the connection.
    pub client: &'a Client,
}

impl WriteContext<'_> {
    /// What the write hooks are told of this context ([`HookContext`]).
    pub fn hook_context(&self) -> HookContext<'_> {
        HookContext {
            schema: &self.dir.schema,
            optypes: &self.dir.optypes,
            csn: &self.dir.csn,
            identity: self.identity,
            client: self.client,
            access: &self.dir.acl,
        }
    }

    /// The access checks of this context's requester on `version`.
    pub(crate) fn access<'v>(&'v self, version: &Version) -> OpAccess<'v> {
        OpAccess::new(&self.dir.acl, self.identity, self.client, version)
    }

    /// The early access check of a `prepare_*`: `check` on the store's current version,
    /// skipped for the admin (who may do everything; it saves taking the version).
    pub(crate) fn check_early(
        &self,
        check: impl FnOnce(&OpAccess<'_>, &Version) -> Result<(), OpError>,
    ) -> Result<(), OpError> {
        if self.identity.is_admin() {
            return Ok(());
        }
        let version = self.dir.store.current();
        check(&self.access(&version), &version)
    }
}

/// The operation a DN check is made for; it chooses slapd's wording of the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Add,
    Delete,
    Modify,
    Rename,
}

/// Refuses what no update can target, before any lookup: the root DSE and the subschema
/// subentry (`entryAlreadyExists` for an Add, as slapd answers, else `unwillingToPerform`),
/// and a DN outside every naming context (`unwillingToPerform`, slapd's "no global superior
/// knowledge": this server holds no entry there and knows no server that does).
pub(crate) fn check_target(dir: &Directory, norm: &NormDn, shown: &str, op: Target) -> Result<(), OpError> {
    check_special(dir, norm, shown, op)?;
    check_in_naming_context(dir, norm, shown)
}

/// The first half of [`check_target`]: the root DSE and the subschema subentry.
pub(crate) fn check_special(dir: &Directory, norm: &NormDn, shown: &str, op: Target) -> Result<(), OpError> {
    if norm.is_root() {
        return Err(match op {
            Target::Add => OpError::new(ResultCode::ENTRY_ALREADY_EXISTS, "the root DSE already exists"),
            Target::Delete => OpError::unwilling("cannot delete the root DSE"),
            Target::Modify => OpError::unwilling("modify upon the root DSE not supported"),
            Target::Rename => OpError::unwilling("cannot rename the root DSE"),
        });
    }
    if is_subschema(norm, &dir.schema) {
        return Err(match op {
            Target::Add => OpError::new(
                ResultCode::ENTRY_ALREADY_EXISTS,
                format!("the subschema subentry `{shown}` already exists"),
            ),
            Target::Delete => OpError::unwilling(format!("cannot delete the subschema subentry `{shown}`")),
            Target::Modify => OpError::unwilling(format!(
                "modification of the subschema subentry `{shown}` not supported"
            )),
            Target::Rename => OpError::unwilling(format!("cannot rename the subschema subentry `{shown}`")),
        });
    }
    Ok(())
}

/// The second half of [`check_target`]: the DN lies within a naming context.
pub(crate) fn check_in_naming_context(dir: &Directory, norm: &NormDn, shown: &str) -> Result<(), OpError> {
    if !within_naming_context(dir, norm) {
        return Err(OpError::unwilling(format!(
            "no global superior knowledge: `{shown}` is not within a naming context of this server"
        )));
    }
    Ok(())
}

/// True when `norm` is a configured suffix or lies below one.
pub(crate) fn within_naming_context(dir: &Directory, norm: &NormDn) -> bool {
    dir.suffixes.iter().any(|s| norm.is_within(s))
}

/// True when `norm` names the subschema subentry.
fn is_subschema(norm: &NormDn, schema: &Schema) -> bool {
    NormDn::from_text(SUBSCHEMA_SUBENTRY_DN.as_bytes(), schema).is_ok_and(|s| &s == norm)
}

/// The entry named `norm` in `version`; `noSuchObject` naming `shown` when there is none,
/// with the deepest existing ancestor as matchedDN when the requester may know of it
/// ([`OpAccess::matched_dn`]).
pub(crate) fn find_entry(
    version: &Version,
    norm: &NormDn,
    shown: &str,
    access: &OpAccess<'_>,
) -> Result<EntryId, OpError> {
    match version.lookup(norm) {
        Lookup::Found(id) => Ok(id),
        Lookup::Missing { matched } => Err(OpError::no_such_object(
            shown,
            access.matched_dn(version, matched),
        )),
    }
}

/// slapd's rules for the attribute types of an RDN (`entry_naming_check`): each value in
/// string form (not `#` hex BER), each type a user attribute that is neither collective nor
/// obsolete, with an equality rule. Breaking one is a `namingViolation` (64).
pub(crate) fn check_naming_attributes(avas: &[Ava], schema: &Schema) -> Result<(), OpError> {
    let naming = |msg: String| OpError::new(ResultCode::NAMING_VIOLATION, msg);
    for ava in avas {
        let name = &ava.attr;
        if ava.hex {
            return Err(naming(format!(
                "value of naming attribute `{name}` in unsupported BER form"
            )));
        }
        let Some(t) = schema.attribute_type(name) else {
            return Err(OpError::new(
                ResultCode::UNDEFINED_ATTRIBUTE_TYPE,
                format!("naming attribute `{name}` is not defined"),
            ));
        };
        if t.is_operational() {
            return Err(naming(format!("naming attribute `{name}` is operational")));
        }
        if t.collective {
            return Err(naming(format!("naming attribute `{name}` is collective")));
        }
        if t.obsolete {
            return Err(naming(format!("naming attribute `{name}` is obsolete")));
        }
        if t.equality.is_none() {
            return Err(naming(format!(
                "naming attribute `{name}` has no equality matching rule"
            )));
        }
    }
    Ok(())
}

/// The equality key of `value` under the rule of `ty` (the octets themselves when the type
/// has no rule); `None` when the value cannot be matched.
pub(crate) fn equality_key(
    schema: &Schema,
    ty: larch_model::schema::AttributeTypeId,
    value: &[u8],
) -> Option<Vec<u8>> {
    let t = schema.attribute_type_by_id(ty)?;
    let mut key = Vec::with_capacity(value.len());
    match t.equality {
        Some(rule) => rule.normalize(value, &mut key).ok()?,
        None => key.extend_from_slice(value),
    }
    Some(key)
}
