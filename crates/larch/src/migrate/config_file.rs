//! `larch.toml` from a [`Plan`]: the text, with a comment before each section saying
//! where it came from, and only the keys slapd's configuration set (the rest keep Larch's
//! defaults).

use super::acl::Rule;
use super::overlays::{UniqueRulePlan, UniquenessPlan};
use super::plan::Plan;

/// What the data step found that the file depends on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataFacts {
    /// Some userPassword values are cleartext (slapd verifies them).
    pub cleartext_passwords: bool,
}

/// A TOML string.
pub fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn list(items: &[String]) -> String {
    format!(
        "[{}]",
        items.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ")
    )
}

/// The text of `larch.toml`; `skip_rules` are indexes of `plan.access` left out.
pub fn render(plan: &Plan, facts: DataFacts, skip_rules: &[usize], skip_indexes: &[String]) -> String {
    let mut t = String::new();
    t.push_str("# Written by `larch migrate` from a slapd configuration; see the migration report.\n\n");
    t.push_str("[server]\n");
    t.push_str(
        "# slapd's listeners (-h) are on its command line, not in its configuration: set them here.\n",
    );
    t.push_str("listen = [\"ldap://127.0.0.1:3389\"]\n");
    t.push_str("data_dir = \"data\"\n\n");

    t.push_str("[directory]\n");
    t.push_str(&format!("suffix = {}\n", quote(&plan.suffixes[0])));
    if plan.suffixes.len() > 1 {
        t.push_str(&format!("extra_suffixes = {}\n", list(&plan.suffixes[1..])));
    }
    if let Some(dn) = &plan.admin.dn {
        t.push_str(&format!("admin_dn = {}\n", quote(dn)));
    }
    if let Some(b) = plan.allow_anonymous_bind {
        t.push_str(&format!("allow_anonymous_bind = {b}\n"));
    }
    if let Some(b) = plan.allow_unauthenticated_bind {
        t.push_str(&format!("allow_unauthenticated_bind = {b}\n"));
    }
    t.push('\n');

    t.push_str("[schema]\n");
    t.push_str(&format!("builtin = {}\n", quote(plan.builtin)));
    let files: Vec<String> = plan
        .schema_files
        .iter()
        .map(|f| format!("schema/{}", f.name))
        .collect();
    t.push_str(&format!("files = {}\n\n", list(&files)));

    let indexes: Vec<&(String, Vec<&'static str>)> = plan
        .indexes
        .iter()
        .filter(|(a, _)| !skip_indexes.iter().any(|s| s.eq_ignore_ascii_case(a)))
        .collect();
    if !indexes.is_empty() {
        t.push_str("# slapd's index lines (the table replaces Larch's default indexes).\n[indexes]\n");
        for (attr, kinds) in indexes {
            let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
            t.push_str(&format!("{} = {}\n", quote(attr), list(&kinds)));
        }
        t.push('\n');
    }

    let l = &plan.limits;
    if l.size.is_some()
        || l.time.is_some()
        || l.lookthrough.is_some()
        || l.idle.is_some()
        || l.write.is_some()
    {
        t.push_str("[limits]\n");
        if let Some(n) = l.size {
            t.push_str(&format!("size_limit = {n}\n"));
        }
        if let Some(n) = l.time {
            t.push_str(&format!("time_limit = \"{n}s\"\n"));
        }
        if let Some(n) = l.lookthrough {
            t.push_str(&format!("lookthrough_limit = {n}\n"));
        }
        if let Some(n) = l.idle {
            t.push_str(&if n == 0 {
                "idle_timeout = \"0\"\n".to_string()
            } else {
                format!("idle_timeout = \"{n}s\"\n")
            });
        }
        if let Some(n) = l.write {
            t.push_str(&format!("write_timeout = \"{n}s\"\n"));
        }
        t.push('\n');
    }

    if let (Some(cert), Some(key)) = (&plan.tls.certificate, &plan.tls.key) {
        t.push_str("[tls]\n");
        t.push_str(&format!("certificate = {}\nkey = {}\n", quote(cert), quote(key)));
        if let Some(ca) = &plan.tls.client_ca {
            t.push_str(&format!("client_ca = {}\n", quote(ca)));
            let mode = plan.tls.client_certificates.unwrap_or("none");
            t.push_str(&format!("client_certificates = {}\n", quote(mode)));
        }
        t.push('\n');
    }

    if plan.password_scheme.is_some() || facts.cleartext_passwords {
        t.push_str("[password]\n");
        if let Some(s) = plan.password_scheme {
            t.push_str(&format!("default_scheme = {}\n", quote(s)));
        }
        if facts.cleartext_passwords {
            t.push_str(
                "# Some userPassword values are cleartext, which slapd verifies.\nallow_cleartext = true\n",
            );
        }
        t.push('\n');
    }

    t.push_str(&groups_table(plan));
    t.push_str(&uniqueness_table(plan.uniqueness.as_ref()));

    if let Some(path) = &plan.audit_log {
        t.push_str("[audit_log]\nenabled = true\n");
        if let Some(p) = path {
            t.push_str(&format!("path = {}\n", quote(p)));
        }
        t.push('\n');
    }

    for (i, rule) in plan.access.iter().enumerate() {
        if skip_rules.contains(&i) {
            continue;
        }
        t.push_str(&access_rule(rule));
    }
    t
}

/// `[groups]`: each hook on where slapd had its overlay, off where it had none (so the
/// directory keeps no memberOf, or no references, that slapd did not keep).
fn groups_table(plan: &Plan) -> String {
    let g = &plan.groups;
    let mut t = String::from("[groups]\n");
    if !g.member_of {
        t.push_str("# slapd had no memberof overlay.\n");
    }
    t.push_str(&format!("member_of = {}\n", g.member_of));
    if !g.referential_integrity {
        t.push_str("# slapd had no refint overlay.\n");
    }
    t.push_str(&format!("referential_integrity = {}\n", g.referential_integrity));
    if let Some(nothing) = &g.empty_group_member {
        t.push_str(&format!("empty_group_member = {}\n", quote(nothing)));
    }
    t.push('\n');
    t
}

/// `[uniqueness]`: the unique overlays' rules, the first as the default rule and each
/// other as a `[[uniqueness.rule]]` table, or none where slapd had no unique overlay
/// (Larch's default keeps `uid` unique).
fn uniqueness_table(uniqueness: Option<&UniquenessPlan>) -> String {
    let list = |items: &[String]| {
        let quoted: Vec<String> = items.iter().map(|i| quote(i)).collect();
        format!("[{}]", quoted.join(", "))
    };
    let keys = |t: &mut String, r: &UniqueRulePlan| {
        t.push_str(&format!("attributes = {}\n", list(&r.attributes)));
        if !r.subtrees.is_empty() {
            t.push_str(&format!("subtrees = {}\n", list(&r.subtrees)));
        }
    };
    match uniqueness.map(|u| u.rules.as_slice()) {
        None => "[uniqueness]\n# slapd had no unique overlay.\nattributes = []\n\n".to_string(),
        Some([]) => {
            "[uniqueness]\n# slapd's unique overlay named no attribute.\nattributes = []\n\n".to_string()
        }
        Some([first, others @ ..]) => {
            let mut t = "[uniqueness]\n".to_string();
            keys(&mut t, first);
            for r in others {
                t.push_str("\n[[uniqueness.rule]]\n");
                keys(&mut t, r);
            }
            t.push('\n');
            t
        }
    }
}

/// One `[[access]]` table, with its slapd origin in a comment.
fn access_rule(r: &Rule) -> String {
    let mut t = format!("# {}: {}\n[[access]]\n", r.origin, r.text.replace('\n', " "));
    if let Some(dn) = &r.dn {
        t.push_str(&format!("dn = {}\n", quote(dn)));
        if let Some(s) = r.scope {
            t.push_str(&format!("scope = {}\n", quote(s)));
        }
    }
    if let Some(f) = &r.filter {
        t.push_str(&format!("filter = {}\n", quote(f)));
    }
    if let Some(a) = &r.attrs {
        t.push_str(&format!("attrs = {}\n", list(a)));
    }
    t.push_str("by = [\n");
    for c in &r.by {
        let mut parts = Vec::new();
        if let Some(w) = c.who {
            parts.push(format!("who = {}", quote(w)));
        }
        if let Some(dn) = &c.dn {
            parts.push(format!("dn = {}", quote(dn)));
            if let Some(s) = c.scope {
                parts.push(format!("scope = {}", quote(s)));
            }
        }
        if let Some(g) = &c.group {
            parts.push(format!("group = {}", quote(g)));
        }
        if let Some(p) = &c.peer {
            parts.push(format!("peer = {}", quote(p)));
        }
        parts.push(format!("access = {}", quote(&c.access)));
        t.push_str(&format!("  {{ {} }},\n", parts.join(", ")));
    }
    t.push_str("]\n\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_server::config::{ServerConfig, UniqueRuleSettings};

    #[test]
    fn unique_rules_after_the_first_are_rule_tables_the_server_reads() {
        let rule = |attributes: &[&str], subtrees: &[&str]| UniqueRulePlan {
            attributes: attributes.iter().map(|s| s.to_string()).collect(),
            subtrees: subtrees.iter().map(|s| s.to_string()).collect(),
        };
        let plan = UniquenessPlan {
            rules: vec![
                rule(&["uid"], &[]),
                rule(&["mail"], &["ou=people,dc=example,dc=com"]),
            ],
        };
        let text = uniqueness_table(Some(&plan));
        let c = ServerConfig::from_toml_str(&text).unwrap();
        assert_eq!(c.uniqueness.attributes, ["uid"]);
        assert!(c.uniqueness.subtrees.is_empty());
        assert_eq!(
            c.uniqueness.rules,
            [UniqueRuleSettings {
                attributes: vec!["mail".into()],
                subtrees: vec!["ou=people,dc=example,dc=com".into()],
            }]
        );
        let off = ServerConfig::from_toml_str(&uniqueness_table(None)).unwrap();
        assert!(off.uniqueness.attributes.is_empty() && off.uniqueness.rules.is_empty());
    }
}
