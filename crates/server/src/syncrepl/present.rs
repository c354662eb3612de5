//! Present-phase bookkeeping (RFC 4533 section 3.3.1): during a refresh the consumer notes
//! every entryUUID the provider mentions — entries sent as present, added or modified, and
//! the UUIDs of a syncIdSet with refreshDeletes FALSE — and when the present phase ends
//! (a refreshPresent message, or a refreshOnly search done without refreshDeletes) every
//! local entry of the replicated scope that was not mentioned is deleted: the provider no
//! longer holds it, or it no longer matches.
//!
//! Which local entries count ([`Present::unmentioned`]):
//! 1. the entries in the table's scope below the base (`sub`: the base's subtree, `one`:
//!    its children, `base`: none), never the base entry itself (it holds the cookie; a
//!    provider that lost its base entry has nothing below it to send either) nor anything
//!    above it;
//! 2. whose entryUUID (16 octets read from the text form) is not in the set, or which have
//!    none;
//! 3. listed children before parents (the reverse of a parents-first walk), so each delete
//!    removes a leaf; an entry that still has children outside the scope (a `one` scope)
//!    is left, and [`Unmentioned::kept`] counts it.
//!
//! Limit: at most [`MAX_PRESENT_UUIDS`] UUIDs in one refresh (16 octets each plus the
//! set's overhead: some 400 MB at the limit); more is an error, not an unbounded set.

use std::collections::HashSet;

use larch_model::schema::AttributeTypeId;
use larch_store::{EntryId, Version};

use super::error::SyncError;
use super::message::SyncUuid;
use crate::config::ReplicationScope;

/// Most UUIDs one refresh may mention.
pub const MAX_PRESENT_UUIDS: usize = 20_000_000;

/// The UUIDs mentioned so far in a refresh.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Present {
    mentioned: HashSet<SyncUuid>,
}

/// The entries a present phase deletes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unmentioned {
    /// To delete, children first.
    pub delete: Vec<EntryId>,
    /// Unmentioned but left: they still have children out of the scope.
    pub kept: usize,
}

impl Present {
    /// Notes `uuid` as present.
    pub fn mention(&mut self, uuid: SyncUuid) -> Result<(), SyncError> {
        if self.mentioned.len() >= MAX_PRESENT_UUIDS && !self.mentioned.contains(&uuid) {
            return Err(SyncError::Apply(format!(
                "a refresh mentioned more than {MAX_PRESENT_UUIDS} entries"
            )));
        }
        self.mentioned.insert(uuid);
        Ok(())
    }

    /// Whether `uuid` was mentioned.
    pub fn is_mentioned(&self, uuid: &SyncUuid) -> bool {
        self.mentioned.contains(uuid)
    }

    /// How many UUIDs were mentioned.
    pub fn len(&self) -> usize {
        self.mentioned.len()
    }

    /// True when none was.
    pub fn is_empty(&self) -> bool {
        self.mentioned.is_empty()
    }

    /// The local entries the end of the present phase deletes (see the module
    /// documentation); `uuid_type` is `entryUUID`.
    pub fn unmentioned(
        &self,
        version: &Version,
        base: EntryId,
        scope: ReplicationScope,
        uuid_type: AttributeTypeId,
    ) -> Unmentioned {
        let in_scope: Vec<EntryId> = match scope {
            ReplicationScope::Base => Vec::new(),
            ReplicationScope::One => version.children(base).iter().collect(),
            ReplicationScope::Sub => version.subtree(base).filter(|id| *id != base).collect(),
        };
        let mut out = Unmentioned::default();
        let mut deleted: HashSet<EntryId> = HashSet::new();
        // Parents come before children in the walk: the reverse has children first.
        for id in in_scope.into_iter().rev() {
            let uuid = version
                .entry(id)
                .and_then(|e| {
                    e.attrs()
                        .attribute(uuid_type)
                        .flat_map(|a| a.values.iter())
                        .next()
                        .map(<[u8]>::to_vec)
                })
                .and_then(|text| uuid_from_text(&text));
            if uuid.is_some_and(|u| self.is_mentioned(&u)) {
                continue;
            }
            let children_left = version.children(id).iter().any(|c| !deleted.contains(&c));
            if children_left {
                out.kept += 1;
                continue;
            }
            deleted.insert(id);
            out.delete.push(id);
        }
        out
    }
}

/// The 16 octets of a UUID's text form (`8-4-4-4-12` hex digits, either case); `None` for
/// anything else.
pub fn uuid_from_text(text: &[u8]) -> Option<SyncUuid> {
    if text.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut n = 0;
    let mut i = 0;
    while i < text.len() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if text[i] != b'-' {
                return None;
            }
            i += 1;
            continue;
        }
        let hi = (text[i] as char).to_digit(16)?;
        let lo = (*text.get(i + 1)? as char).to_digit(16)?;
        *out.get_mut(n)? = (hi * 16 + lo) as u8;
        n += 1;
        i += 2;
    }
    (n == 16).then_some(out)
}

/// The text form of a UUID (lowercase, as OpenLDAP writes `entryUUID`).
pub fn uuid_to_text(uuid: &SyncUuid) -> String {
    crate::opattrs::uuid::Uuid(*uuid).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn uuid_text_forms() {
        let u: SyncUuid = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
        ];
        assert_eq!(uuid_to_text(&u), "12345678-9abc-def0-0123-456789abcdef");
        assert_eq!(uuid_from_text(b"12345678-9ABC-DEF0-0123-456789abcdef"), Some(u));
        for bad in [
            &b"12345678-9abc-def0-0123-456789abcde"[..],
            b"12345678-9abc-def0-0123-456789abcdeg",
            b"123456789abc-def0-0123-456789abcdef0",
            b"",
        ] {
            assert_eq!(uuid_from_text(bad), None);
        }
    }

    proptest! {
        #[test]
        fn uuid_text_round_trips(u in any::<[u8; 16]>()) {
            prop_assert_eq!(uuid_from_text(uuid_to_text(&u).as_bytes()), Some(u));
        }

        #[test]
        fn uuid_from_text_never_panics(t in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = uuid_from_text(&t);
        }
    }

    #[test]
    fn the_limit_is_kept() {
        let mut p = Present::default();
        p.mention([1; 16]).unwrap();
        p.mention([1; 16]).unwrap();
        assert_eq!(p.len(), 1);
        assert!(p.is_mentioned(&[1; 16]) && !p.is_mentioned(&[2; 16]));
    }
}
