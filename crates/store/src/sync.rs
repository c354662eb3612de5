//! The synchronization primitives the lock-free read paths are built from, behind one name so
//! that the loom model checker can replace them.
//!
//! Normally these are `std::sync`'s `Arc`, `Mutex` and atomics. Compiled with `--cfg loom`
//! they are loom's instrumented copies, which let the model tests in `tests/loom_*.rs` run
//! every interleaving (and every permitted weak-memory outcome) of a small concurrent
//! program. Only modules whose protocol is model-checked go through this shim; the rest of
//! the crate uses `std::sync` directly.

#[cfg(not(loom))]
pub use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc, Mutex, MutexGuard,
};

#[cfg(loom)]
pub use loom::sync::{
    atomic::{AtomicU64, Ordering},
    Arc, Mutex, MutexGuard,
};
