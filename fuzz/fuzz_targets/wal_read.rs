//! Feeds arbitrary octets to WAL recovery as the only segment of a log directory.
//! Properties checked: no panic; when recovery succeeds its report is consistent with the
//! file left behind (the cut offset is the new length, what remains is a prefix of the
//! input, nothing is cut without being reported), the reader yields exactly the reported
//! records with consecutive LSNs from 1, and a second recovery finds nothing to cut.
#![no_main]

use std::path::Path;

use larch_store::storage::{FaultStorage, Storage};
use larch_store::wal::{recover, segment_name, WalReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let storage = FaultStorage::new(0);
    let dir = Path::new("/wal");
    let path = dir.join(segment_name(1));
    storage.put_durable(&path, data);
    let Ok(report) = recover(&storage, dir) else {
        // Refused: nothing may have been changed.
        assert_eq!(storage.read(&path).ok().as_deref(), Some(data));
        return;
    };
    let left = storage.read(&path).ok();
    match &report.cut {
        Some(cut) => {
            assert_eq!(cut.path, path);
            assert_eq!(cut.offset + cut.discarded, data.len() as u64, "{cut:?}");
            if cut.offset == 0 {
                assert!(left.is_none(), "a segment cut at 0 is removed");
            } else {
                let left = left.expect("the cut segment remains");
                assert_eq!(left.len() as u64, cut.offset);
                assert_eq!(&data[..left.len()], &left[..]);
            }
        }
        None => assert_eq!(left.as_deref(), Some(data), "changed without a report"),
    }
    let records: Vec<_> = WalReader::open(&storage, dir, 0, u64::MAX)
        .expect("listable")
        .collect::<Result<_, _>>()
        .expect("a recovered log reads back cleanly");
    assert_eq!(records.len() as u64, report.records);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.lsn, i as u64 + 1);
    }
    assert_eq!(report.first_lsn, records.first().map(|r| r.lsn));
    assert_eq!(report.last_lsn, records.last().map(|r| r.lsn));
    let again = recover(&storage, dir).expect("recovery is idempotent");
    assert_eq!(again.cut, None);
    assert_eq!(again.records, report.records);
});
