//! `larch-server`: the network front end and every LDAPv3 operation.
//!
//! This crate will hold the tokio listener, per-connection sessions that decode pipelined
//! PDUs and answer them, the operation handlers (bind, search, add, modify, delete, modify
//! DN, compare, abandon, extended operations), controls, TLS, authentication, access
//! control, the access/audit/error logs and `cn=monitor`.
//!
//! **Status:** three parts exist:
//! - [`config`]: the `larch.toml` file, its embedded defaults and their validation
//!   (documented in `docs/configuration.md`);
//! - [`opattrs`]: the operational attributes maintained on every write (timestamps,
//!   creators and modifiers, entryUUID, entryCSN, structuralObjectClass) and the computed
//!   ones (entryDN, hasSubordinates, numSubordinates, subschemaSubentry);
//! - [`search`]: the search planner (index candidates for a filter, scope iteration).
//!
//! The listener, sessions and operations are not built yet; they are specified by the
//! project's "server" and "security" issues.

#![forbid(unsafe_code)]

pub mod auth;
pub mod config;
pub mod controls;
pub mod directory;
pub mod dse;
pub mod error;
pub mod identity;
pub mod net;
pub mod opattrs;
pub mod ops;
pub mod response;
pub mod search;
pub mod session;
