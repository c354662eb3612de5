//! How nodes reach each other. [`memory`]: in one process, with seeded faults, for tests;
//! the TCP transport with TLS client certificates is the next step (`docs/cluster.md`).

pub mod memory;
