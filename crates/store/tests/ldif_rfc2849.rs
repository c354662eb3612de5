//! The examples of RFC 2849 (section "Examples of LDAP Data Interchange Format"), parsed
//! to the records they stand for, then written and read back.

use std::io::Cursor;

use larch_store::ldif::{
    LdifChange, LdifControl, LdifErrorKind, LdifModOp, LdifModification, LdifReader, LdifRecord, LdifWriter,
};

fn read_all(text: &str) -> Vec<LdifRecord> {
    let mut reader = LdifReader::new(Cursor::new(text.as_bytes().to_vec()));
    let records: Vec<LdifRecord> = (&mut reader)
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(reader.version(), Some(1));
    records
}

fn content(dn: &str, attributes: &[(&str, &[u8])]) -> LdifRecord {
    LdifRecord::Content {
        dn: dn.as_bytes().to_vec(),
        attributes: attributes
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_vec()))
            .collect(),
    }
}

/// Writes the records and reads them back: they must come back equal.
fn assert_round_trip(records: &[LdifRecord]) {
    let mut writer = LdifWriter::new(Vec::new());
    writer.write_version().unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    let text = writer.into_inner();
    for line in text.split(|&b| b == b'\n') {
        assert!(
            line.len() <= 76,
            "unfolded line {:?}",
            String::from_utf8_lossy(line)
        );
        assert!(line.is_ascii());
    }
    let again = read_all(std::str::from_utf8(&text).unwrap());
    assert_eq!(again, records);
}

const EXAMPLE_1: &str = "version: 1
dn: cn=Barbara Jensen, ou=Product Development, dc=airius, dc=com
objectclass: top
objectclass: person
objectclass: organizationalPerson
cn: Barbara Jensen
cn: Barbara J Jensen
cn: Babs Jensen
sn: Jensen
uid: bjensen
telephonenumber: +1 408 555 1212
description: A big sailing fan.

dn: cn=Bjorn Jensen, ou=Accounting, dc=airius, dc=com
objectclass: top
objectclass: person
objectclass: organizationalPerson
cn: Bjorn Jensen
sn: Jensen
telephonenumber: +1 408 555 1212
";

#[test]
fn example_1_two_entries() {
    let records = read_all(EXAMPLE_1);
    let expected = vec![
        content(
            "cn=Barbara Jensen, ou=Product Development, dc=airius, dc=com",
            &[
                ("objectclass", b"top"),
                ("objectclass", b"person"),
                ("objectclass", b"organizationalPerson"),
                ("cn", b"Barbara Jensen"),
                ("cn", b"Barbara J Jensen"),
                ("cn", b"Babs Jensen"),
                ("sn", b"Jensen"),
                ("uid", b"bjensen"),
                ("telephonenumber", b"+1 408 555 1212"),
                ("description", b"A big sailing fan."),
            ],
        ),
        content(
            "cn=Bjorn Jensen, ou=Accounting, dc=airius, dc=com",
            &[
                ("objectclass", b"top"),
                ("objectclass", b"person"),
                ("objectclass", b"organizationalPerson"),
                ("cn", b"Bjorn Jensen"),
                ("sn", b"Jensen"),
                ("telephonenumber", b"+1 408 555 1212"),
            ],
        ),
    ];
    assert_eq!(records, expected);
    assert_round_trip(&records);
    // CRLF line ends read the same.
    assert_eq!(read_all(&EXAMPLE_1.replace('\n', "\r\n")), expected);
}

#[test]
fn example_2_folded_value() {
    let text = "version: 1
dn:cn=Barbara Jensen, ou=Product Development, dc=airius, dc=com
objectclass:top
objectclass:person
objectclass:organizationalPerson
cn:Barbara Jensen
cn:Barbara J Jensen
cn:Babs Jensen
sn:Jensen
uid:bjensen
telephonenumber:+1 408 555 1212
description:Babs is a big sailing fan, and travels extensively in sea
 rch of perfect sailing conditions.
title:Product Manager, Rod and Reel Division
";
    let records = read_all(text);
    let expected = vec![content(
        "cn=Barbara Jensen, ou=Product Development, dc=airius, dc=com",
        &[
            ("objectclass", b"top"),
            ("objectclass", b"person"),
            ("objectclass", b"organizationalPerson"),
            ("cn", b"Barbara Jensen"),
            ("cn", b"Barbara J Jensen"),
            ("cn", b"Babs Jensen"),
            ("sn", b"Jensen"),
            ("uid", b"bjensen"),
            ("telephonenumber", b"+1 408 555 1212"),
            ("description", b"Babs is a big sailing fan, and travels extensively in search of perfect sailing conditions."),
            ("title", b"Product Manager, Rod and Reel Division"),
        ],
    )];
    assert_eq!(records, expected);
    assert_round_trip(&records);
}

#[test]
fn example_3_base64_value() {
    let text = "version: 1
dn: cn=Gern Jensen, ou=Product Testing, dc=airius, dc=com
objectclass: top
objectclass: person
objectclass: organizationalPerson
cn: Gern Jensen
cn: Gern O Jensen
sn: Jensen
uid: gernj
telephonenumber: +1 408 555 1212
description:: V2hhdCBhIGNhcmVmdWwgcmVhZGVyIHlvdSBhcmUhICBUaGlzIHZhbHVl
 IGlzIGJhc2UtNjQtZW5jb2RlZCBiZWNhdXNlIGl0IGhhcyBhIGNvbnRyb2wgY2hhcmFjdG
 VyIGluIGl0IChhIENSKS4NICBCeSB0aGUgd2F5LCB5b3Ugc2hvdWxkIHJlYWxseSBnZXQg
 b3V0IG1vcmUu
";
    let records = read_all(text);
    let expected = vec![content(
        "cn=Gern Jensen, ou=Product Testing, dc=airius, dc=com",
        &[
            ("objectclass", b"top"),
            ("objectclass", b"person"),
            ("objectclass", b"organizationalPerson"),
            ("cn", b"Gern Jensen"),
            ("cn", b"Gern O Jensen"),
            ("sn", b"Jensen"),
            ("uid", b"gernj"),
            ("telephonenumber", b"+1 408 555 1212"),
            (
                "description",
                b"What a careful reader you are!  This value is base-64-encoded because it has a \
                  control character in it (a CR).\r  By the way, you should really get out more.",
            ),
        ],
    )];
    assert_eq!(records, expected);
    assert_round_trip(&records);
}

#[test]
fn example_4_utf8_values_options_and_folded_comments() {
    let text = "version: 1
dn:: b3U95Za25qWt6YOoLG89QWlyaXVz
# dn:: ou=<JapaneseOU>,o=Airius
objectclass: top
objectclass: organizationalUnit
ou:: 5Za25qWt6YOo
# ou:: <JapaneseOU>
ou;lang-ja:: 5Za25qWt6YOo
# ou;lang-ja:: <JapaneseOU>
ou;lang-ja;phonetic:: 44GI44GE44GO44KH44GG44G2
# ou;lang-ja:: <JapaneseOU_in_phonetic_representation>
ou;lang-en: Sales
description: Japanese office

dn:: dWlkPXJvZ2FzYXdhcmEsb3U95Za25qWt6YOoLG89QWlyaXVz
# dn:: uid=<uid>,ou=<JapaneseOU>,o=Airius
userpassword: {SHA}O3HSv1MusyL4kTjP+HKI5uxuNoM=
objectclass: top
objectclass: person
objectclass: organizationalPerson
objectclass: inetOrgPerson
uid: rogasawara
mail: rogasawara@airius.co.jp
givenname;lang-ja:: 44Ot44OJ44OL44O8
# givenname;lang-ja:: <JapaneseGivenname>
sn;lang-ja:: 5bCP56yg5Y6f
# sn;lang-ja:: <JapaneseSn>
cn;lang-ja:: 5bCP56yg5Y6fIOODreODieODi+ODvA==
# cn;lang-ja:: <JapaneseCn>
title;lang-ja:: 5Za25qWt6YOoIOmDqOmVtw==
# title;lang-ja:: <JapaneseTitle>
preferredlanguage: ja
givenname:: 44Ot44OJ44OL44O8
# givenname:: <JapaneseGivenname>
sn:: 5bCP56yg5Y6f
# sn:: <JapaneseSn>
cn:: 5bCP56yg5Y6fIOODreODieODi+ODvA==
# cn:: <JapaneseCn>
title:: 5Za25qWt6YOoIOmDqOmVtw==
# title:: <JapaneseTitle>
givenname;lang-ja;phonetic:: 44KN44Gp44Gr44O8
# givenname;lang-ja;phonetic::
  <JapaneseGivenname_in_phonetic_representation_kana>
sn;lang-ja;phonetic:: 44GK44GM44GV44KP44KJ
# sn;lang-ja;phonetic:: <JapaneseSn_in_phonetic_representation_kana>
cn;lang-ja;phonetic:: 44GK44GM44GV44KP44KJIOOCjeOBqeOBq+ODvA==
# cn;lang-ja;phonetic:: <JapaneseCn_in_phonetic_representation_kana>
title;lang-ja;phonetic:: 44GI44GE44GO44KH44GG44G2IOOBtuOBoeOCh+OBhg==
# title;lang-ja;phonetic::
# <JapaneseTitle_in_phonetic_representation_kana>
givenname;lang-en: Rodney
sn;lang-en: Ogasawara
cn;lang-en: Rodney Ogasawara
title;lang-en: Sales, Director
";
    let records = read_all(text);
    let s = |v: &'static str| v.as_bytes();
    let expected = vec![
        content(
            "ou=営業部,o=Airius",
            &[
                ("objectclass", s("top")),
                ("objectclass", s("organizationalUnit")),
                ("ou", s("営業部")),
                ("ou;lang-ja", s("営業部")),
                ("ou;lang-ja;phonetic", s("えいぎょうぶ")),
                ("ou;lang-en", s("Sales")),
                ("description", s("Japanese office")),
            ],
        ),
        content(
            "uid=rogasawara,ou=営業部,o=Airius",
            &[
                ("userpassword", s("{SHA}O3HSv1MusyL4kTjP+HKI5uxuNoM=")),
                ("objectclass", s("top")),
                ("objectclass", s("person")),
                ("objectclass", s("organizationalPerson")),
                ("objectclass", s("inetOrgPerson")),
                ("uid", s("rogasawara")),
                ("mail", s("rogasawara@airius.co.jp")),
                ("givenname;lang-ja", s("ロドニー")),
                ("sn;lang-ja", s("小笠原")),
                ("cn;lang-ja", s("小笠原 ロドニー")),
                ("title;lang-ja", s("営業部 部長")),
                ("preferredlanguage", s("ja")),
                ("givenname", s("ロドニー")),
                ("sn", s("小笠原")),
                ("cn", s("小笠原 ロドニー")),
                ("title", s("営業部 部長")),
                ("givenname;lang-ja;phonetic", s("ろどにー")),
                ("sn;lang-ja;phonetic", s("おがさわら")),
                ("cn;lang-ja;phonetic", s("おがさわら ろどにー")),
                ("title;lang-ja;phonetic", s("えいぎょうぶ ぶちょう")),
                ("givenname;lang-en", s("Rodney")),
                ("sn;lang-en", s("Ogasawara")),
                ("cn;lang-en", s("Rodney Ogasawara")),
                ("title;lang-en", s("Sales, Director")),
            ],
        ),
    ];
    assert_eq!(records, expected);
    assert_round_trip(&records);
}

fn example_5(url: &str) -> String {
    format!(
        "version: 1
dn: cn=Horatio Jensen, ou=Product Testing, dc=airius, dc=com
objectclass: top
objectclass: person
objectclass: organizationalPerson
cn: Horatio Jensen
cn: Horatio N Jensen
sn: Jensen
uid: hjensen
telephonenumber: +1 408 555 1212
jpegphoto:< {url}
"
    )
}

#[test]
fn example_5_file_url_refused_by_default() {
    let text = example_5("file:///usr/local/directory/photos/hjensen.jpg");
    let err = LdifReader::new(text.as_bytes()).read_record().unwrap_err();
    assert!(
        matches!(err.kind, LdifErrorKind::UrlRefused(ref u) if u == "file:///usr/local/directory/photos/hjensen.jpg")
    );
    assert_eq!((err.record_line, err.line), (2, 11));
    assert!(err.to_string().contains("allow_file_urls"), "{err}");
}

#[test]
fn example_5_file_url_read_when_allowed() {
    let dir = std::env::temp_dir().join(format!("larch-ldif-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let photo = dir.join("hjensen photo.jpg");
    let bytes: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    std::fs::write(&photo, &bytes).unwrap();
    let url = format!("file://{}", photo.display()).replace(' ', "%20");
    let text = example_5(&url);
    let records: Vec<_> = LdifReader::new(text.as_bytes())
        .allow_file_urls(true)
        .collect::<Result<_, _>>()
        .unwrap();
    let expected = vec![content(
        "cn=Horatio Jensen, ou=Product Testing, dc=airius, dc=com",
        &[
            ("objectclass", b"top"),
            ("objectclass", b"person"),
            ("objectclass", b"organizationalPerson"),
            ("cn", b"Horatio Jensen"),
            ("cn", b"Horatio N Jensen"),
            ("sn", b"Jensen"),
            ("uid", b"hjensen"),
            ("telephonenumber", b"+1 408 555 1212"),
            ("jpegphoto", &bytes),
        ],
    )];
    assert_eq!(records, expected);
    assert_round_trip(&records);

    // A file larger than the limit is refused.
    let limits = larch_store::ldif::LdifLimits {
        max_url_file_bytes: 2999,
        ..Default::default()
    };
    let err = LdifReader::new(text.as_bytes())
        .allow_file_urls(true)
        .with_limits(limits)
        .read_record()
        .unwrap_err();
    assert!(
        err.to_string().contains("larger than the 2999-octet limit"),
        "{err}"
    );
    // Other schemes are refused even when files are allowed.
    let err = LdifReader::new(example_5("http://example.com/x.jpg").as_bytes())
        .allow_file_urls(true)
        .read_record()
        .unwrap_err();
    assert!(err.to_string().contains("only file:// URLs"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn example_6_change_records() {
    let dir = std::env::temp_dir().join(format!("larch-ldif-test6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let photo = dir.join("fiona.jpg");
    std::fs::write(&photo, b"\xff\xd8 not really a jpeg").unwrap();
    let text = format!(
        "version: 1
# Add a new entry
dn: cn=Fiona Jensen, ou=Marketing, dc=airius, dc=com
changetype: add
objectclass: top
objectclass: person
objectclass: organizationalPerson
cn: Fiona Jensen
sn: Jensen
uid: fiona
telephonenumber: +1 408 555 1212
jpegphoto:< file://{}

# Delete an existing entry
dn: cn=Robert Jensen, ou=Marketing, dc=airius, dc=com
changetype: delete

# Modify an entry's relative distinguished name
dn: cn=Paul Jensen, ou=Product Development, dc=airius, dc=com
changetype: modrdn
newrdn: cn=Paula Jensen
deleteoldrdn: 1

# Rename an entry and move all of its children to a new location in
# the directory tree (only implemented by LDAPv3 servers).
dn: ou=PD Accountants, ou=Product Development, dc=airius, dc=com
changetype: modrdn
newrdn: ou=Product Development Accountants
deleteoldrdn: 0
newsuperior: ou=Accounting, dc=airius, dc=com

# Modify an entry: add an additional value to the postaladdress
# attribute, completely delete the description attribute, replace
# the telephonenumber attribute with two values, and delete a specific
# value from the facsimiletelephonenumber attribute
dn: cn=Paula Jensen, ou=Product Development, dc=airius, dc=com
changetype: modify
add: postaladdress
postaladdress: 123 Anystreet $ Sunnyvale, CA $ 94086
-
delete: description
-
replace: telephonenumber
telephonenumber: +1 408 555 1234
telephonenumber: +1 408 555 5678
-
delete: facsimiletelephonenumber
facsimiletelephonenumber: +1 408 555 9876
-

# Modify an entry: replace the postaladdress attribute with an empty
# set of values (which will cause the attribute to be removed), and
# delete the entire description attribute. Note that the first will
# always succeed, while the second will only succeed if at least
# one value for the description attribute is present.
dn: cn=Ingrid Jensen, ou=Product Support, dc=airius, dc=com
changetype: modify
replace: postaladdress
-
delete: description
-
",
        photo.display()
    );
    // Refused without allow_file_urls: the URL is in the first record, line 12.
    let err = LdifReader::new(text.as_bytes()).read_record().unwrap_err();
    assert_eq!((err.record_line, err.line), (3, 12), "{err}");

    let records: Vec<_> = LdifReader::new(text.as_bytes())
        .allow_file_urls(true)
        .collect::<Result<_, _>>()
        .unwrap();
    let change = |dn: &str, change| LdifRecord::Change {
        dn: dn.as_bytes().to_vec(),
        controls: vec![],
        change,
    };
    let attrs = |list: &[(&str, &[u8])]| list.iter().map(|(n, v)| (n.to_string(), v.to_vec())).collect();
    let modification = |op, attribute: &str, values: &[&str]| LdifModification {
        op,
        attribute: attribute.into(),
        values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
    };
    let expected = vec![
        change(
            "cn=Fiona Jensen, ou=Marketing, dc=airius, dc=com",
            LdifChange::Add {
                attributes: attrs(&[
                    ("objectclass", b"top"),
                    ("objectclass", b"person"),
                    ("objectclass", b"organizationalPerson"),
                    ("cn", b"Fiona Jensen"),
                    ("sn", b"Jensen"),
                    ("uid", b"fiona"),
                    ("telephonenumber", b"+1 408 555 1212"),
                    ("jpegphoto", b"\xff\xd8 not really a jpeg"),
                ]),
            },
        ),
        change(
            "cn=Robert Jensen, ou=Marketing, dc=airius, dc=com",
            LdifChange::Delete,
        ),
        change(
            "cn=Paul Jensen, ou=Product Development, dc=airius, dc=com",
            LdifChange::ModRdn {
                new_rdn: b"cn=Paula Jensen".to_vec(),
                delete_old_rdn: true,
                new_superior: None,
            },
        ),
        change(
            "ou=PD Accountants, ou=Product Development, dc=airius, dc=com",
            LdifChange::ModRdn {
                new_rdn: b"ou=Product Development Accountants".to_vec(),
                delete_old_rdn: false,
                new_superior: Some(b"ou=Accounting, dc=airius, dc=com".to_vec()),
            },
        ),
        change(
            "cn=Paula Jensen, ou=Product Development, dc=airius, dc=com",
            LdifChange::Modify {
                modifications: vec![
                    modification(
                        LdifModOp::Add,
                        "postaladdress",
                        &["123 Anystreet $ Sunnyvale, CA $ 94086"],
                    ),
                    modification(LdifModOp::Delete, "description", &[]),
                    modification(
                        LdifModOp::Replace,
                        "telephonenumber",
                        &["+1 408 555 1234", "+1 408 555 5678"],
                    ),
                    modification(
                        LdifModOp::Delete,
                        "facsimiletelephonenumber",
                        &["+1 408 555 9876"],
                    ),
                ],
            },
        ),
        change(
            "cn=Ingrid Jensen, ou=Product Support, dc=airius, dc=com",
            LdifChange::Modify {
                modifications: vec![
                    modification(LdifModOp::Replace, "postaladdress", &[]),
                    modification(LdifModOp::Delete, "description", &[]),
                ],
            },
        ),
    ];
    assert_eq!(records, expected);
    assert_round_trip(&records);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn example_7_controls_moddn_and_increment() {
    let text = "version: 1
# Delete an entry. The operation will attach the LDAPv3
# Tree Delete Control defined in [9]. The criticality
# field is \"true\" and the controlValue field is
# absent, as required by [9].
dn: ou=Product Development, dc=airius, dc=com
control: 1.2.840.113556.1.4.805 true
changetype: delete

dn: cn=x
control: 1.2.3 false: text value
control: 1.2.4:: AAEC
control: 1.2.5 TRUE:
changetype: moddn
newrdn:: Y249eSA=
deleteoldrdn: 1

dn: cn=counter
changetype: Modify
increment: uidNumber
uidNumber: 1
";
    let records = read_all(text);
    let control = |oid: &str, critical, value: Option<&[u8]>| LdifControl {
        oid: oid.into(),
        critical,
        value: value.map(<[u8]>::to_vec),
    };
    let expected = vec![
        LdifRecord::Change {
            dn: b"ou=Product Development, dc=airius, dc=com".to_vec(),
            controls: vec![control("1.2.840.113556.1.4.805", true, None)],
            change: LdifChange::Delete,
        },
        LdifRecord::Change {
            dn: b"cn=x".to_vec(),
            controls: vec![
                control("1.2.3", false, Some(b"text value")),
                control("1.2.4", false, Some(&[0, 1, 2])),
                control("1.2.5", true, Some(b"")),
            ],
            change: LdifChange::ModRdn {
                new_rdn: b"cn=y ".to_vec(),
                delete_old_rdn: true,
                new_superior: None,
            },
        },
        LdifRecord::Change {
            dn: b"cn=counter".to_vec(),
            controls: vec![],
            change: LdifChange::Modify {
                modifications: vec![LdifModification {
                    op: LdifModOp::Increment,
                    attribute: "uidNumber".into(),
                    values: vec![b"1".to_vec()],
                }],
            },
        },
    ];
    assert_eq!(records, expected);
    assert_round_trip(&records);
}
