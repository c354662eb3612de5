//! What access control costs a search: the DirectoryMark-style exact search
//! `(cn=<name>)` from the suffix, subtree, all attributes, one entry found, prepared and
//! run as the server does (no socket), over 10,000 generated inetOrgPerson entries with a
//! userPassword.
//!
//! Requesters: the admin (access control decides nothing: every check is granted at
//! once), an anonymous client and a user under the default policy (the requester class
//! is picked, userPassword dropped by a mask bit), and both under a custom rule set with a
//! DN-scoped rule, a group clause and a peer clause (decided per operation, the group read
//! from the version).

use std::sync::Mutex;

use criterion::{criterion_group, criterion_main, Criterion};
use larch_model::dn::NormDn;
use larch_model::entry::check::check_entry;
use larch_model::entry::{Entry, Options};
use larch_proto::{DerefAliases, OwnedFilter, SearchRequest, SearchScope, SeqOf};
use larch_server::client::Client;
use larch_server::config::ServerConfig;
use larch_server::controls::RequestControls;
use larch_server::directory::Directory;
use larch_server::identity::Identity;
use larch_server::opattrs::{on_add, OpStamp};
use larch_server::response::{CollectSink, ResponseSink};
use larch_server::search::{prepare, PagedSearches, SearchContext};
use larch_store::wal::SyncPolicy;

const ENTRIES: usize = 10_000;
const BASE: &str = "dc=example,dc=com";

const CUSTOM: &str = r#"
[[access]]
attrs = ["userPassword"]
by = [{ who = "self", access = "=wx" }, { who = "anonymous", access = "auth" }]

[[access]]
dn = "ou=people,dc=example,dc=com"
attrs = ["description", "telephoneNumber"]
by = [
  { who = "self", access = "write" },
  { group = "cn=editors,dc=example,dc=com", access = "write" },
  { who = "users", access = "read" },
]

[[access]]
by = [{ peer = "10.0.0.0/8", who = "users", access = "write" }, { who = "*", access = "read" }]
"#;

fn directory(access: &str, tag: &str) -> (Directory, std::path::PathBuf) {
    let path = std::env::temp_dir().join(format!("larch-bench-acl-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    let mut config = ServerConfig::from_toml_str(access).unwrap();
    config.server.data_dir = path.clone();
    config.store.sync = SyncPolicy::None;
    config.store.snapshot_interval = None;
    config.store.snapshot_after_records = None;
    config.directory.admin_password_env = "LARCH_BENCH_ACL_PASSWORD_UNSET".to_string();
    let (dir, _) = Directory::open(config).unwrap();
    let schema = dir.schema.clone();
    let mut items = Vec::new();
    let mut push = |dn: String, attrs: Vec<(&str, String)>| {
        let (d, n) = NormDn::parse(dn.as_bytes(), &*schema).unwrap();
        let mut e = Entry::new(d, n);
        for (name, value) in attrs {
            let t = schema.attribute_type(name).unwrap();
            e.push_value(t.id, &Options::none(), value.into_bytes());
        }
        let checked = check_entry(&e, &schema).unwrap();
        on_add(&mut e, &checked, "", &OpStamp::now(&dir.csn), &schema, false).unwrap();
        items.push((e.dn.clone(), e.norm_dn.clone(), e.to_stored()));
    };
    push(
        format!("ou=people,{BASE}"),
        vec![
            ("objectClass", "organizationalUnit".into()),
            ("ou", "people".into()),
        ],
    );
    push(
        format!("cn=editors,{BASE}"),
        vec![
            ("objectClass", "groupOfNames".into()),
            ("cn", "editors".into()),
            ("member", format!("uid=user.1,ou=people,{BASE}")),
        ],
    );
    for i in 0..ENTRIES {
        push(
            format!("uid=user.{i},ou=people,{BASE}"),
            vec![
                ("objectClass", "inetOrgPerson".into()),
                ("uid", format!("user.{i}")),
                ("cn", format!("Person Number{i}")),
                ("sn", format!("Number{i}")),
                ("givenName", "Person".into()),
                ("mail", format!("user.{i}@example.com")),
                ("telephoneNumber", format!("+1 555 {i:07}")),
                ("description", format!("Person number {i} of the benchmark")),
                ("userPassword", "{SSHA}c2VjcmV0c2FsdHNhbHRzYWx0".into()),
            ],
        );
    }
    dir.store
        .write(move |txn| {
            for (d, n, s) in &items {
                txn.add(d, n, s, false).unwrap();
            }
        })
        .unwrap();
    (dir, path)
}

fn identity(dir: &Directory, dn: &str) -> Identity {
    let (_, norm) = NormDn::parse(dn.as_bytes(), &*dir.schema).unwrap();
    Identity::Dn {
        dn: dn.to_string(),
        admin: norm == dir.admin_dn,
        norm,
    }
}

/// Attributes asked for: none listed (all user attributes), or six named ones every
/// requester may read under both policies.
const NAMED: [&[u8]; 6] = [b"cn", b"sn", b"uid", b"mail", b"givenName", b"objectClass"];

fn bench_search(c: &mut Criterion, dir: &Directory, name: &str, who: &Identity, attrs: &[&[u8]]) {
    let paged = Mutex::new(PagedSearches::new());
    let client = Client::plain("127.0.0.1:40000".parse().unwrap());
    let filters: Vec<OwnedFilter> = (0..1000)
        .map(|i| OwnedFilter::parse(&format!("(cn=Person Number{})", i * 7 % ENTRIES)).unwrap())
        .collect();
    let mut sink = CollectSink::default();
    let mut reader = dir.reader();
    let mut n = 0usize;
    c.bench_function(name, |b| {
        b.iter(|| {
            let f = &filters[n % filters.len()];
            n += 1;
            let req = SearchRequest {
                base: BASE.as_bytes(),
                scope: SearchScope::Subtree,
                deref_aliases: DerefAliases::Never,
                size_limit: 0,
                time_limit: 0,
                types_only: false,
                filter: f.as_filter(),
                attributes: SeqOf::from_items(attrs),
            };
            let version = reader.current().clone();
            let ctx = SearchContext {
                dir,
                conn: 0,
                version: &version,
                identity: who,
                client: &client,
                last_base: None,
            };
            sink.buf().clear();
            let p = prepare(&ctx, &req, &RequestControls::default(), &paged).unwrap();
            p.run(dir, 1, &mut sink, &paged);
            assert!(sink.out.len() > 150, "{} octets", sink.out.len());
        })
    });
}

fn acl(c: &mut Criterion) {
    for (tag, access) in [("default", ""), ("custom", CUSTOM)] {
        let (dir, path) = directory(access, tag);
        let admin = identity(&dir, &format!("cn=admin,{BASE}"));
        let user = identity(&dir, &format!("uid=user.1,ou=people,{BASE}"));
        let all: &[&[u8]] = &[];
        if tag == "default" {
            bench_search(
                c,
                &dir,
                "exact search, all attributes, admin (no checks)",
                &admin,
                all,
            );
            bench_search(
                c,
                &dir,
                "exact search, 6 attributes, admin (no checks)",
                &admin,
                &NAMED,
            );
        }
        let anonymous = Identity::Anonymous;
        for (who, id) in [("anonymous", &anonymous), ("user", &user)] {
            bench_search(
                c,
                &dir,
                &format!("exact search, all attributes, {who}, {tag} policy"),
                id,
                all,
            );
            bench_search(
                c,
                &dir,
                &format!("exact search, 6 attributes, {who}, {tag} policy"),
                id,
                &NAMED,
            );
        }
        let _ = dir.store.close(false);
        let _ = std::fs::remove_dir_all(path);
    }
}

criterion_group!(benches, acl);
criterion_main!(benches);
