//! The rule model: privileges, scopes, the `who` of a clause, and the compiled rule, as
//! OpenLDAP's `slapd.access(5)` defines them (without `continue`/`break`, value-level and
//! regular-expression forms).
//!
//! Invariants:
//! - [`Privileges`] is a set of OpenLDAP's privileges (`d x c s r a z i m`); a level is
//!   the set of everything up to it (`read` = `rscxd`), `write` is `a z i` plus `read`,
//!   `manage` is `m` plus `write`; a check asks whether the needed privileges are a subset
//!   of the granted ones;
//! - every DN in a compiled rule is normalized through the schema, every attribute type is
//!   an [`AttributeTypeId`] with its subtypes expanded, every filter compiled.

use std::fmt;
use std::net::IpAddr;

use larch_model::dn::NormDn;
use larch_model::filter::CompiledFilter;
use larch_model::schema::AttributeTypeId;

/// A set of access privileges.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Privileges(u16);

impl Privileges {
    /// No access at all (not even disclosure on error).
    pub const NONE: Privileges = Privileges(0);
    /// `d`: the entry's existence may show in errors (noSuchObject or not).
    pub const DISCLOSE: Privileges = Privileges(1);
    /// `x`: the attribute may be used to authenticate (a Bind's password check).
    pub const AUTH: Privileges = Privileges(1 << 1);
    /// `c`: Compare.
    pub const COMPARE: Privileges = Privileges(1 << 2);
    /// `s`: use in a search filter.
    pub const SEARCH: Privileges = Privileges(1 << 3);
    /// `r`: read (returned by search, pre-read and post-read).
    pub const READ: Privileges = Privileges(1 << 4);
    /// `a`: add values (or entries, on `children` and `entry`).
    pub const ADD: Privileges = Privileges(1 << 5);
    /// `z`: delete values (or entries, on `children` and `entry`).
    pub const DELETE: Privileges = Privileges(1 << 6);
    /// `i`: modify-increment (RFC 4525).
    pub const INCREMENT: Privileges = Privileges(1 << 7);
    /// `m`: manage.
    pub const MANAGE: Privileges = Privileges(1 << 8);
    /// `w`: add, delete and increment.
    pub const WRITE: Privileges = Privileges(Self::ADD.0 | Self::DELETE.0 | Self::INCREMENT.0);
    /// Every privilege.
    pub const ALL: Privileges = Privileges(0x1ff);

    /// The privilege letters, in OpenLDAP's order of display.
    const LETTERS: [(char, Privileges); 9] = [
        ('m', Self::MANAGE),
        ('a', Self::ADD),
        ('z', Self::DELETE),
        ('i', Self::INCREMENT),
        ('r', Self::READ),
        ('s', Self::SEARCH),
        ('c', Self::COMPARE),
        ('x', Self::AUTH),
        ('d', Self::DISCLOSE),
    ];

    /// The level names, weakest first, each with the privileges it grants.
    pub const LEVELS: [(&'static str, Privileges); 10] = [
        ("none", Self::NONE),
        ("disclose", Self::DISCLOSE),
        ("auth", Privileges(0b11)),
        ("compare", Privileges(0b111)),
        ("search", Privileges(0b1111)),
        ("read", Privileges(0b1_1111)),
        ("add", Privileges(0b1_1111 | Self::ADD.0)),
        ("delete", Privileges(0b1_1111 | Self::DELETE.0)),
        ("write", Privileges(0b1_1111 | Self::WRITE.0)),
        ("manage", Self::ALL),
    ];

    /// The privileges of a level name (`"read"`), or of an explicit set written as
    /// OpenLDAP writes one: `=` followed by letters among `m w a z i r s c x d`, or `=0`
    /// for none. Level `increment` is also accepted.
    pub fn parse(text: &str) -> Result<Privileges, String> {
        if text == "increment" {
            return Ok(Privileges(0b1_1111 | Self::INCREMENT.0));
        }
        if let Some((_, p)) = Self::LEVELS.iter().find(|(name, _)| *name == text) {
            return Ok(*p);
        }
        let expected = "expected a level (none, disclose, auth, compare, search, read, add, delete, \
                        increment, write, manage) or `=` and privilege letters among m w a z i r s c x d \
                        (e.g. \"=wx\"), or \"=0\"";
        let Some(letters) = text.strip_prefix('=') else {
            if text.starts_with('+') || text.starts_with('-') {
                return Err(format!(
                    "`{text}`: privileges are only set with `=` (rules do not accumulate: the first \
                     matching clause decides)"
                ));
            }
            return Err(format!("`{text}`: {expected}"));
        };
        if letters == "0" {
            return Ok(Self::NONE);
        }
        if letters.is_empty() {
            return Err(format!("`{text}`: {expected}"));
        }
        let mut out = Self::NONE;
        for c in letters.chars() {
            let p = match c {
                'w' => Self::WRITE,
                _ => match Self::LETTERS.iter().find(|(l, _)| *l == c) {
                    Some((_, p)) => *p,
                    None => return Err(format!("`{text}`: `{c}` is not a privilege; {expected}")),
                },
            };
            out = out.union(p);
        }
        Ok(out)
    }

    /// True when every privilege of `need` is granted here.
    pub fn contains(self, need: Privileges) -> bool {
        self.0 & need.0 == need.0
    }

    /// Both sets together.
    pub const fn union(self, other: Privileges) -> Privileges {
        Privileges(self.0 | other.0)
    }

    /// True for the empty set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Debug for Privileges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Privileges {
    /// OpenLDAP's form: `=` and the letters, `=0` for none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("=")?;
        if self.is_empty() {
            return f.write_str("0");
        }
        for (c, p) in Self::LETTERS {
            if self.contains(p) {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Which entries a DN names, relative to it (`slapd.access(5)`'s `dn.<scope>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// The entry itself (`exact` is accepted as another name).
    Base,
    /// Its immediate children.
    One,
    /// The entry and everything below it.
    #[default]
    Subtree,
    /// Everything below it, not itself.
    Children,
}

impl Scope {
    /// Reads a scope name.
    pub fn parse(text: &str) -> Option<Scope> {
        Some(match text {
            "base" | "exact" => Scope::Base,
            "one" | "onelevel" => Scope::One,
            "sub" | "subtree" => Scope::Subtree,
            "children" => Scope::Children,
            _ => return None,
        })
    }

    /// Whether an entry `levels` RDNs below the scope's DN is in the scope.
    pub fn holds(self, levels: usize) -> bool {
        match self {
            Scope::Base => levels == 0,
            Scope::One => levels == 1,
            Scope::Subtree => true,
            Scope::Children => levels >= 1,
        }
    }

    /// The name as written in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Base => "base",
            Scope::One => "one",
            Scope::Subtree => "subtree",
            Scope::Children => "children",
        }
    }
}

/// The identity classes of a `who` keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    /// `*`: anyone.
    Anyone,
    /// `anonymous`: no bound identity.
    Anonymous,
    /// `users`: any bound identity.
    Users,
    /// `self`: the bound identity is the entry being accessed.
    SelfEntry,
    /// `admin`: the configured administrator.
    Admin,
}

impl Keyword {
    /// Reads a keyword.
    pub fn parse(text: &str) -> Option<Keyword> {
        Some(match text {
            "*" | "anyone" => Keyword::Anyone,
            "anonymous" => Keyword::Anonymous,
            "users" => Keyword::Users,
            "self" => Keyword::SelfEntry,
            "admin" => Keyword::Admin,
            _ => return None,
        })
    }
}

/// An IP address or network (`10.0.0.0/8`, `::1`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    /// The network address (host bits cleared).
    pub addr: IpAddr,
    /// Prefix length (32 or 128 for a single address).
    pub prefix: u8,
}

impl IpNet {
    /// Reads `address` or `address/prefix`; host bits beyond the prefix are refused (a
    /// typo such as `10.0.0.1/8` would otherwise mean something else than written).
    pub fn parse(text: &str) -> Result<IpNet, String> {
        let (addr_text, prefix_text) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr_text
            .parse()
            .map_err(|_| format!("`{text}` is not an IP address or CIDR network"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix_text {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(format!("`{text}`: the prefix length must be 0 to {max}")),
            },
        };
        let net = IpNet { addr, prefix };
        if net.masked(addr) != addr {
            return Err(format!(
                "`{text}`: bits are set beyond the /{prefix} prefix (write the network address)"
            ));
        }
        Ok(net)
    }

    /// `ip` with the bits beyond the prefix cleared.
    fn masked(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(v4) => {
                let bits = u32::from(v4);
                let mask = if self.prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.prefix.min(32)))
                };
                IpAddr::V4((bits & mask).into())
            }
            IpAddr::V6(v6) => {
                let bits = u128::from(v6);
                let mask = if self.prefix == 0 {
                    0
                } else {
                    u128::MAX << (128 - u32::from(self.prefix.min(128)))
                };
                IpAddr::V6((bits & mask).into())
            }
        }
    }

    /// True when `ip` lies in the network (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        ip.is_ipv4() == self.addr.is_ipv4() && self.masked(ip) == self.addr
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// A set of attribute types as a bitmap over the schema's dense IDs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TypeSet {
    words: Box<[u64]>,
}

impl TypeSet {
    /// The empty set for a schema of `types` attribute types.
    pub fn empty(types: usize) -> TypeSet {
        TypeSet {
            words: vec![0; types.div_ceil(64)].into_boxed_slice(),
        }
    }

    /// Every type of a schema of `types` attribute types.
    pub fn full(types: usize) -> TypeSet {
        let mut s = TypeSet::empty(types);
        for (i, w) in s.words.iter_mut().enumerate() {
            let bits = types.saturating_sub(i * 64).min(64);
            *w = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        }
        s
    }

    /// Adds `ty` (ignored when outside the schema).
    pub fn insert(&mut self, ty: AttributeTypeId) {
        let i = ty.index();
        if let Some(w) = self.words.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }

    /// True when `ty` is in the set.
    pub fn contains(&self, ty: AttributeTypeId) -> bool {
        let i = ty.index();
        self.words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Moves the types of `self` that are in `of` (every type when `None`) out of `self`
    /// and, when given, into `into`; no allocation.
    pub fn take_into(&mut self, of: Option<&TypeSet>, mut into: Option<&mut TypeSet>) {
        for (i, w) in self.words.iter_mut().enumerate() {
            let hit = *w & of.map_or(u64::MAX, |o| o.words.get(i).copied().unwrap_or(0));
            if let Some(t) = into.as_deref_mut().and_then(|t| t.words.get_mut(i)) {
                *t |= hit;
            }
            *w &= !hit;
        }
    }
}

/// The attributes a rule is about (`attrs`): types (subtypes included) and the
/// pseudo-attributes `entry` and `children`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrSet {
    /// `entry`: the entry itself (visibility in searches, adding and deleting it).
    pub entry: bool,
    /// `children`: adding and deleting entries below it.
    pub children: bool,
    /// Attribute types, with every subtype of a listed type.
    pub types: TypeSet,
}

/// What a check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// The entry itself (OpenLDAP's `entry` pseudo-attribute).
    Entry,
    /// Adding or deleting below the entry (`children`).
    Children,
    /// One attribute type.
    Attribute(AttributeTypeId),
}

impl AttrSet {
    /// Whether the set covers `what`.
    pub fn covers(&self, what: What) -> bool {
        match what {
            What::Entry => self.entry,
            What::Children => self.children,
            What::Attribute(t) => self.types.contains(t),
        }
    }
}

/// The conditions of one `by` clause; all present ones must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Who {
    /// A keyword (`*`, `anonymous`, `users`, `self`, `admin`).
    pub keyword: Option<Keyword>,
    /// The requester's DN lies in this scope of this DN.
    pub dn: Option<(NormDn, Scope)>,
    /// The requester is a member of this group (an index into the rule set's groups).
    pub group: Option<usize>,
    /// The client's address lies in this network.
    pub peer: Option<IpNet>,
}

/// One `by` clause.
#[derive(Debug, Clone)]
pub struct Clause {
    /// Who it is for.
    pub who: Who,
    /// What they get.
    pub privileges: Privileges,
}

/// One compiled `[[access]]` rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The entries it is about: a DN and scope (`None`: every entry).
    pub dn: Option<(NormDn, Scope)>,
    /// Only entries matching this filter.
    pub filter: Option<CompiledFilter>,
    /// The attributes it is about (`None`: all, with `entry` and `children`).
    pub attrs: Option<AttrSet>,
    /// The clauses, in order; the first that matches the requester decides, and none
    /// matching means no access (OpenLDAP's implicit `by * none`).
    pub clauses: Vec<Clause>,
}

impl Rule {
    /// Whether the rule is about `what` (its DN and filter aside).
    pub fn covers(&self, what: What) -> bool {
        self.attrs.as_ref().is_none_or(|a| a.covers(what))
    }

    /// True when whether the rule applies depends on the entry (a DN or a filter).
    pub fn depends_on_entry(&self) -> bool {
        self.dn.is_some() || self.filter.is_some()
    }

    /// True when the rule is about `cn=Monitor` or entries below it only: entries the
    /// server builds for a search, never stored ones. The per-requester masks, which
    /// decide for stored entries, leave such rules out, so protecting the monitor costs a
    /// search of the directory nothing; the monitor's entries are checked rule by rule.
    pub fn monitor_only(&self) -> bool {
        self.dn.as_ref().is_some_and(|(dn, _)| in_monitor(dn))
    }
}

/// Whether `dn` (normalized) is `cn=Monitor` or below it.
pub fn in_monitor(dn: &NormDn) -> bool {
    let s = dn.as_str();
    s == MONITOR_NORM
        || s.strip_suffix(MONITOR_NORM)
            .is_some_and(|rest| rest.ends_with(','))
}

/// `cn=Monitor` normalized (`cn` compares ignoring case; the normal form is lower case).
const MONITOR_NORM: &str = "cn=monitor";
