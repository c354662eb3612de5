//! A node's view of the cluster in plain terms, for monitoring (`cn=Cluster,cn=Monitor`,
//! `/metrics`, `larch cluster status`), without openraft's types.

use larch_store::wal::Lsn;
use openraft::{RaftMetrics, ServerState};

use crate::types::{lsn_of, Member, NodeId};

/// What a node does in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// It leads: writes are made here.
    Leader,
    /// It follows a leader (or waits for one).
    Follower,
    /// It stands for election.
    Candidate,
    /// It receives the log but does not vote (a node being added).
    Learner,
    /// Its engine has stopped.
    Stopped,
}

impl Role {
    /// The role's name as monitoring shows it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Follower => "follower",
            Role::Candidate => "candidate",
            Role::Learner => "learner",
            Role::Stopped => "stopped",
        }
    }
}

/// One node's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// This node.
    pub node_id: NodeId,
    /// What it does.
    pub role: Role,
    /// The current term.
    pub term: u64,
    /// The leader it knows of.
    pub leader: Option<NodeId>,
    /// The LSN of the last entry in its log.
    pub last_log_lsn: Lsn,
    /// The LSN of the last entry applied to its store.
    pub applied_lsn: Lsn,
    /// The voting members, by ID.
    pub voters: Vec<NodeId>,
    /// Every member (voters and learners), by ID.
    pub members: Vec<MemberStatus>,
}

/// One member as the cluster's configuration records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberStatus {
    /// Its number.
    pub id: NodeId,
    /// Where its Raft transport listens.
    pub raft: String,
    /// Where clients reach it (`None`: not recorded).
    pub ldap_url: Option<String>,
}

impl Status {
    /// The status in `metrics`.
    pub fn from_metrics(m: &RaftMetrics<NodeId, Member>) -> Status {
        let membership = m.membership_config.membership();
        Status {
            node_id: m.id,
            role: match m.state {
                ServerState::Leader => Role::Leader,
                ServerState::Follower => Role::Follower,
                ServerState::Candidate => Role::Candidate,
                ServerState::Learner => Role::Learner,
                ServerState::Shutdown => Role::Stopped,
            },
            term: m.current_term,
            leader: m.current_leader,
            last_log_lsn: m.last_log_index.map_or(0, larch_store::consensus::lsn_of_index),
            applied_lsn: m.last_applied.as_ref().map_or(0, lsn_of),
            voters: membership.voter_ids().collect(),
            members: membership
                .nodes()
                .map(|(id, n)| MemberStatus {
                    id: *id,
                    raft: n.raft.clone(),
                    ldap_url: n.client_url().map(str::to_string),
                })
                .collect(),
        }
    }
}
