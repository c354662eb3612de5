//! Store read paths on a 100,000-entry directory built in a temporary directory (LDIF made
//! here, imported with `import_ldif`, then opened): the equality lookup of a `uid` with the
//! entry fetched, a DN lookup, and the DN of an entry rebuilt from its parent chain.
//!
//! Run: `cargo bench -p larch-store --bench store`

use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use larch_store::import::{import_ldif, ImportOptions};
use larch_store::storage::FsStorage;
use larch_store::{EntryId, Store, StoreOptions};

/// People in the directory.
const PEOPLE: usize = 100_000;

/// Random keys cycled through by each benchmark (enough to defeat a warm cache line per
/// key, few enough to build quickly).
const KEYS: usize = 4096;

fn ldif() -> Vec<u8> {
    let mut out = Vec::with_capacity(PEOPLE * 300);
    out.extend_from_slice(
        b"dn: dc=example,dc=com\nobjectClass: domain\ndc: example\n\n\
          dn: ou=People,dc=example,dc=com\nobjectClass: organizationalUnit\nou: People\n\n",
    );
    for i in 0..PEOPLE {
        let _ = write!(
            out,
            "dn: uid=user.{i},ou=People,dc=example,dc=com\nobjectClass: inetOrgPerson\n\
             uid: user.{i}\ncn: Person {i}\nsn: Number {i}\nmail: user.{i}@example.com\n\
             description: entry {i} of the store benchmark\n\n"
        );
    }
    out
}

/// Indexes of people in a fixed pseudo-random order.
fn picks() -> Vec<usize> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..KEYS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % PEOPLE as u64) as usize
        })
        .collect()
}

fn store_reads(c: &mut Criterion) {
    let dir: PathBuf = std::env::temp_dir().join(format!("larch-store-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let schema = Arc::new(Schema::builtin().unwrap());
    let options = ImportOptions {
        dir: dir.clone(),
        storage: Arc::new(FsStorage),
        schema: Arc::clone(&schema),
        threads: 0,
        naming_contexts: Vec::new(),
        hook: None,
        allow_file_urls: false,
    };
    import_ldif(&options, &ldif()[..], |_| {}).unwrap();
    let mut open = StoreOptions::new(&dir, Arc::clone(&schema));
    open.snapshot_interval = None;
    let (store, report) = Store::open(open).unwrap();
    assert_eq!(report.entries, PEOPLE + 2);

    let uid = schema.attribute_type("uid").unwrap().id;
    let rule = schema.attribute_type_by_id(uid).unwrap().equality.unwrap();
    let picks = picks();
    let uids: Vec<Vec<u8>> = picks.iter().map(|i| format!("user.{i}").into_bytes()).collect();
    let dns: Vec<NormDn> = picks
        .iter()
        .map(|i| {
            NormDn::parse(
                format!("uid=user.{i},ou=People,dc=example,dc=com").as_bytes(),
                &*schema,
            )
            .unwrap()
            .1
        })
        .collect();
    let version = store.current();
    let ids: Vec<EntryId> = dns.iter().map(|d| version.find(d).unwrap()).collect();

    let mut g = c.benchmark_group(format!("store of {} entries", PEOPLE + 2));
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut reader = store.reader();
    let mut k = 0;
    g.bench_function("lookup uid + fetch", |b| {
        b.iter(|| {
            k = (k + 1) % KEYS;
            let v = reader.current();
            let id = v
                .index(uid)
                .and_then(|ix| ix.equality(rule, &uids[k], v.keyer()))
                .and_then(|set| set.first())
                .unwrap();
            let e = v.entry(id).unwrap();
            black_box(e.attrs().attribute(uid).next().map(|a| a.values_ber.len()))
        })
    });
    let mut k = 0;
    g.bench_function("find by DN", |b| {
        b.iter(|| {
            k = (k + 1) % KEYS;
            black_box(version.find(black_box(&dns[k])))
        })
    });
    let mut k = 0;
    g.bench_function("dn() of an entry", |b| {
        b.iter(|| {
            k = (k + 1) % KEYS;
            black_box(version.dn(black_box(ids[k])))
        })
    });
    g.finish();
    drop(version);
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, store_reads);
criterion_main!(benches);
