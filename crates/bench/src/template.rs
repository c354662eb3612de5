//! Filter templates (`(cn={})`) and value files (one value per line), the way DSRK's
//! searchrate and SLAMD substitute random values into a filter.

use std::path::Path;

use larch_proto::{FilterParseError, OwnedFilter};

use crate::rng::Rng;

/// The placeholder in a template.
pub const PLACEHOLDER: &str = "{}";

/// Why a template was refused.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The template has no `{}`.
    #[error("filter template `{0}` has no `{{}}` placeholder")]
    NoPlaceholder(String),
    /// With a sample value substituted, the filter does not parse.
    #[error("filter template `{template}` is not a valid filter: {source}")]
    Invalid {
        /// The template.
        template: String,
        /// The parse error.
        source: FilterParseError,
    },
}

/// An RFC 4515 filter with `{}` placeholders, each replaced by the (escaped) value.
///
/// ```
/// use larch_bench::template::FilterTemplate;
/// let t = FilterTemplate::parse("(&(objectClass=person)(cn={}))").unwrap();
/// let mut s = String::new();
/// t.render(b"O'Brien (temp)", &mut s);
/// assert_eq!(s, r"(&(objectClass=person)(cn=O'Brien \28temp\29))");
/// assert_eq!(t.build(b"x", &mut s).unwrap().to_string(), "(&(objectClass=person)(cn=x))");
/// ```
#[derive(Debug, Clone)]
pub struct FilterTemplate {
    parts: Vec<String>,
}

impl FilterTemplate {
    /// Splits a template at its placeholders and checks that it yields valid filters.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let parts: Vec<String> = template.split(PLACEHOLDER).map(String::from).collect();
        if parts.len() < 2 {
            return Err(TemplateError::NoPlaceholder(template.to_string()));
        }
        let t = FilterTemplate { parts };
        let mut s = String::new();
        t.build(b"sample", &mut s)
            .map_err(|source| TemplateError::Invalid {
                template: template.to_string(),
                source,
            })?;
        Ok(t)
    }

    /// A template that is a fixed filter (no placeholder); used for constant searches.
    pub fn fixed(filter: &str) -> Result<Self, TemplateError> {
        OwnedFilter::parse(filter).map_err(|source| TemplateError::Invalid {
            template: filter.to_string(),
            source,
        })?;
        Ok(FilterTemplate {
            parts: vec![filter.to_string()],
        })
    }

    /// Writes the filter string for `value` into `out` (cleared first).
    pub fn render(&self, value: &[u8], out: &mut String) {
        out.clear();
        let mut parts = self.parts.iter();
        if let Some(first) = parts.next() {
            out.push_str(first);
        }
        for part in parts {
            escape_filter_value(value, out);
            out.push_str(part);
        }
    }

    /// Renders and parses the filter for `value`; `scratch` holds the string form.
    pub fn build(&self, value: &[u8], scratch: &mut String) -> Result<OwnedFilter, FilterParseError> {
        self.render(value, scratch);
        OwnedFilter::parse(scratch)
    }

    /// The number of placeholders.
    pub fn placeholders(&self) -> usize {
        self.parts.len() - 1
    }
}

/// Appends `value` escaped for an RFC 4515 assertion value: `*`, `(`, `)`, `\`, NUL and
/// every octet outside printable ASCII become `\xx`, so any octets give a valid filter
/// that asserts exactly those octets.
pub fn escape_filter_value(value: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &c in value {
        if matches!(c, b'*' | b'(' | b')' | b'\\') || !(0x20..0x7f).contains(&c) {
            out.push('\\');
            out.push(HEX[usize::from(c >> 4)] as char);
            out.push(HEX[usize::from(c & 15)] as char);
        } else {
            out.push(c as char);
        }
    }
}

/// A value file held in one buffer: one value per line, in file order. Empty lines and a
/// trailing `\r` are dropped; a file with no value is an error.
///
/// ```
/// use larch_bench::template::ValueFile;
/// let v = ValueFile::from_bytes(b"alice\r\nbob\n\ncarol".to_vec()).unwrap();
/// assert_eq!(v.len(), 3);
/// assert_eq!(v.get(1), b"bob");
/// assert_eq!(v.get(2), b"carol");
/// ```
#[derive(Debug, Clone)]
pub struct ValueFile {
    data: Vec<u8>,
    /// `(start, end)` of each value in `data`.
    spans: Vec<(usize, usize)>,
}

impl ValueFile {
    /// Reads a value file.
    pub fn read(path: &Path) -> std::io::Result<Self> {
        let data = std::fs::read(path)?;
        Self::from_bytes(data).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }

    /// Splits a buffer into values.
    pub fn from_bytes(data: Vec<u8>) -> std::io::Result<Self> {
        let mut spans = Vec::new();
        let mut start = 0;
        while start < data.len() {
            let end = data[start..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(data.len(), |p| start + p);
            let mut value_end = end;
            if value_end > start && data[value_end - 1] == b'\r' {
                value_end -= 1;
            }
            if value_end > start {
                spans.push((start, value_end));
            }
            start = end + 1;
        }
        if spans.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "no values (empty file)",
            ));
        }
        Ok(ValueFile { data, spans })
    }

    /// A value list from strings (tests, fixed lists).
    pub fn from_values<S: AsRef<[u8]>>(values: &[S]) -> std::io::Result<Self> {
        let mut data = Vec::new();
        for v in values {
            data.extend_from_slice(v.as_ref());
            data.push(b'\n');
        }
        Self::from_bytes(data)
    }

    /// The number of values (never 0).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Always false: a value file holds at least one value.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Value `i` (`i < len()`).
    pub fn get(&self, i: usize) -> &[u8] {
        let (s, e) = self.spans[i];
        &self.data[s..e]
    }

    /// A uniformly random value.
    pub fn pick(&self, rng: &mut Rng) -> &[u8] {
        self.get(rng.index(self.spans.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_substitute_every_placeholder_and_escape() {
        let t = FilterTemplate::parse("(|(cn={})(sn={}))").unwrap();
        assert_eq!(t.placeholders(), 2);
        let mut s = String::new();
        t.render(b"a*b", &mut s);
        assert_eq!(s, r"(|(cn=a\2ab)(sn=a\2ab))");
        let f = t.build(b"a*b", &mut s).unwrap();
        // The escaped star is a literal: an OR of two equality filters, not substrings.
        assert_eq!(f.to_string(), r"(|(cn=a\2ab)(sn=a\2ab))");
        t.render(b"back\\slash \x00 caf\xc3\xa9", &mut s);
        assert_eq!(
            s,
            r"(|(cn=back\5cslash \00 caf\c3\a9)(sn=back\5cslash \00 caf\c3\a9))"
        );
        assert!(t.build(b"(", &mut s).is_ok());
    }

    #[test]
    fn bad_templates_are_refused() {
        assert!(matches!(
            FilterTemplate::parse("(cn=x)"),
            Err(TemplateError::NoPlaceholder(_))
        ));
        assert!(matches!(
            FilterTemplate::parse("(cn={}"),
            Err(TemplateError::Invalid { .. })
        ));
        assert!(FilterTemplate::fixed("(objectClass=*)").is_ok());
        assert!(FilterTemplate::fixed("(objectClass=*").is_err());
        let mut s = String::new();
        FilterTemplate::fixed("(uid=x)")
            .unwrap()
            .render(b"ignored", &mut s);
        assert_eq!(s, "(uid=x)");
    }

    #[test]
    fn value_files_split_lines() {
        let v = ValueFile::from_bytes(b"\n\none\r\ntwo\n\r\nthree\n".to_vec()).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(
            (v.get(0), v.get(1), v.get(2)),
            (&b"one"[..], &b"two"[..], &b"three"[..])
        );
        assert!(ValueFile::from_bytes(b"\n\r\n".to_vec()).is_err());
        assert!(ValueFile::from_bytes(Vec::new()).is_err());
        let mut r = Rng::new(5);
        let mut counts = [0; 3];
        for _ in 0..3000 {
            match v.pick(&mut r) {
                b"one" => counts[0] += 1,
                b"two" => counts[1] += 1,
                b"three" => counts[2] += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }

    #[test]
    fn value_files_read_from_disk() {
        let dir = std::env::temp_dir().join(format!("larch-bench-values-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("v.txt");
        std::fs::write(&p, "x\ny\n").unwrap();
        let v = ValueFile::read(&p).unwrap();
        assert_eq!(v.len(), 2);
        std::fs::write(&p, "").unwrap();
        let e = ValueFile::read(&p).unwrap_err();
        assert!(e.to_string().contains("v.txt"), "{e}");
        assert!(ValueFile::read(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
