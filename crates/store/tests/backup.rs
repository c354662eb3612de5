//! Online backup and restore on the real filesystem: a backup taken while a writer commits
//! (and while the store's own snapshots remove covered log segments) restores to exactly
//! the state of its end LSN, as recorded by a model of what each LSN committed; every kind
//! of damage to a backup is refused with the file named, before the data directory gets
//! anything; targets that are relative or not empty are refused.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use larch_model::dn::NormDn;
use larch_model::entry::{Entry, Options};
use larch_store::backup::{restore, BackupError, BackupOptions, Manifest, MANIFEST_NAME};
use larch_store::storage::{AppendFile, DirState, FsStorage, Storage};
use larch_store::{Store, StoreError, StoreOptions, Version};

mod common;
use common::{schema, temp_dir};

/// Small segments (many files to copy) and no schedule: the test writes snapshots itself.
fn options(dir: &Path) -> StoreOptions {
    let mut o = StoreOptions::new(dir, schema());
    o.snapshot_interval = None;
    o.snapshot_after_records = None;
    o.segment_size_limit = 4096;
    o
}

fn entry(dn: &str, description: &str, naming_context: bool) -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
    let mut e = Entry::new(dn, norm);
    let none = Options::none();
    let at = |n: &str| s.attribute_type(n).unwrap().id;
    if naming_context {
        for oc in ["top", "organization"] {
            e.push_value(at("objectClass"), &none, oc.as_bytes().to_vec());
        }
        e.push_value(at("o"), &none, b"example".to_vec());
    } else {
        for oc in ["top", "person"] {
            e.push_value(at("objectClass"), &none, oc.as_bytes().to_vec());
        }
        e.push_value(at("cn"), &none, b"x".to_vec());
        e.push_value(at("sn"), &none, b"Tester".to_vec());
    }
    e.push_value(at("description"), &none, description.as_bytes().to_vec());
    e
}

const SUFFIX: &str = "o=example";

/// Normalized DN -> description: what the directory holds.
type State = BTreeMap<String, String>;

/// What one LSN committed.
#[derive(Debug, Clone)]
enum Op {
    Put(String, String),
    Delete(String),
}

fn apply(state: &mut State, op: &Op) {
    match op {
        Op::Put(dn, d) => {
            state.insert(dn.clone(), d.clone());
        }
        Op::Delete(dn) => {
            state.remove(dn);
        }
    }
}

/// Commits `op` as one change and returns its LSN (the writer is the only one, so the
/// published version's LSN after the write is the write's).
fn commit(store: &Store, op: &Op) -> u64 {
    let op = op.clone();
    store
        .write(move |t| -> Result<(), StoreError> {
            match op {
                Op::Put(dn, d) => {
                    let e = entry(&dn, &d, dn == SUFFIX);
                    match t.version().find(&e.norm_dn) {
                        Some(id) => t.modify(id, &e.to_stored()),
                        None => t.add(&e.dn, &e.norm_dn, &e.to_stored(), dn == SUFFIX).map(drop),
                    }
                }
                Op::Delete(dn) => {
                    let id = t.version().find(&NormDn::from_normalized(&dn)).unwrap();
                    t.delete(id)
                }
            }
        })
        .unwrap()
        .unwrap();
    store.current().lsn()
}

fn description_of(v: &Version, id: u32) -> String {
    let desc = schema().attribute_type("description").unwrap().id;
    let e = v.entry(id).unwrap();
    let a = e.attrs().attribute(desc).next().unwrap();
    String::from_utf8(a.values.iter().next().unwrap().to_vec()).unwrap()
}

fn assert_holds(v: &Version, expected: &State) {
    assert_eq!(v.len(), expected.len(), "entry count");
    for (dn, d) in expected {
        let id = v
            .find(&NormDn::from_normalized(dn))
            .unwrap_or_else(|| panic!("{dn} missing"));
        assert_eq!(&description_of(v, id), d, "{dn}");
    }
    v.check().unwrap();
}

/// The writer's sequence: write k puts cn=e{k}, every third modifies the counter, every
/// fifth deletes an earlier entry.
fn op_for(k: u64, live: &mut Vec<u64>) -> Op {
    if k % 5 == 0 && live.len() > 2 {
        let gone = live.remove(live.len() / 2);
        Op::Delete(format!("cn=e{gone},{SUFFIX}"))
    } else if k % 3 == 0 {
        Op::Put(format!("cn=counter,{SUFFIX}"), k.to_string())
    } else {
        live.push(k);
        Op::Put(format!("cn=e{k},{SUFFIX}"), format!("value {k}"))
    }
}

#[test]
fn a_backup_taken_under_writes_restores_to_exactly_its_end_lsn() {
    let dir = temp_dir("live");
    let (store, _) = Store::open(options(&dir)).unwrap();
    let history: Arc<Mutex<Vec<(u64, Op)>>> = Arc::default();
    let first = Op::Put(SUFFIX.into(), "root".into());
    let lsn = commit(&store, &first);
    history.lock().unwrap().push((lsn, first));
    for k in 1..=300 {
        let op = op_for(k, &mut Vec::new());
        if let Op::Put(..) = op {
            let lsn = commit(&store, &op);
            history.lock().unwrap().push((lsn, op));
        }
    }
    store.snapshot().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop, history) = (store.clone(), Arc::clone(&stop), Arc::clone(&history));
        std::thread::spawn(move || {
            let mut live = Vec::new();
            let mut k = 1000;
            while !stop.load(Ordering::Acquire) {
                k += 1;
                let op = op_for(k, &mut live);
                let lsn = commit(&store, &op);
                history.lock().unwrap().push((lsn, op));
            }
        })
    };
    // The store's own snapshots remove covered segments while the backup copies the log.
    let snapshotter = {
        let (store, stop) = (store.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Acquire) {
                store.snapshot().unwrap();
                n += 1;
            }
            n
        })
    };
    while history.lock().unwrap().len() < 600 {
        std::thread::yield_now();
    }
    let before = store.current().lsn();
    let to = temp_dir("live-copy");
    let report = store
        .backup(
            &to,
            &BackupOptions {
                software: "larch test".into(),
                suffixes: vec![SUFFIX.into()],
                full_speed: false,
            },
        )
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    assert!(snapshotter.join().unwrap() > 0);
    let m = &report.manifest;
    assert!(m.snapshot_lsn >= before, "the snapshot is older than the backup");
    assert!(m.end_lsn >= m.snapshot_lsn);
    let last = history.lock().unwrap().last().unwrap().0;
    assert!(last > m.end_lsn, "writes went on after the backup");
    assert_eq!(m.suffixes, vec![SUFFIX.to_string()]);
    assert!(to.join(MANIFEST_NAME).is_file());

    // The model at the end LSN; LSNs were consecutive.
    let mut expected = State::new();
    for (i, (lsn, op)) in history.lock().unwrap().iter().enumerate() {
        assert_eq!(*lsn, i as u64 + 1);
        if *lsn <= m.end_lsn {
            apply(&mut expected, op);
        }
    }
    store.close(false).unwrap();

    let data = temp_dir("live-restored");
    let restored = restore(&FsStorage, &to, &data).unwrap();
    assert_eq!(restored.manifest, *m);
    let (again, open) = Store::open(options(&data)).unwrap();
    assert_eq!(open.replayed, m.end_lsn - m.snapshot_lsn);
    assert_eq!(again.current().lsn(), m.end_lsn);
    assert_holds(&again.current(), &expected);
    // The restored store goes on from the next LSN.
    let next = Op::Put(format!("cn=after,{SUFFIX}"), "after".into());
    assert_eq!(commit(&again, &next), m.end_lsn + 1);
    again.close(false).unwrap();
    for d in [dir, to, data] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The real filesystem, with a hook run once just before a rename into a given directory:
/// the moment a backup's snapshot is complete, when the test commits more writes so that
/// the backup's log is known to hold them.
#[derive(Default)]
struct HookStorage {
    hook: Mutex<Option<Hook>>,
}

/// The directory a rename must go into, and what runs first.
type Hook = (PathBuf, Box<dyn FnOnce() + Send>);

impl Storage for HookStorage {
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        FsStorage.open_append(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        FsStorage.read(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        FsStorage.list(dir)
    }
    fn dir_state(&self, dir: &Path) -> io::Result<DirState> {
        FsStorage.dir_state(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        FsStorage.create_dir_all(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut hook = self.hook.lock().unwrap();
        if hook.as_ref().is_some_and(|(dir, _)| to.starts_with(dir)) {
            let (_, run) = hook.take().unwrap();
            drop(hook);
            run();
        }
        FsStorage.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        FsStorage.remove(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        FsStorage.truncate(path, len)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        FsStorage.sync_dir(dir)
    }
}

/// A small store backed up while 80 writes commit after the backup's snapshot: a
/// snapshot and a log of several segments.
fn backed_up(name: &str) -> (PathBuf, Manifest) {
    let dir = temp_dir(name);
    let storage = Arc::new(HookStorage::default());
    let mut o = options(&dir);
    o.storage = storage.clone();
    let (store, _) = Store::open(o).unwrap();
    commit(&store, &Op::Put(SUFFIX.into(), "root".into()));
    for k in 1..=40 {
        commit(
            &store,
            &Op::Put(format!("cn=e{k},{SUFFIX}"), format!("value {k}")),
        );
    }
    let to = temp_dir(&format!("{name}-copy"));
    let during = store.clone();
    *storage.hook.lock().unwrap() = Some((
        to.clone(),
        Box::new(move || {
            for k in 41..=120 {
                commit(
                    &during,
                    &Op::Put(format!("cn=e{k},{SUFFIX}"), format!("value {k}")),
                );
            }
        }),
    ));
    let report = store.backup(&to, &BackupOptions::default()).unwrap();
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(dir);
    let m = report.manifest;
    assert_eq!((m.snapshot_lsn, m.end_lsn), (41, 121));
    assert!(m.segments().len() >= 3, "{m:?}");
    (to, m)
}

/// Restores `from` into a new directory, expecting a refusal; checks nothing was written.
fn refused(from: &Path) -> BackupError {
    let data = temp_dir("refused");
    let err = restore(&FsStorage, from, &data).unwrap_err();
    assert!(!data.exists(), "{} was written", data.display());
    err
}

fn flip(path: &Path, at: usize) {
    let mut d = std::fs::read(path).unwrap();
    let at = at.min(d.len() - 1);
    d[at] ^= 0x10;
    std::fs::write(path, d).unwrap();
}

#[test]
fn an_intact_backup_restores_and_each_damage_is_refused_naming_the_file() {
    let (to, m) = backed_up("damage");
    let snapshot = to.join(&m.snapshot().unwrap().path);
    let segment = to.join(&m.segments()[1].path);
    let manifest = to.join(MANIFEST_NAME);
    let pristine = temp_dir("damage-pristine");
    std::fs::create_dir_all(&pristine).unwrap();
    let copy_back = |from: &Path| {
        let _ = std::fs::remove_dir_all(&to);
        copy_tree(from, &to);
    };
    copy_tree(&to, &pristine);

    // Intact: restores.
    let data = temp_dir("damage-ok");
    restore(&FsStorage, &to, &data).unwrap();
    let (s, _) = Store::open(options(&data)).unwrap();
    assert_eq!(s.current().lsn(), m.end_lsn);
    assert_eq!(s.current().len(), 121);
    s.close(false).unwrap();

    // Missing manifest (an incomplete backup).
    std::fs::remove_file(&manifest).unwrap();
    let e = refused(&to).to_string();
    assert!(e.contains("MANIFEST") && e.contains("incomplete"), "{e}");
    copy_back(&pristine);

    // A flipped octet in the manifest.
    flip(&manifest, 40);
    let e = refused(&to).to_string();
    assert!(e.contains("MANIFEST") && e.contains("damaged"), "{e}");
    copy_back(&pristine);

    // A truncated segment.
    let len = std::fs::metadata(&segment).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let e = refused(&to).to_string();
    assert!(
        e.contains(&segment.display().to_string()) && e.contains("truncated"),
        "{e}"
    );
    copy_back(&pristine);

    // A flipped octet in the snapshot.
    flip(&snapshot, 100);
    let e = refused(&to).to_string();
    assert!(
        e.contains(&snapshot.display().to_string()) && e.contains("CRC32C"),
        "{e}"
    );
    copy_back(&pristine);

    // A missing segment.
    std::fs::remove_file(&segment).unwrap();
    let e = refused(&to).to_string();
    assert!(
        e.contains(&segment.display().to_string()) && e.contains("missing"),
        "{e}"
    );
    copy_back(&pristine);

    // Damage the manifest's checksums agree with: the formats' own checks find it.
    flip(&segment, 60);
    rewrite_manifest(&to, &m);
    let e = refused(&to).to_string();
    assert!(
        e.contains(&segment.display().to_string()) && e.contains("log record"),
        "{e}"
    );
    copy_back(&pristine);
    flip(&snapshot, 100);
    rewrite_manifest(&to, &m);
    let e = refused(&to).to_string();
    assert!(
        e.contains(&snapshot.display().to_string()) && e.contains("corrupt snapshot"),
        "{e}"
    );
    copy_back(&pristine);

    // A segment left out of the manifest and the directory: the LSN sequence breaks.
    std::fs::remove_file(&segment).unwrap();
    let mut short = m.clone();
    short.files.retain(|f| to.join(&f.path) != segment);
    std::fs::write(&manifest, short.encode().unwrap()).unwrap();
    let e = refused(&to).to_string();
    assert!(e.contains("a segment is missing"), "{e}");
    copy_back(&pristine);

    // The pristine copy still restores.
    let data2 = temp_dir("damage-ok2");
    restore(&FsStorage, &to, &data2).unwrap();
    for d in [to, pristine, data, data2] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn targets_must_be_absolute_and_empty() {
    let (to, _) = backed_up("targets");
    // A restore into a directory that holds something.
    let busy = temp_dir("targets-busy");
    std::fs::create_dir_all(busy.join("sub")).unwrap();
    let e = restore(&FsStorage, &to, &busy).unwrap_err();
    assert!(e.is_refusal() && e.to_string().contains("not empty"), "{e}");
    // A relative one.
    let e = restore(&FsStorage, &to, Path::new("relative/data")).unwrap_err();
    assert!(e.is_refusal() && e.to_string().contains("absolute"), "{e}");
    // An empty one is fine.
    let empty = temp_dir("targets-empty");
    std::fs::create_dir_all(&empty).unwrap();
    restore(&FsStorage, &to, &empty).unwrap();
    // A backup into a directory that is not empty writes nothing.
    let dir = temp_dir("targets-store");
    let (store, _) = Store::open(options(&dir)).unwrap();
    let e = store.backup(&busy, &BackupOptions::default()).unwrap_err();
    assert!(e.is_refusal(), "{e}");
    assert_eq!(std::fs::read_dir(&busy).unwrap().count(), 1);
    let e = store
        .backup(Path::new("rel"), &BackupOptions::default())
        .unwrap_err();
    assert!(e.is_refusal(), "{e}");
    store.close(false).unwrap();
    for d in [to, busy, empty, dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Writes `m` with every file's size and CRC32C as the files now are.
fn rewrite_manifest(to: &Path, m: &Manifest) {
    let mut m = m.clone();
    for f in &mut m.files {
        let data = std::fs::read(to.join(&f.path)).unwrap();
        f.size = data.len() as u64;
        f.crc32c = crc32c::crc32c(&data);
    }
    std::fs::write(to.join(MANIFEST_NAME), m.encode().unwrap()).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
