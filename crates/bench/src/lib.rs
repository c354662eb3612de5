//! `larch-bench`: the tools that measure an LDAP server, any LDAP server.
//!
//! What it is:
//! - [`gen`]: the DirectoryMark-style data generator: seeded, reproducible LDIF of N
//!   `inetOrgPerson` entries with realistic, unique names (about 700 octets each), optional
//!   organizational units and groups, `userPassword` hashed with a chosen scheme
//!   ([`password`]), and the value files (cn, uid, mail, DN) the load client draws from;
//! - [`client`]: the async load client: connections x pipeline depth, operations matched
//!   to responses by message ID, workloads `search`, `auth` (SLAMD's search-then-bind, on
//!   the same connection or a new one per operation), `modify`, `mixed`, `add`, `delete`,
//!   `churn`; closed loop (as fast as the server answers) or open loop (target rate, latency
//!   from the scheduled instant); warm-up; progress every second;
//! - [`report`]: HDR latency histograms, result codes, client errors, the client's own CPU
//!   and the server's ([`cpu`]), as text or JSON; [`sweep`]: one run per value of a
//!   parameter, a table and a hand-drawn SVG chart;
//! - [`template`]: filter templates (`(cn={})`) and value files; [`url`]: `ldap://` and
//!   `ldaps://` URLs; [`tls`]: `ldaps://` and StartTLS with rustls (verification against a
//!   CA file, client certificates, a pinned version, session resumption shared by the run,
//!   handshakes counted full or resumed; [`sessions`]: the session store, sized so every
//!   connection of a run can resume); [`fake`]: a tiny in-process LDAP server for tests
//!   (plain, `ldaps://` or StartTLS).
//!
//! What it is not: it depends on `larch-proto` only (every PDU is encoded and decoded with
//! it), never on the server crates, so it measures Larch, OpenLDAP or anything else the
//! same way. The `larch gen` and `larch bench` subcommands are thin command-line wrappers
//! over it.

#![forbid(unsafe_code)]

pub mod client;
pub mod cpu;
pub mod fake;
pub mod gen;
pub mod names;
pub mod password;
pub mod report;
pub mod rng;
pub mod sessions;
pub mod simple;
pub mod source;
pub mod sweep;
pub mod template;
pub mod tls;
pub mod url;

pub use client::{run, Attributes, AuthConnection, BenchConfig, BenchError, Workload};
pub use gen::{generate_to_dir, GenConfig, GenSummary, Generator};
pub use password::PasswordScheme;
pub use report::Report;
pub use tls::{TlsOptions, TlsVersion, Transport};
