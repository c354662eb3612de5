//! Persistent (copy-on-write) maps: the structures every version of the directory is
//! made of.
//!
//! - [`IdTable`]: entry ID (`u32`, allocated densely) to a value, as a radix tree of
//!   64-slot leaves;
//! - [`HashTrie`]: a 64-bit hash to a value, as a hash array mapped trie with small sorted
//!   leaves.
//!
//! Both are written here rather than taken from a crate because they are the core of the
//! store: their memory per entry and their copying cost decide how large a directory fits
//! and how fast it takes writes.
//!
//! How versions use them, in steps:
//! 1. The single writer clones the current version's maps: a clone copies one root
//!    pointer.
//! 2. It changes its copy. Each change walks from the root with [`std::sync::Arc::make_mut`]:
//!    a node still shared with the published version (or any older one) is copied, a node
//!    the copy already owns alone (copied earlier in the same batch) is changed in place.
//!    So a batch copies each touched node once, and only the nodes on touched paths.
//! 3. It publishes the copy. Readers holding an older version keep seeing it unchanged;
//!    its nodes are freed when the last version holding them is dropped.
//!
//! At startup both maps are built bottom-up from sorted data ([`IdTableBuilder`],
//! [`IdTable::from_sorted_parts`], [`HashTrie::from_vec`]) instead of by inserts.
//!
//! Neither map recurses or loops on an input-derived depth: the depth of an [`IdTable`]
//! is at most [`id_table::MAX_HEIGHT`] + 1 and that of a [`HashTrie`] at most
//! [`hash_trie::MAX_DEPTH`] + 1, whatever the keys.

pub mod hash_trie;
pub mod id_table;

pub use hash_trie::{HashTrie, TrieShape};
pub use id_table::{BuildError, IdTable, IdTableBuilder};
