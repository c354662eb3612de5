//! `[security]`: the confidentiality policy (`require_tls`).
//!
//! `require_tls` says which plain (unencrypted) connections may send passwords and
//! changes: `"always"` (none), `"never"` (all), `"remote"` (the default: plain connections
//! over the loopback interface may, others must use TLS). The policy is applied by
//! [`crate::auth::confidentiality::require_tls`].

use serde::Deserialize;

use super::ConfigError;

/// `[security]` as written (the keys this module reads).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSecurity {
    pub require_tls: Option<String>,
}

/// Which plain connections must use TLS before sending a password or a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequireTls {
    /// Every connection: passwords and writes only over TLS.
    Always,
    /// No connection: plain connections may send passwords and writes.
    Never,
    /// Connections from other hosts; loopback connections are exempt.
    #[default]
    Remote,
}

impl RequireTls {
    /// Parses the value of `security.require_tls`.
    pub(crate) fn parse(text: &str) -> Result<RequireTls, ConfigError> {
        match text {
            "always" => Ok(RequireTls::Always),
            "never" => Ok(RequireTls::Never),
            "remote" => Ok(RequireTls::Remote),
            other => Err(ConfigError::invalid(
                "security.require_tls",
                format!("`{other}`: expected \"always\", \"never\" or \"remote\""),
            )),
        }
    }
}

/// `[security]`, checked (the keys of the confidentiality policy).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecuritySettings {
    /// The confidentiality policy.
    pub require_tls: RequireTls,
}

impl SecuritySettings {
    /// Applies the table as written over `self`.
    pub(crate) fn apply(&mut self, raw: RawSecurity) -> Result<(), ConfigError> {
        if let Some(r) = raw.require_tls {
            self.require_tls = RequireTls::parse(&r)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        for (text, v) in [
            ("always", RequireTls::Always),
            ("never", RequireTls::Never),
            ("remote", RequireTls::Remote),
        ] {
            assert_eq!(RequireTls::parse(text).unwrap(), v);
        }
        for bad in ["", "Always", "yes", "true"] {
            assert_eq!(
                RequireTls::parse(bad).unwrap_err().key(),
                Some("security.require_tls")
            );
        }
        assert_eq!(SecuritySettings::default().require_tls, RequireTls::Remote);
    }
}
