//! Operations on strictly ascending slices, shared by the array form of an
//! [`IdSet`](super::IdSet) (`u32` IDs) and the sparse blocks of its bitmap form (`u16` low
//! halves).
//!
//! Invariant expected of every input slice: strictly ascending (sorted, no duplicates).
//! Every output vector is strictly ascending too.
//!
//! How the binary operations work:
//! 1. When one input is much smaller than the other (by [`GALLOP_RATIO`]), each element of
//!    the small one is looked up in the large one by an exponential ("galloping") search
//!    that starts where the previous lookup ended, so the cost is
//!    O(small × log(large / small)) instead of O(small + large).
//! 2. Otherwise the two are merged in one linear pass.

use std::cmp::Ordering;
use std::sync::Arc;

/// Size ratio above which a binary operation looks the small input up in the large one
/// instead of merging. A galloping lookup costs about 2·log2(gap) comparisons against the
/// merge's `gap` steps, so it wins once the average gap exceeds about 16.
pub(super) const GALLOP_RATIO: usize = 16;

/// Index of the first element of `slice` for which `is_less` is false (the slice must be
/// partitioned: all `is_less` elements first), found by exponential search from the start,
/// so finding an index `k` costs O(log k).
pub(super) fn lower_bound_by<T>(slice: &[T], is_less: impl Fn(&T) -> bool) -> usize {
    let mut hi = 1usize;
    while slice.get(hi).is_some_and(&is_less) {
        hi = hi.saturating_mul(2);
    }
    // Every element before `lo` is less (it was checked, or `lo` is 0); every element from
    // `hi` on is not, or `hi` is past the end.
    let lo = hi / 2;
    let end = hi.saturating_add(1).min(slice.len());
    lo + slice
        .get(lo..end)
        .map_or(0, |window| window.partition_point(&is_less))
}

/// Index of the first element of `slice` that is not less than `target`.
pub(super) fn lower_bound<T: Ord>(slice: &[T], target: &T) -> usize {
    lower_bound_by(slice, |v| v < target)
}

/// True when the two slices have an element in common.
pub(super) fn intersects<T: Copy + Ord>(a: &[T], b: &[T]) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.len().saturating_mul(GALLOP_RATIO) < large.len() {
        let mut rest = large;
        for x in small {
            rest = rest.get(lower_bound(rest, x)..).unwrap_or_default();
            match rest.first() {
                None => return false,
                Some(y) if y == x => return true,
                Some(_) => {}
            }
        }
        return false;
    }
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => return true,
        }
    }
    false
}

/// The elements in both slices.
pub(super) fn intersection<T: Copy + Ord>(a: &[T], b: &[T]) -> Vec<T> {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(small.len());
    if small.len().saturating_mul(GALLOP_RATIO) < large.len() {
        let mut rest = large;
        for &x in small {
            rest = rest.get(lower_bound(rest, &x)..).unwrap_or_default();
            match rest.first() {
                None => break,
                Some(&y) if y == x => {
                    out.push(x);
                    rest = rest.get(1..).unwrap_or_default();
                }
                Some(_) => {}
            }
        }
        return out;
    }
    let (mut i, mut j) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        match x.cmp(&y) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                out.push(x);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// The elements in either slice.
pub(super) fn union<T: Copy + Ord>(a: &[T], b: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len().saturating_add(b.len()));
    let (mut i, mut j) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        match x.cmp(&y) {
            Ordering::Less => {
                out.push(x);
                i += 1;
            }
            Ordering::Greater => {
                out.push(y);
                j += 1;
            }
            Ordering::Equal => {
                out.push(x);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(a.get(i..).unwrap_or_default());
    out.extend_from_slice(b.get(j..).unwrap_or_default());
    out
}

/// The elements of `a` that are not in `b`.
pub(super) fn difference<T: Copy + Ord>(a: &[T], b: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len());
    if a.len().saturating_mul(GALLOP_RATIO) < b.len() {
        let mut rest = b;
        for &x in a {
            rest = rest.get(lower_bound(rest, &x)..).unwrap_or_default();
            if rest.first() != Some(&x) {
                out.push(x);
            }
        }
        return out;
    }
    let (mut i, mut j) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        match x.cmp(&y) {
            Ordering::Less => {
                out.push(x);
                i += 1;
            }
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(a.get(i..).unwrap_or_default());
    out
}

/// True when the slice is strictly ascending.
pub(super) fn is_strictly_ascending<T: Ord>(slice: &[T]) -> bool {
    slice.windows(2).all(|w| matches!(w, [x, y] if x < y))
}

/// Inserts `value` at `pos` (from a failed `binary_search`) in a shared vector: in place
/// when this is the only reference, else into a new vector of exactly the new length, so
/// a copy-on-write insert allocates once and leaves the other references untouched.
pub(super) fn cow_insert<T: Copy>(shared: &mut Arc<Vec<T>>, pos: usize, value: T) {
    if let Some(values) = Arc::get_mut(shared) {
        let pos = pos.min(values.len());
        values.insert(pos, value);
        return;
    }
    let old = shared.as_slice();
    let (before, after) = old.split_at(pos.min(old.len()));
    let mut values = Vec::with_capacity(old.len() + 1);
    values.extend_from_slice(before);
    values.push(value);
    values.extend_from_slice(after);
    *shared = Arc::new(values);
}

/// Smallest vector capacity worth shrinking: below it the slack is not worth a reallocation.
const SHRINK_MIN_CAPACITY: usize = 16;

/// Removes the element at `pos` (from a successful `binary_search`) from a shared vector:
/// in place when this is the only reference (giving memory back once the vector is at most
/// a quarter full, so a shrinking set does not keep its peak allocation), else into a new
/// vector of exactly the new length.
pub(super) fn cow_remove<T: Copy>(shared: &mut Arc<Vec<T>>, pos: usize) {
    if pos >= shared.len() {
        return;
    }
    if let Some(values) = Arc::get_mut(shared) {
        values.remove(pos);
        if values.capacity() > SHRINK_MIN_CAPACITY && values.capacity() / 4 >= values.len() {
            values.shrink_to(values.len().saturating_mul(2));
        }
        return;
    }
    let old = shared.as_slice();
    let mut values = Vec::with_capacity(old.len() - 1);
    values.extend_from_slice(old.get(..pos).unwrap_or_default());
    values.extend_from_slice(old.get(pos + 1..).unwrap_or_default());
    *shared = Arc::new(values);
}
