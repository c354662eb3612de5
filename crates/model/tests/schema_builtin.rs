//! The shipped schemas: every file parses, every set resolves with no dangling reference,
//! every syntax and matching rule they name is implemented, the resolved schema has the
//! shape the RFCs give, and the subschema entry renders it re-parseably.

use larch_model::matching;
use larch_model::schema::{
    builtin, parse_element, parse_file, BuiltinSchemas, Element, ElementKind, ObjectClassKind, OidMacros,
    Schema, SchemaError, SchemaFormat, SchemaSource,
};
use larch_model::syntax;

const SETS: [BuiltinSchemas; 3] = [
    BuiltinSchemas::SystemOnly,
    BuiltinSchemas::Standard,
    BuiltinSchemas::Rfc2307bis,
];

fn load(set: BuiltinSchemas) -> Schema {
    Schema::from_sources(set, &[]).unwrap_or_else(|e| panic!("{set:?}: {e}"))
}

#[test]
fn every_shipped_file_parses() {
    for file in builtin::ALL {
        let mut macros = OidMacros::new();
        // Files of one set share macros; nis and rfc2307bis define their own.
        let definitions = parse_file(file.name, file.text, file.format, &mut macros)
            .unwrap_or_else(|e| panic!("{}: {e}", file.name));
        assert!(
            definitions.len() >= 5,
            "{}: only {} elements",
            file.name,
            definitions.len()
        );
        for d in &definitions {
            assert_eq!(&*d.location.file, file.name);
        }
    }
}

#[test]
fn every_set_resolves() {
    for set in SETS {
        let schema = load(set);
        assert!(schema.attribute_types().count() > 40, "{set:?}");
        assert!(schema.object_classes().count() >= 6, "{set:?}");
    }
    assert_eq!(
        Schema::builtin().unwrap().attribute_types().count(),
        load(BuiltinSchemas::Standard).attribute_types().count()
    );
    assert_eq!(BuiltinSchemas::default(), BuiltinSchemas::Standard);
}

#[test]
fn no_dangling_reference_in_any_set() {
    for set in SETS {
        let schema = load(set);
        for class in schema.object_classes() {
            let desc = class.description();
            for (names, ids, keyword) in [(&desc.must, &class.must, "MUST"), (&desc.may, &class.may, "MAY")] {
                for name in names {
                    let at = schema
                        .attribute_type(name)
                        .unwrap_or_else(|| panic!("{set:?}: {} {keyword} {name} dangles", class.name()));
                    assert!(ids.contains(&at.id), "{set:?}: {} {keyword} {name}", class.name());
                    assert!(class.allows(at.id));
                }
            }
            for name in &desc.sup {
                let sup = schema
                    .object_class(name)
                    .unwrap_or_else(|| panic!("{set:?}: {} SUP {name} dangles", class.name()));
                assert!(class.sup.contains(&sup.id));
                assert!(class.is_subclass_of(sup.id));
                for &id in sup.all_must() {
                    assert!(
                        class.requires(id),
                        "{set:?}: {} does not inherit MUST from {name}",
                        class.name()
                    );
                }
            }
            for id in class.all_must().iter().chain(class.all_may()) {
                assert!(schema.attribute_type_by_id(*id).is_some());
            }
        }
        for at in schema.attribute_types() {
            if let Some(name) = &at.description().sup {
                let sup = schema
                    .attribute_type(name)
                    .unwrap_or_else(|| panic!("{set:?}: {} SUP {name} dangles", at.name()));
                assert_eq!(at.sup, Some(sup.id));
                assert!(schema.is_subtype(at.id, sup.id));
            }
        }
    }
}

#[test]
fn every_syntax_and_rule_named_is_implemented() {
    for set in SETS {
        let schema = load(set);
        for at in schema.attribute_types() {
            let desc = at.description();
            if let Some(oid) = &desc.syntax {
                let implemented = syntax::lookup(oid).is_some()
                    || schema
                        .described_syntaxes()
                        .iter()
                        .any(|s| &s.description.oid == oid);
                assert!(implemented, "{set:?}: {} SYNTAX {oid}", at.name());
            }
            for rule in [&desc.equality, &desc.ordering, &desc.substr]
                .into_iter()
                .flatten()
            {
                assert!(
                    matching::lookup(rule).is_some(),
                    "{set:?}: {} rule {rule}",
                    at.name()
                );
            }
            assert!(!at.syntax.oid.is_empty());
        }
    }
}

#[test]
fn nis_and_rfc2307bis_differ_and_never_load_together() {
    let nis = load(BuiltinSchemas::Standard);
    let bis = load(BuiltinSchemas::Rfc2307bis);
    assert_eq!(
        nis.object_class("posixGroup").unwrap().kind,
        ObjectClassKind::Structural
    );
    assert_eq!(
        bis.object_class("posixGroup").unwrap().kind,
        ObjectClassKind::Auxiliary
    );
    assert!(nis.object_class("groupOfMembers").is_none());
    assert!(bis.object_class("groupOfMembers").is_some());
    assert!(bis.object_class("automountMap").is_some());
    assert!(bis.attribute_type("uidNumber").unwrap().ordering.is_some());

    let extra = SchemaSource {
        name: "rfc2307bis.schema",
        text: builtin::RFC2307BIS.text,
        format: SchemaFormat::OpenLdap,
    };
    let error = Schema::from_sources(BuiltinSchemas::Standard, &[extra]).unwrap_err();
    let SchemaError::Conflict { at, previous, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(&*at.file, "rfc2307bis.schema");
    assert_eq!(&*previous.file, "builtin:nis.schema");
    let message = error.to_string();
    assert!(
        message.contains("rfc2307bis.schema:") && message.contains("builtin:nis.schema:"),
        "{message}"
    );
}

#[test]
fn server_maintained_and_root_dse_attributes_exist() {
    let schema = load(BuiltinSchemas::SystemOnly);
    let operational = [
        "createTimestamp",
        "modifyTimestamp",
        "creatorsName",
        "modifiersName",
        "entryUUID",
        "entryDN",
        "structuralObjectClass",
        "subschemaSubentry",
        "hasSubordinates",
        "numSubordinates",
        "entryCSN",
        "namingContexts",
        "supportedControl",
        "supportedExtension",
        "supportedLDAPVersion",
        "supportedSASLMechanisms",
        "supportedFeatures",
        "vendorName",
        "vendorVersion",
        "altServer",
        "objectClasses",
        "attributeTypes",
        "ldapSyntaxes",
        "matchingRules",
        "matchingRuleUse",
        "ref",
    ];
    for name in operational {
        let at = schema
            .attribute_type(name)
            .unwrap_or_else(|| panic!("{name} missing"));
        assert!(at.is_operational(), "{name} is not operational");
    }
    for name in [
        "createTimestamp",
        "entryUUID",
        "entryDN",
        "entryCSN",
        "hasSubordinates",
        "vendorName",
    ] {
        assert!(
            schema.attribute_type(name).unwrap().no_user_modification,
            "{name}"
        );
    }
    for name in [
        "objectClass",
        "aliasedObjectName",
        "cn",
        "name",
        "uid",
        "userPassword",
    ] {
        assert!(!schema.attribute_type(name).unwrap().is_operational(), "{name}");
    }
    for name in [
        "top",
        "alias",
        "subschema",
        "extensibleObject",
        "referral",
        "subentry",
    ] {
        assert!(schema.object_class(name).is_some(), "{name} missing");
    }
    assert_eq!(
        schema
            .object_class("1.3.6.1.4.1.1466.101.120.111")
            .unwrap()
            .name(),
        "extensibleObject"
    );
    assert_eq!(
        schema.object_class("top").unwrap().kind,
        ObjectClassKind::Abstract
    );
    assert_eq!(schema.attribute_type("entryUUID").unwrap().oid, "1.3.6.1.1.16.4");
    assert_eq!(schema.attribute_type("entryDN").unwrap().oid, "1.3.6.1.1.20");
    assert_eq!(
        schema.attribute_type("ref").unwrap().oid,
        "2.16.840.1.113730.3.1.34"
    );
    assert_eq!(
        schema.attribute_type("aliasedEntryName").unwrap().name(),
        "aliasedObjectName"
    );
}

#[test]
fn resolved_shape_follows_the_rfcs() {
    let schema = Schema::builtin().unwrap();
    // Lookups: any name, any case, the OID.
    let cn = schema.attribute_type("cn").unwrap();
    for key in ["CN", "commonName", "COMMONNAME", "2.5.4.3"] {
        assert_eq!(schema.attribute_type(key).unwrap().id, cn.id, "{key}");
    }
    assert!(schema.attribute_type(" cn").is_none());
    assert!(schema.attribute_type(&"x".repeat(10_000)).is_none());
    assert!(cn.has_name("CommonName") && cn.has_name("2.5.4.3"));
    // Inheritance of syntax and rules along SUP.
    let name = schema.attribute_type("name").unwrap();
    assert_eq!(cn.sup, Some(name.id));
    assert_eq!(cn.equality.unwrap().name, "caseIgnoreMatch");
    assert_eq!(cn.substring.unwrap().name, "caseIgnoreSubstringsMatch");
    assert_eq!(cn.syntax.oid, syntax::DIRECTORY_STRING);
    assert_eq!(cn.syntax_len, Some(32768));
    assert!(schema.is_subtype(cn.id, name.id) && !schema.is_subtype(name.id, cn.id));
    // The family of a type: itself first, then exactly its subtypes (checked against
    // is_subtype over every type), each once.
    for t in schema.attribute_types() {
        let family = schema.family(t.id);
        assert_eq!(family.first(), Some(&t.id));
        let mut rest = family[1..].to_vec();
        rest.sort_by_key(|id| id.index());
        let expected: Vec<_> = schema
            .attribute_types()
            .filter(|s| s.id != t.id && schema.is_subtype(s.id, t.id))
            .map(|s| s.id)
            .collect();
        assert_eq!(rest, expected, "family of {}", t.oid);
    }
    let name_family = schema.family(name.id);
    assert!(name_family.contains(&cn.id) && name_family.len() > 5);
    assert_eq!(schema.family(cn.id), [cn.id]);
    let c = schema.attribute_type("countryName").unwrap();
    assert_eq!(c.syntax_oid, "1.3.6.1.4.1.1466.115.121.1.11");
    assert_eq!(c.equality.unwrap().name, "caseIgnoreMatch");
    assert!(c.single_value);
    let member = schema.attribute_type("member").unwrap();
    assert_eq!(member.equality.unwrap().name, "distinguishedNameMatch");
    // An EQUALITY written as an OID (RFC 3045).
    assert_eq!(
        schema
            .attribute_type("vendorName")
            .unwrap()
            .equality
            .unwrap()
            .name,
        "caseExactIA5Match"
    );
    // A syntax mapped with X-SUBST keeps its declared OID.
    let csn = schema.attribute_type("entryCSN").unwrap();
    assert_eq!(csn.syntax_oid, "1.3.6.1.4.1.4203.666.11.2.1");
    assert_eq!(csn.syntax.oid, "1.3.6.1.4.1.1466.115.121.1.26");
    // Object classes: complete MUST/MAY along the superclass chain.
    let person = schema.object_class("inetOrgPerson").unwrap();
    let names = |ids: &[larch_model::schema::AttributeTypeId]| -> Vec<String> {
        let mut v: Vec<String> = ids
            .iter()
            .map(|id| schema.attribute_type_by_id(*id).unwrap().name().to_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(person.all_must()), ["cn", "objectClass", "sn"]);
    let may = names(person.all_may());
    for expected in [
        "mail",
        "uid",
        "telephoneNumber",
        "title",
        "audio",
        "userPassword",
        "x500UniqueIdentifier",
    ] {
        assert!(
            may.contains(&expected.to_owned()),
            "inetOrgPerson may {expected}: {may:?}"
        );
    }
    assert!(!may.contains(&"cn".to_owned()));
    for sup in ["organizationalPerson", "person", "top"] {
        assert!(
            person.is_subclass_of(schema.object_class(sup).unwrap().id),
            "{sup}"
        );
    }
    assert_eq!(person.superclasses().len(), 3);
    // Multiple superclasses (RFC 1274 pilotOrganization).
    let pilot = schema.object_class("pilotOrganization").unwrap();
    assert_eq!(pilot.sup.len(), 2);
    assert!(pilot.requires(schema.attribute_type("o").unwrap().id));
    assert!(pilot.requires(schema.attribute_type("ou").unwrap().id));
    // MUST wins over MAY along the chain (ipProtocol lists description in both).
    let ip = schema.object_class("ipProtocol").unwrap();
    let description = schema.attribute_type("description").unwrap().id;
    assert!(ip.requires(description) && !ip.all_may().contains(&description));
    // Macros expanded (cosine, nis, dyngroup, duaconf use objectidentifier).
    assert_eq!(
        schema.attribute_type("memberURL").unwrap().oid,
        "2.16.840.1.113730.3.1.198"
    );
    assert_eq!(
        schema.attribute_type("defaultServerList").unwrap().oid,
        "1.3.6.1.4.1.11.1.3.1.1.0"
    );
    assert_eq!(
        schema.attribute_type("drink").unwrap().oid,
        "0.9.2342.19200300.100.1.5"
    );
    assert_eq!(
        schema.attribute_type("memberURL").unwrap().equality.unwrap().name,
        "caseExactMatch"
    );
}

#[test]
fn ids_are_dense_and_in_load_order() {
    let schema = Schema::builtin().unwrap();
    for (i, at) in schema.attribute_types().enumerate() {
        assert_eq!(at.id.index(), i);
        assert_eq!(schema.attribute_type_by_id(at.id).unwrap().oid, at.oid);
    }
    for (i, oc) in schema.object_classes().enumerate() {
        assert_eq!(oc.id.index(), i);
        assert_eq!(schema.object_class_by_id(oc.id).unwrap().oid, oc.oid);
    }
    assert_eq!(schema.attribute_types().next().unwrap().name(), "objectClass");
    assert!(schema
        .attribute_types()
        .next()
        .unwrap()
        .location()
        .file
        .starts_with("builtin:system.schema"));
}

#[test]
fn subschema_values_reparse_to_the_loaded_elements() {
    for set in SETS {
        let schema = load(set);
        let subschema = schema.subschema();
        for (kind, attribute) in [
            (ElementKind::LdapSyntax, "ldapSyntaxes"),
            (ElementKind::MatchingRule, "matchingRules"),
            (ElementKind::AttributeType, "attributeTypes"),
            (ElementKind::ObjectClass, "objectClasses"),
            (ElementKind::MatchingRuleUse, "matchingRuleUse"),
        ] {
            assert_eq!(kind.subschema_attribute(), attribute);
            let values = subschema.values(kind);
            assert!(!values.is_empty(), "{set:?}: no {attribute}");
            for value in values {
                let element =
                    parse_element(kind, value).unwrap_or_else(|e| panic!("{attribute}: {value}: {e}"));
                assert_eq!(
                    element.to_string(),
                    *value,
                    "{attribute} value is not a fixed point"
                );
            }
        }
        let types: Vec<_> = schema.attribute_types().collect();
        assert_eq!(subschema.attribute_types.len(), types.len());
        for (value, at) in subschema.attribute_types.iter().zip(types) {
            assert_eq!(
                parse_element(ElementKind::AttributeType, value).unwrap(),
                Element::AttributeType(at.description().clone())
            );
        }
        for (value, oc) in subschema.object_classes.iter().zip(schema.object_classes()) {
            assert_eq!(
                parse_element(ElementKind::ObjectClass, value).unwrap(),
                Element::ObjectClass(oc.description().clone())
            );
        }
        assert_eq!(subschema.matching_rules.len(), matching::all().len());
        // Every implemented syntax, plus the CSN syntax system.schema maps with X-SUBST.
        assert_eq!(subschema.ldap_syntaxes.len(), syntax::all().len() + 1);
        assert!(subschema
            .ldap_syntaxes
            .iter()
            .any(|v| v.contains("X-SUBST '1.3.6.1.4.1.1466.115.121.1.26'")));
        let attributes: Vec<&str> = subschema.attributes().map(|(name, _)| name).collect();
        assert_eq!(attributes.len(), 8);
        assert!(subschema.dit_content_rules.is_empty() && subschema.name_forms.is_empty());
    }
    let subschema = Schema::builtin().unwrap().subschema();
    let cn = subschema
        .attribute_types
        .iter()
        .find(|v| v.contains("'commonName'"))
        .unwrap();
    assert_eq!(cn, "( 2.5.4.3 NAME ( 'cn' 'commonName' ) DESC 'common name(s) for which the entity is known by' SUP name X-ORIGIN 'RFC 4519' )");
    let case_ignore = subschema
        .matching_rule_use
        .iter()
        .find(|v| v.starts_with("( 2.5.13.2 "))
        .unwrap();
    assert!(
        case_ignore.contains(" APPLIES ( ") && case_ignore.contains(" name ") && case_ignore.contains(" cn "),
        "{case_ignore}"
    );
    let cert = subschema
        .ldap_syntaxes
        .iter()
        .find(|v| v.starts_with("( 1.3.6.1.4.1.1466.115.121.1.8 "))
        .unwrap();
    assert!(cert.contains("X-NOT-HUMAN-READABLE 'TRUE'"), "{cert}");
}

/// The published object classes, read back from the `objectClasses` values alone: every
/// SUP names a published class, every MUST and MAY a published attribute type, and no type
/// is both MUST and MAY of one class, counting the MUST a class inherits.
#[test]
fn published_subschema_is_self_consistent() {
    for set in SETS {
        let subschema = load(set).subschema();
        let mut types = std::collections::HashMap::new();
        for value in &subschema.attribute_types {
            let Element::AttributeType(t) = parse_element(ElementKind::AttributeType, value).unwrap() else {
                panic!("{value}")
            };
            for key in t.names.iter().chain([&t.oid]) {
                types.insert(key.to_ascii_lowercase(), t.oid.clone());
            }
        }
        let mut classes = std::collections::HashMap::new();
        for value in &subschema.object_classes {
            let Element::ObjectClass(c) = parse_element(ElementKind::ObjectClass, value).unwrap() else {
                panic!("{value}")
            };
            for key in c.names.iter().chain([&c.oid]) {
                classes.insert(key.to_ascii_lowercase(), c.clone());
            }
        }
        let type_oid = |class: &str, name: &str, keyword: &str| -> String {
            types
                .get(&name.to_ascii_lowercase())
                .unwrap_or_else(|| {
                    panic!("{set:?}: {class} {keyword} {name}: not a published attribute type")
                })
                .clone()
        };
        for value in &subschema.object_classes {
            let Element::ObjectClass(c) = parse_element(ElementKind::ObjectClass, value).unwrap() else {
                panic!("{value}")
            };
            let label = c.names.first().unwrap_or(&c.oid).clone();
            // Every MUST along the SUP graph (an explicit stack; the graph is acyclic once
            // resolved, `seen` guards the walk anyway).
            let mut must = std::collections::HashSet::new();
            let mut stack = vec![c.clone()];
            let mut seen = std::collections::HashSet::new();
            while let Some(class) = stack.pop() {
                if !seen.insert(class.oid.clone()) {
                    continue;
                }
                for name in &class.must {
                    must.insert(type_oid(&label, name, "MUST"));
                }
                for sup in &class.sup {
                    let parent = classes
                        .get(&sup.to_ascii_lowercase())
                        .unwrap_or_else(|| panic!("{set:?}: {label} SUP {sup}: not a published class"));
                    stack.push(parent.clone());
                }
            }
            for name in &c.may {
                let oid = type_oid(&label, name, "MAY");
                assert!(
                    !must.contains(&oid),
                    "{set:?}: {label} has {name} as both MUST and MAY: {value}"
                );
            }
        }
    }
}
