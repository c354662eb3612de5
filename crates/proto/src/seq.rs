//! `SeqOf`: a SEQUENCE OF / SET OF that is either still BER (as decoded, validated once,
//! read lazily) or a slice of values (as built by a caller who is about to encode).
//!
//! This is how decoding stays free of heap allocation: a decoded list is just the slice of
//! the read buffer that holds it. The decoder validates every element when the message is
//! decoded, so iterating later cannot fail.

use std::fmt;

use crate::ber::{Reader, Writer};
use crate::error::Result;

/// A value that can stand in a [`SeqOf`]: decodes itself from the next element of a reader
/// and encodes itself as one element.
pub trait Element<'a>: Sized + Copy {
    /// Decodes one element, validating it completely.
    fn decode(r: &mut Reader<'a>) -> Result<Self>;
    /// Encodes this value as one element.
    fn encode(&self, w: &mut Writer<'_>);
}

impl<'a> Element<'a> for &'a [u8] {
    #[inline]
    fn decode(r: &mut Reader<'a>) -> Result<Self> {
        r.read_octets(crate::ber::tag::OCTET_STRING, "OCTET STRING element")
    }
    #[inline]
    fn encode(&self, w: &mut Writer<'_>) {
        w.octet_string(self);
    }
}

/// A SEQUENCE OF or SET OF `T`: validated BER contents, or a slice of built values.
pub struct SeqOf<'a, T> {
    repr: Repr<'a, T>,
}

enum Repr<'a, T> {
    Ber(&'a [u8]),
    Items(&'a [T]),
}

impl<T> Clone for SeqOf<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SeqOf<'_, T> {}
impl<T> Clone for Repr<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Repr<'_, T> {}

impl<T> Default for SeqOf<'_, T> {
    fn default() -> Self {
        SeqOf {
            repr: Repr::Items(&[]),
        }
    }
}

impl<'a, T: Element<'a>> SeqOf<'a, T> {
    /// A list of already built values, for encoding.
    #[inline]
    pub const fn from_items(items: &'a [T]) -> Self {
        SeqOf {
            repr: Repr::Items(items),
        }
    }

    /// Wraps the contents octets of a SEQUENCE OF / SET OF that this program encoded itself
    /// (e.g. an entry's stored values), without validating them again. Nothing unsafe
    /// follows from malformed octets: iteration just ends at the first element that does
    /// not decode.
    #[inline]
    pub const fn from_trusted_ber(contents: &'a [u8]) -> Self {
        SeqOf {
            repr: Repr::Ber(contents),
        }
    }

    /// Validates the contents octets of a SEQUENCE OF / SET OF and wraps them.
    pub fn decode_contents(contents: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(contents);
        while !r.is_empty() {
            T::decode(&mut r)?;
        }
        Ok(SeqOf {
            repr: Repr::Ber(contents),
        })
    }

    /// The elements, in order.
    #[inline]
    pub fn iter(&self) -> SeqIter<'a, T> {
        SeqIter { repr: self.repr }
    }

    /// True when there are no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        match self.repr {
            Repr::Ber(b) => b.is_empty(),
            Repr::Items(i) => i.is_empty(),
        }
    }

    /// The number of elements (counted by walking the BER when decoded).
    pub fn len(&self) -> usize {
        match self.repr {
            Repr::Ber(_) => self.iter().count(),
            Repr::Items(i) => i.len(),
        }
    }

    /// The BER contents octets, when this list was decoded rather than built.
    #[inline]
    pub fn as_ber(&self) -> Option<&'a [u8]> {
        match self.repr {
            Repr::Ber(b) => Some(b),
            Repr::Items(_) => None,
        }
    }

    /// Writes the elements (the contents of the enclosing SEQUENCE OF / SET OF).
    #[inline]
    pub fn encode_contents(&self, w: &mut Writer<'_>) {
        match self.repr {
            Repr::Ber(b) => w.raw(b),
            Repr::Items(items) => items.iter().for_each(|i| i.encode(w)),
        }
    }
}

impl<'a, T: Element<'a>> IntoIterator for SeqOf<'a, T> {
    type Item = T;
    type IntoIter = SeqIter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T: Element<'a>> IntoIterator for &SeqOf<'a, T> {
    type Item = T;
    type IntoIter = SeqIter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over a [`SeqOf`].
pub struct SeqIter<'a, T> {
    repr: Repr<'a, T>,
}

impl<'a, T: Element<'a>> Iterator for SeqIter<'a, T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        match &mut self.repr {
            Repr::Ber(b) => {
                if b.is_empty() {
                    return None;
                }
                let mut r = Reader::new(b);
                // Validated when the message was decoded, so this cannot fail; if it ever
                // did, ending the iteration is the safe answer.
                let item = T::decode(&mut r).ok();
                *b = if item.is_some() { r.remaining() } else { &[] };
                item
            }
            Repr::Items(items) => {
                let (first, rest) = items.split_first()?;
                *items = rest;
                Some(*first)
            }
        }
    }
}

impl<'a, T: Element<'a> + PartialEq> PartialEq for SeqOf<'a, T> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<'a, T: Element<'a> + Eq> Eq for SeqOf<'a, T> {}

impl<'a, T: Element<'a> + fmt::Debug> fmt::Debug for SeqOf<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
