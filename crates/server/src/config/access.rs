//! The access-control keys of `larch.toml`: the ordered `[[access]]` rules and the
//! `[access_proxy]` table. Access control owns its rule language, so the tables are read
//! by [`crate::acl::written`] (which the default policy is read with too); the
//! configuration keeps them in [`AccessConfig`] and compiles them against the schema in
//! [`super::ServerConfig::validate`].

pub(crate) use crate::acl::written::parse;
pub use crate::acl::written::{
    AccessConfig, ClauseConfig, RuleConfig, WhoConfig, MAX_ACCESS_RULES, MAX_CLAUSES, MAX_RULE_ATTRS,
};
