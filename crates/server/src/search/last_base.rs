//! The last search base a connection normalized, kept so that a client searching one base
//! again and again (an application looking users up: the same base, a new filter each
//! time) does not normalize it every time. Normalizing a DN costs a schema lookup, a syntax
//! check and an equality key per RDN, about a thousand instructions per RDN under callgrind:
//! a tenth of an authentication's search-then-bind before this cache.
//!
//! The key is the base exactly as the client sent it; the store's schema never changes
//! while the server runs, so the same text always normalizes to the same DN.

use std::sync::Mutex;

use larch_model::dn::{DnError, NormDn};
use larch_model::schema::Schema;

/// Longest base text kept (a longer one is normalized every time).
pub const MAX_CACHED_BASE: usize = 1024;

/// One connection's last normalized search base.
#[derive(Debug, Default)]
pub struct LastBase(Mutex<Option<(Box<[u8]>, NormDn)>>);

impl LastBase {
    /// `text` normalized, from the cache when it is the last base normalized.
    pub fn normalize(&self, text: &[u8], schema: &Schema) -> Result<NormDn, DnError> {
        let mut last = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((t, n)) = &*last {
            if **t == *text {
                return Ok(n.clone());
            }
        }
        let n = NormDn::from_text(text, schema)?;
        if text.len() <= MAX_CACHED_BASE {
            *last = Some((text.into(), n.clone()));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_gives_the_same_dn_and_a_new_text_replaces_it() {
        let schema = Schema::builtin().unwrap();
        let cache = LastBase::default();
        let a = b"OU=People, DC=Example,DC=com";
        let first = cache.normalize(a, &schema).unwrap();
        assert_eq!(first.as_str(), "ou=people,dc=example,dc=com");
        assert_eq!(cache.normalize(a, &schema).unwrap(), first);
        let b = cache.normalize(b"dc=example,dc=com", &schema).unwrap();
        assert_eq!(b.as_str(), "dc=example,dc=com");
        // Spelled differently, the first base is normalized again to the same DN.
        assert_eq!(
            cache.normalize(b"ou=people,dc=example,dc=com", &schema).unwrap(),
            first
        );
        // An invalid base is an error every time and does not replace the cached one.
        assert!(cache.normalize(b"not a dn", &schema).is_err());
        assert!(cache.normalize(b"not a dn", &schema).is_err());
        let cached = cache.0.lock().unwrap();
        assert_eq!(
            cached.as_ref().map(|(t, _)| &**t),
            Some(&b"ou=people,dc=example,dc=com"[..])
        );
    }
}
