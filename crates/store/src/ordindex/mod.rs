//! The ordering index of an attribute: every (key, entry ID) pair of the attribute's values,
//! in order, as a persistent (copy-on-write) B+tree.
//!
//! For an attribute configured with an ordering or substring index, the store keeps one
//! [`OrdIndex`] whose keys are the octet strings the attribute's matching rule produces
//! (already normalized, so keys compare bytewise) and whose IDs are the entries holding the
//! value. It answers `(attr>=v)` and `(attr<=v)` with [`OrdTree::range`], initial substrings
//! `(attr=abc*)` with [`OrdTree::prefix`], and server-side sorting with ordered walks in
//! either direction ([`Range`] is double-ended).
//!
//! # Structure and invariants
//!
//! The index is a set of pairs ordered by key octets, then ID. Leaves hold pairs packed in
//! two buffers (all key octets in one `Vec<u8>`, one (end offset, ID) slot per pair in
//! another), so a leaf of 64 pairs costs three allocations (the node and its two buffers)
//! whatever its key lengths. Inner nodes hold `n` children (`Arc`s) and `n - 1` separator
//! pairs packed the same way. These invariants hold between calls (and
//! [`OrdTree::check_invariants`] verifies them):
//! 1. pairs within a node are strictly ascending, and no key is longer than [`MAX_KEY_LEN`];
//! 2. every pair under child `i` of an inner node lies in `[sep(i - 1), sep(i))`, the outer
//!    ends being the node's own bounds;
//! 3. a leaf other than the root holds `LEAF / 2 ..= LEAF` pairs; an inner node other than
//!    the root has `FANOUT / 2 ..= FANOUT` children; an inner root has at least two;
//! 4. every leaf is at depth [`OrdTree::height`], so with invariant 3 the height is at
//!    most `1 + log_{FANOUT/2}(len / LEAF)`.
//!
//! # Versions
//!
//! Cloning an index clones the root `Arc` and two integers. Writes go through
//! `Arc::make_mut` on each node along the path they touch (and on a sibling that a
//! rebalance takes an entry from or merges with), so a node shared with another clone is copied before it is
//! changed, and a node already copied in this version (uniquely owned) is changed in place.
//! A version that readers hold therefore never changes; a write batch copies each touched
//! node once.
//!
//! # Insertion (top-down, one pass, no recursion)
//!
//! 1. Refuse keys longer than [`MAX_KEY_LEN`]; return `Ok(false)` at once if the pair is
//!    present (so a no-op insert copies nothing).
//! 2. If the root is full, split it and put a new inner root above the two halves.
//! 3. Descend towards the pair. Before entering a full child, split it in two halves and
//!    insert the right half's first pair as a separator in the parent, which is not full
//!    because it was split on the way down if it was.
//! 4. Insert the pair in the leaf, which is not full.
//!
//! # Removal (top-down, one pass, no recursion)
//!
//! 1. Return `false` at once if the pair is absent.
//! 2. Descend towards the pair. Before entering a child at its minimum fill, give it one
//!    more entry: take one from a sibling that has more than the minimum (rotating through
//!    the separator), or else merge it with a sibling at the minimum (the two fit in one
//!    node). The parent can lose a child this way because it was itself above its minimum,
//!    or is the root.
//! 3. Remove the pair from the leaf, which stays at or above its minimum.
//! 4. While the root is an inner node with a single child, make that child the root.
//!
//! Separators are not updated when the pair they equal is removed: a separator only has to
//! lie between the two subtrees, and removing pairs keeps it there.
//!
//! # Keys too long
//!
//! Keys longer than [`MAX_KEY_LEN`] are refused with [`KeyTooLong`]. The store then leaves
//! that value out of the index, and so must not take the index alone as the answer for
//! that attribute: entries holding such a value are found by evaluating the filter on the
//! entries themselves (verification), as for an unindexed attribute.
//!
//! # Memory
//!
//! [`OrdTree::heap_bytes`] counts what a version reaches. A pair costs 20 octets in its
//! leaf (the key, its end offset and the ID, all packed); node headers, separators and
//! spare capacity come on top. Buffers grow by an eighth rather than by doubling, and are
//! trimmed after splits, bulk loads and long runs of removals. Measured with 1,000,000
//! pairs of 12-octet keys (release build, default node sizes):
//!
//! | how the index was made | octets per pair |
//! | --- | --- |
//! | [`OrdTree::from_sorted`] | 21.8 |
//! | inserted one by one in random order, one version | 24.0 |
//! | inserted one by one in ascending order, one version | 23.7 |
//! | inserted in random order, each insert on a new clone (as the writer does) | 25.0 |
//! | then half removed, each removal on a new clone | 24.3 |

mod build;
mod check;
mod iter;
mod packed;

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

pub use build::BuildError;
pub use iter::Range;

use iter::Upper;
use packed::{cmp_pair, Packed};

/// Default number of pairs in a full leaf. 64 pairs of typical index keys (10 to 30 octets)
/// make a 1 to 2.5 KiB leaf: per-node costs (the `Arc` header and two buffer headers,
/// about 100 octets) are spread over many pairs, a binary search stays within a few cache
/// lines, and the copy a write makes of a shared leaf stays small.
pub const LEAF_CAP: usize = 64;

/// Default number of children of a full inner node. With at least 32 children per inner
/// node, a million pairs need at most three levels above the leaves; copying a 64-child
/// node on a write costs about as much as copying a leaf.
pub const INNER_CAP: usize = 64;

/// The longest key the index accepts, in octets. Ordering keys are normalized attribute
/// values, almost always far shorter; the limit keeps one value from making a node (and
/// every copy of it) large, and keeps the offsets of a node's packed keys within `u32`.
pub const MAX_KEY_LEN: usize = 1024;

/// A key longer than [`MAX_KEY_LEN`], refused by [`OrdTree::insert`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("index key of {len} octets is longer than the limit of {MAX_KEY_LEN}")]
pub struct KeyTooLong {
    /// The key's length in octets.
    pub len: usize,
}

/// A node: a leaf of pairs, or an inner node of separators and children.
#[derive(Clone)]
enum Node {
    /// Pairs, ascending.
    Leaf(Packed),
    /// Children and the separators between them.
    Inner(Inner),
}

/// An inner node: `children.len() - 1` separators, ascending.
#[derive(Clone)]
struct Inner {
    /// Separator `i` is above every pair under child `i` and at most every pair under child
    /// `i + 1`.
    seps: Packed,
    /// The subtrees.
    children: Vec<Arc<Node>>,
}

impl Inner {
    /// The child whose range holds `(key, id)`: the number of separators at or below it.
    fn child_for(&self, key: &[u8], id: u32) -> usize {
        self.seps
            .partition_point(|k, d| cmp_pair(k, d, key, id) != Ordering::Greater)
    }
}

/// The ordering index with the store's node sizes ([`LEAF_CAP`], [`INNER_CAP`]).
pub type OrdIndex = OrdTree<LEAF_CAP, INNER_CAP>;

/// A persistent B+tree set of (key, entry ID) pairs ordered by key octets, then ID (see the
/// module documentation), with `LEAF` pairs in a full leaf and `FANOUT` children in a full
/// inner node. The store uses [`OrdIndex`]; other sizes exist for tests, where small nodes
/// build deep trees from few pairs.
#[derive(Clone)]
pub struct OrdTree<const LEAF: usize, const FANOUT: usize> {
    /// The root node: a leaf while the index fits in one.
    root: Arc<Node>,
    /// Number of pairs.
    len: usize,
    /// Levels of inner nodes above the leaves.
    height: usize,
}

impl<const LEAF: usize, const FANOUT: usize> Default for OrdTree<LEAF, FANOUT> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const LEAF: usize, const FANOUT: usize> fmt::Debug for OrdTree<LEAF, FANOUT> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrdTree")
            .field("len", &self.len)
            .field("height", &self.height)
            .finish_non_exhaustive()
    }
}

impl<'a, const LEAF: usize, const FANOUT: usize> IntoIterator for &'a OrdTree<LEAF, FANOUT> {
    type Item = (&'a [u8], u32);
    type IntoIter = Range<'a>;

    fn into_iter(self) -> Range<'a> {
        self.iter()
    }
}

impl<const LEAF: usize, const FANOUT: usize> OrdTree<LEAF, FANOUT> {
    /// Rejects node sizes the algorithms do not support, at compile time: a leaf must hold
    /// at least 2 pairs and an inner node at least 4 children (so that halves and merges
    /// respect the minimum fill), and a node's packed keys must stay within `u32` offsets.
    const SIZES_OK: () = assert!(
        LEAF >= 2
            && FANOUT >= 4
            && LEAF <= (u32::MAX as usize) / MAX_KEY_LEN
            && FANOUT <= (u32::MAX as usize) / MAX_KEY_LEN
    );

    /// Fewest pairs in a leaf other than the root.
    const LEAF_MIN: usize = LEAF / 2;

    /// Fewest children of an inner node other than the root.
    const FANOUT_MIN: usize = FANOUT / 2;

    /// An empty index.
    pub fn new() -> Self {
        let () = Self::SIZES_OK;
        OrdTree {
            root: Arc::new(Node::Leaf(Packed::default())),
            len: 0,
            height: 0,
        }
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index holds no pair.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Levels of inner nodes above the leaves (0 while the root is a leaf).
    pub fn height(&self) -> usize {
        self.height
    }

    /// Whether the pair is present.
    pub fn contains(&self, key: &[u8], id: u32) -> bool {
        let mut node: &Node = &self.root;
        loop {
            match node {
                Node::Leaf(leaf) => return leaf.search(key, id).is_ok(),
                Node::Inner(inner) => match inner.children.get(inner.child_for(key, id)) {
                    Some(child) => node = child,
                    None => return false,
                },
            }
        }
    }

    /// Whether `node` cannot take one more entry.
    fn is_full(node: &Node) -> bool {
        match node {
            Node::Leaf(leaf) => leaf.len() >= LEAF,
            Node::Inner(inner) => inner.children.len() >= FANOUT,
        }
    }

    /// Whether `node` (not the root) cannot give up an entry.
    fn at_min(node: &Node) -> bool {
        match node {
            Node::Leaf(leaf) => leaf.len() <= Self::LEAF_MIN,
            Node::Inner(inner) => inner.children.len() <= Self::FANOUT_MIN,
        }
    }

    /// Splits a full node in two halves: `node` keeps the lower half; returns the separator
    /// between them and the upper half.
    fn split(node: &mut Node) -> (Vec<u8>, u32, Node) {
        match node {
            Node::Leaf(leaf) => {
                let right = leaf.split_off(leaf.len() / 2);
                leaf.shrink_to_fit();
                let sep = right.key(0).to_vec();
                let sep_id = right.id(0);
                (sep, sep_id, Node::Leaf(right))
            }
            Node::Inner(inner) => {
                // Children `..mid` stay, `mid..` move; separator `mid - 1`, between the two
                // halves, goes up.
                let mid = inner.children.len() / 2;
                let children = inner.children.split_off(mid);
                let seps = inner.seps.split_off(mid);
                let up = mid.saturating_sub(1);
                let sep = inner.seps.key(up).to_vec();
                let sep_id = inner.seps.id(up);
                inner.seps.remove(up);
                inner.seps.shrink_to_fit();
                inner.children.shrink_to_fit();
                (sep, sep_id, Node::Inner(Inner { seps, children }))
            }
        }
    }

    /// Inserts the pair. `Ok(true)` if it was absent, `Ok(false)` if present (nothing is
    /// copied then); [`KeyTooLong`] if the key is longer than [`MAX_KEY_LEN`].
    pub fn insert(&mut self, key: &[u8], id: u32) -> Result<bool, KeyTooLong> {
        if key.len() > MAX_KEY_LEN {
            return Err(KeyTooLong { len: key.len() });
        }
        if self.contains(key, id) {
            return Ok(false);
        }
        if Self::is_full(&self.root) {
            let mut left = std::mem::replace(&mut self.root, Arc::new(Node::Leaf(Packed::default())));
            let (sep, sep_id, right) = Self::split(Arc::make_mut(&mut left));
            let mut seps = Packed::default();
            seps.push(&sep, sep_id);
            self.root = Arc::new(Node::Inner(Inner {
                seps,
                children: vec![left, Arc::new(right)],
            }));
            self.height += 1;
        }
        let mut node = Arc::make_mut(&mut self.root);
        let inserted = loop {
            match node {
                Node::Leaf(leaf) => match leaf.search(key, id) {
                    Ok(_) => break false,
                    Err(pos) => {
                        leaf.insert(pos, key, id);
                        break true;
                    }
                },
                Node::Inner(inner) => {
                    let mut i = inner.child_for(key, id);
                    if let Some(child) = inner.children.get_mut(i) {
                        if Self::is_full(child) {
                            let (sep, sep_id, right) = Self::split(Arc::make_mut(child));
                            inner.seps.insert(i, &sep, sep_id);
                            inner.children.insert(i + 1, Arc::new(right));
                            i = inner.child_for(key, id);
                        }
                    }
                    let Some(child) = inner.children.get_mut(i) else {
                        break false;
                    };
                    node = Arc::make_mut(child);
                }
            }
        };
        if inserted {
            self.len += 1;
        }
        Ok(inserted)
    }

    /// Removes the pair. True if it was present (nothing is copied otherwise).
    pub fn remove(&mut self, key: &[u8], id: u32) -> bool {
        if !self.contains(key, id) {
            return false;
        }
        let mut node = Arc::make_mut(&mut self.root);
        let removed = loop {
            match node {
                Node::Leaf(leaf) => match leaf.search(key, id) {
                    Ok(pos) => {
                        leaf.remove(pos);
                        break true;
                    }
                    Err(_) => break false,
                },
                Node::Inner(inner) => {
                    let i = inner.child_for(key, id);
                    if inner.children.get(i).is_some_and(|c| Self::at_min(c)) {
                        Self::refill(inner, i);
                    }
                    // A merge with the left sibling moves the pair's child one place left.
                    let i = inner.child_for(key, id);
                    let Some(child) = inner.children.get_mut(i) else {
                        break false;
                    };
                    node = Arc::make_mut(child);
                }
            }
        };
        loop {
            let only_child = match &*self.root {
                Node::Inner(inner) if inner.children.len() == 1 => inner.children.first().cloned(),
                _ => None,
            };
            let Some(child) = only_child else { break };
            self.root = child;
            self.height = self.height.saturating_sub(1);
        }
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Gives child `i` of `inner`, which is at its minimum, one more entry: from a sibling
    /// above its minimum, else by merging with a sibling.
    fn refill(inner: &mut Inner, i: usize) {
        let spare = |j: usize| inner.children.get(j).is_some_and(|c| !Self::at_min(c));
        if spare(i + 1) {
            Self::shift_left(inner, i);
        } else if i > 0 && spare(i - 1) {
            Self::shift_right(inner, i - 1);
        } else if i + 1 < inner.children.len() {
            Self::merge(inner, i);
        } else if i > 0 {
            Self::merge(inner, i - 1);
        }
    }

    /// Moves the first entry of child `i + 1` to the end of child `i`.
    fn shift_left(inner: &mut Inner, i: usize) {
        let Inner { seps, children } = inner;
        let (a, b) = children.split_at_mut(i + 1);
        let (Some(left), Some(right)) = (a.last_mut(), b.first_mut()) else {
            return;
        };
        match (Arc::make_mut(left), Arc::make_mut(right)) {
            (Node::Leaf(l), Node::Leaf(r)) => {
                l.push(r.key(0), r.id(0));
                r.remove(0);
                seps.replace(i, r.key(0), r.id(0));
            }
            (Node::Inner(l), Node::Inner(r)) => {
                if r.children.is_empty() {
                    return;
                }
                l.seps.push(seps.key(i), seps.id(i));
                l.children.push(r.children.remove(0));
                seps.replace(i, r.seps.key(0), r.seps.id(0));
                r.seps.remove(0);
            }
            // Siblings are always at the same level.
            _ => {}
        }
    }

    /// Moves the last entry of child `i` to the front of child `i + 1`.
    fn shift_right(inner: &mut Inner, i: usize) {
        let Inner { seps, children } = inner;
        let (a, b) = children.split_at_mut(i + 1);
        let (Some(left), Some(right)) = (a.last_mut(), b.first_mut()) else {
            return;
        };
        match (Arc::make_mut(left), Arc::make_mut(right)) {
            (Node::Leaf(l), Node::Leaf(r)) => {
                let Some(last) = l.len().checked_sub(1) else {
                    return;
                };
                r.insert(0, l.key(last), l.id(last));
                l.remove(last);
                seps.replace(i, r.key(0), r.id(0));
            }
            (Node::Inner(l), Node::Inner(r)) => {
                let Some(last) = l.seps.len().checked_sub(1) else {
                    return;
                };
                let Some(child) = l.children.pop() else {
                    return;
                };
                r.seps.insert(0, seps.key(i), seps.id(i));
                r.children.insert(0, child);
                seps.replace(i, l.seps.key(last), l.seps.id(last));
                l.seps.remove(last);
            }
            _ => {}
        }
    }

    /// Merges child `i + 1` into child `i` and drops the separator between them.
    fn merge(inner: &mut Inner, i: usize) {
        if i + 1 >= inner.children.len() {
            return;
        }
        let right = inner.children.remove(i + 1);
        let Inner { seps, children } = inner;
        let Some(left) = children.get_mut(i) else {
            return;
        };
        match (Arc::make_mut(left), &*right) {
            (Node::Leaf(l), Node::Leaf(r)) => l.append(r),
            (Node::Inner(l), Node::Inner(r)) => {
                l.seps.push(seps.key(i), seps.id(i));
                l.seps.append(&r.seps);
                l.children.extend(r.children.iter().cloned());
            }
            _ => {}
        }
        seps.remove(i);
    }

    /// Pairs with keys between the bounds, ascending (`.rev()` for descending). An empty or
    /// inverted range yields nothing.
    pub fn range(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Range<'_> {
        Range::new(&self.root, self.height, lower, Upper::Key(upper))
    }

    /// Pairs with keys between the bounds, descending.
    pub fn range_rev(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> std::iter::Rev<Range<'_>> {
        self.range(lower, upper).rev()
    }

    /// Pairs whose keys start with `prefix` (all pairs for an empty prefix), ascending.
    pub fn prefix(&self, prefix: &[u8]) -> Range<'_> {
        Range::new(
            &self.root,
            self.height,
            Bound::Included(prefix),
            Upper::Prefix(prefix),
        )
    }

    /// All pairs, ascending.
    pub fn iter(&self) -> Range<'_> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }

    /// The IDs of the pairs with keys between the bounds, in (key, ID) order (an ID appears
    /// once per key it has in the range).
    pub fn ids_in_range(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Vec<u32> {
        self.range(lower, upper).map(|(_, id)| id).collect()
    }
}
