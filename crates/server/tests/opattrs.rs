//! Operational attributes: the GeneralizedTime, CSN and UUID formats against known values
//! and hand-written checks, CSN order under a clock that steps backwards, exactly which
//! attributes add and modify set (and that the entry still passes the schema check), the
//! import path keeping LDIF values, and computed attributes on a real store.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use larch_model::dn::NormDn;
use larch_model::entry::check::check_entry;
use larch_model::entry::{Entry, Options};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_server::opattrs::csn::{Csn, CsnGenerator, MAX_COUNT};
use larch_server::opattrs::time::{civil_from_days, generalized_time, UtcTime};
use larch_server::opattrs::uuid::Uuid;
use larch_server::opattrs::{
    computed, import_hook, is_computed, on_add, on_modify, on_rename, OpAttrsError, OpStamp,
    OperationalTypes, COMPUTED_NAMES, MAINTAINED_NAMES, SUBSCHEMA_SUBENTRY_DN,
};
use larch_store::import::{import_ldif, ImportOptions};
use larch_store::storage::FsStorage;
use larch_store::{Store, StoreOptions};
use proptest::prelude::*;

mod common;
use common::fresh_data_dir;

fn schema() -> Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    Arc::clone(S.get_or_init(|| Arc::new(Schema::builtin().unwrap())))
}

fn at(name: &str) -> AttributeTypeId {
    schema().attribute_type(name).unwrap().id
}

fn unix(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn entry(dn: &str, attrs: &[(&str, &str)]) -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
    let mut e = Entry::new(dn, norm);
    for (name, value) in attrs {
        e.push_value(at(name), &Options::none(), value.as_bytes().to_vec());
    }
    e
}

fn person(dn: &str, cn: &str) -> Entry {
    entry(
        dn,
        &[
            ("objectClass", "top"),
            ("objectClass", "person"),
            ("cn", cn),
            ("sn", "Tester"),
        ],
    )
}

fn values(e: &Entry, name: &str) -> Vec<String> {
    e.attributes_of(at(name))
        .flat_map(|a| a.values.iter())
        .map(|v| String::from_utf8(v.clone()).unwrap())
        .collect()
}

fn one(e: &Entry, name: &str) -> String {
    let v = values(e, name);
    assert_eq!(v.len(), 1, "{name}: {v:?}");
    v.into_iter().next().unwrap()
}

fn type_set(e: &Entry) -> BTreeSet<AttributeTypeId> {
    e.attrs.iter().map(|a| a.ty).collect()
}

fn names(list: &[&str]) -> BTreeSet<AttributeTypeId> {
    list.iter().map(|n| at(n)).collect()
}

/// A hand-written check of `YYYYmmddHHMMSS.ffffffZ#cccccc#sss#mmmmmm`, returning the fields.
fn parse_csn(s: &str) -> Option<(&str, u32, u16)> {
    let parts: Vec<&str> = s.split('#').collect();
    let [time, count, sid, modifier] = parts.as_slice() else {
        return None;
    };
    let tb = time.as_bytes();
    let time_ok = tb.len() == 22
        && tb[..14].iter().all(u8::is_ascii_digit)
        && tb[14] == b'.'
        && tb[15..21].iter().all(u8::is_ascii_digit)
        && tb[21] == b'Z';
    let lower_hex = |f: &str, n: usize| {
        f.len() == n
            && f.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !time_ok || !lower_hex(count, 6) || !lower_hex(sid, 3) || *modifier != "000000" {
        return None;
    }
    Some((
        time,
        u32::from_str_radix(count, 16).ok()?,
        u16::from_str_radix(sid, 16).ok()?,
    ))
}

/// The date of a day count, by walking whole years then months (the model of
/// `civil_from_days`).
fn naive_civil(mut days: u64) -> (u32, u32, u32) {
    let leap = |y: u32| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut year = 1970;
    loop {
        let len = if leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let months = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 1;
    for len in months {
        if days < len {
            break;
        }
        days -= len;
        month += 1;
    }
    (year, month, days as u32 + 1)
}

#[test]
fn generalized_time_of_known_dates() {
    assert_eq!(generalized_time(UNIX_EPOCH), "19700101000000Z");
    assert_eq!(generalized_time(unix(951_782_400)), "20000229000000Z");
    assert_eq!(generalized_time(unix(951_868_799)), "20000229235959Z");
    assert_eq!(generalized_time(unix(951_868_800)), "20000301000000Z");
    assert_eq!(generalized_time(unix(2_147_483_648)), "20380119031408Z");
    assert_eq!(generalized_time(unix(1_795_305_600)), "20261122000000Z");
    assert_eq!(
        generalized_time(unix(1_795_305_600 + 13 * 3600 + 5 * 60 + 9)),
        "20261122130509Z"
    );
    // Sub-second parts are cut, not rounded.
    assert_eq!(
        generalized_time(unix(1_795_305_600) + Duration::from_micros(999_999)),
        "20261122000000Z"
    );
    // Before the epoch and past year 9999: clamped, never a malformed value.
    assert_eq!(
        generalized_time(UNIX_EPOCH - Duration::from_secs(5)),
        "19700101000000Z"
    );
    assert_eq!(generalized_time(unix(400_000_000_000)), "99991231235959Z");
    assert_eq!(
        UtcTime::from_system_time(unix(2_147_483_648) + Duration::from_micros(42)).csn_time(),
        "20380119031408.000042Z"
    );
}

proptest! {
    #[test]
    fn civil_from_days_matches_a_year_by_year_walk(days in 0u64..2_932_896) {
        prop_assert_eq!(civil_from_days(days), naive_civil(days));
    }

    #[test]
    fn generalized_times_are_valid_and_ordered(a in 0u64..253_402_300_799, b in 0u64..253_402_300_799) {
        let syntax = larch_model::syntax::lookup("1.3.6.1.4.1.1466.115.121.1.24").unwrap();
        let (ga, gb) = (generalized_time(unix(a)), generalized_time(unix(b)));
        prop_assert!(syntax.validate(ga.as_bytes()), "{}", ga);
        prop_assert_eq!(ga.len(), 15);
        prop_assert_eq!(a.cmp(&b), ga.cmp(&gb));
    }

    #[test]
    fn uuid_bits_and_text_form(bytes in any::<[u8; 16]>()) {
        let u = Uuid::v4_from_bytes(bytes);
        prop_assert_eq!(u.version(), 4);
        prop_assert_eq!(u.0[8] & 0xc0, 0x80);
        // Only the version and variant bits change.
        for (i, (&got, &given)) in u.0.iter().zip(bytes.iter()).enumerate() {
            let mask = match i { 6 => 0x0f, 8 => 0x3f, _ => 0xff };
            prop_assert_eq!(got & mask, given & mask);
        }
        let text = u.to_string();
        let hex: String = text.chars().filter(|&c| c != '-').collect();
        let expected: String = u.0.iter().map(|b| format!("{b:02x}")).collect();
        prop_assert_eq!(hex, expected);
        let dashes: Vec<usize> = text.char_indices().filter(|&(_, c)| c == '-').map(|(i, _)| i).collect();
        prop_assert_eq!(dashes, vec![8, 13, 18, 23]);
        prop_assert_eq!(text.as_bytes()[14], b'4');
        prop_assert!(matches!(text.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
        let syntax = larch_model::syntax::lookup("1.3.6.1.1.16.1").unwrap();
        prop_assert!(syntax.validate(text.as_bytes()));
    }
}

#[test]
fn random_uuids_are_version_4_lowercase_and_distinct() {
    let syntax = larch_model::syntax::lookup("1.3.6.1.1.16.1").unwrap();
    let mut seen = BTreeSet::new();
    for _ in 0..1000 {
        let u = Uuid::new_v4().unwrap();
        assert_eq!(u.version(), 4);
        let text = u.to_string();
        assert_eq!(text.len(), 36);
        assert!(!text.bytes().any(|b| b.is_ascii_uppercase()), "{text}");
        assert!(syntax.validate(text.as_bytes()), "{text}");
        assert!(seen.insert(text));
    }
}

#[test]
fn csn_format_and_server_id() {
    let t = unix(1_795_305_600) + Duration::from_micros(123_456);
    assert_eq!(
        Csn::from_parts(1_795_305_600_123_456, 0x1a, 0xabc).as_str(),
        "20261122000000.123456Z#00001a#abc#000000"
    );
    let g = CsnGenerator::new(0x2f).unwrap();
    assert_eq!(g.next(t).as_str(), "20261122000000.123456Z#000000#02f#000000");
    assert_eq!(g.next(t).as_str(), "20261122000000.123456Z#000001#02f#000000");
    // Time moves: the count resets.
    let later = t + Duration::from_micros(1);
    assert_eq!(g.next(later).as_str(), "20261122000000.123457Z#000000#02f#000000");
    assert_eq!(
        CsnGenerator::default().next(UNIX_EPOCH).as_str(),
        "19700101000000.000000Z#000000#000#000000"
    );
    assert!(CsnGenerator::new(4095).is_ok());
    assert_eq!(CsnGenerator::new(4096).unwrap_err().0, 4096);
    assert!(CsnGenerator::new(70_000).is_err());
    // The entryCSN syntax of the shipped schema accepts the form.
    let csn_syntax = schema().attribute_type("entryCSN").unwrap().syntax;
    assert!(csn_syntax.validate(g.next(later).as_str().as_bytes()));
}

#[test]
fn csns_strictly_increase_even_when_the_clock_steps_back() {
    let g = CsnGenerator::new(7).unwrap();
    let base = 1_795_305_600_000_000u64;
    // A clock that mostly advances by 0-2 microseconds, stays put, and now and then jumps
    // back by up to a second (a deterministic pseudo-random walk).
    let mut clock = base;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut prev: Option<String> = None;
    let mut max_time = 0u64;
    let mut back_steps = 0;
    for _ in 0..100_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        match state % 100 {
            0..=2 => {
                clock -= state % 1_000_000;
                back_steps += 1;
            }
            3..=40 => {}
            _ => clock += state % 3,
        }
        let csn = g.next(UNIX_EPOCH + Duration::from_micros(clock));
        let s = csn.as_str().to_owned();
        let (time, count, sid) = parse_csn(&s).unwrap_or_else(|| panic!("bad CSN {s}"));
        assert_eq!(sid, 7);
        assert!(count <= MAX_COUNT);
        // The time written is the latest clock reading seen so far.
        max_time = max_time.max(clock);
        assert_eq!(time, UtcTime::from_unix_micros(max_time).csn_time());
        if let Some(p) = &prev {
            assert!(p.as_str() < s.as_str(), "{p} then {s}");
            let (ptime, pcount, _) = parse_csn(p).unwrap();
            if ptime == time {
                assert_eq!(count, pcount + 1, "{p} then {s}");
            } else {
                assert_eq!(count, 0, "{p} then {s}");
            }
        }
        prev = Some(s);
    }
    assert!(back_steps > 1000);
}

#[test]
fn csns_from_many_threads_are_distinct() {
    let g = Arc::new(CsnGenerator::default());
    let t = SystemTime::now();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || {
                let mut out = Vec::with_capacity(5000);
                for _ in 0..5000 {
                    let c = g.next(t);
                    // Each thread sees its own CSNs increase.
                    if let Some(last) = out.last() {
                        assert!(&c > last);
                    }
                    out.push(c);
                }
                out
            })
        })
        .collect();
    let all: BTreeSet<Csn> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(all.len(), 20_000);
}

fn stamp_at(secs: u64) -> OpStamp {
    OpStamp::at(unix(secs), &CsnGenerator::new(1).unwrap())
}

#[test]
fn on_add_sets_exactly_the_maintained_attributes() {
    let s = schema();
    let mut e = person("cn=alice,dc=example,dc=com", "alice");
    // Client-supplied values (the handler refuses these; on_add must not trust them),
    // one of them with an option.
    e.push_value(
        at("createTimestamp"),
        &Options::none(),
        b"19990101000000Z".to_vec(),
    );
    let mut lang = Options::none();
    if let Some((_, opts)) = larch_model::entry::split_description(b"entryCSN;x-foo") {
        lang = opts;
    }
    e.push_value(at("entryCSN"), &lang, b"junk".to_vec());
    let before: BTreeSet<_> = person("cn=alice,dc=example,dc=com", "alice")
        .attrs
        .iter()
        .map(|a| a.ty)
        .collect();
    let checked = check_entry(&e, &s).unwrap();
    let stamp = stamp_at(1_795_305_600);
    on_add(&mut e, &checked, "cn=admin,dc=example,dc=com", &stamp, &s, false).unwrap();

    let added: BTreeSet<_> = type_set(&e).difference(&before).copied().collect();
    assert_eq!(added, names(&MAINTAINED_NAMES));
    assert_eq!(one(&e, "createTimestamp"), "20261122000000Z");
    assert_eq!(one(&e, "modifyTimestamp"), "20261122000000Z");
    assert_eq!(one(&e, "creatorsName"), "cn=admin,dc=example,dc=com");
    assert_eq!(one(&e, "modifiersName"), "cn=admin,dc=example,dc=com");
    assert_eq!(one(&e, "entryCSN"), "20261122000000.000000Z#000000#001#000000");
    assert_eq!(one(&e, "structuralObjectClass"), "person");
    let uuid = one(&e, "entryUUID");
    assert_eq!(uuid.as_bytes()[14], b'4');
    // One attribute per maintained type, without options.
    for name in MAINTAINED_NAMES {
        let attrs: Vec<_> = e.attributes_of(at(name)).collect();
        assert_eq!(attrs.len(), 1, "{name}");
        assert_eq!(attrs[0].options, Options::none(), "{name}");
    }
    // The user attributes are untouched and the entry still passes the schema check.
    assert_eq!(values(&e, "cn"), ["alice"]);
    assert_eq!(check_entry(&e, &s).unwrap(), checked);

    // A deeper structural chain names the most specific class.
    let mut p = entry(
        "uid=bob,dc=example,dc=com",
        &[
            ("objectClass", "inetOrgPerson"),
            ("objectClass", "top"),
            ("uid", "bob"),
            ("cn", "Bob"),
            ("sn", "B"),
        ],
    );
    let checked = check_entry(&p, &s).unwrap();
    on_add(&mut p, &checked, "", &stamp, &s, false).unwrap();
    assert_eq!(one(&p, "structuralObjectClass"), "inetOrgPerson");
    assert_eq!(one(&p, "creatorsName"), "");
    check_entry(&p, &s).unwrap();
    assert_ne!(one(&p, "entryUUID"), uuid);
}

#[test]
fn on_modify_and_on_rename_set_exactly_three_attributes() {
    let s = schema();
    for rename in [false, true] {
        let mut e = person("cn=alice,dc=example,dc=com", "alice");
        let checked = check_entry(&e, &s).unwrap();
        let g = CsnGenerator::new(3).unwrap();
        on_add(
            &mut e,
            &checked,
            "cn=admin",
            &OpStamp::at(unix(951_782_400), &g),
            &s,
            false,
        )
        .unwrap();
        let after_add = e.clone();
        let stamp = OpStamp::at(unix(2_147_483_648), &g);
        if rename {
            on_rename(&mut e, "cn=bob,dc=example,dc=com", &stamp, &s).unwrap();
        } else {
            on_modify(&mut e, "cn=bob,dc=example,dc=com", &stamp, &s).unwrap();
        }
        assert_eq!(type_set(&e), type_set(&after_add));
        let changed: BTreeSet<_> = e
            .attrs
            .iter()
            .filter(|a| after_add.attribute(a.ty, &a.options) != Some(*a))
            .map(|a| a.ty)
            .collect();
        assert_eq!(changed, names(&["modifyTimestamp", "modifiersName", "entryCSN"]));
        assert_eq!(one(&e, "modifyTimestamp"), "20380119031408Z");
        assert_eq!(one(&e, "createTimestamp"), "20000229000000Z");
        assert_eq!(one(&e, "modifiersName"), "cn=bob,dc=example,dc=com");
        assert_eq!(one(&e, "creatorsName"), "cn=admin");
        assert_eq!(one(&e, "entryCSN"), "20380119031408.000000Z#000000#003#000000");
        assert!(one(&e, "entryCSN") > one(&after_add, "entryCSN"));
        check_entry(&e, &s).unwrap();
    }
}

#[test]
fn preserve_existing_keeps_ldif_values_and_fills_the_rest() {
    let s = schema();
    let mut e = person("cn=alice,dc=example,dc=com", "alice");
    let kept = [
        ("createTimestamp", "20010203040506Z"),
        ("entryUUID", "597ae2f6-16a6-1027-98f4-d28b5365dc14"),
        ("entryCSN", "20010203040506.000000Z#000000#000#000000"),
        ("creatorsName", "cn=old,dc=example,dc=com"),
        ("structuralObjectClass", "PERSON"),
    ];
    for (n, v) in kept {
        e.push_value(at(n), &Options::none(), v.as_bytes().to_vec());
    }
    let checked = check_entry(&e, &s).unwrap();
    let stamp = stamp_at(1_795_305_600);
    on_add(&mut e, &checked, "cn=import", &stamp, &s, true).unwrap();
    for (n, v) in kept {
        assert_eq!(one(&e, n), v, "{n}");
    }
    assert_eq!(one(&e, "modifyTimestamp"), "20261122000000Z");
    assert_eq!(one(&e, "modifiersName"), "cn=import");
    check_entry(&e, &s).unwrap();

    // Without preserve_existing the same values are replaced.
    let mut replaced = e.clone();
    on_add(&mut replaced, &checked, "cn=import", &stamp, &s, false).unwrap();
    for (n, v) in kept {
        assert_ne!(one(&replaced, n), v, "{n}");
    }

    // A structuralObjectClass that contradicts the object classes is refused.
    let mut bad = person("cn=carol,dc=example,dc=com", "carol");
    bad.push_value(
        at("structuralObjectClass"),
        &Options::none(),
        b"organization".to_vec(),
    );
    let checked = check_entry(&bad, &s).unwrap();
    let err = on_add(&mut bad, &checked, "cn=import", &stamp, &s, true).unwrap_err();
    assert!(matches!(err, OpAttrsError::StructuralMismatch { .. }), "{err}");
}

#[test]
fn import_hook_adds_and_keeps_operational_attributes() {
    let dir = fresh_data_dir("import");
    let ldif = "dn: dc=example,dc=com\nobjectClass: dcObject\nobjectClass: organization\ndc: example\n\
                o: Example\nentryUUID: 597ae2f6-16a6-1027-98f4-d28b5365dc14\n\n\
                dn: cn=a,dc=example,dc=com\nobjectClass: person\ncn: a\nsn: A\n\n\
                dn: cn=b,dc=example,dc=com\nobjectClass: person\ncn: b\nsn: B\n\
                createTimestamp: 20010203040506Z\n\n";
    let hook = import_hook(
        Arc::new(CsnGenerator::new(5).unwrap()),
        "cn=admin,dc=example,dc=com".into(),
        schema(),
    );
    let options = ImportOptions {
        dir: dir.clone(),
        storage: Arc::new(FsStorage),
        schema: schema(),
        threads: 2,
        naming_contexts: Vec::new(),
        hook: Some(&hook),
        allow_file_urls: false,
    };
    import_ldif(&options, ldif.as_bytes(), |_| {}).unwrap();
    let (store, _) = Store::open(StoreOptions::new(&dir, schema())).unwrap();
    let v = store.current();
    let get = |dn: &str, name: &str| -> Vec<String> {
        let id = v.find(&NormDn::from_normalized(dn)).unwrap();
        let e = v.entry(id).unwrap();
        let a = e.attrs();
        a.attribute(at(name))
            .flat_map(|a| {
                a.values
                    .iter()
                    .map(|x| String::from_utf8(x.to_vec()).unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    assert_eq!(
        get("dc=example,dc=com", "entryUUID"),
        ["597ae2f6-16a6-1027-98f4-d28b5365dc14"]
    );
    assert_eq!(
        get("dc=example,dc=com", "structuralObjectClass"),
        ["organization"]
    );
    assert_eq!(
        get("cn=b,dc=example,dc=com", "createTimestamp"),
        ["20010203040506Z"]
    );
    assert_eq!(
        get("cn=a,dc=example,dc=com", "creatorsName"),
        ["cn=admin,dc=example,dc=com"]
    );
    let csns: BTreeSet<Vec<String>> = [
        "dc=example,dc=com",
        "cn=a,dc=example,dc=com",
        "cn=b,dc=example,dc=com",
    ]
    .iter()
    .map(|dn| {
        let c = get(dn, "entryCSN");
        assert_eq!(c.len(), 1);
        assert_eq!(parse_csn(&c[0]).unwrap().2, 5);
        c
    })
    .collect();
    assert_eq!(csns.len(), 3, "each entry has its own CSN");
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn computed_attributes_on_a_store() {
    let s = schema();
    let dir = fresh_data_dir("computed");
    let mut o = StoreOptions::new(&dir, schema());
    o.snapshot_interval = None;
    let (store, _) = Store::open(o).unwrap();
    let suffix = entry(
        "dc=Example,dc=com",
        &[
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "Example"),
            ("o", "E"),
        ],
    );
    let mut all = vec![(suffix, true)];
    for i in 0..3 {
        all.push((
            person(&format!("cn=P{i},dc=Example,dc=com"), &format!("P{i}")),
            false,
        ));
    }
    all.push((person("cn=leaf,cn=P0,dc=Example,dc=com", "leaf"), false));
    for (e, nc) in all {
        store
            .write(move |t| t.add(&e.dn, &e.norm_dn, &e.to_stored(), nc).map(drop))
            .unwrap()
            .unwrap();
    }
    let v = store.current();
    let id = |dn: &str| v.find(&NormDn::parse(dn.as_bytes(), &*s).unwrap().1).unwrap();
    let text = |vals: Option<Vec<Vec<u8>>>| -> Vec<String> {
        vals.unwrap()
            .into_iter()
            .map(|x| String::from_utf8(x).unwrap())
            .collect()
    };
    let types = OperationalTypes::new(&s).unwrap();
    let root = id("dc=example,dc=com");
    let p0 = id("cn=p0,dc=example,dc=com");
    let p1 = id("cn=p1,dc=example,dc=com");
    let leaf = id("cn=leaf,cn=p0,dc=example,dc=com");
    let dn_syntax = s.attribute_type("entryDN").unwrap().syntax;
    for (entry_id, dn, has, num) in [
        (root, "dc=Example,dc=com", "TRUE", "3"),
        (p0, "cn=P0,dc=Example,dc=com", "TRUE", "1"),
        (p1, "cn=P1,dc=Example,dc=com", "FALSE", "0"),
        (leaf, "cn=leaf,cn=P0,dc=Example,dc=com", "FALSE", "0"),
    ] {
        assert_eq!(text(computed(&v, entry_id, at("entryDN"))), [dn]);
        assert_eq!(text(computed(&v, entry_id, at("hasSubordinates"))), [has]);
        assert_eq!(text(computed(&v, entry_id, at("numSubordinates"))), [num]);
        assert_eq!(
            text(computed(&v, entry_id, at("subschemaSubentry"))),
            [SUBSCHEMA_SUBENTRY_DN]
        );
        assert!(dn_syntax.validate(dn.as_bytes()));
        // Every computed value is valid under its type's syntax.
        for name in COMPUTED_NAMES {
            let syntax = s.attribute_type(name).unwrap().syntax;
            for value in types.computed(&v, entry_id, at(name)).unwrap() {
                assert!(syntax.validate(&value), "{name}");
            }
        }
        assert_eq!(computed(&v, entry_id, at("cn")), None);
        assert_eq!(computed(&v, entry_id, at("createTimestamp")), None);
    }
    assert_eq!(computed(&v, 9999, at("entryDN")), None);
    for name in COMPUTED_NAMES {
        assert!(is_computed(&s, at(name)) && types.is_computed(at(name)), "{name}");
    }
    for name in MAINTAINED_NAMES.iter().chain(&["cn", "objectClass"]) {
        assert!(!is_computed(&s, at(name)), "{name}");
    }
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
