//! Starting a cluster from a single server's data ([`larch_cluster::existing_data`]): the
//! bootstrapping node converts it, the empty members are sent its snapshot, and the
//! cluster goes on from there; a crash between the conversion's steps leaves a directory
//! that is converted again; `larch import`'s output (entries at LSN 0) and a cluster
//! node's backup restored start a cluster too; a node that does not bootstrap refuses such
//! data.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{add, apply, content, member, open_store, store_options, timing, write, Cluster, Op, SUFFIX};
use larch_cluster::existing_data::{prepare, Prepared};
use larch_cluster::{ClusterError, Member};
use larch_store::import::{import_ldif, ImportOptions};
use larch_store::storage::{FaultStorage, Storage};

const STATE_DIR: &str = "/data/cluster";

/// The three first members.
fn members() -> BTreeMap<u64, Member> {
    (1..=3).map(|id| (id, member(id))).collect()
}

/// How far a single server's conversion got before the crash.
#[derive(Debug, Clone, Copy)]
enum Crash {
    /// Killed while running: its last writes are in the log only.
    WhileServing,
    /// After the conversion's step 1: a snapshot of the whole version.
    AfterSnapshot,
    /// After step 2 as well: the log started again after the snapshot.
    AfterLogRestart,
}

/// A single server on new storage with the suffix and `n` entries, the last ones in its
/// log only, killed as `crash` says.
fn single_server(seed: u64, n: usize, crash: Crash) -> FaultStorage {
    let storage = FaultStorage::new(seed);
    let store = open_store(&storage, false);
    let suffix = Op::Add {
        dn: SUFFIX.into(),
        value: "top".into(),
    };
    apply(&store, suffix).unwrap().unwrap();
    for i in 0..n {
        apply(&store, add(&format!("e{i}"), "single")).unwrap().unwrap();
        if i == n / 2 {
            store.snapshot_now().unwrap();
        }
    }
    match crash {
        Crash::WhileServing => {}
        Crash::AfterSnapshot => {
            store.snapshot_now().unwrap();
        }
        Crash::AfterLogRestart => {
            store.snapshot_now().unwrap();
            store.wal().restart_at(store.current().lsn() + 1).unwrap();
        }
    }
    store.close(false).unwrap();
    drop(store);
    storage.crash();
    storage
}

/// Converts `storage` as node 1 bootstrapping the three members would.
fn convert(storage: &FaultStorage) -> Result<Prepared, ClusterError> {
    prepare(
        &store_options(storage, true),
        Path::new(STATE_DIR),
        1,
        Some(&members()),
    )
}

/// Node 1 on `converted`, nodes 2 and 3 empty.
async fn cluster_on(converted: FaultStorage, seed: u64) -> Cluster {
    let storages = BTreeMap::from([
        (1, converted),
        (2, FaultStorage::new(seed ^ 2)),
        (3, FaultStorage::new(seed ^ 3)),
    ]);
    Cluster::start_on(storages, seed, timing()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_single_servers_data_starts_a_cluster_that_every_node_holds() {
    let storage = single_server(21, 40, Crash::WhileServing);
    let single = content(&open_store(&storage, false).current());
    storage.crash();
    assert_eq!(single.len(), 41);
    let Prepared::Converted { lsn, entries } = convert(&storage).unwrap() else {
        panic!("not converted");
    };
    assert_eq!((lsn, entries), (41, 41));
    // Converted once: a second start finds a cluster node's data.
    assert_eq!(convert(&storage).unwrap(), Prepared::Nothing);

    let mut cluster = cluster_on(storage, 21).await;
    assert_eq!(cluster.leader(Duration::from_secs(5)).await, 1);
    assert_eq!(cluster.converged(Duration::from_secs(20)).await, single);

    // New writes are taken and reach every node.
    let store = cluster.nodes[&1].store.clone();
    for i in 0..5 {
        write(&store, add(&format!("c{i}"), "cluster"))
            .await
            .unwrap()
            .unwrap();
    }
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert_eq!(state.len(), 46);

    // The converted node starts again on its data (and is not converted again).
    cluster.kill(1).await;
    assert_eq!(convert(&cluster.down[&1]).unwrap(), Prepared::Nothing);
    cluster.restart(1).await;
    assert_eq!(cluster.converged(Duration::from_secs(20)).await, state);
    let leader = cluster.leader(Duration::from_secs(10)).await;
    let store = cluster.nodes[&leader].store.clone();
    write(&store, add("after-restart", "cluster"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cluster.converged(Duration::from_secs(20)).await.len(), 47);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_between_the_conversions_steps_still_starts() {
    for (seed, crash) in [(31, Crash::AfterSnapshot), (32, Crash::AfterLogRestart)] {
        let storage = single_server(seed, 20, crash);
        let single = content(&open_store(&storage, false).current());
        storage.crash();
        assert_eq!(single.len(), 21, "{crash:?}");
        assert!(
            matches!(convert(&storage), Ok(Prepared::Converted { lsn: 21, .. })),
            "{crash:?}"
        );
        let cluster = cluster_on(storage, seed).await;
        assert_eq!(
            cluster.converged(Duration::from_secs(20)).await,
            single,
            "{crash:?}"
        );
        let store = cluster.nodes[&1].store.clone();
        write(&store, add("new", "cluster")).await.unwrap().unwrap();
        assert_eq!(
            cluster.converged(Duration::from_secs(20)).await.len(),
            22,
            "{crash:?}"
        );
        cluster.stop().await;
    }
}

#[test]
fn a_node_that_does_not_bootstrap_refuses_a_single_servers_data() {
    let storage = single_server(41, 5, Crash::WhileServing);
    let refused = prepare(&store_options(&storage, true), Path::new(STATE_DIR), 2, None);
    let Err(ClusterError::ExistingData(why)) = refused else {
        panic!("not refused: {refused:?}");
    };
    assert!(why.contains("only the node that bootstraps the cluster"), "{why}");
    // Nothing was changed: the single server opens with every entry.
    assert_eq!(content(&open_store(&storage, false).current()).len(), 6);
}

#[test]
fn an_empty_directory_is_left_alone() {
    let storage = FaultStorage::new(51);
    assert_eq!(convert(&storage).unwrap(), Prepared::Nothing);
    let options = store_options(&storage, true);
    assert_eq!(
        prepare(&options, Path::new(STATE_DIR), 2, None).unwrap(),
        Prepared::Nothing
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_output_of_an_import_starts_a_cluster() {
    let storage = FaultStorage::new(61);
    let mut ldif = format!("dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: example\ndc: example\ndescription: top\n\n");
    for i in 0..10 {
        ldif.push_str(&format!(
            "dn: cn=i{i},{SUFFIX}\nobjectClass: applicationProcess\ncn: i{i}\ndescription: imported\n\n"
        ));
    }
    let options = ImportOptions {
        dir: "/data".into(),
        storage: std::sync::Arc::new(storage.clone()),
        schema: common::schema(),
        threads: 1,
        naming_contexts: Vec::new(),
        hook: None,
        allow_file_urls: false,
    };
    import_ldif(&options, ldif.as_bytes(), |_| {}).unwrap();
    let imported = content(&open_store(&storage, false).current());
    assert_eq!(imported.len(), 11);
    // Its entries are at LSN 0; the cluster takes them as LSN 1.
    assert_eq!(
        convert(&storage).unwrap(),
        Prepared::Converted { lsn: 1, entries: 11 }
    );
    let cluster = cluster_on(storage, 61).await;
    assert_eq!(cluster.converged(Duration::from_secs(20)).await, imported);
    let store = cluster.nodes[&1].store.clone();
    write(&store, add("new", "cluster")).await.unwrap().unwrap();
    assert_eq!(cluster.converged(Duration::from_secs(20)).await.len(), 12);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_nodes_backup_restored_starts_a_new_cluster() {
    let old = Cluster::start(3, 71).await;
    let leader = old.leader(Duration::from_secs(5)).await;
    let store = old.nodes[&leader].store.clone();
    common::add_suffix(&store).await;
    for i in 0..20 {
        write(&store, add(&format!("o{i}"), "old"))
            .await
            .unwrap()
            .unwrap();
    }
    let state = old.converged(Duration::from_secs(20)).await;
    let restored = FaultStorage::new(72);
    let (storage, node_store) = (old.nodes[&leader].storage.clone(), store.clone());
    let target = restored.clone();
    tokio::task::spawn_blocking(move || {
        node_store
            .backup(Path::new("/backup"), &larch_store::BackupOptions::default())
            .unwrap();
        // The backup's files, copied to the new machine's disk, restored there.
        for dir in ["/backup", "/backup/snapshots", "/backup/wal"] {
            let dir = Path::new(dir);
            target.create_dir_all(dir).unwrap();
            for name in storage.list(dir).unwrap_or_default() {
                let path = dir.join(name);
                let mut file = target.open_append(&path).unwrap();
                file.write_all(&storage.read(&path).unwrap()).unwrap();
                file.sync().unwrap();
            }
        }
        larch_store::backup::restore(&target, Path::new("/backup"), Path::new("/data")).unwrap();
    })
    .await
    .unwrap();
    old.stop().await;

    assert!(matches!(convert(&restored), Ok(Prepared::Converted { .. })));
    let cluster = cluster_on(restored, 73).await;
    assert_eq!(cluster.converged(Duration::from_secs(20)).await, state);
    let store = cluster.nodes[&1].store.clone();
    write(&store, add("new", "cluster")).await.unwrap().unwrap();
    assert_eq!(cluster.converged(Duration::from_secs(20)).await.len(), 22);
    cluster.stop().await;
}
