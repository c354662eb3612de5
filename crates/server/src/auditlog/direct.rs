//! The steady path's records written straight from the entry's stored attributes into the
//! output buffer (`text`): no `LdifRecord`, no `LdifModification` holding a copy of each
//! value, no `String` per attribute description (the type's name comes from the schema,
//! the options from the stored attribute), no buffer per line.
//!
//! The octets are those the store's LDIF writer makes of the same record (`record`'s
//! path through it, which the tests compare them with). A record that writer would refuse
//! (a name that is not an attribute description, an add with no attribute to write) is
//! left to that path, which says so in the file; so are renames, which are rare.

use larch_model::entry::{StoredAttribute, StoredRef};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::wal::Lsn;

use super::attrs::{self, Difference};
use super::record::{Formatter, Stamps};
use super::text::{self, Lines};

/// What the direct path needs to know of an attribute type, found once per type when the
/// formatter is made.
#[derive(Debug, Clone, Copy)]
pub(super) struct TypeFacts {
    /// Defined by the schema.
    known: bool,
    /// Not `NO-USER-MODIFICATION`: goes in a record's body, not in a comment.
    writable: bool,
    /// The name is a valid LDIF attribute type.
    valid_name: bool,
    /// The name is one LDIF reserves (`dn`, `control`, `changetype`).
    reserved: bool,
    /// The header stamp the type gives a value for, if any.
    stamp: Option<Stamp>,
}

impl TypeFacts {
    /// A `NO-USER-MODIFICATION` type the header does not show (`Stamps::in_header`: the
    /// creators' and creation time are only fallbacks): its attributes are comments.
    fn is_comment(self) -> bool {
        !self.writable && !matches!(self.stamp, Some(Stamp::Csn | Stamp::Modifiers | Stamp::Modified))
    }
}

/// The attributes a record's header takes a value from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    Csn,
    Modifiers,
    Creators,
    Modified,
    Created,
}

/// A type the schema does not define: writable (as `attrs::is_writable` says), and left
/// to the store's writer.
const UNKNOWN: TypeFacts = TypeFacts {
    known: false,
    writable: true,
    valid_name: false,
    reserved: false,
    stamp: None,
};

/// The facts of every type of `schema`, by the types' index.
pub(super) fn type_facts(schema: &Schema, stamps: &Stamps) -> Vec<TypeFacts> {
    let stamp_of = |ty| {
        [
            (stamps.csn, Stamp::Csn),
            (stamps.modifiers, Stamp::Modifiers),
            (stamps.creators, Stamp::Creators),
            (stamps.modified, Stamp::Modified),
            (stamps.created, Stamp::Created),
        ]
        .into_iter()
        .find(|(t, _)| *t == Some(ty))
        .map(|(_, s)| s)
    };
    schema
        .attribute_types()
        .map(|t| TypeFacts {
            known: true,
            writable: !t.no_user_modification,
            valid_name: text::is_attribute_description(t.name().as_bytes()),
            reserved: text::is_reserved_attribute(t.name()),
            stamp: stamp_of(t.id),
        })
        .collect()
}

/// The first value of each stamp's type (without options) in one entry
/// (`attrs::first_value` of each, in one walk).
#[derive(Debug, Default, PartialEq, Eq)]
struct StampValues<'a> {
    csn: Option<&'a [u8]>,
    modifiers: Option<&'a [u8]>,
    creators: Option<&'a [u8]>,
    modified: Option<&'a [u8]>,
    created: Option<&'a [u8]>,
}

impl<'a> StampValues<'a> {
    fn of(f: &Formatter, e: StoredRef<'a>) -> StampValues<'a> {
        let mut v = StampValues::default();
        for a in e.attributes() {
            v.see(f.facts(a.ty), &a);
        }
        v
    }

    /// Takes `a`'s first value if it is a stamp's attribute (without options); `facts`
    /// are its type's.
    fn see(&mut self, facts: TypeFacts, a: &StoredAttribute<'a>) {
        let Some(stamp) = facts.stamp else {
            return;
        };
        if !a.options.is_empty() {
            return;
        }
        let slot = match stamp {
            Stamp::Csn => &mut self.csn,
            Stamp::Modifiers => &mut self.modifiers,
            Stamp::Creators => &mut self.creators,
            Stamp::Modified => &mut self.modified,
            Stamp::Created => &mut self.created,
        };
        *slot = a.values.iter().next();
    }
}

/// `replace:` or `delete:`.
#[derive(Clone, Copy)]
enum Op {
    Replace,
    Delete,
}

impl Formatter {
    fn facts(&self, ty: AttributeTypeId) -> TypeFacts {
        self.facts.get(ty.index()).copied().unwrap_or(UNKNOWN)
    }

    /// True when a client may write the type (`attrs::is_writable`).
    fn writable(&self, ty: AttributeTypeId) -> bool {
        self.facts(ty).writable
    }

    /// The type's canonical name (empty for a type the schema does not define, which the
    /// direct path never writes).
    fn name(&self, ty: AttributeTypeId) -> &str {
        self.schema.attribute_type_by_id(ty).map_or("", |t| t.name())
    }

    /// True when the store's writer accepts `a`'s description in a record's body (in an
    /// add record, not a reserved name unless `reserved_ok`).
    fn body_ok(&self, a: &StoredAttribute<'_>, reserved_ok: bool) -> bool {
        let f = self.facts(a.ty);
        f.known
            && f.valid_name
            && text::are_options(a.options)
            && (reserved_ok || !f.reserved || !a.options.is_empty())
    }

    /// An add record (see `record`); false, with nothing written, when it is left to the
    /// store's writer.
    pub(super) fn add_direct(&self, out: &mut Vec<u8>, lsn: Lsn, dn: &str, after: StoredRef<'_>) -> bool {
        let mut values = false;
        for a in after.attributes().filter(|a| self.writable(a.ty)) {
            if !self.body_ok(&a, false) {
                return false;
            }
            values |= a.values.iter().next().is_some();
        }
        if !values {
            return false;
        }
        let mut l = Lines::new(out);
        self.header_direct(&mut l, lsn, after);
        self.comments_direct(&mut l, after, |_| true);
        l.value(&["dn"], dn.as_bytes());
        l.fixed(&["changetype: add"]);
        for a in after.attributes().filter(|a| self.writable(a.ty)) {
            let name = self.name(a.ty);
            for v in a.values.iter() {
                l.value(&[name, a.options], v);
            }
        }
        l.blank();
        true
    }

    /// A modify record (see `record`): the differences from `before`, or, when it is not
    /// known, a note and a `replace:` of every writable attribute. False, with nothing
    /// written, when it is left to the store's writer.
    pub(super) fn modify_direct(
        &self,
        out: &mut Vec<u8>,
        lsn: Lsn,
        dn: &str,
        before: Option<StoredRef<'_>>,
        after: StoredRef<'_>,
    ) -> bool {
        match before {
            Some(before) => self.modify_from(out, lsn, dn, before, after),
            None => self.modify_unknown(out, lsn, dn, after),
        }
    }

    fn modify_from(
        &self,
        out: &mut Vec<u8>,
        lsn: Lsn,
        dn: &str,
        before: StoredRef<'_>,
        after: StoredRef<'_>,
    ) -> bool {
        // One walk over both states gives the differences, the header's stamps and the
        // attributes that may become comments.
        let mut stamps = StampValues::default();
        let mut maintained = Vec::with_capacity(8);
        let differences = attrs::differences_seeing(before, after, |a| {
            let facts = self.facts(a.ty);
            stamps.see(facts, a);
            if facts.is_comment() {
                maintained.push(*a);
            }
        });
        let writable_ok = differences.iter().all(|d| match d {
            Difference::Set(a) | Difference::Gone(a) => self.modify_body_ok(a),
        });
        if !writable_ok {
            return false;
        }
        let mut l = Lines::new(out);
        self.write_header(&mut l, lsn, &stamps);
        let uuid = self.stamps.uuid;
        let set = |ty| {
            differences
                .iter()
                .any(|d| matches!(d, Difference::Set(a) if a.ty == ty))
        };
        self.write_comments(&mut l, maintained.into_iter(), |ty| Some(ty) == uuid || set(ty));
        l.value(&["dn"], dn.as_bytes());
        l.fixed(&["changetype: modify"]);
        for d in &differences {
            match d {
                Difference::Set(a) if self.writable(a.ty) => self.modification(&mut l, Op::Replace, a),
                Difference::Gone(a) if self.writable(a.ty) => self.modification(&mut l, Op::Delete, a),
                _ => {}
            }
        }
        l.blank();
        true
    }

    fn modify_unknown(&self, out: &mut Vec<u8>, lsn: Lsn, dn: &str, after: StoredRef<'_>) -> bool {
        if !after.attributes().all(|a| self.modify_body_ok(&a)) {
            return false;
        }
        let mut l = Lines::new(out);
        self.header_direct(&mut l, lsn, after);
        let uuid = self.stamps.uuid;
        self.comments_direct(&mut l, after, |ty| Some(ty) == uuid);
        l.value(
            &["# note"],
            b"previous state unknown: all attributes replaced, none deleted",
        );
        l.value(&["dn"], dn.as_bytes());
        l.fixed(&["changetype: modify"]);
        for a in after.attributes().filter(|a| self.writable(a.ty)) {
            self.modification(&mut l, Op::Replace, &a);
        }
        l.blank();
        true
    }

    /// True when `a` is not written in a modify record's body, or the store's writer
    /// accepts its description there.
    fn modify_body_ok(&self, a: &StoredAttribute<'_>) -> bool {
        !self.writable(a.ty) || self.body_ok(a, true)
    }

    /// `replace: name` with every value of `a`, or `delete: name`; then `-`.
    fn modification(&self, l: &mut Lines<'_>, op: Op, a: &StoredAttribute<'_>) {
        let name = self.name(a.ty);
        match op {
            Op::Replace => {
                l.fixed(&["replace: ", name, a.options]);
                for v in a.values.iter() {
                    l.value(&[name, a.options], v);
                }
            }
            Op::Delete => l.fixed(&["delete: ", name, a.options]),
        }
        l.fixed(&["-"]);
    }

    /// A delete record (see `record`): the header, the comments of what the server
    /// logged with it, and the entryUUID from `before` when it was not logged.
    pub(super) fn delete_direct(
        &self,
        out: &mut Vec<u8>,
        lsn: Lsn,
        dn: &str,
        before: Option<StoredRef<'_>>,
        after: StoredRef<'_>,
    ) {
        let mut l = Lines::new(out);
        self.header_direct(&mut l, lsn, after);
        self.comments_direct(&mut l, after, |_| true);
        let uuid = self.stamps.uuid;
        if attrs::first_value(after, uuid).is_none() {
            if let Some(v) = before.and_then(|e| attrs::first_value(e, uuid)) {
                l.value(&["# entryUUID"], v);
            }
        }
        l.value(&["dn"], dn.as_bytes());
        l.fixed(&["changetype: delete"]);
        l.blank();
    }

    /// `lsn`, `csn`, `modifiersName`, `time` (`record`'s header), the values found in one
    /// walk over `e`'s attributes (a lookup per stamp walked them up to five times, most
    /// of the audit log's reading of attributes).
    fn header_direct(&self, l: &mut Lines<'_>, lsn: Lsn, e: StoredRef<'_>) {
        self.write_header(l, lsn, &StampValues::of(self, e));
    }

    /// The header from the stamps' values.
    fn write_header(&self, l: &mut Lines<'_>, lsn: Lsn, v: &StampValues<'_>) {
        l.number_comment("lsn", lsn);
        if let Some(v) = v.csn {
            l.value(&["# csn"], v);
        }
        if let Some(v) = v.modifiers.or(v.creators) {
            l.value(&["# modifiersName"], v);
        }
        if let Some(v) = v.modified.or(v.created) {
            l.value(&["# time"], v);
        }
    }

    /// The `NO-USER-MODIFICATION` attributes of `e` that `pick` selects, other than the
    /// header's, as comments.
    fn comments_direct(&self, l: &mut Lines<'_>, e: StoredRef<'_>, pick: impl Fn(AttributeTypeId) -> bool) {
        self.write_comments(l, e.attributes().filter(|a| self.facts(a.ty).is_comment()), pick);
    }

    /// Those of `maintained` (comment attributes, in stored order) that `pick` selects.
    fn write_comments<'a>(
        &self,
        l: &mut Lines<'_>,
        maintained: impl Iterator<Item = StoredAttribute<'a>>,
        pick: impl Fn(AttributeTypeId) -> bool,
    ) {
        for a in maintained.filter(|a| pick(a.ty)) {
            let name = self.name(a.ty);
            for v in a.values.iter() {
                l.value(&["# ", name, a.options], v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use larch_model::entry::StoredEntry;
    use larch_model::schema::Schema;
    use larch_store::wal::record::Change;

    use super::*;
    use crate::auditlog::record::tests::entry;

    fn text(values: &[&str]) -> Vec<Vec<u8>> {
        values.iter().map(|v| v.as_bytes().to_vec()).collect()
    }

    /// A person with values of every kind the writer treats apart: binary, options, long
    /// (folded), non-ASCII, a leading space; `n` varies the values and `stamps` says
    /// whether the maintained attributes are there.
    fn person(schema: &Schema, n: u8, stamps: bool) -> StoredEntry {
        let long = "a long description that goes past the fold column of seventy-six octets, "
            .repeat(usize::from(n) + 1);
        let binary: Vec<u8> = (0..=255u8).cycle().skip(usize::from(n)).take(200).collect();
        let mut list = vec![
            ("objectClass", text(&["top", "person", "inetOrgPerson"])),
            ("cn", text(&["Alice", "Al"])),
            ("cn;lang-en", vec![format!("Alice {n}").into_bytes()]),
            ("cn;lang-fr;x-sort", text(&["Alix"])),
            ("sn", text(&["Liddell"])),
            (
                "description",
                vec![long.into_bytes(), " leading".into(), "Zo\u{eb}".into()],
            ),
            ("userCertificate;binary", vec![binary]),
            ("jpegPhoto", vec![vec![0xff, 0xd8, n]]),
        ];
        if n % 2 == 1 {
            list.push(("telephoneNumber", text(&["+1 555 0100"])));
        }
        if stamps {
            let csn = format!("2025030110150{n}.000000Z#000000#000#000000");
            let time = format!("2025030110150{n}Z");
            list.extend([
                ("entryUUID", text(&["8b1f5c9e-2d43-4c5e-9a0b-6f1e2d3c4b5a"])),
                ("entryCSN", vec![csn.into_bytes()]),
                ("creatorsName", text(&["cn=admin,dc=example,dc=com"])),
                ("modifiersName", text(&["cn=J\u{f6}rg,dc=example,dc=com"])),
                ("createTimestamp", text(&["20250301101500Z"])),
                ("modifyTimestamp", vec![time.into_bytes()]),
                ("structuralObjectClass", text(&["inetOrgPerson"])),
            ]);
        }
        entry(schema, &list)
    }

    /// Asserts that the direct path writes what the path through the store's writer does.
    fn same(f: &Formatter, change: &Change, before: Option<StoredRef<'_>>, after: StoredRef<'_>) {
        let (mut direct, mut records) = (b"earlier\n".to_vec(), b"earlier\n".to_vec());
        f.stored(&mut direct, 77, change, before, after);
        f.stored_through_records(&mut records, 77, change, before, after);
        assert_eq!(
            String::from_utf8_lossy(&direct),
            String::from_utf8_lossy(&records),
            "{change:?}"
        );
    }

    #[test]
    fn the_direct_path_writes_what_the_store_writer_does() {
        let schema = Arc::new(Schema::builtin().unwrap());
        let f = Formatter::new(Arc::clone(&schema));
        let dns = [
            "cn=Alice,ou=people,dc=example,dc=com",
            "cn=J\u{f6}rg,dc=example,dc=com",
            "cn=a name long enough to be folded at the seventy-sixth column,ou=people,dc=example,dc=com",
        ];
        let states: Vec<StoredEntry> = (0..4)
            .map(|n| person(&schema, n, true))
            .chain([person(&schema, 1, false), StoredEntry::default()])
            .collect();
        for dn in dns {
            let add = Change::Add {
                dn: dn.into(),
                attributes_ber: Vec::new(),
            };
            let modify = Change::Modify {
                dn: dn.into(),
                attributes_ber: Vec::new(),
            };
            let delete = Change::Delete {
                dn: dn.into(),
                attributes_ber: Vec::new(),
            };
            let rename = Change::ModifyDn {
                dn: dn.into(),
                new_dn: "cn=Al,dc=example,dc=com".into(),
                attributes_ber: Vec::new(),
            };
            for after in &states[..4] {
                // The steady path's records are written directly.
                assert!(f.add_direct(&mut Vec::new(), 1, dn, after.as_ref()));
                assert!(f.modify_direct(&mut Vec::new(), 1, dn, None, after.as_ref()));
                assert!(f.modify_direct(&mut Vec::new(), 1, dn, Some(states[0].as_ref()), after.as_ref()));
            }
            for after in &states {
                same(&f, &add, None, after.as_ref());
                for change in [&modify, &delete, &rename] {
                    same(&f, change, None, after.as_ref());
                    for before in &states {
                        same(&f, change, Some(before.as_ref()), after.as_ref());
                    }
                }
            }
        }
    }

    #[test]
    fn the_stamps_found_in_one_walk_are_each_stamps_first_value() {
        let schema = Arc::new(Schema::builtin().unwrap());
        let f = Formatter::new(Arc::clone(&schema));
        let partial = entry(
            &schema,
            &[
                ("cn", text(&["a"])),
                ("creatorsName", text(&["cn=first", "cn=second"])),
                ("createTimestamp;x-other", text(&["19700101000000Z"])),
                ("createTimestamp", text(&["20250301101500Z"])),
                ("entryCSN;x-other", text(&["not this one"])),
            ],
        );
        let entries = [
            person(&schema, 1, true),
            person(&schema, 2, false),
            partial,
            StoredEntry::default(),
        ];
        for e in &entries {
            let e = e.as_ref();
            let s = &f.stamps;
            let one_by_one = StampValues {
                csn: attrs::first_value(e, s.csn),
                modifiers: attrs::first_value(e, s.modifiers),
                creators: attrs::first_value(e, s.creators),
                modified: attrs::first_value(e, s.modified),
                created: attrs::first_value(e, s.created),
            };
            assert_eq!(StampValues::of(&f, e), one_by_one);
        }
        let v = StampValues::of(&f, entries[2].as_ref());
        assert_eq!(v.creators, Some(&b"cn=first"[..]));
        assert_eq!(v.created, Some(&b"20250301101500Z"[..]));
        assert_eq!((v.csn, v.modifiers, v.modified), (None, None, None));
    }

    #[test]
    fn an_add_with_nothing_writable_is_left_to_the_store_writer() {
        let schema = Arc::new(Schema::builtin().unwrap());
        let f = Formatter::new(Arc::clone(&schema));
        let only_stamps = entry(&schema, &[("entryUUID", text(&["u"]))]);
        let change = Change::Add {
            dn: "cn=x".into(),
            attributes_ber: Vec::new(),
        };
        assert!(!f.add_direct(&mut Vec::new(), 1, "cn=x", only_stamps.as_ref()));
        same(&f, &change, None, only_stamps.as_ref());
    }
}
