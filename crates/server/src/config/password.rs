//! `[password]`: how userPassword values are stored.
//!
//! Keys:
//! - `default_scheme`: the scheme a new password is hashed with (Add, Modify, Password
//!   Modify, the admin's password): `"argon2id"` (the default), `"pbkdf2-sha512"`,
//!   `"ssha512"` or `"ssha"` (see [`DefaultScheme`]);
//! - `allow_cleartext`: whether stored values without a scheme (or with `{CLEARTEXT}`)
//!   verify. Off by default: such a value, typically imported from an old directory, then
//!   never matches, and the bind fails as for a wrong password.
//!
//! The table is read into [`PasswordSettings`]; the hashing and checking themselves are in
//! [`crate::password`].

use serde::Deserialize;

use super::ConfigError;

/// The scheme new passwords are hashed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DefaultScheme {
    /// `{ARGON2}` with argon2id (RFC 9106), OWASP's parameters (19 MiB, 2 passes, 1 lane):
    /// memory-hard, about 30 ms per check on one core. What OpenLDAP's `argon2` module
    /// writes and verifies.
    #[default]
    Argon2id,
    /// `{PBKDF2-SHA512}` in OpenLDAP's `pw-pbkdf2` and passlib's format: faster per check
    /// (no memory hardness), for directories that serve many binds per second.
    Pbkdf2Sha512,
    /// `{SSHA512}`: one salted SHA-512, for clients that must read the stored form; weak
    /// against offline guessing.
    Ssha512,
    /// `{SSHA}`: one salted SHA-1, slapd's default; weak against offline guessing.
    Ssha,
}

impl DefaultScheme {
    /// Every value, with its name in the configuration file.
    pub const ALL: [(DefaultScheme, &'static str); 4] = [
        (DefaultScheme::Argon2id, "argon2id"),
        (DefaultScheme::Pbkdf2Sha512, "pbkdf2-sha512"),
        (DefaultScheme::Ssha512, "ssha512"),
        (DefaultScheme::Ssha, "ssha"),
    ];

    /// The name in the configuration file.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("argon2id", |(_, n)| n)
    }

    /// The scheme named `name` in the configuration file (case-insensitive).
    pub fn from_name(name: &str) -> Option<DefaultScheme> {
        Self::ALL
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(s, _)| *s)
    }
}

/// `[password]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PasswordSettings {
    /// The scheme new passwords are hashed with.
    pub default_scheme: DefaultScheme,
    /// Whether stored values without a scheme, or with `{CLEARTEXT}`, verify.
    pub allow_cleartext: bool,
}

/// `[password]` as serde reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPassword {
    pub default_scheme: Option<String>,
    pub allow_cleartext: Option<bool>,
}

impl PasswordSettings {
    /// The settings of a `[password]` table; keys left out keep their defaults.
    pub(crate) fn from_raw(raw: RawPassword) -> Result<PasswordSettings, ConfigError> {
        let mut s = PasswordSettings::default();
        if let Some(name) = raw.default_scheme {
            s.default_scheme = DefaultScheme::from_name(&name).ok_or_else(|| {
                let names: Vec<String> = DefaultScheme::ALL
                    .iter()
                    .map(|(_, n)| format!("\"{n}\""))
                    .collect();
                ConfigError::invalid(
                    "password.default_scheme",
                    format!(
                        "`{name}` is not a scheme new passwords can be hashed with: expected {}",
                        names.join(", ")
                    ),
                )
            })?;
        }
        if let Some(b) = raw.allow_cleartext {
            s.allow_cleartext = b;
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for (scheme, name) in DefaultScheme::ALL {
            assert_eq!(scheme.name(), name);
            assert_eq!(DefaultScheme::from_name(name), Some(scheme));
            assert_eq!(DefaultScheme::from_name(&name.to_uppercase()), Some(scheme));
        }
        let raw = RawPassword {
            default_scheme: Some("md5".into()),
            allow_cleartext: None,
        };
        let e = PasswordSettings::from_raw(raw).unwrap_err().to_string();
        assert!(
            e.contains("password.default_scheme") && e.contains("`md5`"),
            "{e}"
        );
    }
}
