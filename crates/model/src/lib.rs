//! `larch-model`: what a directory *means*, independent of storage and sockets.
//!
//! This crate will hold distinguished names (RFC 4514), the schema (RFC 4512) and its
//! parser, attribute syntaxes and matching rules with RFC 4518 string preparation, the
//! in-memory entry form used by the store, schema checking, and three-valued filter
//! evaluation over entries.
//!
//! **Status:** not built yet; nothing here works. It is specified by the project's
//! "directory model" issue and depends only on `larch-proto`.
//!
//! What it must not know: sockets, files, the write-ahead log, threads.
