//! The syncrepl cookie in OpenLDAP's syntax, and the change sequence numbers (CSNs) it
//! carries.
//!
//! A cookie is ASCII, fields separated by `,`:
//! `rid=%03d[,sid=%03x][,csn=csn1;csn2...][,other=...]`, where
//! - `rid` is the consumer's replica ID (decimal, 1..=[`MAX_RID`]);
//! - `sid` is the server ID of whoever wrote the cookie (hex, 0..=[`MAX_SID`]);
//! - `csn` is a `;`-separated list of CSNs, at most one per server ID: the newest change of
//!   each server that the state the cookie names includes;
//! - any other field (slapd 2.5+ may send `delcsn=`) is read past and not kept.
//!
//! A CSN is `YYYYmmddHHMMSS.ffffffZ#cccccc#sss#mmmmmm` (time, change count, server ID,
//! modifier; fixed width, so octet order is time order). The server ID is read from it.
//!
//! The provider ([`crate::syncprov`]) reads its consumers' cookies and writes its own with
//! the same types.
//!
//! The CSN set of a consumer is kept as the `contextCSN` values of its replication base
//! entry (`super::apply`); the cookie sent to the provider is rebuilt from them at start
//! ([`Cookie::format`]).
//!
//! Invariants: [`Cookie::parse`] never panics and refuses, rather than guesses at, a
//! cookie it cannot read fully (a malformed CSN, a `rid` out of range, a duplicate field);
//! [`Cookie::format`] output parses back to the same cookie; [`CsnSet::merge`] keeps per
//! server ID the greater CSN, so a set never moves backwards.

use std::collections::BTreeMap;

/// The largest replica ID (OpenLDAP's `rid` is three decimal digits).
pub const MAX_RID: u16 = 999;
/// The largest server ID (three hex digits).
pub const MAX_SID: u16 = 0xfff;
/// The longest cookie read from a provider: one CSN per server ID (4096 x 41 octets) and
/// the other fields fit well below it.
pub const MAX_COOKIE_BYTES: usize = 256 * 1024;
/// The length of a CSN in the current format.
pub const CSN_LEN: usize = 40;

/// Why a cookie or a CSN was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CookieError {
    /// Longer than [`MAX_COOKIE_BYTES`].
    #[error("the cookie is {0} octets long, over the limit of {MAX_COOKIE_BYTES}")]
    TooLong(usize),
    /// Not ASCII text.
    #[error("the cookie is not ASCII text")]
    NotText,
    /// A field without `=`.
    #[error("cookie field `{0}` has no `=`")]
    Field(String),
    /// A field given twice.
    #[error("cookie field `{0}` is given twice")]
    Duplicate(String),
    /// `rid` not a number in 1..=999 (or 0..=999 from a provider).
    #[error("cookie rid `{0}` is not a number up to {MAX_RID}")]
    Rid(String),
    /// `sid` not hex in 0..=0xfff.
    #[error("cookie sid `{0}` is not a hex number up to fff")]
    Sid(String),
    /// A CSN not in the format above.
    #[error("`{0}` is not a CSN (YYYYmmddHHMMSS.ffffffZ#cccccc#sss#mmmmmm)")]
    Csn(String),
}

/// One CSN, checked.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Csn(String);

impl Csn {
    /// Checks the text form.
    pub fn parse(text: &str) -> Result<Csn, CookieError> {
        let bad = || CookieError::Csn(text.chars().take(64).collect());
        let b = text.as_bytes();
        if b.len() != CSN_LEN {
            return Err(bad());
        }
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let hex = |r: std::ops::Range<usize>| b[r].iter().all(|c| c.is_ascii_hexdigit());
        let ok = digits(0..14)
            && b[14] == b'.'
            && digits(15..21)
            && b[21] == b'Z'
            && b[22] == b'#'
            && hex(23..29)
            && b[29] == b'#'
            && hex(30..33)
            && b[33] == b'#'
            && hex(34..40);
        if !ok {
            return Err(bad());
        }
        Ok(Csn(text.to_string()))
    }

    /// The server ID field.
    pub fn sid(&self) -> u16 {
        // Three hex digits, checked by `parse`.
        u16::from_str_radix(&self.0[30..33], 16).unwrap_or(0)
    }

    /// The text form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The newest CSN of each server ID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CsnSet(BTreeMap<u16, Csn>);

impl CsnSet {
    /// A set of the CSNs given: per server ID the greatest.
    pub fn from_csns(csns: impl IntoIterator<Item = Csn>) -> CsnSet {
        let mut set = CsnSet::default();
        for c in csns {
            set.insert(c);
        }
        set
    }

    /// Adds `csn`, keeping the greater of it and the one held for its server ID.
    pub fn insert(&mut self, csn: Csn) {
        match self.0.get(&csn.sid()) {
            Some(held) if *held >= csn => {}
            _ => {
                self.0.insert(csn.sid(), csn);
            }
        }
    }

    /// Adds every CSN of `other` ([`CsnSet::insert`]).
    pub fn merge(&mut self, other: &CsnSet) {
        for c in other.0.values() {
            self.insert(c.clone());
        }
    }

    /// True with no CSN.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The CSNs in server ID order.
    pub fn iter(&self) -> impl Iterator<Item = &Csn> {
        self.0.values()
    }

    /// The greatest CSN (the newest change), whatever its server.
    pub fn newest(&self) -> Option<&Csn> {
        self.0.values().max()
    }

    /// The CSN held for server `sid`.
    pub fn get(&self, sid: u16) -> Option<&Csn> {
        self.0.get(&sid)
    }

    /// True when a change of CSN `csn` is one the holder of this state has not seen: its
    /// server's CSN here is older, or the server is not here (the provider's test of what
    /// a consumer lacks).
    pub fn lacks(&self, csn: &Csn) -> bool {
        self.0.get(&csn.sid()).is_none_or(|held| held < csn)
    }

    /// The CSNs separated by `;`, as a cookie's `csn=` field and `contextCSN` reports show
    /// them.
    pub fn joined(&self) -> String {
        self.iter().map(Csn::as_str).collect::<Vec<_>>().join(";")
    }

    /// The largest `entryCSN` per server ID among entries `ids` of `version` (what a
    /// directory's context CSNs are, short of the deletes since its last entry change).
    pub fn of_entries(
        version: &larch_store::Version,
        ids: impl Iterator<Item = larch_store::EntryId>,
        entry_csn: larch_model::schema::AttributeTypeId,
    ) -> CsnSet {
        let mut set = CsnSet::default();
        for id in ids {
            let Some(entry) = version.entry(id) else { continue };
            let value = entry
                .attrs()
                .attribute(entry_csn)
                .flat_map(|a| a.values.iter())
                .next();
            if let Some(csn) = value
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|t| Csn::parse(t).ok())
            {
                set.insert(csn);
            }
        }
        set
    }

    /// True when every CSN of `self` is at or below the one `other` holds for its server:
    /// `other` includes every change `self` names.
    pub fn is_covered_by(&self, other: &CsnSet) -> bool {
        self.0
            .iter()
            .all(|(sid, c)| other.0.get(sid).is_some_and(|o| o >= c))
    }
}

/// A cookie, read or to send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cookie {
    /// `rid`.
    pub rid: Option<u16>,
    /// `sid`.
    pub sid: Option<u16>,
    /// `csn`.
    pub csns: CsnSet,
}

impl Cookie {
    /// Reads a cookie (see the module documentation).
    pub fn parse(octets: &[u8]) -> Result<Cookie, CookieError> {
        if octets.len() > MAX_COOKIE_BYTES {
            return Err(CookieError::TooLong(octets.len()));
        }
        let text = std::str::from_utf8(octets)
            .ok()
            .filter(|t| t.is_ascii())
            .ok_or(CookieError::NotText)?;
        let mut cookie = Cookie::default();
        let mut seen_csn = false;
        for field in text.split(',').filter(|f| !f.is_empty()) {
            let Some((name, value)) = field.split_once('=') else {
                return Err(CookieError::Field(field.chars().take(64).collect()));
            };
            match name {
                "rid" => {
                    let rid = value
                        .parse::<u16>()
                        .ok()
                        .filter(|r| *r <= MAX_RID && !value.starts_with('+'))
                        .ok_or_else(|| CookieError::Rid(value.chars().take(16).collect()))?;
                    if cookie.rid.replace(rid).is_some() {
                        return Err(CookieError::Duplicate("rid".into()));
                    }
                }
                "sid" => {
                    let sid = u16::from_str_radix(value, 16)
                        .ok()
                        .filter(|s| *s <= MAX_SID && !value.starts_with('+'))
                        .ok_or_else(|| CookieError::Sid(value.chars().take(16).collect()))?;
                    if cookie.sid.replace(sid).is_some() {
                        return Err(CookieError::Duplicate("sid".into()));
                    }
                }
                "csn" => {
                    if std::mem::replace(&mut seen_csn, true) {
                        return Err(CookieError::Duplicate("csn".into()));
                    }
                    for c in value.split(';').filter(|c| !c.is_empty()) {
                        cookie.csns.insert(Csn::parse(c)?);
                    }
                }
                _ => {}
            }
        }
        Ok(cookie)
    }

    /// The text form: `rid=%03d[,sid=%03x][,csn=...]`.
    pub fn format(&self) -> String {
        let mut out = String::new();
        if let Some(rid) = self.rid {
            out.push_str(&format!("rid={rid:03}"));
        }
        if let Some(sid) = self.sid {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&format!("sid={sid:03x}"));
        }
        if !self.csns.is_empty() {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str("csn=");
            let list: Vec<&str> = self.csns.iter().map(Csn::as_str).collect();
            out.push_str(&list.join(";"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: &str = "20261127021024.123456Z#000000#000#000000";
    const B: &str = "20261127021025.000001Z#000003#001#000000";
    const A2: &str = "20261127021030.000000Z#000000#000#000000";

    #[test]
    fn reads_what_slapd_sends() {
        let c = Cookie::parse(format!("rid=001,sid=001,csn={A}").as_bytes()).unwrap();
        assert_eq!((c.rid, c.sid), (Some(1), Some(1)));
        assert_eq!(c.csns.iter().map(Csn::as_str).collect::<Vec<_>>(), [A]);
        let c = Cookie::parse(format!("rid=123,csn={A};{B}").as_bytes()).unwrap();
        assert_eq!(c.rid, Some(123));
        assert_eq!(c.sid, None);
        assert_eq!(c.csns.iter().map(|c| c.sid()).collect::<Vec<_>>(), [0, 1]);
        // A field this consumer does not use is read past.
        let c = Cookie::parse(format!("rid=002,csn={A},delcsn={B}").as_bytes()).unwrap();
        assert_eq!(c.csns.iter().count(), 1);
        // No CSN: a provider with an empty database.
        let c = Cookie::parse(b"rid=004,sid=000").unwrap();
        assert!(c.csns.is_empty());
        assert_eq!(Cookie::parse(b"").unwrap(), Cookie::default());
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in [
            "rid=1000".to_string(),
            "rid=-1".to_string(),
            "rid=+1".to_string(),
            "rid=abc".to_string(),
            "sid=1000".to_string(),
            "sid=xyz".to_string(),
            "rid=001,rid=002".to_string(),
            format!("csn={A},csn={B}"),
            "rid".to_string(),
            "csn=20261127".to_string(),
            format!("csn={}", A.replace('#', "-")),
            format!("csn={}x", A),
            "rid=001,csn=\u{e9}".to_string(),
        ] {
            assert!(Cookie::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(
            Cookie::parse(&vec![b'a'; MAX_COOKIE_BYTES + 1]),
            Err(CookieError::TooLong(MAX_COOKIE_BYTES + 1))
        );
    }

    #[test]
    fn formats_as_openldap_does() {
        let mut c = Cookie {
            rid: Some(7),
            sid: None,
            csns: CsnSet::default(),
        };
        assert_eq!(c.format(), "rid=007");
        c.csns.insert(Csn::parse(B).unwrap());
        c.csns.insert(Csn::parse(A).unwrap());
        assert_eq!(c.format(), format!("rid=007,csn={A};{B}"));
        c.sid = Some(0x1f);
        assert_eq!(c.format(), format!("rid=007,sid=01f,csn={A};{B}"));
    }

    #[test]
    fn a_set_keeps_the_newest_csn_of_each_server() {
        let mut s = CsnSet::from_csns([Csn::parse(A2).unwrap(), Csn::parse(A).unwrap()]);
        assert_eq!(s.iter().map(Csn::as_str).collect::<Vec<_>>(), [A2]);
        let older = CsnSet::from_csns([Csn::parse(A).unwrap(), Csn::parse(B).unwrap()]);
        s.merge(&older);
        assert_eq!(s.iter().map(Csn::as_str).collect::<Vec<_>>(), [A2, B]);
        assert!(older.is_covered_by(&s));
        assert!(!s.is_covered_by(&older));
        assert_eq!(s.newest().map(Csn::as_str), Some(A2));
    }

    fn csn() -> impl Strategy<Value = Csn> {
        (
            0u64..99_999_999_999_999,
            0u32..1_000_000,
            0u32..0xffffff,
            0u16..=MAX_SID,
        )
            .prop_map(|(t, us, n, sid)| {
                Csn::parse(&format!("{t:014}.{us:06}Z#{n:06x}#{sid:03x}#000000")).unwrap()
            })
    }

    proptest! {
        #[test]
        fn format_parses_back(rid in proptest::option::of(0..=MAX_RID),
                              sid in proptest::option::of(0..=MAX_SID),
                              csns in proptest::collection::vec(csn(), 0..8)) {
            let c = Cookie { rid, sid, csns: CsnSet::from_csns(csns) };
            prop_assert_eq!(Cookie::parse(c.format().as_bytes()).unwrap(), c);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Cookie::parse(&bytes);
        }

        #[test]
        fn parse_never_panics_on_near_cookies(text in "(rid|sid|csn|x)=[0-9a-fA-F#.Z;,=+-]{0,60}") {
            if let Ok(c) = Cookie::parse(text.as_bytes()) {
                prop_assert_eq!(Cookie::parse(c.format().as_bytes()).unwrap(), c);
            }
        }

        #[test]
        fn merge_never_moves_backwards(a in proptest::collection::vec(csn(), 0..6),
                                       b in proptest::collection::vec(csn(), 0..6)) {
            let a = CsnSet::from_csns(a);
            let b = CsnSet::from_csns(b);
            let mut m = a.clone();
            m.merge(&b);
            prop_assert!(a.is_covered_by(&m));
            prop_assert!(b.is_covered_by(&m));
        }
    }
}
