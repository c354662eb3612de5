//! [`IdTable`]: a persistent dense map from entry ID (`u32`) to a value, as a radix tree.
//!
//! # Shape
//!
//! An ID is read as base-64 digits. A leaf holds [`LEAF_SLOTS`] slots of `Option<V>` for
//! the 64 consecutive IDs that share everything but the low [`LEAF_BITS`] bits. An inner
//! node at level `l` (level 1 holds leaves, level `l + 1` holds level-`l` inner nodes) has
//! [`INNER_SLOTS`] optional `Arc` children, picked by the ID's bits
//! `LEAF_BITS + INNER_BITS * (l - 1) ..` (six of them). The tree's height is the number of
//! inner levels: a table of height `h` holds the IDs below `2^(6 + 6h)`; it grows (a new
//! root whose child 0 is the old root) when a larger ID is inserted, and shrinks back when
//! removals leave the root with only child 0. [`MAX_HEIGHT`] levels reach `u32::MAX`.
//!
//! # Invariants
//!
//! 1. No node is empty: a leaf has at least one value, an inner node at least one child;
//!    `live` in each node counts its present slots. The empty table has no node at all.
//! 2. A level-1 inner node holds leaves; higher levels hold inner nodes one level lower.
//! 3. The height is the smallest that holds the largest ID (the root has a child other
//!    than child 0, or is a leaf).
//! 4. `len` is the number of values.
//!
//! [`IdTable::validate`] checks all four (tests use it after every step).
//!
//! # Persistence
//!
//! `Clone` copies the root pointer only. A change walks from the root with
//! [`Arc::make_mut`], so a node still shared with another version is copied once (its
//! slots are cloned: `V` clones and `Arc` pointer increments) and a node this version
//! already owns alone is changed in place. A batch of changes to nearby IDs therefore
//! copies each touched node once, however many changes land in it.
//!
//! # Costs (for `V` of 16 octets with a niche, such as `Arc<[u8]>`: 16-octet slots)
//!
//! - A leaf is `64 × 16 + 8` octets plus the 16-octet `Arc` header: 1 048 octets for 64
//!   values. An inner node is 528 octets plus the header, one per 64 children. With dense
//!   IDs that is about 16.5 octets per value, 1.03 × the slot size (measured: see the
//!   `id_table_memory_dense` test), well under the 1.5 × budget. Sparse IDs cost up to a
//!   whole leaf per value; the store allocates IDs densely and rarely frees them.
//! - `get` is one hop per level: 4 for a table of a million entries (height 3).
//! - The first change after a clone copies one root-to-leaf path: for a million entries
//!   three inner nodes and a leaf, about 2.7 KB.
//! - [`IdTableBuilder`] builds bottom-up in one pass, without copying any node.

use std::collections::HashSet;
use std::fmt;
use std::mem;
use std::ops::{Bound, RangeBounds, RangeInclusive};
use std::sync::Arc;

/// Bits of an ID resolved by a leaf: its low six bits pick the slot.
pub const LEAF_BITS: u32 = 6;
/// Slots in a leaf. 64 keeps a leaf near 1 KB for 16-octet values (a cheap copy after a
/// clone) while the per-leaf header stays under 2 % of it.
pub const LEAF_SLOTS: usize = 1 << LEAF_BITS;
/// Bits of an ID resolved by one inner level.
pub const INNER_BITS: u32 = 6;
/// Children of an inner node. 64 keeps a million-entry table at height 3.
pub const INNER_SLOTS: usize = 1 << INNER_BITS;
/// The most inner levels a table has: `6 + 5 × 6 = 36 >= 32` bits reach every `u32`.
/// Every walk down the tree is bounded by this constant.
pub const MAX_HEIGHT: u32 = 5;

const LEAF_MASK: u64 = LEAF_SLOTS as u64 - 1;
const INNER_MASK: u64 = INNER_SLOTS as u64 - 1;
/// One past the largest ID.
const ID_LIMIT: u64 = 1 << 32;

/// Bits of ID space a tree of height `height` covers.
fn span_bits(height: u32) -> u32 {
    LEAF_BITS + INNER_BITS * height
}

/// The shift of the digit an inner node of `level` (at least 1) uses.
fn shift_of(level: u32) -> u32 {
    LEAF_BITS + INNER_BITS * level.saturating_sub(1)
}

/// The child index an inner node of `level` uses for `id`.
fn digit(id: u64, level: u32) -> usize {
    ((id >> shift_of(level)) & INNER_MASK) as usize
}

/// The slot a leaf uses for `id`.
fn leaf_digit(id: u64) -> usize {
    (id & LEAF_MASK) as usize
}

/// The smallest height that holds `id`.
fn height_for(id: u64) -> u32 {
    let mut h = 0;
    while h < MAX_HEIGHT && id >> span_bits(h) != 0 {
        h += 1;
    }
    h
}

#[derive(Clone)]
struct Leaf<V> {
    slots: [Option<V>; LEAF_SLOTS],
    live: u32,
}

impl<V> Leaf<V> {
    fn new() -> Self {
        Leaf {
            slots: std::array::from_fn(|_| None),
            live: 0,
        }
    }

    fn set(&mut self, id: u64, value: V) -> Option<V> {
        let old = self.slots[leaf_digit(id)].replace(value);
        if old.is_none() {
            self.live += 1;
        }
        old
    }

    fn take(&mut self, id: u64) -> Option<V> {
        let old = self.slots[leaf_digit(id)].take();
        if old.is_some() {
            self.live -= 1;
        }
        old
    }
}

#[derive(Clone)]
enum Kids<V> {
    Leaves([Option<Arc<Leaf<V>>>; INNER_SLOTS]),
    Inners([Option<Arc<Inner<V>>>; INNER_SLOTS]),
}

#[derive(Clone)]
struct Inner<V> {
    kids: Kids<V>,
    live: u32,
}

/// A subtree handed between levels (building, growing, joining).
enum Child<V> {
    Leaf(Arc<Leaf<V>>),
    Inner(Arc<Inner<V>>),
}

impl<V> Inner<V> {
    /// An empty inner node for `level` (1 holds leaves).
    fn empty(level: u32) -> Self {
        let kids = if level <= 1 {
            Kids::Leaves(std::array::from_fn(|_| None))
        } else {
            Kids::Inners(std::array::from_fn(|_| None))
        };
        Inner { kids, live: 0 }
    }

    /// Puts `child` at `index` (which is below [`INNER_SLOTS`]); a child of the wrong kind
    /// for this level is a bug in the caller and is dropped.
    fn set_child(&mut self, index: usize, child: Child<V>) {
        let slot_was_empty = match (&mut self.kids, child) {
            (Kids::Leaves(a), Child::Leaf(l)) => a[index & INNER_MASK as usize].replace(l).is_none(),
            (Kids::Inners(a), Child::Inner(i)) => a[index & INNER_MASK as usize].replace(i).is_none(),
            _ => {
                debug_assert!(false, "child of the wrong level");
                false
            }
        };
        if slot_was_empty {
            self.live += 1;
        }
    }
}

/// A node borrowed during a walk.
enum NodeRef<'a, V> {
    Leaf(&'a Arc<Leaf<V>>),
    Inner(&'a Arc<Inner<V>>),
}

#[derive(Clone)]
enum Root<V> {
    Empty,
    Leaf(Arc<Leaf<V>>),
    Inner(Arc<Inner<V>>),
}

/// A persistent map from entry ID to `V`, dense in the IDs (see the [module](self) docs
/// for its shape and costs). Cloning is O(1); a clone never sees later changes of the
/// original, nor the original those of the clone.
#[derive(Clone)]
pub struct IdTable<V> {
    root: Root<V>,
    height: u32,
    len: usize,
}

/// Why a bulk build or a join was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// IDs were not strictly ascending (within a part, or from one part to the next).
    #[error("entry ID {id} comes after {prev}: IDs must be strictly ascending")]
    NotAscending {
        /// The previous (or largest earlier) ID.
        prev: u32,
        /// The ID that should have been larger.
        id: u32,
    },
    /// A thread building part of the table could not be started, or did not finish.
    #[error("a thread building part of the table could not be started or did not finish")]
    WorkerFailed,
}

impl<V: Clone> Default for IdTable<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Clone> IdTable<V> {
    /// The empty table.
    pub fn new() -> Self {
        IdTable {
            root: Root::Empty,
            height: 0,
            len: 0,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of inner levels above the leaves (0 for a table that is a single leaf or
    /// empty); a `get` takes `height() + 1` hops.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The value of `id`.
    pub fn get(&self, id: u32) -> Option<&V> {
        let id = u64::from(id);
        match &self.root {
            Root::Empty => None,
            Root::Leaf(leaf) => {
                if id >> LEAF_BITS != 0 {
                    return None;
                }
                leaf.slots[leaf_digit(id)].as_ref()
            }
            Root::Inner(root) => {
                if id >> span_bits(self.height) != 0 {
                    return None;
                }
                let mut node = root;
                let mut level = self.height;
                loop {
                    match &node.kids {
                        Kids::Inners(a) => {
                            node = a[digit(id, level)].as_ref()?;
                            level -= 1;
                        }
                        Kids::Leaves(a) => {
                            return a[digit(id, level)].as_ref()?.slots[leaf_digit(id)].as_ref()
                        }
                    }
                }
            }
        }
    }

    /// Whether `id` has a value.
    pub fn contains(&self, id: u32) -> bool {
        self.get(id).is_some()
    }

    /// Sets the value of `id`, returning the previous one. Copies the nodes on the path to
    /// `id` that are shared with another version; creates missing ones.
    pub fn insert(&mut self, id: u32, value: V) -> Option<V> {
        let id = u64::from(id);
        let need = height_for(id);
        if matches!(self.root, Root::Empty) {
            self.height = need;
            self.root = if need == 0 {
                Root::Leaf(Arc::new(Leaf::new()))
            } else {
                Root::Inner(Arc::new(Inner::empty(need)))
            };
        } else {
            self.grow_to(need);
        }
        let old = match &mut self.root {
            Root::Empty => None,
            Root::Leaf(leaf) => Arc::make_mut(leaf).set(id, value),
            Root::Inner(root) => {
                let mut node = Arc::make_mut(root);
                let mut level = self.height;
                loop {
                    let Inner { kids, live } = node;
                    let d = digit(id, level);
                    match kids {
                        Kids::Inners(a) => {
                            let slot = &mut a[d];
                            if slot.is_none() {
                                *live += 1;
                            }
                            let child = slot.get_or_insert_with(|| Arc::new(Inner::empty(level - 1)));
                            node = Arc::make_mut(child);
                            level -= 1;
                        }
                        Kids::Leaves(a) => {
                            let slot = &mut a[d];
                            if slot.is_none() {
                                *live += 1;
                            }
                            let leaf = slot.get_or_insert_with(|| Arc::new(Leaf::new()));
                            break Arc::make_mut(leaf).set(id, value);
                        }
                    }
                }
            }
        };
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Removes the value of `id` and returns it. Nodes left empty are freed and the
    /// height shrinks when it can; nothing is copied when `id` has no value.
    pub fn remove(&mut self, id: u32) -> Option<V> {
        self.get(id)?;
        let id = u64::from(id);
        let (old, now_empty) = match &mut self.root {
            Root::Empty => return None,
            Root::Leaf(leaf) => {
                let leaf = Arc::make_mut(leaf);
                let old = leaf.take(id);
                (old, leaf.live == 0)
            }
            Root::Inner(root) => {
                let old = remove_in(root, id, self.height);
                (old, root.live == 0)
            }
        };
        if old.is_some() {
            self.len -= 1;
        }
        if now_empty {
            self.root = Root::Empty;
            self.height = 0;
        } else {
            self.shrink();
        }
        old
    }

    /// Adds inner levels above the root until the table holds IDs of `height`.
    fn grow_to(&mut self, height: u32) {
        while self.height < height {
            let mut inner = Inner::empty(self.height + 1);
            match mem::replace(&mut self.root, Root::Empty) {
                Root::Empty => {}
                Root::Leaf(leaf) => inner.set_child(0, Child::Leaf(leaf)),
                Root::Inner(old) => inner.set_child(0, Child::Inner(old)),
            }
            self.root = Root::Inner(Arc::new(inner));
            self.height += 1;
        }
    }

    /// Drops root levels whose only child is child 0 (invariant 3).
    fn shrink(&mut self) {
        loop {
            let next = match &self.root {
                Root::Inner(root) if root.live == 1 => match &root.kids {
                    Kids::Leaves(a) => a[0].clone().map(Root::Leaf),
                    Kids::Inners(a) => a[0].clone().map(Root::Inner),
                },
                _ => None,
            };
            match next {
                Some(root) => {
                    self.root = root;
                    self.height -= 1;
                }
                None => return,
            }
        }
    }

    /// The smallest ID with a value.
    pub fn first_id(&self) -> Option<u32> {
        self.iter().next().map(|(id, _)| id)
    }

    /// The largest ID with a value.
    pub fn last_id(&self) -> Option<u32> {
        match &self.root {
            Root::Empty => None,
            Root::Leaf(leaf) => leaf.slots.iter().rposition(Option::is_some).map(|i| i as u32),
            Root::Inner(root) => {
                let mut node = root;
                let mut id: u64 = 0;
                loop {
                    match &node.kids {
                        Kids::Inners(a) => {
                            let i = last_some(a)?;
                            id = (id << INNER_BITS) | i as u64;
                            node = a[i].as_ref()?;
                        }
                        Kids::Leaves(a) => {
                            let i = last_some(a)?;
                            let leaf = a[i].as_ref()?;
                            let j = leaf.slots.iter().rposition(Option::is_some)?;
                            id = (((id << INNER_BITS) | i as u64) << LEAF_BITS) | j as u64;
                            return u32::try_from(id).ok();
                        }
                    }
                }
            }
        }
    }

    /// The values in ascending ID order.
    pub fn iter(&self) -> Iter<'_, V> {
        self.iter_between(0, ID_LIMIT)
    }

    /// The values with IDs at least `start`, in ascending order.
    pub fn iter_from(&self, start: u32) -> Iter<'_, V> {
        self.iter_between(u64::from(start), ID_LIMIT)
    }

    /// The values with IDs in `range`, in ascending order.
    pub fn iter_range<R: RangeBounds<u32>>(&self, range: R) -> Iter<'_, V> {
        let start = match range.start_bound() {
            Bound::Included(&s) => u64::from(s),
            Bound::Excluded(&s) => u64::from(s) + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => u64::from(e) + 1,
            Bound::Excluded(&e) => u64::from(e),
            Bound::Unbounded => ID_LIMIT,
        };
        self.iter_between(start, end)
    }

    fn iter_between(&self, start: u64, end: u64) -> Iter<'_, V> {
        let leaf = if start < end {
            self.leaf_at_or_after(start)
        } else {
            None
        };
        let pos = match leaf {
            Some((_, base)) => start.saturating_sub(base) as usize,
            None => 0,
        };
        Iter {
            table: self,
            leaf,
            pos,
            end,
        }
    }

    /// The first leaf that holds IDs at least `start` (its own range may begin before
    /// `start`), with the ID of its slot 0.
    ///
    /// One walk from the root; when a node has no child at or after the wanted digit, the
    /// walk restarts from the root at the start of the next sibling range. `start` grows at
    /// every restart, so the loop ends.
    fn leaf_at_or_after(&self, mut start: u64) -> Option<(&Leaf<V>, u64)> {
        match &self.root {
            Root::Empty => None,
            Root::Leaf(leaf) => (start >> LEAF_BITS == 0).then_some((&**leaf, 0)),
            Root::Inner(root) => 'restart: loop {
                if start >> span_bits(self.height) != 0 {
                    return None;
                }
                let mut node = root;
                let mut level = self.height;
                loop {
                    let shift = shift_of(level);
                    let above = shift + INNER_BITS;
                    let prefix = (start >> above) << above;
                    let d = ((start >> shift) & INNER_MASK) as usize;
                    match &node.kids {
                        Kids::Leaves(a) => match first_some(a, d) {
                            Some((i, leaf)) => return Some((&**leaf, prefix | (i as u64) << shift)),
                            None => {
                                start = prefix + (1 << above);
                                continue 'restart;
                            }
                        },
                        Kids::Inners(a) => match first_some(a, d) {
                            Some((i, child)) => {
                                if i != d {
                                    start = prefix | (i as u64) << shift;
                                }
                                node = child;
                                level -= 1;
                            }
                            None => {
                                start = prefix + (1 << above);
                                continue 'restart;
                            }
                        },
                    }
                }
            },
        }
    }

    /// Splits the ID space into at most `n` (at least one) contiguous ranges holding about
    /// `len / n` values each, for `n` threads to walk with [`IdTable::iter_range`]. The
    /// ranges are in ascending order, disjoint, and cover `0..=u32::MAX`; cuts fall on leaf
    /// boundaries, so a range may hold up to [`LEAF_SLOTS`] values more than its share.
    /// Costs one step per leaf.
    pub fn split_ranges(&self, n: usize) -> Vec<RangeInclusive<u32>> {
        let n = n.max(1);
        let mut ranges = Vec::with_capacity(n.min(self.len.max(1)));
        let mut range_start: u32 = 0;
        let mut seen: usize = 0;
        let mut next = self.leaf_at_or_after(0);
        while let Some((leaf, base)) = next {
            seen += leaf.live as usize;
            let after = base + LEAF_SLOTS as u64;
            // Cut after this leaf once it holds the next range's share (and values remain).
            let share_done =
                (seen as u128) * (n as u128) >= ((ranges.len() + 1) as u128) * (self.len as u128);
            if share_done && seen < self.len && ranges.len() + 1 < n {
                if let Ok(cut) = u32::try_from(after) {
                    ranges.push(range_start..=cut - 1);
                    range_start = cut;
                }
            }
            next = self.leaf_at_or_after(after);
        }
        ranges.push(range_start..=u32::MAX);
        ranges
    }

    /// Joins `other` after `self`: every ID of `other` must be larger than every ID of
    /// `self`. Only the nodes on the boundary path are merged (copied if shared); the
    /// rest of both trees is linked as is. Used to assemble parts built in parallel.
    pub fn append(&mut self, other: IdTable<V>) -> Result<(), BuildError> {
        let (Some(last), Some(first)) = (self.last_id(), other.first_id()) else {
            if self.is_empty() {
                *self = other;
            }
            return Ok(());
        };
        if first <= last {
            return Err(BuildError::NotAscending {
                prev: last,
                id: first,
            });
        }
        let height = self.height.max(other.height);
        self.grow_to(height);
        let mut other = other;
        other.grow_to(height);
        self.len += other.len;
        match (&mut self.root, other.root) {
            (Root::Leaf(a), Root::Leaf(b)) => merge_leaf(a, b),
            (Root::Inner(a), Root::Inner(b)) => merge_inner(a, b),
            _ => debug_assert!(false, "roots of equal height differ in kind"),
        }
        Ok(())
    }

    /// Builds a table from parts, each a run of strictly ascending IDs, every part's IDs
    /// above the previous part's. Parts are built on up to
    /// `std::thread::available_parallelism()` threads (each builds a contiguous group of
    /// parts bottom-up) and the results joined with [`IdTable::append`].
    pub fn from_sorted_parts(parts: Vec<Vec<(u32, V)>>) -> Result<Self, BuildError>
    where
        V: Send + Sync,
    {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(parts.len())
            .max(1);
        let per_thread = parts.len().div_ceil(threads).max(1);
        let mut groups: Vec<Vec<Vec<(u32, V)>>> = Vec::with_capacity(threads);
        let mut parts = parts.into_iter().peekable();
        while parts.peek().is_some() {
            groups.push(parts.by_ref().take(per_thread).collect());
        }
        let build_group = |group: Vec<Vec<(u32, V)>>| -> Result<IdTable<V>, BuildError> {
            let mut builder = IdTableBuilder::new();
            for (id, value) in group.into_iter().flatten() {
                builder.push(id, value)?;
            }
            Ok(builder.finish())
        };
        let build_group = &build_group;
        let built: Vec<Result<IdTable<V>, BuildError>> = std::thread::scope(|scope| {
            let mut groups = groups.into_iter();
            let first = groups.next();
            // Every group but the first gets a thread; the calling thread builds the first.
            let handles: Vec<_> = groups
                .map(|group| {
                    std::thread::Builder::new()
                        .name("larch-idtable-build".into())
                        .spawn_scoped(scope, move || build_group(group))
                })
                .collect();
            let mut out = Vec::with_capacity(handles.len() + 1);
            out.extend(first.map(build_group));
            for handle in handles {
                out.push(match handle {
                    Ok(handle) => handle.join().unwrap_or(Err(BuildError::WorkerFailed)),
                    Err(_) => Err(BuildError::WorkerFailed),
                });
            }
            out
        });
        let mut table = IdTable::new();
        for part in built {
            table.append(part?)?;
        }
        Ok(table)
    }

    /// Calls `f` on every node, leaves included (explicit stack; depth at most
    /// [`MAX_HEIGHT`] + 1).
    fn for_each_node(&self, mut f: impl FnMut(NodeRef<'_, V>)) {
        let mut stack: Vec<&Arc<Inner<V>>> = Vec::new();
        match &self.root {
            Root::Empty => {}
            Root::Leaf(leaf) => f(NodeRef::Leaf(leaf)),
            Root::Inner(root) => stack.push(root),
        }
        while let Some(node) = stack.pop() {
            f(NodeRef::Inner(node));
            match &node.kids {
                Kids::Leaves(a) => a.iter().flatten().for_each(|leaf| f(NodeRef::Leaf(leaf))),
                Kids::Inners(a) => stack.extend(a.iter().flatten()),
            }
        }
    }

    /// Number of nodes (leaves and inner nodes). For tests and memory accounting.
    pub fn node_count(&self) -> usize {
        let mut n = 0;
        self.for_each_node(|_| n += 1);
        n
    }

    /// Number of this table's nodes that are the very same allocation as a node of
    /// `other` (shared between versions, not copied). For tests and memory accounting:
    /// `node_count() - shared_nodes_with(older)` is what a version costs on top of an
    /// older one still held by readers.
    pub fn shared_nodes_with(&self, other: &IdTable<V>) -> usize {
        let mut theirs: HashSet<*const ()> = HashSet::new();
        other.for_each_node(|node| {
            theirs.insert(node_addr(&node));
        });
        let mut shared = 0;
        self.for_each_node(|node| {
            if theirs.contains(&node_addr(&node)) {
                shared += 1;
            }
        });
        shared
    }

    /// Heap octets held by the nodes (each counted with its `Arc` header), not counting
    /// what the values themselves own on the heap nor allocator rounding. Nodes shared
    /// with other versions are counted in full. For memory accounting.
    pub fn heap_bytes(&self) -> usize {
        let arc_header = 2 * mem::size_of::<usize>();
        let mut bytes = 0;
        self.for_each_node(|node| {
            bytes += arc_header
                + match node {
                    NodeRef::Leaf(_) => mem::size_of::<Leaf<V>>(),
                    NodeRef::Inner(_) => mem::size_of::<Inner<V>>(),
                }
        });
        bytes
    }

    /// Checks the structural invariants listed in the [module](self) docs and describes
    /// the first one broken. For tests.
    pub fn validate(&self) -> Result<(), String> {
        let mut count = 0usize;
        match &self.root {
            Root::Empty => {
                if self.height != 0 {
                    return Err(format!("empty table of height {}", self.height));
                }
            }
            Root::Leaf(leaf) => {
                if self.height != 0 {
                    return Err(format!("leaf root at height {}", self.height));
                }
                count += check_leaf(leaf)?;
            }
            Root::Inner(root) => {
                if self.height == 0 || self.height > MAX_HEIGHT {
                    return Err(format!("inner root at height {}", self.height));
                }
                let first_only = match &root.kids {
                    Kids::Leaves(a) => a.iter().skip(1).all(Option::is_none),
                    Kids::Inners(a) => a.iter().skip(1).all(Option::is_none),
                };
                if first_only {
                    return Err("root has only child 0: height is not minimal".into());
                }
                let mut stack = vec![(root, self.height)];
                while let Some((node, level)) = stack.pop() {
                    let present = match &node.kids {
                        Kids::Leaves(a) => {
                            if level != 1 {
                                return Err(format!("leaves under an inner node of level {level}"));
                            }
                            for leaf in a.iter().flatten() {
                                count += check_leaf(leaf)?;
                            }
                            a.iter().flatten().count()
                        }
                        Kids::Inners(a) => {
                            if level <= 1 {
                                return Err("inner nodes under a level-1 node".into());
                            }
                            stack.extend(a.iter().flatten().map(|c| (c, level - 1)));
                            a.iter().flatten().count()
                        }
                    };
                    if present == 0 || present != node.live as usize {
                        return Err(format!("inner node with {present} children counts {}", node.live));
                    }
                }
            }
        }
        if count != self.len {
            return Err(format!("{count} values, len says {}", self.len));
        }
        Ok(())
    }
}

/// The index of the last present slot.
fn last_some<T>(slots: &[Option<T>]) -> Option<usize> {
    slots.iter().rposition(Option::is_some)
}

/// The first present slot at index `from` or later.
fn first_some<T>(slots: &[Option<T>], from: usize) -> Option<(usize, &T)> {
    slots
        .iter()
        .enumerate()
        .skip(from)
        .find_map(|(i, s)| s.as_ref().map(|c| (i, c)))
}

fn check_leaf<V>(leaf: &Leaf<V>) -> Result<usize, String> {
    let present = leaf.slots.iter().flatten().count();
    if present == 0 || present != leaf.live as usize {
        return Err(format!("leaf with {present} values counts {}", leaf.live));
    }
    Ok(present)
}

fn node_addr<V>(node: &NodeRef<'_, V>) -> *const () {
    match node {
        NodeRef::Leaf(l) => Arc::as_ptr(l).cast(),
        NodeRef::Inner(i) => Arc::as_ptr(i).cast(),
    }
}

/// Removes `id` below `node` (an inner node of `level`), freeing nodes left empty.
/// Recursion depth is at most [`MAX_HEIGHT`].
fn remove_in<V: Clone>(node: &mut Arc<Inner<V>>, id: u64, level: u32) -> Option<V> {
    let Inner { kids, live } = Arc::make_mut(node);
    let d = digit(id, level);
    match kids {
        Kids::Leaves(a) => {
            let slot = &mut a[d];
            let leaf = Arc::make_mut(slot.as_mut()?);
            let old = leaf.take(id);
            if leaf.live == 0 {
                *slot = None;
                *live -= 1;
            }
            old
        }
        Kids::Inners(a) => {
            let slot = &mut a[d];
            let child = slot.as_mut()?;
            let old = remove_in(child, id, level - 1);
            if child.live == 0 {
                *slot = None;
                *live -= 1;
            }
            old
        }
    }
}

/// Moves the values of `b` into `a` (their IDs are disjoint).
fn merge_leaf<V: Clone>(a: &mut Arc<Leaf<V>>, b: Arc<Leaf<V>>) {
    let a = Arc::make_mut(a);
    for (i, value) in Arc::unwrap_or_clone(b).slots.into_iter().enumerate() {
        if let Some(value) = value {
            a.set(i as u64, value);
        }
    }
}

/// Moves the children of `b` into `a` (same level, disjoint IDs), merging the children
/// both have. Recursion depth is at most [`MAX_HEIGHT`].
fn merge_inner<V: Clone>(a: &mut Arc<Inner<V>>, b: Arc<Inner<V>>) {
    let a = Arc::make_mut(a);
    match (&mut a.kids, Arc::unwrap_or_clone(b).kids) {
        (Kids::Leaves(x), Kids::Leaves(y)) => {
            for (slot, theirs) in x.iter_mut().zip(y) {
                match (slot.as_mut(), theirs) {
                    (Some(mine), Some(theirs)) => merge_leaf(mine, theirs),
                    (None, Some(theirs)) => {
                        *slot = Some(theirs);
                        a.live += 1;
                    }
                    (_, None) => {}
                }
            }
        }
        (Kids::Inners(x), Kids::Inners(y)) => {
            for (slot, theirs) in x.iter_mut().zip(y) {
                match (slot.as_mut(), theirs) {
                    (Some(mine), Some(theirs)) => merge_inner(mine, theirs),
                    (None, Some(theirs)) => {
                        *slot = Some(theirs);
                        a.live += 1;
                    }
                    (_, None) => {}
                }
            }
        }
        _ => debug_assert!(false, "inner nodes of one level differ in kind"),
    }
}

/// Ascending `(id, &value)` pairs of an [`IdTable`] (or of a range of it).
pub struct Iter<'a, V> {
    table: &'a IdTable<V>,
    /// The current leaf and the ID of its slot 0.
    leaf: Option<(&'a Leaf<V>, u64)>,
    /// The next slot of the current leaf to look at.
    pos: usize,
    /// One past the last ID to yield.
    end: u64,
}

impl<'a, V: Clone> Iterator for Iter<'a, V> {
    type Item = (u32, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (leaf, base) = self.leaf?;
            while let Some(slot) = leaf.slots.get(self.pos) {
                let id = base + self.pos as u64;
                self.pos += 1;
                if let Some(value) = slot {
                    if id >= self.end {
                        self.leaf = None;
                        return None;
                    }
                    return u32::try_from(id).ok().map(|id| (id, value));
                }
            }
            let next_base = base + LEAF_SLOTS as u64;
            self.pos = 0;
            self.leaf = if next_base < self.end {
                self.table.leaf_at_or_after(next_base)
            } else {
                None
            };
        }
    }
}

impl<'a, V: Clone> IntoIterator for &'a IdTable<V> {
    type Item = (u32, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<V: Clone + PartialEq> PartialEq for IdTable<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<V: Clone + Eq> Eq for IdTable<V> {}

impl<V: Clone + fmt::Debug> fmt::Debug for IdTable<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V: Clone> FromIterator<(u32, V)> for IdTable<V> {
    fn from_iter<I: IntoIterator<Item = (u32, V)>>(iter: I) -> Self {
        let mut table = IdTable::new();
        for (id, value) in iter {
            table.insert(id, value);
        }
        table
    }
}

/// Builds an [`IdTable`] from strictly ascending `(id, value)` pairs, bottom-up, in time
/// linear in the number of pairs and without copying any node: it keeps the leaf being
/// filled and, per level, the inner node being filled (the right edge of the tree); a
/// node is sealed into its parent when the first ID beyond its range arrives.
pub struct IdTableBuilder<V> {
    /// The leaf being filled and its leaf number (`id >> LEAF_BITS`).
    leaf: Option<(u64, Leaf<V>)>,
    /// Index `l - 1`: the level-`l` inner node being filled and its node number
    /// (`id >> span_bits(l)`).
    spine: Vec<Option<(u64, Inner<V>)>>,
    last: Option<u32>,
    len: usize,
}

impl<V: Clone> Default for IdTableBuilder<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Clone> IdTableBuilder<V> {
    /// An empty builder.
    pub fn new() -> Self {
        IdTableBuilder {
            leaf: None,
            spine: Vec::new(),
            last: None,
            len: 0,
        }
    }

    /// Number of pairs pushed so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds the next pair; `id` must be larger than every ID pushed before.
    pub fn push(&mut self, id: u32, value: V) -> Result<(), BuildError> {
        if let Some(prev) = self.last {
            if id <= prev {
                return Err(BuildError::NotAscending { prev, id });
            }
        }
        self.last = Some(id);
        self.len += 1;
        let id = u64::from(id);
        let leaf_no = id >> LEAF_BITS;
        match &mut self.leaf {
            Some((no, leaf)) if *no == leaf_no => {
                leaf.set(id, value);
            }
            _ => {
                let mut leaf = Leaf::new();
                leaf.set(id, value);
                if let Some((no, full)) = self.leaf.replace((leaf_no, leaf)) {
                    self.place(1, no, Child::Leaf(Arc::new(full)));
                }
            }
        }
        Ok(())
    }

    /// Puts `child`, whose number at its own level is `child_no`, into the level-`level`
    /// node being filled, first sealing that node (and so on upwards) when `child`
    /// belongs to a later one. Loops at most [`MAX_HEIGHT`] times.
    fn place(&mut self, mut level: u32, mut child_no: u64, mut child: Child<V>) {
        while level <= MAX_HEIGHT {
            let parent_no = child_no >> INNER_BITS;
            let index = (child_no & INNER_MASK) as usize;
            let at = level as usize - 1;
            while self.spine.len() <= at {
                self.spine.push(None);
            }
            let Some(slot) = self.spine.get_mut(at) else {
                return;
            };
            match slot {
                Some((no, node)) if *no == parent_no => {
                    node.set_child(index, child);
                    return;
                }
                _ => {
                    let mut node = Inner::empty(level);
                    node.set_child(index, child);
                    match slot.replace((parent_no, node)) {
                        Some((sealed_no, sealed)) => {
                            child_no = sealed_no;
                            child = Child::Inner(Arc::new(sealed));
                            level += 1;
                        }
                        None => return,
                    }
                }
            }
        }
    }

    /// The table holding every pair pushed.
    pub fn finish(mut self) -> IdTable<V> {
        let Some(last) = self.last else {
            return IdTable::new();
        };
        let height = height_for(u64::from(last));
        let Some((leaf_no, leaf)) = self.leaf.take() else {
            return IdTable::new();
        };
        if height == 0 {
            return IdTable {
                root: Root::Leaf(Arc::new(leaf)),
                height: 0,
                len: self.len,
            };
        }
        self.place(1, leaf_no, Child::Leaf(Arc::new(leaf)));
        for level in 1..height {
            if let Some((no, node)) = self.spine.get_mut(level as usize - 1).and_then(Option::take) {
                self.place(level + 1, no, Child::Inner(Arc::new(node)));
            }
        }
        match self.spine.get_mut(height as usize - 1).and_then(Option::take) {
            Some((_, root)) => IdTable {
                root: Root::Inner(Arc::new(root)),
                height,
                len: self.len,
            },
            None => IdTable::new(),
        }
    }
}
