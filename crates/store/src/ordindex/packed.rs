//! A sorted run of (key, entry ID) pairs packed into two buffers: every key's octets back to
//! back in one `Vec<u8>`, and one [`Slot`] per pair (the end offset of its key in that buffer
//! and its entry ID) in one `Vec<Slot>`. Pair `i`'s key is `bytes[end(i - 1)..end(i)]`, with
//! `end(-1) = 0`.
//!
//! Invariants (kept by every method here, checked by `OrdTree::check_invariants`):
//! 1. the slot ends never decrease and the last one equals `bytes.len()`;
//! 2. the buffer never holds more than `u32::MAX` octets (the owner bounds the number of
//!    pairs and the key length so that it cannot).
//!
//! The run does not keep itself sorted: callers insert at the position a search returned.

use std::cmp::Ordering;

/// Where pair `i`'s key ends in the octet buffer, and the pair's entry ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    /// Offset one past the key's last octet in [`Packed::bytes`].
    pub(super) end: u32,
    /// The entry ID.
    pub(super) id: u32,
}

/// Compares pair `(ak, ai)` with `(bk, bi)`: key octets first, then the ID.
pub(super) fn cmp_pair(ak: &[u8], ai: u32, bk: &[u8], bi: u32) -> Ordering {
    ak.cmp(bk).then(ai.cmp(&bi))
}

/// Converts a buffer offset to the slot's `u32`. The owner's limits (pairs per node times
/// [`super::MAX_KEY_LEN`], asserted at compile time) keep every offset below `u32::MAX`.
fn offset(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Pairs packed into one octet buffer and one slot array (see the module documentation).
#[derive(Debug, Clone, Default)]
pub(super) struct Packed {
    /// Every key's octets, back to back, in pair order.
    pub(super) bytes: Vec<u8>,
    /// One slot per pair.
    pub(super) slots: Vec<Slot>,
}

impl Packed {
    /// An empty run with room for `pairs` slots.
    pub(super) fn with_capacity(pairs: usize) -> Self {
        Packed {
            bytes: Vec::new(),
            slots: Vec::with_capacity(pairs),
        }
    }

    /// The number of pairs.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Where pair `i`'s key starts in the buffer (0 past the end).
    fn start(&self, i: usize) -> usize {
        match i.checked_sub(1).and_then(|p| self.slots.get(p)) {
            Some(s) => s.end as usize,
            None => 0,
        }
    }

    /// Pair `i`'s key; empty if `i` is out of range.
    pub(super) fn key(&self, i: usize) -> &[u8] {
        let start = self.start(i);
        let end = self.slots.get(i).map_or(start, |s| s.end as usize);
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// Pair `i`'s entry ID; 0 if `i` is out of range.
    pub(super) fn id(&self, i: usize) -> u32 {
        self.slots.get(i).map_or(0, |s| s.id)
    }

    /// Pair `i`.
    pub(super) fn pair(&self, i: usize) -> (&[u8], u32) {
        (self.key(i), self.id(i))
    }

    /// The index of the first pair for which `pred` is false, given that `pred` is true for
    /// a prefix of the run and false for the rest (binary search).
    pub(super) fn partition_point(&self, mut pred: impl FnMut(&[u8], u32) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.key(mid), self.id(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// `Ok(i)` if pair `i` equals `(key, id)`, else `Err(i)` with the index it would take.
    pub(super) fn search(&self, key: &[u8], id: u32) -> Result<usize, usize> {
        let i = self.partition_point(|k, d| cmp_pair(k, d, key, id) == Ordering::Less);
        if i < self.len() && cmp_pair(self.key(i), self.id(i), key, id) == Ordering::Equal {
            Ok(i)
        } else {
            Err(i)
        }
    }

    /// Makes room for `pairs` more pairs with `octets` more key octets. A buffer that is
    /// too small grows by what is needed plus an eighth of its length, not by doubling: a
    /// node written in a new version is usually a fresh copy of exactly its length that then
    /// takes one pair, and doubling would leave most written nodes up to half empty.
    fn reserve(&mut self, pairs: usize, octets: usize) {
        if self.slots.capacity() - self.slots.len() < pairs {
            self.slots.reserve_exact(pairs + self.slots.len() / 8);
        }
        if self.bytes.capacity() - self.bytes.len() < octets {
            self.bytes.reserve_exact(octets + self.bytes.len() / 8);
        }
    }

    /// Inserts `(key, id)` so that it becomes pair `i` (`i` at most [`len`](Self::len)).
    pub(super) fn insert(&mut self, i: usize, key: &[u8], id: u32) {
        let i = i.min(self.len());
        self.reserve(1, key.len());
        let start = self.start(i);
        self.bytes.splice(start..start, key.iter().copied());
        let grow = offset(key.len());
        for s in self.slots.iter_mut().skip(i) {
            s.end += grow;
        }
        self.slots.insert(
            i,
            Slot {
                end: offset(start + key.len()),
                id,
            },
        );
    }

    /// Appends `(key, id)` as the last pair.
    pub(super) fn push(&mut self, key: &[u8], id: u32) {
        self.reserve(1, key.len());
        self.bytes.extend_from_slice(key);
        self.slots.push(Slot {
            end: offset(self.bytes.len()),
            id,
        });
    }

    /// Removes pair `i` (nothing if out of range).
    pub(super) fn remove(&mut self, i: usize) {
        let Some(slot) = self.slots.get(i).copied() else {
            return;
        };
        let start = self.start(i);
        let end = slot.end as usize;
        self.bytes.drain(start..end);
        self.slots.remove(i);
        let shrink = offset(end - start);
        for s in self.slots.iter_mut().skip(i) {
            s.end -= shrink;
        }
        // Give memory back once a buffer is less than half used (a long run of removals
        // from one node within a version; a fresh copy is exact already).
        if self.slots.capacity() > 2 * self.slots.len() + 8 {
            self.slots.shrink_to(self.slots.len() + self.slots.len() / 8);
        }
        if self.bytes.capacity() > 2 * self.bytes.len() + 64 {
            self.bytes.shrink_to(self.bytes.len() + self.bytes.len() / 8);
        }
    }

    /// Replaces pair `i` with `(key, id)`.
    pub(super) fn replace(&mut self, i: usize, key: &[u8], id: u32) {
        self.remove(i);
        self.insert(i, key, id);
    }

    /// Moves pairs `at..` into a new run, keeping `..at`.
    pub(super) fn split_off(&mut self, at: usize) -> Packed {
        let at = at.min(self.len());
        let start = self.start(at);
        let bytes = self.bytes.split_off(start);
        let base = offset(start);
        let slots = self
            .slots
            .split_off(at)
            .into_iter()
            .map(|s| Slot {
                end: s.end - base,
                id: s.id,
            })
            .collect();
        Packed { bytes, slots }
    }

    /// Appends every pair of `other` after this run's pairs.
    pub(super) fn append(&mut self, other: &Packed) {
        self.reserve(other.len(), other.bytes.len());
        let base = offset(self.bytes.len());
        self.bytes.extend_from_slice(&other.bytes);
        self.slots.extend(other.slots.iter().map(|s| Slot {
            end: s.end + base,
            id: s.id,
        }));
    }

    /// Drops unused capacity of both buffers.
    pub(super) fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.slots.shrink_to_fit();
    }

    /// Octets allocated on the heap by the two buffers (capacity, not length).
    pub(super) fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.slots.capacity() * std::mem::size_of::<Slot>()
    }

    /// Checks invariant 1 and that no key is longer than `max_key`.
    pub(super) fn check(&self, max_key: usize) -> Result<(), String> {
        let mut prev = 0usize;
        for (i, s) in self.slots.iter().enumerate() {
            let end = s.end as usize;
            if end < prev {
                return Err(format!("slot {i}: end {end} before previous end {prev}"));
            }
            if end - prev > max_key {
                return Err(format!("slot {i}: key of {} octets", end - prev));
            }
            prev = end;
        }
        if prev != self.bytes.len() {
            return Err(format!(
                "last slot ends at {prev}, buffer holds {}",
                self.bytes.len()
            ));
        }
        Ok(())
    }
}
