//! The shipped schema files, compiled in with `include_str!` (their text is in
//! `schema/builtin/`).
//!
//! | file | contents | loaded |
//! | --- | --- | --- |
//! | `system.schema` | RFC 4512 classes and operational attributes, root DSE and subschema attributes, referral (RFC 3296), subentry (RFC 3672), entryUUID (RFC 4530), entryDN (RFC 5020), numSubordinates, entryCSN/contextCSN, the cn=Monitor schema (OpenLDAP back-monitor's classes and attributes, and `monitorContext`), and the user types slapd compiles in (name, cn, uid, description, seeAlso, userPassword, labeledURI, distinguishedName, uidNumber, gidNumber) | always |
//! | `core.schema` | the rest of RFC 4519, X.509 types (RFC 4523), and everything OpenLDAP's `core.schema` defines | standard sets |
//! | `cosine.schema` | RFC 4524 and the RFC 1274 extras OpenLDAP keeps | standard sets |
//! | `inetorgperson.schema` | RFC 2798 | standard sets |
//! | `nis.schema` | RFC 2307 | [`BuiltinSchemas::Standard`] |
//! | `rfc2307bis.schema` | draft-howard-rfc2307bis-02 (posixGroup AUXILIARY, automount, groupOfMembers) | [`BuiltinSchemas::Rfc2307bis`], instead of `nis.schema` |
//! | `dyngroup.schema` | groupOfURLs, memberURL, dgIdentity | standard sets |
//! | `duaconf.schema` | RFC 4876 | standard sets |
//! | `ppolicy.schema` | draft-behera-ldap-password-policy-10 as OpenLDAP's ppolicy overlay defines it (pwdPolicy and the account state, OpenLDAP's OIDs) | standard sets |
//!
//! `nis.schema` and `rfc2307bis.schema` define the same OIDs differently, so they never
//! load together: the choice is one of the two sets, not an extra file. Why `system`
//! is separate: the server needs its elements whatever the configuration, and they are
//! exactly the ones OpenLDAP's stock schema files leave to slapd, so an operator may
//! replace the standard set by OpenLDAP's files.

use super::file::SchemaFormat;

/// One shipped schema file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinFile {
    /// The file name (`core.schema`); errors and locations say `builtin:core.schema`.
    pub name: &'static str,
    /// The file's text.
    pub text: &'static str,
    /// Its format.
    pub format: SchemaFormat,
}

macro_rules! builtin {
    ($name:literal) => {
        BuiltinFile {
            name: $name,
            text: include_str!(concat!("builtin/", $name)),
            format: SchemaFormat::OpenLdap,
        }
    };
}

/// The system schema (always loaded).
pub const SYSTEM: BuiltinFile = builtin!("system.schema");
/// RFC 4519 and OpenLDAP's core.
pub const CORE: BuiltinFile = builtin!("core.schema");
/// RFC 4524 (COSINE).
pub const COSINE: BuiltinFile = builtin!("cosine.schema");
/// RFC 2798 (inetOrgPerson).
pub const INETORGPERSON: BuiltinFile = builtin!("inetorgperson.schema");
/// RFC 2307 (NIS).
pub const NIS: BuiltinFile = builtin!("nis.schema");
/// draft-howard-rfc2307bis-02, the alternative to [`NIS`].
pub const RFC2307BIS: BuiltinFile = builtin!("rfc2307bis.schema");
/// Dynamic groups (groupOfURLs).
pub const DYNGROUP: BuiltinFile = builtin!("dyngroup.schema");
/// RFC 4876 (DUA configuration profiles).
pub const DUACONF: BuiltinFile = builtin!("duaconf.schema");
/// Password policy (draft-behera-ldap-password-policy-10, OpenLDAP's ppolicy).
pub const PPOLICY: BuiltinFile = builtin!("ppolicy.schema");

/// Every shipped file (both NIS variants included).
pub const ALL: [BuiltinFile; 9] = [
    SYSTEM,
    CORE,
    COSINE,
    INETORGPERSON,
    NIS,
    RFC2307BIS,
    DYNGROUP,
    DUACONF,
    PPOLICY,
];

/// Which shipped schema files to load before the operator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BuiltinSchemas {
    /// `system.schema` only: the operator's files provide the rest (for example
    /// OpenLDAP's own core, cosine and inetorgperson files).
    SystemOnly,
    /// system, core, cosine, inetorgperson, nis (RFC 2307), dyngroup, duaconf, ppolicy.
    #[default]
    Standard,
    /// As [`BuiltinSchemas::Standard`] with `rfc2307bis.schema` instead of `nis.schema`.
    Rfc2307bis,
}

impl BuiltinSchemas {
    /// The files of this set, in load order.
    pub fn files(self) -> &'static [BuiltinFile] {
        const SYSTEM_ONLY: [BuiltinFile; 1] = [SYSTEM];
        const STANDARD: [BuiltinFile; 8] = [
            SYSTEM,
            CORE,
            COSINE,
            INETORGPERSON,
            NIS,
            DYNGROUP,
            DUACONF,
            PPOLICY,
        ];
        const BIS: [BuiltinFile; 8] = [
            SYSTEM,
            CORE,
            COSINE,
            INETORGPERSON,
            RFC2307BIS,
            DYNGROUP,
            DUACONF,
            PPOLICY,
        ];
        match self {
            BuiltinSchemas::SystemOnly => &SYSTEM_ONLY,
            BuiltinSchemas::Standard => &STANDARD,
            BuiltinSchemas::Rfc2307bis => &BIS,
        }
    }
}
