//! Printing and parsing are inverse: every shipped element prints to text that parses
//! back to an equal element (and that text is a fixed point), also when the text is
//! re-spaced, re-cased and re-quoted the ways real files are; and so does every element
//! built from arbitrary names, descriptions and fields.

use larch_model::schema::{
    builtin, parse_element, parse_file, AttributeTypeDescription, AttributeUsage, Element, ElementKind,
    Extension, LdapSyntaxDescription, MatchingRuleUseDescription, ObjectClassDescription, ObjectClassKind,
    OidMacros,
};
use proptest::prelude::*;

/// Every element of every shipped file.
fn shipped() -> Vec<Element> {
    let mut elements = Vec::new();
    for file in builtin::ALL {
        let definitions = parse_file(file.name, file.text, file.format, &mut OidMacros::new()).unwrap();
        elements.extend(definitions.into_iter().map(|d| d.element));
    }
    elements
}

#[test]
fn every_shipped_element_prints_and_reparses_equal() {
    let elements = shipped();
    assert!(elements.len() > 300, "{}", elements.len());
    for element in &elements {
        let printed = element.to_string();
        let reparsed = parse_element(element.kind(), &printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
        assert_eq!(&reparsed, element, "{printed}");
        assert_eq!(reparsed.to_string(), printed);
    }
}

const KEYWORDS: &[&str] = &[
    "NAME",
    "DESC",
    "OBSOLETE",
    "SUP",
    "EQUALITY",
    "ORDERING",
    "SUBSTR",
    "SYNTAX",
    "SINGLE-VALUE",
    "COLLECTIVE",
    "NO-USER-MODIFICATION",
    "USAGE",
    "ABSTRACT",
    "STRUCTURAL",
    "AUXILIARY",
    "MUST",
    "MAY",
];

/// Splits a printed description into tokens: `(`, `)`, `$`, quoted strings (kept with
/// their quotes and escapes) and words.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | '$' => {
                out.push(c.to_string());
                chars.next();
            }
            '\'' => {
                let mut token = String::from(chars.next().unwrap());
                for c in chars.by_ref() {
                    token.push(c);
                    if c == '\'' {
                        break;
                    }
                }
                out.push(token);
            }
            _ => {
                let mut token = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || "()$'".contains(c) {
                        break;
                    }
                    token.push(c);
                    chars.next();
                }
                out.push(token);
            }
        }
    }
    out
}

fn is_descr(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Re-spaces, re-cases and re-quotes a printed description, driven by `choices`.
fn vary(printed: &str, choices: &[u8]) -> String {
    let separators = ["", " ", "  ", "\t", "\n\t", "\r\n "];
    let mut out = String::new();
    let mut context = String::new();
    for (i, token) in tokens(printed).into_iter().enumerate() {
        let choice = choices.get(i % choices.len().max(1)).copied().unwrap_or(0);
        let keyword = KEYWORDS.contains(&token.as_str());
        let free = context != "DESC" && !context.starts_with("X-");
        let varied = if keyword && choice & 0x10 != 0 {
            token.to_ascii_lowercase()
        } else if keyword || token.starts_with("X-") || token.len() == 1 && "()$".contains(&token) {
            token.clone()
        } else if free
            && token.starts_with('\'')
            && choice & 0x20 != 0
            && is_descr(&token[1..token.len() - 1])
        {
            token[1..token.len() - 1].to_owned()
        } else if free && !token.starts_with('\'') && choice & 0x40 != 0 {
            format!("'{token}'")
        } else {
            token.clone()
        };
        // Two words need a separator between them; nothing else does.
        let word = |c: char| !c.is_whitespace() && !"()$'".contains(c);
        let needs_space = out.ends_with(word) && varied.starts_with(word);
        let separator = separators[usize::from(choice) % separators.len()];
        out.push_str(if needs_space && separator.is_empty() {
            " "
        } else {
            separator
        });
        if keyword || token.starts_with("X-") {
            context = token.clone();
        }
        out.push_str(&varied);
    }
    out
}

fn kinds() -> impl Strategy<Value = ElementKind> {
    prop_oneof![
        Just(ElementKind::AttributeType),
        Just(ElementKind::ObjectClass),
        Just(ElementKind::LdapSyntax),
        Just(ElementKind::MatchingRuleUse),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn shipped_elements_survive_reformatting(index in 0usize..10_000, choices in prop::collection::vec(any::<u8>(), 1..64)) {
        let elements = shipped();
        let element = &elements[index % elements.len()];
        let varied = vary(&element.to_string(), &choices);
        let reparsed = parse_element(element.kind(), &varied);
        prop_assert_eq!(reparsed.as_ref(), Ok(element), "{}", varied);
    }

    #[test]
    fn generated_elements_print_and_reparse_equal(element in elements()) {
        let printed = element.to_string();
        let reparsed = parse_element(element.kind(), &printed);
        prop_assert_eq!(reparsed.as_ref(), Ok(&element), "{}", printed);
        prop_assert_eq!(reparsed.unwrap().to_string(), printed);
    }

    #[test]
    fn arbitrary_text_never_panics_and_accepted_text_is_stable(kind in kinds(), text in "[ -~\\t\\né'()$\\\\]{0,120}") {
        if let Ok(element) = parse_element(kind, &text) {
            let printed = element.to_string();
            let reparsed = parse_element(kind, &printed);
            prop_assert_eq!(reparsed.as_ref(), Ok(&element), "{:?} -> {}", text, printed);
        }
    }
}

fn descr() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9-]{0,12}"
}

fn oid() -> impl Strategy<Value = String> {
    prop::collection::vec(0u32..100_000, 1..8)
        .prop_map(|arcs| arcs.iter().map(u32::to_string).collect::<Vec<_>>().join("."))
}

fn reference() -> impl Strategy<Value = String> {
    prop_oneof![descr(), oid()]
}

fn free_text() -> impl Strategy<Value = String> {
    // Quotes, backslashes, things that look like escapes, parentheses, non-ASCII,
    // newlines: what printing must escape, or must not mangle.
    let piece = prop_oneof![
        "[ -~é漢\\n\\t]{0,6}",
        Just("'".to_owned()),
        Just("\\".to_owned()),
        Just("\\27".to_owned()),
        Just("\\5C".to_owned()),
        Just("\\4a".to_owned()),
        Just("\\c3\\a9".to_owned()),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

fn extensions() -> impl Strategy<Value = Vec<Extension>> {
    prop::collection::vec(
        ("X-[A-Z_-]{1,10}", prop::collection::vec(free_text(), 0..3))
            .prop_map(|(name, values)| Extension { name, values }),
        0..3,
    )
}

fn usage() -> impl Strategy<Value = AttributeUsage> {
    prop_oneof![
        Just(AttributeUsage::UserApplications),
        Just(AttributeUsage::DirectoryOperation),
        Just(AttributeUsage::DistributedOperation),
        Just(AttributeUsage::DsaOperation),
    ]
}

fn class_kind() -> impl Strategy<Value = ObjectClassKind> {
    prop_oneof![
        Just(ObjectClassKind::Abstract),
        Just(ObjectClassKind::Structural),
        Just(ObjectClassKind::Auxiliary)
    ]
}

fn attribute_type() -> impl Strategy<Value = Element> {
    (
        (
            oid(),
            prop::collection::vec(descr(), 0..4),
            prop::option::of(free_text()),
            any::<bool>(),
        ),
        (
            prop::option::of(reference()),
            prop::option::of(reference()),
            prop::option::of(reference()),
            prop::option::of(reference()),
        ),
        (
            prop::option::of(oid()),
            prop::option::of(any::<u32>()),
            any::<[bool; 3]>(),
            usage(),
            extensions(),
        ),
    )
        .prop_filter("SUP or SYNTAX", |(_, (sup, ..), (syntax, ..))| {
            sup.is_some() || syntax.is_some()
        })
        .prop_map(
            |(
                (oid, names, desc, obsolete),
                (sup, equality, ordering, substr),
                (syntax, len, flags, usage, extensions),
            )| {
                Element::AttributeType(AttributeTypeDescription {
                    oid,
                    names,
                    desc,
                    obsolete,
                    sup,
                    equality,
                    ordering,
                    substr,
                    syntax_len: syntax.as_ref().and(len),
                    syntax,
                    single_value: flags[0],
                    collective: flags[1],
                    no_user_modification: flags[2],
                    usage,
                    extensions,
                })
            },
        )
}

fn object_class() -> impl Strategy<Value = Element> {
    (
        oid(),
        prop::collection::vec(descr(), 0..4),
        prop::option::of(free_text()),
        any::<bool>(),
        prop::collection::vec(reference(), 0..4),
        class_kind(),
        prop::collection::vec(reference(), 0..6),
        prop::collection::vec(reference(), 0..6),
        extensions(),
    )
        .prop_map(|(oid, names, desc, obsolete, sup, kind, must, may, extensions)| {
            Element::ObjectClass(ObjectClassDescription {
                oid,
                names,
                desc,
                obsolete,
                sup,
                kind,
                must,
                may,
                extensions,
            })
        })
}

fn elements() -> impl Strategy<Value = Element> {
    prop_oneof![
        4 => attribute_type(),
        4 => object_class(),
        1 => (oid(), prop::collection::vec(descr(), 0..2), prop::option::of(free_text()), extensions())
            .prop_map(|(oid, names, desc, extensions)| Element::LdapSyntax(LdapSyntaxDescription { oid, names, desc, extensions })),
        1 => (oid(), prop::collection::vec(descr(), 0..2), prop::option::of(free_text()), any::<bool>(), prop::collection::vec(reference(), 1..5), extensions())
            .prop_map(|(oid, names, desc, obsolete, applies, extensions)| {
                Element::MatchingRuleUse(MatchingRuleUseDescription { oid, names, desc, obsolete, applies, extensions })
            }),
    ]
}
