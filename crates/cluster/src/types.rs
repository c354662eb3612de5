//! The types openraft is instantiated with, and the conversions between its log entries
//! and the store's ([`larch_store::consensus::entry`]).

use std::collections::{BTreeMap, BTreeSet};

use larch_store::consensus::{
    encode_entry_into, index_of_lsn, lsn_of_index, Applied, BodyRef, EntryBody, EntryError, Leadership,
    ReplicatedEntry, WriteBatch,
};
use larch_store::wal::Lsn;
use openraft::{CommittedLeaderId, EntryPayload, LogId, Membership};

pub use crate::member::Member;

openraft::declare_raft_types!(
    /// Larch's instance of openraft: a batch of writes in, what applying it did out; nodes
    /// named by a number, each a [`Member`] (Raft address and LDAP URL).
    pub Larch:
        D = WriteBatch,
        R = Applied,
        NodeId = u64,
        Node = Member,
        Entry = openraft::Entry<Larch>,
        SnapshotData = crate::snapshot_file::SnapshotFile,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A node's number in the cluster.
pub type NodeId = u64;
/// An entry of openraft's log.
pub type Entry = openraft::Entry<Larch>;
/// A cluster configuration.
pub type ClusterMembership = Membership<NodeId, Member>;

/// The LSN of an entry.
pub fn lsn_of(log_id: &LogId<NodeId>) -> Lsn {
    lsn_of_index(log_id.index)
}

/// The log ID of an entry at `lsn` appended under `leadership`.
pub fn log_id_at(lsn: Lsn, leadership: Leadership) -> Option<LogId<NodeId>> {
    let index = index_of_lsn(lsn)?;
    Some(LogId::new(
        CommittedLeaderId::new(leadership.term, leadership.node),
        index,
    ))
}

/// Appends the store's form of `entry` (what its WAL record holds) to `out`, without a copy
/// of its writes.
pub fn encode_entry(entry: &Entry, out: &mut Vec<u8>) {
    let leader = entry.log_id.leader_id;
    let leadership = Leadership {
        term: leader.term,
        node: leader.node_id,
    };
    let membership;
    let body = match &entry.payload {
        EntryPayload::Blank => BodyRef::Blank,
        EntryPayload::Normal(unit) => BodyRef::Write(unit),
        EntryPayload::Membership(m) => {
            membership = encode_membership(m);
            BodyRef::Membership(&membership)
        }
    };
    encode_entry_into(leadership, body, out);
}

/// The store's form of `entry`, taking its writes.
pub fn into_replicated(entry: Entry) -> ReplicatedEntry {
    let leader = entry.log_id.leader_id;
    ReplicatedEntry {
        leadership: Leadership {
            term: leader.term,
            node: leader.node_id,
        },
        body: match entry.payload {
            EntryPayload::Blank => EntryBody::Blank,
            EntryPayload::Normal(unit) => EntryBody::Write(unit),
            EntryPayload::Membership(m) => EntryBody::Membership(encode_membership(&m)),
        },
    }
}

/// openraft's form of the entry at `lsn`.
pub fn from_replicated(lsn: Lsn, entry: ReplicatedEntry) -> Result<Entry, EntryError> {
    let log_id = log_id_at(lsn, entry.leadership).ok_or(EntryError("an entry at LSN 0"))?;
    let payload = match entry.body {
        EntryBody::Blank => EntryPayload::Blank,
        EntryBody::Write(unit) => EntryPayload::Normal(unit),
        EntryBody::Membership(bytes) => EntryPayload::Membership(decode_membership(&bytes)?),
    };
    Ok(Entry { log_id, payload })
}

/// A configuration as the log keeps it. Little-endian: the number of voter sets (u32;
/// two while a change is joint), each a count (u32) and node IDs (u64); then the number of
/// nodes (u32), each an ID (u64), its Raft address and its LDAP URL (each a u32 length and
/// UTF-8; the URL may be empty).
pub fn encode_membership(m: &ClusterMembership) -> Vec<u8> {
    let mut out = Vec::new();
    let sets = m.get_joint_config();
    out.extend_from_slice(&(sets.len() as u32).to_le_bytes());
    for set in sets {
        out.extend_from_slice(&(set.len() as u32).to_le_bytes());
        for id in set {
            out.extend_from_slice(&id.to_le_bytes());
        }
    }
    let nodes: Vec<_> = m.nodes().collect();
    out.extend_from_slice(&(nodes.len() as u32).to_le_bytes());
    for (id, node) in nodes {
        out.extend_from_slice(&id.to_le_bytes());
        put_text(&mut out, &node.raft);
        put_text(&mut out, &node.ldap_url);
    }
    out
}

/// Reads [`encode_membership`]'s form.
pub fn decode_membership(bytes: &[u8]) -> Result<ClusterMembership, EntryError> {
    let mut r = Reader(bytes);
    let mut sets = Vec::new();
    for _ in 0..r.count()? {
        let mut set = BTreeSet::new();
        for _ in 0..r.count()? {
            set.insert(r.u64()?);
        }
        sets.push(set);
    }
    let mut nodes = BTreeMap::new();
    for _ in 0..r.count()? {
        let id = r.u64()?;
        let raft = r.text("a node's Raft address is not UTF-8")?;
        let ldap_url = r.text("a node's LDAP URL is not UTF-8")?;
        nodes.insert(id, Member::new(raft, ldap_url));
    }
    if !r.0.is_empty() {
        return Err(EntryError("octets after the membership"));
    }
    Ok(Membership::new(sets, nodes))
}

/// A length (u32) and the text's octets.
fn put_text(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EntryError> {
        let got = self.0.get(..n).ok_or(EntryError("the membership is cut short"))?;
        self.0 = self.0.get(n..).unwrap_or_default();
        Ok(got)
    }

    fn count(&mut self) -> Result<usize, EntryError> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| EntryError("short"))?) as usize;
        // Every element takes at least one octet: a count beyond what is left is damage.
        if n > self.0.len() {
            return Err(EntryError("a count beyond the membership's end"));
        }
        Ok(n)
    }

    /// [`put_text`]'s form.
    fn text(&mut self, not_utf8: &'static str) -> Result<&'a str, EntryError> {
        let len = self.count()?;
        std::str::from_utf8(self.take(len)?).map_err(|_| EntryError(not_utf8))
    }

    fn u64(&mut self) -> Result<u64, EntryError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| EntryError("short"))?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn membership() -> ClusterMembership {
        let nodes: BTreeMap<u64, Member> = [
            (1, "127.0.0.1:1", "ldap://127.0.0.1:389"),
            (2, "127.0.0.2:2", "ldaps://[::1]:636"),
            (3, "127.0.0.3:3", ""),
        ]
        .into_iter()
        .map(|(id, a, u)| (id, Member::new(a, u)))
        .collect();
        Membership::new(vec![BTreeSet::from([1, 2, 3]), BTreeSet::from([1, 2])], nodes)
    }

    #[test]
    fn a_membership_round_trips() {
        let m = membership();
        assert_eq!(decode_membership(&encode_membership(&m)), Ok(m));
    }

    #[test]
    fn a_member_is_kept_as_documented() {
        let one = Membership::new(
            vec![BTreeSet::from([7])],
            BTreeMap::from([(7, Member::new("h:1", "ldap://h"))]),
        );
        let mut expected = Vec::new();
        expected.extend_from_slice(&1u32.to_le_bytes()); // one voter set
        expected.extend_from_slice(&1u32.to_le_bytes()); // of one node
        expected.extend_from_slice(&7u64.to_le_bytes());
        expected.extend_from_slice(&1u32.to_le_bytes()); // one node
        expected.extend_from_slice(&7u64.to_le_bytes());
        expected.extend_from_slice(&3u32.to_le_bytes());
        expected.extend_from_slice(b"h:1");
        expected.extend_from_slice(&8u32.to_le_bytes());
        expected.extend_from_slice(b"ldap://h");
        assert_eq!(encode_membership(&one), expected);
        assert_eq!(decode_membership(&expected), Ok(one));
        let mut not_utf8 = expected.clone();
        *not_utf8.last_mut().unwrap() = 0xff;
        assert!(decode_membership(&not_utf8).is_err());
    }

    #[test]
    fn a_damaged_membership_is_refused() {
        let bytes = encode_membership(&membership());
        for cut in 0..bytes.len() {
            assert!(decode_membership(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_membership(&longer).is_err());
    }

    #[test]
    fn entries_convert_both_ways() {
        let leadership = Leadership { term: 4, node: 2 };
        for body in [
            EntryBody::Blank,
            EntryBody::Membership(encode_membership(&membership())),
            EntryBody::Write(WriteBatch {
                expected_lsn: 9,
                writes: vec![vec![vec![1, 2]]],
            }),
        ] {
            let replicated = ReplicatedEntry { leadership, body };
            let entry = from_replicated(9, replicated.clone()).unwrap();
            assert_eq!(entry.log_id.index, 8);
            assert_eq!(lsn_of(&entry.log_id), 9);
            let mut encoded = Vec::new();
            encode_entry(&entry, &mut encoded);
            assert_eq!(encoded, replicated.encode());
            assert_eq!(into_replicated(entry), replicated);
        }
    }
}
