//! `[sync_provider]`: the content synchronization provider (RFC 4533, `crate::syncprov`),
//! which replicas and clients that follow the directory read changes from.
//!
//! Keys (`docs/replication.md`):
//! - `sync_provider.enabled` (`true`): answer searches with the Sync Request control; off,
//!   they are refused with `unwillingToPerform` (53) and no change is kept;
//! - `sync_provider.session_log` (100000): changes the session log keeps, so that a
//!   consumer whose cookie is that recent gets only the changes since (a delta) instead
//!   of a present phase; 1 to [`MAX_SESSION_LOG`];
//! - `sync_provider.server_id` (0): this server's ID in CSNs and cookies (OpenLDAP's
//!   `olcServerID`), 0 to 4095; servers that write to the same replicated data need
//!   different IDs.

use serde::Deserialize;

use super::ConfigError;

/// Changes the session log keeps unless `sync_provider.session_log` says otherwise: enough
/// for a consumer that was away for minutes under a heavy write load, or days of a quiet
/// directory.
pub const DEFAULT_SESSION_LOG: usize = 100_000;

/// The largest `sync_provider.session_log`: ten million notes (about 2 GB) is beyond any
/// use a session log has; a larger number is a typing mistake.
pub const MAX_SESSION_LOG: u64 = 10_000_000;

/// `[sync_provider]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncProviderSettings {
    /// `sync_provider.enabled`.
    pub enabled: bool,
    /// `sync_provider.session_log`.
    pub session_log: usize,
    /// `sync_provider.server_id`.
    pub server_id: u16,
}

impl Default for SyncProviderSettings {
    fn default() -> SyncProviderSettings {
        SyncProviderSettings {
            enabled: true,
            session_log: DEFAULT_SESSION_LOG,
            server_id: 0,
        }
    }
}

/// `[sync_provider]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSyncProvider {
    pub enabled: Option<bool>,
    pub session_log: Option<u64>,
    pub server_id: Option<u64>,
}

impl SyncProviderSettings {
    pub(crate) fn from_raw(raw: RawSyncProvider) -> Result<SyncProviderSettings, ConfigError> {
        let defaults = SyncProviderSettings::default();
        let session_log = match raw.session_log {
            None => defaults.session_log,
            Some(n) if (1..=MAX_SESSION_LOG).contains(&n) => n as usize,
            Some(n) => {
                return Err(ConfigError::invalid(
                    "sync_provider.session_log",
                    format!("{n} is not from 1 to {MAX_SESSION_LOG}"),
                ))
            }
        };
        let server_id = match raw.server_id {
            None => defaults.server_id,
            Some(n) if n <= u64::from(crate::opattrs::csn::MAX_SID) => n as u16,
            Some(n) => {
                return Err(ConfigError::invalid(
                    "sync_provider.server_id",
                    format!("{n} is not from 0 to 4095 (three hex digits in a CSN)"),
                ))
            }
        };
        Ok(SyncProviderSettings {
            enabled: raw.enabled.unwrap_or(defaults.enabled),
            session_log,
            server_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ranges() {
        let s = SyncProviderSettings::from_raw(RawSyncProvider::default()).unwrap();
        assert_eq!(s, SyncProviderSettings::default());
        assert!(s.enabled);
        let raw = |session_log, server_id| RawSyncProvider {
            enabled: Some(false),
            session_log: Some(session_log),
            server_id: Some(server_id),
        };
        let s = SyncProviderSettings::from_raw(raw(10, 4095)).unwrap();
        assert_eq!((s.enabled, s.session_log, s.server_id), (false, 10, 4095));
        assert!(SyncProviderSettings::from_raw(raw(0, 1)).is_err());
        assert!(SyncProviderSettings::from_raw(raw(MAX_SESSION_LOG + 1, 1)).is_err());
        let e = SyncProviderSettings::from_raw(raw(10, 4096)).unwrap_err();
        assert!(e.to_string().contains("sync_provider.server_id"), "{e}");
    }
}
