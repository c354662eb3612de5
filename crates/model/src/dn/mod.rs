//! Distinguished names (RFC 4514).
//!
//! - [`Dn::parse`] reads the string form a client sends, with the leniency real clients
//!   need (spaces around separators, `;` between RDNs as RFC 2253 allowed) and the strictness
//!   RFC 4514 requires (escapes, no unescaped `"` `<` `>` or NUL). Errors name the offset;
//!   the server answers them with `invalidDNSyntax` (34).
//! - [`Dn`]'s `Display` prints RFC 4514 text that parses back to the same `Dn`.
//! - [`NormDn`] is the normalized form: attribute types resolved through the schema (aliases
//!   and OIDs, so `2.5.4.3=X` equals `CN=x`), values turned into their equality rule's key,
//!   the AVAs of a multi-valued RDN sorted. Two DNs name the same entry exactly when their
//!   `NormDn`s are equal, so it is the store's map key; parent and ancestor tests are string
//!   operations on it.

mod escape;
mod normalize;
mod parse;

pub use normalize::{DnAttribute, DnSchema, NormDn};
pub use parse::DnError;

use std::fmt;

/// A parsed DN: RDNs from the entry itself up to the root (`cn=x,dc=example,dc=com` has
/// `cn=x` first). The empty DN is the root DSE.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Dn {
    /// The RDNs, leaf first.
    pub rdns: Vec<Rdn>,
}

/// A relative distinguished name: one or more AVAs joined by `+`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rdn {
    /// The attribute type and value assertions, as written.
    pub avas: Vec<Ava>,
}

/// One `type=value` of an RDN.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ava {
    /// The attribute type as written: a name (`cn`, `CN`) or a numeric OID (`2.5.4.3`).
    pub attr: String,
    /// The value with escapes removed. For a `#hex` value, the decoded octets (a BER
    /// encoding of the value, RFC 4514 section 2.4).
    pub value: Vec<u8>,
    /// True when the value was written as `#` and hex pairs.
    pub hex: bool,
}

impl Dn {
    /// Parses the RFC 4514 string form.
    ///
    /// ```
    /// use larch_model::dn::Dn;
    /// let dn = Dn::parse(b"cn=Babs Jensen+uid=bjensen, ou=People,dc=example,dc=com").unwrap();
    /// assert_eq!(dn.rdns.len(), 4);
    /// assert_eq!(dn.rdns[0].avas[1].value, b"bjensen");
    /// assert_eq!(dn.to_string(), "cn=Babs Jensen+uid=bjensen,ou=People,dc=example,dc=com");
    /// assert!(Dn::parse(b"cn=a,,dc=b").is_err());
    /// ```
    pub fn parse(input: &[u8]) -> Result<Dn, DnError> {
        parse::parse(input)
    }

    /// True for the empty DN (the root DSE).
    pub fn is_root(&self) -> bool {
        self.rdns.is_empty()
    }

    /// The DN of the parent entry; `None` for the root.
    pub fn parent(&self) -> Option<Dn> {
        (!self.rdns.is_empty()).then(|| Dn {
            rdns: self.rdns[1..].to_vec(),
        })
    }
}

impl fmt::Display for Dn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rdn) in self.rdns.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{rdn}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Rdn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, ava) in self.avas.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(&ava.attr)?;
            f.write_str("=")?;
            if ava.hex {
                f.write_str("#")?;
                for b in &ava.value {
                    write!(f, "{b:02X}")?;
                }
            } else {
                escape::write_value(f, &ava.value)?;
            }
        }
        Ok(())
    }
}
