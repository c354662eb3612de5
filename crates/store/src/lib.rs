//! `larch-store`: the in-memory MVCC database beneath the server.
//!
//! Built so far:
//! - [`storage`]: the `Storage` trait every file access goes through, with the real
//!   filesystem and a fault-injecting implementation for crash tests;
//! - [`wal`]: the write-ahead log (segments, CRC32C-checked records, group commit, torn-tail
//!   recovery);
//! - [`ldif`]: a streaming RFC 2849 LDIF reader and writer.
//!
//! Still to come (see the project's store issue): entries by dense `EntryId` in chunked
//! arenas, the DN index and attribute indexes, copy-on-write versions published to
//! lock-free readers, snapshots loaded in parallel at startup, offline import and export.
//!
//! What it must not know: sockets, LDAP sessions, access control.

#![forbid(unsafe_code)]

pub mod ldif;
pub mod storage;
pub mod wal;
