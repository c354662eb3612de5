//! The consumer's state machine over one sync search: what each provider message means
//! for the local store, and when the cookie may be stored.
//!
//! States and transitions (RFC 4533 sections 3.3 and 3.4):
//! 1. **Refresh** (from the start of each search): entries sent as `add` or `modify` are
//!    put, `delete` ones deleted, `present` ones only noted; every entry and every UUID of
//!    a syncIdSet with refreshDeletes FALSE is noted as mentioned (`super::present`); a
//!    syncIdSet with refreshDeletes TRUE deletes its UUIDs. Cookies are noted but not
//!    stored: the changes of a refresh are committed in batches as they come, and the
//!    cookie only with the last of them, so an interrupted refresh starts again from the
//!    old cookie.
//! 2. **End of a phase**: refreshPresent deletes the unmentioned entries
//!    ([`Action::DeleteUnmentioned`]) and starts a new mention set; refreshDelete ends a
//!    delete phase. With refreshDone TRUE the refresh is over: the batch is committed with
//!    the cookie ([`Action::Commit`]) and, in refreshAndPersist, the search goes on in
//!    **Persist** ([`Action::RefreshDone`]).
//! 3. **Persist**: each change is applied as it comes, and every cookie (in a Sync State
//!    control or a newcookie message) is stored with the changes received before it.
//! 4. **Done**: in refreshOnly, a SearchResultDone with Sync Done ends the refresh as in 2
//!    (refreshDeletes FALSE: the refresh was a present phase) and the search
//!    ([`Action::Finished`]).
//! 5. **A full refresh** (the search sent a cookie without CSN: the first one, or after
//!    `e-syncRefreshRequired`): the provider sends every entry it holds, and ends with
//!    whichever phase it likes (slapd says refreshDeletes); the end of the refresh is
//!    always the end of a present phase, so local entries it did not mention are deleted. `e-syncRefreshRequired` (4096) is
//!    [`SyncError::RefreshRequired`]; any other failure, or the end of a persistent
//!    search, ends the session with an error.
//!
//! Invariant: [`SyncMachine::cookie_to_store`] is `None` during a refresh, and never goes
//! backwards (cookies are merged per server ID, `super::cookie::CsnSet::merge`).

use std::sync::Arc;

use larch_proto::controls::SyncStateKind;
use larch_proto::ResultCode;

use super::cookie::{Cookie, CsnSet};
use super::error::SyncError;
use super::message::{Done, EntryEvent, Event, Info, SyncUuid};
use super::present::Present;
use crate::config::ReplicationMode;

/// What the consumer does about a message.
#[derive(Debug, Clone)]
pub enum Action {
    /// Put this entry.
    Put(EntryEvent),
    /// Delete the entry of this UUID.
    Delete(SyncUuid),
    /// Delete the local entries not mentioned in the present phase that just ended.
    DeleteUnmentioned(Arc<Present>),
    /// A cookie to store arrived: what is pending is committed with it (at once at the end
    /// of a refresh; in persist, once no further message is ready).
    Commit,
    /// The refresh is over; the search persists.
    RefreshDone,
    /// The search is over (refreshOnly).
    Finished,
}

/// One sync search's state.
#[derive(Debug)]
pub struct SyncMachine {
    mode: ReplicationMode,
    full: bool,
    in_refresh: bool,
    present: Present,
    received: CsnSet,
    stored: CsnSet,
}

impl SyncMachine {
    /// A search of a consumer in `mode` whose stored cookie has `stored`; `full` when the
    /// search was sent without a CSN (a full refresh: see the module documentation).
    pub fn new(mode: ReplicationMode, stored: CsnSet, full: bool) -> SyncMachine {
        SyncMachine {
            mode,
            full,
            in_refresh: true,
            present: Present::default(),
            received: stored.clone(),
            stored,
        }
    }

    /// True until the refresh is over.
    pub fn in_refresh(&self) -> bool {
        self.in_refresh
    }

    /// The CSN set to store with the next commit: `None` during a refresh or when nothing
    /// newer was received.
    pub fn cookie_to_store(&self) -> Option<CsnSet> {
        (!self.in_refresh && self.received != self.stored).then(|| self.received.clone())
    }

    /// The commit that carried `cookie_to_store`'s set is durable.
    pub fn cookie_stored(&mut self, csns: CsnSet) {
        self.stored = csns;
    }

    fn note_cookie(&mut self, cookie: Option<&[u8]>) -> Result<(), SyncError> {
        let Some(c) = cookie else { return Ok(()) };
        // The connection carries one search: whatever its `rid` (slapd echoes the one sent,
        // 000 when none was), the cookie is about it.
        let c = Cookie::parse(c)?;
        self.received.merge(&c.csns);
        Ok(())
    }

    fn mention(&mut self, uuid: SyncUuid) -> Result<(), SyncError> {
        if self.in_refresh {
            self.present.mention(uuid)?;
        }
        Ok(())
    }

    fn end_present_phase(&mut self, out: &mut Vec<Action>) {
        let present = std::mem::take(&mut self.present);
        out.push(Action::DeleteUnmentioned(Arc::new(present)));
    }

    fn end_refresh(&mut self, out: &mut Vec<Action>) {
        if self.full {
            // A full refresh sent every entry the provider holds: whatever it says about
            // the last phase (slapd ends one with refreshDeletes), what it did not
            // mention is gone.
            self.end_present_phase(out);
        }
        self.in_refresh = false;
        self.present = Present::default();
        out.push(Action::Commit);
        if self.mode == ReplicationMode::RefreshAndPersist {
            out.push(Action::RefreshDone);
        }
    }

    /// What to do about `event` (see the module documentation).
    pub fn handle(&mut self, event: Event) -> Result<Vec<Action>, SyncError> {
        let mut out = Vec::new();
        match event {
            Event::Ignored => {}
            Event::Entry(e) => {
                self.note_cookie(e.cookie.as_deref())?;
                let has_cookie = e.cookie.is_some();
                match e.state {
                    SyncStateKind::Present => self.mention(e.uuid)?,
                    SyncStateKind::Add | SyncStateKind::Modify => {
                        self.mention(e.uuid)?;
                        out.push(Action::Put(e));
                    }
                    SyncStateKind::Delete => out.push(Action::Delete(e.uuid)),
                }
                if has_cookie && !self.in_refresh {
                    out.push(Action::Commit);
                }
            }
            Event::Info(info) => self.info(info, &mut out)?,
            Event::Done(done) => self.done(done, &mut out)?,
        }
        Ok(out)
    }

    fn info(&mut self, info: Info, out: &mut Vec<Action>) -> Result<(), SyncError> {
        match info {
            Info::NewCookie(c) => {
                self.note_cookie(Some(&c))?;
                if !self.in_refresh {
                    out.push(Action::Commit);
                }
            }
            Info::RefreshPresent { cookie, done } => {
                self.note_cookie(cookie.as_deref())?;
                if self.in_refresh {
                    if done && self.full {
                        self.end_refresh(out);
                    } else {
                        self.end_present_phase(out);
                        if done {
                            self.end_refresh(out);
                        }
                    }
                }
            }
            Info::RefreshDelete { cookie, done } => {
                self.note_cookie(cookie.as_deref())?;
                if self.in_refresh {
                    // A present phase may follow: it mentions everything it keeps anew
                    // (a full refresh keeps its list: every entry it sent is mentioned).
                    if !self.full {
                        self.present = Present::default();
                    }
                    if done {
                        self.end_refresh(out);
                    }
                }
            }
            Info::IdSet {
                cookie,
                refresh_deletes,
                uuids,
            } => {
                self.note_cookie(cookie.as_deref())?;
                for u in uuids {
                    if refresh_deletes {
                        out.push(Action::Delete(u));
                    } else {
                        self.mention(u)?;
                    }
                }
                if !self.in_refresh && cookie.is_some() {
                    out.push(Action::Commit);
                }
            }
        }
        Ok(())
    }

    fn done(&mut self, done: Done, out: &mut Vec<Action>) -> Result<(), SyncError> {
        if done.code == ResultCode::E_SYNC_REFRESH_REQUIRED {
            return Err(SyncError::RefreshRequired);
        }
        if done.code != ResultCode::SUCCESS {
            return Err(SyncError::Refused {
                what: "sync search",
                code: done.code,
                message: done.message,
            });
        }
        if self.mode == ReplicationMode::RefreshAndPersist {
            return Err(SyncError::Protocol(
                "the provider ended the persistent search".into(),
            ));
        }
        self.note_cookie(done.cookie.as_deref())?;
        if self.in_refresh {
            if !done.refresh_deletes && !self.full {
                self.end_present_phase(out);
            }
            self.end_refresh(out);
        }
        out.push(Action::Finished);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syncrepl::cookie::Csn;
    use crate::syncrepl::message::decode_event;
    use crate::syncrepl::message::tests::{done_pdu, entry_pdu, info_pdu};
    use larch_proto::controls::{SyncDone, SyncInfo};
    use larch_proto::SeqOf;

    const C1: &str = "20261127021024.123456Z#000000#000#000000";
    const C2: &str = "20261127021025.000000Z#000000#000#000000";

    fn handle(m: &mut SyncMachine, pdu: &[u8]) -> Vec<Action> {
        m.handle(decode_event(pdu).unwrap()).unwrap()
    }

    fn kinds(actions: &[Action]) -> Vec<&'static str> {
        actions
            .iter()
            .map(|a| match a {
                Action::Put(_) => "put",
                Action::Delete(_) => "delete",
                Action::DeleteUnmentioned(_) => "unmentioned",
                Action::Commit => "commit",
                Action::RefreshDone => "refreshed",
                Action::Finished => "finished",
            })
            .collect()
    }

    fn csns(list: &[&str]) -> CsnSet {
        CsnSet::from_csns(list.iter().map(|c| Csn::parse(c).unwrap()))
    }

    #[test]
    fn refresh_and_persist_with_a_present_phase() {
        let mut m = SyncMachine::new(ReplicationMode::RefreshAndPersist, CsnSet::default(), false);
        let a = handle(
            &mut m,
            &entry_pdu(SyncStateKind::Add, &[1; 16], "cn=a,dc=x", &[("cn", &["a"])], None),
        );
        assert_eq!(kinds(&a), ["put"]);
        assert!(handle(
            &mut m,
            &entry_pdu(SyncStateKind::Present, &[2; 16], "cn=b,dc=x", &[], None)
        )
        .is_empty());
        let ids: [&[u8]; 1] = [&[3; 16]];
        let set = SyncInfo::SyncIdSet {
            cookie: None,
            refresh_deletes: false,
            uuids: SeqOf::from_items(&ids),
        };
        assert!(handle(&mut m, &info_pdu(&set)).is_empty());
        // No cookie is stored while the refresh runs.
        assert_eq!(m.cookie_to_store(), None);
        let cookie = format!("rid=001,csn={C1}");
        let end = SyncInfo::RefreshPresent {
            cookie: Some(cookie.as_bytes()),
            refresh_done: true,
        };
        let a = handle(&mut m, &info_pdu(&end));
        assert_eq!(kinds(&a), ["unmentioned", "commit", "refreshed"]);
        let Action::DeleteUnmentioned(p) = &a[0] else {
            panic!()
        };
        assert_eq!(p.len(), 3);
        assert!(p.is_mentioned(&[1; 16]) && p.is_mentioned(&[2; 16]) && p.is_mentioned(&[3; 16]));
        assert_eq!(m.cookie_to_store(), Some(csns(&[C1])));
        m.cookie_stored(csns(&[C1]));
        assert_eq!(m.cookie_to_store(), None);
        // Persist: a change with its cookie is committed with it.
        let cookie = format!("rid=001,csn={C2}");
        let a = handle(
            &mut m,
            &entry_pdu(
                SyncStateKind::Modify,
                &[1; 16],
                "cn=a,dc=x",
                &[("cn", &["a"])],
                Some(&cookie),
            ),
        );
        assert_eq!(kinds(&a), ["put", "commit"]);
        assert_eq!(m.cookie_to_store(), Some(csns(&[C2])));
        let a = handle(
            &mut m,
            &entry_pdu(SyncStateKind::Delete, &[1; 16], "cn=a,dc=x", &[], None),
        );
        assert_eq!(kinds(&a), ["delete"]);
        // An older cookie never moves the set back.
        let old = format!("rid=001,csn={C1}");
        let a = handle(&mut m, &info_pdu(&SyncInfo::NewCookie(old.as_bytes())));
        assert_eq!(kinds(&a), ["commit"]);
        assert_eq!(m.cookie_to_store(), Some(csns(&[C2])));
        // The end of a persistent search is an error (the consumer reconnects).
        assert!(m
            .handle(decode_event(&done_pdu(ResultCode::SUCCESS, None)).unwrap())
            .is_err());
    }

    #[test]
    fn a_delete_phase_deletes_what_it_lists_and_nothing_else() {
        let mut m = SyncMachine::new(ReplicationMode::RefreshAndPersist, csns(&[C1]), false);
        let ids: [&[u8]; 2] = [&[4; 16], &[5; 16]];
        let set = SyncInfo::SyncIdSet {
            cookie: None,
            refresh_deletes: true,
            uuids: SeqOf::from_items(&ids),
        };
        assert_eq!(kinds(&handle(&mut m, &info_pdu(&set))), ["delete", "delete"]);
        let end = SyncInfo::RefreshDelete {
            cookie: None,
            refresh_done: true,
        };
        assert_eq!(kinds(&handle(&mut m, &info_pdu(&end))), ["commit", "refreshed"]);
        // Nothing newer than the stored cookie was received.
        assert_eq!(m.cookie_to_store(), None);
    }

    #[test]
    fn refresh_only_ends_with_sync_done() {
        let cookie = format!("rid=002,csn={C2}");
        for (refresh_deletes, want) in [
            (false, vec!["unmentioned", "commit", "finished"]),
            (true, vec!["commit", "finished"]),
        ] {
            let mut m = SyncMachine::new(ReplicationMode::RefreshOnly, csns(&[C1]), false);
            handle(
                &mut m,
                &entry_pdu(SyncStateKind::Add, &[1; 16], "cn=a,dc=x", &[("cn", &["a"])], None),
            );
            let d = SyncDone {
                cookie: Some(cookie.as_bytes()),
                refresh_deletes,
            };
            assert_eq!(
                kinds(&handle(&mut m, &done_pdu(ResultCode::SUCCESS, Some(d)))),
                want
            );
            assert_eq!(m.cookie_to_store(), Some(csns(&[C2])));
        }
        // slapd echoes `rid=000` to a search sent without a cookie: the cookie is taken.
        let mut m = SyncMachine::new(ReplicationMode::RefreshOnly, CsnSet::default(), false);
        let other = format!("rid=000,csn={C2}");
        let d = SyncDone {
            cookie: Some(other.as_bytes()),
            refresh_deletes: true,
        };
        handle(&mut m, &done_pdu(ResultCode::SUCCESS, Some(d)));
        assert_eq!(m.cookie_to_store(), Some(csns(&[C2])));
    }

    #[test]
    fn a_full_refresh_ends_with_a_present_phase_whatever_the_provider_says() {
        let cookie = format!("rid=001,csn={C1}");
        let d = SyncDone {
            cookie: Some(cookie.as_bytes()),
            refresh_deletes: true,
        };
        let mut m = SyncMachine::new(ReplicationMode::RefreshOnly, CsnSet::default(), true);
        handle(
            &mut m,
            &entry_pdu(SyncStateKind::Add, &[1; 16], "cn=a,dc=x", &[("cn", &["a"])], None),
        );
        assert_eq!(
            kinds(&handle(&mut m, &done_pdu(ResultCode::SUCCESS, Some(d)))),
            ["unmentioned", "commit", "finished"]
        );
        for end in [
            SyncInfo::RefreshDelete {
                cookie: Some(cookie.as_bytes()),
                refresh_done: true,
            },
            SyncInfo::RefreshPresent {
                cookie: Some(cookie.as_bytes()),
                refresh_done: true,
            },
        ] {
            let mut m = SyncMachine::new(ReplicationMode::RefreshAndPersist, CsnSet::default(), true);
            handle(
                &mut m,
                &entry_pdu(SyncStateKind::Add, &[1; 16], "cn=a,dc=x", &[("cn", &["a"])], None),
            );
            let a = handle(&mut m, &info_pdu(&end));
            assert_eq!(kinds(&a), ["unmentioned", "commit", "refreshed"]);
            let Action::DeleteUnmentioned(p) = &a[0] else {
                panic!()
            };
            assert!(p.is_mentioned(&[1; 16]));
        }
    }

    #[test]
    fn failures_end_the_search() {
        let mut m = SyncMachine::new(ReplicationMode::RefreshOnly, CsnSet::default(), false);
        let e = m.handle(decode_event(&done_pdu(ResultCode::E_SYNC_REFRESH_REQUIRED, None)).unwrap());
        assert!(matches!(e, Err(SyncError::RefreshRequired)));
        let e = m.handle(decode_event(&done_pdu(ResultCode::INSUFFICIENT_ACCESS_RIGHTS, None)).unwrap());
        assert!(matches!(e, Err(SyncError::Refused { .. })));
        // A malformed cookie is an error, not a guess.
        let bad = entry_pdu(
            SyncStateKind::Add,
            &[1; 16],
            "cn=a",
            &[],
            Some("rid=001,csn=garbage"),
        );
        assert!(matches!(
            m.handle(decode_event(&bad).unwrap()),
            Err(SyncError::Cookie(_))
        ));
    }
}
