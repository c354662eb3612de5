//! The stored form of an entry: one compact octet string.
//!
//! The store keeps a million entries in memory, so this form is chosen for size first and
//! for reading speed second. Layout (format version 1; `docs/formats.md` repeats it, because
//! snapshots hold these octets as they are):
//!
//! ```text
//! entry     = *attribute                      ; sorted by (type id, options), no duplicates
//! attribute = type-id options values
//! type-id   = varint                          ; AttributeTypeId in the schema it was built with
//! options   = varint *OCTET                   ; length, then normalized text ("" or ";lang-fr")
//! values    = varint 1*value-tlv              ; length of the run, then the values
//! value-tlv = %x04 length OCTETS              ; a BER OCTET STRING, definite minimal length
//! varint    = LEB128, unsigned, at most 5 octets for a u32
//! ```
//!
//! Why not the attribute list in full BER, as a SearchResultEntry carries it? Measured on
//! generated inetOrgPerson entries (20 attributes, ~680 octets of LDIF): the BER list with
//! an attribute index takes ~850 octets, this form ~480, because attribute names are not
//! repeated in every entry. The values stay BER TLVs, so a whole entry is still written as
//! a few small copies: per attribute a SEQUENCE header, the name, a SET header and one copy
//! of the value run ([`StoredRef::write_attributes_ber`]), and filter evaluation iterates
//! values with the codec's [`SeqOf`] without decoding.
//!
//! Readers never panic on malformed octets: a [`StoredRef`] built from unchecked input
//! yields the attributes it can read and stops; [`StoredRef::validate`] says whether the
//! octets are well formed (the store validates what it loads from disk).

use larch_proto::ber::{tag, Reader};
use larch_proto::{PartialAttribute, SeqOf};

use super::{Attribute, Options};
use crate::error::ModelError;
use crate::schema::{AttributeTypeId, Schema};

/// An entry's attributes in their stored, compact form (owned).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct StoredEntry {
    bytes: Box<[u8]>,
}

/// A stored entry, borrowed: the octets of [`StoredEntry`] wherever they live (the store
/// packs them into its own records).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct StoredRef<'a> {
    bytes: &'a [u8],
}

/// One attribute of a stored entry, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct StoredAttribute<'a> {
    /// The attribute type.
    pub ty: AttributeTypeId,
    /// The options, normalized (`""` or e.g. `;lang-fr`).
    pub options: &'a str,
    /// The values.
    pub values: SeqOf<'a, &'a [u8]>,
    /// The values as BER OCTET STRING TLVs back to back (a SET's contents).
    pub values_ber: &'a [u8],
}

/// Why octets are not a well-formed stored entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed stored entry at octet {offset}: {problem}")]
pub struct StoredFormatError {
    /// Offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub problem: &'static str,
}

impl StoredAttribute<'_> {
    /// The options, normalized (`""` or e.g. `;lang-fr`).
    pub fn options_str(&self) -> &str {
        self.options
    }

    /// The options as an owned [`Options`].
    pub fn options(&self) -> Options {
        if self.options.is_empty() {
            return Options::none();
        }
        super::split_description(format!("x{}", self.options).as_bytes())
            .map(|(_, o)| o)
            .unwrap_or_default()
    }

    /// Writes this attribute as a `PartialAttribute` TLV named `name` (the type's name as
    /// the client should see it; the options are appended). With `types_only`, the value
    /// set is empty (RFC 4511 section 4.5.1, typesOnly).
    pub fn write_ber(&self, name: &str, types_only: bool, out: &mut Vec<u8>) {
        let name_len = name.len() + self.options.len();
        let set_len = if types_only { 0 } else { self.values_ber.len() };
        let inner = tlv_len(name_len) + tlv_len(set_len);
        out.push(tag::SEQUENCE);
        push_length(out, inner);
        out.push(tag::OCTET_STRING);
        push_length(out, name_len);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(self.options.as_bytes());
        out.push(tag::SET);
        push_length(out, set_len);
        if !types_only {
            out.extend_from_slice(self.values_ber);
        }
    }
}

/// Octets of a TLV whose contents are `len` octets long.
fn tlv_len(len: usize) -> usize {
    1 + length_octets(len) + len
}

fn length_octets(len: usize) -> usize {
    match len {
        0..=0x7f => 1,
        0x80..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 5,
    }
}

pub(super) fn push_length(out: &mut Vec<u8>, len: usize) {
    let n = length_octets(len);
    if n == 1 {
        out.push(len as u8);
    } else {
        out.push(0x80 | (n - 1) as u8);
        for i in (0..n - 1).rev() {
            out.push((len >> (8 * i)) as u8);
        }
    }
}

use crate::varint::{push as push_varint, read as read_varint};

impl StoredEntry {
    /// Encodes attributes (any order; they are sorted by type id, then options). Attributes
    /// without values are left out.
    pub fn build(attrs: &[Attribute]) -> StoredEntry {
        let mut order: Vec<&Attribute> = attrs.iter().filter(|a| !a.values.is_empty()).collect();
        order.sort_by(|a, b| (a.ty, &a.options).cmp(&(b.ty, &b.options)));
        let mut out = Vec::with_capacity(
            order
                .iter()
                .map(|a| 8 + a.options.as_str().len() + a.values.iter().map(|v| v.len() + 4).sum::<usize>())
                .sum(),
        );
        let mut run = Vec::new();
        for a in order {
            push_varint(&mut out, u64::from(a.ty.0));
            push_varint(&mut out, a.options.as_str().len() as u64);
            out.extend_from_slice(a.options.as_str().as_bytes());
            run.clear();
            for v in &a.values {
                run.push(tag::OCTET_STRING);
                push_length(&mut run, v.len());
                run.extend_from_slice(v);
            }
            push_varint(&mut out, run.len() as u64);
            out.extend_from_slice(&run);
        }
        StoredEntry {
            bytes: out.into_boxed_slice(),
        }
    }

    /// Octets [`super::StoredBuilder`] wrote, well formed by construction.
    pub(super) fn from_built(bytes: Box<[u8]>) -> StoredEntry {
        StoredEntry { bytes }
    }

    /// Takes octets of this form, checking them ([`StoredRef::validate`]).
    pub fn from_bytes(bytes: Box<[u8]>) -> Result<StoredEntry, StoredFormatError> {
        StoredRef::new(&bytes).validate()?;
        Ok(StoredEntry { bytes })
    }

    /// Builds the stored form from an attribute list in BER (`PartialAttribute` TLVs back to
    /// back, as an AddRequest or the write-ahead log carries it), resolving each description
    /// against the schema. An attribute listed twice has its values merged.
    ///
    /// The values are copied once, from `ber` into the result: every follower replays each
    /// change through here, and a copy per value (then a second into the stored form) was
    /// most of its allocations.
    pub fn from_attributes_ber(ber: &[u8], schema: &Schema) -> Result<StoredEntry, ModelError> {
        let list: SeqOf<'_, PartialAttribute<'_>> =
            SeqOf::decode_contents(ber).map_err(|e| ModelError::ProtocolError(e.to_string()))?;
        let mut listed: Vec<(AttributeTypeId, Options, SeqOf<'_, &[u8]>)> = Vec::new();
        for a in list.iter() {
            let (ty, options) = super::resolve_description(a.description, schema)?;
            listed.push((ty, options, a.values));
        }
        // Stable: the attributes of one description keep their listed order, and so do
        // their merged values. A list written from a stored entry (a replicated change) is
        // in this order already.
        if !listed.is_sorted_by(|x, y| (x.0, &x.1) <= (y.0, &y.1)) {
            listed.sort_by(|x, y| (x.0, &x.1).cmp(&(y.0, &y.1)));
        }
        let mut out = Vec::with_capacity(ber.len());
        let mut run = Vec::new();
        let mut rest = &listed[..];
        while let Some((ty, options, _)) = rest.first() {
            let same = rest
                .iter()
                .take_while(|(t, o, _)| t == ty && o == options)
                .count();
            let (one, after) = rest.split_at(same);
            rest = after;
            run.clear();
            for v in one.iter().flat_map(|(_, _, values)| values.iter()) {
                run.push(tag::OCTET_STRING);
                push_length(&mut run, v.len());
                run.extend_from_slice(v);
            }
            if run.is_empty() {
                continue;
            }
            push_varint(&mut out, u64::from(ty.0));
            push_varint(&mut out, options.as_str().len() as u64);
            out.extend_from_slice(options.as_str().as_bytes());
            push_varint(&mut out, run.len() as u64);
            out.extend_from_slice(&run);
        }
        Ok(StoredEntry {
            bytes: out.into_boxed_slice(),
        })
    }

    /// The borrowed view.
    pub fn as_ref(&self) -> StoredRef<'_> {
        StoredRef { bytes: &self.bytes }
    }

    /// The octets.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The octets, owned.
    pub fn into_bytes(self) -> Box<[u8]> {
        self.bytes
    }

    /// Every attribute, in stored order.
    pub fn attributes(&self) -> StoredAttributes<'_> {
        self.as_ref().attributes()
    }

    /// The attributes of one type (each set of options is its own attribute).
    pub fn attribute(&self, ty: AttributeTypeId) -> impl Iterator<Item = StoredAttribute<'_>> {
        self.as_ref().attribute(ty)
    }

    /// True when the entry holds an attribute of this type.
    pub fn has(&self, ty: AttributeTypeId) -> bool {
        self.as_ref().has(ty)
    }

    /// Octets this entry occupies on the heap, for memory accounting.
    pub fn heap_size(&self) -> usize {
        self.bytes.len()
    }

    /// The attribute list in BER, as a SearchResultEntry carries it (see
    /// [`StoredRef::write_attributes_ber`]).
    pub fn to_attributes_ber(&self, schema: &Schema) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len() * 2);
        self.as_ref().write_attributes_ber(schema, &mut out);
        out
    }
}

impl std::fmt::Debug for StoredEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_ref().fmt(f)
    }
}

impl std::fmt::Debug for StoredRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.attributes()).finish()
    }
}

impl<'a> StoredRef<'a> {
    /// Views octets as a stored entry without checking them (reading malformed octets never
    /// panics; it yields fewer attributes).
    pub fn new(bytes: &'a [u8]) -> Self {
        StoredRef { bytes }
    }

    /// The octets.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Every attribute, in stored order.
    pub fn attributes(&self) -> StoredAttributes<'a> {
        StoredAttributes {
            bytes: self.bytes,
            pos: 0,
        }
    }

    /// The attributes from `offset` on. `offset` is where an attribute starts: one that
    /// [`StoredAttributes::offset`] gave for these octets, or for octets equal to these up
    /// to it (two states of one entry share their attributes up to the first change). From
    /// anywhere else the walk reads whatever the octets there say, without panicking.
    pub fn attributes_from(&self, offset: usize) -> StoredAttributes<'a> {
        StoredAttributes {
            bytes: self.bytes,
            pos: offset,
        }
    }

    /// The attributes of one type (each set of options is its own attribute). Attributes
    /// are sorted by type, so the walk stops at the first larger type.
    pub fn attribute(&self, ty: AttributeTypeId) -> impl Iterator<Item = StoredAttribute<'a>> {
        self.attributes()
            .skip_while(move |a| a.ty < ty)
            .take_while(move |a| a.ty == ty)
    }

    /// True when the entry holds an attribute of this type.
    pub fn has(&self, ty: AttributeTypeId) -> bool {
        self.attribute(ty).next().is_some()
    }

    /// Writes the whole attribute list in BER (`PartialAttribute` TLVs back to back, the
    /// types' canonical names from `schema`), as a SearchResultEntry carries it.
    pub fn write_attributes_ber(&self, schema: &Schema, out: &mut Vec<u8>) {
        for a in self.attributes() {
            let name = schema.attribute_type_by_id(a.ty).map_or("", |t| t.name());
            a.write_ber(name, false, out);
        }
    }

    /// Checks that the octets are well formed: every attribute readable, sorted by (type,
    /// options) without duplicates, at least one value each, every value a definite-length
    /// OCTET STRING, nothing left over.
    pub fn validate(&self) -> Result<(), StoredFormatError> {
        let mut pos = 0;
        let mut previous: Option<(AttributeTypeId, &[u8])> = None;
        while pos < self.bytes.len() {
            let start = pos;
            let Some((a, next)) = read_attribute(self.bytes, pos) else {
                return Err(StoredFormatError {
                    offset: start,
                    problem: "truncated or malformed attribute header",
                });
            };
            if let Some(prev) = previous {
                if prev >= (a.ty, a.options.as_bytes()) {
                    return Err(StoredFormatError {
                        offset: start,
                        problem: "attributes out of order or repeated",
                    });
                }
            }
            if a.values_ber.is_empty() {
                return Err(StoredFormatError {
                    offset: start,
                    problem: "an attribute without values",
                });
            }
            let mut r = Reader::new(a.values_ber);
            while !r.is_empty() {
                if r.read_octets(tag::OCTET_STRING, "stored value").is_err() {
                    return Err(StoredFormatError {
                        offset: start,
                        problem: "a value that is not an OCTET STRING",
                    });
                }
            }
            previous = Some((a.ty, a.options.as_bytes()));
            pos = next;
        }
        Ok(())
    }
}

/// Reads one attribute at `pos`; returns it and the offset after it.
fn read_attribute(bytes: &[u8], pos: usize) -> Option<(StoredAttribute<'_>, usize)> {
    // Most attributes have a type ID below 128, no options and values taking fewer than
    // 128 octets: three one-octet varints. Every read of an entry (a search result, a
    // filter, the audit log's diff) walks its attributes, so that shape is read first.
    if let Some(&[ty, 0, run]) = bytes.get(pos..pos + 3) {
        if ty < 0x80 && run < 0x80 {
            let start = pos + 3;
            let end = start + usize::from(run);
            let values_ber = bytes.get(start..end)?;
            return Some((
                StoredAttribute {
                    ty: AttributeTypeId(u32::from(ty)),
                    options: "",
                    values: SeqOf::from_trusted_ber(values_ber),
                    values_ber,
                },
                end,
            ));
        }
    }
    read_attribute_any(bytes, pos)
}

/// [`read_attribute`] for any shape.
fn read_attribute_any(bytes: &[u8], mut pos: usize) -> Option<(StoredAttribute<'_>, usize)> {
    let ty = u32::try_from(read_varint(bytes, &mut pos, 5)?).ok()?;
    let options_len = usize::try_from(read_varint(bytes, &mut pos, 5)?).ok()?;
    // Nearly every attribute has no options: no UTF-8 check for those.
    let options = if options_len == 0 {
        ""
    } else {
        std::str::from_utf8(bytes.get(pos..pos.checked_add(options_len)?)?).ok()?
    };
    pos += options_len;
    let run_len = usize::try_from(read_varint(bytes, &mut pos, 5)?).ok()?;
    let values_ber = bytes.get(pos..pos.checked_add(run_len)?)?;
    pos += run_len;
    Some((
        StoredAttribute {
            ty: AttributeTypeId(ty),
            options,
            values: SeqOf::from_trusted_ber(values_ber),
            values_ber,
        },
        pos,
    ))
}

/// The attributes of a stored entry, in stored order.
#[derive(Debug, Clone)]
pub struct StoredAttributes<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl StoredAttributes<'_> {
    /// Where the next attribute starts in the entry's octets (their length when none is
    /// left).
    pub fn offset(&self) -> usize {
        self.pos.min(self.bytes.len())
    }
}

impl<'a> Iterator for StoredAttributes<'a> {
    type Item = StoredAttribute<'a>;

    fn next(&mut self) -> Option<StoredAttribute<'a>> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        match read_attribute(self.bytes, self.pos) {
            Some((a, next)) => {
                self.pos = next;
                Some(a)
            }
            None => {
                self.pos = self.bytes.len();
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_minimal_ber() {
        for (len, octets) in [
            (0usize, 1usize),
            (127, 1),
            (128, 2),
            (255, 2),
            (256, 3),
            (65536, 4),
        ] {
            let mut out = Vec::new();
            push_length(&mut out, len);
            assert_eq!(out.len(), octets, "{len}");
        }
    }

    #[test]
    fn a_walk_resumes_where_its_offset_says() {
        let attrs: Vec<Attribute> = [3u32, 7, 200]
            .into_iter()
            .map(|ty| Attribute {
                ty: AttributeTypeId(ty),
                options: Options::none(),
                values: vec![vec![b'v'; ty as usize]],
            })
            .collect();
        let entry = StoredEntry::build(&attrs);
        let e = entry.as_ref();
        let mut walk = e.attributes();
        assert_eq!(walk.offset(), 0);
        let mut offsets = Vec::new();
        while walk.next().is_some() {
            offsets.push(walk.offset());
        }
        assert_eq!(offsets.last(), Some(&entry.as_bytes().len()));
        for (i, &at) in offsets.iter().enumerate() {
            let rest: Vec<AttributeTypeId> = e.attributes_from(at).map(|a| a.ty).collect();
            let expected: Vec<AttributeTypeId> = attrs[i + 1..].iter().map(|a| a.ty).collect();
            assert_eq!(rest, expected, "from {at}");
        }
        // A walk that met octets it cannot read ends there, its offset at the end.
        let mut cut = StoredRef::new(&entry.as_bytes()[..offsets[0] + 2]).attributes();
        assert!(cut.next().is_some() && cut.next().is_none());
        assert_eq!(cut.offset(), offsets[0] + 2);
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;

    /// Every attribute read the short way is what the general reader reads, whatever the
    /// shape: type IDs on both sides of 128, options or none, value runs on both sides of
    /// 128 octets, and octets cut short anywhere.
    #[test]
    fn the_common_shape_reads_as_any_shape_does() {
        let mut attrs = Vec::new();
        for (i, ty) in [0u32, 5, 127, 128, 300].into_iter().enumerate() {
            for options in ["", ";x-a"] {
                for len in [0usize, 1, 120, 125, 126, 200] {
                    if len == 0 && i % 2 == 0 {
                        continue;
                    }
                    attrs.push(Attribute {
                        ty: AttributeTypeId(ty),
                        options: super::super::split_description(format!("cn{options}").as_bytes())
                            .unwrap()
                            .1,
                        values: vec![vec![b'v'; len.max(1)], vec![b'w'; len / 2]],
                    });
                }
            }
        }
        let entry = StoredEntry::build(&attrs);
        let bytes = entry.as_bytes();
        for cut in 0..=bytes.len() {
            let bytes = &bytes[..cut];
            let mut pos = 0;
            while let Some((general, next)) = read_attribute_any(bytes, pos) {
                let (short, short_next) = read_attribute(bytes, pos).expect("read the short way");
                assert_eq!(
                    (short.ty, short.options, short.values_ber, short_next),
                    (general.ty, general.options, general.values_ber, next)
                );
                pos = next;
            }
            assert!(read_attribute(bytes, pos).is_none(), "cut at {cut}, pos {pos}");
        }
    }
}
