//! Linearizable reads ([`crate::ClusterNode::read_barrier`]): before a read, a node learns
//! the leader's read index (the log ID the leader had committed when a majority confirmed,
//! after the read began, that it still leads) and waits until it has applied that far.
//! The read then sees every write acknowledged before it began, on any node.
//!
//! Reads share rounds, in steps:
//! 1. a read joins the waiting list; if no round is running, it starts one (a task);
//! 2. a round takes the whole waiting list, then asks for the read index once: the leader
//!    asks its engine (`get_read_log_id`: a heartbeat to a majority); a follower asks the
//!    leader over the transport ([`ReadIndex`]); a failure (no leader known, a heartbeat
//!    round that missed the majority) is asked again every [`RETRY_PAUSE`] until the
//!    timeout, then fails the round;
//! 3. every read of the round gets the answer, then waits on its own until its node has
//!    applied the read index (at most the timeout);
//! 4. the round starts again while reads are waiting, else ends.
//!
//! A read is answered only by a round that started after it joined (step 2 takes the list
//! before it asks), which is what linearizability needs; reads that arrive while a round
//! is out wait for the next one, so the leader sees one request per round trip whatever
//! the number of readers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::Raft;
use tokio::sync::oneshot;

use crate::network::{ReadIndex, ReadIndexResult};
use crate::types::{Larch, NodeId};

/// How long a round waits before it asks again after a failure.
pub const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// The reads waiting for the next round, and whether a round runs.
#[derive(Default)]
struct Rounds {
    running: bool,
    waiting: Vec<oneshot::Sender<ReadIndexResult>>,
}

/// A node's read barrier; clones share it.
#[derive(Clone)]
pub(crate) struct ReadBarrier {
    me: NodeId,
    raft: Raft<Larch>,
    client: Arc<dyn ReadIndex>,
    timeout: Duration,
    rounds: Arc<Mutex<Rounds>>,
}

impl ReadBarrier {
    pub(crate) fn new(me: NodeId, raft: Raft<Larch>, client: Arc<dyn ReadIndex>, timeout: Duration) -> Self {
        ReadBarrier {
            me,
            raft,
            client,
            timeout,
            rounds: Arc::default(),
        }
    }

    /// Returns once this node has applied every write acknowledged before the call, or
    /// why it cannot say so within the timeout.
    pub(crate) async fn wait(&self) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut rounds = self.rounds.lock().unwrap_or_else(|e| e.into_inner());
            rounds.waiting.push(tx);
            !std::mem::replace(&mut rounds.running, true)
        };
        if start {
            tokio::spawn(self.clone().run_rounds());
        }
        let read = rx.await.map_err(|_| "the cluster engine stopped".to_string())??;
        let Some(read) = read else { return Ok(()) };
        self.raft
            .wait(Some(self.timeout))
            .applied_index_at_least(Some(read.index), "a linearizable read")
            .await
            .map(drop)
            .map_err(|e| format!("this node did not apply the leader's read index in time: {e}"))
    }

    /// Steps 2 to 4.
    async fn run_rounds(self) {
        loop {
            let round = {
                let mut rounds = self.rounds.lock().unwrap_or_else(|e| e.into_inner());
                if rounds.waiting.is_empty() {
                    rounds.running = false;
                    return;
                }
                std::mem::take(&mut rounds.waiting)
            };
            let answer = self.ask_until_answered().await;
            for read in round {
                let _ = read.send(answer.clone());
            }
        }
    }

    /// Step 2: [`ReadBarrier::ask`] until it answers or the timeout passes.
    async fn ask_until_answered(&self) -> ReadIndexResult {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let answer = self.ask().await;
            if answer.is_ok() || tokio::time::Instant::now() + RETRY_PAUSE >= deadline {
                return answer;
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    /// Step 2's question, to this node's engine when it leads, else to the leader.
    async fn ask(&self) -> ReadIndexResult {
        let metrics = self.raft.metrics().borrow().clone();
        match metrics.current_leader {
            Some(leader) if leader == self.me => {
                tokio::time::timeout(self.timeout, self.raft.get_read_log_id())
                    .await
                    .map_err(|_| format!("a majority did not confirm this leader within {:?}", self.timeout))?
                    .map(|(read, _applied)| read)
                    .map_err(|e| e.to_string())
            }
            Some(leader) => {
                let node = metrics
                    .membership_config
                    .membership()
                    .get_node(&leader)
                    .cloned()
                    .ok_or_else(|| format!("the leader, node {leader}, is not in the configuration"))?;
                self.client.read_index(leader, node, self.timeout).await
            }
            None => Err("no leader is known (an election is under way, or no majority is reachable)".into()),
        }
    }
}
