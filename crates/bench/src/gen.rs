//! The DirectoryMark-style data generator: N `inetOrgPerson` entries with realistic names,
//! written as LDIF (RFC 2849) plus the value files the load client draws from.
//!
//! Layout of the generated tree (`<suffix>` defaults to `dc=example,dc=com`):
//!
//! ```text
//! <suffix>                                   dcObject/organization (or o=/ou= suffixes)
//!   ou=People,<suffix>
//!     uid=user.0,ou=People,<suffix>          with --ous 0 (the default)
//!     ou=Unit0,ou=People,<suffix>            with --ous K: person i lives in Unit(i mod K)
//!       uid=user.0,ou=Unit0,ou=People,<suffix>
//!   ou=Groups,<suffix>                       with --groups G
//!     cn=Group 0,ou=Groups,<suffix>          groupOfNames, --group-members distinct members
//! ```
//!
//! With `--posix` the tree is also one of POSIX accounts (RFC 2307, laid out as rfc2307bis
//! has it): person `i` is a `posixAccount` too (`uidNumber` [`UID_NUMBER_BASE`] + i,
//! `gidNumber` the number of group `i mod G`, its primary group, `homeDirectory
//! /home/user.<i>`, `loginShell /bin/bash`, `gecos` its `cn`), and group `g` a
//! `posixGroup` (auxiliary there, beside `groupOfNames`) with `gidNumber`
//! [`GID_NUMBER_BASE`] + g; with `--member-uid` as well, each group lists its members by
//! login name in `memberUid` beside `member`. Such a tree needs the rfc2307bis schema
//! (`[schema] builtin = "rfc2307bis"`): in RFC 2307's own `nis` schema `posixGroup` is
//! structural and cannot join `groupOfNames`.
//!
//! Determinism: entry `i` depends only on the seed and `i` (its own SplitMix64 stream,
//! [`Rng::for_index`]), never on the entries before it. `cn` is unique: the (given name,
//! surname) pairs are dealt out by a seeded permutation, and once every pair is used the
//! next block gets a middle initial (`Ada B. Lovelace`), so an exact `cn` search finds
//! exactly one entry, as DirectoryMark's exact searches expect.
//!
//! Speed: one reused output buffer per file, integers formatted by hand, no allocation
//! per entry; 1M entries take about a second (see `docs/benchmarks.md`).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::names::{DEPARTMENTS, GIVEN_NAMES, LOCALITIES, STREETS, SURNAMES, TITLES};
use crate::password::{hash_into, PasswordScheme, SALT_LEN};
use crate::rng::{Permutation, Rng};

/// The `uidNumber` of person 0 with `--posix`; person `i` has this plus `i`.
pub const UID_NUMBER_BASE: u64 = 10_000;

/// The `gidNumber` of group 0 with `--posix`; group `g` has this plus `g` (and a tree
/// without groups gives its people this one). Apart from the `uidNumber`s of any tree
/// under 990,000 people, so that a number in a test names one kind of entry.
pub const GID_NUMBER_BASE: u64 = 1_000_000;

/// File names written by [`generate_to_dir`].
pub mod files {
    /// The LDIF.
    pub const LDIF: &str = "data.ldif";
    /// One `cn` value per person, in entry order.
    pub const CN: &str = "cn.txt";
    /// One `uid` value per person.
    pub const UID: &str = "uid.txt";
    /// One `mail` value per person.
    pub const MAIL: &str = "mail.txt";
    /// One DN per person.
    pub const DN: &str = "dn.txt";
}

/// What to generate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GenConfig {
    /// Number of person entries.
    pub entries: u64,
    /// The seed; the same seed gives the same octets.
    pub seed: u64,
    /// The suffix (naming context), e.g. `dc=example,dc=com`.
    pub suffix: String,
    /// Number of organizational units under `ou=People` (0: people directly below it).
    pub ous: u32,
    /// Number of `groupOfNames` entries under `ou=Groups`.
    pub groups: u32,
    /// Members per group (distinct people; capped at the number of people).
    pub group_members: u32,
    /// How `userPassword` is stored.
    pub scheme: PasswordScheme,
    /// Every person's password (the load client binds with it).
    pub password: String,
    /// People are also `posixAccount`s and groups `posixGroup`s (see the module
    /// documentation).
    pub posix: bool,
    /// POSIX groups also list their members' `uid` values in `memberUid` (needs `posix`).
    pub member_uid: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            entries: 10_000,
            seed: 1,
            suffix: "dc=example,dc=com".into(),
            ous: 0,
            groups: 0,
            group_members: 50,
            scheme: PasswordScheme::Ssha,
            password: "password".into(),
            posix: false,
            member_uid: false,
        }
    }
}

/// Why generation could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// The suffix is not `dc=`, `o=` or `ou=` followed by the rest of a DN.
    #[error("unsupported suffix `{0}`: its first RDN must be dc=..., o=... or ou=...")]
    Suffix(String),
    /// Groups need members, so they need people.
    #[error("--groups needs at least one person entry (groupOfNames requires a member)")]
    GroupsWithoutPeople,
    /// `memberUid` lists POSIX groups' members.
    #[error("--member-uid needs --posix (memberUid belongs to posixGroup)")]
    MemberUidWithoutPosix,
    /// Writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// What was generated.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GenSummary {
    /// Person entries.
    pub people: u64,
    /// Organizational units (People, Groups and the units), not counting the suffix.
    pub ous: u64,
    /// Group entries.
    pub groups: u64,
    /// Total entries in the LDIF (suffix included).
    pub total_entries: u64,
    /// Octets of LDIF.
    pub ldif_bytes: u64,
    /// Average LDIF octets per person entry (including its blank separator line).
    pub avg_person_bytes: f64,
    /// Wall-clock time.
    #[serde(serialize_with = "ser_secs")]
    pub elapsed: Duration,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The deterministic generator for one configuration.
#[derive(Debug, Clone)]
pub struct Generator {
    cfg: GenConfig,
    /// `ou=People,<suffix>`, or one parent per unit.
    parents: Vec<String>,
    people_dn: String,
    groups_dn: String,
    mail_domain: String,
    pairs: u64,
}

/// The random choices behind one person, before formatting.
#[derive(Debug, Clone, Copy)]
pub struct Person {
    /// Entry index (`uid=user.<index>`).
    pub index: u64,
    /// Given name.
    pub given: &'static str,
    /// Surname.
    pub surname: &'static str,
    /// Middle-initial block: 0 for none, then 1 = `A`, ..., 26 = `Z`, 27 = `AA`, ...
    pub block: u64,
    title: usize,
    department: usize,
    locality: usize,
    phone: (u16, u16),
    mobile: (u16, u16),
    street: (u16, usize),
    postal_code: u32,
    room: u16,
    employee_type: usize,
    salt: [u8; SALT_LEN],
}

const EMPLOYEE_TYPES: &[&str] = &[
    "Employee",
    "Employee",
    "Employee",
    "Contractor",
    "Intern",
    "Temporary",
];

impl Generator {
    /// Checks the configuration and prepares the names of the fixed entries.
    pub fn new(cfg: GenConfig) -> Result<Self, GenError> {
        suffix_rdn(&cfg.suffix).ok_or_else(|| GenError::Suffix(cfg.suffix.clone()))?;
        if cfg.groups > 0 && cfg.entries == 0 {
            return Err(GenError::GroupsWithoutPeople);
        }
        if cfg.member_uid && !cfg.posix {
            return Err(GenError::MemberUidWithoutPosix);
        }
        let people_dn = format!("ou=People,{}", cfg.suffix);
        let groups_dn = format!("ou=Groups,{}", cfg.suffix);
        let parents = if cfg.ous == 0 {
            vec![people_dn.clone()]
        } else {
            (0..cfg.ous).map(|k| format!("ou=Unit{k},{people_dn}")).collect()
        };
        let dcs: Vec<&str> = cfg
            .suffix
            .split(',')
            .filter_map(|rdn| {
                let (t, v) = rdn.trim().split_once('=')?;
                t.trim().eq_ignore_ascii_case("dc").then_some(v.trim())
            })
            .collect();
        let mail_domain = if dcs.is_empty() {
            "example.com".into()
        } else {
            dcs.join(".")
        };
        let pairs = (GIVEN_NAMES.len() * SURNAMES.len()) as u64;
        Ok(Generator {
            cfg,
            parents,
            people_dn,
            groups_dn,
            mail_domain,
            pairs,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GenConfig {
        &self.cfg
    }

    /// `ou=People,<suffix>`.
    pub fn people_dn(&self) -> &str {
        &self.people_dn
    }

    /// The random choices for person `i`.
    pub fn person(&self, i: u64) -> Person {
        let block = i / self.pairs;
        let pair = Permutation::new(self.pairs, self.cfg.seed ^ block.wrapping_mul(0x9e37_79b9))
            .apply(i % self.pairs);
        let given = GIVEN_NAMES[(pair % GIVEN_NAMES.len() as u64) as usize];
        let surname = SURNAMES[(pair / GIVEN_NAMES.len() as u64) as usize];
        let mut r = Rng::for_index(self.cfg.seed, i);
        let mut phone = || (200 + r.below(790) as u16, r.below(10_000) as u16);
        let phone_a = phone();
        let mobile = phone();
        let mut salt = [0u8; SALT_LEN];
        let title = r.index(TITLES.len());
        let department = r.index(DEPARTMENTS.len());
        let locality = r.index(LOCALITIES.len());
        let street = (1 + r.below(9_899) as u16, r.index(STREETS.len()));
        let postal_code = 10_000 + r.below(89_999) as u32;
        let room = 100 + r.below(9_800) as u16;
        let employee_type = r.index(EMPLOYEE_TYPES.len());
        r.fill(&mut salt);
        Person {
            index: i,
            given,
            surname,
            block,
            title,
            department,
            locality,
            phone: phone_a,
            mobile,
            street,
            postal_code,
            room,
            employee_type,
            salt,
        }
    }

    /// Appends the DN of person `i` (`uid=user.<i>,<parent>`).
    pub fn person_dn(&self, i: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(b"uid=user.");
        push_u64(out, i);
        out.push(b',');
        out.extend_from_slice(self.parent_of(i).as_bytes());
    }

    fn parent_of(&self, i: u64) -> &str {
        &self.parents[(i % self.parents.len() as u64) as usize]
    }

    /// The `gidNumber` of person `i` with `--posix`: that of its primary group, group
    /// `i mod G` ([`GID_NUMBER_BASE`] without groups).
    pub fn primary_gid(&self, i: u64) -> u64 {
        match u64::from(self.cfg.groups) {
            0 => GID_NUMBER_BASE,
            groups => GID_NUMBER_BASE + i % groups,
        }
    }

    /// Calls `f(attribute, value)` for every attribute value of person `p`, in LDIF order;
    /// `uid` is the entry's uid value (`user.<i>` for generated data; the load client's add
    /// workload passes its own). `scratch` is reused for formatting.
    pub fn visit_person(
        &self,
        p: &Person,
        uid: &[u8],
        scratch: &mut Vec<u8>,
        f: &mut dyn FnMut(&'static str, &[u8]),
    ) {
        let title = TITLES[p.title];
        let department = DEPARTMENTS[p.department];
        let (city, state) = LOCALITIES[p.locality];
        for oc in ["top", "person", "organizationalPerson", "inetOrgPerson"] {
            f("objectClass", oc.as_bytes());
        }
        if self.cfg.posix {
            f("objectClass", b"posixAccount");
        }
        f("uid", uid);
        macro_rules! value {
            ($name:literal, |$b:ident| $body:expr) => {{
                scratch.clear();
                let $b: &mut Vec<u8> = scratch;
                $body;
                f($name, scratch);
            }};
        }
        value!("cn", |b| push_cn(b, p));
        f("sn", p.surname.as_bytes());
        f("givenName", p.given.as_bytes());
        value!("mail", |b| {
            push_mail_local(b, p);
            b.push(b'@');
            b.extend_from_slice(self.mail_domain.as_bytes());
        });
        value!("telephoneNumber", |b| push_phone(b, p.phone));
        value!("mobile", |b| push_phone(b, p.mobile));
        f("title", title.as_bytes());
        f("departmentNumber", department.as_bytes());
        f("employeeType", EMPLOYEE_TYPES[p.employee_type].as_bytes());
        value!("employeeNumber", |b| push_u64(b, p.index));
        value!("roomNumber", |b| push_u64(b, u64::from(p.room)));
        value!("street", |b| {
            push_u64(b, u64::from(p.street.0));
            b.push(b' ');
            b.extend_from_slice(STREETS[p.street.1].as_bytes());
        });
        f("l", city.as_bytes());
        f("st", state.as_bytes());
        value!("postalCode", |b| push_u64(b, u64::from(p.postal_code)));
        value!("postalAddress", |b| {
            push_cn(b, p);
            b.push(b'$');
            push_u64(b, u64::from(p.street.0));
            b.push(b' ');
            b.extend_from_slice(STREETS[p.street.1].as_bytes());
            b.push(b'$');
            b.extend_from_slice(city.as_bytes());
            b.extend_from_slice(b", ");
            b.extend_from_slice(state.as_bytes());
            b.push(b' ');
            push_u64(b, u64::from(p.postal_code));
        });
        value!("description", |b| {
            b.extend_from_slice(title.as_bytes());
            b.extend_from_slice(b" in ");
            b.extend_from_slice(department.as_bytes());
            b.extend_from_slice(b", ");
            b.extend_from_slice(city.as_bytes());
            b.extend_from_slice(b" office; generated entry ");
            push_u64(b, p.index);
            b.push(b'.');
        });
        value!("userPassword", |b| hash_into(
            self.cfg.scheme,
            self.cfg.password.as_bytes(),
            &p.salt,
            b
        ));
        if self.cfg.posix {
            value!("uidNumber", |b| push_u64(b, UID_NUMBER_BASE + p.index));
            value!("gidNumber", |b| push_u64(b, self.primary_gid(p.index)));
            value!("homeDirectory", |b| {
                b.extend_from_slice(b"/home/");
                b.extend_from_slice(uid);
            });
            f("loginShell", b"/bin/bash");
            value!("gecos", |b| push_cn(b, p));
        }
    }

    /// Appends person `i` as one LDIF record (with its trailing blank line).
    pub fn write_person_ldif(&self, i: u64, out: &mut Vec<u8>, scratch: &mut Vec<u8>, uid: &mut Vec<u8>) {
        out.extend_from_slice(b"dn: ");
        self.person_dn(i, out);
        out.push(b'\n');
        uid.clear();
        uid.extend_from_slice(b"user.");
        push_u64(uid, i);
        let p = self.person(i);
        self.visit_person(&p, uid, scratch, &mut |name, value| {
            push_ldif_line(out, name, value);
        });
        out.push(b'\n');
    }

    /// Writes the whole LDIF to `ldif`, and one line per person to each value sink given.
    pub fn write(&self, ldif: &mut dyn Write, mut values: Option<&mut ValueSinks>) -> io::Result<GenSummary> {
        let start = Instant::now();
        let mut out: Vec<u8> = Vec::with_capacity(FLUSH_AT + 4096);
        let mut written = 0u64;
        let mut flush = |out: &mut Vec<u8>, ldif: &mut dyn Write, force: bool| -> io::Result<()> {
            if force || out.len() >= FLUSH_AT {
                ldif.write_all(out)?;
                written += out.len() as u64;
                out.clear();
            }
            Ok(())
        };
        // No `version: 1` line: OpenLDAP's slapadd (2.5) refuses it (it reads it as an
        // attribute of a DN-less entry), and slapcat does not write one either.
        let (rdn_type, rdn_value) = suffix_rdn(&self.cfg.suffix).expect("checked in new");
        push_ldif_line(&mut out, "dn", self.cfg.suffix.as_bytes());
        push_ldif_line(&mut out, "objectClass", b"top");
        match rdn_type.as_str() {
            "dc" => {
                push_ldif_line(&mut out, "objectClass", b"dcObject");
                push_ldif_line(&mut out, "objectClass", b"organization");
                push_ldif_line(&mut out, "dc", rdn_value.as_bytes());
                push_ldif_line(&mut out, "o", rdn_value.as_bytes());
            }
            "o" => {
                push_ldif_line(&mut out, "objectClass", b"organization");
                push_ldif_line(&mut out, "o", rdn_value.as_bytes());
            }
            _ => {
                push_ldif_line(&mut out, "objectClass", b"organizationalUnit");
                push_ldif_line(&mut out, "ou", rdn_value.as_bytes());
            }
        }
        out.push(b'\n');
        let mut ous = 1;
        push_ou(&mut out, &self.people_dn, "People");
        if self.cfg.groups > 0 {
            push_ou(&mut out, &self.groups_dn, "Groups");
            ous += 1;
        }
        if self.cfg.ous > 0 {
            for (k, dn) in self.parents.iter().enumerate() {
                push_ou(&mut out, dn, &format!("Unit{k}"));
                ous += 1;
            }
        }
        let mut scratch = Vec::with_capacity(256);
        let mut uid = Vec::with_capacity(32);
        let mut person_bytes = 0u64;
        for i in 0..self.cfg.entries {
            let before = out.len();
            self.write_person_ldif(i, &mut out, &mut scratch, &mut uid);
            person_bytes += (out.len() - before) as u64;
            if let Some(v) = values.as_deref_mut() {
                v.person(self, i)?;
            }
            flush(&mut out, ldif, false)?;
        }
        let members = u64::from(self.cfg.group_members).min(self.cfg.entries).max(1);
        for g in 0..self.cfg.groups {
            out.extend_from_slice(b"dn: cn=Group ");
            push_u64(&mut out, u64::from(g));
            out.push(b',');
            out.extend_from_slice(self.groups_dn.as_bytes());
            out.push(b'\n');
            push_ldif_line(&mut out, "objectClass", b"top");
            push_ldif_line(&mut out, "objectClass", b"groupOfNames");
            if self.cfg.posix {
                push_ldif_line(&mut out, "objectClass", b"posixGroup");
                scratch.clear();
                push_u64(&mut scratch, GID_NUMBER_BASE + u64::from(g));
                push_ldif_line(&mut out, "gidNumber", &scratch);
            }
            scratch.clear();
            scratch.extend_from_slice(b"Group ");
            push_u64(&mut scratch, u64::from(g));
            push_ldif_line(&mut out, "cn", &scratch);
            push_ldif_line(
                &mut out,
                "description",
                b"A generated group for directory benchmarks.",
            );
            let perm = Permutation::new(self.cfg.entries, self.cfg.seed ^ 0x4752_4f55_5000 ^ u64::from(g));
            for m in 0..members {
                out.extend_from_slice(b"member: ");
                self.person_dn(perm.apply(m), &mut out);
                out.push(b'\n');
                flush(&mut out, ldif, false)?;
            }
            if self.cfg.member_uid {
                for m in 0..members {
                    out.extend_from_slice(b"memberUid: user.");
                    push_u64(&mut out, perm.apply(m));
                    out.push(b'\n');
                    flush(&mut out, ldif, false)?;
                }
            }
            out.push(b'\n');
        }
        flush(&mut out, ldif, true)?;
        ldif.flush()?;
        if let Some(v) = values {
            v.finish()?;
        }
        Ok(GenSummary {
            people: self.cfg.entries,
            ous,
            groups: u64::from(self.cfg.groups),
            total_entries: 1 + ous + self.cfg.entries + u64::from(self.cfg.groups),
            ldif_bytes: written,
            avg_person_bytes: if self.cfg.entries == 0 {
                0.0
            } else {
                person_bytes as f64 / self.cfg.entries as f64
            },
            elapsed: start.elapsed(),
        })
    }
}

const FLUSH_AT: usize = 1 << 20;

/// The value files for the load client, each buffered.
pub struct ValueSinks {
    sinks: [(Box<dyn Write>, Vec<u8>); 4],
}

impl ValueSinks {
    /// Value sinks over four writers: cn, uid, mail, DN.
    pub fn new(cn: Box<dyn Write>, uid: Box<dyn Write>, mail: Box<dyn Write>, dn: Box<dyn Write>) -> Self {
        let b = || Vec::with_capacity(FLUSH_AT + 1024);
        ValueSinks {
            sinks: [(cn, b()), (uid, b()), (mail, b()), (dn, b())],
        }
    }

    fn person(&mut self, g: &Generator, i: u64) -> io::Result<()> {
        let p = g.person(i);
        let [cn, uid, mail, dn] = &mut self.sinks;
        push_cn(&mut cn.1, &p);
        cn.1.push(b'\n');
        uid.1.extend_from_slice(b"user.");
        push_u64(&mut uid.1, i);
        uid.1.push(b'\n');
        push_mail_local(&mut mail.1, &p);
        mail.1.push(b'@');
        mail.1.extend_from_slice(g.mail_domain.as_bytes());
        mail.1.push(b'\n');
        g.person_dn(i, &mut dn.1);
        dn.1.push(b'\n');
        for (w, buf) in &mut self.sinks {
            if buf.len() >= FLUSH_AT {
                w.write_all(buf)?;
                buf.clear();
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for (w, buf) in &mut self.sinks {
            w.write_all(buf)?;
            buf.clear();
            w.flush()?;
        }
        Ok(())
    }
}

/// Generates `dir/data.ldif` and the value files `cn.txt`, `uid.txt`, `mail.txt`, `dn.txt`
/// (see [`files`]), creating `dir` if needed.
pub fn generate_to_dir(cfg: GenConfig, dir: &Path) -> Result<GenSummary, GenError> {
    let g = Generator::new(cfg)?;
    let io_err = |path: PathBuf| move |source| GenError::Io { path, source };
    std::fs::create_dir_all(dir).map_err(io_err(dir.to_path_buf()))?;
    let create = |name: &str| -> Result<Box<dyn Write>, GenError> {
        let path = dir.join(name);
        Ok(Box::new(File::create(&path).map_err(io_err(path))?))
    };
    let mut values = ValueSinks::new(
        create(files::CN)?,
        create(files::UID)?,
        create(files::MAIL)?,
        create(files::DN)?,
    );
    let ldif_path = dir.join(files::LDIF);
    let mut ldif = File::create(&ldif_path).map_err(io_err(ldif_path.clone()))?;
    g.write(&mut ldif, Some(&mut values)).map_err(io_err(ldif_path))
}

/// The attribute type and value of the suffix's first RDN, if it is one this generator
/// can create an entry for (`dc`, `o`, `ou`).
fn suffix_rdn(suffix: &str) -> Option<(String, String)> {
    let first = suffix.split(',').next()?;
    let (t, v) = first.split_once('=')?;
    let t = t.trim().to_ascii_lowercase();
    let v = v.trim();
    (matches!(t.as_str(), "dc" | "o" | "ou") && !v.is_empty() && !v.contains('\\'))
        .then(|| (t, v.to_string()))
}

fn push_ou(out: &mut Vec<u8>, dn: &str, name: &str) {
    push_ldif_line(out, "dn", dn.as_bytes());
    push_ldif_line(out, "objectClass", b"top");
    push_ldif_line(out, "objectClass", b"organizationalUnit");
    push_ldif_line(out, "ou", name.as_bytes());
    out.push(b'\n');
}

/// Appends `name: value\n`, or `name:: base64\n` when the value is not a SAFE-STRING
/// (RFC 2849). Generated values are always safe; the check keeps user-given suffixes and
/// passwords correct.
pub fn push_ldif_line(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    if is_safe_string(value) {
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
    } else {
        use base64::Engine;
        out.extend_from_slice(b":: ");
        out.extend_from_slice(base64::engine::general_purpose::STANDARD.encode(value).as_bytes());
    }
    out.push(b'\n');
}

/// RFC 2849 SAFE-STRING: no NUL, CR, LF or non-ASCII; does not start with space, `:` or
/// `<`; and (by convention, as the OpenLDAP tools do) does not end with a space.
pub fn is_safe_string(v: &[u8]) -> bool {
    match v.first() {
        None => true,
        Some(b' ' | b':' | b'<') => false,
        Some(_) => {
            v.last() != Some(&b' ') && v.iter().all(|&c| c != 0 && c != b'\n' && c != b'\r' && c < 0x80)
        }
    }
}

fn push_cn(b: &mut Vec<u8>, p: &Person) {
    b.extend_from_slice(p.given.as_bytes());
    b.push(b' ');
    if p.block > 0 {
        push_block_letters(b, p.block);
        b.extend_from_slice(b". ");
    }
    b.extend_from_slice(p.surname.as_bytes());
}

fn push_mail_local(b: &mut Vec<u8>, p: &Person) {
    let lower_alnum = |b: &mut Vec<u8>, s: &str| {
        b.extend(
            s.bytes()
                .filter(u8::is_ascii_alphanumeric)
                .map(|c| c.to_ascii_lowercase()),
        );
    };
    lower_alnum(b, p.given);
    b.push(b'.');
    if p.block > 0 {
        let start = b.len();
        push_block_letters(b, p.block);
        b[start..].make_ascii_lowercase();
        b.push(b'.');
    }
    lower_alnum(b, p.surname);
}

/// Bijective base-26 letters for a block number: 1 = `A`, 26 = `Z`, 27 = `AA`, ...
fn push_block_letters(b: &mut Vec<u8>, mut block: u64) {
    let mut tmp = [0u8; 16];
    let mut n = 0;
    while block > 0 {
        block -= 1;
        tmp[n] = b'A' + (block % 26) as u8;
        block /= 26;
        n += 1;
    }
    b.extend(tmp[..n].iter().rev());
}

fn push_phone(b: &mut Vec<u8>, (area, line): (u16, u16)) {
    b.extend_from_slice(b"+1 ");
    push_u64(b, u64::from(area));
    b.extend_from_slice(b" 555 ");
    let line = line % 10_000;
    b.extend_from_slice(&[
        b'0' + (line / 1000) as u8,
        b'0' + (line / 100 % 10) as u8,
        b'0' + (line / 10 % 10) as u8,
        b'0' + (line % 10) as u8,
    ]);
}

/// Appends the decimal form of `n` (no allocation).
pub fn push_u64(b: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    b.extend_from_slice(&tmp[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::password::verify;
    use std::collections::{HashMap, HashSet};

    /// A small RFC 2849 reader for the tests: records of (dn, attributes), with folded
    /// lines and base64 values; refuses anything it does not understand.
    /// A parsed record: its DN and its (attribute, value) lines in order.
    type Record = (String, Vec<(String, Vec<u8>)>);

    fn parse_ldif(text: &[u8]) -> Vec<Record> {
        use base64::Engine;
        let text = std::str::from_utf8(text).expect("LDIF is UTF-8");
        let mut lines: Vec<String> = Vec::new();
        for raw in text.split('\n') {
            assert!(!raw.ends_with('\r'));
            if let Some(cont) = raw.strip_prefix(' ') {
                lines
                    .last_mut()
                    .expect("continuation without a line")
                    .push_str(cont);
            } else {
                lines.push(raw.to_string());
            }
        }
        let mut records = Vec::new();
        let mut current: Option<Record> = None;
        for line in lines {
            if line.is_empty() {
                records.extend(current.take());
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let (name, rest) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("no colon: {line:?}"));
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b';'),
                "bad attribute name {name:?}"
            );
            let value = if let Some(b64) = rest.strip_prefix(": ") {
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .expect("base64")
            } else {
                let v = rest.strip_prefix(' ').unwrap_or(rest);
                assert!(is_safe_string(v.as_bytes()), "unsafe value {v:?}");
                v.as_bytes().to_vec()
            };
            if name == "version" && current.is_none() && records.is_empty() {
                assert_eq!(value, b"1");
                continue;
            }
            match (&mut current, name) {
                (None, "dn") => current = Some((String::from_utf8(value).unwrap(), Vec::new())),
                (None, other) => panic!("record does not start with dn: {other}"),
                (Some(_), "dn") => panic!("dn inside a record"),
                (Some((_, attrs)), _) => attrs.push((name.to_string(), value)),
            }
        }
        records.extend(current.take());
        records
    }

    fn generate(cfg: GenConfig) -> (Vec<u8>, [Vec<u8>; 4], GenSummary) {
        let g = Generator::new(cfg).unwrap();
        let mut ldif = Vec::new();
        let bufs: [std::rc::Rc<std::cell::RefCell<Vec<u8>>>; 4] = Default::default();
        struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.borrow_mut().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let sink = |i: usize| -> Box<dyn Write> { Box::new(Shared(bufs[i].clone())) };
        let mut values = ValueSinks::new(sink(0), sink(1), sink(2), sink(3));
        let summary = g.write(&mut ldif, Some(&mut values)).unwrap();
        drop(values);
        let vals = bufs.map(|b| std::rc::Rc::try_unwrap(b).unwrap().into_inner());
        (ldif, vals, summary)
    }

    #[test]
    fn same_seed_same_octets_other_seed_other_data() {
        let cfg = GenConfig {
            entries: 300,
            seed: 42,
            ..GenConfig::default()
        };
        let (a, va, _) = generate(cfg.clone());
        let (b, vb, _) = generate(cfg.clone());
        assert_eq!(a, b);
        assert_eq!(va, vb);
        let (c, _, _) = generate(GenConfig { seed: 43, ..cfg });
        assert_ne!(a, c);
        assert!(a.len() > 1000);
    }

    #[test]
    fn entry_i_does_not_depend_on_the_entry_count() {
        let small = generate(GenConfig {
            entries: 10,
            ..GenConfig::default()
        });
        let large = generate(GenConfig {
            entries: 20,
            ..GenConfig::default()
        });
        assert!(large.0.starts_with(&small.0));
    }

    #[test]
    fn every_entry_parses_with_the_expected_attributes_and_the_password_verifies() {
        let cfg = GenConfig {
            entries: 500,
            seed: 7,
            ous: 3,
            groups: 4,
            group_members: 20,
            ..GenConfig::default()
        };
        let (ldif, [cn, uid, mail, dn], summary) = generate(cfg);
        let records = parse_ldif(&ldif);
        assert_eq!(records.len() as u64, summary.total_entries);
        assert_eq!(summary.total_entries, 1 + (1 + 1 + 3) + 500 + 4);
        assert_eq!(records[0].0, "dc=example,dc=com");
        assert_eq!(records[1].0, "ou=People,dc=example,dc=com");

        let people: Vec<_> = records.iter().filter(|r| r.0.starts_with("uid=")).collect();
        assert_eq!(people.len(), 500);
        let required = [
            "objectClass",
            "uid",
            "cn",
            "sn",
            "givenName",
            "mail",
            "telephoneNumber",
            "title",
            "l",
            "description",
            "employeeNumber",
            "userPassword",
        ];
        let mut cns = HashSet::new();
        let all_dns: HashSet<&str> = records.iter().map(|r| r.0.as_str()).collect();
        for (i, (dn, attrs)) in people.iter().enumerate() {
            let get = |n: &str| -> Vec<&[u8]> {
                attrs
                    .iter()
                    .filter(|(a, _)| a == n)
                    .map(|(_, v)| v.as_slice())
                    .collect()
            };
            for r in required {
                assert!(!get(r).is_empty(), "{dn} lacks {r}");
            }
            assert_eq!(get("objectClass").len(), 4);
            assert!(get("objectClass").contains(&&b"inetOrgPerson"[..]));
            assert_eq!(get("uid"), vec![format!("user.{i}").as_bytes()]);
            assert_eq!(
                dn.as_str(),
                format!("uid=user.{i},ou=Unit{},ou=People,dc=example,dc=com", i % 3)
            );
            let cn_v = std::str::from_utf8(get("cn")[0]).unwrap();
            let (given, sn) = (
                std::str::from_utf8(get("givenName")[0]).unwrap(),
                std::str::from_utf8(get("sn")[0]).unwrap(),
            );
            assert_eq!(
                cn_v,
                format!("{given} {sn}"),
                "below 100K entries there is no middle initial"
            );
            assert!(cns.insert(cn_v.to_string()), "cn {cn_v} twice");
            assert_eq!(get("employeeNumber"), vec![i.to_string().as_bytes()]);
            let pw = get("userPassword")[0];
            assert!(pw.starts_with(b"{SSHA}"));
            assert!(verify(pw, b"password"), "{dn}: {}", String::from_utf8_lossy(pw));
            assert!(!verify(pw, b"wrong"));
            // The parent exists earlier in the file.
            assert!(all_dns.contains(dn.split_once(',').unwrap().1));
        }
        let groups: Vec<_> = records.iter().filter(|r| r.0.starts_with("cn=Group ")).collect();
        assert_eq!(groups.len(), 4);
        for (_, attrs) in groups {
            let members: Vec<_> = attrs.iter().filter(|(a, _)| a == "member").collect();
            assert_eq!(members.len(), 20);
            let distinct: HashSet<_> = members.iter().map(|m| &m.1).collect();
            assert_eq!(distinct.len(), 20);
            for (_, m) in members {
                assert!(all_dns.contains(std::str::from_utf8(m).unwrap()));
            }
        }

        // Value files: one line per person, matching the entries.
        let lines = |b: &[u8]| -> Vec<String> {
            String::from_utf8(b.to_vec())
                .unwrap()
                .lines()
                .map(String::from)
                .collect()
        };
        let (cn, uid, mail, dn) = (lines(&cn), lines(&uid), lines(&mail), lines(&dn));
        assert_eq!((cn.len(), uid.len(), mail.len(), dn.len()), (500, 500, 500, 500));
        for (i, (rdn, attrs)) in people.iter().enumerate() {
            let first =
                |n: &str| String::from_utf8(attrs.iter().find(|(a, _)| a == n).unwrap().1.clone()).unwrap();
            assert_eq!(cn[i], first("cn"));
            assert_eq!(uid[i], first("uid"));
            assert_eq!(mail[i], first("mail"));
            assert_eq!(&dn[i], rdn);
        }
    }

    #[test]
    fn posix_accounts_and_groups_with_and_without_member_uid() {
        for member_uid in [false, true] {
            let cfg = GenConfig {
                entries: 300,
                seed: 9,
                ous: 2,
                groups: 7,
                group_members: 40,
                posix: true,
                member_uid,
                ..GenConfig::default()
            };
            let (ldif, _, summary) = generate(cfg);
            let records = parse_ldif(&ldif);
            assert_eq!(records.len() as u64, summary.total_entries);
            let get = |attrs: &[(String, Vec<u8>)], n: &str| -> Vec<String> {
                attrs
                    .iter()
                    .filter(|(a, _)| a == n)
                    .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
                    .collect()
            };
            let mut group_gids = HashSet::new();
            let mut uid_of_dn = HashMap::new();
            let mut uid_numbers = HashSet::new();
            let mut primary = Vec::new();
            for (dn, attrs) in records.iter().filter(|r| r.0.starts_with("uid=")) {
                assert!(
                    get(attrs, "objectClass").contains(&"posixAccount".to_string()),
                    "{dn}"
                );
                let (uid, cn) = (get(attrs, "uid"), get(attrs, "cn"));
                let i: u64 = uid[0].strip_prefix("user.").unwrap().parse().unwrap();
                assert_eq!(get(attrs, "uidNumber"), vec![(UID_NUMBER_BASE + i).to_string()]);
                assert!(uid_numbers.insert(UID_NUMBER_BASE + i));
                assert_eq!(get(attrs, "homeDirectory"), vec![format!("/home/{}", uid[0])]);
                assert_eq!(get(attrs, "loginShell"), vec!["/bin/bash".to_string()]);
                assert_eq!(get(attrs, "gecos"), cn);
                let gid: u64 = get(attrs, "gidNumber")[0].parse().unwrap();
                assert_eq!(gid, GID_NUMBER_BASE + i % 7);
                primary.push(gid);
                uid_of_dn.insert(dn.clone(), uid[0].clone());
            }
            assert_eq!(uid_numbers.len(), 300);
            let groups: Vec<_> = records.iter().filter(|r| r.0.starts_with("cn=Group ")).collect();
            assert_eq!(groups.len(), 7);
            for (dn, attrs) in groups {
                let classes = get(attrs, "objectClass");
                assert!(
                    classes.contains(&"groupOfNames".to_string())
                        && classes.contains(&"posixGroup".to_string())
                );
                let g: u64 = dn["cn=Group ".len()..dn.find(',').unwrap()].parse().unwrap();
                assert_eq!(get(attrs, "gidNumber"), vec![(GID_NUMBER_BASE + g).to_string()]);
                group_gids.insert(GID_NUMBER_BASE + g);
                let members = get(attrs, "member");
                assert_eq!(members.len(), 40);
                let expected: Vec<String> = members.iter().map(|m| uid_of_dn[m].clone()).collect();
                if member_uid {
                    assert_eq!(get(attrs, "memberUid"), expected, "{dn}");
                } else {
                    assert!(get(attrs, "memberUid").is_empty());
                }
            }
            // Every primary group exists.
            assert!(primary.iter().all(|g| group_gids.contains(g)));
        }
        assert!(matches!(
            Generator::new(GenConfig {
                member_uid: true,
                ..GenConfig::default()
            }),
            Err(GenError::MemberUidWithoutPosix)
        ));
    }

    #[test]
    fn cn_stays_unique_past_the_name_pairs_with_middle_initials() {
        let g = Generator::new(GenConfig::default()).unwrap();
        let pairs = g.pairs;
        let mut seen = HashMap::new();
        let mut buf = Vec::new();
        for i in (0..pairs)
            .step_by(97)
            .chain(pairs..pairs + 3000)
            .chain(27 * pairs..27 * pairs + 10)
        {
            buf.clear();
            push_cn(&mut buf, &g.person(i));
            if let Some(prev) = seen.insert(buf.clone(), i) {
                panic!("cn {} for {prev} and {i}", String::from_utf8_lossy(&buf));
            }
        }
        buf.clear();
        push_cn(&mut buf, &g.person(pairs));
        assert!(
            String::from_utf8_lossy(&buf).contains(" A. "),
            "{}",
            String::from_utf8_lossy(&buf)
        );
        buf.clear();
        push_cn(&mut buf, &g.person(27 * pairs));
        assert!(
            String::from_utf8_lossy(&buf).contains(" AA. "),
            "{}",
            String::from_utf8_lossy(&buf)
        );
    }

    #[test]
    fn average_entry_is_about_700_octets() {
        let (_, _, s) = generate(GenConfig {
            entries: 2000,
            ..GenConfig::default()
        });
        assert!(
            (620.0..780.0).contains(&s.avg_person_bytes),
            "{}",
            s.avg_person_bytes
        );
    }

    #[test]
    fn other_schemes_and_suffixes() {
        for scheme in [
            PasswordScheme::Ssha256,
            PasswordScheme::Ssha512,
            PasswordScheme::Cleartext,
        ] {
            let (ldif, _, _) = generate(GenConfig {
                entries: 3,
                scheme,
                suffix: "o=Test,c=BA".into(),
                ..GenConfig::default()
            });
            let records = parse_ldif(&ldif);
            assert_eq!(records[0].0, "o=Test,c=BA");
            assert!(records[0].1.contains(&("o".to_string(), b"Test".to_vec())));
            let person = &records[2];
            let pw = &person.1.iter().find(|(a, _)| a == "userPassword").unwrap().1;
            assert!(pw.starts_with(scheme.prefix().as_bytes()));
            assert!(verify(pw, b"password"));
            let mail = &person.1.iter().find(|(a, _)| a == "mail").unwrap().1;
            assert!(mail.ends_with(b"@example.com"));
        }
        assert!(Generator::new(GenConfig {
            suffix: "cn=x".into(),
            ..GenConfig::default()
        })
        .is_err());
        assert!(Generator::new(GenConfig {
            entries: 0,
            groups: 1,
            ..GenConfig::default()
        })
        .is_err());
    }

    #[test]
    fn unsafe_values_are_base64() {
        let mut out = Vec::new();
        push_ldif_line(&mut out, "description", b" leading space");
        push_ldif_line(&mut out, "description", "caf\u{e9}".as_bytes());
        push_ldif_line(&mut out, "description", b"fine");
        assert_eq!(
            out,
            b"description:: IGxlYWRpbmcgc3BhY2U=\ndescription:: Y2Fmw6k=\ndescription: fine\n"
        );
        let mut n = Vec::new();
        for x in [0u64, 7, 10, 12345, u64::MAX] {
            n.clear();
            push_u64(&mut n, x);
            assert_eq!(n, x.to_string().as_bytes());
        }
        let mut l = Vec::new();
        for (b, s) in [
            (1, "A"),
            (26, "Z"),
            (27, "AA"),
            (52, "AZ"),
            (53, "BA"),
            (702, "ZZ"),
            (703, "AAA"),
        ] {
            l.clear();
            push_block_letters(&mut l, b);
            assert_eq!(l, s.as_bytes());
        }
    }
}
