//! Parses arbitrary text as an RFC 4515 filter. Properties checked: no panic, no
//! unbounded recursion; an accepted filter formats to a string that parses to the same
//! BER, and that string is a fixed point of parse-then-format.
#![no_main]

use larch_proto::{Filter, OwnedFilter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(filter) = OwnedFilter::parse(text) else {
        return;
    };
    Filter::from_ber(filter.as_ber()).expect("a parsed filter must be valid BER");
    let printed = filter.to_string();
    let reparsed = OwnedFilter::parse(&printed).unwrap_or_else(|e| panic!("{text:?} -> {printed:?}: {e}"));
    assert_eq!(reparsed.as_ber(), filter.as_ber(), "{text:?} -> {printed:?}");
    assert_eq!(reparsed.to_string(), printed);
});
