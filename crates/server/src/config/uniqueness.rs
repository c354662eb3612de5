//! `[uniqueness]`: the attributes whose values no two entries of one subtree may share
//! (`crate::hooks::unique`), as rules each with its own attributes and subtrees.
//!
//! Keys (what the hook does: `docs/groups.md`, "Uniqueness"):
//! - `uniqueness.attributes` (`["uid"]`): the default rule's attribute types, each with an
//!   equality rule; an empty list turns the default rule off;
//! - `uniqueness.subtrees` (`[]`): the DNs below which the default rule's values must be
//!   unique, each subtree on its own (389 DS's `uniqueness-subtrees`); none: each naming
//!   context;
//! - `[[uniqueness.rule]]` (none): further rules, each with `attributes` (required, at least
//!   one) and `subtrees` (`[]`), meaning what the two keys above mean, for that rule alone
//!   (one `olcUniqueURI` of OpenLDAP's unique overlay each). Rules are checked one by one: a
//!   write is refused when any rule refuses it.

use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use serde::Deserialize;

use super::ConfigError;
use crate::uniqueness::{Scopes, UniqueAttribute, UniqueRule};

/// Most attributes and most subtrees one rule lists, and most `[[uniqueness.rule]]` tables.
pub const MAX_UNIQUE_LIST: usize = 64;

/// `[uniqueness]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniquenessSettings {
    /// `uniqueness.attributes`: the default rule's attributes.
    pub attributes: Vec<String>,
    /// `uniqueness.subtrees`: the default rule's subtrees.
    pub subtrees: Vec<String>,
    /// `[[uniqueness.rule]]`.
    pub rules: Vec<UniqueRuleSettings>,
}

/// One `[[uniqueness.rule]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueRuleSettings {
    /// `attributes`.
    pub attributes: Vec<String>,
    /// `subtrees` (empty: each naming context).
    pub subtrees: Vec<String>,
}

impl Default for UniquenessSettings {
    fn default() -> UniquenessSettings {
        UniquenessSettings {
            attributes: vec!["uid".to_string()],
            subtrees: Vec::new(),
            rules: Vec::new(),
        }
    }
}

/// `[uniqueness]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUniqueness {
    pub attributes: Option<Vec<String>>,
    pub subtrees: Option<Vec<String>>,
    pub rule: Option<Vec<RawUniqueRule>>,
}

/// `[[uniqueness.rule]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUniqueRule {
    pub attributes: Vec<String>,
    pub subtrees: Option<Vec<String>>,
}

impl UniquenessSettings {
    pub(crate) fn from_raw(raw: RawUniqueness) -> Result<UniquenessSettings, ConfigError> {
        let defaults = UniquenessSettings::default();
        let settings = UniquenessSettings {
            attributes: raw.attributes.unwrap_or(defaults.attributes),
            subtrees: raw.subtrees.unwrap_or(defaults.subtrees),
            rules: raw
                .rule
                .unwrap_or_default()
                .into_iter()
                .map(|r| UniqueRuleSettings {
                    attributes: r.attributes,
                    subtrees: r.subtrees.unwrap_or_default(),
                })
                .collect(),
        };
        if settings.rules.len() > MAX_UNIQUE_LIST {
            return Err(ConfigError::invalid(
                "uniqueness.rule",
                format!("at most {MAX_UNIQUE_LIST} rules"),
            ));
        }
        for (prefix, attributes, subtrees) in settings.named_rules() {
            for (key, list) in [("attributes", attributes), ("subtrees", subtrees)] {
                if list.len() > MAX_UNIQUE_LIST {
                    return Err(ConfigError::invalid(
                        format!("{prefix}.{key}"),
                        format!("at most {MAX_UNIQUE_LIST} values"),
                    ));
                }
            }
        }
        for (i, r) in settings.rules.iter().enumerate() {
            if r.attributes.is_empty() {
                return Err(ConfigError::invalid(
                    format!("uniqueness.rule[{i}].attributes"),
                    "list at least one attribute (remove the rule to check nothing)",
                ));
            }
        }
        Ok(settings)
    }

    /// Every rule with the key path it is written under: the default rule (`uniqueness`)
    /// first, then `uniqueness.rule[i]`.
    fn named_rules(&self) -> Vec<(String, &[String], &[String])> {
        let mut out = vec![(
            "uniqueness".to_string(),
            self.attributes.as_slice(),
            self.subtrees.as_slice(),
        )];
        for (i, r) in self.rules.iter().enumerate() {
            out.push((
                format!("uniqueness.rule[{i}]"),
                r.attributes.as_slice(),
                r.subtrees.as_slice(),
            ));
        }
        out
    }

    /// The rules resolved in `schema`, the default rule first; a rule with no attribute
    /// (the default rule with `attributes = []`) is left out. Each attribute must exist and
    /// have an equality rule; each subtree must be a DN.
    pub fn rules(&self, schema: &Schema) -> Result<Vec<UniqueRule>, ConfigError> {
        let mut out = Vec::new();
        for (prefix, attributes, subtrees) in self.named_rules() {
            let attributes = resolved_attributes(&format!("{prefix}.attributes"), attributes, schema)?;
            let scopes = scopes(&format!("{prefix}.subtrees"), subtrees, schema)?;
            if !attributes.is_empty() {
                out.push(UniqueRule { attributes, scopes });
            }
        }
        Ok(out)
    }

    /// The resolution, for the configuration's validation.
    pub(crate) fn validate(&self, schema: &Schema) -> Result<(), ConfigError> {
        self.rules(schema).map(|_| ())
    }
}

/// `names` resolved in `schema`: each must exist and have an equality rule (`key` names
/// the list in errors).
fn resolved_attributes(
    key: &str,
    names: &[String],
    schema: &Schema,
) -> Result<Vec<UniqueAttribute>, ConfigError> {
    let mut out: Vec<UniqueAttribute> = Vec::with_capacity(names.len());
    for name in names {
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

/// The scopes of `subtrees`, normalized through `schema`, or each naming context (`key`
/// names the list in errors).
fn scopes(key: &str, subtrees: &[String], schema: &Schema) -> Result<Scopes, ConfigError> {
    if subtrees.is_empty() {
        return Ok(Scopes::NamingContexts);
    }
    subtrees
        .iter()
        .map(|s| {
            NormDn::parse(s.as_bytes(), schema)
                .map(|(_, norm)| norm)
                .map_err(|e| ConfigError::invalid(key, format!("`{s}` is not a DN: {e}")))
        })
        .collect::<Result<Vec<NormDn>, ConfigError>>()
        .map(Scopes::Subtrees)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(attributes: &[&str], subtrees: &[&str]) -> UniquenessSettings {
        UniquenessSettings {
            attributes: attributes.iter().map(|s| s.to_string()).collect(),
            subtrees: subtrees.iter().map(|s| s.to_string()).collect(),
            rules: Vec::new(),
        }
    }

    #[test]
    fn uid_is_unique_by_default_and_names_are_resolved() {
        let u = UniquenessSettings::from_raw(RawUniqueness::default()).unwrap();
        assert_eq!(u, UniquenessSettings::default());
        let schema = Schema::builtin().unwrap();
        let rules = u.rules(&schema).unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].attributes.len(), 1);
        assert_eq!(
            rules[0].attributes[0].ty,
            schema.attribute_type("uid").unwrap().id
        );
        assert_eq!(rules[0].scopes, Scopes::NamingContexts);

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
        let rules = both.rules(&schema).unwrap();
        assert_eq!(rules[0].attributes.len(), 2);
        assert_eq!(
            rules[0].scopes,
            Scopes::Subtrees(vec![NormDn::from_normalized("ou=people,dc=example,dc=com")])
        );
        // An empty default rule checks nothing.
        assert!(named(&[], &[]).rules(&schema).unwrap().is_empty());
    }

    #[test]
    fn each_rule_has_its_own_attributes_and_subtrees() {
        let schema = Schema::builtin().unwrap();
        let raw = RawUniqueness {
            attributes: None,
            subtrees: None,
            rule: Some(vec![
                RawUniqueRule {
                    attributes: vec!["mail".into()],
                    subtrees: Some(vec!["ou=People,dc=example,dc=com".into()]),
                },
                RawUniqueRule {
                    attributes: vec!["employeeNumber".into()],
                    subtrees: None,
                },
            ]),
        };
        let u = UniquenessSettings::from_raw(raw).unwrap();
        assert_eq!(u.attributes, ["uid"]);
        let rules = u.rules(&schema).unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0].scopes, Scopes::NamingContexts);
        assert_eq!(
            rules[1].attributes[0].ty,
            schema.attribute_type("mail").unwrap().id
        );
        assert_eq!(
            rules[1].scopes,
            Scopes::Subtrees(vec![NormDn::from_normalized("ou=people,dc=example,dc=com")])
        );
        assert_eq!(rules[2].scopes, Scopes::NamingContexts);

        // Errors name the rule's own key.
        let mut bad = u.clone();
        bad.rules[1].attributes = vec!["audio".into()];
        let e = bad.validate(&schema).unwrap_err();
        assert_eq!(e.key(), Some("uniqueness.rule[1].attributes"), "{e}");
        let mut bad = u.clone();
        bad.rules[0].subtrees = vec!["not a dn".into()];
        let e = bad.validate(&schema).unwrap_err();
        assert_eq!(e.key(), Some("uniqueness.rule[0].subtrees"), "{e}");
    }

    #[test]
    fn a_rule_lists_at_least_one_attribute_and_at_most_the_limit() {
        let rule = |attributes: Vec<String>| RawUniqueRule {
            attributes,
            subtrees: None,
        };
        let raw = |rules: Vec<RawUniqueRule>| RawUniqueness {
            rule: Some(rules),
            ..RawUniqueness::default()
        };
        let e = UniquenessSettings::from_raw(raw(vec![rule(vec!["uid".into()]), rule(vec![])])).unwrap_err();
        assert_eq!(e.key(), Some("uniqueness.rule[1].attributes"), "{e}");
        let many: Vec<String> = (0..=MAX_UNIQUE_LIST).map(|i| format!("a{i}")).collect();
        let e = UniquenessSettings::from_raw(raw(vec![rule(many)])).unwrap_err();
        assert_eq!(e.key(), Some("uniqueness.rule[0].attributes"), "{e}");
        let rules = (0..=MAX_UNIQUE_LIST).map(|_| rule(vec!["uid".into()])).collect();
        let e = UniquenessSettings::from_raw(raw(rules)).unwrap_err();
        assert_eq!(e.key(), Some("uniqueness.rule"), "{e}");
    }
}
