//! Resolution errors: dangling references, cycles, conflicting redefinitions, unknown or
//! misused syntaxes and matching rules, RFC 4512 rules on usage and class kinds. Each
//! error must name the file, the line and the element; a conflict both places.

use larch_model::schema::{
    BuiltinSchemas, ElementKind, ParseErrorKind, ResolveErrorKind, Schema, SchemaError, SchemaFormat,
    SchemaSource,
};

fn load(text: &str) -> Result<Schema, SchemaError> {
    let source = SchemaSource {
        name: "local.schema",
        text,
        format: SchemaFormat::OpenLdap,
    };
    Schema::from_sources(BuiltinSchemas::Standard, &[source])
}

/// Loads `text`, expects a resolve error on `line` for `element`, returns its reason.
fn resolve_error(text: &str, line: u32, element: &str) -> ResolveErrorKind {
    let error = load(text).map(|_| ()).unwrap_err();
    let message = error.to_string();
    let SchemaError::Resolve {
        at,
        element: got,
        reason,
        ..
    } = error
    else {
        panic!("{text}: {message}")
    };
    assert_eq!(
        (&*at.file, at.line, got.as_str()),
        ("local.schema", line, element),
        "{message}"
    );
    assert!(
        message.starts_with(&format!("local.schema:{line}:1: ")),
        "{message}"
    );
    assert!(message.contains(element), "{message}");
    reason
}

#[test]
fn dangling_references() {
    let reason = resolve_error(
        "objectclass ( 1.1.1 NAME 'widget' SUP top STRUCTURAL\n  MUST ( cn $ widgetColour ) )\n",
        1,
        "widget",
    );
    assert_eq!(
        reason,
        ResolveErrorKind::UnknownAttributeType {
            name: "widgetColour".into(),
            keyword: "MUST"
        }
    );

    let reason = resolve_error(
        "\n\nobjectclass ( 1.1.1 NAME 'widget' SUP top MAY nothing )",
        3,
        "widget",
    );
    assert_eq!(
        reason,
        ResolveErrorKind::UnknownAttributeType {
            name: "nothing".into(),
            keyword: "MAY"
        }
    );

    let reason = resolve_error("objectclass ( 1.1.1 NAME 'widget' SUP gadget )", 1, "widget");
    assert_eq!(
        reason,
        ResolveErrorKind::UnknownSuperiorClass {
            name: "gadget".into()
        }
    );

    let reason = resolve_error("attributetype ( 1.1.1 NAME 'colour' SUP hue )", 1, "colour");
    assert_eq!(
        reason,
        ResolveErrorKind::UnknownSuperiorType { name: "hue".into() }
    );

    // References by OID resolve as well as by name.
    let schema = load("objectclass ( 1.1.1 NAME 'widget' SUP 2.5.6.0 MUST 2.5.4.3 )").unwrap();
    let widget = schema.object_class("widget").unwrap();
    assert!(widget.requires(schema.attribute_type("cn").unwrap().id));
}

#[test]
fn cycles() {
    let reason = resolve_error(
        "attributetype ( 1.1.1 NAME 'ta' SUP tb )\nattributetype ( 1.1.2 NAME 'tb' SUP tc )\nattributetype ( 1.1.3 NAME 'tc' SUP ta )\n",
        3,
        "tc",
    );
    assert_eq!(
        reason,
        ResolveErrorKind::Cycle {
            chain: "ta -> tb -> tc -> ta".into()
        }
    );

    let reason = resolve_error("attributetype ( 1.1.1 NAME 'self' SUP self )", 1, "self");
    assert_eq!(
        reason,
        ResolveErrorKind::Cycle {
            chain: "self -> self".into()
        }
    );

    let reason = resolve_error(
        "objectclass ( 1.1.1 NAME 'x' SUP ( top $ y ) )\nobjectclass ( 1.1.2 NAME 'y' SUP x )\n",
        2,
        "y",
    );
    assert_eq!(
        reason,
        ResolveErrorKind::Cycle {
            chain: "x -> y -> x".into()
        }
    );

    // A diamond is not a cycle.
    let schema = load(
        "objectclass ( 1.1.1 NAME 'l' SUP top AUXILIARY MAY cn )\n\
         objectclass ( 1.1.2 NAME 'r' SUP top AUXILIARY MAY sn )\n\
         objectclass ( 1.1.3 NAME 'd' SUP ( l $ r ) AUXILIARY )\n",
    )
    .unwrap();
    let d = schema.object_class("d").unwrap();
    assert_eq!(d.superclasses().len(), 3);
    assert_eq!(d.all_may().len(), 2);
}

#[test]
fn long_chains_resolve_without_recursion() {
    let mut text = String::from("attributetype ( 1.1.0 NAME 't0' SUP name )\n");
    // Written deepest first, so the walk has to go all the way down from the first one.
    for i in (1..20_000).rev() {
        text.push_str(&format!("attributetype ( 1.1.{i} NAME 't{i}' SUP t{} )\n", i - 1));
    }
    text.push_str("objectclass ( 1.2.0 NAME 'c0' SUP top AUXILIARY MAY t0 )\n");
    for i in (1..2_000).rev() {
        text.push_str(&format!(
            "objectclass ( 1.2.{i} NAME 'c{i}' SUP c{} AUXILIARY MAY t{i} )\n",
            i - 1
        ));
    }
    let schema = load(&text).unwrap();
    let deepest = schema.attribute_type("t19999").unwrap();
    assert_eq!(deepest.equality.unwrap().name, "caseIgnoreMatch");
    assert!(schema.is_subtype(deepest.id, schema.attribute_type("name").unwrap().id));
    // The family of the chain's top holds the whole chain, each type once.
    let t0 = schema.attribute_type("t0").unwrap();
    assert_eq!(schema.family(t0.id).len(), 20_000);
    assert_eq!(schema.family(deepest.id), [deepest.id]);
    let class = schema.object_class("c1999").unwrap();
    assert_eq!(class.all_may().len(), 2_000);
    assert_eq!(class.superclasses().len(), 2_000);
}

#[test]
fn resolved_class_sets_are_bounded() {
    // A chain of 6,000 classes holds 6,000 x 6,000 x 2 / 2 set entries, above the limit.
    let mut text = String::from("objectclass ( 1.2.0 NAME 'c0' SUP top AUXILIARY MAY cn )\n");
    for i in 1..6_000 {
        text.push_str(&format!(
            "objectclass ( 1.2.{i} NAME 'c{i}' SUP c{} AUXILIARY )\n",
            i - 1
        ));
    }
    let error = load(&text).unwrap_err();
    assert!(matches!(error, SchemaError::TooLarge { .. }), "{error}");
}

#[test]
fn conflicting_redefinitions_name_both_places() {
    let error =
        load("\n# a comment\nattributetype ( 2.5.4.3 NAME ( 'cn' 'commonName' ) SUP name SINGLE-VALUE )")
            .unwrap_err();
    let message = error.to_string();
    let SchemaError::Conflict {
        at,
        previous,
        kind,
        element,
        what,
    } = error
    else {
        panic!("{message}")
    };
    assert_eq!((&*at.file, at.line, at.column), ("local.schema", 3, 1));
    assert_eq!(&*previous.file, "builtin:system.schema");
    assert!(previous.line > 1);
    assert_eq!((kind, element.as_str()), (ElementKind::AttributeType, "cn"));
    assert!(what.contains("SINGLE-VALUE"), "{what}");
    assert!(
        message.starts_with(
            "local.schema:3:1: attribute type cn conflicts with the definition at builtin:system.schema:"
        ),
        "{message}"
    );

    // A name already taken by another OID.
    let error = load("attributetype ( 1.1.1 NAME 'mail' SYNTAX 1.3.6.1.4.1.1466.115.121.1.26 )").unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(&error, SchemaError::Conflict { what, .. } if what.contains("mail")),
        "{message}"
    );
    assert!(message.contains("builtin:core.schema:"), "{message}");

    // Names compare case-insensitively.
    let error = load("objectclass ( 1.1.1 NAME 'PERSON' SUP top )").unwrap_err();
    assert!(matches!(error, SchemaError::Conflict { .. }), "{error}");

    // An OID used for a class and a type.
    let error = load("objectclass ( 2.5.4.3 NAME 'weird' SUP top )").unwrap_err();
    assert!(
        matches!(&error, SchemaError::Conflict { what, .. } if what.contains("attribute type")),
        "{error}"
    );

    // Within one operator file, both places are in that file.
    let error =
        load("objectclass ( 1.1.1 NAME 'a' SUP top )\n\nobjectclass ( 1.1.1 NAME 'a' SUP top AUXILIARY )")
            .unwrap_err();
    let SchemaError::Conflict { at, previous, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!((at.line, previous.line, &*previous.file), (3, 1, "local.schema"));
}

#[test]
fn equivalent_redefinitions_are_accepted() {
    // The same element with another DESC, bound, extension, name order and case, and the
    // rule written by OID: a second copy of a standard schema is harmless.
    let schema = load(
        "attributetype ( 2.5.4.3 NAME ( 'COMMONNAME' 'cn' ) DESC 'another description' SUP NAME X-FOO 'bar' )\n\
         attributetype ( 2.5.4.41 NAME 'name' EQUALITY 2.5.13.2 SUBSTR caseIgnoreSubstringsMatch\n  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n\
         objectclass ( 2.5.6.6 NAME 'person' SUP top STRUCTURAL MUST ( cn $ sn ) MAY ( description $ seeAlso $ telephoneNumber $ userPassword ) )\n",
    )
    .unwrap();
    // The first definition wins.
    let cn = schema.attribute_type("cn").unwrap();
    assert_eq!(
        cn.description().desc.as_deref(),
        Some("common name(s) for which the entity is known by")
    );
    assert_eq!(&*cn.location().file, "builtin:system.schema");
}

#[test]
fn unknown_and_misused_rules_and_syntaxes() {
    let reason = resolve_error(
        "attributetype ( 1.1.1 NAME 'x' EQUALITY fuzzyMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )",
        1,
        "x",
    );
    assert_eq!(
        reason,
        ResolveErrorKind::UnknownMatchingRule {
            name: "fuzzyMatch".into(),
            keyword: "EQUALITY"
        }
    );

    let reason = resolve_error("attributetype ( 1.1.1 NAME 'x' EQUALITY caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )", 1, "x");
    assert!(
        matches!(
            reason,
            ResolveErrorKind::WrongRuleUsage {
                keyword: "EQUALITY",
                usage: "equality",
                ..
            }
        ),
        "{reason}"
    );
    let reason = resolve_error(
        "attributetype ( 1.1.1 NAME 'x' SUBSTR caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )",
        1,
        "x",
    );
    assert!(
        matches!(
            reason,
            ResolveErrorKind::WrongRuleUsage {
                keyword: "SUBSTR",
                ..
            }
        ),
        "{reason}"
    );
    let reason = resolve_error(
        "attributetype ( 1.1.1 NAME 'x' ORDERING integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 )",
        1,
        "x",
    );
    assert!(
        matches!(
            reason,
            ResolveErrorKind::WrongRuleUsage {
                keyword: "ORDERING",
                ..
            }
        ),
        "{reason}"
    );

    let reason = resolve_error("\nattributetype ( 1.1.1 NAME 'x' SYNTAX 1.9.9.9 )", 2, "x");
    assert_eq!(
        reason,
        ResolveErrorKind::UnknownSyntax {
            oid: "1.9.9.9".into()
        }
    );

    // An ldapsyntax mapping an unknown syntax onto an implemented one (OpenLDAP X-SUBST).
    let schema = load(
        "ldapsyntax ( 1.9.9.9 DESC 'Widget Code' X-SUBST '1.3.6.1.4.1.1466.115.121.1.26' )\n\
         attributetype ( 1.1.1 NAME 'x' EQUALITY caseExactIA5Match SYNTAX 1.9.9.9{12} )\n\
         attributetype ( 1.1.2 NAME 'y' SUP x )\n",
    )
    .unwrap();
    let y = schema.attribute_type("y").unwrap();
    assert_eq!(
        (y.syntax_oid.as_str(), y.syntax.oid, y.syntax_len),
        ("1.9.9.9", "1.3.6.1.4.1.1466.115.121.1.26", Some(12))
    );
    assert!(schema
        .subschema()
        .ldap_syntaxes
        .iter()
        .any(|v| v.starts_with("( 1.9.9.9 DESC 'Widget Code'")));

    let reason = resolve_error(
        "ldapsyntax ( 1.9.9.9 DESC 'Widget' X-SUBST '1.8.8' )",
        1,
        "1.9.9.9",
    );
    assert_eq!(reason, ResolveErrorKind::UnknownSyntax { oid: "1.8.8".into() });

    // Matching rules are code: a description may restate one, not add one.
    load("matchingrule ( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )").unwrap();
    let reason = resolve_error(
        "matchingrule ( 1.1.1 NAME 'fuzzyMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )",
        1,
        "fuzzyMatch",
    );
    assert_eq!(
        reason,
        ResolveErrorKind::UnimplementedMatchingRule { oid: "1.1.1".into() }
    );
}

#[test]
fn rfc4512_rules_on_usage_and_kinds() {
    let reason = resolve_error(
        "attributetype ( 1.1.1 NAME 'x' SUP name USAGE directoryOperation )",
        1,
        "x",
    );
    assert!(
        matches!(reason, ResolveErrorKind::UsageMismatch { .. }),
        "{reason}"
    );
    let reason = resolve_error(
        "attributetype ( 1.1.1 NAME 'x' SUP name NO-USER-MODIFICATION )",
        1,
        "x",
    );
    assert_eq!(reason, ResolveErrorKind::NoUserModificationUserType);
    let reason = resolve_error(
        "attributetype ( 1.1.1 NAME 'x' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 COLLECTIVE USAGE dSAOperation )",
        1,
        "x",
    );
    assert_eq!(reason, ResolveErrorKind::CollectiveOperational);
    // COLLECTIVE is inherited.
    let schema = load(
        "attributetype ( 1.1.1 NAME 'c-x' SUP name COLLECTIVE )\nattributetype ( 1.1.2 NAME 'c-y' SUP c-x )\n",
    )
    .unwrap();
    assert!(schema.attribute_type("c-y").unwrap().collective);

    let reason = resolve_error("objectclass ( 1.1.1 NAME 'x' SUP person AUXILIARY )", 1, "x");
    assert!(
        matches!(
            reason,
            ResolveErrorKind::SuperclassKind {
                kind: "auxiliary",
                sup_kind: "structural",
                ..
            }
        ),
        "{reason}"
    );
    let reason = resolve_error(
        "objectclass ( 1.1.1 NAME 'x' SUP extensibleObject STRUCTURAL )",
        1,
        "x",
    );
    assert!(
        matches!(
            reason,
            ResolveErrorKind::SuperclassKind {
                kind: "structural",
                ..
            }
        ),
        "{reason}"
    );
    let reason = resolve_error("objectclass ( 1.1.1 NAME 'x' SUP person ABSTRACT )", 1, "x");
    assert!(
        matches!(reason, ResolveErrorKind::SuperclassKind { kind: "abstract", .. }),
        "{reason}"
    );
    let message = load("objectclass ( 1.1.1 NAME 'x' SUP person AUXILIARY )")
        .unwrap_err()
        .to_string();
    assert_eq!(message, "local.schema:1:1: object class x: an auxiliary class cannot have the structural class person as superclass");
}

#[test]
fn macros_are_shared_across_files_and_checked() {
    let first = SchemaSource {
        name: "a.schema",
        text: "objectidentifier widgets 1.3.6.1.4.1.99999\nobjectidentifier widgetAttrs widgets:1\n",
        format: SchemaFormat::OpenLdap,
    };
    let second = SchemaSource {
        name: "b.ldif",
        text: "dn: cn=b,cn=schema,cn=config\nolcAttributeTypes: ( widgetAttrs:7 NAME 'widgetColour' SUP name )\n",
        format: SchemaFormat::Ldif,
    };
    let schema = Schema::from_sources(BuiltinSchemas::Standard, &[first, second]).unwrap();
    assert_eq!(
        schema.attribute_type("widgetColour").unwrap().oid,
        "1.3.6.1.4.1.99999.1.7"
    );

    let clash = SchemaSource {
        name: "c.schema",
        text: "\n\nobjectidentifier WIDGETS 1.2.3\n",
        format: SchemaFormat::OpenLdap,
    };
    let error = Schema::from_sources(BuiltinSchemas::Standard, &[first, clash]).unwrap_err();
    let message = error.to_string();
    let SchemaError::MacroConflict { at, previous, .. } = &error else {
        panic!("{message}")
    };
    assert_eq!(
        (&*at.file, at.line, &*previous.file, previous.line),
        ("c.schema", 3, "a.schema", 1)
    );

    let unknown = SchemaSource {
        name: "d.schema",
        text: "objectidentifier x nowhere:1\n",
        format: SchemaFormat::OpenLdap,
    };
    let error = Schema::from_sources(BuiltinSchemas::Standard, &[unknown]).unwrap_err();
    assert!(
        matches!(&error, SchemaError::Parse { at, reason: ParseErrorKind::UnknownMacro { .. } } if at.line == 1 && at.column == 20),
        "{error}"
    );
}

#[test]
fn a_may_the_class_requires_is_dropped() {
    // Its own MUST (as RFC 2307's ipProtocol writes it) and a superclass's MUST.
    let schema = load(
        "objectclass ( 1.1.1 NAME 'widget' SUP top STRUCTURAL\n  MUST ( cn $ description ) MAY ( description $ seeAlso ) )\n\
         objectclass ( 1.1.2 NAME 'gadget' SUP widget STRUCTURAL\n  MAY ( cn $ ou ) )\n",
    )
    .unwrap();
    let id = |name: &str| schema.attribute_type(name).unwrap().id;
    let widget = schema.object_class("widget").unwrap();
    assert_eq!(widget.description().must, ["cn", "description"]);
    assert_eq!(widget.description().may, ["seeAlso"]);
    assert_eq!(widget.may, [id("seeAlso")]);
    assert!(widget.requires(id("description")) && !widget.all_may().contains(&id("description")));
    let gadget = schema.object_class("gadget").unwrap();
    assert_eq!(gadget.description().may, ["ou"]);
    assert!(gadget.requires(id("cn")) && gadget.allows(id("ou")));
    let published = schema.subschema();
    let widget_value = published
        .object_classes
        .iter()
        .find(|v| v.contains("'widget'"))
        .unwrap();
    assert!(
        widget_value.contains("MUST ( cn $ description ) MAY seeAlso"),
        "{widget_value}"
    );
}
