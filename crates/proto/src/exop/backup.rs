use super::{ExtendedValue, BACKUP};
use crate::ber::{tag, Reader, Writer};
use crate::error::Result;

const DIRECTORY: u8 = tag::context(0);
const SNAPSHOT_LSN: u8 = tag::context(0);
const END_LSN: u8 = tag::context(1);
const ENTRIES: u8 = tag::context(2);
const OCTETS: u8 = tag::context(3);
const MILLISECONDS: u8 = tag::context(4);

/// Larch's online backup request value: `BackupRequestValue ::= SEQUENCE { directory [0]
/// OCTET STRING }`, the absolute path, on the server's host, of a directory that does not
/// exist or is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupRequest<'a> {
    /// Where the server writes the backup.
    pub directory: &'a [u8],
}

impl<'a> ExtendedValue<'a> for BackupRequest<'a> {
    const OID: &'static str = BACKUP;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "BackupRequestValue";
        let mut outer = Reader::new(value.unwrap_or_default());
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let directory = r.read_octets(DIRECTORY, "BackupRequestValue.directory")?;
        r.finish_sequence(CTX, &[DIRECTORY])?;
        Ok(BackupRequest { directory })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.octets(DIRECTORY, self.directory);
        w.end(m);
        true
    }
}

/// Larch's online backup response value, sent with `success`: `BackupResponseValue ::=
/// SEQUENCE { snapshotLsn [0] INTEGER, endLsn [1] INTEGER, entries [2] INTEGER,
/// octets [3] INTEGER, milliseconds [4] INTEGER }`, each from 0 to 2^63 - 1: the backup's
/// snapshot LSN, the LSN it restores to, the snapshot's entries, the octets written, and
/// how long it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BackupResponse {
    /// The snapshot's LSN.
    pub snapshot_lsn: i64,
    /// The LSN the backup restores to.
    pub end_lsn: i64,
    /// Entries in the snapshot.
    pub entries: i64,
    /// Octets of every file of the backup.
    pub octets: i64,
    /// How long taking it took, in milliseconds.
    pub milliseconds: i64,
}

impl<'a> ExtendedValue<'a> for BackupResponse {
    const OID: &'static str = BACKUP;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "BackupResponseValue";
        let mut outer = Reader::new(value.unwrap_or_default());
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let mut field = |t: u8, ctx: &'static str| r.read_integer_in(t, 0, i64::MAX, ctx);
        let response = BackupResponse {
            snapshot_lsn: field(SNAPSHOT_LSN, "BackupResponseValue.snapshotLsn")?,
            end_lsn: field(END_LSN, "BackupResponseValue.endLsn")?,
            entries: field(ENTRIES, "BackupResponseValue.entries")?,
            octets: field(OCTETS, "BackupResponseValue.octets")?,
            milliseconds: field(MILLISECONDS, "BackupResponseValue.milliseconds")?,
        };
        r.finish_sequence(CTX, &[SNAPSHOT_LSN, END_LSN, ENTRIES, OCTETS, MILLISECONDS])?;
        Ok(response)
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        for (t, v) in [
            (SNAPSHOT_LSN, self.snapshot_lsn),
            (END_LSN, self.end_lsn),
            (ENTRIES, self.entries),
            (OCTETS, self.octets),
            (MILLISECONDS, self.milliseconds),
        ] {
            w.integer(t, v.max(0));
        }
        w.end(m);
        true
    }
}
