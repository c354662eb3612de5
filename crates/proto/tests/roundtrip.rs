//! Round trips for every PDU, filter kind, control and extended operation: build, encode,
//! decode, compare; then re-encode the decoded (BER-backed) message and compare bytes.
//! Also exact encodings worked out by hand from RFC 4511, and the error contract
//! (message ID carried, defined error kinds).

use larch_proto::controls::*;
use larch_proto::exop::{self, *};
use larch_proto::*;

/// Encodes, decodes, checks equality, and checks that re-encoding the decoded view gives
/// the same octets. Returns the encoding.
fn round_trip(msg: &LdapMessage<'_>) -> Vec<u8> {
    let mut buf = Vec::new();
    msg.encode(&mut buf);
    assert_eq!(
        frame::frame(&buf, limits::DEFAULT_MAX_PDU_BYTES).unwrap(),
        frame::Frame::Complete(buf.len())
    );
    let back = LdapMessage::decode(&buf).unwrap_or_else(|e| panic!("{e} in {buf:02x?}"));
    assert_eq!(&back, msg);
    assert_eq!(
        LdapMessage::decode_validated_before(&buf).as_ref(),
        Ok(msg),
        "a message decoded before decodes the same without its filter validated again"
    );
    let mut again = Vec::new();
    back.encode(&mut again);
    assert_eq!(
        again, buf,
        "re-encoding a decoded message must give the same octets"
    );
    buf
}

fn op(op: ProtocolOp<'_>) -> Vec<u8> {
    round_trip(&LdapMessage::new(12345, op))
}

const VALS: [&[u8]; 3] = [b"alpha", b"", b"\x00\xff binary"];

#[test]
fn bind_requests() {
    for auth in [
        Authentication::Simple(b""),
        Authentication::Simple(b"secret"),
        Authentication::Sasl {
            mechanism: b"EXTERNAL",
            credentials: None,
        },
        Authentication::Sasl {
            mechanism: b"PLAIN",
            credentials: Some(b"\0alice\0pw"),
        },
        Authentication::Sasl {
            mechanism: b"GSSAPI",
            credentials: Some(b""),
        },
    ] {
        for version in [2u8, 3, 127] {
            op(ProtocolOp::BindRequest(BindRequest {
                version,
                name: b"cn=admin,dc=example,dc=com",
                authentication: auth,
            }));
        }
    }
}

#[test]
fn bind_request_with_unknown_authentication_choice_is_kept_for_auth_method_not_supported() {
    // [1] and [2] were Kerberos v4 choices in LDAPv2.
    let msg = LdapMessage::new(
        1,
        ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: b"",
            authentication: Authentication::Other {
                tag: 0x81,
                contents: b"x",
            },
        }),
    );
    round_trip(&msg);
}

#[test]
fn bind_version_out_of_range_is_an_error_with_message_id() {
    // version 0 and 128.
    for v in [[0x02, 0x01, 0x00].as_slice(), &[0x02, 0x02, 0x00, 0x80]] {
        let mut body = v.to_vec();
        body.extend_from_slice(&[0x04, 0x00, 0x80, 0x00]);
        let mut pdu = vec![0x30, 0, 0x02, 0x01, 0x07, 0x60, body.len() as u8];
        pdu.extend_from_slice(&body);
        pdu[1] = (pdu.len() - 2) as u8;
        let e = LdapMessage::decode(&pdu).unwrap_err();
        assert_eq!(e.message_id, Some(7));
        assert!(matches!(e.kind, DecodeErrorKind::OutOfRange { .. }), "{e}");
        assert_eq!(e.context, "BindRequest.version");
    }
}

#[test]
fn responses_with_every_result_shape() {
    let uris: [&[u8]; 2] = [
        b"ldap://a.example.com/dc=example,dc=com",
        b"ldap://b.example.com/",
    ];
    let results = [
        LdapResult::success(),
        LdapResult::new(ResultCode::NO_SUCH_OBJECT, b"dc=example,dc=com", b"no such entry"),
        LdapResult {
            referral: Some(SeqOf::from_items(&uris)),
            ..LdapResult::new(ResultCode::REFERRAL, b"", b"")
        },
        LdapResult::new(ResultCode(4096), b"", b"a code this crate has no name for"),
    ];
    for r in results {
        op(ProtocolOp::SearchResultDone(r));
        op(ProtocolOp::ModifyResponse(r));
        op(ProtocolOp::AddResponse(r));
        op(ProtocolOp::DelResponse(r));
        op(ProtocolOp::ModifyDnResponse(r));
        op(ProtocolOp::CompareResponse(r));
        op(ProtocolOp::BindResponse(BindResponse {
            result: r,
            server_sasl_creds: None,
        }));
        op(ProtocolOp::BindResponse(BindResponse {
            result: r,
            server_sasl_creds: Some(b"challenge"),
        }));
        op(ProtocolOp::ExtendedResponse(ExtendedResponse {
            result: r,
            name: None,
            value: None,
        }));
        op(ProtocolOp::ExtendedResponse(ExtendedResponse {
            result: r,
            name: Some(exop::WHO_AM_I.as_bytes()),
            value: Some(b"dn:cn=x"),
        }));
    }
}

#[test]
fn empty_referral_is_rejected() {
    // SearchResultDone { success, "", "", referral [3] {} }
    let pdu = [
        0x30, 0x0e, 0x02, 0x01, 0x02, 0x65, 0x09, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00, 0xa3, 0x00,
    ];
    let e = LdapMessage::decode(&pdu[..pdu.len()]).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::Empty);
    assert_eq!(e.message_id, Some(2));
}

#[test]
fn unbind_abandon_delete() {
    let unbind = op(ProtocolOp::UnbindRequest);
    assert_eq!(&unbind[unbind.len() - 2..], [0x42, 0x00]);
    for id in [0, 1, 127, 128, 65535, i32::MAX] {
        op(ProtocolOp::AbandonRequest(AbandonRequest { message_id: id }));
    }
    op(ProtocolOp::DelRequest(DelRequest { dn: b"" }));
    op(ProtocolOp::DelRequest(DelRequest {
        dn: "cn=Ünïcødé,dc=example,dc=com".as_bytes(),
    }));
}

fn search<'a>(filter: Filter<'a>, attributes: SeqOf<'a, &'a [u8]>) -> SearchRequest<'a> {
    SearchRequest {
        base: b"ou=People,dc=example,dc=com",
        scope: SearchScope::Subtree,
        deref_aliases: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter,
        attributes,
    }
}

#[test]
fn search_requests_with_every_scope_deref_and_limit() {
    let f = OwnedFilter::parse("(objectClass=*)").unwrap();
    let attrs: [&[u8]; 4] = [b"*", b"+", b"1.1", b"userCertificate;binary"];
    for scope in [
        SearchScope::Base,
        SearchScope::OneLevel,
        SearchScope::Subtree,
        SearchScope::Subordinate,
    ] {
        for deref in [
            DerefAliases::Never,
            DerefAliases::InSearching,
            DerefAliases::FindingBaseObject,
            DerefAliases::Always,
        ] {
            for (size, time) in [(0, 0), (1, 1), (i32::MAX as u32, 3600)] {
                for types_only in [false, true] {
                    let mut r = search(f.as_filter(), SeqOf::from_items(&attrs));
                    r.scope = scope;
                    r.deref_aliases = deref;
                    r.size_limit = size;
                    r.time_limit = time;
                    r.types_only = types_only;
                    op(ProtocolOp::SearchRequest(r));
                }
            }
        }
    }
    op(ProtocolOp::SearchRequest(search(f.as_filter(), SeqOf::default())));
}

#[test]
fn every_filter_kind_round_trips_through_ber_and_rfc4515() {
    let cases = [
        "(cn=Babs Jensen)",
        "(!(cn=Tim Howes))",
        "(&(objectClass=Person)(|(sn=Jensen)(cn=Babs J*)))",
        "(o=univ*of*mich*)",
        "(seeAlso=)",
        "(cn:caseExactMatch:=Fred Flintstone)",
        "(cn:=Betty Rubble)",
        "(sn:dn:2.4.6.8.10:=Barney Rubble)",
        "(o:dn:=Ace Industry)",
        "(:1.2.3:=Wilma Flintstone)",
        "(:dn:2.4.6.8.10:=Dino)",
        "(o=Parens R Us \\28for all your parenthetical needs\\29)",
        "(cn=*\\2a*)",
        "(filename=C:\\5cMyFile)",
        "(bin=\\00\\00\\00\\04)",
        "(sn=Lu\\c4\\8di\\c4\\87)",
        "(1.3.6.1.4.1.1466.0=\\04\\02\\48\\69)",
        "(uid>=user.1)",
        "(uid<=user.9)",
        "(sn~=smyth)",
        "(mail=*)",
        "(cn=*end)",
        "(cn=start*)",
        "(cn=a*b*c*d)",
        "(cn=**)",
        "(cn=a**b)",
        "(objectclass=*t*t**)",
        "(&)",
        "(|)",
        "(!(&))",
        "(&(a=1)(|(b=2)(!(c=3))(&(d>=4)(e<=5)(f~=6)(g=*)(h=i*j*k)(l:dn:caseIgnoreMatch:=m))))",
    ];
    for text in cases {
        let f = OwnedFilter::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let s = f.as_filter().to_string();
        let again = OwnedFilter::parse(&s).unwrap();
        assert_eq!(again.as_ber(), f.as_ber(), "{text} -> {s}");
        op(ProtocolOp::SearchRequest(search(f.as_filter(), SeqOf::default())));
    }
    // The RFC 4515 examples print back exactly, except that escapes print in lower case.
    assert_eq!(
        OwnedFilter::parse("(o=Parens R Us \\28for all your parenthetical needs\\29)")
            .unwrap()
            .to_string(),
        "(o=Parens R Us \\28for all your parenthetical needs\\29)"
    );
    assert_eq!(
        OwnedFilter::parse("(cn=*\\2A*)").unwrap().to_string(),
        "(cn=*\\2a*)"
    );
}

#[test]
fn filter_nodes_expose_their_parts() {
    let f = OwnedFilter::parse("(&(cn=a*b*c)(sn:dn:1.2.3:=x)(mail=*)(uid>=5))").unwrap();
    let FilterNode::And(set) = f.as_filter().node() else {
        panic!()
    };
    let nodes: Vec<_> = set.iter().map(|f| f.node()).collect();
    let FilterNode::Substrings(s) = nodes[0] else {
        panic!()
    };
    assert_eq!(s.description, b"cn");
    assert_eq!(
        s.substrings.iter().collect::<Vec<_>>(),
        [
            Substring::Initial(b"a"),
            Substring::Any(b"b"),
            Substring::Final(b"c")
        ]
    );
    assert_eq!(
        nodes[1],
        FilterNode::Extensible(MatchingRuleAssertion {
            rule: Some(b"1.2.3"),
            description: Some(b"sn"),
            value: b"x",
            dn_attributes: true
        })
    );
    assert_eq!(nodes[2], FilterNode::Present(b"mail"));
    assert_eq!(
        nodes[3],
        FilterNode::GreaterOrEqual(AttributeValueAssertion {
            description: b"uid",
            value: b"5"
        })
    );
}

#[test]
fn string_filter_errors_name_the_offset() {
    for (text, offset) in [
        ("(cn=a", 5),
        ("(cn=a))", 6),
        ("((cn=a)", 1),
        ("(!(a=1)(b=2))", 7),
        ("(cn=a\\zz)", 5),
        ("(cn=a(b)", 5),
        ("(=a)", 1),
        ("(cn~a)", 4),
        ("(:=x)", 1),
        ("", 0),
        ("(&(a=1)", 7),
    ] {
        let e = OwnedFilter::parse(text).unwrap_err();
        assert_eq!(e.offset, offset, "{text}: {e}");
    }
    assert!(OwnedFilter::parse(&"(!".repeat(64).to_string()).is_err());
    let n = limits::MAX_FILTER_DEPTH;
    let deep = format!("{}(a=b){}", "(!".repeat(n), ")".repeat(n));
    assert!(OwnedFilter::parse(&deep).is_ok());
    let too_deep = format!("{}(a=b){}", "(!".repeat(n + 1), ")".repeat(n + 1));
    assert!(OwnedFilter::parse(&too_deep).is_err());
}

#[test]
fn lenient_filter_strings_like_openldap() {
    let expect = OwnedFilter::parse("(cn=foo)").unwrap();
    assert_eq!(OwnedFilter::parse("cn=foo").unwrap(), expect);
    assert_eq!(OwnedFilter::parse("  (cn=foo)\n").unwrap(), expect);
    assert_eq!(
        OwnedFilter::parse("(cn=a\\*b)").unwrap(),
        OwnedFilter::parse("(cn=a\\2ab)").unwrap()
    );
    assert_eq!(
        OwnedFilter::parse("(& (a=1) (b=2) )").unwrap(),
        OwnedFilter::parse("(&(a=1)(b=2))").unwrap()
    );
}

#[test]
fn unknown_filter_choice_is_kept_as_undefined() {
    // SearchRequest whose filter is [10] (context, primitive) "x".
    let mut b = Vec::new();
    let req = search(Filter::from_ber(&[0x8a, 0x01, b'x']).unwrap(), SeqOf::default());
    LdapMessage::new(3, ProtocolOp::SearchRequest(req)).encode(&mut b);
    let ProtocolOp::SearchRequest(back) = LdapMessage::decode(&b).unwrap().op else {
        panic!()
    };
    assert_eq!(back.filter.node(), FilterNode::Unknown { tag: 0x8a });
    assert_eq!(back.filter.to_string(), "(?=undefined)");
    // A universal tag is not a filter choice at all.
    assert_eq!(
        Filter::from_ber(&[0x04, 0x01, b'x']).unwrap_err().kind,
        DecodeErrorKind::InvalidTag { found: 0x04 }
    );
}

#[test]
fn malformed_ber_filters_are_refused_with_the_reason() {
    let cases: [(&[u8], DecodeErrorKind); 6] = [
        // not with two children
        (
            &[0xa2, 0x06, 0x87, 0x01, b'a', 0x87, 0x01, b'b'],
            DecodeErrorKind::NotArity,
        ),
        // not with none
        (&[0xa2, 0x00], DecodeErrorKind::NotArity),
        // substrings: final before any
        (
            &[
                0xa4, 0x0b, 0x04, 0x01, b'a', 0x30, 0x06, 0x82, 0x01, b'x', 0x81, 0x01, b'y',
            ],
            DecodeErrorKind::SubstringOrder,
        ),
        // substrings with no parts
        (
            &[0xa4, 0x05, 0x04, 0x01, b'a', 0x30, 0x00],
            DecodeErrorKind::Empty,
        ),
        // extensible with neither rule nor type
        (
            &[0xa9, 0x03, 0x83, 0x01, b'v'],
            DecodeErrorKind::ExtensibleMatchIncomplete,
        ),
        // child longer than its parent
        (&[0xa0, 0x03, 0x87, 0x05, b'a'], DecodeErrorKind::Truncated),
    ];
    for (ber, kind) in cases {
        assert_eq!(Filter::from_ber(ber).unwrap_err().kind, kind, "{ber:02x?}");
        // The same filter in a search that was never validated (the access log's decode
        // of a copy it trusts) decodes and prints without a panic.
        let mut pdu = vec![0x30, 0, 0x02, 0x01, 0x07, 0x63, 0];
        pdu.extend_from_slice(&[0x04, 0x00, 0x0a, 0x01, 0x02, 0x0a, 0x01, 0x00]);
        pdu.extend_from_slice(&[0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x01, 0x01, 0x00]);
        pdu.extend_from_slice(ber);
        pdu.extend_from_slice(&[0x30, 0x00]);
        pdu[6] = (pdu.len() - 7) as u8;
        pdu[1] = (pdu.len() - 2) as u8;
        assert_eq!(LdapMessage::decode(&pdu).unwrap_err().kind, kind, "{pdu:02x?}");
        if let Ok(msg) = LdapMessage::decode_validated_before(&pdu) {
            let ProtocolOp::SearchRequest(search) = msg.op else {
                panic!("not a search: {msg:?}");
            };
            let mut text = Vec::new();
            search.filter.write_text(&mut text);
            assert!(!text.is_empty());
        }
    }
}

#[test]
fn search_result_entry_reference_and_the_stored_ber_fast_path() {
    let cn: [&[u8]; 1] = [b"Alice"];
    let empty: [&[u8]; 0] = [];
    let attrs = [
        PartialAttribute {
            description: b"cn",
            values: SeqOf::from_items(&cn),
        },
        PartialAttribute {
            description: b"objectClass",
            values: SeqOf::from_items(&VALS),
        },
        PartialAttribute {
            description: b"typesOnly",
            values: SeqOf::from_items(&empty),
        },
    ];
    let entry = SearchResultEntry {
        object_name: b"uid=alice,dc=example,dc=com",
        attributes: SeqOf::from_items(&attrs),
    };
    let generic = op(ProtocolOp::SearchResultEntry(entry));

    // The same entry from its stored form: the PartialAttribute TLVs back to back.
    let decoded = LdapMessage::decode(&generic).unwrap();
    let ProtocolOp::SearchResultEntry(e) = decoded.op else {
        panic!()
    };
    let stored = e.attributes.as_ber().unwrap();
    let mut fast = Vec::new();
    encode_search_result_entry(&mut fast, 12345, e.object_name, stored);
    assert_eq!(fast, generic);

    // Large entries cross every length boundary.
    for size in [100usize, 200, 300, 70_000] {
        let big = vec![b'x'; size];
        let v: [&[u8]; 1] = [&big];
        let attrs = [PartialAttribute {
            description: b"description",
            values: SeqOf::from_items(&v),
        }];
        let e = SearchResultEntry {
            object_name: b"cn=big",
            attributes: SeqOf::from_items(&attrs),
        };
        let generic = round_trip(&LdapMessage::new(i32::MAX, ProtocolOp::SearchResultEntry(e)));
        let back = LdapMessage::decode(&generic).unwrap();
        let ProtocolOp::SearchResultEntry(e) = back.op else {
            panic!()
        };
        let mut fast = Vec::new();
        encode_search_result_entry(&mut fast, i32::MAX, b"cn=big", e.attributes.as_ber().unwrap());
        assert_eq!(fast, generic, "size {size}");
    }

    let uris: [&[u8]; 2] = [b"ldap://x/", b"ldap://y/dc=y??sub"];
    op(ProtocolOp::SearchResultReference(SearchResultReference {
        uris: SeqOf::from_items(&uris),
    }));
}

#[test]
fn modify_add_moddn_compare() {
    let one: [&[u8]; 1] = [b"5"];
    let none: [&[u8]; 0] = [];
    let changes = [
        Change {
            operation: ModifyOperation::Add,
            modification: PartialAttribute {
                description: b"mail",
                values: SeqOf::from_items(&VALS),
            },
        },
        Change {
            operation: ModifyOperation::Delete,
            modification: PartialAttribute {
                description: b"description",
                values: SeqOf::from_items(&none),
            },
        },
        Change {
            operation: ModifyOperation::Replace,
            modification: PartialAttribute {
                description: b"sn",
                values: SeqOf::from_items(&one),
            },
        },
        Change {
            operation: ModifyOperation::Increment,
            modification: PartialAttribute {
                description: b"uidNumber",
                values: SeqOf::from_items(&one),
            },
        },
    ];
    op(ProtocolOp::ModifyRequest(ModifyRequest {
        object: b"uid=a,dc=x",
        changes: SeqOf::from_items(&changes),
    }));
    op(ProtocolOp::ModifyRequest(ModifyRequest {
        object: b"uid=a,dc=x",
        changes: SeqOf::default(),
    }));

    let attrs = [
        PartialAttribute {
            description: b"objectClass",
            values: SeqOf::from_items(&VALS),
        },
        PartialAttribute {
            description: b"uid",
            values: SeqOf::from_items(&one),
        },
    ];
    op(ProtocolOp::AddRequest(AddRequest {
        entry: b"uid=5,dc=x",
        attributes: SeqOf::from_items(&attrs),
    }));

    for new_superior in [None, Some(&b"ou=New,dc=x"[..]), Some(&b""[..])] {
        for delete_old_rdn in [false, true] {
            op(ProtocolOp::ModifyDnRequest(ModifyDnRequest {
                entry: b"uid=5,dc=x",
                new_rdn: b"uid=6+cn=six",
                delete_old_rdn,
                new_superior,
            }));
        }
    }
    op(ProtocolOp::CompareRequest(CompareRequest {
        entry: b"uid=5,dc=x",
        ava: AttributeValueAssertion {
            description: b"userPassword",
            value: b"\x00secret",
        },
    }));
}

#[test]
fn add_with_an_empty_value_set_is_a_protocol_error() {
    let none: [&[u8]; 0] = [];
    let attrs = [PartialAttribute {
        description: b"cn",
        values: SeqOf::from_items(&none),
    }];
    let mut b = Vec::new();
    LdapMessage::new(
        9,
        ProtocolOp::AddRequest(AddRequest {
            entry: b"cn=x",
            attributes: SeqOf::from_items(&attrs),
        }),
    )
    .encode(&mut b);
    let e = LdapMessage::decode(&b).unwrap_err();
    assert_eq!((e.kind, e.message_id), (DecodeErrorKind::Empty, Some(9)));
}

#[test]
fn unknown_modify_operation_is_refused() {
    let one: [&[u8]; 1] = [b"x"];
    let changes = [Change {
        operation: ModifyOperation::Add,
        modification: PartialAttribute {
            description: b"cn",
            values: SeqOf::from_items(&one),
        },
    }];
    let mut b = Vec::new();
    LdapMessage::new(
        4,
        ProtocolOp::ModifyRequest(ModifyRequest {
            object: b"",
            changes: SeqOf::from_items(&changes),
        }),
    )
    .encode(&mut b);
    let pos = b.windows(3).position(|w| w == [0x0a, 0x01, 0x00]).unwrap();
    b[pos + 2] = 7;
    let e = LdapMessage::decode(&b).unwrap_err();
    assert_eq!(
        (e.kind, e.message_id),
        (DecodeErrorKind::UnknownEnumerated { value: 7 }, Some(4))
    );
}

#[test]
fn extended_and_intermediate() {
    op(ProtocolOp::ExtendedRequest(ExtendedRequest {
        name: exop::START_TLS.as_bytes(),
        value: None,
    }));
    op(ProtocolOp::ExtendedRequest(ExtendedRequest {
        name: b"1.2.3.4",
        value: Some(b""),
    }));
    op(ProtocolOp::IntermediateResponse(IntermediateResponse {
        name: None,
        value: None,
    }));
    op(ProtocolOp::IntermediateResponse(IntermediateResponse {
        name: Some(b"1.2.3"),
        value: Some(b"v"),
    }));
}

/// Builds the raw control for a typed value, sends it in a message with a second, unknown
/// control, and reads it back typed.
macro_rules! control_round_trip {
    ($ty:ident $value:tt, $critical:expr) => {{
        let value = $ty $value;
        let mut buf = Vec::new();
        let control = Control::typed(&value, $critical, &mut buf);
        let controls = [control, Control { oid: b"1.2.3.4.5", critical: false, value: None }];
        let msg = LdapMessage {
            message_id: 77,
            op: ProtocolOp::DelRequest(DelRequest { dn: b"cn=x" }),
            controls: Some(SeqOf::from_items(&controls)),
        };
        let pdu = round_trip(&msg);
        let back = LdapMessage::decode(&pdu).unwrap();
        let first = back.controls().iter().next().unwrap();
        assert_eq!(first.critical, $critical);
        assert_eq!($ty::from_control(&first).unwrap(), value);
    }};
}

#[test]
fn typed_controls() {
    control_round_trip!(
        PagedResults {
            size: 500,
            cookie: b""
        },
        false
    );
    control_round_trip!(
        PagedResults {
            size: 0,
            cookie: b"\x01\x02opaque"
        },
        true
    );
    control_round_trip!(ManageDsaIt {}, true);
    control_round_trip!(PermissiveModify {}, false);
    control_round_trip!(SubtreeDelete {}, true);
    control_round_trip!(
        ProxiedAuthz {
            authz_id: b"dn:uid=bob,dc=example,dc=com"
        },
        true
    );
    control_round_trip!(ProxiedAuthz { authz_id: b"" }, true);
    control_round_trip!(
        SortResponse {
            result: ResultCode::SUCCESS,
            attribute: None
        },
        false
    );
    control_round_trip!(
        SortResponse {
            result: ResultCode::INAPPROPRIATE_MATCHING,
            attribute: Some(b"jpegPhoto")
        },
        false
    );
    control_round_trip!(
        SyncRequest {
            mode: SyncMode::RefreshAndPersist,
            cookie: Some(b"rid=001"),
            reload_hint: true
        },
        true
    );
    control_round_trip!(
        SyncRequest {
            mode: SyncMode::RefreshOnly,
            cookie: None,
            reload_hint: false
        },
        false
    );
    control_round_trip!(
        SyncState {
            state: SyncStateKind::Modify,
            entry_uuid: &[7; 16],
            cookie: Some(b"c")
        },
        false
    );
    control_round_trip!(
        SyncState {
            state: SyncStateKind::Present,
            entry_uuid: &[0; 16],
            cookie: None
        },
        false
    );
    control_round_trip!(
        SyncDone {
            cookie: Some(b"c"),
            refresh_deletes: true
        },
        false
    );
    control_round_trip!(
        SyncDone {
            cookie: None,
            refresh_deletes: false
        },
        false
    );
}

#[test]
fn typed_controls_with_borrowed_parts() {
    let keys = [
        SortKey {
            attribute: b"sn",
            ordering_rule: None,
            reverse: false,
        },
        SortKey {
            attribute: b"cn",
            ordering_rule: Some(b"caseIgnoreOrderingMatch"),
            reverse: true,
        },
    ];
    let sort = SortRequest {
        keys: SeqOf::from_items(&keys),
    };
    let mut buf = Vec::new();
    let c = Control::typed(&sort, true, &mut buf);
    assert_eq!(SortRequest::from_control(&c).unwrap(), sort);

    let f = OwnedFilter::parse("(&(objectClass=person)(!(employeeType=retired)))").unwrap();
    let assertion = Assertion {
        filter: f.as_filter(),
    };
    let mut buf = Vec::new();
    let c = Control::typed(&assertion, true, &mut buf);
    assert_eq!(Assertion::from_control(&c).unwrap(), assertion);

    let attrs: [&[u8]; 2] = [b"cn", b"entryUUID"];
    let pre = PreReadRequest {
        attributes: SeqOf::from_items(&attrs),
    };
    let mut buf = Vec::new();
    let c = Control::typed(&pre, false, &mut buf);
    assert_eq!(c.oid, oid::PRE_READ.as_bytes());
    assert_eq!(PreReadRequest::from_control(&c).unwrap(), pre);
    let post = PostReadRequest {
        attributes: SeqOf::from_items(&attrs),
    };
    let mut buf = Vec::new();
    let c = Control::typed(&post, false, &mut buf);
    assert_eq!(PostReadRequest::from_control(&c).unwrap(), post);
    // The wrong typed reader refuses a control with another OID.
    assert!(PreReadRequest::from_control(&c).is_err());

    let cn: [&[u8]; 1] = [b"x"];
    let pa = [PartialAttribute {
        description: b"cn",
        values: SeqOf::from_items(&cn),
    }];
    let entry = SearchResultEntry {
        object_name: b"cn=x,dc=y",
        attributes: SeqOf::from_items(&pa),
    };
    for critical in [false, true] {
        let mut buf = Vec::new();
        let c = Control::typed(&PostReadResponse { entry }, critical, &mut buf);
        assert_eq!(PostReadResponse::from_control(&c).unwrap().entry, entry);
        let mut buf = Vec::new();
        let c = Control::typed(&PreReadResponse { entry }, critical, &mut buf);
        assert_eq!(PreReadResponse::from_control(&c).unwrap().entry, entry);
    }
}

#[test]
fn malformed_control_values_are_refused() {
    let bad: [(&[u8], Option<&[u8]>); 6] = [
        (oid::PAGED_RESULTS.as_bytes(), None),
        (
            oid::PAGED_RESULTS.as_bytes(),
            Some(&[0x30, 0x03, 0x02, 0x01, 0x05]),
        ),
        (oid::MANAGE_DSA_IT.as_bytes(), Some(b"x")),
        (oid::SORT_REQUEST.as_bytes(), Some(&[0x30, 0x00])),
        (
            oid::SYNC_STATE.as_bytes(),
            Some(&[0x30, 0x06, 0x0a, 0x01, 0x01, 0x04, 0x01, 0x00]),
        ),
        (oid::ASSERTION.as_bytes(), Some(&[0xa2, 0x00])),
    ];
    let results = [
        PagedResults::from_control(&Control {
            oid: bad[0].0,
            critical: true,
            value: bad[0].1,
        })
        .is_err(),
        PagedResults::from_control(&Control {
            oid: bad[1].0,
            critical: true,
            value: bad[1].1,
        })
        .is_err(),
        ManageDsaIt::from_control(&Control {
            oid: bad[2].0,
            critical: true,
            value: bad[2].1,
        })
        .is_err(),
        SortRequest::from_control(&Control {
            oid: bad[3].0,
            critical: true,
            value: bad[3].1,
        })
        .is_err(),
        SyncState::from_control(&Control {
            oid: bad[4].0,
            critical: true,
            value: bad[4].1,
        })
        .is_err(),
        Assertion::from_control(&Control {
            oid: bad[5].0,
            critical: true,
            value: bad[5].1,
        })
        .is_err(),
    ];
    assert_eq!(results, [true; 6]);
}

#[test]
fn sync_info_messages() {
    let uuids: [&[u8]; 2] = [&[1; 16], &[2; 16]];
    for info in [
        SyncInfo::NewCookie(b"rid=001,csn=20261122"),
        SyncInfo::RefreshDelete {
            cookie: None,
            refresh_done: true,
        },
        SyncInfo::RefreshDelete {
            cookie: Some(b"c"),
            refresh_done: false,
        },
        SyncInfo::RefreshPresent {
            cookie: Some(b"c"),
            refresh_done: true,
        },
        SyncInfo::SyncIdSet {
            cookie: None,
            refresh_deletes: true,
            uuids: SeqOf::from_items(&uuids),
        },
    ] {
        let mut value = Vec::new();
        info.encode(&mut value);
        assert_eq!(SyncInfo::decode(&value).unwrap(), info);
        op(ProtocolOp::IntermediateResponse(IntermediateResponse {
            name: Some(oid::SYNC_INFO.as_bytes()),
            value: Some(&value),
        }));
    }
    // A UUID of the wrong length.
    assert!(SyncInfo::decode(&[0xa3, 0x05, 0x31, 0x03, 0x04, 0x01, 0x00]).is_err());
}

macro_rules! exop_round_trip {
    ($ty:ident $value:expr) => {{
        let value: $ty = $value;
        let mut buf = Vec::new();
        let req = value.to_request(&mut buf);
        let pdu = op(ProtocolOp::ExtendedRequest(req));
        let ProtocolOp::ExtendedRequest(back) = LdapMessage::decode(&pdu).unwrap().op else {
            panic!()
        };
        assert_eq!(back.name, $ty::OID.as_bytes());
        assert_eq!($ty::decode_value(back.value).unwrap(), value);
    }};
}

#[test]
fn extended_operation_values() {
    exop_round_trip!(CancelRequest CancelRequest { cancel_id: 42 });
    exop_round_trip!(PasswordModifyRequest PasswordModifyRequest::default());
    exop_round_trip!(PasswordModifyRequest PasswordModifyRequest {
        user_identity: Some(b"uid=alice,dc=example,dc=com"),
        old_password: Some(b"old"),
        new_password: Some(b"new"),
    });
    exop_round_trip!(PasswordModifyRequest PasswordModifyRequest { user_identity: None, old_password: None, new_password: Some(b"n") });
    // Responses.
    for resp in [
        PasswordModifyResponse {
            generated_password: Some(b"gen-pw"),
        },
        PasswordModifyResponse::default(),
    ] {
        let mut v = Vec::new();
        let has = resp.encode_value(&mut v);
        assert_eq!(
            PasswordModifyResponse::decode_value(has.then_some(&v[..])).unwrap(),
            resp
        );
    }
    let who = WhoAmIResponse {
        authz_id: b"dn:cn=admin,dc=example,dc=com",
    };
    let mut v = Vec::new();
    who.encode_value(&mut v);
    assert_eq!(WhoAmIResponse::decode_value(Some(&v)).unwrap(), who);
    assert_eq!(WhoAmIResponse::decode_value(None).unwrap().authz_id, b"");
    // A value with no value is not a cancel.
    assert!(CancelRequest::decode_value(None).is_err());
    // Larch's backup: the request's exact octets, the response round trip, bad values.
    exop_round_trip!(BackupRequest BackupRequest { directory: b"/var/backups/larch" });
    let mut v = Vec::new();
    BackupRequest { directory: b"/b" }.encode_value(&mut v);
    assert_eq!(v, [0x30, 0x04, 0x80, 0x02, b'/', b'b']);
    assert!(BackupRequest::decode_value(None).is_err());
    assert!(BackupRequest::decode_value(Some(&[0x30, 0x00])).is_err());
    let done = BackupResponse {
        snapshot_lsn: 1_000_000,
        end_lsn: 1_000_042,
        entries: 1_000_002,
        octets: 512 << 20,
        milliseconds: 4_321,
    };
    let mut v = Vec::new();
    assert!(done.encode_value(&mut v));
    assert_eq!(BackupResponse::decode_value(Some(&v)).unwrap(), done);
    // A negative count is refused.
    assert!(BackupResponse::decode_value(Some(&[
        0x30, 0x0f, 0x80, 0x01, 0xff, 0x81, 0x01, 0, 0x82, 0x01, 0, 0x83, 0x01, 0, 0x84, 0x01, 0
    ]))
    .is_err());
    // Password Modify with no request value at all is valid (RFC 3062).
    assert_eq!(
        PasswordModifyRequest::decode_value(None).unwrap(),
        PasswordModifyRequest::default()
    );
}

#[test]
fn notice_of_disconnection() {
    let mut b = Vec::new();
    exop::notice_of_disconnection(b"bad PDU").encode(&mut b);
    let msg = LdapMessage::decode(&b).unwrap();
    assert_eq!(msg.message_id, 0);
    let ProtocolOp::ExtendedResponse(r) = msg.op else {
        panic!()
    };
    assert_eq!(r.result.code, ResultCode::PROTOCOL_ERROR);
    assert_eq!(r.name, Some(exop::NOTICE_OF_DISCONNECTION.as_bytes()));
}

/// Exact octets from RFC 4511's grammar, worked out by hand.
#[test]
fn known_encodings() {
    // Anonymous simple bind, message 1.
    let bind = [
        0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00,
    ];
    let msg = LdapMessage::new(
        1,
        ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: b"",
            authentication: Authentication::Simple(b""),
        }),
    );
    assert_eq!(round_trip(&msg), bind);

    // Search base "", scope base, (objectClass=*), attrs [supportedLDAPVersion], message 2.
    let f = OwnedFilter::parse("(objectClass=*)").unwrap();
    let attrs: [&[u8]; 1] = [b"supportedLDAPVersion"];
    let req = SearchRequest {
        base: b"",
        scope: SearchScope::Base,
        deref_aliases: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter: f.as_filter(),
        attributes: SeqOf::from_items(&attrs),
    };
    let mut expected = vec![0x30, 0x3b, 0x02, 0x01, 0x02, 0x63, 0x36];
    expected.extend_from_slice(&[
        0x04, 0x00, 0x0a, 0x01, 0x00, 0x0a, 0x01, 0x00, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00,
    ]);
    expected.extend_from_slice(&[0x01, 0x01, 0x00, 0x87, 0x0b]);
    expected.extend_from_slice(b"objectClass");
    expected.extend_from_slice(&[0x30, 0x16, 0x04, 0x14]);
    expected.extend_from_slice(b"supportedLDAPVersion");
    assert_eq!(
        round_trip(&LdapMessage::new(2, ProtocolOp::SearchRequest(req))),
        expected
    );
}

#[test]
fn lenient_where_rfc4511_allows() {
    // Non-minimal long-form lengths (with leading zeros) and a BOOLEAN TRUE of 0x01.
    let lenient = [
        0x30, 0x84, 0x00, 0x00, 0x00, 0x0d, 0x02, 0x01, 0x05, 0x4a, 0x82, 0x00, 0x04, b'c', b'n', b'=', b'x',
        0xa0, 0x00,
    ];
    let msg = LdapMessage::decode(&lenient).unwrap();
    assert_eq!(msg.op, ProtocolOp::DelRequest(DelRequest { dn: b"cn=x" }));
    assert_eq!(msg.controls.map(|c| c.len()), Some(0));
    let ctrl = [0x30, 0x07, 0x04, 0x02, b'1', b'2', 0x01, 0x01, 0x01];
    let mut pdu = vec![0x30, 0x00, 0x02, 0x01, 0x01, 0x42, 0x00, 0xa0, ctrl.len() as u8];
    pdu.extend_from_slice(&ctrl);
    pdu[1] = (pdu.len() - 2) as u8;
    let msg = LdapMessage::decode(&pdu).unwrap();
    assert!(msg.controls().iter().next().unwrap().critical);
}

#[test]
fn decode_errors_carry_the_message_id_and_say_what_was_wrong() {
    // Unknown protocolOp [APPLICATION 30].
    let e = LdapMessage::decode(&[0x30, 0x05, 0x02, 0x01, 0x2a, 0x5e, 0x00]).unwrap_err();
    assert_eq!(
        (e.kind, e.message_id),
        (DecodeErrorKind::UnknownOperation { tag: 0x5e }, Some(42))
    );
    assert_eq!(
        e.to_string(),
        "LDAPMessage.protocolOp: 0x5e is not an LDAP operation"
    );
    // Octets after the operation that do not form an element (a NULL declaring 5 octets).
    let e = LdapMessage::decode(&[0x30, 0x08, 0x02, 0x01, 0x03, 0x42, 0x00, 0x05, 0x05, 0x00]).unwrap_err();
    assert_eq!((e.kind, e.message_id), (DecodeErrorKind::TrailingData, Some(3)));
    // Negative message ID: no ID to answer with.
    let e = LdapMessage::decode(&[0x30, 0x05, 0x02, 0x01, 0xff, 0x42, 0x00]).unwrap_err();
    assert_eq!(e.message_id, None);
    assert!(matches!(e.kind, DecodeErrorKind::OutOfRange { value: -1 }));
    // Indefinite length.
    let e = LdapMessage::decode(&[0x30, 0x80, 0x02, 0x01, 0x01, 0x42, 0x00, 0x00, 0x00]).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::IndefiniteLength);
    // Scope 4.
    let f = OwnedFilter::parse("(a=*)").unwrap();
    let mut b = Vec::new();
    LdapMessage::new(
        8,
        ProtocolOp::SearchRequest(search(f.as_filter(), SeqOf::default())),
    )
    .encode(&mut b);
    let pos = b.windows(3).position(|w| w == [0x0a, 0x01, 0x02]).unwrap();
    b[pos + 2] = 4;
    let e = LdapMessage::decode(&b).unwrap_err();
    assert_eq!(
        (e.kind, e.message_id, e.context),
        (
            DecodeErrorKind::UnknownEnumerated { value: 4 },
            Some(8),
            "SearchRequest.scope"
        )
    );
}

#[test]
fn framing_refuses_before_buffering() {
    use frame::{frame, Frame};
    assert_eq!(frame(&[], 100).unwrap(), Frame::Incomplete { total: None });
    assert_eq!(frame(&[0x30], 100).unwrap(), Frame::Incomplete { total: None });
    assert_eq!(
        frame(&[0x30, 0x82, 0x01], 1000).unwrap(),
        Frame::Incomplete { total: None }
    );
    assert_eq!(
        frame(&[0x30, 0x82, 0x01, 0x00], 1000).unwrap(),
        Frame::Incomplete { total: Some(260) }
    );
    let e = frame(&[0x30, 0x82, 0x01, 0x00], 259).unwrap_err();
    assert_eq!(
        e.kind,
        DecodeErrorKind::PduTooLarge {
            declared: 260,
            limit: 259
        }
    );
    assert_eq!(
        frame(&[0x31, 0x00], 100).unwrap_err().kind,
        DecodeErrorKind::UnexpectedTag {
            expected: 0x30,
            found: 0x31
        }
    );
    assert_eq!(
        frame(&[0x30, 0x80], 100).unwrap_err().kind,
        DecodeErrorKind::IndefiniteLength
    );
    assert_eq!(
        frame(&[0x30, 0xff], 100).unwrap_err().kind,
        DecodeErrorKind::LengthTooLong
    );
    // 2^64 - 1 declared.
    let huge = [0x30, 0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    assert!(matches!(
        frame(&huge, limits::DEFAULT_MAX_PDU_BYTES).unwrap_err().kind,
        DecodeErrorKind::PduTooLarge { .. }
    ));
}

#[test]
fn filters_with_descriptions_no_string_can_express_never_print_as_another_filter() {
    // Found by the decode_pdu fuzz target: a presence test on "objectClas~" printed as
    // "(objectClas~=*)", which reads as an approximate match.
    let f = Filter::from_ber(b"\x87\x0bobjectClas~").unwrap();
    let text = f.to_string();
    assert_eq!(text, "(objectClas\\7e=*)");
    assert!(OwnedFilter::parse(&text).is_err());
    let f = Filter::from_ber(b"\xa3\x08\x04\x03a=b\x04\x01c").unwrap();
    assert_eq!(f.to_string(), "(a\\3db=c)");
    // Substrings of only an empty initial and/or final must not print as a presence test.
    for ber in [
        &b"\xa4\x07\x04\x01a\x30\x02\x80\x00"[..],
        b"\xa4\x09\x04\x01a\x30\x04\x80\x00\x82\x00",
    ] {
        let f = Filter::from_ber(ber).unwrap();
        assert_eq!(f.to_string(), "(a=**)");
    }
}

/// RFC 4511 section 4: "clients and servers MUST (unless otherwise specified) ignore
/// trailing SEQUENCE components whose tags they do not recognize."
#[test]
fn unknown_trailing_sequence_components_are_ignored() {
    let cases: [(&[u8], &str); 5] = [
        (
            &[0x30, 0x07, 0x02, 0x01, 0x03, 0x42, 0x00, 0x05, 0x00],
            "LDAPMessage",
        ),
        (
            &[
                0x30, 0x0e, 0x02, 0x01, 0x01, 0x60, 0x09, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00, 0x89,
                0x00,
            ],
            "BindRequest",
        ),
        (
            &[
                0x30, 0x0e, 0x02, 0x01, 0x01, 0x6b, 0x09, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00, 0x89,
                0x00,
            ],
            "DelResponse",
        ),
        (
            &[
                0x30, 0x0e, 0x02, 0x01, 0x01, 0x42, 0x00, 0xa0, 0x07, 0x30, 0x05, 0x04, 0x01, 0x31, 0x89,
                0x00,
            ],
            "Control",
        ),
        (
            &[
                0x30, 0x0c, 0x02, 0x01, 0x01, 0x77, 0x07, 0x80, 0x03, 0x31, 0x2e, 0x32, 0x89, 0x00,
            ],
            "ExtendedRequest",
        ),
    ];
    for (pdu, what) in cases {
        let msg = LdapMessage::decode(pdu).unwrap_or_else(|e| panic!("{what}: {e}"));
        // What was understood survives re-encoding. (Components of the message's own
        // SEQUENCEs are dropped; lists decoded as BER, such as controls, are copied as is.)
        let mut again = Vec::new();
        msg.encode(&mut again);
        assert_eq!(LdapMessage::decode(&again).unwrap(), msg, "{what}");
    }
    // A filter is a CHOICE, not a SEQUENCE: octets after it inside an and are a child.
    let f = OwnedFilter::parse("(&(a=1))").unwrap();
    assert_eq!(f.as_filter().to_string(), "(&(a=1))");
}
