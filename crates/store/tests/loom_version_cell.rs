//! `VersionCell` under the loom model checker: every interleaving of a publisher and readers,
//! with every outcome the memory orderings permit. The command is in the module
//! documentation of `larch_store::version_cell`.
//!
//! Each reader learns how many publications have completed from a counter the publisher
//! increments (`Release`) after each `publish` returns, loaded (`Acquire`) before each
//! `current()` call; the version a call returns must be at least that count (freshness) and
//! at least what the previous call returned (order).

#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use larch_store::version_cell::{VersionCell, VersionReader};

/// The version's payload is the number of publications that produced it; each records its
/// drop, so the models can check that no version is leaked or dropped twice.
struct Version {
    value: usize,
    drops: loom::sync::Arc<AtomicUsize>,
}

impl Drop for Version {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

fn version(value: usize, drops: &loom::sync::Arc<AtomicUsize>) -> loom::sync::Arc<Version> {
    loom::sync::Arc::new(Version {
        value,
        drops: loom::sync::Arc::clone(drops),
    })
}

/// The shared state of one model run.
struct World {
    cell: std::sync::Arc<VersionCell<Version>>,
    /// Publications known to have returned.
    published: loom::sync::Arc<AtomicUsize>,
    drops: loom::sync::Arc<AtomicUsize>,
}

impl World {
    fn new() -> Self {
        let drops = loom::sync::Arc::new(AtomicUsize::new(0));
        World {
            cell: std::sync::Arc::new(VersionCell::new(version(0, &drops))),
            published: loom::sync::Arc::new(AtomicUsize::new(0)),
            drops,
        }
    }

    /// A thread publishing versions `1..=count`, announcing each after `publish` returns.
    fn spawn_publisher(&self, count: usize) -> thread::JoinHandle<()> {
        let (cell, published, drops) = (
            std::sync::Arc::clone(&self.cell),
            loom::sync::Arc::clone(&self.published),
            loom::sync::Arc::clone(&self.drops),
        );
        thread::spawn(move || {
            for value in 1..=count {
                cell.publish(version(value, &drops));
                published.store(value, Ordering::Release);
            }
        })
    }
}

/// Calls `current()` once and checks it against what the caller knows: the last value this
/// reader saw, and the publications that completed before the call began.
fn read(reader: &mut VersionReader<Version>, published: &AtomicUsize, last: usize) -> usize {
    let known = published.load(Ordering::Acquire);
    let value = reader.current().value;
    assert!(
        value >= known,
        "stale: got version {value} after publication {known} completed"
    );
    assert!(value >= last, "went backwards from {last} to {value}");
    value
}

/// Preemption bound for the three-thread model. Without a bound its exploration does not
/// finish in useful time (each extra preemption multiplies the run time by about four), and
/// loom's guidance is that two or three preemptions already expose most bugs. Five takes
/// about 15 seconds in release mode on one core. `LOOM_MAX_PREEMPTIONS` overrides it.
const THREE_THREAD_PREEMPTIONS: usize = 5;

/// (a) One publication, two readers (one on the main thread) calling `current()` twice
/// each: fresh and monotonic. The two-thread models below are explored exhaustively.
#[test]
fn one_publisher_two_readers() {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(THREE_THREAD_PREEMPTIONS);
    }
    builder.check(|| {
        let world = World::new();
        let publisher = world.spawn_publisher(1);
        let other = {
            let mut reader = world.cell.reader();
            let published = loom::sync::Arc::clone(&world.published);
            thread::spawn(move || {
                let first = read(&mut reader, &published, 0);
                read(&mut reader, &published, first);
            })
        };
        let mut reader = world.cell.reader();
        let first = read(&mut reader, &world.published, 0);
        read(&mut reader, &world.published, first);
        publisher.join().unwrap();
        other.join().unwrap();
        // Everything finished: a fresh call must see the publication.
        assert_eq!(read(&mut reader, &world.published, 0), 1);
    });
}

/// (b) Two consecutive publications, one reader calling `current()` twice: fresh, never
/// backwards, and (with the generation read under the lock) never stuck on an old version
/// whose generation it mistook for a newer one.
#[test]
fn two_publications_one_reader() {
    loom::model(|| {
        let world = World::new();
        let publisher = world.spawn_publisher(2);
        let mut reader = world.cell.reader();
        let first = read(&mut reader, &world.published, 0);
        read(&mut reader, &world.published, first);
        publisher.join().unwrap();
        assert_eq!(read(&mut reader, &world.published, 0), 2);
        assert_eq!(world.cell.generation(), 2);
    });
}

/// (c) Drop accounting: a reader that fetches, releases and fetches again while two
/// versions are published; afterwards exactly the versions nobody holds have been dropped,
/// and once everything is gone each version has been dropped once.
#[test]
fn every_version_dropped_exactly_once() {
    loom::model(|| {
        let world = World::new();
        let publisher = world.spawn_publisher(2);
        let mut reader = world.cell.reader();
        let first = read(&mut reader, &world.published, 0);
        reader.release();
        let held = read(&mut reader, &world.published, first);
        publisher.join().unwrap();
        // Live: the newest version (the cell's) and the one the reader caches.
        let live = if held == 2 { 1 } else { 2 };
        assert_eq!(world.drops.load(Ordering::Relaxed), 3 - live);
        reader.release();
        assert_eq!(world.drops.load(Ordering::Relaxed), 2);
        let World { cell, drops, .. } = world;
        drop(reader);
        drop(cell);
        assert_eq!(drops.load(Ordering::Relaxed), 3);
    });
}
