//! Named limits of schema loading. Schema files come from the operator, not from clients,
//! but a truncated, corrupt or hostile file must still end in a clear error, never in
//! unbounded memory or time. Every bound on input-derived work lives here.

/// Largest schema file read (16 MiB). OpenLDAP's whole shipped schema directory is about
/// 600 KiB; a file above this is almost certainly not a schema file.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;

/// Longest single element description (one `attributetype ( ... )` or one LDIF value),
/// after continuation lines are joined (64 KiB). The longest description in real schema
/// files (object classes with long MAY lists) is below 4 KiB.
pub const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;

/// Most entries in one list: names in `NAME ( ... )`, OIDs in `MUST ( ... )`, values of
/// one extension. OpenLDAP's longest list (`inetOrgPerson`'s MAY) has 28 entries.
pub const MAX_LIST_ITEMS: usize = 1024;

/// Most extensions (`X-...`) on one element.
pub const MAX_EXTENSIONS: usize = 64;

/// Longest name (descriptor) or OID accepted, in bytes. Longer ones cannot be looked up
/// (lookups fold case into a buffer of this size, without allocating).
pub const MAX_NAME_BYTES: usize = 256;

/// Most elements (of all kinds, `objectidentifier` macros included) in one schema load.
/// The shipped schemas hold about 400; large deployments load a few thousand.
pub const MAX_ELEMENTS: usize = 100_000;

/// Most files in one schema load.
pub const MAX_FILES: usize = 1024;

/// Most entries, summed over all object classes, of the resolved sets (every superclass,
/// complete MUST, complete MAY). These sets are stored per class, so a deep or wide
/// superclass graph costs up to classes x attribute types; the shipped schemas need about
/// 4,000 entries. 16 Mi entries is 64 MiB.
pub const MAX_RESOLVED_CLASS_ENTRIES: usize = 16 * 1024 * 1024;
