//! Recovery time stays bounded (`larch_store::schedule`): a start that replays at least the
//! snapshot trigger writes a snapshot at once (in the background, or before opening when
//! the log is twice that), leftover temporary snapshot files are removed and reported at
//! open, and a store crashed again and again, at random moments and during those
//! snapshots, never replays more than the schedule's bound. The crashes are power cuts of
//! the in-memory `FaultStorage`; the leftover file test uses the real filesystem.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{entry, schema, Rng};
use larch_store::health::SNAPSHOT_RETRY_FIRST;
use larch_store::schedule::BLOCKING_SNAPSHOT_TRIGGERS;
use larch_store::snapshot::{list_snapshots, temp_name};
use larch_store::storage::{FaultStorage, Storage};
use larch_store::{OpenReport, StartupSnapshot, Store, StoreOptions};

/// The snapshot trigger of these tests (`snapshot_after_records`).
const TRIGGER: u64 = 20;

/// How long a test waits for the background snapshot it expects: far above what writing a
/// few entries takes, so only a snapshot that never comes fails the wait.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(30);

fn data() -> PathBuf {
    PathBuf::from("/data")
}

fn snapshots(dir: &Path) -> PathBuf {
    dir.join("snapshots")
}

fn options(storage: &Arc<dyn Storage>, dir: &Path, trigger: Option<u64>) -> StoreOptions {
    let mut o = StoreOptions::new(dir, schema());
    o.storage = Arc::clone(storage);
    o.threads = 1;
    o.snapshot_interval = None;
    o.snapshot_after_records = trigger;
    o
}

fn open(storage: &Arc<dyn Storage>, dir: &Path, trigger: Option<u64>) -> (Store, OpenReport) {
    Store::open(options(storage, dir, trigger)).unwrap()
}

/// Adds `n` entries below the suffix (the suffix first when the store is empty); returns
/// how many adds were acknowledged.
fn add_entries(store: &Store, n: u64) -> u64 {
    let mut acked = 0;
    for _ in 0..n {
        let version = store.current();
        let e = if version.is_empty() {
            entry("dc=example,dc=com")
        } else {
            entry(&format!("cn=e{},dc=example,dc=com", version.next_id()))
        };
        let naming_context = version.is_empty();
        let r = store.write(move |t| t.add(&e.dn, &e.norm_dn, &e.to_stored(), naming_context).map(drop));
        if matches!(r, Ok(Ok(()))) {
            acked += 1;
        }
    }
    acked
}

fn newest_snapshot_lsn(storage: &dyn Storage, dir: &Path) -> Option<u64> {
    list_snapshots(storage, &snapshots(dir))
        .unwrap()
        .first()
        .map(|(lsn, _)| *lsn)
}

/// Waits until the newest snapshot covers `lsn`.
fn wait_for_snapshot(storage: &dyn Storage, dir: &Path, lsn: u64) {
    wait_for_snapshot_within(storage, dir, lsn, SNAPSHOT_WAIT);
}

/// Waits until `store` reports a snapshot covering `lsn` written (durable), at most
/// `SNAPSHOT_WAIT`.
fn wait_for_recorded_snapshot(store: &Store, lsn: u64) {
    let deadline = Instant::now() + SNAPSHOT_WAIT;
    while store.stats().last_snapshot.is_none_or(|s| s.lsn < lsn) {
        assert!(
            Instant::now() < deadline,
            "no snapshot covering LSN {lsn} was recorded"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the newest snapshot covers `lsn`, at most `wait`.
fn wait_for_snapshot_within(storage: &dyn Storage, dir: &Path, lsn: u64, wait: Duration) {
    let deadline = Instant::now() + wait;
    while newest_snapshot_lsn(storage, dir) < Some(lsn) {
        assert!(
            Instant::now() < deadline,
            "no snapshot covering LSN {lsn} was written"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A power cut, then the store's threads stopped (their files fail from now on).
fn crash(faults: &FaultStorage, store: &Store) {
    faults.crash();
    let _ = store.close(false);
}

/// A store crashed after `writes` acknowledged adds with no snapshot trigger (the log only
/// grows), ready to reopen.
fn crashed_with_log(writes: u64) -> (FaultStorage, Arc<dyn Storage>) {
    let faults = FaultStorage::new(7);
    let storage: Arc<dyn Storage> = Arc::new(faults.clone());
    let (store, _) = open(&storage, &data(), None);
    assert_eq!(add_entries(&store, writes), writes);
    crash(&faults, &store);
    (faults, storage)
}

#[test]
fn a_start_replaying_the_trigger_writes_a_snapshot_at_once_in_the_background() {
    let writes = TRIGGER + TRIGGER / 2;
    let (faults, storage) = crashed_with_log(writes);
    let (store, report) = open(&storage, &data(), Some(TRIGGER));
    assert_eq!(report.replayed, writes);
    assert!(
        matches!(report.startup_snapshot, StartupSnapshot::Background),
        "{:?}",
        report.startup_snapshot
    );
    // The store serves while the snapshot is written.
    assert_eq!(add_entries(&store, 1), 1);
    wait_for_snapshot(&*storage, &data(), writes);
    // The file's name shows before the directory is synced: a power cut in between would
    // lose it. The store records the snapshot once it is durable.
    wait_for_recorded_snapshot(&store, writes);
    crash(&faults, &store);
    let (store, report) = open(&storage, &data(), Some(TRIGGER));
    assert!(report.replayed <= 1, "replayed {}", report.replayed);
    assert_eq!(store.current().len() as u64, writes + 1);
    store.close(false).unwrap();
}

#[test]
fn a_start_below_the_trigger_writes_no_snapshot() {
    let writes = TRIGGER - 1;
    let (faults, storage) = crashed_with_log(writes);
    let (store, report) = open(&storage, &data(), Some(TRIGGER));
    assert_eq!(report.replayed, writes);
    assert!(matches!(report.startup_snapshot, StartupSnapshot::NotDue));
    crash(&faults, &store);
    assert_eq!(newest_snapshot_lsn(&*storage, &data()), None);
}

#[test]
fn a_start_replaying_twice_the_trigger_writes_the_snapshot_before_opening() {
    let writes = TRIGGER * BLOCKING_SNAPSHOT_TRIGGERS + 3;
    let (faults, storage) = crashed_with_log(writes);
    let (store, report) = open(&storage, &data(), Some(TRIGGER));
    assert_eq!(report.replayed, writes);
    match &report.startup_snapshot {
        StartupSnapshot::Written { info, .. } => assert_eq!(info.lsn, writes),
        other => panic!("expected a snapshot before opening, got {other:?}"),
    }
    // Durable when open returned: a crash at once loses none of it.
    assert_eq!(newest_snapshot_lsn(&*storage, &data()), Some(writes));
    crash(&faults, &store);
    let (store, report) = open(&storage, &data(), Some(TRIGGER));
    assert_eq!(report.replayed, 0);
    assert_eq!(report.snapshot.map(|(_, lsn)| lsn), Some(writes));
    assert_eq!(store.current().len() as u64, writes);
    store.close(false).unwrap();
}

#[test]
fn a_failed_snapshot_before_opening_still_opens_and_retries_in_the_background() {
    let writes = TRIGGER * BLOCKING_SNAPSHOT_TRIGGERS;
    let (faults, storage) = crashed_with_log(writes);
    faults.set_fail_syncs(true);
    let (store, report) = open(&storage, &data(), Some(TRIGGER));
    assert!(
        matches!(report.startup_snapshot, StartupSnapshot::Failed { .. }),
        "{:?}",
        report.startup_snapshot
    );
    assert_eq!(store.current().len() as u64, writes);
    faults.set_fail_syncs(false);
    // The failure holds the next snapshot back for the first retry delay (disk faults
    // back off), then the periodic check writes it.
    wait_for_snapshot_within(&*storage, &data(), writes, SNAPSHOT_RETRY_FIRST + SNAPSHOT_WAIT);
    store.close(false).unwrap();
}

#[test]
fn leftover_temporary_snapshot_files_are_removed_at_open_and_reported() {
    let dir = std::env::temp_dir().join(format!("larch-store-leftover-tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let storage: Arc<dyn Storage> = Arc::new(larch_store::storage::FsStorage);
    let (store, report) = open(&storage, &dir, Some(TRIGGER));
    assert!(report.removed_temp_files.is_empty());
    assert_eq!(add_entries(&store, 3), 3);
    store.close(true).unwrap();
    // What a snapshot write killed before its rename leaves behind, at two LSNs.
    let leftovers: Vec<PathBuf> = [3, 9].map(|lsn| snapshots(&dir).join(temp_name(lsn))).into();
    for path in &leftovers {
        std::fs::write(path, vec![0x5a; 4096]).unwrap();
    }
    let (store, report) = open(&storage, &dir, Some(TRIGGER));
    assert_eq!(report.removed_temp_files, leftovers);
    for path in &leftovers {
        assert!(!path.exists(), "{} is still there", path.display());
    }
    // The snapshot beside them is untouched and was the one loaded.
    assert_eq!(report.snapshot.map(|(_, lsn)| lsn), Some(3));
    assert_eq!(store.current().len(), 3);
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the crash loop saw, so a run that never exercised a case fails.
#[derive(Default)]
struct Seen {
    background: AtomicU64,
    before_serving: AtomicU64,
    crashes_during_a_snapshot: AtomicU64,
    max_replayed: AtomicU64,
}

#[test]
fn crash_after_crash_the_replayed_log_stays_within_the_bound() {
    let seen = Seen::default();
    for seed in 0..4 {
        crash_loop(seed, &seen);
    }
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    eprintln!(
        "crash loop: {} background and {} blocking startup snapshots, {} crashes during a snapshot, \
         at most {} records replayed (trigger {TRIGGER})",
        get(&seen.background),
        get(&seen.before_serving),
        get(&seen.crashes_during_a_snapshot),
        get(&seen.max_replayed)
    );
    assert!(get(&seen.background) > 0 && get(&seen.before_serving) > 0);
}

/// Most adds one run makes before its crash.
const MAX_WRITES_PER_RUN: u64 = 2 * TRIGGER;

/// Cycles of: open (replay checked against the bound), a random number of adds, a crash at
/// a random moment, often while the snapshot due at open is being written.
fn crash_loop(seed: u64, seen: &Seen) {
    let mut rng = Rng(seed);
    let faults = FaultStorage::new(seed);
    let storage: Arc<dyn Storage> = Arc::new(faults.clone());
    let mut acked = 0;
    // Writes the previous run may have made past the log it started from.
    let mut last_run_writes = 0;
    for cycle in 0..50 {
        let (store, report) = open(&storage, &data(), Some(TRIGGER));
        assert_eq!(
            store.current().len() as u64,
            acked,
            "seed {seed} cycle {cycle}: acknowledged adds lost"
        );
        // The bound of `larch_store::schedule`: a start that served began below
        // BLOCKING_SNAPSHOT_TRIGGERS x TRIGGER records, then its run wrote at most
        // `last_run_writes` more.
        let bound = BLOCKING_SNAPSHOT_TRIGGERS * TRIGGER + last_run_writes;
        assert!(
            report.replayed <= bound,
            "seed {seed} cycle {cycle}: replayed {} records, the bound is {bound}",
            report.replayed
        );
        seen.max_replayed.fetch_max(report.replayed, Ordering::Relaxed);
        match report.startup_snapshot {
            StartupSnapshot::Background => seen.background.fetch_add(1, Ordering::Relaxed),
            StartupSnapshot::Written { .. } => seen.before_serving.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let replayed_to = store.current().lsn();
        let writes = rng.below(MAX_WRITES_PER_RUN + 1);
        acked += add_entries(&store, writes);
        last_run_writes = writes;
        if rng.below(2) == 0 {
            std::thread::sleep(Duration::from_micros(rng.below(400)));
        }
        crash(&faults, &store);
        // The snapshot due at open had not completed when the power went.
        if matches!(report.startup_snapshot, StartupSnapshot::Background)
            && newest_snapshot_lsn(&*storage, &data()) < Some(replayed_to)
        {
            seen.crashes_during_a_snapshot.fetch_add(1, Ordering::Relaxed);
        }
    }
}
