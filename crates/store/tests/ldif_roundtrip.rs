//! Writer output reads back to the same records (proptest, arbitrary octets in DNs and
//! values), and the writer's exact choices: base64 when a value is not a SAFE-STRING,
//! folding at 76 columns, attributes in the order given.

use std::io::ErrorKind;

use larch_store::ldif::{
    LdifChange, LdifControl, LdifModOp, LdifModification, LdifReader, LdifRecord, LdifWriter,
};
use proptest::prelude::*;

fn write(records: &[LdifRecord], version: bool) -> Vec<u8> {
    let mut writer = LdifWriter::new(Vec::new());
    if version {
        writer.write_version().unwrap();
    }
    for record in records {
        writer.write_record(record).unwrap();
    }
    assert_eq!(writer.records_written(), records.len() as u64);
    writer.into_inner()
}

fn read(text: &[u8]) -> Vec<LdifRecord> {
    LdifReader::new(text)
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120),
        "[ -~]{0,100}".prop_map(String::into_bytes),
        "[ :<a-z\u{e9}\u{65e5}]{0,20}".prop_map(String::into_bytes),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "cn",
        "sn",
        "objectClass",
        "description;lang-en",
        "2.5.4.3",
        "userCertificate;binary",
        "x-Custom-Attr",
        "add",
        "newrdn",
    ])
    .prop_map(String::from)
}

fn attributes() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    prop::collection::vec((name(), bytes()), 1..8)
}

fn control() -> impl Strategy<Value = LdifControl> {
    (
        "[0-9]{1,3}(\\.[0-9]{1,3}){0,4}",
        any::<bool>(),
        prop::option::of(bytes()),
    )
        .prop_map(|(oid, critical, value)| LdifControl { oid, critical, value })
}

fn modification() -> impl Strategy<Value = LdifModification> {
    (
        prop::sample::select(vec![
            LdifModOp::Add,
            LdifModOp::Delete,
            LdifModOp::Replace,
            LdifModOp::Increment,
        ]),
        name(),
        prop::collection::vec(bytes(), 0..4),
    )
        .prop_map(|(op, attribute, values)| LdifModification {
            op,
            attribute,
            values,
        })
}

fn change() -> impl Strategy<Value = LdifChange> {
    prop_oneof![
        attributes().prop_map(|attributes| LdifChange::Add { attributes }),
        Just(LdifChange::Delete),
        prop::collection::vec(modification(), 0..5)
            .prop_map(|modifications| LdifChange::Modify { modifications }),
        (bytes(), any::<bool>(), prop::option::of(bytes())).prop_map(
            |(new_rdn, delete_old_rdn, new_superior)| {
                LdifChange::ModRdn {
                    new_rdn,
                    delete_old_rdn,
                    new_superior,
                }
            }
        ),
    ]
}

fn record() -> impl Strategy<Value = LdifRecord> {
    prop_oneof![
        (bytes(), attributes()).prop_map(|(dn, attributes)| LdifRecord::Content { dn, attributes }),
        (bytes(), prop::collection::vec(control(), 0..3), change())
            .prop_map(|(dn, controls, change)| LdifRecord::Change { dn, controls, change }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn written_records_read_back_equal(records in prop::collection::vec(record(), 0..6), version in any::<bool>()) {
        let text = write(&records, version);
        for line in text.split(|&b| b == b'\n') {
            prop_assert!(line.len() <= 76, "line of {} octets", line.len());
            prop_assert!(line.is_ascii());
        }
        prop_assert_eq!(read(&text), records.clone());
        // CRLF line ends read the same.
        let crlf: Vec<u8> = text.iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
        prop_assert_eq!(read(&crlf), records);
    }
}

fn one_attribute(value: &[u8]) -> String {
    let record = LdifRecord::Content {
        dn: b"cn=a".to_vec(),
        attributes: vec![("cn".into(), value.to_vec())],
    };
    String::from_utf8(write(&[record], false)).unwrap()
}

#[test]
fn base64_exactly_when_not_safe_string() {
    let cases: &[(&[u8], &str)] = &[
        (b"plain value", "cn: plain value\n"),
        (b"", "cn:\n"),
        (b"inner  spaces : and < too", "cn: inner  spaces : and < too\n"),
        (b" lead", "cn:: IGxlYWQ=\n"),
        (b":colon", "cn:: OmNvbG9u\n"),
        (b"<less", "cn:: PGxlc3M=\n"),
        (b"trail ", "cn:: dHJhaWwg\n"),
        (b"a\0b", "cn:: YQBi\n"),
        (b"a\rb", "cn:: YQ1i\n"),
        (b"a\nb", "cn:: YQpi\n"),
        ("é".as_bytes(), "cn:: w6k=\n"),
    ];
    for &(value, line) in cases {
        assert_eq!(one_attribute(value), format!("dn: cn=a\n{line}"), "{value:?}");
    }
    let record = LdifRecord::Change {
        dn: " x".into(),
        controls: vec![],
        change: LdifChange::ModRdn {
            new_rdn: "cn=é".into(),
            delete_old_rdn: false,
            new_superior: Some(b"o=x ".to_vec()),
        },
    };
    assert_eq!(
        String::from_utf8(write(&[record], false)).unwrap(),
        "dn:: IHg=\nchangetype: modrdn\nnewrdn:: Y249w6k=\ndeleteoldrdn: 0\nnewsuperior:: bz14IA==\n"
    );
}

#[test]
fn long_lines_fold_at_76_columns_and_order_is_kept() {
    let value = "0123456789".repeat(20);
    let record = LdifRecord::Content {
        dn: b"cn=a".to_vec(),
        attributes: vec![
            ("sn".into(), b"z".to_vec()),
            ("description".into(), value.clone().into_bytes()),
            ("cn".into(), b"a".to_vec()),
        ],
    };
    let text = String::from_utf8(write(std::slice::from_ref(&record), true)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "version: 1");
    assert_eq!(lines[1], "dn: cn=a");
    assert_eq!(lines[2], "sn: z");
    assert_eq!(lines[3].len(), 76);
    assert_eq!(lines[3], format!("description: {}", &value[..63]));
    assert_eq!(lines[4], format!(" {}", &value[63..138]));
    assert_eq!(lines[5], format!(" {}", &value[138..]));
    assert_eq!(lines[6], "cn: a");
    assert_eq!(read(text.as_bytes()), vec![record]);
}

#[test]
fn writer_refuses_what_the_reader_would_refuse() {
    let mut writer = LdifWriter::new(Vec::new());
    let bad = [
        LdifRecord::Content {
            dn: vec![],
            attributes: vec![],
        },
        LdifRecord::Content {
            dn: vec![],
            attributes: vec![("c n".into(), vec![])],
        },
        LdifRecord::Content {
            dn: vec![],
            attributes: vec![("changetype".into(), b"add".to_vec())],
        },
        LdifRecord::Change {
            dn: vec![],
            controls: vec![],
            change: LdifChange::Add { attributes: vec![] },
        },
        LdifRecord::Change {
            dn: vec![],
            controls: vec![LdifControl {
                oid: "1.x".into(),
                critical: false,
                value: None,
            }],
            change: LdifChange::Delete,
        },
        LdifRecord::Change {
            dn: vec![],
            controls: vec![],
            change: LdifChange::Modify {
                modifications: vec![LdifModification {
                    op: LdifModOp::Add,
                    attribute: "".into(),
                    values: vec![],
                }],
            },
        },
    ];
    for record in &bad {
        let err = writer.write_record(record).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{record:?}");
    }
    assert!(
        writer.into_inner().is_empty(),
        "nothing of a refused record is written"
    );
    let mut writer = LdifWriter::new(Vec::new());
    writer
        .write_record(&LdifRecord::Change {
            dn: vec![],
            controls: vec![],
            change: LdifChange::Delete,
        })
        .unwrap();
    assert_eq!(
        writer.write_version().unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn comments_go_before_their_record_and_are_skipped_when_read() {
    let delete = |dn: &str| LdifRecord::Change {
        dn: dn.as_bytes().to_vec(),
        controls: vec![],
        change: LdifChange::Delete,
    };
    let mut writer = LdifWriter::new(Vec::new());
    writer.write_comment("lsn", b"1").unwrap();
    writer.write_record(&delete("cn=a")).unwrap();
    writer.write_comment("lsn", b"2").unwrap();
    writer.write_comment("by", "cn=J\u{f6}rg".as_bytes()).unwrap();
    writer.write_comment("note", &[b'x'; 80]).unwrap();
    writer.write_record(&delete("cn=b")).unwrap();
    writer.write_comment("end", b" of file").unwrap();
    assert_eq!(
        writer.write_comment("a\nb", b"").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let text = writer.into_inner();
    // "# note: " and 68 octets fill the 76 columns; the other 12 continue the comment.
    let expected = format!(
        "# lsn: 1\ndn: cn=a\nchangetype: delete\n\n# lsn: 2\n# by:: Y249SsO2cmc=\n\
         # note: {}\n {}\ndn: cn=b\nchangetype: delete\n\n# end:: IG9mIGZpbGU=\n",
        "x".repeat(68),
        "x".repeat(12)
    );
    assert_eq!(String::from_utf8(text.clone()).unwrap(), expected);
    assert_eq!(read(&text), [delete("cn=a"), delete("cn=b")]);
}
