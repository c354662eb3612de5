//! The consensus state a cluster snapshot carries in its header: the last entry the
//! snapshot's version holds and the cluster's configuration at that entry. A node starts
//! from its newest snapshot with this state, and the leader sends it (inside the file)
//! to a node that needs the snapshot.
//!
//! Layout, little-endian: format (1 octet, = 1); the last applied log ID (term, leader
//! node, index: three u64); whether the configuration has a log ID (1 octet, 0 or 1) and,
//! if so, that log ID (three u64); the configuration's length (u32) and the configuration
//! in [`encode_membership`]'s form.

use larch_store::consensus::EntryError;
use openraft::{CommittedLeaderId, LogId, StoredMembership};

use crate::member::Member;
use crate::types::{decode_membership, encode_membership, NodeId};

const FORMAT: u8 = 1;

/// What a snapshot's version holds, in the consensus engine's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotState {
    /// The last entry applied.
    pub last: LogId<NodeId>,
    /// The configuration in force at `last`.
    pub membership: StoredMembership<NodeId, Member>,
}

impl SnapshotState {
    /// The octets the snapshot's header carries.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![FORMAT];
        put_log_id(&mut out, &self.last);
        match self.membership.log_id() {
            Some(id) => {
                out.push(1);
                put_log_id(&mut out, id);
            }
            None => out.push(0),
        }
        let config = encode_membership(self.membership.membership());
        out.extend_from_slice(&(config.len() as u32).to_le_bytes());
        out.extend_from_slice(&config);
        out
    }

    /// Reads [`SnapshotState::encode`]'s form.
    pub fn decode(bytes: &[u8]) -> Result<SnapshotState, EntryError> {
        let mut r = Reader(bytes);
        if r.take(1)? != [FORMAT] {
            return Err(EntryError("an unknown snapshot state format"));
        }
        let last = r.log_id()?;
        let membership_id = match r.take(1)? {
            [0] => None,
            [1] => Some(r.log_id()?),
            _ => return Err(EntryError("a bad configuration flag in the snapshot state")),
        };
        let len = u32::from_le_bytes(r.array()?) as usize;
        let config = decode_membership(r.take(len)?)?;
        if !r.0.is_empty() {
            return Err(EntryError("octets after the snapshot state"));
        }
        Ok(SnapshotState {
            last,
            membership: StoredMembership::new(membership_id, config),
        })
    }
}

fn put_log_id(out: &mut Vec<u8>, id: &LogId<NodeId>) {
    out.extend_from_slice(&id.leader_id.term.to_le_bytes());
    out.extend_from_slice(&id.leader_id.node_id.to_le_bytes());
    out.extend_from_slice(&id.index.to_le_bytes());
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EntryError> {
        let got = self
            .0
            .get(..n)
            .ok_or(EntryError("the snapshot state is cut short"))?;
        self.0 = self.0.get(n..).unwrap_or_default();
        Ok(got)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], EntryError> {
        self.take(N)?
            .try_into()
            .map_err(|_| EntryError("the snapshot state is cut short"))
    }

    fn log_id(&mut self) -> Result<LogId<NodeId>, EntryError> {
        let term = u64::from_le_bytes(self.array()?);
        let node = u64::from_le_bytes(self.array()?);
        let index = u64::from_le_bytes(self.array()?);
        Ok(LogId::new(CommittedLeaderId::new(term, node), index))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use openraft::Membership;

    use super::*;

    fn state(with_id: bool) -> SnapshotState {
        let nodes: BTreeMap<u64, Member> = [(1, "127.0.0.1:1"), (2, "127.0.0.2:2")]
            .into_iter()
            .map(|(id, a)| (id, Member::new(a, format!("ldap://{a}"))))
            .collect();
        let config = Membership::new(vec![BTreeSet::from([1, 2])], nodes);
        let id = with_id.then(|| LogId::new(CommittedLeaderId::new(2, 1), 4));
        SnapshotState {
            last: LogId::new(CommittedLeaderId::new(3, 2), 17),
            membership: StoredMembership::new(id, config),
        }
    }

    #[test]
    fn a_snapshot_state_round_trips() {
        for with_id in [true, false] {
            let s = state(with_id);
            assert_eq!(SnapshotState::decode(&s.encode()), Ok(s));
        }
    }

    #[test]
    fn a_damaged_snapshot_state_is_refused() {
        let bytes = state(true).encode();
        for cut in 0..bytes.len() {
            assert!(SnapshotState::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(SnapshotState::decode(&longer).is_err());
        let mut other_format = bytes;
        other_format[0] = 2;
        assert!(SnapshotState::decode(&other_format).is_err());
    }
}
