//! Parses arbitrary octets as an RFC 4514 DN and normalizes it with the shipped schema.
//! Properties checked: no panic; a parsed DN prints to text that parses to the same DN; a
//! normalized DN re-read from its own text normalizes to itself, its parent is an ancestor
//! of it, and its depth is the number of RDNs.
#![no_main]

use std::sync::OnceLock;

use larch_model::dn::{Dn, NormDn};
use larch_model::schema::Schema;
use libfuzzer_sys::fuzz_target;

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| Schema::builtin().expect("the shipped schema loads"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(dn) = Dn::parse(data) else { return };
    let text = dn.to_string();
    let reparsed = Dn::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(reparsed, dn, "{text:?}");
    let Ok(norm) = NormDn::normalize(&dn, schema()) else {
        return;
    };
    assert_eq!(norm.depth(), dn.rdns.len());
    if let Some(parent) = norm.parent() {
        assert!(
            parent.is_ancestor_of(&norm) && norm.is_child_of(&parent),
            "{norm:?}"
        );
    }
    // A NormDn is a map key, never parsed back in the product. Its text reads back as the
    // same entry when every key is itself a valid value whose key is the same: true of the
    // plain string rules. Keys of other rules need not be (integers, times, and
    // caseIgnoreListMatch, whose key separates lines with NUL: found by this target).
    let string_keys = dn.rdns.iter().flat_map(|r| &r.avas).all(|ava| {
        schema()
            .attribute_type(&ava.attr)
            .and_then(|t| t.equality)
            .is_some_and(|rule| {
                matches!(
                    rule.name,
                    "caseIgnoreMatch" | "caseExactMatch" | "caseIgnoreIA5Match" | "caseExactIA5Match"
                )
            })
    });
    if string_keys {
        if let Ok((_, again)) = NormDn::parse(norm.as_str().as_bytes(), schema()) {
            assert_eq!(again, norm, "{text:?}");
        }
    }
});
