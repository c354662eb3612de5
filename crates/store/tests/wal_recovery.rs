//! Recovery: torn tails are cut at the last good record and reported, corruption in a
//! finished segment is an error naming file and offset, segments roll and are removed.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::is_torn_frame;
use larch_store::storage::{FaultStorage, Storage};
use larch_store::wal::{
    recover, segment_name, Corruption, Record, SyncPolicy, Wal, WalError, WalOptions, RECORD_HEADER_LEN,
    SEGMENT_HEADER_LEN,
};

fn dir() -> PathBuf {
    PathBuf::from("/db/wal")
}

fn open(s: &FaultStorage, options: WalOptions) -> (Wal, larch_store::wal::RecoveryReport) {
    Wal::open(Arc::new(s.clone()), &dir(), options).unwrap()
}

fn payload(i: u64) -> Vec<u8> {
    format!("record number {i} ")
        .repeat(i as usize % 5 + 1)
        .into_bytes()
}

fn all(wal: &Wal) -> Vec<Record> {
    wal.read_after(0).unwrap().collect::<Result<_, _>>().unwrap()
}

fn lsns_and_payloads(records: &[Record]) -> Vec<(u64, Vec<u8>)> {
    records.iter().map(|r| (r.lsn, r.payload.clone())).collect()
}

fn expected(n: u64) -> Vec<(u64, Vec<u8>)> {
    (1..=n).map(|i| (i, payload(i))).collect()
}

#[test]
fn records_come_back_after_reopen_and_read_after_skips() {
    let s = FaultStorage::new(1);
    let (wal, report) = open(&s, WalOptions::default());
    assert_eq!(report.records, 0);
    assert_eq!(report.cut, None);
    for i in 1..=10 {
        assert_eq!(wal.append(&payload(i)).unwrap(), i);
    }
    wal.close().unwrap();
    s.crash();
    let (wal, report) = open(&s, WalOptions::default());
    assert_eq!(
        (report.records, report.first_lsn, report.last_lsn),
        (10, Some(1), Some(10))
    );
    assert_eq!(report.next_lsn, Some(11));
    assert_eq!(report.cut, None);
    assert_eq!(lsns_and_payloads(&all(&wal)), expected(10));
    let tail: Vec<u64> = wal.read_after(7).unwrap().map(|r| r.unwrap().lsn).collect();
    assert_eq!(tail, [8, 9, 10]);
    assert_eq!(wal.append(b"next").unwrap(), 11);
}

/// Writes `n` records and fsyncs them, then a last one that is written but not fsynced
/// (`sync = none`), and crashes keeping `keep` octets of that write; returns the storage,
/// the last record's frame size and the offset where it starts (the end of the good
/// records). (A failed fsync would not do: the writer then takes
/// the failed write out of the log itself; `tests/disk_faults.rs`.)
fn torn_log(n: u64, keep: usize) -> (FaultStorage, usize, usize) {
    let s = FaultStorage::new(2);
    let unsynced = WalOptions {
        sync: SyncPolicy::None,
        ..WalOptions::default()
    };
    let (wal, _) = open(&s, unsynced);
    for i in 1..=n {
        wal.append(&payload(i)).unwrap();
    }
    assert_eq!(wal.sync().unwrap(), n);
    let good_end = s.written_len(&dir().join(segment_name(1))).unwrap();
    let last = payload(n + 1);
    assert_eq!(wal.append(&last).unwrap(), n + 1);
    assert_eq!(wal.durable_lsn(), n, "the last record is not fsynced");
    s.crash_keeping(keep);
    drop(wal);
    (s, RECORD_HEADER_LEN + last.len(), good_end)
}

#[test]
fn a_torn_last_write_is_cut_at_every_offset() {
    let n = 6;
    let (_, frame, _) = torn_log(n, 0);
    let segment = dir().join(segment_name(1));
    for keep in 0..frame {
        let (s, _, good_end) = torn_log(n, keep);
        // The file with the segment's reserved zeros after the torn write.
        let visible_before = s.read(&segment).unwrap().len();
        assert!(visible_before > good_end + keep, "the segment reserved space");
        let (wal, report) = open(&s, WalOptions::default());
        assert_eq!(report.records, n, "keep {keep}");
        assert_eq!(report.last_lsn, Some(n));
        match &report.cut {
            None => assert_eq!(keep, 0, "a torn tail must be reported"),
            Some(cut) => {
                assert_eq!(cut.path, segment);
                assert_eq!(cut.offset as usize, good_end);
                assert_eq!(cut.discarded as usize, visible_before - cut.offset as usize);
                assert!(is_torn_frame(cut.reason), "keep {keep}: {:?}", cut.reason);
            }
        }
        assert_eq!(
            s.read(&segment).unwrap().len(),
            good_end,
            "the tail and the reserved zeros are truncated on disk"
        );
        assert_eq!(lsns_and_payloads(&all(&wal)), expected(n));
        assert_eq!(
            wal.append(b"after").unwrap(),
            n + 1,
            "LSNs continue after the cut"
        );
    }
    // The whole unacknowledged write surviving is allowed: it is then a valid record.
    let (s, _, _) = torn_log(n, frame);
    let (_, report) = open(&s, WalOptions::default());
    assert_eq!((report.records, report.cut), (n + 1, None));
}

fn small_segments() -> WalOptions {
    WalOptions {
        segment_size_limit: 200,
        ..WalOptions::default()
    }
}

#[test]
fn segments_roll_at_the_size_limit_and_read_back_in_order() {
    let s = FaultStorage::new(3);
    let (wal, _) = open(&s, small_segments());
    for i in 1..=40 {
        wal.append(&payload(i)).unwrap();
    }
    let names = s.list(&dir()).unwrap();
    assert!(names.len() > 5, "{names:?}");
    for name in &names {
        let data = s.read(&dir().join(name)).unwrap();
        assert!(data.len() <= 200, "{name}: {} octets", data.len());
        assert!(data.len() > SEGMENT_HEADER_LEN, "{name} holds records");
    }
    wal.close().unwrap();
    s.crash();
    let (wal, report) = open(&s, small_segments());
    assert_eq!(report.segments.len(), names.len());
    assert_eq!(report.records, 40);
    assert_eq!(lsns_and_payloads(&all(&wal)), expected(40));
    // Segment names are their first LSN.
    let firsts: Vec<u64> = names
        .iter()
        .map(|n| larch_store::wal::parse_segment_name(n).unwrap())
        .collect();
    assert_eq!(firsts[0], 1);
    assert!(firsts.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_record_larger_than_a_segment_gets_its_own_segment() {
    let s = FaultStorage::new(3);
    let (wal, _) = open(&s, small_segments());
    wal.append(b"small").unwrap();
    wal.append(&[7; 1000]).unwrap();
    wal.append(b"small again").unwrap();
    assert_eq!(s.list(&dir()).unwrap().len(), 3);
    drop(wal);
    let (wal, report) = open(&s, small_segments());
    assert_eq!(report.records, 3);
    assert_eq!(all(&wal)[1].payload, vec![7; 1000]);
}

#[test]
fn crc_corruption_in_the_tail_is_cut_and_reported() {
    let s = FaultStorage::new(4);
    let (wal, _) = open(&s, WalOptions::default());
    let mut offsets = vec![];
    for i in 1..=5 {
        offsets.push(s.written_len(&dir().join(segment_name(1))).unwrap());
        wal.append(&payload(i)).unwrap();
    }
    drop(wal);
    let path = dir().join(segment_name(1));
    // Flip a payload octet of record 4: records 4 and 5 are the tail of the last segment.
    assert!(s.corrupt(&path, offsets[3] + RECORD_HEADER_LEN + 2, 0x40));
    let total = s.read(&path).unwrap().len();
    let (wal, report) = open(&s, WalOptions::default());
    let cut = report.cut.expect("reported");
    assert_eq!((cut.path, cut.offset as usize), (path.clone(), offsets[3]));
    assert_eq!(cut.discarded as usize, total - offsets[3]);
    assert_eq!(cut.reason, Corruption::Checksum);
    assert_eq!(report.records, 3);
    assert_eq!(lsns_and_payloads(&all(&wal)), expected(3));
}

#[test]
fn crc_corruption_in_a_finished_segment_is_an_error_naming_file_and_offset() {
    let s = FaultStorage::new(5);
    let (wal, _) = open(&s, small_segments());
    for i in 1..=20 {
        wal.append(&payload(i)).unwrap();
    }
    drop(wal);
    let names = s.list(&dir()).unwrap();
    assert!(names.len() >= 3);
    let victim = dir().join(&names[1]);
    let first_record = SEGMENT_HEADER_LEN;
    assert!(s.corrupt(&victim, first_record + RECORD_HEADER_LEN, 0x01));
    let before: Vec<Vec<u8>> = names.iter().map(|n| s.read(&dir().join(n)).unwrap()).collect();
    let err = Wal::open(Arc::new(s.clone()), &dir(), small_segments()).unwrap_err();
    match &err {
        WalError::CorruptRecord {
            path,
            offset,
            problem,
        } => {
            assert_eq!(path, &victim);
            assert_eq!(*offset as usize, first_record);
            assert_eq!(*problem, Corruption::Checksum);
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&names[1]) && msg.contains("offset 24"), "{msg}");
    let after: Vec<Vec<u8>> = names.iter().map(|n| s.read(&dir().join(n)).unwrap()).collect();
    assert_eq!(before, after, "nothing is cut when recovery refuses");
}

#[test]
fn a_missing_middle_segment_is_an_error() {
    let s = FaultStorage::new(6);
    let (wal, _) = open(&s, small_segments());
    for i in 1..=20 {
        wal.append(&payload(i)).unwrap();
    }
    drop(wal);
    let names = s.list(&dir()).unwrap();
    s.remove(&dir().join(&names[1])).unwrap();
    let err = recover(&s, &dir()).unwrap_err();
    assert!(
        matches!(err, WalError::LsnGap { ref path, .. } if path == &dir().join(&names[2])),
        "{err:?}"
    );
}

#[test]
fn a_bad_header_is_an_error_but_a_torn_one_is_removed() {
    let s = FaultStorage::new(7);
    let (wal, _) = open(&s, WalOptions::default());
    wal.append(b"a").unwrap();
    drop(wal);
    let path = dir().join(segment_name(1));
    assert!(s.corrupt(&path, 3, 0x01));
    assert!(matches!(
        recover(&s, &dir()),
        Err(WalError::BadHeader {
            problem: Corruption::BadMagic,
            ..
        })
    ));

    // A segment created just before a crash, its header torn.
    let s = FaultStorage::new(8);
    let (wal, _) = open(&s, WalOptions::default());
    wal.append(b"a").unwrap();
    drop(wal);
    let torn = dir().join(segment_name(2));
    let mut header = Vec::new();
    larch_store::wal::encode_header(2, &mut header);
    s.put_durable(&torn, &header[..10]);
    let (wal, report) = open(&s, WalOptions::default());
    let cut = report.cut.expect("reported");
    assert_eq!((cut.path, cut.offset, cut.discarded), (torn, 0, 10));
    assert_eq!(report.records, 1);
    assert_eq!(wal.append(b"b").unwrap(), 2);
    assert_eq!(all(&wal).len(), 2);
    assert_eq!(
        s.list(&dir()).unwrap(),
        [segment_name(1), segment_name(2)],
        "a fresh segment 2"
    );
    assert_eq!(
        s.read(&dir().join(segment_name(1))).unwrap().len(),
        SEGMENT_HEADER_LEN + RECORD_HEADER_LEN + 1
    );
}

#[test]
fn foreign_files_are_ignored_and_a_missing_directory_is_created() {
    let s = FaultStorage::new(9);
    s.put_durable(&dir().join("README"), b"not a segment");
    let (wal, report) = open(&s, WalOptions::default());
    assert_eq!(report.records, 0);
    wal.append(b"x").unwrap();
    drop(wal);
    assert_eq!(recover(&s, &dir()).unwrap().records, 1);
    assert_eq!(
        s.list(Path::new("/db/wal")).unwrap(),
        ["README", &segment_name(1)[..]]
    );
}

#[test]
fn first_lsn_applies_to_an_empty_log() {
    let s = FaultStorage::new(10);
    let options = WalOptions {
        first_lsn: 500,
        ..WalOptions::default()
    };
    let (wal, _) = open(&s, options.clone());
    assert_eq!(wal.append(b"x").unwrap(), 500);
    drop(wal);
    assert_eq!(s.list(&dir()).unwrap(), [segment_name(500)]);
    let (wal, report) = open(&s, options);
    assert_eq!(report.first_lsn, Some(500));
    assert_eq!(wal.append(b"y").unwrap(), 501);
}

#[test]
fn remove_segments_before_keeps_what_is_needed() {
    let s = FaultStorage::new(11);
    let (wal, _) = open(&s, small_segments());
    for i in 1..=30 {
        wal.append(&payload(i)).unwrap();
    }
    let names = s.list(&dir()).unwrap();
    let firsts: Vec<u64> = names
        .iter()
        .map(|n| larch_store::wal::parse_segment_name(n).unwrap())
        .collect();
    // A snapshot covering LSN 14: every record > 14 must stay readable.
    let removed = wal.remove_segments_before(15).unwrap();
    let expect_removed = firsts.windows(2).filter(|w| w[1] <= 15).count();
    assert!(expect_removed > 0);
    assert_eq!(removed, expect_removed);
    let after: Vec<u64> = wal.read_after(14).unwrap().map(|r| r.unwrap().lsn).collect();
    assert_eq!(after, (15..=30).collect::<Vec<_>>());
    // Never the current segment, even for a huge LSN.
    wal.remove_segments_before(u64::MAX).unwrap();
    assert_eq!(s.list(&dir()).unwrap().len(), 1);
    assert_eq!(wal.append(b"x").unwrap(), 31);
    drop(wal);
    s.crash();
    let (_, report) = open(&s, small_segments());
    assert_eq!(report.cut, None);
    assert_eq!(report.last_lsn, Some(31));
}

#[test]
fn sync_policy_none_loses_unsynced_records_only_until_sync() {
    let s = FaultStorage::new(12);
    let options = WalOptions {
        sync: SyncPolicy::None,
        ..WalOptions::default()
    };
    let (wal, _) = open(&s, options.clone());
    let syncs = s.file_sync_count();
    for i in 1..=5 {
        wal.append(&payload(i)).unwrap();
    }
    assert_eq!(s.file_sync_count(), syncs, "no fsync under None");
    assert_eq!(wal.durable_lsn(), 0);
    assert_eq!(wal.sync().unwrap(), 5);
    wal.append(b"lost").unwrap();
    s.crash();
    drop(wal);
    let (wal, report) = open(&s, options);
    assert_eq!(report.records, 5);
    assert_eq!(lsns_and_payloads(&all(&wal)), expected(5));
}

#[test]
fn sync_policy_batch_fsyncs_within_the_window() {
    let s = FaultStorage::new(13);
    let options = WalOptions {
        sync: SyncPolicy::Batch {
            window: std::time::Duration::from_millis(20),
        },
        ..WalOptions::default()
    };
    let (wal, _) = open(&s, options);
    wal.append(b"a").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while wal.durable_lsn() < 1 {
        assert!(std::time::Instant::now() < deadline, "never fsynced");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    s.crash();
    assert_eq!(recover(&s, &dir()).unwrap().records, 1);
}
