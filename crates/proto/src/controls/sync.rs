//! Content Synchronization (RFC 4533, "syncrepl"): the request, state and done controls,
//! and the Sync Info Message carried in an IntermediateResponse.

use super::{oid, sequence, ControlValue};
use crate::ber::{tag, Reader, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::seq::SeqOf;

/// Length of a `syncUUID` (an RFC 4122 UUID in binary).
pub const SYNC_UUID_LEN: usize = 16;

/// `mode` of a sync request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncMode {
    /// `refreshOnly` (1): send the changes, then end the search.
    RefreshOnly = 1,
    /// `refreshAndPersist` (3): send the changes, then keep sending new ones.
    RefreshAndPersist = 3,
}

/// Sync Request Control: `SEQUENCE { mode, cookie OPTIONAL, reloadHint BOOLEAN DEFAULT FALSE }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRequest<'a> {
    /// Refresh only, or refresh and persist.
    pub mode: SyncMode,
    /// The consumer's state, as last sent by the provider.
    pub cookie: Option<&'a [u8]>,
    /// Ask for a full reload if the provider cannot send a delta.
    pub reload_hint: bool,
}

impl<'a> ControlValue<'a> for SyncRequest<'a> {
    const OID: &'static str = oid::SYNC_REQUEST;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "SyncRequest";
        let (outer, mut r) = sequence(value, CTX)?;
        let mode = match r.read_integer(tag::ENUMERATED, "SyncRequest.mode")? {
            1 => SyncMode::RefreshOnly,
            3 => SyncMode::RefreshAndPersist,
            value => {
                return Err(DecodeError::new(
                    DecodeErrorKind::UnknownEnumerated { value },
                    "SyncRequest.mode",
                ))
            }
        };
        let cookie = r.read_optional(tag::OCTET_STRING, "SyncRequest.cookie")?;
        let reload_hint = optional_bool(&mut r, false, "SyncRequest.reloadHint")?;
        r.finish_sequence(CTX, &[tag::ENUMERATED, tag::OCTET_STRING, tag::BOOLEAN])?;
        outer.finish(CTX)?;
        Ok(SyncRequest {
            mode,
            cookie,
            reload_hint,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(tag::ENUMERATED, self.mode as i64);
        if let Some(c) = self.cookie {
            w.octet_string(c);
        }
        if self.reload_hint {
            w.boolean(tag::BOOLEAN, true);
        }
        w.end(m);
        true
    }
}

/// `state` of a sync state control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncStateKind {
    /// `present` (0).
    Present = 0,
    /// `add` (1).
    Add = 1,
    /// `modify` (2).
    Modify = 2,
    /// `delete` (3).
    Delete = 3,
}

/// Sync State Control, attached to each entry the provider sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncState<'a> {
    /// What happened to the entry.
    pub state: SyncStateKind,
    /// The entry's `entryUUID`, 16 octets.
    pub entry_uuid: &'a [u8],
    /// A new cookie, if the provider sends one here.
    pub cookie: Option<&'a [u8]>,
}

impl<'a> ControlValue<'a> for SyncState<'a> {
    const OID: &'static str = oid::SYNC_STATE;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "SyncState";
        let (outer, mut r) = sequence(value, CTX)?;
        let state = match r.read_integer(tag::ENUMERATED, "SyncState.state")? {
            0 => SyncStateKind::Present,
            1 => SyncStateKind::Add,
            2 => SyncStateKind::Modify,
            3 => SyncStateKind::Delete,
            value => {
                return Err(DecodeError::new(
                    DecodeErrorKind::UnknownEnumerated { value },
                    "SyncState.state",
                ))
            }
        };
        let entry_uuid = uuid(
            r.read_octets(tag::OCTET_STRING, "SyncState.entryUUID")?,
            "SyncState.entryUUID",
        )?;
        let cookie = r.read_optional(tag::OCTET_STRING, "SyncState.cookie")?;
        r.finish_sequence(CTX, &[tag::ENUMERATED, tag::OCTET_STRING])?;
        outer.finish(CTX)?;
        Ok(SyncState {
            state,
            entry_uuid,
            cookie,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(tag::ENUMERATED, self.state as i64);
        w.octet_string(self.entry_uuid);
        if let Some(c) = self.cookie {
            w.octet_string(c);
        }
        w.end(m);
        true
    }
}

/// Sync Done Control, attached to the SearchResultDone of a refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncDone<'a> {
    /// The new cookie.
    pub cookie: Option<&'a [u8]>,
    /// True when deleted entries were sent as deletes (not implied by absence).
    pub refresh_deletes: bool,
}

impl<'a> ControlValue<'a> for SyncDone<'a> {
    const OID: &'static str = oid::SYNC_DONE;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "SyncDone";
        let (outer, mut r) = sequence(value, CTX)?;
        let cookie = r.read_optional(tag::OCTET_STRING, "SyncDone.cookie")?;
        let refresh_deletes = optional_bool(&mut r, false, "SyncDone.refreshDeletes")?;
        r.finish_sequence(CTX, &[tag::OCTET_STRING, tag::BOOLEAN])?;
        outer.finish(CTX)?;
        Ok(SyncDone {
            cookie,
            refresh_deletes,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        if let Some(c) = self.cookie {
            w.octet_string(c);
        }
        if self.refresh_deletes {
            w.boolean(tag::BOOLEAN, true);
        }
        w.end(m);
        true
    }
}

/// Sync Info Message: the value of an IntermediateResponse named [`oid::SYNC_INFO`].
///
/// ```
/// use larch_proto::controls::SyncInfo;
/// let info = SyncInfo::RefreshPresent { cookie: Some(b"rid=001,csn=x"), refresh_done: true };
/// let mut buf = Vec::new();
/// info.encode(&mut buf);
/// assert_eq!(SyncInfo::decode(&buf).unwrap(), info);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncInfo<'a> {
    /// `newcookie [0]`.
    NewCookie(&'a [u8]),
    /// `refreshDelete [1]`: the delete phase of a refresh.
    RefreshDelete {
        /// New cookie.
        cookie: Option<&'a [u8]>,
        /// DEFAULT TRUE.
        refresh_done: bool,
    },
    /// `refreshPresent [2]`: the present phase of a refresh.
    RefreshPresent {
        /// New cookie.
        cookie: Option<&'a [u8]>,
        /// DEFAULT TRUE.
        refresh_done: bool,
    },
    /// `syncIdSet [3]`: a set of entryUUIDs that are present or deleted.
    SyncIdSet {
        /// New cookie.
        cookie: Option<&'a [u8]>,
        /// True when the UUIDs are deleted entries, false when present ones.
        refresh_deletes: bool,
        /// The UUIDs, 16 octets each.
        uuids: SeqOf<'a, &'a [u8]>,
    },
}

const NEW_COOKIE: u8 = tag::context(0);
const REFRESH_DELETE: u8 = tag::context_constructed(1);
const REFRESH_PRESENT: u8 = tag::context_constructed(2);
const SYNC_ID_SET: u8 = tag::context_constructed(3);

impl<'a> SyncInfo<'a> {
    /// Decodes the value of a Sync Info IntermediateResponse.
    pub fn decode(value: &'a [u8]) -> Result<Self> {
        const CTX: &str = "SyncInfo";
        let mut outer = Reader::new(value);
        let (t, c, _) = outer.read_any(CTX)?;
        outer.finish(CTX)?;
        let mut r = Reader::new(c);
        let info = match t {
            NEW_COOKIE => return Ok(SyncInfo::NewCookie(c)),
            REFRESH_DELETE | REFRESH_PRESENT => {
                let cookie = r.read_optional(tag::OCTET_STRING, "SyncInfo.cookie")?;
                let refresh_done = optional_bool(&mut r, true, "SyncInfo.refreshDone")?;
                if t == REFRESH_DELETE {
                    SyncInfo::RefreshDelete { cookie, refresh_done }
                } else {
                    SyncInfo::RefreshPresent { cookie, refresh_done }
                }
            }
            SYNC_ID_SET => {
                let cookie = r.read_optional(tag::OCTET_STRING, "SyncInfo.cookie")?;
                let refresh_deletes = optional_bool(&mut r, false, "SyncInfo.refreshDeletes")?;
                let uuids = SeqOf::decode_contents(r.read(tag::SET, "SyncInfo.syncUUIDs")?)?;
                for u in uuids.iter() {
                    uuid(u, "SyncInfo.syncUUIDs")?;
                }
                SyncInfo::SyncIdSet {
                    cookie,
                    refresh_deletes,
                    uuids,
                }
            }
            found => return Err(DecodeError::new(DecodeErrorKind::InvalidTag { found }, CTX)),
        };
        r.finish_sequence(CTX, &[tag::OCTET_STRING, tag::BOOLEAN, tag::SET])?;
        Ok(info)
    }

    /// Encodes the value of a Sync Info IntermediateResponse into `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        match *self {
            SyncInfo::NewCookie(c) => w.octets(NEW_COOKIE, c),
            SyncInfo::RefreshDelete { cookie, refresh_done }
            | SyncInfo::RefreshPresent { cookie, refresh_done } => {
                let t = if matches!(self, SyncInfo::RefreshDelete { .. }) {
                    REFRESH_DELETE
                } else {
                    REFRESH_PRESENT
                };
                let m = w.begin(t);
                if let Some(c) = cookie {
                    w.octet_string(c);
                }
                if !refresh_done {
                    w.boolean(tag::BOOLEAN, false);
                }
                w.end(m);
            }
            SyncInfo::SyncIdSet {
                cookie,
                refresh_deletes,
                uuids,
            } => {
                let m = w.begin(SYNC_ID_SET);
                if let Some(c) = cookie {
                    w.octet_string(c);
                }
                if refresh_deletes {
                    w.boolean(tag::BOOLEAN, true);
                }
                let s = w.begin(tag::SET);
                uuids.encode_contents(&mut w);
                w.end(s);
                w.end(m);
            }
        }
    }
}

fn optional_bool(r: &mut Reader<'_>, default: bool, ctx: &'static str) -> Result<bool> {
    match r.peek_tag() {
        Some(tag::BOOLEAN) => r.read_bool(tag::BOOLEAN, ctx),
        _ => Ok(default),
    }
}

fn uuid<'a>(v: &'a [u8], ctx: &'static str) -> Result<&'a [u8]> {
    if v.len() == SYNC_UUID_LEN {
        Ok(v)
    } else {
        Err(DecodeError::new(DecodeErrorKind::InvalidValue, ctx))
    }
}
