//! A replica refuses client writes inside a replicated subtree: Add, Delete, Modify,
//! ModifyDN and Password Modify on a DN at or below a `[[replication]]` base are answered
//! `referral` (10) with the table's `referral` URL (by default the provider's), the target
//! DN appended as OpenLDAP does (`ldap://host:port/<dn>`, the DN percent-escaped as in
//! RFC 4516). Everybody gets it, the administrator too: only the consumer writes there
//! (as slapd lets only its syncrepl consumer write to a shadow database). Reads are served
//! meanwhile.
//!
//! The one call site is the session's write dispatch (`crate::session`), before access
//! control and the operation's own checks, as slapd's frontend refers updates on a shadow
//! before the backend runs them. A ModifyDN is refused when its entry is in a replicated
//! subtree; moving an entry into one is refused too (its new superior is checked as well).

use larch_model::dn::NormDn;
use larch_model::schema::Schema;

use super::Replication;
use crate::error::OpError;
use crate::lookup::referral::percent_escape;

/// The referral for a write to `dn` (written `dn_text` by the client), or `None` when the
/// DN is in no replicated subtree (or does not parse: the operation reports that itself).
pub fn refuse_write(replication: &Replication, dn: Option<&NormDn>, dn_text: &str) -> Option<OpError> {
    let dn = dn?;
    let consumer = replication.consumers.iter().find(|c| dn.is_within(&c.base))?;
    Some(OpError::referral(
        "",
        vec![referral_url(&consumer.referral, dn_text)],
    ))
}

/// [`refuse_write`] for a DN as the client wrote it, normalized through `schema` only when
/// this server replicates something.
pub fn refuse_write_text(replication: &Replication, schema: &Schema, dn_text: &[u8]) -> Option<OpError> {
    if replication.is_empty() {
        return None;
    }
    let dn = NormDn::from_text(dn_text, schema).ok();
    refuse_write(replication, dn.as_ref(), &String::from_utf8_lossy(dn_text))
}

/// The referral for a ModifyDN moving entry `dn_text` under `new_superior` when that lies in
/// a replicated subtree (the URL names the entry, as for any write).
pub fn refuse_move(
    replication: &Replication,
    schema: &Schema,
    new_superior: &[u8],
    dn_text: &[u8],
) -> Option<OpError> {
    if replication.is_empty() {
        return None;
    }
    let superior = NormDn::from_text(new_superior, schema).ok()?;
    let consumer = replication
        .consumers
        .iter()
        .find(|c| superior.is_within(&c.base))?;
    Some(OpError::referral(
        "",
        vec![referral_url(
            &consumer.referral,
            &String::from_utf8_lossy(dn_text),
        )],
    ))
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
