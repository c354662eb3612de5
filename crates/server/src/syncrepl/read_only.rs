//! A replica refuses client writes inside a replicated subtree: Add, Delete, Modify,
//! ModifyDN and Password Modify on a DN at or below a `[[replication]]` base are answered
//! `referral` (10) with the table's `referral` URL (by default the provider's), the target
//! DN appended as OpenLDAP does (`ldap://host:port/<dn>`, the DN percent-escaped as in
//! RFC 4516), or, where the table says `writes = "chain"`, forwarded to the provider
//! ([`super::chain`]). Everybody gets the same, the administrator too: only the consumer
//! writes there (as slapd lets only its syncrepl consumer write to a shadow database).
//! Reads are served meanwhile.
//!
//! The call sites are the session's write dispatch and Password Modify (`crate::session`),
//! before access control and the operation's own checks, as slapd's frontend refers
//! updates on a shadow before the backend runs them. A ModifyDN is routed by its entry;
//! moving an entry into a replicated subtree is routed by the new superior's table.

use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_model::schema::Schema;

use super::chain::Chain;
use super::{Replica, Replication};
use crate::error::OpError;
use crate::lookup::referral::percent_escape;

/// Where a client write goes.
#[derive(Debug)]
pub enum Route {
    /// This server runs it.
    Local,
    /// The client is referred (the error to answer).
    Refer(OpError),
    /// It is forwarded to the provider.
    Chain(Arc<Chain>),
}

impl Route {
    /// The route of a write to the entry `dn_text` inside `table`'s subtree.
    fn through(table: &Replica, dn_text: &str) -> Route {
        match &table.chain {
            Some(chain) => Route::Chain(Arc::clone(chain)),
            None => Route::Refer(OpError::referral(
                "",
                vec![referral_url(&table.referral, dn_text)],
            )),
        }
    }
}

/// The route of a write to `dn` (written `dn_text` by the client): [`Route::Local`] when
/// the DN is in no replicated subtree (or does not parse: the operation reports that).
pub fn route_write(replication: &Replication, dn: Option<&NormDn>, dn_text: &str) -> Route {
    let Some(dn) = dn else { return Route::Local };
    match replication.consumers.iter().find(|c| dn.is_within(&c.base)) {
        Some(table) => Route::through(table, dn_text),
        None => Route::Local,
    }
}

/// [`route_write`] for a DN as the client wrote it, normalized through `schema` only when
/// this server replicates something; with `new_superior`, a ModifyDN that moves the entry
/// into a replicated subtree goes that subtree's way.
pub fn route_write_text(
    replication: &Replication,
    schema: &Schema,
    dn_text: &[u8],
    new_superior: Option<&[u8]>,
) -> Route {
    if replication.is_empty() {
        return Route::Local;
    }
    let text = String::from_utf8_lossy(dn_text);
    let dn = NormDn::from_text(dn_text, schema).ok();
    let route = route_write(replication, dn.as_ref(), &text);
    if !matches!(route, Route::Local) {
        return route;
    }
    let Some(superior) = new_superior.and_then(|s| NormDn::from_text(s, schema).ok()) else {
        return Route::Local;
    };
    match replication.consumers.iter().find(|c| superior.is_within(&c.base)) {
        Some(table) => Route::through(table, &text),
        None => Route::Local,
    }
}

/// `url` with `dn_text` as its DN part.
pub fn referral_url(url: &str, dn_text: &str) -> String {
    let mut out = url.trim_end_matches('/').to_string();
    out.push('/');
    percent_escape(dn_text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_carries_the_target_dn() {
        assert_eq!(
            referral_url("ldap://p.example:389", "cn=a b,dc=example,dc=com"),
            "ldap://p.example:389/cn=a%20b,dc=example,dc=com"
        );
        assert_eq!(referral_url("ldaps://p/", "cn=x?y"), "ldaps://p/cn=x%3Fy");
    }
}
