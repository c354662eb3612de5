//! The ordering index against a model (`BTreeSet<(Vec<u8>, u32)>`):
//! - random insert/remove/contains sequences, with after every step a random range query
//!   (all bound kinds, empty and inverted ranges included), a random prefix query, the same
//!   range walked descending and from both ends at once, the length and the structural
//!   invariants; run with tiny nodes (deep trees, every split, borrow and merge path), odd
//!   node sizes, and the default sizes;
//! - persistence: clones taken at random points still equal the model saved with them after
//!   every later write;
//! - `from_sorted` equals inserting one by one, drops duplicates, and refuses unsorted input
//!   and long keys;
//! - 200,000 pairs with the default sizes: inserted, then half removed, checked after each.

use std::collections::BTreeSet;
use std::ops::Bound;

use larch_store::ordindex::{BuildError, KeyTooLong, OrdIndex, OrdTree, MAX_KEY_LEN};
use proptest::prelude::*;

type Model = BTreeSet<(Vec<u8>, u32)>;

/// Keys over four octets (two of them the extremes), 0 to 4 long: many equal keys with
/// different IDs, many shared prefixes, the empty key.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0x00u8, b'a', b'b', 0xff]), 0..5)
}

fn id() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..6, Just(u32::MAX)]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, u32),
    Remove(Vec<u8>, u32),
    Contains(Vec<u8>, u32),
    /// Inserts many pairs, one by one (grows trees with the default node sizes).
    InsertAll(Vec<(Vec<u8>, u32)>),
    /// Removes every pair whose key starts with the prefix, one by one (cascading merges).
    RemovePrefix(Vec<u8>),
    /// Keeps a clone of the index and of the model.
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (key(), id()).prop_map(|(k, i)| Op::Insert(k, i)),
        3 => (key(), id()).prop_map(|(k, i)| Op::Remove(k, i)),
        1 => (key(), id()).prop_map(|(k, i)| Op::Contains(k, i)),
        1 => prop::collection::vec(prop::sample::select(vec![0x00u8, b'a', b'b', 0xff]), 1..3)
            .prop_map(Op::RemovePrefix),
        1 => Just(Op::Snapshot),
        1 => prop::collection::vec((key(), id()), 0..150).prop_map(Op::InsertAll),
    ]
}

/// A query checked after each step.
#[derive(Debug, Clone)]
struct Query {
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    prefix: Vec<u8>,
    /// Which end to take from at each step of the two-ended walk (bit `i % 64`).
    ends: u64,
}

fn query() -> impl Strategy<Value = Query> {
    (bound(), bound(), key(), any::<u64>()).prop_map(|(lower, upper, prefix, ends)| Query {
        lower,
        upper,
        prefix,
        ends,
    })
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
    }
}

fn model_range(model: &Model, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> Vec<(Vec<u8>, u32)> {
    model
        .iter()
        .filter(|(k, _)| match lower {
            Bound::Unbounded => true,
            Bound::Included(b) => k >= b,
            Bound::Excluded(b) => k > b,
        })
        .filter(|(k, _)| match upper {
            Bound::Unbounded => true,
            Bound::Included(b) => k <= b,
            Bound::Excluded(b) => k < b,
        })
        .cloned()
        .collect()
}

fn owned<'a>(it: impl Iterator<Item = (&'a [u8], u32)>) -> Vec<(Vec<u8>, u32)> {
    it.map(|(k, id)| (k.to_vec(), id)).collect()
}

fn all(model: &Model) -> Vec<(Vec<u8>, u32)> {
    model.iter().cloned().collect()
}

/// Compares every query of `q` on `idx` with the model.
fn check_queries<const L: usize, const F: usize>(
    idx: &OrdTree<L, F>,
    model: &Model,
    q: &Query,
) -> Result<(), TestCaseError> {
    let (lower, upper) = (as_slice(&q.lower), as_slice(&q.upper));
    let want = model_range(model, &q.lower, &q.upper);
    prop_assert_eq!(owned(idx.range(lower, upper)), want.clone(), "range {:?}", q);
    let ids: Vec<u32> = want.iter().map(|(_, id)| *id).collect();
    prop_assert_eq!(idx.ids_in_range(lower, upper), ids);

    let mut rev = want.clone();
    rev.reverse();
    prop_assert_eq!(
        owned(idx.range_rev(lower, upper)),
        rev.clone(),
        "range_rev {:?}",
        q
    );
    prop_assert_eq!(
        owned(idx.iter().rev()),
        all(model).into_iter().rev().collect::<Vec<_>>()
    );

    // Both ends at once: front items ascend from the start, back items descend from the
    // end, and together they are the range, each pair once.
    let mut it = idx.range(lower, upper);
    let (mut front, mut back) = (Vec::new(), Vec::new());
    for step in 0.. {
        let from_back = q.ends >> (step % 64) & 1 == 1;
        let item = if from_back { it.next_back() } else { it.next() };
        match item {
            Some((k, id)) if from_back => back.push((k.to_vec(), id)),
            Some((k, id)) => front.push((k.to_vec(), id)),
            None => break,
        }
    }
    prop_assert!(
        it.next().is_none() && it.next_back().is_none(),
        "walk resumed after its end"
    );
    back.reverse();
    front.extend(back);
    prop_assert_eq!(front, want, "two-ended walk {:?}", q);

    let want: Vec<_> = model
        .iter()
        .filter(|(k, _)| k.starts_with(&q.prefix))
        .cloned()
        .collect();
    prop_assert_eq!(
        owned(idx.prefix(&q.prefix)),
        want.clone(),
        "prefix {:?}",
        q.prefix
    );
    let mut rev = want;
    rev.reverse();
    prop_assert_eq!(
        owned(idx.prefix(&q.prefix).rev()),
        rev,
        "prefix rev {:?}",
        q.prefix
    );

    prop_assert_eq!(owned(idx.iter()), all(model));
    prop_assert_eq!(idx.len(), model.len());
    prop_assert_eq!(idx.is_empty(), model.is_empty());
    Ok(())
}

/// Runs `steps` on an index with node sizes `L`, `F` and on the model, checking after each.
fn run_ops<const L: usize, const F: usize>(steps: &[(Op, Query)]) -> Result<(), TestCaseError> {
    let mut idx = OrdTree::<L, F>::new();
    let mut model = Model::new();
    let mut snapshots: Vec<(OrdTree<L, F>, Model)> = Vec::new();
    for (op, q) in steps {
        match op {
            Op::Insert(k, id) => {
                prop_assert_eq!(idx.insert(k, *id), Ok(model.insert((k.clone(), *id))));
            }
            Op::Remove(k, id) => prop_assert_eq!(idx.remove(k, *id), model.remove(&(k.clone(), *id))),
            Op::Contains(k, id) => prop_assert_eq!(idx.contains(k, *id), model.contains(&(k.clone(), *id))),
            Op::InsertAll(pairs) => {
                for (k, id) in pairs {
                    prop_assert_eq!(idx.insert(k, *id), Ok(model.insert((k.clone(), *id))));
                }
            }
            Op::RemovePrefix(p) => {
                let doomed: Vec<_> = model.iter().filter(|(k, _)| k.starts_with(p)).cloned().collect();
                for pair in doomed {
                    prop_assert!(idx.remove(&pair.0, pair.1));
                    model.remove(&pair);
                }
            }
            Op::Snapshot => snapshots.push((idx.clone(), model.clone())),
        }
        if let Err(e) = idx.check_invariants() {
            return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
        }
        check_queries(&idx, &model, q)?;
        // Clones taken earlier are unchanged by this step.
        for (i, (snap, saved)) in snapshots.iter().enumerate() {
            prop_assert_eq!(snap.len(), saved.len(), "snapshot {}", i);
            prop_assert_eq!(owned(snap.iter()), all(saved), "snapshot {} after {:?}", i, op);
        }
    }
    for (snap, saved) in &snapshots {
        snap.check_invariants().map_err(TestCaseError::fail)?;
        check_queries(snap, saved, &steps[0].1)?;
    }
    Ok(())
}

fn steps(max: usize) -> impl Strategy<Value = Vec<(Op, Query)>> {
    prop::collection::vec((op(), query()), 1..max)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Leaves of 2 pairs, inner nodes of 4 children: a few dozen pairs make a tree of
    /// four or five levels.
    #[test]
    fn ops_match_model_tiny_nodes(steps in steps(120)) {
        run_ops::<2, 4>(&steps)?;
    }

    /// Odd sizes: halves and minimum fills round.
    #[test]
    fn ops_match_model_odd_nodes(steps in steps(120)) {
        run_ops::<5, 5>(&steps)?;
    }

    /// The default sizes (mostly a single leaf at this scale, then two levels).
    #[test]
    fn ops_match_model_default_nodes(steps in steps(80)) {
        run_ops::<{ larch_store::ordindex::LEAF_CAP }, { larch_store::ordindex::INNER_CAP }>(&steps)?;
    }

    /// `from_sorted` on sorted pairs (with duplicates) equals inserting them one by one,
    /// and stays correct under later writes.
    #[test]
    fn from_sorted_equals_inserts(
        pairs in prop::collection::vec((key(), id()), 0..600),
        dup_every in 1usize..8,
        later in prop::collection::vec((op(), query()), 0..40),
    ) {
        let model: Model = pairs.iter().cloned().collect();
        let mut sorted: Vec<(Vec<u8>, u32)> = Vec::new();
        for (i, p) in model.iter().enumerate() {
            sorted.push(p.clone());
            if i % dup_every == 0 {
                sorted.push(p.clone());
            }
        }
        let bulk = OrdTree::<3, 4>::from_sorted(sorted.iter().map(|(k, id)| (k, *id))).unwrap();
        bulk.check_invariants().map_err(TestCaseError::fail)?;
        let mut one_by_one = OrdTree::<3, 4>::new();
        for (k, id) in &pairs {
            one_by_one.insert(k, *id).unwrap();
        }
        prop_assert_eq!(bulk.len(), model.len());
        prop_assert_eq!(owned(bulk.iter()), owned(one_by_one.iter()));
        prop_assert_eq!(owned(bulk.iter()), all(&model));

        let default = OrdIndex::from_sorted(model.iter().map(|(k, id)| (k, *id))).unwrap();
        default.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(owned(default.iter()), all(&model));

        // Later writes on the bulk-built tree (full leaves split at once).
        let mut idx = bulk.clone();
        let mut m = model.clone();
        for (op, q) in &later {
            match op {
                Op::Insert(k, id) => prop_assert_eq!(idx.insert(k, *id), Ok(m.insert((k.clone(), *id)))),
                Op::Remove(k, id) | Op::Contains(k, id) => {
                    prop_assert_eq!(idx.remove(k, *id), m.remove(&(k.clone(), *id)));
                }
                Op::InsertAll(_) | Op::RemovePrefix(_) | Op::Snapshot => {}
            }
            idx.check_invariants().map_err(TestCaseError::fail)?;
            check_queries(&idx, &m, q)?;
        }
        prop_assert_eq!(owned(bulk.iter()), all(&model), "the bulk-built version changed");
    }

    /// Unsorted input is refused at the first pair below its predecessor.
    #[test]
    fn from_sorted_refuses_unsorted(pairs in prop::collection::vec((key(), id()), 2..200)) {
        let first_descent = pairs.windows(2).position(|w| w[1] < w[0]).map(|i| i + 1);
        let got = OrdTree::<3, 4>::from_sorted(pairs.iter().map(|(k, id)| (k, *id)));
        match first_descent {
            Some(index) => prop_assert_eq!(got.err(), Some(BuildError::NotAscending { index })),
            None => {
                let idx = got.unwrap();
                idx.check_invariants().map_err(TestCaseError::fail)?;
                let model: Model = pairs.into_iter().collect();
                prop_assert_eq!(owned(idx.iter()), all(&model));
            }
        }
    }
}

#[test]
fn key_length_limit() {
    let mut idx = OrdIndex::new();
    let long = vec![b'x'; MAX_KEY_LEN + 1];
    assert_eq!(idx.insert(&long, 1), Err(KeyTooLong { len: MAX_KEY_LEN + 1 }));
    assert_eq!(idx.len(), 0);
    assert!(!idx.contains(&long, 1));
    let max = vec![b'x'; MAX_KEY_LEN];
    // Enough keys of the longest length to fill and split nodes.
    for id in 0..500 {
        assert_eq!(idx.insert(&max, id), Ok(true));
    }
    assert_eq!(idx.insert(&max, 7), Ok(false));
    idx.check_invariants().unwrap();
    assert_eq!(idx.prefix(&max).count(), 500);

    let pairs = [(vec![b'a'], 1), (long.clone(), 2)];
    let err = OrdTree::<4, 4>::from_sorted(pairs.iter().map(|(k, id)| (k, *id))).unwrap_err();
    assert_eq!(
        err,
        BuildError::KeyTooLong {
            index: 1,
            source: KeyTooLong { len: MAX_KEY_LEN + 1 }
        }
    );
}

/// A 12-octet key for pair `n`, distinct for distinct `n`.
fn key12(n: u32) -> Vec<u8> {
    format!("k{:011}", n).into_bytes()
}

#[test]
fn large_insert_then_remove_half() {
    const N: u32 = 200_000;
    // A fixed permutation of 0..N (multiplier coprime with N), so inserts come in a
    // scattered order.
    let order: Vec<u32> = (0..N)
        .map(|i| ((u64::from(i) * 7_919) % u64::from(N)) as u32)
        .collect();
    let mut idx = OrdIndex::new();
    for &n in &order {
        // Key `n / 2` for ID `n`: two IDs per key, side by side.
        assert_eq!(idx.insert(&key12(n / 2), n), Ok(true));
    }
    idx.check_invariants().unwrap();
    assert_eq!(idx.len(), N as usize);
    // Minimum fill 32 on every level: 200,000 pairs need at most 4 levels above the leaves.
    assert!(idx.height() <= 4, "height {}", idx.height());
    let want: Vec<(Vec<u8>, u32)> = (0..N).map(|n| (key12(n / 2), n)).collect();
    assert_eq!(owned(idx.iter()), want);

    let before = idx.clone();
    for &n in order.iter().filter(|&&n| n % 2 == 0) {
        assert!(idx.remove(&key12(n / 2), n));
    }
    idx.check_invariants().unwrap();
    assert_eq!(idx.len(), (N / 2) as usize);
    let want_half: Vec<(Vec<u8>, u32)> = (0..N).filter(|n| n % 2 == 1).map(|n| (key12(n / 2), n)).collect();
    assert_eq!(owned(idx.iter()), want_half);
    assert_eq!(
        owned(idx.iter().rev()),
        want_half.iter().rev().cloned().collect::<Vec<_>>()
    );
    let lo = key12(1_000);
    let hi = key12(2_000);
    let got = idx.ids_in_range(Bound::Included(&lo), Bound::Excluded(&hi));
    assert_eq!(got, (2_000..4_000).filter(|n| n % 2 == 1).collect::<Vec<u32>>());
    assert_eq!(idx.prefix(b"k0000000012").count(), 10);

    // The clone taken before the removals is unchanged.
    before.check_invariants().unwrap();
    assert_eq!(owned(before.iter()), want);

    // Removing everything leaves an empty leaf root.
    for n in (0..N).filter(|n| n % 2 == 1) {
        assert!(idx.remove(&key12(n / 2), n));
    }
    idx.check_invariants().unwrap();
    assert_eq!((idx.len(), idx.height()), (0, 0));
    assert_eq!(idx.iter().next(), None);
}

#[test]
fn bulk_build_memory() {
    const N: u32 = 200_000;
    let idx = OrdIndex::from_sorted((0..N).map(|n| (key12(n), n))).unwrap();
    idx.check_invariants().unwrap();
    assert_eq!(idx.len(), N as usize);
    // 12 octets of key and 8 of slot per pair, plus node overhead: full leaves stay under
    // 23 octets per pair.
    let per_pair = idx.heap_bytes() as f64 / f64::from(N);
    assert!(per_pair > 20.0 && per_pair < 23.0, "{per_pair} octets per pair");
}
