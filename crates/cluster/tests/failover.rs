//! Failures: the leader killed at random moments while clients write (a new leader
//! within a bounded time, no acknowledged write lost, every node converging), a leader
//! cut off from the majority (it commits nothing; the majority goes on; healing
//! converges), messages dropped and delayed, and a node replaced by a new one that
//! catches up from the log.
//!
//! `LARCH_CLUSTER_CYCLES` sets the number of leader kills (20 by default, the CI form);
//! the long form runs `LARCH_CLUSTER_CYCLES=200 cargo test -p larch-cluster --release
//! --test failover`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{add, add_suffix, apply, content, member, surely_not_applied, write, Cluster, Op, SUFFIX};
use larch_cluster::network::memory::Faults;
use larch_store::{Store, StoreError};

fn dn(name: &str) -> String {
    format!("cn={name},{SUFFIX}")
}

fn cycles() -> usize {
    std::env::var("LARCH_CLUSTER_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// Writes `add(w<n>)` for n = 0, 1, ... through whichever node takes it, until `stop`;
/// records each acknowledged n with the time of its acknowledgement.
fn writer(
    stores: Arc<Mutex<BTreeMap<u64, Store>>>,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<(u64, Instant)>>>,
) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let candidates: Vec<Store> = stores.lock().unwrap().values().cloned().collect();
        let mut done = false;
        for store in candidates {
            match apply(&store, add(&format!("w{n}"), &format!("v{n}"))) {
                Ok(Ok(())) => {
                    acked.lock().unwrap().push((n, Instant::now()));
                    done = true;
                    break;
                }
                // Applied before: an earlier try whose answer was lost (timed out) did
                // commit. Not counted as acknowledged here.
                Ok(Err(StoreError::AlreadyExists)) => {
                    done = true;
                    break;
                }
                Ok(Err(e)) => panic!("w{n}: refused: {e}"),
                Err(e) if surely_not_applied(&e) => continue,
                // Unknown outcome, or a node that is down: try the next name.
                Err(_) => {
                    done = true;
                    break;
                }
            }
        }
        if done {
            n += 1;
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_leader_is_replaced_and_no_acknowledged_write_is_lost() {
    let mut cluster = Cluster::start(3, 3).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    add_suffix(&cluster.nodes[&leader].store).await;
    let stores: Arc<Mutex<BTreeMap<u64, Store>>> = Arc::new(Mutex::new(
        cluster
            .nodes
            .iter()
            .map(|(id, n)| (*id, n.store.clone()))
            .collect(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let client = {
        let (stores, stop, acked) = (Arc::clone(&stores), Arc::clone(&stop), Arc::clone(&acked));
        std::thread::spawn(move || writer(stores, stop, acked))
    };
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut failovers = Vec::new();
    let mut elections = Vec::new();
    for _ in 0..cycles() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        tokio::time::sleep(Duration::from_millis(50 + rng % 250)).await;
        let leader = cluster.leader(Duration::from_secs(10)).await;
        stores.lock().unwrap().remove(&leader);
        let killed = Instant::now();
        cluster.kill(leader).await;
        cluster.leader(Duration::from_secs(10)).await;
        elections.push(killed.elapsed());
        // Failover: from the kill to the first write acknowledged after it.
        let deadline = killed + Duration::from_secs(15);
        loop {
            if acked.lock().unwrap().last().is_some_and(|(_, at)| *at > killed) {
                failovers.push(killed.elapsed());
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no write acknowledged within 15 s of killing the leader"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cluster.restart(leader).await;
        stores
            .lock()
            .unwrap()
            .insert(leader, cluster.nodes[&leader].store.clone());
    }
    stop.store(true, Ordering::Relaxed);
    client.join().unwrap();

    let state = cluster.converged(Duration::from_secs(20)).await;
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > cycles(), "only {} writes acknowledged", acked.len());
    for (n, _) in acked.iter() {
        assert!(
            state.contains_key(&dn(&format!("w{n}"))),
            "acknowledged w{n} is lost"
        );
    }
    failovers.sort();
    elections.sort();
    println!(
        "{} leader kills, {} writes acknowledged; kill to new leader: median {:?}, max {:?}; \
         kill to next acknowledged write: median {:?}, max {:?}",
        failovers.len(),
        acked.len(),
        elections[elections.len() / 2],
        elections.last().unwrap(),
        failovers[failovers.len() / 2],
        failovers.last().unwrap()
    );
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_cut_off_commits_nothing_and_healing_converges() {
    let cluster = Cluster::start(3, 4).await;
    let old = cluster.leader(Duration::from_secs(5)).await;
    add_suffix(&cluster.nodes[&old].store).await;
    cluster.router.partition(&[old], &cluster.ids);

    // The old leader cannot commit: the write is not acknowledged.
    let lonely = write(&cluster.nodes[&old].store, add("minority", "lost")).await;
    assert!(matches!(lonely, Err(StoreError::Replication(_))), "{lonely:?}");

    // The majority elects a leader of its own and goes on.
    let deadline = Instant::now() + Duration::from_secs(10);
    let new = loop {
        let found = cluster.ids.iter().copied().filter(|id| *id != old).find(|id| {
            let m = cluster.nodes[id].node.metrics();
            m.current_leader == Some(*id) && m.state == openraft::ServerState::Leader
        });
        if let Some(id) = found {
            break id;
        }
        assert!(Instant::now() < deadline, "the majority elected no leader");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    write(&cluster.nodes[&new].store, add("majority", "kept"))
        .await
        .unwrap()
        .unwrap();
    // No split brain: the old leader still refuses (it may think it leads, but commits
    // nothing).
    let still = write(&cluster.nodes[&old].store, add("minority2", "lost")).await;
    assert!(still.is_err(), "the cut-off node acknowledged a write");

    cluster.router.heal();
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert!(state.contains_key(&dn("majority")));
    assert!(
        !state.contains_key(&dn("minority")),
        "a write the majority never had is applied"
    );
    assert!(!state.contains_key(&dn("minority2")));
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_and_delayed_messages_lose_no_acknowledged_write() {
    let cluster = Cluster::start(3, 5).await;
    cluster.router.set_faults(Faults {
        cut: BTreeSet::new(),
        drop_per_mille: 100,
        max_delay: Duration::from_millis(20),
    });
    let mut acked = Vec::new();
    let mut first = true;
    for n in 0..60 {
        for _ in 0..50 {
            let leader = cluster.leader(Duration::from_secs(20)).await;
            let op = if first {
                Op::Add {
                    dn: SUFFIX.into(),
                    value: "top".into(),
                }
            } else {
                add(&format!("d{n}"), "v")
            };
            match write(&cluster.nodes[&leader].store, op).await {
                Ok(Ok(())) => {
                    if !first {
                        acked.push(n);
                    }
                    first = false;
                    break;
                }
                Ok(Err(StoreError::AlreadyExists)) => {
                    first = false;
                    break;
                }
                Ok(Err(e)) => panic!("d{n}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
    cluster.router.set_faults(Faults::default());
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert!(acked.len() > 30, "only {} of 60 writes acknowledged", acked.len());
    for n in acked {
        assert!(
            state.contains_key(&dn(&format!("d{n}"))),
            "acknowledged d{n} is lost"
        );
    }
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replaced_node_catches_up_from_the_log() {
    let mut cluster = Cluster::start(3, 6).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    for i in 0..30 {
        write(&store, add(&format!("r{i}"), "v")).await.unwrap().unwrap();
    }
    // A follower's machine is lost: it leaves the cluster, and a new node (empty) joins.
    let gone = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    cluster.kill(gone).await;
    cluster.down.remove(&gone);
    cluster.nodes[&leader].node.remove_node(gone).await.unwrap();
    cluster.ids.retain(|id| *id != gone);
    cluster.add_fresh(4).await;
    cluster.nodes[&leader].node.add_node(4, member(4)).await.unwrap();
    cluster.ids.push(4);
    for i in 30..40 {
        write(&store, add(&format!("r{i}"), "v")).await.unwrap().unwrap();
    }
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert_eq!(state.len(), 41);
    assert_eq!(content(&cluster.nodes[&4].store.current()), state);
    let voters: BTreeSet<u64> = cluster.nodes[&leader]
        .node
        .metrics()
        .membership_config
        .membership()
        .voter_ids()
        .collect();
    assert!(voters.contains(&4) && !voters.contains(&gone), "{voters:?}");
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_node_serves_what_it_had_before_it_hears_from_a_leader() {
    let mut cluster = Cluster::start(3, 7).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    for i in 0..10 {
        write(&store, add(&format!("h{i}"), "v")).await.unwrap().unwrap();
    }
    let state = cluster.converged(Duration::from_secs(10)).await;
    // The committed hint is written at most every 200 ms.
    tokio::time::sleep(Duration::from_millis(500)).await;
    write(&store, add("after", "v")).await.unwrap().unwrap();
    cluster.converged(Duration::from_secs(10)).await;
    let follower = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    cluster.kill(follower).await;
    // Back, but cut off from every other node: it applies its own log up to the hint.
    cluster.router.partition(&[follower], &cluster.ids);
    cluster.restart(follower).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let held = content(&cluster.nodes[&follower].store.current());
        if state.iter().all(|(dn, v)| held.get(dn) == Some(v)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted node serves {} of {} entries",
            held.len(),
            state.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.router.heal();
    cluster.converged(Duration::from_secs(10)).await;
    cluster.stop().await;
}
