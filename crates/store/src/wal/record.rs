//! The payload the store writes into a WAL record: one [`Change`], BER-encoded.
//!
//! ```text
//! Change ::= CHOICE {
//!     add      [0] SEQUENCE { dn OCTET STRING, attributes OCTET STRING },
//!     modify   [1] SEQUENCE { dn OCTET STRING, attributes OCTET STRING },
//!     delete   [2] SEQUENCE { dn OCTET STRING, attributes OCTET STRING OPTIONAL },
//!     modifyDn [3] SEQUENCE { dn OCTET STRING, newDn OCTET STRING, attributes OCTET STRING } }
//! ```
//!
//! Tags are context-specific and constructed (`0xa0`..`0xa3`); lengths are definite and
//! minimal. `dn` and `newDn` are UTF-8 (RFC 4514 text as the store keeps it).
//! `attributes` wraps, as opaque octets, the entry's complete attribute list in its stored
//! BER form *after* the change, so replay never re-runs modify logic or schema decisions: it
//! puts the entry in exactly the state it had. The whole payload is exactly one `Change`;
//! trailing octets are an error.
//!
//! A delete's `attributes` is not the deleted entry: it is what the caller (the server)
//! handed [`crate::WriteTxn::delete_with`] to describe the operation (for the server: the
//! deleted entry's entryUUID and the delete's entryCSN, modifiersName and modifyTimestamp),
//! in the same stored BER form, opaque to the store. Replay ignores it; the change feed and
//! the tools that read the log pass it on. Octet by octet:
//!
//! | octets | meaning |
//! | --- | --- |
//! | `a2` L | delete, L = length of what follows |
//! | `04` l dn | the DN, an OCTET STRING of l octets |
//! | `04` m attrs | only when the attributes are not empty: an OCTET STRING of m octets |
//!
//! The element is left out when the attributes are empty, so such a record is octet for
//! octet the one written before deletes carried attributes (`a2 06 04 04 63 6e 3d 61` for
//! `cn=a`); a record of that older form decodes with empty attributes. An element that is
//! present but empty (`04 00`) also decodes (to empty attributes), though it is never written.

use larch_proto::ber::{tag, Reader, Writer};
use larch_proto::DecodeError;

/// One logged change to the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// An entry was added with these attributes.
    Add {
        /// The new entry's DN.
        dn: String,
        /// The entry's attribute list in stored BER form.
        attributes_ber: Vec<u8>,
    },
    /// An entry was modified; its full attribute list after the change.
    Modify {
        /// The entry's DN.
        dn: String,
        /// The entry's complete attribute list after the change, in stored BER form.
        attributes_ber: Vec<u8>,
    },
    /// An entry was deleted.
    Delete {
        /// The deleted entry's DN.
        dn: String,
        /// Attributes describing the delete, in stored BER form, opaque to the store (the
        /// server puts the deleted entry's identity and the operation's stamp here); empty
        /// when none were given, and in records written before deletes carried them.
        /// Replay ignores them.
        attributes_ber: Vec<u8>,
    },
    /// An entry was renamed or moved; its attribute list after the change (the RDN values
    /// may have been added or removed).
    ModifyDn {
        /// The DN before.
        dn: String,
        /// The DN after.
        new_dn: String,
        /// The entry's complete attribute list after the change, in stored BER form.
        attributes_ber: Vec<u8>,
    },
}

/// Why a payload is not a [`Change`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeDecodeError {
    /// The BER structure is wrong.
    #[error("bad change record: {0}")]
    Ber(#[from] DecodeError),
    /// The first tag is not one of the four kinds.
    #[error("unknown change kind (tag 0x{0:02x})")]
    UnknownKind(u8),
    /// The payload is empty.
    #[error("empty change record")]
    Empty,
    /// A DN is not UTF-8.
    #[error("a DN in a change record is not UTF-8")]
    InvalidUtf8,
}

const ADD: u8 = tag::context_constructed(0);
const MODIFY: u8 = tag::context_constructed(1);
const DELETE: u8 = tag::context_constructed(2);
const MODIFY_DN: u8 = tag::context_constructed(3);

fn read_dn(r: &mut Reader<'_>, ctx: &'static str) -> Result<String, ChangeDecodeError> {
    let octets = r.read_octets(tag::OCTET_STRING, ctx)?;
    String::from_utf8(octets.to_vec()).map_err(|_| ChangeDecodeError::InvalidUtf8)
}

impl Change {
    /// The DN the change applies to (the old DN of a rename).
    pub fn dn(&self) -> &str {
        match self {
            Change::Add { dn, .. }
            | Change::Modify { dn, .. }
            | Change::Delete { dn, .. }
            | Change::ModifyDn { dn, .. } => dn,
        }
    }

    /// Appends the BER encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        match self {
            Change::Add { dn, attributes_ber } | Change::Modify { dn, attributes_ber } => {
                let t = if matches!(self, Change::Add { .. }) {
                    ADD
                } else {
                    MODIFY
                };
                w.constructed(t, |w| {
                    w.octet_string(dn.as_bytes());
                    w.octet_string(attributes_ber);
                });
            }
            Change::Delete { dn, attributes_ber } => w.constructed(DELETE, |w| {
                w.octet_string(dn.as_bytes());
                // Left out when empty: the record is then the one older code wrote.
                if !attributes_ber.is_empty() {
                    w.octet_string(attributes_ber);
                }
            }),
            Change::ModifyDn {
                dn,
                new_dn,
                attributes_ber,
            } => w.constructed(MODIFY_DN, |w| {
                w.octet_string(dn.as_bytes());
                w.octet_string(new_dn.as_bytes());
                w.octet_string(attributes_ber);
            }),
        }
    }

    /// The encoding as a new buffer, allocated once: grown from empty it was reallocated
    /// about seven times per change on the store's writer, each time in fresh memory on a
    /// cluster's leader, where the payloads outlive many batches (the kernel zeroing new
    /// pages showed in its profile).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len_bound());
        self.encode(&mut out);
        out
    }

    /// At least the encoding's length: the contents, and the longest header of each of its
    /// (at most four) elements.
    fn encoded_len_bound(&self) -> usize {
        const HEADERS: usize = 4 * (1 + 9);
        self.contents_len() + HEADERS
    }

    /// The octets of the change's DNs and attribute list.
    pub fn contents_len(&self) -> usize {
        match self {
            Change::Add { dn, attributes_ber }
            | Change::Modify { dn, attributes_ber }
            | Change::Delete { dn, attributes_ber } => dn.len() + attributes_ber.len(),
            Change::ModifyDn {
                dn,
                new_dn,
                attributes_ber,
            } => dn.len() + new_dn.len() + attributes_ber.len(),
        }
    }

    /// Decodes one change; never panics, whatever the input.
    pub fn decode(payload: &[u8]) -> Result<Change, ChangeDecodeError> {
        let mut r = Reader::new(payload);
        let t = r.peek_tag().ok_or(ChangeDecodeError::Empty)?;
        let change = match t {
            ADD | MODIFY => {
                let ctx = if t == ADD { "Change.add" } else { "Change.modify" };
                let mut body = r.read_constructed(t, ctx)?;
                let dn = read_dn(&mut body, ctx)?;
                let attributes_ber = body.read_octets(tag::OCTET_STRING, ctx)?.to_vec();
                body.finish(ctx)?;
                if t == ADD {
                    Change::Add { dn, attributes_ber }
                } else {
                    Change::Modify { dn, attributes_ber }
                }
            }
            DELETE => {
                let ctx = "Change.delete";
                let mut body = r.read_constructed(t, ctx)?;
                let dn = read_dn(&mut body, ctx)?;
                // Absent in records written before deletes carried attributes.
                let attributes_ber = if body.is_empty() {
                    Vec::new()
                } else {
                    body.read_octets(tag::OCTET_STRING, ctx)?.to_vec()
                };
                body.finish(ctx)?;
                Change::Delete { dn, attributes_ber }
            }
            MODIFY_DN => {
                let ctx = "Change.modifyDn";
                let mut body = r.read_constructed(t, ctx)?;
                let dn = read_dn(&mut body, ctx)?;
                let new_dn = read_dn(&mut body, ctx)?;
                let attributes_ber = body.read_octets(tag::OCTET_STRING, ctx)?.to_vec();
                body.finish(ctx)?;
                Change::ModifyDn {
                    dn,
                    new_dn,
                    attributes_ber,
                }
            }
            other => return Err(ChangeDecodeError::UnknownKind(other)),
        };
        r.finish("Change")?;
        Ok(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer `to_vec` allocates is never outgrown, whatever the lengths' header sizes.
    #[test]
    fn a_change_is_encoded_within_the_room_allocated_for_it() {
        for dn_len in [0usize, 1, 127, 128, 300] {
            for ber_len in [0usize, 1, 120, 127, 128, 255, 256, 70_000] {
                let dn = "d".repeat(dn_len);
                let ber = vec![0x30; ber_len];
                for change in [
                    Change::Add {
                        dn: dn.clone(),
                        attributes_ber: ber.clone(),
                    },
                    Change::Modify {
                        dn: dn.clone(),
                        attributes_ber: ber.clone(),
                    },
                    Change::Delete {
                        dn: dn.clone(),
                        attributes_ber: ber.clone(),
                    },
                    Change::ModifyDn {
                        dn: dn.clone(),
                        new_dn: format!("{dn}x"),
                        attributes_ber: ber.clone(),
                    },
                ] {
                    let v = change.to_vec();
                    assert!(v.len() <= change.encoded_len_bound(), "{dn_len} {ber_len}");
                    let mut grown = Vec::new();
                    change.encode(&mut grown);
                    assert_eq!(v, grown);
                    assert_eq!(Change::decode(&v).unwrap(), change);
                }
            }
        }
    }
}
