use super::{oid, sequence, ControlValue};
use crate::ber::{tag, Writer};
use crate::error::Result;

/// Simple Paged Results (RFC 2696): `realSearchControlValue ::= SEQUENCE { size INTEGER
/// (0..maxInt), cookie OCTET STRING }`. In a request `size` is the page size; in a
/// response it is the server's estimate of the total (0 if unknown). An empty cookie
/// starts a search (request) or says it is over (response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedResults<'a> {
    /// Page size (request) or estimated total (response).
    pub size: u32,
    /// Opaque server cookie.
    pub cookie: &'a [u8],
}

impl<'a> ControlValue<'a> for PagedResults<'a> {
    const OID: &'static str = oid::PAGED_RESULTS;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "PagedResults";
        let (outer, mut r) = sequence(value, CTX)?;
        let size = r.read_integer_in(tag::INTEGER, 0, i64::from(i32::MAX), "PagedResults.size")? as u32;
        let cookie = r.read_octets(tag::OCTET_STRING, "PagedResults.cookie")?;
        r.finish_sequence(CTX, &[tag::INTEGER, tag::OCTET_STRING])?;
        outer.finish(CTX)?;
        Ok(PagedResults { size, cookie })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(tag::INTEGER, i64::from(self.size));
        w.octet_string(self.cookie);
        w.end(m);
        true
    }
}
