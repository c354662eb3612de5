//! Membership changes of a running cluster (`larch_cluster::membership`), in one process:
//! a node added at run time catches up, votes, and every node learns its LDAP URL from the
//! configuration; the refusals (a member already, an address taken, the last voter, an
//! unknown node, a node that never catches up, a follower asked); the leader removing
//! itself, after which the others elect a leader and take writes.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{add, add_suffix, content, member, write, Cluster};
use larch_cluster::{Member, MembershipError};

fn voters(cluster: &Cluster, at: u64) -> BTreeSet<u64> {
    cluster.nodes[&at]
        .node
        .metrics()
        .membership_config
        .membership()
        .voter_ids()
        .collect()
}

fn listed(cluster: &Cluster, at: u64) -> BTreeSet<u64> {
    cluster.nodes[&at]
        .node
        .metrics()
        .membership_config
        .membership()
        .nodes()
        .map(|(id, _)| *id)
        .collect()
}

fn refused(r: Result<(), MembershipError>) -> String {
    match r {
        Err(MembershipError::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_added_at_run_time_catches_up_and_votes() {
    let mut cluster = Cluster::start(3, 31).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    let store = cluster.nodes[&leader].store.clone();
    add_suffix(&store).await;
    for i in 0..20 {
        write(&store, add(&format!("m{i}"), "v")).await.unwrap().unwrap();
    }
    cluster.add_fresh(4).await;
    let lead = &cluster.nodes[&leader].node;
    lead.add_node(4, member(4)).await.unwrap();
    assert_eq!(voters(&cluster, leader), BTreeSet::from([1, 2, 3, 4]));
    cluster.ids.push(4);
    write(&store, add("after", "v")).await.unwrap().unwrap();
    let state = cluster.converged(Duration::from_secs(20)).await;
    assert_eq!(state.len(), 22);
    assert_eq!(content(&cluster.nodes[&4].store.current()), state);

    // Refusals, each naming its reason; nothing changes.
    let lead = &cluster.nodes[&leader].node;
    let why = refused(lead.add_node(4, member(4)).await);
    assert!(why.contains("node 4 is a member already"), "{why}");
    let why = refused(lead.add_node(5, Member::new(member(2).raft, "ldap://x")).await);
    assert!(why.contains("node 2 listens at"), "{why}");
    let why = refused(lead.remove_node(9).await);
    assert!(why.contains("node 9 is not a member"), "{why}");
    assert_eq!(voters(&cluster, leader), BTreeSet::from([1, 2, 3, 4]));

    // A follower does not change the membership: it names the leader and its URL.
    let follower = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    match cluster.nodes[&follower].node.remove_node(4).await {
        Err(MembershipError::NotLeader {
            leader: named,
            leader_url,
        }) => {
            assert_eq!(named, Some(leader));
            assert_eq!(leader_url, Some(member(leader).ldap_url));
        }
        other => panic!("a follower changed the membership: {other:?}"),
    }

    // Every node knows where clients reach node 4 (for its referrals when node 4 leads),
    // though no node was started knowing it: the configuration carries it.
    for (id, n) in &cluster.nodes {
        let m = n.node.metrics();
        let known = m.membership_config.membership().get_node(&4).cloned();
        assert_eq!(known, Some(member(4)), "node {id}");
    }
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_that_never_catches_up_is_not_added() {
    let cluster = Cluster::start(3, 32).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    add_suffix(&cluster.nodes[&leader].store).await;
    // Node 7 runs nowhere: the leader cannot reach it.
    let started = Instant::now();
    let why = refused(cluster.nodes[&leader].node.add_node(7, member(7)).await);
    assert!(why.contains("node 7 did not catch up"), "{why}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(listed(&cluster, leader), BTreeSet::from([1, 2, 3]));
    assert_eq!(voters(&cluster, leader), BTreeSet::from([1, 2, 3]));
    write(&cluster.nodes[&leader].store, add("still", "v"))
        .await
        .unwrap()
        .unwrap();
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_are_removed_down_or_leading_but_never_the_last_voter() {
    let mut cluster = Cluster::start(3, 33).await;
    let leader = cluster.leader(Duration::from_secs(5)).await;
    add_suffix(&cluster.nodes[&leader].store).await;

    // A follower that is down.
    let down = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    cluster.kill(down).await;
    cluster.nodes[&leader].node.remove_node(down).await.unwrap();
    cluster.ids.retain(|id| *id != down);
    assert_eq!(listed(&cluster, leader), cluster.ids.iter().copied().collect());

    // The leader itself: it steps down, the other node leads alone and takes writes.
    cluster.nodes[&leader].node.remove_node(leader).await.unwrap();
    let other = cluster.ids.iter().copied().find(|id| *id != leader).unwrap();
    cluster.kill(leader).await;
    cluster.ids.retain(|id| *id != leader);
    assert_eq!(cluster.leader(Duration::from_secs(20)).await, other);
    assert_eq!(voters(&cluster, other), BTreeSet::from([other]));
    write(&cluster.nodes[&other].store, add("alone", "v"))
        .await
        .unwrap()
        .unwrap();

    // The last voter stays.
    let why = refused(cluster.nodes[&other].node.remove_node(other).await);
    assert!(why.contains("last voter"), "{why}");
    cluster.stop().await;
}
