//! Bulk loading: [`OrdTree::from_sorted`] builds a tree bottom-up from ascending pairs in
//! time linear in their number, for the index build at startup.
//!
//! How it works:
//! 1. Pairs fill leaves of `LEAF` pairs in order; equal consecutive pairs are kept once, a
//!    pair below its predecessor or with a key longer than [`MAX_KEY_LEN`] stops the build
//!    with an error.
//! 2. If the last leaf ends up below the minimum fill, it and the full leaf before it share
//!    their pairs evenly (together they hold more than `LEAF`, so each half is at least
//!    `LEAF / 2`).
//! 3. Each level is grouped into the fewest inner nodes of at most `FANOUT` children, the
//!    children spread evenly (so each node has at least `FANOUT / 2`); a node's separators
//!    are the first pairs of its children after the first (reached by following first
//!    children down to a leaf). Levels are built until one node is left: the root.
//!
//! Nodes are filled completely (best for memory; the first insert into a full leaf splits
//! it) and their buffers trimmed to their length.

use std::cmp::Ordering;
use std::sync::Arc;

use super::packed::{cmp_pair, Packed};
use super::{Inner, KeyTooLong, Node, OrdTree, MAX_KEY_LEN};

/// Why [`OrdTree::from_sorted`] refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A key longer than [`MAX_KEY_LEN`].
    #[error("pair {index}: {source}")]
    KeyTooLong {
        /// Position of the pair in the input, from 0.
        index: usize,
        /// The key's length.
        #[source]
        source: KeyTooLong,
    },
    /// A pair below the one before it.
    #[error("pair {index} is below the pair before it")]
    NotAscending {
        /// Position of the pair in the input, from 0.
        index: usize,
    },
}

/// The first pair under `node`, found by following first children down `levels` levels of
/// inner nodes (no recursion; empty for an empty leaf).
fn first_pair(mut node: &Node, levels: usize) -> (&[u8], u32) {
    for _ in 0..=levels {
        match node {
            Node::Leaf(leaf) => return leaf.pair(0),
            Node::Inner(inner) => match inner.children.first() {
                Some(child) => node = child,
                None => break,
            },
        }
    }
    (&[], 0)
}

impl<const LEAF: usize, const FANOUT: usize> OrdTree<LEAF, FANOUT> {
    /// Builds an index from pairs in ascending (key, ID) order, keeping one of equal
    /// consecutive pairs, in linear time (see the module documentation of `build`). The
    /// result equals inserting the pairs one by one, with fuller nodes.
    pub fn from_sorted<I, K>(pairs: I) -> Result<Self, BuildError>
    where
        I: IntoIterator<Item = (K, u32)>,
        K: AsRef<[u8]>,
    {
        let () = Self::SIZES_OK;
        // Step 1: full leaves.
        let mut leaves: Vec<Packed> = Vec::new();
        let mut current = Packed::with_capacity(LEAF);
        let mut len = 0usize;
        for (index, (key, id)) in pairs.into_iter().enumerate() {
            let key = key.as_ref();
            if key.len() > MAX_KEY_LEN {
                let source = KeyTooLong { len: key.len() };
                return Err(BuildError::KeyTooLong { index, source });
            }
            let last = match current.len().checked_sub(1) {
                Some(i) => Some(current.pair(i)),
                None => leaves
                    .last()
                    .and_then(|l| l.len().checked_sub(1).map(|i| l.pair(i))),
            };
            if let Some((lk, li)) = last {
                match cmp_pair(lk, li, key, id) {
                    Ordering::Less => {}
                    Ordering::Equal => continue,
                    Ordering::Greater => return Err(BuildError::NotAscending { index }),
                }
            }
            // Amortized doubling while a leaf fills; trimmed when it is full.
            current.bytes.reserve(key.len());
            current.push(key, id);
            len += 1;
            if current.len() >= LEAF {
                current.shrink_to_fit();
                leaves.push(std::mem::replace(&mut current, Packed::with_capacity(LEAF)));
            }
        }
        if current.len() > 0 || leaves.is_empty() {
            current.shrink_to_fit();
            leaves.push(current);
        }

        // Step 2: even out the last two leaves.
        if leaves.len() >= 2 && leaves.last().is_some_and(|l| l.len() < Self::LEAF_MIN) {
            if let (Some(mut last), Some(prev)) = (leaves.pop(), leaves.last_mut()) {
                let total = prev.len() + last.len();
                let mut moved = prev.split_off(total.div_ceil(2));
                moved.append(&last);
                last = moved;
                prev.shrink_to_fit();
                last.shrink_to_fit();
                leaves.push(last);
            }
        }

        // Step 3: inner levels.
        let mut level: Vec<Arc<Node>> = leaves.into_iter().map(|l| Arc::new(Node::Leaf(l))).collect();
        let mut height = 0;
        while level.len() > 1 {
            let n = level.len();
            let groups = n.div_ceil(FANOUT);
            let (base, extra) = (n / groups, n % groups);
            let mut next = Vec::with_capacity(groups);
            let mut children_left = level.into_iter();
            for g in 0..groups {
                let size = base + usize::from(g < extra);
                let children: Vec<Arc<Node>> = children_left.by_ref().take(size).collect();
                let mut seps = Packed::with_capacity(size.saturating_sub(1));
                for child in children.iter().skip(1) {
                    let (key, id) = first_pair(child, height);
                    seps.push(key, id);
                }
                seps.shrink_to_fit();
                next.push(Arc::new(Node::Inner(Inner { seps, children })));
            }
            level = next;
            height += 1;
        }
        let root = level
            .pop()
            .unwrap_or_else(|| Arc::new(Node::Leaf(Packed::default())));
        Ok(OrdTree { root, len, height })
    }
}
