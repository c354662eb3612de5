//! The writer's transaction: changes to the next version, each logged as a WAL record.
//!
//! Each method is atomic on its own: it checks everything (the tree: parent, name, leaf;
//! the caller has already checked the entry against the schema) before it changes
//! anything, so a refused change leaves no trace. A closure making several changes (a
//! subtree delete, a write whose hooks change other entries) takes a [`Savepoint`] first
//! and returns to it when a later change is refused ([`WriteTxn::rollback_to`]): the
//! version and the batch's log records are as they were, so none of its changes is
//! published or logged.
//!
//! Cost of a savepoint: a clone of the version's roots (a few reference counts and the
//! small vector of attribute indexes); afterwards, the first change to each node still
//! shared with the savepoint copies that node (copy-on-write), where it would otherwise
//! have been changed in place. Callers take one only when they will make more than one
//! change.
//!
//! Replay (`apply_change`) runs the same methods on the logged records, so a replayed log
//! puts the directory in exactly the state it had: IDs are assigned in the same order from
//! the same starting point, and records carry the entry's full attribute list.

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::{StoredEntry, StoredRef};

use crate::error::StoreError;
use crate::feed::EntryStates;
use crate::record::{EntryId, EntryRecord};
use crate::version::{rdn_parts, Lookup, Version};
use crate::wal::record::Change;
use crate::wal::{LogRecord, MAX_RECORD_PAYLOAD};

/// The writer's view of the next version, handed to write closures.
pub struct WriteTxn<'a> {
    pub(crate) version: &'a mut Version,
    /// The WAL records of the changes made, in order (the writer marks each job's records
    /// as one commit unit).
    pub(crate) log: &'a mut Vec<LogRecord>,
    pub(crate) scratch: &'a mut Vec<u8>,
    /// The changes themselves, one per payload, with the entry's records before and after
    /// (reference counts on the records the versions hold), kept only when the change feed
    /// has subscribers (`keep_changes`); otherwise each is dropped once encoded, as it
    /// always was.
    pub(crate) changes: &'a mut Vec<(Change, EntryStates)>,
    pub(crate) keep_changes: bool,
}

/// A state of a transaction to return to (see the module documentation).
#[derive(Debug)]
pub struct Savepoint {
    version: Version,
    log_len: usize,
    changes_len: usize,
}

impl Savepoint {
    /// The directory as it was when the savepoint was taken.
    pub fn version(&self) -> &Version {
        &self.version
    }
}

impl WriteTxn<'_> {
    /// A point to return to if a later change must be undone.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            version: self.version.clone(),
            log_len: self.log.len(),
            changes_len: self.changes.len(),
        }
    }

    /// Undoes every change made since `savepoint` was taken: the version and the log
    /// records of the batch are as they were then.
    pub fn rollback_to(&mut self, savepoint: Savepoint) {
        *self.version = savepoint.version;
        self.log.truncate(savepoint.log_len);
        self.changes.truncate(savepoint.changes_len);
    }

    /// The directory as it is now, with every earlier change of this batch applied.
    pub fn version(&self) -> &Version {
        self.version
    }

    /// True when this transaction has made a change.
    pub fn changed(&self) -> bool {
        !self.log.is_empty()
    }

    /// Logs one applied change: its payload for the log, the change itself and the
    /// entry's states for the feed. `before` is the entry's record before the change;
    /// the record after is the one the version now holds at `id` (`None`: deleted).
    fn logged(
        &mut self,
        record: Vec<u8>,
        change: Change,
        id: EntryId,
        before: Option<EntryRecord>,
        described: Option<&StoredEntry>,
    ) {
        self.log.push(LogRecord::single(record));
        if self.keep_changes {
            let states = EntryStates {
                before,
                after: self.version.entries.get(id).cloned(),
                described: described.cloned(),
            };
            self.changes.push((change, states));
        }
    }

    /// The record of entry `id` as it is now, when the feed keeps the entries' states.
    fn record_before(&self, id: EntryId) -> Option<EntryRecord> {
        if self.keep_changes {
            self.version.entries.get(id).cloned()
        } else {
            None
        }
    }

    /// The parent ID for an entry named `norm_dn`: its parent entry when it exists (even
    /// for a naming context, so replay, which cannot know the flag, decides the same), else
    /// 0 for a naming context, else `NoSuchParent`.
    fn parent_for(&self, norm_dn: &NormDn, naming_context: bool) -> Result<EntryId, StoreError> {
        match norm_dn.parent().map(|p| self.version.find(&p)) {
            Some(Some(id)) => Ok(id),
            _ if naming_context => Ok(0),
            _ => Err(StoreError::NoSuchParent),
        }
    }

    /// Adds an entry. Its parent must exist, unless `naming_context` (a configured suffix
    /// whose parent is not held here). Returns the new ID.
    pub fn add(
        &mut self,
        dn: &Dn,
        norm_dn: &NormDn,
        attrs: &StoredEntry,
        naming_context: bool,
    ) -> Result<EntryId, StoreError> {
        let parent = self.parent_for(norm_dn, naming_context)?;
        let (rdn, norm_rdn) = rdn_parts(dn, norm_dn, parent == 0);
        let (record, change) = checked(Change::Add {
            dn: dn.to_string(),
            attributes_ber: attrs.to_attributes_ber(self.version.schema()),
        })?;
        let id = self
            .version
            .add(parent, &rdn, &norm_rdn, attrs.as_ref(), self.scratch)?;
        self.logged(record, change, id, None, None);
        Ok(id)
    }

    /// Replaces the attributes of entry `id`.
    pub fn modify(&mut self, id: EntryId, attrs: &StoredEntry) -> Result<(), StoreError> {
        let (record, change) = checked(Change::Modify {
            dn: self.version.dn(id),
            attributes_ber: attrs.to_attributes_ber(self.version.schema()),
        })?;
        let before = self.record_before(id);
        self.version.replace(id, attrs.as_ref(), self.scratch)?;
        self.logged(record, change, id, before, None);
        Ok(())
    }

    /// Deletes entry `id`, which must be a leaf. Its log record carries no attributes
    /// (see [`WriteTxn::delete_with`]).
    pub fn delete(&mut self, id: EntryId) -> Result<(), StoreError> {
        let change = Change::Delete {
            dn: self.version.dn(id),
            attributes_ber: Vec::new(),
        };
        let before = self.record_before(id);
        self.version.delete(id, self.scratch)?;
        self.logged(change.to_vec(), change, id, before, Some(&StoredEntry::default()));
        Ok(())
    }

    /// Deletes entry `id`, which must be a leaf, logging `attrs` with the delete: attributes
    /// that describe the operation (for the server: the deleted entry's entryUUID and the
    /// delete's entryCSN, modifiersName and modifyTimestamp), which the store does not
    /// interpret. Replay ignores them; the change feed and the log carry them to whoever
    /// needs the delete's identity and stamp.
    pub fn delete_with(&mut self, id: EntryId, attrs: &StoredEntry) -> Result<(), StoreError> {
        let (record, change) = checked(Change::Delete {
            dn: self.version.dn(id),
            attributes_ber: attrs.to_attributes_ber(self.version.schema()),
        })?;
        let before = self.record_before(id);
        self.version.delete(id, self.scratch)?;
        self.logged(record, change, id, before, Some(attrs));
        Ok(())
    }

    /// Renames entry `id` to `new_dn` (moving it when the parent differs) with the given
    /// attributes (the caller has added or removed RDN values). A naming context can be
    /// renamed only to another naming context (`naming_context`).
    pub fn rename(
        &mut self,
        id: EntryId,
        new_dn: &Dn,
        new_norm_dn: &NormDn,
        attrs: &StoredEntry,
        naming_context: bool,
    ) -> Result<(), StoreError> {
        let old_dn = self.version.dn(id);
        let parent = self.parent_for(new_norm_dn, naming_context)?;
        let (rdn, norm_rdn) = rdn_parts(new_dn, new_norm_dn, parent == 0);
        let (record, change) = checked(Change::ModifyDn {
            dn: old_dn,
            new_dn: new_dn.to_string(),
            attributes_ber: attrs.to_attributes_ber(self.version.schema()),
        })?;
        let before = self.record_before(id);
        self.version
            .rename(id, parent, &rdn, &norm_rdn, attrs.as_ref(), self.scratch)?;
        self.logged(record, change, id, before, None);
        Ok(())
    }
}

/// Encodes a change, refusing one too large for a log record before anything is changed;
/// hands the change back for the feed.
fn checked(change: Change) -> Result<(Vec<u8>, Change), StoreError> {
    let payload = change.to_vec();
    if payload.len() > MAX_RECORD_PAYLOAD {
        return Err(StoreError::TooLarge { len: payload.len() });
    }
    Ok((payload, change))
}

/// Applies one logged change (replay at startup).
pub(crate) fn apply_change(
    version: &mut Version,
    change: &Change,
    scratch: &mut Vec<u8>,
) -> Result<(), String> {
    let schema = std::sync::Arc::clone(&version.shared.schema);
    let parse = |dn: &str| -> Result<(Dn, NormDn), String> {
        NormDn::parse(dn.as_bytes(), &*schema).map_err(|e| format!("DN `{dn}`: {e}"))
    };
    let attrs = |ber: &[u8]| StoredEntry::from_attributes_ber(ber, &schema).map_err(|e| e.to_string());
    let find = |version: &Version, norm: &NormDn| -> Result<EntryId, String> {
        version
            .find(norm)
            .ok_or_else(|| format!("entry `{norm}` does not exist"))
    };
    // A logged entry whose parent is not held here was added as a naming context.
    let parent_of = |version: &Version, norm: &NormDn| match norm.parent() {
        Some(p) => match version.lookup(&p) {
            Lookup::Found(id) => id,
            Lookup::Missing { .. } => 0,
        },
        None => 0,
    };
    match change {
        Change::Add { dn, attributes_ber } => {
            let (dn, norm) = parse(dn)?;
            let stored = attrs(attributes_ber)?;
            let parent = parent_of(version, &norm);
            let (rdn, norm_rdn) = rdn_parts(&dn, &norm, parent == 0);
            version
                .add(parent, &rdn, &norm_rdn, stored.as_ref(), scratch)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        Change::Modify { dn, attributes_ber } => {
            let (_, norm) = parse(dn)?;
            let stored = attrs(attributes_ber)?;
            let id = find(version, &norm)?;
            version
                .replace(id, stored.as_ref(), scratch)
                .map_err(|e| e.to_string())
        }
        // The delete's attributes describe the operation; replay has no use for them.
        Change::Delete { dn, .. } => {
            let (_, norm) = parse(dn)?;
            let id = find(version, &norm)?;
            version.delete(id, scratch).map_err(|e| e.to_string())
        }
        Change::ModifyDn {
            dn,
            new_dn,
            attributes_ber,
        } => {
            let (_, norm) = parse(dn)?;
            let id = find(version, &norm)?;
            let (new_dn, new_norm) = parse(new_dn)?;
            let stored: StoredEntry = attrs(attributes_ber)?;
            let parent = parent_of(version, &new_norm);
            let (rdn, norm_rdn) = rdn_parts(&new_dn, &new_norm, parent == 0);
            let view: StoredRef<'_> = stored.as_ref();
            version
                .rename(id, parent, &rdn, &norm_rdn, view, scratch)
                .map_err(|e| e.to_string())
        }
    }
}
