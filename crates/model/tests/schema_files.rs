//! The two file formats: an operator's schema loaded from disk as an OpenLDAP `.schema`
//! file and as LDIF (cn=config export and subschema entry styles), the quirks of each
//! format, and errors that point at the right line and column of the file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use larch_model::schema::{
    builtin, parse_file, BuiltinSchemas, Element, ElementKind, OidMacros, ParseErrorKind, Schema,
    SchemaError, SchemaFormat,
};

/// A fresh directory under the system temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("larch-schema-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An operator schema in OpenLDAP syntax, with the quirks real files have.
const OPERATOR_SCHEMA: &str = "\
# Example Corp schema (OpenLDAP format)
objectidentifier exampleOID 1.3.6.1.4.1.99999
objectIdentifier exampleAttr exampleOID:1
objectidentifier exampleClass exampleOID:2

attributetype ( exampleAttr:1 NAME 'exampleBadge'
\tDESC 'badge number, one
\t  per employee'
\tEQUALITY caseIgnoreMatch
\t# ORDERING caseIgnoreOrderingMatch, commented out
\t# SUBSTR commented out with an indented comment
\tSYNTAX '1.3.6.1.4.1.1466.115.121.1.15'{32}
\tSINGLE-VALUE )
attributeType ( exampleAttr:2 NAME ( 'exampleFloor' 'floor' ) SUP name \\
DESC 'joined by a trailing backslash' )

#attributetype ( exampleAttr:3 NAME 'commentedOut'
\tSYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )

ObjectClass\t( exampleClass:1 NAME 'exampleEmployee'
    DESC 'an employee'
    SUP inetOrgPerson STRUCTURAL
    MUST exampleBadge
    MAY ( exampleFloor $ floor $ cn ) )\r
objectclass ( exampleClass:2 NAME 'exampleAux' SUP ( top ) AUXILIARY MAY exampleBadge )
";

/// The same schema as a cn=config LDIF export: `{n}` prefixes, folded lines, a base64
/// value, `olcObjectIdentifier`, and the record's own attributes, which are not schema.
const OPERATOR_LDIF: &str = "\
# Example Corp schema (cn=config LDIF)
version: 1

dn: cn=example,cn=schema,cn=config
objectClass: olcSchemaConfig
cn: example
olcObjectIdentifier: {0}exampleOID 1.3.6.1.4.1.99999
olcObjectIdentifier: {1}exampleAttr exampleOID:1
olcObjectIdentifier: {2}exampleClass exampleOID:2
olcAttributeTypes: {0}( exampleAttr:1 NAME 'exampleBadge' DESC 'badge number, o
 ne   per employee' EQUALITY caseIgnoreMatch SYNTAX '1.3.6.1.4.1.1466.115.121.1.15'{32}
  SINGLE-VALUE )
olcAttributeTypes:: ezF9KCBleGFtcGxlQXR0cjoyIE5BTUUgKCAnZXhhbXBsZUZsb29yJyAnZmxvb3InICkgU1VQIG5hbWUgREVTQyAnam9pbmVkIGJ5IGEgdHJhaWxpbmcgYmFja3NsYXNoJyAp
olcObjectClasses: {0}( exampleClass:1 NAME 'exampleEmployee' DESC 'an employee
 ' SUP inetOrgPerson STRUCTURAL MUST exampleBadge MAY ( exampleFloor $ floor $
  cn ) )\r
# a comment
# that is folded
 over two lines
olcObjectClasses: {1}( exampleClass:2 NAME 'exampleAux' SUP ( top ) AUXILIARY MAY exampleBadge )

dn: cn=schema
changetype: modify
add: attributeTypes
attributeTypes;x-origin-note: ( 1.3.6.1.4.1.99999.1.9 NAME 'exampleNote' SUP description )
-
";

fn check_operator_schema(schema: &Schema) {
    let badge = schema.attribute_type("EXAMPLEBADGE").unwrap();
    assert_eq!(badge.oid, "1.3.6.1.4.1.99999.1.1");
    assert_eq!(
        badge.description().desc.as_deref(),
        Some("badge number, one   per employee")
    );
    assert!(badge.ordering.is_none() && badge.substring.is_none());
    assert_eq!(badge.equality.unwrap().name, "caseIgnoreMatch");
    assert_eq!(badge.syntax_len, Some(32));
    assert!(badge.single_value);
    let floor = schema.attribute_type("floor").unwrap();
    assert_eq!(floor.oid, "1.3.6.1.4.1.99999.1.2");
    assert_eq!(
        floor.description().desc.as_deref(),
        Some("joined by a trailing backslash")
    );
    assert!(schema.attribute_type("commentedOut").is_none());
    let employee = schema.object_class("exampleEmployee").unwrap();
    assert_eq!(employee.oid, "1.3.6.1.4.1.99999.2.1");
    assert!(employee.requires(badge.id));
    assert!(employee.requires(schema.attribute_type("sn").unwrap().id));
    assert!(employee.allows(floor.id));
    assert!(employee.allows(schema.attribute_type("mail").unwrap().id));
    // floor and exampleFloor are one type; cn, which person requires, is no MAY.
    assert_eq!(employee.may, [floor.id]);
    assert_eq!(employee.description().may, ["exampleFloor", "floor"]);
    assert!(schema.object_class("exampleAux").is_some());
}

#[test]
fn an_operator_file_loads_in_both_formats() {
    let dir = TempDir::new();
    let schema_file = dir.write("example.schema", OPERATOR_SCHEMA);
    let ldif_file = dir.write("example.LDIF", OPERATOR_LDIF);
    assert_eq!(SchemaFormat::from_path(&schema_file), SchemaFormat::OpenLdap);
    assert_eq!(SchemaFormat::from_path(&ldif_file), SchemaFormat::Ldif);

    let from_schema =
        Schema::load(true, std::slice::from_ref(&schema_file)).unwrap_or_else(|e| panic!("{e}"));
    check_operator_schema(&from_schema);
    let from_ldif = Schema::load(true, std::slice::from_ref(&ldif_file)).unwrap_or_else(|e| panic!("{e}"));
    check_operator_schema(&from_ldif);
    assert_eq!(
        from_ldif.attribute_type("exampleNote").unwrap().oid,
        "1.3.6.1.4.1.99999.1.9"
    );

    // Both formats give the same elements.
    let elements = |text: &str, format| -> Vec<Element> {
        parse_file("x", text, format, &mut OidMacros::new())
            .unwrap()
            .into_iter()
            .map(|d| d.element)
            .collect()
    };
    let mut ldif_elements = elements(OPERATOR_LDIF, SchemaFormat::Ldif);
    assert_eq!(ldif_elements.pop().unwrap().label(), "exampleNote");
    assert_eq!(elements(OPERATOR_SCHEMA, SchemaFormat::OpenLdap), ldif_elements);

    // Both files together: every element is an equivalent redefinition.
    let both = Schema::load(true, &[schema_file.clone(), ldif_file]).unwrap();
    assert_eq!(
        &*both.attribute_type("exampleBadge").unwrap().location().file,
        schema_file.display().to_string()
    );
    assert_eq!(both.attribute_type("exampleBadge").unwrap().location().line, 6);

    // Without the standard schemas, inetOrgPerson is unknown: the class dangles.
    let error = Schema::load(false, &[schema_file]).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("example.schema:20:1: object class exampleEmployee: SUP inetOrgPerson"),
        "{message}"
    );
}

#[test]
fn the_shipped_schemas_load_as_ldif_too() {
    // Every shipped element, printed as an LDIF value (folded at 76 columns, every third
    // one base64), loads into the same schema.
    let mut ldif = String::from("dn: cn=schema\nobjectClass: top\nobjectClass: subschema\n");
    let mut macros = OidMacros::new();
    let mut count = 0;
    for file in BuiltinSchemas::Standard.files() {
        for definition in parse_file(file.name, file.text, file.format, &mut macros).unwrap() {
            let attribute = definition.element.kind().subschema_attribute();
            let value = definition.element.to_string();
            let line = if count % 3 == 0 {
                format!("{attribute}:: {}", base64(value.as_bytes()))
            } else {
                format!("{attribute}: {{{count}}}{value}")
            };
            count += 1;
            let chars: Vec<char> = line.chars().collect();
            for (i, chunk) in chars.chunks(76).enumerate() {
                if i > 0 {
                    ldif.push(' ');
                }
                ldif.extend(chunk);
                ldif.push('\n');
            }
        }
    }
    let dir = TempDir::new();
    let path = dir.write("all.ldif", &ldif);
    let from_ldif = Schema::load(false, &[path]).unwrap_or_else(|e| panic!("{e}"));
    let builtin = Schema::builtin().unwrap();
    assert_eq!(from_ldif.subschema(), builtin.subschema());
    assert_eq!(
        from_ldif.attribute_types().count(),
        builtin.attribute_types().count()
    );
}

/// Standard base64 with padding, for building test files.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Each row: format, file text, line, column, check of the reason.
#[test]
fn parse_errors_point_into_the_file() {
    type Check = fn(&ParseErrorKind) -> bool;
    let table: &[(SchemaFormat, &str, u32, u32, Check)] = &[
        (SchemaFormat::OpenLdap, "# c\n\nattributetyp ( 1.2 )", 3, 1, |k| {
            matches!(k, ParseErrorKind::UnknownDirective { .. })
        }),
        (
            SchemaFormat::OpenLdap,
            "attributetype ( 1.2.3 NAME 'a'\n    SYNTAX 1.2\n    BOGUS )",
            3,
            5,
            |k| matches!(k, ParseErrorKind::UnknownKeyword { .. }),
        ),
        (
            SchemaFormat::OpenLdap,
            "attributetype ( 1.2.3 NAME 'a'\n\tDESC 'x\n\tSYNTAX 1.2 )",
            2,
            7,
            |k| *k == ParseErrorKind::UnterminatedString,
        ),
        // An empty line ends a definition, as in slapd.
        (
            SchemaFormat::OpenLdap,
            "attributetype ( 1.2.3 NAME 'a'\n\n    SYNTAX 1.2 )",
            1,
            31,
            |k| matches!(k, ParseErrorKind::UnexpectedEnd { .. }),
        ),
        (
            SchemaFormat::OpenLdap,
            "attributetype ( 1.2.3 NAME 'a' SYNTAX 1.2 ) )",
            1,
            45,
            |k| matches!(k, ParseErrorKind::TrailingText { .. }),
        ),
        (SchemaFormat::OpenLdap, "objectidentifier onlyname", 1, 1, |k| {
            *k == ParseErrorKind::MacroSyntax
        }),
        (SchemaFormat::OpenLdap, "objectidentifier 9bad 1.2", 1, 18, |k| {
            matches!(k, ParseErrorKind::InvalidMacroName { .. })
        }),
        (
            SchemaFormat::OpenLdap,
            "attributetype ( undefinedMacro:1 NAME 'a' SYNTAX 1.2 )",
            1,
            17,
            |k| matches!(k, ParseErrorKind::UnknownMacro { .. }),
        ),
        (
            SchemaFormat::OpenLdap,
            "objectclass ( 1.2 NAME 'é' )",
            1,
            24,
            |k| matches!(k, ParseErrorKind::InvalidName { .. }),
        ),
        (
            SchemaFormat::Ldif,
            "dn: cn=x\nolcAttributeTypes: {0}( 1.2.3 NAME 'a'\n  SYNTAX 1.2 BOGUS )",
            3,
            14,
            |k| matches!(k, ParseErrorKind::UnknownKeyword { .. }),
        ),
        (
            SchemaFormat::Ldif,
            "dn: cn=x\nattributeTypes:: !!!!",
            2,
            18,
            |k| *k == ParseErrorKind::InvalidBase64,
        ),
        (
            SchemaFormat::Ldif,
            "dn: cn=x\nattributeTypes:: KCAxLjIgQk9HVVMgKQ==",
            2,
            18,
            |k| matches!(k, ParseErrorKind::UnknownKeyword { .. }),
        ),
        (
            SchemaFormat::Ldif,
            "dn: cn=x\nattributeTypes:< file:///etc/passwd",
            2,
            16,
            |k| *k == ParseErrorKind::UrlValue,
        ),
        (SchemaFormat::Ldif, "dn: cn=x\nthis is not ldif", 2, 1, |k| {
            *k == ParseErrorKind::NotLdif
        }),
        (SchemaFormat::Ldif, " continuation first", 1, 1, |k| {
            *k == ParseErrorKind::NotLdif
        }),
        (SchemaFormat::Ldif, "olcObjectIdentifier: {0}a b c", 1, 1, |k| {
            *k == ParseErrorKind::MacroSyntax
        }),
    ];
    for (format, text, line, column, check) in table {
        let error = parse_file("f", text, *format, &mut OidMacros::new()).unwrap_err();
        let message = error.to_string();
        let SchemaError::Parse { at, reason } = &error else {
            panic!("{text:?}: {message}")
        };
        assert!(check(reason), "{text:?}: {message}");
        assert_eq!((at.line, at.column), (*line, *column), "{text:?}: {message}");
        assert!(message.starts_with(&format!("f:{line}:{column}: ")), "{message}");
    }
}

#[test]
fn files_that_cannot_be_read() {
    let dir = TempDir::new();
    let missing = dir.0.join("missing.schema");
    let error = Schema::load(true, &[missing]).unwrap_err();
    assert!(matches!(error, SchemaError::Read { .. }), "{error}");
    assert!(
        error.to_string().contains("missing.schema: cannot read"),
        "{error}"
    );

    let bad = dir.write(
        "latin1.schema",
        b"# ok\nattributetype ( 1.2 NAME 'a' DESC 'caf\xe9' SYNTAX 1.2 )\n",
    );
    let error = Schema::load(true, &[bad]).unwrap_err();
    let SchemaError::Parse { at, reason } = &error else {
        panic!("{error}")
    };
    assert_eq!(
        (at.line, at.column, reason),
        (2, 39, &ParseErrorKind::InvalidUtf8)
    );

    let empty = dir.write("empty.schema", "");
    let comments = dir.write("comments.ldif", "# nothing\n\n");
    assert_eq!(
        Schema::load(true, &[empty, comments])
            .unwrap()
            .attribute_types()
            .count(),
        Schema::builtin().unwrap().attribute_types().count()
    );
}

#[test]
fn elements_carry_their_place() {
    let definitions = parse_file(
        "f.schema",
        OPERATOR_SCHEMA,
        SchemaFormat::OpenLdap,
        &mut OidMacros::new(),
    )
    .unwrap();
    let places: Vec<(ElementKind, u32, u32)> = definitions
        .iter()
        .map(|d| (d.element.kind(), d.location.line, d.location.column))
        .collect();
    assert_eq!(
        places,
        [
            (ElementKind::AttributeType, 6, 1),
            (ElementKind::AttributeType, 14, 1),
            (ElementKind::ObjectClass, 20, 1),
            (ElementKind::ObjectClass, 25, 1)
        ]
    );
    let definitions = parse_file("f.ldif", OPERATOR_LDIF, SchemaFormat::Ldif, &mut OidMacros::new()).unwrap();
    let lines: Vec<u32> = definitions.iter().map(|d| d.location.line).collect();
    assert_eq!(lines, [10, 13, 14, 20, 25]);
    // The shipped files name themselves.
    let definitions = parse_file(
        builtin::SYSTEM.name,
        builtin::SYSTEM.text,
        SchemaFormat::OpenLdap,
        &mut OidMacros::new(),
    )
    .unwrap();
    assert!(definitions.iter().all(|d| &*d.location.file == "system.schema"));
}
