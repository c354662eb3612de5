//! Table tests of the description grammar: the variations real schema files use, which
//! must parse to the same element as the canonical form, and every error, with its line
//! and column.

use larch_model::schema::{
    parse_element, AttributeTypeDescription, AttributeUsage, Element, ElementKind, Extension,
    ObjectClassKind, ParseErrorKind,
};

use ElementKind::{AttributeType as AT, ObjectClass as OC};

fn at(text: &str) -> AttributeTypeDescription {
    match parse_element(AT, text) {
        Ok(Element::AttributeType(d)) => d,
        other => panic!("{text:?}: {other:?}"),
    }
}

/// Each row: a canonical description and spellings of it that real files use.
#[test]
fn variations_parse_to_the_canonical_element() {
    let table: &[(ElementKind, &str, &[&str])] = &[
        (
            AT,
            "( 2.5.4.3 NAME ( 'cn' 'commonName' ) SUP name )",
            &[
                "(2.5.4.3 NAME('cn' 'commonName')SUP name)",
                "(\n\t2.5.4.3\n\tNAME ( 'cn'\t'commonName' )\n\tSUP name\n)",
                "( 2.5.4.3 name ( 'cn' 'commonName' ) sup name )",
                "( '2.5.4.3' NAME ( cn commonName ) SUP 'name' )",
                "( 2.5.4.3 SUP name NAME ( 'cn' 'commonName' ) )",
                "   ( 2.5.4.3 NAME ( 'cn' 'commonName' ) SUP name )   ",
            ],
        ),
        (
            AT,
            "( 1.2.3 NAME 'x' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32} )",
            &[
                "( 1.2.3 NAME 'x' SYNTAX '1.3.6.1.4.1.1466.115.121.1.15{32}' )",
                "( 1.2.3 NAME 'x' SYNTAX '1.3.6.1.4.1.1466.115.121.1.15'{32} )",
                "( 1.2.3 NAME 'x' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32})",
                "( 1.2.3 NAME ( 'x' ) SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{00032} )",
            ],
        ),
        (
            AT,
            "( 1.2.3 NAME 'x' DESC 'RFC: a \\27quoted\\27 \\5C path' SYNTAX 1.2 )",
            &[
                "( 1.2.3 NAME 'x' DESC 'RFC: a \\27quoted\\27 \\5c path' SYNTAX 1.2 )",
                "( 1.2.3 NAME 'x' DESC 'RFC: a \\27quoted\\27 \\5C path'SYNTAX 1.2 )",
            ],
        ),
        (
            AT,
            "( 1.2.3 NAME 'x' OBSOLETE SUP name EQUALITY caseIgnoreMatch ORDERING caseIgnoreOrderingMatch \
             SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.2 SINGLE-VALUE COLLECTIVE NO-USER-MODIFICATION \
             USAGE directoryOperation X-ORIGIN 'test' X-LIST ( 'a' 'b' ) X-EMPTY ( ) )",
            &[
                "( 1.2.3 usage DIRECTORYOPERATION x-ORIGIN 'test' X-LIST('a''b') X-EMPTY() no-user-modification \
                 collective single-value syntax 1.2 substr caseIgnoreSubstringsMatch ordering \
                 caseIgnoreOrderingMatch equality caseIgnoreMatch sup name obsolete name 'x' )",
            ],
        ),
        (
            OC,
            "( 2.5.6.6 NAME 'person' SUP top STRUCTURAL MUST ( sn $ cn ) MAY ( userPassword $ description ) )",
            &[
                "( 2.5.6.6 NAME 'person' SUP ( top ) MUST ( sn $ cn ) MAY ( userPassword $ description ) )",
                "( 2.5.6.6 NAME 'person' SUP 'top' STRUCTURAL MUST (sn$cn) MAY (userPassword $ description))",
                "( 2.5.6.6 NAME 'person' SUP top MUST ( sn cn ) MAY ( 'userPassword' description ) )",
                "( 2.5.6.6 NAME 'person' MAY ( userPassword $ description ) MUST ( sn $ cn ) SUP top structural )",
            ],
        ),
        (OC, "( 1.2 NAME 'a' SUP ( top $ b ) AUXILIARY MUST c )", &["( 1.2 NAME 'a' AUXILIARY SUP (top $ b) MUST ( c ) )"]),
        (OC, "( 1.2 ABSTRACT )", &["( 1.2 abstract )"]),
        (
            ElementKind::LdapSyntax,
            "( 1.2.3.4 DESC 'CSN' X-SUBST '1.3.6.1.4.1.1466.115.121.1.26' )",
            &["(1.2.3.4 DESC 'CSN' X-SUBST ( '1.3.6.1.4.1.1466.115.121.1.26' ))"],
        ),
        (ElementKind::MatchingRule, "( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.2 )", &["( 2.5.13.2 SYNTAX '1.2' NAME caseIgnoreMatch )"]),
        (ElementKind::MatchingRuleUse, "( 2.5.13.2 NAME 'caseIgnoreMatch' APPLIES ( cn $ sn ) )", &["( 2.5.13.2 APPLIES (cn $ sn) NAME 'caseIgnoreMatch' )"]),
        (
            ElementKind::DitContentRule,
            "( 2.5.6.6 NAME 'personRule' AUX ( a $ b ) MUST c MAY d NOT e )",
            &["( 2.5.6.6 NOT e MAY d MUST c AUX (a $ b) NAME 'personRule' )"],
        ),
        (
            ElementKind::DitStructureRule,
            "( 2 NAME 'r' FORM personForm SUP ( 1 7 ) )",
            &["( 2 NAME 'r' SUP ( 1 $ 7 ) FORM personForm )", "( 02 FORM personForm SUP (1 7) NAME 'r' )"],
        ),
        (ElementKind::NameForm, "( 1.2.3 NAME 'personForm' OC person MUST cn MAY ( uid $ sn ) )", &["( 1.2.3 MUST (cn) OC 'person' MAY (uid $ sn) NAME 'personForm' )"]),
    ];
    for (kind, canonical, variants) in table {
        let expected = parse_element(*kind, canonical).unwrap_or_else(|e| panic!("{canonical:?}: {e}"));
        assert_eq!(
            parse_element(*kind, &expected.to_string()).unwrap(),
            expected,
            "{canonical:?} does not round-trip"
        );
        for variant in *variants {
            let parsed = parse_element(*kind, variant).unwrap_or_else(|e| panic!("{variant:?}: {e}"));
            assert_eq!(parsed, expected, "{variant:?}");
        }
    }
}

#[test]
fn fields_land_where_they_belong() {
    let d = at("( 1.2.3 NAME ( 'a' 'b-2' ) DESC 'it\\27s \\5c \\41 \\zz \\' SUP x EQUALITY e ORDERING o SUBSTR s \
                SYNTAX 1.3.6.1.4.1.1466.115.121.1.26{64} SINGLE-VALUE NO-USER-MODIFICATION USAGE dSAOperation \
                X-ORDERED 'VALUES' )");
    assert_eq!(d.oid, "1.2.3");
    assert_eq!(d.names, ["a", "b-2"]);
    assert_eq!(d.desc.as_deref(), Some("it's \\ A \\zz \\"));
    assert_eq!(d.sup.as_deref(), Some("x"));
    assert_eq!(
        (d.equality.as_deref(), d.ordering.as_deref(), d.substr.as_deref()),
        (Some("e"), Some("o"), Some("s"))
    );
    assert_eq!(d.syntax.as_deref(), Some("1.3.6.1.4.1.1466.115.121.1.26"));
    assert_eq!(d.syntax_len, Some(64));
    assert!(d.single_value && d.no_user_modification && !d.collective && !d.obsolete);
    assert_eq!(d.usage, AttributeUsage::DsaOperation);
    assert_eq!(
        d.extensions,
        [Extension {
            name: "X-ORDERED".into(),
            values: vec!["VALUES".into()]
        }]
    );
    assert_eq!(
        d.to_string(),
        "( 1.2.3 NAME ( 'a' 'b-2' ) DESC 'it\\27s \\5C A \\5Czz \\5C' SUP x EQUALITY e ORDERING o SUBSTR s \
         SYNTAX 1.3.6.1.4.1.1466.115.121.1.26{64} SINGLE-VALUE NO-USER-MODIFICATION USAGE dSAOperation \
         X-ORDERED 'VALUES' )"
    );
    // Unicode in DESC passes through; an escaped UTF-8 sequence decodes.
    assert_eq!(
        at("( 1.2 DESC 'Zürich \\c3\\a9' SYNTAX 1.2 )").desc.as_deref(),
        Some("Zürich é")
    );
    // Empty NAME list and empty DESC are accepted (RFC 4512 qdescrlist may be empty).
    let empty = at("( 1.2 NAME ( ) DESC '' SYNTAX 1.2 )");
    assert!(empty.names.is_empty());
    assert_eq!(empty.desc.as_deref(), Some(""));
    // Defaults.
    assert_eq!(at("( 1.2 SUP x )").usage, AttributeUsage::UserApplications);
    match parse_element(OC, "( 1.2 )").unwrap() {
        Element::ObjectClass(oc) => assert_eq!(oc.kind, ObjectClassKind::Structural),
        other => panic!("{other:?}"),
    }
    // Syntax names are tolerated (slapd's pmi.schema).
    let syntax = parse_element(ElementKind::LdapSyntax, "( 1.2 NAME 'x' DESC 'y' )").unwrap();
    assert_eq!(syntax.names(), ["x"]);
    assert_eq!(syntax.to_string(), "( 1.2 NAME 'x' DESC 'y' )");
}

/// Each row: kind, text, line, column, and a check of the error kind.
#[test]
fn errors_name_line_and_column() {
    type Check = fn(&ParseErrorKind) -> bool;
    let table: &[(ElementKind, &str, u32, u32, Check)] = &[
        (AT, "", 1, 1, |k| {
            matches!(k, ParseErrorKind::UnexpectedEnd { .. })
        }),
        (AT, "1.2.3 NAME 'x' )", 1, 1, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (AT, "( 1.2.3 NAME 'x' SYNTAX 1.2", 1, 28, |k| {
            matches!(k, ParseErrorKind::UnexpectedEnd { .. })
        }),
        (AT, "( 1.2.3 NAME 'x SYNTAX 1.2 )", 1, 14, |k| {
            *k == ParseErrorKind::UnterminatedString
        }),
        (AT, "( 1.2.3 NAME 'x' DESC 'it''s' SYNTAX 1.2 )", 1, 27, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (
            AT,
            "( 1.2.3\n  NAME 'x'\n  FOO bar SYNTAX 1.2 )",
            3,
            3,
            |k| matches!(k, ParseErrorKind::UnknownKeyword { keyword, .. } if keyword == "FOO"),
        ),
        (
            AT,
            "( 1.2.3 NAME 'x' NAME 'y' SYNTAX 1.2 )",
            1,
            18,
            |k| matches!(k, ParseErrorKind::DuplicateKeyword { keyword } if keyword == "NAME"),
        ),
        (AT, "( 1.02.3 NAME 'x' SYNTAX 1.2 )", 1, 3, |k| {
            matches!(k, ParseErrorKind::InvalidOid { .. })
        }),
        (AT, "( myMacro:1 NAME 'x' SYNTAX 1.2 )", 1, 3, |k| {
            matches!(k, ParseErrorKind::UnknownMacro { .. })
        }),
        (AT, "( 1.2.3 NAME '1x' SYNTAX 1.2 )", 1, 14, |k| {
            matches!(k, ParseErrorKind::InvalidName { .. })
        }),
        (AT, "( 1.2.3 NAME 'a_b' SYNTAX 1.2 )", 1, 14, |k| {
            matches!(k, ParseErrorKind::InvalidName { .. })
        }),
        (AT, "( 1.2.3 NAME 'x' SUP a;binary )", 1, 22, |k| {
            matches!(k, ParseErrorKind::InvalidNameOrOid { .. })
        }),
        (AT, "( 1.2.3 NAME 'x' SYNTAX 1.2{abc} )", 1, 28, |k| {
            matches!(k, ParseErrorKind::InvalidLength { .. })
        }),
        (AT, "( 1.2.3 NAME 'x' SYNTAX 1.2{99999999999} )", 1, 28, |k| {
            matches!(k, ParseErrorKind::InvalidLength { .. })
        }),
        (AT, "( 1.2.3 NAME 'x' SYNTAX 1.2 USAGE everyone )", 1, 35, |k| {
            matches!(k, ParseErrorKind::InvalidUsage { .. })
        }),
        (AT, "( 1.2.3 NAME 'x' )", 1, 3, |k| {
            matches!(
                k,
                ParseErrorKind::MissingField {
                    keyword: "SUP or SYNTAX",
                    ..
                }
            )
        }),
        (AT, "( 1.2.3 SYNTAX 1.2 ) trailing", 1, 22, |k| {
            matches!(k, ParseErrorKind::TrailingText { .. })
        }),
        (AT, "( 1.2.3 SYNTAX 1.2 X-BAD! 'x' )", 1, 20, |k| {
            matches!(k, ParseErrorKind::InvalidExtension { .. })
        }),
        (AT, "( 1.2.3 SYNTAX 1.2 X-A b )", 1, 24, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (AT, "( 1.2.3 SYNTAX 1.2 X-A ( 'b' c ) )", 1, 30, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (AT, "( 1.2.3 DESC 'x\\c3' SYNTAX 1.2 )", 1, 14, |k| {
            *k == ParseErrorKind::InvalidEscape
        }),
        (AT, "( 1.2.3 SYNTAX 1.2 ABSTRACT )", 1, 20, |k| {
            matches!(k, ParseErrorKind::UnknownKeyword { .. })
        }),
        (OC, "( 1.2 MUST ( ) )", 1, 14, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (OC, "( 1.2 MUST ( a $ ) )", 1, 18, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (OC, "( 1.2 MUST ( a $ $ b ) )", 1, 18, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (OC, "( 1.2 MUST ( $ a ) )", 1, 14, |k| {
            matches!(k, ParseErrorKind::Expected { .. })
        }),
        (OC, "( 1.2 STRUCTURAL AUXILIARY )", 1, 18, |k| {
            matches!(k, ParseErrorKind::DuplicateKeyword { .. })
        }),
        (OC, "( 1.2 SINGLE-VALUE )", 1, 7, |k| {
            matches!(k, ParseErrorKind::UnknownKeyword { .. })
        }),
        (OC, "( 1.2 MAY ( a b )", 1, 18, |k| {
            matches!(k, ParseErrorKind::UnexpectedEnd { .. })
        }),
        (ElementKind::LdapSyntax, "( 1.2 OBSOLETE )", 1, 7, |k| {
            matches!(k, ParseErrorKind::UnknownKeyword { .. })
        }),
        (ElementKind::MatchingRule, "( 1.2 NAME 'm' )", 1, 3, |k| {
            matches!(
                k,
                ParseErrorKind::MissingField {
                    keyword: "SYNTAX",
                    ..
                }
            )
        }),
        (ElementKind::MatchingRuleUse, "( 1.2 NAME 'm' )", 1, 3, |k| {
            matches!(
                k,
                ParseErrorKind::MissingField {
                    keyword: "APPLIES",
                    ..
                }
            )
        }),
        (ElementKind::DitStructureRule, "( x FORM f )", 1, 3, |k| {
            matches!(k, ParseErrorKind::InvalidRuleId { .. })
        }),
        (ElementKind::DitStructureRule, "( 1 NAME 'r' )", 1, 3, |k| {
            matches!(k, ParseErrorKind::MissingField { keyword: "FORM", .. })
        }),
        (
            ElementKind::DitStructureRule,
            "( 1 FORM f SUP ( ) )",
            1,
            18,
            |k| matches!(k, ParseErrorKind::Expected { .. }),
        ),
        (ElementKind::NameForm, "( 1.2 OC person )", 1, 3, |k| {
            matches!(k, ParseErrorKind::MissingField { keyword: "MUST", .. })
        }),
        (ElementKind::NameForm, "( 1.2 MUST cn )", 1, 3, |k| {
            matches!(k, ParseErrorKind::MissingField { keyword: "OC", .. })
        }),
        // Columns count characters, not bytes.
        (AT, "( 1.2 DESC 'ééé' FOO )", 1, 18, |k| {
            matches!(k, ParseErrorKind::UnknownKeyword { .. })
        }),
    ];
    for (kind, text, line, column, check) in table {
        let error = match parse_element(*kind, text) {
            Ok(element) => panic!("{text:?} parsed as {element:?}"),
            Err(e) => e,
        };
        assert!(check(&error.kind), "{text:?}: unexpected {:?}", error.kind);
        assert_eq!((error.line, error.column), (*line, *column), "{text:?}: {error}");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("line {line}, column {column}: ")),
            "{message}"
        );
    }
}

#[test]
fn limits_are_enforced() {
    let names: String = (0..1025).map(|i| format!("'n{i}' ")).collect();
    let error = parse_element(AT, &format!("( 1.2 NAME ( {names}) SYNTAX 1.2 )")).unwrap_err();
    assert!(
        matches!(error.kind, ParseErrorKind::TooLarge { limit: 1024, .. }),
        "{error}"
    );
    let long = format!("( 1.2 DESC '{}' SYNTAX 1.2 )", "x".repeat(70_000));
    assert!(matches!(
        parse_element(AT, &long).unwrap_err().kind,
        ParseErrorKind::TooLarge { .. }
    ));
    let name = format!("( 1.2 NAME '{}' SYNTAX 1.2 )", "x".repeat(300));
    assert!(matches!(
        parse_element(AT, &name).unwrap_err().kind,
        ParseErrorKind::InvalidName { .. }
    ));
    let extensions: String = (0..65).map(|i| format!("X-E{i} 'v' ")).collect();
    let error = parse_element(AT, &format!("( 1.2 SYNTAX 1.2 {extensions})")).unwrap_err();
    assert!(
        matches!(error.kind, ParseErrorKind::TooLarge { limit: 64, .. }),
        "{error}"
    );
}
