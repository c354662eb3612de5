//! Attribute indexes: equality, presence, substring and ordering, kept per version.
//!
//! How each kind is keyed:
//! - equality: the value's key under the type's equality rule, hashed to 64 bits with a
//!   per-process random key (SipHash through `std`'s `RandomState`, so crafted values
//!   cannot collide on purpose). The map holds hashes, not keys: a near-unique attribute
//!   costs ~24 octets per value instead of the key itself. A hash collision only adds a
//!   candidate, and every candidate is checked against the full filter, so answers stay
//!   exact;
//! - presence: one ID set per type;
//! - substring: every 3-octet gram of `^key$` under the substrings rule, hashed like
//!   equality keys; an assertion's pieces give grams of `^initial`, each `any`, `final$`,
//!   and the candidates are the intersection of their sets (pieces shorter than a gram add
//!   nothing; with no gram at all the index cannot help);
//! - ordering: (key, ID) pairs in an [`OrdIndex`], the key under the ordering rule.
//!
//! Values an index's rule refuses (invalid under its syntax) are not indexed: no assertion
//! can match them through that rule either. Values of every option (`cn;lang-fr`) are
//! indexed under their type, as a filter on `cn` matches them.
//!
//! Indexes are never written to disk: they are rebuilt while a snapshot loads, so changing
//! the configuration takes effect at the next start.

mod config;

pub use config::{IndexConfig, IndexConfigError, IndexKinds, ResolvedIndexes};

use std::hash::BuildHasher;
use std::ops::Bound;

use larch_model::entry::StoredRef;
use larch_model::matching::{MatchingRule, SubstringPosition};
use larch_model::schema::{AttributeTypeId, Schema};

use crate::idset::IdSet;
use crate::ordindex::OrdIndex;
use crate::pmap::HashTrie;
use crate::record::EntryId;

/// Octets per substring gram.
pub const SUBSTRING_GRAM: usize = 3;

/// Keys longer than this are not put in an ordering index (the entry is still found by
/// scans); ordering keys are compared whole, and a bound keeps index nodes small.
pub const MAX_ORDERING_KEY: usize = crate::ordindex::MAX_KEY_LEN;

/// Hashes index keys with a per-process random key.
#[derive(Debug, Clone, Default)]
pub struct Keyer(std::collections::hash_map::RandomState);

impl Keyer {
    /// A keyer with a fresh random key.
    pub fn new() -> Keyer {
        Keyer::default()
    }

    /// The hash of an index key.
    pub fn key(&self, bytes: &[u8]) -> u64 {
        self.0.hash_one(bytes)
    }

    /// The hash of a (parent, normalized RDN) pair in the DN index.
    pub fn dn(&self, parent: EntryId, norm_rdn: &str) -> u64 {
        self.0.hash_one((parent, norm_rdn))
    }
}

/// The indexes of one attribute type (each kind present only when configured).
#[derive(Debug, Clone, Default)]
pub struct AttrIndex {
    eq: Option<HashTrie<IdSet>>,
    pres: Option<IdSet>,
    sub: Option<HashTrie<IdSet>>,
    ord: Option<OrdIndex>,
}

/// Adds `id` to the set at `key`, creating it.
pub(crate) fn set_add(map: &mut HashTrie<IdSet>, key: u64, id: EntryId) {
    if let Some(set) = map.get_mut(key) {
        set.insert(id);
    } else {
        let mut set = IdSet::new();
        set.insert(id);
        map.insert(key, set);
    }
}

/// Removes `id` from the set at `key`, dropping the key when its set becomes empty.
pub(crate) fn set_remove(map: &mut HashTrie<IdSet>, key: u64, id: EntryId) {
    let now_empty = match map.get_mut(key) {
        Some(set) => {
            set.remove(id);
            set.is_empty()
        }
        None => false,
    };
    if now_empty {
        map.remove(key);
    }
}

/// The keys one entry contributes to one type's indexes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct EntryKeys {
    pub(crate) present: bool,
    pub(crate) eq: Vec<u64>,
    pub(crate) sub: Vec<u64>,
    pub(crate) ord: Vec<Vec<u8>>,
}

impl EntryKeys {
    /// Each list sorted, each key once.
    fn normalize(&mut self) {
        self.eq.sort_unstable();
        self.eq.dedup();
        self.sub.sort_unstable();
        self.sub.dedup();
        self.ord.sort_unstable();
        self.ord.dedup();
    }

    /// The keys of both (presence: either's).
    fn union(&self, other: &EntryKeys) -> EntryKeys {
        let mut out = EntryKeys {
            present: self.present || other.present,
            eq: [&self.eq[..], &other.eq[..]].concat(),
            sub: [&self.sub[..], &other.sub[..]].concat(),
            ord: [&self.ord[..], &other.ord[..]].concat(),
        };
        out.normalize();
        out
    }
}

/// The values of type `ty` in `entry`, sorted as octets.
fn sorted_values(entry: StoredRef<'_>, ty: AttributeTypeId) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = entry.attribute(ty).flat_map(|a| a.values.iter()).collect();
    v.sort_unstable();
    v
}

/// Values of one type before and after a change: in both, only before, only after.
type ValueSplit<'a> = (Vec<&'a [u8]>, Vec<&'a [u8]>, Vec<&'a [u8]>);

/// Two sorted lists of values split into those in both, those only in `was` and those only
/// in `is` (each value counted as often as it appears).
fn split_values<'a>(was: &[&'a [u8]], is: &[&'a [u8]]) -> ValueSplit<'a> {
    let (mut kept, mut went, mut came) = (Vec::new(), Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    loop {
        match (was.get(i), is.get(j)) {
            (Some(a), Some(b)) if a == b => {
                kept.push(*a);
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                went.push(*a);
                i += 1;
            }
            (Some(a), None) => {
                went.push(*a);
                i += 1;
            }
            (_, Some(b)) => {
                came.push(*b);
                j += 1;
            }
            (None, None) => break,
        }
    }
    (kept, went, came)
}

/// How many keys each kind of index of one type holds (for monitoring; each count is
/// kept by its structure, so reading them costs nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexKeyCounts {
    /// Equality keys (distinct value hashes).
    pub equality: usize,
    /// Entries in the presence set.
    pub presence: usize,
    /// Substring keys.
    pub substring: usize,
    /// Ordering pairs (value, entry).
    pub ordering: usize,
}

impl AttrIndex {
    /// How many keys each of its indexes holds.
    pub fn key_counts(&self) -> IndexKeyCounts {
        IndexKeyCounts {
            equality: self.eq.as_ref().map_or(0, |m| m.len()),
            presence: self.pres.as_ref().map_or(0, |s| s.len()),
            substring: self.sub.as_ref().map_or(0, |m| m.len()),
            ordering: self.ord.as_ref().map_or(0, |o| o.len()),
        }
    }

    /// Empty indexes of the given kinds.
    pub fn new(kinds: IndexKinds) -> AttrIndex {
        AttrIndex {
            eq: kinds.equality.then(HashTrie::new),
            pres: kinds.presence.then(IdSet::new),
            sub: kinds.substring.then(HashTrie::new),
            ord: kinds.ordering.then(OrdIndex::new),
        }
    }

    /// The keys `entry` has for type `ty` under these kinds.
    pub(crate) fn keys(
        kinds: IndexKinds,
        ty: AttributeTypeId,
        entry: StoredRef<'_>,
        schema: &Schema,
        keyer: &Keyer,
        scratch: &mut Vec<u8>,
    ) -> EntryKeys {
        let mut present = false;
        let values = entry.attribute(ty).flat_map(|a| {
            present = true;
            a.values.iter()
        });
        let mut out = AttrIndex::value_keys(kinds, ty, values, schema, keyer, scratch);
        out.present = present;
        out
    }

    /// The keys `values` (of type `ty`) have under these kinds, presence left false.
    pub(crate) fn value_keys<'v>(
        kinds: IndexKinds,
        ty: AttributeTypeId,
        values: impl Iterator<Item = &'v [u8]>,
        schema: &Schema,
        keyer: &Keyer,
        scratch: &mut Vec<u8>,
    ) -> EntryKeys {
        let mut out = EntryKeys::default();
        let Some(t) = schema.attribute_type_by_id(ty) else {
            return out;
        };
        for v in values {
            if kinds.equality {
                if let Some(rule) = t.equality {
                    if rule_key(rule, v, scratch) {
                        out.eq.push(keyer.key(scratch));
                    }
                }
            }
            if kinds.substring {
                if let Some(rule) = t.substring {
                    if rule_key(rule, v, scratch) {
                        grams(scratch, true, true, keyer, &mut out.sub);
                    }
                }
            }
            if kinds.ordering {
                if let Some(rule) = t.ordering {
                    if rule_key(rule, v, scratch) && scratch.len() <= MAX_ORDERING_KEY {
                        out.ord.push(scratch.clone());
                    }
                }
            }
        }
        out.normalize();
        out
    }

    /// Re-keys entry `id` whose values of `ty` went from `old` to `new`, working out the
    /// keys of the values that changed and, only when some value went, of those that
    /// stayed: adding one member to a group of a thousand keys one value, not two
    /// thousand. Values are compared as octets (the same octets have the same keys); a key
    /// of a value that went stays when a value that stayed or came has it too.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rekey(
        &mut self,
        id: EntryId,
        kinds: IndexKinds,
        ty: AttributeTypeId,
        old: StoredRef<'_>,
        new: StoredRef<'_>,
        schema: &Schema,
        keyer: &Keyer,
        scratch: &mut Vec<u8>,
    ) {
        let (was, is) = (sorted_values(old, ty), sorted_values(new, ty));
        let (kept, went, came) = split_values(&was, &is);
        let mut keys =
            |vs: &[&[u8]]| AttrIndex::value_keys(kinds, ty, vs.iter().copied(), schema, keyer, scratch);
        let came_keys = keys(&came);
        if went.is_empty() {
            // Nothing went, so no key goes; the keys the entry already has are added again
            // as no-ops.
            let added = EntryKeys {
                present: !is.is_empty() && was.is_empty(),
                ..came_keys
            };
            self.add(id, &added);
            return;
        }
        let kept_keys = keys(&kept);
        let went_keys = keys(&went);
        let mut before = kept_keys.union(&went_keys);
        before.present = !was.is_empty();
        let mut after = kept_keys.union(&came_keys);
        after.present = !is.is_empty();
        self.update(id, &before, &after);
    }

    /// Adds an entry's keys.
    pub(crate) fn add(&mut self, id: EntryId, keys: &EntryKeys) {
        if let (Some(p), true) = (&mut self.pres, keys.present) {
            p.insert(id);
        }
        if let Some(eq) = &mut self.eq {
            for &k in &keys.eq {
                set_add(eq, k, id);
            }
        }
        if let Some(sub) = &mut self.sub {
            for &k in &keys.sub {
                set_add(sub, k, id);
            }
        }
        if let Some(ord) = &mut self.ord {
            for k in &keys.ord {
                // Keys above the limit were left out when they were computed.
                let _ = ord.insert(k, id);
            }
        }
    }

    /// Removes an entry's keys.
    pub(crate) fn remove(&mut self, id: EntryId, keys: &EntryKeys) {
        if let (Some(p), true) = (&mut self.pres, keys.present) {
            p.remove(id);
        }
        if let Some(eq) = &mut self.eq {
            for &k in &keys.eq {
                set_remove(eq, k, id);
            }
        }
        if let Some(sub) = &mut self.sub {
            for &k in &keys.sub {
                set_remove(sub, k, id);
            }
        }
        if let Some(ord) = &mut self.ord {
            for k in &keys.ord {
                ord.remove(k, id);
            }
        }
    }

    /// Replaces an entry's keys `old` by `new`, touching only the keys that differ.
    pub(crate) fn update(&mut self, id: EntryId, old: &EntryKeys, new: &EntryKeys) {
        if old == new {
            return;
        }
        let removed = EntryKeys {
            present: old.present && !new.present,
            eq: sorted_minus(&old.eq, &new.eq),
            sub: sorted_minus(&old.sub, &new.sub),
            ord: old
                .ord
                .iter()
                .filter(|k| new.ord.binary_search(k).is_err())
                .cloned()
                .collect(),
        };
        let added = EntryKeys {
            present: new.present && !old.present,
            eq: sorted_minus(&new.eq, &old.eq),
            sub: sorted_minus(&new.sub, &old.sub),
            ord: new
                .ord
                .iter()
                .filter(|k| old.ord.binary_search(k).is_err())
                .cloned()
                .collect(),
        };
        self.remove(id, &removed);
        self.add(id, &added);
    }

    /// Candidates for `(attr=value)`: `None` when there is no equality index, or the
    /// assertion value is invalid under the rule (then nothing matches by equality and the
    /// caller's filter check decides).
    pub fn equality(&self, rule: &MatchingRule, value: &[u8], keyer: &Keyer) -> Option<IdSet> {
        // No equality index: `None` before any key is worked out.
        self.eq.as_ref()?;
        match AttrIndex::equality_key(rule, value, keyer) {
            Some(key) => self.equality_keyed(key),
            None => Some(IdSet::new()),
        }
    }

    /// The hash an equality index files `value` under with `rule`; `None` when the value
    /// is invalid under the rule. The same for every version of a store (one schema, one
    /// keyer), so a value asked about often (a class name) can be hashed once.
    pub fn equality_key(rule: &MatchingRule, value: &[u8], keyer: &Keyer) -> Option<u64> {
        let mut scratch = Vec::with_capacity(value.len() + 8);
        rule_key(rule, value, &mut scratch).then(|| keyer.key(&scratch))
    }

    /// Candidates filed under an [`AttrIndex::equality_key`]: `None` when there is no
    /// equality index.
    pub fn equality_keyed(&self, key: u64) -> Option<IdSet> {
        Some(self.eq.as_ref()?.get(key).cloned().unwrap_or_default())
    }

    /// Entries holding the attribute, if presence is indexed.
    pub fn presence(&self) -> Option<&IdSet> {
        self.pres.as_ref()
    }

    /// Candidates for a substring assertion: `None` when there is no substring index or the
    /// pieces are too short to give a gram.
    pub fn substrings(
        &self,
        rule: &MatchingRule,
        initial: Option<&[u8]>,
        any: &[&[u8]],
        final_: Option<&[u8]>,
        keyer: &Keyer,
    ) -> Option<IdSet> {
        let sub = self.sub.as_ref()?;
        let mut hashes = Vec::new();
        let mut scratch = Vec::new();
        let mut piece = |part: &[u8], position, at_start, at_end, hashes: &mut Vec<u64>| {
            scratch.clear();
            if rule.normalize_substring(part, position, &mut scratch).is_ok() {
                grams(&scratch, at_start, at_end, keyer, hashes);
            }
        };
        if let Some(i) = initial {
            piece(i, SubstringPosition::Initial, true, false, &mut hashes);
        }
        for a in any {
            piece(a, SubstringPosition::Any, false, false, &mut hashes);
        }
        if let Some(f) = final_ {
            piece(f, SubstringPosition::Final, false, true, &mut hashes);
        }
        hashes.sort_unstable();
        hashes.dedup();
        let mut result: Option<IdSet> = None;
        for h in hashes {
            let set = sub.get(h).cloned().unwrap_or_default();
            result = Some(match result {
                None => set,
                Some(r) => r.intersection(&set),
            });
            if result.as_ref().is_some_and(IdSet::is_empty) {
                break;
            }
        }
        result
    }

    /// Candidates for `(attr>=value)` (`greater`) or `(attr<=value)`: `None` without an
    /// ordering index or for a value invalid under the rule.
    pub fn ordering(&self, rule: &MatchingRule, value: &[u8], greater: bool) -> Option<IdSet> {
        let ord = self.ord.as_ref()?;
        let mut key = Vec::with_capacity(value.len() + 8);
        if !rule_key(rule, value, &mut key) {
            return None;
        }
        let range = if greater {
            ord.range(Bound::Included(&key[..]), Bound::Unbounded)
        } else {
            ord.range(Bound::Unbounded, Bound::Included(&key[..]))
        };
        Some(range.map(|(_, id)| id).collect())
    }

    /// The ordering index, for sorted walks.
    pub fn ordered(&self) -> Option<&OrdIndex> {
        self.ord.as_ref()
    }

    /// Whether the indexes hold every key of entry `id` (for consistency checks).
    pub(crate) fn holds(&self, id: EntryId, keys: &EntryKeys) -> Result<(), &'static str> {
        if let Some(p) = &self.pres {
            if p.contains(id) != keys.present {
                return Err("presence");
            }
        }
        let in_sets = |map: &Option<HashTrie<IdSet>>, hashes: &[u64]| {
            map.as_ref()
                .is_none_or(|m| hashes.iter().all(|h| m.get(*h).is_some_and(|s| s.contains(id))))
        };
        if !in_sets(&self.eq, &keys.eq) {
            return Err("equality");
        }
        if !in_sets(&self.sub, &keys.sub) {
            return Err("substring");
        }
        if let Some(o) = &self.ord {
            if !keys.ord.iter().all(|k| o.contains(k, id)) {
                return Err("ordering");
            }
        }
        Ok(())
    }

    /// (ID, key) pairs held by the equality, substring and ordering indexes, and the
    /// presence set's size (for consistency checks: with [`AttrIndex::holds`] for every
    /// entry, equal totals mean no stale pair is left).
    pub(crate) fn totals(&self) -> [usize; 4] {
        let pairs =
            |m: &Option<HashTrie<IdSet>>| m.as_ref().map_or(0, |m| m.iter().map(|(_, s)| s.len()).sum());
        [
            pairs(&self.eq),
            pairs(&self.sub),
            self.ord.as_ref().map_or(0, OrdIndex::len),
            self.pres.as_ref().map_or(0, IdSet::len),
        ]
    }

    /// Heap octets used, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.eq.as_ref().map_or(0, HashTrie::heap_bytes)
            + self.pres.as_ref().map_or(0, IdSet::heap_bytes)
            + self.sub.as_ref().map_or(0, HashTrie::heap_bytes)
            + self.ord.as_ref().map_or(0, OrdIndex::heap_bytes)
    }
}

/// Collects the keys of many entries for one type, to build its indexes in bulk (while a
/// snapshot loads or an import runs). Several builders filled on different threads over
/// ascending ID ranges are joined with [`IndexBuilder::append`].
#[derive(Debug, Default)]
pub(crate) struct IndexBuilder {
    pres: Vec<EntryId>,
    eq: Vec<(u64, EntryId)>,
    sub: Vec<(u64, EntryId)>,
    ord: Vec<(Vec<u8>, EntryId)>,
}

impl IndexBuilder {
    /// Adds one entry's keys (IDs ascending across calls).
    pub(crate) fn push(&mut self, id: EntryId, keys: EntryKeys) {
        if keys.present {
            self.pres.push(id);
        }
        self.eq.extend(keys.eq.iter().map(|&h| (h, id)));
        self.sub.extend(keys.sub.iter().map(|&h| (h, id)));
        self.ord.extend(keys.ord.into_iter().map(|key| (key, id)));
    }

    /// Appends a builder that covered later IDs.
    pub(crate) fn append(&mut self, mut later: IndexBuilder) {
        self.pres.append(&mut later.pres);
        self.eq.append(&mut later.eq);
        self.sub.append(&mut later.sub);
        self.ord.append(&mut later.ord);
    }

    /// Builds the indexes of the configured kinds.
    pub(crate) fn finish(self, kinds: IndexKinds) -> AttrIndex {
        let IndexBuilder {
            pres,
            eq,
            sub,
            mut ord,
        } = self;
        AttrIndex {
            pres: kinds.presence.then(|| IdSet::from_sorted(&pres)),
            eq: kinds.equality.then(|| hash_sets(eq)),
            sub: kinds.substring.then(|| hash_sets(sub)),
            ord: kinds.ordering.then(|| {
                ord.sort_unstable();
                ord.dedup();
                // Sorted, deduplicated and within the key limit, so the build cannot refuse.
                OrdIndex::from_sorted(ord.iter().map(|(k, id)| (&k[..], *id))).unwrap_or_default()
            }),
        }
    }
}

/// Groups (hash, ID) pairs into a map of ID sets.
pub(crate) fn hash_sets(mut pairs: Vec<(u64, EntryId)>) -> HashTrie<IdSet> {
    pairs.sort_unstable();
    pairs.dedup();
    let mut grouped: Vec<(u64, IdSet)> = Vec::new();
    let mut ids: Vec<EntryId> = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let h = pairs[i].0;
        ids.clear();
        while i < pairs.len() && pairs[i].0 == h {
            ids.push(pairs[i].1);
            i += 1;
        }
        grouped.push((h, IdSet::from_sorted(&ids)));
    }
    HashTrie::from_vec(grouped)
}

fn sorted_minus(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter()
        .copied()
        .filter(|x| b.binary_search(x).is_err())
        .collect()
}

/// Computes a value's key under `rule` into `scratch`; false when the rule refuses it.
fn rule_key(rule: &MatchingRule, value: &[u8], scratch: &mut Vec<u8>) -> bool {
    scratch.clear();
    rule.normalize(value, scratch).is_ok()
}

/// Appends the hashes of the grams of `key`, with `^` before it when `at_start` and `$`
/// after it when `at_end`.
fn grams(key: &[u8], at_start: bool, at_end: bool, keyer: &Keyer, out: &mut Vec<u64>) {
    let mut framed = Vec::with_capacity(key.len() + 2);
    if at_start {
        framed.push(b'^');
    }
    framed.extend_from_slice(key);
    if at_end {
        framed.push(b'$');
    }
    // A key octet equal to an anchor cannot be confused with one: anchors only ever sit at
    // the ends, and grams are position-free, so at worst a gram is shared (a false
    // candidate, removed by the filter check).
    for g in framed.windows(SUBSTRING_GRAM) {
        out.push(keyer.key(g));
    }
}
