//! Disk faults through the `Storage` trait (`FaultStorage`: failing fsyncs, a disk of a
//! given capacity): what the log, the store and its snapshots do when the disk refuses.
//!
//! What must hold:
//! - a failed fsync is never retried and never reported as success: the write gets
//!   `Failed`, so does every later one even once the disk works again, and no further
//!   fsync is issued;
//! - a full disk for the log: the same, and the failed batch is taken out of the log, so a
//!   restart replays none of it (a job of several records is never half there);
//! - the halt is in the store's health with its cause, and reported once;
//! - after a restart every acknowledged write is there, nothing unacknowledged is;
//! - a snapshot that does not fit fails, leaves no temporary file, keeps the log; writes
//!   go on, the failure is reported, and a later snapshot succeeds and says so.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use larch_model::dn::NormDn;
use larch_model::entry::{Entry, Options};
use larch_store::storage::{FaultStorage, Storage};
use larch_store::wal::{LogRecord, SyncPolicy, Wal, WalError, WalOptions, SEGMENT_SIZE_LIMIT};
use larch_store::{Store, StoreError, StoreEvent, StoreOptions, Version};

mod common;
use common::schema;

fn data_dir() -> PathBuf {
    PathBuf::from("/data")
}

/// The events a store reported, as they came.
type Events = Arc<Mutex<Vec<StoreEvent>>>;

fn open(storage: &FaultStorage, events: &Events) -> Store {
    open_with(storage, events, SyncPolicy::Always)
}

fn open_with(storage: &FaultStorage, events: &Events, sync: SyncPolicy) -> Store {
    open_with_segments(storage, events, sync, SEGMENT_SIZE_LIMIT)
}

/// A store whose log segments reserve space 1 KiB at a time, as a 1 KiB segment does:
/// the disk then fills within a few writes of the room a test leaves.
fn open_small_segments(storage: &FaultStorage, events: &Events) -> Store {
    open_with_segments(storage, events, SyncPolicy::Always, 1024)
}

fn open_with_segments(
    storage: &FaultStorage,
    events: &Events,
    sync: SyncPolicy,
    segment_size_limit: u64,
) -> Store {
    let mut o = StoreOptions::new(data_dir(), schema());
    o.segment_size_limit = segment_size_limit;
    o.storage = Arc::new(storage.clone());
    o.sync = sync;
    o.threads = 1;
    o.snapshot_interval = None;
    o.snapshot_after_records = None;
    let sink = Arc::clone(events);
    o.events = Some(Arc::new(move |e: &StoreEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    Store::open(o).unwrap().0
}

/// An organizationalUnit below the suffix (or the suffix itself for "").
fn entry(dn: &str, filler: &str) -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
    let mut e = Entry::new(dn.clone(), norm);
    let none = Options::none();
    let at = |n: &str| s.attribute_type(n).unwrap().id;
    let rdn = &dn.rdns[0].avas[0];
    let class = if rdn.attr == "dc" {
        "dcObject"
    } else {
        "organizationalUnit"
    };
    e.push_value(at("objectClass"), &none, class.as_bytes().to_vec());
    if class == "dcObject" {
        e.push_value(at("objectClass"), &none, b"organization".to_vec());
        e.push_value(at("o"), &none, b"Example".to_vec());
    }
    e.push_value(at(&rdn.attr), &none, rdn.value.clone());
    e.push_value(at("description"), &none, filler.as_bytes().to_vec());
    e
}

const SUFFIX: &str = "dc=example,dc=com";

/// Adds `dns` in one job (one batch of several log records); `Ok` once durable.
fn add_all(store: &Store, dns: &[String], filler: &str) -> Result<(), StoreError> {
    let entries: Vec<Entry> = dns.iter().map(|d| entry(d, filler)).collect();
    store.write(move |t| {
        for e in &entries {
            t.add(&e.dn, &e.norm_dn, &e.to_stored(), e.dn.to_string() == SUFFIX)?;
        }
        Ok::<(), StoreError>(())
    })?
}

fn names(version: &Version) -> Vec<String> {
    let mut v: Vec<String> = version
        .entries()
        .map(|e| version.dn(e.id).to_lowercase())
        .collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Pseudo-random hexadecimal text (which LZ4 cannot shrink much), `len` characters.
fn noise(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from_digit((x % 16) as u32, 16).unwrap()
        })
        .collect()
}

fn halts(events: &Events) -> usize {
    events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, StoreEvent::WritesHalted(_)))
        .count()
}

/// A job of several changes (here three adds; the server's subtree deletes and hooks that
/// change other entries make such jobs) written but not fsynced (`sync = none`), then a
/// power cut keeping `keep` octets of it: the restarted store has all of the job or none.
#[test]
fn a_job_of_several_changes_torn_at_any_octet_comes_back_whole_or_not_at_all() {
    let before: Vec<String> = vec![SUFFIX.to_string(), format!("ou=kept,{SUFFIX}")];
    let job: Vec<String> = (0..3).map(|i| format!("ou=job{i},{SUFFIX}")).collect();
    let torn = |keep: usize| -> (FaultStorage, usize) {
        let disk = FaultStorage::new(17);
        let events = Events::default();
        let store = open(&disk, &events);
        add_all(&store, &before[..1], "before").unwrap();
        add_all(&store, &before[1..], "before").unwrap();
        store.close(false).unwrap();
        drop(store);
        let store = open_with(&disk, &events, SyncPolicy::None);
        assert_eq!(disk.unsynced_octets(), 0);
        add_all(&store, &job, "in the job").unwrap();
        let written = disk.unsynced_octets();
        disk.crash_keeping(keep);
        drop(store);
        (disk, written as usize)
    };
    let (_, written) = torn(0);
    assert!(written > 0);
    let mut seen_whole = false;
    for keep in (0..=written).step_by(7).chain([written - 1, written]) {
        let (disk, _) = torn(keep);
        let events = Events::default();
        let store = open(&disk, &events);
        let got = names(&store.current());
        if got.len() == before.len() + job.len() {
            seen_whole = true;
            assert_eq!(got, sorted([before.clone(), job.clone()].concat()), "keep {keep}");
        } else {
            assert_eq!(
                got,
                sorted(before.clone()),
                "keep {keep}: part of the job was replayed"
            );
        }
        store.close(false).unwrap();
    }
    assert!(
        seen_whole,
        "the whole job survives when all of it reached the disk"
    );
}

#[test]
fn a_failed_fsync_is_never_retried_nor_reported_as_success_and_a_restart_keeps_every_acknowledged_write() {
    let disk = FaultStorage::new(7);
    let events = Events::default();
    let store = open(&disk, &events);
    let mut acked = Vec::new();
    for i in 0..5 {
        let dns = if i == 0 {
            vec![SUFFIX.to_string()]
        } else {
            vec![format!("ou=unit{i},{SUFFIX}")]
        };
        add_all(&store, &dns, "before").unwrap();
        acked.extend(dns);
    }
    assert!(store.health().writable());

    disk.set_fail_syncs(true);
    let err = add_all(&store, &[format!("ou=lost,{SUFFIX}")], "x").unwrap_err();
    let StoreError::Failed(halt) = &err else {
        panic!("expected Failed, got {err:?}")
    };
    assert_eq!(halt.op, "sync");
    assert_eq!(halt.cause, "injected fsync failure");
    assert_eq!(err.result_code(), larch_proto::ResultCode::UNAVAILABLE);
    let syncs_at_failure = disk.file_sync_count();

    // The disk works again: the store still refuses, with the same halt, and issues no
    // fsync (a retried fsync could report success for pages the kernel dropped).
    disk.set_fail_syncs(false);
    for i in 0..3 {
        match add_all(&store, &[format!("ou=later{i},{SUFFIX}")], "x") {
            Err(StoreError::Failed(h)) => assert_eq!(h, *halt),
            other => panic!("a write after the halt: {other:?}"),
        }
    }
    assert_eq!(
        disk.file_sync_count(),
        syncs_at_failure,
        "no fsync after the failure"
    );
    assert_eq!(store.write_halt().as_deref(), Some(&**halt));
    assert_eq!(halts(&events), 1, "{:?}", events.lock().unwrap());
    // Reads go on, on the last durable version.
    assert_eq!(names(&store.current()), sorted(acked.clone()));

    // A power cut, then a restart: every acknowledged write, nothing else.
    assert!(
        store.close(false).is_err(),
        "closing a halted store reports the halt"
    );
    drop(store);
    disk.crash();
    let events = Events::default();
    let store = open(&disk, &events);
    assert_eq!(names(&store.current()), sorted(acked.clone()));
    assert!(store.health().writable(), "a reopened store writes again");
    add_all(&store, &[format!("ou=after,{SUFFIX}")], "x").unwrap();
    store.close(false).unwrap();
}

#[test]
fn a_full_disk_for_the_log_halts_writes_and_takes_the_failed_batch_out_of_the_log() {
    // Each job adds three entries (three log records); the disk fills in the middle of
    // one. Without the undo a restart would replay the records that fitted: a job half
    // applied that no client was told of.
    for room in [300u64, 700, 1100, 1500, 1900] {
        let disk = FaultStorage::new(room);
        let events = Events::default();
        let store = open_small_segments(&disk, &events);
        add_all(&store, &[SUFFIX.to_string()], "suffix").unwrap();
        let mut acked = vec![SUFFIX.to_string()];
        disk.set_capacity(Some(disk.used_octets() + room));
        let mut failed_job = None;
        for job in 0..100 {
            let dns: Vec<String> = (0..3).map(|k| format!("ou=j{job}k{k},{SUFFIX}")).collect();
            match add_all(&store, &dns, &noise(job, 60)) {
                Ok(()) => acked.extend(dns),
                Err(e) => {
                    failed_job = Some((dns, e));
                    break;
                }
            }
        }
        let (lost, err) = failed_job.expect("the disk fills");
        let StoreError::Failed(halt) = &err else {
            panic!("expected Failed, got {err:?}")
        };
        assert_eq!(halt.kind, std::io::ErrorKind::StorageFull, "{halt}");
        assert_eq!(halt.cause, "No space left on device");
        assert_eq!(halt.op, "write");
        assert!(halt.undo_failed.is_none(), "{halt}");
        assert_eq!(halts(&events), 1);
        assert_eq!(names(&store.current()), sorted(acked.clone()));

        // The disk is freed (capacity lifted); the halt stays until a restart.
        disk.set_capacity(None);
        assert!(matches!(
            add_all(&store, &[format!("ou=late,{SUFFIX}")], "x"),
            Err(StoreError::Failed(_))
        ));
        let _ = store.close(false);
        drop(store);
        for crash in [false, true] {
            if crash {
                disk.crash();
            }
            let store = open(&disk, &Events::default());
            let found = names(&store.current());
            assert_eq!(found, sorted(acked.clone()), "room {room}, crash {crash}");
            for dn in &lost {
                assert!(!found.contains(&dn.to_lowercase()), "room {room}: {dn} replayed");
            }
            store.close(false).unwrap();
        }
    }
}

#[test]
fn a_snapshot_that_does_not_fit_fails_cleanly_and_writes_go_on() {
    let disk = FaultStorage::new(11);
    let events = Events::default();
    let store = open(&disk, &events);
    add_all(&store, &[SUFFIX.to_string()], "suffix").unwrap();
    let mut acked = vec![SUFFIX.to_string()];
    for i in 0..200 {
        let dn = format!("ou=u{i},{SUFFIX}");
        add_all(&store, std::slice::from_ref(&dn), &noise(i, 400)).unwrap();
        acked.push(dn);
    }
    let snapshots = data_dir().join("snapshots");
    let wal = data_dir().join("wal");
    let log_before = disk.list(&wal).unwrap();
    // Room for a few more log records, not for a snapshot of 200 entries of 400 octets.
    disk.set_capacity(Some(disk.used_octets() + 20_000));

    let err = store.snapshot().unwrap_err();
    assert!(err.to_string().contains("No space left on device"), "{err}");
    assert_eq!(
        disk.list(&snapshots).unwrap(),
        Vec::<String>::new(),
        "no temporary file left"
    );
    assert_eq!(disk.list(&wal).unwrap(), log_before, "the log is kept");
    let health = store.health();
    assert!(health.writable());
    assert_eq!(health.snapshot_failures, 1);
    assert!(health
        .last_snapshot_error
        .unwrap()
        .contains("No space left on device"));
    assert!(matches!(
        events.lock().unwrap().as_slice(),
        [StoreEvent::SnapshotFailed { failures: 1, .. }]
    ));

    // Writes go on: the failed snapshot gave its room back.
    for i in 0..5 {
        let dn = format!("ou=after{i},{SUFFIX}");
        add_all(&store, std::slice::from_ref(&dn), "small").unwrap();
        acked.push(dn);
    }

    // Room again: the next snapshot is written, and says so.
    disk.set_capacity(None);
    store.snapshot().unwrap().expect("a snapshot");
    assert_eq!(store.health().snapshot_failures, 0);
    assert!(matches!(
        events.lock().unwrap().last(),
        Some(StoreEvent::SnapshotRecovered { failures: 1 })
    ));
    store.close(false).unwrap();
    drop(store);
    disk.crash();
    let store = open(&disk, &Events::default());
    assert_eq!(names(&store.current()), sorted(acked));
    store.close(false).unwrap();
}

fn wal_open(disk: &FaultStorage, dir: &Path, hook: Option<larch_store::wal::FailureHook>) -> Wal {
    let options = WalOptions {
        segment_size_limit: 400,
        on_failure: hook,
        ..WalOptions::default()
    };
    Wal::open(Arc::new(disk.clone()), dir, options).unwrap().0
}

#[test]
fn a_batch_that_fails_across_a_segment_roll_leaves_no_record_and_no_new_segment() {
    let dir = PathBuf::from("/db/wal");
    let payload = |i: u64| format!("record {i} ").repeat(6).into_bytes();
    // The used octets count the 400 the first segment reserved. The batch fills that
    // segment, rolls (giving back the 26 octets it did not use), and with 374 more
    // octets of room the second segment reserves its 400; the third then needs 100 (its
    // header and one record) of what is left: 450 fails there by four octets, 460 would
    // hold the whole batch.
    for room in [0u64, 30, 120, 250, 420, 450] {
        let disk = FaultStorage::new(room);
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&told);
        let hook: larch_store::wal::FailureHook = Arc::new(move |e: &WalError, undo: Option<&WalError>| {
            sink.lock()
                .unwrap()
                .push((e.to_string(), undo.map(ToString::to_string)));
        });
        let wal = wal_open(&disk, &dir, Some(hook));
        for i in 1..=3 {
            wal.append(&payload(i)).unwrap();
        }
        let segments_before = disk.list(&dir).unwrap();
        disk.set_capacity(Some(disk.used_octets() + room));
        // Eight records of ~80 octets: past the 400-octet segment limit, so the batch
        // rolls to a new segment somewhere in the middle.
        let (_, last) = wal
            .submit_batch((4..=11).map(|i| LogRecord::single(payload(i))).collect())
            .unwrap()
            .unwrap();
        let err = wal.wait_for(last).expect_err(&format!("room {room}"));
        assert!(matches!(err, WalError::Failed(_)), "room {room}: {err}");
        assert!(matches!(wal.append(b"later"), Err(WalError::Failed(_))));
        let told = told.lock().unwrap().clone();
        assert_eq!(told.len(), 1, "room {room}: told once: {told:?}");
        assert!(told[0].0.contains("No space left on device"), "{told:?}");
        assert_eq!(told[0].1, None, "room {room}: the undo worked");
        assert_eq!(disk.list(&dir).unwrap(), segments_before, "room {room}");
        drop(wal);
        disk.set_capacity(None);
        let wal = wal_open(&disk, &dir, None);
        let got: Vec<(u64, Vec<u8>)> = wal
            .read_after(0)
            .unwrap()
            .map(|r| r.map(|r| (r.lsn, r.payload)).unwrap())
            .collect();
        let want: Vec<(u64, Vec<u8>)> = (1..=3).map(|i| (i, payload(i))).collect();
        assert_eq!(got, want, "room {room}");
        // The log continues after the records it kept.
        assert_eq!(wal.append(b"next").unwrap(), 4);
    }
}
