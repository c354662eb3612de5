//! Pre-read and post-read (RFC 4527): return the target entry as it was before, or is
//! after, an update. The request value is an `AttributeSelection`; the response value is a
//! `SearchResultEntry` (with its application tag).

use super::{oid, required, ControlValue};
use crate::ber::{tag, Reader, Writer};
use crate::error::Result;
use crate::message::op_tag;
use crate::ops::SearchResultEntry;
use crate::seq::SeqOf;

fn decode_selection<'a>(value: Option<&'a [u8]>, ctx: &'static str) -> Result<SeqOf<'a, &'a [u8]>> {
    let mut r = Reader::new(required(value, ctx)?);
    let attrs = r.read(tag::SEQUENCE, ctx)?;
    r.finish(ctx)?;
    SeqOf::decode_contents(attrs).map_err(|e| e.within(ctx))
}

fn encode_selection(attributes: &SeqOf<'_, &[u8]>, out: &mut Vec<u8>) -> bool {
    let mut w = Writer::new(out);
    let m = w.begin(tag::SEQUENCE);
    attributes.encode_contents(&mut w);
    w.end(m);
    true
}

fn decode_entry<'a>(value: Option<&'a [u8]>, ctx: &'static str) -> Result<SearchResultEntry<'a>> {
    let mut r = Reader::new(required(value, ctx)?);
    let contents = r.read(op_tag::SEARCH_RESULT_ENTRY, ctx)?;
    r.finish(ctx)?;
    SearchResultEntry::decode_contents(contents).map_err(|e| e.within(ctx))
}

fn encode_entry(entry: &SearchResultEntry<'_>, out: &mut Vec<u8>) -> bool {
    let mut w = Writer::new(out);
    let m = w.begin(op_tag::SEARCH_RESULT_ENTRY);
    entry.encode_contents(&mut w);
    w.end(m);
    true
}

macro_rules! read_entry_controls {
    ($req:ident, $resp:ident, $oid:expr, $what:literal) => {
        #[doc = concat!("Request for the entry as it is ", $what, " the update: the attributes to return.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $req<'a> {
            /// Attribute descriptions to return (same rules as a SearchRequest).
            pub attributes: SeqOf<'a, &'a [u8]>,
        }

        impl<'a> ControlValue<'a> for $req<'a> {
            const OID: &'static str = $oid;
            fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
                Ok($req {
                    attributes: decode_selection(value, stringify!($req))?,
                })
            }
            fn encode_value(&self, out: &mut Vec<u8>) -> bool {
                encode_selection(&self.attributes, out)
            }
        }

        #[doc = concat!("Response carrying the entry as it is ", $what, " the update.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $resp<'a> {
            /// The entry.
            pub entry: SearchResultEntry<'a>,
        }

        impl<'a> ControlValue<'a> for $resp<'a> {
            const OID: &'static str = $oid;
            fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
                Ok($resp {
                    entry: decode_entry(value, stringify!($resp))?,
                })
            }
            fn encode_value(&self, out: &mut Vec<u8>) -> bool {
                encode_entry(&self.entry, out)
            }
        }
    };
}

read_entry_controls!(PreReadRequest, PreReadResponse, oid::PRE_READ, "before");
read_entry_controls!(PostReadRequest, PostReadResponse, oid::POST_READ, "after");
