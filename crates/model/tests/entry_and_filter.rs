//! Entries against the shipped schema: building, storing, schema checking, modifications,
//! and three-valued filter evaluation.

use larch_model::dn::Dn;
use larch_model::entry::check::check_entry;
use larch_model::entry::modify::{apply_changes, ModifyOptions};
use larch_model::entry::{Entry, StoredEntry};
use larch_model::filter::{CompiledFilter, Tri};
use larch_model::schema::Schema;
use larch_model::ModelError;
use larch_proto::{
    AddRequest, Change, LdapMessage, ModifyOperation, OwnedFilter, PartialAttribute, ProtocolOp, ResultCode,
    SeqOf,
};

fn schema() -> &'static Schema {
    static SCHEMA: std::sync::OnceLock<Schema> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| Schema::builtin().expect("the shipped schema loads"))
}

/// Builds an entry from LDIF-like pairs, through a real AddRequest.
fn entry(dn: &str, attrs: &[(&str, &[&str])]) -> Result<Entry, ModelError> {
    let values: Vec<Vec<&[u8]>> = attrs
        .iter()
        .map(|(_, vs)| vs.iter().map(|v| v.as_bytes()).collect())
        .collect();
    let list: Vec<PartialAttribute<'_>> = attrs
        .iter()
        .zip(&values)
        .map(|((d, _), vs)| PartialAttribute {
            description: d.as_bytes(),
            values: SeqOf::from_items(vs),
        })
        .collect();
    let req = AddRequest {
        entry: dn.as_bytes(),
        attributes: SeqOf::from_items(&list),
    };
    Entry::from_add_request(&req, schema())
}

fn person() -> Entry {
    entry(
        "uid=bjensen,ou=People,dc=example,dc=com",
        &[
            (
                "objectClass",
                &["top", "person", "organizationalPerson", "inetOrgPerson"],
            ),
            ("uid", &["bjensen"]),
            ("cn", &["Barbara Jensen", "Babs Jensen"]),
            ("cn;lang-fr", &["Barbara Jeanson"]),
            ("sn", &["Jensen"]),
            ("givenName", &["Barbara"]),
            ("mail", &["bjensen@example.com"]),
            ("telephoneNumber", &["+1 408 555 1862"]),
            ("employeeNumber", &["42"]),
            ("description", &["Manager of the 4th floor"]),
        ],
    )
    .unwrap()
}

/// Attributes of a test entry: description and values.
type Attrs<'a> = Vec<(&'a str, &'a [&'a str])>;
/// Changes of a test modification: operation, description, values.
type Changes<'a> = Vec<(ModifyOperation, &'a str, &'a [&'a str])>;

fn code(r: Result<impl std::fmt::Debug, ModelError>) -> ResultCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.result_code(),
    }
}

#[test]
fn a_valid_person_passes_and_reports_its_structural_class() {
    let e = person();
    let checked = check_entry(&e, schema()).unwrap();
    assert_eq!(
        schema().object_class_by_id(checked.structural).unwrap().name(),
        "inetOrgPerson"
    );
    // Superclasses need not be listed.
    let e = entry(
        "cn=x,dc=example,dc=com",
        &[
            ("objectClass", &["inetOrgPerson"]),
            ("cn", &["x"]),
            ("sn", &["y"]),
        ],
    )
    .unwrap();
    check_entry(&e, schema()).unwrap();
}

#[test]
fn schema_violations_get_their_result_codes() {
    let cases: Vec<(&str, Attrs<'_>, ResultCode)> = vec![
        (
            "no objectClass",
            vec![("cn", &["x"]), ("sn", &["y"])],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            "unknown class",
            vec![
                ("objectClass", &["person", "noSuchClass"]),
                ("cn", &["x"]),
                ("sn", &["y"]),
            ],
            ResultCode::INVALID_ATTRIBUTE_SYNTAX,
        ),
        (
            "no structural",
            vec![("objectClass", &["top"]), ("cn", &["x"])],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            "two chains",
            vec![
                ("objectClass", &["person", "organizationalUnit"]),
                ("cn", &["x"]),
                ("sn", &["y"]),
                ("ou", &["z"]),
            ],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            "missing MUST sn",
            vec![("objectClass", &["person"]), ("cn", &["x"])],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            "not allowed",
            vec![
                ("objectClass", &["person"]),
                ("cn", &["x"]),
                ("sn", &["y"]),
                ("mail", &["a@b"]),
            ],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            "single-valued",
            vec![
                ("objectClass", &["inetOrgPerson"]),
                ("cn", &["x"]),
                ("sn", &["y"]),
                ("displayName", &["a", "b"]),
            ],
            ResultCode::CONSTRAINT_VIOLATION,
        ),
        (
            "bad syntax",
            vec![
                ("objectClass", &["inetOrgPerson"]),
                ("cn", &["x"]),
                ("sn", &["y"]),
                ("mail", &["caf\u{e9}@example.com"]),
            ],
            ResultCode::INVALID_ATTRIBUTE_SYNTAX,
        ),
        (
            "duplicate",
            vec![("objectClass", &["person"]), ("cn", &["x", "X"]), ("sn", &["y"])],
            ResultCode::ATTRIBUTE_OR_VALUE_EXISTS,
        ),
        (
            "rdn missing",
            vec![("objectClass", &["person"]), ("cn", &["other"]), ("sn", &["y"])],
            ResultCode::NAMING_VIOLATION,
        ),
    ];
    for (what, attrs, expected) in cases {
        let e = entry("cn=x,dc=example,dc=com", &attrs).unwrap();
        assert_eq!(code(check_entry(&e, schema())), expected, "{what}");
    }
    // extensibleObject allows any user attribute.
    let e = entry(
        "cn=x,dc=example,dc=com",
        &[
            ("objectClass", &["person", "extensibleObject"]),
            ("cn", &["x"]),
            ("sn", &["y"]),
            ("mail", &["a@b"]),
        ],
    )
    .unwrap();
    check_entry(&e, schema()).unwrap();
    // Unknown attribute types and bad DNs are refused when the entry is built.
    assert_eq!(
        code(entry("cn=x,dc=example,dc=com", &[("noSuchAttr", &["1"])])),
        ResultCode::UNDEFINED_ATTRIBUTE_TYPE
    );
    assert_eq!(
        code(entry("cn=x,,dc=com", &[("cn", &["x"])])),
        ResultCode::INVALID_DN_SYNTAX
    );
    assert_eq!(
        code(entry("noSuchAttr=x,dc=com", &[("cn", &["x"])])),
        ResultCode::INVALID_DN_SYNTAX
    );
}

#[test]
fn stored_form_round_trips_and_is_a_partial_attribute_list() {
    let e = person();
    let stored = e.to_stored();
    let back = Entry::from_stored(e.dn.clone(), e.norm_dn.clone(), stored.as_ref());
    let sorted = |mut v: Vec<_>| {
        v.sort_by_key(|a: &larch_model::entry::Attribute| (a.ty, a.options.clone()));
        v
    };
    assert_eq!(sorted(back.attrs), sorted(e.attrs.clone()));
    // The BER written from the stored form is what a SearchResultEntry carries, with
    // canonical names.
    let ber = stored.to_attributes_ber(schema());
    let mut pdu = Vec::new();
    larch_proto::encode_search_result_entry(&mut pdu, 2, e.dn.to_string().as_bytes(), &ber);
    let ProtocolOp::SearchResultEntry(r) = LdapMessage::decode(&pdu).unwrap().op else {
        panic!()
    };
    let names: Vec<String> = r
        .attributes
        .iter()
        .map(|a| String::from_utf8(a.description.to_vec()).unwrap())
        .collect();
    assert!(
        names.contains(&"cn".to_string()) && names.contains(&"cn;lang-fr".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"objectClass".to_string()));
    let cn = schema().attribute_type("cn").unwrap().id;
    assert_eq!(stored.attribute(cn).count(), 2);
    assert!(stored.has(cn) && !stored.has(schema().attribute_type("uidNumber").unwrap().id));
    // Back from that BER (the write-ahead log's form) to the same stored octets.
    let again = StoredEntry::from_attributes_ber(&ber, schema()).unwrap();
    assert_eq!(again, stored);
    assert!(StoredEntry::from_bytes(stored.as_bytes().into()).is_ok());
}

#[test]
fn stored_form_is_compact_and_checked() {
    let e = person();
    let stored = e.to_stored();
    let ber = stored.to_attributes_ber(schema());
    assert!(
        stored.as_bytes().len() < ber.len(),
        "{} >= {}",
        stored.as_bytes().len(),
        ber.len()
    );
    // typesOnly: the SET is empty.
    let cn = schema().attribute_type("cn").unwrap().id;
    let a = stored.attribute(cn).next().unwrap();
    let mut out = Vec::new();
    a.write_ber("cn", true, &mut out);
    assert_eq!(out, b"\x30\x06\x04\x02cn\x31\x00");
    // Every truncation and many one-octet changes are refused or read without panicking.
    let bytes = stored.as_bytes();
    for len in 0..bytes.len() {
        let cut = &bytes[..len];
        let view = larch_model::entry::StoredRef::new(cut);
        let _ = view.attributes().count();
        if len > 0 {
            assert!(
                StoredEntry::from_bytes(cut.into()).is_err()
                    || view.attributes().count() < stored.attributes().count(),
                "truncation at {len} accepted as complete"
            );
        }
    }
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut changed = bytes.to_vec();
            changed[i] ^= mask;
            let view = larch_model::entry::StoredRef::new(&changed);
            let _ = view.attributes().map(|a| a.values.iter().count()).sum::<usize>();
            let _ = view.validate();
        }
    }
    // Out-of-order attributes are refused.
    let mut swapped = Vec::new();
    let attrs: Vec<_> = stored.attributes().collect();
    let whole = |a: &larch_model::entry::StoredAttribute<'_>| {
        let start = a.values_ber.as_ptr() as usize - bytes.as_ptr() as usize;
        start + a.values_ber.len()
    };
    let first_end = whole(&attrs[0]);
    let second_end = whole(&attrs[1]);
    swapped.extend_from_slice(&bytes[first_end..second_end]);
    swapped.extend_from_slice(&bytes[..first_end]);
    assert!(StoredEntry::from_bytes(swapped.into()).is_err());
}

fn modify(
    e: &Entry,
    changes: &[(ModifyOperation, &str, &[&str])],
    permissive: bool,
) -> Result<Entry, ModelError> {
    let values: Vec<Vec<&[u8]>> = changes
        .iter()
        .map(|(_, _, vs)| vs.iter().map(|v| v.as_bytes()).collect())
        .collect();
    let list: Vec<Change<'_>> = changes
        .iter()
        .zip(&values)
        .map(|((op, d, _), vs)| Change {
            operation: *op,
            modification: PartialAttribute {
                description: d.as_bytes(),
                values: SeqOf::from_items(vs),
            },
        })
        .collect();
    let mut copy = e.clone();
    apply_changes(
        &mut copy,
        SeqOf::from_items(&list),
        schema(),
        ModifyOptions {
            permissive,
            internal: false,
        },
    )?;
    Ok(copy)
}

#[test]
fn modifications_apply_in_order_and_fail_with_their_codes() {
    use ModifyOperation::*;
    let e = person();
    let cn = schema().attribute_type("cn").unwrap().id;
    let m = modify(
        &e,
        &[
            (Add, "cn", &["Babs J"]),
            (Delete, "cn", &["babs jensen"]),
            (Replace, "mail", &["b@example.com"]),
        ],
        false,
    )
    .unwrap();
    let cns: Vec<&[u8]> = m
        .attribute(cn, &Default::default())
        .unwrap()
        .values
        .iter()
        .map(Vec::as_slice)
        .collect();
    assert_eq!(cns, [&b"Barbara Jensen"[..], b"Babs J"]);
    let m = modify(&e, &[(Increment, "employeeNumber", &["5"])], false);
    // employeeNumber is a directory string in inetOrgPerson, not an integer.
    assert_eq!(code(m), ResultCode::CONSTRAINT_VIOLATION);
    let cases: Vec<(Changes<'_>, ResultCode)> = vec![
        (
            vec![(Add, "cn", &["BARBARA JENSEN"])],
            ResultCode::ATTRIBUTE_OR_VALUE_EXISTS,
        ),
        (vec![(Delete, "cn", &["nobody"])], ResultCode::NO_SUCH_ATTRIBUTE),
        (vec![(Delete, "roomNumber", &[])], ResultCode::NO_SUCH_ATTRIBUTE),
        (vec![(Delete, "uid", &[])], ResultCode::NOT_ALLOWED_ON_RDN),
        (vec![(Replace, "uid", &["other"])], ResultCode::NOT_ALLOWED_ON_RDN),
        (vec![(Delete, "sn", &[])], ResultCode::OBJECT_CLASS_VIOLATION),
        (
            vec![(Add, "noSuchAttr", &["x"])],
            ResultCode::UNDEFINED_ATTRIBUTE_TYPE,
        ),
        (vec![(Add, "mail", &[])], ResultCode::PROTOCOL_ERROR),
        (
            vec![(Replace, "displayName", &["a", "b"])],
            ResultCode::CONSTRAINT_VIOLATION,
        ),
        (
            vec![(Add, "createTimestamp", &["20260101000000Z"])],
            ResultCode::CONSTRAINT_VIOLATION,
        ),
        (
            vec![(Replace, "objectClass", &["top", "account"])],
            ResultCode::OBJECT_CLASS_MODS_PROHIBITED,
        ),
    ];
    for (changes, expected) in cases {
        assert_eq!(code(modify(&e, &changes, false)), expected, "{changes:?}");
    }
    // Permissive Modify: re-adding and deleting what is absent are not errors.
    modify(
        &e,
        &[
            (Add, "cn", &["babs jensen"]),
            (Delete, "cn", &["nobody"]),
            (Delete, "roomNumber", &[]),
        ],
        true,
    )
    .unwrap();
}

#[test]
fn increment_changes_integers() {
    let e = entry(
        "uid=u,dc=example,dc=com",
        &[
            ("objectClass", &["account", "posixAccount"]),
            ("uid", &["u"]),
            ("cn", &["u"]),
            ("uidNumber", &["1000"]),
            ("gidNumber", &["100"]),
            ("homeDirectory", &["/home/u"]),
        ],
    )
    .unwrap();
    check_entry(&e, schema()).unwrap();
    let m = modify(
        &e,
        &[(ModifyOperation::Increment, "uidNumber", &["-1001"])],
        false,
    )
    .unwrap();
    let id = schema().attribute_type("uidNumber").unwrap().id;
    assert_eq!(
        m.attribute(id, &Default::default()).unwrap().values,
        [b"-1".to_vec()]
    );
    assert_eq!(
        code(modify(
            &e,
            &[(ModifyOperation::Increment, "uidNumber", &["x"])],
            false
        )),
        ResultCode::INVALID_ATTRIBUTE_SYNTAX
    );
    // Ordering by integerOrderingMatch, numerically rather than as text.
    for (filter, expected) in [
        ("(uidNumber>=999)", Tri::True),
        ("(uidNumber>=1001)", Tri::False),
        ("(uidNumber<=1000)", Tri::True),
        ("(uidNumber<=99)", Tri::False),
        ("(uidNumber>=-5)", Tri::True),
        ("(uidNumber>=abc)", Tri::Undefined),
    ] {
        assert_eq!(eval(filter, &e), expected, "{filter}");
    }
}

fn eval(filter: &str, e: &Entry) -> Tri {
    let f = OwnedFilter::parse(filter).unwrap();
    let compiled = CompiledFilter::compile(f.as_filter(), schema());
    let stored: StoredEntry = e.to_stored();
    compiled.evaluate(stored.as_ref(), Some(&e.dn), schema(), &mut Vec::new())
}

#[test]
fn filter_evaluation_is_three_valued() {
    use Tri::*;
    let e = person();
    let cases = [
        ("(cn=babs   JENSEN)", True),
        ("(cn=Nobody)", False),
        ("(objectClass=inetorgperson)", True),
        ("(objectClass=2.16.840.1.113730.3.2.2)", True),
        ("(objectClass=account)", False),
        ("(cn=Bar*Jen*)", True),
        ("(cn=*jeanson)", True),
        ("(cn;lang-fr=*jeanson)", True),
        ("(cn;lang-de=*jeanson)", False),
        ("(cn=*xyz*)", False),
        ("(name=Barbara Jensen)", True),
        ("(mail=*)", True),
        ("(roomNumber=*)", False),
        ("(noSuchAttribute=*)", False),
        ("(noSuchAttribute=x)", Undefined),
        ("(!(noSuchAttribute=x))", Undefined),
        ("(|(noSuchAttribute=x)(uid=bjensen))", True),
        ("(&(noSuchAttribute=x)(uid=nobody))", False),
        ("(&(noSuchAttribute=x)(uid=bjensen))", Undefined),
        ("(&)", True),
        ("(|)", False),
        ("(!(&))", False),
        ("(telephoneNumber=+14085551862)", True),
        // uid has no ORDERING rule: ordering assertions on it are Undefined.
        ("(uid>=bjensen)", Undefined),
        ("(sn~=jensen)", True),
        ("(sn~=jenssen)", True),
        ("(sn~=smith)", False),
        ("(cn:caseExactMatch:=Babs Jensen)", True),
        ("(cn:caseExactMatch:=babs jensen)", False),
        ("(:caseIgnoreMatch:=barbara)", True),
        ("(ou:dn:=people)", True),
        ("(ou=people)", False),
        ("(:dn:caseIgnoreMatch:=People)", True),
        ("(cn:noSuchRule:=x)", Undefined),
        ("(cn:integerMatch:=1)", Undefined),
        ("(description=*4th*)", True),
        ("(mail=bjensen@EXAMPLE.com)", True),
    ];
    for (filter, expected) in cases {
        assert_eq!(eval(filter, &e), expected, "{filter}");
    }
}

#[test]
fn deep_filters_evaluate_without_recursion() {
    let e = person();
    let n = larch_proto::limits::MAX_FILTER_DEPTH;
    let deep = format!("{}(uid=bjensen){}", "(!".repeat(n), ")".repeat(n));
    assert_eq!(eval(&deep, &e), Tri::True);
    // Around the depth the evaluator tries first with a small stack, and below the limit.
    for n in [1, 7, 8, 9, 10, n - 1] {
        let chain = format!("{}(uid=bjensen){}", "(!".repeat(n), ")".repeat(n));
        let expected = if n % 2 == 0 { Tri::True } else { Tri::False };
        assert_eq!(eval(&chain, &e), expected, "{n} nested nots");
        let nested = format!("{}(uid=bjensen){}", "(&(sn=jensen)".repeat(n), ")".repeat(n));
        assert_eq!(eval(&nested, &e), Tri::True, "{n} nested ands");
        let missing = format!(
            "{}(uid=nobody){}",
            "(|(noSuchAttribute=x)".repeat(n),
            ")".repeat(n)
        );
        assert_eq!(eval(&missing, &e), Tri::Undefined, "{n} nested ors");
    }
    let wide = format!("(|{}(uid=bjensen))", "(uid=x)".repeat(500));
    assert_eq!(eval(&wide, &e), Tri::True);
    let _ = Dn::default();
}

#[test]
fn object_class_assertions_match_subclasses() {
    // As slapd's objectSubClassMatch: an entry listing only inetOrgPerson is a person.
    let e = entry(
        "cn=x,dc=example,dc=com",
        &[
            ("objectClass", &["inetOrgPerson"]),
            ("cn", &["x"]),
            ("sn", &["y"]),
        ],
    )
    .unwrap();
    for (filter, expected) in [
        ("(objectClass=inetOrgPerson)", Tri::True),
        ("(objectClass=organizationalPerson)", Tri::True),
        ("(objectClass=person)", Tri::True),
        ("(objectClass=2.5.6.6)", Tri::True),
        ("(objectClass=top)", Tri::True),
        ("(objectClass=organizationalUnit)", Tri::False),
        ("(objectClass=noSuchClass)", Tri::False),
    ] {
        assert_eq!(eval(filter, &e), expected, "{filter}");
    }
    let p = entry(
        "cn=x,dc=example,dc=com",
        &[("objectClass", &["person"]), ("cn", &["x"]), ("sn", &["y"])],
    )
    .unwrap();
    assert_eq!(
        eval("(objectClass=inetOrgPerson)", &p),
        Tri::False,
        "a superclass is not a subclass"
    );
}

#[test]
fn hidden_types_make_their_assertions_undefined() {
    use Tri::*;
    let e = person();
    let s = schema();
    let stored = e.to_stored();
    let id = |n: &str| s.attribute_type(n).unwrap().id;
    let hide_mail = |t| t == id("mail");
    let hide_cn = |t| t == id("cn");
    let cases: [(&str, &dyn Fn(_) -> bool, Tri, Tri); 8] = [
        ("(mail=*)", &hide_mail, True, Undefined),
        ("(!(mail=*))", &hide_mail, False, Undefined),
        ("(|(mail=x)(uid=bjensen))", &hide_mail, True, True),
        ("(&(mail=*)(uid=bjensen))", &hide_mail, True, Undefined),
        // `name` reads cn (a subtype), so hiding cn hides it.
        ("(name=Babs Jensen)", &hide_cn, True, Undefined),
        ("(sn=Jensen)", &hide_cn, True, True),
        // A typeless extensible match reads every type its rule applies to.
        ("(:caseIgnoreMatch:=barbara)", &hide_cn, True, Undefined),
        ("(uid=bjensen)", &hide_mail, True, True),
    ];
    for (text, hidden, before, after) in cases {
        let f = OwnedFilter::parse(text).unwrap();
        let compiled = CompiledFilter::compile(f.as_filter(), s);
        let eval = |c: &CompiledFilter| c.evaluate(stored.as_ref(), Some(&e.dn), s, &mut Vec::new());
        assert_eq!(eval(&compiled), before, "{text}");
        let restricted = compiled.hide(hidden, s);
        assert_eq!(restricted.is_some(), compiled.reads_any(hidden, s), "{text}");
        let r = restricted.as_ref().unwrap_or(&compiled);
        assert_eq!(eval(r), after, "{text} restricted");
    }
    let f = OwnedFilter::parse("(&(mail=*)(|(name=x)(!(uid=y))))").unwrap();
    let compiled = CompiledFilter::compile(f.as_filter(), s);
    let types = compiled.tested_types(s);
    for n in ["mail", "name", "cn", "sn", "uid"] {
        assert!(types.contains(&id(n)), "{n}");
    }
    assert!(!types.contains(&id("description")));
    assert!(compiled.hide(&|t| t == id("description"), s).is_none());
}

#[test]
fn the_in_chain_rule_reads_transitive_member_of_or_waits_for_the_server() {
    let mut e = entry(
        "cn=dev,ou=groups,dc=example,dc=com",
        &[
            ("objectClass", &["groupOfNames"]),
            ("cn", &["dev"]),
            ("member", &["uid=a,dc=example,dc=com"]),
        ],
    )
    .unwrap();
    let chain = schema().attribute_type("transitiveMemberOf").unwrap().id;
    let none = larch_model::entry::Options::none();
    e.push_value(chain, &none, b"cn=Staff,ou=Groups,dc=example,dc=com".to_vec());
    let rule = "1.2.840.113556.1.4.1941";
    // On memberOf: the entry's transitiveMemberOf, compared as DNs.
    for (filter, expected) in [
        (
            format!("(memberOf:{rule}:=cn=staff,ou=groups,dc=example,dc=com)"),
            Tri::True,
        ),
        (
            format!("(memberOf:{rule}:=cn=other,ou=groups,dc=example,dc=com)"),
            Tri::False,
        ),
        (
            "(memberOf:inChainMatch:=CN=STAFF, ou=groups, dc=example, dc=com)".to_string(),
            Tri::True,
        ),
        // Any other attribute, or none: Undefined.
        (format!("(cn:{rule}:=dev)"), Tri::Undefined),
        (
            format!("(:{rule}:=cn=staff,ou=groups,dc=example,dc=com)"),
            Tri::Undefined,
        ),
        // On member: Undefined until the server resolves it.
        (
            format!("(member:{rule}:=uid=a,dc=example,dc=com)"),
            Tri::Undefined,
        ),
    ] {
        assert_eq!(eval(&filter, &e), expected, "{filter}");
    }
    // Resolved: the groups the asserted entry belongs to, by the caller's identifiers.
    let f = OwnedFilter::parse(&format!(
        "(&(cn=dev)(member:{rule}:=uid=a,dc=example,dc=com)(!(uniqueMember:{rule}:=uid=a,dc=example,dc=com)))"
    ))
    .unwrap();
    let mut compiled = CompiledFilter::compile(f.as_filter(), schema());
    assert!(compiled.has_in_chain_members());
    assert_eq!(compiled.in_chain_entries(b"uid=a,dc=example,dc=com"), None);
    let asked = std::cell::Cell::new(0);
    compiled.resolve_in_chain(&|asserted| {
        assert_eq!(asserted, b"uid=a,dc=example,dc=com");
        asked.set(asked.get() + 1);
        vec![9, 7, 9]
    });
    // One value, resolved once for both assertions.
    assert_eq!(asked.get(), 1);
    assert!(!compiled.has_in_chain_members());
    assert!(!compiled.needs_dn());
    assert_eq!(
        compiled.in_chain_entries(b"uid=a,dc=example,dc=com"),
        Some(&[7, 9][..])
    );
    let stored = e.to_stored();
    let eval_as =
        |c: &CompiledFilter, id| c.evaluate_entry(stored.as_ref(), id, None, schema(), &mut Vec::new());
    // In the chain through member, and so through uniqueMember: `(!...)` is FALSE.
    assert_eq!(eval_as(&compiled, 7), Tri::False);
    let f = OwnedFilter::parse(&format!("(member:{rule}:=uid=a,dc=example,dc=com)")).unwrap();
    let mut compiled = CompiledFilter::compile(f.as_filter(), schema());
    compiled.resolve_in_chain(&|_| vec![7]);
    assert_eq!(eval_as(&compiled, 7), Tri::True);
    assert_eq!(eval_as(&compiled, 8), Tri::False);
    // Without the entry's identifier: Undefined.
    assert_eq!(
        compiled.evaluate(stored.as_ref(), Some(&e.dn), schema(), &mut Vec::new()),
        Tri::Undefined
    );
    let mut compiled = CompiledFilter::compile(f.as_filter(), schema());
    compiled.resolve_in_chain(&|_| Vec::new());
    assert_eq!(eval_as(&compiled, 7), Tri::False);
}
