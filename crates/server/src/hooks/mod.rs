//! The second seam of the operation pipeline: write hooks.
//!
//! Every write (Add, Delete, Modify, Modify DN, Password Modify) runs one skeleton on the
//! store's writer thread, inside the batch's [`WriteTxn`]:
//! 1. find the target (`noSuchObject` with a matched DN when it is missing);
//! 2. check access (`insufficientAccessRights`);
//! 3. check the Assertion control (`assertionFailed`);
//! 4. read the Pre-Read control's entry;
//! 5. build the new state ([`NewState`]: the entry after the change, or the entries a
//!    delete removes);
//! 6. [`WriteHooks::before_change`]: each hook of the table in order may refuse (with a
//!    result code and a message) or amend the new state; the operational attributes are
//!    the first hook;
//! 7. [`WriteHooks::commit`]: the change is made in the store's transaction, then each
//!    hook's `after_change` may change other entries in the same transaction. When more
//!    than one change is made (a subtree delete, or a hook that changes other entries), a
//!    [`larch_store::Savepoint`] is taken first and returned to on any refusal: the
//!    operation commits whole or not at all, and nothing of it is published or logged;
//! 8. read the Post-Read control's entry.
//!
//! Steps 1 to 5 and 8 belong to each operation (`crate::ops`); 6 and 7 are here. One
//! exception to the order, as in slapd (whose frontend adds the operational attributes
//! before the backend checks access): an Add's entry gets its operational attributes
//! (step 6) before steps 2 and 3, so access rules and the assertion see the entry as it
//! will be stored.
//!
//! The hook table (the order in which hooks run), as slapd documents its overlays:
//!
//! | hook | file | before_change | after_change |
//! | --- | --- | --- | --- |
//! | operational attributes | `opattrs.rs` | createTimestamp, creatorsName, entryUUID, entryCSN, structuralObjectClass (Add); modifyTimestamp, modifiersName, entryCSN (Modify, Modify DN, Password Modify); the attributes logged with a delete (entryUUID, entryCSN, modifiersName, modifyTimestamp) | none |
//! | password policy (`password_policy.enabled`) | `ppolicy.rs` | a password change's rules (quality and length, history, minimum age, safe modify, user change allowed; the history and minimum age against the entry as the transaction holds it) and the state it records (pwdChangedTime, pwdHistory, pwdReset; failures, lock, delay, pwdLastSuccess and grace logins cleared) | none |
//! | uniqueness (`[uniqueness]`) | `unique.rs` | refuses (`constraintViolation`) an Add, Modify or Modify DN that gives a unique attribute a value another entry of the same subtree (of one `[uniqueness]` rule) holds | none |
//! | referential integrity (`groups.referential_integrity`) | `refint.rs` | none | a deleted entry's DN out of every member value; a renamed subtree's DNs renamed in them |
//! | memberUid (`groups.sync_member_uid`) | `member_uid.rs` | a POSIX group's `memberUid` and `member` (or `uniqueMember`) in step with each other (Add, Modify of the group) | the `memberUid` of the groups listing an entry added, renamed, deleted or whose `uid` changed; the members of the groups whose `memberUid` names a `uid` an entry gained |
//! | memberOf (`groups.member_of`) | `member_of.rs` | a new entry's memberOf and transitiveMemberOf: the groups already listing it, and their chain | the memberOf of the entry written (from the groups listing it after the hooks before) and of the entries a group added, changed, renamed or deleted lists; the transitiveMemberOf of those, of renamed entries, and of every entry whose chain holds one of them |
//!
//! Referential integrity runs before memberUid and memberOf, so that they read member
//! values that name entries as they are after the write; memberUid runs before memberOf,
//! whose values then follow the members memberUid added. The records of a write and of every entry
//! its hooks change are one commit unit of the log: replayed whole or not at all.

mod member_of;
mod member_uid;
mod opattrs;
mod ppolicy;
mod refint;
mod unique;

use std::sync::Arc;

use larch_model::entry::check::CheckedEntry;
use larch_model::entry::{Entry, StoredEntry};
use larch_model::schema::Schema;
use larch_store::{EntryId, Version, WriteTxn};

use crate::acl::AccessRules;
use crate::client::Client;
use crate::config::{ConfigError, PasswordSettings, ServerConfig};
use crate::error::OpError;
use crate::groups::GroupSchema;
use crate::identity::Identity;
use crate::opattrs::csn::CsnGenerator;
use crate::opattrs::{OpStamp, OperationalTypes};
use crate::ppolicy::{NewPassword, PasswordPolicy};

pub use member_of::MemberOf;
pub use member_uid::MemberUid;
pub use opattrs::OperationalAttributes;
pub use ppolicy::PasswordPolicyHook;
pub use refint::ReferentialIntegrity;
pub use unique::Unique;

/// The operation a write comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Add.
    Add,
    /// Delete (a subtree delete included).
    Delete,
    /// Modify.
    Modify,
    /// Modify DN.
    ModifyDn,
    /// The Password Modify extended operation.
    PasswordModify,
}

/// What a write does to the store.
#[derive(Debug)]
pub enum NewState {
    /// A new entry.
    Add {
        /// The entry.
        entry: Entry,
        /// Its schema check (the structural class).
        checked: CheckedEntry,
        /// The entry is a naming context (no parent in the directory).
        naming_context: bool,
    },
    /// Entry `id` with new attributes (Modify, Password Modify).
    Modify {
        /// The entry's ID.
        id: EntryId,
        /// The entry after the change.
        entry: Entry,
    },
    /// Entry `id` under a new name, with its attributes after the change.
    Rename {
        /// The entry's ID.
        id: EntryId,
        /// The entry after the change (its new DN).
        entry: Entry,
        /// The new name is a naming context.
        naming_context: bool,
    },
    /// Entries removed, each a leaf when its turn comes (leaves first), with the
    /// attributes logged with its delete.
    Delete {
        /// The entries, in the order they are removed.
        victims: Vec<(EntryId, StoredEntry)>,
    },
}

impl NewState {
    /// The entry the write leaves (Add, Modify, Rename), for the checks after the hooks.
    pub fn entry(&self) -> Option<&Entry> {
        match self {
            NewState::Add { entry, .. } | NewState::Modify { entry, .. } | NewState::Rename { entry, .. } => {
                Some(entry)
            }
            NewState::Delete { .. } => None,
        }
    }

    /// How many changes the store makes for it.
    fn changes(&self) -> usize {
        match self {
            NewState::Delete { victims } => victims.len(),
            _ => 1,
        }
    }
}

/// What a hook is told about a write besides its state: the parts of the directory hooks
/// read, and who makes the write. The operation builds it (`crate::ops::WriteContext`);
/// hooks know neither the directory nor the operations, so that the directory can hold the
/// hook table.
#[derive(Debug, Clone, Copy)]
pub struct HookContext<'a> {
    /// The schema.
    pub schema: &'a Schema,
    /// The IDs of the operational attribute types.
    pub optypes: &'a OperationalTypes,
    /// The CSN generator the write's stamp is taken from.
    pub csn: &'a CsnGenerator,
    /// The identity the operation runs as (after proxied authorization).
    pub identity: &'a Identity,
    /// The client at the other end of the connection.
    pub client: &'a Client,
    /// The access rules (for a hook whose message may name another entry).
    pub access: &'a AccessRules,
}

/// A write between its new state and its commit.
#[derive(Debug)]
pub struct PendingWrite {
    /// The operation.
    pub kind: WriteKind,
    /// What it does.
    pub state: NewState,
    /// Its time and CSN, taken on the writer thread so that CSNs follow commit order.
    pub stamp: OpStamp,
    /// What the operation knows of a new userPassword that the entry, where it is hashed,
    /// does not tell (for the password policy hook).
    pub password: Option<NewPassword>,
}

impl PendingWrite {
    /// A write of `kind` doing `state`, stamped now from `ctx`'s CSN generator.
    pub fn new(kind: WriteKind, state: NewState, ctx: &HookContext<'_>) -> PendingWrite {
        PendingWrite {
            kind,
            state,
            stamp: OpStamp::now(ctx.csn),
            password: None,
        }
    }

    /// The same write, with what the operation knows of its new password.
    pub fn with_password(mut self, password: Option<NewPassword>) -> PendingWrite {
        self.password = password;
        self
    }
}

/// A write once made in the transaction, as `after_change` sees it.
#[derive(Debug)]
pub struct AppliedWrite<'a> {
    /// The directory before the write (the transaction's version then; entry IDs are the
    /// same in both).
    pub before: &'a Version,
    /// The operation.
    pub kind: WriteKind,
    /// What it did.
    pub state: &'a NewState,
    /// Its stamp.
    pub stamp: &'a OpStamp,
    /// The target's ID: a new entry's; for a delete, the entry the request named (removed
    /// last).
    pub id: EntryId,
}

/// One hook of the table (see the module documentation).
pub trait WriteHook: Send + Sync + std::fmt::Debug {
    /// The hook's name, for messages.
    fn name(&self) -> &'static str;

    /// Step 6: may refuse the write or amend its new state. `version` is the
    /// transaction's, before the change.
    fn before_change(
        &self,
        _write: &mut PendingWrite,
        _version: &Version,
        _ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        Ok(())
    }

    /// True when [`WriteHook::after_change`] may change entries (a savepoint is then taken
    /// before every write).
    fn changes_other_entries(&self) -> bool {
        false
    }

    /// Step 7, after the write's own change: may change other entries in the same
    /// transaction, or refuse (the whole write is then undone).
    fn after_change(
        &self,
        _write: &AppliedWrite<'_>,
        _txn: &mut WriteTxn<'_>,
        _ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        Ok(())
    }
}

/// The hook table of a directory, in order.
#[derive(Debug, Clone)]
pub struct WriteHooks {
    list: Vec<Arc<dyn WriteHook>>,
    /// Some hook changes other entries after the write.
    changes_others: bool,
}

impl WriteHooks {
    /// The table `hooks`, in order.
    pub fn new(hooks: Vec<Arc<dyn WriteHook>>) -> WriteHooks {
        let changes_others = hooks.iter().any(|h| h.changes_other_entries());
        WriteHooks {
            list: hooks,
            changes_others,
        }
    }

    /// Larch's table with no optional hook: the operational attributes.
    pub fn standard() -> WriteHooks {
        WriteHooks::new(vec![Arc::new(OperationalAttributes)])
    }

    /// The table `config` turns on over `schema`: the operational attributes, then
    /// uniqueness where a rule lists attributes, then referential integrity, memberUid and
    /// memberOf where on (and where the schema has what they need: `memberOf`, and
    /// `member` or `uniqueMember`; for memberUid also `posixGroup`, `memberUid`, `uid`). Refused when `[uniqueness]` names what `schema` lacks.
    pub fn configured(config: &ServerConfig, schema: &Schema) -> Result<WriteHooks, ConfigError> {
        let mut hooks: Vec<Arc<dyn WriteHook>> = vec![Arc::new(OperationalAttributes)];
        let unique = config.uniqueness.rules(schema)?;
        if !unique.is_empty() {
            hooks.push(Arc::new(Unique::new(unique)));
        }
        let settings = &config.groups;
        if let Some(groups) = GroupSchema::new(schema) {
            if settings.referential_integrity {
                hooks.push(Arc::new(ReferentialIntegrity::new(
                    groups.clone(),
                    settings.empty_group_member.clone(),
                )));
            }
            let mut relisting = None;
            if settings.sync_member_uid {
                if let Some(hook) = MemberUid::new(groups.clone(), schema) {
                    relisting = Some(hook.uid());
                    hooks.push(Arc::new(hook));
                }
            }
            if settings.member_of {
                hooks.push(Arc::new(MemberOf::new(groups, relisting)));
            }
        }
        Ok(WriteHooks::new(hooks))
    }

    /// The table with the password policy hook right after the operational attributes
    /// (before the hooks that change other entries), when `policy` is on; stored
    /// passwords verify under `passwords`.
    pub fn with_password_policy(
        self,
        policy: Option<Arc<PasswordPolicy>>,
        passwords: &PasswordSettings,
    ) -> WriteHooks {
        let Some(policy) = policy else {
            return self;
        };
        let mut list = self.list;
        let at = 1.min(list.len());
        list.insert(at, Arc::new(PasswordPolicyHook::new(policy, passwords.clone())));
        WriteHooks::new(list)
    }

    /// The names of the hooks, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.list.iter().map(|h| h.name()).collect()
    }

    /// Step 6: every hook's `before_change`, in order; the first refusal ends the write.
    pub fn before_change(
        &self,
        write: &mut PendingWrite,
        version: &Version,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        for hook in &self.list {
            hook.before_change(write, version, ctx)?;
        }
        Ok(())
    }

    /// Step 7: makes the change in `txn` and runs every hook's `after_change`; all of it
    /// or none of it. Returns the target's ID.
    pub fn commit(
        &self,
        txn: &mut WriteTxn<'_>,
        write: &PendingWrite,
        ctx: &HookContext<'_>,
    ) -> Result<EntryId, OpError> {
        if !self.changes_others && write.state.changes() == 1 {
            // One change, checked by the store before it changed anything: nothing to undo.
            return apply(txn, &write.state);
        }
        let savepoint = txn.savepoint();
        let made = apply(txn, &write.state).and_then(|id| {
            if self.changes_others {
                let applied = AppliedWrite {
                    before: savepoint.version(),
                    kind: write.kind,
                    state: &write.state,
                    stamp: &write.stamp,
                    id,
                };
                for hook in &self.list {
                    hook.after_change(&applied, txn, ctx)?;
                }
            }
            Ok(id)
        });
        if made.is_err() {
            txn.rollback_to(savepoint);
        }
        made
    }
}

/// The write's own change in the store.
fn apply(txn: &mut WriteTxn<'_>, state: &NewState) -> Result<EntryId, OpError> {
    Ok(match state {
        NewState::Add {
            entry,
            naming_context,
            ..
        } => txn.add(&entry.dn, &entry.norm_dn, &entry.to_stored(), *naming_context)?,
        NewState::Modify { id, entry } => {
            txn.modify(*id, &entry.to_stored())?;
            *id
        }
        NewState::Rename {
            id,
            entry,
            naming_context,
        } => {
            txn.rename(
                *id,
                &entry.dn,
                &entry.norm_dn,
                &entry.to_stored(),
                *naming_context,
            )?;
            *id
        }
        NewState::Delete { victims } => {
            for (victim, attrs) in victims {
                txn.delete_with(*victim, attrs)?;
            }
            victims.last().map_or(0, |(id, _)| *id)
        }
    })
}

/// The owned form of entry `id` of `version` (whose attributes are `attrs`), for a hook
/// that changes it.
fn stored_entry(
    version: &Version,
    id: EntryId,
    attrs: larch_model::entry::StoredRef<'_>,
) -> Result<Entry, OpError> {
    let shown = version.dn(id);
    let dn = larch_model::dn::Dn::parse(shown.as_bytes()).map_err(|e| {
        OpError::new(
            larch_proto::ResultCode::OTHER,
            format!("the stored name `{shown}` does not parse: {e}"),
        )
    })?;
    Ok(Entry::from_stored(dn, version.norm_dn(id), attrs))
}
