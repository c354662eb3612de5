//! What the provider keeps of one committed change: its LSN, CSN, the entry's entryUUID,
//! what happened and the DNs involved. The session log holds these, and persistent
//! searches decide from them what to send.
//!
//! A note is read from the change feed's record of the change ([`CommittedChange`]): the
//! entryUUID and entryCSN are found by a scan of the logged attribute list for the two
//! types (by name or OID), without decoding the rest. A change the server made carries
//! both (a delete's attributes describe the delete: the entry's entryUUID and the
//! delete's entryCSN); one without entryUUID cannot be synchronized and is noted without
//! it (persistent searches skip it, a delta refresh falls back to a present phase).

use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use larch_proto::ber::{tag, Reader};
use larch_store::wal::record::Change;
use larch_store::wal::Lsn;
use larch_store::CommittedChange;

use crate::syncrepl::cookie::Csn;

/// The 16 octets of an entryUUID (RFC 4530), as a Sync State control carries them.
pub type UuidOctets = [u8; 16];

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// An entry was added.
    Add,
    /// An entry's attributes changed.
    Modify,
    /// An entry was renamed or moved (its attributes may have changed too).
    Rename,
    /// An entry was deleted.
    Delete,
}

/// One committed change, as the provider keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeNote {
    /// The change's LSN.
    pub lsn: Lsn,
    /// The change's entryCSN, when its record carries one (of the right shape).
    pub csn: Option<Csn>,
    /// The entry's entryUUID, when its record carries one.
    pub uuid: Option<UuidOctets>,
    /// What happened.
    pub kind: NoteKind,
    /// The entry's DN before the change (a rename's old DN, a delete's DN), normalized;
    /// `None` for an add and a modify, and for a DN that does not normalize.
    pub old_dn: Option<NormDn>,
    /// The entry's DN after the change, normalized; `None` for a delete.
    pub new_dn: Option<NormDn>,
    /// The deleted entry's DN as stored, for the delete message (RFC 4533 sends the DN of
    /// a deleted entry with its state).
    pub deleted_dn: Option<Box<str>>,
    /// The change is the last of its write.
    pub ends_write: bool,
}

impl ChangeNote {
    /// The note of a committed change; DNs normalized with `schema`.
    pub fn of(c: &CommittedChange, schema: &Schema) -> ChangeNote {
        let norm = |dn: &str| NormDn::from_text(dn.as_bytes(), schema).ok();
        let (kind, old_dn, new_dn, deleted_dn, attrs) = match &c.change {
            Change::Add { dn, attributes_ber } => (NoteKind::Add, None, norm(dn), None, attributes_ber),
            Change::Modify { dn, attributes_ber } => (NoteKind::Modify, None, norm(dn), None, attributes_ber),
            Change::ModifyDn {
                dn,
                new_dn,
                attributes_ber,
            } => (NoteKind::Rename, norm(dn), norm(new_dn), None, attributes_ber),
            Change::Delete { dn, attributes_ber } => (
                NoteKind::Delete,
                norm(dn),
                None,
                Some(dn.clone().into_boxed_str()),
                attributes_ber,
            ),
        };
        let found = scan_identity(attrs);
        ChangeNote {
            lsn: c.lsn,
            csn: found.csn.and_then(|c| Csn::parse(&c).ok()),
            uuid: found.uuid,
            kind,
            old_dn,
            new_dn,
            deleted_dn,
            ends_write: c.ends_write,
        }
    }
}

/// The entryUUID and entryCSN found in a logged attribute list.
#[derive(Debug, Default, PartialEq, Eq)]
struct Identity {
    uuid: Option<UuidOctets>,
    csn: Option<String>,
}

const ENTRY_UUID: [&str; 2] = ["entryUUID", "1.3.6.1.1.16.4"];
const ENTRY_CSN: [&str; 2] = ["entryCSN", "1.3.6.1.4.1.4203.666.1.7"];

fn named(description: &[u8], names: &[&str; 2]) -> bool {
    names
        .iter()
        .any(|n| n.as_bytes().eq_ignore_ascii_case(description))
}

/// Scans `PartialAttribute`s (`SEQUENCE { type, SET OF value }`, one after the other) for
/// the first value of entryUUID and entryCSN; a list that does not decode yields what was
/// found before the damage.
fn scan_identity(attributes_ber: &[u8]) -> Identity {
    let mut found = Identity::default();
    let mut r = Reader::new(attributes_ber);
    while !r.is_empty() {
        let Ok(mut a) = r.read_constructed(tag::SEQUENCE, "PartialAttribute") else {
            break;
        };
        let Ok(description) = a.read_octets(tag::OCTET_STRING, "PartialAttribute.type") else {
            break;
        };
        let is_uuid = named(description, &ENTRY_UUID);
        if !is_uuid && !named(description, &ENTRY_CSN) {
            continue;
        }
        let Ok(mut values) = a.read_constructed(tag::SET, "PartialAttribute.vals") else {
            break;
        };
        let Ok(first) = values.read_octets(tag::OCTET_STRING, "value") else {
            continue;
        };
        if is_uuid {
            found.uuid = parse_uuid(first);
        } else {
            found.csn = std::str::from_utf8(first).ok().map(str::to_string);
        }
        if found.uuid.is_some() && found.csn.is_some() {
            break;
        }
    }
    found
}

/// The 16 octets of a UUID in RFC 4122 text form (`8-4-4-4-12` hex digits, either case).
pub fn parse_uuid(text: &[u8]) -> Option<UuidOctets> {
    if text.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut n = 0;
    let mut high: Option<u8> = None;
    for (i, &b) in text.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if b != b'-' {
                return None;
            }
            continue;
        }
        let d = (b as char).to_digit(16)? as u8;
        match high.take() {
            None => high = Some(d),
            Some(h) => {
                out[n] = (h << 4) | d;
                n += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_proto::ber::Writer;

    fn attrs(list: &[(&str, &[&str])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        for (name, values) in list {
            let m = w.begin(tag::SEQUENCE);
            w.octet_string(name.as_bytes());
            let s = w.begin(tag::SET);
            for v in *values {
                w.octet_string(v.as_bytes());
            }
            w.end(s);
            w.end(m);
        }
        out
    }

    const UUID: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0ff";
    const CSN: &str = "20261127010203.000001Z#000000#000#000000";

    #[test]
    fn finds_uuid_and_csn_among_other_attributes() {
        let ber = attrs(&[("cn", &["x"]), ("entryuuid", &[UUID]), ("entryCSN", &[CSN])]);
        let found = scan_identity(&ber);
        assert_eq!(found.csn.as_deref(), Some(CSN));
        let u = found.uuid.unwrap();
        assert_eq!(u[0], 0x0f);
        assert_eq!(u[15], 0xff);
        assert_eq!(scan_identity(&attrs(&[("cn", &["x"])])), Identity::default());
        // A damaged list: what came before the damage.
        let mut damaged = attrs(&[("1.3.6.1.4.1.4203.666.1.7", &[CSN])]);
        damaged.extend_from_slice(&[0x30, 0x05, 0x04]);
        assert_eq!(scan_identity(&damaged).csn.as_deref(), Some(CSN));
    }

    #[test]
    fn uuid_text_form_only() {
        assert!(parse_uuid(UUID.as_bytes()).is_some());
        assert!(parse_uuid(UUID.to_uppercase().as_bytes()).is_some());
        assert!(parse_uuid(b"0f1e2d3c4b5a49788695a4b3c2d1e0ff").is_none());
        assert!(parse_uuid(b"0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0fg").is_none());
        assert!(parse_uuid(b"0f1e2d3c-4b5a-4978-8695+a4b3c2d1e0ff").is_none());
    }
}
