//! What several integration tests of the store share. Each test binary uses a part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use larch_model::dn::NormDn;
use larch_model::entry::{Entry, Options};
use larch_model::schema::Schema;
use larch_store::wal::{Corruption, Record, Wal};

/// The built-in schema, loaded once per test binary.
pub fn schema() -> Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    Arc::clone(S.get_or_init(|| Arc::new(Schema::builtin().unwrap())))
}

/// A fresh, absent directory below the system's temporary one, unique to this process
/// and call.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "larch-store-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// SplitMix64: small, seedable, the same on every platform, so a failing case replays from
/// its seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An entry at `dn`: the suffix `dc=example,dc=com` as a dcObject organization, any
/// deeper DN as an applicationProcess named by its first RDN's value.
pub fn entry(dn: &str) -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
    let mut e = Entry::new(dn.clone(), norm);
    let none = Options::none();
    let at = |n: &str| s.attribute_type(n).unwrap().id;
    if dn.rdns.len() == 2 {
        e.push_value(at("objectClass"), &none, b"dcObject".to_vec());
        e.push_value(at("objectClass"), &none, b"organization".to_vec());
        e.push_value(at("dc"), &none, b"example".to_vec());
        e.push_value(at("o"), &none, b"Example".to_vec());
    } else {
        e.push_value(at("objectClass"), &none, b"applicationProcess".to_vec());
        e.push_value(at("cn"), &none, dn.rdns[0].avas[0].value.clone());
    }
    e
}

/// Every record of the log, as (LSN, payload).
pub fn wal_records(wal: &Wal) -> Vec<(u64, Vec<u8>)> {
    wal.read_after(0)
        .unwrap()
        .map(|r| r.map(|Record { lsn, payload, .. }| (lsn, payload)).unwrap())
        .collect()
}

/// Whether `reason` is what recovery finds at a record torn by a crash in a segment that
/// reserved space: the frame runs on into the zeros, so its checksum fails, or a torn
/// length word reads as too long for the file.
pub fn is_torn_frame(reason: Corruption) -> bool {
    matches!(
        reason,
        Corruption::Checksum | Corruption::Incomplete | Corruption::LengthTooLarge { .. }
    )
}
