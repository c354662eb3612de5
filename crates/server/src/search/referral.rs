//! Continuation references (RFC 4511 section 4.5.3): without the ManageDsaIT control, a
//! search meets the referral entries in its scope as SearchResultReference messages and does
//! not look below them. The `ref` URLs are rewritten as for a referral result
//! (`crate::lookup::referral`), with the referral entry's DN where the URL has none and a
//! scope: `base` for the references of a one-level search, `sub` for the others.

use larch_model::dn::NormDn;
use larch_proto::SearchScope;
use larch_store::{EntryId, Version};

use crate::directory::Directory;
use crate::error::OpError;
use crate::lookup::referral::entry_uris;

/// The URIs of a SearchResultReference for referral entry `id` met by a search of
/// `scope` (RFC 4511 section 4.5.3).
pub fn continuation_uris(version: &Version, id: EntryId, scope: SearchScope) -> Vec<String> {
    let scope = if scope == SearchScope::OneLevel {
        SearchScope::Base
    } else {
        SearchScope::Subtree
    };
    entry_uris(version, id, None, Some(scope))
}

/// [`crate::lookup::referral_above`] with `dir`'s referral class: the referral check for
/// updates, at the path it had when it lived here (tools and tests call it so).
pub fn referral_above(dir: &Directory, version: &Version, dn: &NormDn, dn_text: &str) -> Option<OpError> {
    crate::lookup::referral_above(version, dir.referral_class.as_ref(), dn, dn_text)
}
