//! A search with the Content Synchronization control (RFC 4533): the refresh phase runs as
//! an ordinary search of the directory ([`super::run`]) with a Sync State control on each
//! entry, and the persist phase is handed to the provider ([`crate::syncprov`]), which
//! sends later changes from the change feed with what this module gives it: the search's
//! scope, filter, access rights and attribute list, applied to one entry at a time.
//!
//! A refresh, in steps:
//! 1. the request is checked: no paged results or sort with it (`unwillingToPerform`,
//!    53); a cookie that does not parse counts as none (slapd does the same);
//! 2. the provider plans the refresh from the cookie's CSNs ([`crate::syncprov`]: full,
//!    present or delta) and, for refreshAndPersist, registers the persistent search
//!    (changes committed after this point are queued for it); only then is the directory
//!    version the refresh reads taken, so that no change falls between the two;
//! 3. a delta's changed entries, found by entryUUID, are the search's candidates; a full
//!    or present refresh walks the scope as any search does;
//! 4. each entry goes out with a Sync State control: `add` with the requested attributes,
//!    or, in a present phase, `present` with none when the consumer's cookie already
//!    covers the entry's entryCSN; the computed attributes (entryDN, hasSubordinates,
//!    numSubordinates, subschemaSubentry) and contextCSN are never sent: they are not
//!    data a replica stores; transitiveMemberOf, Larch's own, is sent only when named
//!    (`+` leaves it out), since a replica whose schema lacks it (slapd's) refuses the
//!    whole entry;
//! 5. at the end of a delta, the UUIDs of entries deleted since the cookie, and of changed
//!    entries the search no longer returns (moved out of scope, no longer matching, no
//!    longer readable), go out in `syncIdSet` messages with refreshDeletes;
//! 6. refreshOnly ends with the SearchResultDone and a Sync Done control (the new cookie,
//!    refreshDeletes for a delta); refreshAndPersist sends a Sync Info message
//!    (refreshDelete after a delta, else refreshPresent) with refreshDone and the cookie,
//!    and the search becomes persistent ([`PersistHandoff`]).
//!
//! The cookie sent is the provider's context CSNs when the plan was made (step 2); the
//! version read is at least as new, so a consumer may later receive again a change it
//! already has (harmless: entries are sent whole), never miss one.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

use larch_model::dn::NormDn;
use larch_model::schema::AttributeTypeId;
use larch_proto::controls::{oid, Control, SyncDone, SyncInfo, SyncMode, SyncState, SyncStateKind};
use larch_proto::{
    encode_search_result_entry_with_controls, IntermediateResponse, MessageId, ProtocolOp, ResultCode,
    SearchRequest, SearchScope, SeqOf,
};
use larch_store::idset::IdSet;
use larch_store::{EntryId, Version};

use super::access::FilterCache;
use super::run::SearchContext;
use crate::controls::{RequestControls, ResponseControl};
use crate::error::OpError;
use crate::opattrs::OperationalTypes;
use crate::response::write_message;
use crate::syncprov::log::RefreshPlan;
use crate::syncprov::note::{parse_uuid, UuidOctets};
use crate::syncprov::note::{ChangeNote, NoteKind};
use crate::syncprov::persist::{PersistContext, PersistSearch};
use crate::syncprov::{Follower, Registration};
use crate::syncrepl::cookie::{Cookie, Csn, CsnSet};

/// UUIDs per `syncIdSet` message: a delta's deletes go out in messages of at most this
/// many (16 octets each), so that no message grows without bound.
pub const MAX_UUIDS_PER_SET: usize = 1024;

/// A search's synchronization state (see the module documentation).
#[derive(Debug)]
pub(crate) struct SyncRefresh {
    mode: SyncMode,
    rid: Option<u16>,
    sid: u16,
    /// The consumer's CSNs, in a present phase: an entry they cover goes out as `present`.
    present: Option<CsnSet>,
    /// A delta: the changed entries found in the version, and the UUIDs of deleted ones.
    delta: Option<Delta>,
    /// The cookie's CSNs at the end of the refresh.
    context: CsnSet,
    /// The persistent search, registered with the provider (refreshAndPersist).
    registration: Option<Registration>,
    /// The search's base, normalized (the persist phase tests deleted DNs against it).
    base: NormDn,
    context_csn: Option<AttributeTypeId>,
    transitive_member_of: Option<AttributeTypeId>,
}

#[derive(Debug, Default)]
struct Delta {
    changed: Vec<(EntryId, UuidOctets)>,
    deleted: Vec<UuidOctets>,
}

/// Step 1 and 2: the synchronization state of a search, and the version its refresh reads;
/// `None` without the control.
pub(crate) fn begin(
    ctx: &SearchContext<'_>,
    req: &SearchRequest<'_>,
    controls: &RequestControls<'_>,
) -> Result<Option<(SyncRefresh, Arc<Version>)>, OpError> {
    let dir = ctx.dir;
    let Some(request) = controls.sync else {
        return Ok(None);
    };
    if controls.paged.is_some() || controls.sort.is_some() {
        return Err(OpError::new(
            ResultCode::UNWILLING_TO_PERFORM,
            "the content synchronization control cannot be combined with paged results or sorting",
        ));
    }
    // A cookie that does not parse (another provider's, or damaged) is no cookie: the
    // consumer gets a full refresh, as from slapd.
    let cookie = request
        .cookie
        .and_then(|c| Cookie::parse(c).ok())
        .unwrap_or_default();
    let Some(provider) = &dir.sync_provider else {
        return Err(OpError::new(
            ResultCode::UNWILLING_TO_PERFORM,
            "this server is not a synchronization provider (sync_provider.enabled is false)",
        ));
    };
    let persist = request.mode == SyncMode::RefreshAndPersist;
    let who = Follower {
        conn: ctx.conn,
        peer: ctx.client.addr,
        authz_dn: ctx.identity.dn().to_string(),
        rid: cookie.rid,
        base: String::from_utf8_lossy(req.base).into_owned(),
        since: SystemTime::now(),
    };
    let begun = provider.begin(&cookie.csns, persist, who)?;
    // Taken after the registration (step 2).
    let version = dir.store.current();
    let (present, delta) = match begun.plan {
        RefreshPlan::Full => (None, None),
        RefreshPlan::Present(csns) => (Some(csns), None),
        RefreshPlan::Delta { changed, deleted } => {
            let changed = find_by_uuid(&version, &dir.optypes, &changed);
            (None, Some(Delta { changed, deleted }))
        }
    };
    let refresh = SyncRefresh {
        mode: request.mode,
        rid: cookie.rid,
        sid: provider.sid(),
        present,
        delta,
        context: begun.context,
        registration: begun.registration,
        base: NormDn::root(),
        context_csn: dir.schema.attribute_type("contextCSN").map(|t| t.id),
        transitive_member_of: dir.schema.attribute_type("transitiveMemberOf").map(|t| t.id),
    };
    Ok(Some((refresh, version)))
}

/// The entries of `version` holding the given entryUUIDs, in the order given: by the
/// entryUUID equality index when there is one, else by one pass over the directory.
fn find_by_uuid(
    version: &Version,
    optypes: &OperationalTypes,
    uuids: &[UuidOctets],
) -> Vec<(EntryId, UuidOctets)> {
    if uuids.is_empty() {
        return Vec::new();
    }
    let ty = optypes.entry_uuid;
    let schema = version.schema();
    let index = version.index(ty);
    let rule = schema.attribute_type_by_id(ty).and_then(|t| t.equality);
    if let (Some(index), Some(rule)) = (index, rule) {
        let keyer = version.keyer();
        return uuids
            .iter()
            .filter_map(|u| {
                let text = uuid_text(u);
                let ids = index.equality(rule, text.as_bytes(), keyer)?;
                ids.iter()
                    .find(|&id| entry_uuid(version, ty, id) == Some(*u))
                    .map(|id| (id, *u))
            })
            .collect();
    }
    let wanted: HashSet<UuidOctets> = uuids.iter().copied().collect();
    let mut found: Vec<(EntryId, UuidOctets)> = version
        .entries()
        .filter_map(|e| {
            let u = entry_uuid(version, ty, e.id)?;
            wanted.contains(&u).then_some((e.id, u))
        })
        .collect();
    let order: std::collections::HashMap<UuidOctets, usize> =
        uuids.iter().enumerate().map(|(i, u)| (*u, i)).collect();
    found.sort_by_key(|(_, u)| order.get(u).copied().unwrap_or(usize::MAX));
    found
}

/// The RFC 4122 text form of a UUID, lowercase.
fn uuid_text(u: &UuidOctets) -> String {
    crate::opattrs::uuid::Uuid(*u).to_string()
}

/// The entryUUID of entry `id`, as octets.
pub(crate) fn entry_uuid(version: &Version, ty: AttributeTypeId, id: EntryId) -> Option<UuidOctets> {
    let entry = version.entry(id)?;
    let value = entry.attrs().attribute(ty).flat_map(|a| a.values.iter()).next()?;
    parse_uuid(value)
}

/// The entryCSN of entry `id`.
fn entry_csn(version: &Version, ty: AttributeTypeId, id: EntryId) -> Option<Csn> {
    let entry = version.entry(id)?;
    let value = entry.attrs().attribute(ty).flat_map(|a| a.values.iter()).next()?;
    Csn::parse(std::str::from_utf8(value).ok()?).ok()
}

/// The cookie a provider of server ID `sid` sends the consumer of replica ID `rid` whose
/// state is `csns` (OpenLDAP's form: `rid=NNN,sid=SSS,csn=...`).
fn provider_cookie(rid: Option<u16>, sid: u16, csns: &CsnSet) -> String {
    Cookie {
        rid,
        sid: Some(sid),
        csns: csns.clone(),
    }
    .format()
}

impl SyncRefresh {
    /// Notes the search's normalized base (after the request is resolved).
    pub(crate) fn set_base(&mut self, base: &NormDn) {
        self.base = base.clone();
    }

    /// Step 3: the candidates of a delta (`None`: the search's own).
    pub(crate) fn candidates(&self) -> Option<IdSet> {
        let delta = self.delta.as_ref()?;
        let mut ids: Vec<EntryId> = delta.changed.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        Some(IdSet::from_sorted(&ids))
    }

    /// True when the search goes on as a persistent search after its refresh.
    pub(crate) fn persists(&self) -> bool {
        self.mode == SyncMode::RefreshAndPersist
    }

    /// The cookie sent at the end of the refresh.
    fn cookie(&self) -> String {
        provider_cookie(self.rid, self.sid, &self.context)
    }

    /// Step 4, the state entry `id` goes out with, and its entryUUID; `None` for an entry
    /// without entryUUID, which cannot be synchronized and is not sent.
    pub(crate) fn state_of(
        &self,
        version: &Version,
        optypes: &OperationalTypes,
        id: EntryId,
    ) -> Option<(SyncStateKind, UuidOctets)> {
        let uuid = entry_uuid(version, optypes.entry_uuid, id)?;
        let state = match &self.present {
            Some(cookie) => match entry_csn(version, optypes.entry_csn, id) {
                Some(csn) if !cookie.lacks(&csn) => SyncStateKind::Present,
                _ => SyncStateKind::Add,
            },
            None => SyncStateKind::Add,
        };
        Some((state, uuid))
    }

    /// True for a type a synchronized entry does not carry (step 4); `named` says whether
    /// the request named the type.
    pub(crate) fn withheld(&self, optypes: &OperationalTypes, ty: AttributeTypeId, named: bool) -> bool {
        optypes.is_computed(ty)
            || Some(ty) == self.context_csn
            || (Some(ty) == self.transitive_member_of && !named)
    }

    /// Step 5: the UUIDs a delta sends as deleted: those deleted since the cookie, and the
    /// changed entries `admitted` refuses.
    pub(crate) fn deleted(&self, admitted: &mut dyn FnMut(EntryId) -> bool) -> Vec<UuidOctets> {
        let Some(delta) = &self.delta else {
            return Vec::new();
        };
        let mut out = delta.deleted.clone();
        out.extend(
            delta
                .changed
                .iter()
                .filter(|(id, _)| !admitted(*id))
                .map(|(_, u)| *u),
        );
        out
    }

    /// Step 5 and 6 for a refresh that ended well: writes the deletes and, for
    /// refreshAndPersist, the Sync Info message that ends the refresh; returns the
    /// response controls of the SearchResultDone (refreshOnly: the Sync Done control).
    pub(crate) fn finish(
        &self,
        out: &mut Vec<u8>,
        msgid: MessageId,
        deleted: &[UuidOctets],
    ) -> Vec<ResponseControl> {
        for chunk in deleted.chunks(MAX_UUIDS_PER_SET) {
            let uuids: Vec<&[u8]> = chunk.iter().map(|u| &u[..]).collect();
            write_sync_info(
                out,
                msgid,
                &SyncInfo::SyncIdSet {
                    cookie: None,
                    refresh_deletes: true,
                    uuids: SeqOf::from_items(&uuids),
                },
            );
        }
        let cookie = self.cookie();
        let deletes = self.delta.is_some();
        if self.persists() {
            let info = if deletes {
                SyncInfo::RefreshDelete {
                    cookie: Some(cookie.as_bytes()),
                    refresh_done: true,
                }
            } else {
                SyncInfo::RefreshPresent {
                    cookie: Some(cookie.as_bytes()),
                    refresh_done: true,
                }
            };
            write_sync_info(out, msgid, &info);
            return Vec::new();
        }
        vec![ResponseControl::typed(&SyncDone {
            cookie: Some(cookie.as_bytes()),
            refresh_deletes: deletes,
        })]
    }

    /// What the persist phase needs of this state: the registration, the cookie's CSNs,
    /// the base; `None` for refreshOnly.
    pub(crate) fn take_persist(&mut self) -> Option<(Registration, CsnSet, Option<u16>, NormDn)> {
        let registration = self.registration.take()?;
        Some((registration, self.context.clone(), self.rid, self.base.clone()))
    }
}

/// Appends an IntermediateResponse carrying a Sync Info message.
pub(crate) fn write_sync_info(out: &mut Vec<u8>, msgid: MessageId, info: &SyncInfo<'_>) {
    let mut value = Vec::new();
    info.encode(&mut value);
    let op = ProtocolOp::IntermediateResponse(IntermediateResponse {
        name: Some(oid::SYNC_INFO.as_bytes()),
        value: Some(&value),
    });
    write_message(out, msgid, op, &[]);
}

/// Appends a SearchResultEntry for `dn` with the attributes in `attributes_ber` and a Sync
/// State control.
pub(crate) fn write_state_entry(
    out: &mut Vec<u8>,
    msgid: MessageId,
    dn: &[u8],
    attributes_ber: &[u8],
    state: SyncStateKind,
    uuid: &UuidOctets,
    cookie: Option<&[u8]>,
) {
    let mut value = Vec::new();
    let control = Control::typed(
        &SyncState {
            state,
            entry_uuid: uuid,
            cookie,
        },
        false,
        &mut value,
    );
    encode_search_result_entry_with_controls(out, msgid, dn, attributes_ber, &[control]);
}

/// Whether a DN lies in the scope `scope` of base `base`.
pub(crate) fn dn_in_scope(base: &NormDn, scope: SearchScope, dn: &NormDn) -> bool {
    match scope {
        SearchScope::Base => dn == base,
        SearchScope::OneLevel => dn.is_child_of(base),
        SearchScope::Subtree => dn.is_within(base),
        SearchScope::Subordinate => base.is_ancestor_of(dn),
    }
}

/// A refreshAndPersist search whose refresh is over: its registration with the provider,
/// and what decides its messages from now on.
pub(crate) struct PersistHandoff {
    pub(crate) registration: Registration,
    pub(crate) search: Box<super::run::WalkSearch>,
    /// The consumer's state once it has read the refresh.
    pub(crate) context: CsnSet,
    pub(crate) rid: Option<u16>,
    pub(crate) base: NormDn,
}

impl std::fmt::Debug for PersistHandoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistHandoff")
            .field("rid", &self.rid)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl PersistHandoff {
    /// The registration, and the search as the provider drives it (answering `msgid`).
    pub(crate) fn into_parts(self, msgid: MessageId) -> (Registration, Box<dyn PersistSearch>) {
        let persisting = Persisting {
            search: self.search,
            context: self.context,
            rid: self.rid,
            base: self.base,
            msgid,
            test: EntryTest::default(),
        };
        (self.registration, Box::new(persisting))
    }
}

/// The filter pieces a single-entry test needs, kept between tests.
#[derive(Debug, Default)]
struct EntryTest {
    filters: FilterCache,
    scratch: Vec<u8>,
    entry_buf: Vec<u8>,
}

/// A persistent search as the provider drives it ([`crate::syncprov::persist`]).
struct Persisting {
    search: Box<super::run::WalkSearch>,
    context: CsnSet,
    rid: Option<u16>,
    base: NormDn,
    msgid: MessageId,
    test: EntryTest,
}

impl PersistSearch for Persisting {
    /// Step 4 of [`crate::syncprov::persist`]: the entry whole when the search returns it
    /// now (`add` for an add, `modify` otherwise); else `delete` when it was or is in scope;
    /// the cookie on the last change of a write.
    fn write_note(
        &mut self,
        note: &ChangeNote,
        v: &Version,
        ctx: &PersistContext,
        out: &mut Vec<u8>,
    ) -> bool {
        if let Some(csn) = &note.csn {
            self.context.insert(csn.clone());
        }
        let Some(uuid) = note.uuid else { return false };
        let search = &self.search;
        let scope = search.scope();
        let base = &self.base;
        let in_scope = |dn: &Option<NormDn>| dn.as_ref().is_some_and(|dn| dn_in_scope(base, scope, dn));
        let current = match note.kind {
            NoteKind::Delete => None,
            _ => note
                .new_dn
                .as_ref()
                .and_then(|dn| v.find(dn))
                .filter(|&id| entry_uuid(v, ctx.optypes.entry_uuid, id) == Some(uuid)),
        };
        let test = &mut self.test;
        let admitted =
            current.filter(|&id| search.admits(&ctx.rules, v, id, &mut test.filters, &mut test.scratch));
        let cookie = note
            .ends_write
            .then(|| provider_cookie(self.rid, ctx.sid, &self.context));
        let cookie = cookie.as_deref().map(str::as_bytes);
        if let Some(id) = admitted {
            let state = if note.kind == NoteKind::Add {
                SyncStateKind::Add
            } else {
                SyncStateKind::Modify
            };
            search.write_synced(
                out,
                &mut test.entry_buf,
                self.msgid,
                &ctx.optypes,
                &ctx.rules,
                v,
                id,
                (state, &uuid, cookie),
            );
            return true;
        }
        let was_or_is_in_scope = match note.kind {
            NoteKind::Add => false,
            NoteKind::Modify => in_scope(&note.new_dn),
            NoteKind::Rename => in_scope(&note.old_dn) || in_scope(&note.new_dn),
            NoteKind::Delete => in_scope(&note.old_dn),
        };
        if !was_or_is_in_scope {
            return false;
        }
        let dn = deleted_dn(note, current, v);
        write_state_entry(
            out,
            self.msgid,
            dn.as_bytes(),
            &[],
            SyncStateKind::Delete,
            &uuid,
            cookie,
        );
        true
    }
}

/// The DN a delete message names: the deleted entry's as stored, else the entry's
/// current DN, else the normalized one the note holds.
fn deleted_dn(note: &ChangeNote, current: Option<EntryId>, v: &Version) -> String {
    if let Some(dn) = &note.deleted_dn {
        return dn.to_string();
    }
    if let Some(id) = current {
        return v.dn(id);
    }
    note.new_dn
        .as_ref()
        .or(note.old_dn.as_ref())
        .map_or_else(String::new, |d| d.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_of_a_dn() {
        let base = NormDn::from_normalized("dc=example,dc=com");
        let child = NormDn::from_normalized("ou=a,dc=example,dc=com");
        let grandchild = NormDn::from_normalized("cn=x,ou=a,dc=example,dc=com");
        let other = NormDn::from_normalized("dc=other");
        assert!(dn_in_scope(&base, SearchScope::Base, &base));
        assert!(!dn_in_scope(&base, SearchScope::Base, &child));
        assert!(dn_in_scope(&base, SearchScope::OneLevel, &child));
        assert!(!dn_in_scope(&base, SearchScope::OneLevel, &grandchild));
        assert!(dn_in_scope(&base, SearchScope::Subtree, &base));
        assert!(dn_in_scope(&base, SearchScope::Subtree, &grandchild));
        assert!(!dn_in_scope(&base, SearchScope::Subordinate, &base));
        assert!(dn_in_scope(&base, SearchScope::Subordinate, &grandchild));
        assert!(!dn_in_scope(&base, SearchScope::Subtree, &other));
        let root = NormDn::root();
        assert!(dn_in_scope(&root, SearchScope::Subtree, &other));
    }
}
