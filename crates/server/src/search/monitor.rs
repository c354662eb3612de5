//! Searches of the `cn=Monitor` subtree ([`crate::dse::monitor`]): built when a search's
//! base is at or below `cn=Monitor` and the monitor is on, then searched like stored
//! entries, in steps:
//! 1. the entries are built from a [`ServerReport`] gathered now (with the open
//!    connections unless the scope is base), and the base looked up among them: a base
//!    that is not there gets `noSuchObject` (32) with the deepest monitor entry above it
//!    as matchedDN (when the requester may know of it);
//! 2. access: the requester needs `search` on the base entry (else `noSuchObject`, or
//!    `insufficientAccessRights` (50) when it has `disclose`), as for a stored base; the
//!    default policy gives the subtree to the admin only;
//! 3. the Assertion control's filter must hold on the base (`assertionFailed`, 122);
//! 4. each entry in scope, parents first: skipped unless the requester may `search` it;
//!    the attributes it may not `read` are removed before the filter sees them (so a filter
//!    cannot learn what a search may not return); returned when the filter matches and
//!    it may `read` the entry, with the attributes the request selects;
//! 5. the size limit as for any search (the admin: the client's only); past it,
//!    `sizeLimitExceeded` (4) after the entries up to the limit.
//!
//! There is no paging state: a paged search of the subtree gets every entry in its first
//! page and an empty cookie. Sorting is not offered (the entries come parents first, as
//! OpenLDAP sends them).

use std::borrow::Cow;

use larch_model::dn::NormDn;
use larch_model::entry::StoredRef;
use larch_model::filter::CompiledFilter;
use larch_model::schema::{AttributeTypeId, Schema};
use larch_proto::{ResultCode, SearchScope, SeqOf};

use crate::acl::rule::in_monitor;
use crate::acl::{EntryAccess, Privileges, Requester, Target, What};
use crate::directory::Directory;
use crate::dse::monitor::{monitor_entries, MONITOR_DN};
use crate::dse::DseEntry;
use crate::error::OpError;
use crate::report::ServerReport;
use crate::select::Selection;

/// What a search of the subtree asks.
pub(super) struct MonitorSearch<'a> {
    pub base: &'a NormDn,
    /// The base as the request wrote it (for messages).
    pub base_text: &'a [u8],
    pub scope: SearchScope,
    pub filter: &'a CompiledFilter,
    pub assertion: Option<&'a CompiledFilter>,
    pub selection: &'a Selection,
    pub attributes: SeqOf<'a, &'a [u8]>,
    pub types_only: bool,
    /// The size limit in force (`None`: none).
    pub size_limit: Option<usize>,
}

/// The entries a search of the subtree returns, and whether the size limit cut them.
pub(super) struct MonitorAnswer {
    pub entries: Vec<(String, Vec<u8>)>,
    pub size_exceeded: bool,
}

/// `cn=Monitor` normalized with `schema`.
pub(super) fn monitor_dn(schema: &Schema) -> Option<NormDn> {
    NormDn::from_text(MONITOR_DN.as_bytes(), schema).ok()
}

/// The normalized form of a monitor entry's DN: every RDN is `cn=` with a value of
/// letters, digits, single spaces and `.`, `:` or `_` (`dse::monitor` builds them so), whose
/// `caseIgnoreMatch` normal form is its lower case; parsing a thousand DNs per read would
/// cost more than the read.
fn normalized(dn: &str) -> NormDn {
    NormDn::from_normalized(&dn.to_ascii_lowercase())
}

/// A built entry with its normalized DN.
struct Built {
    norm: NormDn,
    entry: DseEntry,
}

/// The steps of the module documentation. `Ok(None)`: the base is not in the subtree, or
/// the monitor is off; the search goes on in the store.
pub(super) fn search(
    dir: &Directory,
    requester: &Requester,
    s: &MonitorSearch<'_>,
) -> Result<Option<MonitorAnswer>, OpError> {
    let schema = &*dir.schema;
    // Every search passes here: a string comparison decides, before anything is built.
    if dir.monitor.is_none() || !in_monitor(s.base) {
        return Ok(None);
    }
    let Some(root) = monitor_dn(schema) else {
        return Ok(None);
    };
    // The connections' entries only when the scope can hold them.
    let connections = NormDn::from_normalized(&format!("cn=connections,{}", root.as_str()));
    let with_connections = match s.scope {
        SearchScope::Base => false,
        SearchScope::OneLevel => s.base.is_within(&connections),
        SearchScope::Subtree | SearchScope::Subordinate => {
            s.base.is_within(&connections) || s.base.is_ancestor_of(&connections)
        }
    };
    let report = ServerReport::gather(dir, with_connections);
    let built: Vec<Built> = monitor_entries(dir, &report)
        .into_iter()
        .map(|entry| Built {
            norm: normalized(&entry.dn),
            entry,
        })
        .collect();
    let base = find_base(dir, requester, &built, s)?;
    let readable_base = readable(dir, requester, base, schema);
    if let Some(a) = s.assertion {
        if !readable_base.matches(a, schema) {
            return Err(OpError::new(
                ResultCode::ASSERTION_FAILED,
                format!("the assertion does not hold on `{}`", base.entry.dn),
            ));
        }
    }
    let mut answer = MonitorAnswer {
        entries: Vec::new(),
        size_exceeded: false,
    };
    for b in built.iter().filter(|b| in_scope(&b.norm, &base.norm, s.scope)) {
        let mut access = access_to(dir, requester, b, schema);
        if !access.allows(What::Entry, Privileges::SEARCH) {
            continue;
        }
        let visible = readable(dir, requester, b, schema);
        if !visible.matches(s.filter, schema) || !access.allows(What::Entry, Privileges::READ) {
            continue;
        }
        if s.size_limit.is_some_and(|n| answer.entries.len() >= n) {
            answer.size_exceeded = true;
            break;
        }
        // Each attribute adds its name and two headers to the stored octets.
        let mut attrs = Vec::with_capacity(visible.stored().as_bytes().len() * 2 + 256);
        visible.write_attributes(s.selection, s.attributes, schema, s.types_only, &mut attrs);
        answer.entries.push((b.entry.dn.clone(), attrs));
    }
    Ok(Some(answer))
}

/// Step 1 and 2: the base among the built entries, if the requester may search it.
fn find_base<'b>(
    dir: &Directory,
    requester: &Requester,
    built: &'b [Built],
    s: &MonitorSearch<'_>,
) -> Result<&'b Built, OpError> {
    let base = s.base;
    let shown = || String::from_utf8_lossy(s.base_text).into_owned();
    let Some(found) = built.iter().find(|b| b.norm == *base) else {
        // The deepest monitor entry above the base that the requester may know of.
        let matched = built
            .iter()
            .filter(|b| b.norm.is_ancestor_of(base))
            .filter(|b| access_to(dir, requester, b, &dir.schema).allows(What::Entry, Privileges::DISCLOSE))
            .max_by_key(|b| b.norm.depth())
            .map(|b| b.entry.dn.clone())
            .unwrap_or_default();
        return Err(OpError::no_such_object(&shown(), matched));
    };
    let mut access = access_to(dir, requester, found, &dir.schema);
    if !access.allows(What::Entry, Privileges::SEARCH) {
        return Err(if access.allows(What::Entry, Privileges::DISCLOSE) {
            OpError::new(
                ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
                format!("no search access to the base entry `{}`", found.entry.dn),
            )
        } else {
            OpError::no_such_object(&shown(), "")
        });
    }
    Ok(found)
}

fn access_to<'a>(
    dir: &'a Directory,
    requester: &'a Requester,
    b: &'a Built,
    schema: &'a Schema,
) -> EntryAccess<'a> {
    EntryAccess::new(
        &dir.acl,
        requester,
        Target::Named {
            dn: &b.norm,
            written: None,
            attrs: b.entry.stored(),
            schema,
        },
    )
}

/// The entry with only the attributes the requester may read (the entry itself when it
/// may read them all, the admin always).
fn readable<'b>(dir: &Directory, requester: &Requester, b: &'b Built, schema: &Schema) -> Cow<'b, DseEntry> {
    if requester.is_admin() {
        return Cow::Borrowed(&b.entry);
    }
    let mut access = access_to(dir, requester, b, schema);
    let denied: Vec<AttributeTypeId> = attribute_types(b.entry.stored())
        .into_iter()
        .filter(|&t| !access.allows(What::Attribute(t), Privileges::READ))
        .collect();
    if denied.is_empty() {
        return Cow::Borrowed(&b.entry);
    }
    // Computed attributes (entryDN, subschemaSubentry) are not stored: kept.
    Cow::Owned(b.entry.retain(|t| !denied.contains(&t)))
}

fn attribute_types(stored: StoredRef<'_>) -> Vec<AttributeTypeId> {
    stored.attributes().map(|a| a.ty).collect()
}

/// Whether `dn` is in `scope` of `base`.
fn in_scope(dn: &NormDn, base: &NormDn, scope: SearchScope) -> bool {
    match scope {
        SearchScope::Base => dn == base,
        SearchScope::OneLevel => dn.is_child_of(base),
        SearchScope::Subtree => dn.is_within(base),
        SearchScope::Subordinate => base.is_ancestor_of(dn),
    }
}
