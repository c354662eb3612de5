//! One immutable version of the directory, and how the writer builds the next one.
//!
//! A [`Version`] is a handful of roots of persistent structures: the entry table (ID ->
//! [`EntryRecord`]), the DN index (hash of (parent ID, normalized RDN) -> IDs), the
//! children sets (parent ID -> IDs; parent 0 holds the naming contexts), and one
//! [`AttrIndex`] per indexed type. Cloning a version clones those roots (reference counts);
//! the writer then changes its clone with copy-on-write along the paths it touches, so
//! readers holding the old version see no change and pay no lock.
//!
//! Invariants, checked by [`Version::check`] in tests:
//! 1. every record's parent is 0 or an existing entry, and parent links have no cycle;
//! 2. the children sets hold exactly the entries whose record names that parent;
//! 3. the DN index holds exactly one (parent, normalized RDN) key per entry, and no two
//!    children of one parent share a normalized RDN;
//! 4. each attribute index holds exactly the keys of the entries' current values.

use std::sync::Arc;

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::StoredRef;
use larch_model::schema::{AttributeTypeId, Schema};

use crate::error::StoreError;
use crate::idset::IdSet;
use crate::index::{set_add, set_remove, AttrIndex, EntryKeys, IndexKinds, Keyer, ResolvedIndexes};
use crate::pmap::{HashTrie, IdTable};
use crate::record::{EntryId, EntryRecord};
use crate::wal::Lsn;

/// The longest parent chain followed (a DN of more RDNs cannot be stored: adds below it
/// are refused). Bounds every walk up the tree, so a damaged table cannot loop forever.
pub const MAX_DN_DEPTH: usize = 512;

/// What every version of one store shares: the schema, the index plan and the hash key.
#[derive(Debug)]
pub struct Shared {
    /// The schema entries were checked against.
    pub schema: Arc<Schema>,
    /// The indexed types.
    pub indexes: ResolvedIndexes,
    /// The hash key of the DN and attribute indexes.
    pub keyer: Keyer,
}

/// A consistent, immutable version of the whole directory.
#[derive(Debug, Clone)]
pub struct Version {
    pub(crate) shared: Arc<Shared>,
    pub(crate) lsn: Lsn,
    pub(crate) next_id: EntryId,
    pub(crate) entries: IdTable<EntryRecord>,
    pub(crate) dn_index: HashTrie<IdSet>,
    pub(crate) children: HashTrie<IdSet>,
    pub(crate) attr: Vec<AttrIndex>,
}

/// One entry as a reader sees it.
#[derive(Debug, Clone, Copy)]
pub struct EntryView<'v> {
    /// Its ID.
    pub id: EntryId,
    record: &'v EntryRecord,
}

impl<'v> EntryView<'v> {
    /// The attributes.
    pub fn attrs(&self) -> StoredRef<'v> {
        self.record.attrs()
    }

    /// The parent's ID (0 for a naming context).
    pub fn parent(&self) -> EntryId {
        self.record.parent()
    }

    /// The RDN as written (a naming context's whole DN).
    pub fn rdn(&self) -> &'v str {
        self.record.rdn()
    }

    /// The normalized RDN (a naming context's whole normalized DN).
    pub fn norm_rdn(&self) -> &'v str {
        self.record.norm_rdn()
    }

    /// The record.
    pub fn record(&self) -> &'v EntryRecord {
        self.record
    }
}

/// The key of a parent's children set.
pub(crate) fn child_key(parent: EntryId) -> u64 {
    // Spread consecutive IDs over the trie (SplitMix64's finalizer, a bijection).
    let mut z = u64::from(parent).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Where a DN lookup stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The entry.
    Found(EntryId),
    /// Not found; the deepest existing ancestor, if any (for a result's matchedDN).
    Missing {
        /// The deepest ancestor that exists.
        matched: Option<EntryId>,
    },
}

impl Version {
    /// An empty directory.
    pub fn empty(shared: Arc<Shared>) -> Version {
        let attr = shared
            .indexes
            .iter()
            .map(|(_, kinds)| AttrIndex::new(kinds))
            .collect();
        Version {
            shared,
            lsn: 0,
            next_id: 1,
            entries: IdTable::new(),
            dn_index: HashTrie::new(),
            children: HashTrie::new(),
            attr,
        }
    }

    /// The LSN of the last change this version holds (0: none since the log began).
    pub fn lsn(&self) -> Lsn {
        self.lsn
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the directory holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// The ID the next added entry gets.
    pub fn next_id(&self) -> EntryId {
        self.next_id
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.shared.schema
    }

    /// The shared parts.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// An entry by ID.
    pub fn entry(&self, id: EntryId) -> Option<EntryView<'_>> {
        self.entries.get(id).map(|record| EntryView { id, record })
    }

    /// Every entry, in ID order.
    pub fn entries(&self) -> impl Iterator<Item = EntryView<'_>> {
        self.entries.iter().map(|(id, record)| EntryView { id, record })
    }

    /// The naming contexts (entries without a parent entry).
    pub fn naming_contexts(&self) -> IdSet {
        self.children(0)
    }

    /// The immediate children of an entry (0: the naming contexts).
    pub fn children(&self, parent: EntryId) -> IdSet {
        self.children.get(child_key(parent)).cloned().unwrap_or_default()
    }

    /// Number of immediate children (numSubordinates).
    pub fn child_count(&self, parent: EntryId) -> usize {
        self.children.get(child_key(parent)).map_or(0, IdSet::len)
    }

    /// True when the entry has children (hasSubordinates).
    pub fn has_children(&self, parent: EntryId) -> bool {
        self.child_count(parent) > 0
    }

    /// The entry and everything below it, parents before children (a depth-first walk
    /// with an explicit stack; siblings in ID order).
    pub fn subtree(&self, root: EntryId) -> Subtree<'_> {
        Subtree {
            version: self,
            stack: if self.entries.get(root).is_some() {
                vec![SubtreeFrame::One(root)]
            } else {
                Vec::new()
            },
        }
    }

    /// True when `id` is `ancestor` or below it.
    pub fn is_within(&self, id: EntryId, ancestor: EntryId) -> bool {
        let mut cur = id;
        for _ in 0..=MAX_DN_DEPTH {
            if cur == ancestor {
                return true;
            }
            match self.entries.get(cur) {
                Some(r) if r.parent() != 0 => cur = r.parent(),
                _ => return false,
            }
        }
        false
    }

    /// The records from the entry up to its naming context.
    fn chain(&self, id: EntryId) -> impl Iterator<Item = &EntryRecord> + '_ {
        let mut cur = id;
        let mut steps = 0;
        std::iter::from_fn(move || {
            if cur == 0 || steps > MAX_DN_DEPTH {
                return None;
            }
            steps += 1;
            let r = self.entries.get(cur)?;
            cur = r.parent();
            Some(r)
        })
    }

    /// The entry's DN as clients wrote its RDNs.
    pub fn dn(&self, id: EntryId) -> String {
        // Octets first and one UTF-8 check at the end: cheaper than one per RDN.
        let mut out = Vec::with_capacity(64);
        for (i, r) in self.chain(id).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(r.rdn_bytes());
        }
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// The entry's normalized DN.
    pub fn norm_dn(&self, id: EntryId) -> NormDn {
        let mut out = String::with_capacity(64);
        for (i, r) in self.chain(id).enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(r.norm_rdn());
        }
        NormDn::from_normalized(&out)
    }

    /// The child of `parent` with this normalized RDN.
    pub fn child_by_rdn(&self, parent: EntryId, norm_rdn: &str) -> Option<EntryId> {
        let set = self.dn_index.get(self.shared.keyer.dn(parent, norm_rdn))?;
        set.iter().find(|&id| {
            self.entries
                .get(id)
                .is_some_and(|r| r.parent() == parent && r.norm_rdn_bytes() == norm_rdn.as_bytes())
        })
    }

    /// Finds an entry by normalized DN: the naming context it is in, then one RDN at a
    /// time through the DN index.
    pub fn lookup(&self, dn: &NormDn) -> Lookup {
        let s = dn.as_str();
        if s.is_empty() {
            return Lookup::Missing { matched: None };
        }
        // The naming context: the longest one that is `s` or a suffix of it at an RDN
        // boundary. There are few, so a scan is fine.
        let mut best: Option<(EntryId, usize)> = None;
        for id in self.naming_contexts().iter() {
            let Some(r) = self.entries.get(id) else { continue };
            let (s, ctx) = (s.as_bytes(), r.norm_rdn_bytes());
            let fits =
                s == ctx || (s.len() > ctx.len() && s.ends_with(ctx) && s[s.len() - ctx.len() - 1] == b',');
            if fits && best.is_none_or(|(_, len)| ctx.len() > len) {
                best = Some((id, ctx.len()));
            }
        }
        let Some((mut cur, ctx_len)) = best else {
            return Lookup::Missing { matched: None };
        };
        if s.len() == ctx_len {
            return Lookup::Found(cur);
        }
        let rest = &s[..s.len() - ctx_len - 1];
        for rdn in rest.rsplit(',') {
            match self.child_by_rdn(cur, rdn) {
                Some(child) => cur = child,
                None => return Lookup::Missing { matched: Some(cur) },
            }
        }
        Lookup::Found(cur)
    }

    /// The ID of an entry by normalized DN.
    pub fn find(&self, dn: &NormDn) -> Option<EntryId> {
        match self.lookup(dn) {
            Lookup::Found(id) => Some(id),
            Lookup::Missing { .. } => None,
        }
    }

    /// The indexes of a type, when it is indexed.
    pub fn index(&self, ty: AttributeTypeId) -> Option<&AttrIndex> {
        self.shared.indexes.slot(ty).and_then(|i| self.attr.get(i))
    }

    /// Every indexed type with its indexes.
    pub fn indexes(&self) -> impl Iterator<Item = (AttributeTypeId, &AttrIndex)> + '_ {
        self.shared
            .indexes
            .iter()
            .zip(&self.attr)
            .map(|((ty, _), index)| (ty, index))
    }

    /// The kinds of index kept for a type.
    pub fn index_kinds(&self, ty: AttributeTypeId) -> IndexKinds {
        self.shared.indexes.kinds(ty)
    }

    /// The hash key of the indexes (for [`AttrIndex`] queries).
    pub fn keyer(&self) -> &Keyer {
        &self.shared.keyer
    }

    /// Heap octets of the entries, DN index, children sets and attribute indexes.
    pub fn heap_bytes(&self) -> MemoryUse {
        MemoryUse {
            entries: self.entries.heap_bytes()
                + self.entries.iter().map(|(_, r)| r.heap_bytes()).sum::<usize>(),
            dn_index: self.dn_index.heap_bytes(),
            children: self.children.heap_bytes(),
            attribute_indexes: self.attr.iter().map(AttrIndex::heap_bytes).sum(),
        }
    }

    // ----- changes (the writer's side) -----

    fn index_keys(&self, entry: StoredRef<'_>, scratch: &mut Vec<u8>) -> Vec<EntryKeys> {
        let shared = &self.shared;
        shared
            .indexes
            .iter()
            .map(|(ty, kinds)| AttrIndex::keys(kinds, ty, entry, &shared.schema, &shared.keyer, scratch))
            .collect()
    }

    /// Adds an entry under `parent` (0: a naming context). The caller checked the entry;
    /// this checks the tree: the parent exists, the name is free, the depth is bounded.
    pub(crate) fn add(
        &mut self,
        parent: EntryId,
        rdn: &str,
        norm_rdn: &str,
        attrs: StoredRef<'_>,
        scratch: &mut Vec<u8>,
    ) -> Result<EntryId, StoreError> {
        if parent != 0 && self.entries.get(parent).is_none() {
            return Err(StoreError::NoSuchParent);
        }
        if self.child_by_rdn(parent, norm_rdn).is_some() {
            return Err(StoreError::AlreadyExists);
        }
        if parent != 0 && self.chain(parent).count() >= MAX_DN_DEPTH {
            return Err(StoreError::TooDeep);
        }
        let id = self.next_id;
        self.next_id = id.checked_add(1).ok_or(StoreError::IdsExhausted)?;
        self.insert_record(id, EntryRecord::new(parent, rdn, norm_rdn, attrs), scratch);
        Ok(id)
    }

    /// Puts a record at `id` (new ID), updating every index.
    pub(crate) fn insert_record(&mut self, id: EntryId, record: EntryRecord, scratch: &mut Vec<u8>) {
        let parent = record.parent();
        let keys = self.index_keys(record.attrs(), scratch);
        for (index, k) in self.attr.iter_mut().zip(&keys) {
            index.add(id, k);
        }
        let dn_key = self.shared.keyer.dn(parent, record.norm_rdn());
        set_add(&mut self.dn_index, dn_key, id);
        set_add(&mut self.children, child_key(parent), id);
        self.entries.insert(id, record);
        if id >= self.next_id {
            self.next_id = id.saturating_add(1);
        }
    }

    /// Replaces an entry's attributes.
    pub(crate) fn replace(
        &mut self,
        id: EntryId,
        attrs: StoredRef<'_>,
        scratch: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        let old = self.entries.get(id).ok_or(StoreError::NoSuchEntry)?.clone();
        let new = EntryRecord::new(old.parent(), old.rdn(), old.norm_rdn(), attrs);
        // Only the indexed types whose values changed are keyed again: a group's hundreds
        // of `member` keys are not worked out for a change of its description.
        let shared = Arc::clone(&self.shared);
        for ((ty, kinds), index) in shared.indexes.iter().zip(self.attr.iter_mut()) {
            if same_values(old.attrs(), new.attrs(), ty) {
                continue;
            }
            index.rekey(
                id,
                kinds,
                ty,
                old.attrs(),
                new.attrs(),
                &shared.schema,
                &shared.keyer,
                scratch,
            );
        }
        self.entries.insert(id, new);
        Ok(())
    }

    /// Deletes a leaf entry.
    pub(crate) fn delete(&mut self, id: EntryId, scratch: &mut Vec<u8>) -> Result<(), StoreError> {
        let old = self.entries.get(id).ok_or(StoreError::NoSuchEntry)?.clone();
        if self.has_children(id) {
            return Err(StoreError::NotLeaf);
        }
        let keys = self.index_keys(old.attrs(), scratch);
        for (index, k) in self.attr.iter_mut().zip(&keys) {
            index.remove(id, k);
        }
        let dn_key = self.shared.keyer.dn(old.parent(), old.norm_rdn());
        set_remove(&mut self.dn_index, dn_key, id);
        set_remove(&mut self.children, child_key(old.parent()), id);
        self.entries.remove(id);
        Ok(())
    }

    /// Renames and/or moves an entry (its subtree follows, since children name their
    /// parent by ID) and replaces its attributes.
    pub(crate) fn rename(
        &mut self,
        id: EntryId,
        new_parent: EntryId,
        rdn: &str,
        norm_rdn: &str,
        attrs: StoredRef<'_>,
        scratch: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        let old = self.entries.get(id).ok_or(StoreError::NoSuchEntry)?.clone();
        if new_parent != 0 && self.entries.get(new_parent).is_none() {
            return Err(StoreError::NoSuchParent);
        }
        if new_parent != 0 && self.is_within(new_parent, id) {
            return Err(StoreError::MoveBelowItself);
        }
        if let Some(other) = self.child_by_rdn(new_parent, norm_rdn) {
            if other != id {
                return Err(StoreError::AlreadyExists);
            }
        }
        if new_parent != 0 && self.chain(new_parent).count() + self.subtree_height(id) >= MAX_DN_DEPTH {
            return Err(StoreError::TooDeep);
        }
        let new = EntryRecord::new(new_parent, rdn, norm_rdn, attrs);
        let old_keys = self.index_keys(old.attrs(), scratch);
        let new_keys = self.index_keys(new.attrs(), scratch);
        for ((index, o), n) in self.attr.iter_mut().zip(&old_keys).zip(&new_keys) {
            index.update(id, o, n);
        }
        let keyer = &self.shared.keyer;
        set_remove(&mut self.dn_index, keyer.dn(old.parent(), old.norm_rdn()), id);
        set_add(&mut self.dn_index, keyer.dn(new_parent, norm_rdn), id);
        if old.parent() != new_parent {
            set_remove(&mut self.children, child_key(old.parent()), id);
            set_add(&mut self.children, child_key(new_parent), id);
        }
        self.entries.insert(id, new);
        Ok(())
    }

    /// Levels below `id` (0 for a leaf), bounded by [`MAX_DN_DEPTH`].
    fn subtree_height(&self, id: EntryId) -> usize {
        let mut height = 0;
        let mut level = vec![id];
        while !level.is_empty() && height <= MAX_DN_DEPTH {
            let next: Vec<EntryId> = level
                .iter()
                .flat_map(|&p| self.children(p).iter().collect::<Vec<_>>())
                .collect();
            if next.is_empty() {
                break;
            }
            height += 1;
            level = next;
        }
        height
    }

    /// Checks the invariants listed in the module documentation (slow: for tests and
    /// `larch verify`). Returns the first violation found.
    pub fn check(&self) -> Result<(), String> {
        let mut scratch = Vec::new();
        let mut child_count = 0usize;
        let mut totals = vec![[0usize; 4]; self.attr.len()];
        for (id, r) in self.entries.iter() {
            if id == 0 || id >= self.next_id {
                return Err(format!("entry {id} outside 1..{}", self.next_id));
            }
            let p = r.parent();
            if p != 0 && self.entries.get(p).is_none() {
                return Err(format!("entry {id} names missing parent {p}"));
            }
            if !self.children(p).contains(id) {
                return Err(format!("entry {id} missing from the children of {p}"));
            }
            if self.child_by_rdn(p, r.norm_rdn()) != Some(id) {
                return Err(format!("entry {id} not found by its RDN `{}`", r.norm_rdn()));
            }
            if self.chain(id).count() > MAX_DN_DEPTH {
                return Err(format!("entry {id}: parent chain too long or cyclic"));
            }
            let keys = self.index_keys(r.attrs(), &mut scratch);
            for (((ty, _), index), k) in self.shared.indexes.iter().zip(&self.attr).zip(&keys) {
                index
                    .holds(id, k)
                    .map_err(|kind| format!("entry {id}: the {kind} index of type {ty:?} lacks a key"))?;
                let t = &mut totals[self.shared.indexes.slot(ty).unwrap_or(0)];
                t[0] += k.eq.len();
                t[1] += k.sub.len();
                t[2] += k.ord.len();
                t[3] += usize::from(k.present);
            }
        }
        for ((ty, _), (index, expected)) in self.shared.indexes.iter().zip(self.attr.iter().zip(&totals)) {
            let kinds = self.shared.indexes.kinds(ty);
            let held = index.totals();
            let wanted = [
                if kinds.equality { expected[0] } else { 0 },
                if kinds.substring { expected[1] } else { 0 },
                if kinds.ordering { expected[2] } else { 0 },
                if kinds.presence { expected[3] } else { 0 },
            ];
            if held != wanted {
                return Err(format!(
                    "indexes of type {ty:?} hold {held:?} keys, the entries give {wanted:?}"
                ));
            }
        }
        for parent in std::iter::once(0).chain(self.entries.iter().map(|(id, _)| id)) {
            let kids = self.children(parent);
            child_count += kids.len();
            for c in kids.iter() {
                if self.entries.get(c).map(EntryRecord::parent) != Some(parent) {
                    return Err(format!("children of {parent} hold {c}, which is not its child"));
                }
            }
        }
        if child_count != self.entries.len() {
            return Err(format!(
                "children sets hold {child_count} entries, the table {}",
                self.entries.len()
            ));
        }
        if self.dn_index.iter().map(|(_, s)| s.len()).sum::<usize>() != self.entries.len() {
            return Err("the DN index does not hold exactly one key per entry".into());
        }
        Ok(())
    }
}

/// Heap octets by structure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// The entry table and records.
    pub entries: usize,
    /// The DN index.
    pub dn_index: usize,
    /// The children sets.
    pub children: usize,
    /// All attribute indexes.
    pub attribute_indexes: usize,
}

impl MemoryUse {
    /// The sum.
    pub fn total(&self) -> usize {
        self.entries + self.dn_index + self.children + self.attribute_indexes
    }
}

enum SubtreeFrame {
    One(EntryId),
    Children(Vec<EntryId>, usize),
}

/// A depth-first walk of a subtree, parents first ([`Version::subtree`]).
pub struct Subtree<'v> {
    version: &'v Version,
    stack: Vec<SubtreeFrame>,
}

impl<'v> Iterator for Subtree<'v> {
    type Item = EntryId;

    fn next(&mut self) -> Option<EntryId> {
        loop {
            let id = match self.stack.last_mut()? {
                SubtreeFrame::One(id) => {
                    let id = *id;
                    self.stack.pop();
                    id
                }
                SubtreeFrame::Children(ids, pos) => match ids.get(*pos) {
                    Some(&id) => {
                        *pos += 1;
                        id
                    }
                    None => {
                        self.stack.pop();
                        continue;
                    }
                },
            };
            if self.version.has_children(id) && self.stack.len() <= MAX_DN_DEPTH {
                let kids: Vec<EntryId> = self.version.children(id).iter().collect();
                self.stack.push(SubtreeFrame::Children(kids, 0));
            }
            return Some(id);
        }
    }
}

/// Whether `a` and `b` hold the same attributes of type `ty`, option for option and value
/// for value, as stored octets (then their index keys are the same too).
fn same_values(a: StoredRef<'_>, b: StoredRef<'_>, ty: AttributeTypeId) -> bool {
    let (mut x, mut y) = (a.attribute(ty), b.attribute(ty));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some(p), Some(q)) if p.options == q.options && p.values_ber == q.values_ber => {}
            _ => return false,
        }
    }
}

/// Parses a DN into (user-form RDN, normalized RDN) of its first RDN, or the whole DN for a
/// naming context.
pub(crate) fn rdn_parts(dn: &Dn, norm: &NormDn, whole: bool) -> (String, String) {
    if whole {
        (dn.to_string(), norm.as_str().to_string())
    } else {
        let rdn = dn.rdns.first().map(ToString::to_string).unwrap_or_default();
        (rdn, norm.rdn().to_string())
    }
}
