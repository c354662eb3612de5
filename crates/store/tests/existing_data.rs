//! A single server's data directory told from a cluster node's
//! (`larch_store::consensus::existing::inspect`) and converted into one
//! (`Store::convert_to_replicated`): the converted directory opens as a cluster node's at
//! the same LSN with the consensus state given and an empty log after it, and a directory
//! served by a single server again after that counts as a single server's once more.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::schema;
use larch_store::consensus::existing::{inspect, DataKind};
use larch_store::storage::FaultStorage;
use larch_store::{Store, StoreOptions};

fn data() -> PathBuf {
    PathBuf::from("/data")
}

fn open(storage: &FaultStorage, replicated: bool) -> Store {
    let mut o = StoreOptions::new(data(), schema());
    o.storage = Arc::new(storage.clone());
    o.threads = 1;
    o.snapshot_interval = None;
    o.snapshot_after_records = None;
    o.replicated = replicated;
    Store::open(o).unwrap().0
}

/// Adds the suffix (when the store is empty) or an entry below it.
fn add_one(store: &Store) {
    let version = store.current();
    let dn = if version.is_empty() {
        "dc=example,dc=com".to_string()
    } else {
        format!("cn=e{},dc=example,dc=com", version.next_id())
    };
    let e = common::entry(&dn);
    let suffix = version.is_empty();
    store
        .write(move |txn| txn.add(&e.dn, &e.norm_dn, &e.to_stored(), suffix).map(drop))
        .unwrap()
        .unwrap();
}

#[test]
fn a_single_servers_data_is_told_apart_converted_and_told_apart_again() {
    let storage = FaultStorage::new(1);
    assert_eq!(inspect(&storage, &data()).unwrap(), DataKind::Empty);

    // A single server: a snapshot at LSN 3, records 4 to 6 in its log only.
    let store = open(&storage, false);
    for i in 0..6 {
        add_one(&store);
        if i == 2 {
            store.snapshot_now().unwrap();
        }
    }
    store.close(false).unwrap();
    drop(store);
    storage.crash();
    assert_eq!(
        inspect(&storage, &data()).unwrap(),
        DataKind::SingleServer { lsn: 3 }
    );

    // Converted: the log replayed, the snapshot at 6 carries the consensus state.
    let store = open(&storage, false);
    let lsn = store.convert_to_replicated(|lsn| vec![7, lsn as u8]).unwrap();
    assert_eq!(lsn, 6);
    store.close(false).unwrap();
    drop(store);
    storage.crash();
    assert_eq!(inspect(&storage, &data()).unwrap(), DataKind::Replicated);
    let node = open(&storage, true);
    assert_eq!((node.current().lsn(), node.current().len()), (6, 6));
    assert_eq!(node.wal().next_lsn(), 7);
    let (snapshot, _) = node.newest_replicated_snapshot().unwrap().unwrap();
    assert_eq!((snapshot.lsn, snapshot.consensus), (6, vec![7, 6]));
    assert!(node.convert_to_replicated(|_| Vec::new()).is_err());
    node.close(false).unwrap();
    drop(node);

    // Served by a single server again, its log holds a `Change`: a single server's.
    let store = open(&storage, false);
    assert_eq!(store.current().len(), 6);
    add_one(&store);
    store.close(false).unwrap();
    drop(store);
    assert_eq!(
        inspect(&storage, &data()).unwrap(),
        DataKind::SingleServer { lsn: 6 }
    );
}
