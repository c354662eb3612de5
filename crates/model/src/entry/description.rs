//! Attribute descriptions (RFC 4512 section 2.5): a type and options, e.g.
//! `userCertificate;binary` or `cn;lang-fr`.

use std::fmt;

/// Options of an attribute description, normalized: lower-case, sorted, without
/// duplicates, each preceded by `;` (empty when there are none). Options are rare, so they
/// are kept as one small string.
#[derive(Clone, Eq, Default)]
pub struct Options(Box<str>);

// Compared as the strings are, but two empty sets (nearly every attribute's) without a
// call to `memcmp`: replaying a change compares the options of each attribute with its
// neighbours', and the library call was a tenth of a cluster follower's time.
impl PartialEq for Options {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && (self.0.is_empty() || self.0 == other.0)
    }
}

impl std::hash::Hash for Options {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl Ord for Options {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self.0.is_empty(), other.0.is_empty()) {
            (true, true) => std::cmp::Ordering::Equal,
            _ => self.0.cmp(&other.0),
        }
    }
}

impl PartialOrd for Options {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Options {
    /// No options.
    pub fn none() -> Self {
        Options::default()
    }

    /// True when there are no options.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The normalized text, e.g. `;binary;lang-fr`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The options one by one, without the `;`.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.split(';').filter(|o| !o.is_empty())
    }

    /// True when every option of `self` is in `other` (RFC 4512 section 2.5: a description
    /// with options is a subtype of the same description with fewer options; language tag
    /// ranges such as `lang-en-` match `lang-en-us`).
    pub fn is_subset_of(&self, other: &Options) -> bool {
        self.is_subset_of_str(other.as_str())
    }

    /// [`Options::is_subset_of`] against normalized option text such as `;lang-fr`.
    pub fn is_subset_of_str(&self, other: &str) -> bool {
        let others = || other.split(';').filter(|o| !o.is_empty());
        self.iter().all(|mine| {
            others().any(|theirs| {
                theirs == mine
                    || (mine.starts_with("lang-") && mine.ends_with('-') && theirs.starts_with(mine))
            })
        })
    }
}

impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

/// Splits `cn;lang-fr;binary` into the type (`cn`) and normalized options
/// (`;binary;lang-fr`). `None` when the text is not an attribute description: the type must
/// be a descr or numeric OID and each option `1*(ALPHA / DIGIT / "-")`.
pub fn split_description(text: &[u8]) -> Option<(&str, Options)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut parts = text.split(';');
    let ty = parts.next()?;
    if !is_type(ty) {
        return None;
    }
    let mut options: Vec<String> = Vec::new();
    for o in parts {
        if o.is_empty() || !o.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return None;
        }
        options.push(o.to_ascii_lowercase());
    }
    if options.is_empty() {
        return Some((ty, Options::none()));
    }
    options.sort();
    options.dedup();
    let mut s = String::with_capacity(options.iter().map(|o| o.len() + 1).sum());
    for o in options {
        s.push(';');
        s.push_str(&o);
    }
    Some((ty, Options(s.into_boxed_str())))
}

fn is_type(ty: &str) -> bool {
    let b = ty.as_bytes();
    match b.first() {
        Some(c) if c.is_ascii_alphabetic() => b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-'),
        Some(c) if c.is_ascii_digit() => ty.split('.').all(|n| {
            !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) && (n == "0" || !n.starts_with('0'))
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_split_and_normalize_options() {
        let (ty, o) = split_description(b"userCertificate;binary").unwrap();
        assert_eq!((ty, o.as_str()), ("userCertificate", ";binary"));
        let (ty, o) = split_description(b"cn;LANG-FR;binary;lang-fr").unwrap();
        assert_eq!((ty, o.as_str()), ("cn", ";binary;lang-fr"));
        assert_eq!(split_description(b"2.5.4.3").unwrap().0, "2.5.4.3");
        for bad in [
            &b""[..],
            b"cn;",
            b"c n",
            b"1..2",
            b"01.2",
            b"cn;a b",
            b"-cn",
            b"\xff",
        ] {
            assert!(split_description(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn option_subsets_and_language_ranges() {
        let o = |s: &str| split_description(format!("cn{s}").as_bytes()).unwrap().1;
        assert!(o("").is_subset_of(&o(";lang-fr")));
        assert!(o(";lang-fr").is_subset_of(&o(";binary;lang-fr")));
        assert!(!o(";lang-fr").is_subset_of(&o("")));
        assert!(o(";lang-en-").is_subset_of(&o(";lang-en-us")));
        assert!(!o(";lang-en").is_subset_of(&o(";lang-en-us")));
    }
}
