//! `StoredEntry::from_attributes_ber` (what every replay of the write-ahead log and every
//! follower of a cluster runs per change) against the plain way of doing the same: each
//! description resolved, the values of one description merged in listed order, then
//! `StoredEntry::build`.

use larch_model::entry::{resolve_description, Attribute, StoredEntry};
use larch_model::schema::Schema;
use larch_proto::ber::{tag, Writer};
use proptest::prelude::*;

fn schema() -> &'static Schema {
    static SCHEMA: std::sync::OnceLock<Schema> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| Schema::builtin().expect("the shipped schema loads"))
}

/// Descriptions that name the same attribute in several spellings, with and without
/// options, so that lists repeat descriptions.
const DESCRIPTIONS: &[&str] = &[
    "cn",
    "CN",
    "commonName",
    "cn;lang-fr",
    "CN;Lang-FR",
    "sn",
    "mail",
    "objectClass",
    "description;x-a;x-b",
    "description;x-b;x-a",
    "userCertificate;binary",
];

/// The attribute list in BER, as an AddRequest or the log carries it.
fn list_ber(list: &[(usize, Vec<Vec<u8>>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    for (d, values) in list {
        w.constructed(tag::SEQUENCE, |w| {
            w.octet_string(DESCRIPTIONS[*d].as_bytes());
            w.constructed(tag::SET, |w| {
                for v in values {
                    w.octet_string(v);
                }
            });
        });
    }
    out
}

/// The same list built the plain way.
fn built(list: &[(usize, Vec<Vec<u8>>)]) -> StoredEntry {
    let mut attrs: Vec<Attribute> = Vec::new();
    for (d, values) in list {
        let (ty, options) = resolve_description(DESCRIPTIONS[*d].as_bytes(), schema()).unwrap();
        match attrs.iter_mut().find(|a| a.ty == ty && a.options == options) {
            Some(a) => a.values.extend(values.iter().cloned()),
            None => attrs.push(Attribute {
                ty,
                options,
                values: values.clone(),
            }),
        }
    }
    StoredEntry::build(&attrs)
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    // Lengths on both sides of BER's one-octet (127) and two-octet (255) length forms.
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..4),
        proptest::collection::vec(any::<u8>(), 120..300),
    ]
}

proptest! {
    #[test]
    fn the_stored_form_is_the_one_build_makes(
        list in proptest::collection::vec(
            (0..DESCRIPTIONS.len(), proptest::collection::vec(value(), 0..4)),
            0..10,
        )
    ) {
        let ber = list_ber(&list);
        let stored = StoredEntry::from_attributes_ber(&ber, schema()).unwrap();
        let plain = built(&list);
        prop_assert_eq!(stored.as_bytes(), plain.as_bytes());
        prop_assert!(StoredEntry::from_bytes(stored.as_bytes().into()).is_ok());
    }
}

#[test]
fn an_unknown_description_or_bad_ber_is_refused() {
    let mut ber = Vec::new();
    let mut w = Writer::new(&mut ber);
    w.constructed(tag::SEQUENCE, |w| {
        w.octet_string(b"noSuchType");
        w.constructed(tag::SET, |w| w.octet_string(b"x"));
    });
    assert!(StoredEntry::from_attributes_ber(&ber, schema()).is_err());
    assert!(StoredEntry::from_attributes_ber(&[0x30, 0x05, 0x04], schema()).is_err());
}
