//! The search planner against the filter check it serves: over a directory of a few
//! hundred entries with some types indexed, random filters and scopes must never lose an
//! entry the filter matches (soundness), filters of indexed equality items must give exactly
//! the matching entries (precision), and each planning rule gives the candidates it should.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use larch_model::dn::NormDn;
use larch_model::entry::{split_description, Entry, Options};
use larch_model::filter::{CompiledFilter, Tri};
use larch_model::schema::Schema;
use larch_proto::{OwnedFilter, SearchScope};
use larch_server::search::{candidates_in_scope, in_scope, plan, Candidates, Plan, MAX_DESCRIPTION_LEN};
use larch_store::index::{IndexConfig, IndexKinds};
use larch_store::{EntryId, Store, StoreOptions, Version};
use proptest::prelude::*;

mod common;
use common::fresh_data_dir;

/// Persons in the directory.
const PERSONS: usize = 300;

fn schema() -> Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    Arc::clone(S.get_or_init(|| Arc::new(Schema::builtin().unwrap())))
}

const EQ: IndexKinds = IndexKinds::EQUALITY;

/// objectClass: equality and presence; every subtype of `name` (and `name`): equality; cn
/// also presence and substrings; uid: equality and presence; mail: substrings only;
/// dnQualifier: ordering only; description and telephoneNumber: nothing.
fn index_config(s: &Schema) -> IndexConfig {
    let mut attributes = BTreeMap::new();
    let name = s.attribute_type("name").unwrap().id;
    for t in s.attribute_types() {
        if s.is_subtype(t.id, name) && t.equality.is_some() {
            attributes.insert(t.oid.clone(), EQ);
        }
    }
    let all = IndexKinds {
        equality: true,
        presence: true,
        substring: true,
        ordering: false,
    };
    attributes.insert("cn".into(), all);
    attributes.insert("objectClass".into(), IndexKinds { presence: true, ..EQ });
    attributes.insert("uid".into(), IndexKinds { presence: true, ..EQ });
    attributes.insert(
        "mail".into(),
        IndexKinds {
            substring: true,
            ..IndexKinds::default()
        },
    );
    attributes.insert(
        "dnQualifier".into(),
        IndexKinds {
            ordering: true,
            ..IndexKinds::default()
        },
    );
    IndexConfig { attributes }
}

/// A small deterministic generator, so the directory is the same in every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A value of 1 to 3 letters of `ab` (so filters over the same alphabet hit).
    fn word(&mut self) -> String {
        let len = 1 + self.below(3);
        (0..len)
            .map(|_| if self.below(2) == 0 { 'a' } else { 'b' })
            .collect()
    }
}

struct Fixture {
    version: Arc<Version>,
    /// Every entry ID, with 0 (the root above the naming contexts) first.
    bases: Vec<EntryId>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(build)
}

fn build() -> Fixture {
    let s = schema();
    let dir = fresh_data_dir("planner");
    let mut options = StoreOptions::new(&dir, schema());
    options.snapshot_interval = None;
    options.indexes = index_config(&s);
    let (store, _) = Store::open(options).unwrap();
    let at = |n: &str| s.attribute_type(n).unwrap().id;
    let none = Options::none();
    let fr = split_description(b"cn;lang-fr").unwrap().1;
    let add = |e: Entry, naming_context: bool| {
        store
            .write(move |t| t.add(&e.dn, &e.norm_dn, &e.to_stored(), naming_context).map(drop))
            .unwrap()
            .unwrap();
    };
    let entry = |dn: &str| {
        let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
        Entry::new(dn, norm)
    };
    let mut suffix = entry("dc=example,dc=com");
    for oc in ["dcObject", "organization"] {
        suffix.push_value(at("objectClass"), &none, oc.as_bytes().to_vec());
    }
    suffix.push_value(at("dc"), &none, b"example".to_vec());
    suffix.push_value(at("o"), &none, b"ab".to_vec());
    add(suffix, true);
    let mut containers = vec!["dc=example,dc=com".to_string()];
    for (ou, parent) in [
        ("a", "dc=example,dc=com"),
        ("b", "dc=example,dc=com"),
        ("c", "ou=a,dc=example,dc=com"),
    ] {
        let dn = format!("ou={ou},{parent}");
        let mut e = entry(&dn);
        e.push_value(at("objectClass"), &none, b"organizationalUnit".to_vec());
        e.push_value(at("ou"), &none, ou.as_bytes().to_vec());
        add(e, false);
        containers.push(dn);
    }
    let mut rng = Lcg(0x5eed);
    let mut persons: Vec<String> = Vec::new();
    for i in 0..PERSONS {
        // Every seventh person sits below an earlier one, for deeper subtrees.
        let parent = if i % 7 == 6 {
            persons[rng.below(persons.len() as u64) as usize].clone()
        } else {
            containers[i % containers.len()].clone()
        };
        let dn = format!("cn=p{i},{parent}");
        let mut e = entry(&dn);
        // The class under its name, its OID or another case.
        let person: &[u8] = match i % 5 {
            0 => b"2.5.6.6",
            1 => b"PERSON",
            _ => b"person",
        };
        e.push_value(at("objectClass"), &none, b"top".to_vec());
        e.push_value(at("objectClass"), &none, person.to_vec());
        if i % 3 == 0 {
            e.push_value(at("objectClass"), &none, b"organizationalPerson".to_vec());
        }
        e.push_value(at("cn"), &none, format!("p{i}").into_bytes());
        for _ in 0..rng.below(3) {
            e.push_value(at("cn"), &none, rng.word().into_bytes());
        }
        if rng.below(4) == 0 {
            e.push_value(at("cn"), &fr, rng.word().into_bytes());
        }
        let maybe = |name: &str, e: &mut Entry, rng: &mut Lcg| {
            if rng.below(4) != 0 {
                e.push_value(at(name), &none, rng.word().into_bytes());
            }
        };
        for name in ["sn", "uid", "mail", "description", "dnQualifier", "title", "ou"] {
            maybe(name, &mut e, &mut rng);
        }
        add(e, false);
        persons.push(dn);
    }
    let version = store.current();
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut bases = vec![0];
    bases.extend(version.entries().map(|e| e.id));
    assert_eq!(bases.len(), PERSONS + 5);
    Fixture { version, bases }
}

/// A filter as a tree, encoded to BER by hand so that unknown choices can be included.
#[derive(Debug, Clone)]
enum F {
    And(Vec<F>),
    Or(Vec<F>),
    Not(Box<F>),
    Eq(&'static str, String),
    Sub(&'static str, Option<String>, Vec<String>, Option<String>),
    Ge(&'static str, String),
    Le(&'static str, String),
    Pres(&'static str),
    Approx(&'static str, String),
    Ext(&'static str, String),
    Unknown,
}

fn tlv(tag: u8, content: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0x81, len as u8]);
    } else {
        out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend_from_slice(content);
}

fn ava(tag: u8, attr: &str, value: &str, out: &mut Vec<u8>) {
    let mut c = Vec::new();
    tlv(0x04, attr.as_bytes(), &mut c);
    tlv(0x04, value.as_bytes(), &mut c);
    tlv(tag, &c, out);
}

fn encode(f: &F, out: &mut Vec<u8>) {
    match f {
        F::And(cs) | F::Or(cs) => {
            let mut c = Vec::new();
            for child in cs {
                encode(child, &mut c);
            }
            tlv(if matches!(f, F::And(_)) { 0xa0 } else { 0xa1 }, &c, out);
        }
        F::Not(inner) => {
            let mut c = Vec::new();
            encode(inner, &mut c);
            tlv(0xa2, &c, out);
        }
        F::Eq(a, v) => ava(0xa3, a, v, out),
        F::Sub(a, i, any, fin) => {
            let mut parts = Vec::new();
            if let Some(i) = i {
                tlv(0x80, i.as_bytes(), &mut parts);
            }
            for x in any {
                tlv(0x81, x.as_bytes(), &mut parts);
            }
            if let Some(f) = fin {
                tlv(0x82, f.as_bytes(), &mut parts);
            }
            let mut c = Vec::new();
            tlv(0x04, a.as_bytes(), &mut c);
            tlv(0x30, &parts, &mut c);
            tlv(0xa4, &c, out);
        }
        F::Ge(a, v) => ava(0xa5, a, v, out),
        F::Le(a, v) => ava(0xa6, a, v, out),
        F::Pres(a) => tlv(0x87, a.as_bytes(), out),
        F::Approx(a, v) => ava(0xa8, a, v, out),
        F::Ext(a, v) => {
            let mut c = Vec::new();
            tlv(0x81, b"caseExactMatch", &mut c);
            tlv(0x82, a.as_bytes(), &mut c);
            tlv(0x83, v.as_bytes(), &mut c);
            tlv(0xa9, &c, out);
        }
        F::Unknown => tlv(0x8b, b"x", out),
    }
}

fn owned(f: &F) -> OwnedFilter {
    let mut ber = Vec::new();
    encode(f, &mut ber);
    OwnedFilter::from_ber(ber).unwrap()
}

const ATTRS: &[&str] = &[
    "cn",
    "sn",
    "name",
    "cn;lang-fr",
    "name;lang-fr",
    "uid",
    "mail",
    "description",
    "dnQualifier",
    "title",
    "ou",
    "telephoneNumber",
    "noSuchAttr",
];

const CLASSES: &[&str] = &[
    "person",
    "Person",
    "2.5.6.6",
    "top",
    "organizationalPerson",
    "organizationalUnit",
    "noSuchClass",
];

/// The classes of `CLASSES` an equality finds in the index.
const INDEXED_CLASSES: &[&str] = &[
    "person",
    "Person",
    "2.5.6.6",
    "organizationalPerson",
    "organizationalUnit",
];

fn word() -> impl Strategy<Value = String> {
    "[ab]{1,3}"
}

fn leaf() -> impl Strategy<Value = F> {
    let attr = || prop::sample::select(ATTRS);
    prop_oneof![
        4 => (attr(), word()).prop_map(|(a, v)| F::Eq(a, v)),
        2 => prop::sample::select(CLASSES).prop_map(|c| F::Eq("objectClass", c.to_string())),
        2 => prop_oneof![attr(), Just("objectClass")].prop_map(F::Pres),
        2 => (attr(), prop::option::of(word()), prop::collection::vec(word(), 0..2), prop::option::of(word()))
            .prop_filter("a substring filter has a part", |(_, i, a, f)| i.is_some() || !a.is_empty() || f.is_some())
            .prop_map(|(a, i, any, f)| F::Sub(a, i, any, f)),
        1 => (attr(), word()).prop_map(|(a, v)| F::Ge(a, v)),
        1 => (attr(), word()).prop_map(|(a, v)| F::Le(a, v)),
        1 => (attr(), word()).prop_map(|(a, v)| F::Approx(a, v)),
        1 => (attr(), word()).prop_map(|(a, v)| F::Ext(a, v)),
        1 => Just(F::Unknown),
    ]
}

/// Random filters nested up to depth 4 (empty lists included).
fn filter() -> impl Strategy<Value = F> {
    leaf().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(F::And),
            prop::collection::vec(inner.clone(), 0..4).prop_map(F::Or),
            inner.prop_map(|f| F::Not(Box::new(f))),
        ]
    })
}

/// Equality items on indexed types without options, under non-empty `and`/`or`.
fn indexed_equality_filter() -> impl Strategy<Value = F> {
    let item = prop_oneof![
        3 => (prop::sample::select(&["cn", "sn", "name", "uid", "title", "ou"][..]), word())
            .prop_map(|(a, v)| F::Eq(a, v)),
        // Not `top`: it has more subclasses than the planner looks up
        // (`MAX_CLASS_SPELLINGS`) and is planned as a scan, as it narrows nothing.
        1 => prop::sample::select(INDEXED_CLASSES).prop_map(|c| F::Eq("objectClass", c.to_string())),
    ];
    item.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(F::And),
            prop::collection::vec(inner, 1..4).prop_map(F::Or),
        ]
    })
}

fn scope() -> impl Strategy<Value = SearchScope> {
    prop::sample::select(
        &[
            SearchScope::Base,
            SearchScope::OneLevel,
            SearchScope::Subtree,
            SearchScope::Subordinate,
        ][..],
    )
}

/// The entries for which the filter is TRUE.
fn matching(f: &OwnedFilter, v: &Version) -> BTreeSet<EntryId> {
    let s = schema();
    let compiled = CompiledFilter::compile(f.as_filter(), &s);
    let mut scratch = Vec::new();
    v.entries()
        .filter(|e| compiled.evaluate(e.attrs(), None, &s, &mut scratch) == Tri::True)
        .map(|e| e.id)
        .collect()
}

fn plan_of(f: &OwnedFilter) -> Plan {
    plan(f.as_filter(), &fixture().version, &schema())
}

fn set_of(p: &Plan) -> BTreeSet<EntryId> {
    match p.candidates() {
        Candidates::All => panic!("expected a set, got a scan ({p})"),
        Candidates::Set(s) => s.iter().collect(),
    }
}

/// The brute-force scope.
fn scope_of(v: &Version, base: EntryId, scope: SearchScope) -> BTreeSet<EntryId> {
    let parent_chain_hits = |id: EntryId| {
        let mut cur = id;
        loop {
            if cur == base {
                return true;
            }
            match v.entry(cur) {
                Some(e) if e.parent() != 0 => cur = e.parent(),
                _ => return base == 0,
            }
        }
    };
    v.entries()
        .map(|e| (e.id, e.parent()))
        .filter(|&(id, parent)| match scope {
            SearchScope::Base => id == base,
            SearchScope::OneLevel => parent == base,
            SearchScope::Subtree => parent_chain_hits(id),
            SearchScope::Subordinate => id != base && parent_chain_hits(id),
        })
        .map(|(id, _)| id)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every in-scope entry the filter matches is yielded; nothing out of scope is; no ID
    /// twice; a scan yields exactly the scope.
    #[test]
    fn candidates_hold_every_match(f in filter(), base_pick in any::<prop::sample::Index>(), scope in scope()) {
        let fx = fixture();
        let v = &*fx.version;
        let base = fx.bases[base_pick.index(fx.bases.len())];
        let owned = owned(&f);
        let p = plan_of(&owned);
        let yielded: Vec<EntryId> = candidates_in_scope(&p, v, base, scope).collect();
        let unique: BTreeSet<EntryId> = yielded.iter().copied().collect();
        prop_assert_eq!(unique.len(), yielded.len(), "an ID yielded twice");
        let in_scope_set = scope_of(v, base, scope);
        for id in &unique {
            prop_assert!(in_scope_set.contains(id), "{} is out of scope", id);
            prop_assert!(in_scope(v, base, scope, *id));
        }
        if p.candidates().is_all() {
            prop_assert_eq!(&unique, &in_scope_set);
        }
        for id in matching(&owned, v) {
            prop_assert!(p.candidates().contains(id), "plan `{}` of {} lost entry {}", p, owned.as_filter(), id);
            if in_scope_set.contains(&id) {
                prop_assert!(unique.contains(&id), "entry {} in scope but not yielded", id);
            }
        }
        prop_assert!(p.description().len() <= MAX_DESCRIPTION_LEN);
    }

    /// Indexed equality items give exactly the matching entries.
    #[test]
    fn indexed_equality_is_exact(f in indexed_equality_filter()) {
        let owned = owned(&f);
        let p = plan_of(&owned);
        prop_assert!(p.is_indexed(), "{} planned as a scan", owned.as_filter());
        prop_assert_eq!(set_of(&p), matching(&owned, &fixture().version), "plan `{}` of {}", p, owned.as_filter());
    }

    /// in_scope agrees with the brute-force scope for every entry.
    #[test]
    fn in_scope_matches_model(base_pick in any::<prop::sample::Index>(), scope in scope()) {
        let fx = fixture();
        let v = &*fx.version;
        let base = fx.bases[base_pick.index(fx.bases.len())];
        let model = scope_of(v, base, scope);
        for e in v.entries() {
            prop_assert_eq!(in_scope(v, base, scope, e.id), model.contains(&e.id), "entry {}", e.id);
        }
    }
}

fn parse(s: &str) -> OwnedFilter {
    OwnedFilter::parse(s).unwrap()
}

fn plan_str(s: &str) -> Plan {
    plan_of(&parse(s))
}

#[test]
fn absolute_true_scans_and_absolute_false_is_empty() {
    let t = plan_str("(&)");
    assert!(t.candidates().is_all());
    assert!(!t.is_indexed());
    assert_eq!(t.description(), "scan");
    let f = plan_str("(|)");
    assert_eq!(set_of(&f), BTreeSet::new());
    assert!(f.is_indexed());
    assert_eq!(f.description(), "none");
    // Absolute true does not narrow an `and`; absolute false empties it.
    assert_eq!(set_of(&plan_str("(&(&)(uid=a))")), set_of(&plan_str("(uid=a)")));
    assert_eq!(set_of(&plan_str("(&(|)(uid=a))")), BTreeSet::new());
    assert!(plan_str("(|(&)(uid=a))").candidates().is_all());
}

#[test]
fn not_is_never_complemented() {
    assert!(plan_str("(!(uid=a))").candidates().is_all());
    assert!(plan_str("(!(noSuchAttr=a))").candidates().is_all());
    assert!(plan_str("(!(|))").candidates().is_all());
    // An `and` still narrows by its other children.
    let p = plan_str("(&(!(cn=ab))(uid=a))");
    assert_eq!(set_of(&p), set_of(&plan_str("(uid=a)")));
    assert_eq!(p.description(), "eq(uid)");
}

#[test]
fn undefined_items_give_the_empty_set() {
    for f in [
        "(noSuchAttr=a)",
        "(noSuchAttr=*)",
        "(noSuchAttr=a*)",
        "(noSuchAttr>=a)",
        "(noSuchAttr~=a)",
        // No ordering rule, so `>=` is Undefined.
        "(uid>=a)",
        "(cn>=ab)",
        "(&(uid=a)(noSuchAttr=b))",
    ] {
        assert_eq!(set_of(&plan_str(f)), BTreeSet::new(), "{f}");
    }
    // An unknown filter choice.
    let unknown = OwnedFilter::from_ber(vec![0x8b, 0x01, b'x']).unwrap();
    assert_eq!(set_of(&plan_of(&unknown)), BTreeSet::new());
    // In an `or`, the empty set adds nothing.
    assert_eq!(
        set_of(&plan_str("(|(noSuchAttr=a)(uid=a))")),
        set_of(&plan_str("(uid=a)"))
    );
}

#[test]
fn a_supertype_unites_its_subtypes() {
    let v = &fixture().version;
    let name = set_of(&plan_str("(name=ab)"));
    let cn = set_of(&plan_str("(cn=ab)"));
    let sn = set_of(&plan_str("(sn=ab)"));
    assert!(
        !cn.is_subset(&sn) && !sn.is_subset(&cn),
        "the fixture should tell them apart"
    );
    assert!(cn.is_subset(&name) && sn.is_subset(&name));
    assert_eq!(name, matching(&parse("(name=ab)"), v));
    assert_eq!(plan_str("(name=ab)").description(), "eq(name)");
    // Options only narrow: same candidates.
    assert_eq!(set_of(&plan_str("(name;lang-fr=ab)")), name);
    assert_eq!(set_of(&plan_str("(cn;lang-fr=ab)")), cn);
    // The presence index of cn alone cannot answer for `name`, whose other subtypes have
    // none.
    assert!(plan_str("(name=*)").candidates().is_all());
}

#[test]
fn a_missing_index_scans() {
    for f in [
        "(description=ab)",
        // mail has a substring index only, dnQualifier an ordering index only.
        "(mail=ab)",
        "(dnQualifier=ab)",
        "(sn=*)",
        "(sn=ab*)",
        "(createTimestamp>=20200101000000Z)",
        "(|(cn=a)(description=b))",
        "(cn~=ab)",
        "(cn:caseExactMatch:=ab)",
        // One gram is needed: an `any` piece of two letters gives none.
        "(cn=*ab*)",
    ] {
        assert!(plan_str(f).candidates().is_all(), "{f}");
    }
    assert_eq!(
        set_of(&plan_str("(&(cn=a)(description=b))")),
        set_of(&plan_str("(cn=a)"))
    );
}

#[test]
fn indexed_kinds_answer_their_items() {
    let v = &fixture().version;
    for f in [
        "(cn=*)",
        "(uid=*)",
        "(cn=ab*)",
        "(cn=a*)",
        "(cn=*abb*)",
        "(cn=*bb)",
        "(mail=ab*)",
        "(mail=a*ba)",
        "(dnQualifier>=ab)",
        "(dnQualifier<=ab)",
    ] {
        let p = plan_str(f);
        assert!(p.is_indexed(), "{f}: scanned");
        let got = set_of(&p);
        let want = matching(&parse(f), v);
        assert!(want.is_subset(&got), "{f}: plan `{p}` lost entries");
        assert!(got.len() < v.len(), "{f}: plan `{p}` does not narrow");
    }
    // Presence and ordering are exact.
    for f in ["(cn=*)", "(uid=*)", "(dnQualifier>=ab)", "(dnQualifier<=ab)"] {
        assert_eq!(set_of(&plan_str(f)), matching(&parse(f), v), "{f}");
    }
    assert!(plan_str("(objectClass=*)").candidates().is_all());
}

#[test]
fn object_classes_match_by_class() {
    let v = &fixture().version;
    let by_name = set_of(&plan_str("(objectClass=person)"));
    assert_eq!(set_of(&plan_str("(objectClass=2.5.6.6)")), by_name);
    assert_eq!(set_of(&plan_str("(objectClass=PERSON)")), by_name);
    assert_eq!(by_name, matching(&parse("(objectClass=person)"), v));
    assert_eq!(by_name.len(), PERSONS);
    // A class the schema does not know is compared as text by the filter check.
    assert!(plan_str("(objectClass=noSuchClass)").candidates().is_all());
}

#[test]
fn and_intersects_smallest_first_and_describes_itself() {
    let v = &fixture().version;
    let f = "(&(cn=*)(objectClass=organizationalPerson)(uid=a))";
    let p = plan_str(f);
    assert_eq!(set_of(&p), matching(&parse(f), v));
    assert_eq!(p.description(), "eq(uid) & eq(objectClass) & pres(cn)");
    let p = plan_str("(|(uid=a)(&(cn=ab)(sn=b)))");
    assert_eq!(p.description(), "eq(uid) | (eq(cn) & eq(sn))");
}

#[test]
fn long_descriptions_are_cut() {
    let items: String = (0..200).map(|i| format!("(uid=a{i})")).collect();
    let p = plan_str(&format!("(|{items})"));
    assert!(p.description().len() <= MAX_DESCRIPTION_LEN);
    assert!(p.description().ends_with("..."));
}

#[test]
fn deep_nesting_is_planned_without_recursion() {
    let depth = 60;
    let f = format!("{}(uid=a){}", "(&(|".repeat(depth / 2), "))".repeat(depth / 2));
    let p = plan_str(&f);
    assert_eq!(set_of(&p), set_of(&plan_str("(uid=a)")));
}

#[test]
fn scans_walk_the_scope() {
    let fx = fixture();
    let v = &*fx.version;
    let scan = plan_str("(&)");
    for &base in &fx.bases {
        for scope in [
            SearchScope::Base,
            SearchScope::OneLevel,
            SearchScope::Subtree,
            SearchScope::Subordinate,
        ] {
            let got: BTreeSet<EntryId> = candidates_in_scope(&scan, v, base, scope).collect();
            assert_eq!(got, scope_of(v, base, scope), "base {base}, scope {scope:?}");
        }
    }
    // Base 0 is not an entry.
    assert_eq!(candidates_in_scope(&scan, v, 0, SearchScope::Base).count(), 0);
    assert_eq!(
        candidates_in_scope(&scan, v, 0, SearchScope::Subtree).count(),
        v.len()
    );
}
