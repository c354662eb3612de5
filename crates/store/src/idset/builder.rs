//! [`IdSetBuilder`]: builds an [`IdSet`] from IDs pushed one at a time, in linear time
//! when they come in ascending order (as during a startup load, which scans entries by
//! ascending ID).
//!
//! How it works:
//! 1. Ascending IDs are appended to a plain vector, counting the blocks (high 16 bits)
//!    they touch.
//! 2. As soon as that vector would grow into a bitmap (the rule of [`IdSet::insert`]), it
//!    is converted once, and later IDs are appended to the block being filled, a plain
//!    vector or bitset until the IDs move on to the next block: a presence index over ten
//!    million entries never holds much more than its final compressed form. Should the IDs
//!    become too spread out for a bitmap (the rule of [`IdSet::remove`]), they go back to
//!    a vector.
//! 3. An ID equal to the previous one is ignored. The first ID below the previous one
//!    switches the builder to collecting everything in a vector that is sorted and
//!    deduplicated at the end: O(n log n), and 4 octets per pushed ID meanwhile.
//! 4. [`IdSetBuilder::finish`] returns the set in the form growth would give it.

use super::bitmap::{split, Appender};
use super::{to_usize, wants_array, wants_bitmap, IdSet};

/// Builds an [`IdSet`] from pushed IDs (see the module documentation for the cost).
#[derive(Default)]
pub struct IdSetBuilder {
    state: State,
}

enum State {
    /// Strictly ascending IDs and the number of distinct blocks among them.
    Ascending { ids: Vec<u32>, blocks: usize },
    /// Strictly ascending IDs streamed into a bitmap; `last` is the greatest.
    Blocks { bitmap: Appender, last: u32 },
    /// IDs in any order, with repeats.
    Unordered(Vec<u32>),
}

impl Default for State {
    fn default() -> State {
        State::Ascending {
            ids: Vec::new(),
            blocks: 0,
        }
    }
}

impl IdSetBuilder {
    /// An empty builder.
    pub const fn new() -> IdSetBuilder {
        IdSetBuilder {
            state: State::Ascending {
                ids: Vec::new(),
                blocks: 0,
            },
        }
    }

    /// Adds an ID: amortized O(1) while the IDs ascend (repeats of the last one are
    /// ignored); see the module documentation for other orders.
    pub fn push(&mut self, id: u32) {
        match &mut self.state {
            State::Ascending { ids, blocks } => {
                if let Some(&last) = ids.last() {
                    if id == last {
                        return;
                    }
                    if id < last {
                        let mut all = std::mem::take(ids);
                        all.push(id);
                        self.state = State::Unordered(all);
                        return;
                    }
                    if split(last).0 != split(id).0 {
                        *blocks += 1;
                    }
                } else {
                    *blocks = 1;
                }
                ids.push(id);
                if wants_bitmap(ids.len(), *blocks) {
                    if let Some(bitmap) = Appender::new(ids) {
                        self.state = State::Blocks { bitmap, last: id };
                    }
                }
            }
            State::Blocks { bitmap, last } => {
                if id == *last {
                    return;
                }
                if id < *last {
                    let mut all = bitmap.to_vec(1);
                    all.push(id);
                    self.state = State::Unordered(all);
                    return;
                }
                let new_block = split(id).0 != split(*last).0;
                bitmap.push(id);
                *last = id;
                if new_block && wants_array(to_usize(bitmap.len()), bitmap.block_count()) {
                    let blocks = bitmap.block_count();
                    self.state = State::Ascending {
                        ids: bitmap.to_vec(0),
                        blocks,
                    };
                }
            }
            State::Unordered(ids) => ids.push(id),
        }
    }

    /// The set of the pushed IDs.
    pub fn finish(self) -> IdSet {
        match self.state {
            State::Ascending { ids, .. } => IdSet::from_ascending_vec(ids),
            State::Blocks { bitmap, .. } => IdSet::from_bitmap(bitmap.finish()),
            State::Unordered(mut ids) => {
                ids.sort_unstable();
                ids.dedup();
                IdSet::from_ascending_vec(ids)
            }
        }
    }
}

impl std::fmt::Debug for IdSetBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (state, pushed) = match &self.state {
            State::Ascending { ids, .. } => ("ascending", ids.len()),
            State::Blocks { bitmap, .. } => ("ascending, bitmap", to_usize(bitmap.len())),
            State::Unordered(ids) => ("unordered", ids.len()),
        };
        f.debug_struct("IdSetBuilder")
            .field("state", &state)
            .field("ids", &pushed)
            .finish()
    }
}
