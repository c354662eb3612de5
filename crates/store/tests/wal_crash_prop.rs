//! Property: whatever the record sizes, segment size and crash point, after a crash and
//! reopen the log holds exactly the acknowledged records, in order, plus at most the one
//! record that was in flight (its write may have reached the disk whole) — and any torn
//! remainder is reported as a cut.

use std::path::PathBuf;
use std::sync::Arc;

use larch_store::storage::{FaultConfig, FaultStorage};
use larch_store::wal::{Wal, WalOptions};
use proptest::prelude::*;

fn check(
    seed: u64,
    sizes: &[usize],
    crash_at: usize,
    segment_size_limit: u64,
    short_writes: bool,
) -> Result<(), TestCaseError> {
    let s = FaultStorage::with_config(FaultConfig {
        seed,
        torn_writes: true,
        short_writes,
        ..FaultConfig::default()
    });
    let dir = PathBuf::from("/wal");
    let options = WalOptions {
        segment_size_limit,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open(Arc::new(s.clone()), &dir, options.clone()).unwrap();
    let payload = |i: usize, size: usize| -> Vec<u8> { (0..size).map(|k| (i * 31 + k) as u8).collect() };
    let mut acked = Vec::new();
    let crash_at = crash_at.min(sizes.len());
    for (i, &size) in sizes.iter().enumerate().take(crash_at) {
        let p = payload(i, size);
        let lsn = wal.append(&p).unwrap();
        acked.push((lsn, p));
    }
    // The record in flight at the crash: written, its fsync fails, not acknowledged.
    let in_flight = sizes.get(crash_at).map(|&size| payload(crash_at, size));
    if let Some(p) = &in_flight {
        s.set_fail_syncs(true);
        prop_assert!(wal.append(p).is_err());
    }
    s.crash();
    drop(wal);

    let (wal, report) = Wal::open(Arc::new(s.clone()), &dir, options).unwrap();
    let got: Vec<(u64, Vec<u8>)> = wal
        .read_after(0)
        .unwrap()
        .map(|r| r.map(|r| (r.lsn, r.payload)).unwrap())
        .collect();
    prop_assert_eq!(report.records as usize, got.len());
    let n = acked.len();
    prop_assert!(
        got.len() == n || got.len() == n + 1,
        "{} records, {} acknowledged",
        got.len(),
        n
    );
    prop_assert_eq!(&got[..n], &acked[..]);
    if got.len() == n + 1 {
        prop_assert_eq!(Some(&got[n].1), in_flight.as_ref());
    }
    if let Some(cut) = &report.cut {
        prop_assert!(cut.discarded > 0 || cut.offset == 0);
    }
    let next = wal.append(b"after").unwrap();
    prop_assert_eq!(next, got.len() as u64 + 1);
    wal.close().unwrap();
    s.crash();

    // The log continues cleanly after the cut: nothing torn is left in the middle.
    let (wal, report) = Wal::open(Arc::new(s.clone()), &dir, WalOptions::default()).unwrap();
    prop_assert_eq!(&report.cut, &None);
    let again: Vec<(u64, Vec<u8>)> = wal
        .read_after(0)
        .unwrap()
        .map(|r| r.map(|r| (r.lsn, r.payload)).unwrap())
        .collect();
    prop_assert_eq!(&again[..got.len()], &got[..]);
    prop_assert_eq!(again.get(got.len()), Some(&(next, b"after".to_vec())));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("LARCH_WAL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn the_log_after_a_crash_is_the_acknowledged_prefix(
        seed in any::<u64>(),
        sizes in proptest::collection::vec(0usize..400, 0..30),
        crash_at in 0usize..32,
        segment_size_limit in prop_oneof![Just(64u64), 100u64..2000, Just(1u64 << 20)],
        short_writes in any::<bool>(),
    ) {
        check(seed, &sizes, crash_at, segment_size_limit, short_writes)?;
    }
}
