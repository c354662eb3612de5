//! `larch-server`: the network front end and every LDAPv3 operation.
//!
//! How a request flows: [`net`] accepts a connection (counted against the connection
//! limits) and hands it to [`session`], which frames and decodes every complete PDU,
//! dispatches it and coalesces the responses into one socket write. Searches run on a read
//! view of the store ([`search`]: planner, scopes, limits, aliases, referrals, paged
//! results, sort; [`dse`]: the root DSE and `cn=Subschema`); writes ([`ops`]) are prepared
//! on the connection and applied by the store's single writer, then answered once durable.
//! [`tls`] holds the certificate and runs handshakes (`ldaps://`, StartTLS), [`auth`]
//! decides Binds (simple, SASL EXTERNAL and PLAIN) and the confidentiality policy,
//! [`password`] checks and hashes userPassword values in every scheme, [`bind_throttle`]
//! holds back failed binds, [`cert_subject`] reads client certificates' subjects,
//! [`controls`] reads request controls, [`error`] is the one place where failures become
//! result codes, [`opattrs`] maintains the operational attributes, [`directory`] holds the
//! shared state and sets up a new data directory, [`config`] reads `larch.toml` (its
//! errors: [`config_error`]), [`acl`] decides who may do what (rules, default policy,
//! proxied authorization). [`lookup`] holds the reads of a version that binds, writes and
//! searches share (referral and alias classes, the last search base, the referral check),
//! [`select`] the attribute selection of searches, read controls and the DSEs. [`groups`]
//! says what a group is and who lists an entry (for the memberOf and referential integrity
//! hooks of [`hooks`], and the check that recomputes memberOf); [`uniqueness`] which
//! entry of a subtree holds a value (for the uniqueness hook and the import's report).
//! [`ppolicy`] is password policy (lockout, expiry, grace logins, history, quality, the
//! response control), enforced by Bind and by a write hook.
//! [`store_health`] words the store's health events (writes halted after a disk fault,
//! snapshots failing) for the error log. [`syncrepl`] makes the server a read replica of an
//! OpenLDAP or Larch provider (RFC 4533 consumer); [`syncprov`] makes it a provider that
//! replicas follow (the session log, persistent searches fed from the change feed; the
//! refresh is a search, `search::sync`). [`cluster`] makes it a node of a cluster whose
//! writes go through an openraft log (`larch_cluster`; docs/cluster.md).
//!
//! Layers, from the bottom up: a module imports only modules listed before it, on its
//! line or an earlier one (`tests/layering.rs` reads this list and checks every
//! `crate::` path of `src/`):
//! 1. `opattrs`, `client`, `identity`, `cert_subject`, `config_error`, `clock`: words every
//!    layer uses, knowing nothing else of the crate;
//! 2. `workers`, `output_budget`: the threads large searches run on, and the bound on the
//!    answers waiting for clients;
//! 3. `error`, `controls`, `response`, `outcome`: result codes, request controls, how an
//!    operation is answered and ends;
//! 4. `select`, `lookup`, `groups`, `uniqueness`: reads of one store version;
//! 5. `acl`, `config`: access control, and the configuration that compiles its rules;
//! 6. `accesslog`, `auditlog`, `monitor`, `tls`, `password`, `bind_throttle`, `ppolicy`, `hooks`, `store_health`, `syncrepl`, `syncprov`, `forwarding`:
//!    what the directory holds;
//! 7. `directory`: the shared state;
//! 8. `report`, `auth`, `dse`, `search`, `ops`, `linearizable`: what monitoring reports,
//!    the operations, and a cluster node's wait before a linearizable read;
//! 9. `session`, `net`, `metrics`, `cluster`: connections, the metrics endpoint, and the
//!    cluster node (`[cluster]`).
//!
//! Every operation ends in one place ([`outcome`]: one encoder for the responses, observers
//! told how it ended); [`accesslog`] is the first observer. [`auditlog`] writes every
//! committed change as LDIF, from the store's change feed.
//!
//! The error log is the `larch` binary's (a `tracing` subscriber); this crate's messages are
//! `tracing` events.
//!
//! [`monitor`] counts operations, connections and binds for `cn=Monitor` and `/metrics`;
//! [`report`] gathers what both show; [`metrics`] serves it to Prometheus.

#![forbid(unsafe_code)]

pub mod accesslog;
pub mod acl;
pub mod auditlog;
pub mod auth;
pub mod bind_throttle;
pub mod cert_subject;
pub mod client;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod config_error;
pub mod controls;
pub mod directory;
pub mod dse;
pub mod error;
pub mod forwarding;
pub mod groups;
pub mod hooks;
pub mod identity;
pub mod linearizable;
pub mod lookup;
pub mod metrics;
pub mod monitor;
pub mod net;
pub mod opattrs;
pub mod ops;
pub mod outcome;
pub mod output_budget;
pub mod password;
pub mod ppolicy;
pub mod report;
pub mod response;
pub mod search;
pub mod select;
pub mod session;
pub mod store_health;
pub mod syncprov;
pub mod syncrepl;
pub mod tls;
pub mod uniqueness;
pub mod workers;
