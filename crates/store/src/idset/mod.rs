//! [`IdSet`]: a set of entry IDs (`u32`), the value of every index key (the entries that
//! hold a value, that have an attribute, that are children of an entry).
//!
//! The sets live inside copy-on-write persistent index structures, so:
//! - cloning is O(1): a copy of 16 octets and at most one reference count increment;
//! - a change through `&mut self` copies what it touches if another clone shares it, so a
//!   clone taken before a change never sees it;
//! - the value is at most 16 octets and holds zero or one ID without any heap allocation,
//!   because most keys of most indexes (equality on near-unique values) hold one ID.
//!
//! # Forms
//!
//! The set picks its representation ([`IdSetForm`]) by size and density, and switches on
//! [`IdSet::insert`] and [`IdSet::remove`]. Heap octets on a 64-bit target:
//!
//! | form | holds | heap octets |
//! | --- | --- | --- |
//! | `Empty` | no ID | 0 |
//! | `One` | one ID | 0 (inline) |
//! | `Array` | 2 to [`ARRAY_MAX`] IDs, or more if spread out | 40 + 4 per ID |
//! | `Bitmap` | more than [`ARRAY_MAX`] IDs, dense enough | 48 + per block (below) |
//!
//! A bitmap block costs 64 + 2 per ID when sparse, 8,240 when dense (2.01 per ID at
//! 4,097 IDs, 0.126 when full).
//!
//! The bitmap is Roaring-style (see the `bitmap` module): IDs are grouped in blocks of
//! 65,536 by their high 16 bits, each block in its own `Arc`, either a sorted `u16` array
//! (up to [`SPARSE_BLOCK_MAX`] values) or a 1,024 × `u64` bitset. A copy-on-write change
//! to a million-ID set therefore copies one block and the small block directory.
//!
//! # Switching, with hysteresis
//!
//! 1. Growing (on insert): `Empty` → `One` → `Array`; an `Array` that passes
//!    [`ARRAY_MAX`] IDs becomes a `Bitmap` if it has at least [`BITMAP_MIN_IDS_PER_BLOCK`]
//!    IDs per block it touches (else it stays an array, which is then smaller); a sparse
//!    block that passes [`SPARSE_BLOCK_MAX`] values becomes dense.
//! 2. Shrinking (on remove) happens further down, so that inserting and removing one ID
//!    at a threshold does not convert back and forth each time: a `Bitmap` becomes an
//!    `Array` at [`ARRAY_SHRINK`] IDs or when it falls below
//!    [`BITMAP_SHRINK_IDS_PER_BLOCK`] IDs per block (which an insert that opens a new block
//!    can also cause); a dense block becomes sparse at [`SPARSE_BLOCK_SHRINK`] values.
//! 3. `Array` ↔ `One` ↔ `Empty` switch at exactly 2, 1 and 0 IDs, without hysteresis: the
//!    inline forms save a heap allocation per key on millions of keys, and a flip costs no
//!    more than the copy-on-write copy that a change to a shared array makes anyway.
//! 4. Sets built in one go ([`IdSet::from_sorted`], [`IdSetBuilder`], the results of
//!    [`IdSet::union`], [`IdSet::intersection`] and [`IdSet::difference`]) take the form
//!    growth would give them, except that a result equal to an input shares it.
//!
//! Equality is by content: two sets with the same IDs are equal whatever their forms.
//!
//! # Set operations
//!
//! Their cost follows the smaller input where the forms allow it, for the index planner:
//! an intersection of a `One` or an `Array` with a `Bitmap` probes the bitmap once per ID
//! of the small side; two arrays are merged, or the smaller looked up in the larger by
//! galloping search when their sizes differ by more than 16 times; two bitmaps are
//! combined block by block (word by word for two dense blocks), sharing every block that
//! comes out unchanged.

mod bitmap;
mod builder;
mod sorted;

use std::fmt;
use std::iter::FusedIterator;
use std::mem::size_of;
use std::slice;
use std::sync::Arc;

use bitmap::{split, Bitmap, BitmapIter, ARC_COUNTS};
pub use builder::IdSetBuilder;

/// The most IDs an `Array` grows to before it becomes a `Bitmap` (if dense enough).
///
/// A copy-on-write insert into a shared array copies all of it: 8 KiB at 2,048 IDs, the
/// size of the largest block a bitmap insert copies. Above it a dense set is cheaper to
/// change as a bitmap, and smaller (at most 2 octets per ID instead of 4).
pub const ARRAY_MAX: usize = 2048;

/// A `Bitmap` shrinking to this many IDs becomes an `Array`: half of [`ARRAY_MAX`], so
/// that a set needs 1,024 removals after a conversion to convert back.
pub const ARRAY_SHRINK: usize = ARRAY_MAX / 2;

/// The fewest IDs per block (on average) for which an `Array` above [`ARRAY_MAX`] becomes
/// a `Bitmap`. A sparse block costs about 64 octets (its `Arc`, its vector header, its
/// directory entry) plus 2 per ID, against 4 per ID in an array: the bitmap is the smaller
/// from 32 IDs per block on.
pub const BITMAP_MIN_IDS_PER_BLOCK: usize = 32;

/// A `Bitmap` with fewer IDs per block than this (on average) becomes an `Array`: half of
/// [`BITMAP_MIN_IDS_PER_BLOCK`] (the bitmap then costs 6 octets per ID, 1.5 times the
/// array), for hysteresis.
pub const BITMAP_SHRINK_IDS_PER_BLOCK: usize = BITMAP_MIN_IDS_PER_BLOCK / 2;

/// The most values a sparse block holds: at 4,096 values its 2 octets per value reach the
/// 8 KiB of a dense block, above it the dense block is the smaller.
pub const SPARSE_BLOCK_MAX: usize = 4096;

/// A dense block shrinking to this many values becomes sparse (6 KiB instead of 8 KiB);
/// 1,024 below [`SPARSE_BLOCK_MAX`], for hysteresis.
pub const SPARSE_BLOCK_SHRINK: usize = 3072;

/// Which representation an [`IdSet`] currently uses (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdSetForm {
    /// No ID.
    Empty,
    /// One ID, inline.
    One,
    /// A sorted array of IDs on the heap.
    Array,
    /// A compressed bitmap of 65,536-ID blocks.
    Bitmap,
}

/// A set of entry IDs: cheap to clone, copy-on-write, in the most compact of four forms
/// (see the [module documentation](self)).
#[derive(Clone, Default)]
pub struct IdSet {
    repr: Repr,
}

#[derive(Clone, Default)]
enum Repr {
    #[default]
    Empty,
    One(u32),
    /// At least 2 IDs, strictly ascending.
    Array(Arc<Vec<u32>>),
    /// More than [`ARRAY_SHRINK`] IDs, at least [`BITMAP_SHRINK_IDS_PER_BLOCK`] per block.
    Bitmap(Arc<Bitmap>),
}

/// True when an array of `len` IDs over `blocks` blocks should grow into a bitmap.
fn wants_bitmap(len: usize, blocks: usize) -> bool {
    len > ARRAY_MAX && len >= blocks.saturating_mul(BITMAP_MIN_IDS_PER_BLOCK)
}

/// True when a bitmap of `len` IDs over `blocks` blocks should shrink into an array.
fn wants_array(len: usize, blocks: usize) -> bool {
    len <= ARRAY_SHRINK || len < blocks.saturating_mul(BITMAP_SHRINK_IDS_PER_BLOCK)
}

/// IDs counted between two checks of the limit in [`blocks_within`].
const BLOCK_SCAN_CHUNK: usize = 256;

/// True when strictly ascending `ids` touch at most `limit` blocks (distinct high 16
/// bits). Stops as soon as the count passes the limit, so for a spread-out array (about
/// one ID per block) it reads only about `limit` IDs: an insert into a large spread array
/// then costs its memory move, not a full scan.
fn blocks_within(ids: &[u32], limit: usize) -> bool {
    let mut count = 0usize;
    let mut previous_key: Option<u32> = None;
    for chunk in ids.chunks(BLOCK_SCAN_CHUNK) {
        let (Some(&first), Some(&last)) = (chunk.first(), chunk.last()) else {
            continue;
        };
        count += usize::from(previous_key != Some(first >> 16));
        count += chunk
            .windows(2)
            .filter(|w| matches!(w, [a, b] if a >> 16 != b >> 16))
            .count();
        if count > limit {
            return false;
        }
        previous_key = Some(last >> 16);
    }
    true
}

/// True when strictly ascending `ids` should be a bitmap rather than an array, as in
/// [`wants_bitmap`].
fn ids_want_bitmap(ids: &[u32]) -> bool {
    ids.len() > ARRAY_MAX && blocks_within(ids, ids.len() / BITMAP_MIN_IDS_PER_BLOCK)
}

/// A 64-bit count as `usize`, saturating (only a 32-bit target could saturate).
fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl IdSet {
    /// The empty set.
    pub const fn new() -> IdSet {
        IdSet { repr: Repr::Empty }
    }

    /// The set of one ID (no heap allocation).
    pub const fn one(id: u32) -> IdSet {
        IdSet { repr: Repr::One(id) }
    }

    /// The set of the given IDs. Strictly ascending input is the fast path (linear time,
    /// one allocation); any other input is copied, sorted and deduplicated, so the result
    /// is the set of the IDs whatever their order.
    pub fn from_sorted(ids: &[u32]) -> IdSet {
        if sorted::is_strictly_ascending(ids) {
            match ids {
                [] => IdSet::new(),
                [id] => IdSet::one(*id),
                _ => {
                    if ids_want_bitmap(ids) {
                        IdSet::bitmap(Bitmap::from_ascending(ids))
                    } else {
                        IdSet::array(ids.to_vec())
                    }
                }
            }
        } else {
            let mut ids = ids.to_vec();
            ids.sort_unstable();
            ids.dedup();
            IdSet::from_ascending_vec(ids)
        }
    }

    /// The set of strictly ascending IDs, in the form growth would give it.
    fn from_ascending_vec(ids: Vec<u32>) -> IdSet {
        match ids.as_slice() {
            [] => IdSet::new(),
            [id] => IdSet::one(*id),
            _ => {
                if ids_want_bitmap(&ids) {
                    IdSet::bitmap(Bitmap::from_ascending(&ids))
                } else {
                    IdSet::array(ids)
                }
            }
        }
    }

    /// The set of a bitmap's IDs, in the form growth would give it.
    fn from_bitmap(bitmap: Bitmap) -> IdSet {
        let len = to_usize(bitmap.len());
        if wants_bitmap(len, bitmap.block_count()) {
            IdSet::bitmap(bitmap)
        } else {
            IdSet::from_ascending_vec(bitmap.to_vec(0))
        }
    }

    /// An `Array` of at least two strictly ascending IDs.
    fn array(mut ids: Vec<u32>) -> IdSet {
        ids.shrink_to_fit();
        IdSet {
            repr: Repr::Array(Arc::new(ids)),
        }
    }

    fn bitmap(bitmap: Bitmap) -> IdSet {
        IdSet {
            repr: Repr::Bitmap(Arc::new(bitmap)),
        }
    }

    /// The current representation.
    pub fn form(&self) -> IdSetForm {
        match self.repr {
            Repr::Empty => IdSetForm::Empty,
            Repr::One(_) => IdSetForm::One,
            Repr::Array(_) => IdSetForm::Array,
            Repr::Bitmap(_) => IdSetForm::Bitmap,
        }
    }

    /// Number of IDs.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Empty => 0,
            Repr::One(_) => 1,
            Repr::Array(ids) => ids.len(),
            Repr::Bitmap(bitmap) => to_usize(bitmap.len()),
        }
    }

    /// True when the set holds no ID.
    #[inline]
    pub fn is_empty(&self) -> bool {
        matches!(self.repr, Repr::Empty)
    }

    /// True when the set holds `id`.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        match &self.repr {
            Repr::Empty => false,
            Repr::One(one) => *one == id,
            Repr::Array(ids) => ids.binary_search(&id).is_ok(),
            Repr::Bitmap(bitmap) => bitmap.contains(id),
        }
    }

    /// The smallest ID.
    pub fn first(&self) -> Option<u32> {
        match &self.repr {
            Repr::Empty => None,
            Repr::One(id) => Some(*id),
            Repr::Array(ids) => ids.first().copied(),
            Repr::Bitmap(bitmap) => bitmap.first(),
        }
    }

    /// The IDs in ascending order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        let inner = match &self.repr {
            Repr::Empty => Inner::Done,
            Repr::One(id) => Inner::One(*id),
            Repr::Array(ids) => Inner::Array(ids.iter()),
            Repr::Bitmap(bitmap) => Inner::Bitmap(bitmap.iter()),
        };
        Iter {
            inner,
            remaining: self.len(),
        }
    }

    /// Adds `id`; false when it was already there (then nothing is copied). Copy-on-write:
    /// other clones of the set do not change. May switch the form (see the
    /// [module documentation](self)).
    pub fn insert(&mut self, id: u32) -> bool {
        match &mut self.repr {
            Repr::Empty => {
                self.repr = Repr::One(id);
                true
            }
            Repr::One(one) => {
                let one = *one;
                if one == id {
                    return false;
                }
                let ids = if one < id { vec![one, id] } else { vec![id, one] };
                self.repr = Repr::Array(Arc::new(ids));
                true
            }
            Repr::Array(ids) => {
                let Err(pos) = ids.binary_search(&id) else {
                    return false;
                };
                if ids.len() >= ARRAY_MAX {
                    let key = split(id).0;
                    let near = |i: usize| ids.get(i).is_some_and(|&x| split(x).0 == key);
                    let in_known_block = near(pos) || (pos > 0 && near(pos - 1));
                    // wants_bitmap(len, blocks) is blocks <= len / BITMAP_MIN_IDS_PER_BLOCK.
                    let limit = (ids.len() + 1) / BITMAP_MIN_IDS_PER_BLOCK;
                    let grows = match limit.checked_sub(usize::from(!in_known_block)) {
                        Some(limit) => blocks_within(ids, limit),
                        None => false,
                    };
                    if grows {
                        let mut grown = Vec::with_capacity(ids.len() + 1);
                        grown.extend_from_slice(ids.get(..pos).unwrap_or_default());
                        grown.push(id);
                        grown.extend_from_slice(ids.get(pos..).unwrap_or_default());
                        self.repr = Repr::Bitmap(Arc::new(Bitmap::from_ascending(&grown)));
                        return true;
                    }
                }
                sorted::cow_insert(ids, pos, id);
                true
            }
            Repr::Bitmap(bitmap) => {
                if bitmap.contains(id) {
                    return false;
                }
                let len = to_usize(bitmap.len()) + 1;
                let blocks = bitmap.block_count() + usize::from(!bitmap.has_block(split(id).0));
                if wants_array(len, blocks) {
                    let mut ids = bitmap.to_vec(1);
                    let pos = ids.partition_point(|&x| x < id);
                    ids.insert(pos, id);
                    self.repr = Repr::Array(Arc::new(ids));
                } else {
                    Arc::make_mut(bitmap).insert(id);
                }
                true
            }
        }
    }

    /// Removes `id`; false when it was not there (then nothing is copied). Copy-on-write:
    /// other clones of the set do not change. May switch the form (see the
    /// [module documentation](self)).
    pub fn remove(&mut self, id: u32) -> bool {
        match &mut self.repr {
            Repr::Empty => false,
            Repr::One(one) => {
                if *one != id {
                    return false;
                }
                self.repr = Repr::Empty;
                true
            }
            Repr::Array(ids) => {
                let Ok(pos) = ids.binary_search(&id) else {
                    return false;
                };
                if let [a, b] = ids.as_slice() {
                    let other = if pos == 0 { *b } else { *a };
                    self.repr = Repr::One(other);
                } else {
                    sorted::cow_remove(ids, pos);
                }
                true
            }
            Repr::Bitmap(bitmap) => {
                if !bitmap.contains(id) {
                    return false;
                }
                let len = to_usize(bitmap.len()) - 1;
                let key = split(id).0;
                let blocks = bitmap.block_count() - usize::from(bitmap.block_len(key) == 1);
                if wants_array(len, blocks) {
                    let mut ids = Vec::with_capacity(len);
                    ids.extend(bitmap.iter().filter(|&x| x != id));
                    *self = IdSet::from_ascending_vec(ids);
                } else {
                    Arc::make_mut(bitmap).remove(id);
                }
                true
            }
        }
    }

    /// The IDs in both sets. A `One` or `Array` against a `Bitmap` costs one probe per ID
    /// of the small side; two bitmaps are intersected block by block.
    pub fn intersection(&self, other: &IdSet) -> IdSet {
        match (&self.repr, &other.repr) {
            (Repr::Empty, _) | (_, Repr::Empty) => IdSet::new(),
            (Repr::One(id), _) => {
                if other.contains(*id) {
                    self.clone()
                } else {
                    IdSet::new()
                }
            }
            (_, Repr::One(id)) => {
                if self.contains(*id) {
                    other.clone()
                } else {
                    IdSet::new()
                }
            }
            (Repr::Array(a), Repr::Array(b)) => {
                if Arc::ptr_eq(a, b) {
                    return self.clone();
                }
                self.result_of(sorted::intersection(a, b), Some(other))
            }
            (Repr::Array(ids), Repr::Bitmap(bitmap)) => self.result_of(bitmap.filter_sorted(ids, true), None),
            (Repr::Bitmap(bitmap), Repr::Array(ids)) => {
                other.result_of(bitmap.filter_sorted(ids, true), None)
            }
            (Repr::Bitmap(a), Repr::Bitmap(b)) => {
                if Arc::ptr_eq(a, b) {
                    return self.clone();
                }
                self.result_of_bitmap(a.intersection(b), Some(other))
            }
        }
    }

    /// The IDs in either set. Adding a `One` to a set costs what [`IdSet::insert`] costs;
    /// two bitmaps are joined block by block, sharing the blocks only one of them has.
    pub fn union(&self, other: &IdSet) -> IdSet {
        match (&self.repr, &other.repr) {
            (Repr::Empty, _) => other.clone(),
            (_, Repr::Empty) => self.clone(),
            (Repr::One(id), _) => {
                let mut union = other.clone();
                union.insert(*id);
                union
            }
            (_, Repr::One(id)) => {
                let mut union = self.clone();
                union.insert(*id);
                union
            }
            (Repr::Array(a), Repr::Array(b)) => {
                if Arc::ptr_eq(a, b) {
                    return self.clone();
                }
                self.result_of(sorted::union(a, b), Some(other))
            }
            (Repr::Array(ids), Repr::Bitmap(bitmap)) => {
                other.result_of_bitmap(bitmap.union(&Bitmap::from_ascending(ids)), None)
            }
            (Repr::Bitmap(bitmap), Repr::Array(ids)) => {
                self.result_of_bitmap(bitmap.union(&Bitmap::from_ascending(ids)), None)
            }
            (Repr::Bitmap(a), Repr::Bitmap(b)) => {
                if Arc::ptr_eq(a, b) {
                    return self.clone();
                }
                self.result_of_bitmap(a.union(b), Some(other))
            }
        }
    }

    /// The IDs of `self` that are not in `other`. Taking a `One` away costs what
    /// [`IdSet::remove`] costs; an `Array` minus a `Bitmap` probes once per ID of the
    /// array; a `Bitmap` minus a `Bitmap` or an `Array` works block by block, sharing the
    /// blocks `other` does not touch.
    pub fn difference(&self, other: &IdSet) -> IdSet {
        match (&self.repr, &other.repr) {
            (Repr::Empty, _) => IdSet::new(),
            (_, Repr::Empty) => self.clone(),
            (Repr::One(id), _) => {
                if other.contains(*id) {
                    IdSet::new()
                } else {
                    self.clone()
                }
            }
            (_, Repr::One(id)) => {
                let mut difference = self.clone();
                difference.remove(*id);
                difference
            }
            (Repr::Array(a), Repr::Array(b)) => {
                if Arc::ptr_eq(a, b) {
                    return IdSet::new();
                }
                self.result_of(sorted::difference(a, b), None)
            }
            (Repr::Array(ids), Repr::Bitmap(bitmap)) => {
                self.result_of(bitmap.filter_sorted(ids, false), None)
            }
            (Repr::Bitmap(bitmap), Repr::Array(ids)) => {
                self.result_of_bitmap(bitmap.difference(&Bitmap::from_ascending(ids)), None)
            }
            (Repr::Bitmap(a), Repr::Bitmap(b)) => {
                if Arc::ptr_eq(a, b) {
                    return IdSet::new();
                }
                self.result_of_bitmap(a.difference(b), None)
            }
        }
    }

    /// True when the two sets have an ID in common (stops at the first one found; costs as
    /// [`IdSet::intersection`] at most).
    pub fn intersects(&self, other: &IdSet) -> bool {
        match (&self.repr, &other.repr) {
            (Repr::Empty, _) | (_, Repr::Empty) => false,
            (Repr::One(id), _) => other.contains(*id),
            (_, Repr::One(id)) => self.contains(*id),
            (Repr::Array(a), Repr::Array(b)) => sorted::intersects(a, b),
            (Repr::Array(ids), Repr::Bitmap(bitmap)) | (Repr::Bitmap(bitmap), Repr::Array(ids)) => {
                bitmap.intersects_sorted(ids)
            }
            (Repr::Bitmap(a), Repr::Bitmap(b)) => Arc::ptr_eq(a, b) || a.intersects(b),
        }
    }

    /// Heap octets this set owns: its array or bitmap directory and every block, shared
    /// ones counted in full (so the sum over many versions overstates what they share).
    /// Allocator overhead is not counted.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Empty | Repr::One(_) => 0,
            Repr::Array(ids) => ARC_COUNTS + size_of::<Vec<u32>>() + ids.capacity() * size_of::<u32>(),
            Repr::Bitmap(bitmap) => ARC_COUNTS + size_of::<Bitmap>() + bitmap.heap_bytes(),
        }
    }

    /// Checks the representation's invariants (see the [module documentation](self) and
    /// the `bitmap` module), returning the first violation found. For tests: a set built
    /// through this API always passes.
    pub fn check_invariants(&self) -> Result<(), String> {
        match &self.repr {
            Repr::Empty | Repr::One(_) => Ok(()),
            Repr::Array(ids) => {
                if ids.len() < 2 {
                    return Err(format!("array of {} IDs", ids.len()));
                }
                if !sorted::is_strictly_ascending(ids) {
                    return Err("array not strictly ascending".into());
                }
                Ok(())
            }
            Repr::Bitmap(bitmap) => {
                bitmap.check()?;
                let len = to_usize(bitmap.len());
                if wants_array(len, bitmap.block_count()) {
                    return Err(format!(
                        "bitmap of {len} IDs over {} blocks should be an array",
                        bitmap.block_count()
                    ));
                }
                Ok(())
            }
        }
    }

    /// The result of an operation on `self` given as strictly ascending IDs: `self` or
    /// `other` itself (shared, not copied) when the result has as many IDs, which the
    /// caller guarantees means the same IDs (the result is a subset or a superset of it).
    fn result_of(&self, ids: Vec<u32>, other: Option<&IdSet>) -> IdSet {
        if ids.len() == self.len() {
            return self.clone();
        }
        if let Some(other) = other.filter(|o| o.len() == ids.len()) {
            return other.clone();
        }
        IdSet::from_ascending_vec(ids)
    }

    /// Same as [`IdSet::result_of`] for a result given as a bitmap.
    fn result_of_bitmap(&self, bitmap: Bitmap, other: Option<&IdSet>) -> IdSet {
        let len = to_usize(bitmap.len());
        if len == self.len() {
            return self.clone();
        }
        if let Some(other) = other.filter(|o| o.len() == len) {
            return other.clone();
        }
        IdSet::from_bitmap(bitmap)
    }
}

/// How many IDs `Debug` prints before eliding the rest (a set may hold millions).
const DEBUG_MAX_IDS: usize = 64;

impl fmt::Debug for IdSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut set = f.debug_set();
        set.entries(self.iter().take(DEBUG_MAX_IDS));
        let len = self.len();
        if len > DEBUG_MAX_IDS {
            set.entry(&format_args!(
                "... {} more ({len} IDs, {:?})",
                len - DEBUG_MAX_IDS,
                self.form()
            ));
        }
        set.finish()
    }
}

impl PartialEq for IdSet {
    fn eq(&self, other: &IdSet) -> bool {
        match (&self.repr, &other.repr) {
            (Repr::Array(a), Repr::Array(b)) => Arc::ptr_eq(a, b) || a == b,
            (Repr::Bitmap(a), Repr::Bitmap(b)) => Arc::ptr_eq(a, b) || a.content_eq(b),
            _ => self.len() == other.len() && self.iter().eq(other.iter()),
        }
    }
}

impl Eq for IdSet {}

impl FromIterator<u32> for IdSet {
    /// Linear time for ascending IDs (see [`IdSetBuilder`]); any order is accepted.
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> IdSet {
        let mut builder = IdSetBuilder::new();
        for id in iter {
            builder.push(id);
        }
        builder.finish()
    }
}

/// Most IDs an [`Extend`] inserts one by one; more are built into a set and joined with
/// [`IdSet::union`], so that extending by many IDs costs a merge, not many inserts.
const EXTEND_INSERT_MAX: usize = 16;

impl Extend<u32> for IdSet {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, iter: I) {
        let added: IdSet = iter.into_iter().collect();
        if added.len() <= EXTEND_INSERT_MAX {
            for id in added.iter() {
                self.insert(id);
            }
        } else {
            *self = self.union(&added);
        }
    }
}

impl<'a> IntoIterator for &'a IdSet {
    type Item = u32;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The IDs of an [`IdSet`] in ascending order (from [`IdSet::iter`]).
#[derive(Clone)]
pub struct Iter<'a> {
    inner: Inner<'a>,
    remaining: usize,
}

#[derive(Clone)]
enum Inner<'a> {
    Done,
    One(u32),
    Array(slice::Iter<'a, u32>),
    Bitmap(BitmapIter<'a>),
}

impl Iterator for Iter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        let next = match &mut self.inner {
            Inner::Done => None,
            Inner::One(id) => {
                let id = *id;
                self.inner = Inner::Done;
                Some(id)
            }
            Inner::Array(ids) => ids.next().copied(),
            Inner::Bitmap(ids) => ids.next(),
        };
        if next.is_some() {
            self.remaining = self.remaining.saturating_sub(1);
        } else {
            self.inner = Inner::Done;
            self.remaining = 0;
        }
        next
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl FusedIterator for Iter<'_> {}
