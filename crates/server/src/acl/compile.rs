//! Compiling the access configuration against the schema: [`AccessRules::compile`].
//!
//! Steps, each refusal naming the rule's index and key (`access[1].attrs[2]`):
//! 1. no rules: the default policy ([`super::default_policy`]) is compiled instead;
//! 2. for each rule: its DN is parsed and normalized through the schema; its filter is
//!    parsed and every attribute it names must be in the schema (a misspelled name would
//!    otherwise make the rule silently never apply); each name of `attrs` is `entry`,
//!    `children` or an attribute type without options, expanded to its subtypes;
//! 3. for each clause: DNs and group DNs normalized; groups gathered into one list (at most
//!    [`MAX_ACCESS_GROUPS`]);
//! 4. the proxy clauses (`access_proxy.allow`) likewise;
//! 5. when no clause names a DN, a group or a peer, the outcomes and masks of the
//!    anonymous and authenticated classes are computed now (see `eval`).

use larch_model::dn::NormDn;
use larch_model::entry::split_description;
use larch_model::filter::CompiledFilter;
use larch_model::schema::{AttributeTypeId, Schema};
use larch_proto::{Filter, FilterNode, OwnedFilter};

use super::eval::{outcomes, View};
use super::group::MAX_ACCESS_GROUPS;
use super::rule::{AttrSet, Clause, Rule, TypeSet, Who};
use super::written::{AccessConfig, WhoConfig};
use super::{default_policy, AccessRules};
use crate::client::Client;
use crate::config_error::ConfigError;
use crate::identity::Identity;

impl AccessRules {
    /// Compiles `config` against `schema` (see the module documentation).
    pub fn compile(config: &AccessConfig, schema: &Schema) -> Result<AccessRules, ConfigError> {
        let is_default = config.rules.is_empty();
        let default;
        let rules_config = if is_default {
            default = default_policy();
            &default.rules
        } else {
            &config.rules
        };
        let type_count = schema
            .attribute_types()
            .map(|t| t.id.index() + 1)
            .max()
            .unwrap_or(0);
        let mut groups: Vec<NormDn> = Vec::new();
        let mut rules = Vec::with_capacity(rules_config.len());
        for (i, r) in rules_config.iter().enumerate() {
            let key = format!("access[{i}]");
            let dn = match &r.dn {
                Some(text) => Some((normalize(&format!("{key}.dn"), text, schema)?, r.scope)),
                None => None,
            };
            let filter = match &r.filter {
                Some(text) => Some(filter(&format!("{key}.filter"), text, schema)?),
                None => None,
            };
            let attrs = match &r.attrs {
                Some(names) => Some(attr_set(&format!("{key}.attrs"), names, schema, type_count)?),
                None => None,
            };
            let mut clauses = Vec::with_capacity(r.by.len());
            for (j, c) in r.by.iter().enumerate() {
                let who = who(&format!("{key}.by[{j}]"), &c.who, schema, &mut groups)?;
                clauses.push(Clause {
                    who,
                    privileges: c.access,
                });
            }
            rules.push(Rule {
                dn,
                filter,
                attrs,
                clauses,
            });
        }
        let mut proxy = Vec::with_capacity(config.proxy.len());
        for (j, w) in config.proxy.iter().enumerate() {
            proxy.push(who(&format!("access_proxy.allow[{j}]"), w, schema, &mut groups)?);
        }
        let by_class = rules
            .iter()
            .flat_map(|r| &r.clauses)
            .all(|c| c.who.dn.is_none() && c.who.group.is_none() && c.who.peer.is_none());
        let classes = by_class.then(|| {
            let anonymous = Identity::Anonymous;
            // Any bound identity that is not the admin: only the class matters here (no
            // clause names a DN), and the self part is decided per entry.
            let user = Identity::Dn {
                dn: String::new(),
                norm: NormDn::root(),
                admin: false,
            };
            let client = Client::default();
            let view =
                |id: &Identity| View::new(&rules, outcomes(&rules, id, &client, &mut |_| false), type_count);
            Box::new([view(&anonymous), view(&user)])
        });
        let member_types = ["member", "uniqueMember"]
            .iter()
            .filter_map(|n| schema.attribute_type(n).map(|t| t.id))
            .collect();
        Ok(AccessRules {
            rules,
            proxy,
            groups,
            classes,
            type_count,
            member_types,
            is_default,
        })
    }
}

fn normalize(key: &str, text: &str, schema: &Schema) -> Result<NormDn, ConfigError> {
    NormDn::parse(text.as_bytes(), schema)
        .map(|(_, n)| n)
        .map_err(|e| ConfigError::invalid(key, format!("`{text}` is not a valid DN: {}", e.reason)))
}

/// Parses `text`, checks that the schema knows every attribute it names, and compiles it.
fn filter(key: &str, text: &str, schema: &Schema) -> Result<CompiledFilter, ConfigError> {
    let owned = OwnedFilter::parse(text)
        .map_err(|e| ConfigError::invalid(key, format!("`{text}` is not a filter: {e}")))?;
    // Every description, found with an explicit stack (the filter is validated, so its
    // depth is bounded).
    let mut stack: Vec<Filter<'_>> = vec![owned.as_filter()];
    while let Some(f) = stack.pop() {
        let description = match f.node() {
            FilterNode::And(set) | FilterNode::Or(set) => {
                stack.extend(set.iter());
                continue;
            }
            FilterNode::Not(inner) => {
                stack.push(inner);
                continue;
            }
            FilterNode::Present(d) => Some(d),
            FilterNode::Equality(a)
            | FilterNode::GreaterOrEqual(a)
            | FilterNode::LessOrEqual(a)
            | FilterNode::Approx(a) => Some(a.description),
            FilterNode::Substrings(s) => Some(s.description),
            FilterNode::Extensible(m) => m.description,
            FilterNode::Unknown { .. } => None,
        };
        if let Some(d) = description {
            let known = split_description(d).is_some_and(|(name, _)| schema.attribute_type(name).is_some());
            if !known {
                return Err(ConfigError::invalid(
                    key,
                    format!(
                        "`{text}`: attribute `{}` is not defined in the schema",
                        String::from_utf8_lossy(d)
                    ),
                ));
            }
        }
    }
    Ok(CompiledFilter::compile(owned.as_filter(), schema))
}

/// `attrs`: types with their subtypes, `entry`, `children`.
fn attr_set(key: &str, names: &[String], schema: &Schema, type_count: usize) -> Result<AttrSet, ConfigError> {
    let mut set = AttrSet {
        entry: false,
        children: false,
        types: TypeSet::empty(type_count),
    };
    for (j, name) in names.iter().enumerate() {
        let at = format!("{key}[{j}]");
        match name.to_ascii_lowercase().as_str() {
            "entry" => set.entry = true,
            "children" => set.children = true,
            _ => {
                let Some((ty, options)) = split_description(name.as_bytes()) else {
                    return Err(ConfigError::invalid(
                        at,
                        format!("`{name}` is not an attribute name"),
                    ));
                };
                if !options.is_empty() {
                    return Err(ConfigError::invalid(
                        at,
                        format!("`{name}`: attribute options are not supported in rules; name the type"),
                    ));
                }
                let Some(t) = schema.attribute_type(ty) else {
                    return Err(ConfigError::invalid(
                        at,
                        format!("attribute `{name}` is not defined in the schema (the pseudo-attributes are `entry` and `children`)"),
                    ));
                };
                let id: AttributeTypeId = t.id;
                for s in schema.attribute_types() {
                    if schema.is_subtype(s.id, id) {
                        set.types.insert(s.id);
                    }
                }
            }
        }
    }
    Ok(set)
}

fn who(key: &str, w: &WhoConfig, schema: &Schema, groups: &mut Vec<NormDn>) -> Result<Who, ConfigError> {
    let dn = match &w.dn {
        Some(text) => Some((normalize(&format!("{key}.dn"), text, schema)?, w.scope)),
        None => None,
    };
    let group = match &w.group {
        Some(text) => {
            let g = normalize(&format!("{key}.group"), text, schema)?;
            if g.is_root() {
                return Err(ConfigError::invalid(
                    format!("{key}.group"),
                    "the root DSE is not a group",
                ));
            }
            Some(match groups.iter().position(|x| *x == g) {
                Some(i) => i,
                None => {
                    if groups.len() >= MAX_ACCESS_GROUPS {
                        return Err(ConfigError::invalid(
                            format!("{key}.group"),
                            format!("the rules name more than {MAX_ACCESS_GROUPS} groups"),
                        ));
                    }
                    groups.push(g);
                    groups.len() - 1
                }
            })
        }
        None => None,
    };
    Ok(Who {
        keyword: w.keyword,
        dn,
        group,
        peer: w.peer,
    })
}
