//! The file as serde reads it: every key optional (a missing key takes its default), every
//! table closed (`deny_unknown_fields`, so a misspelled key is an error rather than a
//! silently ignored line). Values are checked and converted in [`super::ServerConfig`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    pub server: Option<RawServer>,
    pub directory: Option<RawDirectory>,
    pub schema: Option<RawSchema>,
    pub store: Option<RawStore>,
    pub indexes: Option<BTreeMap<String, Vec<String>>>,
    pub limits: Option<RawLimits>,
    pub tls: Option<super::tls::RawTls>,
    pub security: Option<super::security::RawSecurity>,
    pub sasl: Option<super::sasl::RawSasl>,
    pub password: Option<super::password::RawPassword>,
    pub bind_throttle: Option<super::bind_throttle::RawBindThrottle>,
    pub access_log: Option<super::logs::RawAccessLog>,
    pub audit_log: Option<super::logs::RawAuditLog>,
    pub error_log: Option<super::error_log::RawErrorLog>,
    pub monitor: Option<super::monitor::RawMonitor>,
    pub metrics: Option<super::monitor::RawMetrics>,
    pub groups: Option<super::groups::RawGroups>,
    pub sync_provider: Option<super::sync_provider::RawSyncProvider>,
    pub uniqueness: Option<super::uniqueness::RawUniqueness>,
    pub password_policy: Option<super::password_policy::RawPasswordPolicy>,
    /// `[[replication]]`.
    pub replication: Option<Vec<super::replication::RawReplication>>,
    pub cluster: Option<super::cluster::RawCluster>,
    /// `[[access]]`, read by `super::access` (which names each rule's keys itself).
    pub access: Option<toml::Value>,
    /// `[access_proxy]`, read by `super::access`.
    pub access_proxy: Option<toml::Value>,
}

/// `[server]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    pub listen: Option<Vec<String>>,
    pub data_dir: Option<String>,
    pub worker_threads: Option<u64>,
}

/// `[directory]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDirectory {
    pub suffix: Option<String>,
    pub extra_suffixes: Option<Vec<String>>,
    pub admin_dn: Option<String>,
    pub admin_password_env: Option<String>,
    pub allow_anonymous_bind: Option<bool>,
    pub allow_unauthenticated_bind: Option<bool>,
}

/// `[schema]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSchema {
    pub builtin: Option<String>,
    pub files: Option<Vec<String>>,
}

/// `[store]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStore {
    pub sync: Option<String>,
    pub batch_window_ms: Option<u64>,
    pub snapshot_interval: Option<RawDuration>,
    pub snapshot_after_records: Option<u64>,
    pub load_threads: Option<u64>,
}

/// `[limits]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub max_pdu_bytes: Option<u64>,
    pub max_connections: Option<u64>,
    pub max_connections_per_ip: Option<u64>,
    pub max_ops_per_connection: Option<u64>,
    pub idle_timeout: Option<RawDuration>,
    pub write_timeout: Option<RawDuration>,
    pub size_limit: Option<u64>,
    pub time_limit: Option<RawDuration>,
    pub lookthrough_limit: Option<u64>,
}

/// A duration as written: a string with units, or an integer counting seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RawDuration {
    /// An integer: seconds.
    Secs(i64),
    /// A string such as `"15m"`.
    Text(String),
}

impl<'de> Deserialize<'de> for RawDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"30s\", \"15m\", \"24h\", \"0\", or an integer of seconds")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawDuration, E> {
                Ok(RawDuration::Secs(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawDuration, E> {
                Ok(RawDuration::Secs(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDuration, E> {
                Ok(RawDuration::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
