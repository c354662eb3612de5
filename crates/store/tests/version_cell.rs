//! `VersionCell`: readers racing a writer see versions in order and end on the last one;
//! every version no longer held is freed; a single-threaded model checks the exact
//! liveness of every version and the slow-path count after any sequence of operations.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use larch_store::version_cell::{VersionCell, VersionReader};
use proptest::prelude::*;

/// A version that records its drop.
struct Version {
    value: u64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Version {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn version(value: u64, drops: &Arc<AtomicUsize>) -> Arc<Version> {
    Arc::new(Version {
        value,
        drops: Arc::clone(drops),
    })
}

const READERS: usize = 4;
const PUBLICATIONS: u64 = 10_000;
/// Each reader releases its version every this many calls, to mix re-priming into the race.
const RELEASE_EVERY: u64 = 997;

#[test]
fn racing_readers_see_increasing_versions_and_end_on_the_last() {
    let drops = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(VersionCell::new(version(0, &drops)));
    let done = AtomicBool::new(false);
    let start = Barrier::new(READERS + 1);

    let mut readers: Vec<VersionReader<Version>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..READERS)
            .map(|_| {
                let mut reader = cell.reader();
                let (done, start) = (&done, &start);
                scope.spawn(move || {
                    start.wait();
                    let (mut last, mut calls) = (0u64, 0u64);
                    loop {
                        // Read the flag before calling `current`: if the writer had finished,
                        // this call began after the last publication returned.
                        let finished = done.load(Ordering::Acquire);
                        let value = reader.current().value;
                        assert!(value >= last, "went backwards from {last} to {value}");
                        last = value;
                        if finished {
                            assert_eq!(value, PUBLICATIONS, "stale after the writer finished");
                            break;
                        }
                        calls += 1;
                        if calls % RELEASE_EVERY == 0 {
                            reader.release();
                        }
                    }
                    reader
                })
            })
            .collect();
        start.wait();
        for value in 1..=PUBLICATIONS {
            cell.publish(version(value, &drops));
        }
        done.store(true, Ordering::Release);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    assert_eq!(cell.generation(), PUBLICATIONS);
    assert_eq!(cell.load().value, PUBLICATIONS);
    // Every reader and the cell hold the last version; all the others are freed.
    assert_eq!(drops.load(Ordering::SeqCst), PUBLICATIONS as usize);
    // Each reader took the slow path at least once.
    assert!(cell.slow_path_hits() >= READERS as u64);

    for reader in &mut readers {
        let held = Arc::clone(reader.current());
        reader.release();
        // The cell, the other readers and `held`.
        assert_eq!(Arc::strong_count(&held), READERS + 1, "release kept a reference");
        assert_eq!(reader.current().value, PUBLICATIONS);
        assert!(Arc::ptr_eq(reader.current(), &held));
    }
    drop(readers);
    assert_eq!(drops.load(Ordering::SeqCst), PUBLICATIONS as usize);
    drop(cell);
    assert_eq!(drops.load(Ordering::SeqCst), PUBLICATIONS as usize + 1);
}

#[test]
fn fast_path_changes_no_count_and_slow_path_runs_once_per_publication() {
    let drops = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(VersionCell::new(version(0, &drops)));
    let mut reader = cell.reader();
    assert_eq!(cell.slow_path_hits(), 0, "creating a reader fetches nothing");
    assert_eq!(reader.current().value, 0);
    assert_eq!(cell.slow_path_hits(), 1);
    let count = Arc::strong_count(reader.current());
    for _ in 0..100 {
        assert_eq!(reader.current().value, 0);
        assert_eq!(Arc::strong_count(reader.current()), count);
    }
    assert_eq!(cell.slow_path_hits(), 1, "the fast path took the slow path");

    cell.publish(version(1, &drops));
    assert_eq!(cell.generation(), 1);
    for _ in 0..100 {
        assert_eq!(reader.current().value, 1);
    }
    assert_eq!(cell.slow_path_hits(), 2);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the first version outlived its last reader"
    );
}

#[test]
fn idle_reader_pins_its_version_until_release() {
    let drops = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(VersionCell::new(version(0, &drops)));
    let mut reader = cell.reader();
    assert_eq!(reader.current().value, 0);
    cell.publish(version(1, &drops));
    cell.publish(version(2, &drops));
    // The reader still holds version 0; version 1 was never fetched and is freed.
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    reader.release();
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    reader.release();
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert_eq!(reader.current().value, 2);
    assert_eq!(cell.generation(), 2);
    assert!(Arc::ptr_eq(reader.cell(), &cell));
}

/// One step of the single-threaded model test.
#[derive(Debug, Clone)]
enum Op {
    Publish,
    Current(usize),
    Release(usize),
    Load,
}

const MODEL_READERS: usize = 3;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Publish),
        4 => (0..MODEL_READERS).prop_map(Op::Current),
        1 => (0..MODEL_READERS).prop_map(Op::Release),
        1 => Just(Op::Load),
    ]
}

/// A version that records its drop in a shared set, so that the test knows which are live.
struct Tracked {
    value: u64,
    dropped: Arc<Mutex<BTreeSet<u64>>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let fresh = self.dropped.lock().unwrap().insert(self.value);
        assert!(fresh, "version {} dropped twice", self.value);
    }
}

proptest! {
    #[test]
    fn matches_a_model_of_live_versions(ops in proptest::collection::vec(op(), 0..200)) {
        let dropped = Arc::new(Mutex::new(BTreeSet::new()));
        let track = |value| Arc::new(Tracked { value, dropped: Arc::clone(&dropped) });
        let cell = Arc::new(VersionCell::new(track(0)));
        let mut readers: Vec<_> = (0..MODEL_READERS).map(|_| cell.reader()).collect();

        // The model: the newest value, and what each reader caches.
        let mut newest = 0u64;
        let mut cached: [Option<u64>; MODEL_READERS] = [None; MODEL_READERS];
        let mut slow = 0u64;

        for op in ops {
            match op {
                Op::Publish => {
                    newest += 1;
                    cell.publish(track(newest));
                }
                Op::Current(r) => {
                    if cached[r] != Some(newest) {
                        slow += 1;
                    }
                    cached[r] = Some(newest);
                    prop_assert_eq!(readers[r].current().value, newest);
                }
                Op::Release(r) => {
                    cached[r] = None;
                    readers[r].release();
                }
                Op::Load => prop_assert_eq!(cell.load().value, newest),
            }
            prop_assert_eq!(cell.generation(), newest);
            prop_assert_eq!(cell.slow_path_hits(), slow);
            // Live: the newest version and whatever a reader caches; everything else freed.
            let live: BTreeSet<u64> = cached.iter().flatten().copied().chain([newest]).collect();
            let expected_dropped: BTreeSet<u64> = (0..=newest).filter(|v| !live.contains(v)).collect();
            prop_assert_eq!(&*dropped.lock().unwrap(), &expected_dropped);
        }
        drop(readers);
        drop(cell);
        prop_assert_eq!(dropped.lock().unwrap().len() as u64, newest + 1);
    }
}
