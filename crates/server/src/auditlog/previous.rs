//! The state of an entry before a change: what a modify record is computed against.
//!
//! The log holds each entry's attributes *after* a change only. The audit log keeps a
//! version of the directory (`base`, an `Arc` the store shares, at the LSN of the last
//! change written when it was taken) and, on top of it, the entries changed since
//! (`changed`: each one's attributes after its latest change, by normalized DN) and the
//! renames since (`renames`, in order). The state of an entry just before change *N*:
//! 1. if it was added, modified or renamed since `base`, its entry in `changed`;
//! 2. otherwise its DN is mapped back through the renames of its ancestors, newest first
//!    (a subtree moves with its root, and the log records only the root's rename), and
//!    looked up in `base`.
//!
//! Deletes remove the entry from `changed`; a rename moves every tracked entry below the
//! old DN to below the new one. Lookups are only made for entries that exist just before
//! the change (the one modified, renamed or deleted), so an entry deleted since `base`,
//! which `base` still holds, is never found by mistake.
//!
//! What it costs: `base` is the store's own version, shared, not a copy; the writer
//! replaces it with the current version whenever that is exactly at the last change
//! written (nearly always when writes pause), which empties `changed` and `renames`. Under
//! a steady stream of writes that moment may not come: once more than
//! [`MAX_TRACKED_ENTRIES`] entries or [`MAX_TRACKED_BYTES`] octets are tracked, the writer
//! takes a new subscription with the current version and moves to it when it reaches that
//! version's LSN (see `writer`). So the audit log holds at most a few megabytes, and a
//! version that the store has since replaced shares all but the changed paths with it.

use std::collections::HashMap;
use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_model::entry::{StoredEntry, StoredRef};
use larch_store::wal::Lsn;
use larch_store::Version;

/// Entries (plus renames) tracked on top of the base version before the writer moves to a
/// newer one.
pub const MAX_TRACKED_ENTRIES: usize = 10_000;

/// Octets of tracked entries and DNs before the writer moves to a newer version.
pub const MAX_TRACKED_BYTES: usize = 32 << 20;

/// Entries' states on top of a version (see the module documentation).
pub(crate) struct Previous {
    base: Arc<Version>,
    changed: HashMap<NormDn, StoredEntry>,
    renames: Vec<(NormDn, NormDn)>,
    bytes: usize,
    /// A change could not be tracked: no state is known until the next rebase.
    lost_track: bool,
}

fn size(dn: &NormDn, attrs: &StoredEntry) -> usize {
    dn.as_str().len() + attrs.as_bytes().len()
}

impl Previous {
    /// States as of `base`.
    pub(crate) fn new(base: Arc<Version>) -> Previous {
        Previous {
            base,
            changed: HashMap::new(),
            renames: Vec::new(),
            bytes: 0,
            lost_track: false,
        }
    }

    /// The LSN of the base version.
    pub(crate) fn base_lsn(&self) -> Lsn {
        self.base.lsn()
    }

    /// Starts again from `base` (a version at the LSN of the last change handled).
    pub(crate) fn rebase(&mut self, base: Arc<Version>) {
        self.base = base;
        self.changed.clear();
        self.renames.clear();
        self.bytes = 0;
        self.lost_track = false;
    }

    /// True when nothing is tracked on top of the base version.
    pub(crate) fn is_clean(&self) -> bool {
        self.changed.is_empty() && self.renames.is_empty() && !self.lost_track
    }

    /// True when the tracked states should be dropped for a newer version.
    pub(crate) fn is_large(&self) -> bool {
        self.lost_track
            || self.changed.len() + self.renames.len() > MAX_TRACKED_ENTRIES
            || self.bytes > MAX_TRACKED_BYTES
    }

    /// A change could not be followed (its DN or attributes did not decode): lookups say
    /// "unknown" until the next rebase.
    pub(crate) fn lose_track(&mut self) {
        self.lost_track = true;
    }

    /// The attributes of the entry named `dn` just before the change being written.
    pub(crate) fn get(&self, dn: &NormDn) -> Option<StoredRef<'_>> {
        if self.lost_track {
            return None;
        }
        if let Some(attrs) = self.changed.get(dn) {
            return Some(attrs.as_ref());
        }
        let mut name = dn.clone();
        for (old, new) in self.renames.iter().rev() {
            if let Some(moved) = rebased(&name, new, old) {
                name = moved;
            }
        }
        let id = self.base.find(&name)?;
        self.base.entry(id).map(|e| e.attrs())
    }

    /// The entry named `dn` was added or modified: these are its attributes now.
    pub(crate) fn set(&mut self, dn: NormDn, attrs: StoredEntry) {
        self.bytes += size(&dn, &attrs);
        if let Some(old) = self.changed.insert(dn.clone(), attrs) {
            self.bytes = self.bytes.saturating_sub(size(&dn, &old));
        }
    }

    /// The entry named `dn` was deleted.
    pub(crate) fn remove(&mut self, dn: &NormDn) {
        if let Some(old) = self.changed.remove(dn) {
            self.bytes = self.bytes.saturating_sub(size(dn, &old));
        }
    }

    /// The entry named `old` is now named `new`, with these attributes; the entries below
    /// it moved with it.
    pub(crate) fn rename(&mut self, old: &NormDn, new: NormDn, attrs: StoredEntry) {
        self.remove(old);
        let below: Vec<NormDn> = self
            .changed
            .keys()
            .filter(|k| old.is_ancestor_of(k))
            .cloned()
            .collect();
        for k in below {
            if let (Some(attrs), Some(moved)) = (self.changed.remove(&k), rebased(&k, old, &new)) {
                self.bytes = self.bytes.saturating_sub(k.as_str().len()) + moved.as_str().len();
                self.changed.insert(moved, attrs);
            }
        }
        self.bytes += old.as_str().len() + new.as_str().len();
        self.renames.push((old.clone(), new.clone()));
        self.set(new, attrs);
    }
}

/// `dn` with its ancestor (or itself) `from` replaced by `to`; `None` when `dn` is not
/// `from` nor below it. Normalized DNs separate RDNs by a plain `,` (an escaped one is
/// written `\2c`), so this is a string operation.
fn rebased(dn: &NormDn, from: &NormDn, to: &NormDn) -> Option<NormDn> {
    if dn == from {
        return Some(to.clone());
    }
    if !from.is_ancestor_of(dn) {
        return None;
    }
    let keep = &dn.as_str()[..dn.as_str().len() - from.as_str().len()];
    Some(NormDn::from_normalized(&format!("{keep}{to}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_model::entry::{Entry, Options};
    use larch_model::schema::Schema;
    use larch_store::wal::SyncPolicy;
    use larch_store::{Store, StoreOptions};

    fn n(s: &str) -> NormDn {
        NormDn::from_normalized(s)
    }

    #[test]
    fn rebasing_replaces_the_ancestor_only() {
        let from = n("ou=a,dc=x");
        let to = n("ou=b,dc=y");
        assert_eq!(rebased(&n("ou=a,dc=x"), &from, &to), Some(to.clone()));
        assert_eq!(
            rebased(&n("cn=c,ou=a,dc=x"), &from, &to),
            Some(n("cn=c,ou=b,dc=y"))
        );
        assert_eq!(rebased(&n("cn=c,xou=a,dc=x"), &from, &to), None);
        assert_eq!(rebased(&n("cn=a\\2cou=a,dc=x"), &from, &to), None);
        assert_eq!(rebased(&n("dc=x"), &from, &to), None);
    }

    fn entry(schema: &Schema, dn: &str, values: &[(&str, &str)]) -> Entry {
        let (dn, norm) = NormDn::parse(dn.as_bytes(), schema).unwrap();
        let mut e = Entry::new(dn, norm);
        for (ty, v) in values {
            e.push_value(
                schema.attribute_type(ty).unwrap().id,
                &Options::none(),
                v.as_bytes().to_vec(),
            );
        }
        e
    }

    #[test]
    fn states_come_from_the_tracked_entries_or_the_base_through_renames() {
        let schema = Arc::new(Schema::builtin().unwrap());
        let dir = std::env::temp_dir().join(format!("larch-audit-previous-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut o = StoreOptions::new(&dir, Arc::clone(&schema));
        o.sync = SyncPolicy::None;
        o.snapshot_interval = None;
        o.snapshot_after_records = None;
        let (store, _) = Store::open(o).unwrap();
        let ou = |name: &str| {
            entry(
                &schema,
                &format!("ou={name},o=x"),
                &[("objectClass", "organizationalUnit"), ("ou", name)],
            )
        };
        let person = |dn: &str, d: &str| {
            entry(
                &schema,
                dn,
                &[
                    ("objectClass", "person"),
                    ("cn", "p"),
                    ("sn", "s"),
                    ("description", d),
                ],
            )
        };
        for (e, nc) in [
            (
                entry(&schema, "o=x", &[("objectClass", "organization"), ("o", "x")]),
                true,
            ),
            (ou("a"), false),
            (person("cn=p,ou=a,o=x", "in the base"), false),
        ] {
            store
                .write(move |t| t.add(&e.dn, &e.norm_dn, &e.to_stored(), nc).map(drop))
                .unwrap()
                .unwrap();
        }
        let n = |s: &str| NormDn::from_text(s.as_bytes(), &*schema).unwrap();
        let description = |p: &Previous, dn: &str| -> Option<String> {
            let d = schema.attribute_type("description").unwrap().id;
            p.get(&n(dn)).map(|e| {
                String::from_utf8(
                    e.attribute(d)
                        .next()
                        .unwrap()
                        .values
                        .iter()
                        .next()
                        .unwrap()
                        .to_vec(),
                )
                .unwrap()
            })
        };
        let mut p = Previous::new(store.current());
        assert!(p.is_clean());
        assert_eq!(description(&p, "cn=p,ou=a,o=x").as_deref(), Some("in the base"));
        // ou=a moves to ou=b: the entry below it is found in the base under its old name.
        p.rename(&n("ou=a,o=x"), n("ou=b,o=x"), ou("b").to_stored());
        assert_eq!(description(&p, "cn=p,ou=b,o=x").as_deref(), Some("in the base"));
        assert!(p.get(&n("ou=b,o=x")).is_some());
        // Changed, then moved again: the tracked state moves with its parent.
        p.set(n("cn=p,ou=b,o=x"), person("cn=p,ou=b,o=x", "changed").to_stored());
        p.rename(&n("ou=b,o=x"), n("ou=c,o=x"), ou("c").to_stored());
        assert_eq!(description(&p, "cn=p,ou=c,o=x").as_deref(), Some("changed"));
        // Deleted, and a new entry under the old name of its parent.
        p.remove(&n("cn=p,ou=c,o=x"));
        p.set(n("ou=a,o=x"), ou("a").to_stored());
        p.set(n("cn=p,ou=a,o=x"), person("cn=p,ou=a,o=x", "new").to_stored());
        assert_eq!(description(&p, "cn=p,ou=a,o=x").as_deref(), Some("new"));
        assert!(!p.is_clean() && !p.is_large());
        p.lose_track();
        assert!(p.get(&n("cn=p,ou=a,o=x")).is_none() && p.is_large());
        p.rebase(store.current());
        assert!(p.is_clean());
        assert_eq!(description(&p, "cn=p,ou=a,o=x").as_deref(), Some("in the base"));
        store.close(false).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
