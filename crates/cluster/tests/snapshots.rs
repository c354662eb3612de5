//! Cluster snapshots: every node writes the store's snapshot with the consensus state in
//! its header and purges the log it covers; a node starts from its snapshot; a node too
//! far behind, or new, is sent the leader's snapshot file and follows the log after it.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{add, add_suffix, content, snapshot_timing, write, Cluster};
use larch_store::storage::{FaultStorage, Storage};
use larch_store::wal::parse_segment_name;
use larch_store::{FeedError, FeedStart};

/// A snapshot every 20 entries, 5 entries of log kept before it.
fn timing() -> larch_cluster::Timing {
    snapshot_timing(20, 5)
}

/// The LSNs of the snapshot files on `storage`.
fn snapshots(storage: &FaultStorage) -> Vec<u64> {
    storage
        .list(Path::new("/data/snapshots"))
        .unwrap()
        .iter()
        .filter_map(|n| larch_store::snapshot::parse_snapshot_name(n))
        .collect()
}

/// The first LSN of the oldest log segment on `storage`.
fn oldest_log_lsn(storage: &FaultStorage) -> u64 {
    storage
        .list(Path::new("/data/wal"))
        .unwrap()
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .min()
        .unwrap()
}

/// Waits until `check` holds, at most `within`.
async fn eventually(within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_snapshot_purge_their_log_and_start_again_from_the_snapshot() {
    let mut cluster = Cluster::start_timed(3, 11, timing()).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    for i in 0..150 {
        write(&store, add(&format!("s{i}"), "v")).await.unwrap().unwrap();
    }
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert_eq!(state.len(), 151);
    for node in cluster.nodes.values() {
        let storage = node.storage.clone();
        eventually(Duration::from_secs(10), "a snapshot and a purged log", || {
            !snapshots(&storage).is_empty() && oldest_log_lsn(&storage) > 1
        })
        .await;
        let newest = snapshots(&node.storage).into_iter().max().unwrap();
        assert!(newest >= 100, "node {}: newest snapshot at LSN {newest}", node.id);
        // The log kept starts at most a few entries (and one segment) before it.
        assert!(oldest_log_lsn(&node.storage) <= newest + 1, "node {}", node.id);
    }

    // Every node killed and started again: each loads its snapshot and applies the
    // committed log after it.
    for id in cluster.ids.clone() {
        cluster.kill(id).await;
    }
    for id in cluster.ids.clone() {
        cluster.restart(id).await;
    }
    for node in cluster.nodes.values() {
        assert!(
            node.store.current().lsn() >= 100,
            "node {} started from nothing",
            node.id
        );
    }
    assert_eq!(cluster.converged(Duration::from_secs(20)).await, state);
    let leader = cluster.leader(Duration::from_secs(10)).await;
    let store = cluster.nodes[&leader].store.clone();
    write(&store, add("after", "v")).await.unwrap().unwrap();
    assert_eq!(cluster.converged(Duration::from_secs(20)).await.len(), 152);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_behind_the_purged_log_is_sent_the_snapshot() {
    let mut cluster = Cluster::start_timed(3, 12, timing()).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    for i in 0..10 {
        write(&store, add(&format!("a{i}"), "v")).await.unwrap().unwrap();
    }
    cluster.converged(Duration::from_secs(20)).await;
    let behind = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    cluster.kill(behind).await;
    let had = {
        let storage = cluster.down[&behind].clone();
        storage.list(Path::new("/data/wal")).unwrap().len()
    };
    assert!(had > 0);
    for i in 10..150 {
        write(&store, add(&format!("a{i}"), "v")).await.unwrap().unwrap();
    }
    // The leader's log no longer holds what the stopped node lacks.
    let leader_storage = cluster.nodes[&leader].storage.clone();
    eventually(Duration::from_secs(10), "the leader's log purged", || {
        oldest_log_lsn(&leader_storage) > 20
    })
    .await;

    cluster.restart(behind).await;
    let node_store = cluster.nodes[&behind].store.clone();
    let mut feed = node_store.subscribe(FeedStart::Now).unwrap();
    let state = cluster.converged(Duration::from_secs(30)).await;
    assert_eq!(state.len(), 151);
    let storage = cluster.nodes[&behind].storage.clone();
    assert!(
        snapshots(&storage).iter().any(|lsn| *lsn > 20),
        "the node holds no snapshot from the leader: {:?}",
        snapshots(&storage)
    );
    // Its log starts again after the snapshot it was sent.
    assert!(oldest_log_lsn(&storage) > 20);

    // The node's change feed subscriber is told to start again from a snapshot, and
    // then follows the writes after it.
    let feed = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match feed.recv_timeout(Duration::from_millis(100)) {
                Err(FeedError::SnapshotNeeded { .. }) => break,
                Ok(_) => {}
                Err(e) => panic!("unexpected feed error {e}"),
            }
            assert!(Instant::now() < deadline, "no SnapshotNeeded");
        }
        let version = feed.restart_at_current();
        (feed, content(&version))
    })
    .await
    .unwrap();
    let (mut feed, restarted) = feed;
    assert_eq!(restarted, state);
    write(&store, add("later", "v")).await.unwrap().unwrap();
    let batch = tokio::task::spawn_blocking(move || feed.recv_timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .unwrap()
        .expect("the write after the snapshot reaches the feed");
    assert!(!batch.is_empty());
    assert_eq!(cluster.converged(Duration::from_secs(20)).await.len(), 152);

    // Restarted once more, the node starts from the snapshot it was sent.
    cluster.kill(behind).await;
    cluster.restart(behind).await;
    assert!(cluster.nodes[&behind].store.current().lsn() > 20);
    assert_eq!(cluster.converged(Duration::from_secs(20)).await.len(), 152);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wiped_node_added_again_catches_up_by_snapshot_and_log() {
    let mut cluster = Cluster::start_timed(3, 13, timing()).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    for i in 0..120 {
        write(&store, add(&format!("w{i}"), "v")).await.unwrap().unwrap();
    }
    cluster.converged(Duration::from_secs(20)).await;
    let leader_storage = cluster.nodes[&leader].storage.clone();
    eventually(Duration::from_secs(10), "the leader's log purged", || {
        oldest_log_lsn(&leader_storage) > 1
    })
    .await;

    // A follower's disk is lost: a new node (empty) joins in its place.
    cluster.replace_a_follower(leader, 4).await;
    for i in 120..130 {
        write(&store, add(&format!("w{i}"), "v")).await.unwrap().unwrap();
    }
    let state = cluster.converged(Duration::from_secs(30)).await;
    assert_eq!(state.len(), 131);
    let fresh = cluster.nodes[&4].storage.clone();
    assert!(
        !snapshots(&fresh).is_empty(),
        "the new node was not sent a snapshot"
    );
    assert!(oldest_log_lsn(&fresh) > 1, "the new node replayed the whole log");

    // The new node counts in the majority: with the leader killed, the other two elect
    // one and go on.
    cluster.kill(leader).await;
    let next = cluster.leader(Duration::from_secs(10)).await;
    let voters: BTreeSet<u64> = cluster.nodes[&next]
        .node
        .metrics()
        .membership_config
        .membership()
        .voter_ids()
        .collect();
    assert!(voters.contains(&4), "{voters:?}");
    let store = cluster.nodes[&next].store.clone();
    write(&store, add("after", "v")).await.unwrap().unwrap();
    assert_eq!(cluster.converged(Duration::from_secs(20)).await.len(), 132);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_of_a_node_restores_as_a_single_server() {
    let cluster = Cluster::start_timed(3, 14, timing()).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    for i in 0..50 {
        write(&store, add(&format!("b{i}"), "v")).await.unwrap().unwrap();
    }
    let state = cluster.converged(Duration::from_secs(20)).await;
    let follower = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    let node = &cluster.nodes[&follower];
    let (storage, node_store) = (node.storage.clone(), node.store.clone());
    tokio::task::spawn_blocking(move || {
        let options = larch_store::BackupOptions::default();
        node_store.backup(Path::new("/backup"), &options).unwrap();
        larch_store::backup::restore(&storage, Path::new("/backup"), Path::new("/restored")).unwrap();
        let mut options = larch_store::StoreOptions::new("/restored", common::schema());
        options.storage = std::sync::Arc::new(storage.clone());
        options.snapshot_interval = None;
        options.snapshot_after_records = None;
        let (restored, _) = larch_store::Store::open(options).unwrap();
        assert_eq!(content(&restored.current()), state);
        restored.close(false).unwrap();
    })
    .await
    .unwrap();
    cluster.stop().await;
}
