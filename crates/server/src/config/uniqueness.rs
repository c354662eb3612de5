//! `[uniqueness]`: the attributes whose values no two entries of one subtree may share
//! (`crate::hooks::unique`).
//!
//! Keys (what the hook does: `docs/groups.md`, "Uniqueness"):
//! - `uniqueness.attributes` (`["uid"]`): the attribute types, each with an equality rule;
//!   an empty list turns the check off;
//! - `uniqueness.subtrees` (`[]`): the DNs below which values must be unique, each subtree
//!   on its own (389 DS's `uniqueness-subtrees`); none: each naming context.

use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use serde::Deserialize;

use super::ConfigError;
use crate::uniqueness::{Scopes, UniqueAttribute};

/// Most attributes and most subtrees one `[uniqueness]` lists.
pub const MAX_UNIQUE_LIST: usize = 64;

/// `[uniqueness]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniquenessSettings {
    /// `uniqueness.attributes`.
    pub attributes: Vec<String>,
    /// `uniqueness.subtrees`.
    pub subtrees: Vec<String>,
}

impl Default for UniquenessSettings {
    fn default() -> UniquenessSettings {
        UniquenessSettings {
            attributes: vec!["uid".to_string()],
            subtrees: Vec::new(),
        }
    }
}

/// `[uniqueness]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUniqueness {
    pub attributes: Option<Vec<String>>,
    pub subtrees: Option<Vec<String>>,
}

impl UniquenessSettings {
    pub(crate) fn from_raw(raw: RawUniqueness) -> Result<UniquenessSettings, ConfigError> {
        let defaults = UniquenessSettings::default();
        let settings = UniquenessSettings {
            attributes: raw.attributes.unwrap_or(defaults.attributes),
            subtrees: raw.subtrees.unwrap_or(defaults.subtrees),
        };
        for (key, list) in [
            ("uniqueness.attributes", &settings.attributes),
            ("uniqueness.subtrees", &settings.subtrees),
        ] {
            if list.len() > MAX_UNIQUE_LIST {
                return Err(ConfigError::invalid(
                    key,
                    format!("at most {MAX_UNIQUE_LIST} values"),
                ));
            }
        }
        Ok(settings)
    }

    /// The attributes resolved in `schema`: each must exist and have an equality rule.
    pub fn resolved_attributes(&self, schema: &Schema) -> Result<Vec<UniqueAttribute>, ConfigError> {
        let mut out: Vec<UniqueAttribute> = Vec::with_capacity(self.attributes.len());
        for name in &self.attributes {
            let key = "uniqueness.attributes";
            let Some(t) = schema.attribute_type(name) else {
                return Err(ConfigError::invalid(
                    key,
                    format!("the schema has no attribute `{name}`"),
                ));
            };
            let Some(rule) = t.equality else {
                return Err(ConfigError::invalid(
                    key,
                    format!("`{name}` has no equality rule, so values cannot be compared"),
                ));
            };
            if !out.iter().any(|a| a.ty == t.id) {
                out.push(UniqueAttribute { ty: t.id, rule });
            }
        }
        Ok(out)
    }

    /// The scopes: the subtrees normalized through `schema`, or each naming context.
    pub fn scopes(&self, schema: &Schema) -> Result<Scopes, ConfigError> {
        if self.subtrees.is_empty() {
            return Ok(Scopes::NamingContexts);
        }
        self.subtrees
            .iter()
            .map(|s| {
                NormDn::parse(s.as_bytes(), schema)
                    .map(|(_, norm)| norm)
                    .map_err(|e| {
                        ConfigError::invalid("uniqueness.subtrees", format!("`{s}` is not a DN: {e}"))
                    })
            })
            .collect::<Result<Vec<NormDn>, ConfigError>>()
            .map(Scopes::Subtrees)
    }

    /// Both resolutions, for the configuration's validation.
    pub(crate) fn validate(&self, schema: &Schema) -> Result<(), ConfigError> {
        self.resolved_attributes(schema)?;
        self.scopes(schema)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_is_unique_by_default_and_names_are_resolved() {
        let u = UniquenessSettings::from_raw(RawUniqueness::default()).unwrap();
        assert_eq!(u, UniquenessSettings::default());
        let schema = Schema::builtin().unwrap();
        let attrs = u.resolved_attributes(&schema).unwrap();
        assert_eq!(attrs.len(), 1);
        assert_eq!(attrs[0].ty, schema.attribute_type("uid").unwrap().id);
        assert_eq!(u.scopes(&schema).unwrap(), Scopes::NamingContexts);

        let named = |attributes: &[&str], subtrees: &[&str]| UniquenessSettings {
            attributes: attributes.iter().map(|s| s.to_string()).collect(),
            subtrees: subtrees.iter().map(|s| s.to_string()).collect(),
        };
        let e = named(&["nosuchattr"], &[])
            .validate(&schema)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("uniqueness.attributes") && e.contains("nosuchattr"),
            "{e}"
        );
        let e = named(&["uid"], &["not a dn"])
            .validate(&schema)
            .unwrap_err()
            .to_string();
        assert!(e.contains("uniqueness.subtrees"), "{e}");
        // `audio` (RFC 1274) has no equality rule.
        let e = named(&["audio"], &[]).validate(&schema).unwrap_err().to_string();
        assert!(e.contains("no equality rule"), "{e}");
        let both = named(&["uid", "mail", "UID"], &["ou=People,dc=example,dc=com"]);
        assert_eq!(both.resolved_attributes(&schema).unwrap().len(), 2);
        assert_eq!(
            both.scopes(&schema).unwrap(),
            Scopes::Subtrees(vec![NormDn::from_normalized("ou=people,dc=example,dc=com")])
        );
    }
}
