//! Larch's snapshot transfer ([`super::SNAPSHOT_TRANSFER`]): a new replica asks its
//! provider for a snapshot of the directory and receives the snapshot file itself, piece
//! by piece, before it follows the provider's changes.
//!
//! ```text
//! request:       no value
//! each piece:    IntermediateResponse { responseName SNAPSHOT_TRANSFER,
//!                  responseValue SnapshotPiece }
//! SnapshotPiece ::= SEQUENCE { offset [0] INTEGER, data [1] OCTET STRING,
//!                              crc32c [2] INTEGER }
//! the end:       ExtendedResponse { success, responseName SNAPSHOT_TRANSFER,
//!                  responseValue SnapshotDone }
//! SnapshotDone  ::= SEQUENCE { lsn [0] INTEGER, octets [1] INTEGER }
//! ```
//!
//! `offset` is where `data` goes in the file (pieces come in order, without gaps), `crc32c`
//! the CRC-32C (Castagnoli) of `data`; `lsn` is the snapshot's LSN, `octets` the file's
//! length. Integers are 0 to 2^63 - 1 (`crc32c` 0 to 2^32 - 1).

use super::{ExtendedValue, SNAPSHOT_TRANSFER};
use crate::ber::{tag, Reader, Writer};
use crate::error::Result;

const OFFSET: u8 = tag::context(0);
const DATA: u8 = tag::context(1);
const CRC: u8 = tag::context(2);
const LSN: u8 = tag::context(0);
const OCTETS: u8 = tag::context(1);

/// One piece of the snapshot file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotPiece<'a> {
    /// Where `data` goes in the file.
    pub offset: u64,
    /// The octets.
    pub data: &'a [u8],
    /// CRC-32C of `data`.
    pub crc32c: u32,
}

impl<'a> SnapshotPiece<'a> {
    /// Reads the value of a piece's IntermediateResponse.
    pub fn decode(value: &'a [u8]) -> Result<Self> {
        const CTX: &str = "SnapshotPiece";
        let mut outer = Reader::new(value);
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let offset = r.read_integer_in(OFFSET, 0, i64::MAX, "SnapshotPiece.offset")? as u64;
        let data = r.read_octets(DATA, "SnapshotPiece.data")?;
        let crc32c = r.read_integer_in(CRC, 0, i64::from(u32::MAX), "SnapshotPiece.crc32c")? as u32;
        r.finish_sequence(CTX, &[OFFSET, DATA, CRC])?;
        Ok(SnapshotPiece { offset, data, crc32c })
    }

    /// Writes the value of a piece's IntermediateResponse.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(OFFSET, i64::try_from(self.offset).unwrap_or(i64::MAX));
        w.octets(DATA, self.data);
        w.integer(CRC, i64::from(self.crc32c));
        w.end(m);
    }
}

/// The end of a transfer, sent with `success`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SnapshotDone {
    /// The snapshot's LSN.
    pub lsn: u64,
    /// The file's length.
    pub octets: u64,
}

impl<'a> ExtendedValue<'a> for SnapshotDone {
    const OID: &'static str = SNAPSHOT_TRANSFER;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "SnapshotDone";
        let mut outer = Reader::new(value.unwrap_or_default());
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let mut field = |t: u8, ctx: &'static str| r.read_integer_in(t, 0, i64::MAX, ctx).map(|v| v as u64);
        let done = SnapshotDone {
            lsn: field(LSN, "SnapshotDone.lsn")?,
            octets: field(OCTETS, "SnapshotDone.octets")?,
        };
        r.finish_sequence(CTX, &[LSN, OCTETS])?;
        Ok(done)
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        for (t, v) in [(LSN, self.lsn), (OCTETS, self.octets)] {
            w.integer(t, i64::try_from(v).unwrap_or(i64::MAX));
        }
        w.end(m);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_and_the_end_read_back() {
        let piece = SnapshotPiece {
            offset: 1 << 40,
            data: b"snapshot octets",
            crc32c: u32::MAX,
        };
        let mut out = Vec::new();
        piece.encode(&mut out);
        assert_eq!(SnapshotPiece::decode(&out).unwrap(), piece);
        let done = SnapshotDone {
            lsn: 7,
            octets: 1 << 33,
        };
        let mut out = Vec::new();
        assert!(done.encode_value(&mut out));
        assert_eq!(SnapshotDone::decode_value(Some(&out)).unwrap(), done);
    }

    #[test]
    fn damaged_values_are_errors() {
        let piece = SnapshotPiece {
            offset: 3,
            data: b"x",
            crc32c: 9,
        };
        let mut out = Vec::new();
        piece.encode(&mut out);
        for cut in 0..out.len() {
            assert!(SnapshotPiece::decode(&out[..cut]).is_err(), "cut at {cut}");
        }
        assert!(SnapshotDone::decode_value(None).is_err());
        assert!(SnapshotDone::decode_value(Some(&[0x30, 0x03, 0x80, 0x01, 0xff])).is_err());
    }
}
