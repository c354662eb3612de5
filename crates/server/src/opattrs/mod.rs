//! Operational attributes: those the server keeps on every entry it writes, and those it
//! computes for search results, in the formats OpenLDAP uses so that clients and
//! replication peers see the same values.
//!
//! Maintained (stored with the entry, `NO-USER-MODIFICATION`):
//! - on add ([`on_add`]): `createTimestamp` and `modifyTimestamp` (the same GeneralizedTime
//!   value, see [`time`]), `creatorsName` and `modifiersName` (the DN the operation was
//!   authenticated as, written as given), `entryUUID` (a random version-4 UUID, see
//!   [`uuid`]), `entryCSN` (see [`csn`]) and `structuralObjectClass` (the name of the
//!   entry's structural class);
//! - on modify and modify DN ([`on_modify`], [`on_rename`]): `modifyTimestamp`,
//!   `modifiersName`, `entryCSN`.
//!
//! Computed (never stored, see [`computed`]): `entryDN`, `hasSubordinates`,
//! `numSubordinates`, `subschemaSubentry`.
//!
//! Invariants:
//! 1. clients cannot supply maintained attributes: the operation handlers refuse
//!    `NO-USER-MODIFICATION` attributes (`larch_model::entry::check::check_user_modifiable`)
//!    before these functions run, and these functions replace any value present, every
//!    attribute option included, with one value without options;
//! 2. the one exception is the administrator's import ([`import_hook`]), which keeps
//!    values present in the LDIF (`preserve_existing`, as `slapadd` does) so that an export
//!    re-imported keeps its UUIDs, CSNs and timestamps; a `structuralObjectClass` kept that
//!    way must name the class the schema check computes;
//! 3. every value written is valid under the attribute's syntax in the shipped schema, so
//!    an entry that passed `check_entry` still passes it afterwards;
//! 4. all the values of one operation come from one [`OpStamp`]: one time, one CSN.
//!
//! Anonymous adds never reach [`on_add`] (access control refuses them), so `creatorsName`
//! is always a bound DN in practice; an empty DN given is written as the empty string,
//! which is the (valid) root DN.

pub mod csn;
pub mod time;
pub mod uuid;

use std::sync::Arc;
use std::time::SystemTime;

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::check::{structural_chain, CheckedEntry};
use larch_model::entry::{Entry, Options};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::{EntryId, Version};

use csn::{Csn, CsnGenerator};
use uuid::{RandomError, Uuid};

/// The attributes [`on_add`] writes, by name.
pub const MAINTAINED_NAMES: [&str; 7] = [
    "createTimestamp",
    "modifyTimestamp",
    "creatorsName",
    "modifiersName",
    "entryUUID",
    "entryCSN",
    "structuralObjectClass",
];

/// The attributes [`computed`] answers, by name.
pub const COMPUTED_NAMES: [&str; 4] = [
    "entryDN",
    "hasSubordinates",
    "numSubordinates",
    "subschemaSubentry",
];

/// The DN of the subschema subentry (OpenLDAP's), the value of `subschemaSubentry`.
pub const SUBSCHEMA_SUBENTRY_DN: &str = "cn=Subschema";

/// Why operational attributes could not be set.
#[derive(Debug, thiserror::Error)]
pub enum OpAttrsError {
    /// The schema lacks an operational attribute type (the shipped `system.schema` defines
    /// them all; a schema without it cannot run a server).
    #[error("the schema does not define the operational attribute type `{0}`")]
    MissingType(&'static str),
    /// The structural class of the check is not in the schema given.
    #[error("the entry's structural object class is not in the schema")]
    UnknownClass,
    /// An imported `structuralObjectClass` names another class than the computed one.
    #[error("structuralObjectClass `{given}` does not match the entry's structural class `{computed}`")]
    StructuralMismatch {
        /// The value in the entry.
        given: String,
        /// The class the object classes give.
        computed: String,
    },
    /// No random bytes for `entryUUID`.
    #[error(transparent)]
    Random(#[from] RandomError),
}

/// The time and the CSN of one write operation; every value it sets comes from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpStamp {
    /// When the operation ran (the source of `createTimestamp` and `modifyTimestamp`).
    pub time: SystemTime,
    /// The operation's change sequence number. Its time part equals `time` unless the clock
    /// stepped backwards (the generator then keeps its last time).
    pub csn: Csn,
}

impl OpStamp {
    /// The stamp of an operation made at `time`, its CSN drawn from `generator`.
    pub fn at(time: SystemTime, generator: &CsnGenerator) -> OpStamp {
        OpStamp {
            time,
            csn: generator.next(time),
        }
    }

    /// The stamp of an operation made now.
    pub fn now(generator: &CsnGenerator) -> OpStamp {
        OpStamp::at(SystemTime::now(), generator)
    }

    /// The GeneralizedTime value of `time` (`YYYYmmddHHMMSSZ`).
    pub fn timestamp(&self) -> String {
        time::generalized_time(self.time)
    }
}

/// The IDs of the operational attribute types in one schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationalTypes {
    /// `createTimestamp`.
    pub create_timestamp: AttributeTypeId,
    /// `modifyTimestamp`.
    pub modify_timestamp: AttributeTypeId,
    /// `creatorsName`.
    pub creators_name: AttributeTypeId,
    /// `modifiersName`.
    pub modifiers_name: AttributeTypeId,
    /// `entryUUID`.
    pub entry_uuid: AttributeTypeId,
    /// `entryCSN`.
    pub entry_csn: AttributeTypeId,
    /// `structuralObjectClass`.
    pub structural_object_class: AttributeTypeId,
    /// `entryDN`.
    pub entry_dn: AttributeTypeId,
    /// `hasSubordinates`.
    pub has_subordinates: AttributeTypeId,
    /// `numSubordinates`.
    pub num_subordinates: AttributeTypeId,
    /// `subschemaSubentry`.
    pub subschema_subentry: AttributeTypeId,
}

impl OperationalTypes {
    /// Looks the types up in `schema`.
    pub fn new(schema: &Schema) -> Result<OperationalTypes, OpAttrsError> {
        let id = |name: &'static str| {
            schema
                .attribute_type(name)
                .map(|t| t.id)
                .ok_or(OpAttrsError::MissingType(name))
        };
        Ok(OperationalTypes {
            create_timestamp: id("createTimestamp")?,
            modify_timestamp: id("modifyTimestamp")?,
            creators_name: id("creatorsName")?,
            modifiers_name: id("modifiersName")?,
            entry_uuid: id("entryUUID")?,
            entry_csn: id("entryCSN")?,
            structural_object_class: id("structuralObjectClass")?,
            entry_dn: id("entryDN")?,
            has_subordinates: id("hasSubordinates")?,
            num_subordinates: id("numSubordinates")?,
            subschema_subentry: id("subschemaSubentry")?,
        })
    }

    /// The computed types, in the order of [`COMPUTED_NAMES`].
    pub fn computed_types(&self) -> [AttributeTypeId; 4] {
        [
            self.entry_dn,
            self.has_subordinates,
            self.num_subordinates,
            self.subschema_subentry,
        ]
    }

    /// Whether `ty` is computed for search results rather than stored.
    pub fn is_computed(&self, ty: AttributeTypeId) -> bool {
        self.computed_types().contains(&ty)
    }

    /// The values of computed attribute `which` for entry `id` of `version`; `None` if the
    /// entry is not there or `which` is not computed.
    pub fn computed(&self, version: &Version, id: EntryId, which: AttributeTypeId) -> Option<Vec<Vec<u8>>> {
        version.entry(id)?;
        let value = if which == self.entry_dn {
            version.dn(id).into_bytes()
        } else if which == self.has_subordinates {
            let has = version.has_children(id);
            (if has { "TRUE" } else { "FALSE" }).as_bytes().to_vec()
        } else if which == self.num_subordinates {
            version.child_count(id).to_string().into_bytes()
        } else if which == self.subschema_subentry {
            SUBSCHEMA_SUBENTRY_DN.as_bytes().to_vec()
        } else {
            return None;
        };
        Some(vec![value])
    }
}

/// The values of computed attribute `which` for entry `id` of `version` (see
/// [`OperationalTypes::computed`]; a server answering many entries should resolve the
/// types once and call that).
pub fn computed(version: &Version, id: EntryId, which: AttributeTypeId) -> Option<Vec<Vec<u8>>> {
    OperationalTypes::new(version.schema())
        .ok()?
        .computed(version, id, which)
}

/// Whether `ty`, a type of `schema`, is computed rather than stored.
pub fn is_computed(schema: &Schema, ty: AttributeTypeId) -> bool {
    OperationalTypes::new(schema).is_ok_and(|t| t.is_computed(ty))
}

/// Whether the entry holds a value of `ty` (with any options).
fn has_value(entry: &Entry, ty: AttributeTypeId) -> bool {
    entry.attributes_of(ty).any(|a| !a.values.is_empty())
}

/// Sets `ty` to the one value `value`, every option variant removed; with `preserve`, an
/// existing value is kept instead. `value` is only computed when it is written.
fn set(entry: &mut Entry, ty: AttributeTypeId, preserve: bool, value: impl FnOnce() -> Vec<u8>) {
    if preserve && has_value(entry, ty) {
        return;
    }
    entry.attrs.retain(|a| a.ty != ty);
    entry.push_value(ty, &Options::none(), value());
}

/// Sets the attributes an add maintains (see the module documentation) on `entry`, whose
/// schema check gave `checked`. With `preserve_existing` (import only), values already in
/// the entry are kept.
pub fn on_add(
    entry: &mut Entry,
    checked: &CheckedEntry,
    creator_dn: &str,
    stamp: &OpStamp,
    schema: &Schema,
    preserve_existing: bool,
) -> Result<(), OpAttrsError> {
    let t = OperationalTypes::new(schema)?;
    let class = schema
        .object_class_by_id(checked.structural)
        .ok_or(OpAttrsError::UnknownClass)?;
    if preserve_existing {
        let given = entry
            .attributes_of(t.structural_object_class)
            .flat_map(|a| a.values.iter())
            .find(|v| {
                schema
                    .object_class(String::from_utf8_lossy(v).trim())
                    .map(|c| c.id)
                    != Some(class.id)
            });
        if let Some(v) = given {
            return Err(OpAttrsError::StructuralMismatch {
                given: String::from_utf8_lossy(v).into_owned(),
                computed: class.name().to_owned(),
            });
        }
    }
    set(entry, t.structural_object_class, preserve_existing, || {
        class.name().as_bytes().to_vec()
    });
    let uuid = if preserve_existing && has_value(entry, t.entry_uuid) {
        None
    } else {
        Some(Uuid::new_v4()?)
    };
    if let Some(uuid) = uuid {
        set(entry, t.entry_uuid, false, || uuid.to_string().into_bytes());
    }
    let timestamp = stamp.timestamp();
    set(entry, t.create_timestamp, preserve_existing, || {
        timestamp.as_bytes().to_vec()
    });
    set(entry, t.modify_timestamp, preserve_existing, || {
        timestamp.as_bytes().to_vec()
    });
    set(entry, t.creators_name, preserve_existing, || {
        creator_dn.as_bytes().to_vec()
    });
    set(entry, t.modifiers_name, preserve_existing, || {
        creator_dn.as_bytes().to_vec()
    });
    set(entry, t.entry_csn, preserve_existing, || {
        stamp.csn.as_str().as_bytes().to_vec()
    });
    Ok(())
}

/// Sets the attributes a modify maintains: `modifyTimestamp`, `modifiersName`, `entryCSN`.
pub fn on_modify(
    entry: &mut Entry,
    modifier_dn: &str,
    stamp: &OpStamp,
    schema: &Schema,
) -> Result<(), OpAttrsError> {
    let t = OperationalTypes::new(schema)?;
    stamp_modified(entry, modifier_dn, stamp, &t);
    Ok(())
}

/// [`on_modify`] with the types already looked up (for hooks that change many entries).
pub fn stamp_modified(entry: &mut Entry, modifier_dn: &str, stamp: &OpStamp, t: &OperationalTypes) {
    let timestamp = stamp.timestamp();
    set(entry, t.modify_timestamp, false, || timestamp.into_bytes());
    set(entry, t.modifiers_name, false, || modifier_dn.as_bytes().to_vec());
    set(entry, t.entry_csn, false, || {
        stamp.csn.as_str().as_bytes().to_vec()
    });
}

/// The attributes logged with the delete of an entry (they describe the operation, for the
/// change feed's readers: the audit log, replication): the entry's `entryUUID` (from
/// `stored`, the entry as it was) and the delete's `entryCSN`, `modifiersName` and
/// `modifyTimestamp`.
pub fn on_delete(
    stored: larch_model::entry::StoredRef<'_>,
    modifier_dn: &str,
    stamp: &OpStamp,
    t: &OperationalTypes,
) -> larch_model::entry::StoredEntry {
    let mut record = Entry::new(Dn::default(), NormDn::root());
    let none = Options::none();
    if let Some(uuid) = stored
        .attribute(t.entry_uuid)
        .flat_map(|a| a.values.iter())
        .next()
    {
        record.push_value(t.entry_uuid, &none, uuid.to_vec());
    }
    record.push_value(t.entry_csn, &none, stamp.csn.as_str().as_bytes().to_vec());
    record.push_value(t.modifiers_name, &none, modifier_dn.as_bytes().to_vec());
    record.push_value(t.modify_timestamp, &none, stamp.timestamp().into_bytes());
    record.to_stored()
}

/// Sets the attributes a modify DN maintains: the same as [`on_modify`].
pub fn on_rename(
    entry: &mut Entry,
    modifier_dn: &str,
    stamp: &OpStamp,
    schema: &Schema,
) -> Result<(), OpAttrsError> {
    on_modify(entry, modifier_dn, stamp, schema)
}

/// The entry hook of `larch import` (for `larch_store::import::ImportOptions::hook`): for
/// each entry, computes its structural class and runs [`on_add`] with
/// `preserve_existing = true`, so values present in the LDIF are kept and missing ones are
/// added, as `slapadd` does. Each entry gets its own CSN from `generator` at the time it is
/// processed (the hook runs on the import's parsing threads, hence the shared generator).
pub fn import_hook(
    generator: Arc<CsnGenerator>,
    creator_dn: String,
    schema: Arc<Schema>,
) -> impl Fn(&mut Entry) -> Result<(), String> + Send + Sync {
    move |entry: &mut Entry| {
        let checked = structural_chain(entry, &schema).map_err(|e| e.to_string())?;
        let stamp = OpStamp::now(&generator);
        on_add(entry, &checked, &creator_dn, &stamp, &schema, true).map_err(|e| e.to_string())
    }
}
