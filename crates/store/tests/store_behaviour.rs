//! The store end to end on the real filesystem: readers see whole transactions, a snapshot
//! written under heavy writes loads to exactly its LSN's state, import -> export -> import
//! is stable, lookups by DN and by index, and a damaged snapshot stops startup with a
//! message that names it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_model::entry::{Entry, Options};
use larch_store::import::{export_ldif, import_ldif, ImportOptions};
use larch_store::ldif::LdifWriter;
use larch_store::storage::FsStorage;
use larch_store::{Lookup, Store, StoreError, StoreOptions};

mod common;
use common::{schema, temp_dir};

fn options(dir: &Path) -> StoreOptions {
    let mut o = StoreOptions::new(dir, schema());
    o.snapshot_interval = None;
    o
}

fn person(dn: &str, cn: &str, description: &str) -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
    let mut e = Entry::new(dn, norm);
    let none = Options::none();
    let at = |n: &str| s.attribute_type(n).unwrap().id;
    for oc in ["top", "person"] {
        e.push_value(at("objectClass"), &none, oc.as_bytes().to_vec());
    }
    e.push_value(at("cn"), &none, cn.as_bytes().to_vec());
    e.push_value(at("sn"), &none, b"Tester".to_vec());
    e.push_value(at("description"), &none, description.as_bytes().to_vec());
    e
}

fn suffix() -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(b"dc=example,dc=com", &*s).unwrap();
    let mut e = Entry::new(dn, norm);
    let none = Options::none();
    let at = |n: &str| s.attribute_type(n).unwrap().id;
    e.push_value(at("objectClass"), &none, b"dcObject".to_vec());
    e.push_value(at("objectClass"), &none, b"organization".to_vec());
    e.push_value(at("dc"), &none, b"example".to_vec());
    e.push_value(at("o"), &none, b"Example".to_vec());
    e
}

fn add(store: &Store, e: Entry, naming_context: bool) {
    store
        .write(move |t| t.add(&e.dn, &e.norm_dn, &e.to_stored(), naming_context).map(drop))
        .unwrap()
        .unwrap();
}

fn description(store_version: &larch_store::Version, id: u32) -> String {
    let desc = schema().attribute_type("description").unwrap().id;
    let e = store_version.entry(id).unwrap();
    let a = e.attrs().attribute(desc).next().unwrap();
    String::from_utf8(a.values.iter().next().unwrap().to_vec()).unwrap()
}

#[test]
fn readers_never_see_half_a_transaction() {
    let dir = temp_dir("txn");
    let (store, _) = Store::open(options(&dir)).unwrap();
    add(&store, suffix(), true);
    add(
        &store,
        person("cn=counter,dc=example,dc=com", "counter", "0"),
        false,
    );
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let mut reader = store.reader();
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut checks = 0u64;
                let mut last_seen = 0usize;
                let counter_dn = NormDn::from_normalized("cn=counter,dc=example,dc=com");
                while !done.load(Ordering::Acquire) || checks == 0 {
                    let v = reader.current();
                    let id = v.find(&counter_dn).unwrap();
                    let counter: usize = description(v, id).parse().unwrap();
                    // The counter and the entries it counts change in one transaction.
                    assert_eq!(v.len(), counter + 2, "half a transaction visible");
                    assert!(counter >= last_seen, "a reader went back in time");
                    last_seen = counter;
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..150 {
                    store
                        .write(move |t| -> Result<(), StoreError> {
                            let e = person(&format!("cn=w{w}-{i},dc=example,dc=com"), "x", "y");
                            t.add(&e.dn, &e.norm_dn, &e.to_stored(), false)?;
                            let counter_dn = NormDn::from_normalized("cn=counter,dc=example,dc=com");
                            let id = t.version().find(&counter_dn).unwrap();
                            let n: usize = description(t.version(), id).parse().unwrap();
                            let c = person("cn=counter,dc=example,dc=com", "counter", &(n + 1).to_string());
                            t.modify(id, &c.to_stored())
                        })
                        .unwrap()
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(store.current().len(), 602);
    store.current().check().unwrap();
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_snapshot_taken_under_writes_loads_to_exactly_its_lsn() {
    let dir = temp_dir("snap");
    let (store, _) = Store::open(options(&dir)).unwrap();
    add(&store, suffix(), true);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let store = store.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) || n < 300 {
                n += 1;
                add(
                    &store,
                    person(&format!("cn=e{n},dc=example,dc=com"), "e", &n.to_string()),
                    false,
                );
            }
            n
        })
    };
    while store.current().len() < 100 {
        std::thread::yield_now();
    }
    let info = store.snapshot().unwrap().expect("a snapshot");
    stop.store(true, Ordering::Release);
    let written = writer.join().unwrap();
    assert!(written > info.lsn, "writes went on after the snapshot");
    // Load only the snapshot (no log) in another directory.
    let copy = temp_dir("snap-copy");
    std::fs::create_dir_all(copy.join("snapshots")).unwrap();
    std::fs::copy(
        &info.path,
        copy.join("snapshots").join(info.path.file_name().unwrap()),
    )
    .unwrap();
    let (loaded, report) = Store::open(options(&copy)).unwrap();
    let v = loaded.current();
    assert_eq!(report.snapshot.as_ref().map(|s| s.1), Some(info.lsn));
    assert_eq!(v.lsn(), info.lsn);
    // LSN 1 added the suffix, LSN k + 1 added cn=e{k}.
    assert_eq!(v.len() as u64, info.lsn);
    for k in 1..info.lsn {
        let dn = NormDn::from_normalized(&format!("cn=e{k},dc=example,dc=com"));
        assert!(v.find(&dn).is_some(), "cn=e{k} missing");
    }
    let beyond = NormDn::from_normalized(&format!("cn=e{},dc=example,dc=com", info.lsn));
    assert!(v.find(&beyond).is_none(), "an entry after the snapshot's LSN");
    v.check().unwrap();
    loaded.close(false).unwrap();
    // The original directory: snapshot plus log replay gives everything.
    store.close(false).unwrap();
    let (again, report) = Store::open(options(&dir)).unwrap();
    assert_eq!(again.current().len() as u64, written + 1);
    assert!(report.replayed > 0);
    again.close(false).unwrap();
    for d in [dir, copy] {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn sample_ldif(n: usize) -> String {
    let mut out = String::from("version: 1\n\ndn: dc=example,dc=com\nobjectClass: top\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n");
    out.push_str("dn: ou=People,dc=example,dc=com\nobjectClass: organizationalUnit\nou: People\n\n");
    for i in 0..n {
        out.push_str(&format!(
            "dn: uid=user.{i},ou=People,dc=example,dc=com\nobjectClass: inetOrgPerson\nuid: user.{i}\ncn: User {i}\nsn: Surname{}\nmail: user.{i}@example.com\ndescription:: {}\n\n",
            i % 37,
            // A base64 value with a leading space, to exercise the encoding both ways.
            base64_of(&format!(" note {i}"))
        ));
    }
    out
}

fn base64_of(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn import(dir: &Path, ldif: &[u8]) -> larch_store::import::ImportReport {
    let options = ImportOptions {
        dir: dir.to_path_buf(),
        storage: Arc::new(FsStorage),
        schema: schema(),
        threads: 2,
        naming_contexts: Vec::new(),
        hook: None,
        allow_file_urls: false,
    };
    import_ldif(&options, ldif, |_| {}).unwrap()
}

fn export(dir: &Path) -> Vec<u8> {
    let (store, _) = Store::open(options(dir)).unwrap();
    let mut w = LdifWriter::new(Vec::new());
    export_ldif(&store.current(), None, &mut w).unwrap();
    store.close(false).unwrap();
    w.into_inner()
}

#[test]
fn import_export_import_is_stable_and_indexes_answer() {
    // Large enough for several import batches.
    let ldif = sample_ldif(20_000);
    let a = temp_dir("import-a");
    let report = import(&a, ldif.as_bytes());
    assert_eq!(report.entries, 20_002);
    let first = export(&a);
    let b = temp_dir("import-b");
    import(&b, &first);
    let second = export(&b);
    assert_eq!(first, second);

    let (store, _) = Store::open(options(&a)).unwrap();
    let v = store.current();
    v.check().unwrap();
    let s = schema();
    let uid = s.attribute_type("uid").unwrap();
    let hit = v
        .index(uid.id)
        .unwrap()
        .equality(uid.equality.unwrap(), b"USER.12345", v.keyer())
        .unwrap();
    assert_eq!(hit.len(), 1);
    let id = hit.first().unwrap();
    assert_eq!(v.dn(id), "uid=user.12345,ou=People,dc=example,dc=com");
    let sn = s.attribute_type("sn").unwrap();
    let many = v
        .index(sn.id)
        .unwrap()
        .equality(sn.equality.unwrap(), b"surname3", v.keyer())
        .unwrap();
    assert_eq!(many.len(), (0..20_000).filter(|i| i % 37 == 3).count());
    let oc = s.attribute_type("objectClass").unwrap();
    assert_eq!(v.index(oc.id).unwrap().presence().unwrap().len(), 20_002);
    let people = v
        .find(&NormDn::from_normalized("ou=people,dc=example,dc=com"))
        .unwrap();
    assert_eq!(v.child_count(people), 20_000);
    assert_eq!(v.subtree(people).count(), 20_001);
    match v.lookup(&NormDn::from_normalized("uid=nobody,ou=people,dc=example,dc=com")) {
        Lookup::Missing { matched } => assert_eq!(matched, Some(people)),
        other => panic!("{other:?}"),
    }
    store.close(false).unwrap();
    for d in [a, b] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn import_refuses_with_line_numbers() {
    let dir = temp_dir("import-bad");
    let ldif =
        "dn: dc=example,dc=com\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: x\n\n\
                dn: cn=orphan,ou=missing,dc=example,dc=com\nobjectClass: person\ncn: orphan\nsn: o\n\n";
    let options = ImportOptions {
        dir: dir.clone(),
        storage: Arc::new(FsStorage),
        schema: schema(),
        threads: 1,
        naming_contexts: vec![NormDn::from_normalized("dc=example,dc=com")],
        hook: None,
        allow_file_urls: false,
    };
    let err = import_ldif(&options, ldif.as_bytes(), |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("line 7:"), "{err}");
    let dir2 = temp_dir("import-bad2");
    let ldif =
        "dn: dc=example,dc=com\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: x\n\n\
                dn: cn=nosn,dc=example,dc=com\nobjectClass: person\ncn: nosn\n\n";
    let options = ImportOptions {
        dir: dir2.clone(),
        ..options
    };
    let err = import_ldif(&options, ldif.as_bytes(), |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("line 7:") && err.contains("sn"), "{err}");
    // A directory that already holds data is refused.
    let dir3 = temp_dir("import-twice");
    let options = ImportOptions {
        dir: dir3.clone(),
        ..options
    };
    import_ldif(&options, sample_ldif(3).as_bytes(), |_| {}).unwrap();
    let err = import_ldif(&options, sample_ldif(3).as_bytes(), |_| {}).unwrap_err();
    assert!(
        matches!(err, larch_store::import::ImportError::NotEmpty(_)),
        "{err}"
    );
    for d in [dir, dir2, dir3] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_damaged_snapshot_stops_startup_and_names_the_fallback() {
    let dir = temp_dir("corrupt");
    let (store, _) = Store::open(options(&dir)).unwrap();
    add(&store, suffix(), true);
    store.snapshot().unwrap().unwrap();
    add(&store, person("cn=a,dc=example,dc=com", "a", "1"), false);
    let newest = store.snapshot().unwrap().unwrap();
    store.close(false).unwrap();
    // Damage the newest snapshot in its middle.
    let mut bytes = std::fs::read(&newest.path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&newest.path, &bytes).unwrap();
    let err = Store::open(options(&dir)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::CorruptSnapshot { .. }), "{msg}");
    assert!(
        msg.starts_with(&format!("snapshot damaged: {}: ", newest.path.display())),
        "{msg}"
    );
    assert!(
        msg.contains("startup stopped so that no data is silently lost"),
        "{msg}"
    );
    assert!(
        msg.contains("previous snapshot") && msg.contains("is intact"),
        "{msg}"
    );
    // Following the advice: move the damaged file away; the log brings the rest back.
    std::fs::rename(&newest.path, dir.join("damaged.snap")).unwrap();
    let (store, report) = Store::open(options(&dir)).unwrap();
    assert!(report.replayed >= 1);
    assert_eq!(store.current().len(), 2);
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rolled_back_job_leaves_no_trace_in_the_directory_nor_the_log() {
    let dir = temp_dir("savepoint");
    {
        let (store, _) = Store::open(options(&dir)).unwrap();
        add(&store, suffix(), true);
        let a = person("cn=a,dc=example,dc=com", "a", "kept");
        add(&store, a, false);
        // One job: a change that stays, a savepoint, two changes, a refused third, and
        // a rollback to the savepoint. Then a change after the rollback, in the same job.
        let (b, c, d) = (
            person("cn=b,dc=example,dc=com", "b", "rolled back"),
            person("cn=c,dc=example,dc=com", "c", "rolled back"),
            person("cn=d,dc=example,dc=com", "d", "after"),
        );
        let kept = person("cn=a,dc=example,dc=com", "a", "changed before the savepoint");
        store
            .write(move |t| {
                let a_id = t.version().find(&kept.norm_dn).unwrap();
                t.modify(a_id, &kept.to_stored())?;
                let sp = t.savepoint();
                t.add(&b.dn, &b.norm_dn, &b.to_stored(), false)?;
                let c_id = t.add(&c.dn, &c.norm_dn, &c.to_stored(), false)?;
                t.modify(c_id, &c.to_stored())?;
                // Adding b again is refused: undo b and c.
                assert!(t.add(&b.dn, &b.norm_dn, &b.to_stored(), false).is_err());
                t.rollback_to(sp);
                assert!(t.version().find(&b.norm_dn).is_none());
                t.add(&d.dn, &d.norm_dn, &d.to_stored(), false).map(drop)
            })
            .unwrap()
            .unwrap();
        let v = store.current();
        let s = schema();
        let find = |dn: &str| v.find(&NormDn::parse(dn.as_bytes(), &*s).unwrap().1);
        assert!(find("cn=b,dc=example,dc=com").is_none());
        assert!(find("cn=c,dc=example,dc=com").is_none());
        assert_eq!(description(&v, find("cn=d,dc=example,dc=com").unwrap()), "after");
        assert_eq!(
            description(&v, find("cn=a,dc=example,dc=com").unwrap()),
            "changed before the savepoint"
        );
        v.check().unwrap();
        store.close(false).unwrap();
    }
    // Replaying the log gives the same directory: the rolled-back changes were never logged.
    let (store, report) = Store::open(options(&dir)).unwrap();
    let v = store.current();
    let s = schema();
    let find = |dn: &str| v.find(&NormDn::parse(dn.as_bytes(), &*s).unwrap().1);
    assert_eq!(report.replayed, 4, "suffix, a, the modify of a, d");
    assert!(find("cn=b,dc=example,dc=com").is_none() && find("cn=c,dc=example,dc=com").is_none());
    assert!(find("cn=d,dc=example,dc=com").is_some());
    store.close(false).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_modify_keys_only_the_values_that_changed_and_keeps_shared_keys() {
    let dir = temp_dir("rekey");
    let (store, _) = Store::open(options(&dir)).unwrap();
    add(&store, suffix(), true);
    add(&store, person("cn=a,dc=example,dc=com", "a", "x"), false);
    let s = schema();
    let cn = s.attribute_type("cn").unwrap();
    let id = store
        .current()
        .find(&NormDn::from_normalized("cn=a,dc=example,dc=com"))
        .unwrap();
    let set_cn = |values: &[&str]| {
        let values: Vec<Vec<u8>> = values.iter().map(|v| v.as_bytes().to_vec()).collect();
        store
            .write(move |t| {
                let v = t.version();
                let (dn, norm) = NormDn::parse(v.dn(id).as_bytes(), &*schema()).unwrap();
                let mut e = Entry::from_stored(dn, norm, v.entry(id).unwrap().attrs());
                e.set_values(
                    schema().attribute_type("cn").unwrap().id,
                    &Options::none(),
                    values,
                );
                t.modify(id, &e.to_stored())
            })
            .unwrap()
            .unwrap();
        let v = store.current();
        v.check().unwrap();
        v
    };
    let finds = |v: &larch_store::Version, value: &str| {
        v.index(cn.id)
            .unwrap()
            .equality(cn.equality.unwrap(), value.as_bytes(), v.keyer())
            .unwrap()
            .contains(id)
    };
    // Additions only, one a respelling of a value the entry has.
    let v = set_cn(&["a", "B", "b"]);
    assert!(finds(&v, "A") && finds(&v, "b"));
    // One spelling goes, the other keeps the key.
    let v = set_cn(&["a", "b"]);
    assert!(finds(&v, "B"));
    // A value goes and another comes in one modify.
    let v = set_cn(&["a", "c"]);
    assert!(!finds(&v, "b") && finds(&v, "c"));
    // Respelled in place: the key stays.
    let v = set_cn(&["A", "c"]);
    assert!(finds(&v, "a"));
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(dir);
}
