//! One committed change as LDIF text: comment lines, then an RFC 2849 change record, then
//! a blank line.
//!
//! ```text
//! # lsn: 7
//! # csn: 20250301101500.123456Z#000000#000#000000
//! # modifiersName: cn=admin,dc=example,dc=com
//! # time: 20250301101500Z
//! # entryUUID: 8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a
//! dn: cn=Alice,ou=people,dc=example,dc=com
//! changetype: modify
//! replace: description
//! description: on leave
//! -
//! ```
//!
//! - The header: `lsn` (the change's log sequence number), `csn` (the entry's entryCSN
//!   after the change), `modifiersName` (creatorsName when there is none) and `time`
//!   (modifyTimestamp, else createTimestamp); a line is left out when the log does not
//!   hold its value (a delete logged without attributes).
//! - Then the `NO-USER-MODIFICATION` attributes the change set, as comments named by the
//!   attribute (a client cannot write them, so a replay with `ldapmodify` must not send
//!   them): for an add every one of them (entryUUID, creatorsName, createTimestamp,
//!   structuralObjectClass); for a modify or a rename entryUUID and those that changed
//!   other than the header's; for a delete those the server logged with it (entryUUID).
//! - The record: `changetype: add` with every other attribute as stored; `changetype:
//!   modify` with `replace:` of each attribute whose values changed and `delete:` of each
//!   that disappeared (computed against the entry's previous state, see `previous`);
//!   `changetype: modrdn` (see `modrdn`), followed by a modify record for what the modrdn
//!   alone would not reproduce; `changetype: delete`.
//! - Values and DNs that are not safe LDIF text (binary, a leading space, non-ASCII) are
//!   written in base64, comments included (`# name:: base64`); lines are folded at 76
//!   columns (the store's LDIF writer).

use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_model::entry::{StoredEntry, StoredRef};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::ldif::{LdifChange, LdifModification, LdifRecord, LdifWriter};
use larch_store::wal::record::Change;
use larch_store::wal::Lsn;

use super::attrs::{self, Difference};
use super::direct::{self, TypeFacts};
use super::modrdn;

/// The attribute types of the header.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stamps {
    pub(super) csn: Option<AttributeTypeId>,
    pub(super) modifiers: Option<AttributeTypeId>,
    pub(super) modified: Option<AttributeTypeId>,
    pub(super) creators: Option<AttributeTypeId>,
    pub(super) created: Option<AttributeTypeId>,
    pub(super) uuid: Option<AttributeTypeId>,
}

impl Stamps {
    /// True for the types the header shows (never repeated as comments).
    pub(super) fn in_header(&self, ty: AttributeTypeId) -> bool {
        [self.csn, self.modifiers, self.modified].contains(&Some(ty))
    }
}

/// Writes changes as LDIF (see the module documentation).
pub(crate) struct Formatter {
    pub(super) schema: Arc<Schema>,
    pub(super) stamps: Stamps,
    /// What the direct path (`direct`) needs of each attribute type, by index.
    pub(super) facts: Vec<TypeFacts>,
}

/// A block of lines: comments, at most one record, and the blank line that ends it.
struct Block<'o> {
    w: LdifWriter<&'o mut Vec<u8>>,
}

impl Block<'_> {
    fn comment(&mut self, name: &str, value: &[u8]) {
        // Refused only for a name holding a line end; names here are fixed or from the
        // schema.
        let _ = self.w.write_comment(name, value);
    }

    fn record(&mut self, dn: &str, change: LdifChange) {
        let record = LdifRecord::Change {
            dn: dn.as_bytes().to_vec(),
            controls: Vec::new(),
            change,
        };
        if let Err(e) = self.w.write_record(&record) {
            self.comment("unwritable", e.to_string().as_bytes());
        }
    }

    fn end(self) {
        let out = self.w.into_inner();
        out.push(b'\n');
    }
}

impl Formatter {
    pub(crate) fn new(schema: Arc<Schema>) -> Formatter {
        let id = |name: &str| schema.attribute_type(name).map(|t| t.id);
        let stamps = Stamps {
            csn: id("entryCSN"),
            modifiers: id("modifiersName"),
            modified: id("modifyTimestamp"),
            creators: id("creatorsName"),
            created: id("createTimestamp"),
            uuid: id("entryUUID"),
        };
        let facts = direct::type_facts(&schema, &stamps);
        Formatter {
            schema,
            stamps,
            facts,
        }
    }

    /// The normalized form of a DN the log holds (`None` if it does not normalize).
    pub(crate) fn normalize(&self, dn: &str) -> Option<NormDn> {
        NormDn::from_text(dn.as_bytes(), &*self.schema).ok()
    }

    /// Appends a block of comments only (`# name: value` each, then a blank line).
    pub(crate) fn note(&self, out: &mut Vec<u8>, lines: &[(&str, &str)]) {
        let mut b = Block {
            w: LdifWriter::new(out),
        };
        for (name, value) in lines {
            b.comment(name, value.as_bytes());
        }
        b.end();
    }

    /// The attributes a change's log record holds, decoded (`None` when they do not decode).
    pub(crate) fn attributes(&self, change: &Change) -> Option<StoredEntry> {
        let ber = match change {
            Change::Add { attributes_ber, .. }
            | Change::Modify { attributes_ber, .. }
            | Change::ModifyDn { attributes_ber, .. }
            | Change::Delete { attributes_ber, .. } => attributes_ber,
        };
        if ber.is_empty() {
            return Some(StoredEntry::default());
        }
        attrs::decode(ber, &self.schema).ok()
    }

    /// Appends the block(s) of one committed change to `out`; `before` is the entry's
    /// state just before the change when known (a modify, rename or delete). Returns the
    /// entry's attributes after the change (an add, modify or rename), decoded, or `None`
    /// for a delete or when they did not decode.
    pub(crate) fn change(
        &self,
        out: &mut Vec<u8>,
        lsn: Lsn,
        change: &Change,
        before: Option<StoredRef<'_>>,
    ) -> Option<StoredEntry> {
        let mut b = Block {
            w: LdifWriter::new(out),
        };
        let (attributes_ber, kind) = match change {
            Change::Add { attributes_ber, .. } => (attributes_ber, "add"),
            Change::Modify { attributes_ber, .. } => (attributes_ber, "modify"),
            Change::ModifyDn { attributes_ber, .. } => (attributes_ber, "modrdn"),
            Change::Delete { attributes_ber, .. } => (attributes_ber, "delete"),
        };
        let decoded = if attributes_ber.is_empty() {
            Ok(StoredEntry::default())
        } else {
            attrs::decode(attributes_ber, &self.schema)
        };
        let attributes = match decoded {
            Ok(a) => a,
            Err(e) => {
                b.comment("lsn", lsn.to_string().as_bytes());
                b.comment("unreadable", format!("the change's attributes: {e}").as_bytes());
                b.comment("dn", change.dn().as_bytes());
                b.comment("changetype", kind.as_bytes());
                b.end();
                return None;
            }
        };
        self.stored(out, lsn, change, before, attributes.as_ref());
        match change {
            Change::Delete { .. } => None,
            _ => Some(attributes),
        }
    }

    /// Appends the block(s) of one committed change to `out` from the entry's stored
    /// states: `before` just before the change when known (a modify, rename or delete),
    /// `after` the attributes the log holds with it (after an add, modify or rename; a
    /// delete's describing attributes). What [`Formatter::change`] writes once it decoded
    /// the logged attributes, and what the writer calls with the states the change feed
    /// hands over, with no attribute read through the schema by name.
    pub(crate) fn stored(
        &self,
        out: &mut Vec<u8>,
        lsn: Lsn,
        change: &Change,
        before: Option<StoredRef<'_>>,
        after: StoredRef<'_>,
    ) {
        let direct = match change {
            Change::Add { dn, .. } => self.add_direct(out, lsn, dn, after),
            Change::Modify { dn, .. } => self.modify_direct(out, lsn, dn, before, after),
            Change::Delete { dn, .. } => {
                self.delete_direct(out, lsn, dn, before, after);
                true
            }
            Change::ModifyDn { .. } => false,
        };
        if !direct {
            self.stored_through_records(out, lsn, change, before, after);
        }
    }

    /// [`Formatter::stored`] through the store's LDIF records and writer: renames, and the
    /// records the direct path leaves to it (a name that is not a valid attribute
    /// description, an add with nothing to write), whose text says why they cannot be
    /// replayed. The direct path writes the same octets as this one for every other record.
    pub(super) fn stored_through_records(
        &self,
        out: &mut Vec<u8>,
        lsn: Lsn,
        change: &Change,
        before: Option<StoredRef<'_>>,
        after: StoredRef<'_>,
    ) {
        let mut b = Block {
            w: LdifWriter::new(out),
        };
        match change {
            Change::Add { dn, .. } => {
                self.header(&mut b, lsn, after);
                self.comments(&mut b, after, |_| true);
                b.record(
                    dn,
                    LdifChange::Add {
                        attributes: attrs::writable_values(&self.schema, after),
                    },
                );
                b.end();
            }
            Change::Modify { dn, .. } => {
                self.header(&mut b, lsn, after);
                let modifications = self.changed_comments(&mut b, before, after);
                b.record(dn, LdifChange::Modify { modifications });
                b.end();
            }
            Change::ModifyDn { dn, new_dn, .. } => {
                self.header(&mut b, lsn, after);
                let _ = self.changed_comments(&mut b, before, after);
                match modrdn::derive(&self.schema, dn, new_dn, before, after) {
                    Ok(r) => {
                        b.record(
                            dn,
                            LdifChange::ModRdn {
                                new_rdn: r.new_rdn.into_bytes(),
                                delete_old_rdn: r.delete_old_rdn,
                                new_superior: r.new_superior.map(String::into_bytes),
                            },
                        );
                        b.end();
                        if !r.fix.is_empty() {
                            let mut b = Block {
                                w: LdifWriter::new(out),
                            };
                            b.comment("lsn", lsn.to_string().as_bytes());
                            b.comment(
                                "note",
                                b"completes the rename above: values a modrdn alone would not give",
                            );
                            b.record(new_dn, LdifChange::Modify { modifications: r.fix });
                            b.end();
                        }
                    }
                    Err(e) => {
                        b.comment("unwritable", format!("a rename to `{new_dn}`: {e}").as_bytes());
                        b.comment("dn", dn.as_bytes());
                        b.comment("changetype", b"modrdn");
                        b.end();
                    }
                }
            }
            Change::Delete { dn, .. } => {
                self.header(&mut b, lsn, after);
                self.comments(&mut b, after, |_| true);
                let logged_uuid = attrs::first_value(after, self.stamps.uuid).is_some();
                if let (false, Some(uuid)) = (
                    logged_uuid,
                    before.and_then(|e| attrs::first_value(e, self.stamps.uuid)),
                ) {
                    b.comment("entryUUID", uuid);
                }
                b.record(dn, LdifChange::Delete);
                b.end();
            }
        }
    }

    /// `lsn`, `csn`, `modifiersName`, `time`.
    fn header(&self, b: &mut Block<'_>, lsn: Lsn, e: StoredRef<'_>) {
        let s = &self.stamps;
        b.comment("lsn", lsn.to_string().as_bytes());
        if let Some(v) = attrs::first_value(e, s.csn) {
            b.comment("csn", v);
        }
        if let Some(v) = attrs::first_value(e, s.modifiers).or_else(|| attrs::first_value(e, s.creators)) {
            b.comment("modifiersName", v);
        }
        if let Some(v) = attrs::first_value(e, s.modified).or_else(|| attrs::first_value(e, s.created)) {
            b.comment("time", v);
        }
    }

    /// The `NO-USER-MODIFICATION` attributes of `e` that `pick` selects, other than the
    /// header's, as comments.
    fn comments(&self, b: &mut Block<'_>, e: StoredRef<'_>, pick: impl Fn(AttributeTypeId) -> bool) {
        for a in e.attributes() {
            if attrs::is_writable(&self.schema, a.ty) || self.stamps.in_header(a.ty) || !pick(a.ty) {
                continue;
            }
            let name = attrs::description(&self.schema, &a);
            for v in a.values.iter() {
                b.comment(&name, v);
            }
        }
    }

    /// For a modify or a rename: entryUUID and the other `NO-USER-MODIFICATION`
    /// attributes that changed, as comments; returns the modifications from `before` to
    /// `after` (when `before` is unknown, a note and a `replace:` of every attribute).
    fn changed_comments(
        &self,
        b: &mut Block<'_>,
        before: Option<StoredRef<'_>>,
        after: StoredRef<'_>,
    ) -> Vec<LdifModification> {
        let uuid = self.stamps.uuid;
        match before {
            Some(before) => {
                let differences = attrs::differences(before, after);
                let changed: Vec<AttributeTypeId> = differences
                    .iter()
                    .filter_map(|d| match d {
                        Difference::Set(a) => Some(a.ty),
                        Difference::Gone(_) => None,
                    })
                    .collect();
                self.comments(b, after, |ty| Some(ty) == uuid || changed.contains(&ty));
                attrs::modifications_of(&self.schema, &differences)
            }
            None => {
                self.comments(b, after, |ty| Some(ty) == uuid);
                b.comment(
                    "note",
                    b"previous state unknown: all attributes replaced, none deleted",
                );
                attrs::replace_all(&self.schema, after)
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use larch_model::entry::{resolve_description, Attribute};

    type Attrs = Vec<(&'static str, Vec<Vec<u8>>)>;

    fn v(values: &[&[u8]]) -> Vec<Vec<u8>> {
        values.iter().map(|x| x.to_vec()).collect()
    }

    /// An entry of `attrs`, each named by its description, for the tests of this log.
    pub(in crate::auditlog) fn entry(schema: &Schema, attrs: &[(&str, Vec<Vec<u8>>)]) -> StoredEntry {
        let list: Vec<Attribute> = attrs
            .iter()
            .map(|(name, values)| {
                let (ty, options) = resolve_description(name.as_bytes(), schema).unwrap();
                Attribute {
                    ty,
                    options,
                    values: values.clone(),
                }
            })
            .collect();
        StoredEntry::build(&list)
    }

    const UUID: &[u8] = b"8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a";
    const CSN: &[u8] = b"20250301101500.123456Z#000000#000#000000";
    const CSN2: &[u8] = b"20250302090000.000001Z#000000#000#000000";
    const ADMIN: &[u8] = b"cn=admin,dc=example,dc=com";

    /// The maintained attributes of an entry created at CSN and changed last at `csn`, `time`.
    fn stamps(csn: &[u8], time: &[u8]) -> Attrs {
        vec![
            ("entryUUID", v(&[UUID])),
            ("entryCSN", v(&[csn])),
            ("creatorsName", v(&[ADMIN])),
            ("modifiersName", v(&[ADMIN])),
            ("createTimestamp", v(&[b"20250301101500Z"])),
            ("modifyTimestamp", v(&[time])),
            ("structuralObjectClass", v(&[b"person"])),
        ]
    }

    /// A person named `cn` with `extra` attributes and the maintained ones.
    fn person(cn: &[&[u8]], extra: Attrs, csn: &[u8], time: &[u8]) -> StoredEntry {
        let schema = Schema::builtin().unwrap();
        let mut list: Attrs = vec![
            ("objectClass", v(&[b"top", b"person"])),
            ("cn", v(cn)),
            ("sn", v(&[b"Liddell"])),
        ];
        list.extend(extra);
        list.extend(stamps(csn, time));
        entry(&schema, &list)
    }

    fn alice(extra: Attrs, csn: &[u8], time: &[u8]) -> StoredEntry {
        person(&[b"Alice"], extra, csn, time)
    }

    fn text(out: &[u8]) -> String {
        String::from_utf8(out.to_vec()).unwrap()
    }

    fn formatter() -> (Formatter, Arc<Schema>) {
        let schema = Arc::new(Schema::builtin().unwrap());
        (Formatter::new(Arc::clone(&schema)), schema)
    }

    const DN: &str = "cn=Alice,ou=people,dc=example,dc=com";

    #[test]
    fn an_add_has_every_attribute_and_the_maintained_ones_in_comments() {
        let (f, schema) = formatter();
        let e = alice(
            vec![
                (
                    "description",
                    v(&[b" starts with a space", "Zo\u{eb}".as_bytes()]),
                ),
                ("userCertificate;binary", v(&[b"\x30\x82\x00\xff"])),
                ("telephoneNumber", v(&[b"+1 555 0100"])),
            ],
            CSN,
            b"20250301101500Z",
        );
        let change = Change::Add {
            dn: DN.into(),
            attributes_ber: e.to_attributes_ber(&schema),
        };
        let mut out = Vec::new();
        let after = f.change(&mut out, 7, &change, None);
        assert_eq!(after.as_ref(), Some(&e));
        assert_eq!(
            text(&out),
            "# lsn: 7\n\
             # csn: 20250301101500.123456Z#000000#000#000000\n\
             # modifiersName: cn=admin,dc=example,dc=com\n\
             # time: 20250301101500Z\n\
             # creatorsName: cn=admin,dc=example,dc=com\n\
             # createTimestamp: 20250301101500Z\n\
             # structuralObjectClass: person\n\
             # entryUUID: 8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a\n\
             dn: cn=Alice,ou=people,dc=example,dc=com\n\
             changetype: add\n\
             objectClass: top\n\
             objectClass: person\n\
             cn: Alice\n\
             description:: IHN0YXJ0cyB3aXRoIGEgc3BhY2U=\n\
             description:: Wm/Dqw==\n\
             sn: Liddell\n\
             telephoneNumber: +1 555 0100\n\
             userCertificate;binary:: MIIA/w==\n\
             \n"
        );
    }

    #[test]
    fn a_modify_replaces_what_changed_and_deletes_what_went() {
        let (f, schema) = formatter();
        let before = alice(
            vec![("description", v(&[b"old"])), ("telephoneNumber", v(&[b"1"]))],
            CSN,
            b"20250301101500Z",
        );
        let long = [b'x'; 100];
        let after = alice(
            vec![
                ("description", v(&[b"new", &long])),
                ("mail", v(&[b"alice@example.com"])),
            ],
            CSN2,
            b"20250302090000Z",
        );
        let change = Change::Modify {
            dn: DN.into(),
            attributes_ber: after.to_attributes_ber(&schema),
        };
        let mut out = Vec::new();
        f.change(&mut out, 8, &change, Some(before.as_ref()));
        let x = "x".repeat(100);
        assert_eq!(
            text(&out),
            format!(
                "# lsn: 8\n\
                 # csn: 20250302090000.000001Z#000000#000#000000\n\
                 # modifiersName: cn=admin,dc=example,dc=com\n\
                 # time: 20250302090000Z\n\
                 # entryUUID: 8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a\n\
                 dn: cn=Alice,ou=people,dc=example,dc=com\n\
                 changetype: modify\n\
                 replace: description\n\
                 description: new\n\
                 description: {}\n {}\n\
                 -\n\
                 delete: telephoneNumber\n\
                 -\n\
                 replace: mail\n\
                 mail: alice@example.com\n\
                 -\n\
                 \n",
                &x[..76 - "description: ".len()],
                &x[76 - "description: ".len()..]
            )
        );

        // Without the previous state: every attribute replaced, and said so.
        let mut out = Vec::new();
        f.change(&mut out, 8, &change, None);
        let t = text(&out);
        assert!(
            t.contains("\n# note: previous state unknown: all attributes replaced, none deleted\n"),
            "{t}"
        );
        assert!(
            t.contains("replace: objectClass\n") && t.contains("replace: sn\n"),
            "{t}"
        );
        assert!(!t.contains("delete:"), "{t}");
    }

    #[test]
    fn a_rename_is_a_modrdn_and_a_modify_for_what_it_would_miss() {
        let (f, schema) = formatter();
        let before = alice(vec![], CSN, b"20250301101500Z");
        let renamed = |cn: &[&[u8]], new_dn: &str| Change::ModifyDn {
            dn: DN.into(),
            new_dn: new_dn.into(),
            attributes_ber: person(cn, vec![], CSN2, b"20250302090000Z").to_attributes_ber(&schema),
        };
        // Moved and renamed, the old value deleted.
        let mut out = Vec::new();
        let change = renamed(&[b"Alicia"], "cn=Alicia,ou=staff,dc=example,dc=com");
        f.change(&mut out, 9, &change, Some(before.as_ref()));
        assert_eq!(
            text(&out),
            "# lsn: 9\n\
             # csn: 20250302090000.000001Z#000000#000#000000\n\
             # modifiersName: cn=admin,dc=example,dc=com\n\
             # time: 20250302090000Z\n\
             # entryUUID: 8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a\n\
             dn: cn=Alice,ou=people,dc=example,dc=com\n\
             changetype: modrdn\n\
             newrdn: cn=Alicia\n\
             deleteoldrdn: 1\n\
             newsuperior: ou=staff,dc=example,dc=com\n\
             \n"
        );
        // Only the case changed, and the server respelled the value: a modify follows.
        let mut out = Vec::new();
        let change = renamed(&[b"ALICE"], "cn=ALICE,ou=people,dc=example,dc=com");
        f.change(&mut out, 10, &change, Some(before.as_ref()));
        assert!(
            text(&out).ends_with(
                "dn: cn=Alice,ou=people,dc=example,dc=com\n\
                 changetype: modrdn\n\
                 newrdn: cn=ALICE\n\
                 deleteoldrdn: 1\n\
                 \n\
                 # lsn: 10\n\
                 # note: completes the rename above: values a modrdn alone would not give\n\
                 dn: cn=ALICE,ou=people,dc=example,dc=com\n\
                 changetype: modify\n\
                 replace: cn\n\
                 cn: ALICE\n\
                 -\n\
                 \n"
            ),
            "{}",
            text(&out)
        );
        // The old value kept.
        let mut out = Vec::new();
        let change = renamed(&[b"Alice", b"Al"], "cn=Al,ou=people,dc=example,dc=com");
        f.change(&mut out, 11, &change, Some(before.as_ref()));
        assert!(
            text(&out).ends_with("changetype: modrdn\nnewrdn: cn=Al\ndeleteoldrdn: 0\n\n"),
            "{}",
            text(&out)
        );
    }

    #[test]
    fn a_delete_shows_what_the_server_logged_with_it() {
        let (f, schema) = formatter();
        let logged = entry(
            &schema,
            &[
                ("entryUUID", v(&[UUID])),
                ("entryCSN", v(&[CSN2])),
                ("modifiersName", v(&[ADMIN])),
                ("modifyTimestamp", v(&[b"20250302090000Z"])),
            ],
        );
        let change = Change::Delete {
            dn: "cn=J\u{f6}rg,dc=example,dc=com".into(),
            attributes_ber: logged.to_attributes_ber(&schema),
        };
        let mut out = Vec::new();
        assert_eq!(f.change(&mut out, 12, &change, None), None);
        assert_eq!(
            text(&out),
            "# lsn: 12\n\
             # csn: 20250302090000.000001Z#000000#000#000000\n\
             # modifiersName: cn=admin,dc=example,dc=com\n\
             # time: 20250302090000Z\n\
             # entryUUID: 8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a\n\
             dn:: Y249SsO2cmcsZGM9ZXhhbXBsZSxkYz1jb20=\n\
             changetype: delete\n\
             \n"
        );
        // Logged without attributes: the LSN, and the entryUUID when the entry was known.
        let before = alice(vec![], CSN, b"20250301101500Z");
        let change = Change::Delete {
            dn: DN.into(),
            attributes_ber: Vec::new(),
        };
        let mut out = Vec::new();
        f.change(&mut out, 13, &change, Some(before.as_ref()));
        assert_eq!(
            text(&out),
            "# lsn: 13\n\
             # entryUUID: 8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a\n\
             dn: cn=Alice,ou=people,dc=example,dc=com\n\
             changetype: delete\n\
             \n"
        );
        let mut out = Vec::new();
        f.change(&mut out, 13, &change, None);
        assert_eq!(
            text(&out),
            "# lsn: 13\ndn: cn=Alice,ou=people,dc=example,dc=com\nchangetype: delete\n\n"
        );
    }

    #[test]
    fn undecodable_attributes_are_said_and_nothing_is_replayed() {
        let (f, _) = formatter();
        let change = Change::Modify {
            dn: DN.into(),
            attributes_ber: vec![0x30, 0x05, 0x04],
        };
        let mut out = Vec::new();
        assert_eq!(f.change(&mut out, 14, &change, None), None);
        let t = text(&out);
        assert!(
            t.starts_with("# lsn: 14\n# unreadable: the change's attributes: "),
            "{t}"
        );
        assert!(
            t.ends_with("# dn: cn=Alice,ou=people,dc=example,dc=com\n# changetype: modify\n\n"),
            "{t}"
        );
        let mut notes = Vec::new();
        f.note(&mut notes, &[("skipped", "lsn 3 to 4 (2 changes)")]);
        assert_eq!(text(&notes), "# skipped: lsn 3 to 4 (2 changes)\n\n");
    }
}
