//! The WAL's byte format and the `Change` payload: exact encodings, round trips, and
//! decoders that refuse (never panic on) damaged input.

use larch_store::wal::record::{Change, ChangeDecodeError};
use larch_store::wal::{
    decode_header, decode_record, encode_header, encode_record, parse_segment_name, record_crc_v1,
    segment_name, Corruption, SegmentHeader, FORMAT_VERSION, FORMAT_VERSION_1, MAX_RECORD_PAYLOAD,
    RECORD_HEADER_LEN, SEGMENT_HEADER_LEN,
};
use proptest::prelude::*;

#[test]
fn segment_names() {
    assert_eq!(segment_name(1), "wal-0000000000000001.log");
    assert_eq!(segment_name(0xabc), "wal-0000000000000abc.log");
    assert_eq!(parse_segment_name("wal-0000000000000abc.log"), Some(0xabc));
    assert_eq!(parse_segment_name(&segment_name(u64::MAX)), Some(u64::MAX));
    for bad in [
        "wal-0000000000000ABC.log",
        "wal-abc.log",
        "wal-0000000000000abc.tmp",
        "x",
        "wal-+000000000000abc.log",
    ] {
        assert_eq!(parse_segment_name(bad), None, "{bad}");
    }
}

#[test]
fn the_checksum_is_crc32c_castagnoli() {
    // The check value `docs/formats.md` gives; CRC-32/IEEE would be 0xCBF43926.
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn header_bytes_are_exact() {
    let mut h = Vec::new();
    encode_header(0x0102, &mut h);
    assert_eq!(h.len(), SEGMENT_HEADER_LEN);
    assert_eq!(&h[..8], b"LARCHWAL");
    assert_eq!(&h[8..12], &[2, 0, 0, 0]);
    assert_eq!(&h[12..20], &[0x02, 0x01, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&h[20..], &crc32c::crc32c(&h[..20]).to_le_bytes());
    assert_eq!(
        decode_header(&h),
        Ok(SegmentHeader {
            first_lsn: 0x0102,
            version: 2
        })
    );
    // A format-1 header is still read.
    let mut old = h.clone();
    old[8] = 1;
    let crc = crc32c::crc32c(&old[..20]).to_le_bytes();
    old[20..].copy_from_slice(&crc);
    assert_eq!(
        decode_header(&old),
        Ok(SegmentHeader {
            first_lsn: 0x0102,
            version: 1
        })
    );
    assert_eq!(decode_header(&h[..23]), Err(Corruption::Incomplete));
    let mut bad = h.clone();
    bad[0] ^= 1;
    assert_eq!(decode_header(&bad), Err(Corruption::BadMagic));
    let mut bad = h.clone();
    bad[8] = 3;
    assert_eq!(
        decode_header(&bad),
        Err(Corruption::UnsupportedVersion { version: 3 })
    );
    let mut bad = h.clone();
    bad[15] ^= 1;
    assert_eq!(decode_header(&bad), Err(Corruption::HeaderChecksum));
}

#[test]
fn record_bytes_are_exact() {
    for continues in [false, true] {
        let mut r = Vec::new();
        encode_record(7, b"abc", continues, &mut r);
        let word: [u8; 4] = if continues { [3, 0, 0, 0x80] } else { [3, 0, 0, 0] };
        let mut crc_input = word.to_vec();
        crc_input.extend_from_slice(&7u64.to_le_bytes());
        crc_input.extend_from_slice(b"abc");
        let mut expect = word.to_vec();
        expect.extend_from_slice(&crc32c::crc32c(&crc_input).to_le_bytes());
        expect.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0, 0]);
        expect.extend_from_slice(b"abc");
        assert_eq!(r, expect);
        let f = decode_record(&r, 0, 7, FORMAT_VERSION).unwrap();
        assert_eq!(
            (f.lsn, f.payload, f.continues, f.end),
            (7, &b"abc"[..], continues, RECORD_HEADER_LEN + 3)
        );
        assert_eq!(
            decode_record(&r, 0, 8, FORMAT_VERSION),
            Err(Corruption::UnexpectedLsn {
                expected: 8,
                found: 7
            })
        );
        for cut in 0..r.len() {
            assert_eq!(
                decode_record(&r[..cut], 0, 7, FORMAT_VERSION),
                Err(Corruption::Incomplete),
                "cut {cut}"
            );
        }
        // The checksum covers every octet but its own, the continues bit included.
        for i in (0..r.len()).filter(|i| !(4..8).contains(i)) {
            for bit in [0x10, 0x80] {
                let mut bad = r.clone();
                bad[i] ^= bit;
                let got = decode_record(&bad, 0, 7, FORMAT_VERSION);
                assert!(
                    matches!(
                        got,
                        Err(Corruption::Checksum
                            | Corruption::Incomplete
                            | Corruption::LengthTooLarge { .. })
                    ),
                    "flip {bit:#x} at {i}: {got:?}"
                );
            }
        }
    }
    let mut r = Vec::new();
    encode_record(7, b"abc", false, &mut r);
    let mut huge = r.clone();
    huge[..4].copy_from_slice(&(MAX_RECORD_PAYLOAD as u32 + 1).to_le_bytes());
    assert_eq!(
        decode_record(&huge, 0, 7, FORMAT_VERSION),
        Err(Corruption::LengthTooLarge {
            len: MAX_RECORD_PAYLOAD as u32 + 1
        })
    );
}

#[test]
fn format_1_records_decode_and_never_continue() {
    let mut r = vec![3, 0, 0, 0];
    r.extend_from_slice(&record_crc_v1(7, b"abc").to_le_bytes());
    r.extend_from_slice(&7u64.to_le_bytes());
    r.extend_from_slice(b"abc");
    let f = decode_record(&r, 0, 7, FORMAT_VERSION_1).unwrap();
    assert_eq!((f.lsn, f.payload, f.continues), (7, &b"abc"[..], false));
    // The same octets are not a format-2 record (its checksum covers the length word).
    assert_eq!(decode_record(&r, 0, 7, FORMAT_VERSION), Err(Corruption::Checksum));
    // In format 1 the top bit is part of the length: above the limit.
    let mut flagged = r.clone();
    flagged[3] = 0x80;
    assert_eq!(
        decode_record(&flagged, 0, 7, FORMAT_VERSION_1),
        Err(Corruption::LengthTooLarge { len: 0x8000_0003 })
    );
}

fn samples() -> Vec<Change> {
    vec![
        Change::Add {
            dn: "cn=a,dc=example,dc=com".into(),
            attributes_ber: vec![0x30, 0x00],
        },
        Change::Modify {
            dn: "cn=ä,dc=x".into(),
            attributes_ber: vec![1; 300],
        },
        Change::Delete {
            dn: String::new(),
            attributes_ber: vec![],
        },
        Change::Delete {
            dn: "cn=a,dc=x".into(),
            attributes_ber: vec![0x30, 0x00],
        },
        Change::ModifyDn {
            dn: "cn=a,dc=x".into(),
            new_dn: "cn=b,ou=y,dc=x".into(),
            attributes_ber: vec![],
        },
    ]
}

#[test]
fn change_encodings_are_exact_and_round_trip() {
    let delete = Change::Delete {
        dn: "cn=a".into(),
        attributes_ber: vec![],
    };
    assert_eq!(delete.to_vec(), [0xa2, 0x06, 0x04, 0x04, b'c', b'n', b'=', b'a']);
    let stamped = Change::Delete {
        dn: "cn=a".into(),
        attributes_ber: vec![0x30, 0x00],
    };
    assert_eq!(
        stamped.to_vec(),
        [0xa2, 0x0a, 0x04, 0x04, b'c', b'n', b'=', b'a', 0x04, 0x02, 0x30, 0x00]
    );
    let add = Change::Add {
        dn: "x".into(),
        attributes_ber: vec![0x30, 0x00],
    };
    assert_eq!(
        add.to_vec(),
        [0xa0, 0x07, 0x04, 0x01, b'x', 0x04, 0x02, 0x30, 0x00]
    );
    for c in samples() {
        let bytes = c.to_vec();
        assert_eq!(Change::decode(&bytes).unwrap(), c);
        for cut in 0..bytes.len() {
            assert!(Change::decode(&bytes[..cut]).is_err(), "{c:?} cut at {cut}");
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(Change::decode(&trailing).is_err());
    }
}

#[test]
fn change_decode_refuses_bad_input() {
    assert_eq!(Change::decode(&[]), Err(ChangeDecodeError::Empty));
    assert_eq!(
        Change::decode(&[0xa5, 0x00]),
        Err(ChangeDecodeError::UnknownKind(0xa5))
    );
    assert_eq!(
        Change::decode(&[0xa2, 0x03, 0x04, 0x01, 0xff]),
        Err(ChangeDecodeError::InvalidUtf8)
    );
    // A delete with a component after its attributes.
    assert!(matches!(
        Change::decode(&[0xa2, 0x07, 0x04, 0x01, b'x', 0x04, 0x00, 0x04, 0x00]),
        Err(ChangeDecodeError::Ber(_))
    ));
    // A delete whose second component is not an OCTET STRING.
    assert!(matches!(
        Change::decode(&[0xa2, 0x05, 0x04, 0x01, b'x', 0x30, 0x00]),
        Err(ChangeDecodeError::Ber(_))
    ));
}

#[test]
fn an_old_form_delete_record_decodes_with_empty_attributes() {
    // The delete of `cn=a,dc=example,dc=com` as a log record written before deletes carried
    // attributes: a record frame (length, CRC32C, LSN 7) around `a2 18 04 16 <dn>`.
    let frame: [u8; 42] = [
        0x1a, 0x00, 0x00, 0x00, // payload length 26
        0x7f, 0x87, 0x76, 0xa8, // CRC32C over the LSN's 8 octets and the payload
        0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // LSN 7
        0xa2, 0x18, 0x04, 0x16, b'c', b'n', b'=', b'a', b',', b'd', b'c', b'=', b'e', b'x', b'a', b'm', b'p',
        b'l', b'e', b',', b'd', b'c', b'=', b'c', b'o', b'm',
    ];
    let f = decode_record(&frame, 0, 7, FORMAT_VERSION_1).unwrap();
    assert_eq!(f.end, frame.len());
    let change = Change::decode(f.payload).unwrap();
    assert_eq!(
        change,
        Change::Delete {
            dn: "cn=a,dc=example,dc=com".into(),
            attributes_ber: vec![],
        }
    );
    // Written today with no attributes, the record is the same octets.
    assert_eq!(change.to_vec(), f.payload);
    // An attributes element present but empty decodes the same.
    assert_eq!(
        Change::decode(&[0xa2, 0x05, 0x04, 0x01, b'x', 0x04, 0x00]).unwrap(),
        Change::Delete {
            dn: "x".into(),
            attributes_ber: vec![],
        }
    );
}

fn arb_change() -> impl Strategy<Value = Change> {
    let dn = ".{0,40}";
    let ber = proptest::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        (dn, ber.clone()).prop_map(|(dn, attributes_ber)| Change::Add { dn, attributes_ber }),
        (dn, ber.clone()).prop_map(|(dn, attributes_ber)| Change::Modify { dn, attributes_ber }),
        (dn, ber.clone()).prop_map(|(dn, attributes_ber)| Change::Delete { dn, attributes_ber }),
        (dn, dn, ber).prop_map(|(dn, new_dn, attributes_ber)| Change::ModifyDn {
            dn,
            new_dn,
            attributes_ber
        }),
    ]
}

proptest! {
    #[test]
    fn changes_round_trip(c in arb_change()) {
        prop_assert_eq!(Change::decode(&c.to_vec()).unwrap(), c);
    }

    #[test]
    fn change_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(c) = Change::decode(&bytes) {
            // Minimal encodings re-encode to themselves.
            let again = c.to_vec();
            prop_assert_eq!(Change::decode(&again).unwrap(), c);
        }
    }

    #[test]
    fn records_round_trip(
        lsn in 1u64..,
        payload in proptest::collection::vec(any::<u8>(), 0..500),
        continues in any::<bool>(),
    ) {
        let mut buf = vec![9; 5];
        encode_record(lsn, &payload, continues, &mut buf);
        let f = decode_record(&buf, 5, lsn, FORMAT_VERSION).unwrap();
        prop_assert_eq!(f.payload, &payload[..]);
        prop_assert_eq!(f.continues, continues);
        prop_assert_eq!(f.end, buf.len());
    }
}
