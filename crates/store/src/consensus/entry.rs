//! The payload of a WAL record in a cluster: one entry of the replicated log.
//!
//! In a cluster the write-ahead log *is* the replicated log: entry `i` of the consensus
//! engine's log is the WAL record with LSN `i + 1` ([`lsn_of_index`]; the engine numbers its
//! first entry 0, the log its first record 1). The record's payload says which term and
//! leader appended the entry and what it holds. All integers are little-endian.
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 1 | kind: 0 blank (a new leader's first entry), 1 membership, 2 write |
//! | 1 | 8 | term, u64 |
//! | 9 | 8 | the leader's node ID, u64 |
//! | 17 | n | body |
//!
//! Bodies:
//! - blank: empty;
//! - membership: the cluster's configuration, opaque to the store (the cluster layer
//!   encodes it);
//! - writes: the LSN the batch was computed to land at (u64, see [`WriteBatch`]), the number
//!   of writes (u32), then each write: its number of changes (u32), then each change, a
//!   length (u32) and one [`Change`](crate::wal::record::Change) exactly as a single server
//!   logs it. One entry holds a writer's whole batch (group commit: one entry, one append,
//!   one round to the followers for all of it); every write of it applies, or none.
//!
//! Trailing octets, an unknown kind, or a change whose length runs past the payload are
//! errors ([`EntryError`]).

use crate::wal::Lsn;

/// The LSN of the log entry with this index.
pub fn lsn_of_index(index: u64) -> Lsn {
    index + 1
}

/// The index of the log entry with this LSN (`None` for 0, which names no record).
pub fn index_of_lsn(lsn: Lsn) -> Option<u64> {
    lsn.checked_sub(1)
}

/// Who appended an entry: the term and the node that led it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub struct Leadership {
    /// The term.
    pub term: u64,
    /// The leader's node ID.
    pub node: u64,
}

/// The writes of one batch of a leader's writer: each write's changes, and where the batch
/// must land.
///
/// The leader computes a batch of writes on its newest version (at LSN `a`) and proposes
/// them as one entry, computed to land at `a + 1`. Every node applies the batch only if it
/// did land there ([`WriteBatch::fits`]): then every entry before it is one the leader had
/// applied when it computed the batch (the log matching property), and the batch applies
/// to exactly the state it was computed on. A batch that landed elsewhere (leadership
/// changed, or another entry came between) is skipped by every node alike, and its
/// clients are told to retry. The decision depends on the entry alone, so a node replaying
/// the log decides as a node that applied it live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteBatch {
    /// The LSN the batch was computed to land at.
    pub expected_lsn: Lsn,
    /// The writes, in the order they were made; each its changes, each an encoded
    /// `Change`.
    pub writes: Vec<Vec<Vec<u8>>>,
}

impl WriteBatch {
    /// Whether the batch, found at `lsn`, is applied.
    pub fn fits(&self, lsn: Lsn) -> bool {
        self.expected_lsn == lsn
    }

    /// Octets the body takes.
    fn body_len(&self) -> usize {
        12 + self
            .writes
            .iter()
            .map(|w| 4 + w.iter().map(|c| 4 + c.len()).sum::<usize>())
            .sum::<usize>()
    }
}

/// What an entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryBody {
    /// A new leader's first entry: no change.
    Blank,
    /// A configuration of the cluster, encoded by the cluster layer.
    Membership(Vec<u8>),
    /// A batch of writes.
    Write(WriteBatch),
}

/// One entry of the replicated log, as its WAL record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicatedEntry {
    /// The term and leader that appended it.
    pub leadership: Leadership,
    /// What it holds.
    pub body: EntryBody,
}

/// Octets before the body.
const HEADER_LEN: usize = 17;

const KIND_BLANK: u8 = 0;
const KIND_MEMBERSHIP: u8 = 1;
const KIND_WRITE: u8 = 2;

/// A payload that is not a replicated entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed replicated log entry: {0}")]
pub struct EntryError(pub &'static str);

/// An entry's body, borrowed: what [`encode_entry_into`] writes (an entry is encoded
/// where it is held, never copied first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyRef<'a> {
    /// [`EntryBody::Blank`].
    Blank,
    /// [`EntryBody::Membership`].
    Membership(&'a [u8]),
    /// [`EntryBody::Write`].
    Write(&'a WriteBatch),
}

impl EntryBody {
    /// The body, borrowed.
    pub fn as_body_ref(&self) -> BodyRef<'_> {
        match self {
            EntryBody::Blank => BodyRef::Blank,
            EntryBody::Membership(m) => BodyRef::Membership(m),
            EntryBody::Write(w) => BodyRef::Write(w),
        }
    }
}

/// Octets [`encode_entry_into`] writes for `body`.
pub fn encoded_len(body: BodyRef<'_>) -> usize {
    HEADER_LEN
        + match body {
            BodyRef::Blank => 0,
            BodyRef::Membership(m) => m.len(),
            BodyRef::Write(w) => w.body_len(),
        }
}

/// Appends the WAL payload of the entry appended under `leadership` holding `body` to
/// `out`.
pub fn encode_entry_into(leadership: Leadership, body: BodyRef<'_>, out: &mut Vec<u8>) {
    out.reserve(encoded_len(body));
    let kind = match body {
        BodyRef::Blank => KIND_BLANK,
        BodyRef::Membership(_) => KIND_MEMBERSHIP,
        BodyRef::Write(_) => KIND_WRITE,
    };
    out.push(kind);
    out.extend_from_slice(&leadership.term.to_le_bytes());
    out.extend_from_slice(&leadership.node.to_le_bytes());
    match body {
        BodyRef::Blank => {}
        BodyRef::Membership(m) => out.extend_from_slice(m),
        BodyRef::Write(batch) => {
            out.extend_from_slice(&batch.expected_lsn.to_le_bytes());
            out.extend_from_slice(&(batch.writes.len() as u32).to_le_bytes());
            for write in &batch.writes {
                out.extend_from_slice(&(write.len() as u32).to_le_bytes());
                for change in write {
                    out.extend_from_slice(&(change.len() as u32).to_le_bytes());
                    out.extend_from_slice(change);
                }
            }
        }
    }
}

impl ReplicatedEntry {
    /// The entry as a WAL payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode_entry_into(self.leadership, self.body.as_body_ref(), &mut out);
        out
    }

    /// Reads a WAL payload.
    pub fn decode(payload: &[u8]) -> Result<ReplicatedEntry, EntryError> {
        let (&kind, rest) = payload.split_first().ok_or(EntryError("empty"))?;
        let term = u64_at(rest, 0).ok_or(EntryError("no term"))?;
        let node = u64_at(rest, 8).ok_or(EntryError("no leader"))?;
        let body = rest.get(16..).unwrap_or_default();
        let body = match kind {
            KIND_BLANK if body.is_empty() => EntryBody::Blank,
            KIND_BLANK => return Err(EntryError("a blank entry with a body")),
            KIND_MEMBERSHIP => EntryBody::Membership(body.to_vec()),
            KIND_WRITE => EntryBody::Write(decode_write(body)?),
            _ => return Err(EntryError("unknown kind")),
        };
        Ok(ReplicatedEntry {
            leadership: Leadership { term, node },
            body,
        })
    }
}

/// The term and leader of a payload without decoding its body.
pub fn leadership_of(payload: &[u8]) -> Result<Leadership, EntryError> {
    let rest = payload.get(1..).ok_or(EntryError("empty"))?;
    Ok(Leadership {
        term: u64_at(rest, 0).ok_or(EntryError("no term"))?,
        node: u64_at(rest, 8).ok_or(EntryError("no leader"))?,
    })
}

fn decode_write(body: &[u8]) -> Result<WriteBatch, EntryError> {
    let expected_lsn = u64_at(body, 0).ok_or(EntryError("a batch without its LSN"))?;
    let mut rest = body.get(8..).unwrap_or_default();
    let count = take_count(&mut rest).ok_or(EntryError("a batch without its count of writes"))?;
    if count == 0 {
        return Err(EntryError("a batch without writes"));
    }
    // Every write takes at least 4 octets: a count beyond what is left is damage, refused
    // before anything is allocated for it.
    if count > rest.len() / 4 {
        return Err(EntryError("more writes than the entry holds"));
    }
    let mut writes = Vec::with_capacity(count);
    for _ in 0..count {
        let changes = take_count(&mut rest).ok_or(EntryError("a write's count of changes is cut short"))?;
        if changes == 0 {
            return Err(EntryError("a write without changes"));
        }
        if changes > rest.len() / 4 {
            return Err(EntryError("more changes than the entry holds"));
        }
        let mut write = Vec::with_capacity(changes);
        for _ in 0..changes {
            let len = take_count(&mut rest).ok_or(EntryError("a change's length is cut short"))?;
            let change = rest
                .get(..len)
                .ok_or(EntryError("a change runs past the entry"))?;
            write.push(change.to_vec());
            rest = rest.get(len..).unwrap_or_default();
        }
        writes.push(write);
    }
    if !rest.is_empty() {
        return Err(EntryError("octets after the last write"));
    }
    Ok(WriteBatch { expected_lsn, writes })
}

/// Takes a u32 count or length from the front of `rest`.
fn take_count(rest: &mut &[u8]) -> Option<usize> {
    let n = rest
        .get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_le_bytes)?;
    *rest = rest.get(4..).unwrap_or_default();
    Some(n as usize)
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    bytes
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn leadership() -> Leadership {
        Leadership { term: 7, node: 3 }
    }

    #[test]
    fn each_kind_round_trips() {
        for body in [
            EntryBody::Blank,
            EntryBody::Membership(b"{\"voters\":[1,2,3]}".to_vec()),
            EntryBody::Write(WriteBatch {
                expected_lsn: 42,
                writes: vec![vec![vec![0xa1, 0x00], vec![0xa2, 0x01, 0x00]], vec![vec![0xa3]]],
            }),
        ] {
            let entry = ReplicatedEntry {
                leadership: leadership(),
                body,
            };
            let bytes = entry.encode();
            assert_eq!(ReplicatedEntry::decode(&bytes), Ok(entry));
            assert_eq!(leadership_of(&bytes), Ok(leadership()));
        }
    }

    #[test]
    fn a_blank_entry_is_its_header_alone() {
        let bytes = ReplicatedEntry {
            leadership: Leadership { term: 1, node: 2 },
            body: EntryBody::Blank,
        }
        .encode();
        assert_eq!(
            bytes,
            [&[0u8][..], &1u64.to_le_bytes(), &2u64.to_le_bytes()].concat()
        );
    }

    #[test]
    fn malformed_payloads_are_refused() {
        let write = ReplicatedEntry {
            leadership: leadership(),
            body: EntryBody::Write(WriteBatch {
                expected_lsn: 1,
                writes: vec![vec![vec![1, 2, 3]]],
            }),
        }
        .encode();
        for (payload, why) in [
            (vec![], "empty"),
            (vec![9; 17], "unknown kind"),
            (vec![KIND_BLANK; 18], "a blank entry with a body"),
            (write[..write.len() - 1].to_vec(), "a change runs past the entry"),
            (
                write[..HEADER_LEN + 8].to_vec(),
                "a batch without its count of writes",
            ),
            (
                write[..HEADER_LEN + 14].to_vec(),
                "more writes than the entry holds",
            ),
            (
                write[..HEADER_LEN + 18].to_vec(),
                "more changes than the entry holds",
            ),
            (
                // One write of two changes: three octets, then a length cut to one octet.
                [
                    &write[..HEADER_LEN + 12],
                    &2u32.to_le_bytes()[..],
                    &3u32.to_le_bytes()[..],
                    &[1, 2, 3, 0][..],
                ]
                .concat(),
                "a change's length is cut short",
            ),
            ([&write[..], &[0]].concat(), "octets after the last write"),
            (
                [&write[..HEADER_LEN + 8], &0u32.to_le_bytes()[..]].concat(),
                "a batch without writes",
            ),
            (
                [
                    &write[..HEADER_LEN + 8],
                    &1u32.to_le_bytes()[..],
                    &0u32.to_le_bytes()[..],
                ]
                .concat(),
                "a write without changes",
            ),
            (
                [&write[..HEADER_LEN + 8], &u32::MAX.to_le_bytes()[..]].concat(),
                "more writes than the entry holds",
            ),
        ] {
            assert_eq!(
                ReplicatedEntry::decode(&payload),
                Err(EntryError(why)),
                "{payload:?}"
            );
        }
    }

    #[test]
    fn a_batch_fits_only_where_it_was_computed_to_land() {
        let unit = WriteBatch {
            expected_lsn: 10,
            writes: vec![vec![vec![0]]],
        };
        assert!(unit.fits(10));
        assert!(!unit.fits(9));
        assert!(!unit.fits(11));
        assert_eq!(index_of_lsn(lsn_of_index(0)), Some(0));
        assert_eq!(index_of_lsn(0), None);
    }

    proptest! {
        #[test]
        fn any_payload_decodes_or_is_refused(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(entry) = ReplicatedEntry::decode(&bytes) {
                prop_assert_eq!(entry.encode(), bytes);
            }
        }
    }
}
