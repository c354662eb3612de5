//! `larch-bench`: the DirectoryMark-style data generator and the async, pipelined load
//! client (search, auth, modify, mixed) that measures any LDAP server.
//!
//! **Status:** not built yet; nothing here works. It is specified by the project's
//! "benchmark suite" issue. It depends on `larch-proto` only, so it can load any LDAP
//! server, not just Larch.
