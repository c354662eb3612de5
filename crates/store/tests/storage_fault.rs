//! The `Storage` implementations: `FaultStorage`'s crash model (what survives, what does
//! not, deterministically) and `FsStorage` on a real temporary directory.

use std::path::{Path, PathBuf};

use larch_store::storage::{FaultConfig, FaultStorage, FsStorage, Storage};

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

fn append(s: &dyn Storage, path: &Path, data: &[u8], sync: bool) {
    let mut f = s.open_append(path).unwrap();
    f.write_all(data).unwrap();
    if sync {
        f.sync().unwrap();
    }
}

#[test]
fn crash_drops_unsynced_octets_and_unsynced_names() {
    let s = FaultStorage::new(1);
    s.create_dir_all(&dir()).unwrap();
    let a = dir().join("a");
    append(&s, &a, b"durable", true);
    s.sync_dir(&dir()).unwrap();
    append(&s, &a, b"-lost", false);
    let b = dir().join("b");
    append(&s, &b, b"synced but name not", true);
    assert_eq!(s.read(&a).unwrap(), b"durable-lost");
    assert_eq!(s.list(&dir()).unwrap(), ["a", "b"]);
    s.crash();
    assert_eq!(s.read(&a).unwrap(), b"durable");
    assert_eq!(s.list(&dir()).unwrap(), ["a"]);
}

#[test]
fn handles_from_before_a_crash_fail() {
    let s = FaultStorage::new(1);
    s.create_dir_all(&dir()).unwrap();
    let mut f = s.open_append(&dir().join("a")).unwrap();
    s.crash();
    assert!(f.write(b"x").is_err());
    assert!(f.sync().is_err());
}

#[test]
fn crash_keeping_tears_at_the_chosen_offset() {
    for keep in 0..=6 {
        let s = FaultStorage::new(1);
        s.create_dir_all(&dir()).unwrap();
        let a = dir().join("a");
        append(&s, &a, b"head", true);
        s.sync_dir(&dir()).unwrap();
        append(&s, &a, b"tail", false);
        s.crash_keeping(keep);
        let expect = [&b"head"[..], &b"tail"[..keep.min(4)]].concat();
        assert_eq!(s.read(&a).unwrap(), expect, "keep {keep}");
    }
}

#[test]
fn torn_writes_keep_a_seeded_prefix_and_are_deterministic() {
    let run = |seed| {
        let s = FaultStorage::with_config(FaultConfig {
            seed,
            torn_writes: true,
            ..FaultConfig::default()
        });
        s.create_dir_all(&dir()).unwrap();
        let a = dir().join("a");
        append(&s, &a, b"synced:", true);
        s.sync_dir(&dir()).unwrap();
        append(&s, &a, b"0123456789abcdefghij", false);
        s.crash();
        s.read(&a).unwrap()
    };
    let mut lengths = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let got = run(seed);
        assert_eq!(got, run(seed), "same seed, same outcome");
        assert!(got.starts_with(b"synced:"));
        assert!(b"synced:0123456789abcdefghij".starts_with(&got));
        lengths.insert(got.len());
    }
    assert!(lengths.len() > 5, "tears vary with the seed: {lengths:?}");
}

#[test]
fn short_writes_are_short_but_write_all_completes() {
    let s = FaultStorage::with_config(FaultConfig {
        seed: 7,
        short_writes: true,
        ..FaultConfig::default()
    });
    s.create_dir_all(&dir()).unwrap();
    let a = dir().join("a");
    let mut f = s.open_append(&a).unwrap();
    let data: Vec<u8> = (0..=255).collect();
    let shorts = (0..20).filter(|_| f.write(&data).unwrap() < data.len()).count();
    assert!(shorts > 10, "{shorts} short writes of 20");
    let s2 = FaultStorage::with_config(FaultConfig {
        seed: 7,
        short_writes: true,
        ..FaultConfig::default()
    });
    s2.create_dir_all(&dir()).unwrap();
    append(&s2, &a, &data, false);
    assert_eq!(s2.read(&a).unwrap(), data);
}

#[test]
fn failing_syncs_do_not_make_data_durable_and_are_counted() {
    let s = FaultStorage::new(3);
    s.create_dir_all(&dir()).unwrap();
    let a = dir().join("a");
    let mut f = s.open_append(&a).unwrap();
    s.sync_dir(&dir()).unwrap();
    f.write_all(b"one").unwrap();
    f.sync().unwrap();
    s.set_fail_syncs(true);
    f.write_all(b"two").unwrap();
    assert!(f.sync().is_err());
    assert_eq!(s.file_sync_count(), 2);
    assert_eq!(s.dir_sync_count(), 1);
    s.crash();
    assert_eq!(s.read(&a).unwrap(), b"one");

    let random = FaultStorage::with_config(FaultConfig {
        seed: 9,
        sync_failure_per_mille: 500,
        ..FaultConfig::default()
    });
    random.create_dir_all(&dir()).unwrap();
    let mut f = random.open_append(&a).unwrap();
    let failures = (0..100).filter(|_| f.sync().is_err()).count();
    assert!((20..80).contains(&failures), "{failures} of 100 at 50%");
}

#[test]
fn rename_remove_truncate() {
    let s = FaultStorage::new(1);
    s.create_dir_all(&dir()).unwrap();
    let (a, b) = (dir().join("a"), dir().join("b"));
    append(&s, &a, b"0123456789", true);
    s.rename(&a, &b).unwrap();
    s.truncate(&b, 4).unwrap();
    s.sync_dir(&dir()).unwrap();
    s.crash();
    assert_eq!(s.list(&dir()).unwrap(), ["b"]);
    assert_eq!(s.read(&b).unwrap(), b"0123");
    s.remove(&b).unwrap();
    assert!(s.read(&b).is_err());
    s.crash();
    assert_eq!(
        s.read(&b).unwrap(),
        b"0123",
        "removal not durable without sync_dir"
    );
    assert!(s.corrupt(&b, 1, 0xff));
    assert_eq!(s.read(&b).unwrap(), [b'0', !b'1', b'2', b'3']);
}

#[test]
fn fs_storage_round_trip() {
    let d = std::env::temp_dir().join(format!("larch-storage-test-{}", std::process::id()));
    let s = FsStorage;
    s.create_dir_all(&d).unwrap();
    let a = d.join("a");
    append(&s, &a, b"hello ", true);
    append(&s, &a, b"world", true);
    s.sync_dir(&d).unwrap();
    assert_eq!(s.read(&a).unwrap(), b"hello world");
    s.truncate(&a, 5).unwrap();
    assert_eq!(s.read(&a).unwrap(), b"hello");
    let b = d.join("b");
    s.rename(&a, &b).unwrap();
    assert_eq!(s.list(&d).unwrap(), ["b"]);
    s.remove(&b).unwrap();
    assert!(s.list(&d).unwrap().is_empty());
    std::fs::remove_dir_all(&d).unwrap();
}
