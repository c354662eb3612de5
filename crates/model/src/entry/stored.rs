//! The stored form of an entry.
//!
//! Layout: `ber` holds the attribute list exactly as a SearchResultEntry carries it (the
//! `PartialAttribute` TLVs back to back, canonical attribute names, options appended), so
//! returning a whole entry is a header and one copy. `slots` holds, for each attribute in
//! `ber` order (sorted by type id, then options), its type id and where its TLV starts:
//! 8 octets per attribute.

use larch_proto::ber::{tag, Reader, Writer};
use larch_proto::{PartialAttribute, SeqOf};

use super::{Attribute, Options};
use crate::schema::{AttributeTypeId, Schema};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    ty: AttributeTypeId,
    start: u32,
}

/// An entry's attributes in their stored, encoded form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    ber: Box<[u8]>,
    slots: Box<[Slot]>,
}

/// One attribute of a [`StoredEntry`], borrowed.
#[derive(Debug, Clone, Copy)]
pub struct StoredAttribute<'a> {
    /// The attribute type.
    pub ty: AttributeTypeId,
    /// The description as stored: the type's canonical name, then the options.
    pub description: &'a [u8],
    /// The values.
    pub values: SeqOf<'a, &'a [u8]>,
    /// The whole `PartialAttribute` TLV (for copying into a result).
    pub ber: &'a [u8],
}

impl StoredAttribute<'_> {
    /// The options, normalized (`""` or e.g. `;lang-fr`).
    pub fn options_str(&self) -> &str {
        let d = std::str::from_utf8(self.description).unwrap_or("");
        d.find(';').map_or("", |i| &d[i..])
    }

    /// The options as an owned [`Options`].
    pub fn options(&self) -> Options {
        super::split_description(self.description)
            .map(|(_, o)| o)
            .unwrap_or_default()
    }
}

impl StoredEntry {
    /// Encodes attributes (any order; they are sorted by type id, then options).
    pub fn build(attrs: &[Attribute], schema: &Schema) -> StoredEntry {
        let mut order: Vec<&Attribute> = attrs.iter().filter(|a| !a.values.is_empty()).collect();
        order.sort_by(|a, b| (a.ty, &a.options).cmp(&(b.ty, &b.options)));
        let mut ber = Vec::with_capacity(
            order
                .iter()
                .map(|a| 16 + a.values.iter().map(|v| v.len() + 4).sum::<usize>())
                .sum(),
        );
        let mut slots = Vec::with_capacity(order.len());
        let mut name = String::new();
        for a in order {
            slots.push(Slot {
                ty: a.ty,
                start: ber.len() as u32,
            });
            name.clear();
            name.push_str(schema.attribute_type_by_id(a.ty).map_or("", |t| t.name()));
            name.push_str(a.options.as_str());
            let values: Vec<&[u8]> = a.values.iter().map(Vec::as_slice).collect();
            let pa = PartialAttribute {
                description: name.as_bytes(),
                values: SeqOf::from_items(&values),
            };
            larch_proto::Element::encode(&pa, &mut Writer::new(&mut ber));
        }
        StoredEntry {
            ber: ber.into_boxed_slice(),
            slots: slots.into_boxed_slice(),
        }
    }

    /// The attribute list in BER (`PartialAttribute` TLVs back to back), ready for
    /// [`larch_proto::encode_search_result_entry`].
    pub fn attributes_ber(&self) -> &[u8] {
        &self.ber
    }

    /// Every attribute, in stored order.
    pub fn attributes(&self) -> impl Iterator<Item = StoredAttribute<'_>> {
        (0..self.slots.len()).map(move |i| self.at(i))
    }

    /// The attributes of one type (each set of options is its own attribute).
    pub fn attribute(&self, ty: AttributeTypeId) -> impl Iterator<Item = StoredAttribute<'_>> {
        let first = self.slots.partition_point(|s| s.ty < ty);
        let end = first + self.slots[first..].iter().take_while(|s| s.ty == ty).count();
        (first..end).map(move |i| self.at(i))
    }

    /// True when the entry holds an attribute of this type.
    pub fn has(&self, ty: AttributeTypeId) -> bool {
        self.slots.binary_search_by(|s| s.ty.cmp(&ty)).is_ok()
    }

    /// Octets this entry occupies (heap), for memory accounting.
    pub fn heap_size(&self) -> usize {
        self.ber.len() + self.slots.len() * std::mem::size_of::<Slot>()
    }

    fn at(&self, i: usize) -> StoredAttribute<'_> {
        let slot = self.slots[i];
        let end = self.slots.get(i + 1).map_or(self.ber.len(), |s| s.start as usize);
        let tlv = &self.ber[slot.start as usize..end];
        // Written by `build` above, so it decodes; an empty attribute is the safe fallback.
        let (description, values) = decode_attribute(tlv).unwrap_or((&[], SeqOf::default()));
        StoredAttribute {
            ty: slot.ty,
            description,
            values,
            ber: tlv,
        }
    }
}

fn decode_attribute(tlv: &[u8]) -> Option<(&[u8], SeqOf<'_, &[u8]>)> {
    let mut r = Reader::new(tlv);
    let mut a = r.read_constructed(tag::SEQUENCE, "stored attribute").ok()?;
    let description = a.read_octets(tag::OCTET_STRING, "stored attribute").ok()?;
    let set = a.read(tag::SET, "stored attribute").ok()?;
    Some((description, SeqOf::from_trusted_ber(set)))
}
