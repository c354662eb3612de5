//! The rules as written: the access-control keys of `larch.toml`, the ordered `[[access]]`
//! rules and the `[access_proxy]` table (who may use the proxied authorization control),
//! which the configuration hands here (`crate::config::access`), as the default policy is
//! (`super::default`). The reference for operators is the `## Access control` section of
//! `docs/security.md`.
//!
//! This module reads the TOML values into [`AccessConfig`], checking everything that needs
//! no schema: the keys of every table (a misspelled key is an error, as everywhere in the
//! file), scope names, access levels, `who` keywords, IP networks, filter syntax, and the
//! named limits. DNs, attribute names and filters are resolved against the schema when the
//! rules are compiled ([`super::AccessRules::compile`]), which
//! [`crate::config::ServerConfig::validate`] runs. Every error names its key with the
//! rule's and the clause's index: `access[2].by[0].peer`.

use larch_proto::OwnedFilter;
use toml::Value;

use super::rule::{IpNet, Keyword, Privileges, Scope};
use crate::config_error::ConfigError;

/// Most `[[access]]` rules: each is looked at in order for every check, so a list longer
/// than this is better written with subtrees and groups.
pub const MAX_ACCESS_RULES: usize = 256;

/// Most `by` clauses in one rule (and entries in `access_proxy.allow`).
pub const MAX_CLAUSES: usize = 64;

/// Most attributes one rule lists in `attrs`.
pub const MAX_RULE_ATTRS: usize = 256;

/// The access-control configuration as written (validated, not yet resolved against the
/// schema). With no rules, the built-in default policy applies
/// ([`super::default_policy`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccessConfig {
    /// The `[[access]]` rules, in order.
    pub rules: Vec<RuleConfig>,
    /// `access_proxy.allow`: who may use the proxied authorization control (the admin
    /// always may).
    pub proxy: Vec<WhoConfig>,
}

/// One `[[access]]` rule as written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleConfig {
    /// `dn`: the rule is about this entry and those below it, per `scope` (`None`: every
    /// entry).
    pub dn: Option<String>,
    /// `scope`: base, one, subtree (default) or children.
    pub scope: Scope,
    /// `filter`: only entries matching it (RFC 4515 string).
    pub filter: Option<String>,
    /// `attrs`: attribute names and the pseudo-attributes `entry` and `children` (`None`:
    /// all of them).
    pub attrs: Option<Vec<String>>,
    /// `by`: the clauses, in order.
    pub by: Vec<ClauseConfig>,
}

/// One `by` clause as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClauseConfig {
    /// Who it is for.
    pub who: WhoConfig,
    /// `access`: the level or privileges granted.
    pub access: Privileges,
}

/// The conditions on the requester, as written; all given ones must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WhoConfig {
    /// `who`: `*`, `anonymous`, `users`, `self` or `admin`.
    pub keyword: Option<Keyword>,
    /// `dn`: the requester's DN lies in `scope` of this DN.
    pub dn: Option<String>,
    /// `scope` of `dn`: base (default), one, subtree or children.
    pub scope: Scope,
    /// `group`: the requester is a member (`member` or `uniqueMember`) of this entry.
    pub group: Option<String>,
    /// `peer`: the client's IP address lies in this network.
    pub peer: Option<IpNet>,
}

/// Reads `[[access]]` and `[access_proxy]`.
pub(crate) fn parse(access: Option<Value>, proxy: Option<Value>) -> Result<AccessConfig, ConfigError> {
    let mut out = AccessConfig::default();
    if let Some(v) = access {
        let Value::Array(rules) = v else {
            return Err(ConfigError::invalid(
                "access",
                "expected a list of `[[access]]` tables",
            ));
        };
        if rules.len() > MAX_ACCESS_RULES {
            return Err(ConfigError::invalid(
                "access",
                format!("{} rules; at most {MAX_ACCESS_RULES}", rules.len()),
            ));
        }
        for (i, r) in rules.into_iter().enumerate() {
            out.rules.push(rule(&format!("access[{i}]"), r)?);
        }
    }
    if let Some(v) = proxy {
        let Value::Table(t) = v else {
            return Err(ConfigError::invalid("access_proxy", "expected a table"));
        };
        for (k, v) in t {
            if k != "allow" {
                return Err(ConfigError::invalid(
                    format!("access_proxy.{k}"),
                    "unknown key; expected `allow`",
                ));
            }
            let list = clause_tables("access_proxy.allow", v)?;
            for (j, c) in list.into_iter().enumerate() {
                let key = format!("access_proxy.allow[{j}]");
                let (who, _) = who(&key, c, false)?;
                if who.group.is_some() {
                    return Err(ConfigError::invalid(
                        format!("{key}.group"),
                        "group membership cannot grant the proxy right (it is decided without reading \
                         the directory); list the DNs, a subtree or a peer network",
                    ));
                }
                if who.keyword == Some(Keyword::SelfEntry) {
                    return Err(ConfigError::invalid(
                        format!("{key}.who"),
                        "`self` names the entry being accessed; the proxy right has none",
                    ));
                }
                out.proxy.push(who);
            }
        }
    }
    Ok(out)
}

fn string(key: &str, v: Value) -> Result<String, ConfigError> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(ConfigError::invalid(
            key,
            format!("expected a string, found {}", other.type_str()),
        )),
    }
}

/// A list of inline tables (`by = [{...}, ...]` or `[[access.by]]`).
fn clause_tables(key: &str, v: Value) -> Result<Vec<toml::Table>, ConfigError> {
    let Value::Array(items) = v else {
        return Err(ConfigError::invalid(
            key,
            "expected a list of tables such as [{ who = \"*\", access = \"read\" }]",
        ));
    };
    if items.is_empty() {
        return Err(ConfigError::invalid(key, "list at least one clause"));
    }
    if items.len() > MAX_CLAUSES {
        return Err(ConfigError::invalid(
            key,
            format!("{} clauses; at most {MAX_CLAUSES}", items.len()),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(j, item)| match item {
            Value::Table(t) => Ok(t),
            other => Err(ConfigError::invalid(
                format!("{key}[{j}]"),
                format!(
                    "expected a table such as {{ who = \"*\", access = \"read\" }}, found {}",
                    other.type_str()
                ),
            )),
        })
        .collect()
}

fn rule(key: &str, v: Value) -> Result<RuleConfig, ConfigError> {
    let Value::Table(t) = v else {
        return Err(ConfigError::invalid(key, "expected a table"));
    };
    let mut r = RuleConfig::default();
    let mut scope_given = false;
    let mut by = None;
    for (k, v) in t {
        let at = format!("{key}.{k}");
        match k.as_str() {
            "dn" => r.dn = Some(string(&at, v)?),
            "scope" => {
                let s = string(&at, v)?;
                r.scope = Scope::parse(&s).ok_or_else(|| {
                    ConfigError::invalid(&at, format!("`{s}`: expected base, one, subtree or children"))
                })?;
                scope_given = true;
            }
            "filter" => {
                let f = string(&at, v)?;
                OwnedFilter::parse(&f)
                    .map_err(|e| ConfigError::invalid(&at, format!("`{f}` is not a filter: {e}")))?;
                r.filter = Some(f);
            }
            "attrs" => {
                let Value::Array(items) = v else {
                    return Err(ConfigError::invalid(&at, "expected a list of attribute names"));
                };
                if items.is_empty() {
                    return Err(ConfigError::invalid(
                        &at,
                        "list at least one attribute (leave the key out for all of them)",
                    ));
                }
                if items.len() > MAX_RULE_ATTRS {
                    return Err(ConfigError::invalid(
                        &at,
                        format!("{} attributes; at most {MAX_RULE_ATTRS}", items.len()),
                    ));
                }
                let mut names = Vec::with_capacity(items.len());
                for (j, item) in items.into_iter().enumerate() {
                    names.push(string(&format!("{at}[{j}]"), item)?);
                }
                r.attrs = Some(names);
            }
            "by" => by = Some(v),
            _ => {
                return Err(ConfigError::invalid(
                    &at,
                    "unknown key; expected one of dn, scope, filter, attrs, by",
                ))
            }
        }
    }
    if scope_given && r.dn.is_none() {
        return Err(ConfigError::invalid(
            format!("{key}.scope"),
            "a scope needs a `dn` (without one the rule is about every entry)",
        ));
    }
    let Some(by) = by else {
        return Err(ConfigError::invalid(
            format!("{key}.by"),
            "missing: list who gets which access, e.g. by = [{ who = \"*\", access = \"read\" }]",
        ));
    };
    let by_key = format!("{key}.by");
    for (j, c) in clause_tables(&by_key, by)?.into_iter().enumerate() {
        let at = format!("{by_key}[{j}]");
        let (who, access) = who(&at, c, true)?;
        let Some(access) = access else {
            return Err(ConfigError::invalid(
                format!("{at}.access"),
                "missing: the level granted (none, disclose, auth, compare, search, read, add, delete, \
                 write, manage) or privileges such as \"=wx\"",
            ));
        };
        r.by.push(ClauseConfig { who, access });
    }
    Ok(r)
}

/// Reads the conditions of a clause (and its `access` when `with_access`).
fn who(key: &str, t: toml::Table, with_access: bool) -> Result<(WhoConfig, Option<Privileges>), ConfigError> {
    let mut w = WhoConfig {
        scope: Scope::Base,
        ..WhoConfig::default()
    };
    let mut access = None;
    let mut scope_given = false;
    for (k, v) in t {
        let at = format!("{key}.{k}");
        match k.as_str() {
            "who" => {
                let s = string(&at, v)?;
                w.keyword = Some(Keyword::parse(&s).ok_or_else(|| {
                    ConfigError::invalid(
                        &at,
                        format!("`{s}`: expected \"*\", \"anonymous\", \"users\", \"self\" or \"admin\""),
                    )
                })?);
            }
            "dn" => w.dn = Some(string(&at, v)?),
            "scope" => {
                let s = string(&at, v)?;
                w.scope = Scope::parse(&s).ok_or_else(|| {
                    ConfigError::invalid(&at, format!("`{s}`: expected base, one, subtree or children"))
                })?;
                scope_given = true;
            }
            "group" => w.group = Some(string(&at, v)?),
            "peer" => {
                let s = string(&at, v)?;
                w.peer = Some(IpNet::parse(&s).map_err(|m| ConfigError::invalid(&at, m))?);
            }
            "access" if with_access => {
                let s = string(&at, v)?;
                access = Some(Privileges::parse(&s).map_err(|m| ConfigError::invalid(&at, m))?);
            }
            _ => {
                let expected = if with_access {
                    "who, dn, scope, group, peer, access"
                } else {
                    "who, dn, scope, peer"
                };
                return Err(ConfigError::invalid(
                    &at,
                    format!("unknown key; expected one of {expected}"),
                ));
            }
        }
    }
    if scope_given && w.dn.is_none() {
        return Err(ConfigError::invalid(
            format!("{key}.scope"),
            "a scope needs a `dn`",
        ));
    }
    if w.keyword.is_none() && w.dn.is_none() && w.group.is_none() && w.peer.is_none() {
        return Err(ConfigError::invalid(
            key,
            "say who the clause is for: `who`, `dn`, `group` or `peer` (e.g. who = \"*\")",
        ));
    }
    Ok((w, access))
}
