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
//! - write: the LSN the write was computed to land at (u64, see [`WriteUnit`]), then its
//!   changes, each a length (u32) and one [`Change`](crate::wal::record::Change) exactly as a
//!   single server logs it. A write is one commit unit: every change of it applies, or
//!   none.
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

/// One write as proposed by a leader's writer: its changes, and where it must land.
///
/// The leader computes a batch of writes on its newest version (at LSN `a`) and proposes
/// them in order, so write `k` of the batch (from 1) was computed to land at `a + k`. Every
/// node applies a write only if it did land there ([`WriteUnit::fits`]): then every entry
/// before it is the one the leader had applied or proposed when it computed the write (the
/// log matching property), and the write applies to exactly the state it was computed on.
/// A write that landed elsewhere (leadership changed, or another entry came between) is
/// skipped by every node alike, and its client is told to retry. The decision depends on
/// the entry alone, so a node replaying the log decides as a node that applied it live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteUnit {
    /// The LSN the write was computed to land at.
    pub expected_lsn: Lsn,
    /// Its changes, each an encoded `Change`.
    pub changes: Vec<Vec<u8>>,
}

impl WriteUnit {
    /// Whether the write, found at `lsn`, is applied.
    pub fn fits(&self, lsn: Lsn) -> bool {
        self.expected_lsn == lsn
    }

    /// Octets the body takes.
    fn body_len(&self) -> usize {
        8 + self.changes.iter().map(|c| 4 + c.len()).sum::<usize>()
    }
}

/// What an entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryBody {
    /// A new leader's first entry: no change.
    Blank,
    /// A configuration of the cluster, encoded by the cluster layer.
    Membership(Vec<u8>),
    /// A write.
    Write(WriteUnit),
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

impl ReplicatedEntry {
    /// The entry as a WAL payload.
    pub fn encode(&self) -> Vec<u8> {
        let body_len = match &self.body {
            EntryBody::Blank => 0,
            EntryBody::Membership(m) => m.len(),
            EntryBody::Write(w) => w.body_len(),
        };
        let mut out = Vec::with_capacity(HEADER_LEN + body_len);
        let kind = match &self.body {
            EntryBody::Blank => KIND_BLANK,
            EntryBody::Membership(_) => KIND_MEMBERSHIP,
            EntryBody::Write(_) => KIND_WRITE,
        };
        out.push(kind);
        out.extend_from_slice(&self.leadership.term.to_le_bytes());
        out.extend_from_slice(&self.leadership.node.to_le_bytes());
        match &self.body {
            EntryBody::Blank => {}
            EntryBody::Membership(m) => out.extend_from_slice(m),
            EntryBody::Write(w) => {
                out.extend_from_slice(&w.expected_lsn.to_le_bytes());
                for change in &w.changes {
                    out.extend_from_slice(&(change.len() as u32).to_le_bytes());
                    out.extend_from_slice(change);
                }
            }
        }
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

fn decode_write(body: &[u8]) -> Result<WriteUnit, EntryError> {
    let expected_lsn = u64_at(body, 0).ok_or(EntryError("a write without its LSN"))?;
    let mut rest = body.get(8..).unwrap_or_default();
    let mut changes = Vec::new();
    while !rest.is_empty() {
        let len = rest
            .get(..4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
            .ok_or(EntryError("a change's length is cut short"))? as usize;
        let change = rest
            .get(4..4 + len)
            .ok_or(EntryError("a change runs past the entry"))?;
        changes.push(change.to_vec());
        rest = rest.get(4 + len..).unwrap_or_default();
    }
    if changes.is_empty() {
        return Err(EntryError("a write without changes"));
    }
    Ok(WriteUnit {
        expected_lsn,
        changes,
    })
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
            EntryBody::Write(WriteUnit {
                expected_lsn: 42,
                changes: vec![vec![0xa1, 0x00], vec![0xa2, 0x01, 0x00]],
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
            body: EntryBody::Write(WriteUnit {
                expected_lsn: 1,
                changes: vec![vec![1, 2, 3]],
            }),
        }
        .encode();
        for (payload, why) in [
            (vec![], "empty"),
            (vec![9; 17], "unknown kind"),
            (vec![KIND_BLANK; 18], "a blank entry with a body"),
            (write[..write.len() - 1].to_vec(), "a change runs past the entry"),
            (write[..HEADER_LEN + 8].to_vec(), "a write without changes"),
            (
                write[..HEADER_LEN + 10].to_vec(),
                "a change's length is cut short",
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
    fn a_write_fits_only_where_it_was_computed_to_land() {
        let unit = WriteUnit {
            expected_lsn: 10,
            changes: vec![vec![0]],
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
