//! Cutting the log back ([`Wal::truncate_from`], for a replicated log whose uncommitted
//! tail a new leader replaces): whatever the segments and the cut, the log then holds
//! exactly the records before the cut, the next record gets the cut's LSN, and both
//! survive a crash and a reopen; and starting it again at a later LSN ([`Wal::restart_at`],
//! after a cluster node installed a snapshot).

use std::path::PathBuf;
use std::sync::Arc;

use larch_store::storage::FaultStorage;
use larch_store::wal::{Record, Wal, WalOptions};
use proptest::prelude::*;

fn dir() -> PathBuf {
    PathBuf::from("/db/wal")
}

fn open(s: &FaultStorage, limit: u64) -> Wal {
    let options = WalOptions {
        segment_size_limit: limit,
        ..WalOptions::default()
    };
    Wal::open(Arc::new(s.clone()), &dir(), options).unwrap().0
}

fn payload(i: u64, round: u8) -> Vec<u8> {
    format!("entry {i} of round {round} ")
        .repeat(i as usize % 3 + 1)
        .into_bytes()
}

fn all(wal: &Wal) -> Vec<(u64, Vec<u8>)> {
    wal.read_after(0)
        .unwrap()
        .map(|r| r.map(|Record { lsn, payload, .. }| (lsn, payload)).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_cut_keeps_what_precedes_it(
        written in 1u64..40,
        cut in 1u64..45,
        appended in 0u64..10,
        limit in prop::sample::select(vec![64u64, 200, 1000, 1 << 20]),
    ) {
        let s = FaultStorage::new(written);
        let wal = open(&s, limit);
        for i in 1..=written {
            prop_assert_eq!(wal.append(&payload(i, 0)).unwrap(), i);
        }
        wal.truncate_from(cut).unwrap();
        let kept = cut.min(written + 1) - 1;
        let mut expected: Vec<(u64, Vec<u8>)> = (1..=kept).map(|i| (i, payload(i, 0))).collect();
        prop_assert_eq!(all(&wal), expected.clone());
        prop_assert_eq!(wal.next_lsn(), kept + 1);
        for i in kept + 1..=kept + appended {
            prop_assert_eq!(wal.append(&payload(i, 1)).unwrap(), i);
            expected.push((i, payload(i, 1)));
        }
        prop_assert_eq!(all(&wal), expected.clone());
        // Everything was fsynced: a crash loses nothing of it, and nothing cut comes back.
        drop(wal);
        s.crash();
        let wal = open(&s, limit);
        prop_assert_eq!(all(&wal), expected.clone());
        prop_assert_eq!(wal.next_lsn(), kept + appended + 1);
    }
}

#[test]
fn a_cut_of_everything_starts_the_log_again_at_the_cut() {
    let s = FaultStorage::new(1);
    let wal = open(&s, 64);
    for i in 1..=5 {
        wal.append(&payload(i, 0)).unwrap();
    }
    wal.truncate_from(1).unwrap();
    assert!(all(&wal).is_empty());
    assert_eq!(wal.append(b"again").unwrap(), 1);
    assert_eq!(all(&wal), vec![(1, b"again".to_vec())]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// [`Wal::restart_at`] (a cluster node installed a snapshot covering more than its
    /// log): every record goes, the log goes on at the LSN given, and both survive a crash.
    #[test]
    fn a_restart_drops_every_record_and_goes_on_at_its_lsn(
        written in 0u64..30,
        next in 1u64..200,
        appended in 0u64..10,
        limit in prop::sample::select(vec![64u64, 200, 1 << 20]),
    ) {
        let s = FaultStorage::new(written ^ next);
        let wal = open(&s, limit);
        for i in 1..=written {
            prop_assert_eq!(wal.append(&payload(i, 0)).unwrap(), i);
        }
        wal.restart_at(next).unwrap();
        prop_assert!(all(&wal).is_empty());
        prop_assert_eq!(wal.next_lsn(), next);
        let expected: Vec<(u64, Vec<u8>)> = (next..next + appended).map(|i| (i, payload(i, 1))).collect();
        for (i, p) in &expected {
            prop_assert_eq!(wal.append(p).unwrap(), *i);
        }
        prop_assert_eq!(all(&wal), expected.clone());
        drop(wal);
        s.crash();
        let wal = open(&s, limit);
        prop_assert_eq!(all(&wal), expected.clone());
        prop_assert_eq!(wal.next_lsn(), next + appended);
    }
}
