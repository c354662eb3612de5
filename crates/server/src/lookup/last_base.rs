//! The last search base a connection normalized, kept so that a client searching one base
//! again and again (an application looking users up: the same base, a new filter each
//! time) does not normalize it every time. Normalizing a DN costs a schema lookup, a syntax
//! check and an equality key per RDN, about a thousand instructions per RDN under callgrind:
//! a tenth of an authentication's search-then-bind before this cache.
//!
//! The key is the base exactly as the client sent it; the store's schema never changes
//! while the server runs, so the same text always normalizes to the same DN.
//!
//! A DN below that base (a Bind as the user the search just found: `uid=u1,<base>`) is
//! normalized as its leading RDNs plus the cached base ([`LastBase::normalize_dn`]). The
//! split is taken only where the text has a separator: a `,` not escaped by a backslash
//! (an odd run of backslashes before it escapes it; a `\2c` hex pair is no `,` at all;
//! RFC 4514 has no quoting). Both sides then parse on their own exactly when the whole
//! does, and the normalized DN is the normalized RDNs joined by `,`, so the result is
//! the one [`NormDn::from_text`] gives for the whole text.

use std::sync::Mutex;

use larch_model::dn::{DnError, NormDn};
use larch_model::schema::Schema;

/// Longest base text kept (a longer one is normalized every time).
pub const MAX_CACHED_BASE: usize = 1024;

/// One connection's last normalized search base. Only its connection's task touches it,
/// so the lock is never contended; it is a `Mutex` rather than a `RefCell` because the
/// search context that borrows it is held across the connection's awaits (`Send`).
#[derive(Debug, Default)]
pub struct LastBase(Mutex<Option<(Box<[u8]>, NormDn)>>);

impl LastBase {
    /// `text` normalized, from the cache when it is the last base normalized.
    pub fn normalize(&self, text: &[u8], schema: &Schema) -> Result<NormDn, DnError> {
        let mut last = self.lock();
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

    /// `text` normalized, reusing the cached base when `text` is one or more RDNs
    /// followed by `,` and exactly the cached base's text; the cache is left as it is.
    pub fn normalize_dn(&self, text: &[u8], schema: &Schema) -> Result<NormDn, DnError> {
        let base = {
            let last = self.lock();
            match &*last {
                Some((t, n)) if !n.is_root() && is_separator_before(text, t.len()) && text.ends_with(t) => {
                    Some((text.len() - t.len() - 1, n.clone()))
                }
                _ => None,
            }
        };
        if let Some((cut, base)) = base {
            if let Ok(leading) = NormDn::from_text(&text[..cut], schema) {
                if !leading.is_root() {
                    let (leading, base) = (leading.as_str(), base.as_str());
                    let mut dn = String::with_capacity(leading.len() + 1 + base.len());
                    dn.push_str(leading);
                    dn.push(',');
                    dn.push_str(base);
                    return Ok(NormDn::from_normalized(&dn));
                }
            }
        }
        NormDn::from_text(text, schema)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Box<[u8]>, NormDn)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// True when `text` has an unescaped `,` just before its last `tail_len` octets.
fn is_separator_before(text: &[u8], tail_len: usize) -> bool {
    let Some(comma) = text.len().checked_sub(tail_len + 1) else {
        return false;
    };
    if text[comma] != b',' {
        return false;
    }
    let backslashes = text[..comma].iter().rev().take_while(|&&b| b == b'\\').count();
    backslashes % 2 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dn_below_the_cached_base_normalizes_as_the_whole_text_does() {
        let schema = Schema::builtin().unwrap();
        let cache = LastBase::default();
        let base = "ou=People,dc=example,dc=com";
        cache.normalize(base.as_bytes(), &schema).unwrap();
        let cases = [
            "uid=user.1,ou=People,dc=example,dc=com",
            "UID=User.1 ,ou=People,dc=example,dc=com",
            "uid=a+cn=B,ou=People,dc=example,dc=com",
            "cn=x,uid=y,ou=People,dc=example,dc=com",
            "cn=a\\,ou=People,dc=example,dc=com",
            "cn=a\\\\,ou=People,dc=example,dc=com",
            "cn=a\\2c,ou=People,dc=example,dc=com",
            "cn=#04024869,ou=People,dc=example,dc=com",
            "cn=a;ou=People,dc=example,dc=com",
            ",ou=People,dc=example,dc=com",
            " ,ou=People,dc=example,dc=com",
            "cn=,ou=People,dc=example,dc=com",
            "nosuchtype=a,ou=People,dc=example,dc=com",
            "cn=a,,ou=People,dc=example,dc=com",
            "ou=People,dc=example,dc=com",
            "uid=u,ou=Other,dc=example,dc=com",
            "uid=u,xou=People,dc=example,dc=com",
            "",
        ];
        for text in cases {
            let whole = NormDn::from_text(text.as_bytes(), &schema);
            let via_cache = cache.normalize_dn(text.as_bytes(), &schema);
            assert_eq!(
                via_cache.is_ok(),
                whole.is_ok(),
                "{text}: {via_cache:?} vs {whole:?}"
            );
            if let (Ok(a), Ok(b)) = (&via_cache, &whole) {
                assert_eq!(a, b, "{text}");
            }
        }
        // The cache still holds the search base.
        let cached = cache.lock();
        assert_eq!(cached.as_ref().map(|(t, _)| &**t), Some(base.as_bytes()));
    }

    #[test]
    fn separators_escaped_by_an_odd_run_of_backslashes_do_not_count() {
        assert!(is_separator_before(b"a,bc", 2));
        assert!(!is_separator_before(b"a\\,bc", 2));
        assert!(is_separator_before(b"a\\\\,bc", 2));
        assert!(!is_separator_before(b"a;bc", 2));
        assert!(!is_separator_before(b"bc", 2));
    }

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
