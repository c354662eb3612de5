//! DNs: RFC 4514 examples, error offsets, and properties (print/parse round trip,
//! normalization equal for equal DNs and idempotent).

use larch_model::dn::{Dn, DnAttribute, DnSchema, NormDn};
use larch_model::{matching, syntax};
use proptest::prelude::*;

/// A few attribute types, as the shipped schema defines them.
struct TestSchema;

impl DnSchema for TestSchema {
    fn dn_attribute(&self, name: &str) -> Option<DnAttribute<'_>> {
        let (canonical, rule, syn) = match name.to_ascii_lowercase().as_str() {
            "cn" | "commonname" | "2.5.4.3" => ("cn", "caseIgnoreMatch", "1.3.6.1.4.1.1466.115.121.1.15"),
            "ou" | "organizationalunitname" | "2.5.4.11" => {
                ("ou", "caseIgnoreMatch", "1.3.6.1.4.1.1466.115.121.1.15")
            }
            "dc" | "domaincomponent" | "0.9.2342.19200300.100.1.25" => {
                ("dc", "caseIgnoreIA5Match", "1.3.6.1.4.1.1466.115.121.1.26")
            }
            "uid" | "userid" | "0.9.2342.19200300.100.1.1" => {
                ("uid", "caseIgnoreMatch", "1.3.6.1.4.1.1466.115.121.1.15")
            }
            "1.3.6.1.4.1.1466.0" => (
                "1.3.6.1.4.1.1466.0",
                "octetStringMatch",
                "1.3.6.1.4.1.1466.115.121.1.40",
            ),
            "description" => ("description", "caseIgnoreMatch", "1.3.6.1.4.1.1466.115.121.1.15"),
            "photo" => {
                return Some(DnAttribute {
                    canonical: "photo",
                    equality: None,
                    syntax: None,
                })
            }
            _ => return None,
        };
        Some(DnAttribute {
            canonical,
            equality: Some(matching::lookup(rule).expect(rule)),
            syntax: Some(syntax::lookup(syn).expect(syn)),
        })
    }
}

fn norm(s: &str) -> NormDn {
    NormDn::parse(s.as_bytes(), &TestSchema)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .1
}

#[test]
fn rfc4514_examples_parse_and_print() {
    let cases = [
        ("UID=jsmith,DC=example,DC=net", "UID=jsmith,DC=example,DC=net"),
        (
            "OU=Sales+CN=J.  Smith,DC=example,DC=net",
            "OU=Sales+CN=J.  Smith,DC=example,DC=net",
        ),
        (
            "CN=James \\\"Jim\\\" Smith\\, III,DC=example,DC=net",
            "CN=James \\\"Jim\\\" Smith\\, III,DC=example,DC=net",
        ),
        (
            "CN=Before\\0dAfter,DC=example,DC=net",
            "CN=Before\rAfter,DC=example,DC=net",
        ),
        ("1.3.6.1.4.1.1466.0=#04024869", "1.3.6.1.4.1.1466.0=#04024869"),
        ("CN=Lu\\C4\\8Di\\C4\\87", "CN=Lučić"),
        // Leniency real clients need.
        ("cn=a , dc=b", "cn=a,dc=b"),
        ("cn=a;dc=b", "cn=a,dc=b"),
        ("  cn = a  ", "cn=a"),
        ("cn=\\ lead and trail\\ ", "cn=\\ lead and trail\\ "),
        ("cn=\\#hash", "cn=\\#hash"),
        ("cn=a=b", "cn=a=b"),
        ("", ""),
    ];
    for (input, printed) in cases {
        let dn = Dn::parse(input.as_bytes()).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(dn.to_string(), printed, "{input}");
        assert_eq!(Dn::parse(printed.as_bytes()).unwrap(), dn, "{printed}");
    }
    let dn = Dn::parse(b"CN=James \\\"Jim\\\" Smith\\, III,DC=example,DC=net").unwrap();
    assert_eq!(dn.rdns[0].avas[0].value, b"James \"Jim\" Smith, III");
    let dn = Dn::parse(b"1.3.6.1.4.1.1466.0=#04024869").unwrap();
    assert_eq!(
        (dn.rdns[0].avas[0].value.as_slice(), dn.rdns[0].avas[0].hex),
        (&[4u8, 2, 0x48, 0x69][..], true)
    );
}

#[test]
fn invalid_dns_name_the_offset() {
    for (input, offset) in [
        ("cn", 2),
        ("=a", 0),
        ("cn=a,", 5),
        ("cn=a,,dc=b", 5),
        ("cn=a\\", 5),
        ("cn=a\\zz", 5),
        ("cn=\"quoted\"", 3),
        ("cn=a<b", 4),
        ("cn=#0", 4),
        ("cn=#04x", 6),
        ("cn=#", 4),
        ("1.02.3=a", 2),
        ("1..3=a", 2),
        ("c n=a", 2),
        ("cn=a\0b", 4),
        ("cn=\\ff", 6),
    ] {
        let e = Dn::parse(input.as_bytes()).unwrap_err();
        assert_eq!(e.offset, offset, "{input:?}: {e}");
    }
    assert_eq!(Dn::parse(b"cn=\xff").unwrap_err().offset, 3);
}

#[test]
fn normalization_resolves_aliases_oids_case_and_spaces() {
    let a = norm("CN=Babs  Jensen, OU=People,DC=Example,DC=COM");
    assert_eq!(a.as_str(), "cn=babs jensen,ou=people,dc=example,dc=com");
    assert_eq!(
        norm("2.5.4.3=babs jensen,organizationalUnitName=people,dc=example,dc=com"),
        a
    );
    assert_eq!(
        norm("commonName= Babs Jensen ,ou=People,domainComponent=example,dc=com"),
        a
    );
    // Multi-valued RDNs are sorted.
    assert_eq!(norm("uid=b+cn=a,dc=x"), norm("CN=A+UID=B,dc=x"));
    assert_eq!(norm("uid=b+cn=a,dc=x").as_str(), "cn=a+uid=b,dc=x");
    // Separators inside values never read as structure.
    let tricky = norm("cn=a\\,b\\+c\\=d,dc=x");
    assert_eq!(tricky.depth(), 2);
    assert_eq!(tricky.rdn(), "cn=a\\2cb\\2bc\\3dd");
    // A BER `#` value equals the same string (OCTET STRING contents).
    assert_eq!(
        norm("1.3.6.1.4.1.1466.0=#04024869,dc=x").rdn(),
        "1.3.6.1.4.1.1466.0=Hi"
    );
}

#[test]
fn normalization_refuses_what_cannot_name_an_entry() {
    for dn in ["foo=bar,dc=x", "photo=x", "cn=a+cn=A,dc=x", "dc=caf\u{e9}"] {
        assert!(NormDn::parse(dn.as_bytes(), &TestSchema).is_err(), "{dn}");
        assert!(NormDn::from_text(dn.as_bytes(), &TestSchema).is_err(), "{dn}");
    }
    let e = NormDn::from_text(b"cn=a+cn=A,dc=x", &TestSchema).unwrap_err();
    assert!(
        e.reason
            .contains("RDN `cn=a+cn=a` repeats the same attribute value"),
        "{e}"
    );
    // A syntax error later in the text wins over an unknown type before it, as in `parse`.
    let e = NormDn::from_text(b"foo=bar,,dc=x", &TestSchema).unwrap_err();
    assert_eq!((e.offset, e.reason.contains("attribute type")), (8, true), "{e}");
}

#[test]
fn hierarchy_tests_on_the_normalized_form() {
    let suffix = norm("dc=example,dc=com");
    let people = norm("ou=People,dc=example,dc=com");
    let user = norm("uid=u1,ou=People,dc=example,dc=com");
    let lookalike = norm("uid=u1,ou=xPeople,dc=example,dc=com");
    assert!(suffix.is_ancestor_of(&user) && people.is_ancestor_of(&user));
    assert!(!people.is_ancestor_of(&lookalike));
    assert!(!user.is_ancestor_of(&user) && user.is_within(&user) && user.is_within(&suffix));
    assert!(user.is_child_of(&people) && !user.is_child_of(&suffix));
    assert_eq!(user.parent().unwrap(), people);
    assert_eq!(norm("dc=com").parent().unwrap(), NormDn::root());
    assert!(NormDn::root().parent().is_none());
    assert!(NormDn::root().is_ancestor_of(&suffix));
    assert_eq!((user.depth(), NormDn::root().depth()), (4, 0));
    // An escaped comma does not make an ancestor.
    let escaped = norm("cn=x\\,dc\\=example,dc=com");
    assert!(!suffix.is_ancestor_of(&escaped));
}

fn arb_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ]{1,12}",
        "[ ,+;<>\"\\\\#=a-z]{1,10}",
        proptest::collection::vec(any::<char>().prop_filter("no NUL", |c| *c != '\0'), 1..6)
            .prop_map(String::from_iter),
    ]
}

fn arb_dn() -> impl Strategy<Value = Dn> {
    let attr = prop_oneof![
        Just("cn"),
        Just("CN"),
        Just("ou"),
        Just("uid"),
        Just("description"),
        Just("2.5.4.3")
    ];
    let ava = (attr, arb_value()).prop_map(|(a, v)| larch_model::dn::Ava {
        attr: a.to_string(),
        value: v.into_bytes(),
        hex: false,
    });
    let rdn = proptest::collection::vec(ava, 1..3).prop_map(|avas| larch_model::dn::Rdn { avas });
    proptest::collection::vec(rdn, 0..5).prop_map(|rdns| Dn { rdns })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn print_then_parse_gives_the_same_dn(dn in arb_dn()) {
        let text = dn.to_string();
        prop_assert_eq!(Dn::parse(text.as_bytes()).unwrap(), dn);
    }

    #[test]
    fn normalization_is_idempotent_and_case_blind(dn in arb_dn()) {
        if let Ok(n) = NormDn::normalize(&dn, &TestSchema) {
            // Re-reading the normalized text gives the same normalized DN.
            let again = NormDn::parse(n.as_str().as_bytes(), &TestSchema).unwrap().1;
            prop_assert_eq!(&again, &n);
            // Upper-casing types and values names the same entry (but for the dotless
            // `ı`, which folds to itself while its upper case `I` folds to `i`).
            let text = dn.to_string();
            let upper = (!text.contains('\u{0131}'))
                .then(|| Dn::parse(text.to_uppercase().as_bytes()).ok())
                .flatten();
            if let Some(upper) = upper {
                if let Ok(un) = NormDn::normalize(&upper, &TestSchema) {
                    prop_assert_eq!(un, n);
                }
            }
        }
    }

    #[test]
    fn from_text_agrees_with_parse_then_normalize(dn in arb_dn()) {
        let text = dn.to_string();
        let one_pass = NormDn::from_text(text.as_bytes(), &TestSchema);
        prop_assert_eq!(one_pass, NormDn::parse(text.as_bytes(), &TestSchema).map(|(_, n)| n));
    }

    #[test]
    fn from_text_gives_the_same_answer_on_dn_like_noise(
        text in "[a-zA-Z0-9 ,+;=.#\"<>\\\\]{0,40}",
        prefix in prop_oneof![Just(""), Just("cn=a,"), Just("uid=x+cn=y,"), Just("2.5.4.3=#0401")],
    ) {
        let input = format!("{prefix}{text}");
        let one_pass = NormDn::from_text(input.as_bytes(), &TestSchema);
        prop_assert_eq!(one_pass, NormDn::parse(input.as_bytes(), &TestSchema).map(|(_, n)| n), "{:?}", input);
    }

    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = Dn::parse(&bytes);
        prop_assert_eq!(
            NormDn::from_text(&bytes, &TestSchema),
            NormDn::parse(&bytes, &TestSchema).map(|(_, n)| n)
        );
    }
}
