//! The bitmap form of an [`IdSet`](super::IdSet): a compressed bitmap in the style of
//! Roaring, for sets dense enough that it takes less memory than a sorted array.
//!
//! Layout:
//! - the 32-bit ID space is cut into 65,536 blocks of 65,536 IDs; an ID's high 16 bits
//!   (its *key*) name its block, its low 16 bits its place inside the block;
//! - a directory, sorted by key, lists the non-empty blocks, each held in its own `Arc`;
//! - a block is *sparse*, a strictly ascending `Vec<u16>` of at most
//!   [`SPARSE_BLOCK_MAX`] low halves (2 octets per ID), or *dense*, 1,024 × u64 words with
//!   one bit per possible low half (8 KiB, whatever the count: below 2 octets per ID once
//!   above 4,096 IDs, which is why that is the sparse limit).
//!
//! Invariants:
//! 1. Directory keys strictly ascending; no empty block.
//! 2. Sparse blocks strictly ascending, 1 to [`SPARSE_BLOCK_MAX`] values.
//! 3. Dense blocks hold their exact count, which is above [`SPARSE_BLOCK_SHRINK`].
//! 4. The bitmap's count is the sum of its blocks' counts.
//!
//! Copy-on-write: the directory and every block are shared through `Arc`. A change makes
//! the directory unique (copying at most 65,536 small entries, each one reference count
//! increment) and then only the one block it touches, so changing a set of a million IDs
//! that another version still reads copies at most one 8 KiB block plus the directory.
//! Binary operations share every block they would copy unchanged.

use std::cmp::Ordering;
use std::iter::Enumerate;
use std::mem::size_of;
use std::slice;
use std::sync::Arc;

use super::sorted;
use super::{SPARSE_BLOCK_MAX, SPARSE_BLOCK_SHRINK};

/// 64-bit words in a dense block: 65,536 bits.
const WORDS: usize = 1024;

/// Heap octets of the two reference counts allocated with every `Arc` value.
pub(super) const ARC_COUNTS: usize = 2 * size_of::<usize>();

/// The block key (high 16 bits) and low half of an ID.
pub(super) fn split(id: u32) -> (u16, u16) {
    ((id >> 16) as u16, id as u16)
}

/// The ID with this block key and low half.
fn join(key: u16, low: u16) -> u32 {
    (u32::from(key) << 16) | u32::from(low)
}

/// The word index (always below [`WORDS`]) and bit mask of a low half in a dense block.
fn word_bit(low: u16) -> (usize, u64) {
    (usize::from(low >> 6), 1u64 << (low & 63))
}

/// A dense block: one bit per low half, and the number of bits set.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Bits {
    /// Number of bits set.
    len: u32,
    /// Bit `b` of word `w` stands for low half `w * 64 + b`.
    words: [u64; WORDS],
}

impl Bits {
    /// Builds a dense block from whole words, counting the bits.
    fn from_words(words: [u64; WORDS]) -> Bits {
        let len = words.iter().map(|w| w.count_ones()).sum();
        Bits { len, words }
    }

    /// Builds a dense block from strictly ascending low halves.
    fn from_values(values: &[u16]) -> Bits {
        let mut words = [0u64; WORDS];
        for &low in values {
            let (w, bit) = word_bit(low);
            words[w] |= bit;
        }
        Bits::from_words(words)
    }

    fn contains(&self, low: u16) -> bool {
        let (w, bit) = word_bit(low);
        self.words[w] & bit != 0
    }

    fn insert(&mut self, low: u16) -> bool {
        let (w, bit) = word_bit(low);
        let word = &mut self.words[w];
        if *word & bit != 0 {
            return false;
        }
        *word |= bit;
        self.len += 1;
        true
    }

    fn remove(&mut self, low: u16) -> bool {
        let (w, bit) = word_bit(low);
        let word = &mut self.words[w];
        if *word & bit == 0 {
            return false;
        }
        *word &= !bit;
        self.len -= 1;
        true
    }

    fn first(&self) -> Option<u16> {
        let (w, word) = self.words.iter().enumerate().find(|(_, &word)| word != 0)?;
        Some((w * 64) as u16 + word.trailing_zeros() as u16)
    }

    fn iter(&self) -> BlockIter<'_> {
        BlockIter::Dense {
            words: self.words.iter().enumerate(),
            base: 0,
            word: 0,
        }
    }

    /// The low halves, ascending, in a vector of exactly that length.
    fn to_values(&self) -> Vec<u16> {
        let mut values = Vec::with_capacity(self.len as usize);
        values.extend(self.iter());
        values
    }
}

/// One block of 65,536 IDs.
#[derive(Clone)]
pub(super) enum Block {
    /// Strictly ascending low halves, at most [`SPARSE_BLOCK_MAX`].
    Sparse(Arc<Vec<u16>>),
    /// One bit per low half; more than [`SPARSE_BLOCK_SHRINK`] bits set.
    Dense(Arc<Bits>),
}

impl Block {
    /// The block for strictly ascending low halves in the form their count calls for:
    /// sparse up to [`SPARSE_BLOCK_MAX`], else dense; `None` when there are none.
    fn from_values(mut values: Vec<u16>) -> Option<Block> {
        if values.is_empty() {
            None
        } else if values.len() > SPARSE_BLOCK_MAX {
            Some(Block::Dense(Arc::new(Bits::from_values(&values))))
        } else {
            values.shrink_to_fit();
            Some(Block::Sparse(Arc::new(values)))
        }
    }

    /// The block for a bit pattern in the form its count calls for (see
    /// [`Block::from_values`]).
    fn from_bits(bits: Bits) -> Option<Block> {
        if bits.len as usize > SPARSE_BLOCK_MAX {
            Some(Block::Dense(Arc::new(bits)))
        } else {
            Block::from_values(bits.to_values())
        }
    }

    fn len(&self) -> usize {
        match self {
            Block::Sparse(values) => values.len(),
            Block::Dense(bits) => bits.len as usize,
        }
    }

    fn contains(&self, low: u16) -> bool {
        match self {
            Block::Sparse(values) => values.binary_search(&low).is_ok(),
            Block::Dense(bits) => bits.contains(low),
        }
    }

    fn first(&self) -> Option<u16> {
        match self {
            Block::Sparse(values) => values.first().copied(),
            Block::Dense(bits) => bits.first(),
        }
    }

    fn ptr_eq(&self, other: &Block) -> bool {
        match (self, other) {
            (Block::Sparse(a), Block::Sparse(b)) => Arc::ptr_eq(a, b),
            (Block::Dense(a), Block::Dense(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Heap octets of the block, counted in full even when shared.
    fn heap_bytes(&self) -> usize {
        match self {
            Block::Sparse(values) => {
                ARC_COUNTS + size_of::<Vec<u16>>() + values.capacity() * size_of::<u16>()
            }
            Block::Dense(_) => ARC_COUNTS + size_of::<Bits>(),
        }
    }

    fn iter(&self) -> BlockIter<'_> {
        match self {
            Block::Sparse(values) => BlockIter::Sparse(values.iter()),
            Block::Dense(bits) => bits.iter(),
        }
    }

    /// Adds a low half (copy-on-write); false when it was there. A sparse block that would
    /// pass [`SPARSE_BLOCK_MAX`] becomes dense.
    fn insert(&mut self, low: u16) -> bool {
        match self {
            Block::Sparse(values) => match values.binary_search(&low) {
                Ok(_) => false,
                Err(pos) => {
                    if values.len() >= SPARSE_BLOCK_MAX {
                        let mut bits = Bits::from_values(values);
                        bits.insert(low);
                        *self = Block::Dense(Arc::new(bits));
                    } else {
                        sorted::cow_insert(values, pos, low);
                    }
                    true
                }
            },
            Block::Dense(bits) => !bits.contains(low) && Arc::make_mut(bits).insert(low),
        }
    }

    /// Removes a low half (copy-on-write); false when it was not there. A dense block that
    /// falls to [`SPARSE_BLOCK_SHRINK`] becomes sparse. A sparse block may become empty:
    /// the caller drops it.
    fn remove(&mut self, low: u16) -> bool {
        match self {
            Block::Sparse(values) => match values.binary_search(&low) {
                Ok(pos) => {
                    sorted::cow_remove(values, pos);
                    true
                }
                Err(_) => false,
            },
            Block::Dense(bits) => {
                if !bits.contains(low) {
                    return false;
                }
                if bits.len as usize <= SPARSE_BLOCK_SHRINK + 1 {
                    let mut values = Vec::with_capacity(bits.len as usize - 1);
                    values.extend(bits.iter().filter(|&v| v != low));
                    *self = Block::Sparse(Arc::new(values));
                } else {
                    Arc::make_mut(bits).remove(low);
                }
                true
            }
        }
    }

    /// The union, sharing an input block when the result equals it.
    fn union(&self, other: &Block) -> Block {
        if self.ptr_eq(other) {
            return self.clone();
        }
        let result = match (self, other) {
            (Block::Dense(a), Block::Dense(b)) => {
                let mut words = a.words;
                for (w, &x) in words.iter_mut().zip(b.words.iter()) {
                    *w |= x;
                }
                Block::from_bits(Bits::from_words(words))
            }
            (Block::Dense(dense), Block::Sparse(values)) | (Block::Sparse(values), Block::Dense(dense)) => {
                let mut bits = Bits::clone(dense);
                for &low in values.iter() {
                    bits.insert(low);
                }
                Block::from_bits(bits)
            }
            (Block::Sparse(a), Block::Sparse(b)) => Block::from_values(sorted::union(a, b)),
        };
        // Neither input is empty, so neither is the result.
        match result {
            Some(block) if block.len() == self.len() => self.clone(),
            Some(block) if block.len() == other.len() => other.clone(),
            Some(block) => block,
            None => self.clone(),
        }
    }

    /// The intersection (`None` when empty), sharing an input block when the result
    /// equals it.
    fn intersection(&self, other: &Block) -> Option<Block> {
        if self.ptr_eq(other) {
            return Some(self.clone());
        }
        let result = match (self, other) {
            (Block::Dense(a), Block::Dense(b)) => {
                let mut words = a.words;
                for (w, &x) in words.iter_mut().zip(b.words.iter()) {
                    *w &= x;
                }
                Block::from_bits(Bits::from_words(words))
            }
            (Block::Dense(dense), Block::Sparse(values)) | (Block::Sparse(values), Block::Dense(dense)) => {
                Block::from_values(values.iter().copied().filter(|&v| dense.contains(v)).collect())
            }
            (Block::Sparse(a), Block::Sparse(b)) => Block::from_values(sorted::intersection(a, b)),
        }?;
        Some(if result.len() == self.len() {
            self.clone()
        } else if result.len() == other.len() {
            other.clone()
        } else {
            result
        })
    }

    /// The low halves of `self` not in `other` (`None` when none), sharing `self` when
    /// nothing is taken away.
    fn difference(&self, other: &Block) -> Option<Block> {
        if self.ptr_eq(other) {
            return None;
        }
        let result = match (self, other) {
            (Block::Dense(a), Block::Dense(b)) => {
                let mut words = a.words;
                for (w, &x) in words.iter_mut().zip(b.words.iter()) {
                    *w &= !x;
                }
                Block::from_bits(Bits::from_words(words))
            }
            (Block::Dense(dense), Block::Sparse(values)) => {
                if !values.iter().any(|&v| dense.contains(v)) {
                    return Some(self.clone());
                }
                let mut bits = Bits::clone(dense);
                for &low in values.iter() {
                    bits.remove(low);
                }
                Block::from_bits(bits)
            }
            (Block::Sparse(values), Block::Dense(dense)) => {
                Block::from_values(values.iter().copied().filter(|&v| !dense.contains(v)).collect())
            }
            (Block::Sparse(a), Block::Sparse(b)) => Block::from_values(sorted::difference(a, b)),
        }?;
        Some(if result.len() == self.len() {
            self.clone()
        } else {
            result
        })
    }

    fn intersects(&self, other: &Block) -> bool {
        if self.ptr_eq(other) {
            return true;
        }
        match (self, other) {
            (Block::Dense(a), Block::Dense(b)) => {
                a.words.iter().zip(b.words.iter()).any(|(&x, &y)| x & y != 0)
            }
            (Block::Dense(dense), Block::Sparse(values)) | (Block::Sparse(values), Block::Dense(dense)) => {
                values.iter().any(|&v| dense.contains(v))
            }
            (Block::Sparse(a), Block::Sparse(b)) => sorted::intersects(a, b),
        }
    }

    /// Same low halves, whatever the forms.
    fn content_eq(&self, other: &Block) -> bool {
        if self.ptr_eq(other) {
            return true;
        }
        match (self, other) {
            (Block::Sparse(a), Block::Sparse(b)) => a == b,
            (Block::Dense(a), Block::Dense(b)) => a == b,
            _ => self.len() == other.len() && self.iter().eq(other.iter()),
        }
    }

    /// Checks invariants 2 and 3 of the module documentation.
    fn check(&self) -> Result<(), String> {
        match self {
            Block::Sparse(values) => {
                if values.is_empty() || values.len() > SPARSE_BLOCK_MAX {
                    return Err(format!("sparse block of {} values", values.len()));
                }
                if !sorted::is_strictly_ascending(values) {
                    return Err("sparse block not strictly ascending".into());
                }
            }
            Block::Dense(bits) => {
                let counted: u32 = bits.words.iter().map(|w| w.count_ones()).sum();
                if counted != bits.len {
                    return Err(format!("dense block says {} bits, holds {counted}", bits.len));
                }
                if (bits.len as usize) <= SPARSE_BLOCK_SHRINK {
                    return Err(format!("dense block of only {} bits", bits.len));
                }
            }
        }
        Ok(())
    }
}

/// A directory entry: a block and the key (high 16 bits) its IDs share.
#[derive(Clone)]
pub(super) struct Container {
    key: u16,
    block: Block,
}

/// The compressed bitmap: the block directory and the total count.
#[derive(Clone, Default)]
pub(super) struct Bitmap {
    /// Number of IDs (up to 2^32, hence 64 bits).
    len: u64,
    /// Non-empty blocks by ascending key.
    containers: Vec<Container>,
}

impl Bitmap {
    /// The bitmap of strictly ascending IDs, each block in the form its count calls for.
    pub(super) fn from_ascending(ids: &[u32]) -> Bitmap {
        let mut containers = Vec::new();
        for group in ids.chunk_by(|a, b| a >> 16 == b >> 16) {
            let Some(&first) = group.first() else { continue };
            let values = group.iter().map(|&id| id as u16).collect();
            if let Some(block) = Block::from_values(values) {
                containers.push(Container {
                    key: split(first).0,
                    block,
                });
            }
        }
        containers.shrink_to_fit();
        Bitmap {
            len: ids.len() as u64,
            containers,
        }
    }

    /// Number of IDs.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Number of non-empty blocks.
    pub(super) fn block_count(&self) -> usize {
        self.containers.len()
    }

    fn find(&self, key: u16) -> Result<usize, usize> {
        self.containers.binary_search_by_key(&key, |c| c.key)
    }

    /// True when some ID of the set has this key (high 16 bits).
    pub(super) fn has_block(&self, key: u16) -> bool {
        self.find(key).is_ok()
    }

    /// Number of IDs in the block with this key (0 when there is none).
    pub(super) fn block_len(&self, key: u16) -> usize {
        self.find(key)
            .ok()
            .and_then(|i| self.containers.get(i))
            .map_or(0, |c| c.block.len())
    }

    pub(super) fn contains(&self, id: u32) -> bool {
        let (key, low) = split(id);
        match self.find(key) {
            Ok(i) => self.containers.get(i).is_some_and(|c| c.block.contains(low)),
            Err(_) => false,
        }
    }

    pub(super) fn first(&self) -> Option<u32> {
        let container = self.containers.first()?;
        Some(join(container.key, container.block.first()?))
    }

    /// Adds an ID, copying the one block it changes if that block is shared; false when it
    /// was there.
    pub(super) fn insert(&mut self, id: u32) -> bool {
        let (key, low) = split(id);
        let added = match self.find(key) {
            Ok(i) => self.containers.get_mut(i).is_some_and(|c| c.block.insert(low)),
            Err(i) => {
                let block = Block::Sparse(Arc::new(vec![low]));
                self.containers.insert(i, Container { key, block });
                true
            }
        };
        if added {
            self.len += 1;
        }
        added
    }

    /// Removes an ID, copying the one block it changes if that block is shared, dropping
    /// the block if it becomes empty; false when it was not there.
    pub(super) fn remove(&mut self, id: u32) -> bool {
        let (key, low) = split(id);
        let Ok(i) = self.find(key) else { return false };
        let Some(container) = self.containers.get_mut(i) else {
            return false;
        };
        if !container.block.remove(low) {
            return false;
        }
        if container.block.len() == 0 {
            self.containers.remove(i);
        }
        self.len -= 1;
        true
    }

    /// All IDs, ascending, in a vector with room for `extra` more.
    pub(super) fn to_vec(&self, extra: usize) -> Vec<u32> {
        let mut ids = Vec::with_capacity((self.len as usize).saturating_add(extra));
        ids.extend(self.iter());
        ids
    }

    pub(super) fn iter(&self) -> BitmapIter<'_> {
        BitmapIter {
            containers: self.containers.iter(),
            key: 0,
            block: BlockIter::Sparse([].iter()),
        }
    }

    /// Heap octets of the directory and the blocks (blocks counted in full even when
    /// shared), not of the bitmap value itself.
    pub(super) fn heap_bytes(&self) -> usize {
        self.containers.capacity() * size_of::<Container>()
            + self
                .containers
                .iter()
                .map(|c| c.block.heap_bytes())
                .sum::<usize>()
    }

    /// The IDs of strictly ascending `ids` that are in the bitmap (`keep` true) or not in
    /// it (`keep` false): one directory search per run of IDs sharing a block, then one
    /// probe per ID, so the cost follows `ids`, not the bitmap.
    pub(super) fn filter_sorted(&self, ids: &[u32], keep: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(ids.len());
        let mut rest = self.containers.as_slice();
        for group in ids.chunk_by(|a, b| a >> 16 == b >> 16) {
            let Some(&first) = group.first() else { continue };
            let key = split(first).0;
            rest = rest
                .get(sorted::lower_bound_by(rest, |c| c.key < key)..)
                .unwrap_or_default();
            match rest.first().filter(|c| c.key == key) {
                None if keep => {}
                None => out.extend_from_slice(group),
                Some(container) => out.extend(
                    group
                        .iter()
                        .copied()
                        .filter(|&id| container.block.contains(id as u16) == keep),
                ),
            }
        }
        out
    }

    /// True when one of strictly ascending `ids` is in the bitmap (probes as in
    /// [`Bitmap::filter_sorted`]).
    pub(super) fn intersects_sorted(&self, ids: &[u32]) -> bool {
        let mut rest = self.containers.as_slice();
        for group in ids.chunk_by(|a, b| a >> 16 == b >> 16) {
            let Some(&first) = group.first() else { continue };
            let key = split(first).0;
            rest = rest
                .get(sorted::lower_bound_by(rest, |c| c.key < key)..)
                .unwrap_or_default();
            match rest.first() {
                None => return false,
                Some(c) if c.key == key => {
                    if group.iter().any(|&id| c.block.contains(id as u16)) {
                        return true;
                    }
                }
                Some(_) => {}
            }
        }
        false
    }

    /// The union, block by block; blocks in only one input are shared.
    pub(super) fn union(&self, other: &Bitmap) -> Bitmap {
        let mut containers = Vec::with_capacity(self.containers.len() + other.containers.len());
        let mut a = self.containers.iter().peekable();
        let mut b = other.containers.iter().peekable();
        loop {
            match (a.peek().copied(), b.peek().copied()) {
                (Some(x), Some(y)) => match x.key.cmp(&y.key) {
                    Ordering::Less => {
                        containers.push(x.clone());
                        a.next();
                    }
                    Ordering::Greater => {
                        containers.push(y.clone());
                        b.next();
                    }
                    Ordering::Equal => {
                        containers.push(Container {
                            key: x.key,
                            block: x.block.union(&y.block),
                        });
                        a.next();
                        b.next();
                    }
                },
                (Some(_), None) => {
                    containers.extend(a.by_ref().cloned());
                }
                (None, Some(_)) => {
                    containers.extend(b.by_ref().cloned());
                }
                (None, None) => break,
            }
        }
        Bitmap::from_containers(containers)
    }

    /// The intersection, block by block: the smaller directory is walked and each key
    /// looked up in the larger one by galloping search.
    pub(super) fn intersection(&self, other: &Bitmap) -> Bitmap {
        let (small, large) = if self.containers.len() <= other.containers.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut containers = Vec::new();
        let mut rest = large.containers.as_slice();
        for x in &small.containers {
            rest = rest
                .get(sorted::lower_bound_by(rest, |c| c.key < x.key)..)
                .unwrap_or_default();
            match rest.first() {
                None => break,
                Some(y) if y.key == x.key => {
                    if let Some(block) = x.block.intersection(&y.block) {
                        containers.push(Container { key: x.key, block });
                    }
                }
                Some(_) => {}
            }
        }
        Bitmap::from_containers(containers)
    }

    /// The IDs of `self` not in `other`, block by block; blocks `other` does not touch are
    /// shared.
    pub(super) fn difference(&self, other: &Bitmap) -> Bitmap {
        let mut containers = Vec::with_capacity(self.containers.len());
        let mut rest = other.containers.as_slice();
        for x in &self.containers {
            rest = rest
                .get(sorted::lower_bound_by(rest, |c| c.key < x.key)..)
                .unwrap_or_default();
            match rest.first() {
                Some(y) if y.key == x.key => {
                    if let Some(block) = x.block.difference(&y.block) {
                        containers.push(Container { key: x.key, block });
                    }
                }
                _ => containers.push(x.clone()),
            }
        }
        Bitmap::from_containers(containers)
    }

    /// True when the two have an ID in common.
    pub(super) fn intersects(&self, other: &Bitmap) -> bool {
        let (small, large) = if self.containers.len() <= other.containers.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut rest = large.containers.as_slice();
        for x in &small.containers {
            rest = rest
                .get(sorted::lower_bound_by(rest, |c| c.key < x.key)..)
                .unwrap_or_default();
            match rest.first() {
                None => return false,
                Some(y) if y.key == x.key && x.block.intersects(&y.block) => return true,
                Some(_) => {}
            }
        }
        false
    }

    /// Same IDs, whatever the block forms.
    pub(super) fn content_eq(&self, other: &Bitmap) -> bool {
        self.len == other.len
            && self.containers.len() == other.containers.len()
            && self
                .containers
                .iter()
                .zip(other.containers.iter())
                .all(|(x, y)| x.key == y.key && x.block.content_eq(&y.block))
    }

    fn from_containers(mut containers: Vec<Container>) -> Bitmap {
        containers.shrink_to_fit();
        let len = containers.iter().map(|c| c.block.len() as u64).sum();
        Bitmap { len, containers }
    }

    /// Checks the invariants of the module documentation.
    pub(super) fn check(&self) -> Result<(), String> {
        let mut total = 0u64;
        let mut previous: Option<u16> = None;
        for container in &self.containers {
            if previous.is_some_and(|p| p >= container.key) {
                return Err(format!("directory key {} out of order", container.key));
            }
            previous = Some(container.key);
            container
                .block
                .check()
                .map_err(|e| format!("block {}: {e}", container.key))?;
            total += container.block.len() as u64;
        }
        if total != self.len {
            return Err(format!("bitmap says {} IDs, its blocks hold {total}", self.len));
        }
        Ok(())
    }
}

/// Ascending low halves of one block.
#[derive(Clone)]
pub(super) enum BlockIter<'a> {
    /// A sparse block's values.
    Sparse(slice::Iter<'a, u16>),
    /// A dense block's set bits.
    Dense {
        /// The words not yet loaded, with their index.
        words: Enumerate<slice::Iter<'a, u64>>,
        /// The low half of bit 0 of `word`.
        base: u16,
        /// The bits of the current word not yet returned.
        word: u64,
    },
}

impl Iterator for BlockIter<'_> {
    type Item = u16;

    #[inline]
    fn next(&mut self) -> Option<u16> {
        match self {
            BlockIter::Sparse(values) => values.next().copied(),
            BlockIter::Dense { words, base, word } => loop {
                if *word != 0 {
                    let bit = word.trailing_zeros() as u16;
                    *word &= *word - 1;
                    return Some(*base + bit);
                }
                let (w, &next) = words.next()?;
                *base = (w * 64) as u16;
                *word = next;
            },
        }
    }
}

/// Ascending IDs of a bitmap.
#[derive(Clone)]
pub(super) struct BitmapIter<'a> {
    /// Blocks not yet started.
    containers: slice::Iter<'a, Container>,
    /// Key of the current block.
    key: u16,
    /// The current block's remaining values.
    block: BlockIter<'a>,
}

impl Iterator for BitmapIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        loop {
            if let Some(low) = self.block.next() {
                return Some(join(self.key, low));
            }
            let container = self.containers.next()?;
            self.key = container.key;
            self.block = container.block.iter();
        }
    }
}

/// The last block of an [`Appender`], outside any `Arc` while it fills.
enum Tail {
    Sparse(Vec<u16>),
    Dense(Box<Bits>),
}

impl Tail {
    fn len(&self) -> usize {
        match self {
            Tail::Sparse(values) => values.len(),
            Tail::Dense(bits) => bits.len as usize,
        }
    }
}

/// Builds a bitmap from strictly ascending IDs. The block being filled stays a plain
/// vector or bitset, not yet shared, so an append is a vector push or a bit set (no
/// reference count to check); it goes into an `Arc` once the IDs move on to the next block.
pub(super) struct Appender {
    /// The completed blocks.
    done: Bitmap,
    /// Key of the block being filled.
    key: u16,
    /// The block being filled (not empty).
    tail: Tail,
}

impl Appender {
    /// An appender holding strictly ascending `ids`; `None` when there are none.
    pub(super) fn new(ids: &[u32]) -> Option<Appender> {
        let key = split(*ids.last()?).0;
        let (before, tail) = ids.split_at(ids.partition_point(|&id| split(id).0 < key));
        let values: Vec<u16> = tail.iter().map(|&id| id as u16).collect();
        let tail = if values.len() > SPARSE_BLOCK_MAX {
            Tail::Dense(Box::new(Bits::from_values(&values)))
        } else {
            Tail::Sparse(values)
        };
        Some(Appender {
            done: Bitmap::from_ascending(before),
            key,
            tail,
        })
    }

    /// Appends an ID greater than every ID already appended (the caller checks that).
    pub(super) fn push(&mut self, id: u32) {
        let (key, low) = split(id);
        if key != self.key {
            self.flush();
            self.key = key;
            self.tail = Tail::Sparse(vec![low]);
            return;
        }
        match &mut self.tail {
            Tail::Sparse(values) if values.len() >= SPARSE_BLOCK_MAX => {
                let mut bits = Box::new(Bits::from_values(values));
                bits.insert(low);
                self.tail = Tail::Dense(bits);
            }
            Tail::Sparse(values) => values.push(low),
            Tail::Dense(bits) => {
                bits.insert(low);
            }
        }
    }

    /// Moves the tail into the completed blocks, leaving an empty placeholder.
    fn flush(&mut self) {
        let block = match std::mem::replace(&mut self.tail, Tail::Sparse(Vec::new())) {
            Tail::Sparse(values) => Block::from_values(values),
            Tail::Dense(bits) => Block::from_bits(*bits),
        };
        if let Some(block) = block {
            self.done.len += block.len() as u64;
            self.done.containers.push(Container { key: self.key, block });
        }
    }

    /// Number of IDs appended.
    pub(super) fn len(&self) -> u64 {
        self.done.len + self.tail.len() as u64
    }

    /// Number of blocks the IDs touch.
    pub(super) fn block_count(&self) -> usize {
        self.done.containers.len() + 1
    }

    /// All IDs, ascending, in a vector with room for `extra` more.
    pub(super) fn to_vec(&self, extra: usize) -> Vec<u32> {
        let mut ids = self.done.to_vec(self.tail.len().saturating_add(extra));
        let high = u32::from(self.key) << 16;
        match &self.tail {
            Tail::Sparse(values) => ids.extend(values.iter().map(|&low| high | u32::from(low))),
            Tail::Dense(bits) => ids.extend(bits.iter().map(|low| high | u32::from(low))),
        }
        ids
    }

    /// The bitmap of the appended IDs.
    pub(super) fn finish(mut self) -> Bitmap {
        self.flush();
        self.done.containers.shrink_to_fit();
        self.done
    }
}
