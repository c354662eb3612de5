//! Group commit: many threads appending at once share fsyncs, get distinct consecutive
//! LSNs, and every acknowledged record survives a crash.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use larch_store::storage::{FaultConfig, FaultStorage};
use larch_store::wal::{Wal, WalOptions};

const THREADS: usize = 8;
const PER_THREAD: usize = 40;

fn run(config: FaultConfig, options: WalOptions) -> (FaultStorage, Vec<(u64, Vec<u8>)>) {
    let s = FaultStorage::with_config(config);
    let dir = PathBuf::from("/wal");
    let (wal, _) = Wal::open(Arc::new(s.clone()), &dir, options).unwrap();
    let acked = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (wal, acked) = (&wal, &acked);
            scope.spawn(move || {
                for i in 0..PER_THREAD {
                    let payload = format!("thread {t} record {i}").into_bytes();
                    let lsn = wal.append(&payload).unwrap();
                    acked.lock().unwrap().push((lsn, payload));
                }
            });
        }
    });
    let mut acked = acked.into_inner().unwrap();
    acked.sort();
    // Crash with the WAL still open: nothing is flushed by a clean close.
    s.crash();
    drop(wal);
    (s, acked)
}

fn reopen(s: &FaultStorage) -> Vec<(u64, Vec<u8>)> {
    let (wal, report) =
        Wal::open(Arc::new(s.clone()), &PathBuf::from("/wal"), WalOptions::default()).unwrap();
    assert_eq!(report.cut, None);
    wal.read_after(0)
        .unwrap()
        .map(|r| r.map(|r| (r.lsn, r.payload)).unwrap())
        .collect()
}

#[test]
fn concurrent_appends_share_fsyncs_and_survive_a_crash() {
    let config = FaultConfig {
        seed: 1,
        sync_delay: Duration::from_millis(2),
        torn_writes: true,
        ..FaultConfig::default()
    };
    let (s, acked) = run(config, WalOptions::default());
    let n = THREADS * PER_THREAD;
    assert_eq!(acked.len(), n);
    let lsns: Vec<u64> = acked.iter().map(|a| a.0).collect();
    assert_eq!(
        lsns,
        (1..=n as u64).collect::<Vec<_>>(),
        "distinct, consecutive LSNs"
    );
    let syncs = s.file_sync_count();
    // One for the new segment's header, then one per batch.
    assert!(
        syncs < n as u64 / 2,
        "{syncs} fsyncs for {n} records: no group commit"
    );
    assert_eq!(reopen(&s), acked);
}

#[test]
fn concurrent_appends_with_short_writes() {
    let config = FaultConfig {
        seed: 2,
        short_writes: true,
        ..FaultConfig::default()
    };
    let (s, acked) = run(
        config,
        WalOptions {
            segment_size_limit: 1000,
            ..WalOptions::default()
        },
    );
    assert_eq!(reopen(&s), acked);
}

#[test]
fn each_thread_sees_its_own_records_in_order() {
    let (_, acked) = run(FaultConfig::default(), WalOptions::default());
    for t in 0..THREADS {
        let prefix = format!("thread {t} ");
        let mine: Vec<&Vec<u8>> = acked
            .iter()
            .filter(|a| a.1.starts_with(prefix.as_bytes()))
            .map(|a| &a.1)
            .collect();
        let expect: Vec<Vec<u8>> = (0..PER_THREAD)
            .map(|i| format!("thread {t} record {i}").into_bytes())
            .collect();
        assert_eq!(mine, expect.iter().collect::<Vec<_>>());
    }
}

/// A channel that records what `on_acknowledged` reports, with the thread it ran on.
type Told = (Result<(), String>, std::thread::ThreadId);

fn told() -> (std::sync::mpsc::Sender<Told>, std::sync::mpsc::Receiver<Told>) {
    std::sync::mpsc::channel()
}

#[test]
fn on_acknowledged_runs_after_the_fsync_on_the_writer_thread_or_at_once_when_already_acknowledged() {
    let config = FaultConfig {
        seed: 2,
        sync_delay: Duration::from_millis(20),
        ..FaultConfig::default()
    };
    let s = FaultStorage::with_config(config);
    let (wal, _) = Wal::open(Arc::new(s.clone()), &PathBuf::from("/wal"), WalOptions::default()).unwrap();
    let me = std::thread::current().id();
    let (tx, rx) = told();
    let first = wal.submit(b"one".to_vec()).unwrap();
    let last = wal.submit(b"two".to_vec()).unwrap();
    for lsn in [last, first] {
        let tx = tx.clone();
        wal.on_acknowledged(
            lsn,
            Box::new(move |r| {
                let _ = tx.send((r.map_err(|e| e.to_string()), std::thread::current().id()));
            }),
        );
    }
    // Neither is told before its record's fsync (20 ms) ends.
    assert!(rx.recv_timeout(Duration::from_millis(5)).is_err());
    for _ in 0..2 {
        let (result, thread) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(result, Ok(()));
        assert_ne!(thread, me, "run by the log's writer thread");
    }
    assert!(wal.durable_lsn() >= last);
    // Already acknowledged: run at once, on the caller's thread.
    let (tx2, rx2) = told();
    wal.on_acknowledged(
        first,
        Box::new(move |r| {
            let _ = tx2.send((r.map_err(|e| e.to_string()), std::thread::current().id()));
        }),
    );
    assert_eq!(rx2.try_recv().unwrap(), (Ok(()), me));
}

#[test]
fn on_acknowledged_reports_a_failed_fsync_and_a_close() {
    let s = FaultStorage::with_config(FaultConfig {
        seed: 3,
        ..FaultConfig::default()
    });
    let (wal, _) = Wal::open(Arc::new(s.clone()), &PathBuf::from("/wal"), WalOptions::default()).unwrap();
    s.set_fail_syncs(true);
    let (tx, rx) = told();
    let lsn = wal.submit(b"lost".to_vec()).unwrap();
    let sent = tx.clone();
    wal.on_acknowledged(
        lsn,
        Box::new(move |r| {
            let _ = sent.send((r.map_err(|e| e.to_string()), std::thread::current().id()));
        }),
    );
    let (result, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        result.is_err_and(|e| e.contains("stopped")),
        "a failed fsync is no acknowledgement"
    );
    // After the failure: told at once.
    let sent = tx.clone();
    wal.on_acknowledged(
        lsn + 1,
        Box::new(move |r| {
            let _ = sent.send((r.map_err(|e| e.to_string()), std::thread::current().id()));
        }),
    );
    assert!(rx.try_recv().unwrap().0.is_err());

    // A record never submitted before the log closes: told that it closed.
    let s = FaultStorage::with_config(FaultConfig::default());
    let (wal, _) = Wal::open(Arc::new(s.clone()), &PathBuf::from("/wal"), WalOptions::default()).unwrap();
    let next = wal.next_lsn();
    wal.on_acknowledged(
        next,
        Box::new(move |r| {
            let _ = tx.send((r.map_err(|e| e.to_string()), std::thread::current().id()));
        }),
    );
    wal.close().unwrap();
    let (result, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(result.is_err_and(|e| e.contains("closed")));
}
