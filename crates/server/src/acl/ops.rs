//! The access checks of each operation, as OpenLDAP's back-mdb makes them, and their
//! refusals (`insufficientAccessRights`, 50, naming the requester, the DN and the
//! attribute):
//! - Add: `add` on the parent's `children` (the root's, for a naming context) and on the
//!   new entry's `entry`;
//! - Delete: `delete` on the parent's `children` and on the entry's `entry` (each entry of
//!   a subtree delete);
//! - Modify: per change, on its attribute type: `add` for add, `delete` for delete,
//!   `delete` and (with values) `add` for replace, `increment` for increment; a Modify
//!   with no change (it still sets modifiersName, modifyTimestamp and entryCSN): `write`
//!   on the entry's `entry`, so that a client who may change nothing of an entry cannot
//!   stamp it with its name (slapd checks only the changes listed, and lets it);
//! - Modify DN: `write` on the entry's `entry`; on the old parent's `children` `write`, or
//!   `delete` when a new superior is given, which needs `add` on its `children`; `add` on
//!   each type of the new RDN and, with deleteOldRDN, `delete` on each type of an old RDN
//!   value that goes;
//! - Compare: `compare` on the asserted type, else `insufficientAccessRights`, or
//!   `noSuchObject` when the requester may not even know the entry exists (no `disclose`
//!   on `entry`), as slapd answers;
//! - pre-read and post-read (and search results): `read` on `entry` and on each attribute.
//!
//! Where the checks run: an update is checked when it is prepared on the connection (an
//! early refusal that costs the writer nothing) and again inside the write transaction,
//! on the version the change applies to. The second check is the one that counts: the
//! rules look at entries that may change in between (the parent, a rule's filter, group
//! membership), and only the transaction's version is the one the change is made to.

use larch_model::dn::NormDn;
use larch_model::entry::{resolve_description, Entry, StoredRef};
use larch_model::schema::AttributeTypeId;
use larch_proto::{Change, ModifyOperation, ResultCode, SeqOf};
use larch_store::{EntryId, Lookup, Version};

use super::entry::{EntryAccess, Target};
use super::rule::{Privileges, What};
use super::{AccessRules, Requester};
use crate::client::Client;
use crate::error::OpError;
use crate::identity::Identity;

/// One operation's access checks: the rules, the requester decided against them, and
/// the identity (for messages).
#[derive(Debug)]
pub struct OpAccess<'a> {
    /// The rules.
    pub rules: &'a AccessRules,
    /// The requester.
    pub requester: Requester,
    identity: &'a Identity,
}

/// How a privilege is named in a refusal.
fn privilege_name(p: Privileges) -> &'static str {
    if p == Privileges::ADD {
        "add"
    } else if p == Privileges::DELETE {
        "delete"
    } else if p == Privileges::INCREMENT {
        "increment"
    } else if p == Privileges::WRITE || p == Privileges::ADD.union(Privileges::DELETE) {
        "write"
    } else if p == Privileges::COMPARE {
        "compare"
    } else if p == Privileges::READ {
        "read"
    } else {
        "the needed"
    }
}

impl<'a> OpAccess<'a> {
    /// The checks of `identity`, connected as `client`, against `rules`, on `version`.
    pub fn new(
        rules: &'a AccessRules,
        identity: &'a Identity,
        client: &Client,
        version: &Version,
    ) -> OpAccess<'a> {
        OpAccess {
            rules,
            requester: rules.requester(identity, client, version),
            identity,
        }
    }

    /// Checks on one entry.
    pub fn entry<'t>(&'t self, target: Target<'t>) -> EntryAccess<'t> {
        EntryAccess::new(self.rules, &self.requester, target)
    }

    fn who(&self) -> String {
        match self.identity {
            Identity::Anonymous => "an anonymous client".to_string(),
            Identity::Dn { dn, .. } => format!("`{dn}`"),
        }
    }

    fn refuse(&self, need: Privileges, what: String) -> OpError {
        OpError::new(
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
            format!("{} has no {} access to {what}", self.who(), privilege_name(need)),
        )
    }

    /// `need` on `what` of `target`, else the refusal saying `about`.
    fn require(
        &self,
        target: Target<'_>,
        what: What,
        need: Privileges,
        about: impl FnOnce() -> String,
    ) -> Result<(), OpError> {
        if self.requester.is_admin() || self.entry(target).allows(what, need) {
            Ok(())
        } else {
            Err(self.refuse(need, about()))
        }
    }

    /// `need` on the `children` of the parent `parent` of an entry (0: the root above the
    /// naming contexts).
    fn require_children(
        &self,
        version: &Version,
        parent: EntryId,
        need: Privileges,
        parent_shown: impl FnOnce() -> String,
    ) -> Result<(), OpError> {
        let root = NormDn::root();
        let target = if parent == 0 {
            Target::Named {
                dn: &root,
                written: None,
                attrs: StoredRef::default(),
                schema: version.schema(),
            }
        } else {
            Target::Stored { version, id: parent }
        };
        self.require(target, What::Children, need, || {
            let p = parent_shown();
            if p.is_empty() {
                "the root (to add or remove a naming context)".to_string()
            } else {
                format!("the children of `{p}`")
            }
        })
    }

    /// Add: `add` on the parent's `children` (when the parent exists in `version`; a
    /// missing parent is the caller's noSuchObject) and on the new entry.
    pub fn check_add(&self, version: &Version, entry: &Entry, naming_context: bool) -> Result<(), OpError> {
        if self.requester.is_admin() {
            return Ok(());
        }
        let parent = if naming_context {
            Some(0)
        } else {
            match entry.norm_dn.parent().map(|p| version.lookup(&p)) {
                Some(Lookup::Found(p)) => Some(p),
                _ => None,
            }
        };
        if let Some(p) = parent {
            self.require_children(version, p, Privileges::ADD, || {
                entry.dn.parent().map(|d| d.to_string()).unwrap_or_default()
            })?;
        }
        let stored = entry.to_stored();
        self.require(
            Target::Named {
                dn: &entry.norm_dn,
                written: Some(&entry.dn),
                attrs: stored.as_ref(),
                schema: version.schema(),
            },
            What::Entry,
            Privileges::ADD,
            || format!("the new entry `{}`", entry.dn),
        )
    }

    /// Delete of entry `id`: `delete` on its parent's `children` and on the entry.
    pub fn check_delete(&self, version: &Version, id: EntryId) -> Result<(), OpError> {
        if self.requester.is_admin() {
            return Ok(());
        }
        let Some(e) = version.entry(id) else {
            return Ok(());
        };
        let parent = e.parent();
        self.require_children(version, parent, Privileges::DELETE, || version.dn(parent))?;
        self.require(
            Target::Stored { version, id },
            What::Entry,
            Privileges::DELETE,
            || format!("entry `{}`", version.dn(id)),
        )
    }

    /// Modify of entry `id` with `changes` (see the module documentation).
    pub fn check_modify(
        &self,
        version: &Version,
        id: EntryId,
        changes: SeqOf<'_, Change<'_>>,
    ) -> Result<(), OpError> {
        if self.requester.is_admin() {
            return Ok(());
        }
        if changes.iter().next().is_none() {
            return self.require(
                Target::Stored { version, id },
                What::Entry,
                Privileges::WRITE,
                || format!("entry `{}` (a modify with no change)", version.dn(id)),
            );
        }
        let mut access = self.entry(Target::Stored { version, id });
        for change in changes.iter() {
            let m = &change.modification;
            let Ok((ty, _)) = resolve_description(m.description, version.schema()) else {
                continue;
            };
            let need = match change.operation {
                ModifyOperation::Add => Privileges::ADD,
                ModifyOperation::Delete => Privileges::DELETE,
                ModifyOperation::Replace if m.values.is_empty() => Privileges::DELETE,
                ModifyOperation::Replace => Privileges::ADD.union(Privileges::DELETE),
                ModifyOperation::Increment => Privileges::INCREMENT,
            };
            if !access.allows(What::Attribute(ty), need) {
                let name = version.schema().attribute_type_by_id(ty).map_or_else(
                    || String::from_utf8_lossy(m.description).into_owned(),
                    |t| t.name().to_string(),
                );
                return Err(self.refuse(need, format!("attribute `{name}` of `{}`", version.dn(id))));
            }
        }
        Ok(())
    }

    /// Modify DN of entry `id` (see the module documentation): `new_parent` is `None`
    /// when the entry stays under its parent, `Some(Some(p))` when it moves under `p` (0:
    /// the root), `Some(None)` when it moves under a superior that does not exist (the
    /// caller answers noSuchObject); `added` are the types of the new RDN, `removed` those
    /// of old RDN values that go.
    pub fn check_rename(
        &self,
        version: &Version,
        id: EntryId,
        new_parent: Option<Option<EntryId>>,
        added: &[AttributeTypeId],
        removed: &[AttributeTypeId],
    ) -> Result<(), OpError> {
        if self.requester.is_admin() {
            return Ok(());
        }
        let Some(e) = version.entry(id) else {
            return Ok(());
        };
        let shown = || version.dn(id);
        let parent = e.parent();
        let parent_need = if new_parent.is_some() {
            Privileges::DELETE
        } else {
            Privileges::WRITE
        };
        self.require_children(version, parent, parent_need, || version.dn(parent))?;
        self.require(
            Target::Stored { version, id },
            What::Entry,
            Privileges::WRITE,
            || format!("entry `{}`", shown()),
        )?;
        if let Some(Some(np)) = new_parent {
            self.require_children(version, np, Privileges::ADD, || {
                if np == 0 {
                    String::new()
                } else {
                    version.dn(np)
                }
            })?;
        }
        let mut access = self.entry(Target::Stored { version, id });
        for (types, need) in [(added, Privileges::ADD), (removed, Privileges::DELETE)] {
            for &ty in types {
                if !access.allows(What::Attribute(ty), need) {
                    let name = version.schema().attribute_type_by_id(ty).map_or("", |t| t.name());
                    return Err(self.refuse(need, format!("attribute `{name}` of `{}` (its RDN)", shown())));
                }
            }
        }
        Ok(())
    }

    /// The matchedDN of a name that does not exist in `version`, whose deepest existing
    /// ancestor is `matched`: that entry's DN when the requester has `disclose` on it,
    /// else empty, as in a search (and as slapd's back-monitor and back-sql answer): the
    /// error does not name an entry the requester may not know of.
    pub fn matched_dn(&self, version: &Version, matched: Option<EntryId>) -> String {
        match matched {
            Some(m)
                if self.requester.is_admin()
                    || self
                        .entry(Target::Stored { version, id: m })
                        .allows(What::Entry, Privileges::DISCLOSE) =>
            {
                version.dn(m)
            }
            _ => String::new(),
        }
    }

    /// Compare of type `ty` on entry `id`, named `shown` in the request.
    pub fn check_compare(
        &self,
        version: &Version,
        id: EntryId,
        ty: AttributeTypeId,
        shown: &str,
    ) -> Result<(), OpError> {
        if self.requester.is_admin() {
            return Ok(());
        }
        let mut access = self.entry(Target::Stored { version, id });
        if access.allows(What::Attribute(ty), Privileges::COMPARE) {
            return Ok(());
        }
        if !access.allows(What::Entry, Privileges::DISCLOSE) {
            return Err(OpError::no_such_object(shown, ""));
        }
        let name = version.schema().attribute_type_by_id(ty).map_or("", |t| t.name());
        Err(self.refuse(Privileges::COMPARE, format!("attribute `{name}` of `{shown}`")))
    }
}

/// The access check of a simple Bind as `identity` (just authenticated against
/// `userPassword`): the client, anonymous until the Bind succeeds (as slapd evaluates it),
/// needs `auth` on the entry's `userPassword`; else `invalidCredentials` (49), the answer
/// every failed Bind gets. The configured admin is exempt (as OpenLDAP's rootdn), so no
/// rule set can lock it out. `entry` is the entry the bind found, when the caller has it
/// (entry IDs are never reused, so a newer `version` holds the same entry or none); else
/// the identity's DN is looked up.
pub fn check_bind(
    rules: &AccessRules,
    version: &Version,
    identity: &Identity,
    entry: Option<EntryId>,
    client: &Client,
    user_password: AttributeTypeId,
) -> Result<(), OpError> {
    let Identity::Dn {
        norm, admin: false, ..
    } = identity
    else {
        return Ok(());
    };
    let anonymous = Identity::Anonymous;
    let requester = rules.requester(&anonymous, client, version);
    let allowed = entry.or_else(|| version.find(norm)).is_some_and(|id| {
        EntryAccess::new(rules, &requester, Target::Stored { version, id })
            .allows(What::Attribute(user_password), Privileges::AUTH)
    });
    if allowed {
        Ok(())
    } else {
        Err(OpError::new(
            ResultCode::INVALID_CREDENTIALS,
            "invalid credentials",
        ))
    }
}
