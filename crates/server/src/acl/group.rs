//! Group membership for `group` clauses: is the requester a value of `member` or
//! `uniqueMember` of the group entry, in the operation's version?
//!
//! Steps:
//! 1. the group entry is looked up by its normalized DN (no entry: not a member);
//! 2. its values of both types are compared octet for octet with the requester's DN as
//!    stored (the usual way a member is written);
//! 3. then, per type: for a group with more than `SMALL_GROUP` values, when the type has an
//!    equality index, the index's set for the requester's DN must hold the group (a set
//!    without it proves non-membership; one with it may be a hash collision, so the values
//!    are still compared); the values are compared with the requester's DN by the type's
//!    equality rule (`distinguishedNameMatch`, `uniqueMemberMatch`).
//!
//! At most [`MAX_MEMBER_VALUES`] values in all are looked at; a group with more is treated
//! as not holding the requester beyond them (refusing access rather than spending unbounded
//! time on one request).

use larch_model::dn::NormDn;
use larch_model::schema::AttributeTypeId;
use larch_store::Version;

/// Most distinct groups the clauses of one rule set may name: each may be read once per
/// operation of a requester that reaches its clause.
pub const MAX_ACCESS_GROUPS: usize = 64;

/// Most values of a group looked at in one membership check: 100,000 DN comparisons take
/// a few milliseconds; a group beyond that is better split or indexed.
pub const MAX_MEMBER_VALUES: usize = 100_000;

/// Groups with at most this many values of a type are compared value by value without
/// asking the index first (normalizing a few values costs less than the index lookup).
const SMALL_GROUP: usize = 16;

/// Whether the entry named `member_dn` (as written) is a value of one of `types` of the
/// entry `group` in `version` (see the module documentation).
pub(crate) fn is_member(
    version: &Version,
    group: &NormDn,
    member_dn: &str,
    types: &[AttributeTypeId],
) -> bool {
    let Some(gid) = version.find(group) else {
        return false;
    };
    let Some(entry) = version.entry(gid) else {
        return false;
    };
    let schema = version.schema();
    let attrs = entry.attrs();
    let me = member_dn.as_bytes();
    // A value written exactly as the requester's DN is the common case, and costs a
    // comparison per value.
    let mut budget = MAX_MEMBER_VALUES;
    for &ty in types {
        for v in attrs.attribute(ty).flat_map(|a| a.values.iter()) {
            if budget == 0 {
                return false;
            }
            budget -= 1;
            if v == me {
                return true;
            }
        }
    }
    let mut wanted = Vec::new();
    let mut key = Vec::new();
    for &ty in types {
        let Some(rule) = schema.attribute_type_by_id(ty).and_then(|t| t.equality) else {
            continue;
        };
        let values = attrs.attribute(ty).map(|a| a.values.len()).sum::<usize>();
        if values == 0 {
            continue;
        }
        // A large group asks the index first: most requesters are not in it.
        if values > SMALL_GROUP {
            if let Some(index) = version.index(ty) {
                if let Some(set) = index.equality(rule, me, version.keyer()) {
                    if !set.contains(gid) {
                        continue;
                    }
                }
            }
        }
        wanted.clear();
        if rule.normalize(me, &mut wanted).is_err() {
            continue;
        }
        for v in attrs.attribute(ty).flat_map(|a| a.values.iter()) {
            if budget == 0 {
                return false;
            }
            budget -= 1;
            key.clear();
            if rule.normalize(v, &mut key).is_ok() && key == wanted {
                return true;
            }
        }
    }
    false
}
