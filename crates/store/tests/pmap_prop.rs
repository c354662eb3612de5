//! Properties of the persistent maps, each checked against `BTreeMap`:
//! - random operation sequences give the model's content (every lookup, the full ordered
//!   iteration, ranges) and keep the structural invariants after every step;
//! - clones taken at random points keep their exact content while the original changes,
//!   and changing a clone leaves the original alone;
//! - bulk builders give the same maps as inserts;
//! - a change after a clone copies one path, and a batch of nearby changes copies each
//!   node once;
//! - memory per entry stays within the figures the module docs state.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::mem;

use larch_store::pmap::hash_trie::{COLLAPSE_MAX, LEAF_MAX};
use larch_store::pmap::id_table::LEAF_SLOTS;
use larch_store::pmap::{BuildError, HashTrie, IdTable, IdTableBuilder};
use proptest::prelude::*;

const CASES: u32 = 256;

/// A well-mixed 64-bit hash of `x` (splitmix64's finalizer).
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

thread_local! {
    static CLONES: Cell<usize> = const { Cell::new(0) };
}

/// A `u64` value that counts its clones (per thread, so parallel tests do not interfere).
#[derive(Debug, PartialEq, Eq)]
struct Counted(u64);

impl Clone for Counted {
    fn clone(&self) -> Self {
        CLONES.with(|c| c.set(c.get() + 1));
        Counted(self.0)
    }
}

fn clones() -> usize {
    CLONES.with(Cell::get)
}

// ---------------------------------------------------------------------------------------
// IdTable

/// IDs from several regions: dense from 0, a dense run higher up, near `u32::MAX`, and
/// anywhere.
fn id() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..300,
        2 => 60_000u32..60_200,
        2 => (0u32..200).prop_map(|d| u32::MAX - d),
        1 => any::<u32>(),
    ]
}

#[derive(Debug, Clone)]
enum TableOp {
    Insert(u32, u8),
    Remove(u32),
    /// Inserts `count` consecutive IDs from `start` (fills leaves, grows the height).
    InsertRun(u32, u8),
    /// Removes `count` consecutive IDs from `start` (empties leaves, shrinks the height).
    RemoveRun(u32, u8),
    Snapshot,
    /// Inserts into an earlier snapshot (which must not change the table).
    ChangeSnapshot(usize, u32, u8),
}

fn table_op() -> impl Strategy<Value = TableOp> {
    prop_oneof![
        6 => (id(), any::<u8>()).prop_map(|(i, v)| TableOp::Insert(i, v)),
        3 => id().prop_map(TableOp::Remove),
        1 => (id(), any::<u8>()).prop_map(|(i, n)| TableOp::InsertRun(i, n)),
        1 => (id(), any::<u8>()).prop_map(|(i, n)| TableOp::RemoveRun(i, n)),
        1 => Just(TableOp::Snapshot),
        1 => (any::<usize>(), id(), any::<u8>()).prop_map(|(s, i, v)| TableOp::ChangeSnapshot(s, i, v)),
    ]
}

/// A distinct value per (id, byte), so a value in the wrong slot shows.
fn table_value(id: u32, v: u8) -> Vec<u8> {
    let mut out = id.to_le_bytes().to_vec();
    out.push(v);
    out
}

/// Compares `table` with `model` in full: length, structure, iteration, and the lookup of
/// every ID in `probes`.
fn check_table(
    table: &IdTable<Vec<u8>>,
    model: &BTreeMap<u32, Vec<u8>>,
    probes: &BTreeSet<u32>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(table.validate(), Ok(()));
    prop_assert_eq!(table.len(), model.len());
    prop_assert_eq!(table.is_empty(), model.is_empty());
    let got: Vec<(u32, &Vec<u8>)> = table.iter().collect();
    let want: Vec<(u32, &Vec<u8>)> = model.iter().map(|(k, v)| (*k, v)).collect();
    prop_assert_eq!(got, want);
    for &p in probes {
        prop_assert_eq!(table.get(p), model.get(&p), "get({})", p);
    }
    prop_assert_eq!(table.first_id(), model.keys().next().copied());
    prop_assert_eq!(table.last_id(), model.keys().next_back().copied());
    Ok(())
}

/// A clone of the table and the model at the moment it was taken.
type TableSnapshot = (IdTable<Vec<u8>>, BTreeMap<u32, Vec<u8>>);

fn run_ids(start: u32, count: u8) -> impl Iterator<Item = u32> {
    (0..u32::from(count)).map_while(move |i| start.checked_add(i))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn id_table_ops_match_btreemap(ops in prop::collection::vec(table_op(), 1..120)) {
        let mut table = IdTable::new();
        let mut model = BTreeMap::new();
        let mut snapshots: Vec<TableSnapshot> = Vec::new();
        let mut probes: BTreeSet<u32> = [0, 1, 63, 64, u32::MAX].into_iter().collect();
        for op in ops {
            match op {
                TableOp::Insert(i, v) => {
                    probes.insert(i);
                    prop_assert_eq!(table.insert(i, table_value(i, v)), model.insert(i, table_value(i, v)));
                }
                TableOp::Remove(i) => {
                    probes.insert(i);
                    prop_assert_eq!(table.remove(i), model.remove(&i));
                }
                TableOp::InsertRun(start, count) => {
                    for i in run_ids(start, count) {
                        probes.insert(i);
                        prop_assert_eq!(table.insert(i, table_value(i, 0)), model.insert(i, table_value(i, 0)));
                    }
                }
                TableOp::RemoveRun(start, count) => {
                    for i in run_ids(start, count) {
                        prop_assert_eq!(table.remove(i), model.remove(&i));
                    }
                }
                TableOp::Snapshot => snapshots.push((table.clone(), model.clone())),
                TableOp::ChangeSnapshot(s, i, v) => {
                    if !snapshots.is_empty() {
                        let at = s % snapshots.len();
                        let (t, m) = &mut snapshots[at];
                        prop_assert_eq!(t.insert(i, table_value(i, v)), m.insert(i, table_value(i, v)));
                        probes.insert(i);
                    }
                }
            }
            check_table(&table, &model, &probes)?;
        }
        for (t, m) in &snapshots {
            check_table(t, m, &probes)?;
        }
    }

    #[test]
    fn id_table_ranges_match_btreemap(
        ids in prop::collection::btree_set(id(), 0..400),
        bounds in prop::collection::vec((id(), id()), 1..8),
        from in id(),
    ) {
        let table: IdTable<u64> = ids.iter().map(|&i| (i, u64::from(i) * 3)).collect();
        let model: BTreeMap<u32, u64> = ids.iter().map(|&i| (i, u64::from(i) * 3)).collect();
        for (a, b) in bounds {
            let (lo, hi) = (a.min(b), a.max(b));
            let got: Vec<_> = table.iter_range(lo..hi).collect();
            let want: Vec<_> = model.range(lo..hi).map(|(k, v)| (*k, v)).collect();
            prop_assert_eq!(got, want);
            let got: Vec<_> = table.iter_range(lo..=hi).collect();
            let want: Vec<_> = model.range(lo..=hi).map(|(k, v)| (*k, v)).collect();
            prop_assert_eq!(got, want);
        }
        let got: Vec<_> = table.iter_from(from).collect();
        let want: Vec<_> = model.range(from..).map(|(k, v)| (*k, v)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn id_table_split_ranges_cover_and_balance(ids in prop::collection::btree_set(id(), 0..600), n in 1usize..9) {
        let table: IdTable<u64> = ids.iter().map(|&i| (i, u64::from(i))).collect();
        let ranges = table.split_ranges(n);
        prop_assert!(!ranges.is_empty() && ranges.len() <= n);
        prop_assert_eq!(*ranges[0].start(), 0);
        prop_assert_eq!(*ranges[ranges.len() - 1].end(), u32::MAX);
        for w in ranges.windows(2) {
            prop_assert!(w[0].start() <= w[0].end());
            prop_assert_eq!(u64::from(*w[0].end()) + 1, u64::from(*w[1].start()));
        }
        let mut joined = Vec::new();
        for r in &ranges {
            let part: Vec<_> = table.iter_range(r.clone()).collect();
            prop_assert!(part.len() <= ids.len().div_ceil(n) + LEAF_SLOTS, "{} in one of {} ranges", part.len(), n);
            joined.extend(part);
        }
        let all: Vec<_> = table.iter().collect();
        prop_assert_eq!(joined, all);
    }

    #[test]
    fn id_table_builders_match_inserts(
        ids in prop::collection::btree_set(id(), 0..500),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let pairs: Vec<(u32, u64)> = ids.iter().map(|&i| (i, u64::from(i) ^ 0x5555)).collect();
        let inserted: IdTable<u64> = pairs.iter().cloned().collect();

        let mut builder = IdTableBuilder::new();
        for &(i, v) in &pairs {
            builder.push(i, v).unwrap();
        }
        prop_assert_eq!(builder.len(), pairs.len());
        let built = builder.finish();
        prop_assert_eq!(built.validate(), Ok(()));
        prop_assert_eq!(built.height(), inserted.height());
        prop_assert_eq!(&built, &inserted);

        // The same pairs cut into parts: built in parallel, and joined by hand.
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(pairs.len() + 1)).collect();
        at.push(0);
        at.push(pairs.len());
        at.sort_unstable();
        let parts: Vec<Vec<(u32, u64)>> = at.windows(2).map(|w| pairs[w[0]..w[1]].to_vec()).collect();
        let from_parts = IdTable::from_sorted_parts(parts.clone()).unwrap();
        prop_assert_eq!(from_parts.validate(), Ok(()));
        prop_assert_eq!(&from_parts, &inserted);
        let mut joined = IdTable::new();
        for part in parts {
            let mut b = IdTableBuilder::new();
            for (i, v) in part {
                b.push(i, v).unwrap();
            }
            joined.append(b.finish()).unwrap();
            prop_assert_eq!(joined.validate(), Ok(()));
        }
        prop_assert_eq!(&joined, &inserted);
    }

    #[test]
    fn id_table_builders_refuse_disorder(ids in prop::collection::btree_set(id(), 2..200), pick in any::<prop::sample::Index>()) {
        let ids: Vec<u32> = ids.into_iter().collect();
        let k = 1 + pick.index(ids.len() - 1);
        // Pushing an ID not above the previous one is refused.
        let mut b = IdTableBuilder::new();
        for &i in &ids[..k] {
            b.push(i, 0u64).unwrap();
        }
        prop_assert_eq!(b.push(ids[k - 1], 0), Err(BuildError::NotAscending { prev: ids[k - 1], id: ids[k - 1] }));
        prop_assert_eq!(b.push(ids[0], 0), Err(BuildError::NotAscending { prev: ids[k - 1], id: ids[0] }));
        // Joining a table that does not come after is refused and changes nothing.
        let low: IdTable<u64> = ids[..k].iter().map(|&i| (i, 1)).collect();
        let high: IdTable<u64> = ids[k - 1..].iter().map(|&i| (i, 2)).collect();
        let mut t = low.clone();
        prop_assert_eq!(t.append(high), Err(BuildError::NotAscending { prev: ids[k - 1], id: ids[k - 1] }));
        prop_assert_eq!(&t, &low);
        let parts = vec![ids[k - 1..].iter().map(|&i| (i, 2)).collect(), ids[..k].iter().map(|&i| (i, 1)).collect()];
        prop_assert!(IdTable::<u64>::from_sorted_parts(parts).is_err());
    }
}

/// A dense table 1..=n built bottom-up.
fn dense_table<V: Clone>(n: u32, value: impl Fn(u32) -> V) -> IdTable<V> {
    let mut b = IdTableBuilder::new();
    for i in 1..=n {
        b.push(i, value(i)).unwrap();
    }
    b.finish()
}

#[test]
fn id_table_single_insert_copies_one_path() {
    let original = dense_table(100_000, u64::from);
    let nodes = original.node_count();
    assert_eq!(original.height(), 2);
    for (id, is_new) in [(54_321, false), (100_100, true), (0, true)] {
        let mut copy = original.clone();
        assert_eq!(copy.shared_nodes_with(&original), nodes);
        copy.insert(id, 7);
        // Root, one inner node, one leaf: everything else is still shared.
        assert_eq!(copy.node_count() - copy.shared_nodes_with(&original), 3);
        assert_eq!(
            copy.node_count(),
            nodes + usize::from(id == 100_100),
            "a new leaf for 100 100"
        );
        assert_eq!(copy.len(), 100_000 + usize::from(is_new));
        assert_eq!(copy.get(id), Some(&7));
        let old = (id != 0 && id <= 100_000).then_some(u64::from(id));
        assert_eq!(original.get(id).copied(), old);
        assert_eq!(original.len(), 100_000);
    }
}

#[test]
fn id_table_batch_copies_each_node_once() {
    let original = dense_table(100_000, |i| Counted(u64::from(i)));
    let mut copy = original.clone();
    let before = clones();
    // 300 changes to IDs 50 000..50 100: the leaves holding 49 984..50 111 (128 values) are
    // copied once each, then changed in place.
    for round in 0..3 {
        for id in 50_000..50_100 {
            copy.insert(id, Counted(u64::from(id) + round));
        }
    }
    assert_eq!(clones() - before, 2 * LEAF_SLOTS);
    for id in 49_990..50_110 {
        assert_eq!(original.get(id), Some(&Counted(u64::from(id))));
        let want = if (50_000..50_100).contains(&id) {
            u64::from(id) + 2
        } else {
            u64::from(id)
        };
        assert_eq!(copy.get(id), Some(&Counted(want)));
    }
    // Removing in a batch copies nothing more than the path, and nothing for missing IDs.
    let mut copy = original.clone();
    let before = clones();
    for id in 70_000..70_050 {
        assert!(copy.remove(id).is_some());
        assert!(copy.remove(id).is_none());
    }
    assert!(clones() - before <= 2 * LEAF_SLOTS);
    assert_eq!(original.len(), 100_000);
    assert_eq!(copy.len(), 100_000 - 50);
}

#[test]
fn id_table_sparse_huge_ids() {
    let mut t = IdTable::new();
    for id in [u32::MAX, u32::MAX - 1, 0, 1, u32::MAX - 64, 1 << 31] {
        assert_eq!(t.insert(id, u64::from(id)), None);
    }
    assert_eq!(t.validate(), Ok(()));
    assert_eq!(t.height(), 5);
    let ids: Vec<u32> = t.iter().map(|(i, _)| i).collect();
    assert_eq!(ids, [0, 1, 1 << 31, u32::MAX - 64, u32::MAX - 1, u32::MAX]);
    assert_eq!(t.get(u32::MAX), Some(&u64::from(u32::MAX)));
    assert_eq!(t.get(u32::MAX - 2), None);
    assert_eq!(t.last_id(), Some(u32::MAX));
    let top: Vec<u32> = t.iter_range(u32::MAX - 1..=u32::MAX).map(|(i, _)| i).collect();
    assert_eq!(top, [u32::MAX - 1, u32::MAX]);
    assert_eq!(t.iter_from(u32::MAX).count(), 1);
    let ranges = t.split_ranges(3);
    assert_eq!(*ranges.last().unwrap().end(), u32::MAX);
    // Removing the high IDs shrinks the tree back to one leaf.
    for id in [u32::MAX, u32::MAX - 1, u32::MAX - 64, 1 << 31] {
        assert_eq!(t.remove(id), Some(u64::from(id)));
        assert_eq!(t.validate(), Ok(()));
    }
    assert_eq!(t.height(), 0);
    assert_eq!(t.node_count(), 1);
    assert_eq!(t.remove(0), Some(0));
    assert_eq!(t.remove(1), Some(1));
    assert!(t.is_empty());
    assert_eq!(t.node_count(), 0);
    assert_eq!(t.validate(), Ok(()));
}

#[test]
fn id_table_memory_dense() {
    // A million dense IDs: about 1.03 x the slot size (`Option<u64>` is 16 octets, as
    // `Option<Arc<[u8]>>` is), within the 1.5 x budget.
    let t = dense_table(1_000_000, u64::from);
    let slot = mem::size_of::<Option<u64>>() as f64;
    let per_value = t.heap_bytes() as f64 / t.len() as f64;
    assert!(per_value <= 1.05 * slot, "{per_value:.2} octets per value");
    assert_eq!(t.height(), 3);
    let many = IdTable::from_sorted_parts(
        (0..8u32)
            .map(|p| {
                (p * 125_000 + 1..=(p + 1) * 125_000)
                    .map(|i| (i, u64::from(i)))
                    .collect()
            })
            .collect(),
    )
    .unwrap();
    assert_eq!(many, t);
    assert_eq!(many.node_count(), t.node_count());
}

// ---------------------------------------------------------------------------------------
// HashTrie

const PREFIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// Keys from families that share long prefixes (to force deep nodes, leaf splits and
/// collapses) and well-mixed ones.
fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => any::<u64>(),
        // Only the low 8 bits differ: deep chains of one-child inner nodes.
        3 => (0u64..200).prop_map(|s| (PREFIX & !0xFF) | s),
        // Only the high 8 bits differ.
        2 => (0u64..200).prop_map(|s| (s << 56) | (PREFIX >> 8)),
        // Only bits 28..36 differ.
        2 => (0u64..200).prop_map(|s| (PREFIX & !(0xFF << 28)) | (s << 28)),
        // A small pool: overwrites and re-inserts.
        1 => (0u64..6).prop_map(mix),
    ]
}

/// The step between keys of a run: low, middle or high bits.
fn stride() -> impl Strategy<Value = u64> {
    prop_oneof![Just(1u64), Just(1 << 28), Just(1 << 56), Just(17), any::<u64>()]
}

#[derive(Debug, Clone)]
enum TrieOp {
    Insert(u64, u64),
    Remove(u64),
    /// `*get_or_insert_with(k, || 0) += add`.
    Add(u64, u64),
    /// `get_mut(k)` then overwrite, if present.
    Overwrite(u64, u64),
    /// Inserts `count` keys `base + i * stride`.
    InsertRun(u64, u64, u8),
    /// Removes `count` keys `base + i * stride`.
    RemoveRun(u64, u64, u8),
    Snapshot,
    ChangeSnapshot(usize, u64, u64),
}

fn trie_op() -> impl Strategy<Value = TrieOp> {
    prop_oneof![
        6 => (key(), any::<u64>()).prop_map(|(k, v)| TrieOp::Insert(k, v)),
        3 => key().prop_map(TrieOp::Remove),
        2 => (key(), 0u64..5).prop_map(|(k, v)| TrieOp::Add(k, v)),
        1 => (key(), any::<u64>()).prop_map(|(k, v)| TrieOp::Overwrite(k, v)),
        1 => (key(), stride(), any::<u8>()).prop_map(|(k, s, n)| TrieOp::InsertRun(k, s, n)),
        1 => (key(), stride(), any::<u8>()).prop_map(|(k, s, n)| TrieOp::RemoveRun(k, s, n)),
        1 => Just(TrieOp::Snapshot),
        1 => (any::<usize>(), key(), any::<u64>()).prop_map(|(s, k, v)| TrieOp::ChangeSnapshot(s, k, v)),
    ]
}

fn run_keys(base: u64, stride: u64, count: u8) -> impl Iterator<Item = u64> {
    (0..u64::from(count)).map(move |i| base.wrapping_add(i.wrapping_mul(stride)))
}

fn check_trie(
    trie: &HashTrie<u64>,
    model: &BTreeMap<u64, u64>,
    probes: &BTreeSet<u64>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(trie.validate(), Ok(()));
    prop_assert_eq!(trie.len(), model.len());
    prop_assert_eq!(trie.is_empty(), model.is_empty());
    let iter = trie.iter();
    prop_assert_eq!(iter.len(), model.len());
    let got: Vec<(u64, &u64)> = iter.collect();
    let want: Vec<(u64, &u64)> = model.iter().map(|(k, v)| (*k, v)).collect();
    prop_assert_eq!(got, want);
    for &p in probes {
        prop_assert_eq!(trie.get(p), model.get(&p), "get({:#x})", p);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn hash_trie_ops_match_btreemap(ops in prop::collection::vec(trie_op(), 1..100)) {
        let mut trie = HashTrie::new();
        let mut model = BTreeMap::new();
        let mut snapshots: Vec<(HashTrie<u64>, BTreeMap<u64, u64>)> = Vec::new();
        let mut probes: BTreeSet<u64> = [0, u64::MAX, PREFIX].into_iter().collect();
        for op in ops {
            match op {
                TrieOp::Insert(k, v) => {
                    probes.insert(k);
                    prop_assert_eq!(trie.insert(k, v), model.insert(k, v));
                }
                TrieOp::Remove(k) => {
                    probes.insert(k);
                    prop_assert_eq!(trie.remove(k), model.remove(&k));
                }
                TrieOp::Add(k, add) => {
                    probes.insert(k);
                    let got = trie.get_or_insert_with(k, || 0);
                    *got += add;
                    let want = model.entry(k).or_insert(0);
                    *want += add;
                    prop_assert_eq!(*got, *want);
                }
                TrieOp::Overwrite(k, v) => {
                    probes.insert(k);
                    match (trie.get_mut(k), model.get_mut(&k)) {
                        (Some(a), Some(b)) => {
                            *a = v;
                            *b = v;
                        }
                        (None, None) => {}
                        (a, b) => prop_assert!(false, "get_mut({:#x}): {:?} vs {:?}", k, a, b),
                    }
                }
                TrieOp::InsertRun(base, stride, count) => {
                    for k in run_keys(base, stride, count) {
                        probes.insert(k);
                        prop_assert_eq!(trie.insert(k, k ^ 1), model.insert(k, k ^ 1));
                    }
                }
                TrieOp::RemoveRun(base, stride, count) => {
                    for k in run_keys(base, stride, count) {
                        prop_assert_eq!(trie.remove(k), model.remove(&k));
                    }
                }
                TrieOp::Snapshot => snapshots.push((trie.clone(), model.clone())),
                TrieOp::ChangeSnapshot(s, k, v) => {
                    if !snapshots.is_empty() {
                        let at = s % snapshots.len();
                        let (t, m) = &mut snapshots[at];
                        prop_assert_eq!(t.insert(k, v), m.insert(k, v));
                        probes.insert(k);
                    }
                }
            }
            check_trie(&trie, &model, &probes)?;
        }
        for (t, m) in &snapshots {
            check_trie(t, m, &probes)?;
        }
    }

    /// Many keys under one long prefix, then removed in random order: the trie must split
    /// into deep nodes and collapse back to a single leaf.
    #[test]
    fn hash_trie_deep_split_and_collapse(
        base in key(),
        stride in stride(),
        n in (LEAF_MAX + 1)..(4 * LEAF_MAX),
        order in any::<prop::sample::Index>(),
    ) {
        let keys: Vec<u64> = run_keys(base, stride, 255).take(n).collect();
        let mut trie = HashTrie::new();
        let mut model = BTreeMap::new();
        let probes: BTreeSet<u64> = keys.iter().copied().collect();
        for &k in &keys {
            *trie.get_or_insert_with(k, || 0) += 1;
            *model.entry(k).or_insert(0) += 1;
        }
        check_trie(&trie, &model, &probes)?;
        if model.len() > LEAF_MAX {
            prop_assert!(trie.shape().inner_nodes > 0);
        }
        // Remove in an order rotated by `order`, checking at every step.
        let mut sorted: Vec<u64> = probes.iter().copied().collect();
        let r = order.index(sorted.len());
        sorted.rotate_left(r);
        for (step, k) in sorted.iter().enumerate() {
            prop_assert_eq!(trie.remove(*k), model.remove(k));
            if step % 7 == 0 || model.len() <= COLLAPSE_MAX + 1 {
                check_trie(&trie, &model, &probes)?;
            }
            if model.len() <= COLLAPSE_MAX {
                let shape = trie.shape();
                prop_assert_eq!(shape.inner_nodes, 0);
                prop_assert_eq!(shape.leaves, usize::from(!model.is_empty()));
            }
        }
        prop_assert!(trie.is_empty());
    }

    #[test]
    fn hash_trie_from_vec_matches_inserts(pairs in prop::collection::vec((key(), any::<u64>()), 0..400)) {
        let mut inserted = HashTrie::new();
        let mut model = BTreeMap::new();
        for &(k, v) in &pairs {
            inserted.insert(k, v);
            model.insert(k, v);
        }
        let built = HashTrie::from_vec(pairs.clone());
        let probes: BTreeSet<u64> = pairs.iter().map(|p| p.0).collect();
        check_trie(&built, &model, &probes)?;
        check_trie(&inserted, &model, &probes)?;
        prop_assert_eq!(&built, &inserted);
        let collected: HashTrie<u64> = pairs.into_iter().collect();
        prop_assert_eq!(&collected, &inserted);
    }
}

#[test]
fn hash_trie_single_change_copies_one_path() {
    let original = HashTrie::from_vec((0..100_000u64).map(|i| (mix(i), i)).collect());
    let nodes = original.node_count();
    let depth = original.shape().max_depth as usize;
    for (k, is_new) in [(mix(4_242), false), (mix(1 << 40), true)] {
        let mut copy = original.clone();
        assert_eq!(copy.shared_nodes_with(&original), nodes);
        *copy.get_or_insert_with(k, || 0) += 1;
        let copied = copy.node_count() - copy.shared_nodes_with(&original);
        assert!(
            (1..=depth + 1).contains(&copied),
            "{copied} nodes copied, depth {depth}"
        );
        assert_eq!(copy.len(), 100_000 + usize::from(is_new));
        assert_eq!(original.len(), 100_000);
        assert_eq!(original.get(k).copied(), (!is_new).then_some(4_242));
        assert_eq!(copy.get(k).copied(), Some(if is_new { 1 } else { 4_243 }));
    }
    // Lookups, and changes of missing keys, copy nothing.
    let mut copy = original.clone();
    assert!(copy.get_mut(mix(1 << 41)).is_none());
    assert!(copy.remove(mix(1 << 41)).is_none());
    assert_eq!(copy.shared_nodes_with(&original), nodes);
}

#[test]
fn hash_trie_batch_copies_each_node_once() {
    let original = HashTrie::from_vec((0..100_000u64).map(|i| (mix(i), Counted(i))).collect());
    // With these keys every leaf sits at depth 3: a leaf holds the keys that share their
    // top 12 bits.
    assert_eq!(original.shape().max_depth, 3);
    assert_eq!(original.shape().inner_nodes, 1 + 16 + 256);
    let leaf_of = |k: u64| k >> 52;
    let (first, first_value) = original.iter().next().map(|(k, v)| (k, v.clone())).unwrap();
    let first_leaf: Vec<u64> = original
        .iter()
        .map(|(k, _)| k)
        .take_while(|&k| leaf_of(k) == leaf_of(first))
        .collect();
    assert!(first_leaf.len() > 1 && first_leaf.len() <= LEAF_MAX);

    // 100 changes to the keys of one leaf: its entries are cloned once.
    let mut copy = original.clone();
    let before = clones();
    for round in 0..100 {
        let k = first_leaf[round % first_leaf.len()];
        copy.get_or_insert_with(k, || Counted(0)).0 += 1;
    }
    assert_eq!(clones() - before, first_leaf.len());

    // 100 new keys in that leaf's range: it grows past LEAF_MAX and splits in place
    // (entries move, they are not cloned).
    let new_key = |i: u64| (leaf_of(first) << 52) | (i << 20) | 0xABC;
    let before = clones();
    for i in 0..100u64 {
        assert!(copy.insert(new_key(i), Counted(i)).is_none());
    }
    assert_eq!(clones() - before, 0, "the leaf was already copied");
    assert_eq!(copy.validate(), Ok(()));
    assert!(copy.shape().max_depth > 3);

    // The same inserts into a fresh clone copy the shared leaf once.
    let mut fresh = original.clone();
    let before = clones();
    for i in 0..100u64 {
        fresh.insert(new_key(i), Counted(i));
    }
    assert_eq!(clones() - before, first_leaf.len());
    assert_eq!(original.len(), 100_000);
    assert_eq!(original.get(first), Some(&first_value));
    assert_eq!(original.get(new_key(0)), None);
    let bumps = (0..100).filter(|r| r % first_leaf.len() == 0).count() as u64;
    assert_eq!(copy.get(first), Some(&Counted(first_value.0 + bumps)));
}

#[test]
fn hash_trie_make_that_panics_changes_nothing() {
    let mut trie = HashTrie::from_vec((0..200u64).map(|i| ((PREFIX & !0xFF) | i, i)).collect());
    let before = trie.clone();
    let missing = (PREFIX & !0xFF) | 0xF0;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        *trie.get_or_insert_with(missing, || panic!("no value")) += 1;
    }));
    assert!(result.is_err());
    assert_eq!(trie.validate(), Ok(()));
    assert_eq!(trie, before);
    assert_eq!(trie.shared_nodes_with(&before), before.node_count());
}

/// Every key of a large trie (its deepest leaves four levels down) is found with its value, and keys
/// never inserted are not, before and after removing every third key.
#[test]
fn hash_trie_get_at_scale() {
    let n = 200_000u64;
    let mut trie = HashTrie::from_vec((0..n).map(|i| (mix(i), i)).collect());
    assert_eq!(trie.shape().max_depth, 4);
    // `mix` is a bijection: keys of other counters are not in the trie.
    let missing = |i: u64| mix(i + (1 << 40));
    for i in 0..n {
        assert_eq!(trie.get(mix(i)), Some(&i), "key {i}");
        assert_eq!(trie.get(missing(i)), None, "missing key {i}");
    }
    for i in (0..n).step_by(3) {
        assert_eq!(trie.remove(mix(i)), Some(i));
    }
    assert_eq!(trie.validate(), Ok(()));
    for i in 0..n {
        let want = (i % 3 != 0).then_some(i);
        assert_eq!(trie.get(mix(i)).copied(), want, "key {i}");
        assert_eq!(trie.get(missing(i)), None, "missing key {i}");
    }
}

#[test]
fn hash_trie_memory() {
    // A million well-mixed keys with 16-octet values: 24-octet entries.
    let n = 1_000_000u64;
    let entry = mem::size_of::<(u64, [u64; 2])>() as f64;
    assert_eq!(entry, 24.0);
    let bulk = HashTrie::from_vec((0..n).map(|i| (mix(i), [i, i])).collect());
    let per_key = bulk.heap_bytes() as f64 / n as f64;
    assert!(per_key <= 1.25 * entry, "bulk: {per_key:.2} octets per key");
    let mut inserted = HashTrie::new();
    for i in 0..n {
        inserted.insert(mix(i), [i, i]);
    }
    let per_key_inserted = inserted.heap_bytes() as f64 / n as f64;
    assert!(
        per_key_inserted <= 1.25 * entry,
        "inserted: {per_key_inserted:.2} octets per key"
    );
    assert_eq!(bulk, inserted);
}

/// The band of memory per key over key counts from 5 000 to 5 000 000 that the module
/// docs state. Slow in a debug build: run with `--release -- --ignored`.
#[test]
#[ignore]
fn hash_trie_memory_sweep() {
    let entry = mem::size_of::<(u64, [u64; 2])>() as f64;
    let (mut lo, mut hi) = (f64::MAX, 0f64);
    let mut n = 5_000u64;
    while n <= 5_000_000 {
        let t = HashTrie::from_vec((0..n).map(|i| (mix(i), [i, i])).collect());
        let ratio = t.heap_bytes() as f64 / n as f64 / entry;
        lo = lo.min(ratio);
        hi = hi.max(ratio);
        n = n * 11 / 10;
    }
    println!("memory per key: {lo:.2} x to {hi:.2} x the entry size");
    assert!(lo >= 1.0 && hi <= 1.5, "{lo:.2} x to {hi:.2} x");
}
