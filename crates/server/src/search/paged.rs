//! Simple Paged Results (RFC 2696): the per-connection state of paged searches.
//!
//! Invariants:
//! 1. a page after the first reads the directory version the first page read (kept here by
//!    `Arc`), so the pages of one search are consistent with each other whatever is
//!    written meanwhile;
//! 2. a cookie is an opaque token, new for every page, naming one entry of
//!    [`PagedSearches`]; the entry is taken out while its page runs, so two requests with
//!    one cookie cannot both continue it (the second is refused);
//! 3. a cookie belongs to one request: the base, scope, alias dereferencing, typesOnly,
//!    filter, attribute list and sort keys of a later page must hash as the first page's
//!    did ([`request_hash`]), else the cookie is refused;
//! 4. at most [`MAX_PAGED_SEARCHES`] are kept per connection; starting one more drops the
//!    one least recently continued.
//!
//! How a page is served (in `run`): the page ends when `size` entries have been returned
//! and one more matching entry was found (kept as the next page's first), so the last
//! page's cookie is empty exactly when nothing remains. A cookie with size 0 abandons the
//! search (answered with an empty cookie). A refused cookie gets `protocolError` (2),
//! as OpenLDAP answers "paged results cookie is invalid".

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use larch_proto::controls::SortRequest;
use larch_proto::SearchRequest;
use larch_store::Version;

use super::walk::Progress;
use crate::error::OpError;

/// Most paged searches one connection keeps open: each holds the directory version its
/// first page read, and with it the memory of everything written since, so an idle
/// client must not be able to pin many versions.
pub const MAX_PAGED_SEARCHES: usize = 8;

/// Octets of a cookie (a big-endian token).
const COOKIE_LEN: usize = 8;

/// One paged search between two pages.
struct PagedState {
    token: u64,
    hash: u64,
    version: Arc<Version>,
    progress: Progress,
}

/// A paged search taken out of [`PagedSearches`] to serve its next page.
pub(crate) struct Continued {
    /// The version of the first page.
    pub(crate) version: Arc<Version>,
    /// Where the search stands.
    pub(crate) progress: Progress,
}

/// The paged searches of one connection (see the module documentation).
#[derive(Default)]
pub struct PagedSearches {
    next_token: u64,
    states: VecDeque<PagedState>,
}

impl std::fmt::Debug for PagedSearches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagedSearches")
            .field("open", &self.states.len())
            .finish_non_exhaustive()
    }
}

fn invalid() -> OpError {
    OpError::protocol("paged results cookie is invalid")
}

fn token_of(cookie: &[u8]) -> Result<u64, OpError> {
    let bytes: [u8; COOKIE_LEN] = cookie.try_into().map_err(|_| invalid())?;
    Ok(u64::from_be_bytes(bytes))
}

impl PagedSearches {
    /// No paged search open.
    pub fn new() -> PagedSearches {
        PagedSearches::default()
    }

    /// Number of paged searches waiting for their next page.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// True when none is open.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Forgets every paged search (their versions are released).
    pub fn clear(&mut self) {
        self.states.clear();
    }

    fn position(&self, cookie: &[u8], hash: u64) -> Result<usize, OpError> {
        let token = token_of(cookie)?;
        self.states
            .iter()
            .position(|s| s.token == token && s.hash == hash)
            .ok_or_else(invalid)
    }

    /// Takes out the search `cookie` names, if it belongs to the request hashed as `hash`.
    pub(crate) fn take(&mut self, cookie: &[u8], hash: u64) -> Result<Continued, OpError> {
        let i = self.position(cookie, hash)?;
        let s = self.states.remove(i).ok_or_else(invalid)?;
        Ok(Continued {
            version: s.version,
            progress: s.progress,
        })
    }

    /// Drops the search `cookie` names (a page size of 0 abandons it).
    pub(crate) fn abandon(&mut self, cookie: &[u8], hash: u64) -> Result<(), OpError> {
        let i = self.position(cookie, hash)?;
        self.states.remove(i);
        Ok(())
    }

    /// Keeps a search for its next page; returns the cookie naming it.
    pub(crate) fn put(&mut self, hash: u64, version: Arc<Version>, progress: Progress) -> Vec<u8> {
        while self.states.len() >= MAX_PAGED_SEARCHES {
            self.states.pop_front();
        }
        self.next_token = self.next_token.wrapping_add(1);
        let token = self.next_token;
        self.states.push_back(PagedState {
            token,
            hash,
            version,
            progress,
        });
        token.to_be_bytes().to_vec()
    }
}

/// The hash that ties a cookie to its request (invariant 3).
pub fn request_hash(req: &SearchRequest<'_>, sort: Option<&SortRequest<'_>>) -> u64 {
    let mut h = DefaultHasher::new();
    req.base.hash(&mut h);
    (req.scope as u8).hash(&mut h);
    (req.deref_aliases as u8).hash(&mut h);
    req.types_only.hash(&mut h);
    req.filter.as_ber().hash(&mut h);
    for a in req.attributes.iter() {
        a.hash(&mut h);
    }
    if let Some(s) = sort {
        for k in s.keys.iter() {
            k.attribute.hash(&mut h);
            k.ordering_rule.hash(&mut h);
            k.reverse.hash(&mut h);
        }
    }
    h.finish()
}
