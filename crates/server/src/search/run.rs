//! The Search operation (RFC 4511 section 4.5) as the server runs it.
//!
//! [`prepare`] resolves a request against one directory version and decides everything
//! that can be decided cheaply; [`PreparedSearch::run`] writes the answer. The connection
//! runs a small search ([`PreparedSearch::is_small`]) inline and a large one on a worker
//! thread; a prepared search owns what it needs (the version by `Arc`), so either works.
//!
//! Preparing, in steps:
//! 1. the Simple Paged Results control (RFC 2696): a cookie continues a search kept in the
//!    connection's [`PagedSearches`] and brings back the version its first page read (see
//!    `paged`); size 0 with a cookie abandons it; a page size not below the request's own
//!    size limit is ignored, as RFC 2696 section 3 advises and OpenLDAP does;
//! 2. the base DN is parsed and normalized (`invalidDNSyntax` 34); the attribute list and
//!    the filter are compiled once; the sort keys are resolved (`sort`): a critical sort
//!    control that cannot be honoured ends the search with `unavailableCriticalExtension`
//!    (12), a non-critical one leaves the results unsorted, and the SortResponse says why;
//! 3. the empty base with scope base is the root DSE; `cn=Subschema` is the subschema
//!    subentry (with scope base or subtree it is the one entry in scope; one-level and
//!    subordinate scopes hold nothing). Both are answered at once (`crate::dse`);
//!    The `cn=Monitor` subtree, with the monitor on, is answered at once too, from entries
//!    built for the search (`monitor`);
//! 4. the empty base with another scope searches every naming context (the base is the
//!    root above them; the root DSE itself is not in the results, RFC 4512 section 5.1).
//!    OpenLDAP answers noSuchObject there unless a default search base is configured;
//!    Larch holds all its naming contexts in one store, so it searches them all;
//! 5. otherwise the base is looked up, following aliases for `derefFindingBaseObj` and
//!    `derefAlways` (`deref`); without ManageDsaIT, a base at or below a referral entry
//!    gets `referral` (10) (`crate::lookup::referral`); a missing base gets `noSuchObject` (32) with the
//!    deepest existing ancestor as matchedDN (only when the requester has `disclose` on
//!    it); a base the requester may not `search` gets `noSuchObject`, or
//!    `insufficientAccessRights` (50) when it has `disclose` (access control, decided for
//!    the requester once here: `crate::acl`, `access`);
//! 6. the Assertion control (RFC 4528): the base entry must match its filter (types the
//!    requester may not search are Undefined), else `assertionFailed` (122);
//! 7. the planner gives the candidates (an index set, or the whole scope); without
//!    ManageDsaIT the referral entries are added to an index set, as they answer every
//!    search that reaches them (they are read from the `objectClass` equality index; a
//!    configuration without that index meets a referral entry in an indexed search only
//!    when the filter's candidates hold it);
//! 8. limits: the size limit is the smaller of the client's and `limits.size_limit`, the
//!    time limit likewise (0 from the client means none); the administrator gets the
//!    client's only, as the rootdn in OpenLDAP. A search whose plan is not indexed gets the
//!    lookthrough limit: refused at once (`adminLimitExceeded` 11) when the scope is known
//!    to be larger (one level: the base's child count; the whole directory: its size),
//!    else counted while scanning (the candidates examined, over all pages).
//!
//! Running, in steps:
//! 1. on a first page, alias dereferencing in searching adds scopes (`deref`) and the
//!    candidates become a walker (`walk`); a later page resumes the walker it left;
//! 2. each candidate: a referral entry (without ManageDsaIT) gives a SearchResultReference
//!    and its subtree is skipped; an alias (when dereferencing in searching) is skipped,
//!    its target being in a scope of its own; the filter decides the rest (the planner is
//!    sound, not exact), without the types the requester may not search on the entry, and
//!    an entry the requester may not read is skipped (uncounted);
//! 3. with a sort, every match is collected first (at most [`MAX_SORTED_ENTRIES`] for a
//!    client other than the administrator), sorted, and the sorted list is what pages
//!    and the size limit cut;
//! 4. entries are written as SearchResultEntry messages, with the attributes the requester
//!    may read; the sink is flushed every
//!    [`FLUSH_ENTRIES`] messages or [`FLUSH_BYTES`] octets, and the search stops without a
//!    SearchResultDone when the sink says so (abandon, cancel, connection gone);
//! 5. the size limit is exceeded when one more entry matches after the limit was reached
//!    (`sizeLimitExceeded` 4, after the entries up to it); the time limit is checked every
//!    [`TIME_CHECK_EVERY`] candidates (`timeLimitExceeded` 3); a page is full when `size`
//!    entries went out and one more matches, which the next page starts with;
//! 6. the SearchResultDone carries the paged control (cookie, or empty when the search is
//!    over; the size estimate is the number of sorted matches, else 0) and the
//!    SortResponse (success once sorted; the search's own result code when it failed
//!    before the sort was done, as OpenLDAP's sssvlv reports it).
//!
//! Pausing: a search run in steps ([`PreparedSearch::step`]) returns
//! [`Step::Paused`] when its sink asks it to ([`ResponseSink::should_pause`]: the client
//! has not read what was sent, or the search's turn on a worker thread is over), and the
//! next step goes on from there, as a paged search's next page goes on from its
//! [`Progress`]: a pause comes after a whole message (or between candidates), so nothing
//! is pending; an index set iterated in place keeps its rest as a list; the counters
//! (entries and references written, the page's entries) are carried. The sort's
//! collection (step 3) does not pause: its output is references only, and the walk that
//! collects is not resumable without copying it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use larch_model::dn::{Dn, NormDn};
use larch_model::filter::CompiledFilter;
use larch_proto::controls::{PagedResults, SortResponse, SyncStateKind};
use larch_proto::{
    DerefAliases, MessageId, ProtocolOp, ResultCode, SearchRequest, SearchResultReference, SearchScope, SeqOf,
};
use larch_store::idset::IdSet;
use larch_store::{EntryId, Version};

use super::access::{FilterCache, SearchAccess};
use super::deref::{alias_scopes, deref_base, BaseLookup};
use super::monitor::{self, MonitorSearch};
use super::paged::{request_hash, Continued, PagedSearches};
use super::referral::continuation_uris;
use super::scope::in_scope;
use super::sort::{self, SortFailure, SortKeySpec, MAX_SORTED_ENTRIES};
use super::sync::{self, PersistHandoff, SyncRefresh};
use super::walk::{Candidates, Mode, Progress, SetSource, Source, Walker};
use super::{plan_compiled, Candidates as Planned};
use crate::acl::{AccessRules, EntryAccess, Privileges, Requester, Target, What};
use crate::client::Client;
use crate::controls::{RequestControls, ResponseControl};
use crate::directory::Directory;
use crate::dse::root::root_dse;
use crate::dse::subschema::subschema_entry;
use crate::error::OpError;
use crate::groups::chain::resolve_in_chain;
use crate::identity::Identity;
use crate::lookup::class::{nearest_in_class, ClassSet};
use crate::lookup::referral::referral_error;
use crate::lookup::LastBase;
use crate::opattrs::{OperationalTypes, SUBSCHEMA_SUBENTRY_DN};
use crate::outcome::{Reply, SearchNotes};
use crate::response::{write_message, ResponseSink};
use crate::select::Selection;
use crate::syncprov::note::UuidOctets;

/// A search that examines at most this many candidates is small: the connection runs it
/// inline, since handing it to a worker thread would cost more than running it.
pub const SMALL_SEARCH: usize = 64;

/// The sink is flushed after this many messages ...
pub const FLUSH_ENTRIES: usize = 64;

/// ... or once its buffer holds this many octets, so a large search streams its results
/// instead of building them all in memory.
pub const FLUSH_BYTES: usize = 64 * 1024;

/// The time limit and the sink's stop flag are checked every this many candidates (and
/// every [`FLUSH_ENTRIES`] messages): often enough to stop within a few milliseconds,
/// rarely enough to cost nothing measurable.
pub const TIME_CHECK_EVERY: usize = 64;

/// What a search reads: the shared directory, the version it searches, who asks.
#[derive(Debug, Clone, Copy)]
pub struct SearchContext<'a> {
    /// The directory.
    pub dir: &'a Directory,
    /// The connection's number.
    pub conn: u64,
    /// The version to search (a paged search's later pages use their first page's).
    pub version: &'a Arc<Version>,
    /// The connection's identity (the administrator gets no server limits).
    pub identity: &'a Identity,
    /// The client at the other end of the connection.
    pub client: &'a Client,
    /// The connection's last normalized base, if it keeps one.
    pub last_base: Option<&'a LastBase>,
}

/// A search resolved and planned, owning everything it needs (`Send + 'static`), so it can
/// run inline on the connection or on another thread.
#[derive(Debug)]
pub struct PreparedSearch {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Answered without walking the directory: the root DSE, the subschema subentry, an
    /// abandoned paged search, a critical sort control that cannot be honoured.
    Fixed(Fixed),
    /// A search of the directory.
    Walk(Box<WalkSearch>),
}

#[derive(Debug)]
struct Fixed {
    /// The entries' DNs and encoded attribute lists.
    entries: Vec<(String, Vec<u8>)>,
    result: Result<(), OpError>,
    controls: Vec<ResponseControl>,
}

/// A paged search's page size and request hash.
#[derive(Debug, Clone, Copy)]
struct PagedRun {
    size: usize,
    hash: u64,
}

/// Everything a directory search needs to run.
#[derive(Debug)]
pub(crate) struct WalkSearch {
    version: Arc<Version>,
    filter: CompiledFilter,
    needs_dn: bool,
    selection: Selection,
    types_only: bool,
    /// The request's scope (for the scope of continuation references).
    request_scope: SearchScope,
    /// The base and scope (base 0: the root above the naming contexts).
    first_scope: (EntryId, SearchScope),
    /// The index candidates; `None` walks the scope.
    candidates: Option<IdSet>,
    /// Aliases, when they are dereferenced in searching.
    aliases: Option<ClassSet>,
    /// An alias returned as an entry: the base, when it was not dereferenced in finding.
    keep_alias: Option<EntryId>,
    /// Referral entries, unless ManageDsaIT.
    referrals: Option<ClassSet>,
    size_limit: Option<usize>,
    time_limit: Option<Duration>,
    deadline: Option<Instant>,
    /// The lookthrough limit (unindexed searches only) and the filter's text for its
    /// message.
    lookthrough: Option<(usize, String)>,
    /// The sort keys, or why the (non-critical) sort is not done.
    sort: Option<Result<Vec<SortKeySpec>, SortFailure>>,
    paged: Option<PagedRun>,
    /// A continued paged search.
    progress: Option<Progress>,
    admin: bool,
    /// Access control: the requester and what is decided for it.
    access: SearchAccess,
    /// The candidates are not (all) from an index (389's `notes=U`).
    unindexed: bool,
    /// What earlier steps of this run wrote (a paused search).
    carried: Carried,
    /// The Content Synchronization state (RFC 4533), when the request carries the control.
    sync: Option<Box<SyncRefresh>>,
}

/// What the earlier steps of a paused search wrote.
#[derive(Debug, Default, Clone, Copy)]
struct Carried {
    /// SearchResultEntry messages.
    entries: usize,
    /// SearchResultReference messages.
    references: usize,
    /// Entries of the current page.
    page: usize,
}

/// How one step of a search ended.
#[derive(Debug)]
pub enum Step {
    /// The search is over.
    Done(SearchEnd),
    /// The sink asked for a pause; the next [`PreparedSearch::step`] goes on.
    Paused(PreparedSearch),
}

/// How a search ended, for the session to answer and report (`crate::outcome`).
#[derive(Debug)]
pub struct SearchEnd {
    /// The SearchResultDone's reply (with the paged and sort response controls); `None`
    /// when the search stopped without one (abandoned, cancelled, connection gone).
    pub reply: Option<Reply>,
    /// SearchResultEntry messages written.
    pub entries: u32,
    /// SearchResultReference messages written.
    pub references: u32,
    /// How the search ran.
    pub notes: SearchNotes,
    /// A refreshAndPersist search whose refresh is over: the persist phase goes on with
    /// the provider ([`crate::syncprov`]) instead of a SearchResultDone.
    pub(crate) persist: Option<Box<PersistHandoff>>,
}

impl SearchEnd {
    /// Appends the SearchResultDone, if the search has one, through the one encoder
    /// (`crate::outcome::respond`), for callers outside a connection (tools, tests).
    pub fn write_done(&self, out: &mut Vec<u8>, message_id: MessageId) {
        if let Some(reply) = &self.reply {
            crate::outcome::respond::write(out, message_id, larch_proto::op_tag::SEARCH_RESULT_DONE, reply);
        }
    }

    fn done(reply: Reply) -> SearchEnd {
        SearchEnd {
            persist: None,
            reply: Some(reply),
            entries: 0,
            references: 0,
            notes: SearchNotes::default(),
        }
    }
}

/// Why a search loop stopped early.
enum Stop {
    /// End with this result.
    Fail(OpError),
    /// The sink asked to stop: no SearchResultDone.
    Abandon,
    /// The sink asked for a pause: the search goes on at the next step.
    Pause,
}

/// How the output loop ended.
enum Outcome {
    Finished(Result<(), OpError>),
    /// The page is full; this matching entry starts the next one.
    PageFull(EntryId),
    Abandoned,
    /// Paused after a whole message (see the module documentation).
    Paused,
}

fn lock(paged: &Mutex<PagedSearches>) -> std::sync::MutexGuard<'_, PagedSearches> {
    paged.lock().unwrap_or_else(|e| e.into_inner())
}

fn paged_control(size: u32, cookie: &[u8]) -> ResponseControl {
    ResponseControl::typed(&PagedResults { size, cookie })
}

fn sort_control(code: ResultCode, attribute: Option<&[u8]>) -> ResponseControl {
    ResponseControl::typed(&SortResponse {
        result: code,
        attribute,
    })
}

/// The SortResponse for a sort status (success when sorted).
fn sort_response(
    sort: &Option<Result<Vec<SortKeySpec>, SortFailure>>,
    code: ResultCode,
) -> Option<ResponseControl> {
    match sort {
        None => None,
        Some(Ok(_)) => Some(sort_control(code, None)),
        Some(Err(f)) => Some(sort_control(f.code, f.attribute.as_deref())),
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The smaller of two optional limits.
fn min_limit<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Resolves and plans a search (see the module documentation). An error comes back as
/// `Err`, for the caller to answer with a SearchResultDone, unless the request carries a
/// sort or paged control: then the SearchResultDone must carry their response controls
/// (the sortResult mirrors the search's result, as OpenLDAP's sssvlv sends it), and
/// [`PreparedSearch::run`] writes it.
pub fn prepare(
    ctx: &SearchContext<'_>,
    req: &SearchRequest<'_>,
    controls: &RequestControls<'_>,
    paged: &Mutex<PagedSearches>,
) -> Result<PreparedSearch, OpError> {
    let e = match prepare_search(ctx, req, controls, paged) {
        Ok(p) => return Ok(p),
        Err(Settled::Answer(p)) => return Ok(*p),
        Err(Settled::Fail(e)) => e,
    };
    let paging = controls
        .paged
        .as_ref()
        .is_some_and(|(p, _)| !p.cookie.is_empty() || req.size_limit == 0 || p.size < req.size_limit);
    if controls.sort.is_none() && !paging {
        return Err(e);
    }
    let mut response = Vec::new();
    if controls.sort.is_some() {
        response.push(sort_control(e.code, None));
    }
    if paging {
        response.push(paged_control(0, &[]));
    }
    Ok(fixed(None, Err(e), response))
}

/// How preparing ends before a walk of the directory: the search is answered at once (the
/// root DSE, the subschema subentry, an abandoned paged search, a critical sort control
/// that cannot be honoured), or it failed. Each step returns it as its `Err`, so that
/// [`prepare_search`] reads as the list of steps.
enum Settled {
    /// The answer, with its response controls (boxed, so that every step's `Result` stays
    /// small).
    Answer(Box<PreparedSearch>),
    /// The search's result; [`prepare`] adds the response controls.
    Fail(OpError),
}

impl From<OpError> for Settled {
    fn from(e: OpError) -> Settled {
        Settled::Fail(e)
    }
}

/// The steps of the module documentation, in order.
fn prepare_search(
    ctx: &SearchContext<'_>,
    req: &SearchRequest<'_>,
    controls: &RequestControls<'_>,
    paged: &Mutex<PagedSearches>,
) -> Result<PreparedSearch, Settled> {
    let dir = ctx.dir;
    let started = Instant::now();
    let page = paging(req, controls, paged)?;
    let mut sync = sync::begin(ctx, req, controls)?;
    let version = match (&sync, &page.continued) {
        (Some((_, v)), _) => v.clone(),
        (None, Some(c)) => c.version.clone(),
        (None, None) => ctx.version.clone(),
    };
    let v = &*version;
    let requester = dir.acl.requester(ctx.identity, ctx.client, v);
    let mut request = resolve_request(ctx, v, req, controls, &requester, page.run)?;
    if let Some((s, _)) = &mut sync {
        s.set_base(&request.base);
    }
    answer_dse(dir, v, req, &request, page.run)?;
    answer_monitor(ctx, req, controls, &request, &requester, page.run)?;
    let classes = Classes::new(dir, v, req, controls);
    let base_id = if request.base.is_root() {
        empty_base(dir, v, &request)?
    } else {
        let (id, mut base_access) = find_base(dir, v, req, &request, &classes, &requester)?;
        check_assertion(v, id, request.assertion.as_ref(), &mut base_access)?;
        id
    };
    let (mut candidates, indexed) = candidates(
        v,
        req,
        &request.filter,
        classes.referrals.as_ref(),
        page.continued.is_some(),
    );
    if let Some(delta) = sync.as_ref().and_then(|(s, _)| s.candidates()) {
        candidates = Some(delta);
    }
    let limits = limits(ctx, v, req, base_id, indexed, page.continued.as_ref(), &classes)?;

    let access = SearchAccess::new(&dir.acl, requester, &mut request.filter, v.schema());
    let search = WalkSearch {
        version: version.clone(),
        needs_dn: request.filter.needs_dn(),
        filter: request.filter,
        selection: request.selection,
        types_only: req.types_only,
        request_scope: req.scope,
        first_scope: (base_id, req.scope),
        candidates,
        aliases: if classes.searching { classes.aliases } else { None },
        keep_alias: (classes.searching && !classes.finding).then_some(base_id),
        referrals: classes.referrals,
        size_limit: limits.size,
        time_limit: limits.time,
        deadline: limits.time.map(|t| started + t),
        lookthrough: limits.lookthrough,
        sort: request.sort,
        paged: page.run,
        progress: page.continued.map(|c| c.progress),
        admin: ctx.identity.is_admin(),
        access,
        unindexed: limits.unindexed,
        carried: Carried::default(),
        sync: sync.map(|(s, _)| Box::new(s)),
    };
    Ok(PreparedSearch {
        kind: Kind::Walk(Box::new(search)),
    })
}

/// What step 1 finds of the Simple Paged Results control.
struct Paging {
    /// The page size and the request's hash; `None` without the control, or with a page
    /// size not below the request's own size limit.
    run: Option<PagedRun>,
    /// The search a cookie continues, with the version its first page read.
    continued: Option<Continued>,
}

/// Step 1, paging: a cookie continues a kept search (size 0 with a cookie abandons it,
/// answered at once); a first page's size counts only below the request's size limit.
fn paging(
    req: &SearchRequest<'_>,
    controls: &RequestControls<'_>,
    paged: &Mutex<PagedSearches>,
) -> Result<Paging, Settled> {
    let mut out = Paging {
        run: None,
        continued: None,
    };
    let Some((p, _)) = &controls.paged else {
        return Ok(out);
    };
    let hash = request_hash(req, controls.sort.as_ref().map(|(s, _)| s));
    if !p.cookie.is_empty() {
        if p.size == 0 {
            lock(paged).abandon(p.cookie, hash)?;
            return Err(Settled::Answer(Box::new(fixed(
                None,
                Ok(()),
                vec![paged_control(0, &[])],
            ))));
        }
        out.continued = Some(lock(paged).take(p.cookie, hash)?);
        out.run = Some(PagedRun {
            size: p.size as usize,
            hash,
        });
    } else if req.size_limit == 0 || p.size < req.size_limit {
        out.run = Some(PagedRun {
            size: p.size as usize,
            hash,
        });
    }
    Ok(out)
}

/// The request resolved against the schema (step 2).
struct Resolved {
    /// The base, normalized.
    base: NormDn,
    selection: Selection,
    filter: CompiledFilter,
    /// The sort keys, or why the (non-critical) sort is not done.
    sort: Option<Result<Vec<SortKeySpec>, SortFailure>>,
    /// The Assertion control's filter.
    assertion: Option<CompiledFilter>,
}

/// Step 2, base, attributes, filter and sort keys: the base normalized (through the
/// connection's last base), the attribute list, the filter and the assertion compiled
/// once, the sort keys resolved with the types the requester may search; a critical sort
/// control that cannot be honoured is answered at once.
fn resolve_request(
    ctx: &SearchContext<'_>,
    v: &Version,
    req: &SearchRequest<'_>,
    controls: &RequestControls<'_>,
    requester: &Requester,
    paging: Option<PagedRun>,
) -> Result<Resolved, Settled> {
    let dir = ctx.dir;
    let schema = v.schema();
    let base = match ctx.last_base {
        Some(cache) => cache.normalize(req.base, schema),
        None => NormDn::from_text(req.base, schema),
    }
    .map_err(|e| {
        OpError::new(
            ResultCode::INVALID_DN_SYNTAX,
            format!("invalid base DN `{}`: {e}", lossy(req.base)),
        )
    })?;
    let selection = Selection::parse(req.attributes, schema, &dir.optypes);
    let mut filter = CompiledFilter::compile(req.filter, schema);
    resolve_in_chain(&mut filter, v);
    let sort = match &controls.sort {
        None => None,
        Some((s, critical)) => match sort::parse_keys(s, schema, &|t| {
            requester.uniform(&dir.acl, What::Attribute(t), Privileges::SEARCH)
        }) {
            Ok(keys) => Some(Ok(keys)),
            Err(f) if *critical => {
                let mut controls = vec![sort_control(f.code, f.attribute.as_deref())];
                controls.extend(paged_done(paging));
                let e = OpError::new(
                    ResultCode::UNAVAILABLE_CRITICAL_EXTENSION,
                    format!("critical sort control cannot be honoured: {}", f.message),
                );
                return Err(Settled::Answer(Box::new(fixed(None, Err(e), controls))));
            }
            Err(f) => Some(Err(f)),
        },
    };
    let assertion = controls.assertion.map(|f| {
        let mut assertion = CompiledFilter::compile(f, schema);
        resolve_in_chain(&mut assertion, v);
        assertion
    });
    Ok(Resolved {
        base,
        selection,
        filter,
        sort,
        assertion,
    })
}

/// Step 3, the root DSE (the empty base with scope base) and the subschema subentry (the
/// one entry in scope base or subtree of `cn=Subschema`): answered at once, after the
/// assertion; any other base goes on.
fn answer_dse(
    dir: &Directory,
    v: &Version,
    req: &SearchRequest<'_>,
    request: &Resolved,
    paging: Option<PagedRun>,
) -> Result<(), Settled> {
    let schema = v.schema();
    let base = &request.base;
    let (entry, in_scope) = if base.is_root() && req.scope == SearchScope::Base {
        (Arc::new(root_dse(dir)), true)
    } else if base.depth() == 1
        && NormDn::from_text(SUBSCHEMA_SUBENTRY_DN.as_bytes(), schema).is_ok_and(|n| n == *base)
    {
        let in_scope = matches!(req.scope, SearchScope::Base | SearchScope::Subtree);
        (subschema_entry(&v.shared().schema), in_scope)
    } else {
        return Ok(());
    };
    if let Some(a) = &request.assertion {
        if !entry.matches(a, schema) {
            return Err(assertion_failed(&entry.dn).into());
        }
    }
    let answer = (in_scope && entry.matches(&request.filter, schema)).then(|| {
        let mut attrs = Vec::new();
        entry.write_attributes(
            &request.selection,
            req.attributes,
            schema,
            req.types_only,
            &mut attrs,
        );
        (entry.dn.clone(), attrs)
    });
    let mut controls: Vec<ResponseControl> = sort_response(&request.sort, ResultCode::SUCCESS)
        .into_iter()
        .collect();
    controls.extend(paged_done(paging));
    Err(Settled::Answer(Box::new(fixed(answer, Ok(()), controls))))
}

/// Step 3, the `cn=Monitor` subtree (with the monitor on): a base in it is answered at
/// once from entries built now ([`super::monitor`]), every entry in one page; a sort is
/// not done (non-critical: the SortResponse says `unwillingToPerform`; critical:
/// `unavailableCriticalExtension`). Any other base goes on.
fn answer_monitor(
    ctx: &SearchContext<'_>,
    req: &SearchRequest<'_>,
    controls: &RequestControls<'_>,
    request: &Resolved,
    requester: &Requester,
    paging: Option<PagedRun>,
) -> Result<(), Settled> {
    let dir = ctx.dir;
    // Every search passes here: a string comparison sends the others on at once.
    if dir.monitor.is_none() || !crate::acl::rule::in_monitor(&request.base) {
        return Ok(());
    }
    let client = (req.size_limit > 0).then_some(req.size_limit as usize);
    let configured = dir.config.limits.size_limit;
    let size_limit = if ctx.identity.is_admin() {
        client
    } else {
        min_limit(client, (configured > 0).then_some(configured))
    };
    let search = MonitorSearch {
        base: &request.base,
        base_text: req.base,
        scope: req.scope,
        filter: &request.filter,
        assertion: request.assertion.as_ref(),
        selection: &request.selection,
        attributes: req.attributes,
        types_only: req.types_only,
        size_limit,
    };
    let Some(answer) = monitor::search(dir, requester, &search)? else {
        return Ok(());
    };
    let mut response = Vec::new();
    if let Some((_, critical)) = &controls.sort {
        if *critical {
            return Err(OpError::new(
                ResultCode::UNAVAILABLE_CRITICAL_EXTENSION,
                "the cn=Monitor entries cannot be sorted",
            )
            .into());
        }
        response.push(sort_control(ResultCode::UNWILLING_TO_PERFORM, None));
    }
    response.extend(paged_done(paging));
    let result = if answer.size_exceeded {
        Err(OpError::new(
            ResultCode::SIZE_LIMIT_EXCEEDED,
            format!("size limit of {} entries exceeded", size_limit.unwrap_or(0)),
        ))
    } else {
        Ok(())
    };
    Err(Settled::Answer(Box::new(PreparedSearch {
        kind: Kind::Fixed(Fixed {
            entries: answer.entries,
            result,
            controls: response,
        }),
    })))
}

/// The referral and alias entries a search meets (steps 5 and 7), and where it
/// dereferences aliases.
struct Classes {
    /// Referral entries, unless ManageDsaIT.
    referrals: Option<ClassSet>,
    /// Aliases, when they are dereferenced at all.
    aliases: Option<ClassSet>,
    /// Aliases are dereferenced in finding the base.
    finding: bool,
    /// Aliases are dereferenced in searching (never with scope base).
    searching: bool,
}

impl Classes {
    fn new(dir: &Directory, v: &Version, req: &SearchRequest<'_>, controls: &RequestControls<'_>) -> Classes {
        let referrals = if controls.manage_dsa_it {
            None
        } else {
            ClassSet::new(v, dir.referral_class.as_ref())
        };
        let finding = matches!(
            req.deref_aliases,
            DerefAliases::FindingBaseObject | DerefAliases::Always
        );
        let searching = matches!(
            req.deref_aliases,
            DerefAliases::InSearching | DerefAliases::Always
        ) && req.scope != SearchScope::Base;
        let aliases = if finding || searching {
            ClassSet::new(v, dir.alias_class.as_ref())
        } else {
            None
        };
        Classes {
            referrals,
            aliases,
            finding,
            searching,
        }
    }
}

/// Step 4, the empty base with another scope: the root above every naming context (ID 0);
/// the assertion is tested on the root DSE.
fn empty_base(dir: &Directory, v: &Version, request: &Resolved) -> Result<EntryId, Settled> {
    if let Some(a) = &request.assertion {
        let root = root_dse(dir);
        if !root.matches(a, v.schema()) {
            return Err(assertion_failed("").into());
        }
    }
    Ok(0)
}

/// Step 5, base lookup with aliases, referrals and access: the base is looked up, through
/// aliases when finding; a missing base gets noSuchObject with the matched DN the
/// requester may know of (or the referral above it), a base the requester may not search
/// noSuchObject or insufficientAccessRights, a base at or below a referral entry
/// `referral`. Returns the base and the requester's access to it.
fn find_base<'a>(
    dir: &'a Directory,
    v: &'a Version,
    req: &SearchRequest<'_>,
    request: &Resolved,
    classes: &Classes,
    requester: &'a Requester,
) -> Result<(EntryId, EntryAccess<'a>), Settled> {
    // The base as text (RFC 4514, as parsed) only for an error: a found base costs no
    // formatting.
    let base_text = || Dn::parse(req.base).map_or_else(|_| lossy(req.base), |dn| dn.to_string());
    let id = match deref_base(v, classes.aliases.as_ref(), &request.base, classes.finding)? {
        BaseLookup::Missing { matched } => {
            // The matched entry, its referral included, shows only with `disclose`.
            let matched = matched.filter(|&m| {
                EntryAccess::new(&dir.acl, requester, Target::Stored { version: v, id: m })
                    .allows(What::Entry, Privileges::DISCLOSE)
            });
            if let (Some(refs), Some(m)) = (&classes.referrals, matched) {
                if let Some(r) = nearest_in_class(v, refs, m, 0) {
                    return Err(referral_error(v, r, Some(&base_text()), Some(req.scope)).into());
                }
            }
            let matched_dn = matched.map(|m| v.dn(m)).unwrap_or_default();
            return Err(OpError::no_such_object(&base_text(), matched_dn).into());
        }
        BaseLookup::Found(id) => id,
    };
    // `search` on the base entry (as slapd asks): else noSuchObject, or
    // insufficientAccessRights when the requester may know it exists.
    let mut base_access = EntryAccess::new(&dir.acl, requester, Target::Stored { version: v, id });
    if !base_access.allows(What::Entry, Privileges::SEARCH) {
        return Err(if base_access.allows(What::Entry, Privileges::DISCLOSE) {
            OpError::new(
                ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
                format!("no search access to the base entry `{}`", base_text()),
            )
        } else {
            OpError::no_such_object(&base_text(), "")
        }
        .into());
    }
    if let Some(refs) = &classes.referrals {
        if let Some(r) = nearest_in_class(v, refs, id, 0) {
            return Err(referral_error(v, r, Some(&base_text()), Some(req.scope)).into());
        }
    }
    Ok((id, base_access))
}

/// Step 6, the assertion: the base entry must match the Assertion control's filter,
/// tested with what the requester may search on it (other types are Undefined).
fn check_assertion(
    v: &Version,
    id: EntryId,
    assertion: Option<&CompiledFilter>,
    base_access: &mut EntryAccess<'_>,
) -> Result<(), Settled> {
    let Some(a) = assertion else {
        return Ok(());
    };
    let schema = v.schema();
    let hidden = base_access.hide_unsearchable(a, schema);
    let a = hidden.as_ref().unwrap_or(a);
    let mut scratch = Vec::new();
    let ok = v.entry(id).is_some_and(|e| {
        let dn = a
            .needs_dn()
            .then(|| Dn::parse(v.dn(id).as_bytes()).ok())
            .flatten();
        a.matches_entry(e.attrs(), id, dn.as_ref(), schema, &mut scratch)
    });
    if !ok {
        return Err(assertion_failed(&v.dn(id)).into());
    }
    Ok(())
}

/// Step 7, candidates: the planner's index set, with the referral entries added (`None`:
/// the whole scope is walked), and whether the plan is indexed. A continued paged search
/// and a base search plan nothing.
fn candidates(
    v: &Version,
    req: &SearchRequest<'_>,
    filter: &CompiledFilter,
    referrals: Option<&ClassSet>,
    continued: bool,
) -> (Option<IdSet>, bool) {
    if continued || req.scope == SearchScope::Base {
        return (None, true);
    }
    let p = plan_compiled(req.filter, filter, v, v.schema());
    let indexed = p.is_indexed();
    let Planned::Set(mut set) = p.into_candidates() else {
        return (None, indexed);
    };
    if let Some(refs) = referrals.and_then(ClassSet::members) {
        if !refs.is_empty() {
            set = set.union(refs);
        }
    }
    (Some(set), indexed)
}

/// The limits of a search (step 8).
struct Limits {
    size: Option<usize>,
    time: Option<Duration>,
    /// The lookthrough limit, counted while scanning, and the filter's text for its
    /// message.
    lookthrough: Option<(usize, String)>,
    /// The candidates are not (all) from an index.
    unindexed: bool,
}

/// Step 8, limits: the client's size and time limits, capped by the configuration's except
/// for the administrator; an unindexed search gets the lookthrough limit, refused at once
/// when its scope is known to be larger.
fn limits(
    ctx: &SearchContext<'_>,
    v: &Version,
    req: &SearchRequest<'_>,
    base_id: EntryId,
    indexed: bool,
    continued: Option<&Continued>,
    classes: &Classes,
) -> Result<Limits, Settled> {
    let admin = ctx.identity.is_admin();
    let config = &ctx.dir.config.limits;
    let client_size = (req.size_limit > 0).then_some(req.size_limit as usize);
    let client_time = (req.time_limit > 0).then(|| Duration::from_secs(u64::from(req.time_limit)));
    let (size, time) = if admin {
        (client_size, client_time)
    } else {
        (
            min_limit(client_size, (config.size_limit > 0).then_some(config.size_limit)),
            min_limit(
                client_time,
                (!config.time_limit.is_zero()).then_some(config.time_limit),
            ),
        )
    };
    let mut lookthrough = None;
    let unindexed = match continued {
        Some(c) => c.progress.counted,
        None => !indexed,
    };
    if !admin && unindexed && config.lookthrough_limit > 0 {
        let max = config.lookthrough_limit;
        // The scope's size where it is known without a walk (aliases may add scopes).
        let known = if continued.is_some() || classes.searching {
            None
        } else if req.scope == SearchScope::OneLevel {
            Some(v.child_count(base_id))
        } else if base_id == 0 || v.len() <= max {
            Some(v.len())
        } else {
            None
        };
        match known {
            Some(n) if n > max => return Err(lookthrough_error(&req.filter.to_string(), max).into()),
            Some(_) => {}
            None => lookthrough = Some((max, req.filter.to_string())),
        }
    }
    Ok(Limits {
        size,
        time,
        lookthrough,
        unindexed,
    })
}

/// The paged control of a search that ends on its first page (an empty cookie), when it
/// is paged.
fn paged_done(paging: Option<PagedRun>) -> Option<ResponseControl> {
    paging.map(|_| paged_control(0, &[]))
}

/// The result when the base entry does not match the Assertion control's filter.
fn assertion_failed(dn: &str) -> OpError {
    OpError::new(
        ResultCode::ASSERTION_FAILED,
        format!("the base entry `{dn}` does not match the assertion control's filter"),
    )
}

fn lookthrough_error(filter: &str, max: usize) -> OpError {
    OpError::new(
        ResultCode::ADMIN_LIMIT_EXCEEDED,
        format!(
            "the filter {filter} is not served by an index and the search would examine more than \
             {max} entries (limits.lookthrough_limit); index its attributes or narrow the scope"
        ),
    )
}

fn fixed(
    entry: Option<(String, Vec<u8>)>,
    result: Result<(), OpError>,
    controls: Vec<ResponseControl>,
) -> PreparedSearch {
    PreparedSearch {
        kind: Kind::Fixed(Fixed {
            entries: entry.into_iter().collect(),
            result,
            controls,
        }),
    }
}

impl PreparedSearch {
    /// True when the search will look at few entries (base scope, at most
    /// [`SMALL_SEARCH`] index candidates or children, a page of at most that many sorted
    /// results), so the connection runs it inline instead of on a worker thread.
    pub fn is_small(&self) -> bool {
        let s = match &self.kind {
            Kind::Fixed(_) => return true,
            Kind::Walk(s) => s,
        };
        // A persistent search continues on the provider, from a job (never inline).
        if s.sync.as_ref().is_some_and(|sync| sync.persists()) {
            return false;
        }
        if s.first_scope.1 == SearchScope::Base {
            return true;
        }
        if let Some(p) = &s.progress {
            return match &p.source {
                Source::Sorted { .. } => s.paged.is_some_and(|p| p.size <= SMALL_SEARCH),
                Source::Walk(w) => w.remaining_hint().is_some_and(|n| n <= SMALL_SEARCH),
            };
        }
        if s.aliases.as_ref().is_some_and(|a| !a.is_known_empty()) {
            return false;
        }
        match &s.candidates {
            Some(set) => set.len() <= SMALL_SEARCH,
            None => {
                s.first_scope.1 == SearchScope::OneLevel
                    && s.version.child_count(s.first_scope.0) <= SMALL_SEARCH
            }
        }
    }

    /// True for a later page of a paged search (its state was taken from the connection's
    /// kept searches: answering it with an error would end the paging).
    pub fn is_continued(&self) -> bool {
        matches!(&self.kind, Kind::Walk(s) if s.progress.is_some())
    }

    /// Runs the search: writes SearchResultEntry and SearchResultReference messages to
    /// `sink`, flushing every [`FLUSH_ENTRIES`] messages or [`FLUSH_BYTES`] octets, and
    /// returns how it ended: the SearchResultDone's reply (with the paged and sort response
    /// controls) for the caller to answer with, or none when `flush` returned false or the
    /// sink was stopped. A paged search's next page is kept in `paged`.
    pub fn run(
        self,
        dir: &Directory,
        message_id: MessageId,
        sink: &mut dyn ResponseSink,
        paged: &Mutex<PagedSearches>,
    ) -> SearchEnd {
        let mut search = self;
        loop {
            match search.step(dir, message_id, sink, paged) {
                Step::Done(end) => return end,
                Step::Paused(rest) => search = rest,
            }
        }
    }

    /// Runs the search until it ends or `sink` asks for a pause
    /// ([`ResponseSink::should_pause`]); a paused search goes on at its next step, with the
    /// same `dir`, `message_id`, `paged` and a sink over the same connection.
    pub fn step(
        self,
        dir: &Directory,
        message_id: MessageId,
        sink: &mut dyn ResponseSink,
        paged: &Mutex<PagedSearches>,
    ) -> Step {
        match self.kind {
            Kind::Fixed(f) => {
                let mut end = SearchEnd::done(Reply::from_result(f.result).with_controls(f.controls));
                let size: usize = f.entries.iter().map(|(dn, a)| dn.len() + a.len() + 16).sum();
                sink.buf().reserve(size);
                for (dn, attrs) in &f.entries {
                    larch_proto::encode_search_result_entry(sink.buf(), message_id, dn.as_bytes(), attrs);
                    end.entries += 1;
                }
                Step::Done(end)
            }
            Kind::Walk(s) => s.step(&dir.optypes, &dir.acl, message_id, sink, paged),
        }
    }
}

/// The state of one run.
struct Run<'a> {
    s: &'a WalkSearch,
    v: &'a Version,
    optypes: &'a OperationalTypes,
    rules: &'a AccessRules,
    /// Filters built for entries on which the requester may search fewer types.
    filters: FilterCache,
    message_id: MessageId,
    /// Candidates examined, earlier pages included.
    examined: usize,
    /// Messages written by this run.
    messages: usize,
    /// Of which references.
    references: usize,
    /// Entries on the current page (earlier steps of a paused search included).
    page: usize,
    /// Candidates examined since the sink was last asked about a pause.
    since_pause_check: usize,
    /// False while the sort collects (see the module documentation).
    may_pause: bool,
    scratch: Vec<u8>,
    entry_buf: Vec<u8>,
}

impl Run<'_> {
    /// The time limit and the sink's stop flag.
    fn check(&self, sink: &mut dyn ResponseSink) -> Result<(), Stop> {
        if sink.stopped() {
            return Err(Stop::Abandon);
        }
        if let (Some(deadline), Some(limit)) = (self.s.deadline, self.s.time_limit) {
            if Instant::now() >= deadline {
                return Err(Stop::Fail(OpError::new(
                    ResultCode::TIME_LIMIT_EXCEEDED,
                    format!("time limit of {} s exceeded", limit.as_secs()),
                )));
            }
        }
        Ok(())
    }

    /// After each message: the stop flag, and a flush when due.
    fn after_message(&mut self, sink: &mut dyn ResponseSink) -> Result<(), Stop> {
        self.messages += 1;
        if sink.stopped() {
            return Err(Stop::Abandon);
        }
        if self.messages % FLUSH_ENTRIES == 0 {
            self.check(sink)?;
        }
        if self.messages % FLUSH_ENTRIES == 0 || sink.buf().len() >= FLUSH_BYTES {
            if !sink.flush() {
                return Err(Stop::Abandon);
            }
            self.pause_point(sink)?;
        }
        Ok(())
    }

    /// A place where the search may pause, if the sink asks and the search can.
    fn pause_point(&mut self, sink: &mut dyn ResponseSink) -> Result<(), Stop> {
        self.since_pause_check = 0;
        if self.may_pause && sink.should_pause() {
            return Err(Stop::Pause);
        }
        Ok(())
    }

    fn emit_entry(&mut self, id: EntryId, sink: &mut dyn ResponseSink) -> Result<(), Stop> {
        let s = self.s;
        if let Some(sync) = &s.sync {
            let Some((state, uuid)) = sync.state_of(self.v, self.optypes, id) else {
                return Ok(());
            };
            s.write_synced(
                sink.buf(),
                &mut self.entry_buf,
                self.message_id,
                self.optypes,
                self.rules,
                self.v,
                id,
                (state, &uuid, None),
            );
            return self.after_message(sink);
        }
        let dn = self.v.dn(id);
        let mut readable = s.access.readable(self.rules, self.v, id);
        s.selection.write_entry(
            sink.buf(),
            &mut self.entry_buf,
            self.message_id,
            &dn,
            self.v,
            id,
            self.optypes,
            s.types_only,
            &mut readable,
        );
        self.after_message(sink)
    }

    fn emit_reference(&mut self, id: EntryId, sink: &mut dyn ResponseSink) -> Result<(), Stop> {
        let uris = continuation_uris(self.v, id, self.s.request_scope);
        if uris.is_empty() {
            return Ok(());
        }
        let raw: Vec<&[u8]> = uris.iter().map(|u| u.as_bytes()).collect();
        let op = ProtocolOp::SearchResultReference(SearchResultReference {
            uris: SeqOf::from_items(&raw),
        });
        write_message(sink.buf(), self.message_id, op, &[]);
        self.references += 1;
        self.after_message(sink)
    }

    /// The next candidate that matches the filter (`None`: no more).
    fn pull(
        &mut self,
        src: &mut dyn Candidates,
        sink: &mut dyn ResponseSink,
    ) -> Result<Option<EntryId>, Stop> {
        let s = self.s;
        let v = self.v;
        let schema = v.schema();
        loop {
            // Between candidates, so that a pause loses none.
            if self.since_pause_check >= TIME_CHECK_EVERY {
                self.pause_point(sink)?;
            }
            self.since_pause_check += 1;
            let Some(id) = src.next_id(v) else { return Ok(None) };
            self.examined += 1;
            if let Some((max, text)) = &s.lookthrough {
                if self.examined > *max {
                    return Err(Stop::Fail(lookthrough_error(text, *max)));
                }
            }
            if self.examined % TIME_CHECK_EVERY == 0 {
                self.check(sink)?;
            }
            let Some(entry) = v.entry(id) else { continue };
            if let Some(refs) = s.referrals.as_ref().filter(|r| !r.is_known_empty()) {
                if !src.walks_tree()
                    && entry.parent() != 0
                    && nearest_in_class(v, refs, entry.parent(), 0).is_some()
                {
                    continue;
                }
                if refs.contains(v, id) {
                    src.prune();
                    if s.request_scope != SearchScope::Base && s.access.disclosed(self.rules, v, id) {
                        self.emit_reference(id, sink)?;
                    }
                    continue;
                }
            }
            if let Some(aliases) = &s.aliases {
                if s.keep_alias != Some(id) && !aliases.is_known_empty() && aliases.contains(v, id) {
                    continue;
                }
            }
            let dn = if s.needs_dn {
                Dn::parse(v.dn(id).as_bytes()).ok()
            } else {
                None
            };
            let filter = s
                .access
                .filter_for(self.rules, &s.filter, &mut self.filters, v, id);
            if filter.matches_entry(entry.attrs(), id, dn.as_ref(), schema, &mut self.scratch)
                && s.access.visible(self.rules, v, id)
            {
                return Ok(Some(id));
            }
        }
    }

    /// Writes matches from `next` until the end, a limit or a full page.
    fn output(
        &mut self,
        sink: &mut dyn ResponseSink,
        returned: &mut usize,
        mut next: impl FnMut(&mut Self, &mut dyn ResponseSink) -> Result<Option<EntryId>, Stop>,
    ) -> Outcome {
        let s = self.s;
        let mut page = s.carried.page;
        loop {
            match next(self, sink) {
                Ok(Some(id)) => {
                    if let Some(limit) = s.size_limit {
                        if *returned >= limit {
                            return Outcome::Finished(Err(OpError::new(
                                ResultCode::SIZE_LIMIT_EXCEEDED,
                                format!("size limit of {limit} entries exceeded"),
                            )));
                        }
                    }
                    if s.paged.is_some_and(|p| page >= p.size) {
                        return Outcome::PageFull(id);
                    }
                    let emitted = self.emit_entry(id, sink);
                    *returned += 1;
                    page += 1;
                    self.page = page;
                    if let Err(stop) = emitted {
                        return match stop {
                            Stop::Abandon => Outcome::Abandoned,
                            Stop::Fail(e) => Outcome::Finished(Err(e)),
                            Stop::Pause => Outcome::Paused,
                        };
                    }
                }
                Ok(None) => return Outcome::Finished(Ok(())),
                Err(Stop::Fail(e)) => return Outcome::Finished(Err(e)),
                Err(Stop::Abandon) => return Outcome::Abandoned,
                Err(Stop::Pause) => return Outcome::Paused,
            }
        }
    }
}

/// Calls `f` with the walker as the source of candidates; an index set the walk has not
/// started is iterated in place (no copy) unless the walk must be resumable (paged). When
/// `keep_rest` says so of what `f` returned (a pause), the rest of a set iterated in place
/// stays in the walker as a list.
fn with_candidates<R>(
    w: &mut Walker,
    resumable: bool,
    f: impl FnOnce(&mut dyn Candidates) -> R,
    keep_rest: impl FnOnce(&R) -> bool,
) -> R {
    if !resumable {
        if let Some(set) = w.take_set() {
            let mut src = SetSource {
                it: set.iter(),
                scopes: &w.scopes,
            };
            let r = f(&mut src);
            if keep_rest(&r) {
                let ids: Vec<EntryId> = src.it.collect();
                w.mode = Mode::List { ids, pos: 0 };
            }
            return r;
        }
    }
    f(w)
}

impl WalkSearch {
    fn step(
        mut self: Box<Self>,
        optypes: &OperationalTypes,
        rules: &AccessRules,
        message_id: MessageId,
        sink: &mut dyn ResponseSink,
        paged: &Mutex<PagedSearches>,
    ) -> Step {
        let version = self.version.clone();
        let v = &*version;
        let progress = match self.progress.take() {
            Some(p) => Ok(p),
            None => {
                let scopes = match &self.aliases {
                    Some(aliases) => alias_scopes(v, aliases, self.first_scope),
                    None => Ok(vec![self.first_scope]),
                };
                scopes.map(|scopes| Progress {
                    source: Source::Walk(Walker::new(scopes, self.candidates.take())),
                    returned: 0,
                    examined: 0,
                    counted: self.lookthrough.is_some(),
                })
            }
        };
        let s = &*self;
        let mut progress = match progress {
            Ok(p) => p,
            Err(e) => {
                let code = e.code;
                return Step::Done(s.end(None, Some(s.finish(Err(e), None, 0, code))));
            }
        };
        let mut run = Run {
            s,
            v,
            optypes,
            rules,
            filters: FilterCache::default(),
            message_id,
            examined: progress.examined,
            messages: 0,
            references: 0,
            page: s.carried.page,
            since_pause_check: 0,
            may_pause: false,
            scratch: Vec::new(),
            entry_buf: Vec::new(),
        };
        if let Err(stop) = run.check(sink) {
            return Step::Done(match stop {
                Stop::Abandon | Stop::Pause => s.end(Some(&run), None),
                Stop::Fail(e) => {
                    let code = e.code;
                    s.end(Some(&run), Some(s.finish(Err(e), None, 0, code)))
                }
            });
        }

        // Step 3: collect and sort.
        if let (Some(Ok(keys)), Source::Walk(w)) = (&s.sort, &mut progress.source) {
            let collected = with_candidates(
                w,
                false,
                |src| {
                    let mut ids = Vec::new();
                    loop {
                        match run.pull(src, sink) {
                            Ok(Some(id)) => {
                                ids.push(id);
                                if !s.admin && ids.len() > MAX_SORTED_ENTRIES {
                                    return Err(Stop::Fail(OpError::new(
                                        ResultCode::ADMIN_LIMIT_EXCEEDED,
                                        format!("more than {MAX_SORTED_ENTRIES} entries to sort"),
                                    )));
                                }
                            }
                            Ok(None) => return Ok(ids),
                            Err(stop) => return Err(stop),
                        }
                    }
                },
                |_| false,
            );
            let mut ids = match collected {
                Ok(ids) => ids,
                Err(Stop::Abandon | Stop::Pause) => return Step::Done(s.end(Some(&run), None)),
                Err(Stop::Fail(e)) => {
                    let code = e.code;
                    return Step::Done(s.end(Some(&run), Some(s.finish(Err(e), None, 0, code))));
                }
            };
            sort::sort_ids(v, &mut ids, keys, &mut |id, t| {
                s.access.searchable(rules, v, id, t)
            });
            progress.source = Source::Sorted { ids, pos: 0 };
        }

        // Step 4: output.
        run.may_pause = true;
        let mut returned = progress.returned;
        let outcome = match &mut progress.source {
            Source::Sorted { ids, pos } => {
                let outcome = run.output(sink, &mut returned, |_, _| {
                    let id = ids.get(*pos).copied();
                    *pos += usize::from(id.is_some());
                    Ok(id)
                });
                if matches!(outcome, Outcome::PageFull(_)) {
                    *pos -= 1;
                }
                outcome
            }
            Source::Walk(w) => {
                let mut pending = w.pending.take();
                let outcome = with_candidates(
                    w,
                    s.paged.is_some(),
                    |src| {
                        run.output(sink, &mut returned, |run, sink| match pending.take() {
                            Some(id) => Ok(Some(id)),
                            None => run.pull(src, sink),
                        })
                    },
                    |outcome| matches!(outcome, Outcome::Paused),
                );
                if let Outcome::PageFull(id) = outcome {
                    w.pending = Some(id);
                }
                outcome
            }
        };
        let estimate = match &progress.source {
            Source::Sorted { ids, .. } => u32::try_from(ids.len()).unwrap_or(u32::MAX),
            Source::Walk(_) => 0,
        };
        // The sort, when asked for, was done.
        let sort_code = ResultCode::SUCCESS;
        let mut persists = false;
        let reply = match outcome {
            Outcome::Paused => {
                let carried = Carried {
                    entries: s.carried.entries + (run.messages - run.references),
                    references: s.carried.references + run.references,
                    page: run.page,
                };
                progress.returned = returned;
                progress.examined = run.examined;
                drop(run);
                self.carried = carried;
                self.progress = Some(progress);
                return Step::Paused(PreparedSearch {
                    kind: Kind::Walk(self),
                });
            }
            Outcome::Abandoned => None,
            Outcome::Finished(result) => match (&s.sync, result) {
                (Some(sync), Ok(())) => {
                    let Run { filters, scratch, .. } = &mut run;
                    let deleted = sync.deleted(&mut |id| s.admits(rules, v, id, filters, scratch));
                    let controls = sync.finish(sink.buf(), message_id, &deleted);
                    persists = sync.persists();
                    (!persists).then(|| Reply::from_result(Ok(())).with_controls(controls))
                }
                (_, result) => Some(s.finish(result, None, estimate, sort_code)),
            },
            Outcome::PageFull(_) => s.paged.map(|p| {
                progress.returned = returned;
                progress.examined = run.examined;
                let cookie = lock(paged).put(p.hash, version.clone(), progress);
                s.finish(Ok(()), Some(&cookie), estimate, sort_code)
            }),
        };
        let mut end = s.end(Some(&run), reply);
        drop(run);
        if persists {
            end.persist = self.into_persist();
        }
        Step::Done(end)
    }

    /// The persist phase of a refreshAndPersist search whose refresh is over.
    fn into_persist(mut self: Box<Self>) -> Option<Box<PersistHandoff>> {
        let (registration, context, rid, base) = self.sync.as_mut()?.take_persist()?;
        Some(Box::new(PersistHandoff {
            search: self,
            registration,
            context,
            rid,
            base,
        }))
    }

    /// The request's scope.
    pub(crate) fn scope(&self) -> SearchScope {
        self.request_scope
    }

    /// True when this search returns entry `id` of `v`: in scope, not a referral entry
    /// (without ManageDsaIT), matching the filter with the types the requester may search,
    /// readable (the persist phase of a synchronization, and the end of a delta refresh).
    pub(crate) fn admits(
        &self,
        rules: &AccessRules,
        v: &Version,
        id: EntryId,
        filters: &mut FilterCache,
        scratch: &mut Vec<u8>,
    ) -> bool {
        let (base, scope) = self.first_scope;
        if !in_scope(v, base, scope, id) {
            return false;
        }
        if let Some(refs) = self.referrals.as_ref().filter(|r| !r.is_known_empty()) {
            if refs.contains(v, id) {
                return false;
            }
        }
        let Some(entry) = v.entry(id) else { return false };
        let dn = if self.needs_dn {
            Dn::parse(v.dn(id).as_bytes()).ok()
        } else {
            None
        };
        let filter = self.access.filter_for(rules, &self.filter, filters, v, id);
        filter.matches_entry(entry.attrs(), id, dn.as_ref(), v.schema(), scratch)
            && self.access.visible(rules, v, id)
    }

    /// Appends entry `id` of `v` with a Sync State control: the requested attributes the
    /// requester may read (none for `present`; never those a synchronization withholds);
    /// `buf` is a reused buffer.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_synced(
        &self,
        out: &mut Vec<u8>,
        buf: &mut Vec<u8>,
        msgid: MessageId,
        optypes: &OperationalTypes,
        rules: &AccessRules,
        v: &Version,
        id: EntryId,
        (state, uuid, cookie): (SyncStateKind, &UuidOctets, Option<&[u8]>),
    ) {
        let dn = v.dn(id);
        buf.clear();
        if state != SyncStateKind::Present {
            let sync = self.sync.as_deref();
            let mut readable = self.access.readable(rules, v, id);
            let selection = &self.selection;
            let mut allowed =
                |t| !sync.is_some_and(|s| s.withheld(optypes, t, selection.names(t))) && readable(t);
            self.selection
                .write_attributes(v, id, optypes, self.types_only, &mut allowed, buf);
        }
        sync::write_state_entry(out, msgid, dn.as_bytes(), buf, state, uuid, cookie);
    }

    /// How the run ended: `reply` with the counts of what `run` wrote.
    fn end(&self, run: Option<&Run<'_>>, reply: Option<Reply>) -> SearchEnd {
        let (messages, references) = run.map_or((0, 0), |r| (r.messages, r.references));
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        SearchEnd {
            persist: None,
            reply,
            entries: count(self.carried.entries + messages - references),
            references: count(self.carried.references + references),
            notes: SearchNotes {
                unindexed: self.unindexed,
                paged: self.paged.is_some(),
            },
        }
    }

    /// The SearchResultDone's reply with the response controls; `sort_code` is the
    /// sortResult when the sort was asked for and could be done.
    fn finish(
        &self,
        result: Result<(), OpError>,
        cookie: Option<&[u8]>,
        estimate: u32,
        sort_code: ResultCode,
    ) -> Reply {
        let mut controls: Vec<ResponseControl> = sort_response(&self.sort, sort_code).into_iter().collect();
        if self.paged.is_some() {
            controls.push(paged_control(estimate, cookie.unwrap_or(&[])));
        }
        Reply::from_result(result).with_controls(controls)
    }
}

/// Prepared searches and paged state cross threads.
const _: () = {
    const fn send<T: Send + 'static>() {}
    send::<PreparedSearch>();
    send::<PagedSearches>();
};
