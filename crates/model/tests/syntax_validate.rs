//! Every syntax of the registry with valid and invalid values (RFC 4517 examples first,
//! then edge cases). A syntax added to the registry without a row here fails
//! `every_syntax_has_examples`.

use larch_model::syntax;

/// Shorthand for the RFC 4517 syntax OIDs.
fn rfc(suffix: u32) -> String {
    format!("1.3.6.1.4.1.1466.115.121.1.{suffix}")
}

struct Case {
    oid: String,
    valid: Vec<Vec<u8>>,
    invalid: Vec<Vec<u8>>,
}

fn case(oid: String, valid: &[&[u8]], invalid: &[&[u8]]) -> Case {
    Case {
        oid,
        valid: valid.iter().map(|v| v.to_vec()).collect(),
        invalid: invalid.iter().map(|v| v.to_vec()).collect(),
    }
}

/// A DER SEQUENCE wrapping `len` zero octets.
fn der(len: usize) -> Vec<u8> {
    let mut v = vec![0x30];
    if len < 0x80 {
        v.push(len as u8);
    } else if len < 0x100 {
        v.extend_from_slice(&[0x81, len as u8]);
    } else {
        v.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
    }
    v.extend(std::iter::repeat_n(0u8, len));
    v
}

fn cases() -> Vec<Case> {
    let cert_valid = der(300);
    let mut cert_short = der(300);
    cert_short.pop();
    let cert_valid: &[u8] = &cert_valid;
    let cert_short: &[u8] = &cert_short;
    let permissive = |n: u32| {
        case(
            rfc(n),
            &[b"anything at all", "ünïcode".as_bytes()],
            &[b"", &[0xff, 0xfe]],
        )
    };
    vec![
        permissive(1),
        case(
            rfc(3),
            &[
                b"( 2.5.4.3 NAME 'cn' SUP name )",
                b"( 2.5.18.1 NAME 'createTimestamp' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE NO-USER-MODIFICATION USAGE directoryOperation )",
                b"( 1.2.3 NAME ( 'a' 'b-2' ) DESC 'x' X-ORIGIN 'test' )",
            ],
            &[b"", b"( cn )", b"( 2.5.4.3 NAME cn )", b"( 2.5.4.3 FOO bar )", b"( 2.5.4.3 SYNTAX 1.2{ )"],
        ),
        case(rfc(4), &[b"\x00\x01"], &[b""]),
        case(rfc(5), &[b"", b"\xff"], &[]),
        case(rfc(6), &[b"'0101111101'B", b"''B", b"'1'B"], &[b"0101", b"'012'B", b"'01'b", b"'01'", b""]),
        case(rfc(7), &[b"TRUE", b"FALSE"], &[b"true", b"False", b"1", b"", b"TRUE "]),
        case(rfc(8), &[cert_valid], &[cert_short, b"", b"\x31\x00", b"\x30\x80\x00\x00"]),
        case(rfc(9), &[cert_valid], &[cert_short, b""]),
        case(rfc(10), &[cert_valid], &[cert_short, b""]),
        case(rfc(11), &[b"US", b"AU", b"gb"], &[b"USA", b"U", b"", b"U_", "ÜS".as_bytes()]),
        case(
            rfc(12),
            &[
                b"UID=jsmith,DC=example,DC=net",
                b"OU=Sales+CN=J.  Smith,DC=example,DC=net",
                b"CN=James \\\"Jim\\\" Smith\\, III,DC=example,DC=net",
                b"CN=Before\\0dAfter,DC=example,DC=net",
                b"1.3.6.1.4.1.1466.0=#04024869",
                b"CN=Lu\\C4\\8Di\\C4\\87",
                b"",
                b"cn=foo, dc=example, dc=com",
                b"cn=a=b",
            ],
            &[b"cn", b"cn=a,", b"cn=a;dc=b", b"cn=<x>", b"cn=\\zz", b"cn=\\ff", b",", b"c n=a", b"cn=a\x00b"],
        ),
        permissive(13),
        case(rfc(14), &[b"telephone", b"telephone $ videotex", b"any$mhs $physical"], &[b"pigeon", b"", b"any $$ mhs"]),
        case(rfc(15), &[b"This is a string of DirectoryString containing #!,$%&*+", "Ωμέγα".as_bytes(), b" "], &[b"", &[0xc3], &[0xed, 0xa0, 0x80]]),
        case(
            rfc(16),
            &[b"( 2.5.6.4 DESC 'content rule for organization' NOT ( x121Address $ telexNumber ) )"],
            &[b"( 2.5.6.4 APPLIES cn )", b""],
        ),
        case(
            rfc(17),
            &[b"( 2 DESC 'organization structure rule' FORM 2.5.15.3 )", b"( 3 FORM 2.5.15.4 SUP ( 1 2 ) )"],
            &[b"( 2 DESC 'no form' )", b"( 2.5 FORM 2.5.15.3 )"],
        ),
        permissive(19),
        permissive(20),
        case(
            rfc(21),
            &[b"person#(sn$EQ)#oneLevel", b"2.5.6.6 # sn$EQ|!cn$APPROX&?true # wholeSubtree"],
            &[b"person#(sn$EQ)", b"person#(sn$EQ)#somewhere", b"person#(sn$EQ#baseobject", b""],
        ),
        case(
            rfc(22),
            &[b"+61 3 9896 7801", b"+81 3 347 7418$fineResolution", b"+1 555 1212$twoDimensional$b4Width"],
            &[b"+61 3 9896 7801$wideScreen", b"", b"$fineResolution", b"555#1212"],
        ),
        case(rfc(23), &[b"\x00"], &[b""]),
        case(
            rfc(24),
            &[
                b"199412161032Z",
                b"199412160532-0500",
                b"2004022912Z",
                b"20000229235960Z",
                b"20240101000000.123456789Z",
                b"2024010100,5+0530",
                b"20240101000000-14",
            ],
            &[
                b"199412161032",
                b"19941216103Z",
                b"20230229120000Z",
                b"19941316103200Z",
                b"19941216243200Z",
                b"19941216103261Z",
                b"19941216103200.Z",
                b"19941216103200+2400",
                b"19941216103200+05000",
                b"199412161032ZZ",
                b"",
            ],
        ),
        case(rfc(25), &[b"person#sn$EQ", b"(sn$EQ)|(cn$SUBSTR)"], &[b"person#", b"sn$NE", b"(sn$EQ"]),
        case(rfc(26), &[b"", b"jsmith@example.com", b"tab\tand\x7f"], &[&[0x80], "é".as_bytes()]),
        case(rfc(27), &[b"0", b"-1", b"123", b"-9876543210987654321098765432109876543210"], &[b"", b"00", b"01", b"-0", b"+1", b"-", b"1.0", b" 1", b"1e3"]),
        case(rfc(28), &[b"\xff\xd8\xff\xe0\x00\x10JFIF"], &[b"", b"GIF89a", b"\xff\xd8"]),
        case(
            rfc(30),
            &[b"( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )"],
            &[b"( 2.5.13.2 NAME 'caseIgnoreMatch' )", b"( 2.5.13.2 SYNTAX directoryString )"],
        ),
        case(
            rfc(31),
            &[b"( 2.5.13.16 APPLIES ( givenName $ surname ) )", b"( 2.5.13.2 APPLIES cn )"],
            &[b"( 2.5.13.16 )", b"( 2.5.13.16 APPLIES ( ) )"],
        ),
        case(
            rfc(34),
            &[b"1.3.6.1.4.1.1466.0=#04024869,O=Test,C=GB#'0101'B", b"cn=Babs Jensen", b"cn=x#'0'B"],
            &[b"x#'01'B", b"#'0101'B,", b"x", b"cn=a,#'01'B"],
        ),
        case(
            rfc(35),
            &[b"( 2.5.15.3 NAME 'orgNameForm' OC organization MUST o )"],
            &[b"( 2.5.15.3 NAME 'orgNameForm' MUST o )"],
        ),
        case(rfc(36), &[b"15 079 672 281", b"0", b" "], &[b"", b"12a", b"1-2", b"+1"]),
        case(
            rfc(37),
            &[b"( 2.5.6.2 NAME 'country' SUP top STRUCTURAL MUST c MAY ( searchGuide $ description ) )"],
            &[b"( 2.5.6.2 NAME 'country' SUP top STRUCTURAL AUXILIARY )", b"( 2.5.6.2 MUST ( c $ ) )"],
        ),
        case(rfc(38), &[b"1.2.3.4", b"cn", b"2.5.4.3", b"x-y-2"], &[b"", b"1", b"1..2", b"1.02", b"2cn", b"c_n", b".1.2", b"cn "]),
        case(rfc(39), &[b"MSN$alice@example.com", b"x$"], &[b"MSN", b"$x", b"M\xc3\xa9$x", "MSN$ü".as_bytes()]),
        case(rfc(40), &[b"", b"\x00\xff"], &[]),
        case(
            rfc(41),
            &[b"1234 Main St.$Anytown, CA 12345$USA", b"\\241,000,000 Sweepstakes$PO Box 1000000$Anytown, CA 12345$USA", b"a\\5Cb"],
            &[b"", b"a$$b", b"a$", b"a\\b", &[0xff]],
        ),
        permissive(42),
        permissive(43),
        case(rfc(44), &[b"This is a PrintableString", b"(+1) 555-0000?"], &[b"", b"a@b", b"under_score", "é".as_bytes(), b"tab\t"]),
        case(rfc(45), &[b"{ base \"ou=people\" }", b"{}"], &[b"", b"base", b"{ { }", b"{ } }", b"{ \"}\" "]),
        permissive(46),
        permissive(47),
        permissive(48),
        case(rfc(49), &[cert_valid], &[b"", cert_short]),
        case(rfc(50), &[b"+1 512 315 0280", b"+1-512-315-0280", b"+61 3 9896 7830"], &[b"", b"+1 512 315 0280 #1", b"+1\t512"]),
        permissive(51),
        case(rfc(52), &[b"817379$ca$ACME"], &[b"817379$ca", b"817379$ca$ACME$x", b"$$", b"817_379$ca$ACME"]),
        case(
            rfc(53),
            &[b"9412161032Z", b"9412161032", b"941216103259-0500", b"0002291200+0000"],
            &[b"9412161032-05", b"941216103260Z", b"9902291200Z", b"94121610", b"941216103259.5Z"],
        ),
        case(
            rfc(54),
            &[b"( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' )", b"( 1.2.3 X-NOT-HUMAN-READABLE 'TRUE' )"],
            &[b"( 1.2.3 NAME 'x' )", b"1.2.3"],
        ),
        permissive(55),
        permissive(56),
        permissive(57),
        case(
            rfc(58),
            &[b"foo*bar", b"*foo", b"foo*", b"*a*b*", b"a\\2Ab", b"foo"],
            &[b"*", b"**", b"a**b", b"a\\2b", b"", &[0xff, b'*']],
        ),
        case(
            "1.3.6.1.1.1.0.0".into(),
            &[b"(host,user,domain)", b"(,user,)", b"(-,-,-)"],
            &[b"host,user,domain", b"(host,user)", b"(a,b,c,d)", b"((a,b,c)"],
        ),
        case(
            "1.3.6.1.1.1.0.1".into(),
            &[b"root=server:/export/root", b"swap=s:/x"],
            &[b"=server:/x", b"root", b"root=server", "r=é:/".as_bytes()],
        ),
        case(
            "1.3.6.1.1.16.1".into(),
            &[b"597ae2f6-16a6-1027-98f4-d28b5365dc14", b"597AE2F6-16A6-1027-98F4-D28B5365DC14"],
            &[b"597ae2f616a6102798f4d28b5365dc14", b"597ae2f6-16a6-1027-98f4-d28b5365dc1", b"597ae2f6-16a6-1027-98f4-d28b5365dc1g"],
        ),
        permissive(2),
        permissive(18),
    ]
}

#[test]
fn every_syntax_has_examples() {
    let cases = cases();
    for s in syntax::all() {
        let c = cases.iter().find(|c| c.oid == s.oid);
        assert!(c.is_some(), "no examples for {} ({})", s.oid, s.description);
    }
    assert_eq!(
        cases.len(),
        syntax::all().len(),
        "examples for a syntax that is not registered"
    );
}

#[test]
fn valid_and_invalid_values() {
    for c in cases() {
        let s = syntax::lookup(&c.oid).unwrap_or_else(|| panic!("{} not registered", c.oid));
        for v in &c.valid {
            assert!(
                s.validate(v),
                "{} ({}) should accept {:?}",
                s.oid,
                s.description,
                String::from_utf8_lossy(v)
            );
        }
        for v in &c.invalid {
            assert!(
                !s.validate(v),
                "{} ({}) should refuse {:?}",
                s.oid,
                s.description,
                String::from_utf8_lossy(v)
            );
        }
    }
}

#[test]
fn binary_syntaxes_are_flagged() {
    for (suffix, binary_transfer) in [
        (4, false),
        (5, false),
        (8, true),
        (9, true),
        (10, true),
        (23, false),
        (28, false),
        (49, true),
    ] {
        let s = syntax::lookup(&rfc(suffix)).unwrap();
        assert!(!s.human_readable, "{}", s.description);
        assert_eq!(s.binary_transfer_required, binary_transfer, "{}", s.description);
    }
    for s in syntax::all() {
        if s.binary_transfer_required {
            assert!(!s.human_readable);
        }
    }
    let cert = syntax::lookup(&rfc(8)).unwrap().definition();
    assert_eq!(
        cert,
        "( 1.3.6.1.4.1.1466.115.121.1.8 DESC 'Certificate' X-BINARY-TRANSFER-REQUIRED 'TRUE' X-NOT-HUMAN-READABLE 'TRUE' )"
    );
    assert_eq!(
        syntax::lookup(&rfc(15)).unwrap().definition(),
        "( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' )"
    );
}

#[test]
fn lookup_is_exact() {
    assert!(syntax::lookup("1.3.6.1.4.1.1466.115.121.1.15").is_some());
    for bad in [
        "",
        " 1.3.6.1.4.1.1466.115.121.1.15",
        "1.3.6.1.4.1.1466.115.121.1.15 ",
        "1.3.6.1.4.1.1466.115.121.1.15{64}",
        "Directory String",
        "1.3.6.1.4.1.1466.115.121.1.999",
    ] {
        assert!(syntax::lookup(bad).is_none(), "{bad:?}");
    }
}

#[test]
fn validators_survive_hostile_input() {
    // Long, deep, or truncated inputs: no panic, bounded time.
    let deep_guide = format!("{}sn$EQ{}", "(".repeat(100_000), ")".repeat(100_000));
    let long_dn = "cn=a,".repeat(50_000) + "cn=a";
    let plus_dn = "cn=a+".repeat(50_000) + "cn=a";
    let long_time = format!("20240101000000.{}Z", "9".repeat(100_000));
    let many_parens = "( 1.2.3 NAME ".to_string() + &"(".repeat(100_000);
    let inputs: Vec<Vec<u8>> = vec![
        deep_guide.into_bytes(),
        long_dn.into_bytes(),
        plus_dn.into_bytes(),
        long_time.into_bytes(),
        many_parens.into_bytes(),
        vec![0xff; 10_000],
        vec![b'\\'; 10_001],
        vec![b'\''; 10_001],
        vec![b'$'; 10_001],
        vec![b'#'; 10_001],
    ];
    for s in syntax::all() {
        for v in &inputs {
            let _ = s.validate(v);
            for cut in [0, 1, 2, 3, 7, 13] {
                let _ = s.validate(&v[..cut.min(v.len())]);
            }
        }
    }
    assert!(syntax::lookup(&rfc(24))
        .unwrap()
        .validate(format!("20240101000000.{}Z", "9".repeat(100_000)).as_bytes()));
}
