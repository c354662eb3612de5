//! `[sasl]`: which SASL mechanisms a Bind may use, and how SASL EXTERNAL turns a client
//! certificate into an entry.
//!
//! - `mechanisms`: a subset of `["EXTERNAL", "PLAIN"]` (the default: both; names are
//!   case-insensitive; an empty list turns SASL off).
//! - `external_map`: `"subject"` (the default: the certificate's subject DN, in RFC 4514
//!   form, is the entry's DN) or a DN template such as
//!   `"uid={CN},ou=people,dc=example,dc=com"`, whose `{ATTR}` placeholders are filled with
//!   the values of that attribute in the subject (the most specific RDN's when it occurs
//!   more than once), escaped per RFC 4514 so a value cannot add RDNs. Placeholders are
//!   the attribute names of [`crate::cert_subject::ATTRIBUTE_NAMES`] (any case) or a
//!   dotted OID.
//!
//! A template is parsed here into [`MapSegment`]s; it must hold at least one placeholder,
//! and with every placeholder replaced by a plain value it must be a DN.

use larch_model::dn::Dn;
use serde::Deserialize;

use super::ConfigError;
use crate::cert_subject as subject;

/// Longest `external_map` template accepted: a DN template is a line, not a document.
pub const MAX_EXTERNAL_MAP_BYTES: usize = 4096;

/// `[sasl]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSasl {
    pub mechanisms: Option<Vec<String>>,
    pub external_map: Option<String>,
}

/// A piece of an `external_map` template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapSegment {
    /// Text copied as written.
    Text(String),
    /// The value of the subject attribute with this OID (dotted form), escaped.
    Attribute {
        /// The attribute's OID.
        oid: String,
        /// The placeholder as written, for messages.
        name: String,
    },
}

/// How SASL EXTERNAL maps a client certificate's subject to a DN.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ExternalMap {
    /// The subject DN itself, in RFC 4514 form.
    #[default]
    Subject,
    /// A DN template with placeholders.
    Template(Vec<MapSegment>),
}

impl ExternalMap {
    /// Parses the value of `sasl.external_map`.
    pub fn parse(text: &str) -> Result<ExternalMap, ConfigError> {
        let key = "sasl.external_map";
        let invalid = |m: String| ConfigError::invalid(key, m);
        if text == "subject" {
            return Ok(ExternalMap::Subject);
        }
        if text.len() > MAX_EXTERNAL_MAP_BYTES {
            return Err(invalid(format!("longer than {MAX_EXTERNAL_MAP_BYTES} bytes")));
        }
        let mut segments = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with('}') {
                return Err(invalid(format!("`{text}`: `}}` without `{{`")));
            }
            if open > 0 {
                segments.push(MapSegment::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                return Err(invalid(format!("`{text}`: `{{` without `}}`")));
            };
            let name = &after[..close];
            let Some(oid) = subject::attribute_oid(name) else {
                return Err(invalid(format!(
                    "`{{{name}}}` is not a certificate subject attribute (use one of {} or a dotted OID)",
                    subject::ATTRIBUTE_NAMES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            segments.push(MapSegment::Attribute {
                oid,
                name: name.to_string(),
            });
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            segments.push(MapSegment::Text(rest.to_string()));
        }
        if !segments.iter().any(|s| matches!(s, MapSegment::Attribute { .. })) {
            return Err(invalid(format!(
                "`{text}` is neither \"subject\" nor a template with a `{{ATTR}}` placeholder such as \
                 \"uid={{CN}},ou=people,dc=example,dc=com\""
            )));
        }
        let sample: String = segments
            .iter()
            .map(|s| match s {
                MapSegment::Text(t) => t.as_str(),
                MapSegment::Attribute { .. } => "x",
            })
            .collect();
        Dn::parse(sample.as_bytes())
            .map_err(|e| invalid(format!("`{text}` is not a DN template: {}", e.reason)))?;
        Ok(ExternalMap::Template(segments))
    }
}

/// The mechanisms a Bind may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaslMechanisms {
    /// SASL EXTERNAL (RFC 4422 appendix A): the TLS client certificate.
    pub external: bool,
    /// SASL PLAIN (RFC 4616): a name and a password.
    pub plain: bool,
}

/// `[sasl]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSettings {
    /// Mechanisms turned on.
    pub mechanisms: SaslMechanisms,
    /// How EXTERNAL finds the entry of a certificate.
    pub external_map: ExternalMap,
}

impl Default for SaslSettings {
    fn default() -> Self {
        SaslSettings {
            mechanisms: SaslMechanisms {
                external: true,
                plain: true,
            },
            external_map: ExternalMap::Subject,
        }
    }
}

impl SaslSettings {
    /// Applies the table as written over `self`.
    pub(crate) fn apply(&mut self, raw: RawSasl) -> Result<(), ConfigError> {
        if let Some(list) = raw.mechanisms {
            let mut m = SaslMechanisms {
                external: false,
                plain: false,
            };
            for (i, name) in list.iter().enumerate() {
                match name.to_ascii_uppercase().as_str() {
                    "EXTERNAL" => m.external = true,
                    "PLAIN" => m.plain = true,
                    _ => {
                        return Err(ConfigError::invalid(
                            format!("sasl.mechanisms[{i}]"),
                            format!(
                            "`{name}` is not a mechanism of this server: expected \"EXTERNAL\" or \"PLAIN\""
                        ),
                        ))
                    }
                }
            }
            self.mechanisms = m;
        }
        if let Some(map) = raw.external_map {
            self.external_map = ExternalMap::parse(&map)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        assert_eq!(ExternalMap::parse("subject").unwrap(), ExternalMap::Subject);
        let m = ExternalMap::parse("uid={CN},ou=people,dc=example,dc=com").unwrap();
        assert_eq!(
            m,
            ExternalMap::Template(vec![
                MapSegment::Text("uid=".into()),
                MapSegment::Attribute {
                    oid: "2.5.4.3".into(),
                    name: "CN".into()
                },
                MapSegment::Text(",ou=people,dc=example,dc=com".into()),
            ])
        );
        let m = ExternalMap::parse("cn={cn}+uid={2.5.4.45},o={O}").unwrap();
        let ExternalMap::Template(segs) = m else { panic!() };
        let oids: Vec<&str> = segs
            .iter()
            .filter_map(|s| match s {
                MapSegment::Attribute { oid, .. } => Some(oid.as_str()),
                MapSegment::Text(_) => None,
            })
            .collect();
        assert_eq!(oids, ["2.5.4.3", "2.5.4.45", "2.5.4.10"]);
    }

    #[test]
    fn bad_templates() {
        for bad in [
            "",
            "uid=alice,dc=example,dc=com",
            "uid={CN,dc=x",
            "uid=CN},dc=x",
            "uid={nosuch},dc=x",
            "uid={},dc=x",
            "uid={CN},,dc=x",
            "{CN}",
        ] {
            let e = ExternalMap::parse(bad).unwrap_err();
            assert_eq!(e.key(), Some("sasl.external_map"), "{bad}: {e}");
        }
    }

    #[test]
    fn mechanisms() {
        let mut s = SaslSettings::default();
        s.apply(RawSasl {
            mechanisms: Some(vec!["plain".into()]),
            external_map: None,
        })
        .unwrap();
        assert_eq!(
            s.mechanisms,
            SaslMechanisms {
                external: false,
                plain: true
            }
        );
        let e = s
            .apply(RawSasl {
                mechanisms: Some(vec!["PLAIN".into(), "GSSAPI".into()]),
                external_map: None,
            })
            .unwrap_err();
        assert_eq!(e.key(), Some("sasl.mechanisms[1]"));
    }
}
