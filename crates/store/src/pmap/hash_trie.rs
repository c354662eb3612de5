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
//!    the key (the `d`-th digit). It holds one slot per digit, [`FANOUT`] in all, inside
//!    its own allocation: a slot is empty or names the child's kind and points to it, so
//!    a lookup makes one dependent read per inner level (no separate vector to follow).
//! 2. A leaf is a vector of `(key, value)` sorted by key, at most [`LEAF_MAX`] long, behind
//!    its own `Arc`. A lookup ends there with a search that starts where the key is
//!    expected: keys below a leaf are well mixed in the bits its path has not consumed, so
//!    those bits, read as a fraction, times the leaf's length give the key's likely
//!    position. The search reads that entry, gallops away from it (steps of 1, 2, 4, ...)
//!    until it passes the key, then binary-searches the last step. It reads one or two
//!    cache lines of the leaf for mixed keys instead of the four or so of a binary search,
//!    and stays logarithmic for keys that are not mixed.
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
//! 2. An inner node has at least one child; its `len` is the number of keys below it and
//!    is more than [`COLLAPSE_MAX`].
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
//! - 1 000 000 keys: 27.8 octets per key, 1.16 × the entries' size (the same whether
//!   built in bulk or by inserts: vectors are kept at their exact length). Of the 3.8
//!   octets above the entries, 2.6 are leaf headers (40 octets per leaf: the `Arc` counts
//!   and the vector) and 1.2 are inner nodes (280 octets each, their slots included).
//! - The figure moves with the key count, as in any trie whose leaves split into
//!   [`FANOUT`] parts: over 5 000 to 5 000 000 keys it stays between 1.05 × (leaves nearly
//!   full) and 1.47 × (just after most leaves split, as near 330 000 keys). [`BITS`] = 4
//!   keeps this band narrower than 5 or 6 bits would (those reach 2 × and more, the more
//!   so with a slot per digit), at the price of one more level: a million keys sit five
//!   levels deep (four inner nodes, then the leaf).
//! - A lookup at a million keys makes six dependent reads: the four inner nodes (the
//!   upper ones stay in cache), the leaf's header, then one or two adjacent cache lines of
//!   its entries.
//! - A change after a clone copies one path: for a million keys four inner nodes of
//!   [`FANOUT`] slots and one leaf of at most [`LEAF_MAX`] entries (2.7 KB at most for
//!   24-octet entries).
//! - [`HashTrie::from_vec`] sorts, then builds each node once, top-down over the sorted
//!   entries (linear after the sort).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::mem;
use std::sync::Arc;

/// Key bits consumed by one inner level.
pub const BITS: u32 = 4;
/// Children an inner node can have.
pub const FANOUT: usize = 1 << BITS;
/// Most entries in a leaf. Large enough that a leaf's fixed cost (its `Arc` allocation and
/// the parent's slot, 56 octets) is a few octets per key; small enough that copying
/// a leaf after a clone stays near 1.5 KB for 24-octet entries.
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

/// The `depth`-th digit of `key` (0 when every bit is consumed): always below [`FANOUT`].
fn digit(key: u64, depth: u32) -> usize {
    match key.checked_shl(BITS * depth) {
        Some(rest) => (rest >> (64 - BITS)) as usize,
        None => 0,
    }
}

/// A leaf's entries, sorted by key.
type Entries<V> = Vec<(u64, V)>;

/// A node of the trie, through the pointer to its own shared allocation; cloning it
/// clones the pointer.
enum Node<V> {
    Leaf(Arc<Entries<V>>),
    Inner(Arc<Inner<V>>),
}

// Written out: a derive would require `V: Clone` for cloning a pointer.
impl<V> Clone for Node<V> {
    fn clone(&self) -> Self {
        match self {
            Node::Leaf(leaf) => Node::Leaf(Arc::clone(leaf)),
            Node::Inner(inner) => Node::Inner(Arc::clone(inner)),
        }
    }
}

impl<V> Node<V> {
    /// A leaf with room for one entry, for a key about to be inserted.
    fn new_leaf() -> Self {
        Node::Leaf(Arc::new(Vec::with_capacity(1)))
    }

    /// Keys below this node, by its own count (a leaf's length, an inner node's `len`).
    fn count(&self) -> usize {
        match self {
            Node::Leaf(entries) => entries.len(),
            Node::Inner(inner) => inner.len,
        }
    }

    /// The node's allocation, to tell shared nodes from copies.
    fn addr(&self) -> *const () {
        match self {
            Node::Leaf(entries) => Arc::as_ptr(entries).cast(),
            Node::Inner(inner) => Arc::as_ptr(inner).cast(),
        }
    }
}

/// An inner node: a slot per digit, held in the node's own allocation.
struct Inner<V> {
    /// Keys below this node.
    len: usize,
    /// The child of each digit, in digit order.
    children: [Option<Node<V>>; FANOUT],
}

impl<V> Clone for Inner<V> {
    fn clone(&self) -> Self {
        Inner {
            len: self.len,
            children: self.children.clone(),
        }
    }
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

/// Where `key` is in the `entries` of a leaf at `depth` (`Ok`), or where it would go
/// (`Err`).
///
/// The keys of a leaf share the digits of its path and are well mixed below them, so the
/// key's remaining bits, read as a fraction, give its expected position. The search reads
/// the entry there, gallops away from it (steps of 1, 2, 4, ...) until it passes the key,
/// and ends with a binary search of the last step. For mixed keys that reads the guessed
/// entry and a neighbour or two (one or two cache lines instead of the four or so of a
/// binary search); for clustered keys it costs at most about two binary searches.
fn search<V>(entries: &[(u64, V)], key: u64, depth: u32) -> Result<usize, usize> {
    let guess = expected_position(entries.len(), key, depth);
    let Some(&(at, _)) = entries.get(guess) else {
        return Err(0);
    };
    match at.cmp(&key) {
        Ordering::Equal => Ok(guess),
        Ordering::Less => {
            // Every entry before `lo` is below the key.
            let mut lo = guess + 1;
            let mut step = 1;
            loop {
                let probe = lo + step - 1;
                match entries.get(probe) {
                    Some(e) if e.0 < key => {
                        lo = probe + 1;
                        step *= 2;
                    }
                    _ => return search_in(entries, lo, (probe + 1).min(entries.len()), key),
                }
            }
        }
        Ordering::Greater => {
            // Every entry from `hi` on is above the key.
            let mut hi = guess;
            let mut step = 1;
            loop {
                match hi.checked_sub(step) {
                    Some(probe) if entries.get(probe).is_some_and(|e| e.0 > key) => {
                        hi = probe;
                        step *= 2;
                    }
                    Some(probe) => return search_in(entries, probe, hi, key),
                    None => return search_in(entries, 0, hi, key),
                }
            }
        }
    }
}

/// Where `key` likely sits among the `len` keys of a leaf at `depth`: the bits below the
/// path, read as a fraction `f` of 2^64, put it at `f * (len - 1)`, rounded. Below `len`
/// (0 when `len` is 0).
fn expected_position(len: usize, key: u64, depth: u32) -> usize {
    let rest = key.checked_shl(BITS * depth).unwrap_or(0);
    let last = len.saturating_sub(1) as u128;
    ((u128::from(rest) * last + (1 << 63)) >> 64) as usize
}

/// Binary search of `key` in `entries[lo..hi]`, as positions in `entries`.
fn search_in<V>(entries: &[(u64, V)], lo: usize, hi: usize, key: u64) -> Result<usize, usize> {
    match entries.get(lo..hi) {
        Some(part) => part
            .binary_search_by_key(&key, |e| e.0)
            .map(|i| lo + i)
            .map_err(|i| lo + i),
        None => Err(lo),
    }
}

/// A persistent map from `u64` (a well-mixed hash) to `V`; see the [module](self) docs
/// for its shape and costs. Cloning is O(1); a clone never sees later changes of the
/// original, nor the original those of the clone.
#[derive(Clone)]
pub struct HashTrie<V> {
    root: Option<Node<V>>,
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
        let mut node = self.root.as_ref()?;
        let mut depth = 0;
        loop {
            match node {
                Node::Leaf(entries) => {
                    let i = search(entries, key, depth).ok()?;
                    return entries.get(i).map(|e| &e.1);
                }
                Node::Inner(inner) => {
                    node = inner.children.get(digit(key, depth))?.as_ref()?;
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
            match slot {
                Node::Leaf(leaf) => {
                    let entries = Arc::make_mut(leaf);
                    let i = search(entries, key, depth).ok()?;
                    return entries.get_mut(i).map(|e| &mut e.1);
                }
                Node::Inner(inner) => {
                    let inner = Arc::make_mut(inner);
                    slot = inner.children.get_mut(digit(key, depth))?.as_mut()?;
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
        let mut slot = self.root.get_or_insert_with(Node::new_leaf);
        let mut depth = 0;
        loop {
            // A full leaf that must take the key becomes an inner node first; the walk
            // then goes on below it.
            if let Node::Leaf(leaf) = slot {
                if leaf.len() >= LEAF_MAX && depth < MAX_DEPTH && search(leaf, key, depth).is_err() {
                    let full = mem::take(Arc::make_mut(leaf));
                    let n = full.len();
                    *slot = Node::Inner(Arc::new(build_inner(&mut full.into_iter(), n, depth)));
                }
            }
            match slot {
                Node::Leaf(leaf) => {
                    let entries = Arc::make_mut(leaf);
                    let i = match search(entries, key, depth) {
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
                    let inner = Arc::make_mut(inner);
                    if is_new {
                        inner.len += 1;
                    }
                    // A digit is below `FANOUT`, the length of `children`. A digit with no
                    // child yet gets an empty leaf, which the next step fills.
                    slot = inner.children[digit(key, depth)].get_or_insert_with(Node::new_leaf);
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
        if root.count() == 0 {
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
            root: Some(root),
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
        match &self.root {
            None => {}
            Some(Node::Leaf(entries)) => iter.leaf = entries.iter(),
            Some(Node::Inner(inner)) => iter.stack.push(inner.children.iter()),
        }
        iter
    }

    /// Calls `f` on every node with its depth (explicit stack, at most [`MAX_DEPTH`] deep).
    fn for_each_node(&self, mut f: impl FnMut(&Node<V>, u32)) {
        let mut stack: Vec<(&Node<V>, u32)> = self.root.iter().map(|r| (r, 0)).collect();
        while let Some((node, depth)) = stack.pop() {
            f(node, depth);
            if let Node::Inner(inner) = node {
                stack.extend(inner.children.iter().flatten().map(|c| (c, depth + 1)));
            }
        }
    }

    /// Node counts and depth. For tests and memory accounting.
    pub fn shape(&self) -> TrieShape {
        let mut shape = TrieShape::default();
        self.for_each_node(|node, depth| match node {
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
        let mut theirs: HashSet<*const ()> = HashSet::new();
        other.for_each_node(|node, _| {
            theirs.insert(node.addr());
        });
        let mut shared = 0;
        self.for_each_node(|node, _| {
            if theirs.contains(&node.addr()) {
                shared += 1;
            }
        });
        shared
    }

    /// Heap octets held by the trie: every node's allocation with its `Arc` header (an
    /// inner node's holds its child slots), plus the capacity of every leaf's vector. Not
    /// counted: what the values own on the heap, allocator rounding. Nodes shared with
    /// other versions are counted in full.
    pub fn heap_bytes(&self) -> usize {
        let header = 2 * mem::size_of::<usize>();
        let mut bytes = 0;
        self.for_each_node(|node, _| {
            bytes += header
                + match node {
                    Node::Leaf(entries) => {
                        mem::size_of::<Entries<V>>() + entries.capacity() * mem::size_of::<(u64, V)>()
                    }
                    Node::Inner(_) => mem::size_of::<Inner<V>>(),
                }
        });
        bytes
    }

    /// Checks the structural invariants listed in the [module](self) docs and describes
    /// the first one broken. For tests.
    pub fn validate(&self) -> Result<(), String> {
        let mut total = 0usize;
        // (node, depth, the key bits the path fixes, left-aligned)
        let mut stack: Vec<(&Node<V>, u32, u64)> = self.root.iter().map(|r| (r, 0, 0)).collect();
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
                    if inner.children.iter().all(Option::is_none) {
                        return Err(format!("inner node without children at depth {depth}"));
                    }
                    if inner.len <= COLLAPSE_MAX {
                        return Err(format!("inner node of {} keys was not collapsed", inner.len));
                    }
                    let mut below = 0usize;
                    for (d, child) in inner.children.iter().enumerate() {
                        if let Some(child) = child {
                            below += child.count();
                            let shift = 64 - BITS * (depth + 1);
                            stack.push((child, depth + 1, prefix | ((d as u64) << shift)));
                        }
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

/// Builds the node for the next `n` entries of `entries` (sorted, distinct keys sharing
/// the first `depth` digits): a leaf when they fit, else an inner node.
fn build<V>(entries: &mut std::vec::IntoIter<(u64, V)>, n: usize, depth: u32) -> Node<V> {
    if n <= LEAF_MAX || depth >= MAX_DEPTH {
        Node::Leaf(Arc::new(entries.take(n).collect()))
    } else {
        Node::Inner(Arc::new(build_inner(entries, n, depth)))
    }
}

/// Builds an inner node at `depth` for the next `n` entries of `entries` (sorted, distinct
/// keys sharing the first `depth` digits, `depth` below [`MAX_DEPTH`]), with a child per
/// digit present. Recursion depth is at most [`MAX_DEPTH`].
fn build_inner<V>(entries: &mut std::vec::IntoIter<(u64, V)>, n: usize, depth: u32) -> Inner<V> {
    let mut inner = Inner {
        len: 0,
        children: Default::default(),
    };
    while inner.len < n {
        let rest = entries.as_slice();
        let mine = rest.get(..n - inner.len).unwrap_or(rest);
        let Some(&(key, _)) = mine.first() else {
            break;
        };
        // Keys are sorted and share the digits above, so each digit's keys form one run.
        let d = digit(key, depth);
        let run = mine.partition_point(|e| digit(e.0, depth) == d).max(1);
        let child = build(entries, run, depth + 1);
        if let Some(slot) = inner.children.get_mut(d) {
            *slot = Some(child);
        }
        inner.len += run;
    }
    inner
}

/// Removes `key` (known to be present) below `slot` at `depth`. Recursion depth is at
/// most [`MAX_DEPTH`].
fn remove_in<V: Clone>(slot: &mut Node<V>, key: u64, depth: u32) -> Option<V> {
    match slot {
        Node::Leaf(leaf) => {
            let entries = Arc::make_mut(leaf);
            let i = search(entries, key, depth).ok()?;
            let (_, old) = entries.remove(i);
            if entries.capacity() - entries.len() > LEAF_SPARE_MAX {
                entries.shrink_to_fit();
            }
            Some(old)
        }
        Node::Inner(inner) => {
            let inner = Arc::make_mut(inner);
            let child_slot = inner.children.get_mut(digit(key, depth))?;
            let child = child_slot.as_mut()?;
            let old = remove_in(child, key, depth + 1)?;
            inner.len -= 1;
            if child.count() == 0 {
                *child_slot = None;
            }
            if inner.len <= COLLAPSE_MAX {
                let entries = collect_entries(mem::take(&mut inner.children), inner.len);
                *slot = Node::Leaf(Arc::new(entries));
            }
            Some(old)
        }
    }
}

/// The entries below `children`, in key order (explicit stack). Nodes no other version
/// holds are taken apart without cloning their values.
fn collect_entries<V: Clone>(children: [Option<Node<V>>; FANOUT], len: usize) -> Vec<(u64, V)> {
    let mut out = Vec::with_capacity(len);
    let mut stack: Vec<Node<V>> = children.into_iter().flatten().rev().collect();
    while let Some(node) = stack.pop() {
        match node {
            Node::Leaf(entries) => out.extend(Arc::unwrap_or_clone(entries)),
            Node::Inner(inner) => {
                stack.extend(Arc::unwrap_or_clone(inner).children.into_iter().flatten().rev())
            }
        }
    }
    out
}

/// Ascending `(key, &value)` pairs of a [`HashTrie`].
pub struct Iter<'a, V> {
    /// Per inner level being walked, its child slots still to visit.
    stack: Vec<std::slice::Iter<'a, Option<Node<V>>>>,
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
            match top.next() {
                Some(Some(Node::Leaf(entries))) => self.leaf = entries.iter(),
                Some(Some(Node::Inner(inner))) => self.stack.push(inner.children.iter()),
                Some(None) => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sorted distinct keys: well mixed, or clustered so the guessed position is far off.
    fn leaf_keys() -> impl Strategy<Value = Vec<u64>> {
        let key = prop_oneof![
            any::<u64>(),
            (0u64..300).prop_map(|s| 0x8000_0000_0000_0000 | s),
            (0u64..300).prop_map(|s| u64::MAX - s),
            (0u64..300).prop_map(|s| s << 40),
        ];
        prop::collection::btree_set(key, 0..(2 * LEAF_MAX)).prop_map(|s| s.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

        /// The guessed-position search finds what a binary search finds, for every key of
        /// the leaf, its neighbours and arbitrary keys, at every depth (the guess depends
        /// on it), whether or not the keys are mixed.
        #[test]
        fn search_matches_binary_search(
            keys in leaf_keys(),
            others in prop::collection::vec(any::<u64>(), 0..20),
            depth in 0..=MAX_DEPTH,
        ) {
            let entries: Vec<(u64, ())> = keys.iter().map(|&k| (k, ())).collect();
            let probes = keys
                .iter()
                .flat_map(|&k| [k, k.wrapping_sub(1), k.wrapping_add(1)])
                .chain(others)
                .chain([0, u64::MAX]);
            for key in probes {
                let want = keys.binary_search(&key);
                prop_assert_eq!(search(&entries, key, depth), want, "key {:#x}", key);
            }
        }
    }

    /// With mixed keys the expected position is the key's or next to it for most keys,
    /// and never out of bounds.
    #[test]
    fn search_guess_is_close_for_mixed_keys() {
        // splitmix64 over a counter: well-mixed, reproducible keys.
        let mut state = 0u64;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let (mut close, mut total) = (0usize, 0usize);
        for _ in 0..200 {
            let mut keys: Vec<u64> = (0..LEAF_MAX / 4).map(|_| next()).collect();
            keys.sort_unstable();
            for (rank, &key) in keys.iter().enumerate() {
                // At depth 1 the top digit is consumed: give every key the same one.
                let guess = expected_position(keys.len(), key >> BITS, 1);
                total += 1;
                close += usize::from(guess.abs_diff(rank) <= 1);
            }
        }
        assert!(
            close * 10 >= total * 6,
            "{close} of {total} guesses within one entry"
        );
        for len in [0, 1, 2, LEAF_MAX] {
            for depth in 0..=MAX_DEPTH {
                for key in [0, 1, u64::MAX / 2, u64::MAX] {
                    assert!(expected_position(len, key, depth) < len.max(1));
                }
            }
        }
    }
}
