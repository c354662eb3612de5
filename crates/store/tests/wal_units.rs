//! Commit units: the records of one write that [`Wal::submit_batch`] marks as continuing
//! are kept all or none by recovery, whatever octet a crash stops the write at; a unit is
//! never split between segments; a log whose last segment is of format 1 is read, and new
//! records go to a new segment.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{is_torn_frame, wal_records as all};

use larch_store::storage::{FaultStorage, Storage};
use larch_store::wal::{
    encode_header, record_crc_v1, recover, segment_name, Corruption, LogRecord, SyncPolicy, Wal, WalError,
    WalOptions, RECORD_HEADER_LEN,
};

fn dir() -> PathBuf {
    PathBuf::from("/db/wal")
}

fn open(s: &FaultStorage, options: WalOptions) -> (Wal, larch_store::wal::RecoveryReport) {
    Wal::open(Arc::new(s.clone()), &dir(), options).unwrap()
}

fn payload(i: u64) -> Vec<u8> {
    format!("change {i} ").repeat(i as usize % 4 + 1).into_bytes()
}

/// One write of `n` records starting at LSN `first`: each continues but the last.
fn unit(first: u64, n: u64) -> Vec<LogRecord> {
    (first..first + n)
        .map(|i| LogRecord {
            payload: payload(i),
            continues: i + 1 < first + n,
        })
        .collect()
}

fn frames(records: &[LogRecord]) -> usize {
    records.iter().map(|r| RECORD_HEADER_LEN + r.payload.len()).sum()
}

fn expected(n: u64) -> Vec<(u64, Vec<u8>)> {
    (1..=n).map(|i| (i, payload(i))).collect()
}

/// Units of 1, 3 and 2 records fsynced, then a unit of `last` records written but not
/// fsynced (`sync = none`), and a crash keeping `keep` octets of that write; returns the
/// storage, the last unit's octets and the offset where it starts.
fn torn_unit(last: u64, keep: usize) -> (FaultStorage, usize, usize) {
    let s = FaultStorage::new(3);
    let unsynced = WalOptions {
        sync: SyncPolicy::None,
        ..WalOptions::default()
    };
    let (wal, _) = open(&s, unsynced);
    let mut lsn = 1;
    for n in [1, 3, 2] {
        let (_, end) = wal.submit_batch(unit(lsn, n)).unwrap().unwrap();
        wal.wait_for(end).unwrap();
        lsn = end + 1;
    }
    assert_eq!(wal.sync().unwrap(), 6);
    let good_end = s.written_len(&dir().join(segment_name(1))).unwrap();
    let torn = unit(7, last);
    let octets = frames(&torn);
    let (_, end) = wal.submit_batch(torn).unwrap().unwrap();
    wal.wait_for(end).unwrap();
    assert_eq!(wal.durable_lsn(), 6, "the last unit is not fsynced");
    s.crash_keeping(keep);
    drop(wal);
    (s, octets, good_end)
}

#[test]
fn a_unit_torn_at_any_octet_is_cut_whole() {
    let last = 4;
    let (_, octets, _) = torn_unit(last, 0);
    let segment = dir().join(segment_name(1));
    for keep in 0..octets {
        let (s, _, good_end) = torn_unit(last, keep);
        let visible_before = s.read(&segment).unwrap().len();
        assert!(visible_before > good_end + keep, "the segment reserved space");
        let (wal, report) = open(&s, WalOptions::default());
        assert_eq!((report.records, report.last_lsn), (6, Some(6)), "keep {keep}");
        assert_eq!(report.next_lsn, Some(7));
        match &report.cut {
            None => assert_eq!(keep, 0, "a torn tail must be reported"),
            Some(cut) => {
                assert_eq!(cut.offset as usize, good_end, "keep {keep}");
                assert_eq!(cut.discarded as usize, visible_before - cut.offset as usize);
                // A cut inside the unit's first record is an ordinary torn record (it runs
                // on into the segment's reserved zeros, so its checksum fails); once a
                // record of the unit is whole, the cut goes back to the unit's start.
                let first_frame = RECORD_HEADER_LEN + payload(7).len();
                if keep < first_frame {
                    assert!(is_torn_frame(cut.reason), "keep {keep}: {:?}", cut.reason);
                } else {
                    assert_eq!(cut.reason, Corruption::UnfinishedUnit, "keep {keep}");
                }
            }
        }
        assert_eq!(
            s.read(&segment).unwrap().len(),
            good_end,
            "cut and zeros truncated"
        );
        assert_eq!(all(&wal), expected(6), "keep {keep}");
        assert_eq!(wal.append(b"after").unwrap(), 7, "LSNs continue after the cut");
    }
    let (s, _, _) = torn_unit(last, octets);
    let (wal, report) = open(&s, WalOptions::default());
    assert_eq!(
        (report.records, report.cut),
        (10, None),
        "a whole unit survives whole"
    );
    assert_eq!(all(&wal), expected(10));
}

#[test]
fn the_last_record_of_a_call_always_ends_its_unit() {
    let s = FaultStorage::new(4);
    let (wal, _) = open(&s, WalOptions::default());
    let mut records = unit(1, 3);
    records.last_mut().unwrap().continues = true;
    let (_, end) = wal.submit_batch(records).unwrap().unwrap();
    wal.wait_for(end).unwrap();
    wal.close().unwrap();
    s.crash();
    let (wal, report) = open(&s, WalOptions::default());
    assert_eq!((report.records, report.cut), (3, None));
    assert_eq!(all(&wal), expected(3));
}

#[test]
fn a_unit_is_never_split_between_segments() {
    let s = FaultStorage::new(5);
    let limit = 600;
    let options = WalOptions {
        segment_size_limit: limit,
        ..WalOptions::default()
    };
    let (wal, _) = open(&s, options.clone());
    // Units of 1 to 5 records; one larger than a segment gets a segment of its own.
    let mut lsn = 1;
    let mut units = Vec::new();
    for n in [2, 5, 1, 4, 3, 5, 2, 20, 1, 3] {
        let (_, end) = wal.submit_batch(unit(lsn, n)).unwrap().unwrap();
        wal.wait_for(end).unwrap();
        units.push((lsn, end));
        lsn = end + 1;
    }
    wal.close().unwrap();
    let names = s.list(&dir()).unwrap();
    assert!(names.len() > 3, "the log rolled: {names:?}");
    for name in &names {
        let first = larch_store::wal::parse_segment_name(name).unwrap();
        assert!(
            units.iter().any(|&(start, _)| start == first),
            "segment {name} starts at a unit's first record"
        );
    }
    let (wal, report) = open(&s, options);
    assert_eq!((report.records, report.cut), (lsn - 1, None));
    assert_eq!(all(&wal), expected(lsn - 1));
}

/// A segment that ends inside a unit, followed by another: damage, not a torn write.
#[test]
fn an_unfinished_unit_in_a_finished_segment_is_an_error() {
    let s = FaultStorage::new(6);
    let options = WalOptions {
        segment_size_limit: 300,
        ..WalOptions::default()
    };
    let (wal, _) = open(&s, options.clone());
    for first in [1, 4, 7] {
        let (_, end) = wal.submit_batch(unit(first, 3)).unwrap().unwrap();
        wal.wait_for(end).unwrap();
    }
    wal.close().unwrap();
    let first_segment = dir().join(segment_name(1));
    let data = s.read(&first_segment).unwrap();
    // Drop the first segment's last record: the unit before it is unfinished.
    let last_frame = RECORD_HEADER_LEN + payload(3).len();
    let shortened = &data[..data.len() - last_frame];
    s.truncate(&first_segment, shortened.len() as u64).unwrap();
    // Recovery reads the first segment before it compares the next one's name.
    let err = recover(&s, &dir()).unwrap_err();
    match err {
        WalError::CorruptRecord {
            path,
            offset,
            problem,
        } => {
            assert_eq!(path, first_segment);
            assert_eq!(problem, Corruption::UnfinishedUnit);
            // The unfinished unit's first record, which is whole.
            assert!((offset as usize) < shortened.len(), "{offset}");
        }
        other => panic!("{other}"),
    }
}

/// Format 1 segments (no units) are read as they are; new records start a new segment.
#[test]
fn a_format_1_log_is_read_and_continued_in_a_new_segment() {
    let s = FaultStorage::new(7);
    s.create_dir_all(&dir()).unwrap();
    let mut data = Vec::new();
    encode_header(1, &mut data);
    data[8] = 1;
    let crc = crc32c::crc32c(&data[..20]).to_le_bytes();
    data[20..24].copy_from_slice(&crc);
    for lsn in 1..=3u64 {
        let p = payload(lsn);
        data.extend_from_slice(&(p.len() as u32).to_le_bytes());
        data.extend_from_slice(&record_crc_v1(lsn, &p).to_le_bytes());
        data.extend_from_slice(&lsn.to_le_bytes());
        data.extend_from_slice(&p);
    }
    let old = dir().join(segment_name(1));
    let mut f = s.open_append(&old).unwrap();
    f.write_all(&data).unwrap();
    f.sync().unwrap();
    drop(f);
    let (wal, report) = open(&s, WalOptions::default());
    assert_eq!((report.records, report.cut), (3, None));
    let (_, end) = wal.submit_batch(unit(4, 2)).unwrap().unwrap();
    wal.wait_for(end).unwrap();
    assert_eq!(all(&wal), expected(5));
    wal.close().unwrap();
    assert_eq!(
        s.read(&old).unwrap(),
        data,
        "the format-1 segment is left as it was"
    );
    let mut names = s.list(&dir()).unwrap();
    names.sort();
    assert_eq!(names, [segment_name(1), segment_name(4)]);
    let (wal, report) = open(&s, WalOptions::default());
    assert_eq!((report.records, report.cut), (5, None));
    assert_eq!(all(&wal), expected(5));
}
