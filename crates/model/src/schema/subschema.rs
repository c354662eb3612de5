//! The subschema subentry (`cn=Subschema`, RFC 4512 section 4.2): the loaded schema as
//! attribute values in RFC 4512 form. Every value is printed by the description printer,
//! so it parses back to the element it came from.
//!
//! - `ldapSyntaxes`: every syntax Larch implements (`crate::syntax::all`), then the
//!   syntaxes schema files describe (with their `X-SUBST`) that it does not;
//! - `matchingRules`: every rule Larch implements (`crate::matching::all`);
//! - `attributeTypes`, `objectClasses`: as written in their files, in load order;
//! - `matchingRuleUse`: computed, one value per rule that applies to at least one
//!   attribute type: the types whose effective rule it is, and the types whose syntax is
//!   the rule's assertion syntax (the ones an extensible match can use it on);
//! - `dITContentRules`, `dITStructureRules`, `nameForms`: as written.

use super::description::{
    Element, ElementKind, Extension, LdapSyntaxDescription, MatchingRuleDescription,
    MatchingRuleUseDescription,
};
use super::model::Schema;
use crate::{matching, syntax};

/// The values of the subschema attributes, one RFC 4512 description per value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subschema {
    /// `ldapSyntaxes` values.
    pub ldap_syntaxes: Vec<String>,
    /// `matchingRules` values.
    pub matching_rules: Vec<String>,
    /// `attributeTypes` values.
    pub attribute_types: Vec<String>,
    /// `objectClasses` values.
    pub object_classes: Vec<String>,
    /// `matchingRuleUse` values.
    pub matching_rule_use: Vec<String>,
    /// `dITContentRules` values.
    pub dit_content_rules: Vec<String>,
    /// `dITStructureRules` values.
    pub dit_structure_rules: Vec<String>,
    /// `nameForms` values.
    pub name_forms: Vec<String>,
}

impl Subschema {
    /// The values of the attribute holding elements of `kind`.
    pub fn values(&self, kind: ElementKind) -> &[String] {
        match kind {
            ElementKind::LdapSyntax => &self.ldap_syntaxes,
            ElementKind::MatchingRule => &self.matching_rules,
            ElementKind::AttributeType => &self.attribute_types,
            ElementKind::ObjectClass => &self.object_classes,
            ElementKind::MatchingRuleUse => &self.matching_rule_use,
            ElementKind::DitContentRule => &self.dit_content_rules,
            ElementKind::DitStructureRule => &self.dit_structure_rules,
            ElementKind::NameForm => &self.name_forms,
        }
    }

    /// Every attribute with its values, in the order of [`ElementKind::ALL`]; empty
    /// attributes included (a server omits them from the entry).
    pub fn attributes(&self) -> impl Iterator<Item = (&'static str, &[String])> {
        ElementKind::ALL
            .into_iter()
            .map(|kind| (kind.subschema_attribute(), self.values(kind)))
    }
}

fn flag(name: &str) -> Extension {
    Extension {
        name: name.to_owned(),
        values: vec!["TRUE".to_owned()],
    }
}

impl Schema {
    /// Renders the schema as the attribute values of the subschema subentry.
    pub fn subschema(&self) -> Subschema {
        let mut out = Subschema::default();
        for s in syntax::all() {
            let mut extensions = Vec::new();
            if s.binary_transfer_required {
                extensions.push(flag("X-BINARY-TRANSFER-REQUIRED"));
            }
            if !s.human_readable {
                extensions.push(flag("X-NOT-HUMAN-READABLE"));
            }
            let desc = LdapSyntaxDescription {
                oid: s.oid.to_owned(),
                names: Vec::new(),
                desc: Some(s.description.to_owned()),
                extensions,
            };
            out.ldap_syntaxes.push(desc.to_string());
        }
        for described in &self.syntaxes {
            if syntax::lookup(&described.description.oid).is_none() {
                out.ldap_syntaxes.push(described.description.to_string());
            }
        }
        for rule in matching::all() {
            let desc = MatchingRuleDescription {
                oid: rule.oid.to_owned(),
                names: vec![rule.name.to_owned()],
                desc: None,
                obsolete: false,
                syntax: rule.syntax_oid.to_owned(),
                extensions: Vec::new(),
            };
            out.matching_rules.push(desc.to_string());
            let applies: Vec<String> = self
                .attribute_types
                .iter()
                .filter(|t| {
                    [t.equality, t.ordering, t.substring]
                        .iter()
                        .flatten()
                        .any(|r| std::ptr::eq(*r, rule))
                        || t.syntax_oid == rule.syntax_oid
                })
                .map(|t| t.name().to_owned())
                .collect();
            if !applies.is_empty() {
                let use_desc = MatchingRuleUseDescription {
                    oid: rule.oid.to_owned(),
                    names: vec![rule.name.to_owned()],
                    desc: None,
                    obsolete: false,
                    applies,
                    extensions: Vec::new(),
                };
                out.matching_rule_use.push(use_desc.to_string());
            }
        }
        out.attribute_types = self
            .attribute_types
            .iter()
            .map(|t| t.description.to_string())
            .collect();
        out.object_classes = self
            .object_classes
            .iter()
            .map(|c| c.description.to_string())
            .collect();
        for (element, _) in &self.other_elements {
            let target = match element {
                Element::DitContentRule(_) => &mut out.dit_content_rules,
                Element::DitStructureRule(_) => &mut out.dit_structure_rules,
                Element::NameForm(_) => &mut out.name_forms,
                _ => continue,
            };
            target.push(element.to_string());
        }
        out
    }
}
