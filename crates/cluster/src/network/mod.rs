//! How nodes reach each other. [`memory`]: in one process, with seeded faults, for tests;
//! [`tcp`]: between processes, over TCP or mutual TLS, its messages encoded by [`codec`].

pub mod codec;
pub mod memory;
pub mod tcp;
