//! `larch-server`: the network front end and every LDAPv3 operation.
//!
//! How a request flows: [`net`] accepts a connection (counted against the connection
//! limits) and hands it to [`session`], which frames and decodes every complete PDU,
//! dispatches it and coalesces the responses into one socket write. Searches run on a read
//! view of the store ([`search`]: planner, scopes, limits, aliases, referrals, paged
//! results, sort; [`dse`]: the root DSE and `cn=Subschema`); writes ([`ops`]) are prepared
//! on the connection and applied by the store's single writer, then answered once durable.
//! [`tls`] holds the certificate and runs handshakes (`ldaps://`, StartTLS), [`auth`]
//! decides Binds (simple with every password scheme, SASL EXTERNAL and PLAIN, the
//! failed-bind throttle) and the confidentiality policy, [`controls`] reads request
//! controls, [`error`] is the one place
//! where failures become result codes, [`opattrs`] maintains the operational attributes,
//! [`directory`] holds the shared state and sets up a new data directory, [`config`] reads
//! `larch.toml`, [`acl`] decides who may do what (rules, default policy, proxied
//! authorization).
//!
//! Every operation ends in one place ([`outcome`]: one encoder for the responses, observers
//! told how it ended); [`accesslog`] is the first observer.
//!
//! Not built yet: the audit and error logs, `cn=monitor`.

#![forbid(unsafe_code)]

pub mod accesslog;
pub mod acl;
pub mod auth;
pub mod bind_throttle;
pub mod cert_subject;
pub mod client;
pub mod config;
pub mod config_error;
pub mod controls;
pub mod directory;
pub mod dse;
pub mod error;
pub mod hooks;
pub mod identity;
pub mod lookup;
pub mod net;
pub mod opattrs;
pub mod ops;
pub mod outcome;
pub mod password;
pub mod response;
pub mod search;
pub mod select;
pub mod session;
pub mod tls;
