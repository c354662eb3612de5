//! Building a whole version at once, in parallel: after a snapshot is read, and by the
//! offline import.
//!
//! Steps:
//! 1. the records, in ascending ID order, are split into one contiguous range per thread;
//! 2. each thread computes, for its range, the DN-index and children keys and every
//!    indexed type's keys (the expensive part: matching-rule normalization of each value);
//! 3. the per-thread key lists are joined in range order, so IDs stay ascending;
//! 4. each structure is built bottom-up from its sorted keys, one structure per thread.
//!
//! Also here: the attribute-type dictionary a snapshot carries in its header, which lets a
//! snapshot written under one schema load under another (type IDs are positions in the
//! schema, so they move when schema files change).

use std::sync::Arc;

use larch_model::entry::{Attribute, StoredEntry};
use larch_model::schema::{AttributeTypeId, Schema};

use crate::index::{hash_sets, AttrIndex, IndexBuilder};
use crate::pmap::IdTable;
use crate::record::{EntryId, EntryRecord};
use crate::version::{Shared, Version};
use crate::wal::Lsn;

/// Format version of the dictionary in a snapshot's header.
const DICTIONARY_VERSION: u8 = 1;

/// Longest OID accepted in a dictionary (OIDs are short; this bounds a corrupt length).
const MAX_DICTIONARY_OID: usize = 256;

/// Encodes the dictionary of `schema`: every attribute type's ID and numeric OID.
///
/// Layout: version (1 octet, = 1), count (u32 LE), then per type: ID (u32 LE), OID length
/// (u16 LE), OID (ASCII).
pub(crate) fn encode_dictionary(schema: &Schema) -> Vec<u8> {
    let types: Vec<_> = schema.attribute_types().collect();
    let mut out = Vec::with_capacity(8 + types.len() * 24);
    out.push(DICTIONARY_VERSION);
    out.extend_from_slice(&(types.len() as u32).to_le_bytes());
    for t in types {
        out.extend_from_slice(&(t.id.index() as u32).to_le_bytes());
        let oid = t.oid.as_bytes();
        out.extend_from_slice(&(oid.len() as u16).to_le_bytes());
        out.extend_from_slice(oid);
    }
    out
}

/// The tag of the section a cluster node's snapshot header carries after the dictionary:
/// the consensus engine's state at the snapshot's LSN (its last applied entry and the
/// cluster's configuration), opaque to the store.
const CONSENSUS_SECTION: u8 = 1;

/// A snapshot header's `extra` blob: the dictionary of `schema`, then, for a cluster
/// node's snapshot, the consensus section: its tag (1 octet), its length (u32 LE), its
/// octets.
pub(crate) fn encode_extra(schema: &Schema, consensus: Option<&[u8]>) -> Vec<u8> {
    let mut out = encode_dictionary(schema);
    if let Some(state) = consensus {
        out.push(CONSENSUS_SECTION);
        out.extend_from_slice(&(state.len() as u32).to_le_bytes());
        out.extend_from_slice(state);
    }
    out
}

/// Splits a snapshot header's `extra` blob into the dictionary and the consensus section,
/// if it has one (see [`encode_extra`]).
pub(crate) fn split_extra(extra: &[u8]) -> Result<(&[u8], Option<&[u8]>), String> {
    let bad = || "the snapshot header's extra data is malformed".to_string();
    let end = dictionary_len(extra).ok_or_else(bad)?;
    let (dictionary, rest) = extra.split_at(end);
    let Some((&tag, rest)) = rest.split_first() else {
        return Ok((dictionary, None));
    };
    if tag != CONSENSUS_SECTION {
        return Err(format!("unknown section {tag} in the snapshot header"));
    }
    let len = rest
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(bad)? as usize;
    match rest.get(4..) {
        Some(state) if state.len() == len => Ok((dictionary, Some(state))),
        _ => Err(bad()),
    }
}

/// The length of the dictionary at the start of `extra`, walking its entries; `None` if
/// it ends early.
fn dictionary_len(extra: &[u8]) -> Option<usize> {
    let count = u32::from_le_bytes(extra.get(1..5)?.try_into().ok()?) as usize;
    let mut pos = 5;
    for _ in 0..count {
        let len = u16::from_le_bytes(extra.get(pos + 4..pos + 6)?.try_into().ok()?) as usize;
        pos = pos.checked_add(6 + len)?;
    }
    (pos <= extra.len()).then_some(pos)
}

/// How a snapshot's type IDs map to the current schema's.
pub(crate) enum TypeMap {
    /// The same IDs: records load as they are.
    Identity,
    /// Old ID (index) -> new ID.
    Remap(Vec<Option<AttributeTypeId>>),
}

/// Reads a dictionary and maps it onto `schema`. A type the schema no longer defines is an
/// error only if a record uses it (checked while remapping).
pub(crate) fn decode_dictionary(extra: &[u8], schema: &Schema) -> Result<TypeMap, String> {
    let bad = || "the attribute-type dictionary in the snapshot header is malformed".to_string();
    let version = *extra.first().ok_or_else(bad)?;
    if version != DICTIONARY_VERSION {
        return Err(format!("unknown dictionary version {version}"));
    }
    let count = u32::from_le_bytes(extra.get(1..5).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
    let mut pos = 5;
    let mut map: Vec<Option<AttributeTypeId>> = Vec::new();
    let mut identity = true;
    for _ in 0..count {
        let id = u32::from_le_bytes(
            extra
                .get(pos..pos + 4)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        ) as usize;
        let len = u16::from_le_bytes(
            extra
                .get(pos + 4..pos + 6)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        ) as usize;
        if len > MAX_DICTIONARY_OID {
            return Err(bad());
        }
        let oid =
            std::str::from_utf8(extra.get(pos + 6..pos + 6 + len).ok_or_else(bad)?).map_err(|_| bad())?;
        pos += 6 + len;
        if id > count.saturating_mul(4).max(1 << 16) {
            return Err(bad());
        }
        if map.len() <= id {
            map.resize(id + 1, None);
        }
        let now = schema.attribute_type(oid).map(|t| t.id);
        identity &= now.is_some_and(|t| t.index() == id);
        map[id] = now;
    }
    if pos != extra.len() {
        return Err(bad());
    }
    Ok(if identity && map.len() == schema.attribute_types().count() {
        TypeMap::Identity
    } else {
        TypeMap::Remap(map)
    })
}

/// Rewrites a record's type IDs through `map` (re-sorting its attributes).
pub(crate) fn remap_record(
    record: &EntryRecord,
    map: &[Option<AttributeTypeId>],
) -> Result<EntryRecord, String> {
    let mut attrs = Vec::new();
    for a in record.attrs().attributes() {
        let ty = map.get(a.ty.index()).copied().flatten().ok_or_else(|| {
            format!(
                "an entry uses attribute type #{} which the schema no longer defines",
                a.ty.index()
            )
        })?;
        attrs.push(Attribute {
            ty,
            options: a.options(),
            values: a.values.iter().map(<[u8]>::to_vec).collect(),
        });
    }
    let stored = StoredEntry::build(&attrs);
    Ok(EntryRecord::new(
        record.parent(),
        record.rdn(),
        record.norm_rdn(),
        stored.as_ref(),
    ))
}

/// Everything a thread computes for its range of records.
#[derive(Default)]
struct RangeKeys {
    dn: Vec<(u64, EntryId)>,
    children: Vec<(u64, EntryId)>,
    attrs: Vec<IndexBuilder>,
}

/// Builds a version from records in ascending ID order, on `threads` threads.
pub(crate) fn build_version(
    shared: &Arc<Shared>,
    lsn: Lsn,
    next_id: EntryId,
    records: Vec<(EntryId, EntryRecord)>,
    threads: usize,
) -> Result<Version, String> {
    let threads = threads.clamp(1, 64);
    let per = records.len().div_ceil(threads).max(1);
    let ranges: Vec<&[(EntryId, EntryRecord)]> = records.chunks(per).collect();
    let parts: Vec<RangeKeys> = std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|range| s.spawn(|| range_keys(shared, range)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut joined = RangeKeys {
        attrs: shared.indexes.iter().map(|_| IndexBuilder::default()).collect(),
        ..RangeKeys::default()
    };
    for part in parts {
        joined.dn.extend(part.dn);
        joined.children.extend(part.children);
        for (all, p) in joined.attrs.iter_mut().zip(part.attrs) {
            all.append(p);
        }
    }
    let kinds: Vec<_> = shared.indexes.iter().map(|(_, k)| k).collect();
    let RangeKeys { dn, children, attrs } = joined;
    // One structure per thread: the entry table, the DN index, the children sets and
    // each attribute index are independent.
    let (entries, dn_index, children, attr) = std::thread::scope(|s| {
        let entries = s.spawn(|| IdTable::from_sorted_parts(vec![records]));
        let dn_index = s.spawn(|| hash_sets(dn));
        let children = s.spawn(|| hash_sets(children));
        let attr_handles: Vec<_> = attrs
            .into_iter()
            .zip(kinds)
            .map(|(b, k)| s.spawn(move || b.finish(k)))
            .collect();
        let attr: Vec<AttrIndex> = attr_handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect();
        (
            entries.join(),
            dn_index.join().unwrap_or_default(),
            children.join().unwrap_or_default(),
            attr,
        )
    });
    // IDs come ascending from the snapshot reader or the import, so the table build does
    // not refuse them; a refusal is reported rather than served as an empty directory.
    let entries = match entries {
        Ok(Ok(table)) => table,
        _ => return Err("entry IDs are not strictly ascending".to_string()),
    };
    Ok(Version {
        shared: Arc::clone(shared),
        lsn,
        next_id,
        entries,
        dn_index,
        children,
        attr,
    })
}

fn range_keys(shared: &Shared, range: &[(EntryId, EntryRecord)]) -> RangeKeys {
    let mut out = RangeKeys {
        dn: Vec::with_capacity(range.len()),
        children: Vec::with_capacity(range.len()),
        attrs: shared.indexes.iter().map(|_| IndexBuilder::default()).collect(),
    };
    let mut scratch = Vec::with_capacity(256);
    for (id, record) in range {
        out.dn
            .push((shared.keyer.dn(record.parent(), record.norm_rdn()), *id));
        out.children
            .push((crate::version::child_key(record.parent()), *id));
        for ((ty, kinds), builder) in shared.indexes.iter().zip(&mut out.attrs) {
            let keys = AttrIndex::keys(
                kinds,
                ty,
                record.attrs(),
                &shared.schema,
                &shared.keyer,
                &mut scratch,
            );
            builder.push(*id, keys);
        }
    }
    out
}
