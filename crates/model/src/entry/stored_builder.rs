//! Builds entries in the stored form ([`super::stored`]) value by value, for the entries the
//! server makes rather than stores (`cn=Monitor`'s thousand connection entries per read):
//! each value is written once, as its OCTET STRING TLV, into a buffer the builder keeps
//! between entries, so an entry costs one allocation (its octets) instead of one per value
//! and attribute, as [`StoredEntry::build`] from an [`super::Attribute`] list does.

use larch_proto::ber::tag;

use super::stored::push_length;
use super::StoredEntry;
use crate::schema::AttributeTypeId;
use crate::varint::push as push_varint;

/// Collects values by attribute type (no options) and makes a [`StoredEntry`] of them;
/// reused from entry to entry.
#[derive(Debug, Default)]
pub struct StoredBuilder {
    /// The values' TLVs, back to back, in the order they were added.
    values: Vec<u8>,
    /// Per value: its type and where its TLV lies in `values`.
    index: Vec<(AttributeTypeId, u32, u32)>,
    /// The index sorted for [`StoredBuilder::finish`], kept for its capacity.
    order: Vec<(AttributeTypeId, u32, u32)>,
}

impl StoredBuilder {
    /// Adds one value of `ty` (values of one type, added in any order, make one
    /// attribute, in the order they were added).
    pub fn value(&mut self, ty: AttributeTypeId, value: &[u8]) {
        let start = self.values.len();
        self.values.push(tag::OCTET_STRING);
        push_length(&mut self.values, value.len());
        self.values.extend_from_slice(value);
        self.mark(ty, start);
    }

    /// Adds `n` in decimal as one value of `ty`, without formatting it into a string first.
    pub fn decimal(&mut self, ty: AttributeTypeId, n: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.value(ty, &digits[at..]);
    }

    fn mark(&mut self, ty: AttributeTypeId, start: usize) {
        // An entry is far below 4 GiB; a builder that grew past it wraps the offsets and
        // `finish` would misread them, so it is refused outright.
        let end = u32::try_from(self.values.len()).expect("a built entry is under 4 GiB");
        self.index.push((ty, start as u32, end));
    }

    /// The entry holding every value added since the last `finish`, attributes sorted by
    /// type as the stored form requires; the builder is left empty.
    pub fn finish(&mut self) -> StoredEntry {
        self.order.clear();
        self.order.extend_from_slice(&self.index);
        // Stable: the values of one type keep the order they were added in.
        self.order.sort_by_key(|&(ty, _, _)| ty);
        let mut out = Vec::with_capacity(self.values.len() + 8 * self.order.len());
        let mut i = 0;
        while i < self.order.len() {
            let ty = self.order[i].0;
            let run_end = i + self.order[i..].iter().take_while(|v| v.0 == ty).count();
            let run = &self.order[i..run_end];
            let run_len: usize = run.iter().map(|&(_, s, e)| (e - s) as usize).sum();
            push_varint(&mut out, u64::from(ty.0));
            push_varint(&mut out, 0);
            push_varint(&mut out, run_len as u64);
            for &(_, s, e) in run {
                out.extend_from_slice(&self.values[s as usize..e as usize]);
            }
            i = run_end;
        }
        self.values.clear();
        self.index.clear();
        StoredEntry::from_built(out.into_boxed_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{Attribute, Options};

    fn attr(ty: u32, values: &[&[u8]]) -> Attribute {
        Attribute {
            ty: AttributeTypeId(ty),
            options: Options::none(),
            values: values.iter().map(|v| v.to_vec()).collect(),
        }
    }

    #[test]
    fn the_same_octets_as_built_from_an_attribute_list() {
        let mut b = StoredBuilder::default();
        b.value(AttributeTypeId(7), b"seven");
        b.decimal(AttributeTypeId(2), 0);
        b.value(AttributeTypeId(7), b"sept");
        b.decimal(AttributeTypeId(300), 18_446_744_073_709_551_615);
        let long = vec![b'x'; 200];
        b.value(AttributeTypeId(1), &long);
        let built = b.finish();
        let expected = StoredEntry::build(&[
            attr(7, &[b"seven", b"sept"]),
            attr(2, &[b"0"]),
            attr(300, &[b"18446744073709551615"]),
            attr(1, &[&long]),
        ]);
        assert_eq!(built.as_bytes(), expected.as_bytes());
        assert!(built.as_ref().validate().is_ok());
    }

    #[test]
    fn finish_leaves_it_empty_for_the_next_entry() {
        let mut b = StoredBuilder::default();
        b.decimal(AttributeTypeId(3), 42);
        let first = b.finish();
        b.value(AttributeTypeId(4), b"next");
        let second = b.finish();
        assert_eq!(
            first.as_bytes(),
            StoredEntry::build(&[attr(3, &[b"42"])]).as_bytes()
        );
        assert_eq!(
            second.as_bytes(),
            StoredEntry::build(&[attr(4, &[b"next"])]).as_bytes()
        );
        assert!(b.finish().as_bytes().is_empty());
    }
}
