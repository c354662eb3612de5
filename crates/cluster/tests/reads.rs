//! Linearizable reads: after `ClusterNode::read_barrier`, a node's store holds every write
//! acknowledged before the call, leader or follower; a node cut off from the majority
//! refuses instead of answering stale.

mod common;

use std::time::Duration;

use common::{add, add_suffix, content, write, Cluster};
use larch_cluster::network::memory::Faults;
use larch_cluster::ClusterError;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_behind_the_leader_waits_for_every_acknowledged_write() {
    let cluster = Cluster::start(3, 21).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    // Every message delayed by up to 40 ms: a write is acknowledged once one follower
    // has it, and the other often does not have it yet.
    cluster.router.set_faults(Faults {
        max_delay: Duration::from_millis(40),
        ..Faults::default()
    });
    let followers: Vec<u64> = cluster.ids.iter().copied().filter(|id| *id != leader).collect();
    let mut behind = 0;
    for i in 0..30 {
        let name = format!("r{i}");
        write(&store, add(&name, "v")).await.unwrap().unwrap();
        let dn = format!("cn={name},{}", common::SUFFIX);
        for id in &followers {
            let node = &cluster.nodes[id];
            if !content(&node.store.current()).contains_key(&dn) {
                behind += 1;
            }
            node.node.read_barrier().await.unwrap();
            assert!(
                content(&node.store.current()).contains_key(&dn),
                "node {id} read without the acknowledged write {dn}"
            );
        }
        cluster.nodes[&leader].node.read_barrier().await.unwrap();
    }
    assert!(
        behind > 0,
        "no follower was ever behind: the test did not test the barrier"
    );
    cluster.router.set_faults(Faults::default());
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_cut_off_from_the_majority_refuses_a_linearizable_read() {
    let cluster = Cluster::start(3, 22).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    add_suffix(&cluster.nodes[&leader].store).await;
    let follower = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    for cut in [follower, leader] {
        cluster.router.partition(&[cut], &cluster.ids);
        let refused = cluster.nodes[&cut].node.read_barrier().await;
        assert!(
            matches!(refused, Err(ClusterError::Unavailable(_))),
            "node {cut}, cut off: {refused:?}"
        );
        cluster.router.heal();
        cluster.leader(Duration::from_secs(10)).await;
        // Healed, it answers again (once a leader confirms itself with a majority).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while cluster.nodes[&cut].node.read_barrier().await.is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "node {cut} still refuses after healing"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    cluster.stop().await;
}
