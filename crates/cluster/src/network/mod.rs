//! How nodes reach each other. [`memory`]: in one process, with seeded faults, for tests;
//! [`tcp`]: between processes, over TCP or mutual TLS, its messages encoded by [`codec`].

pub mod codec;
pub mod memory;
pub mod tcp;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use openraft::LogId;

use crate::member::Member;

use crate::types::NodeId;

/// What a read index call gives: the leader's read log ID (`None` while its log is empty),
/// or why there is none.
pub type ReadIndexResult = Result<Option<LogId<NodeId>>, String>;

/// How a follower asks the leader for its read index (a linearizable read on a follower,
/// [`crate::ClusterNode::read_barrier`]): the leader confirms with a majority that it
/// still leads and answers the log ID the follower must have applied before it reads.
pub trait ReadIndex: Send + Sync + 'static {
    /// Asks node `leader`, reached at `node`, within `timeout`.
    fn read_index(
        &self,
        leader: NodeId,
        node: Member,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ReadIndexResult> + Send + 'static>>;
}
