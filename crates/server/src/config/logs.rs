//! `[access_log]`: the access log's file, format, detail and rotation; `[audit_log]`: the
//! audit log's file and rotation.
//!
//! `[access_log]` keys (the log itself is described in [`crate::accesslog`] and
//! `docs/logs.md`):
//! - `enabled` (true): on by default, as in 389 Directory Server;
//! - `path` (`"<data_dir>/logs/access"` when empty): the file; a relative path is taken
//!   from the configuration file's directory;
//! - `format` (`"389"`): `"389"`, 389 Directory Server's text lines (its `logconv` reads
//!   them), or `"json"`, 389 DS 3.x's JSON lines;
//! - `level` (`"default"`): `"results"` (connections and results), `"default"` (also each
//!   request with its main arguments, as 389 logs by default), `"full"` (every argument,
//!   the controls, the diagnostic message of every result);
//! - `max_size_mb` (100): the file is rotated once this many megabytes were written to
//!   it (0: never by size);
//! - `rotate_every` (`"1d"`): the file is rotated once it is this old (`"0"`: never by
//!   time);
//! - `keep` (10): rotated files kept; older ones are removed.
//!
//! `[audit_log]` keys (the log is described in [`crate::auditlog`] and `docs/logs.md`):
//! - `enabled` (false): off by default, as in 389 Directory Server and OpenLDAP;
//! - `path` (`"<data_dir>/logs/audit"` when empty), `max_size_mb` (100), `rotate_every`
//!   (`"1d"`), `keep` (10): as for the access log.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::raw::RawDuration;
use super::ConfigError;

/// Default `access_log.max_size_mb`: 389 Directory Server's `nsslapd-accesslog-maxlogsize`.
pub const DEFAULT_ACCESS_LOG_MAX_SIZE_MB: u64 = 100;

/// Default `access_log.rotate_every`: 389's `nsslapd-accesslog-logrotationtime` of a day.
pub const DEFAULT_ACCESS_LOG_ROTATE_EVERY: Duration = Duration::from_secs(24 * 3600);

/// Default `access_log.keep`: 389's `nsslapd-accesslog-maxlogsperdir`.
pub const DEFAULT_ACCESS_LOG_KEEP: u32 = 10;

/// Largest `access_log.max_size_mb` (1 TiB): beyond it rotation by size means nothing.
pub const MAX_ACCESS_LOG_SIZE_MB: u64 = 1 << 20;

/// Most `access_log.keep`: each rotation lists the log's directory and sorts its files.
pub const MAX_ACCESS_LOG_KEEP: u32 = 10_000;

/// The file's name below the data directory when `access_log.path` is empty.
pub const DEFAULT_ACCESS_LOG_FILE: &str = "logs/access";

/// `access_log.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessLogFormat {
    /// 389 Directory Server's text format.
    Text389,
    /// 389 Directory Server 3.x's JSON lines.
    Json,
}

/// `access_log.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AccessLogLevel {
    /// Connections (opened, TLS, refused, closed) and each operation's result.
    Results,
    /// Also each request with its main arguments (389's default).
    Default,
    /// Every argument, the controls, and every result's message and matched DN.
    Full,
}

/// `[access_log]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessLogSettings {
    /// Whether the server writes an access log.
    pub enabled: bool,
    /// The file (`None`: [`DEFAULT_ACCESS_LOG_FILE`] below the data directory).
    pub path: Option<PathBuf>,
    /// The line format.
    pub format: AccessLogFormat,
    /// What is logged.
    pub level: AccessLogLevel,
    /// Rotate after this many octets written to the file (0: never by size).
    pub max_size: u64,
    /// Rotate once the file is this old (`None`: never by time).
    pub rotate_every: Option<Duration>,
    /// Rotated files kept.
    pub keep: u32,
}

impl Default for AccessLogSettings {
    fn default() -> Self {
        AccessLogSettings {
            enabled: true,
            path: None,
            format: AccessLogFormat::Text389,
            level: AccessLogLevel::Default,
            max_size: DEFAULT_ACCESS_LOG_MAX_SIZE_MB << 20,
            rotate_every: Some(DEFAULT_ACCESS_LOG_ROTATE_EVERY),
            keep: DEFAULT_ACCESS_LOG_KEEP,
        }
    }
}

/// `[access_log]` as serde reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAccessLog {
    pub enabled: Option<bool>,
    pub path: Option<String>,
    pub format: Option<String>,
    pub level: Option<String>,
    pub max_size_mb: Option<u64>,
    pub rotate_every: Option<RawDuration>,
    pub keep: Option<u64>,
}

impl AccessLogSettings {
    /// The settings of an `[access_log]` table; keys left out keep their defaults.
    pub(crate) fn from_raw(raw: RawAccessLog) -> Result<AccessLogSettings, ConfigError> {
        let mut s = AccessLogSettings::default();
        if let Some(b) = raw.enabled {
            s.enabled = b;
        }
        if let Some(p) = raw.path {
            s.path = (!p.is_empty()).then(|| PathBuf::from(p));
        }
        if let Some(f) = raw.format {
            s.format = match f.as_str() {
                "389" => AccessLogFormat::Text389,
                "json" => AccessLogFormat::Json,
                other => {
                    return Err(ConfigError::invalid(
                        "access_log.format",
                        format!("`{other}` is not a format: use \"389\" or \"json\""),
                    ))
                }
            };
        }
        if let Some(l) = raw.level {
            s.level = match l.as_str() {
                "results" => AccessLogLevel::Results,
                "default" => AccessLogLevel::Default,
                "full" => AccessLogLevel::Full,
                other => {
                    return Err(ConfigError::invalid(
                        "access_log.level",
                        format!("`{other}` is not a level: use \"results\", \"default\" or \"full\""),
                    ))
                }
            };
        }
        let rotation = (&mut s.max_size, &mut s.rotate_every, &mut s.keep);
        read_rotation(
            "access_log",
            raw.max_size_mb,
            raw.rotate_every,
            raw.keep,
            rotation,
        )?;
        s.validate()?;
        Ok(s)
    }

    /// Checks the bounds of every key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_rotation("access_log", self.keep, self.rotate_every)
    }
}

/// Reads the rotation keys every log table has (`max_size_mb`, `rotate_every`, `keep`)
/// into `(max_size, rotate_every, keep)`; errors name the key below `table`.
fn read_rotation(
    table: &str,
    max_size_mb: Option<u64>,
    rotate_every: Option<RawDuration>,
    keep: Option<u64>,
    into: (&mut u64, &mut Option<Duration>, &mut u32),
) -> Result<(), ConfigError> {
    if let Some(mb) = max_size_mb {
        if mb > MAX_ACCESS_LOG_SIZE_MB {
            return Err(ConfigError::invalid(
                format!("{table}.max_size_mb"),
                format!("{mb} is more than {MAX_ACCESS_LOG_SIZE_MB}"),
            ));
        }
        *into.0 = mb << 20;
    }
    if let Some(d) = rotate_every {
        let d = super::duration(&format!("{table}.rotate_every"), &d)?;
        *into.1 = (!d.is_zero()).then_some(d);
    }
    if let Some(k) = keep {
        *into.2 = u32::try_from(k).unwrap_or(u32::MAX);
    }
    Ok(())
}

/// Checks the bounds of the rotation keys of `table`.
fn check_rotation(table: &str, keep: u32, rotate_every: Option<Duration>) -> Result<(), ConfigError> {
    if keep > MAX_ACCESS_LOG_KEEP {
        return Err(ConfigError::invalid(
            format!("{table}.keep"),
            format!("{keep} is more than {MAX_ACCESS_LOG_KEEP}"),
        ));
    }
    if rotate_every.is_some_and(|d| d < Duration::from_secs(1)) {
        return Err(ConfigError::invalid(
            format!("{table}.rotate_every"),
            "must be at least 1s (or 0 for never)",
        ));
    }
    Ok(())
}

/// Default `audit_log.max_size_mb`: as the access log's.
pub const DEFAULT_AUDIT_LOG_MAX_SIZE_MB: u64 = DEFAULT_ACCESS_LOG_MAX_SIZE_MB;

/// Default `audit_log.rotate_every`: as the access log's.
pub const DEFAULT_AUDIT_LOG_ROTATE_EVERY: Duration = DEFAULT_ACCESS_LOG_ROTATE_EVERY;

/// Default `audit_log.keep`: as the access log's.
pub const DEFAULT_AUDIT_LOG_KEEP: u32 = DEFAULT_ACCESS_LOG_KEEP;

/// The file's name below the data directory when `audit_log.path` is empty.
pub const DEFAULT_AUDIT_LOG_FILE: &str = "logs/audit";

/// `[audit_log]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditLogSettings {
    /// Whether the server writes an audit log.
    pub enabled: bool,
    /// The file (`None`: [`DEFAULT_AUDIT_LOG_FILE`] below the data directory).
    pub path: Option<PathBuf>,
    /// Rotate after this many octets written to the file (0: never by size).
    pub max_size: u64,
    /// Rotate once the file is this old (`None`: never by time).
    pub rotate_every: Option<Duration>,
    /// Rotated files kept.
    pub keep: u32,
}

impl Default for AuditLogSettings {
    fn default() -> Self {
        AuditLogSettings {
            enabled: false,
            path: None,
            max_size: DEFAULT_AUDIT_LOG_MAX_SIZE_MB << 20,
            rotate_every: Some(DEFAULT_AUDIT_LOG_ROTATE_EVERY),
            keep: DEFAULT_AUDIT_LOG_KEEP,
        }
    }
}

/// `[audit_log]` as serde reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuditLog {
    pub enabled: Option<bool>,
    pub path: Option<String>,
    pub max_size_mb: Option<u64>,
    pub rotate_every: Option<RawDuration>,
    pub keep: Option<u64>,
}

impl AuditLogSettings {
    /// The settings of an `[audit_log]` table; keys left out keep their defaults.
    pub(crate) fn from_raw(raw: RawAuditLog) -> Result<AuditLogSettings, ConfigError> {
        let mut s = AuditLogSettings::default();
        if let Some(b) = raw.enabled {
            s.enabled = b;
        }
        if let Some(p) = raw.path {
            s.path = (!p.is_empty()).then(|| PathBuf::from(p));
        }
        let rotation = (&mut s.max_size, &mut s.rotate_every, &mut s.keep);
        read_rotation("audit_log", raw.max_size_mb, raw.rotate_every, raw.keep, rotation)?;
        s.validate()?;
        Ok(s)
    }

    /// Checks the bounds of every key (those of `[access_log]`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_rotation("audit_log", self.keep, self.rotate_every)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_convert_and_bad_values_name_their_key() {
        let s = AccessLogSettings::from_raw(RawAccessLog {
            format: Some("json".into()),
            level: Some("full".into()),
            max_size_mb: Some(0),
            keep: Some(3),
            path: Some(String::new()),
            ..RawAccessLog::default()
        })
        .unwrap();
        assert_eq!(s.format, AccessLogFormat::Json);
        assert_eq!(s.level, AccessLogLevel::Full);
        assert_eq!((s.max_size, s.keep, s.path), (0, 3, None));
        for (raw, key) in [
            (
                RawAccessLog {
                    format: Some("xml".into()),
                    ..RawAccessLog::default()
                },
                "access_log.format",
            ),
            (
                RawAccessLog {
                    level: Some("verbose".into()),
                    ..RawAccessLog::default()
                },
                "access_log.level",
            ),
            (
                RawAccessLog {
                    keep: Some(1_000_000),
                    ..RawAccessLog::default()
                },
                "access_log.keep",
            ),
            (
                RawAccessLog {
                    max_size_mb: Some(u64::MAX),
                    ..RawAccessLog::default()
                },
                "access_log.max_size_mb",
            ),
        ] {
            let e = AccessLogSettings::from_raw(raw).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn audit_log_keys_convert_and_bad_values_name_their_key() {
        assert!(!AuditLogSettings::default().enabled);
        let s = AuditLogSettings::from_raw(RawAuditLog {
            enabled: Some(true),
            max_size_mb: Some(0),
            rotate_every: Some(RawDuration::Text("0".into())),
            keep: Some(3),
            path: Some("audit.ldif".into()),
        })
        .unwrap();
        assert!(s.enabled);
        assert_eq!((s.max_size, s.rotate_every, s.keep), (0, None, 3));
        assert_eq!(s.path, Some(PathBuf::from("audit.ldif")));
        for (raw, key) in [
            (
                RawAuditLog {
                    keep: Some(1_000_000),
                    ..RawAuditLog::default()
                },
                "audit_log.keep",
            ),
            (
                RawAuditLog {
                    max_size_mb: Some(u64::MAX),
                    ..RawAuditLog::default()
                },
                "audit_log.max_size_mb",
            ),
            (
                RawAuditLog {
                    rotate_every: Some(RawDuration::Text("500ms".into())),
                    ..RawAuditLog::default()
                },
                "audit_log.rotate_every",
            ),
        ] {
            let e = AuditLogSettings::from_raw(raw).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
