//! One entry as the store keeps it: a single shared allocation.
//!
//! Layout (format version 1; snapshots hold these octets as they are, see
//! `docs/formats.md`):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | parent entry ID, u32 little-endian; 0 for a naming context (no parent entry) |
//! | 4 | varint | length `r` of the user-form RDN |
//! | . | r | the RDN as the client wrote it (UTF-8); for a naming context, its whole DN |
//! | . | varint | length `n` of the normalized RDN |
//! | . | n | the normalized RDN (see `larch_model::dn::NormDn`); for a naming context, its whole normalized DN |
//! | . | rest | the entry's attributes in the stored form of `larch_model::entry::StoredEntry` |
//!
//! Why the RDN and not the whole DN: an entry's DN is its RDN followed by its parent's DN,
//! so keeping only the RDN saves ~35 octets per entry and makes renaming a subtree one
//! change (the moved entry's record), as in OpenLDAP's back-mdb. Full DNs are built by
//! walking parents ([`crate::Version::dn`]); DN lookups walk down from the naming context
//! one RDN at a time through the DN index.
//!
//! Records are immutable: a change builds a new record. Readers never panic on malformed
//! octets; [`EntryRecord::from_bytes`] validates octets read from disk.

use std::sync::Arc;

use larch_model::entry::{StoredFormatError, StoredRef};

/// A dense entry identifier: 1 for the first entry ever added, never 0 (0 means "no
/// parent" in a record).
pub type EntryId = u32;

/// One stored entry (cheap to clone: a reference count).
#[derive(Clone, PartialEq, Eq)]
pub struct EntryRecord(Arc<[u8]>);

/// Why octets are not an entry record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed entry record: {0}")]
pub struct RecordFormatError(pub String);

impl From<StoredFormatError> for RecordFormatError {
    fn from(e: StoredFormatError) -> Self {
        RecordFormatError(e.to_string())
    }
}

struct Parts<'a> {
    parent: EntryId,
    rdn: &'a [u8],
    norm_rdn: &'a [u8],
    attrs: &'a [u8],
}

fn push_varint(out: &mut Vec<u8>, v: usize) {
    larch_model::varint::push(out, v as u64);
}

/// Record lengths are at most 4 varint octets (below 256 MiB, far above any record).
fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<usize> {
    larch_model::varint::read(bytes, pos, 4).and_then(|v| usize::try_from(v).ok())
}

fn parts(bytes: &[u8]) -> Option<Parts<'_>> {
    let parent = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    let mut pos = 4;
    let r = read_varint(bytes, &mut pos)?;
    let rdn = bytes.get(pos..pos.checked_add(r)?)?;
    pos += r;
    let n = read_varint(bytes, &mut pos)?;
    let norm_rdn = bytes.get(pos..pos.checked_add(n)?)?;
    pos += n;
    Some(Parts {
        parent,
        rdn,
        norm_rdn,
        attrs: bytes.get(pos..)?,
    })
}

impl EntryRecord {
    /// Packs a record.
    pub fn new(parent: EntryId, rdn: &str, norm_rdn: &str, attrs: StoredRef<'_>) -> EntryRecord {
        let attrs = attrs.as_bytes();
        let mut out = Vec::with_capacity(4 + 4 + rdn.len() + norm_rdn.len() + attrs.len());
        out.extend_from_slice(&parent.to_le_bytes());
        push_varint(&mut out, rdn.len());
        out.extend_from_slice(rdn.as_bytes());
        push_varint(&mut out, norm_rdn.len());
        out.extend_from_slice(norm_rdn.as_bytes());
        out.extend_from_slice(attrs);
        EntryRecord(out.into())
    }

    /// Takes octets read from disk, checking every part (UTF-8 names, the stored entry's
    /// structure).
    pub fn from_bytes(bytes: &[u8]) -> Result<EntryRecord, RecordFormatError> {
        let p = parts(bytes).ok_or_else(|| RecordFormatError("truncated header".into()))?;
        if std::str::from_utf8(p.rdn).is_err() || std::str::from_utf8(p.norm_rdn).is_err() {
            return Err(RecordFormatError("an RDN that is not UTF-8".into()));
        }
        if p.norm_rdn.is_empty() {
            return Err(RecordFormatError("an empty normalized RDN".into()));
        }
        StoredRef::new(p.attrs).validate()?;
        Ok(EntryRecord(bytes.into()))
    }

    /// The record's octets (what a snapshot stores).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The parent's ID; 0 for a naming context.
    pub fn parent(&self) -> EntryId {
        parts(&self.0).map_or(0, |p| p.parent)
    }

    /// The RDN as the client wrote it (a naming context's whole DN).
    pub fn rdn(&self) -> &str {
        parts(&self.0)
            .and_then(|p| std::str::from_utf8(p.rdn).ok())
            .unwrap_or("")
    }

    /// The normalized RDN (a naming context's whole normalized DN).
    pub fn norm_rdn(&self) -> &str {
        parts(&self.0)
            .and_then(|p| std::str::from_utf8(p.norm_rdn).ok())
            .unwrap_or("")
    }

    /// The RDN's octets as the client wrote it, without the UTF-8 check [`Self::rdn`]
    /// makes (every record holds UTF-8 there: [`Self::new`] takes `&str`,
    /// [`Self::from_bytes`] checks).
    pub fn rdn_bytes(&self) -> &[u8] {
        parts(&self.0).map_or(&[][..], |p| p.rdn)
    }

    /// The normalized RDN's octets, without the UTF-8 check [`Self::norm_rdn`] makes (for
    /// comparisons).
    pub fn norm_rdn_bytes(&self) -> &[u8] {
        parts(&self.0).map_or(&[][..], |p| p.norm_rdn)
    }

    /// The attributes.
    pub fn attrs(&self) -> StoredRef<'_> {
        StoredRef::new(parts(&self.0).map_or(&[][..], |p| p.attrs))
    }

    /// Heap octets of this record (its allocation, with the reference counts).
    pub fn heap_bytes(&self) -> usize {
        self.0.len() + 2 * std::mem::size_of::<usize>()
    }
}

impl std::fmt::Debug for EntryRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryRecord")
            .field("parent", &self.parent())
            .field("rdn", &self.rdn())
            .field("norm_rdn", &self.norm_rdn())
            .field("attrs", &self.attrs())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_reads_back() {
        let r = EntryRecord::new(7, "uid=Ann", "uid=ann", StoredRef::new(&[]));
        assert_eq!(r.parent(), 7);
        assert_eq!(r.rdn(), "uid=Ann");
        assert_eq!(r.norm_rdn(), "uid=ann");
        assert_eq!(r.rdn_bytes(), b"uid=Ann");
        assert_eq!(r.norm_rdn_bytes(), b"uid=ann");
        assert_eq!(r.attrs().attributes().count(), 0);
        assert_eq!(EntryRecord::from_bytes(r.as_bytes()).unwrap(), r);
        for len in 0..r.as_bytes().len() - 1 {
            let cut = &r.as_bytes()[..len];
            assert!(EntryRecord::from_bytes(cut).is_err(), "{len}");
        }
    }
}
