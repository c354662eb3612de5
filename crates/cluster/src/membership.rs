//! Changing the members of a running cluster, on its leader (`larch cluster add-node` and
//! `remove-node` reach it through the server's extended operation; `docs/cluster.md`,
//! "Adding and removing nodes").
//!
//! Adding node `id` ([`add_node`]), in steps:
//! 1. this node must lead ([`MembershipError::NotLeader`] names the leader otherwise); `id`
//!    must not be a voter already, nor another member listen at the same Raft address (a
//!    learner with exactly the same addresses is a change interrupted earlier: it resumes),
//!    and the cluster must have fewer than [`MAX_MEMBERS`];
//! 2. the node joins as a learner: a configuration that lists it among the nodes but not
//!    the voters is committed, and the leader starts sending it the log (openraft's
//!    `add_learner`, not blocking: openraft's own wait has no bound, and counts a node
//!    within 5000 entries of the leader as caught up even when it never answered);
//! 3. the leader waits until the learner holds the log up to that configuration's entry.
//!    While the learner takes entries it may take as long as it needs; once it takes none
//!    for [`Timing::catch_up_stall`](crate::Timing::catch_up_stall) (it is down or
//!    unreachable, or its address is wrong) the learner is removed again and the change
//!    refused. A leadership lost meanwhile ends the wait: the learner stays, and the same
//!    request on the new leader takes it up;
//! 4. the learner becomes a voter: a joint configuration (the old voters and the new ones
//!    must both agree), then the new one (openraft's `change_membership`).
//!
//! Removing node `id` ([`remove_node`]), in steps:
//! 1. this node must lead; `id` must be a member, and not the last voter;
//! 2. a voter leaves through a joint configuration (old and new voters) and then the new
//!    one, which no longer lists it at all (`change_membership` with `retain` false); a
//!    learner is simply dropped from the nodes. The node may be down: only a majority of
//!    the old and of the new voters must answer;
//! 3. when `id` is this node, the leader steps down once the configuration without it is
//!    committed, and the remaining voters elect a leader among themselves.
//!
//! Each configuration must be committed within
//! [`Timing::commit_timeout`](crate::Timing::commit_timeout); one that is not may still be
//! committed later ([`MembershipError::Unconfirmed`]). One change runs at a time on a node
//! ([`MembershipError::InProgress`] for another).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::future::Future;
use std::time::Duration;

use openraft::error::{ChangeMembershipError, ClientWriteError, RaftError};
use openraft::raft::ClientWriteResponse;
use openraft::{ChangeMembers, LogId, Raft, RaftMetrics, ServerState};

use crate::member::Member;
use crate::types::{Larch, NodeId};

/// The most members a cluster may have (as `[cluster]` lists at most): every voter more
/// makes each write wait for one acknowledgement more.
pub const MAX_MEMBERS: usize = 9;

/// Why a membership change was not made (or not confirmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MembershipError {
    /// This node does not lead: the change must be asked of the leader.
    #[error("this node does not lead the cluster{}", leader_words(*.leader))]
    NotLeader {
        /// The leader this node knows of.
        leader: Option<NodeId>,
        /// Where clients reach it, when known.
        leader_url: Option<String>,
    },
    /// The change makes no sense for this cluster (the reason says why); nothing changed.
    #[error("{0}")]
    Refused(String),
    /// Another membership change is under way.
    #[error("{0}")]
    InProgress(String),
    /// A configuration was proposed but not confirmed committed in time: the change may
    /// still complete.
    #[error("{0}")]
    Unconfirmed(String),
    /// The engine failed.
    #[error("cluster: {0}")]
    Engine(String),
}

fn leader_words(leader: Option<NodeId>) -> String {
    leader.map_or_else(
        || " and knows no leader now".to_string(),
        |l| format!(": node {l} does"),
    )
}

/// Adds node `id`, reached at `member`, as a voter (steps 1 to 4). `me` is this node;
/// `commit_timeout` bounds each configuration's commit, `stall` the learner's catch-up
/// without progress.
pub async fn add_node(
    raft: &Raft<Larch>,
    me: NodeId,
    id: NodeId,
    member: Member,
    commit_timeout: Duration,
    stall: Duration,
) -> Result<(), MembershipError> {
    let metrics = leading(raft, me)?;
    check_addition(&metrics, id, &member)?;
    let added = bounded(
        commit_timeout,
        "the configuration with the new learner",
        raft.add_learner(id, member.clone(), false),
    )
    .await?;
    if let Err(e) = caught_up(raft, id, added.log_id, stall).await {
        if let MembershipError::Refused(_) = e {
            withdraw(raft, id, commit_timeout).await;
        }
        return Err(e);
    }
    bounded(
        commit_timeout,
        "the configuration with the new voter",
        raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false),
    )
    .await
    .map(drop)
}

/// Removes node `id` from the cluster (steps 1 to 3).
pub async fn remove_node(
    raft: &Raft<Larch>,
    me: NodeId,
    id: NodeId,
    commit_timeout: Duration,
) -> Result<(), MembershipError> {
    let metrics = leading(raft, me)?;
    let membership = metrics.membership_config.membership();
    if membership.get_node(&id).is_none() {
        return Err(MembershipError::Refused(format!(
            "node {id} is not a member of the cluster (members: {})",
            member_list(&metrics)
        )));
    }
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let change = if voters.contains(&id) {
        if voters.len() == 1 {
            return Err(MembershipError::Refused(format!(
                "node {id} is the cluster's last voter: a cluster cannot remove its last voting member"
            )));
        }
        ChangeMembers::RemoveVoters(BTreeSet::from([id]))
    } else {
        ChangeMembers::RemoveNodes(BTreeSet::from([id]))
    };
    bounded(
        commit_timeout,
        "the configuration without the node",
        raft.change_membership(change, false),
    )
    .await
    .map(drop)
}

/// Step 1 of both: the engine's view, if this node leads.
fn leading(raft: &Raft<Larch>, me: NodeId) -> Result<RaftMetrics<NodeId, Member>, MembershipError> {
    let metrics = raft.metrics().borrow().clone();
    if metrics.state == ServerState::Leader && metrics.current_leader == Some(me) {
        return Ok(metrics);
    }
    Err(not_leader(&metrics))
}

fn not_leader(metrics: &RaftMetrics<NodeId, Member>) -> MembershipError {
    let leader = metrics.current_leader;
    let leader_url = leader.and_then(|l| {
        let node = metrics.membership_config.membership().get_node(&l)?;
        node.client_url().map(str::to_string)
    });
    MembershipError::NotLeader { leader, leader_url }
}

/// Step 1 of an addition: `id` is new (or a learner with the same addresses), and its Raft
/// address is no other member's.
fn check_addition(
    metrics: &RaftMetrics<NodeId, Member>,
    id: NodeId,
    member: &Member,
) -> Result<(), MembershipError> {
    let membership = metrics.membership_config.membership();
    let is_voter = membership.voter_ids().any(|v| v == id);
    if let Some(known) = membership.get_node(&id) {
        if is_voter {
            return Err(MembershipError::Refused(format!(
                "node {id} is a member already (a voter at {known})"
            )));
        }
        if known != member {
            return Err(MembershipError::Refused(format!(
                "node {id} is a learner at {known} already: remove it first to add it at {member}"
            )));
        }
    }
    if membership.get_node(&id).is_none() && membership.nodes().count() >= MAX_MEMBERS {
        return Err(MembershipError::Refused(format!(
            "the cluster has {MAX_MEMBERS} members, the most it may have"
        )));
    }
    if let Some((other, _)) = membership
        .nodes()
        .find(|(other, m)| **other != id && m.raft == member.raft)
    {
        return Err(MembershipError::Refused(format!(
            "node {other} listens at {} already",
            member.raft
        )));
    }
    Ok(())
}

/// Step 3: waits until learner `id` holds the log up to `target`. A learner that takes no
/// entry for `stall` is refused; a lost leadership ends the wait.
async fn caught_up(
    raft: &Raft<Larch>,
    id: NodeId,
    target: LogId<NodeId>,
    stall: Duration,
) -> Result<(), MembershipError> {
    let mut watch = raft.metrics();
    let mut best: Option<u64> = None;
    loop {
        let matched = {
            let m = watch.borrow_and_update();
            let Some(replication) = &m.replication else {
                return Err(not_leader(&m));
            };
            replication.get(&id).copied().flatten().map(|l| l.index)
        };
        if matched >= Some(target.index) {
            return Ok(());
        }
        if matched > best {
            best = matched;
        }
        // Waits for the next report; a stall without one that moves `best` ends it.
        let deadline = tokio::time::Instant::now() + stall;
        loop {
            match tokio::time::timeout_at(deadline, watch.changed()).await {
                Err(_) => return Err(stalled(id, best, target, stall)),
                Ok(Err(_)) => return Err(MembershipError::Engine("the engine stopped".into())),
                Ok(Ok(())) => {}
            }
            let m = watch.borrow();
            let now = m
                .replication
                .as_ref()
                .map(|r| r.get(&id).copied().flatten().map(|l| l.index));
            // Not leading any more, or progress: back to the outer check.
            if now.is_none() || now.flatten() > best {
                break;
            }
        }
    }
}

fn stalled(id: NodeId, best: Option<u64>, target: LogId<NodeId>, stall: Duration) -> MembershipError {
    let has = best.map_or_else(
        || "no entry of the log".to_string(),
        |i| format!("the log up to entry {i}"),
    );
    MembershipError::Refused(format!(
        "node {id} did not catch up: it took no entry for {} s (it has {has}, it needs entry {}); \
         is it running, and reachable at the Raft address given? It was not added",
        stall.as_secs(),
        target.index
    ))
}

/// After step 3 failed: the learner leaves again, so the leader stops sending to it.
async fn withdraw(raft: &Raft<Larch>, id: NodeId, commit_timeout: Duration) {
    let change = ChangeMembers::RemoveNodes(BTreeSet::from([id]));
    if let Err(e) = bounded(
        commit_timeout,
        "the configuration without the learner",
        raft.change_membership(change, false),
    )
    .await
    {
        tracing::warn!(node = id, error = %e, "cluster: the learner that did not catch up is still listed");
    }
}

/// Runs one configuration change of openraft, bounded by `timeout`; `what` names the
/// configuration in the error.
async fn bounded<F>(
    timeout: Duration,
    what: &str,
    change: F,
) -> Result<ClientWriteResponse<Larch>, MembershipError>
where
    F: Future<Output = Result<ClientWriteResponse<Larch>, ClientError>>,
{
    match tokio::time::timeout(timeout, change).await {
        Err(_) => Err(MembershipError::Unconfirmed(format!(
            "{what} was not committed within {} s (a majority of the old voters and of the new \
             ones must be running); it may still be: see `larch cluster status`",
            timeout.as_secs()
        ))),
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(from_engine(e)),
    }
}

type ClientError = RaftError<NodeId, ClientWriteError<NodeId, Member>>;

fn from_engine(e: ClientError) -> MembershipError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => MembershipError::NotLeader {
            leader: f.leader_id,
            leader_url: f.leader_node.and_then(|n| n.client_url().map(str::to_string)),
        },
        RaftError::APIError(ClientWriteError::ChangeMembershipError(ChangeMembershipError::InProgress(
            p,
        ))) => MembershipError::InProgress(format!("another membership change is under way: {p}")),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(c)) => {
            MembershipError::Refused(c.to_string())
        }
        RaftError::Fatal(f) => MembershipError::Engine(f.to_string()),
    }
}

/// `1 127.0.0.1:7001 voter, 4 127.0.0.1:7004 learner`.
fn member_list(metrics: &RaftMetrics<NodeId, Member>) -> String {
    let membership = metrics.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let nodes: BTreeMap<NodeId, &Member> = membership.nodes().map(|(i, m)| (*i, m)).collect();
    let mut out = String::new();
    for (id, m) in nodes {
        if !out.is_empty() {
            out.push_str(", ");
        }
        let kind = if voters.contains(&id) { "voter" } else { "learner" };
        let _ = write!(out, "{id} {} {kind}", m.raft);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use openraft::{Membership, StoredMembership};

    use super::*;

    /// A leader's view of voters `voters` and learners `learners`, node `i` at `h:i`.
    fn view(voters: &[NodeId], learners: &[NodeId]) -> RaftMetrics<NodeId, Member> {
        let nodes: BTreeMap<NodeId, Member> = voters
            .iter()
            .chain(learners)
            .map(|i| (*i, Member::new(format!("h:{i}"), format!("ldap://h{i}"))))
            .collect();
        let membership = Membership::new(vec![voters.iter().copied().collect()], nodes);
        let mut m = RaftMetrics::new_initial(1);
        m.membership_config = Arc::new(StoredMembership::new(None, membership));
        m
    }

    fn refusal(r: Result<(), MembershipError>) -> String {
        match r {
            Err(MembershipError::Refused(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_addition_is_checked_against_the_members() {
        let m = view(&[1, 2, 3], &[4]);
        let new = |i: NodeId| Member::new(format!("h:{i}"), format!("ldap://h{i}"));
        assert_eq!(check_addition(&m, 5, &new(5)), Ok(()));
        // A learner left by an interrupted addition, at the same addresses: taken up again.
        assert_eq!(check_addition(&m, 4, &new(4)), Ok(()));
        let why = refusal(check_addition(&m, 2, &new(2)));
        assert!(why.contains("node 2 is a member already"), "{why}");
        let why = refusal(check_addition(&m, 4, &new(5)));
        assert!(why.contains("node 4 is a learner at h:4"), "{why}");
        let why = refusal(check_addition(&m, 5, &new(3)));
        assert!(why.contains("node 3 listens at h:3"), "{why}");
        let full = view(&(1..=MAX_MEMBERS as NodeId).collect::<Vec<_>>(), &[]);
        let why = refusal(check_addition(&full, 10, &new(10)));
        assert!(why.contains("the most it may have"), "{why}");
    }

    #[test]
    fn the_members_read_as_a_list() {
        assert_eq!(
            member_list(&view(&[1, 3], &[2])),
            "1 h:1 voter, 2 h:2 learner, 3 h:3 voter"
        );
    }

    #[test]
    fn a_follower_names_its_leader_and_its_url() {
        let mut m = view(&[1, 2, 3], &[]);
        m.current_leader = Some(3);
        assert_eq!(
            not_leader(&m),
            MembershipError::NotLeader {
                leader: Some(3),
                leader_url: Some("ldap://h3".into()),
            }
        );
        m.current_leader = None;
        assert!(not_leader(&m).to_string().contains("knows no leader"));
    }
}
