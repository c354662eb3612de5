//! [`HashTrie`]: a persistent map from a 64-bit hash to a value, as a hash array mapped
//! trie with small sorted leaves.
//!
//! # Shape
//!
//! Keys are hashes the caller computed; they are taken as well mixed, and two equal keys
//! are the same key (the map holds one value per distinct `u64`, so no collision lists).
//! The trie reads a key from its top bits down, [`BITS`] bits per level:
//!
//! 1. An inner node at depth `d` picks a child by bits `64 - BITS(d+1) .. 64 - BITS d` of
//!    the key (the `d`-th digit). It holds a bitmap of the digits that have a child and a
//!    vector of exactly that many children, in digit order (no empty slots): the child of
//!    digit `x` is at the number of bitmap bits below `x`.
//! 2. A leaf is a vector of `(key, value)` sorted by key, at most [`LEAF_MAX`] long; a
//!    lookup ends with a binary search in it.
//! 3. When an insert takes a leaf past [`LEAF_MAX`], the leaf becomes an inner node whose
//!    children are leaves by the next digit (repeated while one child is still too long,
//!    as when keys share a long prefix). After `64 / BITS` levels every bit is consumed,
//!    so a leaf that deep holds one key and never splits: depth is at most [`MAX_DEPTH`].
//! 4. When a remove takes an inner node down to [`COLLAPSE_MAX`] keys, its whole subtree
//!    becomes one leaf again, so the trie stays compact after deletes. Splitting above
//!    [`LEAF_MAX`] and collapsing at half of it keeps an insert/remove pair at a boundary
//!    from splitting and collapsing every time.
//!
//! Since digits are read from the top, iteration is in ascending key order.
//!
//! # Invariants
//!
//! 1. A leaf holds 1 to [`LEAF_MAX`] entries with strictly ascending keys that all share
//!    the digits of the leaf's path (the empty map has no node at all).
//! 2. An inner node has as many children as bitmap bits, at least one; its `len` is the
//!    number of keys below it and is more than [`COLLAPSE_MAX`].
//! 3. The map's `len` is the number of keys.
//!
//! [`HashTrie::validate`] checks them (tests use it after every step).
//!
//! # Persistence
//!
//! `Clone` copies the root pointer only. Changes walk from the root with
//! [`Arc::make_mut`]: a node shared with another version is copied once (a leaf's entries
//! are cloned, an inner node's child pointers incremented), a node this version already
//! owns alone is changed in place. A batch of changes under one leaf copies the path to it
//! once. Nothing is copied by a lookup, nor by a `get_mut` or `remove` of a missing key.
//!
//! # Costs
//!
//! Measured with 16-octet values (`(u64, V)` entries of 24 octets) and well-mixed keys,
//! counting [`HashTrie::heap_bytes`] (node and vector bytes, not allocator rounding nor
//! what the values own): the `hash_trie_memory` test for a million keys, the ignored
//! `hash_trie_memory_sweep` test (`--release --ignored`) for the range.
//!
//! - 1 000 000 keys: 28.5 octets per key, 1.19 × the entries' size (the same whether
//!   built in bulk or by inserts: vectors are kept at their exact length).
//! - The figure moves with the key count, as in any trie whose leaves split into
//!   [`FANOUT`] parts: over 5 000 to 5 000 000 keys it stays between 1.06 × (leaves nearly
//!   full) and 1.55 × (just after most leaves split, as near 330 000 keys). [`BITS`] = 4
//!   keeps this band narrower than 5 or 6 bits would (those reach 2 × and more), at the
//!   price of one more level: a million keys sit five levels deep (four inner nodes, then
//!   the leaf).
//! - A change after a clone copies one path: for a million keys four inner nodes of at
//!   most [`FANOUT`] pointers and one leaf of at most [`LEAF_MAX`] entries (2.4 KB at most for
//!   24-octet entries).
//! - [`HashTrie::from_vec`] sorts, then builds each node once, top-down over the sorted
//!   entries (linear after the sort).

use std::collections::HashSet;
use std::fmt;
use std::mem;
use std::sync::Arc;

/// Key bits consumed by one inner level.
pub const BITS: u32 = 4;
/// Children an inner node can have.
pub const FANOUT: usize = 1 << BITS;
/// Most entries in a leaf. Large enough that a leaf's fixed cost (its `Arc` allocation and
/// the parent's pointer, about 70 octets) is a few octets per key; small enough that
/// copying a leaf after a clone stays near 1.5 KB for 24-octet entries.
pub const LEAF_MAX: usize = 64;
/// An inner node whose key count falls to this is turned back into a leaf (half of
/// [`LEAF_MAX`], for hysteresis).
pub const COLLAPSE_MAX: usize = LEAF_MAX / 2;
/// Deepest level an inner node can sit at, plus one: after this many digits every key bit
/// is consumed. Bounds every walk down the trie.
pub const MAX_DEPTH: u32 = 64 / BITS;

/// A leaf whose capacity exceeds its length by more than this after a removal gives the
/// spare room back (leaves are otherwise kept at their exact length).
const LEAF_SPARE_MAX: usize = 8;

/// The `depth`-th digit of `key` (0 when every bit is consumed).
fn digit(key: u64, depth: u32) -> u32 {
    match key.checked_shl(BITS * depth) {
        Some(rest) => (rest >> (64 - BITS)) as u32,
        None => 0,
    }
}

/// Whether `bitmap` has `digit`, and the position of that digit's child.
fn locate(bitmap: u64, digit: u32) -> (bool, usize) {
    let bit = 1u64 << digit;
    (bitmap & bit != 0, (bitmap & (bit - 1)).count_ones() as usize)
}

#[derive(Clone)]
enum Node<V> {
    Leaf(Vec<(u64, V)>),
    Inner(Inner<V>),
}

#[derive(Clone)]
struct Inner<V> {
    bitmap: u64,
    /// Keys below this node.
    len: usize,
    children: Vec<Arc<Node<V>>>,
}

/// The value [`HashTrie::get_or_insert_with`] inserts: made up front when the key is
/// known to be missing; the closure is kept otherwise (and then not called, since the key
/// is found).
enum NewValue<V, F> {
    Made(V),
    Unused(F),
}

impl<V, F: FnOnce() -> V> NewValue<V, F> {
    fn take(self) -> V {
        match self {
            NewValue::Made(value) => value,
            NewValue::Unused(make) => make(),
        }
    }
}

fn search<V>(entries: &[(u64, V)], key: u64) -> Result<usize, usize> {
    entries.binary_search_by_key(&key, |e| e.0)
}

/// A persistent map from `u64` (a well-mixed hash) to `V`; see the [module](self) docs
/// for its shape and costs. Cloning is O(1); a clone never sees later changes of the
/// original, nor the original those of the clone.
#[derive(Clone)]
pub struct HashTrie<V> {
    root: Option<Arc<Node<V>>>,
    len: usize,
}

/// Node counts of a [`HashTrie`], for tests and memory accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrieShape {
    /// Inner nodes.
    pub inner_nodes: usize,
    /// Leaves.
    pub leaves: usize,
    /// Depth of the deepest leaf (0 when the root is a leaf).
    pub max_depth: u32,
}

impl<V: Clone> Default for HashTrie<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Clone> HashTrie<V> {
    /// The empty map.
    pub fn new() -> Self {
        HashTrie { root: None, len: 0 }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `key`.
    pub fn get(&self, key: u64) -> Option<&V> {
        let mut node = self.root.as_deref()?;
        let mut depth = 0;
        loop {
            match node {
                Node::Leaf(entries) => return entries.get(search(entries, key).ok()?).map(|e| &e.1),
                Node::Inner(inner) => {
                    let (present, pos) = locate(inner.bitmap, digit(key, depth));
                    if !present {
                        return None;
                    }
                    node = inner.children.get(pos)?;
                    depth += 1;
                }
            }
        }
    }

    /// Whether `key` is in the map.
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// The value of `key`, to change in place. Copies the path to it where shared with
    /// another version; copies nothing when `key` is missing.
    pub fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        self.get(key)?;
        let mut slot = self.root.as_mut()?;
        let mut depth = 0;
        loop {
            match Arc::make_mut(slot) {
                Node::Leaf(entries) => {
                    let i = search(entries, key).ok()?;
                    return entries.get_mut(i).map(|e| &mut e.1);
                }
                Node::Inner(inner) => {
                    let (_, pos) = locate(inner.bitmap, digit(key, depth));
                    slot = inner.children.get_mut(pos)?;
                    depth += 1;
                }
            }
        }
    }

    /// Sets the value of `key`, returning the previous one.
    pub fn insert(&mut self, key: u64, value: V) -> Option<V> {
        if let Some(old) = self.get_mut(key) {
            return Some(mem::replace(old, value));
        }
        self.get_or_insert_with(key, || value);
        None
    }

    /// The value of `key`, first inserting `make()` when the key is missing (for "add an
    /// ID to the set at `key`, creating the set"). Copies the path where shared, splits a
    /// leaf that would grow past [`LEAF_MAX`]. `make` runs before anything changes, so if
    /// it panics the map is left as it was.
    pub fn get_or_insert_with(&mut self, key: u64, make: impl FnOnce() -> V) -> &mut V {
        let is_new = self.get(key).is_none();
        let value = if is_new {
            let value = make();
            self.len += 1;
            NewValue::Made(value)
        } else {
            NewValue::Unused(make)
        };
        let mut slot = self
            .root
            .get_or_insert_with(|| Arc::new(Node::Leaf(Vec::with_capacity(1))));
        let mut depth = 0;
        loop {
            // A full leaf that must take the key becomes an inner node first; the walk
            // then goes on below it.
            let must_split = matches!(&**slot, Node::Leaf(entries)
                if entries.len() >= LEAF_MAX && depth < MAX_DEPTH && search(entries, key).is_err());
            if must_split {
                let node = Arc::make_mut(slot);
                if let Node::Leaf(entries) = node {
                    let n = entries.len();
                    let full = mem::take(entries);
                    *node = build_inner(&mut full.into_iter(), n, depth);
                }
            }
            match Arc::make_mut(slot) {
                Node::Leaf(entries) => {
                    let i = match search(entries, key) {
                        Ok(i) => i,
                        Err(i) => {
                            entries.reserve_exact(1);
                            entries.insert(i, (key, value.take()));
                            i
                        }
                    };
                    // `i` is where the key was found or just inserted: in bounds.
                    return &mut entries[i].1;
                }
                Node::Inner(inner) => {
                    if is_new {
                        inner.len += 1;
                    }
                    let d = digit(key, depth);
                    let (present, pos) = locate(inner.bitmap, d);
                    let pos = pos.min(inner.children.len());
                    if !present || pos == inner.children.len() {
                        // The new key's digit has no child yet: an empty leaf that the
                        // next step fills.
                        inner.bitmap |= 1u64 << d;
                        inner.children.reserve_exact(1);
                        inner
                            .children
                            .insert(pos, Arc::new(Node::Leaf(Vec::with_capacity(1))));
                    }
                    // `pos` is below the length: it was, or a child was just put there.
                    slot = &mut inner.children[pos];
                    depth += 1;
                }
            }
        }
    }

    /// Removes `key` and returns its value. A leaf left empty is dropped; an inner node
    /// left with [`COLLAPSE_MAX`] keys or fewer becomes a leaf. Copies nothing when `key`
    /// is missing.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        self.get(key)?;
        let root = self.root.as_mut()?;
        let old = remove_in(root, key, 0);
        if old.is_some() {
            self.len -= 1;
        }
        if matches!(&**root, Node::Leaf(entries) if entries.is_empty()) {
            self.root = None;
        }
        old
    }

    /// Builds a map from pairs in any order; of pairs with equal keys the last wins, as if
    /// they were inserted in order. Sorts (stable), then builds every node once.
    pub fn from_vec(mut entries: Vec<(u64, V)>) -> Self {
        entries.sort_by_key(|e| e.0);
        // `dedup_by` keeps the first of a run and drops the later ones; moving the later
        // value into the kept pair makes the last one win.
        entries.dedup_by(|later, kept| {
            if later.0 == kept.0 {
                mem::swap(&mut later.1, &mut kept.1);
                true
            } else {
                false
            }
        });
        let len = entries.len();
        if len == 0 {
            return HashTrie::new();
        }
        let root = build(&mut entries.into_iter(), len, 0);
        HashTrie {
            root: Some(Arc::new(root)),
            len,
        }
    }

    /// The entries in ascending key order.
    pub fn iter(&self) -> Iter<'_, V> {
        let mut iter = Iter {
            stack: Vec::new(),
            leaf: Default::default(),
            remaining: self.len,
        };
        match self.root.as_deref() {
            None => {}
            Some(Node::Leaf(entries)) => iter.leaf = entries.iter(),
            Some(Node::Inner(inner)) => iter.stack.push(inner.children.iter()),
        }
        iter
    }

    /// Calls `f` on every node with its depth (explicit stack, at most [`MAX_DEPTH`] deep).
    fn for_each_node(&self, mut f: impl FnMut(&Arc<Node<V>>, u32)) {
        let mut stack: Vec<(&Arc<Node<V>>, u32)> = self.root.iter().map(|r| (r, 0)).collect();
        while let Some((node, depth)) = stack.pop() {
            f(node, depth);
            if let Node::Inner(inner) = &**node {
                stack.extend(inner.children.iter().map(|c| (c, depth + 1)));
            }
        }
    }

    /// Node counts and depth. For tests and memory accounting.
    pub fn shape(&self) -> TrieShape {
        let mut shape = TrieShape::default();
        self.for_each_node(|node, depth| match &**node {
            Node::Leaf(_) => {
                shape.leaves += 1;
                shape.max_depth = shape.max_depth.max(depth);
            }
            Node::Inner(_) => shape.inner_nodes += 1,
        });
        shape
    }

    /// Number of nodes (leaves and inner nodes). For tests and memory accounting.
    pub fn node_count(&self) -> usize {
        let shape = self.shape();
        shape.inner_nodes + shape.leaves
    }

    /// Number of this map's nodes that are the very same allocation as a node of `other`
    /// (shared between versions, not copied). For tests and memory accounting.
    pub fn shared_nodes_with(&self, other: &HashTrie<V>) -> usize {
        let mut theirs: HashSet<*const Node<V>> = HashSet::new();
        other.for_each_node(|node, _| {
            theirs.insert(Arc::as_ptr(node));
        });
        let mut shared = 0;
        self.for_each_node(|node, _| {
            if theirs.contains(&Arc::as_ptr(node)) {
                shared += 1;
            }
        });
        shared
    }

    /// Heap octets held by the trie: every node with its `Arc` header, plus the capacity
    /// of every leaf's and inner node's vector. Not counted: what the values own on the
    /// heap, allocator rounding. Nodes shared with other versions are counted in full.
    pub fn heap_bytes(&self) -> usize {
        let node_bytes = 2 * mem::size_of::<usize>() + mem::size_of::<Node<V>>();
        let mut bytes = 0;
        self.for_each_node(|node, _| {
            bytes += node_bytes
                + match &**node {
                    Node::Leaf(entries) => entries.capacity() * mem::size_of::<(u64, V)>(),
                    Node::Inner(inner) => inner.children.capacity() * mem::size_of::<Arc<Node<V>>>(),
                }
        });
        bytes
    }

    /// Checks the structural invariants listed in the [module](self) docs and describes
    /// the first one broken. For tests.
    pub fn validate(&self) -> Result<(), String> {
        let mut total = 0usize;
        // (node, depth, the key bits the path fixes, left-aligned)
        let mut stack: Vec<(&Node<V>, u32, u64)> = self.root.iter().map(|r| (&**r, 0, 0)).collect();
        if self.root.is_none() && self.len != 0 {
            return Err(format!("no root, len says {}", self.len));
        }
        while let Some((node, depth, prefix)) = stack.pop() {
            let fixed_bits = BITS * depth;
            let mask = if fixed_bits >= 64 {
                u64::MAX
            } else {
                !(u64::MAX >> fixed_bits)
            };
            match node {
                Node::Leaf(entries) => {
                    if entries.is_empty() || entries.len() > LEAF_MAX {
                        return Err(format!("leaf of {} entries at depth {depth}", entries.len()));
                    }
                    if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
                        return Err(format!("leaf keys not strictly ascending at depth {depth}"));
                    }
                    if let Some((k, _)) = entries.iter().find(|(k, _)| k & mask != prefix) {
                        return Err(format!("key {k:#x} under the wrong path at depth {depth}"));
                    }
                    total += entries.len();
                }
                Node::Inner(inner) => {
                    if depth >= MAX_DEPTH {
                        return Err(format!("inner node at depth {depth}"));
                    }
                    if inner.children.is_empty() || inner.children.len() != inner.bitmap.count_ones() as usize
                    {
                        return Err(format!(
                            "inner node with {} children and bitmap {:#x}",
                            inner.children.len(),
                            inner.bitmap
                        ));
                    }
                    if inner.len <= COLLAPSE_MAX {
                        return Err(format!("inner node of {} keys was not collapsed", inner.len));
                    }
                    let mut below = 0usize;
                    let digits = (0..FANOUT as u32).filter(|d| inner.bitmap & (1u64 << d) != 0);
                    for (child, d) in inner.children.iter().zip(digits) {
                        below += count_below(child);
                        let shift = 64 - BITS * (depth + 1);
                        stack.push((child, depth + 1, prefix | (u64::from(d) << shift)));
                    }
                    if below != inner.len {
                        return Err(format!("inner node counts {} keys, holds {below}", inner.len));
                    }
                }
            }
        }
        if total != self.len {
            return Err(format!("{total} keys, len says {}", self.len));
        }
        Ok(())
    }
}

/// Keys below `node`, by its own count (a leaf's length, an inner node's `len`).
fn count_below<V>(node: &Node<V>) -> usize {
    match node {
        Node::Leaf(entries) => entries.len(),
        Node::Inner(inner) => inner.len,
    }
}

/// Builds the node for the next `n` entries of `entries` (sorted, distinct keys sharing
/// the first `depth` digits): a leaf when they fit, else an inner node.
fn build<V>(entries: &mut std::vec::IntoIter<(u64, V)>, n: usize, depth: u32) -> Node<V> {
    if n <= LEAF_MAX || depth >= MAX_DEPTH {
        Node::Leaf(entries.take(n).collect())
    } else {
        build_inner(entries, n, depth)
    }
}

/// Builds an inner node at `depth` for the next `n` entries of `entries` (sorted, distinct
/// keys sharing the first `depth` digits, `depth` below [`MAX_DEPTH`]), with a child per
/// digit present. Recursion depth is at most [`MAX_DEPTH`].
fn build_inner<V>(entries: &mut std::vec::IntoIter<(u64, V)>, n: usize, depth: u32) -> Node<V> {
    let rest = entries.as_slice();
    let mine = rest.get(..n).unwrap_or(rest);
    // Keys are sorted and share the digits above, so each digit's keys form one run.
    let mut runs: Vec<(u32, usize)> = Vec::with_capacity(FANOUT);
    let mut start = 0;
    while let Some(&(key, _)) = mine.get(start) {
        let d = digit(key, depth);
        let len = mine
            .get(start..)
            .map_or(0, |tail| tail.partition_point(|e| digit(e.0, depth) == d));
        runs.push((d, len.max(1)));
        start += len.max(1);
    }
    let mut inner = Inner {
        bitmap: 0,
        len: start.min(mine.len()),
        children: Vec::with_capacity(runs.len()),
    };
    for (d, len) in runs {
        inner.bitmap |= 1u64 << d;
        inner.children.push(Arc::new(build(entries, len, depth + 1)));
    }
    Node::Inner(inner)
}

/// Removes `key` (known to be present) below `slot` at `depth`. Recursion depth is at
/// most [`MAX_DEPTH`].
fn remove_in<V: Clone>(slot: &mut Arc<Node<V>>, key: u64, depth: u32) -> Option<V> {
    let node = Arc::make_mut(slot);
    match node {
        Node::Leaf(entries) => {
            let i = search(entries, key).ok()?;
            let (_, old) = entries.remove(i);
            if entries.capacity() - entries.len() > LEAF_SPARE_MAX {
                entries.shrink_to_fit();
            }
            Some(old)
        }
        Node::Inner(inner) => {
            let d = digit(key, depth);
            let (present, pos) = locate(inner.bitmap, d);
            if !present {
                return None;
            }
            let child = inner.children.get_mut(pos)?;
            let old = remove_in(child, key, depth + 1)?;
            inner.len -= 1;
            if matches!(&**child, Node::Leaf(entries) if entries.is_empty()) {
                inner.children.remove(pos);
                inner.bitmap &= !(1u64 << d);
            }
            if inner.len <= COLLAPSE_MAX {
                let entries = collect_entries(mem::take(&mut inner.children), inner.len);
                *node = Node::Leaf(entries);
            }
            Some(old)
        }
    }
}

/// The entries below `children`, in key order (explicit stack). Nodes no other version
/// holds are taken apart without cloning their values.
fn collect_entries<V: Clone>(children: Vec<Arc<Node<V>>>, len: usize) -> Vec<(u64, V)> {
    let mut out = Vec::with_capacity(len);
    let mut stack: Vec<Arc<Node<V>>> = children.into_iter().rev().collect();
    while let Some(node) = stack.pop() {
        match Arc::unwrap_or_clone(node) {
            Node::Leaf(entries) => out.extend(entries),
            Node::Inner(inner) => stack.extend(inner.children.into_iter().rev()),
        }
    }
    out
}

/// Ascending `(key, &value)` pairs of a [`HashTrie`].
pub struct Iter<'a, V> {
    /// Per inner level being walked, its children still to visit.
    stack: Vec<std::slice::Iter<'a, Arc<Node<V>>>>,
    /// The rest of the current leaf.
    leaf: std::slice::Iter<'a, (u64, V)>,
    remaining: usize,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (u64, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((key, value)) = self.leaf.next() {
                self.remaining = self.remaining.saturating_sub(1);
                return Some((*key, value));
            }
            let top = self.stack.last_mut()?;
            match top.next().map(|child| &**child) {
                Some(Node::Leaf(entries)) => self.leaf = entries.iter(),
                Some(Node::Inner(inner)) => self.stack.push(inner.children.iter()),
                None => {
                    self.stack.pop();
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}

impl<'a, V: Clone> IntoIterator for &'a HashTrie<V> {
    type Item = (u64, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<V: Clone + PartialEq> PartialEq for HashTrie<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<V: Clone + Eq> Eq for HashTrie<V> {}

impl<V: Clone + fmt::Debug> fmt::Debug for HashTrie<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V: Clone> FromIterator<(u64, V)> for HashTrie<V> {
    fn from_iter<I: IntoIterator<Item = (u64, V)>>(iter: I) -> Self {
        HashTrie::from_vec(iter.into_iter().collect())
    }
}
