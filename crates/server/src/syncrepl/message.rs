//! The provider's messages about the sync search, decoded into owned [`Event`]s (so the
//! read buffer can be reused at once), and the search request that starts it.
//!
//! What RFC 4533 lets a provider send, and what each becomes:
//! 1. SearchResultEntry with a Sync State control (`present`, `add`, `modify`, `delete`,
//!    the entry's 16-octet syncUUID, maybe a cookie) -> [`Event::Entry`]; an entry without
//!    the control is a protocol error (the consumer could not tell which entry it is);
//! 2. IntermediateResponse named `1.3.6.1.4.1.4203.1.9.1.4` (Sync Info: newcookie,
//!    refreshDelete, refreshPresent, syncIdSet) -> [`Event::Info`];
//! 3. SearchResultDone, with a Sync Done control or not -> [`Event::Done`];
//! 4. a Notice of Disconnection (message ID 0) -> the error it announces;
//! 5. anything else with the search's message ID (a continuation reference, another
//!    intermediate response) -> [`Event::Ignored`]; a message for another ID is a protocol
//!    error (the consumer has only the one request outstanding).
//!
//! Nothing here panics on any input: the codec validates every PDU and control before the
//! values are read.

use larch_proto::controls::{
    Control, ControlValue, SyncDone, SyncInfo, SyncMode, SyncRequest, SyncState, SyncStateKind,
};
use larch_proto::{
    exop, DerefAliases, LdapMessage, OwnedFilter, ProtocolOp, ResultCode, SearchRequest, SearchScope, SeqOf,
};

use super::error::SyncError;
use crate::config::{ReplicationMode, ReplicationScope, ReplicationSettings};

/// The message ID of the sync search (1 and 2 are StartTLS and the Bind).
pub const SEARCH_ID: i32 = 3;
/// The OID of the Sync Info intermediate response.
const SYNC_INFO_OID: &str = larch_proto::controls::oid::SYNC_INFO;

/// A syncUUID.
pub type SyncUuid = [u8; 16];

/// An entry message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryEvent {
    /// What happened to it.
    pub state: SyncStateKind,
    /// Its entryUUID.
    pub uuid: SyncUuid,
    /// Its DN (for `delete` and `present`, whatever the provider put there).
    pub dn: Vec<u8>,
    /// Its attributes as sent: description and values.
    pub attributes: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
    /// A cookie sent with it.
    pub cookie: Option<Vec<u8>>,
}

/// A Sync Info message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Info {
    /// `newcookie`.
    NewCookie(Vec<u8>),
    /// `refreshDelete`: the delete phase ended.
    RefreshDelete {
        /// New cookie.
        cookie: Option<Vec<u8>>,
        /// The refresh is over.
        done: bool,
    },
    /// `refreshPresent`: the present phase ended.
    RefreshPresent {
        /// New cookie.
        cookie: Option<Vec<u8>>,
        /// The refresh is over.
        done: bool,
    },
    /// `syncIdSet`.
    IdSet {
        /// New cookie.
        cookie: Option<Vec<u8>>,
        /// True: these entries are deleted; false: present.
        refresh_deletes: bool,
        /// The UUIDs.
        uuids: Vec<SyncUuid>,
    },
}

/// The SearchResultDone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// The result code.
    pub code: ResultCode,
    /// The diagnostic message.
    pub message: String,
    /// The Sync Done control's cookie.
    pub cookie: Option<Vec<u8>>,
    /// The Sync Done control's refreshDeletes (false without the control).
    pub refresh_deletes: bool,
}

/// One message of the sync search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// An entry.
    Entry(EntryEvent),
    /// Sync Info.
    Info(Info),
    /// The end of the search.
    Done(Done),
    /// Nothing for the consumer.
    Ignored,
}

impl Event {
    /// A line for the error log at debug level: the kind, states, UUID counts, cookies.
    pub fn summary(&self) -> String {
        let text = |c: &Option<Vec<u8>>| {
            c.as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default()
                .into_owned()
        };
        match self {
            Event::Entry(e) => format!(
                "entry {:?} {} `{}` cookie `{}`",
                e.state,
                super::present::uuid_to_text(&e.uuid),
                String::from_utf8_lossy(&e.dn),
                text(&e.cookie)
            ),
            Event::Info(Info::NewCookie(c)) => format!("newcookie `{}`", String::from_utf8_lossy(c)),
            Event::Info(Info::RefreshDelete { cookie, done }) => {
                format!("refreshDelete done={done} cookie `{}`", text(cookie))
            }
            Event::Info(Info::RefreshPresent { cookie, done }) => {
                format!("refreshPresent done={done} cookie `{}`", text(cookie))
            }
            Event::Info(Info::IdSet {
                cookie,
                refresh_deletes,
                uuids,
            }) => format!(
                "syncIdSet refreshDeletes={refresh_deletes} {} UUIDs cookie `{}`",
                uuids.len(),
                text(cookie)
            ),
            Event::Done(d) => format!(
                "done {} refreshDeletes={} cookie `{}`",
                d.code.0,
                d.refresh_deletes,
                text(&d.cookie)
            ),
            Event::Ignored => "ignored".to_string(),
        }
    }
}

fn protocol(what: impl Into<String>) -> SyncError {
    SyncError::Protocol(what.into())
}

fn uuid(octets: &[u8]) -> Result<SyncUuid, SyncError> {
    octets
        .try_into()
        .map_err(|_| protocol("a syncUUID is not 16 octets"))
}

/// Decodes one PDU from the provider (see the module documentation).
pub fn decode_event(pdu: &[u8]) -> Result<Event, SyncError> {
    let msg = LdapMessage::decode(pdu).map_err(|e| protocol(format!("undecodable message: {e}")))?;
    if msg.message_id == 0 {
        if let ProtocolOp::ExtendedResponse(r) = msg.op {
            let notice = r.name == Some(exop::NOTICE_OF_DISCONNECTION.as_bytes());
            return Err(SyncError::Refused {
                what: if notice {
                    "connection (notice of disconnection)"
                } else {
                    "connection"
                },
                code: r.result.code,
                message: String::from_utf8_lossy(r.result.diagnostic_message).into_owned(),
            });
        }
        return Err(protocol(format!("unsolicited {}", msg.op.name())));
    }
    if msg.message_id != SEARCH_ID {
        return Err(protocol(format!(
            "a {} for message {}, which was not sent",
            msg.op.name(),
            msg.message_id
        )));
    }
    let controls = msg.controls();
    let find = |oid: &str| controls.iter().find(|c| c.oid == oid.as_bytes());
    match msg.op {
        ProtocolOp::SearchResultEntry(e) => {
            let c = find(SyncState::OID).ok_or_else(|| protocol("an entry without a Sync State control"))?;
            let s = SyncState::from_control(&c).map_err(|e| protocol(format!("Sync State: {e}")))?;
            let attributes = e
                .attributes
                .iter()
                .map(|a| {
                    (
                        a.description.to_vec(),
                        a.values.iter().map(<[u8]>::to_vec).collect(),
                    )
                })
                .collect();
            Ok(Event::Entry(EntryEvent {
                state: s.state,
                uuid: uuid(s.entry_uuid)?,
                dn: e.object_name.to_vec(),
                attributes,
                cookie: s.cookie.map(<[u8]>::to_vec),
            }))
        }
        ProtocolOp::IntermediateResponse(r) if r.name == Some(SYNC_INFO_OID.as_bytes()) => {
            let value = r
                .value
                .ok_or_else(|| protocol("a Sync Info message without a value"))?;
            let info = SyncInfo::decode(value).map_err(|e| protocol(format!("Sync Info: {e}")))?;
            let owned = |c: Option<&[u8]>| c.map(<[u8]>::to_vec);
            Ok(Event::Info(match info {
                SyncInfo::NewCookie(c) => Info::NewCookie(c.to_vec()),
                SyncInfo::RefreshDelete { cookie, refresh_done } => Info::RefreshDelete {
                    cookie: owned(cookie),
                    done: refresh_done,
                },
                SyncInfo::RefreshPresent { cookie, refresh_done } => Info::RefreshPresent {
                    cookie: owned(cookie),
                    done: refresh_done,
                },
                SyncInfo::SyncIdSet {
                    cookie,
                    refresh_deletes,
                    uuids,
                } => Info::IdSet {
                    cookie: owned(cookie),
                    refresh_deletes,
                    uuids: uuids.iter().map(uuid).collect::<Result<_, _>>()?,
                },
            }))
        }
        ProtocolOp::SearchResultDone(r) => {
            let done = match find(SyncDone::OID) {
                Some(c) => Some(SyncDone::from_control(&c).map_err(|e| protocol(format!("Sync Done: {e}")))?),
                None => None,
            };
            Ok(Event::Done(Done {
                code: r.code,
                message: String::from_utf8_lossy(r.diagnostic_message).into_owned(),
                cookie: done.and_then(|d| d.cookie).map(<[u8]>::to_vec),
                refresh_deletes: done.is_some_and(|d| d.refresh_deletes),
            }))
        }
        ProtocolOp::SearchResultReference(_) | ProtocolOp::IntermediateResponse(_) => Ok(Event::Ignored),
        other => Err(protocol(format!(
            "a {} in answer to the sync search",
            other.name()
        ))),
    }
}

/// Encodes the sync search of `s` into `out`: base, scope, filter and attributes of the
/// table, no size or time limit, the Sync Request control (critical) with `cookie`.
pub fn encode_search(
    s: &ReplicationSettings,
    cookie: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> Result<(), SyncError> {
    let filter = OwnedFilter::parse(&s.filter).map_err(|e| protocol(format!("filter {}: {e}", s.filter)))?;
    let attributes: Vec<&[u8]> = s.attributes.iter().map(|a| a.as_bytes()).collect();
    let req = SearchRequest {
        base: s.base.as_bytes(),
        scope: match s.scope {
            ReplicationScope::Base => SearchScope::Base,
            ReplicationScope::One => SearchScope::OneLevel,
            ReplicationScope::Sub => SearchScope::Subtree,
        },
        deref_aliases: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter: filter.as_filter(),
        attributes: SeqOf::from_items(&attributes),
    };
    let sync = SyncRequest {
        mode: match s.mode {
            ReplicationMode::RefreshAndPersist => SyncMode::RefreshAndPersist,
            ReplicationMode::RefreshOnly => SyncMode::RefreshOnly,
        },
        cookie,
        reload_hint: false,
    };
    let mut value = Vec::new();
    let controls = [Control::typed(&sync, true, &mut value)];
    let mut msg = LdapMessage::new(SEARCH_ID, ProtocolOp::SearchRequest(req));
    msg.controls = Some(SeqOf::from_items(&controls));
    msg.encode(out);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use larch_proto::{
        ExtendedResponse, IntermediateResponse, LdapResult, PartialAttribute, SearchResultEntry,
    };

    /// The PDU of a SearchResultEntry with a Sync State control.
    pub(crate) fn entry_pdu(
        state: SyncStateKind,
        uuid: &[u8],
        dn: &str,
        attrs: &[(&str, &[&str])],
        cookie: Option<&str>,
    ) -> Vec<u8> {
        let values: Vec<Vec<&[u8]>> = attrs
            .iter()
            .map(|(_, v)| v.iter().map(|s| s.as_bytes()).collect())
            .collect();
        let list: Vec<PartialAttribute<'_>> = attrs
            .iter()
            .zip(&values)
            .map(|((d, _), v)| PartialAttribute {
                description: d.as_bytes(),
                values: SeqOf::from_items(v),
            })
            .collect();
        let entry = SearchResultEntry {
            object_name: dn.as_bytes(),
            attributes: SeqOf::from_items(&list),
        };
        let state = SyncState {
            state,
            entry_uuid: uuid,
            cookie: cookie.map(str::as_bytes),
        };
        let mut value = Vec::new();
        let controls = [Control::typed(&state, false, &mut value)];
        let mut msg = LdapMessage::new(SEARCH_ID, ProtocolOp::SearchResultEntry(entry));
        msg.controls = Some(SeqOf::from_items(&controls));
        let mut out = Vec::new();
        msg.encode(&mut out);
        out
    }

    /// The PDU of a Sync Info message.
    pub(crate) fn info_pdu(info: &SyncInfo<'_>) -> Vec<u8> {
        let mut value = Vec::new();
        info.encode(&mut value);
        let r = IntermediateResponse {
            name: Some(SYNC_INFO_OID.as_bytes()),
            value: Some(&value),
        };
        let mut out = Vec::new();
        LdapMessage::new(SEARCH_ID, ProtocolOp::IntermediateResponse(r)).encode(&mut out);
        out
    }

    /// The PDU of a SearchResultDone, with a Sync Done control when `done` is given.
    pub(crate) fn done_pdu(code: ResultCode, done: Option<SyncDone<'_>>) -> Vec<u8> {
        let mut value = Vec::new();
        let controls: Vec<Control<'_>> = match &done {
            Some(d) => vec![Control::typed(d, false, &mut value)],
            None => Vec::new(),
        };
        let mut msg = LdapMessage::new(
            SEARCH_ID,
            ProtocolOp::SearchResultDone(LdapResult::new(code, b"", b"why")),
        );
        if !controls.is_empty() {
            msg.controls = Some(SeqOf::from_items(&controls));
        }
        let mut out = Vec::new();
        msg.encode(&mut out);
        out
    }

    const U1: [u8; 16] = [1; 16];
    const U2: [u8; 16] = [2; 16];

    #[test]
    fn entries_carry_their_state_uuid_and_cookie() {
        let pdu = entry_pdu(
            SyncStateKind::Add,
            &U1,
            "cn=a,dc=example,dc=com",
            &[("cn", &["a"]), ("objectClass", &["top", "person"])],
            Some("rid=001,csn=x"),
        );
        let Event::Entry(e) = decode_event(&pdu).unwrap() else {
            panic!()
        };
        assert_eq!((e.state, e.uuid), (SyncStateKind::Add, U1));
        assert_eq!(e.dn, b"cn=a,dc=example,dc=com");
        assert_eq!(e.attributes[1].1, [b"top".to_vec(), b"person".to_vec()]);
        assert_eq!(e.cookie.as_deref(), Some(&b"rid=001,csn=x"[..]));
        let pdu = entry_pdu(SyncStateKind::Delete, &U2, "cn=b,dc=example,dc=com", &[], None);
        let Event::Entry(e) = decode_event(&pdu).unwrap() else {
            panic!()
        };
        assert_eq!((e.state, e.uuid, e.cookie), (SyncStateKind::Delete, U2, None));
    }

    #[test]
    fn sync_info_messages() {
        let uuids: [&[u8]; 2] = [&U1, &U2];
        let cases = [
            (SyncInfo::NewCookie(b"c1"), Info::NewCookie(b"c1".to_vec())),
            (
                SyncInfo::RefreshDelete {
                    cookie: None,
                    refresh_done: true,
                },
                Info::RefreshDelete {
                    cookie: None,
                    done: true,
                },
            ),
            (
                SyncInfo::RefreshPresent {
                    cookie: Some(b"c2"),
                    refresh_done: false,
                },
                Info::RefreshPresent {
                    cookie: Some(b"c2".to_vec()),
                    done: false,
                },
            ),
            (
                SyncInfo::SyncIdSet {
                    cookie: None,
                    refresh_deletes: true,
                    uuids: SeqOf::from_items(&uuids),
                },
                Info::IdSet {
                    cookie: None,
                    refresh_deletes: true,
                    uuids: vec![U1, U2],
                },
            ),
        ];
        for (wire, want) in cases {
            assert_eq!(decode_event(&info_pdu(&wire)).unwrap(), Event::Info(want));
        }
    }

    #[test]
    fn the_end_of_the_search() {
        let d = SyncDone {
            cookie: Some(b"c3"),
            refresh_deletes: true,
        };
        let Event::Done(done) = decode_event(&done_pdu(ResultCode::SUCCESS, Some(d))).unwrap() else {
            panic!()
        };
        assert_eq!(
            (done.code, done.cookie.as_deref(), done.refresh_deletes),
            (ResultCode::SUCCESS, Some(&b"c3"[..]), true)
        );
        let Event::Done(done) = decode_event(&done_pdu(ResultCode::E_SYNC_REFRESH_REQUIRED, None)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (done.code, done.cookie, done.refresh_deletes),
            (ResultCode::E_SYNC_REFRESH_REQUIRED, None, false)
        );
    }

    #[test]
    fn what_is_refused() {
        // An entry without a Sync State control.
        let entry = SearchResultEntry {
            object_name: b"cn=a",
            attributes: SeqOf::from_items(&[]),
        };
        let mut pdu = Vec::new();
        LdapMessage::new(SEARCH_ID, ProtocolOp::SearchResultEntry(entry)).encode(&mut pdu);
        assert!(matches!(decode_event(&pdu), Err(SyncError::Protocol(_))));
        // A message for a request that was not sent.
        let mut pdu = Vec::new();
        LdapMessage::new(9, ProtocolOp::SearchResultEntry(entry)).encode(&mut pdu);
        assert!(matches!(decode_event(&pdu), Err(SyncError::Protocol(_))));
        // A Notice of Disconnection.
        let notice = ExtendedResponse {
            result: LdapResult::new(ResultCode::UNAVAILABLE, b"", b"shutting down"),
            name: Some(exop::NOTICE_OF_DISCONNECTION.as_bytes()),
            value: None,
        };
        let mut pdu = Vec::new();
        LdapMessage::new(0, ProtocolOp::ExtendedResponse(notice)).encode(&mut pdu);
        let e = decode_event(&pdu).unwrap_err().to_string();
        assert!(e.contains("shutting down"), "{e}");
        // Garbage, and every truncation of a real message.
        assert!(decode_event(b"\x30\x03\x02\x01").is_err());
        let good = entry_pdu(SyncStateKind::Add, &U1, "cn=a", &[("cn", &["a"])], Some("c"));
        for n in 0..good.len() {
            assert!(decode_event(&good[..n]).is_err());
        }
        // A 15-octet UUID is refused by the codec.
        let bad = entry_pdu(SyncStateKind::Add, &U1[..15], "cn=a", &[], None);
        assert!(decode_event(&bad).is_err());
    }

    #[test]
    fn the_search_request_carries_the_sync_control() {
        let s = crate::config::ServerConfig::from_toml_str(
            "[[replication]]\nrid = 1\nprovider = \"ldap://p:389\"\nbind_dn = \"cn=r\"\ncredentials = \"x\"\nbase = \"dc=example,dc=com\"\n",
        )
        .unwrap()
        .replication
        .remove(0);
        let mut out = Vec::new();
        encode_search(&s, Some(b"rid=001,csn=y"), &mut out).unwrap();
        let msg = LdapMessage::decode(&out).unwrap();
        let ProtocolOp::SearchRequest(req) = msg.op else {
            panic!()
        };
        assert_eq!(req.base, b"dc=example,dc=com");
        assert_eq!(
            req.attributes.iter().collect::<Vec<_>>(),
            [&b"*"[..], b"+", b"transitiveMemberOf"]
        );
        let c = msg.controls().iter().next().unwrap();
        assert!(c.critical);
        let r = SyncRequest::from_control(&c).unwrap();
        assert_eq!(
            (r.mode, r.cookie),
            (SyncMode::RefreshAndPersist, Some(&b"rid=001,csn=y"[..]))
        );
    }
}
