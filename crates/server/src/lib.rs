//! `larch-server`: the network front end and every LDAPv3 operation.
//!
//! This crate will hold the tokio listener, per-connection sessions that decode pipelined
//! PDUs and answer them, the operation handlers (bind, search with its planner, add, modify,
//! delete, modify DN, compare, abandon, extended operations), controls, TLS, authentication,
//! access control, the access/audit/error logs, `cn=monitor` and configuration.
//!
//! **Status:** not built yet; nothing here works. It is specified by the project's "server"
//! and "security" issues and depends on `larch-store`.
