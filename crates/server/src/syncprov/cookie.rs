//! Sync cookies in OpenLDAP's form, and the set of CSNs they carry.
//!
//! RFC 4533 leaves the cookie's content to the provider; OpenLDAP's syncprov and syncrepl
//! write and read `rid=NNN[,sid=SSS][,csn=CSN[;CSN...]]`:
//! - `rid`: the consumer's replica ID, three decimal digits (`%03d`), 0..=999, echoed back;
//! - `sid`: the provider's server ID, three hex digits (`%03x`), 0..=0xfff;
//! - `csn`: the consumer's state, one CSN per server ID whose changes it holds (OpenLDAP's
//!   `contextCSN` values), separated by `;`.
//!
//! Fields are separated by `,`; unknown fields (`delcsn=` of some releases) are ignored,
//! as slapd ignores them. A CSN is checked for its shape
//! (`YYYYmmddHHMMSS.ffffffZ#cccccc#sss#mmmmmm`, see [`crate::opattrs::csn`]) so that the
//! server ID can be read from it; one of another shape makes the cookie invalid, answered
//! `protocolError` (2) by the caller.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The largest replica ID a cookie carries (OpenLDAP's `rid` range).
pub const MAX_RID: u16 = 999;
/// The largest server ID (three hex digits).
pub const MAX_SID: u16 = 0xfff;
/// CSNs one cookie may carry: one per server ID that wrote to the directory; more than
/// any real topology has, few enough to bound what a hostile cookie costs.
pub const MAX_COOKIE_CSNS: usize = 64;
/// Octets of a CSN's text form.
pub const CSN_LEN: usize = 40;

/// A consumer's cookie, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncCookie {
    /// `rid=`, if present.
    pub rid: Option<u16>,
    /// `sid=`, if present.
    pub sid: Option<u16>,
    /// `csn=`: the state, per server ID.
    pub csns: CsnSet,
}

/// Why a cookie is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CookieError {
    /// Not UTF-8 text.
    #[error("the sync cookie is not text")]
    NotText,
    /// A field other than `key=value`.
    #[error("the sync cookie field `{0}` is not of the form key=value")]
    Field(String),
    /// `rid` is not 0..=999.
    #[error("the sync cookie's rid `{0}` is not a number from 0 to 999")]
    Rid(String),
    /// `sid` is not three hex digits' worth.
    #[error("the sync cookie's sid `{0}` is not a hex number from 0 to fff")]
    Sid(String),
    /// A CSN of another shape.
    #[error("the sync cookie's csn `{0}` is not a change sequence number (YYYYmmddHHMMSS.ffffffZ#cccccc#sss#mmmmmm)")]
    Csn(String),
    /// More CSNs than [`MAX_COOKIE_CSNS`].
    #[error("the sync cookie carries more than {MAX_COOKIE_CSNS} CSNs")]
    TooManyCsns,
}

/// The largest CSN per server ID: a consumer's state, or a provider's `contextCSN`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CsnSet {
    by_sid: BTreeMap<u16, String>,
}

impl CsnSet {
    /// No CSN.
    pub fn new() -> CsnSet {
        CsnSet::default()
    }

    /// True when the set holds no CSN.
    pub fn is_empty(&self) -> bool {
        self.by_sid.is_empty()
    }

    /// The CSN of server `sid`, if any.
    pub fn get(&self, sid: u16) -> Option<&str> {
        self.by_sid.get(&sid).map(String::as_str)
    }

    /// The server IDs and their CSNs, by server ID.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &str)> {
        self.by_sid.iter().map(|(&s, c)| (s, c.as_str()))
    }

    /// Keeps `csn` for its server ID if it is later than the one held; returns false (and
    /// changes nothing) for a CSN of the wrong shape.
    pub fn raise(&mut self, csn: &str) -> bool {
        let Some(sid) = csn_sid(csn) else { return false };
        match self.by_sid.get_mut(&sid) {
            Some(held) if held.as_str() >= csn => {}
            Some(held) => {
                held.clear();
                held.push_str(csn);
            }
            None => {
                self.by_sid.insert(sid, csn.to_string());
            }
        }
        true
    }

    /// True when a change of CSN `csn` is one a holder of this state has not seen: its
    /// server's CSN here is older, or the server is not here.
    pub fn lacks(&self, csn: &str) -> bool {
        match csn_sid(csn) {
            Some(sid) => self.get(sid).is_none_or(|held| held < csn),
            None => true,
        }
    }

    /// True when some server's CSN here is later than `other`'s (or `other` lacks the
    /// server): the holder of this state has seen changes `other` has not.
    pub fn ahead_of(&self, other: &CsnSet) -> bool {
        self.iter().any(|(_, csn)| other.lacks(csn))
    }

    /// The `csn=` field's value: the CSNs separated by `;`.
    pub fn joined(&self) -> String {
        let mut out = String::new();
        for (i, (_, csn)) in self.iter().enumerate() {
            if i > 0 {
                out.push(';');
            }
            out.push_str(csn);
        }
        out
    }
}

/// The server ID of a CSN of the right shape (three hex digits after the second `#`).
pub fn csn_sid(csn: &str) -> Option<u16> {
    if !is_csn(csn) {
        return None;
    }
    u16::from_str_radix(&csn[30..33], 16).ok()
}

/// True for a CSN's shape: `YYYYmmddHHMMSS.ffffffZ#cccccc#sss#mmmmmm`, hex in lowercase
/// or uppercase.
pub fn is_csn(csn: &str) -> bool {
    let b = csn.as_bytes();
    if b.len() != CSN_LEN {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
    digits(0..14)
        && b[14] == b'.'
        && digits(15..21)
        && b[21] == b'Z'
        && b[22] == b'#'
        && hex(23..29)
        && b[29] == b'#'
        && hex(30..33)
        && b[33] == b'#'
        && hex(34..40)
}

impl SyncCookie {
    /// Parses a cookie (see the module documentation).
    pub fn parse(octets: &[u8]) -> Result<SyncCookie, CookieError> {
        let text = std::str::from_utf8(octets).map_err(|_| CookieError::NotText)?;
        let mut cookie = SyncCookie::default();
        for field in text.split(',').filter(|f| !f.is_empty()) {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| CookieError::Field(field.to_string()))?;
            match key.trim() {
                "rid" => {
                    let rid = value
                        .trim()
                        .parse::<u16>()
                        .ok()
                        .filter(|&r| r <= MAX_RID)
                        .ok_or_else(|| CookieError::Rid(value.to_string()))?;
                    cookie.rid = Some(rid);
                }
                "sid" => {
                    let sid = u16::from_str_radix(value.trim(), 16)
                        .ok()
                        .filter(|&s| s <= MAX_SID)
                        .ok_or_else(|| CookieError::Sid(value.to_string()))?;
                    cookie.sid = Some(sid);
                }
                "csn" => {
                    for (n, csn) in value.split(';').filter(|c| !c.is_empty()).enumerate() {
                        if n >= MAX_COOKIE_CSNS {
                            return Err(CookieError::TooManyCsns);
                        }
                        if !cookie.csns.raise(csn) {
                            return Err(CookieError::Csn(csn.to_string()));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(cookie)
    }
}

/// The cookie a provider with server ID `sid` sends a consumer of replica ID `rid` whose
/// state is `csns`: `rid=NNN,sid=SSS,csn=...`, the `rid` left out when the request's
/// cookie had none, the `csn` field when the set is empty.
pub fn format_cookie(rid: Option<u16>, sid: u16, csns: &CsnSet) -> String {
    let mut out = String::new();
    if let Some(rid) = rid {
        let _ = write!(out, "rid={rid:03},");
    }
    let _ = write!(out, "sid={sid:03x}");
    if !csns.is_empty() {
        let _ = write!(out, ",csn={}", csns.joined());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "20261127010203.000001Z#000000#001#000000";
    const B: &str = "20261127010203.000002Z#000000#001#000000";
    const C: &str = "20261127010203.000001Z#000003#00a#000000";

    #[test]
    fn parses_what_slapd_sends() {
        let c = SyncCookie::parse(format!("rid=001,sid=002,csn={A};{C}").as_bytes()).unwrap();
        assert_eq!(c.rid, Some(1));
        assert_eq!(c.sid, Some(2));
        assert_eq!(c.csns.get(1), Some(A));
        assert_eq!(c.csns.get(10), Some(C));
        let c = SyncCookie::parse(b"rid=123").unwrap();
        assert_eq!((c.rid, c.sid, c.csns.is_empty()), (Some(123), None, true));
        let c = SyncCookie::parse(format!("rid=001,csn={A},delcsn={B}").as_bytes()).unwrap();
        assert_eq!(c.csns.get(1), Some(A));
    }

    #[test]
    fn refuses_what_is_not_a_cookie() {
        assert_eq!(
            SyncCookie::parse(b"rid=1000"),
            Err(CookieError::Rid("1000".into()))
        );
        assert_eq!(
            SyncCookie::parse(b"sid=1000"),
            Err(CookieError::Sid("1000".into()))
        );
        assert_eq!(SyncCookie::parse(b"csn=x"), Err(CookieError::Csn("x".into())));
        assert_eq!(SyncCookie::parse(b"rid"), Err(CookieError::Field("rid".into())));
        assert_eq!(SyncCookie::parse(&[0xff]), Err(CookieError::NotText));
        let many = vec![A; MAX_COOKIE_CSNS + 1].join(";");
        assert_eq!(
            SyncCookie::parse(format!("csn={many}").as_bytes()),
            Err(CookieError::TooManyCsns)
        );
    }

    #[test]
    fn keeps_the_latest_csn_per_server() {
        let mut s = CsnSet::new();
        assert!(s.raise(B));
        assert!(s.raise(A));
        assert!(s.raise(C));
        assert!(!s.raise("nonsense"));
        assert_eq!(s.get(1), Some(B));
        assert_eq!(s.joined(), format!("{B};{C}"));
        assert!(!s.lacks(A) && !s.lacks(B) && !s.lacks(C));
        let mut older = CsnSet::new();
        older.raise(A);
        assert!(older.lacks(B) && older.lacks(C));
        assert!(s.ahead_of(&older));
        assert!(!older.ahead_of(&s));
    }

    #[test]
    fn formats_as_slapd_does_and_reads_back() {
        let mut s = CsnSet::new();
        s.raise(A);
        s.raise(C);
        let text = format_cookie(Some(7), 1, &s);
        assert_eq!(text, format!("rid=007,sid=001,csn={A};{C}"));
        let back = SyncCookie::parse(text.as_bytes()).unwrap();
        assert_eq!((back.rid, back.sid, back.csns), (Some(7), Some(1), s));
        assert_eq!(format_cookie(None, 0xabc, &CsnSet::new()), "sid=abc");
    }

    #[test]
    fn any_octets_parse_or_fail_without_panicking() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 90) as usize;
            let alphabet = b"rids=cn,;0123456789abcdefZ#.x";
            let bytes: Vec<u8> = (0..len)
                .map(|i| alphabet[((seed >> (i % 50)) as usize + i) % alphabet.len()])
                .collect();
            if let Ok(c) = SyncCookie::parse(&bytes) {
                let again = SyncCookie::parse(format_cookie(c.rid, 0, &c.csns).as_bytes()).unwrap();
                assert_eq!(again.csns, c.csns);
            }
        }
    }
}
