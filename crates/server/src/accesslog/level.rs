//! How much the access log says about each operation: [`Level`].
//!
//! The levels nest. `Results` writes what happened to connections and how each operation
//! ended; `Default` adds one line per request with its main arguments (what 389 Directory
//! Server writes at its default level); `Full` adds every argument Larch can show without
//! writing a value: the attribute types of an Add, the kind and type of each change of a
//! Modify, the request and response controls, the authorization DN, matched DN and
//! diagnostic message of every result. Attribute values, passwords and control values are
//! never written, at any level.

use std::fmt;
use std::str::FromStr;

/// How much the access log writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Level {
    /// Connections, TLS handshakes, closures, results (and Abandon, whose line is its
    /// outcome); no request lines.
    Results,
    /// 389's default: request lines with their main arguments, and results.
    #[default]
    Default,
    /// Every argument short of attribute values and control values.
    Full,
}

impl Level {
    /// True when request lines are written.
    pub fn writes_requests(self) -> bool {
        self >= Level::Default
    }

    /// True when every argument is written.
    pub fn is_full(self) -> bool {
        self == Level::Full
    }

    /// The level's name in the configuration: `results`, `default`, `full`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Results => "results",
            Level::Default => "default",
            Level::Full => "full",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level name that is none of `results`, `default`, `full`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLevel(pub String);

impl fmt::Display for UnknownLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown access log level {:?} (results, default or full)",
            self.0
        )
    }
}

impl std::error::Error for UnknownLevel {}

impl FromStr for Level {
    type Err = UnknownLevel;

    /// Reads a level name, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        [Level::Results, Level::Default, Level::Full]
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownLevel(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_nest_and_parse_by_name() {
        assert!(!Level::Results.writes_requests());
        assert!(Level::Default.writes_requests() && !Level::Default.is_full());
        assert!(Level::Full.writes_requests() && Level::Full.is_full());
        for l in [Level::Results, Level::Default, Level::Full] {
            assert_eq!(l.name().parse::<Level>(), Ok(l));
            assert_eq!(l.to_string().to_uppercase().parse::<Level>(), Ok(l));
        }
        assert_eq!(Level::default(), Level::Default);
        assert!("verbose".parse::<Level>().is_err());
    }
}
