//! `larch-store`: the in-memory MVCC database beneath the server.
//!
//! This crate will hold entries by dense `EntryId` in chunked arenas, attribute indexes,
//! copy-on-write versions published to lock-free readers, the durable write-ahead log with
//! group commit, checksummed snapshots loaded in parallel at startup, and LDIF import and
//! export, all behind a `Storage` trait so tests can inject torn writes and crashes.
//!
//! **Status:** not built yet; nothing here works. It is specified by the project's "store"
//! issue and depends on `larch-model`.
//!
//! What it must not know: sockets, LDAP sessions, access control.
