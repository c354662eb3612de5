//! slapd overlays as Larch features: what exists in Larch today is mapped (memberof and
//! refint to `[groups]`; auditlog to the audit log; accesslog, changed in meaning, to the
//! same; sssvlv's sorting is built in), everything else is listed as not carried over,
//! with the attributes the overlay kept on entries, which the data step leaves out where
//! Larch's schema does not define them.
//!
//! Larch's group hooks are on by default; a slapd without the memberof (refint) overlay
//! kept no memberOf (no references), so the migrated configuration turns the hook off,
//! and the directory behaves as it did.

use super::model::{Directive, Overlay};
use super::report::{Fate, Report};

/// What the overlays ask of the rest of the migration.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct OverlayPlan {
    /// `[audit_log]`: enabled, with this path when one is given.
    pub audit_log: Option<Option<String>>,
    /// Attributes the dropped overlays maintained on entries (left out of the data when
    /// Larch's schema lacks them).
    pub maintained: Vec<String>,
    /// The suffixes of accesslog's log databases (not migrated as directories of their own).
    pub log_databases: Vec<String>,
    /// `[groups]`.
    pub groups: GroupsPlan,
    /// `[uniqueness]`: the unique overlays' `unique_uri`s, one rule each (none: slapd kept
    /// nothing unique, and the migrated configuration says so).
    pub uniqueness: Option<UniquenessPlan>,
}

/// `[uniqueness]` as slapd's unique overlays ask for it: one rule per `unique_uri`, in the
/// order written (the first becomes `[uniqueness]`'s default rule, the others
/// `[[uniqueness.rule]]` tables).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UniquenessPlan {
    /// The rules.
    pub rules: Vec<UniqueRulePlan>,
}

/// One rule of [`UniquenessPlan`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UniqueRulePlan {
    /// Its attributes.
    pub attributes: Vec<String>,
    /// Its subtrees (empty: every naming context).
    pub subtrees: Vec<String>,
}

/// `[groups]` as the overlays ask for it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GroupsPlan {
    /// memberof was configured: `groups.member_of`.
    pub member_of: bool,
    /// refint was configured: `groups.referential_integrity`.
    pub referential_integrity: bool,
    /// refint's `refint_nothing`: `groups.empty_group_member`.
    pub empty_group_member: Option<String>,
}

/// The (group class, member attribute) pairs Larch's memberOf hook reads, lowercase.
const LARCH_GROUPS: &[(&str, &str)] = &[
    ("groupofnames", "member"),
    ("groupofuniquenames", "uniquemember"),
    ("groupofmembers", "member"),
];

/// ppolicy's operational attributes on user entries.
const PPOLICY_ATTRIBUTES: &[&str] = &[
    "pwdChangedTime",
    "pwdAccountLockedTime",
    "pwdFailureTime",
    "pwdHistory",
    "pwdGraceUseTime",
    "pwdReset",
    "pwdPolicySubentry",
    "pwdLastSuccess",
    "pwdStartTime",
    "pwdEndTime",
];

/// Maps `overlays` (of one database or of the global section) into `plan`, reporting each.
pub fn map(overlays: &[Overlay], plan: &mut OverlayPlan, report: &mut Report) {
    for o in overlays {
        let what = format!("overlay {}", o.name);
        let (fate, note): (Fate, String) = match o.name.as_str() {
            "memberof" => {
                plan.groups.member_of = true;
                memberof_fate(o)
            }
            "refint" => {
                plan.groups.referential_integrity = true;
                if let Some(nothing) = setting(o, "refint_nothing") {
                    plan.groups.empty_group_member = Some(nothing.to_string());
                }
                refint_fate(o)
            }
            "unique" => unique_fate(o, plan.uniqueness.get_or_insert_with(UniquenessPlan::default)),
            "ppolicy" => {
                plan.maintained
                    .extend(PPOLICY_ATTRIBUTES.iter().map(|s| s.to_string()));
                (
                    Fate::Changed,
                    "Larch enforces password policy ([password_policy], docs/security.md): the \
                     pwdPolicy entries that accounts name in pwdPolicySubentry apply as in slapd, and \
                     the accounts' pwd* state is kept; the policy `ppolicy_default` names is not \
                     read into [password_policy]: set its values there"
                        .into(),
                )
            }
            "syncprov" => (
                Fate::Dropped,
                "Larch has no replication provider yet; contextCSN and entryCSN values are kept".into(),
            ),
            "accesslog" => {
                if let Some(db) = setting(o, "logdb") {
                    plan.log_databases.push(db.to_string());
                }
                plan.audit_log.get_or_insert(None);
                (
                    Fate::Changed,
                    "[audit_log] enabled: every committed change as an LDIF change record in a file, \
                     not entries of a searchable log database"
                        .into(),
                )
            }
            "auditlog" => {
                let path = setting(o, "auditlog").map(str::to_string);
                plan.audit_log = Some(path.clone());
                (
                    Fate::Carried,
                    match path {
                        Some(p) => format!("[audit_log] enabled, path = {p}"),
                        None => "[audit_log] enabled".into(),
                    },
                )
            }
            "sssvlv" => (
                Fate::Changed,
                "server-side sorting (RFC 2891) is built into Larch; virtual list view is not supported"
                    .into(),
            ),
            "lastbind" => {
                plan.maintained.push("authTimestamp".into());
                (Fate::Dropped, "Larch does not record the last bind time".into())
            }
            "dynlist" | "autogroup" | "dyngroup" => {
                (Fate::Dropped, "Larch has no dynamic groups or lists yet".into())
            }
            "chain" | "rwm" | "translucent" | "pcache" => (
                Fate::Dropped,
                "Larch is not a proxy and does not rewrite requests".into(),
            ),
            other => (
                Fate::Dropped,
                format!("Larch has no equivalent of the {other} overlay"),
            ),
        };
        report.push(fate, what, note, Some(&o.origin));
        for d in &o.directives {
            let sub = match fate {
                Fate::Dropped => "dropped with its overlay",
                Fate::Changed | Fate::Carried => "read for the overlay's mapping",
            };
            report.push(
                if fate == Fate::Dropped {
                    Fate::Dropped
                } else {
                    Fate::Carried
                },
                d.text.clone(),
                sub,
                Some(&d.origin),
            );
        }
    }
}

/// What becomes of a memberof overlay: carried when it keeps what Larch keeps (memberOf
/// of groupOfNames/member, groupOfUniqueNames/uniqueMember, groupOfMembers/member),
/// changed in meaning otherwise.
fn memberof_fate(o: &Overlay) -> (Fate, String) {
    let class = setting(o, "memberof-group-oc").unwrap_or("groupOfNames");
    let member = setting(o, "memberof-member-ad").unwrap_or("member");
    let member_of = setting(o, "memberof-memberof-ad").unwrap_or("memberOf");
    let pair = (class.to_ascii_lowercase(), member.to_ascii_lowercase());
    let same = LARCH_GROUPS
        .iter()
        .any(|(c, m)| pair == (c.to_string(), m.to_string()))
        && member_of.eq_ignore_ascii_case("memberOf");
    let larch = "[groups] member_of = true: Larch keeps memberOf on the entries groupOfNames and \
                 groupOfMembers (member) and groupOfUniqueNames (uniqueMember) list, in the \
                 transaction of the write, and recomputes every value from the groups at import";
    if same {
        (Fate::Carried, larch.into())
    } else {
        (
            Fate::Changed,
            format!("{larch}; slapd kept {member_of} for {class} ({member}), which Larch does not"),
        )
    }
}

/// What becomes of a refint overlay: carried when its attributes are among `member` and
/// `uniqueMember` (Larch keeps both), changed in meaning when it names others.
fn refint_fate(o: &Overlay) -> (Fate, String) {
    let attrs: Vec<&str> = o
        .directives
        .iter()
        .filter(|d| d.name == "refint_attributes")
        .flat_map(|d| d.args.iter().map(String::as_str))
        .collect();
    let others: Vec<&str> = attrs
        .iter()
        .copied()
        .filter(|a| !a.eq_ignore_ascii_case("member") && !a.eq_ignore_ascii_case("uniqueMember"))
        .collect();
    let larch = "[groups] referential_integrity = true: deleting or renaming an entry changes the \
                 member and uniqueMember values that name it, in the same transaction";
    if others.is_empty() {
        (Fate::Carried, larch.into())
    } else {
        (
            Fate::Changed,
            format!(
                "{larch}; slapd also kept {}, which Larch does not",
                others.join(", ")
            ),
        )
    }
}

/// What becomes of a unique overlay: each of its `unique_uri`s (`[ignore|strict]
/// ldap:///BASE?ATTRS?SCOPE?FILTER`) gives a rule of `[uniqueness]` of its own, with its
/// attributes and its base as the rule's subtree (slapd checks each URI on its own too);
/// the older `unique_attributes`/`unique_base` give one rule together. Larch takes no filter,
/// and slapd's `ignore` (empty values allowed) has no equivalent: changed in meaning then.
fn unique_fate(o: &Overlay, plan: &mut UniquenessPlan) -> (Fate, String) {
    let mut changed = Vec::new();
    let mut legacy = UniqueRulePlan::default();
    for d in &o.directives {
        match d.name.as_str() {
            "unique_uri" => {
                for uri in d.args.iter().filter(|a| a.starts_with("ldap://")) {
                    let rest = uri.trim_start_matches("ldap://");
                    let mut parts = rest.splitn(4, '?');
                    let base = parts
                        .next()
                        .unwrap_or("")
                        .trim_start_matches(|c| c != '/')
                        .trim_start_matches('/');
                    let attrs = parts.next().unwrap_or("");
                    let _scope = parts.next();
                    if parts.next().is_some_and(|f| !f.is_empty()) {
                        changed.push(format!("the filter of {uri}"));
                    }
                    let mut rule = UniqueRulePlan::default();
                    if !base.is_empty() {
                        rule.subtrees.push(base.to_string());
                    }
                    for a in attrs.split(',').filter(|a| !a.is_empty()) {
                        if !rule.attributes.iter().any(|x| x.eq_ignore_ascii_case(a)) {
                            rule.attributes.push(a.to_string());
                        }
                    }
                    if rule.attributes.is_empty() {
                        changed.push(format!("{uri}, which names no attribute"));
                    } else {
                        plan.rules.push(rule);
                    }
                }
                if d.args.first().is_some_and(|a| a == "ignore") {
                    changed.push("`ignore` (Larch checks empty values too)".into());
                }
            }
            "unique_attributes" => legacy.attributes.extend(d.args.iter().cloned()),
            "unique_base" => legacy.subtrees.extend(d.args.iter().cloned()),
            _ => {}
        }
    }
    if !legacy.attributes.is_empty() {
        plan.rules.push(legacy);
    } else if !legacy.subtrees.is_empty() {
        changed.push("`unique_base` without `unique_attributes`".into());
    }
    let rules: Vec<String> = plan
        .rules
        .iter()
        .map(|r| {
            if r.subtrees.is_empty() {
                format!("{:?}", r.attributes)
            } else {
                format!("{:?} below {:?}", r.attributes, r.subtrees)
            }
        })
        .collect();
    let larch = format!(
        "[uniqueness] rules {}: refused with constraintViolation inside the write transaction",
        rules.join(", ")
    );
    if changed.is_empty() {
        (Fate::Carried, larch)
    } else {
        (
            Fate::Changed,
            format!("{larch}; not kept: {}", changed.join(", ")),
        )
    }
}

/// The first value of an overlay's directive `name`.
fn setting<'a>(o: &'a Overlay, name: &str) -> Option<&'a str> {
    o.directives
        .iter()
        .find(|d: &&Directive| d.name == name)
        .and_then(|d| d.args.first())
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::model::Origin;

    fn overlay(name: &str, directives: &[(&str, &str)]) -> Overlay {
        Overlay {
            name: name.into(),
            origin: Origin::new("slapd.conf", 9),
            directives: directives
                .iter()
                .map(|(n, v)| Directive {
                    name: n.to_string(),
                    args: vec![v.to_string()],
                    text: format!("{n} {v}"),
                    origin: Origin::new("slapd.conf", 10),
                })
                .collect(),
        }
    }

    #[test]
    fn overlays_map_or_drop() {
        let mut plan = OverlayPlan::default();
        let mut report = Report::default();
        map(
            &[
                overlay("memberof", &[("memberof-group-oc", "groupOfNames")]),
                overlay("refint", &[]),
                overlay("accesslog", &[("logdb", "cn=accesslog")]),
                overlay("auditlog", &[("auditlog", "/var/log/audit.ldif")]),
            ],
            &mut plan,
            &mut report,
        );
        assert!(plan.maintained.is_empty());
        assert_eq!(plan.log_databases, ["cn=accesslog"]);
        assert_eq!(plan.audit_log, Some(Some("/var/log/audit.ldif".into())));
        assert_eq!(
            plan.groups,
            GroupsPlan {
                member_of: true,
                referential_integrity: true,
                empty_group_member: None,
            }
        );
        assert_eq!(report.count(Fate::Dropped), 0);
        // accesslog.
        assert_eq!(report.count(Fate::Changed), 1);
    }

    #[test]
    fn groups_slapd_keeps_otherwise_are_changed_in_meaning() {
        let mut plan = OverlayPlan::default();
        let mut report = Report::default();
        map(
            &[
                overlay("memberof", &[("memberof-group-oc", "posixGroup")]),
                overlay(
                    "refint",
                    &[("refint_attributes", "owner"), ("refint_nothing", "cn=nobody")],
                ),
            ],
            &mut plan,
            &mut report,
        );
        assert!(plan.groups.member_of && plan.groups.referential_integrity);
        assert_eq!(plan.groups.empty_group_member.as_deref(), Some("cn=nobody"));
        assert_eq!(report.count(Fate::Changed), 2);
        assert_eq!(report.count(Fate::Dropped), 0);
    }

    #[test]
    fn each_unique_uri_is_a_rule_of_its_own() {
        let mut plan = OverlayPlan::default();
        let mut report = Report::default();
        map(
            &[overlay(
                "unique",
                &[
                    ("unique_uri", "ldap:///?uid?sub"),
                    ("unique_uri", "ldap:///ou=people,dc=example,dc=com?mail,MAIL?sub"),
                ],
            )],
            &mut plan,
            &mut report,
        );
        let rule = |attributes: &[&str], subtrees: &[&str]| UniqueRulePlan {
            attributes: attributes.iter().map(|s| s.to_string()).collect(),
            subtrees: subtrees.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(
            plan.uniqueness,
            Some(UniquenessPlan {
                rules: vec![
                    rule(&["uid"], &[]),
                    rule(&["mail"], &["ou=people,dc=example,dc=com"]),
                ]
            })
        );
        assert_eq!(report.count(Fate::Changed), 0);
        assert_eq!(report.count(Fate::Dropped), 0);
    }
}
