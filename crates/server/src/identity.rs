//! Who a connection is bound as.

use larch_model::dn::NormDn;

/// The authorization identity of a connection (RFC 4513 section 5): anonymous until a
/// successful Bind with a name, and anonymous again after a failed Bind or an anonymous
/// one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Identity {
    /// No name (anonymous bind, or none yet).
    #[default]
    Anonymous,
    /// Bound as an entry.
    Dn {
        /// The DN as stored in the directory (the entry's own spelling).
        dn: String,
        /// The normalized DN.
        norm: NormDn,
        /// The configured administrator (`directory.admin_dn`).
        admin: bool,
    },
}

impl Identity {
    /// The DN to record in creatorsName/modifiersName: the bound DN, or the empty string
    /// for anonymous (as OpenLDAP records it).
    pub fn dn(&self) -> &str {
        match self {
            Identity::Anonymous => "",
            Identity::Dn { dn, .. } => dn,
        }
    }

    /// The normalized DN, `None` for anonymous.
    pub fn norm_dn(&self) -> Option<&NormDn> {
        match self {
            Identity::Anonymous => None,
            Identity::Dn { norm, .. } => Some(norm),
        }
    }

    /// True for the configured administrator.
    pub fn is_admin(&self) -> bool {
        matches!(self, Identity::Dn { admin: true, .. })
    }

    /// True when bound with a name.
    pub fn is_authenticated(&self) -> bool {
        !matches!(self, Identity::Anonymous)
    }

    /// The authzId of RFC 4513 section 5.2.1.8, as the WhoAmI operation (RFC 4532) answers:
    /// `dn:<DN>`, or empty for anonymous.
    pub fn authz_id(&self) -> String {
        match self {
            Identity::Anonymous => String::new(),
            Identity::Dn { dn, .. } => format!("dn:{dn}"),
        }
    }
}
