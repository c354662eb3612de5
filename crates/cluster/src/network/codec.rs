//! The messages nodes exchange over TCP, as octets: openraft's requests and replies and a
//! remote error, each in one length-prefixed frame. Hand-written (openraft is built
//! without serde); all integers little-endian.
//!
//! A frame:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | length `n` of what follows (kind, request ID, body), u32; 9 to [`MAX_FRAME_OCTETS`] |
//! | 4 | 1 | kind (below) |
//! | 5 | 8 | request ID, u64: chosen by the caller, echoed by the reply |
//! | 13 | `n - 9` | body |
//!
//! Kinds and bodies:
//!
//! | kind | message | body |
//! | --- | --- | --- |
//! | 1 | vote request | vote, last log ID? |
//! | 2 | vote reply | vote, granted (bool), last log ID? |
//! | 3 | append entries | vote, previous log ID?, leader commit?, entry count (u32), entries |
//! | 4 | append entries reply | tag (u8): 0 success, 1 partial success + log ID?, 2 conflict, 3 higher vote + vote |
//! | 5 | install snapshot | vote, last log ID?, membership's log ID?, membership (octets), snapshot ID (text), offset (u64), data (octets), done (bool) |
//! | 6 | install snapshot reply | vote |
//! | 7 | remote error | what (u8): 0 the engine stopped, 1 it panicked, 2 other; the error as text |
//! | 8 | read index request | (empty) |
//! | 9 | read index reply | read log ID? |
//!
//! The parts:
//! - vote: term (u64), candidate node (u64), committed (bool);
//! - log ID: term (u64), leader node (u64), index (u64); `?` marks an optional one, a
//!   presence octet (0 or 1) first;
//! - bool: one octet, 0 or 1;
//! - octets and text: a length (u32) and the octets (text: UTF-8);
//! - membership: [`encode_membership`]'s form (each member's Raft address and LDAP URL),
//!   as octets;
//! - entry: its log ID, then the store's [`ReplicatedEntry::encode`] form as octets (the
//!   entry's term and leader appear in both, and must agree).
//!
//! Decoding is total: any input gives a message or a [`CodecError`]; no length is trusted
//! beyond the octets actually present, and no frame beyond [`MAX_FRAME_OCTETS`].

use std::error::Error;

use larch_store::consensus::{lsn_of_index, EntryError, Leadership, ReplicatedEntry};
use openraft::error::{Fatal, NetworkError, RPCError, RaftError, RemoteError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{CommittedLeaderId, LogId, SnapshotMeta, StoredMembership, Vote};

use crate::types::{
    decode_membership, encode_entry, encode_membership, from_replicated, Entry, Larch, Member, NodeId,
};

/// The largest frame, not counting its length field: 64 MiB. A peer announcing more is
/// disconnected; a request that would be larger is not sent.
pub const MAX_FRAME_OCTETS: usize = 64 * 1024 * 1024;

/// Octets of a frame's length field.
pub const LENGTH_OCTETS: usize = 4;

/// The smallest frame after its length field: a kind and a request ID.
const MIN_FRAME_OCTETS: usize = 1 + 8;

/// The smallest encoded entry: a log ID, a length and the store's 17-octet header.
const MIN_ENTRY_OCTETS: usize = 8 + 8 + 8 + 4 + 17;

const KIND_VOTE_REQUEST: u8 = 1;
const KIND_VOTE_RESPONSE: u8 = 2;
const KIND_APPEND_REQUEST: u8 = 3;
const KIND_APPEND_RESPONSE: u8 = 4;
const KIND_SNAPSHOT_REQUEST: u8 = 5;
const KIND_SNAPSHOT_RESPONSE: u8 = 6;
const KIND_REMOTE_ERROR: u8 = 7;
const KIND_READ_INDEX_REQUEST: u8 = 8;
const KIND_READ_INDEX_RESPONSE: u8 = 9;

const APPEND_SUCCESS: u8 = 0;
const APPEND_PARTIAL_SUCCESS: u8 = 1;
const APPEND_CONFLICT: u8 = 2;
const APPEND_HIGHER_VOTE: u8 = 3;

/// Why octets are not a frame, or a message cannot become one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A frame longer than [`MAX_FRAME_OCTETS`].
    #[error("a frame of {0} octets, more than the limit of {MAX_FRAME_OCTETS}")]
    TooLarge(usize),
    /// Octets that are not a frame.
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
    /// An entry the store cannot read.
    #[error("malformed frame: {0}")]
    Entry(#[from] EntryError),
}

/// One message of the protocol.
#[derive(Debug)]
pub enum Message {
    /// A candidate asks for a vote.
    VoteRequest(VoteRequest<NodeId>),
    /// The answer to a vote request.
    VoteResponse(VoteResponse<NodeId>),
    /// The leader sends entries (or a heartbeat).
    AppendEntriesRequest(AppendEntriesRequest<Larch>),
    /// The answer to an append.
    AppendEntriesResponse(AppendEntriesResponse<NodeId>),
    /// The leader sends a chunk of a snapshot.
    InstallSnapshotRequest(InstallSnapshotRequest<Larch>),
    /// The answer to a snapshot chunk.
    InstallSnapshotResponse(InstallSnapshotResponse<NodeId>),
    /// The engine called failed.
    RemoteError(RemoteFailure),
    /// A follower asks the leader for its read index.
    ReadIndexRequest,
    /// The leader's read log ID, once a majority confirmed it leads.
    ReadIndexResponse(Option<LogId<NodeId>>),
}

/// How the called engine failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The engine has stopped.
    Stopped,
    /// The engine panicked.
    Panicked,
    /// Anything else (a storage error, a snapshot mismatch): known by its text only.
    Other,
}

/// A remote engine's error, as it travels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFailure {
    /// What failed.
    pub kind: FailureKind,
    /// The error as the remote engine shows it.
    pub text: String,
}

impl RemoteFailure {
    /// The travelling form of an engine's error.
    pub fn from_raft_error<E: Error>(error: &RaftError<NodeId, E>) -> RemoteFailure {
        let kind = match error {
            RaftError::Fatal(Fatal::Stopped) => FailureKind::Stopped,
            RaftError::Fatal(Fatal::Panicked) => FailureKind::Panicked,
            _ => FailureKind::Other,
        };
        RemoteFailure {
            kind,
            text: error.to_string(),
        }
    }

    /// The error the caller of node `target` (at `node`) sees: the engine's own error when
    /// it can be rebuilt (stopped, panicked), else a network error carrying the text.
    pub fn into_rpc_error<E: Error>(
        self,
        target: NodeId,
        node: &Member,
    ) -> RPCError<NodeId, Member, RaftError<NodeId, E>> {
        let remote = |fatal| {
            RPCError::RemoteError(RemoteError::new_with_node(
                target,
                node.clone(),
                RaftError::Fatal(fatal),
            ))
        };
        match self.kind {
            FailureKind::Stopped => remote(Fatal::Stopped),
            FailureKind::Panicked => remote(Fatal::Panicked),
            FailureKind::Other => {
                let why = std::io::Error::other(format!(
                    "node {target} at {} could not serve the call: {}",
                    node.raft, self.text
                ));
                RPCError::Network(NetworkError::new(&why))
            }
        }
    }
}

impl Message {
    fn kind(&self) -> u8 {
        match self {
            Message::VoteRequest(_) => KIND_VOTE_REQUEST,
            Message::VoteResponse(_) => KIND_VOTE_RESPONSE,
            Message::AppendEntriesRequest(_) => KIND_APPEND_REQUEST,
            Message::AppendEntriesResponse(_) => KIND_APPEND_RESPONSE,
            Message::InstallSnapshotRequest(_) => KIND_SNAPSHOT_REQUEST,
            Message::InstallSnapshotResponse(_) => KIND_SNAPSHOT_RESPONSE,
            Message::RemoteError(_) => KIND_REMOTE_ERROR,
            Message::ReadIndexRequest => KIND_READ_INDEX_REQUEST,
            Message::ReadIndexResponse(_) => KIND_READ_INDEX_RESPONSE,
        }
    }

    /// What the message is, for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Message::VoteRequest(_) => "a vote request",
            Message::VoteResponse(_) => "a vote reply",
            Message::AppendEntriesRequest(_) => "an append-entries request",
            Message::AppendEntriesResponse(_) => "an append-entries reply",
            Message::InstallSnapshotRequest(_) => "an install-snapshot request",
            Message::InstallSnapshotResponse(_) => "an install-snapshot reply",
            Message::RemoteError(_) => "a remote error",
            Message::ReadIndexRequest => "a read index request",
            Message::ReadIndexResponse(_) => "a read index reply",
        }
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        match self {
            Message::VoteRequest(r) => {
                put_vote(out, &r.vote);
                put_log_id(out, r.last_log_id.as_ref());
            }
            Message::VoteResponse(r) => {
                put_vote(out, &r.vote);
                put_bool(out, r.vote_granted);
                put_log_id(out, r.last_log_id.as_ref());
            }
            Message::AppendEntriesRequest(r) => put_append_request(out, r)?,
            Message::AppendEntriesResponse(r) => put_append_response(out, r),
            Message::InstallSnapshotRequest(r) => put_snapshot_request(out, r)?,
            Message::InstallSnapshotResponse(r) => put_vote(out, &r.vote),
            Message::RemoteError(f) => {
                out.push(match f.kind {
                    FailureKind::Stopped => 0,
                    FailureKind::Panicked => 1,
                    FailureKind::Other => 2,
                });
                put_octets(out, f.text.as_bytes())?;
            }
            Message::ReadIndexRequest => {}
            Message::ReadIndexResponse(read) => put_log_id(out, read.as_ref()),
        }
        Ok(())
    }
}

/// `message` as a frame carrying `request_id`; an error if it would exceed
/// [`MAX_FRAME_OCTETS`].
pub fn encode_frame(request_id: u64, message: &Message) -> Result<Vec<u8>, CodecError> {
    let mut out = vec![0; LENGTH_OCTETS];
    out.push(message.kind());
    out.extend_from_slice(&request_id.to_le_bytes());
    message.encode_body(&mut out)?;
    let len = out.len() - LENGTH_OCTETS;
    if len > MAX_FRAME_OCTETS {
        return Err(CodecError::TooLarge(len));
    }
    let prefix = u32::try_from(len).map_err(|_| CodecError::TooLarge(len))?;
    out[..LENGTH_OCTETS].copy_from_slice(&prefix.to_le_bytes());
    Ok(out)
}

/// The length a frame's length field announces, if it is one a frame may have: the
/// octets to read (and allocate) next.
pub fn frame_len(prefix: [u8; LENGTH_OCTETS]) -> Result<usize, CodecError> {
    let len = u32::from_le_bytes(prefix) as usize;
    if len > MAX_FRAME_OCTETS {
        return Err(CodecError::TooLarge(len));
    }
    if len < MIN_FRAME_OCTETS {
        return Err(CodecError::Malformed(
            "a frame too short for its kind and request ID",
        ));
    }
    Ok(len)
}

/// The request ID and message of a frame without its length field (the `n` octets
/// [`frame_len`] announced).
pub fn decode_frame_body(body: &[u8]) -> Result<(u64, Message), CodecError> {
    if body.len() > MAX_FRAME_OCTETS {
        return Err(CodecError::TooLarge(body.len()));
    }
    let mut r = Reader(body);
    let kind = r.u8()?;
    let request_id = r.u64()?;
    let message = match kind {
        KIND_VOTE_REQUEST => Message::VoteRequest(VoteRequest {
            vote: r.vote()?,
            last_log_id: r.log_id()?,
        }),
        KIND_VOTE_RESPONSE => Message::VoteResponse(VoteResponse {
            vote: r.vote()?,
            vote_granted: r.bool()?,
            last_log_id: r.log_id()?,
        }),
        KIND_APPEND_REQUEST => Message::AppendEntriesRequest(r.append_request()?),
        KIND_APPEND_RESPONSE => Message::AppendEntriesResponse(r.append_response()?),
        KIND_SNAPSHOT_REQUEST => Message::InstallSnapshotRequest(r.snapshot_request()?),
        KIND_SNAPSHOT_RESPONSE => {
            Message::InstallSnapshotResponse(InstallSnapshotResponse { vote: r.vote()? })
        }
        KIND_REMOTE_ERROR => Message::RemoteError(r.remote_failure()?),
        KIND_READ_INDEX_REQUEST => Message::ReadIndexRequest,
        KIND_READ_INDEX_RESPONSE => Message::ReadIndexResponse(r.log_id()?),
        _ => return Err(CodecError::Malformed("an unknown message kind")),
    };
    if !r.0.is_empty() {
        return Err(CodecError::Malformed("octets after the message"));
    }
    Ok((request_id, message))
}

/// The request ID and message of a whole frame (length field included), which must be
/// exactly `bytes`.
pub fn decode_frame(bytes: &[u8]) -> Result<(u64, Message), CodecError> {
    let prefix = bytes
        .get(..LENGTH_OCTETS)
        .and_then(|p| <[u8; LENGTH_OCTETS]>::try_from(p).ok())
        .ok_or(CodecError::Malformed("a frame cut short in its length"))?;
    let len = frame_len(prefix)?;
    let body = bytes.get(LENGTH_OCTETS..).unwrap_or_default();
    if body.len() < len {
        return Err(CodecError::Malformed("a frame cut short"));
    }
    if body.len() > len {
        return Err(CodecError::Malformed("octets after the frame"));
    }
    decode_frame_body(body)
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(u8::from(v));
}

fn put_octets(out: &mut Vec<u8>, octets: &[u8]) -> Result<(), CodecError> {
    let len = u32::try_from(octets.len()).map_err(|_| CodecError::TooLarge(octets.len()))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(octets);
    Ok(())
}

fn put_vote(out: &mut Vec<u8>, vote: &Vote<NodeId>) {
    put_u64(out, vote.leader_id.term);
    put_u64(out, vote.leader_id.node_id);
    put_bool(out, vote.committed);
}

fn put_log_id(out: &mut Vec<u8>, log_id: Option<&LogId<NodeId>>) {
    put_bool(out, log_id.is_some());
    if let Some(id) = log_id {
        put_present_log_id(out, id);
    }
}

fn put_present_log_id(out: &mut Vec<u8>, id: &LogId<NodeId>) {
    put_u64(out, id.leader_id.term);
    put_u64(out, id.leader_id.node_id);
    put_u64(out, id.index);
}

fn put_entry(out: &mut Vec<u8>, entry: &Entry) -> Result<(), CodecError> {
    put_present_log_id(out, &entry.log_id);
    // `put_octets` without a copy: the length goes before the entry once it is written.
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    encode_entry(entry, out);
    let written = out.len() - at - 4;
    let len = u32::try_from(written).map_err(|_| CodecError::TooLarge(written))?;
    if let Some(slot) = out.get_mut(at..at + 4) {
        slot.copy_from_slice(&len.to_le_bytes());
    }
    Ok(())
}

fn put_append_request(out: &mut Vec<u8>, r: &AppendEntriesRequest<Larch>) -> Result<(), CodecError> {
    put_vote(out, &r.vote);
    put_log_id(out, r.prev_log_id.as_ref());
    put_log_id(out, r.leader_commit.as_ref());
    let count = u32::try_from(r.entries.len()).map_err(|_| CodecError::TooLarge(r.entries.len()))?;
    out.extend_from_slice(&count.to_le_bytes());
    for entry in &r.entries {
        put_entry(out, entry)?;
        if out.len() > MAX_FRAME_OCTETS + LENGTH_OCTETS {
            return Err(CodecError::TooLarge(out.len() - LENGTH_OCTETS));
        }
    }
    Ok(())
}

fn put_append_response(out: &mut Vec<u8>, r: &AppendEntriesResponse<NodeId>) {
    match r {
        AppendEntriesResponse::Success => out.push(APPEND_SUCCESS),
        AppendEntriesResponse::PartialSuccess(matching) => {
            out.push(APPEND_PARTIAL_SUCCESS);
            put_log_id(out, matching.as_ref());
        }
        AppendEntriesResponse::Conflict => out.push(APPEND_CONFLICT),
        AppendEntriesResponse::HigherVote(vote) => {
            out.push(APPEND_HIGHER_VOTE);
            put_vote(out, vote);
        }
    }
}

fn put_snapshot_request(out: &mut Vec<u8>, r: &InstallSnapshotRequest<Larch>) -> Result<(), CodecError> {
    put_vote(out, &r.vote);
    put_log_id(out, r.meta.last_log_id.as_ref());
    put_log_id(out, r.meta.last_membership.log_id().as_ref());
    put_octets(out, &encode_membership(r.meta.last_membership.membership()))?;
    put_octets(out, r.meta.snapshot_id.as_bytes())?;
    put_u64(out, r.offset);
    put_octets(out, &r.data)?;
    put_bool(out, r.done);
    Ok(())
}

/// Reads the parts of a frame from the front of its octets.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.0.len() {
            return Err(CodecError::Malformed("a message cut short"));
        }
        let (got, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(got)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        self.take(N)?
            .try_into()
            .map_err(|_| CodecError::Malformed("a message cut short"))
    }

    fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn bool(&mut self) -> Result<bool, CodecError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(CodecError::Malformed("a flag neither 0 nor 1")),
        }
    }

    fn octets(&mut self) -> Result<&'a [u8], CodecError> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    fn text(&mut self) -> Result<String, CodecError> {
        let octets = self.octets()?;
        std::str::from_utf8(octets)
            .map(str::to_owned)
            .map_err(|_| CodecError::Malformed("text that is not UTF-8"))
    }

    fn vote(&mut self) -> Result<Vote<NodeId>, CodecError> {
        let term = self.u64()?;
        let node = self.u64()?;
        Ok(if self.bool()? {
            Vote::new_committed(term, node)
        } else {
            Vote::new(term, node)
        })
    }

    fn present_log_id(&mut self) -> Result<LogId<NodeId>, CodecError> {
        let term = self.u64()?;
        let node = self.u64()?;
        let index = self.u64()?;
        Ok(LogId::new(CommittedLeaderId::new(term, node), index))
    }

    fn log_id(&mut self) -> Result<Option<LogId<NodeId>>, CodecError> {
        if self.bool()? {
            self.present_log_id().map(Some)
        } else {
            Ok(None)
        }
    }

    fn entry(&mut self) -> Result<Entry, CodecError> {
        let log_id = self.present_log_id()?;
        let replicated = ReplicatedEntry::decode(self.octets()?)?;
        let leader = Leadership {
            term: log_id.leader_id.term,
            node: log_id.leader_id.node_id,
        };
        if replicated.leadership != leader {
            return Err(CodecError::Malformed(
                "an entry whose log ID and body name different leaders",
            ));
        }
        if log_id.index == u64::MAX {
            return Err(CodecError::Malformed("an entry index beyond the log"));
        }
        Ok(from_replicated(lsn_of_index(log_id.index), replicated)?)
    }

    fn append_request(&mut self) -> Result<AppendEntriesRequest<Larch>, CodecError> {
        let vote = self.vote()?;
        let prev_log_id = self.log_id()?;
        let leader_commit = self.log_id()?;
        let count = self.u32()? as usize;
        if count > self.0.len() / MIN_ENTRY_OCTETS {
            return Err(CodecError::Malformed("more entries than the frame can hold"));
        }
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            entries.push(self.entry()?);
        }
        Ok(AppendEntriesRequest {
            vote,
            prev_log_id,
            entries,
            leader_commit,
        })
    }

    fn append_response(&mut self) -> Result<AppendEntriesResponse<NodeId>, CodecError> {
        match self.u8()? {
            APPEND_SUCCESS => Ok(AppendEntriesResponse::Success),
            APPEND_PARTIAL_SUCCESS => Ok(AppendEntriesResponse::PartialSuccess(self.log_id()?)),
            APPEND_CONFLICT => Ok(AppendEntriesResponse::Conflict),
            APPEND_HIGHER_VOTE => Ok(AppendEntriesResponse::HigherVote(self.vote()?)),
            _ => Err(CodecError::Malformed("an unknown append-entries reply")),
        }
    }

    fn snapshot_request(&mut self) -> Result<InstallSnapshotRequest<Larch>, CodecError> {
        let vote = self.vote()?;
        let last_log_id = self.log_id()?;
        let membership_log_id = self.log_id()?;
        let membership = decode_membership(self.octets()?)?;
        let snapshot_id = self.text()?;
        let offset = self.u64()?;
        let data = self.octets()?.to_vec();
        let done = self.bool()?;
        Ok(InstallSnapshotRequest {
            vote,
            meta: SnapshotMeta {
                last_log_id,
                last_membership: StoredMembership::new(membership_log_id, membership),
                snapshot_id,
            },
            offset,
            data,
            done,
        })
    }

    fn remote_failure(&mut self) -> Result<RemoteFailure, CodecError> {
        let kind = match self.u8()? {
            0 => FailureKind::Stopped,
            1 => FailureKind::Panicked,
            2 => FailureKind::Other,
            _ => return Err(CodecError::Malformed("an unknown remote error")),
        };
        Ok(RemoteFailure {
            kind,
            text: self.text()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use larch_store::consensus::WriteBatch;
    use openraft::{EntryPayload, Membership};
    use proptest::prelude::*;

    use super::*;
    use crate::types::ClusterMembership;

    fn log_id(term: u64, node: u64, index: u64) -> LogId<NodeId> {
        LogId::new(CommittedLeaderId::new(term, node), index)
    }

    fn membership() -> ClusterMembership {
        let nodes: BTreeMap<u64, Member> = [(1, "127.0.0.1:7001"), (2, "127.0.0.1:7002"), (3, "[::1]:7003")]
            .into_iter()
            .map(|(id, a)| (id, Member::new(a, format!("ldap://{a}"))))
            .collect();
        Membership::new(vec![BTreeSet::from([1, 2, 3])], nodes)
    }

    fn entries() -> Vec<Entry> {
        vec![
            Entry {
                log_id: log_id(3, 2, 0),
                payload: EntryPayload::Blank,
            },
            Entry {
                log_id: log_id(3, 2, 1),
                payload: EntryPayload::Membership(membership()),
            },
            Entry {
                log_id: log_id(3, 2, 2),
                payload: EntryPayload::Normal(WriteBatch {
                    expected_lsn: 3,
                    writes: vec![vec![vec![1, 2, 3], vec![], vec![9; 300]], vec![vec![4]]],
                }),
            },
        ]
    }

    fn append_request(entries: Vec<Entry>) -> AppendEntriesRequest<Larch> {
        AppendEntriesRequest {
            vote: Vote::new_committed(3, 2),
            prev_log_id: Some(log_id(2, 1, 7)),
            entries,
            leader_commit: None,
        }
    }

    fn snapshot_request() -> InstallSnapshotRequest<Larch> {
        InstallSnapshotRequest {
            vote: Vote::new_committed(5, 1),
            meta: SnapshotMeta {
                last_log_id: Some(log_id(5, 1, 99)),
                last_membership: StoredMembership::new(Some(log_id(4, 3, 10)), membership()),
                snapshot_id: "snap-99".into(),
            },
            offset: 4096,
            data: vec![7; 1000],
            done: true,
        }
    }

    /// Every message there is, with every variant of each.
    fn every_message() -> Vec<Message> {
        vec![
            Message::VoteRequest(VoteRequest::new(Vote::new(4, 2), Some(log_id(3, 1, 12)))),
            Message::VoteRequest(VoteRequest::new(Vote::new(1, 1), None)),
            Message::VoteResponse(VoteResponse::new(
                Vote::new_committed(4, 2),
                Some(log_id(3, 1, 12)),
                true,
            )),
            Message::VoteResponse(VoteResponse::new(Vote::new(9, 3), None, false)),
            Message::AppendEntriesRequest(append_request(entries())),
            Message::AppendEntriesRequest(append_request(Vec::new())),
            Message::AppendEntriesRequest(AppendEntriesRequest {
                vote: Vote::new_committed(u64::MAX, u64::MAX),
                prev_log_id: None,
                entries: Vec::new(),
                leader_commit: Some(log_id(1, 1, 1)),
            }),
            Message::AppendEntriesResponse(AppendEntriesResponse::Success),
            Message::AppendEntriesResponse(AppendEntriesResponse::PartialSuccess(Some(log_id(3, 2, 1)))),
            Message::AppendEntriesResponse(AppendEntriesResponse::PartialSuccess(None)),
            Message::AppendEntriesResponse(AppendEntriesResponse::Conflict),
            Message::AppendEntriesResponse(AppendEntriesResponse::HigherVote(Vote::new_committed(8, 3))),
            Message::InstallSnapshotRequest(snapshot_request()),
            Message::InstallSnapshotResponse(InstallSnapshotResponse {
                vote: Vote::new(5, 1),
            }),
            Message::RemoteError(RemoteFailure {
                kind: FailureKind::Stopped,
                text: "raft stopped".into(),
            }),
            Message::RemoteError(RemoteFailure {
                kind: FailureKind::Other,
                text: "storage error: the disk is full — «ü»".into(),
            }),
            Message::ReadIndexRequest,
            Message::ReadIndexResponse(None),
            Message::ReadIndexResponse(Some(log_id(3, 2, 41))),
        ]
    }

    /// Compares messages by their debug form (openraft's requests lack `PartialEq`).
    fn same(a: &Message, b: &Message) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn every_message_round_trips() {
        for (i, message) in every_message().into_iter().enumerate() {
            let id = 0x0102_0304_0506_0708 ^ i as u64;
            let frame = encode_frame(id, &message).unwrap();
            let (got_id, got) = decode_frame(&frame).unwrap();
            assert_eq!(got_id, id);
            assert!(same(&got, &message), "{got:?} != {message:?}");
        }
    }

    #[test]
    fn entries_keep_their_payload_exactly() {
        let request = append_request(entries());
        let frame = encode_frame(1, &Message::AppendEntriesRequest(request.clone())).unwrap();
        match decode_frame(&frame).unwrap().1 {
            Message::AppendEntriesRequest(got) => assert_eq!(got.entries, request.entries),
            other => panic!("decoded as {other:?}"),
        }
    }

    #[test]
    fn truncated_frames_are_refused() {
        for message in every_message() {
            let frame = encode_frame(7, &message).unwrap();
            for cut in 0..frame.len() {
                assert!(
                    decode_frame(&frame[..cut]).is_err(),
                    "{} cut at {cut}",
                    message.name()
                );
            }
            // A body cut short, with its length field telling the truth about it.
            for cut in MIN_FRAME_OCTETS..frame.len() - LENGTH_OCTETS {
                let body = &frame[LENGTH_OCTETS..LENGTH_OCTETS + cut];
                assert!(
                    decode_frame_body(body).is_err(),
                    "{} body cut at {cut}",
                    message.name()
                );
            }
            let mut longer = frame.clone();
            longer.push(0);
            assert!(decode_frame(&longer).is_err());
        }
    }

    #[test]
    fn lengths_beyond_the_limit_are_refused_before_reading() {
        let too_long = (MAX_FRAME_OCTETS as u32 + 1).to_le_bytes();
        assert_eq!(
            frame_len(too_long),
            Err(CodecError::TooLarge(MAX_FRAME_OCTETS + 1))
        );
        assert!(frame_len(u32::MAX.to_le_bytes()).is_err());
        assert!(frame_len(8u32.to_le_bytes()).is_err());
        assert_eq!(frame_len(9u32.to_le_bytes()), Ok(9));
    }

    #[test]
    fn an_entry_count_beyond_the_frame_is_refused() {
        let mut frame = encode_frame(1, &Message::AppendEntriesRequest(append_request(Vec::new()))).unwrap();
        let count_at = frame.len() - 4;
        frame[count_at..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_frame(&frame).is_err());
    }

    #[test]
    fn an_entry_naming_two_leaders_is_refused() {
        let mut frame = encode_frame(1, &Message::AppendEntriesRequest(append_request(entries()))).unwrap();
        // The first entry's log ID starts after the header, vote, two optional log IDs and
        // the count; its term is changed, the store's copy of it is not.
        let first_term = LENGTH_OCTETS + MIN_FRAME_OCTETS + 17 + 25 + 1 + 4;
        frame[first_term] ^= 1;
        assert!(matches!(decode_frame(&frame), Err(CodecError::Malformed(_))));
    }

    #[test]
    fn a_too_large_request_is_not_encoded() {
        let big = Entry {
            log_id: log_id(1, 1, 0),
            payload: EntryPayload::Normal(WriteBatch {
                expected_lsn: 1,
                writes: vec![vec![vec![0; MAX_FRAME_OCTETS / 2 + 1]; 2]],
            }),
        };
        let result = encode_frame(1, &Message::AppendEntriesRequest(append_request(vec![big])));
        assert!(matches!(result, Err(CodecError::TooLarge(_))), "{result:?}");
    }

    #[test]
    fn remote_failures_become_errors_a_person_understands() {
        let node = Member::new("127.0.0.1:7002", "ldap://127.0.0.1:3892");
        let stopped = RemoteFailure::from_raft_error(&RaftError::<NodeId>::Fatal(Fatal::Stopped));
        assert_eq!(stopped.kind, FailureKind::Stopped);
        let error = stopped.into_rpc_error::<std::convert::Infallible>(2, &node);
        assert!(matches!(error, RPCError::RemoteError(_)), "{error:?}");

        let other = RemoteFailure {
            kind: FailureKind::Other,
            text: "the disk is full".into(),
        };
        let error = other.into_rpc_error::<std::convert::Infallible>(2, &node);
        assert!(matches!(error, RPCError::Network(_)), "{error:?}");
        let shown = error.to_string();
        assert!(
            shown.contains("node 2 at 127.0.0.1:7002") && shown.contains("the disk is full"),
            "{shown}"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_octets_never_panic_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_frame(&bytes);
            let _ = decode_frame_body(&bytes);
        }

        #[test]
        fn arbitrary_bodies_of_every_kind_never_panic_the_decoder(
            kind in 1u8..=7,
            rest in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let mut body = vec![kind];
            body.extend_from_slice(&[0; 8]);
            body.extend_from_slice(&rest);
            let _ = decode_frame_body(&body);
        }

        #[test]
        fn damaged_frames_never_panic_the_decoder(
            which in 0usize..16,
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        ) {
            let messages = every_message();
            let mut frame = encode_frame(3, &messages[which % messages.len()]).unwrap();
            for (at, value) in flips {
                let i = at.index(frame.len());
                frame[i] = value;
            }
            let _ = decode_frame(&frame);
        }
    }
}
