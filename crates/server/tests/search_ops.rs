//! The Search operation end to end: requests encoded with `larch_proto`, prepared and run
//! against a `Directory` on a temporary data directory, the response messages decoded and
//! compared with expected values (and, for random trees and filters, with a brute-force
//! evaluation of the filter over the scope).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use larch_model::dn::NormDn;
use larch_model::entry::check::check_entry;
use larch_model::entry::{Entry, Options};
use larch_model::filter::CompiledFilter;
use larch_proto::controls::{
    oid, Assertion, Control, ControlValue, PagedResults, SortKey, SortRequest, SortResponse,
};
use larch_proto::frame::{frame, Frame};
use larch_proto::{
    DerefAliases, LdapMessage, OwnedFilter, ProtocolOp, ResultCode, SearchRequest, SearchScope, SeqOf,
};
use larch_server::config::ServerConfig;
use larch_server::controls::{OpKind, RequestControls, SUPPORTED_CONTROLS};
use larch_server::directory::Directory;
use larch_server::dse::{SUPPORTED_EXTENSIONS, SUPPORTED_FEATURES};
use larch_server::identity::Identity;
use larch_server::opattrs::{on_add, OpStamp};
use larch_server::response::{CollectSink, ResponseSink};
use larch_server::search::sort::{parse_keys, sort_ids, sort_ids_by_values};
use larch_server::search::{prepare, referral_above, PagedSearches, SearchContext, MAX_PAGED_SEARCHES};
mod common;
use common::{fresh_data_dir, test_store};

use proptest::prelude::*;

const SUFFIX: &str = "dc=example,dc=com";
const MESSAGE_ID: i32 = 7;

// ---------------------------------------------------------------------------------------
// Fixture.

struct Fx {
    dir: Directory,
    path: PathBuf,
    paged: Mutex<PagedSearches>,
}

impl Drop for Fx {
    fn drop(&mut self) {
        let _ = self.dir.store.close(false);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn fixture_with(tweak: impl FnOnce(&mut ServerConfig)) -> Fx {
    let path = fresh_data_dir("search-ops");
    let mut config = ServerConfig::default();
    test_store(&mut config, path.clone());
    tweak(&mut config);
    let (dir, _) = Directory::open(config).unwrap();
    Fx {
        dir,
        path,
        paged: Mutex::new(PagedSearches::new()),
    }
}

fn fixture() -> Fx {
    fixture_with(|_| {})
}

fn entry(fx: &Fx, dn: &str, attrs: &[(&str, &str)]) -> Entry {
    let schema = &fx.dir.schema;
    let (d, n) = NormDn::parse(dn.as_bytes(), &**schema).unwrap();
    let mut e = Entry::new(d, n);
    for (name, value) in attrs {
        let t = schema
            .attribute_type(name)
            .unwrap_or_else(|| panic!("type {name}"));
        e.push_value(t.id, &Options::none(), value.as_bytes().to_vec());
    }
    let checked = check_entry(&e, schema).unwrap_or_else(|err| panic!("{dn}: {err}"));
    on_add(&mut e, &checked, "", &OpStamp::now(&fx.dir.csn), schema, false).unwrap();
    e
}

fn add_all(fx: &Fx, entries: Vec<Entry>) {
    let items: Vec<_> = entries
        .into_iter()
        .map(|e| (e.dn.clone(), e.norm_dn.clone(), e.to_stored()))
        .collect();
    fx.dir
        .store
        .write(move |txn| {
            for (d, n, s) in &items {
                txn.add(d, n, s, false).unwrap();
            }
        })
        .unwrap();
}

fn add(fx: &Fx, dn: &str, attrs: &[(&str, &str)]) {
    let e = entry(fx, dn, attrs);
    add_all(fx, vec![e]);
}

fn ou(fx: &Fx, name: &str) {
    add(
        fx,
        &format!("ou={name},{SUFFIX}"),
        &[("objectClass", "organizationalUnit"), ("ou", name)],
    );
}

fn person(fx: &Fx, dn: &str, cn: &str, extra: &[(&str, &str)]) {
    let mut attrs = vec![
        ("objectClass", "person"),
        ("objectClass", "extensibleObject"),
        ("cn", cn),
        ("sn", "S"),
    ];
    attrs.extend_from_slice(extra);
    add(fx, dn, &attrs);
}

/// ou=People with Person 0..n-1 (description d{i%3}).
fn people(fx: &Fx, n: usize) {
    ou(fx, "People");
    let entries = (0..n)
        .map(|i| {
            let cn = format!("Person {i}");
            let d = format!("d{}", i % 3);
            entry(
                fx,
                &format!("cn={cn},ou=People,{SUFFIX}"),
                &[
                    ("objectClass", "person"),
                    ("cn", &cn),
                    ("sn", &format!("Sn{i}")),
                    ("description", &d),
                ],
            )
        })
        .collect();
    add_all(fx, entries);
}

fn admin(fx: &Fx) -> Identity {
    Identity::Dn {
        dn: format!("cn=admin,{SUFFIX}"),
        norm: fx.dir.admin_dn.clone(),
        admin: true,
    }
}

// ---------------------------------------------------------------------------------------
// Requests and answers.

#[derive(Clone)]
struct Req {
    base: String,
    scope: SearchScope,
    deref: DerefAliases,
    size: u32,
    time: u32,
    types_only: bool,
    filter: String,
    attrs: Vec<String>,
}

fn req(base: &str, scope: SearchScope, filter: &str) -> Req {
    Req {
        base: base.to_string(),
        scope,
        deref: DerefAliases::Never,
        size: 0,
        time: 0,
        types_only: false,
        filter: filter.to_string(),
        attrs: Vec::new(),
    }
}

impl Req {
    fn attrs(mut self, a: &[&str]) -> Req {
        self.attrs = a.iter().map(|s| s.to_string()).collect();
        self
    }
    fn deref(mut self, d: DerefAliases) -> Req {
        self.deref = d;
        self
    }
    fn size(mut self, n: u32) -> Req {
        self.size = n;
        self
    }
}

struct Ctl {
    oid: &'static str,
    critical: bool,
    value: Option<Vec<u8>>,
}

fn typed<'a, T: ControlValue<'a>>(v: &T, critical: bool) -> Ctl {
    let mut buf = Vec::new();
    let has = v.encode_value(&mut buf);
    Ctl {
        oid: T::OID,
        critical,
        value: has.then_some(buf),
    }
}

fn paged_ctl(size: u32, cookie: &[u8]) -> Ctl {
    typed(&PagedResults { size, cookie }, false)
}

fn sort_ctl(keys: &[(&str, Option<&str>, bool)], critical: bool) -> Ctl {
    let keys: Vec<SortKey<'_>> = keys
        .iter()
        .map(|(a, r, rev)| SortKey {
            attribute: a.as_bytes(),
            ordering_rule: r.map(str::as_bytes),
            reverse: *rev,
        })
        .collect();
    typed(
        &SortRequest {
            keys: SeqOf::from_items(&keys),
        },
        critical,
    )
}

fn assertion_ctl(filter: &str) -> Ctl {
    let f = OwnedFilter::parse(filter).unwrap();
    typed(
        &Assertion {
            filter: f.as_filter(),
        },
        true,
    )
}

fn manage_dsa_it() -> Ctl {
    Ctl {
        oid: oid::MANAGE_DSA_IT,
        critical: true,
        value: None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ent {
    dn: String,
    attrs: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Default)]
struct Answer {
    entries: Vec<Ent>,
    refs: Vec<Vec<String>>,
    done: bool,
    code: u32,
    matched: String,
    message: String,
    referral: Vec<String>,
    paged: Option<(u32, Vec<u8>)>,
    sort: Option<(ResultCode, Option<Vec<u8>>)>,
    small: bool,
}

impl Answer {
    fn dns(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.dn.clone()).collect()
    }
    fn dn_set(&self) -> BTreeSet<String> {
        self.entries.iter().map(|e| e.dn.to_ascii_lowercase()).collect()
    }
    fn cookie(&self) -> Vec<u8> {
        self.paged.as_ref().expect("paged response control").1.clone()
    }
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn decode(out: &[u8], answer: &mut Answer) {
    let mut rest = out;
    while !rest.is_empty() {
        let Frame::Complete(n) = frame(rest, usize::MAX).unwrap() else {
            panic!("truncated message")
        };
        let msg = LdapMessage::decode(&rest[..n]).unwrap();
        assert_eq!(msg.message_id, MESSAGE_ID);
        assert!(!answer.done, "a message after the SearchResultDone");
        match msg.op {
            ProtocolOp::SearchResultEntry(e) => {
                let mut attrs: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for a in e.attributes.iter() {
                    let name = s(a.description);
                    assert!(!attrs.contains_key(&name), "attribute {name} twice");
                    attrs.insert(name, a.values.iter().map(s).collect());
                }
                answer.entries.push(Ent {
                    dn: s(e.object_name),
                    attrs,
                });
            }
            ProtocolOp::SearchResultReference(r) => answer.refs.push(r.uris.iter().map(s).collect()),
            ProtocolOp::SearchResultDone(r) => {
                answer.done = true;
                answer.code = r.code.0;
                answer.matched = s(r.matched_dn);
                answer.message = s(r.diagnostic_message);
                answer.referral = r.referral.map(|u| u.iter().map(s).collect()).unwrap_or_default();
                for c in msg.controls().iter() {
                    match s(c.oid).as_str() {
                        oid::PAGED_RESULTS => {
                            let p = PagedResults::from_control(&c).unwrap();
                            answer.paged = Some((p.size, p.cookie.to_vec()));
                        }
                        oid::SORT_RESPONSE => {
                            let r = SortResponse::from_control(&c).unwrap();
                            answer.sort = Some((r.result, r.attribute.map(<[u8]>::to_vec)));
                        }
                        other => panic!("unexpected response control {other}"),
                    }
                }
            }
            other => panic!("unexpected {other:?}"),
        }
        rest = &rest[n..];
    }
}

fn search_with(fx: &Fx, id: &Identity, r: &Req, ctls: &[Ctl], sink: &mut dyn ResponseSink) -> Answer {
    let filter = OwnedFilter::parse(&r.filter).unwrap();
    let attrs: Vec<&[u8]> = r.attrs.iter().map(|a| a.as_bytes()).collect();
    let request = SearchRequest {
        base: r.base.as_bytes(),
        scope: r.scope,
        deref_aliases: r.deref,
        size_limit: r.size,
        time_limit: r.time,
        types_only: r.types_only,
        filter: filter.as_filter(),
        attributes: SeqOf::from_items(&attrs),
    };
    let raw: Vec<Control<'_>> = ctls
        .iter()
        .map(|c| Control {
            oid: c.oid.as_bytes(),
            critical: c.critical,
            value: c.value.as_deref(),
        })
        .collect();
    let rc =
        RequestControls::parse((!raw.is_empty()).then(|| SeqOf::from_items(&raw)), OpKind::Search).unwrap();
    let version = fx.dir.store.current();
    let ctx = SearchContext {
        dir: &fx.dir,
        conn: 0,
        version: &version,
        identity: id,
        client: &larch_server::client::Client::default(),
        last_base: None,
    };
    let mut answer = Answer::default();
    match prepare(&ctx, &request, &rc, &fx.paged) {
        Err(e) => {
            larch_server::outcome::respond::write(
                sink.buf(),
                MESSAGE_ID,
                larch_proto::op_tag::SEARCH_RESULT_DONE,
                &e.into(),
            );
        }
        Ok(p) => {
            answer.small = p.is_small();
            p.run(&fx.dir, MESSAGE_ID, sink, &fx.paged)
                .write_done(sink.buf(), MESSAGE_ID);
        }
    }
    let out = std::mem::take(sink.buf());
    decode(&out, &mut answer);
    answer
}

fn search(fx: &Fx, id: &Identity, r: &Req, ctls: &[Ctl]) -> Answer {
    let mut sink = CollectSink::default();
    let a = search_with(fx, id, r, ctls, &mut sink);
    assert!(a.done, "no SearchResultDone");
    a
}

fn anon() -> Identity {
    Identity::Anonymous
}

fn dn_list(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_ascii_lowercase()).collect()
}

// ---------------------------------------------------------------------------------------
// 1. The base.

#[test]
fn base_errors_name_the_dn_and_the_matched_ancestor() {
    let fx = fixture();
    people(&fx, 2);
    let a = search(
        &fx,
        &anon(),
        &req("cn=x,,dc=com", SearchScope::Base, "(objectClass=*)"),
        &[],
    );
    assert_eq!(a.code, 34);
    assert!(a.message.contains("cn=x,,dc=com"), "{}", a.message);
    // An undefined attribute type cannot be normalized either.
    let a = search(
        &fx,
        &anon(),
        &req("nosuchtype=x,dc=com", SearchScope::Base, "(objectClass=*)"),
        &[],
    );
    assert_eq!(a.code, 34);

    let a = search(
        &fx,
        &anon(),
        &req(
            "cn=Nobody,cn=Deeper,OU=PEOPLE,DC=Example,dc=com",
            SearchScope::Subtree,
            "(objectClass=*)",
        ),
        &[],
    );
    assert_eq!(a.code, 32);
    assert_eq!(a.matched, format!("ou=People,{SUFFIX}"), "matchedDN as stored");
    assert!(a.entries.is_empty());
    let a = search(
        &fx,
        &anon(),
        &req("dc=other,dc=org", SearchScope::Subtree, "(objectClass=*)"),
        &[],
    );
    assert_eq!((a.code, a.matched.as_str()), (32, ""));

    // Existing base, base scope: the entry itself, named as stored.
    let a = search(
        &fx,
        &anon(),
        &req(
            "CN=person 1,ou=people,dc=EXAMPLE,dc=com",
            SearchScope::Base,
            "(objectClass=*)",
        ),
        &[],
    );
    assert_eq!(a.code, 0);
    assert_eq!(a.dns(), vec![format!("cn=Person 1,ou=People,{SUFFIX}")]);
    assert!(a.small);
}

#[test]
fn empty_base_searches_every_naming_context() {
    let fx = fixture_with(|c| c.directory.extra_suffixes = vec!["o=Other".to_string()]);
    people(&fx, 3);
    let a = search(
        &fx,
        &anon(),
        &req("", SearchScope::OneLevel, "(objectClass=*)"),
        &[],
    );
    assert_eq!(a.code, 0);
    assert_eq!(a.dn_set(), dn_list(&[SUFFIX, "o=Other"]));

    let a = search(
        &fx,
        &admin(&fx),
        &req("", SearchScope::Subtree, "(objectClass=*)"),
        &[],
    );
    let v = fx.dir.store.current();
    let all: BTreeSet<String> = v.entries().map(|e| v.dn(e.id).to_ascii_lowercase()).collect();
    assert_eq!(a.code, 0);
    assert_eq!(a.dn_set(), all);
    assert!(
        !a.dns().contains(&String::new()),
        "the root DSE is not in subtree results"
    );
    assert_eq!(a.entries.len(), all.len(), "each entry once");

    let a = search(
        &fx,
        &admin(&fx),
        &req("", SearchScope::Subordinate, "(cn=Person 2)"),
        &[],
    );
    assert_eq!(a.dns(), vec![format!("cn=Person 2,ou=People,{SUFFIX}")]);
}

// ---------------------------------------------------------------------------------------
// 2. Scopes and filters (and the property test at the end).

#[test]
fn scopes_hold_what_they_should() {
    let fx = fixture();
    people(&fx, 4);
    add(
        &fx,
        &format!("cn=Child,cn=Person 0,ou=People,{SUFFIX}"),
        &[("objectClass", "person"), ("cn", "Child"), ("sn", "C")],
    );
    let base = format!("ou=People,{SUFFIX}");
    let count = |scope, filter: &str| {
        let a = search(&fx, &anon(), &req(&base, scope, filter), &[]);
        assert_eq!(a.code, 0);
        a.dn_set()
    };
    let p = |i: usize| format!("cn=Person {i},ou=People,{SUFFIX}").to_ascii_lowercase();
    let child = format!("cn=Child,cn=Person 0,ou=People,{SUFFIX}").to_ascii_lowercase();
    assert_eq!(
        count(SearchScope::Base, "(objectClass=*)"),
        BTreeSet::from([base.to_ascii_lowercase()])
    );
    assert_eq!(
        count(SearchScope::OneLevel, "(objectClass=*)"),
        (0..4).map(p).collect()
    );
    let mut sub: BTreeSet<String> = (0..4).map(p).collect();
    sub.insert(child.clone());
    assert_eq!(count(SearchScope::Subordinate, "(objectClass=*)"), sub);
    sub.insert(base.to_ascii_lowercase());
    assert_eq!(count(SearchScope::Subtree, "(objectClass=*)"), sub);
    // Indexed filters give the same answers as scans.
    assert_eq!(
        count(SearchScope::Subtree, "(cn=Child)"),
        BTreeSet::from([child.clone()])
    );
    assert_eq!(count(SearchScope::OneLevel, "(cn=Child)"), BTreeSet::new());
    assert_eq!(
        count(SearchScope::Subtree, "(&(cn=Person*)(!(description=d0)))"),
        BTreeSet::from([p(1), p(2)])
    );
    assert_eq!(
        count(SearchScope::Subtree, "(|(sn=Sn3)(cn=child))"),
        BTreeSet::from([p(3), child])
    );
    // The filter is checked on every candidate: an indexed item alone is not enough.
    assert_eq!(
        count(SearchScope::Subtree, "(&(cn=Person 1)(description=d2))"),
        BTreeSet::new()
    );
}

// ---------------------------------------------------------------------------------------
// 3. Limits.

#[test]
fn size_limits_from_the_client_and_the_server() {
    let fx = fixture_with(|c| c.limits.size_limit = 4);
    people(&fx, 10);
    let base = format!("ou=People,{SUFFIX}");
    let r = req(&base, SearchScope::OneLevel, "(objectClass=person)");
    let a = search(&fx, &anon(), &r.clone().size(3), &[]);
    assert_eq!((a.entries.len(), a.code), (3, 4));
    assert!(a.message.contains('3'), "{}", a.message);
    let a = search(&fx, &anon(), &r, &[]);
    assert_eq!((a.entries.len(), a.code), (4, 4), "server limit");
    let a = search(&fx, &anon(), &r.clone().size(100), &[]);
    assert_eq!((a.entries.len(), a.code), (4, 4), "the smaller limit wins");
    // Exactly as many matches as the limit is not exceeding it.
    let a = search(
        &fx,
        &anon(),
        &req(&base, SearchScope::OneLevel, "(description=d0)"),
        &[],
    );
    assert_eq!((a.entries.len(), a.code), (4, 0));
    // The administrator gets no server limit, only the client's.
    let a = search(&fx, &admin(&fx), &r, &[]);
    assert_eq!((a.entries.len(), a.code), (10, 0));
    let a = search(&fx, &admin(&fx), &r.clone().size(2), &[]);
    assert_eq!((a.entries.len(), a.code), (2, 4));
    let a = search(&fx, &admin(&fx), &r.clone().size(10), &[]);
    assert_eq!((a.entries.len(), a.code), (10, 0));
}

#[test]
fn time_limit_ends_the_search() {
    // A limit of one nanosecond has passed by the time the search runs.
    let fx = fixture_with(|c| c.limits.time_limit = Duration::from_nanos(1));
    people(&fx, 3);
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::Subtree,
        "(objectClass=*)",
    );
    let a = search(&fx, &anon(), &r, &[]);
    assert_eq!(a.code, 3);
    assert!(a.entries.is_empty());
    let a = search(&fx, &admin(&fx), &r, &[]);
    assert_eq!(
        (a.code, a.entries.len()),
        (0, 4),
        "no server time limit for the administrator"
    );
}

#[test]
fn lookthrough_limit_applies_to_unindexed_searches() {
    let fx = fixture_with(|c| c.limits.lookthrough_limit = 5);
    people(&fx, 10);
    let base = format!("ou=People,{SUFFIX}");
    // One level: decided up front from the child count.
    let a = search(
        &fx,
        &anon(),
        &req(&base, SearchScope::OneLevel, "(description=d1)"),
        &[],
    );
    assert_eq!(a.code, 11);
    assert!(a.entries.is_empty());
    assert!(a.message.contains("(description=d1)"), "{}", a.message);
    // Subtree of a part of the directory larger than the limit: counted while scanning.
    let a = search(
        &fx,
        &anon(),
        &req(&base, SearchScope::Subtree, "(description=d1)"),
        &[],
    );
    assert_eq!(a.code, 11);
    // Indexed: no limit; the administrator: no limit.
    let a = search(
        &fx,
        &anon(),
        &req(SUFFIX, SearchScope::Subtree, "(|(cn=Person 1)(cn=Person 2))"),
        &[],
    );
    assert_eq!((a.code, a.entries.len()), (0, 2));
    let a = search(
        &fx,
        &admin(&fx),
        &req(&base, SearchScope::Subtree, "(description=d1)"),
        &[],
    );
    assert_eq!((a.code, a.entries.len()), (0, 3));
    // A small scope passes.
    let a = search(
        &fx,
        &anon(),
        &req(
            &format!("cn=Person 1,{base}"),
            SearchScope::Subtree,
            "(description=d1)",
        ),
        &[],
    );
    assert_eq!((a.code, a.entries.len()), (0, 1));
}

// ---------------------------------------------------------------------------------------
// 4. typesOnly and attribute selection.

#[test]
fn attribute_selection_and_types_only() {
    let fx = fixture();
    people(&fx, 1);
    let base = format!("cn=Person 0,ou=People,{SUFFIX}");
    let r = req(&base, SearchScope::Base, "(objectClass=*)");
    let names = |a: &Answer| a.entries[0].attrs.keys().cloned().collect::<Vec<_>>();
    let a = search(&fx, &anon(), &r, &[]);
    assert_eq!(names(&a), vec!["cn", "description", "objectClass", "sn"]);
    assert_eq!(a.entries[0].attrs["cn"], vec!["Person 0"]);
    let a = search(&fx, &anon(), &r.clone().attrs(&["1.1"]), &[]);
    assert!(a.entries[0].attrs.is_empty());
    let a = search(&fx, &anon(), &r.clone().attrs(&["SN", "nosuchattr"]), &[]);
    assert_eq!(names(&a), vec!["sn"]);
    let a = search(&fx, &anon(), &r.clone().attrs(&["+"]), &[]);
    let ops = names(&a);
    for n in [
        "entryDN",
        "entryUUID",
        "createTimestamp",
        "structuralObjectClass",
        "hasSubordinates",
    ] {
        assert!(ops.contains(&n.to_string()), "{n} in {ops:?}");
    }
    assert!(!ops.contains(&"cn".to_string()));
    assert_eq!(a.entries[0].attrs["entryDN"], vec![base.clone()]);
    let mut r2 = r.clone().attrs(&["cn", "entryDN"]);
    r2.types_only = true;
    let a = search(&fx, &anon(), &r2, &[]);
    assert_eq!(names(&a), vec!["cn", "entryDN"]);
    assert!(
        a.entries[0].attrs.values().all(Vec::is_empty),
        "typesOnly: no values"
    );
}

// ---------------------------------------------------------------------------------------
// 5. Aliases.

fn alias_fixture() -> Fx {
    let fx = fixture();
    ou(&fx, "People");
    ou(&fx, "Other");
    ou(&fx, "Aliases");
    for (name, under) in [
        ("Alice", "People"),
        ("Bob", "People"),
        ("Carol", "Other"),
        ("Dave", "Other"),
    ] {
        person(&fx, &format!("cn={name},ou={under},{SUFFIX}"), name, &[]);
    }
    let alias = |name: &str, target: &str| {
        add(
            &fx,
            &format!("cn={name},ou=Aliases,{SUFFIX}"),
            &[
                ("objectClass", "alias"),
                ("objectClass", "extensibleObject"),
                ("cn", name),
                ("aliasedObjectName", target),
            ],
        );
    };
    alias("ToAlice", &format!("cn=Alice,ou=People,{SUFFIX}"));
    alias("ToOther", &format!("ou=Other,{SUFFIX}"));
    alias("ToPeople", &format!("ou=People,{SUFFIX}"));
    alias("Dangling", &format!("cn=Nobody,ou=People,{SUFFIX}"));
    alias("LoopA", &format!("cn=LoopB,ou=Aliases,{SUFFIX}"));
    alias("LoopB", &format!("cn=LoopA,ou=Aliases,{SUFFIX}"));
    let chain = larch_server::search::deref::MAX_ALIAS_CHAIN + 1;
    for i in 0..chain {
        alias(
            &format!("Chain{i}"),
            &format!("cn=Chain{},ou=Aliases,{SUFFIX}", i + 1),
        );
    }
    alias(&format!("Chain{chain}"), &format!("cn=Alice,ou=People,{SUFFIX}"));
    fx
}

fn full(rdns: &[&str]) -> BTreeSet<String> {
    rdns.iter()
        .map(|r| format!("{r},{SUFFIX}").to_ascii_lowercase())
        .collect()
}

#[test]
fn aliases_are_entries_when_not_dereferenced() {
    let fx = alias_fixture();
    let a = search(
        &fx,
        &anon(),
        &req(
            &format!("ou=Aliases,{SUFFIX}"),
            SearchScope::OneLevel,
            "(objectClass=alias)",
        ),
        &[],
    );
    assert_eq!(a.code, 0);
    assert_eq!(
        a.entries.len(),
        6 + larch_server::search::deref::MAX_ALIAS_CHAIN + 2
    );
    // An alias base without finding: the alias itself (also under derefInSearching).
    for deref in [DerefAliases::Never, DerefAliases::InSearching] {
        let r = req(
            &format!("cn=ToOther,ou=Aliases,{SUFFIX}"),
            SearchScope::Base,
            "(objectClass=*)",
        )
        .deref(deref);
        let a = search(&fx, &anon(), &r, &[]);
        assert_eq!(a.dn_set(), full(&["cn=ToOther,ou=Aliases"]));
    }
}

#[test]
fn deref_finding_follows_the_base() {
    let fx = alias_fixture();
    for deref in [DerefAliases::FindingBaseObject, DerefAliases::Always] {
        let r = |base: &str, scope| req(&format!("{base},{SUFFIX}"), scope, "(objectClass=*)").deref(deref);
        let a = search(&fx, &anon(), &r("cn=ToOther,ou=Aliases", SearchScope::Base), &[]);
        assert_eq!(a.dn_set(), full(&["ou=Other"]));
        let a = search(
            &fx,
            &anon(),
            &r("cn=ToOther,ou=Aliases", SearchScope::OneLevel),
            &[],
        );
        assert_eq!(a.dn_set(), full(&["cn=Carol,ou=Other", "cn=Dave,ou=Other"]));
        // A base below an alias: the rest of the DN is found below the target.
        let a = search(
            &fx,
            &anon(),
            &r("cn=Carol,cn=ToOther,ou=Aliases", SearchScope::Base),
            &[],
        );
        assert_eq!(a.dn_set(), full(&["cn=Carol,ou=Other"]));
        // Chains of two links.
        let a = search(
            &fx,
            &anon(),
            &r(&format!("cn=Chain{}", 15), SearchScope::Base),
            &[],
        );
        assert_eq!(a.code, 32, "cn=Chain15 is not at the suffix");
        let a = search(&fx, &anon(), &r("cn=Chain15,ou=Aliases", SearchScope::Base), &[]);
        assert_eq!(a.dn_set(), full(&["cn=Alice,ou=People"]));

        let a = search(&fx, &anon(), &r("cn=Dangling,ou=Aliases", SearchScope::Base), &[]);
        assert_eq!(a.code, 33);
        assert_eq!(a.matched, format!("cn=Dangling,ou=Aliases,{SUFFIX}"));
        let a = search(&fx, &anon(), &r("cn=LoopA,ou=Aliases", SearchScope::Subtree), &[]);
        assert_eq!(a.code, 33);
        assert!(a.message.contains("circular"), "{}", a.message);
        let a = search(&fx, &anon(), &r("cn=Chain0,ou=Aliases", SearchScope::Base), &[]);
        assert_eq!(a.code, 36);
    }
    // Without finding, a dangling alias base is just an entry.
    let r = req(
        &format!("cn=Dangling,ou=Aliases,{SUFFIX}"),
        SearchScope::Base,
        "(objectClass=*)",
    )
    .deref(DerefAliases::InSearching);
    assert_eq!(search(&fx, &anon(), &r, &[]).code, 0);
}

#[test]
fn deref_in_searching_walks_the_targets_once() {
    let fx = alias_fixture();
    let base = format!("ou=Aliases,{SUFFIX}");
    for deref in [DerefAliases::InSearching, DerefAliases::Always] {
        let a = search(
            &fx,
            &anon(),
            &req(&base, SearchScope::Subtree, "(objectClass=*)").deref(deref),
            &[],
        );
        assert_eq!(a.code, 0);
        // No alias entry; dangling, looping and too long chains skipped; Alice once though
        // two aliases lead to her.
        assert_eq!(
            a.dn_set(),
            full(&[
                "ou=Aliases",
                "ou=People",
                "cn=Alice,ou=People",
                "cn=Bob,ou=People",
                "ou=Other",
                "cn=Carol,ou=Other",
                "cn=Dave,ou=Other",
            ])
        );
        assert_eq!(a.entries.len(), 7, "each entry once: {:?}", a.dns());
        let a = search(
            &fx,
            &anon(),
            &req(&base, SearchScope::OneLevel, "(objectClass=*)").deref(deref),
            &[],
        );
        assert_eq!(a.dn_set(), full(&["cn=Alice,ou=People", "ou=Other", "ou=People"]));
        let a = search(
            &fx,
            &anon(),
            &req(&base, SearchScope::Subtree, "(cn=Carol)").deref(deref),
            &[],
        );
        assert_eq!(a.dn_set(), full(&["cn=Carol,ou=Other"]));
    }
    // derefFindingBaseObj does not apply below the base.
    let a = search(
        &fx,
        &anon(),
        &req(&base, SearchScope::OneLevel, "(objectClass=*)").deref(DerefAliases::FindingBaseObject),
        &[],
    );
    assert_eq!(
        a.entries.len(),
        6 + larch_server::search::deref::MAX_ALIAS_CHAIN + 2
    );
}

// ---------------------------------------------------------------------------------------
// 6. Referrals.

fn referral_fixture() -> Fx {
    let fx = fixture();
    people(&fx, 2);
    add(
        &fx,
        &format!("ou=Remote,{SUFFIX}"),
        &[
            ("objectClass", "referral"),
            ("objectClass", "extensibleObject"),
            ("ou", "Remote"),
            (
                "ref",
                "ldap://remote.example.net/ou=Remote,dc=other,dc=net a label",
            ),
        ],
    );
    add(
        &fx,
        &format!("ou=Far,{SUFFIX}"),
        &[
            ("objectClass", "referral"),
            ("objectClass", "extensibleObject"),
            ("ou", "Far"),
            ("ref", "ldap://far.example.net"),
        ],
    );
    // Held below a referral (as ManageDsaIT lets an administrator add).
    person(&fx, &format!("cn=Hidden,ou=Remote,{SUFFIX}"), "Hidden", &[]);
    fx
}

#[test]
fn base_at_or_below_a_referral_gets_a_referral() {
    let fx = referral_fixture();
    let a = search(
        &fx,
        &anon(),
        &req(
            &format!("cn=x,ou=Remote,{SUFFIX}"),
            SearchScope::Subtree,
            "(objectClass=*)",
        ),
        &[],
    );
    assert_eq!(a.code, 10);
    assert_eq!(a.matched, format!("ou=Remote,{SUFFIX}"));
    assert_eq!(
        a.referral,
        vec!["ldap://remote.example.net/cn=x,ou=Remote,dc=other,dc=net??sub"]
    );
    // An existing entry below the referral, and the referral entry itself.
    let a = search(
        &fx,
        &anon(),
        &req(
            &format!("cn=Hidden,ou=Remote,{SUFFIX}"),
            SearchScope::Base,
            "(objectClass=*)",
        ),
        &[],
    );
    assert_eq!(a.code, 10);
    assert_eq!(
        a.referral,
        vec!["ldap://remote.example.net/cn=Hidden,ou=Remote,dc=other,dc=net??base"]
    );
    let a = search(
        &fx,
        &anon(),
        &req(
            &format!("ou=Far,{SUFFIX}"),
            SearchScope::OneLevel,
            "(objectClass=*)",
        ),
        &[],
    );
    assert_eq!(a.code, 10);
    assert_eq!(
        a.referral,
        vec![format!("ldap://far.example.net/ou=Far,{SUFFIX}??one")]
    );
    // ManageDsaIT: ordinary entries.
    let a = search(
        &fx,
        &anon(),
        &req(
            &format!("cn=Hidden,ou=Remote,{SUFFIX}"),
            SearchScope::Base,
            "(objectClass=*)",
        ),
        &[manage_dsa_it()],
    );
    assert_eq!((a.code, a.entries.len()), (0, 1));
}

#[test]
fn referrals_in_scope_become_references() {
    let fx = referral_fixture();
    for filter in ["(objectClass=*)", "(cn=Hidden)", "(cn=Person 1)"] {
        let a = search(&fx, &anon(), &req(SUFFIX, SearchScope::Subtree, filter), &[]);
        assert_eq!(a.code, 0);
        let refs: BTreeSet<Vec<String>> = a.refs.iter().cloned().collect();
        assert_eq!(
            refs,
            BTreeSet::from([
                vec!["ldap://remote.example.net/ou=Remote,dc=other,dc=net??sub".to_string()],
                vec![format!("ldap://far.example.net/ou=Far,{SUFFIX}??sub")],
            ]),
            "{filter}"
        );
        assert_eq!(a.refs.len(), 2);
        assert!(
            !a.dn_set()
                .iter()
                .any(|d| d.contains("ou=remote") || d.contains("ou=far")),
            "{filter}: nothing at or below a referral: {:?}",
            a.dns()
        );
    }
    let a = search(
        &fx,
        &anon(),
        &req(SUFFIX, SearchScope::OneLevel, "(objectClass=*)"),
        &[],
    );
    assert!(a.refs.contains(&vec![
        "ldap://remote.example.net/ou=Remote,dc=other,dc=net??base".to_string()
    ]));
    // ManageDsaIT: the referral entries and what is below them are entries.
    let a = search(
        &fx,
        &anon(),
        &req(SUFFIX, SearchScope::Subtree, "(objectClass=*)"),
        &[manage_dsa_it()],
    );
    assert!(a.refs.is_empty());
    let dns = a.dn_set();
    for d in [
        format!("ou=Remote,{SUFFIX}"),
        format!("cn=Hidden,ou=Remote,{SUFFIX}"),
        format!("ou=Far,{SUFFIX}"),
    ] {
        assert!(dns.contains(&d.to_ascii_lowercase()), "{d}");
    }
}

#[test]
fn referral_above_for_updates() {
    let fx = referral_fixture();
    let v = fx.dir.store.current();
    let norm = |dn: &str| NormDn::parse(dn.as_bytes(), &*fx.dir.schema).unwrap().1;
    let target = format!("cn=New,ou=Remote,{SUFFIX}");
    let e = referral_above(&fx.dir, &v, &norm(&target), &target).expect("below a referral");
    assert_eq!(e.code, ResultCode::REFERRAL);
    assert_eq!(e.matched_dn, format!("ou=Remote,{SUFFIX}"));
    assert_eq!(
        e.referrals,
        vec!["ldap://remote.example.net/cn=New,ou=Remote,dc=other,dc=net"]
    );
    let deep = format!("cn=a,cn=Hidden,ou=Remote,{SUFFIX}");
    assert!(referral_above(&fx.dir, &v, &norm(&deep), &deep).is_some());
    let other = format!("cn=Person 0,ou=People,{SUFFIX}");
    assert!(referral_above(&fx.dir, &v, &norm(&other), &other).is_none());
    assert!(referral_above(&fx.dir, &v, &norm("dc=nowhere"), "dc=nowhere").is_none());
}

// ---------------------------------------------------------------------------------------
// 7. Paged results.

fn page_all(
    fx: &Fx,
    id: &Identity,
    r: &Req,
    size: u32,
    extra: impl Fn() -> Vec<Ctl>,
) -> (Vec<Answer>, Vec<String>) {
    let mut cookie = Vec::new();
    let mut pages = Vec::new();
    let mut dns = Vec::new();
    for _ in 0..1000 {
        let mut ctls = extra();
        ctls.push(paged_ctl(size, &cookie));
        let a = search(fx, id, r, &ctls);
        dns.extend(a.dns());
        let done = a.code != 0 || a.cookie().is_empty();
        cookie = a.paged.as_ref().map(|p| p.1.clone()).unwrap_or_default();
        pages.push(a);
        if done {
            return (pages, dns);
        }
    }
    panic!("paging did not end");
}

#[test]
fn pages_cover_the_results_once() {
    let fx = fixture();
    people(&fx, 10);
    for (scope, filter) in [
        (SearchScope::OneLevel, "(objectClass=person)"),
        (SearchScope::Subtree, "(cn=Person*)"),
        (SearchScope::Subtree, "(description=d1)"),
        (
            SearchScope::Subtree,
            "(|(cn=Person 1)(cn=Person 3)(cn=Person 5)(cn=Person 7)(sn=Sn8))",
        ),
    ] {
        let r = req(&format!("ou=People,{SUFFIX}"), scope, filter);
        let whole = search(&fx, &anon(), &r, &[]).dns();
        for size in [1, 3, 4, 10, 11] {
            let (pages, dns) = page_all(&fx, &anon(), &r, size, Vec::new);
            assert_eq!(dns, whole, "{filter} pages of {size}");
            for (i, p) in pages.iter().enumerate() {
                assert_eq!(p.code, 0);
                assert!(p.entries.len() <= size as usize);
                assert_eq!(
                    p.cookie().is_empty(),
                    i + 1 == pages.len(),
                    "only the last page ends"
                );
            }
            // The last page is not empty when there are results: the page ends only when
            // another match exists.
            if !whole.is_empty() {
                assert!(!pages.last().unwrap().entries.is_empty());
            }
        }
    }
    assert!(fx.paged.lock().unwrap().is_empty());
}

#[test]
fn later_pages_read_the_first_pages_version() {
    let fx = fixture();
    people(&fx, 6);
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    let first = search(&fx, &anon(), &r, &[paged_ctl(2, &[])]);
    assert_eq!(first.entries.len(), 2);
    // Add one and delete one after the first page.
    person(&fx, &format!("cn=Late,ou=People,{SUFFIX}"), "Late", &[]);
    let v = fx.dir.store.current();
    let victim = first.entries[0].dn.clone();
    let gone = v
        .find(
            &NormDn::parse(
                format!("cn=Person 5,ou=People,{SUFFIX}").as_bytes(),
                &*fx.dir.schema,
            )
            .unwrap()
            .1,
        )
        .unwrap();
    fx.dir.store.write(move |txn| txn.delete(gone)).unwrap().unwrap();
    let mut dns = first.dns();
    let mut cookie = first.cookie();
    while !cookie.is_empty() {
        let a = search(&fx, &anon(), &r, &[paged_ctl(2, &cookie)]);
        assert_eq!(a.code, 0);
        dns.extend(a.dns());
        cookie = a.cookie();
    }
    let expected: Vec<String> = (0..6)
        .map(|i| format!("cn=Person {i},ou=People,{SUFFIX}"))
        .collect();
    assert_eq!(
        dns.iter().cloned().collect::<BTreeSet<_>>(),
        expected.into_iter().collect()
    );
    assert!(dns.contains(&victim));
    // A new search sees the current directory.
    let now = search(&fx, &anon(), &r, &[]).dn_set();
    assert!(now.contains(&format!("cn=late,ou=people,{SUFFIX}")));
    assert!(!now.contains(&format!("cn=person 5,ou=people,{SUFFIX}")));
}

#[test]
fn bad_cookies_are_refused_and_size_zero_abandons() {
    let fx = fixture();
    people(&fx, 6);
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    let first = search(&fx, &anon(), &r, &[paged_ctl(2, &[])]);
    let cookie = first.cookie();
    assert_eq!(
        first.paged.as_ref().unwrap().0,
        0,
        "estimate unknown for an unsorted search"
    );

    let a = search(&fx, &anon(), &r, &[paged_ctl(2, b"not-a-cookie")]);
    assert_eq!(a.code, 2);
    assert!(a.message.contains("cookie"), "{}", a.message);
    let other = req(&format!("ou=People,{SUFFIX}"), SearchScope::OneLevel, "(cn=*)");
    assert_eq!(
        search(&fx, &anon(), &other, &[paged_ctl(2, &cookie)]).code,
        2,
        "another filter"
    );
    let attrs = r.clone().attrs(&["cn"]);
    assert_eq!(
        search(&fx, &anon(), &attrs, &[paged_ctl(2, &cookie)]).code,
        2,
        "other attributes"
    );

    // The refusals left the search alone: it continues, and its old cookie is spent.
    let second = search(&fx, &anon(), &r, &[paged_ctl(2, &cookie)]);
    assert_eq!((second.code, second.entries.len()), (0, 2));
    assert_eq!(
        search(&fx, &anon(), &r, &[paged_ctl(2, &cookie)]).code,
        2,
        "a spent cookie"
    );

    // Size 0 with a cookie abandons: an empty cookie, and the cookie is gone.
    let c2 = second.cookie();
    let a = search(&fx, &anon(), &r, &[paged_ctl(0, &c2)]);
    assert_eq!((a.code, a.entries.len()), (0, 0));
    assert!(a.cookie().is_empty());
    assert_eq!(search(&fx, &anon(), &r, &[paged_ctl(2, &c2)]).code, 2);
    assert!(fx.paged.lock().unwrap().is_empty());
}

#[test]
fn oldest_paged_search_is_dropped_beyond_the_maximum() {
    let fx = fixture();
    people(&fx, 4);
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    let cookies: Vec<Vec<u8>> = (0..=MAX_PAGED_SEARCHES)
        .map(|_| search(&fx, &anon(), &r, &[paged_ctl(1, &[])]).cookie())
        .collect();
    assert_eq!(fx.paged.lock().unwrap().len(), MAX_PAGED_SEARCHES);
    assert_eq!(search(&fx, &anon(), &r, &[paged_ctl(1, &cookies[0])]).code, 2);
    for c in &cookies[1..] {
        assert_eq!(search(&fx, &anon(), &r, &[paged_ctl(1, c)]).code, 0);
    }
}

#[test]
fn size_limit_counts_every_page_and_a_page_not_below_it_is_ignored() {
    let fx = fixture_with(|c| c.limits.size_limit = 5);
    people(&fx, 10);
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    let (pages, dns) = page_all(&fx, &anon(), &r, 3, Vec::new);
    assert_eq!(dns.len(), 5);
    assert_eq!(pages.len(), 2);
    assert_eq!(pages[1].code, 4);
    assert!(pages[1].cookie().is_empty());
    // A page size at least the request's size limit: the control is ignored (RFC 2696).
    let a = search(&fx, &admin(&fx), &r.clone().size(3), &[paged_ctl(3, &[])]);
    assert_eq!((a.entries.len(), a.code), (3, 4));
    assert!(a.paged.is_none());
    // Size 0 on a new search: no entries, and a cookie for the rest.
    let a = search(&fx, &anon(), &r, &[paged_ctl(0, &[])]);
    assert!(a.entries.is_empty());
    assert!(!a.cookie().is_empty());
}

// ---------------------------------------------------------------------------------------
// 8. Sorting.

fn sort_fixture() -> Fx {
    let fx = fixture();
    ou(&fx, "People");
    let p = |cn: &str, extra: &[(&str, &str)]| person(&fx, &format!("cn={cn},ou=People,{SUFFIX}"), cn, extra);
    p("a", &[("uidNumber", "10"), ("dnQualifier", "x")]);
    p("b", &[("uidNumber", "9"), ("dnQualifier", "y")]);
    p("c", &[("uidNumber", "100"), ("dnQualifier", "x")]);
    p("d", &[("dnQualifier", "Y")]);
    p("e", &[("uidNumber", "2"), ("dnQualifier", "x")]);
    p(
        "f",
        &[("uidNumber", "1"), ("dnQualifier", "y"), ("dnQualifier", "w")],
    );
    fx
}

fn cns(a: &Answer) -> String {
    a.entries
        .iter()
        .map(|e| e.attrs["cn"][0].clone())
        .collect::<Vec<_>>()
        .join("")
}

#[test]
fn sort_orders_by_the_ordering_rule() {
    let fx = sort_fixture();
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    let run = |keys: &[(&str, Option<&str>, bool)]| search(&fx, &anon(), &r, &[sort_ctl(keys, true)]);
    // Integers in numeric order; missing values last.
    let a = run(&[("uidNumber", None, false)]);
    assert_eq!(cns(&a), "febacd");
    assert_eq!(a.sort, Some((ResultCode::SUCCESS, None)));
    // Reverse: the missing value is the largest, so first.
    assert_eq!(cns(&run(&[("uidNumber", None, true)])), "dcabef");
    // The least of several values (f: w and y); case ignored by the rule; ties in entry
    // order.
    assert_eq!(cns(&run(&[("dnQualifier", None, false)])), "facebd");
    assert_eq!(cns(&run(&[("dnQualifier", None, true)])), "bdacef");
    // A rule named explicitly on a type without ORDERING.
    assert_eq!(
        cns(&run(&[("cn", Some("caseIgnoreOrderingMatch"), true)])),
        "fedcba"
    );
    assert_eq!(cns(&run(&[("cn", Some("2.5.13.3"), false)])), "abcdef");
}

#[test]
fn sort_with_secondary_key_breaks_ties() {
    let fx = sort_fixture();
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    // dnQualifier: w for f; x for a, c, e; y (any case) for b, d. Within each, uidNumber
    // descending (missing first).
    let a = search(
        &fx,
        &anon(),
        &r,
        &[sort_ctl(
            &[("dnQualifier", None, false), ("uidNumber", None, true)],
            false,
        )],
    );
    assert_eq!(cns(&a), "fcaedb");
}

#[test]
fn sort_that_cannot_be_done() {
    let fx = sort_fixture();
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    // cn has no ORDERING rule (as in OpenLDAP): critical -> unavailableCriticalExtension.
    let a = search(&fx, &anon(), &r, &[sort_ctl(&[("cn", None, false)], true)]);
    assert_eq!(a.code, 12);
    assert!(a.entries.is_empty());
    assert_eq!(
        a.sort,
        Some((ResultCode::INAPPROPRIATE_MATCHING, Some(b"cn".to_vec())))
    );
    // Non-critical: the results, unsorted, and the reason.
    let a = search(&fx, &anon(), &r, &[sort_ctl(&[("cn", None, false)], false)]);
    assert_eq!((a.code, a.entries.len()), (0, 6));
    assert_eq!(
        a.sort,
        Some((ResultCode::INAPPROPRIATE_MATCHING, Some(b"cn".to_vec())))
    );
    let a = search(
        &fx,
        &anon(),
        &r,
        &[sort_ctl(&[("noSuchAttr", None, false)], false)],
    );
    assert_eq!(a.sort.as_ref().unwrap().0, ResultCode::NO_SUCH_ATTRIBUTE);
    let a = search(
        &fx,
        &anon(),
        &r,
        &[sort_ctl(&[("uidNumber", Some("caseIgnoreMatch"), false)], true)],
    );
    assert_eq!(a.code, 12, "an equality rule is not an ordering rule");
    // Sorted and paged: pages of the sorted list.
    let (pages, _) = page_all(&fx, &anon(), &r, 4, || {
        vec![sort_ctl(&[("uidNumber", None, false)], true)]
    });
    let joined: String = pages.iter().map(cns).collect();
    assert_eq!(joined, "febacd");
    assert_eq!(pages.len(), 2);
    assert_eq!(
        pages[0].paged.as_ref().unwrap().0,
        6,
        "the estimate is the sorted total"
    );
    assert!(pages.iter().all(|p| p.sort == Some((ResultCode::SUCCESS, None))));
    // A search that fails still carries the response controls; the sortResult mirrors it.
    let missing = req(
        &format!("ou=Nobody,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=*)",
    );
    let ctls = [sort_ctl(&[("uidNumber", None, false)], true), paged_ctl(2, &[])];
    let a = search(&fx, &anon(), &missing, &ctls);
    assert_eq!(a.code, 32);
    assert_eq!(a.sort, Some((ResultCode::NO_SUCH_OBJECT, None)));
    assert_eq!(a.paged, Some((0, Vec::new())));
    let a = search(&fx, &anon(), &missing, &[]);
    assert_eq!((a.code, &a.sort, &a.paged), (32, &None, &None));
}

#[test]
fn sort_through_the_ordering_index_equals_sort_by_values() {
    let fx = fixture_with(|c| {
        c.indexes = ServerConfig::from_toml_str(
            "[indexes]\nobjectClass = [\"eq\", \"pres\"]\ncn = [\"eq\"]\nuidNumber = [\"ord\"]\n\
             dnQualifier = [\"ord\"]\n",
        )
        .unwrap()
        .indexes;
    });
    ou(&fx, "People");
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    let mut entries = Vec::new();
    for i in 0..1300 {
        let cn = format!("p{i}");
        let mut attrs: Vec<(String, String)> = vec![
            ("objectClass".into(), "person".into()),
            ("objectClass".into(), "extensibleObject".into()),
            ("cn".into(), cn.clone()),
            ("sn".into(), "s".into()),
        ];
        for _ in 0..next(4) {
            attrs.push(("dnQualifier".into(), format!("q{}", next(300))));
        }
        if next(4) > 0 {
            attrs.push(("uidNumber".into(), format!("{}", next(500) as i64 - 100)));
        }
        attrs.sort();
        attrs.dedup();
        let refs: Vec<(&str, &str)> = attrs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        entries.push(entry(&fx, &format!("cn={cn},ou=People,{SUFFIX}"), &refs));
    }
    add_all(&fx, entries);
    let v = fx.dir.store.current();
    let schema = v.schema();
    let person = schema.object_class("person").unwrap().id;
    let oc = schema.attribute_type("objectClass").unwrap().id;
    let ids: Vec<u32> = v
        .entries()
        .filter(|e| {
            e.attrs().attribute(oc).any(|a| {
                a.values
                    .iter()
                    .any(|x| schema.object_class(&s(x)).is_some_and(|c| c.id == person))
            })
        })
        .map(|e| e.id)
        .collect();
    assert_eq!(ids.len(), 1300);
    type Key = (&'static str, Option<&'static str>, bool);
    let cases: [Vec<Key>; 5] = [
        vec![("uidNumber", None, false)],
        vec![("uidNumber", None, true)],
        vec![("dnQualifier", None, false)],
        vec![("dnQualifier", None, true), ("uidNumber", None, false)],
        vec![("dnQualifier", None, false), ("uidNumber", None, true)],
    ];
    for keys in cases {
        let ctl_keys: Vec<SortKey<'_>> = keys
            .iter()
            .map(|(a, r, rev)| SortKey {
                attribute: a.as_bytes(),
                ordering_rule: r.map(str::as_bytes),
                reverse: *rev,
            })
            .collect();
        let spec = parse_keys(
            &SortRequest {
                keys: SeqOf::from_items(&ctl_keys),
            },
            schema,
            &|_| Some(true),
        )
        .unwrap();
        let mut fast = ids.clone();
        sort_ids(&v, &mut fast, &spec, &mut |_, _| true);
        let mut slow = ids.clone();
        sort_ids_by_values(&v, &mut slow, &spec, &mut |_, _| true);
        assert_eq!(fast, slow, "{keys:?}");
        // And through a search, as the administrator (no size limit).
        let r = req(
            &format!("ou=People,{SUFFIX}"),
            SearchScope::OneLevel,
            "(objectClass=person)",
        );
        let a = search(&fx, &admin(&fx), &r, &[sort_ctl(&keys, true)]);
        let expected: Vec<String> = slow.iter().map(|&id| v.dn(id)).collect();
        assert_eq!(a.dns(), expected);
        // The order is the first key's order: its least value, missing last (first when
        // reversed). Values are compared as the test computes them: integers, or
        // lower-case strings of equal prefix.
        let least = |e: &Ent| -> Option<(i64, String)> {
            let vs = e.attrs.get(keys[0].0)?;
            Some(if keys[0].0 == "uidNumber" {
                (
                    vs.iter().map(|x| x.parse::<i64>().unwrap()).min().unwrap(),
                    String::new(),
                )
            } else {
                (0, vs.iter().map(|x| x.to_ascii_lowercase()).min().unwrap())
            })
        };
        let rank = |x: Option<(i64, String)>| (x.is_none(), x);
        let seq: Vec<_> = a.entries.iter().map(|e| rank(least(e))).collect();
        if keys[0].2 {
            assert!(seq.windows(2).all(|w| w[0] >= w[1]), "{keys:?}");
        } else {
            assert!(seq.windows(2).all(|w| w[0] <= w[1]), "{keys:?}");
        }
    }

    // Access control on the keys. A type the requester may search on no entry fails the
    // sort with insufficientAccessRights, naming the key.
    let uid_number = [SortKey {
        attribute: b"uidNumber",
        ordering_rule: None,
        reverse: false,
    }];
    let request = SortRequest {
        keys: SeqOf::from_items(&uid_number),
    };
    let refused = parse_keys(&request, schema, &|_| Some(false)).unwrap_err();
    assert_eq!(refused.code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS);
    assert_eq!(refused.attribute.as_deref(), Some(&b"uidNumber"[..]));
    // A right that depends on the entry: the key is guarded, the index is not walked, and
    // an entry the requester may not search on counts as without a value: it sorts with
    // them, after every entry whose value counts, in ID order.
    let spec = parse_keys(&request, schema, &|_| None).unwrap();
    assert!(spec[0].guarded);
    let uid_ty = schema.attribute_type("uidNumber").unwrap().id;
    let mut asked = 0usize;
    let mut guarded = ids.clone();
    sort_ids(&v, &mut guarded, &spec, &mut |id, t| {
        assert_eq!(t, uid_ty);
        asked += 1;
        id % 2 == 0
    });
    assert_eq!(asked, ids.len(), "every entry is asked once");
    let mut slow = ids.clone();
    sort_ids_by_values(&v, &mut slow, &spec, &mut |id, _| id % 2 == 0);
    assert_eq!(guarded, slow);
    let has_value = |id: u32| {
        v.entry(id)
            .is_some_and(|e| e.attrs().attribute(uid_ty).next().is_some())
    };
    let counted = ids.iter().filter(|&&id| id % 2 == 0 && has_value(id)).count();
    assert!(counted > 100 && counted < ids.len() / 2);
    assert!(guarded[..counted].iter().all(|&id| id % 2 == 0 && has_value(id)));
    let rest = &guarded[counted..];
    assert!(rest.windows(2).all(|w| w[0] < w[1]), "the rest in ID order");
    // Without the guard, the odd entries with a value would be among the first.
    let mut open = ids.clone();
    sort_ids(
        &v,
        &mut open,
        &parse_keys(&request, schema, &|_| Some(true)).unwrap(),
        &mut |_, _| unreachable!("an unguarded key asks nothing"),
    );
    assert!(open[..counted].iter().any(|&id| id % 2 == 1));
}

// ---------------------------------------------------------------------------------------
// 9. Assertion control.

#[test]
fn assertion_control_tests_the_base() {
    let fx = fixture();
    people(&fx, 3);
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=*)",
    );
    let a = search(&fx, &anon(), &r, &[assertion_ctl("(ou=people)")]);
    assert_eq!((a.code, a.entries.len()), (0, 3));
    let a = search(&fx, &anon(), &r, &[assertion_ctl("(ou=Nope)")]);
    assert_eq!((a.code, a.entries.len()), (122, 0));
    assert!(a.message.contains("ou=People"), "{}", a.message);
    let root = req("", SearchScope::Base, "(objectClass=*)");
    assert_eq!(
        search(&fx, &anon(), &root, &[assertion_ctl("(objectClass=top)")]).code,
        0
    );
    assert_eq!(
        search(&fx, &anon(), &root, &[assertion_ctl("(objectClass=person)")]).code,
        122
    );
}

// ---------------------------------------------------------------------------------------
// 10. The root DSE.

#[test]
fn root_dse_attributes() {
    let fx = fixture_with(|c| c.directory.extra_suffixes = vec!["o=Other".to_string()]);
    let r = req("", SearchScope::Base, "(objectClass=*)");
    let a = search(&fx, &anon(), &r, &[]);
    assert_eq!(a.code, 0);
    assert_eq!(a.entries.len(), 1);
    assert_eq!(a.entries[0].dn, "");
    assert_eq!(
        a.entries[0].attrs,
        BTreeMap::from([("objectClass".to_string(), vec!["top".to_string()])]),
        "only user attributes without a list"
    );
    let a = search(&fx, &anon(), &r.clone().attrs(&["+"]), &[]);
    let attrs = &a.entries[0].attrs;
    let strs = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(attrs["namingContexts"], strs(&[SUFFIX, "o=Other"]));
    assert_eq!(attrs["supportedControl"], strs(&SUPPORTED_CONTROLS));
    assert_eq!(attrs["supportedExtension"], strs(SUPPORTED_EXTENSIONS));
    assert_eq!(attrs["supportedFeatures"], strs(SUPPORTED_FEATURES));
    assert_eq!(attrs["supportedLDAPVersion"], strs(&["3"]));
    assert_eq!(attrs["vendorName"], strs(&["Larch"]));
    assert_eq!(attrs["vendorVersion"], strs(&[env!("CARGO_PKG_VERSION")]));
    assert_eq!(attrs["entryDN"], strs(&[""]));
    assert_eq!(attrs["subschemaSubentry"], strs(&["cn=Subschema"]));
    assert!(!attrs.contains_key("objectClass"));
    assert_eq!(
        attrs["supportedSASLMechanisms"],
        strs(&["PLAIN"]),
        "no TLS: PLAIN, not EXTERNAL"
    );
    let a = search(
        &fx,
        &anon(),
        &r.clone().attrs(&["namingcontexts", "subschemaSubentry"]),
        &[],
    );
    assert_eq!(
        a.entries[0].attrs.keys().collect::<Vec<_>>(),
        vec!["namingContexts", "subschemaSubentry"]
    );
    let a = search(
        &fx,
        &anon(),
        &req("", SearchScope::Base, "(objectClass=person)"),
        &[],
    );
    assert_eq!((a.code, a.entries.len()), (0, 0), "the filter applies");
    let a = search(
        &fx,
        &anon(),
        &req("", SearchScope::Base, "(vendorName=Larch)").attrs(&["1.1"]),
        &[],
    );
    assert_eq!(a.entries.len(), 1);
    assert!(a.entries[0].attrs.is_empty());
    // supportedLDAPVersion has no equality rule: the item is Undefined.
    let a = search(
        &fx,
        &anon(),
        &req("", SearchScope::Base, "(supportedLDAPVersion=3)"),
        &[],
    );
    assert_eq!((a.code, a.entries.len()), (0, 0));
}

// ---------------------------------------------------------------------------------------
// 11. The subschema subentry.

#[test]
fn subschema_subentry() {
    let fx = fixture();
    let r = req("CN=SUBSCHEMA", SearchScope::Base, "(objectClass=subschema)");
    let a = search(&fx, &anon(), &r, &[]);
    assert_eq!(a.code, 0);
    assert_eq!(a.entries.len(), 1);
    let e = &a.entries[0];
    assert_eq!(e.dn, "cn=Subschema");
    assert_eq!(e.attrs.keys().collect::<Vec<_>>(), vec!["cn", "objectClass"]);
    assert_eq!(
        e.attrs["objectClass"],
        vec!["top", "subentry", "subschema", "extensibleObject"]
    );
    let rendered = fx.dir.schema.subschema();
    let a = search(
        &fx,
        &anon(),
        &r.clone().attrs(&["objectClasses", "attributeTypes"]),
        &[],
    );
    assert_eq!(a.entries[0].attrs["objectClasses"], rendered.object_classes);
    assert_eq!(a.entries[0].attrs["attributeTypes"], rendered.attribute_types);
    assert_eq!(a.entries[0].attrs.len(), 2);
    let a = search(&fx, &anon(), &r.clone().attrs(&["+"]), &[]);
    let attrs = &a.entries[0].attrs;
    assert_eq!(attrs["ldapSyntaxes"], rendered.ldap_syntaxes);
    assert_eq!(attrs["matchingRules"], rendered.matching_rules);
    assert_eq!(attrs["matchingRuleUse"], rendered.matching_rule_use);
    assert_eq!(attrs["structuralObjectClass"], vec!["subentry"]);
    // subentry (RFC 3672) requires it: the empty specification, the whole area.
    assert_eq!(attrs["subtreeSpecification"], vec!["{}"]);
    assert_eq!(attrs["entryDN"], vec!["cn=Subschema"]);
    assert_eq!(attrs["subschemaSubentry"], vec!["cn=Subschema"]);
    assert_eq!(attrs["createTimestamp"].len(), 1);
    assert!(!attrs.contains_key("cn"));
    // Other scopes: itself when in scope.
    let a = search(
        &fx,
        &anon(),
        &req("cn=subschema", SearchScope::Subtree, "(objectClass=*)"),
        &[],
    );
    assert_eq!(a.entries.len(), 1);
    for scope in [SearchScope::OneLevel, SearchScope::Subordinate] {
        let a = search(&fx, &anon(), &req("cn=subschema", scope, "(objectClass=*)"), &[]);
        assert_eq!((a.code, a.entries.len()), (0, 0));
    }
    let a = search(
        &fx,
        &anon(),
        &req("cn=subschema", SearchScope::Base, "(cn=other)"),
        &[],
    );
    assert_eq!((a.code, a.entries.len()), (0, 0));
}

// ---------------------------------------------------------------------------------------
// The sink, and which searches run inline.

/// A sink that stops the search at its first flush.
#[derive(Default)]
struct StopSink {
    out: Vec<u8>,
    flushes: usize,
}

impl ResponseSink for StopSink {
    fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }
    fn flush(&mut self) -> bool {
        self.flushes += 1;
        false
    }
    fn stopped(&self) -> bool {
        false
    }
}

#[test]
fn a_stopped_sink_ends_the_search_without_done() {
    let fx = fixture();
    people(&fx, 200);
    let r = req(
        &format!("ou=People,{SUFFIX}"),
        SearchScope::OneLevel,
        "(objectClass=person)",
    );
    let mut sink = StopSink::default();
    let a = search_with(&fx, &admin(&fx), &r, &[], &mut sink);
    assert!(!a.done, "no SearchResultDone after the sink stopped the search");
    assert_eq!(sink.flushes, 1);
    assert_eq!(a.entries.len(), larch_server::search::run::FLUSH_ENTRIES);
    // Paged: the stopped search is not kept.
    let mut sink = StopSink::default();
    search_with(&fx, &admin(&fx), &r, &[paged_ctl(150, &[])], &mut sink);
    assert!(fx.paged.lock().unwrap().is_empty());
}

/// A sink that asks for a pause at every place the search may pause, and counts them.
#[derive(Default)]
struct PausingSink {
    out: Vec<u8>,
    pauses: usize,
}

impl ResponseSink for PausingSink {
    fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }
    fn flush(&mut self) -> bool {
        true
    }
    fn stopped(&self) -> bool {
        false
    }
    fn should_pause(&mut self) -> bool {
        self.pauses += 1;
        true
    }
}

/// An answer's content, without the paged cookie (a pausing and a plain run keep their
/// pages under different cookies).
#[derive(Debug, PartialEq)]
struct Content {
    entries: Vec<Ent>,
    refs: Vec<Vec<String>>,
    done: bool,
    code: u32,
    message: String,
    more_pages: Option<bool>,
}

fn content(a: &Answer) -> Content {
    Content {
        entries: a.entries.clone(),
        refs: a.refs.clone(),
        done: a.done,
        code: a.code,
        message: a.message.clone(),
        more_pages: a.paged.as_ref().map(|p| !p.1.is_empty()),
    }
}

#[test]
fn a_search_paused_at_every_chance_answers_as_one_run_in_one_go() {
    let fx = fixture();
    people(&fx, 300);
    let people_base = format!("ou=People,{SUFFIX}");
    let mut limited = req(&people_base, SearchScope::Subtree, "(objectClass=person)");
    limited.size = 150;
    let cases: Vec<(Req, Vec<Ctl>)> = vec![
        // A walk of the tree, then an index set iterated in place.
        (req(&people_base, SearchScope::OneLevel, "(cn=*)"), vec![]),
        (
            req(&people_base, SearchScope::Subtree, "(objectClass=person)"),
            vec![],
        ),
        // A filter the index narrows only in part, and one no index helps.
        (
            req(
                SUFFIX,
                SearchScope::Subtree,
                "(&(objectClass=person)(!(cn=Person 1*)))",
            ),
            vec![],
        ),
        (req(SUFFIX, SearchScope::Subtree, "(!(cn=Person 2*))"), vec![]),
        // The size limit counts the entries of every step.
        (limited, vec![]),
        // Sorted: collected in one step, written in several.
        (
            req(&people_base, SearchScope::OneLevel, "(objectClass=person)"),
            vec![sort_ctl(&[("cn", None, true)], false)],
        ),
    ];
    for (r, ctls) in &cases {
        let whole = search(&fx, &admin(&fx), r, ctls);
        let mut sink = PausingSink::default();
        let stepped = search_with(&fx, &admin(&fx), r, ctls, &mut sink);
        assert!(
            sink.pauses > 0,
            "{}: the search never reached a place to pause",
            r.filter
        );
        assert_eq!(content(&stepped), content(&whole), "{}", r.filter);
    }
    // Paged: a page of 100 paused at every chance is the same page, and the pages cover
    // the results once.
    let r = req(&people_base, SearchScope::OneLevel, "(objectClass=person)");
    let whole = search(&fx, &admin(&fx), &r, &[]).dns();
    let mut cookie = Vec::new();
    let mut dns = Vec::new();
    loop {
        let mut sink = PausingSink::default();
        let page = search_with(&fx, &admin(&fx), &r, &[paged_ctl(100, &cookie)], &mut sink);
        assert_eq!(page.code, 0, "{}", page.message);
        assert!(page.entries.len() <= 100);
        dns.extend(page.dns());
        cookie = page.cookie();
        if cookie.is_empty() {
            break;
        }
    }
    assert_eq!(dns, whole);
}

#[test]
fn small_searches_are_recognised() {
    let fx = fixture();
    people(&fx, 100);
    let base = format!("ou=People,{SUFFIX}");
    assert!(
        search(
            &fx,
            &anon(),
            &req(&base, SearchScope::Base, "(objectClass=*)"),
            &[]
        )
        .small
    );
    assert!(
        search(
            &fx,
            &anon(),
            &req(SUFFIX, SearchScope::Subtree, "(cn=Person 7)"),
            &[]
        )
        .small
    );
    assert!(
        !search(
            &fx,
            &anon(),
            &req(SUFFIX, SearchScope::Subtree, "(objectClass=*)"),
            &[]
        )
        .small
    );
    assert!(
        !search(
            &fx,
            &anon(),
            &req(&base, SearchScope::OneLevel, "(description=d1)"),
            &[]
        )
        .small
    );
    assert!(
        search(
            &fx,
            &anon(),
            &req(SUFFIX, SearchScope::OneLevel, "(description=d1)"),
            &[]
        )
        .small
    );
}

// ---------------------------------------------------------------------------------------
// Property: the search's entries are exactly those a brute-force check of the filter over
// the scope finds.

#[derive(Debug, Clone)]
struct Node {
    parent: usize,
    sn: u8,
    description: Option<u8>,
    mail: Option<u8>,
    extra_cn: Option<u8>,
}

fn node() -> impl Strategy<Value = Node> {
    (
        any::<usize>(),
        0u8..4,
        prop::option::of(0u8..3),
        prop::option::of(0u8..3),
        prop::option::of(0u8..3),
    )
        .prop_map(|(parent, sn, description, mail, extra_cn)| Node {
            parent,
            sn,
            description,
            mail,
            extra_cn,
        })
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..4).prop_map(|v| format!("(sn=s{v})")),
        (0u8..3).prop_map(|v| format!("(description=d{v})")),
        (0u8..3).prop_map(|v| format!("(mail=m{v}@x)")),
        (0u8..3).prop_map(|v| format!("(cn=x{v})")),
        (0u8..12).prop_map(|v| format!("(cn=e{v})")),
        Just("(description=*)".to_string()),
        Just("(mail=*)".to_string()),
        Just("(objectClass=person)".to_string()),
        Just("(objectClass=*)".to_string()),
        (0u8..3).prop_map(|v| format!("(cn=e{v}*)")),
        (0u8..3).prop_map(|v| format!("(sn=*{v})")),
        (0u8..3).prop_map(|v| format!("(description~=d{v})")),
        Just("(nosuchattr=1)".to_string()),
    ]
}

fn filter() -> impl Strategy<Value = String> {
    leaf().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("(&{})", v.concat())),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("(|{})", v.concat())),
            inner.prop_map(|f| format!("(!{f})")),
        ]
    })
}

fn scope_of(i: u8) -> SearchScope {
    [
        SearchScope::Base,
        SearchScope::OneLevel,
        SearchScope::Subtree,
        SearchScope::Subordinate,
    ][usize::from(i % 4)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn search_equals_brute_force(
        nodes in prop::collection::vec(node(), 1..14),
        queries in prop::collection::vec((filter(), any::<usize>(), 0u8..4, 1u32..4), 6),
    ) {
        let fx = fixture();
        // Entry i is cn=e{i} below the suffix or below an earlier entry.
        let mut dns: Vec<String> = Vec::new();
        let mut entries = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let parent = if i == 0 || n.parent % 3 == 0 {
                SUFFIX.to_string()
            } else {
                dns[n.parent % i].clone()
            };
            let dn = format!("cn=e{i},{parent}");
            let cn = format!("e{i}");
            let sn = format!("s{}", n.sn);
            let mut attrs = vec![("objectClass", "person".to_string()), ("objectClass", "extensibleObject".to_string()), ("cn", cn), ("sn", sn)];
            if let Some(d) = n.description { attrs.push(("description", format!("d{d}"))); }
            if let Some(m) = n.mail { attrs.push(("mail", format!("m{m}@x"))); }
            if let Some(x) = n.extra_cn { attrs.push(("cn", format!("x{x}"))); }
            let refs: Vec<(&str, &str)> = attrs.iter().map(|(a, b)| (*a, b.as_str())).collect();
            entries.push(entry(&fx, &dn, &refs));
            dns.push(dn);
        }
        add_all(&fx, entries);
        let v = fx.dir.store.current();
        let schema = v.schema();
        let mut bases: Vec<String> = vec![String::new(), SUFFIX.to_string()];
        bases.extend(dns.iter().cloned());
        for (f, b, sc, page) in &queries {
            let base = &bases[b % bases.len()];
            let scope = scope_of(*sc);
            if base.is_empty() && scope == SearchScope::Base {
                continue;
            }
            // The model: every entry, its DN against the scope, the filter evaluated.
            let (_, base_norm) = NormDn::parse(base.as_bytes(), schema).unwrap();
            let owned = OwnedFilter::parse(f).unwrap();
            let compiled = CompiledFilter::compile(owned.as_filter(), schema);
            let mut scratch = Vec::new();
            let expected: BTreeSet<String> = v
                .entries()
                .filter(|e| {
                    let dn = v.norm_dn(e.id);
                    let within = match scope {
                        SearchScope::Base => dn == base_norm,
                        // The root's children are the naming contexts.
                        SearchScope::OneLevel if base_norm.is_root() => fx.dir.suffixes.contains(&dn),
                        SearchScope::OneLevel => dn.is_child_of(&base_norm),
                        SearchScope::Subtree => dn.is_within(&base_norm),
                        SearchScope::Subordinate => base_norm.is_ancestor_of(&dn),
                    };
                    within && compiled.matches(e.attrs(), None, schema, &mut scratch)
                })
                .map(|e| v.dn(e.id).to_ascii_lowercase())
                .collect();
            let r = req(base, scope, f);
            let a = search(&fx, &admin(&fx), &r, &[]);
            prop_assert_eq!(a.code, 0);
            prop_assert_eq!(a.entries.len(), expected.len(), "duplicates? {} {:?}", f, scope);
            prop_assert_eq!(&a.dn_set(), &expected, "{} from `{}` {:?}", f, base, scope);
            // Paged, as a client with server limits: the same entries.
            let (_, paged) = page_all(&fx, &anon(), &r, *page, Vec::new);
            prop_assert_eq!(paged.len(), expected.len());
            let paged: BTreeSet<String> = paged.iter().map(|d| d.to_ascii_lowercase()).collect();
            prop_assert_eq!(&paged, &expected);
        }
    }
}
