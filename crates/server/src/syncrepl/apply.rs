//! The provider's changes applied to the local store, on the store's writer thread, as a
//! copy: the entries keep the provider's `entryUUID`, `entryCSN`, `creatorsName`,
//! `createTimestamp`, `modifiersName`, `modifyTimestamp` and every other operational
//! attribute it sent (`memberOf`, ...). So nothing goes through `crate::ops` or the write
//! hooks, which stamp new values: the changes go straight to [`WriteTxn`].
//!
//! A batch ([`apply_batch`]), in steps, in one store transaction (one commit unit of the
//! log: after a crash all of it is there or none):
//! 1. a savepoint;
//! 2. each change in order:
//!    - [`Change::Put`] (an add or modify state): the local entry is found by entryUUID
//!      ([`find_by_uuid`], the entryUUID equality index); if it exists, it is renamed first
//!      when its DN differs (that is how syncrepl conveys a rename or move; the subtree
//!      follows), and its attributes are replaced wholly; if not, an entry already at the
//!      DN (one made locally at first start, the suffix or the admin) is replaced wholly,
//!      else the entry is added (its parent must exist: OpenLDAP sends parents first; an
//!      orphan is an error that makes the consumer refresh, it is never dropped). A rename
//!      onto a DN held by another entry deletes that entry first when it is a leaf (the
//!      provider holds the name now; the other entry's own change follows);
//!    - [`Change::Delete`]: the entry of the UUID is deleted (an unknown UUID is ignored:
//!      already deleted, or never replicated);
//!    - [`Change::DeleteUnmentioned`]: the end of a present phase (`super::present`);
//! 3. with a cookie, the CSN set is written as the `contextCSN` values of the base entry,
//!    in the same transaction as the changes it covers;
//! 4. any error: back to the savepoint, so nothing of the batch is committed, the cookie
//!    neither, and the consumer's next session starts again from the cookie stored.
//!
//! Invariant: a stored cookie never covers a change that is not stored (it is written
//! only with or after every change received before it), so a crash at any point makes the
//! provider send again what may be missing; applying a change twice gives the same entry.
//! The base entry's `contextCSN` is kept through the replacement of its attributes.

use std::collections::HashSet;
use std::sync::Arc;

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::check::check_values;
use larch_model::entry::{resolve_description, Attribute, Entry, Options, StoredEntry};
use larch_model::matching::MatchingRule;
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::{EntryId, Version, WriteTxn};

use super::cookie::{Csn, CsnSet};
use super::error::SyncError;
use super::message::{EntryEvent, SyncUuid};
use super::present::{uuid_from_text, uuid_to_text, Present};
use crate::config::ReplicationScope;
use crate::opattrs::OperationalTypes;

/// Most changes in one batch.
pub const MAX_BATCH_CHANGES: usize = 512;
/// Most octets of entries in one batch (a batch is also flushed when it reaches this).
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// What the applying needs to know, shared by the consumer task and the writer.
#[derive(Debug)]
pub struct ApplyContext {
    /// The schema.
    pub schema: Arc<Schema>,
    /// The replicated base, normalized.
    pub base: NormDn,
    /// The table's scope.
    pub scope: ReplicationScope,
    /// The server's naming contexts (an entry at one of them has no parent here).
    pub suffixes: Vec<NormDn>,
    /// The operational types.
    pub optypes: OperationalTypes,
    /// `contextCSN`.
    pub context_csn: AttributeTypeId,
    /// `entryUUID`'s equality rule.
    pub uuid_rule: &'static MatchingRule,
}

impl ApplyContext {
    /// The context of a table replicating `base` in `scope`.
    pub fn new(
        schema: Arc<Schema>,
        base: NormDn,
        scope: ReplicationScope,
        suffixes: Vec<NormDn>,
        optypes: OperationalTypes,
    ) -> Result<ApplyContext, String> {
        let context_csn = schema
            .attribute_type("contextCSN")
            .map(|t| t.id)
            .ok_or("the schema does not define contextCSN")?;
        let uuid_rule = schema
            .attribute_type("entryUUID")
            .and_then(|t| t.equality)
            .ok_or("the schema's entryUUID has no equality rule")?;
        Ok(ApplyContext {
            schema,
            base,
            scope,
            suffixes,
            optypes,
            context_csn,
            uuid_rule,
        })
    }

    /// Whether `dn` is in the replicated scope.
    pub fn in_scope(&self, dn: &NormDn) -> bool {
        match self.scope {
            ReplicationScope::Sub => dn.is_within(&self.base),
            ReplicationScope::One => dn.parent().as_ref() == Some(&self.base),
            ReplicationScope::Base => *dn == self.base,
        }
    }
}

/// One change of a batch.
#[derive(Debug, Clone)]
pub enum Change {
    /// An entry as the provider holds it now.
    Put {
        /// Its entryUUID.
        uuid: SyncUuid,
        /// Its DN.
        dn: Dn,
        /// Normalized.
        norm: NormDn,
        /// Its attributes (without `contextCSN` and the computed ones).
        attrs: Vec<Attribute>,
    },
    /// The entry of this UUID is gone.
    Delete(SyncUuid),
    /// The end of a present phase: delete what was not mentioned.
    DeleteUnmentioned(Arc<Present>),
}

impl Change {
    /// Octets the change holds (for [`MAX_BATCH_BYTES`]).
    pub fn size(&self) -> usize {
        match self {
            Change::Put { attrs, .. } => attrs
                .iter()
                .map(|a| 16 + a.values.iter().map(|v| v.len() + 8).sum::<usize>())
                .sum(),
            _ => 16,
        }
    }
}

/// What a committed batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Entries added, replaced, renamed or deleted.
    pub changes: u64,
    /// Unmentioned entries left because they still have children.
    pub kept: usize,
}

/// The [`Change::Put`] of an entry the provider sent: DN parsed and in scope, attributes
/// resolved in the local schema (an unknown one is an error naming it) and checked
/// (syntax, single value), `contextCSN` and the computed attributes left out, `entryUUID`
/// set from the syncUUID.
pub fn put_change(ctx: &ApplyContext, e: &EntryEvent) -> Result<Change, SyncError> {
    let dn_text = String::from_utf8_lossy(&e.dn).into_owned();
    let refuse = |reason: String| SyncError::Entry {
        dn: dn_text.clone(),
        reason,
    };
    let (dn, norm) = NormDn::parse(&e.dn, &*ctx.schema).map_err(|err| refuse(format!("DN: {err}")))?;
    if !ctx.in_scope(&norm) {
        return Err(refuse(format!("outside the replicated scope of `{}`", ctx.base)));
    }
    let mut entry = Entry::new(dn.clone(), norm.clone());
    let t = &ctx.optypes;
    for (description, values) in &e.attributes {
        let (ty, options) =
            resolve_description(description, &ctx.schema).map_err(|err| refuse(err.to_string()))?;
        if ty == ctx.context_csn || t.is_computed(ty) || ty == t.entry_uuid {
            continue;
        }
        for v in values {
            entry.push_value(ty, &options, v.clone());
        }
    }
    entry.set_values(
        t.entry_uuid,
        &Options::none(),
        vec![uuid_to_text(&e.uuid).into_bytes()],
    );
    for a in &entry.attrs {
        check_values(a, &ctx.schema).map_err(|err| refuse(err.to_string()))?;
    }
    Ok(Change::Put {
        uuid: e.uuid,
        dn,
        norm,
        attrs: entry.attrs,
    })
}

/// The local entry whose entryUUID is `uuid`: through the equality index when there is one
/// (candidates checked, as the index files hashes), else by reading the base's subtree.
pub fn find_by_uuid(version: &Version, ctx: &ApplyContext, uuid: &SyncUuid) -> Option<EntryId> {
    let ty = ctx.optypes.entry_uuid;
    let text = uuid_to_text(uuid);
    let holds = |id: EntryId| {
        version.entry(id).is_some_and(|e| {
            e.attrs()
                .attribute(ty)
                .flat_map(|a| a.values.iter())
                .any(|v| uuid_from_text(v).as_ref() == Some(uuid))
        })
    };
    match version
        .index(ty)
        .and_then(|i| i.equality(ctx.uuid_rule, text.as_bytes(), version.keyer()))
    {
        Some(candidates) => candidates.iter().find(|id| holds(*id)),
        None => {
            let base = version.find(&ctx.base)?;
            version.subtree(base).find(|id| holds(*id))
        }
    }
}

/// The `contextCSN` values of the base entry: the CSN set the cookie is rebuilt from
/// (empty when the base entry or the values are not there yet).
pub fn stored_csns(version: &Version, ctx: &ApplyContext) -> Result<CsnSet, SyncError> {
    let Some(id) = version.find(&ctx.base) else {
        return Ok(CsnSet::default());
    };
    let Some(e) = version.entry(id) else {
        return Ok(CsnSet::default());
    };
    let mut set = CsnSet::default();
    for v in e.attrs().attribute(ctx.context_csn).flat_map(|a| a.values.iter()) {
        let text =
            std::str::from_utf8(v).map_err(|_| SyncError::Apply("a contextCSN value is not text".into()))?;
        set.insert(Csn::parse(text)?);
    }
    Ok(set)
}

/// Applies a batch (see the module documentation); `cookie` is the CSN set to store with it.
pub fn apply_batch(
    txn: &mut WriteTxn<'_>,
    ctx: &ApplyContext,
    changes: Vec<Change>,
    cookie: Option<&CsnSet>,
) -> Result<Applied, SyncError> {
    let savepoint = txn.savepoint();
    let mut applied = Applied::default();
    // A delete is logged with the newest CSN of the cookie it comes with, so that this
    // server, as a provider in turn, can tell its consumers when it happened.
    let delete_csn = cookie.and_then(CsnSet::newest);
    let result = (|| {
        for change in changes {
            apply_one(txn, ctx, change, delete_csn, &mut applied)?;
        }
        if let Some(csns) = cookie {
            store_cookie(txn, ctx, csns)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(applied),
        Err(e) => {
            txn.rollback_to(savepoint);
            Err(e)
        }
    }
}

fn store_error(what: &str, dn: &str, e: larch_store::StoreError) -> SyncError {
    SyncError::Apply(format!("{what} `{dn}`: {e}"))
}

fn apply_one(
    txn: &mut WriteTxn<'_>,
    ctx: &ApplyContext,
    change: Change,
    delete_csn: Option<&Csn>,
    applied: &mut Applied,
) -> Result<(), SyncError> {
    match change {
        Change::Put {
            uuid,
            dn,
            norm,
            attrs,
        } => {
            put(txn, ctx, uuid, (&dn, &norm), attrs, delete_csn)?;
            applied.changes += 1;
        }
        Change::Delete(uuid) => {
            if let Some(id) = find_by_uuid(txn.version(), ctx, &uuid) {
                delete(txn, ctx, id, delete_csn)?;
                applied.changes += 1;
            }
        }
        Change::DeleteUnmentioned(present) => {
            let Some(base) = txn.version().find(&ctx.base) else {
                return Ok(());
            };
            let gone = present.unmentioned(txn.version(), base, ctx.scope, ctx.optypes.entry_uuid);
            applied.kept += gone.kept;
            for id in gone.delete {
                delete(txn, ctx, id, delete_csn)?;
                applied.changes += 1;
            }
        }
    }
    Ok(())
}

/// `attrs` with the `contextCSN` values entry `id` holds now.
fn keeping_context_csn(
    version: &Version,
    ctx: &ApplyContext,
    id: EntryId,
    mut attrs: Vec<Attribute>,
) -> StoredEntry {
    if let Some(e) = version.entry(id) {
        for a in e.attrs().attribute(ctx.context_csn) {
            attrs.push(Attribute {
                ty: ctx.context_csn,
                options: a.options(),
                values: a.values.iter().map(<[u8]>::to_vec).collect(),
            });
        }
    }
    StoredEntry::build(&attrs)
}

fn put(
    txn: &mut WriteTxn<'_>,
    ctx: &ApplyContext,
    uuid: SyncUuid,
    (dn, norm): (&Dn, &NormDn),
    attrs: Vec<Attribute>,
    delete_csn: Option<&Csn>,
) -> Result<(), SyncError> {
    let naming_context = ctx.suffixes.contains(norm);
    let text = dn.to_string();
    match find_by_uuid(txn.version(), ctx, &uuid) {
        Some(id) => {
            // A new name, or the same name written otherwise (`cn=Foo` to `cn=foo`).
            if txn.version().norm_dn(id) != *norm || txn.version().dn(id) != text {
                if let Some(other) = txn.version().find(norm) {
                    if other != id {
                        // The name belongs to this UUID on the provider now.
                        delete(txn, ctx, other, delete_csn)?;
                    }
                }
                let stored = keeping_context_csn(txn.version(), ctx, id, attrs);
                txn.rename(id, dn, norm, &stored, naming_context)
                    .map_err(|e| store_error("renaming to", &text, e))
            } else {
                let stored = keeping_context_csn(txn.version(), ctx, id, attrs);
                txn.modify(id, &stored)
                    .map_err(|e| store_error("replacing", &text, e))
            }
        }
        None => match txn.version().find(norm) {
            Some(id) => {
                let stored = keeping_context_csn(txn.version(), ctx, id, attrs);
                txn.modify(id, &stored)
                    .map_err(|e| store_error("replacing", &text, e))
            }
            None => {
                let stored = StoredEntry::build(&attrs);
                txn.add(dn, norm, &stored, naming_context).map_err(|e| match e {
                    larch_store::StoreError::NoSuchParent => SyncError::Apply(format!(
                        "adding `{text}`: its parent is not here (the provider sent a child before its parent)"
                    )),
                    e => store_error("adding", &text, e),
                })
                .map(drop)
            }
        },
    }
}

/// Deletes entry `id` (a leaf), logging its entryUUID, and `csn` as entryCSN, with the
/// delete.
fn delete(
    txn: &mut WriteTxn<'_>,
    ctx: &ApplyContext,
    id: EntryId,
    csn: Option<&Csn>,
) -> Result<(), SyncError> {
    let version = txn.version();
    let dn = version.dn(id);
    if version.has_children(id) {
        return Err(SyncError::Apply(format!(
            "deleting `{dn}`: it has entries below it that the provider did not delete first"
        )));
    }
    let mut record = Entry::new(Dn::default(), NormDn::root());
    if let Some(e) = version.entry(id) {
        if let Some(v) = e
            .attrs()
            .attribute(ctx.optypes.entry_uuid)
            .flat_map(|a| a.values.iter())
            .next()
        {
            record.push_value(ctx.optypes.entry_uuid, &Options::none(), v.to_vec());
        }
    }
    if let Some(csn) = csn {
        record.push_value(
            ctx.optypes.entry_csn,
            &Options::none(),
            csn.as_str().as_bytes().to_vec(),
        );
    }
    txn.delete_with(id, &record.to_stored())
        .map_err(|e| store_error("deleting", &dn, e))
}

/// Stores `csns` as the cookie of a replica that has none yet (its data came from a
/// snapshot, `super::bootstrap`), in a transaction of its own.
pub fn store_cookie_now(
    store: &larch_store::Store,
    ctx: &Arc<ApplyContext>,
    csns: CsnSet,
) -> Result<(), SyncError> {
    let ctx = Arc::clone(ctx);
    store
        .write(move |txn| {
            if stored_csns(txn.version(), &ctx)?.is_empty() {
                store_cookie(txn, &ctx, &csns)?;
            }
            Ok(())
        })
        .map_err(|e| SyncError::Apply(format!("storing the cookie: {e}")))?
}

/// Step 3: the CSN set as the base entry's `contextCSN` values.
fn store_cookie(txn: &mut WriteTxn<'_>, ctx: &ApplyContext, csns: &CsnSet) -> Result<(), SyncError> {
    let version = txn.version();
    let Some(id) = version.find(&ctx.base) else {
        return Err(SyncError::Apply(format!(
            "the base entry `{}` is not here, so the cookie cannot be kept with the data (replicate it: scope \
             \"sub\" sends it)",
            ctx.base
        )));
    };
    let Some(view) = version.entry(id) else {
        return Err(SyncError::Apply("the base entry vanished".into()));
    };
    let dn = Dn::parse(version.dn(id).as_bytes()).map_err(|e| SyncError::Apply(e.to_string()))?;
    let mut entry = Entry::from_stored(dn, ctx.base.clone(), view.attrs());
    let values: Vec<Vec<u8>> = csns.iter().map(|c| c.as_str().as_bytes().to_vec()).collect();
    let held: HashSet<&[u8]> = view
        .attrs()
        .attribute(ctx.context_csn)
        .flat_map(|a| a.values.iter())
        .collect();
    if held.len() == values.len() && values.iter().all(|v| held.contains(&v[..])) {
        return Ok(());
    }
    entry.set_values(ctx.context_csn, &Options::none(), values);
    txn.modify(id, &entry.to_stored())
        .map_err(|e| store_error("storing the cookie on", &ctx.base.to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syncrepl::message::EntryEvent;
    use larch_proto::controls::SyncStateKind;
    use larch_store::index::IndexConfig;
    use larch_store::wal::SyncPolicy;
    use larch_store::{Store, StoreOptions};

    const CSN: &str = "20261127021024.123456Z#000000#000#000000";

    struct Fixture {
        store: Store,
        ctx: Arc<ApplyContext>,
        dir: std::path::PathBuf,
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = self.store.close(false);
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn fixture(name: &str, indexed: bool) -> Fixture {
        let schema = Arc::new(Schema::builtin().unwrap());
        let dir = std::env::temp_dir().join(format!("larch-syncrepl-apply-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut o = StoreOptions::new(&dir, Arc::clone(&schema));
        o.sync = SyncPolicy::None;
        o.snapshot_interval = None;
        o.snapshot_after_records = None;
        let mut indexes = IndexConfig::default();
        if indexed {
            indexes.attributes.entry("entryUUID".into()).or_default().equality = true;
        }
        o.indexes = indexes;
        let (store, _) = Store::open(o).unwrap();
        let base = NormDn::from_text(b"dc=example,dc=com", &*schema).unwrap();
        let optypes = OperationalTypes::new(&schema).unwrap();
        let ctx =
            ApplyContext::new(schema, base.clone(), ReplicationScope::Sub, vec![base], optypes).unwrap();
        Fixture {
            store,
            ctx: Arc::new(ctx),
            dir,
        }
    }

    fn put(ctx: &ApplyContext, u: u8, dn: &str, attrs: &[(&str, &[&str])]) -> Change {
        let e = EntryEvent {
            state: SyncStateKind::Add,
            uuid: [u; 16],
            dn: dn.as_bytes().to_vec(),
            attributes: attrs
                .iter()
                .map(|(d, v)| {
                    (
                        d.as_bytes().to_vec(),
                        v.iter().map(|s| s.as_bytes().to_vec()).collect(),
                    )
                })
                .collect(),
            cookie: None,
        };
        put_change(ctx, &e).unwrap()
    }

    fn ou(ctx: &ApplyContext, u: u8, dn: &str, name: &str) -> Change {
        put(
            ctx,
            u,
            dn,
            &[
                ("objectClass", &["top", "organizationalUnit"]),
                ("ou", &[name]),
                ("entryCSN", &[CSN]),
                ("creatorsName", &["cn=provider"]),
                ("createTimestamp", &["20261127021024Z"]),
                ("entryDN", &[dn]),
                ("contextCSN", &[CSN]),
            ],
        )
    }

    fn suffix(ctx: &ApplyContext) -> Change {
        put(
            ctx,
            1,
            "dc=example,dc=com",
            &[
                ("objectClass", &["top", "dcObject", "organization"]),
                ("dc", &["example"]),
                ("o", &["example"]),
            ],
        )
    }

    fn apply(f: &Fixture, changes: Vec<Change>, cookie: Option<CsnSet>) -> Result<Applied, SyncError> {
        let ctx = Arc::clone(&f.ctx);
        f.store
            .write(move |txn| apply_batch(txn, &ctx, changes, cookie.as_ref()))
            .unwrap()
    }

    fn dns(f: &Fixture) -> Vec<String> {
        let v = f.store.current();
        let mut out: Vec<String> = v.entries().map(|e| v.dn(e.id)).collect();
        out.sort();
        out
    }

    fn value(f: &Fixture, dn: &str, attr: &str) -> Vec<String> {
        let v = f.store.current();
        let id = v
            .find(&NormDn::from_text(dn.as_bytes(), &*f.ctx.schema).unwrap())
            .unwrap();
        let ty = f.ctx.schema.attribute_type(attr).unwrap().id;
        v.entry(id)
            .unwrap()
            .attrs()
            .attribute(ty)
            .flat_map(|a| a.values.iter())
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    #[test]
    fn entries_are_copied_renamed_and_deleted_by_uuid() {
        for indexed in [true, false] {
            let f = fixture(&format!("copy-{indexed}"), indexed);
            let ctx = &f.ctx;
            let cookie = CsnSet::from_csns([Csn::parse(CSN).unwrap()]);
            let changes = vec![
                suffix(ctx),
                ou(ctx, 2, "ou=a,dc=example,dc=com", "a"),
                ou(ctx, 3, "ou=b,dc=example,dc=com", "b"),
                ou(ctx, 4, "ou=c,ou=a,dc=example,dc=com", "c"),
            ];
            assert_eq!(apply(&f, changes, Some(cookie.clone())).unwrap().changes, 4);
            // The provider's operational attributes are kept; contextCSN and entryDN are not
            // taken from the entry; entryUUID is the syncUUID's text.
            assert_eq!(
                value(&f, "ou=a,dc=example,dc=com", "creatorsName"),
                ["cn=provider"]
            );
            assert_eq!(value(&f, "ou=a,dc=example,dc=com", "entryCSN"), [CSN]);
            assert!(value(&f, "ou=a,dc=example,dc=com", "contextCSN").is_empty());
            assert_eq!(
                value(&f, "ou=a,dc=example,dc=com", "entryUUID"),
                ["02020202-0202-0202-0202-020202020202"]
            );
            // The cookie is on the base entry, and survives the base entry's replacement.
            assert_eq!(stored_csns(&f.store.current(), ctx).unwrap(), cookie);
            apply(&f, vec![suffix(ctx)], None).unwrap();
            assert_eq!(stored_csns(&f.store.current(), ctx).unwrap(), cookie);
            // A move of an entry with children: ou=a goes under ou=b as ou=a2.
            apply(&f, vec![ou(ctx, 2, "ou=a2,ou=b,dc=example,dc=com", "a2")], None).unwrap();
            assert_eq!(
                dns(&f),
                [
                    "dc=example,dc=com",
                    "ou=a2,ou=b,dc=example,dc=com",
                    "ou=b,dc=example,dc=com",
                    "ou=c,ou=a2,ou=b,dc=example,dc=com"
                ]
            );
            // A rename that changes only how the name is written.
            apply(&f, vec![ou(ctx, 3, "ou=B,dc=example,dc=com", "B")], None).unwrap();
            assert!(
                dns(&f).contains(&"ou=B,dc=example,dc=com".to_string()),
                "{:?}",
                dns(&f)
            );
            apply(&f, vec![ou(ctx, 3, "ou=b,dc=example,dc=com", "b")], None).unwrap();
            // Deletes by UUID; an unknown UUID is ignored.
            let n = apply(&f, vec![Change::Delete([4; 16]), Change::Delete([9; 16])], None).unwrap();
            assert_eq!(n.changes, 1);
            assert_eq!(dns(&f).len(), 3);
        }
    }

    #[test]
    fn a_failed_change_commits_nothing_of_its_batch() {
        let f = fixture("orphan", true);
        let ctx = &f.ctx;
        apply(&f, vec![suffix(ctx)], None).unwrap();
        let cookie = CsnSet::from_csns([Csn::parse(CSN).unwrap()]);
        let e = apply(
            &f,
            vec![
                ou(ctx, 2, "ou=a,dc=example,dc=com", "a"),
                ou(ctx, 3, "ou=x,ou=missing,dc=example,dc=com", "x"),
            ],
            Some(cookie),
        )
        .unwrap_err();
        assert!(e.to_string().contains("parent"), "{e}");
        assert_eq!(dns(&f), ["dc=example,dc=com"]);
        assert!(stored_csns(&f.store.current(), ctx).unwrap().is_empty());
        // A delete of an entry with children is refused the same way.
        apply(
            &f,
            vec![
                ou(ctx, 2, "ou=a,dc=example,dc=com", "a"),
                ou(ctx, 4, "ou=c,ou=a,dc=example,dc=com", "c"),
            ],
            None,
        )
        .unwrap();
        assert!(apply(&f, vec![Change::Delete([2; 16])], None).is_err());
        assert_eq!(dns(&f).len(), 3);
    }

    #[test]
    fn the_present_phase_deletes_what_was_not_mentioned() {
        let f = fixture("present", true);
        let ctx = &f.ctx;
        apply(
            &f,
            vec![
                suffix(ctx),
                ou(ctx, 2, "ou=a,dc=example,dc=com", "a"),
                ou(ctx, 3, "ou=b,dc=example,dc=com", "b"),
                ou(ctx, 4, "ou=c,ou=b,dc=example,dc=com", "c"),
                ou(ctx, 5, "ou=d,ou=b,dc=example,dc=com", "d"),
            ],
            None,
        )
        .unwrap();
        let mut present = Present::default();
        for u in [1u8, 2, 5] {
            present.mention([u; 16]).unwrap();
        }
        // ou=b is not mentioned but ou=d below it is: ou=b is kept (it has a child left).
        let n = apply(
            &f,
            vec![Change::DeleteUnmentioned(Arc::new(present.clone()))],
            None,
        )
        .unwrap();
        assert_eq!((n.changes, n.kept), (1, 1));
        assert_eq!(
            dns(&f),
            [
                "dc=example,dc=com",
                "ou=a,dc=example,dc=com",
                "ou=b,dc=example,dc=com",
                "ou=d,ou=b,dc=example,dc=com"
            ]
        );
        // Nothing mentioned: everything below the base goes, children first; the base stays.
        let n = apply(
            &f,
            vec![Change::DeleteUnmentioned(Arc::new(Present::default()))],
            None,
        )
        .unwrap();
        assert_eq!((n.changes, n.kept), (3, 0));
        assert_eq!(dns(&f), ["dc=example,dc=com"]);
    }

    #[test]
    fn a_one_level_scope_deletes_only_children_of_the_base() {
        let f = fixture("one", true);
        let ctx = &f.ctx;
        apply(
            &f,
            vec![
                suffix(ctx),
                ou(ctx, 2, "ou=a,dc=example,dc=com", "a"),
                ou(ctx, 3, "ou=b,dc=example,dc=com", "b"),
                ou(ctx, 4, "ou=c,ou=b,dc=example,dc=com", "c"),
            ],
            None,
        )
        .unwrap();
        let one = ApplyContext::new(
            Arc::clone(&ctx.schema),
            ctx.base.clone(),
            ReplicationScope::One,
            ctx.suffixes.clone(),
            ctx.optypes,
        )
        .unwrap();
        assert!(one.in_scope(&NormDn::from_text(b"ou=a,dc=example,dc=com", &*ctx.schema).unwrap()));
        assert!(!one.in_scope(&ctx.base));
        assert!(!one.in_scope(&NormDn::from_text(b"ou=c,ou=b,dc=example,dc=com", &*ctx.schema).unwrap()));
        // Nothing mentioned: ou=a goes; ou=b stays (ou=c below it is out of the scope); the
        // base and ou=c are not in the scope.
        let one = Arc::new(one);
        let changes = vec![Change::DeleteUnmentioned(Arc::new(Present::default()))];
        let n = f
            .store
            .write(move |txn| apply_batch(txn, &one, changes, None))
            .unwrap()
            .unwrap();
        assert_eq!((n.changes, n.kept), (1, 1));
        assert_eq!(
            dns(&f),
            [
                "dc=example,dc=com",
                "ou=b,dc=example,dc=com",
                "ou=c,ou=b,dc=example,dc=com"
            ]
        );
    }

    #[test]
    fn entries_the_local_schema_cannot_hold_are_refused() {
        let f = fixture("refused", true);
        let ctx = &f.ctx;
        let e = |dn: &str, attrs: &[(&str, &[&str])]| {
            put_change(
                ctx,
                &EntryEvent {
                    state: SyncStateKind::Add,
                    uuid: [7; 16],
                    dn: dn.as_bytes().to_vec(),
                    attributes: attrs
                        .iter()
                        .map(|(d, v)| {
                            (
                                d.as_bytes().to_vec(),
                                v.iter().map(|s| s.as_bytes().to_vec()).collect(),
                            )
                        })
                        .collect(),
                    cookie: None,
                },
            )
        };
        assert!(e("ou=a,dc=example,dc=com", &[("noSuchAttribute", &["x"])]).is_err());
        assert!(e("ou=a,dc=other", &[("ou", &["a"])]).is_err());
        assert!(e("not a dn", &[]).is_err());
        assert!(e("ou=a,dc=example,dc=com", &[("createTimestamp", &["yesterday"])]).is_err());
        assert!(e("ou=a,dc=example,dc=com", &[("ou", &["a"])]).is_ok());
    }
}
