//! `[error_log]`: where the server's own messages go, in which format, from which level.
//!
//! Keys (the log itself is described in `docs/logs.md`; `larch serve` installs it):
//! - `path` (`""`): empty means standard error; otherwise a file, taken from the
//!   configuration file's directory when relative (its directory is created);
//! - `format` (`"text"`): `"text"`, one line per message (time, level, where, the message
//!   and its fields), or `"json"`, one JSON object per line;
//! - `level` (`"info"`): the least severe messages written: `"error"`, `"warn"`, `"info"`,
//!   `"debug"` or `"trace"`. SIGHUP reads it again; the other keys take effect at the next
//!   start.

use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

use super::ConfigError;

/// `error_log.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorLogFormat {
    /// One line of text per message.
    Text,
    /// One JSON object per line.
    Json,
}

impl ErrorLogFormat {
    /// The name as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorLogFormat::Text => "text",
            ErrorLogFormat::Json => "json",
        }
    }
}

/// `error_log.level`: the least severe messages written, from the most severe level
/// (`Error`) to the least (`Trace`); a level writes the messages of every level before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorLogLevel {
    /// Failures: something did not happen that should have.
    Error,
    /// Also what an operator should look at (a cut log tail, a reset password).
    Warn,
    /// Also the server's life: what it loaded, where it listens, reloads, stopping.
    Info,
    /// Also details useful when looking for a problem.
    Debug,
    /// Everything.
    Trace,
}

impl ErrorLogLevel {
    /// Every level, most severe first.
    pub const ALL: [ErrorLogLevel; 5] = [
        ErrorLogLevel::Error,
        ErrorLogLevel::Warn,
        ErrorLogLevel::Info,
        ErrorLogLevel::Debug,
        ErrorLogLevel::Trace,
    ];

    /// The name as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorLogLevel::Error => "error",
            ErrorLogLevel::Warn => "warn",
            ErrorLogLevel::Info => "info",
            ErrorLogLevel::Debug => "debug",
            ErrorLogLevel::Trace => "trace",
        }
    }

    /// The level named `name` (as written in the file, lower case).
    pub fn parse(name: &str) -> Option<ErrorLogLevel> {
        ErrorLogLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl fmt::Display for ErrorLogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[error_log]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorLogSettings {
    /// The file (`None`: standard error).
    pub path: Option<PathBuf>,
    /// The line format.
    pub format: ErrorLogFormat,
    /// The least severe messages written.
    pub level: ErrorLogLevel,
}

impl Default for ErrorLogSettings {
    fn default() -> Self {
        ErrorLogSettings {
            path: None,
            format: ErrorLogFormat::Text,
            level: ErrorLogLevel::Info,
        }
    }
}

/// `[error_log]` as serde reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawErrorLog {
    pub path: Option<String>,
    pub format: Option<String>,
    pub level: Option<String>,
}

impl ErrorLogSettings {
    /// The settings of an `[error_log]` table; keys left out keep their defaults.
    pub(crate) fn from_raw(raw: RawErrorLog) -> Result<ErrorLogSettings, ConfigError> {
        let mut s = ErrorLogSettings::default();
        if let Some(p) = raw.path {
            s.path = (!p.is_empty()).then(|| PathBuf::from(p));
        }
        if let Some(f) = raw.format {
            s.format = match f.as_str() {
                "text" => ErrorLogFormat::Text,
                "json" => ErrorLogFormat::Json,
                other => {
                    return Err(ConfigError::invalid(
                        "error_log.format",
                        format!("`{other}` is not a format: use \"text\" or \"json\""),
                    ))
                }
            };
        }
        if let Some(l) = raw.level {
            s.level = ErrorLogLevel::parse(&l).ok_or_else(|| {
                ConfigError::invalid(
                    "error_log.level",
                    format!(
                        "`{l}` is not a level: use \"error\", \"warn\", \"info\", \"debug\" or \"trace\""
                    ),
                )
            })?;
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_convert_and_leave_the_others_at_their_defaults() {
        let s = ErrorLogSettings::from_raw(RawErrorLog::default()).unwrap();
        assert_eq!(s, ErrorLogSettings::default());
        assert_eq!(
            (s.path, s.format, s.level),
            (None, ErrorLogFormat::Text, ErrorLogLevel::Info)
        );
        let s = ErrorLogSettings::from_raw(RawErrorLog {
            path: Some("logs/error".into()),
            format: Some("json".into()),
            level: Some("debug".into()),
        })
        .unwrap();
        assert_eq!(s.path, Some(PathBuf::from("logs/error")));
        assert_eq!(s.format, ErrorLogFormat::Json);
        assert_eq!(s.level, ErrorLogLevel::Debug);
        // An empty path is standard error, as when the key is left out.
        let s = ErrorLogSettings::from_raw(RawErrorLog {
            path: Some(String::new()),
            ..RawErrorLog::default()
        })
        .unwrap();
        assert_eq!(s.path, None);
    }

    #[test]
    fn every_level_is_read_by_its_name_and_ordered_by_severity() {
        for level in ErrorLogLevel::ALL {
            let s = ErrorLogSettings::from_raw(RawErrorLog {
                level: Some(level.as_str().into()),
                ..RawErrorLog::default()
            })
            .unwrap();
            assert_eq!(s.level, level);
            assert_eq!(level.to_string(), level.as_str());
        }
        assert!(ErrorLogLevel::Error < ErrorLogLevel::Warn);
        assert!(ErrorLogLevel::Debug < ErrorLogLevel::Trace);
        // Names are lower case, as every other value of the file.
        assert_eq!(ErrorLogLevel::parse("INFO"), None);
        assert_eq!(ErrorLogLevel::parse("warning"), None);
    }

    #[test]
    fn bad_values_name_their_key() {
        for (raw, key) in [
            (
                RawErrorLog {
                    format: Some("389".into()),
                    ..RawErrorLog::default()
                },
                "error_log.format",
            ),
            (
                RawErrorLog {
                    level: Some("verbose".into()),
                    ..RawErrorLog::default()
                },
                "error_log.level",
            ),
            (
                RawErrorLog {
                    level: Some(String::new()),
                    ..RawErrorLog::default()
                },
                "error_log.level",
            ),
        ] {
            let e = ErrorLogSettings::from_raw(raw).unwrap_err();
            assert_eq!(e.key(), Some(key), "{e}");
            assert!(e.to_string().contains("is not a"), "{e}");
        }
    }
}
