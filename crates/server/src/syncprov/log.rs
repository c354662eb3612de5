//! The session log: the provider's memory of recent changes, and its context CSNs.
//!
//! OpenLDAP's syncprov keeps an optional `syncprov-sessionlog` of recent deletes and
//! modifies; Larch keeps one always, of every change, fed from the store's change feed
//! ([`super::feeder`]). With it, a consumer whose cookie is recent gets only what changed
//! since (a delta refresh: the changed entries and the deleted UUIDs); one whose cookie is
//! older than the log gets a present phase (entries changed since its cookie in full,
//! the others by name only, and it deletes what was not named); one without a cookie gets
//! every entry.
//!
//! # Invariants
//! 1. `notes` are in LSN order, at most `capacity` of them; `last_lsn` is the LSN of the
//!    last change seen (noted or not).
//! 2. `context` holds, per server ID, the largest CSN of the directory: the largest
//!    `entryCSN` when the log started, raised by each change since.
//! 3. The log holds every change whose CSN is later than `floor`'s CSN of its server, and
//!    than `started`'s: `started` is the context when the log starts (a delete made before
//!    then left no CSN on any entry, so a cookie *equal* to it may still lack one: only a
//!    cookie strictly later for each of its servers is covered), and `floor` is raised by
//!    each note the log drops (a cookie holding a dropped note's CSN has seen it and
//!    everything of its server before it). A server absent from both has all its changes
//!    in the log.
//! 4. A cookie is answered with a delta only when the log holds every change the cookie
//!    lacks (3), each of them with a CSN and a UUID, and the cookie is not ahead of
//!    `context` (a consumer that saw changes this directory does not have, after a restore
//!    from an older backup, is given a present phase, which removes what it must not keep).
//!
//! # Limits
//! [`crate::config::DEFAULT_SESSION_LOG`] notes unless configured; each holds two DNs and a CSN (about
//! 200 octets), so the default costs about 20 MB at most.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use larch_store::wal::Lsn;

use super::note::{ChangeNote, NoteKind, UuidOctets};
use crate::syncrepl::cookie::CsnSet;

/// How a refresh answers a cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshPlan {
    /// No cookie (or an empty one): every entry, as added.
    Full,
    /// A cookie the log cannot answer with a delta: entries changed since the cookie in
    /// full, the others by name (present), then the consumer deletes what was not named.
    Present(CsnSet),
    /// The changes since the cookie: the UUIDs of entries changed (sent in full if they
    /// still match) and of entries deleted, each once, in the order of their last change.
    Delta {
        /// Entries added, modified or renamed since the cookie and not deleted after.
        changed: Vec<UuidOctets>,
        /// Entries deleted since the cookie.
        deleted: Vec<UuidOctets>,
    },
}

/// The session log (see the module documentation).
#[derive(Debug)]
pub struct SessionLog {
    notes: VecDeque<Arc<ChangeNote>>,
    capacity: usize,
    context: CsnSet,
    floor: CsnSet,
    started: CsnSet,
    /// A note without a CSN was dropped: the log can no longer tell what it missed.
    dropped_unstamped: bool,
    last_lsn: Lsn,
}

impl SessionLog {
    /// A log starting at LSN `lsn` of a directory whose context CSNs are `context`,
    /// keeping at most `capacity` notes.
    pub fn new(lsn: Lsn, context: CsnSet, capacity: usize) -> SessionLog {
        SessionLog {
            notes: VecDeque::new(),
            capacity: capacity.max(1),
            floor: CsnSet::default(),
            started: context.clone(),
            context,
            dropped_unstamped: false,
            last_lsn: lsn,
        }
    }

    /// The context CSNs (invariant 2).
    pub fn context(&self) -> &CsnSet {
        &self.context
    }

    /// The LSN of the last change noted.
    pub fn last_lsn(&self) -> Lsn {
        self.last_lsn
    }

    /// Notes held.
    pub fn len(&self) -> usize {
        self.notes.len()
    }

    /// True when no note is held.
    pub fn is_empty(&self) -> bool {
        self.notes.is_empty()
    }

    /// Appends the note of the next change, dropping the oldest beyond the capacity.
    pub fn push(&mut self, note: Arc<ChangeNote>) {
        // In a cluster the changes of one write share its entry's LSN.
        debug_assert!(note.lsn >= self.last_lsn, "notes in LSN order");
        self.last_lsn = note.lsn;
        if let Some(csn) = &note.csn {
            self.context.insert(csn.clone());
        }
        self.notes.push_back(note);
        while self.notes.len() > self.capacity {
            if let Some(old) = self.notes.pop_front() {
                match &old.csn {
                    Some(csn) => self.floor.insert(csn.clone()),
                    None => self.dropped_unstamped = true,
                }
            }
        }
    }

    /// How to refresh a consumer whose cookie holds `cookie` (see [`RefreshPlan`] and
    /// invariant 4).
    pub fn plan(&self, cookie: &CsnSet) -> RefreshPlan {
        if cookie.is_empty() {
            return RefreshPlan::Full;
        }
        let present = || RefreshPlan::Present(cookie.clone());
        if !cookie.is_covered_by(&self.context) || self.dropped_unstamped {
            return present();
        }
        if self.floor.iter().any(|f| cookie.lacks(f)) {
            return present();
        }
        if self
            .started
            .iter()
            .any(|s| cookie.get(s.sid()).is_none_or(|c| c <= s))
        {
            return present();
        }
        // The last change of each entry the cookie lacks, in order.
        let mut last: HashMap<UuidOctets, (usize, bool)> = HashMap::new();
        for (i, note) in self.notes.iter().enumerate() {
            let Some(csn) = &note.csn else { return present() };
            if !cookie.lacks(csn) {
                continue;
            }
            let Some(uuid) = note.uuid else { return present() };
            last.insert(uuid, (i, note.kind == NoteKind::Delete));
        }
        let mut order: Vec<(usize, UuidOctets, bool)> =
            last.into_iter().map(|(u, (i, d))| (i, u, d)).collect();
        order.sort_unstable_by_key(|&(i, _, _)| i);
        let (mut changed, mut deleted) = (Vec::new(), Vec::new());
        for (_, uuid, is_delete) in order {
            if is_delete {
                deleted.push(uuid);
            } else {
                changed.push(uuid);
            }
        }
        RefreshPlan::Delta { changed, deleted }
    }

    /// The notes after LSN `lsn`, oldest first; `None` when the log no longer holds all
    /// of them.
    pub fn since(&self, lsn: Lsn) -> Option<Vec<Arc<ChangeNote>>> {
        if lsn >= self.last_lsn {
            return Some(Vec::new());
        }
        let first = self.notes.front()?;
        if first.lsn > lsn + 1 {
            return None;
        }
        Some(self.notes.iter().filter(|n| n.lsn > lsn).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syncrepl::cookie::Csn;

    fn csn(n: u32) -> Csn {
        Csn::parse(&format!("20261127010203.{n:06}Z#000000#001#000000")).unwrap()
    }

    fn note(lsn: Lsn, n: u32, uuid: u8, kind: NoteKind) -> Arc<ChangeNote> {
        Arc::new(ChangeNote {
            lsn,
            csn: Some(csn(n)),
            uuid: Some([uuid; 16]),
            kind,
            old_dn: None,
            new_dn: None,
            deleted_dn: None,
            ends_write: true,
        })
    }

    fn set(n: u32) -> CsnSet {
        CsnSet::from_csns([csn(n)])
    }

    #[test]
    fn delta_names_each_entry_once_by_its_last_change() {
        let mut log = SessionLog::new(10, set(9), 100);
        log.push(note(11, 11, 1, NoteKind::Add));
        log.push(note(12, 12, 2, NoteKind::Modify));
        log.push(note(13, 13, 1, NoteKind::Modify));
        log.push(note(14, 14, 3, NoteKind::Add));
        log.push(note(15, 15, 3, NoteKind::Delete));
        assert_eq!(log.context(), &set(15));
        assert_eq!(
            log.plan(&set(10)),
            RefreshPlan::Delta {
                changed: vec![[2; 16], [1; 16]],
                deleted: vec![[3; 16]],
            }
        );
        assert_eq!(
            log.plan(&set(13)),
            RefreshPlan::Delta {
                changed: vec![],
                deleted: vec![[3; 16]],
            }
        );
        assert_eq!(
            log.plan(&set(15)),
            RefreshPlan::Delta {
                changed: vec![],
                deleted: vec![]
            }
        );
        assert_eq!(log.plan(&CsnSet::default()), RefreshPlan::Full);
    }

    #[test]
    fn an_old_or_foreign_cookie_gets_a_present_phase() {
        let mut log = SessionLog::new(10, set(10), 2);
        log.push(note(11, 11, 1, NoteKind::Add));
        log.push(note(12, 12, 2, NoteKind::Add));
        log.push(note(13, 13, 3, NoteKind::Delete));
        // Note 11 was dropped: a cookie at 10 lacks it.
        assert_eq!(log.plan(&set(10)), RefreshPlan::Present(set(10)));
        assert!(matches!(log.plan(&set(11)), RefreshPlan::Delta { .. }));
        // Before the log began.
        assert_eq!(log.plan(&set(5)), RefreshPlan::Present(set(5)));
        // Equal to the directory's state when the log began: a delete made just before
        // (its CSN on no entry) may be missing, so not a delta.
        let fresh = SessionLog::new(10, set(10), 100);
        assert_eq!(fresh.plan(&set(10)), RefreshPlan::Present(set(10)));
        // Ahead of the directory (restored from an older backup).
        assert_eq!(log.plan(&set(20)), RefreshPlan::Present(set(20)));
        // Another server's state only: lacks every change of server 1 before the log.
        let other = CsnSet::from_csns([Csn::parse("20261127010203.000009Z#000000#002#000000").unwrap()]);
        assert!(matches!(log.plan(&other), RefreshPlan::Present(_)));
    }

    #[test]
    fn since_gives_the_tail_or_says_it_is_gone() {
        let mut log = SessionLog::new(10, set(10), 2);
        assert_eq!(log.since(10), Some(vec![]));
        log.push(note(11, 11, 1, NoteKind::Add));
        log.push(note(12, 12, 2, NoteKind::Add));
        assert_eq!(log.since(10).unwrap().len(), 2);
        log.push(note(13, 13, 3, NoteKind::Add));
        assert_eq!(log.since(10), None);
        assert_eq!(
            log.since(11).unwrap().iter().map(|n| n.lsn).collect::<Vec<_>>(),
            vec![12, 13]
        );
        assert_eq!(log.since(13), Some(vec![]));
    }
}
