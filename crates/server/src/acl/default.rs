//! The default policy: the rules the server enforces when the configuration has no
//! `[[access]]` rule. They are written in the rule language itself ([`DEFAULT_POLICY`])
//! and read by the same parser as the configuration, so what `docs/security.md` shows
//! (a test compares the two) is exactly what runs:
//! - `cn=Monitor` and below (the server's figures, `docs/monitoring.md`): nobody but the
//!   admin;
//! - `userPassword`: the entry's own identity may replace it (`=wx`: write, and auth, but
//!   not read, search or compare); anonymous clients may use it to bind (`auth`); nobody
//!   else gets anything (the implicit `by * none`);
//! - everything else: anyone may read (search, compare, read), and nobody may write.
//!
//! The admin may do everything, as with any rule set.

use super::written::{self, AccessConfig};

/// The default policy in the rule language (the `[[access]]` tables of `larch.toml`).
pub const DEFAULT_POLICY: &str = r#"[[access]]
dn = "cn=Monitor"
by = [
  { who = "*", access = "none" },
]

[[access]]
attrs = ["userPassword"]
by = [
  { who = "self", access = "=wx" },
  { who = "anonymous", access = "auth" },
]

[[access]]
by = [
  { who = "*", access = "read" },
]
"#;

/// The default policy, read from [`DEFAULT_POLICY`].
pub fn default_policy() -> AccessConfig {
    #[derive(serde::Deserialize)]
    struct Policy {
        access: toml::Value,
    }
    // The text is a constant a test parses; failing here would be a build defect.
    let parsed: Result<Policy, _> = toml::from_str(DEFAULT_POLICY);
    match parsed.ok().map(|p| written::parse(Some(p.access), None)) {
        Some(Ok(c)) => c,
        _ => AccessConfig::default(),
    }
}
