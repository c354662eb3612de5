//! Password policy across a cluster: a follower that forwards writes to the leader
//! (`cluster.writes = "forward"`, [`crate::forwarding`]) hands the leader the outcome of
//! every bind it decided under password policy, so that failures on any node count toward
//! one lockout and a success anywhere clears them (docs/cluster.md, "Password policy
//! across nodes").
//!
//! A bind's record on a follower, in steps:
//! 1. [`leader`]: this node forwards writes and another node leads (the forwarding's chain
//!    to the leader); else the record is made here ([`super::policy::record_here`]: on a
//!    leader it is written; a follower that refers writes records nothing);
//! 2. the outcome (failure, success, grace login), the account's DN and the bind's time go
//!    to the leader as Larch's bind outcome extended operation
//!    ([`larch_proto::exop::CLUSTER_BIND_OUTCOME`]) over the chain's pooled connections,
//!    bound as `cluster.bind_dn` (the leader's handler: `session/bind_outcome.rs`);
//! 3. the leader records it as a bind on the leader would: it reads the account in its
//!    writer's transaction (so failures from every node are counted, one by one), writes
//!    what changed through the write hooks, and answers once the record is applied, with
//!    its LSN;
//! 4. this node waits until it has applied that LSN, so the bind's answer goes out once
//!    this node, too, holds the record: the next bind here sees the failure, the delay or
//!    the lock. Steps 2 to 4 take at most [`RECORD_WAIT`].
//!
//! A bind whose answer waits for its record (a failure, a grace login) waits for all of
//! this; a success's record goes out after its answer. A record the leader cannot take
//! (an election, the leader unreachable: `unavailable`, `referral`) is lost, as a bind on
//! a leader that fails before its record is durable loses it; the error log says so at
//! debug level only, so that a failed-bind storm during an election does not flood it.

use std::sync::Arc;
use std::time::Duration;

use larch_cluster::ClusterNode;
use larch_model::dn::NormDn;
use larch_proto::exop::{BindOutcome, BindOutcomeRequest, BindOutcomeResponse, ExtendedValue};
use larch_proto::{LdapMessage, ProtocolOp, ResultCode};
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::directory::Directory;
use crate::ppolicy::AccountUpdate;
use crate::syncrepl::chain::Chain;

/// Longest wait for a record: the leader's answer and this node's apply of it. A bind
/// whose answer waits for its record is answered after this at the latest, recorded or not
/// (a leader cut off by a partition would otherwise hold it for the chain's 30 s).
pub const RECORD_WAIT: Duration = Duration::from_secs(5);

/// Step 1: the leader's records, when this node forwards writes and another node leads.
pub fn leader(dir: &Directory) -> Option<LeaderRecords> {
    let forwarding = dir.cluster_forwarding.get()?;
    // A blocking wait for the record (`policy::wait_blocking`) must leave the runtime
    // other threads to run the task that makes it.
    let handle = Handle::try_current()
        .ok()
        .filter(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)?;
    let chain = forwarding.leader_chain()?;
    Some(LeaderRecords {
        chain,
        node: Arc::clone(forwarding.node()),
        authz_id: format!("dn:{}", forwarding.bind_dn()),
        handle,
    })
}

/// The way to the leader for one record.
pub struct LeaderRecords {
    chain: Arc<Chain>,
    node: Arc<ClusterNode>,
    /// The forwarding's own identity: the record is not made on a client's behalf.
    authz_id: String,
    handle: Handle,
}

impl LeaderRecords {
    /// Steps 2 to 4 on a task of their own; `told` runs when they end, however they end.
    pub fn send(
        self,
        account: NormDn,
        update: AccountUpdate,
        now: i64,
        told: impl FnOnce() + Send + 'static,
    ) {
        let handle = self.handle.clone();
        handle.spawn(async move {
            let recorded = tokio::time::timeout(RECORD_WAIT, self.record(&account, update, now))
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {RECORD_WAIT:?}")));
            if let Err(why) = recorded {
                tracing::debug!(account = %account.as_str(), error = %why, "password policy: the leader did not record the bind");
            }
            told();
        });
    }

    async fn record(&self, account: &NormDn, update: AccountUpdate, now: i64) -> Result<(), String> {
        let request = request_pdu(account, update, now);
        let reply = self.chain.forward(&request, &self.authz_id).await;
        if reply.code != ResultCode::SUCCESS {
            if !matches!(
                reply.code,
                ResultCode::REFERRAL | ResultCode::UNAVAILABLE | ResultCode::BUSY
            ) {
                tracing::warn!(
                    leader = %self.chain.url(),
                    code = reply.code.0,
                    message = %reply.message,
                    "password policy: the leader refused a bind's record (is cluster.bind_dn the same on every node?)"
                );
            }
            return Err(format!("result {}: {}", reply.code.0, reply.message));
        }
        let applied = BindOutcomeResponse::decode_value(reply.value.as_deref())
            .map_err(|e| format!("the leader's answer: {e}"))?;
        self.node
            .wait_applied(applied.lsn, RECORD_WAIT)
            .await
            .map_err(|e| e.to_string())
    }
}

/// Step 2's request, as a whole LDAPMessage (the chain gives it its message ID).
fn request_pdu(account: &NormDn, update: AccountUpdate, now: i64) -> Vec<u8> {
    let value = BindOutcomeRequest {
        account: account.as_str().as_bytes(),
        outcome: outcome_of(update),
        time_micros: now,
    };
    let mut buf = Vec::new();
    let mut pdu = Vec::new();
    LdapMessage::new(1, ProtocolOp::ExtendedRequest(value.to_request(&mut buf))).encode(&mut pdu);
    pdu
}

/// The protocol's word for a record.
pub fn outcome_of(update: AccountUpdate) -> BindOutcome {
    match update {
        AccountUpdate::RecordFailure => BindOutcome::Failure,
        AccountUpdate::Succeeded => BindOutcome::Success,
        AccountUpdate::UseGrace => BindOutcome::GraceLogin,
    }
}

/// The record the protocol's word asks for.
pub fn update_of(outcome: BindOutcome) -> AccountUpdate {
    match outcome {
        BindOutcome::Failure => AccountUpdate::RecordFailure,
        BindOutcome::Success => AccountUpdate::Succeeded,
        BindOutcome::GraceLogin => AccountUpdate::UseGrace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_has_its_word_and_back() {
        for update in [
            AccountUpdate::RecordFailure,
            AccountUpdate::Succeeded,
            AccountUpdate::UseGrace,
        ] {
            assert_eq!(update_of(outcome_of(update)), update);
        }
    }
}
