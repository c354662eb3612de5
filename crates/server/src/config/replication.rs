//! `[[replication]]`: the OpenLDAP providers this server follows as a read replica (RFC 4533
//! syncrepl consumer, `crate::syncrepl`), one table per replicated subtree.
//!
//! Keys (`docs/configuration.md`, "`[[replication]]`"; `docs/replication.md`):
//! - `rid` (required): the replica ID, 1..=999, unique among the tables (OpenLDAP's `rid`);
//! - `provider` (required): `ldap://host[:port]` or `ldaps://host[:port]`;
//! - `bind_dn` (required) and exactly one of `credentials` or `credentials_file` (a file
//!   whose first line is the password): the simple Bind the consumer makes;
//! - `starttls` (false), `ca_file` (required with TLS: the provider's certificate is always
//!   verified), `client_cert` and `client_key` (both or neither): TLS to the provider;
//! - `base` (required): the subtree replicated, a suffix or inside one;
//! - `filter` (`(objectClass=*)`), `attributes` ([`DEFAULT_ATTRIBUTES`]), `scope` (`sub`; `one`,
//!   `base`);
//! - `mode` (`refreshAndPersist`; `refreshOnly`), `interval` (`60s`: refreshOnly's period);
//! - `retry` (`"5s 12, 60s +"`): after a failure, wait the first interval up to its count
//!   of times, then the next; `+` repeats the last pair forever; a schedule without `+`
//!   that runs out stops the consumer (it says so in the error log);
//! - `referral` (the provider URL): where clients that try to write are sent;
//! - `writes` (`"referral"`; `"chain"`): what a client write inside the subtree gets: a
//!   referral, or forwarded to the provider on the client's behalf (`crate::syncrepl::chain`);
//! - `start_from` (`"refresh"`; `"snapshot"`): how a replica with an empty data directory
//!   gets its first copy: a refresh (every entry as a search result), or the snapshot file
//!   of a Larch provider (`crate::syncrepl::bootstrap`); at most one table says `snapshot`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use larch_proto::OwnedFilter;
use serde::Deserialize;

use super::duration::parse_duration;
use super::raw::RawDuration;
use super::{ConfigError, ListenUrl};

/// Most `[[replication]]` tables.
pub const MAX_REPLICATION_TABLES: usize = 64;
/// Most pairs in a `retry` schedule.
pub const MAX_RETRY_PAIRS: usize = 16;
/// Shortest retry interval: a provider that refuses at once is never called in a busy loop.
pub const MIN_RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// Shortest refreshOnly interval.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(1);
/// The attributes a consumer asks for unless `attributes` says otherwise: every user and
/// operational attribute, and transitiveMemberOf, which a Larch provider sends only when
/// named (a slapd provider ignores the name).
pub const DEFAULT_ATTRIBUTES: [&str; 3] = ["*", "+", "transitiveMemberOf"];

/// Most attributes a table lists.
pub const MAX_REPLICATION_ATTRIBUTES: usize = 256;
/// Longest credentials file read (its first line is the password).
pub const MAX_CREDENTIALS_FILE_BYTES: u64 = 64 * 1024;
/// Default `interval`.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// Default `retry`.
pub const DEFAULT_RETRY: &str = "5s 12, 60s +";

/// `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicationMode {
    /// `refreshAndPersist`: one search that stays open and streams changes.
    RefreshAndPersist,
    /// `refreshOnly`: a refresh every `interval`.
    RefreshOnly,
}

/// `scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicationScope {
    /// The base entry only.
    Base,
    /// Its children.
    One,
    /// The base entry and everything below it.
    Sub,
}

/// Where the password comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// `credentials`, written in the file.
    Inline(String),
    /// `credentials_file`: its first line, read when the consumer connects.
    File(PathBuf),
}

/// One step of a retry schedule: wait `interval`, `count` times (`None`: forever).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryStep {
    /// The wait.
    pub interval: Duration,
    /// How many times; `None` for `+`.
    pub count: Option<u32>,
}

/// A retry schedule (`retry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(pub Vec<RetryStep>);

impl RetrySchedule {
    /// Parses `"5s 10, 60s +"` (pairs separated by commas; OpenLDAP's `"5 10 60 +"` with
    /// units). Intervals are at least [`MIN_RETRY_INTERVAL`]; `+` only in the last pair.
    pub fn parse(text: &str) -> Result<RetrySchedule, String> {
        let mut steps = Vec::new();
        let pairs: Vec<&str> = text.split(',').map(str::trim).collect();
        if pairs.len() > MAX_RETRY_PAIRS {
            return Err(format!("at most {MAX_RETRY_PAIRS} pairs"));
        }
        for (i, pair) in pairs.iter().enumerate() {
            let words: Vec<&str> = pair.split_whitespace().collect();
            let [interval, count] = words[..] else {
                return Err(format!(
                    "`{pair}`: each pair is an interval and a count or `+`, as in \"5s 10, 60s +\""
                ));
            };
            let interval = parse_duration(interval).map_err(|e| format!("`{interval}`: {e}"))?;
            if interval < MIN_RETRY_INTERVAL {
                return Err(format!("`{pair}`: the interval is at least 1s"));
            }
            let count = match count {
                "+" if i + 1 == pairs.len() => None,
                "+" => return Err(format!("`{pair}`: `+` (forever) only in the last pair")),
                n => Some(
                    n.parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("`{n}`: a count is a number from 1, or `+`"))?,
                ),
            };
            steps.push(RetryStep { interval, count });
        }
        Ok(RetrySchedule(steps))
    }

    /// The wait before retry number `attempt` (0 for the first retry after a failure);
    /// `None` when the schedule has run out.
    pub fn wait(&self, attempt: u32) -> Option<Duration> {
        let mut left = attempt;
        for s in &self.0 {
            match s.count {
                None => return Some(s.interval),
                Some(n) if left < n => return Some(s.interval),
                Some(n) => left -= n,
            }
        }
        None
    }
}

/// One `[[replication]]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationSettings {
    /// `rid`.
    pub rid: u16,
    /// `provider`, as written.
    pub provider: String,
    /// `provider`, parsed.
    pub provider_url: ListenUrl,
    /// `bind_dn`.
    pub bind_dn: String,
    /// `credentials` or `credentials_file`.
    pub credentials: Credentials,
    /// `starttls`.
    pub starttls: bool,
    /// `ca_file`.
    pub ca_file: Option<PathBuf>,
    /// `client_cert`.
    pub client_cert: Option<PathBuf>,
    /// `client_key`.
    pub client_key: Option<PathBuf>,
    /// `base`.
    pub base: String,
    /// `filter`.
    pub filter: String,
    /// `attributes`.
    pub attributes: Vec<String>,
    /// `scope`.
    pub scope: ReplicationScope,
    /// `mode`.
    pub mode: ReplicationMode,
    /// `interval`.
    pub interval: Duration,
    /// `retry`.
    pub retry: RetrySchedule,
    /// `referral`.
    pub referral: String,
    /// `start_from`.
    pub start_from: StartFrom,
    /// `writes`.
    pub writes: ReplicaWrites,
}

/// What a client write inside a replicated subtree gets (`writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplicaWrites {
    /// A referral to the provider (RFC 4511 `referral`, 10).
    #[default]
    Referral,
    /// Forwarded to the provider, with the client's identity in a Proxied Authorization
    /// control (RFC 4370), as OpenLDAP's chain overlay does.
    Chain,
}

/// How a replica with an empty data directory gets its first copy (`start_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartFrom {
    /// A refresh: the provider sends every entry.
    #[default]
    Refresh,
    /// The provider's snapshot file (a Larch provider), then the changes after it.
    Snapshot,
}

/// One `[[replication]]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReplication {
    pub rid: Option<i64>,
    pub provider: Option<String>,
    pub bind_dn: Option<String>,
    pub credentials: Option<String>,
    pub credentials_file: Option<String>,
    pub starttls: Option<bool>,
    pub ca_file: Option<String>,
    pub client_cert: Option<String>,
    pub client_key: Option<String>,
    pub base: Option<String>,
    pub filter: Option<String>,
    pub attributes: Option<Vec<String>>,
    pub scope: Option<String>,
    pub mode: Option<String>,
    pub interval: Option<RawDuration>,
    pub retry: Option<String>,
    pub referral: Option<String>,
    pub start_from: Option<String>,
    pub writes: Option<String>,
}

impl ReplicationSettings {
    /// Every table, checked on its own and together (unique `rid`, no two bases within one
    /// another).
    pub(crate) fn list_from_raw(raw: Vec<RawReplication>) -> Result<Vec<ReplicationSettings>, ConfigError> {
        if raw.len() > MAX_REPLICATION_TABLES {
            return Err(ConfigError::invalid(
                "replication",
                format!("at most {MAX_REPLICATION_TABLES} tables"),
            ));
        }
        let mut out: Vec<ReplicationSettings> = Vec::with_capacity(raw.len());
        for (i, r) in raw.into_iter().enumerate() {
            let s = ReplicationSettings::from_raw(i, r)?;
            if let Some(other) = out.iter().position(|o| o.rid == s.rid) {
                return Err(ConfigError::invalid(
                    format!("replication[{i}].rid"),
                    format!("rid {} is also replication[{other}]'s", s.rid),
                ));
            }
            let snapshot = |o: &ReplicationSettings| o.start_from == StartFrom::Snapshot;
            if let Some(other) = out.iter().position(snapshot).filter(|_| snapshot(&s)) {
                return Err(ConfigError::invalid(
                    format!("replication[{i}].start_from"),
                    format!("only one table may start from a snapshot, and replication[{other}] does"),
                ));
            }
            out.push(s);
        }
        Ok(out)
    }

    fn from_raw(i: usize, r: RawReplication) -> Result<ReplicationSettings, ConfigError> {
        let key = |k: &str| format!("replication[{i}].{k}");
        let required = |k: &str, v: Option<String>| {
            v.filter(|s| !s.trim().is_empty())
                .ok_or_else(|| ConfigError::invalid(key(k), "required"))
        };
        let rid = match r.rid {
            Some(n) if (1..=999).contains(&n) => n as u16,
            Some(n) => {
                return Err(ConfigError::invalid(
                    key("rid"),
                    format!("{n} is outside 1 to 999"),
                ))
            }
            None => return Err(ConfigError::invalid(key("rid"), "required")),
        };
        let provider = required("provider", r.provider)?;
        let provider_url =
            ListenUrl::parse(&provider).map_err(|e| ConfigError::invalid(key("provider"), e))?;
        let bind_dn = required("bind_dn", r.bind_dn)?;
        let credentials = match (r.credentials, r.credentials_file) {
            (Some(c), None) => Credentials::Inline(c),
            (None, Some(f)) => Credentials::File(PathBuf::from(f)),
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    key("credentials_file"),
                    "give `credentials` or `credentials_file`, not both",
                ))
            }
            (None, None) => {
                return Err(ConfigError::invalid(
                    key("credentials"),
                    "required (or `credentials_file`)",
                ))
            }
        };
        let starttls = r.starttls.unwrap_or(false);
        if starttls && provider_url.tls {
            return Err(ConfigError::invalid(
                key("starttls"),
                "an ldaps:// provider is TLS from the start; StartTLS is for ldap://",
            ));
        }
        let tls = starttls || provider_url.tls;
        let (client_cert, client_key) = match (r.client_cert, r.client_key) {
            (Some(c), Some(k)) => (Some(PathBuf::from(c)), Some(PathBuf::from(k))),
            (None, None) => (None, None),
            (Some(_), None) => {
                return Err(ConfigError::invalid(
                    key("client_key"),
                    "required with client_cert",
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::invalid(
                    key("client_cert"),
                    "required with client_key",
                ))
            }
        };
        if tls && r.ca_file.is_none() {
            return Err(ConfigError::invalid(
                key("ca_file"),
                "required with TLS: the CA certificates (PEM) that issue the provider's certificate",
            ));
        }
        if !tls {
            for (k, given) in [
                ("ca_file", r.ca_file.is_some()),
                ("client_cert", client_cert.is_some()),
            ] {
                if given {
                    return Err(ConfigError::invalid(
                        key(k),
                        "only with TLS: an ldaps:// provider or starttls = true",
                    ));
                }
            }
        }
        let base = required("base", r.base)?;
        let filter = r.filter.unwrap_or_else(|| "(objectClass=*)".to_string());
        OwnedFilter::parse(&filter).map_err(|e| ConfigError::invalid(key("filter"), e.to_string()))?;
        let attributes = r
            .attributes
            .unwrap_or_else(|| DEFAULT_ATTRIBUTES.iter().map(|a| a.to_string()).collect());
        if attributes.len() > MAX_REPLICATION_ATTRIBUTES {
            return Err(ConfigError::invalid(
                key("attributes"),
                format!("at most {MAX_REPLICATION_ATTRIBUTES} attributes"),
            ));
        }
        let scope = match r.scope.as_deref() {
            None | Some("sub") => ReplicationScope::Sub,
            Some("one") => ReplicationScope::One,
            Some("base") => ReplicationScope::Base,
            Some(other) => {
                return Err(ConfigError::invalid(
                    key("scope"),
                    format!("`{other}`: expected \"sub\", \"one\" or \"base\""),
                ))
            }
        };
        let mode = match r.mode.as_deref() {
            None | Some("refreshAndPersist") => ReplicationMode::RefreshAndPersist,
            Some("refreshOnly") => ReplicationMode::RefreshOnly,
            Some(other) => {
                return Err(ConfigError::invalid(
                    key("mode"),
                    format!("`{other}`: expected \"refreshAndPersist\" or \"refreshOnly\""),
                ))
            }
        };
        let interval = match r.interval {
            None => DEFAULT_REFRESH_INTERVAL,
            Some(d) => {
                let d = super::duration(&key("interval"), &d)?;
                if d < MIN_REFRESH_INTERVAL {
                    return Err(ConfigError::invalid(key("interval"), "at least 1s"));
                }
                d
            }
        };
        let retry = RetrySchedule::parse(r.retry.as_deref().unwrap_or(DEFAULT_RETRY))
            .map_err(|e| ConfigError::invalid(key("retry"), e))?;
        let start_from = match r.start_from.as_deref() {
            None | Some("refresh") => StartFrom::Refresh,
            Some("snapshot") => StartFrom::Snapshot,
            Some(other) => {
                return Err(ConfigError::invalid(
                    key("start_from"),
                    format!("`{other}`: expected \"refresh\" or \"snapshot\""),
                ))
            }
        };
        let writes = match r.writes.as_deref() {
            None | Some("referral") => ReplicaWrites::Referral,
            Some("chain") => ReplicaWrites::Chain,
            Some(other) => {
                return Err(ConfigError::invalid(
                    key("writes"),
                    format!("`{other}`: expected \"referral\" or \"chain\""),
                ))
            }
        };
        let referral = r.referral.unwrap_or_else(|| provider.clone());
        ListenUrl::parse(referral.trim_end_matches('/'))
            .map_err(|e| ConfigError::invalid(key("referral"), e))?;
        Ok(ReplicationSettings {
            rid,
            provider,
            provider_url,
            bind_dn,
            credentials,
            starttls,
            ca_file: r.ca_file.map(PathBuf::from),
            client_cert,
            client_key,
            base,
            filter,
            attributes,
            scope,
            mode,
            interval,
            retry,
            referral,
            start_from,
            writes,
        })
    }

    /// True when the connection to the provider uses TLS.
    pub fn uses_tls(&self) -> bool {
        self.starttls || self.provider_url.tls
    }

    /// Takes relative paths from `base` (the configuration file's directory).
    pub(crate) fn resolve_paths(&mut self, base: &Path) {
        if let Credentials::File(f) = &mut self.credentials {
            *f = base.join(&*f);
        }
        for p in [&mut self.ca_file, &mut self.client_cert, &mut self.client_key]
            .into_iter()
            .flatten()
        {
            *p = base.join(&*p);
        }
    }

    /// The base normalized through `schema`; it must be one of `suffixes` or inside one.
    pub fn normalized_base(&self, schema: &Schema, suffixes: &[NormDn]) -> Result<NormDn, String> {
        let (_, norm) = NormDn::parse(self.base.as_bytes(), schema)
            .map_err(|e| format!("`{}` is not a DN: {e}", self.base))?;
        if !suffixes.iter().any(|s| norm.is_within(s)) {
            return Err(format!(
                "`{}` is not one of the server's suffixes nor inside one",
                self.base
            ));
        }
        Ok(norm)
    }
}

/// Checks every table against the schema and the suffixes: each base inside a suffix, no
/// base inside another table's.
pub(crate) fn validate(
    list: &[ReplicationSettings],
    schema: &Schema,
    suffixes: &[NormDn],
) -> Result<(), ConfigError> {
    let mut bases: Vec<NormDn> = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let base = s
            .normalized_base(schema, suffixes)
            .map_err(|e| ConfigError::invalid(format!("replication[{i}].base"), e))?;
        if let Some(j) = bases.iter().position(|b| base.is_within(b) || b.is_within(&base)) {
            return Err(ConfigError::invalid(
                format!("replication[{i}].base"),
                format!("overlaps replication[{j}].base: one subtree has one provider"),
            ));
        }
        bases.push(base);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_schedules() {
        let s = RetrySchedule::parse("5s 2, 60s +").unwrap();
        let waits: Vec<_> = (0..5).map(|a| s.wait(a).map(|d| d.as_secs())).collect();
        assert_eq!(waits, [Some(5), Some(5), Some(60), Some(60), Some(60)]);
        let s = RetrySchedule::parse("1s 1, 2s 1").unwrap();
        assert_eq!(s.wait(0), Some(Duration::from_secs(1)));
        assert_eq!(s.wait(1), Some(Duration::from_secs(2)));
        assert_eq!(s.wait(2), None);
        assert_eq!(s.wait(u32::MAX), None);
        for bad in ["", "5s", "5s +, 6s 1", "0s +", "5 +", "5s 0", "5s -1", "5s 1 2"] {
            assert!(RetrySchedule::parse(bad).is_err(), "{bad}");
        }
        assert!(RetrySchedule::parse(DEFAULT_RETRY).is_ok());
    }
}
