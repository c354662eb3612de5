//! `[groups]`: the hooks that keep group membership consistent (`crate::hooks`).
//!
//! Keys (what each hook does: `docs/groups.md`):
//! - `groups.member_of` (`true`): keep `memberOf` on every entry a group lists;
//! - `groups.referential_integrity` (`true`): a deleted or renamed entry's DN is removed
//!   from, or renamed in, every `member` and `uniqueMember` value;
//! - `groups.empty_group_member` (`""`, the empty DN): the value referential integrity
//!   leaves in a required member attribute whose last value it removed (slapd's
//!   `refint_nothing`). It must be a DN;
//! - `groups.sync_member_uid` (`false`): keep `memberUid` of a `posixGroup` that lists
//!   its members by DN (`member` or `uniqueMember`) in step with them (and back).

use serde::Deserialize;

use super::ConfigError;

/// `[groups]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSettings {
    /// `groups.member_of`.
    pub member_of: bool,
    /// `groups.referential_integrity`.
    pub referential_integrity: bool,
    /// `groups.empty_group_member`.
    pub empty_group_member: String,
    /// `groups.sync_member_uid`.
    pub sync_member_uid: bool,
}

impl Default for GroupSettings {
    fn default() -> GroupSettings {
        GroupSettings {
            member_of: true,
            referential_integrity: true,
            empty_group_member: String::new(),
            sync_member_uid: false,
        }
    }
}

/// `[groups]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGroups {
    pub member_of: Option<bool>,
    pub referential_integrity: Option<bool>,
    pub empty_group_member: Option<String>,
    pub sync_member_uid: Option<bool>,
}

impl GroupSettings {
    pub(crate) fn from_raw(raw: RawGroups) -> Result<GroupSettings, ConfigError> {
        let defaults = GroupSettings::default();
        let empty_group_member = raw.empty_group_member.unwrap_or(defaults.empty_group_member);
        if larch_model::dn::Dn::parse(empty_group_member.as_bytes()).is_err() {
            return Err(ConfigError::invalid(
                "groups.empty_group_member",
                format!("`{empty_group_member}` is not a DN"),
            ));
        }
        Ok(GroupSettings {
            member_of: raw.member_of.unwrap_or(defaults.member_of),
            referential_integrity: raw
                .referential_integrity
                .unwrap_or(defaults.referential_integrity),
            empty_group_member,
            sync_member_uid: raw.sync_member_uid.unwrap_or(defaults.sync_member_uid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_a_placeholder_that_must_be_a_dn() {
        let g = GroupSettings::from_raw(RawGroups::default()).unwrap();
        assert_eq!(g, GroupSettings::default());
        assert!(g.member_of && g.referential_integrity && !g.sync_member_uid);
        let raw = RawGroups {
            member_of: Some(false),
            referential_integrity: None,
            empty_group_member: Some("cn=nobody".into()),
            sync_member_uid: Some(true),
        };
        let g = GroupSettings::from_raw(raw).unwrap();
        assert!(!g.member_of && g.referential_integrity);
        assert_eq!(g.empty_group_member, "cn=nobody");
        assert!(g.sync_member_uid);
        let raw = RawGroups {
            empty_group_member: Some("not a dn".into()),
            ..RawGroups::default()
        };
        let e = GroupSettings::from_raw(raw).unwrap_err().to_string();
        assert!(e.contains("groups.empty_group_member"), "{e}");
    }
}
