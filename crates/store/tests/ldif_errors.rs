//! Errors name the right lines and say why; limits refuse oversized input, even endless
//! input, without reading it all.

use std::io::{BufReader, Read};

use larch_store::ldif::{LdifErrorKind, LdifLimits, LdifReader};

/// `(input, record_line, line, words the reason must contain)`.
const CASES: &[(&str, u64, u64, &str)] = &[
    (" cn: x\n", 1, 1, "no line before it to continue"),
    ("dn: cn=a\ncn a\n", 1, 2, "no colon"),
    ("version: 2\ndn: cn=a\ncn: a\n", 1, 1, "only \"version: 1\""),
    (
        "dn: cn=a\ncn: b\n\nversion: 1\ncn: x\n",
        4,
        4,
        "must start with \"dn:\"",
    ),
    ("# c\n\ndn: cn=a\ncn: :x\n", 3, 4, "must be written in base64"),
    ("dn: cn=a\ncn: <x\n", 1, 2, "must be written in base64"),
    ("dn: cn=a\ncn:: @@@\n", 1, 2, "invalid base64"),
    (
        "dn: cn=a\ncn: ok\n\ndn: cn=b\n# comment\n folded comment\ncontrol: 1.2.3\ncn: x\n",
        4,
        8,
        "followed by a changetype",
    ),
    (
        "dn: cn=a\nchangetype: delete\ncn: x\n",
        1,
        3,
        "nothing may follow",
    ),
    (
        "dn: cn=a\nchangetype: modify\nadd: cn\ncn: x\nsn: y\n-\n",
        1,
        5,
        "expected a value of cn or \"-\"",
    ),
    (
        "dn: cn=a\nchangetype: modify\nfoo: cn\n",
        1,
        3,
        "expected add:, delete:, replace: or increment:",
    ),
    (
        "dn: cn=a\nchangetype: modify\nadd:: Y24=\n",
        1,
        3,
        "must be followed by an attribute description",
    ),
    (
        "dn: cn=a\nchangetype: modrdn\nnewrdn: cn=b\ndeleteoldrdn: 2\n",
        1,
        4,
        "must be 0 or 1",
    ),
    (
        "dn: cn=a\nchangetype: modrdn\ndeleteoldrdn: 1\n",
        1,
        3,
        "needs a newrdn:",
    ),
    (
        "dn: cn=a\nchangetype: moddn\nnewrdn: cn=b\n",
        1,
        3,
        "needs a deleteoldrdn:",
    ),
    (
        "dn: cn=a\nchangetype: moddn\nnewrdn: cn=b\ndeleteoldrdn: 1\nnewsuperior: o=x\ncn: y\n",
        1,
        6,
        "nothing may follow",
    ),
    ("dn: cn=a\nchangetype: frobnicate\n", 1, 2, "unknown changetype"),
    ("dn: cn=a\nchangetype: add\n", 1, 2, "has no attributes"),
    ("dn: cn=a\n", 1, 1, "no attributes"),
    ("dn: cn=a\ncn;: x\n", 1, 2, "is not an attribute description"),
    ("dn: cn=a\n1.2.: x\n", 1, 2, "is not an attribute description"),
    ("dn: cn=a\ndn: cn=b\n", 1, 2, "LDIF keywords"),
    ("dn: cn=a\nsn: x\nchangetype: add\n", 1, 3, "LDIF keywords"),
    ("dn: cn=a\ncn: x\0y\n", 1, 2, "NUL"),
    ("dn: cn=a\ncn: x\ry\n", 1, 2, "carriage return"),
    ("dn: cn=a\ncn: x\n y\n z\ncn: <bad\n", 1, 5, "base64"),
    (
        "dn: cn=a\r\ncn: ok\r\n\r\n\r\ndn: cn=b\r\nsn: :x\r\n",
        5,
        6,
        "base64",
    ),
    (
        "dn: cn=a\ncontrol: abc\nchangetype: delete\n",
        1,
        2,
        "numeric OID",
    ),
    (
        "dn: cn=a\ncontrol: 1.2 maybe\nchangetype: delete\n",
        1,
        2,
        "expected true, false",
    ),
    (
        "dn: cn=a\ncontrol:: MS4y\nchangetype: delete\n",
        1,
        2,
        "cannot be base64",
    ),
    ("dn: cn=a\ncn:< file:///etc/hostname\n", 1, 2, "allow_file_urls"),
];

#[test]
fn errors_name_record_line_offending_line_and_reason() {
    for &(input, record_line, line, reason) in CASES {
        let mut reader = LdifReader::new(input.as_bytes());
        let err = loop {
            match reader.read_record() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("{input:?}: no error"),
                Err(e) => break e,
            }
        };
        let text = err.to_string();
        assert_eq!(
            (err.record_line, err.line),
            (record_line, line),
            "{input:?}: {text}"
        );
        assert!(text.contains(reason), "{input:?}: {text:?} lacks {reason:?}");
        assert!(
            text.starts_with(&format!(
                "LDIF line {line} (record starting at line {record_line})"
            )),
            "{text}"
        );
        // The reader stops after an error.
        assert!(reader.read_record().unwrap().is_none());
        assert!(reader.next().is_none());
    }
}

#[test]
fn lenient_forms_are_accepted() {
    // Missing final "-", keyword case, trailing spaces in text values, blank lines around
    // records, a comment before version, a file without a final newline.
    let input =
        "# hello\nversion: 1\n\n\n\ndn: cn=a\nCHANGETYPE: MODIFY\nReplace: cn\ncn: x  \n\n\ndn: cn=b\ncn: y";
    let records: Vec<_> = LdifReader::new(input.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(records.len(), 2);
    let text = format!("{records:?}");
    assert!(text.contains("values: [[120, 32, 32]]"), "{text}");
}

fn small_limits() -> LdifLimits {
    LdifLimits {
        max_line_bytes: 100,
        max_record_bytes: 1000,
        max_values_per_record: 10,
        max_url_file_bytes: 100,
    }
}

fn read_with(input: &[u8], limits: LdifLimits) -> Result<usize, larch_store::ldif::LdifError> {
    let mut reader = LdifReader::new(input).with_limits(limits);
    let mut n = 0;
    while reader.read_record()?.is_some() {
        n += 1;
    }
    Ok(n)
}

#[test]
fn line_length_limit() {
    let ok = format!("dn: cn=a\ncn: {}\n", "x".repeat(96));
    assert_eq!(read_with(ok.as_bytes(), small_limits()).unwrap(), 1);
    assert_eq!(
        read_with(ok.replace('\n', "\r\n").as_bytes(), small_limits()).unwrap(),
        1
    );
    let long = format!("dn: cn=a\ncn: {}\n", "x".repeat(97));
    let err = read_with(long.as_bytes(), small_limits()).unwrap_err();
    assert!(
        matches!(err.kind, LdifErrorKind::LineTooLong { limit: 100 }),
        "{err}"
    );
    assert_eq!((err.record_line, err.line), (1, 2));
}

#[test]
fn record_size_limit() {
    let line = format!(" {}\n", "y".repeat(90));
    let ok = format!("dn: cn=a\ncn: x\n{}", line.repeat(10));
    assert_eq!(read_with(ok.as_bytes(), small_limits()).unwrap(), 1);
    let big = format!("dn: cn=a\ncn: x\n{}", line.repeat(11));
    let err = read_with(big.as_bytes(), small_limits()).unwrap_err();
    assert!(
        matches!(err.kind, LdifErrorKind::RecordTooLarge { limit: 1000 }),
        "{err}"
    );
    assert_eq!((err.record_line, err.line), (1, 13));
}

#[test]
fn values_per_record_limit() {
    let ok = format!("dn: cn=a\n{}", "cn: x\n".repeat(9));
    assert_eq!(read_with(ok.as_bytes(), small_limits()).unwrap(), 1);
    let many = format!("\ndn: cn=a\n{}", "cn: x\n".repeat(10));
    let err = read_with(many.as_bytes(), small_limits()).unwrap_err();
    assert!(
        matches!(err.kind, LdifErrorKind::TooManyValues { limit: 10 }),
        "{err}"
    );
    assert_eq!((err.record_line, err.line), (2, 12));
}

/// Repeats a pattern forever.
struct Endless(&'static [u8], usize);

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        for b in buf.iter_mut() {
            *b = self.0[self.1 % self.0.len()];
            self.1 += 1;
        }
        Ok(buf.len())
    }
}

#[test]
fn endless_input_is_refused_with_default_limits() {
    // One endless line.
    let err = LdifReader::new(BufReader::new(Endless(b"a", 0)))
        .read_record()
        .unwrap_err();
    assert!(matches!(err.kind, LdifErrorKind::LineTooLong { .. }), "{err}");
    // One endless folded value.
    let input = BufReader::new(b"dn: cn=a\ncn: x\n".chain(Endless(b" 0123456789abcdef\n", 0)));
    let err = LdifReader::new(input).read_record().unwrap_err();
    assert!(matches!(err.kind, LdifErrorKind::RecordTooLarge { .. }), "{err}");
    // One endless record of short lines.
    let input = BufReader::new(b"dn: cn=a\n".chain(Endless(b"cn: x\n", 0)));
    let err = LdifReader::new(input).read_record().unwrap_err();
    assert!(matches!(err.kind, LdifErrorKind::TooManyValues { .. }), "{err}");
    assert_eq!(err.line, 100_001);
}
