//! The space a segment reserves ahead of its records: reads as zeros, is left behind by a
//! crash (not reported as damage), given back at a segment roll and at a clean close, and
//! really allocated on Linux.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{temp_dir, wal_records as all};
use larch_store::storage::{FaultStorage, FsStorage, Storage};
use larch_store::wal::{segment_name, Wal, WalOptions, SEGMENT_HEADER_LEN, SEGMENT_RESERVE_CHUNK};

fn payload(i: u64) -> Vec<u8> {
    format!("record {i} ").repeat(i as usize % 4 + 1).into_bytes()
}

fn expected(n: u64) -> Vec<(u64, Vec<u8>)> {
    (1..=n).map(|i| (i, payload(i))).collect()
}

/// What a killed process leaves: no close, no undo, the writer's file as it was.
fn kill(wal: Wal) {
    std::mem::forget(wal);
}

fn fault_dir() -> PathBuf {
    PathBuf::from("/db/wal")
}

/// Segments of 64 KiB reserve 64 KiB at a time.
fn small() -> WalOptions {
    WalOptions {
        segment_size_limit: 64 << 10,
        ..WalOptions::default()
    }
}

#[test]
fn a_crash_leaves_reserved_zeros_that_recovery_cuts_without_reporting_damage() {
    let s = FaultStorage::new(5);
    let segment = fault_dir().join(segment_name(1));
    let (wal, _) = Wal::open(Arc::new(s.clone()), &fault_dir(), small()).unwrap();
    for i in 1..=10 {
        wal.append(&payload(i)).unwrap();
    }
    let written = s.written_len(&segment).unwrap();
    let on_disk = s.read(&segment).unwrap();
    assert_eq!(on_disk.len(), 64 << 10, "one chunk reserved");
    assert!(on_disk[written..].iter().all(|&b| b == 0));
    s.crash();
    kill(wal);

    let (wal, report) = Wal::open(Arc::new(s.clone()), &fault_dir(), small()).unwrap();
    assert_eq!(report.cut, None, "reserved zeros are not a torn tail");
    assert_eq!((report.records, report.next_lsn), (10, Some(11)));
    assert_eq!(all(&wal), expected(10));
    // Writing goes on right after the last record, inside a new reservation.
    assert_eq!(wal.append(&payload(11)).unwrap(), 11);
    s.crash();
    kill(wal);
    let (wal, report) = Wal::open(Arc::new(s.clone()), &fault_dir(), small()).unwrap();
    assert_eq!((report.records, report.cut), (11, None));
    assert_eq!(all(&wal), expected(11));
}

#[test]
fn a_reader_of_the_live_segment_stops_at_its_reserved_zeros() {
    let s = FaultStorage::new(6);
    let (wal, _) = Wal::open(Arc::new(s.clone()), &fault_dir(), small()).unwrap();
    for i in 1..=5 {
        wal.append(&payload(i)).unwrap();
    }
    assert!(s.read(&fault_dir().join(segment_name(1))).unwrap().len() > 1000);
    assert_eq!(all(&wal), expected(5));
    let unbounded: Vec<u64> = larch_store::wal::WalReader::open(&s, &fault_dir(), 0, u64::MAX)
        .unwrap()
        .map(|r| r.unwrap().lsn)
        .collect();
    assert_eq!(unbounded, [1, 2, 3, 4, 5]);
}

#[test]
fn only_the_last_segment_keeps_reserved_space() {
    let s = FaultStorage::new(7);
    let options = WalOptions {
        segment_size_limit: 300,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open(Arc::new(s.clone()), &fault_dir(), options.clone()).unwrap();
    for i in 1..=40 {
        wal.append(&payload(i)).unwrap();
    }
    let names = s.list(&fault_dir()).unwrap();
    assert!(names.len() > 5, "{names:?}");
    let (last, finished) = names.split_last().unwrap();
    for name in finished {
        let path = fault_dir().join(name);
        assert_eq!(
            s.read(&path).unwrap().len(),
            s.written_len(&path).unwrap(),
            "{name} was given back its reserved space before the next segment started"
        );
    }
    let last = fault_dir().join(last);
    assert_eq!(s.read(&last).unwrap().len(), 300, "the last segment reserves");
    s.crash();
    kill(wal);
    let (wal, report) = Wal::open(Arc::new(s.clone()), &fault_dir(), options).unwrap();
    assert_eq!((report.records, report.cut), (40, None));
    assert_eq!(all(&wal), expected(40));
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

#[cfg(target_os = "linux")]
#[test]
fn on_linux_the_space_is_allocated_and_a_clean_close_gives_it_back() {
    let dir = temp_dir("wal-reserve");
    let storage: Arc<dyn Storage> = Arc::new(FsStorage);
    let segment = dir.join(segment_name(1));
    let (wal, _) = Wal::open(Arc::clone(&storage), &dir, WalOptions::default()).unwrap();
    for i in 1..=5 {
        wal.append(&payload(i)).unwrap();
    }
    assert_eq!(file_len(&segment), SEGMENT_RESERVE_CHUNK, "fallocate'd ahead");
    kill(wal);

    let (wal, report) = Wal::open(Arc::clone(&storage), &dir, WalOptions::default()).unwrap();
    assert_eq!((report.records, report.cut), (5, None));
    let records: u64 = (1..=5).map(|i| 16 + payload(i).len() as u64).sum();
    let exact = SEGMENT_HEADER_LEN as u64 + records;
    assert_eq!(file_len(&segment), exact, "recovery cut the zeros");
    assert_eq!(wal.append(&payload(6)).unwrap(), 6);
    assert_eq!(
        file_len(&segment),
        SEGMENT_RESERVE_CHUNK,
        "the next write reserved again"
    );
    wal.close().unwrap();
    assert_eq!(
        file_len(&segment),
        exact + 16 + payload(6).len() as u64,
        "a clean close leaves no zeros"
    );

    let (wal, report) = Wal::open(Arc::clone(&storage), &dir, WalOptions::default()).unwrap();
    assert_eq!((report.records, report.cut), (6, None));
    assert_eq!(all(&wal), expected(6));
    wal.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(target_os = "linux")]
#[test]
fn a_reserving_file_writes_after_its_octets_not_after_its_reserved_space() {
    let dir = temp_dir("reserving-file");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f");
    let mut f = FsStorage.open_append_reserving(&path, 4096).unwrap();
    f.write_all(b"0123456789").unwrap();
    assert_eq!(file_len(&path), 4096);
    f.write_all(&[7; 5000]).unwrap();
    assert_eq!(file_len(&path), 8192);
    f.sync().unwrap();
    let content = std::fs::read(&path).unwrap();
    assert_eq!(&content[..10], b"0123456789");
    assert!(content[10..5010].iter().all(|&b| b == 7));
    assert!(content[5010..].iter().all(|&b| b == 0));
    f.trim().unwrap();
    assert_eq!(file_len(&path), 5010);
    drop(f);
    let mut f = FsStorage.open_append_reserving(&path, 4096).unwrap();
    f.write_all(b"end").unwrap();
    assert_eq!(file_len(&path), 8192);
    f.trim().unwrap();
    assert_eq!(&std::fs::read(&path).unwrap()[5010..], b"end");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_segment_created_just_before_a_crash_is_removed_with_its_reserved_zeros() {
    let mut header = Vec::new();
    larch_store::wal::encode_header(2, &mut header);
    // Its reservation was made, its header torn or not written at all.
    let torn_header: Vec<u8> = header[..10].iter().copied().chain([0; 4096]).collect();
    for planted in [vec![0; 4096], torn_header] {
        let s = FaultStorage::new(8);
        let (wal, _) = Wal::open(Arc::new(s.clone()), &fault_dir(), small()).unwrap();
        wal.append(b"a").unwrap();
        wal.close().unwrap();
        let created = fault_dir().join(segment_name(2));
        s.put_durable(&created, &planted);
        let (wal, report) = Wal::open(Arc::new(s.clone()), &fault_dir(), small()).unwrap();
        let cut = report.cut.expect("reported");
        assert_eq!(
            (cut.path, cut.offset, cut.discarded),
            (created, 0, planted.len() as u64)
        );
        assert_eq!((report.records, report.next_lsn), (1, Some(2)));
        assert_eq!(wal.append(b"b").unwrap(), 2);
        assert_eq!(all(&wal), [(1, b"a".to_vec()), (2, b"b".to_vec())]);
    }
}

#[test]
fn a_bad_header_before_records_is_still_an_error() {
    let s = FaultStorage::new(9);
    let (wal, _) = Wal::open(Arc::new(s.clone()), &fault_dir(), small()).unwrap();
    wal.append(b"a").unwrap();
    wal.close().unwrap();
    let path = fault_dir().join(segment_name(1));
    let mut data = s.read(&path).unwrap();
    data[..10].fill(0);
    data.extend_from_slice(&[0; 4096]);
    s.put_durable(&path, &data);
    assert!(matches!(
        larch_store::wal::recover(&s, &fault_dir()),
        Err(larch_store::wal::WalError::BadHeader { .. })
    ));
}
