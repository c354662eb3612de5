//! Ordered walks over an [`OrdIndex`](super::OrdIndex): the [`Range`] iterator.
//!
//! How a walk works:
//! 1. At construction, two cursors descend from the root once each: the front cursor to the
//!    first pair not below the lower bound, the back cursor to the last pair not above the
//!    upper bound. Each cursor keeps the path it took as a stack of (inner node, child
//!    index); both stacks are allocated then, with room for the tree's height.
//! 2. If either cursor finds no pair, or the front pair is above the back pair (an empty or
//!    inverted range), the walk yields nothing.
//! 3. `next` yields the front pair and moves the front cursor one pair on: within the leaf
//!    if it can, else it pops the stack to the nearest ancestor with a next child and
//!    descends along first children to a leaf. `next_back` mirrors this with the back
//!    cursor. No step allocates or recurses.
//! 4. The walk ends after yielding the pair where the two cursors meet (same leaf, same
//!    slot), so the ends never cross and no bound is compared after construction.

use std::cmp::Ordering;
use std::fmt;
use std::iter::FusedIterator;
use std::ops::Bound;

use super::packed::{cmp_pair, Packed};
use super::{Inner, Node};

/// The leaf a cursor stands on when a node has no child where one must be (a broken tree);
/// it holds no pairs, so the walk ends instead of panicking.
static EMPTY_LEAF: Packed = Packed {
    bytes: Vec::new(),
    slots: Vec::new(),
};

/// The upper end of a walk.
#[derive(Clone, Copy)]
pub(super) enum Upper<'k> {
    /// A key bound, as in [`OrdTree::range`](super::OrdTree::range).
    Key(Bound<&'k [u8]>),
    /// The last key that starts with these octets.
    Prefix(&'k [u8]),
}

/// True while `key` is below the lower bound (a monotone predicate: true, then false).
fn below_lower(lower: Bound<&[u8]>, key: &[u8]) -> bool {
    match lower {
        Bound::Unbounded => false,
        Bound::Included(b) => key < b,
        Bound::Excluded(b) => key <= b,
    }
}

/// True while `key` is not above the upper end (monotone: true, then false). For a prefix,
/// the keys below it and the keys that extend it form the start of the key order.
fn within_upper(upper: Upper<'_>, key: &[u8]) -> bool {
    match upper {
        Upper::Key(Bound::Unbounded) => true,
        Upper::Key(Bound::Included(b)) => key <= b,
        Upper::Key(Bound::Excluded(b)) => key < b,
        Upper::Prefix(p) => key < p || key.starts_with(p),
    }
}

/// A position on one pair of a leaf, with the path from the root.
struct Cursor<'a> {
    /// The inner nodes above the leaf, root first, each with the index of the child taken.
    stack: Vec<(&'a Inner, usize)>,
    /// The leaf.
    leaf: &'a Packed,
    /// The slot in the leaf; may equal the leaf's length right after a seek.
    idx: usize,
}

impl<'a> Cursor<'a> {
    /// Descends to the first pair for which `pred` is false (`pred` must be true for a
    /// prefix of the pair order): the cursor then stands on it, or one past the last slot of
    /// the leaf where it would be.
    fn seek(root: &'a Node, height: usize, pred: impl Fn(&[u8], u32) -> bool) -> Self {
        let mut stack = Vec::with_capacity(height);
        let mut node = root;
        loop {
            match node {
                Node::Leaf(leaf) => {
                    let idx = leaf.partition_point(&pred);
                    return Cursor { stack, leaf, idx };
                }
                Node::Inner(inner) => {
                    // Children before `i` hold only pairs below separator `i - 1`, for
                    // which `pred` is true; children after it hold pairs from separator
                    // `i` on, for which it is false.
                    let i = inner.seps.partition_point(&pred);
                    let Some(child) = inner.children.get(i) else {
                        return Cursor {
                            stack,
                            leaf: &EMPTY_LEAF,
                            idx: 0,
                        };
                    };
                    stack.push((inner, i));
                    node = child;
                }
            }
        }
    }

    /// The pair the cursor stands on.
    fn pair(&self) -> (&'a [u8], u32) {
        let leaf: &'a Packed = self.leaf;
        leaf.pair(self.idx)
    }

    /// Whether both cursors stand on the same slot of the same leaf.
    fn same_position(&self, other: &Cursor<'a>) -> bool {
        std::ptr::eq(self.leaf, other.leaf) && self.idx == other.idx
    }

    /// Descends from `node` along first (`first`) or last children to a leaf, pushing the
    /// path.
    fn descend(&mut self, mut node: &'a Node, first: bool) -> &'a Packed {
        loop {
            match node {
                Node::Leaf(leaf) => return leaf,
                Node::Inner(inner) => {
                    let i = if first {
                        0
                    } else {
                        inner.children.len().saturating_sub(1)
                    };
                    let Some(child) = inner.children.get(i) else {
                        return &EMPTY_LEAF;
                    };
                    self.stack.push((inner, i));
                    node = child;
                }
            }
        }
    }

    /// If the cursor is past its leaf's last slot, moves it to the first pair of the next
    /// leaf. False if there is none.
    fn settle_forward(&mut self) -> bool {
        while self.idx >= self.leaf.len() {
            let Some((inner, i)) = self.stack.pop() else {
                return false;
            };
            let Some(child) = inner.children.get(i + 1) else {
                continue;
            };
            self.stack.push((inner, i + 1));
            self.leaf = self.descend(child, true);
            self.idx = 0;
        }
        true
    }

    /// Moves to the next pair. False if there is none.
    fn advance(&mut self) -> bool {
        self.idx += 1;
        self.settle_forward()
    }

    /// Moves to the previous pair. False if there is none.
    fn retreat(&mut self) -> bool {
        loop {
            if let Some(prev) = self.idx.checked_sub(1) {
                self.idx = prev.min(self.leaf.len().saturating_sub(1));
                return !self.leaf.slots.is_empty();
            }
            let Some((inner, i)) = self.stack.pop() else {
                return false;
            };
            let Some(prev) = i.checked_sub(1) else {
                continue;
            };
            let Some(child) = inner.children.get(prev) else {
                continue;
            };
            self.stack.push((inner, prev));
            self.leaf = self.descend(child, false);
            self.idx = self.leaf.len();
        }
    }
}

/// Pairs of an [`OrdIndex`](super::OrdIndex) in ascending (key, ID) order, from both ends
/// ([`DoubleEndedIterator`]: `.rev()` walks descending). Returned by
/// [`range`](super::OrdTree::range), [`prefix`](super::OrdTree::prefix) and
/// [`iter`](super::OrdTree::iter); borrows the index version it walks, which later writes
/// to other clones do not change.
pub struct Range<'a> {
    /// Front and back cursors, both on pairs not yet yielded; `None` once the walk is over.
    ends: Option<(Cursor<'a>, Cursor<'a>)>,
}

impl<'a> Range<'a> {
    /// Positions the two cursors (steps 1 and 2 of the module documentation).
    pub(super) fn new(root: &'a Node, height: usize, lower: Bound<&[u8]>, upper: Upper<'_>) -> Self {
        let mut front = Cursor::seek(root, height, |k, _| below_lower(lower, k));
        if !front.settle_forward() {
            return Range { ends: None };
        }
        let mut back = Cursor::seek(root, height, |k, _| within_upper(upper, k));
        if !back.retreat() {
            return Range { ends: None };
        }
        let ((fk, fi), (bk, bi)) = (front.pair(), back.pair());
        if cmp_pair(fk, fi, bk, bi) == Ordering::Greater {
            return Range { ends: None };
        }
        Range {
            ends: Some((front, back)),
        }
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = (&'a [u8], u32);

    fn next(&mut self) -> Option<Self::Item> {
        let (front, back) = self.ends.as_mut()?;
        let item = front.pair();
        if front.same_position(back) || !front.advance() {
            self.ends = None;
        }
        Some(item)
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (front, back) = self.ends.as_mut()?;
        let item = back.pair();
        if back.same_position(front) || !back.retreat() {
            self.ends = None;
        }
        Some(item)
    }
}

impl FusedIterator for Range<'_> {}

impl fmt::Debug for Range<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Range");
        if let Some((front, back)) = &self.ends {
            d.field("front", &front.pair()).field("back", &back.pair());
        }
        d.finish_non_exhaustive()
    }
}
