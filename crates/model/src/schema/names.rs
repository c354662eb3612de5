//! The hash of the schema's name tables ([`NameMap`]).
//!
//! Every filter, attribute list and DN a client sends is resolved through these tables,
//! several lookups per request, so their hash is on the request path. The std hasher
//! (SipHash) defends a table against keys chosen to collide; these tables hold only the
//! schema's own names and OIDs, fixed at load, and a client's name is only looked up, never
//! inserted, so that defence buys nothing here. This is the multiply-rotate hash rustc uses
//! for its own tables (written out rather than taken from a crate: a dozen lines), with a
//! final fold so that the low bits the table indexes by depend on every input word.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A table keyed by lower-case schema names and OIDs.
pub(crate) type NameMap<V> = HashMap<Box<str>, V, BuildHasherDefault<NameHasher>>;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NameHasher(u64);

const SEED: u64 = 0x517c_c1b7_2722_0a95;

impl NameHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, b: u8) {
        self.add(u64::from(b));
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn names_that_differ_in_any_octet_spread_over_the_low_bits() {
        let build = BuildHasherDefault::<NameHasher>::default();
        let names = [
            "cn",
            "sn",
            "uid",
            "mail",
            "objectclass",
            "2.5.4.3",
            "2.5.4.4",
            "userpassword",
        ];
        let mut low: Vec<u64> = names.iter().map(|n| build.hash_one(n) & 0xff).collect();
        low.sort_unstable();
        low.dedup();
        // Eight names into 256 buckets: a hash that ignored most octets would collide.
        assert!(low.len() >= 7, "{low:?}");
        assert_ne!(build.hash_one("2.5.4.3"), build.hash_one("2.5.4.4"));
        assert_ne!(build.hash_one("abcdefgh1"), build.hash_one("abcdefgh2"));
    }
}
