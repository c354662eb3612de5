//! `IdSet` against a `BTreeSet<u32>` model: random insert/remove/contains sequences that
//! cross every form threshold (checking the content after every step, and that clones
//! taken along the way never change), set operations for pairs of sets in every
//! combination of forms, the builders, and the memory figures the forms promise.

use std::collections::BTreeSet;
use std::mem::size_of;

use larch_store::idset::{
    IdSet, IdSetBuilder, IdSetForm, ARRAY_MAX, ARRAY_SHRINK, BITMAP_MIN_IDS_PER_BLOCK,
    BITMAP_SHRINK_IDS_PER_BLOCK, SPARSE_BLOCK_MAX, SPARSE_BLOCK_SHRINK,
};
use proptest::prelude::*;

type Model = BTreeSet<u32>;

/// Cases per property (at least 512, as the store's test policy asks).
const CASES: u32 = 512;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        ..ProptestConfig::default()
    }
}

/// A small deterministic generator, so that big sets come from one proptest seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Checks everything observable about `set` against `model`.
fn check(set: &IdSet, model: &Model) -> Result<(), TestCaseError> {
    set.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(set.len(), model.len());
    prop_assert_eq!(set.is_empty(), model.is_empty());
    prop_assert_eq!(set.first(), model.first().copied());
    let iter = set.iter();
    prop_assert_eq!(iter.len(), model.len());
    prop_assert!(iter.eq(model.iter().copied()), "content differs from the model");
    let expected_form = match model.len() {
        0 => Some(IdSetForm::Empty),
        1 => Some(IdSetForm::One),
        n if n <= ARRAY_SHRINK => Some(IdSetForm::Array),
        _ => None,
    };
    if let Some(form) = expected_form {
        prop_assert_eq!(set.form(), form);
    }
    Ok(())
}

fn to_vec(model: &Model) -> Vec<u32> {
    model.iter().copied().collect()
}

/// IDs from mixed distributions: a small range (dense blocks), the whole range, clusters
/// around block boundaries, the top of the range.
fn arb_id() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => 0u32..300,
        2 => any::<u32>(),
        3 => (prop::sample::select(vec![1u32, 2, 3, 0x7fff, 0xffff]), -40i64..40)
            .prop_map(|(block, delta)| (i64::from(block) * 65_536 + delta).clamp(0, i64::from(u32::MAX)) as u32),
        1 => (u32::MAX - 64)..=u32::MAX,
    ]
}

/// How a sequence test starts: the IDs inserted one by one (in this order), then how many
/// to remove again (from the end of the list), and the window most operations draw from.
#[derive(Debug, Clone)]
struct Start {
    grow: Vec<u32>,
    remove: usize,
    window: std::ops::Range<u32>,
}

/// Starts placed just below or above each form threshold, so that the operations cross it
/// back and forth; the insertion order is shuffled half of the time.
fn arb_start() -> impl Strategy<Value = Start> {
    let block = prop::sample::select(vec![0u32, 1, 0xffff]);
    let starts = prop_oneof![
        // Anything small.
        Just(Start {
            grow: Vec::new(),
            remove: 0,
            window: 0..300
        }),
        // Around ARRAY_MAX: one block, densely.
        (block.clone(), -8i64..8).prop_map(|(b, d)| {
            let base = b << 16;
            let n = (ARRAY_MAX as i64 + d) as u32;
            Start {
                grow: (base..base + n).collect(),
                remove: 0,
                window: base..base + n + 64,
            }
        }),
        // Just above ARRAY_SHRINK, as a bitmap (grown past ARRAY_MAX, then shrunk).
        (block.clone(), 0usize..8).prop_map(|(b, d)| {
            let base = b << 16;
            let n = ARRAY_MAX as u32 + 1;
            Start {
                grow: (base..base + n).collect(),
                remove: ARRAY_MAX + 1 - ARRAY_SHRINK - d - 1,
                window: base..base + n,
            }
        }),
        // Around SPARSE_BLOCK_MAX in one block.
        (block.clone(), -8i64..8).prop_map(|(b, d)| {
            let base = b << 16;
            let n = (SPARSE_BLOCK_MAX as i64 + d) as u32;
            Start {
                grow: (base..base + n).collect(),
                remove: 0,
                window: base..base + n + 64,
            }
        }),
        // Just above SPARSE_BLOCK_SHRINK, as a dense block (grown past SPARSE_BLOCK_MAX).
        (block, 0usize..8).prop_map(|(b, d)| {
            let base = b << 16;
            let n = SPARSE_BLOCK_MAX as u32 + 1;
            Start {
                grow: (base..base + n).collect(),
                remove: SPARSE_BLOCK_MAX + 1 - SPARSE_BLOCK_SHRINK - d - 1,
                window: base..base + n,
            }
        }),
        // A bitmap right at the density limit: new blocks dilute it into an array.
        (0usize..4).prop_map(|extra| {
            let blocks = (ARRAY_MAX / BITMAP_MIN_IDS_PER_BLOCK + 1) as u32;
            let per_block = (BITMAP_MIN_IDS_PER_BLOCK + extra) as u32;
            let grow = (0..blocks)
                .flat_map(|b| (0..per_block).map(move |i| (b << 16) | (i * 7)))
                .collect();
            Start {
                grow,
                remove: 0,
                window: 0..(blocks + 200) << 16,
            }
        }),
    ];
    (starts, any::<u64>(), any::<bool>()).prop_map(|(mut start, seed, shuffle)| {
        if shuffle {
            let mut rng = SplitMix(seed);
            for i in (1..start.grow.len()).rev() {
                start.grow.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        start
    })
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u32),
    Remove(u32),
    Contains(u32),
    /// Keep a clone of the set and a copy of the model, compared again at the end.
    Snapshot,
}

fn arb_ops(window: std::ops::Range<u32>) -> impl Strategy<Value = Vec<Op>> {
    let id = prop_oneof![4 => window, 1 => arb_id()];
    let op = prop_oneof![
        4 => id.clone().prop_map(Op::Insert),
        4 => id.clone().prop_map(Op::Remove),
        1 => id.prop_map(Op::Contains),
        1 => Just(Op::Snapshot),
    ];
    prop::collection::vec(op, 1..80)
}

fn arb_sequence() -> impl Strategy<Value = (Start, Vec<Op>)> {
    arb_start().prop_flat_map(|start| {
        let window = start.window.clone();
        (Just(start), arb_ops(window))
    })
}

proptest! {
    #![proptest_config(config())]

    /// Every step agrees with the model, and clones taken along the way never change.
    #[test]
    fn sequences_match_the_model((start, ops) in arb_sequence()) {
        let mut set = IdSet::new();
        let mut model = Model::new();
        for &id in &start.grow {
            prop_assert_eq!(set.insert(id), model.insert(id));
        }
        for &id in start.grow.iter().rev().take(start.remove) {
            prop_assert_eq!(set.remove(id), model.remove(&id));
        }
        check(&set, &model)?;
        let mut snapshots = vec![(set.clone(), model.clone())];
        for op in &ops {
            match *op {
                Op::Insert(id) => prop_assert_eq!(set.insert(id), model.insert(id), "insert {}", id),
                Op::Remove(id) => prop_assert_eq!(set.remove(id), model.remove(&id), "remove {}", id),
                Op::Contains(id) => prop_assert_eq!(set.contains(id), model.contains(&id)),
                Op::Snapshot => snapshots.push((set.clone(), model.clone())),
            }
            check(&set, &model)?;
        }
        for (snapshot, expected) in &snapshots {
            check(snapshot, expected)?;
        }
    }
}

/// The kinds of set the operation tests combine, one per form and block layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Empty,
    One,
    SmallArray,
    /// More than `ARRAY_MAX` IDs, one per block: stays an array.
    SpreadArray,
    /// A bitmap of sparse blocks.
    SparseBitmap,
    /// A bitmap of dense blocks (and maybe a sparse one at the edge).
    DenseBitmap,
    /// A bitmap kept below `ARRAY_MAX` IDs by hysteresis.
    ShrunkBitmap,
    /// A bitmap whose dense block was kept below `SPARSE_BLOCK_MAX` by hysteresis.
    ShrunkDenseBlock,
}

const KINDS: [Kind; 8] = [
    Kind::Empty,
    Kind::One,
    Kind::SmallArray,
    Kind::SpreadArray,
    Kind::SparseBitmap,
    Kind::DenseBitmap,
    Kind::ShrunkBitmap,
    Kind::ShrunkDenseBlock,
];

/// Builds a set of the given kind from a seed, with its model. Base blocks are drawn from
/// a few values so that two sets often overlap.
fn build(kind: Kind, seed: u64) -> (IdSet, Model) {
    let mut rng = SplitMix(seed);
    let base_block = [0u32, 1, 2][rng.below(3) as usize];
    let base = base_block << 16;
    let mut model = Model::new();
    let set = match kind {
        Kind::Empty => IdSet::new(),
        Kind::One => {
            let id = base + rng.below(70_000) as u32;
            model.insert(id);
            IdSet::one(id)
        }
        Kind::SmallArray => {
            let n = 2 + rng.below(60);
            while (model.len() as u64) < n {
                model.insert(base + rng.below(140_000) as u32);
            }
            IdSet::from_sorted(&to_vec(&model))
        }
        Kind::SpreadArray => {
            let n = ARRAY_MAX as u32 + 1 + rng.below(100) as u32;
            for i in 0..n {
                model.insert(((base_block + i) << 16) | rng.below(65_536) as u32);
            }
            IdSet::from_sorted(&to_vec(&model))
        }
        Kind::SparseBitmap => {
            let blocks = 1 + rng.below(3) as u32;
            let n = ARRAY_MAX as u64 + 1 + rng.below(3000);
            while (model.len() as u64) < n {
                model.insert(base + rng.below(u64::from(blocks) << 16) as u32);
            }
            // Insert in random order: the set grows through every form on the way.
            let mut set = IdSet::new();
            let mut order = to_vec(&model);
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for id in order {
                set.insert(id);
            }
            set
        }
        Kind::DenseBitmap => {
            let start = base + 65_536 - rng.below(20_000) as u32;
            // At least 2 × SPARSE_BLOCK_MAX IDs in the range, at least half of them kept:
            // always above ARRAY_MAX.
            let len = 2 * SPARSE_BLOCK_MAX as u32 + 1 + rng.below(24_000) as u32;
            let keep_per_mille = [1000, 900, 600][rng.below(3) as usize];
            for id in start..start + len {
                if rng.below(1000) < keep_per_mille {
                    model.insert(id);
                }
            }
            let mut builder = IdSetBuilder::new();
            for &id in &model {
                builder.push(id);
            }
            builder.finish()
        }
        Kind::ShrunkBitmap => {
            let mut set = IdSet::new();
            for id in base..base + ARRAY_MAX as u32 + 1 {
                set.insert(id);
                model.insert(id);
            }
            let target = ARRAY_SHRINK + 1 + rng.below((ARRAY_MAX - ARRAY_SHRINK) as u64) as usize;
            while model.len() > target {
                let id = base + rng.below(ARRAY_MAX as u64 + 1) as u32;
                set.remove(id);
                model.remove(&id);
            }
            set
        }
        Kind::ShrunkDenseBlock => {
            let start = base + rng.below(1000) as u32;
            let mut set =
                IdSet::from_sorted(&(start..start + SPARSE_BLOCK_MAX as u32 + 500).collect::<Vec<_>>());
            model.extend(set.iter());
            let target =
                SPARSE_BLOCK_SHRINK + 1 + rng.below((SPARSE_BLOCK_MAX - SPARSE_BLOCK_SHRINK) as u64) as usize;
            while model.len() > target {
                let id = start + rng.below(SPARSE_BLOCK_MAX as u64 + 500) as u32;
                set.remove(id);
                model.remove(&id);
            }
            set
        }
    };
    (set, model)
}

/// The form a kind must have (checked, so the combinations really cover every form).
fn expected_form(kind: Kind) -> IdSetForm {
    match kind {
        Kind::Empty => IdSetForm::Empty,
        Kind::One => IdSetForm::One,
        Kind::SmallArray | Kind::SpreadArray => IdSetForm::Array,
        Kind::SparseBitmap | Kind::DenseBitmap | Kind::ShrunkBitmap | Kind::ShrunkDenseBlock => {
            IdSetForm::Bitmap
        }
    }
}

fn arb_set() -> impl Strategy<Value = (Kind, u64)> {
    (prop::sample::select(KINDS.to_vec()), any::<u64>())
}

/// Checks every binary operation on `a` and `b` against the model, that the inputs do not
/// change, and that changing a result leaves the inputs alone (results share blocks).
fn check_pair(a: &IdSet, ma: &Model, b: &IdSet, mb: &Model) -> Result<(), TestCaseError> {
    let results = [
        (
            "intersection",
            a.intersection(b),
            ma.intersection(mb).copied().collect::<Model>(),
        ),
        ("union", a.union(b), ma.union(mb).copied().collect()),
        (
            "difference a-b",
            a.difference(b),
            ma.difference(mb).copied().collect(),
        ),
        (
            "difference b-a",
            b.difference(a),
            mb.difference(ma).copied().collect(),
        ),
    ];
    prop_assert_eq!(a.intersects(b), !ma.is_disjoint(mb));
    prop_assert_eq!(b.intersects(a), !ma.is_disjoint(mb));
    prop_assert_eq!(a == b, ma == mb);
    for (name, result, expected) in results {
        check(&result, &expected).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        // Change the result where the inputs have IDs: the result (and the inputs, checked
        // below) must not see it. The changed copy is checked by its toggled IDs and length
        // (full content checks of changes are the sequence test's job).
        let mut changed = result.clone();
        let toggled: Model = ma
            .iter()
            .take(3)
            .chain(mb.iter().rev().take(3))
            .copied()
            .collect();
        let mut changed_len = expected.len();
        for &id in &toggled {
            prop_assert_eq!(changed.insert(id), !expected.contains(&id));
            changed_len += usize::from(!expected.contains(&id));
        }
        for &id in &toggled {
            if expected.contains(&id) {
                prop_assert!(changed.remove(id));
                changed_len -= 1;
            }
            prop_assert_eq!(changed.contains(id), !expected.contains(&id));
        }
        changed.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(changed.len(), changed_len);
        check(&result, &expected)?;
    }
    // Sets that share exactly one ID with `a`: `b` minus `a`, plus one ID of `a`.
    let b_only = b.difference(a);
    prop_assert!(!a.intersects(&b_only) && !b_only.intersects(a));
    let ids: Vec<u32> = ma.iter().copied().collect();
    for &id in [ids.first(), ids.get(ids.len() / 2), ids.last()]
        .into_iter()
        .flatten()
    {
        let mut one_shared = b_only.clone();
        one_shared.insert(id);
        prop_assert!(
            a.intersects(&one_shared) && one_shared.intersects(a),
            "sharing only {}",
            id
        );
        prop_assert_eq!(a.intersection(&one_shared), IdSet::one(id));
    }
    check(a, ma)?;
    check(b, mb)?;
    Ok(())
}

/// A small set drawn from two others (every `step`-th ID of each, and a few outside
/// both), so that small-against-large operations meet IDs they share.
fn sample_of(ma: &Model, mb: &Model, seed: u64) -> (IdSet, Model) {
    let mut rng = SplitMix(seed);
    let step = 2 + rng.below(40) as usize;
    let mut model: Model = ma
        .iter()
        .step_by(step)
        .chain(mb.iter().skip(1).step_by(step))
        .copied()
        .collect();
    for _ in 0..rng.below(4) {
        model.insert(rng.below(200_000) as u32);
    }
    (IdSet::from_sorted(&to_vec(&model)), model)
}

proptest! {
    #![proptest_config(config())]

    /// Binary operations on pairs of sets of random forms agree with `BTreeSet`.
    #[test]
    fn operations_match_the_model(a in arb_set(), b in arb_set()) {
        let (sa, ma) = build(a.0, a.1);
        let (sb, mb) = build(b.0, b.1);
        prop_assert_eq!(sa.form(), expected_form(a.0));
        prop_assert_eq!(sb.form(), expected_form(b.0));
        check(&sa, &ma)?;
        check(&sb, &mb)?;
        check_pair(&sa, &ma, &sb, &mb)?;
        let (sc, mc) = sample_of(&ma, &mb, a.1 ^ b.1);
        check_pair(&sa, &ma, &sc, &mc)?;
        check_pair(&sc, &mc, &sb, &mb)?;
    }

    /// Operations of a set with itself, a clone, an equal set of another form, and later
    /// versions of it that share most of its blocks.
    #[test]
    fn operations_with_versions_of_itself(a in arb_set(), seed in any::<u64>()) {
        let (set, model) = build(a.0, a.1);
        check_pair(&set, &model, &set.clone(), &model)?;
        let rebuilt = IdSet::from_sorted(&to_vec(&model));
        prop_assert_eq!(&rebuilt, &set);
        check_pair(&set, &model, &rebuilt, &model)?;

        // A version with one ID swapped for another of the same block: same length, same
        // blocks, possibly another block form; unequal.
        let mut rng = SplitMix(seed);
        let ids = to_vec(&model);
        if let Some(&old) = ids.get(rng.below(ids.len() as u64) as usize) {
            let new = (old & !0xffff) | rng.below(65_536) as u32;
            if !model.contains(&new) {
                let mut swapped = set.clone();
                let mut swapped_model = model.clone();
                prop_assert!(swapped.remove(old) && swapped.insert(new));
                swapped_model.remove(&old);
                swapped_model.insert(new);
                prop_assert_ne!(&swapped, &set);
                prop_assert_ne!(&swapped, &rebuilt);
                prop_assert_ne!(&rebuilt, &swapped);
                check_pair(&set, &model, &swapped, &swapped_model)?;
                check_pair(&rebuilt, &model, &swapped, &swapped_model)?;
            }
        }

        // A version with a few IDs added and removed.
        let mut version = set.clone();
        let mut version_model = model.clone();
        for _ in 0..rng.below(6) {
            let id = match ids.get(rng.below(ids.len() as u64 + 1) as usize) {
                Some(&id) => id,
                None => rng.next() as u32 % 200_000,
            };
            if version_model.remove(&id) {
                prop_assert!(version.remove(id));
            } else {
                prop_assert!(version.insert(id));
                version_model.insert(id);
            }
        }
        check_pair(&set, &model, &version, &version_model)?;
    }

    /// `from_sorted` accepts any input; `FromIterator`, the builder and `Extend` agree.
    #[test]
    fn building_matches_the_model(
        ids in prop::collection::vec(arb_id(), 0..600),
        more in prop::collection::vec(arb_id(), 0..60),
        sorted in any::<bool>(),
    ) {
        let mut ids = ids;
        if sorted {
            ids.sort_unstable();
        }
        let model: Model = ids.iter().copied().collect();
        let from_sorted = IdSet::from_sorted(&ids);
        check(&from_sorted, &model)?;
        let collected: IdSet = ids.iter().copied().collect();
        check(&collected, &model)?;
        let mut builder = IdSetBuilder::new();
        for &id in &ids {
            builder.push(id);
        }
        check(&builder.finish(), &model)?;

        let before = collected.clone();
        let mut extended = collected;
        extended.extend(more.iter().copied());
        let mut extended_model = model.clone();
        extended_model.extend(more.iter().copied());
        check(&extended, &extended_model)?;
        check(&before, &model)?;
    }

    /// Big ascending inputs, dense and spread, through the builder and `from_sorted`; the
    /// sizes often fall next to a threshold.
    #[test]
    fn big_builds_match_the_model(
        seed in any::<u64>(),
        step in prop::sample::select(vec![1u32, 2, 3, 17, 40_000, 1 << 20]),
        size in prop_oneof![
            0u32..40_000,
            (prop::sample::select(vec![ARRAY_MAX as u32, SPARSE_BLOCK_MAX as u32]), 0u32..3)
                .prop_map(|(threshold, d)| threshold - 1 + d),
        ],
    ) {
        let mut rng = SplitMix(seed);
        let n = size;
        let start = rng.below(1 << 20) as u32;
        let ids: Vec<u32> = (0..n).map_while(|i| i.checked_mul(step)?.checked_add(start)).collect();
        let model: Model = ids.iter().copied().collect();
        let built: IdSet = ids.iter().copied().collect();
        check(&built, &model)?;
        check(&IdSet::from_sorted(&ids), &model)?;
    }
}

#[test]
fn every_combination_of_forms() {
    for (i, &ka) in KINDS.iter().enumerate() {
        for (j, &kb) in KINDS.iter().enumerate() {
            for seed in 0..3u64 {
                let (a, ma) = build(ka, seed * 100 + i as u64);
                let (b, mb) = build(kb, seed * 100 + 50 + j as u64);
                assert_eq!(a.form(), expected_form(ka), "{ka:?}");
                assert_eq!(b.form(), expected_form(kb), "{kb:?}");
                check_pair(&a, &ma, &b, &mb).unwrap_or_else(|e| panic!("{ka:?} with {kb:?}: {e}"));
            }
        }
    }
}

#[test]
fn inline_size() {
    assert!(size_of::<IdSet>() <= 16, "IdSet is {} octets", size_of::<IdSet>());
    fn shareable<T: Send + Sync>() {}
    shareable::<IdSet>();
    assert_eq!(IdSet::one(7).heap_bytes(), 0);
    assert_eq!(IdSet::new().heap_bytes(), 0);
}

/// Forms along a dense growth and shrink: promotion at `ARRAY_MAX`, demotion only at
/// `ARRAY_SHRINK`.
#[test]
fn forms_switch_with_hysteresis() {
    let mut set = IdSet::new();
    assert_eq!(set.form(), IdSetForm::Empty);
    set.insert(10);
    assert_eq!(set.form(), IdSetForm::One);
    set.insert(11);
    assert_eq!(set.form(), IdSetForm::Array);
    for id in 12..10 + ARRAY_MAX as u32 {
        set.insert(id);
        assert_eq!(set.form(), IdSetForm::Array);
    }
    assert_eq!(set.len(), ARRAY_MAX);
    let at_max = set.clone();
    set.insert(5);
    assert_eq!(set.form(), IdSetForm::Bitmap);
    assert_eq!(
        at_max.form(),
        IdSetForm::Array,
        "the clone keeps its form and content"
    );
    assert_eq!(at_max.len(), ARRAY_MAX);

    // Alternating at the threshold does not flip forms.
    for _ in 0..100 {
        assert!(set.remove(5));
        assert_eq!(set.form(), IdSetForm::Bitmap);
        assert!(set.insert(5));
        assert_eq!(set.form(), IdSetForm::Bitmap);
    }
    let ids: Vec<u32> = set.iter().collect();
    for (removed, &id) in ids.iter().enumerate() {
        set.remove(id);
        let len = ids.len() - removed - 1;
        let expected = match len {
            0 => IdSetForm::Empty,
            1 => IdSetForm::One,
            n if n <= ARRAY_SHRINK => IdSetForm::Array,
            _ => IdSetForm::Bitmap,
        };
        assert_eq!(set.form(), expected, "at {len} IDs");
    }
    // Once shrunk, an array grows back into a bitmap only past ARRAY_MAX.
    let mut set = IdSet::from_sorted(&(0..ARRAY_SHRINK as u32).collect::<Vec<_>>());
    for id in ARRAY_SHRINK as u32..ARRAY_MAX as u32 {
        set.insert(id);
        assert_eq!(set.form(), IdSetForm::Array);
    }
    set.insert(ARRAY_MAX as u32);
    assert_eq!(set.form(), IdSetForm::Bitmap);
}

/// Dense blocks: 8 KiB whatever the count; they turn sparse again only at
/// `SPARSE_BLOCK_SHRINK` values (seen in `heap_bytes`).
#[test]
fn blocks_switch_with_hysteresis() {
    let base = 3u32 << 16;
    let mut set = IdSet::from_sorted(&(base..base + SPARSE_BLOCK_MAX as u32).collect::<Vec<_>>());
    assert_eq!(set.form(), IdSetForm::Bitmap);
    let sparse_full = set.heap_bytes();
    assert!(
        (2 * SPARSE_BLOCK_MAX..2 * SPARSE_BLOCK_MAX + 256).contains(&sparse_full),
        "{sparse_full}"
    );
    set.insert(base + 60_000);
    let dense = set.heap_bytes();
    assert!((8192..8192 + 256).contains(&dense), "{dense}");
    for _ in 0..50 {
        set.remove(base + 60_000);
        assert_eq!(set.heap_bytes(), dense, "still dense at the threshold");
        set.insert(base + 60_000);
    }
    for id in base..base + (SPARSE_BLOCK_MAX - SPARSE_BLOCK_SHRINK) as u32 {
        assert_eq!(set.heap_bytes(), dense);
        set.remove(id);
    }
    assert_eq!(set.len(), SPARSE_BLOCK_SHRINK + 1);
    assert_eq!(set.heap_bytes(), dense);
    set.remove(base + 60_000);
    let sparse = set.heap_bytes();
    assert!(sparse < 2 * SPARSE_BLOCK_SHRINK + 256, "{sparse}");
    assert_eq!(set.len(), SPARSE_BLOCK_SHRINK);
}

/// Sets too spread out for blocks stay (or become) arrays, whatever their size.
#[test]
fn spread_sets_stay_arrays() {
    let spread: Vec<u32> = (0..3 * ARRAY_MAX as u32).map(|i| (i << 16) | (i % 7)).collect();
    let set = IdSet::from_sorted(&spread);
    assert_eq!(set.form(), IdSetForm::Array);
    let mut grown = IdSet::new();
    for &id in spread.iter().rev() {
        grown.insert(id);
    }
    assert_eq!(grown.form(), IdSetForm::Array);
    assert_eq!(grown, set);

    // A bitmap at the density limit, diluted by IDs in new blocks, turns into an array
    // when it falls below BITMAP_SHRINK_IDS_PER_BLOCK per block, and not before.
    let blocks = (ARRAY_MAX / BITMAP_MIN_IDS_PER_BLOCK + 1) as u32;
    let dense: Vec<u32> = (0..blocks)
        .flat_map(|b| (0..BITMAP_MIN_IDS_PER_BLOCK as u32).map(move |i| (b << 16) | i))
        .collect();
    let mut set = IdSet::from_sorted(&dense);
    assert_eq!(set.form(), IdSetForm::Bitmap);
    let mut block_count = blocks as usize;
    let mut next_block = 1000u32;
    while set.form() == IdSetForm::Bitmap {
        set.insert(next_block << 16);
        next_block += 1;
        block_count += 1;
        if set.form() == IdSetForm::Bitmap {
            assert!(set.len() >= block_count * BITMAP_SHRINK_IDS_PER_BLOCK);
        }
    }
    assert!(set.len() < block_count * BITMAP_SHRINK_IDS_PER_BLOCK);
    assert_eq!(set.form(), IdSetForm::Array);

    // Exactly at the shrink limit: dropping a block along with its only ID keeps the
    // density, dropping one ID of a fuller block goes below it.
    let mut set = IdSet::from_sorted(&dense);
    let lone_blocks = 60u32;
    for b in 0..lone_blocks {
        set.insert((1000 + b) << 16);
    }
    let block_count = blocks + lone_blocks;
    let limit = (block_count as usize) * BITMAP_SHRINK_IDS_PER_BLOCK;
    let mut ids = dense.iter();
    while set.len() > limit {
        let id = *ids.next().unwrap();
        if id & 0xffff != 0 {
            set.remove(id);
        }
    }
    assert_eq!(set.form(), IdSetForm::Bitmap);
    let mut without_lone = set.clone();
    without_lone.remove(1000 << 16);
    assert_eq!(without_lone.form(), IdSetForm::Bitmap);
    let mut without_other = set.clone();
    without_other.remove((blocks - 1) << 16);
    assert_eq!(without_other.form(), IdSetForm::Array);
    assert_eq!(set.len(), limit);
}

/// The density rule holds exactly at its limit, whether the set is built at once, grown
/// by one insert, or pushed into a builder. Blocks of 32 IDs put block changes at the
/// boundaries of the chunks the block count is computed by.
#[test]
fn density_threshold_is_exact() {
    let blocks = (ARRAY_MAX / BITMAP_MIN_IDS_PER_BLOCK + 1) as u32;
    let per_block = BITMAP_MIN_IDS_PER_BLOCK as u32;
    let mut ids: Vec<u32> = (0..blocks)
        .flat_map(|b| (0..per_block).map(move |i| (b << 16) | i))
        .collect();
    ids.pop();
    assert!(ids.len() > ARRAY_MAX && ids.len() + 1 == blocks as usize * BITMAP_MIN_IDS_PER_BLOCK);
    let short = IdSet::from_sorted(&ids);
    assert_eq!(
        short.form(),
        IdSetForm::Array,
        "one ID short of the density limit"
    );
    let built: IdSet = ids.iter().copied().collect();
    assert_eq!(built.form(), IdSetForm::Array);

    let mut in_new_block = short.clone();
    in_new_block.insert(1000 << 16);
    assert_eq!(
        in_new_block.form(),
        IdSetForm::Array,
        "a new block keeps it below the limit"
    );
    let mut in_old_block = short.clone();
    in_old_block.insert(((blocks - 1) << 16) | 40);
    assert_eq!(in_old_block.form(), IdSetForm::Bitmap, "at the limit");
    let built: IdSet = ids.iter().copied().chain([((blocks - 1) << 16) | 40]).collect();
    assert_eq!(built.form(), IdSetForm::Bitmap);
    assert_eq!(built, in_old_block);
    assert_eq!(short.form(), IdSetForm::Array);
    assert_eq!(short.len(), ids.len());
}

#[test]
fn a_million_consecutive_ids_take_about_128_kib() {
    let ids: Vec<u32> = (0..1_000_000).collect();
    let from_sorted = IdSet::from_sorted(&ids);
    let mut builder = IdSetBuilder::new();
    for id in 0..1_000_000 {
        builder.push(id);
    }
    let built = builder.finish();
    let collected: IdSet = (0..1_000_000u32).collect();
    for set in [&from_sorted, &built, &collected] {
        assert_eq!(set.form(), IdSetForm::Bitmap);
        assert_eq!(set.len(), 1_000_000);
        let bytes = set.heap_bytes();
        assert!((128 << 10..=132 << 10).contains(&bytes), "{bytes} octets");
        assert_eq!(set.first(), Some(0));
        assert!(set.contains(999_999) && !set.contains(1_000_000));
    }
    assert_eq!(built, from_sorted);
    assert!(built.iter().eq(0..1_000_000));

    // A change to a clone leaves the original alone.
    let mut changed = built.clone();
    changed.remove(500_000);
    changed.insert(2_000_000);
    assert!(built.contains(500_000) && !built.contains(2_000_000));
    assert_eq!(built.len(), 1_000_000);
    assert_eq!(changed.len(), 1_000_000);
    assert_eq!(changed.intersection(&built).len(), 999_999);
    assert_eq!(IdSet::one(5).intersection(&built), IdSet::one(5));
}

#[test]
fn a_thousand_spread_ids_stay_small() {
    let mut rng = SplitMix(42);
    let ids: Vec<u32> = (0..1000).map(|_| rng.next() as u32).collect();
    let model: Model = ids.iter().copied().collect();
    let built = IdSet::from_sorted(&ids);
    assert_eq!(built.form(), IdSetForm::Array);
    assert!(
        built.heap_bytes() <= 4 * model.len() + 64,
        "{}",
        built.heap_bytes()
    );
    let mut inserted = IdSet::new();
    for &id in &ids {
        inserted.insert(id);
    }
    assert!(
        inserted.heap_bytes() <= 8 * model.len() + 64,
        "{}",
        inserted.heap_bytes()
    );
    assert_eq!(inserted, built);
}

#[test]
fn unsorted_and_repeated_input() {
    let set = IdSet::from_sorted(&[5, 3, 3, 9, 1, 5]);
    assert_eq!(set.iter().collect::<Vec<_>>(), [1, 3, 5, 9]);
    let mut builder = IdSetBuilder::new();
    for id in [1, 2, 2, 3, 70_000, 4, 4] {
        builder.push(id);
    }
    assert_eq!(builder.finish().iter().collect::<Vec<_>>(), [1, 2, 3, 4, 70_000]);
    assert_eq!(IdSet::from_sorted(&[7, 7]), IdSet::one(7));
    assert_eq!(IdSet::from_sorted(&[]), IdSet::new());
}

#[test]
fn debug_output() {
    assert_eq!(format!("{:?}", IdSet::from_sorted(&[3, 1, 2])), "{1, 2, 3}");
    assert_eq!(format!("{:?}", IdSet::new()), "{}");
    let big: IdSet = (0..100_000u32).collect();
    let text = format!("{big:?}");
    assert!(text.starts_with("{0, 1, 2,"), "{text}");
    assert!(text.ends_with("... 99936 more (100000 IDs, Bitmap)}"), "{text}");
}
