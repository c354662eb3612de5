//! Parses arbitrary text as a schema file in both formats (OpenLDAP `.schema` and LDIF)
//! and as a single element description. Properties checked: no panic, no unbounded
//! recursion; every accepted element prints to text that parses back to an equal
//! element, and that text is a fixed point of parse-then-print.
#![no_main]

use larch_model::schema::{parse_element, parse_file, Element, ElementKind, OidMacros, SchemaFormat};
use libfuzzer_sys::fuzz_target;

fn check(element: &Element, input: &str) {
    let printed = element.to_string();
    let reparsed =
        parse_element(element.kind(), &printed).unwrap_or_else(|e| panic!("{input:?} -> {printed:?}: {e}"));
    assert_eq!(&reparsed, element, "{input:?} -> {printed:?}");
    assert_eq!(reparsed.to_string(), printed, "{input:?}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [SchemaFormat::OpenLdap, SchemaFormat::Ldif] {
        if let Ok(definitions) = parse_file("fuzz", text, format, &mut OidMacros::new()) {
            for definition in &definitions {
                check(&definition.element, text);
            }
        }
    }
    let kind = ElementKind::ALL[text.len() % ElementKind::ALL.len()];
    if let Ok(element) = parse_element(kind, text) {
        check(&element, text);
    }
});
