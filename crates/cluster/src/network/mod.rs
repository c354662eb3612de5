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

/// How long the leader waits for a follower to take one chunk of a snapshot (3 MiB) that
/// is not the last.
pub const SNAPSHOT_CHUNK_TIMEOUT: Duration = Duration::from_secs(120);

/// Octets of snapshot a follower is allowed per second to check and load it, when it
/// answers the last chunk: ten times slower than measured (a million entries, 281 MB,
/// load in about 8 s on a 2-core machine, 35 MB/s; docs/benchmarks.md).
pub const SNAPSHOT_LOAD_OCTETS_PER_SECOND: u64 = 3_500_000;

/// The longest wait for any chunk's answer (openraft's own bound on a chunk,
/// `install_snapshot_timeout`, is set to it; [`snapshot_chunk_timeout`] is what a
/// transport waits): an hour, a snapshot of about 12 GB.
pub const SNAPSHOT_TRANSFER_CEILING: Duration = Duration::from_secs(3600);

/// How long a transport waits for the answer to the snapshot chunk at `offset` of `len`
/// octets, `done` when it is the last. The answer to the last chunk waits until the
/// follower has checked and loaded the whole snapshot, and a chunk that times out makes
/// the leader start the transfer over, so the last one is given the time a load of that
/// size could take: [`SNAPSHOT_CHUNK_TIMEOUT`] plus the whole snapshot at
/// [`SNAPSHOT_LOAD_OCTETS_PER_SECOND`], at most [`SNAPSHOT_TRANSFER_CEILING`].
pub fn snapshot_chunk_timeout(offset: u64, len: usize, done: bool) -> Duration {
    if !done {
        return SNAPSHOT_CHUNK_TIMEOUT;
    }
    let octets = offset.saturating_add(len as u64);
    let load = Duration::from_secs(octets / SNAPSHOT_LOAD_OCTETS_PER_SECOND);
    (SNAPSHOT_CHUNK_TIMEOUT + load).min(SNAPSHOT_TRANSFER_CEILING)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_chunk_waits_for_a_load_of_the_whole_snapshot() {
        assert_eq!(snapshot_chunk_timeout(0, 3 << 20, false), SNAPSHOT_CHUNK_TIMEOUT);
        assert_eq!(
            snapshot_chunk_timeout(1 << 40, 3 << 20, false),
            SNAPSHOT_CHUNK_TIMEOUT
        );
        assert_eq!(snapshot_chunk_timeout(0, 1000, true), SNAPSHOT_CHUNK_TIMEOUT);
        // A million entries (281 MB): 80 s more for the load.
        let million = snapshot_chunk_timeout(281_000_000 - 1_000_000, 1_000_000, true);
        assert_eq!(million, SNAPSHOT_CHUNK_TIMEOUT + Duration::from_secs(80));
        assert_eq!(
            snapshot_chunk_timeout(u64::MAX, 10, true),
            SNAPSHOT_TRANSFER_CEILING
        );
    }
}
