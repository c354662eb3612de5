//! The seed segments of the `wal_read` fuzz target (`fuzz/seeds/wal_read/`) are real
//! segments written by the WAL: this test checks them, and rewrites them when run with
//! `LARCH_WRITE_WAL_SEEDS=1`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use larch_store::storage::{FaultStorage, Storage};
use larch_store::wal::record::Change;
use larch_store::wal::{recover, segment_name, LogRecord, Wal, WalOptions};

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/wal_read")
}

/// Segment 1 of a log holding these payloads.
fn segment(payloads: &[Vec<u8>]) -> Vec<u8> {
    let s = FaultStorage::new(0);
    let dir = Path::new("/wal");
    let (wal, _) = Wal::open(Arc::new(s.clone()), dir, WalOptions::default()).unwrap();
    for p in payloads {
        wal.append(p).unwrap();
    }
    wal.close().unwrap();
    s.read(&dir.join(segment_name(1))).unwrap()
}

/// Segment 1 of a log holding one record, then these payloads as one commit unit.
fn unit_segment(payloads: &[Vec<u8>]) -> Vec<u8> {
    let s = FaultStorage::new(0);
    let dir = Path::new("/wal");
    let (wal, _) = Wal::open(Arc::new(s.clone()), dir, WalOptions::default()).unwrap();
    wal.append(b"before").unwrap();
    let records = payloads
        .iter()
        .map(|p| LogRecord {
            payload: p.clone(),
            continues: true,
        })
        .collect();
    let (_, last) = wal.submit_batch(records).unwrap().unwrap();
    wal.wait_for(last).unwrap();
    wal.close().unwrap();
    s.read(&dir.join(segment_name(1))).unwrap()
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let changes = [
        Change::Add {
            dn: "cn=a,dc=example,dc=com".into(),
            attributes_ber: vec![0x30, 0x00],
        },
        Change::Modify {
            dn: "cn=a,dc=example,dc=com".into(),
            attributes_ber: vec![0x30, 0x03, 0x04, 0x01, b'x'],
        },
        Change::ModifyDn {
            dn: "cn=a,dc=example,dc=com".into(),
            new_dn: "cn=b,dc=example,dc=com".into(),
            attributes_ber: vec![],
        },
        Change::Delete {
            dn: "cn=b,dc=example,dc=com".into(),
            attributes_ber: vec![],
        },
    ];
    let change_payloads: Vec<Vec<u8>> = changes.iter().map(Change::to_vec).collect();
    let changes_segment = segment(&change_payloads);
    let mut torn = changes_segment.clone();
    torn.truncate(torn.len() - 3);
    let unit = unit_segment(&change_payloads);
    let mut torn_unit = unit.clone();
    torn_unit.truncate(torn_unit.len() - 3);
    vec![
        ("empty-segment", segment(&[])),
        ("one-record", segment(&[b"hello".to_vec()])),
        ("changes", changes_segment),
        ("torn-tail", torn),
        ("empty-payloads", segment(&[vec![], vec![], vec![1]])),
        ("unit", unit),
        ("torn-unit", torn_unit),
    ]
}

#[test]
fn fuzz_seeds_are_current_and_recover() {
    let dir = seeds_dir();
    let write = std::env::var_os("LARCH_WRITE_WAL_SEEDS").is_some();
    for (name, bytes) in seeds() {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            on_disk, bytes,
            "{name} is stale: rerun with LARCH_WRITE_WAL_SEEDS=1"
        );
        let s = FaultStorage::new(0);
        s.put_durable(&Path::new("/wal").join(segment_name(1)), &bytes);
        let report = recover(&s, Path::new("/wal")).unwrap();
        let torn = name.starts_with("torn-");
        assert_eq!(report.cut.is_some(), torn, "{name}");
        if name == "torn-unit" {
            assert_eq!(report.records, 1, "the whole unit is cut");
        }
    }
}
