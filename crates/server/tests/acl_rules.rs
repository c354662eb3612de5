//! The access rule language and its evaluator.
//!
//! - Every refusal of the compiler (`[[access]]`, `[access_proxy]`) with its key path and
//!   message.
//! - Privileges, scopes, IP networks and DN levels against expected values.
//! - The evaluator against a reference model of OpenLDAP's semantics written here from
//!   `slapd.access(5)` on plain strings: random rule sets, requesters, clients, entries,
//!   whats and privileges, decided by both; the answers must be equal. Checks run on stored
//!   entries and, for the same entries given by name, on the path an Add's new entry takes.
//! - The default policy documented in `docs/security.md` is the one the server runs.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::check::check_entry;
use larch_model::entry::{Entry, Options};
use larch_server::acl::entry::{levels_below, stored_levels_below};
use larch_server::acl::rule::{IpNet, Keyword};
use larch_server::acl::{
    default_policy, AccessRules, EntryAccess, Privileges, Scope, Target, What, DEFAULT_POLICY,
};
use larch_server::client::Client;
use larch_server::config::access::{AccessConfig, ClauseConfig, RuleConfig, WhoConfig};
use larch_server::config::ServerConfig;
use larch_server::directory::Directory;
use larch_server::identity::Identity;
use larch_server::opattrs::{on_add, OpStamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
mod common;
use common::{fresh_data_dir, test_store};

// ---------------------------------------------------------------------------------------
// The compiler's refusals.

/// The refusal of `text`: its key and its display.
fn refusal(text: &str) -> (String, String) {
    let e = ServerConfig::from_toml_str(text).expect_err(text);
    (e.key().unwrap_or("").to_string(), e.to_string())
}

#[test]
fn every_compiler_error_names_its_key() {
    let rule = |body: &str| format!("[[access]]\n{body}\n");
    let by = "by = [{ who = \"*\", access = \"read\" }]";
    let many_rules = "[[access]]\nby = [{ who = \"*\", access = \"read\" }]\n".repeat(257);
    let many_clauses = format!(
        "[[access]]\nby = [{}]\n",
        vec!["{ who = \"*\", access = \"read\" }"; 65].join(", ")
    );
    let many_attrs = format!("[[access]]\nattrs = [{}]\n{by}\n", vec!["\"cn\""; 257].join(", "));
    let many_groups: String = (0..65)
        .map(|i| {
            format!("[[access]]\nby = [{{ group = \"cn=g{i},dc=example,dc=com\", access = \"read\" }}]\n")
        })
        .collect();
    let cases: Vec<(String, &str, &str)> = vec![
        (
            "access = 3".into(),
            "access",
            "expected a list of `[[access]]` tables",
        ),
        (many_rules, "access", "257 rules; at most 256"),
        ("access = [1]".into(), "access[0]", "expected a table"),
        ("access_proxy = 1".into(), "access_proxy", "expected a table"),
        (
            "[access_proxy]\ndeny = []".into(),
            "access_proxy.deny",
            "unknown key; expected `allow`",
        ),
        (
            "[access_proxy]\nallow = [{ who = \"users\", access = \"read\" }]".into(),
            "access_proxy.allow[0].access",
            "unknown key; expected one of who, dn, scope, peer",
        ),
        (
            "[access_proxy]\nallow = [{ group = \"cn=g,dc=example,dc=com\" }]".into(),
            "access_proxy.allow[0].group",
            "group membership cannot grant the proxy right",
        ),
        (
            "[access_proxy]\nallow = [{ who = \"self\" }]".into(),
            "access_proxy.allow[0].who",
            "`self` names the entry being accessed",
        ),
        (
            "[access_proxy]\nallow = []".into(),
            "access_proxy.allow",
            "list at least one clause",
        ),
        (
            "[access_proxy]\nallow = [{ dn = \"xyz=1\" }]".into(),
            "access_proxy.allow[0].dn",
            "`xyz=1` is not a valid DN",
        ),
        (
            rule(&format!("dn = 3\n{by}")),
            "access[0].dn",
            "expected a string, found integer",
        ),
        (
            rule("by = \"everyone\""),
            "access[0].by",
            "expected a list of tables",
        ),
        (rule("by = []"), "access[0].by", "list at least one clause"),
        (many_clauses, "access[0].by", "65 clauses; at most 64"),
        (
            rule("by = [\"x\"]"),
            "access[0].by[0]",
            "expected a table such as",
        ),
        (
            rule(&format!("dn = \"dc=example,dc=com\"\nscope = \"deep\"\n{by}")),
            "access[0].scope",
            "`deep`: expected base, one, subtree or children",
        ),
        (
            rule(&format!("filter = \"(cn=\"\n{by}")),
            "access[0].filter",
            "`(cn=` is not a filter",
        ),
        (
            rule(&format!("attrs = \"cn\"\n{by}")),
            "access[0].attrs",
            "expected a list of attribute names",
        ),
        (
            rule(&format!("attrs = []\n{by}")),
            "access[0].attrs",
            "list at least one attribute",
        ),
        (many_attrs, "access[0].attrs", "257 attributes; at most 256"),
        (
            rule(&format!("attrs = [1]\n{by}")),
            "access[0].attrs[0]",
            "expected a string",
        ),
        (
            rule(&format!("attr = [\"cn\"]\n{by}")),
            "access[0].attr",
            "unknown key; expected one of dn, scope, filter, attrs, by",
        ),
        (
            rule(&format!("scope = \"base\"\n{by}")),
            "access[0].scope",
            "a scope needs a `dn`",
        ),
        (
            rule("dn = \"dc=example,dc=com\""),
            "access[0].by",
            "missing: list who gets which access",
        ),
        (
            rule("by = [{ who = \"*\" }]"),
            "access[0].by[0].access",
            "missing: the level granted",
        ),
        (
            rule("by = [{ who = \"everyone\", access = \"read\" }]"),
            "access[0].by[0].who",
            "`everyone`: expected \"*\", \"anonymous\", \"users\", \"self\" or \"admin\"",
        ),
        (
            rule("by = [{ dn = \"dc=example,dc=com\", scope = \"below\", access = \"read\" }]"),
            "access[0].by[0].scope",
            "`below`: expected base, one, subtree or children",
        ),
        (
            rule("by = [{ peer = \"10.0.0.1/8\", access = \"read\" }]"),
            "access[0].by[0].peer",
            "bits are set beyond the /8 prefix",
        ),
        (
            rule("by = [{ peer = \"300.1.1.1\", access = \"read\" }]"),
            "access[0].by[0].peer",
            "`300.1.1.1` is not an IP address or CIDR network",
        ),
        (
            rule("by = [{ peer = \"10.0.0.0/33\", access = \"read\" }]"),
            "access[0].by[0].peer",
            "the prefix length must be 0 to 32",
        ),
        (
            rule("by = [{ who = \"*\", access = \"reed\" }]"),
            "access[0].by[0].access",
            "`reed`: expected a level",
        ),
        (
            rule("by = [{ who = \"*\", access = \"+w\" }]"),
            "access[0].by[0].access",
            "privileges are only set with `=`",
        ),
        (
            rule("by = [{ who = \"*\", access = \"=wq\" }]"),
            "access[0].by[0].access",
            "`q` is not a privilege",
        ),
        (
            rule("by = [{ who = \"*\", access = \"=\" }]"),
            "access[0].by[0].access",
            "`=`: expected a level",
        ),
        (
            rule("by = [{ who = \"*\", acces = \"read\" }]"),
            "access[0].by[0].acces",
            "unknown key; expected one of who, dn, scope, group, peer, access",
        ),
        (
            rule("by = [{ who = \"*\", scope = \"subtree\", access = \"read\" }]"),
            "access[0].by[0].scope",
            "a scope needs a `dn`",
        ),
        (
            rule("by = [{ access = \"read\" }]"),
            "access[0].by[0]",
            "say who the clause is for",
        ),
        (
            rule(&format!("dn = \"xyz=example\"\n{by}")),
            "access[0].dn",
            "`xyz=example` is not a valid DN",
        ),
        (
            rule(&format!("filter = \"(&(cn=a)(!(colour=red)))\"\n{by}")),
            "access[0].filter",
            "attribute `colour` is not defined in the schema",
        ),
        (
            rule(&format!("attrs = [\"a b\"]\n{by}")),
            "access[0].attrs[0]",
            "`a b` is not an attribute name",
        ),
        (
            rule(&format!("attrs = [\"cn\", \"cn;lang-fr\"]\n{by}")),
            "access[0].attrs[1]",
            "attribute options are not supported in rules",
        ),
        (
            rule(&format!("attrs = [\"entry\", \"userpasword\"]\n{by}")),
            "access[0].attrs[1]",
            "attribute `userpasword` is not defined in the schema",
        ),
        (
            rule("by = [{ dn = \"cn=a,,dc=com\", access = \"read\" }]"),
            "access[0].by[0].dn",
            "`cn=a,,dc=com` is not a valid DN",
        ),
        (
            rule("by = [{ group = \"nope\", access = \"read\" }]"),
            "access[0].by[0].group",
            "`nope` is not a valid DN",
        ),
        (
            rule("by = [{ group = \"\", access = \"read\" }]"),
            "access[0].by[0].group",
            "the root DSE is not a group",
        ),
        (
            many_groups,
            "access[64].by[0].group",
            "the rules name more than 64 groups",
        ),
    ];
    for (text, key, fragment) in &cases {
        let (got_key, shown) = refusal(text);
        assert_eq!(&got_key, key, "{text}\n{shown}");
        assert!(shown.contains(fragment), "{shown:?} lacks {fragment:?}");
        assert!(
            shown.contains(&format!("`{key}`")),
            "{shown:?} does not name the key"
        );
    }
}

#[test]
fn rules_are_accepted_in_both_table_forms() {
    let inline = ServerConfig::from_toml_str(
        "[[access]]\ndn = \"dc=example,dc=com\"\nby = [{ who = \"users\", access = \"write\" }]\n",
    )
    .unwrap();
    let tables = ServerConfig::from_toml_str(
        "[[access]]\ndn = \"dc=example,dc=com\"\n[[access.by]]\nwho = \"users\"\naccess = \"write\"\n",
    )
    .unwrap();
    assert_eq!(inline.access, tables.access);
    assert_eq!(
        inline.access.rules[0].by[0].access,
        Privileges::parse("write").unwrap()
    );
    assert_eq!(inline.access.rules[0].scope, Scope::Subtree);
}

// ---------------------------------------------------------------------------------------
// Privileges, scopes, networks, DN levels.

#[test]
fn privileges_are_openldap_levels_and_letters() {
    let shown: Vec<(String, String)> = Privileges::LEVELS
        .iter()
        .map(|(name, p)| (name.to_string(), p.to_string()))
        .collect();
    let expected = [
        ("none", "=0"),
        ("disclose", "=d"),
        ("auth", "=xd"),
        ("compare", "=cxd"),
        ("search", "=scxd"),
        ("read", "=rscxd"),
        ("add", "=arscxd"),
        ("delete", "=zrscxd"),
        ("write", "=azirscxd"),
        ("manage", "=mazirscxd"),
    ];
    assert_eq!(
        shown,
        expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    assert_eq!(Privileges::parse("increment").unwrap().to_string(), "=irscxd");
    assert_eq!(Privileges::parse("=wx").unwrap().to_string(), "=azix");
    assert_eq!(Privileges::parse("=0").unwrap(), Privileges::NONE);
    let write = Privileges::parse("write").unwrap();
    assert!(write.contains(Privileges::ADD) && write.contains(Privileges::READ));
    assert!(!write.contains(Privileges::MANAGE));
    assert!(!Privileges::parse("add").unwrap().contains(Privileges::DELETE));
    assert!(!Privileges::parse("=wx").unwrap().contains(Privileges::READ));
    assert!(Privileges::NONE.contains(Privileges::NONE));
}

#[test]
fn networks_and_levels() {
    let net = IpNet::parse("10.0.0.0/8").unwrap();
    assert!(net.contains("10.200.3.4".parse().unwrap()));
    assert!(net.contains("::ffff:10.0.0.5".parse().unwrap()));
    assert!(!net.contains("11.0.0.1".parse().unwrap()));
    assert!(!net.contains("::1".parse().unwrap()));
    let one = IpNet::parse("::1").unwrap();
    assert!(one.contains("::1".parse().unwrap()));
    assert!(!one.contains("::2".parse().unwrap()));
    assert!(IpNet::parse("0.0.0.0/0")
        .unwrap()
        .contains("1.2.3.4".parse().unwrap()));
    assert_eq!(IpNet::parse("fd00::/8").unwrap().to_string(), "fd00::/8");

    assert_eq!(levels_below("dc=example,dc=com", "dc=example,dc=com"), Some(0));
    assert_eq!(
        levels_below("uid=a,ou=p,dc=example,dc=com", "dc=example,dc=com"),
        Some(2)
    );
    assert_eq!(levels_below("uid=a,ou=p,dc=example,dc=com", "dc=com"), Some(3));
    assert_eq!(
        levels_below("uid=a,ou=p,dc=example,dc=com", "p,dc=example,dc=com"),
        None
    );
    assert_eq!(levels_below("dc=com", "dc=example,dc=com"), None);
    assert_eq!(levels_below("uid=a,dc=com", ""), Some(2));
    assert_eq!(levels_below("", ""), Some(0));
    for (scope, holds) in [
        (Scope::Base, [true, false, false]),
        (Scope::One, [false, true, false]),
        (Scope::Subtree, [true, true, true]),
        (Scope::Children, [false, true, true]),
    ] {
        assert_eq!([0, 1, 2].map(|l| scope.holds(l)), holds, "{scope:?}");
    }
}

// ---------------------------------------------------------------------------------------
// A directory for the evaluator.

const BASE: &str = "dc=example,dc=com";
const ADMIN: &str = "cn=admin,dc=example,dc=com";

struct Fx {
    dir: Directory,
    path: PathBuf,
}

impl Drop for Fx {
    fn drop(&mut self) {
        let _ = self.dir.store.close(false);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The model of an entry: lower-case DN and lower-case attribute names to values.
#[derive(Debug, Clone)]
struct RefEntry {
    dn: String,
    attrs: BTreeMap<String, Vec<String>>,
}

/// The entries of the test directory, besides the suffix and the admin.
fn entries() -> Vec<(String, Vec<(&'static str, &'static str)>)> {
    let person = |uid: &'static str, desc: &'static str| {
        (
            format!("uid={uid},ou=people,{BASE}"),
            vec![
                ("objectClass", "inetOrgPerson"),
                ("uid", uid),
                ("cn", uid),
                ("sn", "S"),
                ("mail", "m@example.com"),
                ("userPassword", "secret"),
                ("description", desc),
            ],
        )
    };
    vec![
        (
            format!("ou=people,{BASE}"),
            vec![("objectClass", "organizationalUnit"), ("ou", "people")],
        ),
        person("a", "x"),
        person("b", "y"),
        person("c", "x"),
        (
            format!("ou=groups,{BASE}"),
            vec![("objectClass", "organizationalUnit"), ("ou", "groups")],
        ),
        (
            format!("cn=g1,ou=groups,{BASE}"),
            vec![
                ("objectClass", "groupOfNames"),
                ("cn", "g1"),
                ("member", "uid=a,ou=people,dc=example,dc=com"),
                ("member", "UID=C, OU=People, DC=Example, DC=Com"),
            ],
        ),
        (
            format!("cn=g2,ou=groups,{BASE}"),
            vec![
                ("objectClass", "groupOfUniqueNames"),
                ("cn", "g2"),
                ("uniqueMember", "uid=b,ou=people,dc=example,dc=com"),
            ],
        ),
        (
            format!("ou=apps,{BASE}"),
            vec![("objectClass", "organizationalUnit"), ("ou", "apps")],
        ),
        (
            format!("cn=app,ou=apps,{BASE}"),
            vec![
                ("objectClass", "applicationProcess"),
                ("cn", "app"),
                ("description", "x"),
            ],
        ),
    ]
}

fn fixture() -> Fx {
    let path = fresh_data_dir("acl-rules");
    let mut config = ServerConfig::default();
    test_store(&mut config, path.clone());
    let (dir, _) = Directory::open(config).unwrap();
    let schema = dir.schema.clone();
    let mut items = Vec::new();
    for (dn, attrs) in entries() {
        let (d, n) = NormDn::parse(dn.as_bytes(), &*schema).unwrap();
        let mut e = Entry::new(d, n);
        for (name, value) in attrs {
            let t = schema.attribute_type(name).unwrap();
            e.push_value(t.id, &Options::none(), value.as_bytes().to_vec());
        }
        let checked = check_entry(&e, &schema).unwrap_or_else(|err| panic!("{dn}: {err}"));
        on_add(&mut e, &checked, "", &OpStamp::now(&dir.csn), &schema, false).unwrap();
        items.push((e.dn.clone(), e.norm_dn.clone(), e.to_stored()));
    }
    dir.store
        .write(move |txn| {
            for (d, n, s) in &items {
                txn.add(d, n, s, false).unwrap();
            }
        })
        .unwrap();
    Fx { dir, path }
}

/// The model of the directory: every entry by lower-case DN.
fn model() -> Vec<RefEntry> {
    let mut out = vec![
        RefEntry {
            dn: BASE.to_string(),
            attrs: BTreeMap::from([("objectclass".into(), vec!["organization".into()])]),
        },
        RefEntry {
            dn: ADMIN.to_string(),
            attrs: BTreeMap::from([("objectclass".into(), vec!["organizationalRole".into()])]),
        },
    ];
    for (dn, attrs) in entries() {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in attrs {
            m.entry(k.to_ascii_lowercase()).or_default().push(v.to_string());
        }
        out.push(RefEntry { dn, attrs: m });
    }
    out
}

// ---------------------------------------------------------------------------------------
// The reference model.

/// Rule DNs and scopes the generator picks from.
const RULE_DNS: [&str; 6] = [
    "dc=example,dc=com",
    "ou=people,dc=example,dc=com",
    "uid=a,ou=people,dc=example,dc=com",
    "ou=groups,dc=example,dc=com",
    "dc=com",
    "",
];
const SCOPES: [Scope; 4] = [Scope::Base, Scope::One, Scope::Subtree, Scope::Children];
/// Filters, with the model's reading of each.
const FILTERS: [&str; 4] = [
    "(objectClass=person)",
    "(uid=a)",
    "(description=x)",
    "(|(cn=g1)(uid=b))",
];
const ATTR_NAMES: [&str; 9] = [
    "cn",
    "sn",
    "mail",
    "userPassword",
    "description",
    "name",
    "member",
    "entry",
    "children",
];
const CHECKED: [&str; 9] = [
    "entry",
    "children",
    "cn",
    "sn",
    "mail",
    "userPassword",
    "description",
    "member",
    "uid",
];
const WHO_DNS: [(&str, Scope); 5] = [
    ("uid=a,ou=people,dc=example,dc=com", Scope::Base),
    ("ou=people,dc=example,dc=com", Scope::Subtree),
    ("ou=people,dc=example,dc=com", Scope::Children),
    ("dc=example,dc=com", Scope::One),
    ("cn=admin,dc=example,dc=com", Scope::Base),
];
const GROUPS: [&str; 2] = [
    "cn=g1,ou=groups,dc=example,dc=com",
    "cn=g2,ou=groups,dc=example,dc=com",
];
const PEERS: [&str; 3] = ["127.0.0.0/8", "10.0.0.0/8", "::1"];
const ACCESS: [&str; 15] = [
    "none",
    "disclose",
    "auth",
    "compare",
    "search",
    "read",
    "add",
    "delete",
    "increment",
    "write",
    "manage",
    "=wx",
    "=rs",
    "=azd",
    "=0",
];
const REQUESTERS: [Option<&str>; 5] = [
    None,
    Some("uid=a,ou=people,dc=example,dc=com"),
    Some("uid=b,ou=people,dc=example,dc=com"),
    Some("uid=c,ou=people,dc=example,dc=com"),
    Some(ADMIN),
];
const CLIENTS: [Option<&str>; 6] = [
    None,
    Some("127.0.0.1"),
    Some("10.1.2.3"),
    Some("192.168.0.1"),
    Some("::1"),
    Some("::ffff:10.0.0.5"),
];
const NEEDS: [&str; 9] = ["d", "x", "c", "s", "r", "a", "z", "i", "m"];

/// The letters a level or `=` set grants (`w` is `a`, `z` and `i`).
fn model_privileges(access: &str) -> BTreeSet<char> {
    let letters = match access {
        "none" => "",
        "disclose" => "d",
        "auth" => "xd",
        "compare" => "cxd",
        "search" => "scxd",
        "read" => "rscxd",
        "add" => "arscxd",
        "delete" => "zrscxd",
        "increment" => "irscxd",
        "write" => "wrscxd",
        "manage" => "mwrscxd",
        other => other.trim_start_matches('='),
    };
    letters
        .chars()
        .flat_map(|c| if c == 'w' { vec!['a', 'z', 'i'] } else { vec![c] })
        .filter(|c| *c != '0')
        .collect()
}

/// RDNs below `base`, on lower-case DN strings split at commas.
fn model_levels(dn: &str, base: &str) -> Option<usize> {
    let d: Vec<&str> = if dn.is_empty() {
        vec![]
    } else {
        dn.split(',').collect()
    };
    let b: Vec<&str> = if base.is_empty() {
        vec![]
    } else {
        base.split(',').collect()
    };
    (d.len() >= b.len() && d[d.len() - b.len()..] == b[..]).then(|| d.len() - b.len())
}

fn model_scope(scope: Scope, levels: Option<usize>) -> bool {
    match (scope, levels) {
        (_, None) => false,
        (Scope::Base, Some(l)) => l == 0,
        (Scope::One, Some(l)) => l == 1,
        (Scope::Subtree, Some(_)) => true,
        (Scope::Children, Some(l)) => l >= 1,
    }
}

fn model_filter(i: usize, e: &RefEntry) -> bool {
    let has = |a: &str, v: &str| {
        e.attrs
            .get(a)
            .is_some_and(|vs| vs.iter().any(|x| x.eq_ignore_ascii_case(v)))
    };
    match i {
        // inetOrgPerson is a subclass of person.
        0 => has("objectclass", "inetOrgPerson") || has("objectclass", "person"),
        1 => has("uid", "a"),
        2 => has("description", "x"),
        _ => has("cn", "g1") || has("uid", "b"),
    }
}

/// Whether an `attrs` list covers the checked name (`name` covers `cn` and `sn`).
fn model_covers(attrs: &Option<Vec<String>>, what: &str) -> bool {
    let Some(list) = attrs else { return true };
    list.iter()
        .any(|a| a.eq_ignore_ascii_case(what) || (a == "name" && (what == "cn" || what == "sn")))
}

/// Group members by group index.
fn model_member(group: usize, who: &str) -> bool {
    match group {
        0 => who == "uid=a,ou=people,dc=example,dc=com" || who == "uid=c,ou=people,dc=example,dc=com",
        _ => who == "uid=b,ou=people,dc=example,dc=com",
    }
}

fn model_peer(net: &str, client: Option<&str>) -> bool {
    let Some(ip) = client.map(|c| c.parse::<IpAddr>().unwrap()) else {
        return false;
    };
    let ip = match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    };
    let (a, p) = net
        .split_once('/')
        .unwrap_or((net, if net.contains(':') { "128" } else { "32" }));
    let p: u32 = p.parse().unwrap();
    match (a.parse::<IpAddr>().unwrap(), ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) => {
            let shift = 32 - p;
            (u32::from(n).checked_shr(shift).unwrap_or(0)) == (u32::from(i).checked_shr(shift).unwrap_or(0))
        }
        (IpAddr::V6(n), IpAddr::V6(i)) => {
            let shift = 128 - p;
            (u128::from(n).checked_shr(shift).unwrap_or(0)) == (u128::from(i).checked_shr(shift).unwrap_or(0))
        }
        _ => false,
    }
}

/// A generated clause: keyword, DN, group, peer (indices), access.
#[derive(Debug, Clone)]
struct GenClause {
    keyword: Option<Keyword>,
    dn: Option<usize>,
    group: Option<usize>,
    peer: Option<usize>,
    access: usize,
}

#[derive(Debug, Clone)]
struct GenRule {
    dn: Option<(usize, Scope)>,
    filter: Option<usize>,
    attrs: Option<Vec<String>>,
    by: Vec<GenClause>,
}

fn model_decide(
    rules: &[GenRule],
    requester: Option<&str>,
    client: Option<&str>,
    entry: &RefEntry,
    what: &str,
    need: char,
) -> bool {
    if requester == Some(ADMIN) {
        return true;
    }
    for r in rules {
        if !model_covers(&r.attrs, what) {
            continue;
        }
        if let Some((d, scope)) = r.dn {
            if !model_scope(scope, model_levels(&entry.dn, RULE_DNS[d])) {
                continue;
            }
        }
        if let Some(f) = r.filter {
            if !model_filter(f, entry) {
                continue;
            }
        }
        for c in &r.by {
            let keyword_ok = match c.keyword {
                None | Some(Keyword::Anyone) => true,
                Some(Keyword::Anonymous) => requester.is_none(),
                Some(Keyword::Users) => requester.is_some(),
                Some(Keyword::SelfEntry) => requester == Some(entry.dn.as_str()),
                Some(Keyword::Admin) => false,
            };
            let dn_ok = c.dn.is_none_or(|i| {
                let (d, scope) = WHO_DNS[i];
                requester.is_some_and(|me| model_scope(scope, model_levels(me, d)))
            });
            let group_ok = c
                .group
                .is_none_or(|g| requester.is_some_and(|me| model_member(g, me)));
            let peer_ok = c.peer.is_none_or(|p| model_peer(PEERS[p], client));
            if keyword_ok && dn_ok && group_ok && peer_ok {
                return model_privileges(ACCESS[c.access]).contains(&need);
            }
        }
        return false;
    }
    false
}

/// The configuration the generated rules stand for.
fn config_of(rules: &[GenRule]) -> AccessConfig {
    AccessConfig {
        rules: rules
            .iter()
            .map(|r| RuleConfig {
                dn: r.dn.map(|(d, _)| RULE_DNS[d].to_string()),
                scope: r.dn.map_or(Scope::Subtree, |(_, s)| s),
                filter: r.filter.map(|f| FILTERS[f].to_string()),
                attrs: r.attrs.clone(),
                by: r
                    .by
                    .iter()
                    .map(|c| ClauseConfig {
                        who: WhoConfig {
                            keyword: c.keyword,
                            dn: c.dn.map(|i| WHO_DNS[i].0.to_string()),
                            scope: c.dn.map_or(Scope::Base, |i| WHO_DNS[i].1),
                            group: c.group.map(|g| GROUPS[g].to_string()),
                            peer: c.peer.map(|p| IpNet::parse(PEERS[p]).unwrap()),
                        },
                        access: Privileges::parse(ACCESS[c.access]).unwrap(),
                    })
                    .collect(),
            })
            .collect(),
        proxy: Vec::new(),
    }
}

fn gen_clause(class_only: bool) -> impl Strategy<Value = GenClause> {
    let keyword = prop::option::of(prop::sample::select(vec![
        Keyword::Anyone,
        Keyword::Anonymous,
        Keyword::Users,
        Keyword::SelfEntry,
        Keyword::Admin,
    ]));
    let extra = if class_only { 0..1usize } else { 0..4usize };
    (
        keyword,
        prop::option::of(0..WHO_DNS.len()),
        prop::option::of(0..GROUPS.len()),
        prop::option::of(0..PEERS.len()),
        extra,
        0..ACCESS.len(),
    )
        .prop_map(move |(keyword, dn, group, peer, extra, access)| {
            // Without extras only the keyword (the class-decided path); else some of the
            // conditions the generator drew, at least one in all.
            let (dn, group, peer) = match extra {
                0 => (None, None, None),
                1 => (dn, None, None),
                2 => (None, group, peer),
                _ => (dn, group, peer),
            };
            let keyword = if keyword.is_none() && dn.is_none() && group.is_none() && peer.is_none() {
                Some(Keyword::Anyone)
            } else {
                keyword
            };
            GenClause {
                keyword,
                dn,
                group,
                peer,
                access,
            }
        })
}

fn gen_rules() -> impl Strategy<Value = Vec<GenRule>> {
    any::<bool>().prop_flat_map(|class_only| {
        let rule = (
            prop::option::of((0..RULE_DNS.len(), prop::sample::select(SCOPES.to_vec()))),
            prop::option::of(0..FILTERS.len()),
            prop::option::of(prop::sample::subsequence(ATTR_NAMES.to_vec(), 1..4)),
            prop::collection::vec(gen_clause(class_only), 1..5),
        )
            .prop_map(|(dn, filter, attrs, by)| GenRule {
                dn,
                filter,
                attrs: attrs.map(|a| a.into_iter().map(str::to_string).collect()),
                by,
            });
        prop::collection::vec(rule, 1..6)
    })
}

fn identity_of(fx: &Fx, dn: Option<&str>) -> Identity {
    match dn {
        None => Identity::Anonymous,
        Some(d) => {
            let (_, norm) = NormDn::parse(d.as_bytes(), &*fx.dir.schema).unwrap();
            Identity::Dn {
                dn: d.to_string(),
                admin: norm == fx.dir.admin_dn,
                norm,
            }
        }
    }
}

fn what_of(fx: &Fx, name: &str) -> What {
    match name {
        "entry" => What::Entry,
        "children" => What::Children,
        n => What::Attribute(fx.dir.schema.attribute_type(n).unwrap().id),
    }
}

fn need_of(letter: &str) -> Privileges {
    Privileges::parse(&format!("={letter}")).unwrap()
}

#[test]
fn evaluator_matches_the_reference_model() {
    let fx = fixture();
    let version = fx.dir.store.current();
    let model = model();
    let ids: Vec<_> = model
        .iter()
        .map(|e| {
            let (_, n) = NormDn::parse(e.dn.as_bytes(), &*fx.dir.schema).unwrap();
            version.find(&n).unwrap_or_else(|| panic!("{}", e.dn))
        })
        .collect();
    let checks = prop::collection::vec(
        (
            0..REQUESTERS.len(),
            0..CLIENTS.len(),
            0..model.len(),
            0..CHECKED.len(),
            0..NEEDS.len(),
        ),
        1..40,
    );
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        ..Config::default()
    });
    runner
        .run(&(gen_rules(), checks), |(rules, checks)| {
            let config = config_of(&rules);
            let compiled = if rules.is_empty() {
                // No rules is the default policy; the model is given it separately below.
                return Ok(());
            } else {
                AccessRules::compile(&config, &fx.dir.schema).unwrap()
            };
            for &(r, c, e, w, n) in &checks {
                let identity = identity_of(&fx, REQUESTERS[r]);
                let client = Client {
                    addr: CLIENTS[c].map(|ip| SocketAddr::new(ip.parse().unwrap(), 389)),
                    tls: false,
                };
                let requester = compiled.requester(&identity, &client, &version);
                let what = what_of(&fx, CHECKED[w]);
                let need = need_of(NEEDS[n]);
                let want = model_decide(
                    &rules,
                    REQUESTERS[r],
                    CLIENTS[c],
                    &model[e],
                    CHECKED[w],
                    NEEDS[n].chars().next().unwrap(),
                );
                let stored = EntryAccess::new(
                    &compiled,
                    &requester,
                    Target::Stored {
                        version: &version,
                        id: ids[e],
                    },
                )
                .allows(what, need);
                prop_assert_eq!(
                    stored,
                    want,
                    "requester {:?} client {:?} entry {} what {} need {}",
                    REQUESTERS[r],
                    CLIENTS[c],
                    model[e].dn,
                    CHECKED[w],
                    NEEDS[n]
                );
                // The same entry given by name (the path of an Add's new entry).
                let norm = version.norm_dn(ids[e]);
                let written = Dn::parse(version.dn(ids[e]).as_bytes()).unwrap();
                let attrs = version.entry(ids[e]).unwrap().attrs();
                let named = EntryAccess::new(
                    &compiled,
                    &requester,
                    Target::Named {
                        dn: &norm,
                        written: Some(&written),
                        attrs,
                        schema: &fx.dir.schema,
                    },
                )
                .allows(what, need);
                prop_assert_eq!(named, want, "named entry {}", model[e].dn);
                // A decision said to be uniform is the same for this entry.
                if let Some(u) = requester.uniform(&compiled, what, need) {
                    prop_assert_eq!(u, want, "uniform decision for {}", model[e].dn);
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn stored_dn_levels_equal_string_levels() {
    let fx = fixture();
    let version = fx.dir.store.current();
    let bases = [
        "",
        "dc=com",
        "dc=example,dc=com",
        "ou=people,dc=example,dc=com",
        "uid=a,ou=people,dc=example,dc=com",
        "a,ou=people,dc=example,dc=com",
        "example,dc=com",
        "ou=groups,dc=example,dc=com",
        "cn=g1,ou=groups,dc=example,dc=com",
        "cn=x,uid=a,ou=people,dc=example,dc=com",
        "dc=example,dc=org",
    ];
    let mut checked = 0;
    for e in version.entries() {
        let norm = version.norm_dn(e.id);
        for base in bases {
            assert_eq!(
                stored_levels_below(&version, e.id, base),
                levels_below(norm.as_str(), base),
                "{norm} below {base:?}"
            );
            assert_eq!(
                levels_below(norm.as_str(), base),
                model_levels(norm.as_str(), base),
                "{norm} below {base:?} (model)"
            );
            checked += 1;
        }
    }
    assert!(checked >= 100);
    assert_eq!(stored_levels_below(&version, 999_999, ""), None);
}

// ---------------------------------------------------------------------------------------
// The default policy.

/// The ```toml block of the default policy in docs/security.md.
fn documented_default_policy() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let section = doc
        .split("### The default policy")
        .nth(1)
        .expect("a default policy section");
    let block = section.split("```toml\n").nth(1).expect("a toml block");
    block.split("```").next().unwrap().to_string()
}

#[test]
fn the_documented_default_policy_is_the_one_that_runs() {
    let documented = documented_default_policy();
    assert_eq!(documented, DEFAULT_POLICY);
    let parsed = ServerConfig::from_toml_str(&documented).unwrap();
    assert_eq!(parsed.access, default_policy());
    assert_eq!(default_policy().rules.len(), 3);
    let fx = fixture();
    let with_rules = AccessRules::compile(&parsed.access, &fx.dir.schema).unwrap();
    assert!(!with_rules.is_default_policy());
    let default = AccessRules::compile(&AccessConfig::default(), &fx.dir.schema).unwrap();
    assert!(default.is_default_policy());
    assert_eq!(default.len(), 3);
    // Both decide alike for every requester, entry, what and privilege of the fixture.
    let version = fx.dir.store.current();
    for who in REQUESTERS {
        let identity = identity_of(&fx, who);
        let client = Client::default();
        let (a, b) = (
            default.requester(&identity, &client, &version),
            with_rules.requester(&identity, &client, &version),
        );
        for e in version.entries() {
            for w in CHECKED {
                for n in NEEDS {
                    let target = Target::Stored {
                        version: &version,
                        id: e.id,
                    };
                    assert_eq!(
                        EntryAccess::new(&default, &a, target).allows(what_of(&fx, w), need_of(n)),
                        EntryAccess::new(&with_rules, &b, target).allows(what_of(&fx, w), need_of(n)),
                    );
                }
            }
        }
    }
}

/// The default policy gives cn=Monitor to the admin only, while the masks that decide for
/// stored entries (which leave the monitor's rule out) still let anyone read the directory.
#[test]
fn the_default_policy_keeps_cn_monitor_for_the_admin() {
    let fx = fixture();
    let rules = &fx.dir.acl;
    let version = fx.dir.store.current();
    let schema = &fx.dir.schema;
    let monitor = NormDn::from_text(b"cn=Connections,cn=Monitor", &**schema).unwrap();
    let cn = schema.attribute_type("cn").unwrap().id;
    let attrs = larch_model::entry::StoredEntry::build(&[]);
    for who in REQUESTERS {
        let identity = identity_of(&fx, who);
        let requester = rules.requester(&identity, &Client::default(), &version);
        let target = Target::Named {
            dn: &monitor,
            written: None,
            attrs: attrs.as_ref(),
            schema,
        };
        let mut access = EntryAccess::new(rules, &requester, target);
        let admin = identity.is_admin();
        assert_eq!(access.allows(What::Entry, Privileges::SEARCH), admin, "{who:?}");
        assert_eq!(
            access.allows(What::Attribute(cn), Privileges::READ),
            admin,
            "{who:?}"
        );
        // Stored entries: the masks decide, as before the monitor's rule existed.
        assert_eq!(
            requester.uniform(rules, What::Attribute(cn), Privileges::READ),
            Some(true),
            "{who:?}"
        );
    }
}
