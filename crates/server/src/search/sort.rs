//! Server-side sorting of search results (RFC 2891).
//!
//! A sort key names an attribute type, optionally an ordering rule, and a direction:
//! - the rule is the one named, which must be an ordering rule Larch implements, else the
//!   type's ORDERING rule; a type without one cannot be sorted on (`inappropriateMatching`
//!   18, as OpenLDAP's sssvlv overlay answers: it does not fall back to the equality rule);
//!   an undefined type gives `noSuchAttribute` (16);
//! - an entry's value for a key is the least key (under the rule) of the values of that
//!   type (not its subtypes) whose options include the key's options; values the rule
//!   cannot prepare do not count;
//! - entries without a value sort after all others, i.e. the missing value is the largest
//!   (RFC 2891 section 1.1), so they come first in reverse order;
//! - ties on every key keep entry-ID order, so a sort is deterministic;
//! - access control: a sort must not tell a client the order of values it may not search
//!   on (a filter on them is Undefined to it): a key whose type the requester may search on
//!   no entry fails the sort with `insufficientAccessRights` (50), the sortResult RFC 2891
//!   has for it; a key whose search right depends on the entry is `guarded`, and on the
//!   entries the requester may not search it on the entry counts as without a value.
//!
//! How ([`sort_ids`]), on the IDs of the entries that matched the filter:
//! 1. fast path, when the first key's type has an ordering index kept under the key's rule,
//!    the key has no options, is not guarded, and the matched entries are many (at least
//!    [`SORT_INDEX_MIN`], and at least one [`SORT_INDEX_RATIO`]th of the index): walk the
//!    index in key order and place each matched entry at its first (least) key; entries the
//!    index does not hold are those without a value (or whose only values have keys
//!    longer than the index keeps: then the slow path is taken after all). Runs of equal
//!    first keys are then ordered by the other keys;
//! 2. otherwise: compute every entry's keys and sort.

use std::cmp::Ordering;

use larch_model::entry::{split_description, Options, StoredRef};
use larch_model::matching::{self, MatchingRule, RuleUsage};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_proto::controls::SortRequest;
use larch_proto::ResultCode;
use larch_store::{EntryId, Version};

/// Most sort keys in one request (OpenLDAP's sssvlv allows 5 by default): every key is
/// computed for every entry sorted.
pub const MAX_SORT_KEYS: usize = 8;

/// Most entries one sort orders for a client other than the administrator: a sort holds
/// every matching entry's keys in memory before the first result goes out.
pub const MAX_SORTED_ENTRIES: usize = 100_000;

/// Fewest matched entries for which the ordering index is walked instead of computing keys
/// (below it, computing a few keys is cheaper than walking an index).
pub const SORT_INDEX_MIN: usize = 1024;

/// The index is walked only when it holds at most this many pairs per matched entry.
pub const SORT_INDEX_RATIO: usize = 8;

/// One resolved sort key.
#[derive(Debug, Clone)]
pub struct SortKeySpec {
    /// The attribute type.
    pub ty: AttributeTypeId,
    /// Options the values must carry.
    pub options: Options,
    /// The ordering rule.
    pub rule: &'static MatchingRule,
    /// Descending order.
    pub reverse: bool,
    /// The requester's right to search on the type depends on the entry: each entry's
    /// value counts only where it has that right.
    pub guarded: bool,
}

/// Why a sort cannot be done: the `sortResult` of the SortResponse and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortFailure {
    /// The sortResult code.
    pub code: ResultCode,
    /// The attribute description concerned.
    pub attribute: Option<Vec<u8>>,
    /// For a person.
    pub message: String,
}

/// Resolves the keys of a sort request. `searchable` is the requester's right to search on
/// a type: `Some` when the same on every entry, `None` when it depends on the entry.
pub fn parse_keys(
    req: &SortRequest<'_>,
    schema: &Schema,
    searchable: &dyn Fn(AttributeTypeId) -> Option<bool>,
) -> Result<Vec<SortKeySpec>, SortFailure> {
    let mut keys = Vec::new();
    for (i, k) in req.keys.iter().enumerate() {
        let attr = String::from_utf8_lossy(k.attribute);
        let fail = |code, message: String| SortFailure {
            code,
            attribute: Some(k.attribute.to_vec()),
            message,
        };
        if i >= MAX_SORT_KEYS {
            return Err(fail(
                ResultCode::UNWILLING_TO_PERFORM,
                format!("at most {MAX_SORT_KEYS} sort keys are accepted"),
            ));
        }
        let Some((ty, options)) = split_description(k.attribute)
            .and_then(|(name, options)| Some((schema.attribute_type(name)?, options)))
        else {
            return Err(fail(
                ResultCode::NO_SUCH_ATTRIBUTE,
                format!("sort key `{attr}` is not a defined attribute type"),
            ));
        };
        let rule = match k.ordering_rule {
            Some(r) => {
                let name = String::from_utf8_lossy(r);
                match matching::lookup(&name) {
                    Some(rule) if rule.usage == RuleUsage::Ordering => rule,
                    _ => {
                        return Err(fail(
                            ResultCode::INAPPROPRIATE_MATCHING,
                            format!(
                                "sort key `{attr}`: `{name}` is not an ordering rule this server implements"
                            ),
                        ))
                    }
                }
            }
            None => match ty.ordering {
                Some(rule) => rule,
                None => {
                    return Err(fail(
                        ResultCode::INAPPROPRIATE_MATCHING,
                        format!("sort key `{attr}`: the attribute type has no ordering rule"),
                    ))
                }
            },
        };
        let guarded = match searchable(ty.id) {
            Some(true) => false,
            Some(false) => {
                return Err(fail(
                    ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
                    format!("sort key `{attr}`: no right to search on this attribute type"),
                ))
            }
            None => true,
        };
        keys.push(SortKeySpec {
            ty: ty.id,
            options,
            rule,
            reverse: k.reverse,
            guarded,
        });
    }
    Ok(keys)
}

/// The least key of an entry for one sort key.
fn least_key(entry: StoredRef<'_>, key: &SortKeySpec, scratch: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut best: Option<Vec<u8>> = None;
    for a in entry.attribute(key.ty) {
        if !key.options.is_subset_of_str(a.options) {
            continue;
        }
        for v in a.values.iter() {
            scratch.clear();
            if key.rule.normalize(v, scratch).is_err() {
                continue;
            }
            if best.as_ref().is_none_or(|b| scratch.as_slice() < b.as_slice()) {
                best = Some(scratch.clone());
            }
        }
    }
    best
}

/// Compares two values of one key: a missing value is the largest, then the direction.
fn cmp_one(a: Option<&[u8]>, b: Option<&[u8]>, reverse: bool) -> Ordering {
    let o = match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y),
    };
    if reverse {
        o.reverse()
    } else {
        o
    }
}

/// Compares key lists (same length as `keys`).
fn cmp_keys(a: &[Option<Vec<u8>>], b: &[Option<Vec<u8>>], keys: &[SortKeySpec]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = cmp_one(x.as_deref(), y.as_deref(), k.reverse);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Whether the requester may search on type `ty` of entry `id` (asked for guarded keys).
pub type MaySearch<'a> = dyn FnMut(EntryId, AttributeTypeId) -> bool + 'a;

/// Sorts `ids` by the keys, every key computed per entry.
fn sort_by_values(version: &Version, ids: &mut [EntryId], keys: &[SortKeySpec], may: &mut MaySearch<'_>) {
    let mut scratch = Vec::new();
    let mut items: Vec<(Vec<Option<Vec<u8>>>, EntryId)> = ids
        .iter()
        .map(|&id| {
            let values = match version.entry(id) {
                Some(e) => keys
                    .iter()
                    .map(|k| {
                        if k.guarded && !may(id, k.ty) {
                            return None;
                        }
                        least_key(e.attrs(), k, &mut scratch)
                    })
                    .collect(),
                None => vec![None; keys.len()],
            };
            (values, id)
        })
        .collect();
    items.sort_by(|a, b| cmp_keys(&a.0, &b.0, keys).then(a.1.cmp(&b.1)));
    for (slot, (_, id)) in ids.iter_mut().zip(items) {
        *slot = id;
    }
}

/// A set of entry IDs as a bitmap, for the index walk.
struct Bits(Vec<u64>);

impl Bits {
    fn new(max: EntryId) -> Bits {
        Bits(vec![0; max as usize / 64 + 1])
    }
    fn get(&self, id: EntryId) -> bool {
        self.0
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }
    fn set(&mut self, id: EntryId) {
        if let Some(w) = self.0.get_mut(id as usize / 64) {
            *w |= 1 << (id % 64);
        }
    }
}

/// Step 1 of the module documentation; false when the fast path does not apply (then
/// `ids` is unchanged).
fn sort_by_index(
    version: &Version,
    ids: &mut [EntryId],
    keys: &[SortKeySpec],
    may: &mut MaySearch<'_>,
) -> bool {
    let Some(first) = keys.first() else { return false };
    if ids.len() < SORT_INDEX_MIN || !first.options.is_empty() || first.guarded {
        return false;
    }
    let schema = version.schema();
    let own_rule = schema.attribute_type_by_id(first.ty).and_then(|t| t.ordering);
    if own_rule.is_none_or(|r| r.oid != first.rule.oid) {
        return false;
    }
    let Some(index) = version.index(first.ty).and_then(|i| i.ordered()) else {
        return false;
    };
    if index.len() > ids.len().saturating_mul(SORT_INDEX_RATIO) {
        return false;
    }
    let max = ids.iter().copied().max().unwrap_or(0);
    let mut member = Bits::new(max);
    for &id in ids.iter() {
        member.set(id);
    }
    let mut placed = Bits::new(max);
    // (least key, ID) in ascending key order, then ID order.
    let mut order: Vec<(&[u8], EntryId)> = Vec::with_capacity(ids.len());
    for (key, id) in index.iter() {
        if member.get(id) && !placed.get(id) {
            placed.set(id);
            order.push((key, id));
        }
    }
    let mut missing: Vec<EntryId> = Vec::new();
    let mut scratch = Vec::new();
    for &id in ids.iter() {
        if placed.get(id) {
            continue;
        }
        if let Some(e) = version.entry(id) {
            if least_key(e.attrs(), first, &mut scratch).is_some() {
                // A value too long for the index: its place is not known here.
                return false;
            }
        }
        missing.push(id);
    }
    missing.sort_unstable();
    // Runs of equal first keys (the missing ones last), each ordered by the other keys.
    let mut runs: Vec<Vec<EntryId>> = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && order[j].0 == order[i].0 {
            j += 1;
        }
        runs.push(order[i..j].iter().map(|&(_, id)| id).collect());
        i = j;
    }
    if !missing.is_empty() {
        runs.push(missing);
    }
    let rest = &keys[1..];
    if !rest.is_empty() {
        for run in runs.iter_mut().filter(|r| r.len() > 1) {
            sort_by_values(version, run, rest, may);
        }
    }
    if first.reverse {
        runs.reverse();
    }
    for (slot, id) in ids.iter_mut().zip(runs.into_iter().flatten()) {
        *slot = id;
    }
    true
}

/// Sorts the IDs of matched entries by `keys` (see the module documentation); `may` is
/// asked for guarded keys only.
pub fn sort_ids(version: &Version, ids: &mut [EntryId], keys: &[SortKeySpec], may: &mut MaySearch<'_>) {
    if keys.is_empty() {
        return;
    }
    if !sort_by_index(version, ids, keys, may) {
        sort_by_values(version, ids, keys, may);
    }
}

/// The same order computed only by values (step 2), for tests comparing the two paths.
pub fn sort_ids_by_values(
    version: &Version,
    ids: &mut [EntryId],
    keys: &[SortKeySpec],
    may: &mut MaySearch<'_>,
) {
    sort_by_values(version, ids, keys, may);
}
