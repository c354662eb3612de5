//! slapd overlays as Larch features: what exists in Larch today is mapped (auditlog to the
//! audit log; accesslog, changed in meaning, to the same; sssvlv's sorting is built in),
//! everything else is listed as not carried over, with the attributes the overlay kept on
//! entries, which the data step leaves out where Larch's schema does not define them.

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
}

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
                let attr = setting(o, "memberof-memberof-ad").unwrap_or("memberOf");
                plan.maintained.push(attr.to_string());
                (
                    Fate::Dropped,
                    format!(
                        "Larch does not maintain {attr} yet; the group entries' member values are \
                         kept, and {attr} values are left out of the data unless the schema defines it"
                    ),
                )
            }
            "refint" => (
                Fate::Dropped,
                "Larch does not keep references consistent on rename and delete yet".into(),
            ),
            "unique" => (
                Fate::Dropped,
                "Larch does not enforce attribute uniqueness yet".into(),
            ),
            "ppolicy" => {
                plan.maintained
                    .extend(PPOLICY_ATTRIBUTES.iter().map(|s| s.to_string()));
                (
                    Fate::Dropped,
                    "Larch has no password policies yet (its failed-bind throttle, [bind_throttle], \
                     slows guessing but does not lock accounts); pwd* values are left out of the \
                     data unless the schema defines them"
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
        assert_eq!(plan.maintained, ["memberOf"]);
        assert_eq!(plan.log_databases, ["cn=accesslog"]);
        assert_eq!(plan.audit_log, Some(Some("/var/log/audit.ldif".into())));
        // memberof, its directive and refint.
        assert_eq!(report.count(Fate::Dropped), 3);
        assert_eq!(report.count(Fate::Changed), 1);
    }
}
