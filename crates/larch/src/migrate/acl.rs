//! `access to <what> by <who> <access> [control] ...` (slapd.access(5)), from `access`
//! lines and `olcAccess` values, as Larch's `[[access]]` rules, which follow the same
//! evaluation (first matching rule, first matching clause, implicit `by * none`).
//!
//! Mapping one rule, in steps:
//! 1. split the words into the *what* and its `by` clauses;
//! 2. the *what*: `*`, `dn.<style>=`, `filter=`, `attrs=`; a regular expression maps only
//!    in the anchored forms that name a subtree, its children, one level or one entry
//!    ([`simple_regex`]); `val=`, `@class` and `!class` attribute lists do not map and
//!    the rule is dropped;
//! 3. a database's rule is confined to the database's suffix (slapd applies it only to
//!    entries of that database), since Larch's rules are one list for every suffix;
//! 4. each clause: `*`, `anonymous`, `users`, `self`, `dn.<style>=`, `group=` (with
//!    member or uniqueMember), `peername.ip=`; a clause that needs anything else (sets,
//!    `dynacl`, SSF, `dnattr`, `continue`/`break`, `self` access levels) is dropped and
//!    listed: requesters it matched fall to the next clause, as if it were not there;
//! 5. a rule with no clause left is dropped (its implicit `by * none` would remain in
//!    slapd; Larch's next rule would decide instead), and so listed.

use super::model::{dn_key, within, Directive, Origin};
use super::report::{Fate, Report};

/// A Larch `[[access]]` rule, ready to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `dn`.
    pub dn: Option<String>,
    /// `scope` (with `dn`).
    pub scope: Option<&'static str>,
    /// `filter`.
    pub filter: Option<String>,
    /// `attrs`.
    pub attrs: Option<Vec<String>>,
    /// `by`.
    pub by: Vec<Clause>,
    /// The line it came from.
    pub origin: Origin,
    /// The rule as written.
    pub text: String,
}

/// One `by` clause of a [`Rule`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clause {
    /// `who`.
    pub who: Option<&'static str>,
    /// `dn`.
    pub dn: Option<String>,
    /// `scope` of `dn`.
    pub scope: Option<&'static str>,
    /// `group`.
    pub group: Option<String>,
    /// `peer`.
    pub peer: Option<String>,
    /// `access`.
    pub access: String,
}

/// What an `access` directive became: the rule (if any is left) and the report items.
#[derive(Debug, Default)]
pub struct Mapped {
    /// The rule to write.
    pub rule: Option<Rule>,
    /// What was carried, changed or dropped.
    pub report: Report,
}

/// slapd's access levels, which Larch's rule language names the same.
const LEVELS: &[&str] = &[
    "none", "disclose", "auth", "compare", "search", "read", "write", "add", "delete", "manage",
];

/// The DN suffix of the identities slapd gives ldapi:// clients by their process's user.
const PEERCRED: &str = "cn=peercred,cn=external,cn=auth";

/// Maps one `access` directive. `suffix` is its database's suffix (`None` for the global
/// section's rules, which apply to every entry).
pub fn map(d: &Directive, suffix: Option<&str>) -> Mapped {
    let mut out = Mapped::default();
    let what_text = format!("access {}", d.rest());
    let drop_rule = |out: &mut Mapped, why: String| {
        out.report.push(Fate::Dropped, &what_text, why, Some(&d.origin));
    };
    let args = &d.args;
    if args.first().map(|w| w.to_ascii_lowercase()) != Some("to".into()) {
        drop_rule(&mut out, "not an access rule (`to` expected first)".into());
        return out;
    }
    let by_at: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(_, w)| w.eq_ignore_ascii_case("by"))
        .map(|(i, _)| i)
        .collect();
    let what_end = by_at.first().copied().unwrap_or(args.len());
    let mut rule = Rule {
        dn: None,
        scope: None,
        filter: None,
        attrs: None,
        by: Vec::new(),
        origin: d.origin.clone(),
        text: what_text.clone(),
    };
    if let Err(why) = what(&args[1..what_end], &mut rule) {
        drop_rule(&mut out, why);
        return out;
    }
    if is_always_readable(&rule) {
        out.report.push(
            Fate::Carried,
            &what_text,
            "Larch lets everyone read the root DSE and cn=Subschema",
            Some(&d.origin),
        );
        return out;
    }
    if let Some(s) = suffix {
        if let Err(why) = confine(&mut rule, s) {
            out.report.push(Fate::Changed, &what_text, why, Some(&d.origin));
            return out;
        }
    }
    let mut only_break = true;
    let mut dropped_clauses = 0;
    for (n, &start) in by_at.iter().enumerate() {
        let end = by_at.get(n + 1).copied().unwrap_or(args.len());
        let words = &args[start + 1..end];
        let clause_text = format!("by {}", words.join(" "));
        match clause(words) {
            Ok(ClauseOutcome::Mapped(c)) => {
                only_break = false;
                rule.by.push(c);
            }
            Ok(ClauseOutcome::Break) => {}
            Err(why) => {
                dropped_clauses += 1;
                out.report.push(
                    Fate::Dropped,
                    format!("{what_text}: {clause_text}"),
                    format!("{why}; requesters it matched fall to the next clause"),
                    Some(&d.origin),
                );
            }
        }
    }
    let had_break = by_at.iter().any(|&s| {
        args.get(s + 1..)
            .is_some_and(|w| w.last().is_some_and(|l| l.eq_ignore_ascii_case("break")))
    });
    if rule.by.is_empty() {
        if only_break && dropped_clauses > 0 {
            // `to X by <dropped> ... by * break`: without the dropped clause the rule
            // passes everyone on to the next rule, which is what leaving it out does.
            out.report.push(
                Fate::Changed,
                &what_text,
                "left out: with its unmappable clauses gone it only passes requesters on to the next rule",
                Some(&d.origin),
            );
        } else {
            drop_rule(&mut out, "no clause of it maps to Larch".into());
        }
        return out;
    }
    if had_break {
        out.report.push(
            Fate::Dropped,
            format!("{what_text}: by * break"),
            "Larch has no `break`: requesters no clause matches get no access from this rule \
             instead of going on to the next",
            Some(&d.origin),
        );
    }
    if dropped_clauses == 0 && !had_break {
        out.report
            .push(Fate::Carried, &what_text, "[[access]] rule", Some(&d.origin));
    }
    out.rule = Some(rule);
    out
}

/// Reads the *what* words into `rule`.
fn what(words: &[String], rule: &mut Rule) -> Result<(), String> {
    for w in words {
        if w == "*" {
            continue;
        }
        let Some((key, value)) = w.split_once('=') else {
            return Err(format!(
                "`{w}`: not a clause of the <what> slapd.access(5) describes"
            ));
        };
        let lower = key.to_ascii_lowercase();
        let (name, style) = match lower.split_once('.') {
            Some((n, s)) => (n.to_string(), Some(s.to_string())),
            None => (lower.clone(), None),
        };
        match name.as_str() {
            "dn" => {
                let (dn, scope) = dn_pattern(value, style.as_deref(), true)?;
                rule.dn = dn;
                rule.scope = scope;
            }
            "filter" => rule.filter = Some(value.to_string()),
            "attrs" | "attr" => {
                let mut names = Vec::new();
                for a in value.split(',') {
                    let a = a.trim();
                    if a.starts_with('@') || a.starts_with('!') {
                        return Err(format!(
                            "`{a}`: attributes named by object class have no equivalent in Larch"
                        ));
                    }
                    if a.contains(';') {
                        return Err(format!(
                            "`{a}`: attribute options are not accepted in Larch's rules"
                        ));
                    }
                    names.push(a.to_string());
                }
                rule.attrs = Some(names);
            }
            "val" => return Err("value-specific rules (`val=`) have no equivalent in Larch".into()),
            _ => return Err(format!("`{w}`: `{name}` has no equivalent in Larch's rules")),
        }
    }
    Ok(())
}

/// True for the rules on the root DSE and cn=Subschema that grant read or more to
/// everyone: Larch always does.
fn is_always_readable(rule: &Rule) -> bool {
    let Some(dn) = &rule.dn else { return false };
    let key = dn_key(dn);
    rule.scope == Some("base") && (key.is_empty() || key == "cn=subschema")
}

/// Confines `rule` to the database whose suffix is `suffix`.
fn confine(rule: &mut Rule, suffix: &str) -> Result<(), String> {
    let s = dn_key(suffix);
    let Some(dn) = &rule.dn else {
        rule.dn = Some(suffix.to_string());
        rule.scope = Some("subtree");
        return Ok(());
    };
    let d = dn_key(dn);
    if within(&d, &s) {
        return Ok(());
    }
    if within(&s, &d) {
        match rule.scope {
            Some("subtree") | None => {
                rule.dn = Some(suffix.to_string());
                rule.scope = Some("subtree");
                return Ok(());
            }
            Some("children") => {
                rule.dn = Some(suffix.to_string());
                rule.scope = Some("subtree");
                return Ok(());
            }
            _ => {}
        }
    }
    Err(format!(
        "left out: it names no entry of the database of `{suffix}`, so slapd never applied it there"
    ))
}

enum ClauseOutcome {
    Mapped(Clause),
    /// `by * break`.
    Break,
}

/// Maps the words of one `by` clause.
fn clause(words: &[String]) -> Result<ClauseOutcome, String> {
    let mut c = Clause::default();
    let mut access: Option<String> = None;
    let mut control = None;
    let mut who_words = Vec::new();
    for w in words {
        let lower = w.to_ascii_lowercase();
        if access.is_some() {
            if matches!(lower.as_str(), "stop" | "continue" | "break") && control.is_none() {
                control = Some(lower);
                continue;
            }
            return Err(format!("`{w}` after the access level"));
        }
        if is_access(&lower) {
            access = Some(lower);
        } else if matches!(lower.as_str(), "stop" | "continue" | "break") {
            control = Some(lower);
        } else {
            who_words.push(w.clone());
        }
    }
    let control = control.unwrap_or_else(|| "stop".into());
    if control == "break" && who_words.iter().all(|w| w == "*") && access.is_none() {
        return Ok(ClauseOutcome::Break);
    }
    if control != "stop" {
        return Err(format!("Larch has no `{control}` (privileges do not accumulate)"));
    }
    for w in &who_words {
        who(w, &mut c)?;
    }
    if c.who.is_none() && c.dn.is_none() && c.group.is_none() && c.peer.is_none() {
        return Err("no requester named".into());
    }
    let access = access.unwrap_or_else(|| "none".into());
    c.access = match access.chars().next() {
        Some('=') => access,
        Some('+') => format!("={}", &access[1..]),
        Some('-') => "none".into(),
        _ if LEVELS.contains(&access.as_str()) => access,
        _ => return Err(format!("`{access}`: Larch has no `self` access levels")),
    };
    Ok(ClauseOutcome::Mapped(c))
}

/// True when `word` (lowercase) is an access level or privileges.
fn is_access(word: &str) -> bool {
    let level = word
        .strip_prefix("realself")
        .or_else(|| word.strip_prefix("self"))
        .unwrap_or(word);
    LEVELS.contains(&level) || word.starts_with(['=', '+', '-'])
}

/// Reads one requester condition into `c`.
fn who(word: &str, c: &mut Clause) -> Result<(), String> {
    let lower = word.to_ascii_lowercase();
    let keyword = match lower.as_str() {
        "*" => Some("*"),
        "anonymous" => Some("anonymous"),
        "users" => Some("users"),
        "self" => Some("self"),
        _ => None,
    };
    if let Some(k) = keyword {
        if c.who.is_some() {
            return Err("two requester keywords in one clause".into());
        }
        c.who = Some(k);
        return Ok(());
    }
    let Some((key, value)) = word.split_once('=') else {
        return Err(format!("`{word}` has no equivalent in Larch"));
    };
    let key = key.to_ascii_lowercase();
    let (name, style) = match key.split_once('.') {
        Some((n, s)) => (n, Some(s)),
        None => (key.as_str(), None),
    };
    let (group_name, group_parts) = match name.split_once('/') {
        Some((g, rest)) => (g, Some(rest)),
        None => (name, None),
    };
    match group_name {
        "dn" => {
            if dn_key(value).ends_with(PEERCRED) {
                return Err(format!(
                    "`{word}`: an ldapi:// peer-credential identity; Larch has no ldapi listener"
                ));
            }
            if c.dn.is_some() {
                return Err("two DNs in one clause".into());
            }
            let (dn, scope) = dn_pattern(value, style, false)?;
            match dn {
                Some(dn) => {
                    c.dn = Some(dn);
                    c.scope = scope;
                }
                None if scope == Some("users") => c.who = Some("users"),
                None => c.who = Some("*"),
            }
            Ok(())
        }
        "group" => {
            if let Some(parts) = group_parts {
                let attr = parts.split('/').nth(1).unwrap_or("member");
                if !attr.eq_ignore_ascii_case("member") && !attr.eq_ignore_ascii_case("uniquemember") {
                    return Err(format!(
                        "`{word}`: Larch's groups are member or uniqueMember values"
                    ));
                }
            }
            if !matches!(style, None | Some("exact") | Some("base")) {
                return Err(format!("`{word}`: group patterns have no equivalent in Larch"));
            }
            c.group = Some(value.to_string());
            Ok(())
        }
        "peername" if style == Some("ip") => {
            c.peer = Some(peer(value).ok_or_else(|| format!("`{word}`: not an address Larch can match"))?);
            Ok(())
        }
        _ => Err(format!("`{word}`: `{name}` has no equivalent in Larch")),
    }
}

/// `peername.ip=10.0.0.0%255.0.0.0` -> `10.0.0.0/8`.
fn peer(value: &str) -> Option<String> {
    if value.contains('{') {
        return None;
    }
    let (addr, mask) = match value.split_once('%') {
        Some((a, m)) => (a, Some(m)),
        None => (value, None),
    };
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    let prefix = match mask {
        None => 32,
        Some(m) => {
            let bits = u32::from(m.parse::<std::net::Ipv4Addr>().ok()?);
            let ones = bits.leading_ones();
            if bits.checked_shl(ones).unwrap_or(0) != 0 {
                return None;
            }
            ones
        }
    };
    Some(if prefix == 32 {
        ip.to_string()
    } else {
        format!("{ip}/{prefix}")
    })
}

/// A DN pattern and its style as Larch's DN and scope. `None` DN means every entry (the
/// *what*) or, for a requester, anyone (`.*`) or any bound user (`.+`; scope `users`).
fn dn_pattern(
    value: &str,
    style: Option<&str>,
    is_what: bool,
) -> Result<(Option<String>, Option<&'static str>), String> {
    let style = match style {
        Some(s) => s.to_string(),
        None if looks_like_regex(value) => "regex".into(),
        None => "base".into(),
    };
    let scope = match style.as_str() {
        "base" | "baseobject" | "exact" => "base",
        "one" | "onelevel" => "one",
        "sub" | "subtree" => "subtree",
        "children" => "children",
        "regex" => {
            return match simple_regex(value) {
                Some(Regex::All) => Ok((None, None)),
                Some(Regex::NonEmpty) if is_what => Ok((None, None)),
                Some(Regex::NonEmpty) => Ok((None, Some("users"))),
                Some(Regex::Dn(dn, scope)) => Ok((Some(dn), Some(scope))),
                None => Err(format!(
                    "the regular expression `{value}` is not one of the forms Larch's DN scopes express \
                     (^DN$, ^(.+,)?DN$, ^.+,DN$, ^[^,]+,DN$)"
                )),
            };
        }
        other => return Err(format!("the DN style `{other}` has no equivalent in Larch")),
    };
    if value.contains('$') {
        return Err(format!(
            "`{value}`: substitutions from a regular expression have no equivalent in Larch"
        ));
    }
    Ok((Some(value.to_string()), Some(scope)))
}

/// The forms of regular expression a DN scope expresses.
#[derive(Debug, PartialEq, Eq)]
enum Regex {
    /// `.*`: everything.
    All,
    /// `.+`: any non-empty DN.
    NonEmpty,
    /// A DN and a scope.
    Dn(String, &'static str),
}

fn looks_like_regex(value: &str) -> bool {
    value.contains(['*', '+', '?', '(', ')', '[', ']', '^', '$', '|', '\\'])
}

/// The anchored forms: `^DN$` (base), `^(.+,)?DN$` or `^(.*,)?DN$` (subtree), `^.+,DN$` or
/// `^.*,DN$` (children), `^[^,]+,DN$` (one level); `.*` and `.+` alone. `\,` and `\.` in
/// the DN are taken as the characters.
fn simple_regex(pattern: &str) -> Option<Regex> {
    let p = pattern.trim();
    let bare = p.trim_start_matches('^').trim_end_matches('$');
    match bare {
        ".*" => return Some(Regex::All),
        ".+" => return Some(Regex::NonEmpty),
        _ => {}
    }
    let inner = p.strip_prefix('^')?.strip_suffix('$')?;
    let (rest, scope) = if let Some(r) = inner
        .strip_prefix("(.+,)?")
        .or_else(|| inner.strip_prefix("(.*,)?"))
    {
        (r, "subtree")
    } else if let Some(r) = inner.strip_prefix(".+,").or_else(|| inner.strip_prefix(".*,")) {
        (r, "children")
    } else if let Some(r) = inner.strip_prefix("[^,]+,") {
        (r, "one")
    } else {
        (inner, "base")
    };
    let unescaped = rest.replace("\\,", "").replace("\\.", "");
    if unescaped.contains(['*', '+', '?', '(', ')', '[', ']', '^', '$', '|', '\\', '.']) {
        return None;
    }
    Some(Regex::Dn(rest.replace("\\.", "."), scope))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn directive(text: &str) -> Directive {
        let words = super::super::words::split(text).unwrap();
        Directive {
            name: "access".into(),
            args: words,
            text: format!("access {text}"),
            origin: Origin::new("slapd.conf", 3),
        }
    }

    #[test]
    fn ordinary_rules_map() {
        let m = map(
            &directive("to attrs=userPassword by self write by anonymous auth by * none"),
            Some("dc=example,dc=com"),
        );
        let r = m.rule.unwrap();
        assert_eq!(r.dn.as_deref(), Some("dc=example,dc=com"));
        assert_eq!(r.scope, Some("subtree"));
        assert_eq!(r.attrs.as_deref(), Some(&["userPassword".to_string()][..]));
        assert_eq!(r.by.len(), 3);
        assert_eq!(r.by[0].who, Some("self"));
        assert_eq!(r.by[0].access, "write");
        assert_eq!(m.report.count(Fate::Dropped), 0);
        assert_eq!(m.report.count(Fate::Carried), 1);
    }

    #[test]
    fn who_forms() {
        let m = map(
            &directive(
                r#"to dn.subtree="ou=people,dc=example,dc=com" filter=(objectClass=person) by dn.exact="cn=a,dc=example,dc=com" write by group/groupOfUniqueNames/uniqueMember="cn=g,dc=example,dc=com" read by peername.ip=10.0.0.0%255.0.0.0 users =rsc by dn.regex="^(.+,)?ou=apps,dc=example,dc=com$" read"#,
            ),
            Some("dc=example,dc=com"),
        );
        let r = m.rule.unwrap();
        assert_eq!(r.dn.as_deref(), Some("ou=people,dc=example,dc=com"));
        assert_eq!(r.filter.as_deref(), Some("(objectClass=person)"));
        assert_eq!(r.by[0].dn.as_deref(), Some("cn=a,dc=example,dc=com"));
        assert_eq!(r.by[0].scope, Some("base"));
        assert_eq!(r.by[1].group.as_deref(), Some("cn=g,dc=example,dc=com"));
        assert_eq!(r.by[2].peer.as_deref(), Some("10.0.0.0/8"));
        assert_eq!(r.by[2].who, Some("users"));
        assert_eq!(r.by[2].access, "=rsc");
        assert_eq!(r.by[3].dn.as_deref(), Some("ou=apps,dc=example,dc=com"));
        assert_eq!(r.by[3].scope, Some("subtree"));
        assert_eq!(m.report.count(Fate::Dropped), 0);
    }

    #[test]
    fn unmappable_clauses_are_dropped_and_listed() {
        let m = map(
            &directive(
                r#"to * by ssf=128 users write by set="user/uid & [x]" read by dynacl/aci read by dnattr=manager write by * read"#,
            ),
            None,
        );
        let r = m.rule.unwrap();
        assert_eq!(r.by.len(), 1);
        assert_eq!(r.by[0].who, Some("*"));
        assert_eq!(m.report.count(Fate::Dropped), 4);
        let whats: Vec<&str> = m.report.items.iter().map(|i| i.what.as_str()).collect();
        assert!(whats[0].ends_with("by ssf=128 users write"), "{whats:?}");
        assert!(whats[1].contains("set="), "{whats:?}");
        assert!(whats[2].contains("dynacl/aci"), "{whats:?}");
    }

    #[test]
    fn unmappable_what_drops_the_rule() {
        let m = map(
            &directive(r#"to dn.regex="^uid=([^,]+),ou=p$" by dn.exact="$1" write"#),
            None,
        );
        assert!(m.rule.is_none());
        assert_eq!(m.report.count(Fate::Dropped), 1);
        let m = map(&directive("to attrs=@inetOrgPerson by * read"), None);
        assert!(m.rule.is_none());
    }

    #[test]
    fn debian_peercred_rule_is_left_out() {
        let m = map(
            &directive(
                "to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by * break",
            ),
            None,
        );
        assert!(m.rule.is_none());
        assert_eq!(m.report.count(Fate::Dropped), 1);
        assert_eq!(m.report.count(Fate::Changed), 1);
    }

    #[test]
    fn root_dse_and_subschema_rules() {
        let m = map(&directive(r#"to dn.base="" by * read"#), None);
        assert!(m.rule.is_none());
        assert_eq!(m.report.count(Fate::Carried), 1);
        let m = map(&directive(r#"to dn.base="cn=Subschema" by * read"#), None);
        assert!(m.rule.is_none());
    }

    #[test]
    fn confined_to_the_database() {
        let m = map(
            &directive(r#"to dn.subtree="dc=org" by * read"#),
            Some("dc=example,dc=com"),
        );
        assert!(m.rule.is_none());
        assert_eq!(m.report.count(Fate::Changed), 1);
        let m = map(
            &directive(r#"to dn.subtree="" by * read"#),
            Some("dc=example,dc=com"),
        );
        assert_eq!(m.rule.unwrap().dn.as_deref(), Some("dc=example,dc=com"));
    }

    #[test]
    fn regex_forms() {
        assert_eq!(simple_regex(".*"), Some(Regex::All));
        assert_eq!(
            simple_regex("^.+,ou=p,dc=x$"),
            Some(Regex::Dn("ou=p,dc=x".into(), "children"))
        );
        assert_eq!(
            simple_regex("^[^,]+,ou=p,dc=x$"),
            Some(Regex::Dn("ou=p,dc=x".into(), "one"))
        );
        assert_eq!(
            simple_regex("^cn=a,dc=x$"),
            Some(Regex::Dn("cn=a,dc=x".into(), "base"))
        );
        assert_eq!(simple_regex("^uid=(.*),dc=x$"), None);
        assert_eq!(simple_regex("cn=a,dc=x"), None);
    }

    #[test]
    fn peers() {
        assert_eq!(peer("127.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(peer("10.1.0.0%255.255.0.0").as_deref(), Some("10.1.0.0/16"));
        assert_eq!(peer("10.0.0.0%255.0.255.0"), None);
        assert_eq!(peer("10.0.0.1{389}"), None);
    }
}
