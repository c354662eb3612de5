//! Three nodes in one process: writes on the leader reach every node, a follower refuses
//! writes and names the leader, and the cluster ends in the state a single server reaches
//! with the same acknowledged writes.

mod common;

use std::time::{Duration, Instant};

use common::{add, add_suffix, address, apply, content, open_store, write, Cluster, Op, SUFFIX};
use larch_store::consensus::ReplicateError;
use larch_store::storage::FaultStorage;
use larch_store::StoreError;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_on_the_leader_reach_every_node() {
    let cluster = Cluster::start(3, 1).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = &cluster.nodes[&leader].store;
    add_suffix(store).await;
    for i in 0..20 {
        write(store, add(&format!("e{i}"), &format!("v{i}")))
            .await
            .unwrap()
            .unwrap();
    }
    // A refusal of the write itself travels back like on a single server.
    let twice = write(store, add("e0", "again")).await.unwrap();
    assert!(matches!(twice, Err(StoreError::AlreadyExists)), "{twice:?}");
    // The leader's own store has the write once it is acknowledged, published from the
    // version its writer computed rather than replayed.
    assert_eq!(content(&store.current()).len(), 21);
    assert!(
        store.batches_from_writer() >= 20,
        "{}",
        store.batches_from_writer()
    );

    let state = cluster.converged(Duration::from_secs(10)).await;
    assert_eq!(state.len(), 21);
    assert_eq!(
        state.get("cn=e7,dc=example,dc=com").map(String::as_str),
        Some("v7")
    );

    let follower = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    let refused = write(&cluster.nodes[&follower].store, add("x", "y")).await;
    match refused {
        Err(StoreError::Replication(ReplicateError::NotLeader { leader: named })) => {
            assert_eq!(named, Some(address(leader)));
        }
        other => panic!("a follower took a write: {other:?}"),
    }
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_replicates_an_entry_while_its_own_log_flushes_it() {
    // The leader's disk has not answered its fsync: the followers get the entry all the
    // same, commit it between them and apply it; the leader publishes it and answers the
    // write only once its own log holds it.
    let cluster = Cluster::start(3, 7).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    cluster.converged(Duration::from_secs(10)).await;
    let followers: Vec<u64> = cluster.ids.iter().copied().filter(|id| *id != leader).collect();
    let held = "cn=held,dc=example,dc=com";

    cluster.nodes[&leader].storage.hold_syncs(true);
    let writer = store.clone();
    let pending = tokio::spawn(async move { write(&writer, add("held", "v")).await });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !followers
        .iter()
        .all(|id| content(&cluster.nodes[id].store.current()).contains_key(held))
    {
        assert!(
            Instant::now() < deadline,
            "the followers did not apply the entry while the leader's fsync was held"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !pending.is_finished(),
        "the write was answered before the leader's log held it"
    );
    assert!(!content(&store.current()).contains_key(held));

    cluster.nodes[&leader].storage.hold_syncs(false);
    pending.await.unwrap().unwrap().unwrap();
    assert!(content(&store.current()).contains_key(held));
    let state = cluster.converged(Duration::from_secs(10)).await;
    assert_eq!(state.get(held).map(String::as_str), Some("v"));
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_ends_where_a_single_server_ends() {
    // The same writes, some refused (an entry added twice, a delete of a missing one),
    // through a three-node cluster and a single server: the same final state.
    let mut ops = vec![Op::Add {
        dn: SUFFIX.into(),
        value: "top".into(),
    }];
    let mut rng = 0x5eed_u64;
    for i in 0..120u64 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let name = format!("e{}", rng % 25);
        ops.push(match rng % 4 {
            0 | 1 => add(&name, &format!("v{i}")),
            2 => Op::Modify {
                dn: format!("cn={name},{SUFFIX}"),
                value: format!("m{i}"),
            },
            _ => Op::Delete {
                dn: format!("cn={name},{SUFFIX}"),
            },
        });
    }
    let single = open_store(&FaultStorage::new(9), false);
    let mut single_results = Vec::new();
    for op in &ops {
        let store = single.clone();
        let op = op.clone();
        let r = tokio::task::spawn_blocking(move || apply(&store, op))
            .await
            .unwrap()
            .unwrap();
        single_results.push(r.is_ok());
    }

    let cluster = Cluster::start(3, 2).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let mut cluster_results = Vec::new();
    for op in &ops {
        let r = write(&cluster.nodes[&leader].store, op.clone()).await.unwrap();
        cluster_results.push(r.is_ok());
    }
    assert_eq!(cluster_results, single_results, "the same writes were refused");
    let state = cluster.converged(Duration::from_secs(10)).await;
    assert_eq!(state, content(&single.current()));
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_larger_than_a_log_record_is_cut_into_entries() {
    let cluster = Cluster::start(3, 11).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    let big = "x".repeat(1 << 20);
    let (tx, rx) = std::sync::mpsc::channel();
    // The first job holds the writer while 39 more queue behind it, so the next batch is
    // 39 writes of 1 MiB each: more than one entry (a WAL record holds 16 MiB).
    store.submit(|_txn| std::thread::sleep(Duration::from_millis(300)), |_| {});
    for i in 0..39 {
        let tx = tx.clone();
        let e = common::entry(&format!("cn=big{i},{SUFFIX}"), &big);
        store.submit(
            move |txn| txn.add(&e.dn, &e.norm_dn, &e.to_stored(), false).map(drop),
            move |r| tx.send(r).unwrap(),
        );
    }
    drop(tx);
    let results: Vec<_> = tokio::task::spawn_blocking(move || rx.iter().collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(results.len(), 39);
    for r in &results {
        assert!(matches!(r, Ok(Ok(()))), "{r:?}");
    }
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert_eq!(state.len(), 40);
    // Three entries at least carried the 39 writes.
    assert!(store.current().lsn() >= 5, "LSN {}", store.current().lsn());
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_larger_than_a_log_record_is_refused_and_undone() {
    let cluster = Cluster::start(3, 12).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    let big = "y".repeat(1 << 20);
    // One write of 20 entries of 1 MiB: 20 MiB, beyond one WAL record.
    let s = store.clone();
    let refused = tokio::task::spawn_blocking(move || {
        s.write(move |txn| {
            for i in 0..20 {
                let e = common::entry(&format!("cn=huge{i},{SUFFIX}"), &big);
                txn.add(&e.dn, &e.norm_dn, &e.to_stored(), false)?;
            }
            Ok::<(), StoreError>(())
        })
    })
    .await
    .unwrap();
    assert!(matches!(refused, Err(StoreError::TooLarge { .. })), "{refused:?}");
    write(&store, add("after", "v")).await.unwrap().unwrap();
    let state = cluster.converged(Duration::from_secs(10)).await;
    assert_eq!(state.len(), 2, "{:?}", state.keys().collect::<Vec<_>>());
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_computed_on_writes_still_in_flight_land_in_order() {
    // Each job reads the counter the jobs before it left and writes it plus one, so a job
    // computed on any version but the one right before it loses a step. Jobs arrive in
    // waves while earlier batches are still replicated: the writer computes them on its
    // copy of the version after the batch in flight (proposed ahead), and the leader
    // publishes those copies in order.
    let cluster = Cluster::start(3, 21).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    write(&store, add("counter", "0")).await.unwrap().unwrap();
    let dn = format!("cn=counter,{SUFFIX}");
    let norm = common::entry(&dn, "0").norm_dn;
    let (tx, rx) = std::sync::mpsc::channel();
    const STEPS: u64 = 300;
    for i in 0..STEPS {
        let (tx, dn, norm) = (tx.clone(), dn.clone(), norm.clone());
        store.submit(
            move |txn| {
                let id = txn.version().find(&norm).ok_or(StoreError::NoSuchEntry)?;
                let now: u64 = content_value(txn.version(), id).parse().unwrap();
                txn.modify(id, &common::entry(&dn, &(now + 1).to_string()).to_stored())
            },
            move |r| tx.send(r).unwrap(),
        );
        if i % 10 == 9 {
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
    }
    drop(tx);
    let results: Vec<_> = tokio::task::spawn_blocking(move || rx.iter().collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(results.len() as u64, STEPS);
    for r in &results {
        assert!(matches!(r, Ok(Ok(()))), "{r:?}");
    }
    let ahead = store.stats().proposed_ahead;
    assert!(ahead > 0, "no batch was proposed while another was in flight");
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert_eq!(
        state.get(&dn).map(String::as_str),
        Some(STEPS.to_string().as_str())
    );
    // Every node holds the same count, and the leader published its own copies.
    assert!(
        store.batches_from_writer() > ahead / 2,
        "{} of {ahead}",
        store.batches_from_writer()
    );
    cluster.stop().await;
}

/// The value `common::entry` gave entry `id`.
fn content_value(version: &larch_store::Version, id: larch_store::EntryId) -> String {
    let norm = version.norm_dn(id).as_str().to_string();
    content(version)
        .remove(&norm)
        .unwrap_or_else(|| panic!("{norm} has no value"))
}
