//! userPassword storage and checking, and the Password Modify extended operation.
//!
//! - Vectors written by other implementations (`tests/data/password_vectors.txt`: OpenLDAP's
//!   slappasswd, passlib's test suite, the Argon2 reference implementation, 389-ds values)
//!   verify with their password and not with another; the formats refused on purpose never
//!   verify.
//! - When slappasswd is installed, fresh hashes of a random password in every scheme it can
//!   produce verify (each scheme whose module is missing is skipped with a message).
//! - On a real directory (a fresh data directory per test, operations run as the server
//!   runs them): a new userPassword is stored hashed with each configurable default scheme
//!   and a bind with it succeeds; pre-hashed values are stored as given for the admin and
//!   refused (constraintViolation) for anyone else; a Modify deleting a userPassword value
//!   given in cleartext deletes the hash it verifies against; Password Modify's answers.

mod common;

use common::{fresh_data_dir, test_store, with_add, with_modify};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_proto::exop::PasswordModifyRequest;
use larch_proto::{Authentication, BindRequest, ModifyOperation, ResultCode};
use larch_server::auth::bind::{bind, stage, Staged};
use larch_server::client::Client;
use larch_server::config::{DefaultScheme, PasswordSettings, ServerConfig};
use larch_server::controls::{OpKind, RequestControls};
use larch_server::directory::Directory;
use larch_server::error::OpError;
use larch_server::identity::Identity;
use larch_server::ops::password_modify::FinishError;
use larch_server::ops::{
    apply_add, apply_modify, apply_password_modify, prepare_add, prepare_modify, prepare_password_modify,
    WriteContext,
};
use larch_server::password::{self, verify};
use proptest::prelude::*;

// ------------------------------------------------------------------------------ vectors

/// One line of the vector file.
struct Vector {
    line: usize,
    expect_ok: bool,
    password: Vec<u8>,
    stored: Vec<u8>,
}

/// Reads the quoted password at the start of `s`: the octets and the rest of the line.
fn quoted(s: &str) -> (Vec<u8>, &str) {
    let body = s.strip_prefix('"').expect("the password starts with a quote");
    let mut out = Vec::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (out, &body[i + 1..]),
            '\\' => match chars.next() {
                Some((_, 'x')) => {
                    let hex: String = [chars.next().unwrap().1, chars.next().unwrap().1]
                        .iter()
                        .collect();
                    out.push(u8::from_str_radix(&hex, 16).unwrap());
                }
                Some((_, c)) => out.extend_from_slice(c.to_string().as_bytes()),
                None => panic!("a backslash at the end"),
            },
            c => out.extend_from_slice(c.to_string().as_bytes()),
        }
    }
    panic!("no closing quote");
}

fn vectors() -> Vec<Vector> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/password_vectors.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (expect, rest) = line.split_once(' ').unwrap();
        let (password, rest) = quoted(rest.trim_start());
        let stored = rest.trim();
        assert!(
            !stored.is_empty() && !stored.contains(' '),
            "line {}: {line}",
            n + 1
        );
        out.push(Vector {
            line: n + 1,
            expect_ok: match expect {
                "ok" => true,
                "no" => false,
                other => panic!("line {}: `{other}` is neither ok nor no", n + 1),
            },
            password,
            stored: stored.as_bytes().to_vec(),
        });
    }
    out
}

#[test]
fn vectors_of_other_implementations_verify_and_other_passwords_do_not() {
    let settings = PasswordSettings::default();
    let all = vectors();
    assert!(all.len() >= 80, "only {} vectors read", all.len());
    for v in &all {
        let shown = format!(
            "line {}: {:?} / {}",
            v.line,
            String::from_utf8_lossy(&v.password),
            String::from_utf8_lossy(&v.stored)
        );
        assert_eq!(verify(&v.password, &v.stored, &settings), v.expect_ok, "{shown}");
        let mut other = b"x".to_vec();
        other.extend_from_slice(&v.password);
        assert!(
            !verify(&other, &v.stored, &settings),
            "another password verified: {shown}"
        );
        let mut flipped = v.password.clone();
        if let Some(b) = flipped.first_mut() {
            *b ^= 1;
            assert!(
                !verify(&flipped, &v.stored, &settings),
                "a changed password verified: {shown}"
            );
        }
    }
    // Every family is covered by vectors that verify.
    for prefix in [
        "{SSHA}",
        "{SHA}",
        "{SMD5}",
        "{MD5}",
        "{SSHA256}",
        "{SHA256}",
        "{SSHA384}",
        "{SHA384}",
        "{SSHA512}",
        "{SHA512}",
        "{PBKDF2}",
        "{PBKDF2-SHA1}",
        "{PBKDF2-SHA256}",
        "{PBKDF2-SHA512}",
        "{PBKDF2_SHA256}",
        "{ARGON2}$argon2i$",
        "{ARGON2}$argon2id$",
        "{CRYPT}$5$",
        "{CRYPT}$6$",
        "{CRYPT}$2a$",
        "{CRYPT}$2b$",
        "{CRYPT}$2y$",
    ] {
        assert!(
            all.iter()
                .any(|v| v.expect_ok && v.stored.starts_with(prefix.as_bytes())),
            "no vector for {prefix}"
        );
    }
}

#[test]
fn scheme_names_are_case_insensitive_and_cleartext_needs_the_setting() {
    let settings = PasswordSettings::default();
    for v in vectors().iter().filter(|v| v.expect_ok) {
        let text = String::from_utf8(v.stored.clone()).unwrap();
        let end = text.find('}').unwrap();
        let lower = format!("{}{}", text[..end].to_lowercase(), &text[end..]);
        assert!(
            verify(&v.password, lower.as_bytes(), &settings),
            "line {}: {lower}",
            v.line
        );
    }
    let allowed = PasswordSettings {
        allow_cleartext: true,
        ..PasswordSettings::default()
    };
    for stored in [&b"plain-pw"[..], b"{CLEARTEXT}plain-pw"] {
        assert!(!verify(b"plain-pw", stored, &settings));
        assert!(verify(b"plain-pw", stored, &allowed));
        assert!(!verify(b"plain-pW", stored, &allowed));
    }
}

#[test]
fn sha_crypt_rounds_below_the_minimum_are_raised_to_it() {
    // The specification's "roundstoolow" example asked for 10 rounds and got 1000: a
    // value naming 10 verifies as 1000.
    let settings = PasswordSettings::default();
    let v = b"{CRYPT}$5$rounds=10$roundstoolow$yfvwcWrQ8l/K0DAWyuPMDNHpIVlTQebY9l/gL972bIC";
    assert!(verify(b"the minimum number is still observed", v, &settings));
    // A salt longer than 16 characters is cut, as the specification says.
    let long = b"{CRYPT}$5$rounds=5000$toolongsaltstring$Un/5jzAHMgOGZ5.mWJpuVolil07guHPvOW8mGRcvxa5";
    assert!(verify(b"This is just a test", long, &settings));
    // A NUL octet: never a match against a crypt value.
    assert!(!verify(
        b"Hello world!\0x",
        b"{CRYPT}$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5",
        &settings
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary octets after every scheme name (and none) never panic, and verify only
    /// when they are the password in clear and cleartext is allowed.
    #[test]
    fn arbitrary_stored_values_are_answered(
        scheme in prop::sample::select(vec![
            "", "{SSHA}", "{sha}", "{SMD5}", "{SSHA512}", "{PBKDF2}", "{PBKDF2-SHA512}", "{PBKDF2_SHA256}",
            "{ARGON2}", "{ARGON2}$argon2id$v=19$m=", "{CRYPT}", "{CRYPT}$6$rounds=", "{CRYPT}$2b$", "{CLEARTEXT}",
            "{", "{UNKNOWN}",
        ]),
        rest in prop::collection::vec(any::<u8>(), 0..200),
        password in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        let mut stored = scheme.as_bytes().to_vec();
        stored.extend_from_slice(&rest);
        let strict = PasswordSettings::default();
        let lenient = PasswordSettings { allow_cleartext: true, ..PasswordSettings::default() };
        let _ = password::is_slow(&stored);
        prop_assert!(!verify(&password, &stored, &strict));
        if verify(&password, &stored, &lenient) {
            // Only a cleartext value, the password itself, can verify.
            prop_assert!(stored.ends_with(&password));
        }
    }
}

#[test]
fn fresh_slappasswd_hashes_verify() {
    let slappasswd = Path::new("/usr/sbin/slappasswd");
    if !slappasswd.exists() {
        eprintln!(
            "skipped: {} is not installed (Debian package slapd)",
            slappasswd.display()
        );
        return;
    }
    let settings = PasswordSettings::default();
    let password = format!("fresh-{}", password::generate_len(12).unwrap());
    let runs: &[(&str, &[&str])] = &[
        ("{SSHA}", &[]),
        ("{SHA}", &[]),
        ("{SMD5}", &[]),
        ("{MD5}", &[]),
        ("{SSHA256}", &["-o", "module-load=pw-sha2"]),
        ("{SHA384}", &["-o", "module-load=pw-sha2"]),
        ("{SSHA512}", &["-o", "module-load=pw-sha2"]),
        ("{PBKDF2}", &["-o", "module-load=pw-pbkdf2"]),
        ("{PBKDF2-SHA256}", &["-o", "module-load=pw-pbkdf2"]),
        ("{PBKDF2-SHA512}", &["-o", "module-load=pw-pbkdf2"]),
        ("{ARGON2}", &["-o", "module-load=argon2"]),
        ("{CRYPT}", &["-c", "$6$%.16s"]),
        ("{CRYPT}", &["-c", "$5$rounds=6000$%.16s"]),
        ("{CRYPT}", &["-c", "$2b$06$%.22s"]),
    ];
    let mut checked = 0;
    for (scheme, extra) in runs {
        let out = Command::new(slappasswd)
            .args(["-h", scheme])
            .args(*extra)
            .args(["-s", &password])
            .output()
            .unwrap();
        let stored = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || !stored.starts_with(scheme) {
            eprintln!(
                "skipped {scheme} {extra:?}: slappasswd cannot produce it here ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            continue;
        }
        assert!(
            verify(password.as_bytes(), stored.as_bytes(), &settings),
            "{stored}"
        );
        assert!(!verify(b"fresh-wrong", stored.as_bytes(), &settings), "{stored}");
        checked += 1;
    }
    assert!(
        checked >= 7,
        "slappasswd produced only {checked} of the schemes of its core and crypt"
    );
}

// ------------------------------------------------------------------------------ directory

/// A directory in a fresh data directory, removed when dropped.
struct Harness {
    dir: Arc<Directory>,
    path: PathBuf,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.dir.store.close(false);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

const ADMIN: &str = "cn=admin,dc=example,dc=com";
const PEOPLE: &str = "ou=people,dc=example,dc=com";
const BOB: &str = "uid=bob,ou=people,dc=example,dc=com";
const PRINTER: &str = "cn=printer,ou=people,dc=example,dc=com";

static CLIENT: Client = Client {
    addr: None,
    tls: false,
};

impl Harness {
    fn open(scheme: DefaultScheme) -> Harness {
        Harness::open_with(scheme, |_| {})
    }

    fn open_with(scheme: DefaultScheme, configure: impl FnOnce(&mut ServerConfig)) -> Harness {
        let path = fresh_data_dir("passwords");
        let mut config = ServerConfig::default();
        test_store(&mut config, path.clone());
        config.password.default_scheme = scheme;
        configure(&mut config);
        let (dir, _) = Directory::open(config).unwrap();
        let h = Harness {
            dir: Arc::new(dir),
            path,
        };
        h.add(
            &admin(),
            PEOPLE,
            &[("objectClass", &["organizationalUnit"]), ("ou", &["people"])],
        )
        .unwrap();
        h
    }

    fn add(&self, who: &Identity, dn: &str, attrs: &[(&str, &[&str])]) -> Result<(), OpError> {
        let controls = RequestControls::parse(None, OpKind::Add).unwrap();
        let p = with_add(dn, attrs, |req| prepare_add(&self.ctx(who), &req, &controls))?;
        let (dir, who) = (self.dir.clone(), who.clone());
        self.dir
            .store
            .write(move |txn| {
                apply_add(
                    txn,
                    &WriteContext {
                        dir: &dir,
                        identity: &who,
                        client: &CLIENT,
                    },
                    p,
                )
            })
            .unwrap()
            .map(|_| ())
    }

    fn modify(
        &self,
        who: &Identity,
        dn: &str,
        changes: &[(ModifyOperation, &str, &[&str])],
    ) -> Result<(), OpError> {
        let controls = RequestControls::parse(None, OpKind::Modify).unwrap();
        let p = with_modify(dn, changes, |req| prepare_modify(&self.ctx(who), &req, &controls))?;
        let (dir, who) = (self.dir.clone(), who.clone());
        self.dir
            .store
            .write(move |txn| {
                apply_modify(
                    txn,
                    &WriteContext {
                        dir: &dir,
                        identity: &who,
                        client: &CLIENT,
                    },
                    p,
                )
            })
            .unwrap()
            .map(|_| ())
    }

    /// A Modify prepared on the connection (against the current version), to be applied
    /// later by [`Harness::apply_modify`].
    fn prepare_modify(
        &self,
        who: &Identity,
        dn: &str,
        changes: &[(ModifyOperation, &str, &[&str])],
    ) -> larch_server::ops::PreparedModify {
        let controls = RequestControls::parse(None, OpKind::Modify).unwrap();
        with_modify(dn, changes, |req| prepare_modify(&self.ctx(who), &req, &controls)).unwrap()
    }

    /// Applies a prepared Modify on the store's writer.
    fn apply_modify(&self, who: &Identity, p: larch_server::ops::PreparedModify) -> Result<(), OpError> {
        let (dir, who) = (self.dir.clone(), who.clone());
        self.dir
            .store
            .write(move |txn| {
                apply_modify(
                    txn,
                    &WriteContext {
                        dir: &dir,
                        identity: &who,
                        client: &CLIENT,
                    },
                    p,
                )
            })
            .unwrap()
            .map(|_| ())
    }

    /// A Password Modify prepared and finished on the connection (against the current
    /// version), to be applied later by [`Harness::apply_passwd`].
    fn prepare_passwd(
        &self,
        who: &Identity,
        old: &str,
        new: &str,
    ) -> larch_server::ops::password_modify::ReadyPasswordModify {
        let req = PasswordModifyRequest {
            user_identity: None,
            old_password: Some(old.as_bytes()),
            new_password: Some(new.as_bytes()),
        };
        let version = self.dir.store.current();
        prepare_password_modify(&self.ctx(who), &version, &req, false)
            .unwrap()
            .finish(&self.dir.config.password)
            .unwrap()
    }

    /// Applies a finished Password Modify on the store's writer.
    fn apply_passwd(
        &self,
        who: &Identity,
        ready: larch_server::ops::password_modify::ReadyPasswordModify,
    ) -> Result<(), OpError> {
        let (dir, who) = (self.dir.clone(), who.clone());
        self.dir
            .store
            .write(move |txn| {
                apply_password_modify(
                    txn,
                    &WriteContext {
                        dir: &dir,
                        identity: &who,
                        client: &CLIENT,
                    },
                    ready,
                )
            })
            .unwrap()
    }

    /// A Password Modify as the connection runs it: the generated password, if any.
    fn passwd(
        &self,
        who: &Identity,
        user: Option<&str>,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Result<Option<String>, OpError> {
        let req = PasswordModifyRequest {
            user_identity: user.map(str::as_bytes),
            old_password: old.map(str::as_bytes),
            new_password: new.map(str::as_bytes),
        };
        let version = self.dir.store.current();
        let p = prepare_password_modify(&self.ctx(who), &version, &req, false)?;
        let ready = p
            .finish(&self.dir.config.password)
            .map_err(FinishError::into_op_error)?;
        let generated = ready.generated.clone();
        let (dir, who) = (self.dir.clone(), who.clone());
        self.dir
            .store
            .write(move |txn| {
                apply_password_modify(
                    txn,
                    &WriteContext {
                        dir: &dir,
                        identity: &who,
                        client: &CLIENT,
                    },
                    ready,
                )
            })
            .unwrap()?;
        Ok(generated)
    }

    fn ctx<'a>(&'a self, who: &'a Identity) -> WriteContext<'a> {
        WriteContext {
            dir: &self.dir,
            identity: who,
            client: &CLIENT,
        }
    }

    /// A simple bind: Ok when the password verifies.
    fn bind(&self, dn: &str, pw: &str) -> Result<Identity, OpError> {
        let req = BindRequest {
            version: 3,
            name: dn.as_bytes(),
            authentication: Authentication::Simple(pw.as_bytes()),
        };
        bind(
            &self.dir,
            &self.dir.store.current(),
            &req,
            &Client::default(),
            None,
        )
    }

    fn passwords(&self, dn: &str) -> Vec<String> {
        let version = self.dir.store.current();
        let (_, norm) = NormDn::parse(dn.as_bytes(), &*self.dir.schema).unwrap();
        let entry = version.entry(version.find(&norm).unwrap()).unwrap();
        entry
            .attrs()
            .attribute(self.dir.user_password)
            .flat_map(|a| {
                a.values
                    .iter()
                    .map(|v| String::from_utf8(v.to_vec()).unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn person(&self, uid: &str, pw: &str) -> String {
        let dn = format!("uid={uid},{PEOPLE}");
        self.add(
            &admin(),
            &dn,
            &[
                ("objectClass", &["inetOrgPerson"]),
                ("uid", &[uid]),
                ("cn", &[uid]),
                ("sn", &[uid]),
                ("userPassword", &[pw]),
            ],
        )
        .unwrap();
        dn
    }
}

fn identity(dn: &str, admin: bool) -> Identity {
    let schema = larch_model::schema::Schema::builtin().unwrap();
    let (_, norm) = NormDn::parse(dn.as_bytes(), &schema).unwrap();
    Identity::Dn {
        dn: dn.to_string(),
        norm,
        admin,
    }
}

fn admin() -> Identity {
    identity(ADMIN, true)
}

#[track_caller]
fn code<T: std::fmt::Debug>(r: Result<T, OpError>) -> ResultCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => {
            assert!(!e.message.is_empty(), "{e:?} has no diagnostic message");
            e.code
        }
    }
}

#[test]
fn new_passwords_are_hashed_with_the_default_scheme_and_bind() {
    for (scheme, prefix) in [
        (DefaultScheme::Argon2id, "{ARGON2}$argon2id$v=19$m=19456,t=2,p=1$"),
        (DefaultScheme::Pbkdf2Sha512, "{PBKDF2-SHA512}25000$"),
        (DefaultScheme::Ssha512, "{SSHA512}"),
        (DefaultScheme::Ssha, "{SSHA}"),
    ] {
        let h = Harness::open(scheme);
        // The admin's own password is hashed the same way.
        let admin_pw = h.passwords(ADMIN);
        assert!(
            admin_pw.len() == 1 && admin_pw[0].starts_with(prefix),
            "{admin_pw:?}"
        );
        let alice = h.person("alice", "wonderland");
        let stored = h.passwords(&alice);
        assert_eq!(stored.len(), 1);
        assert!(stored[0].starts_with(prefix), "{scheme:?}: {stored:?}");
        assert!(!stored[0].contains("wonderland"));
        let who = h.bind(&alice, "wonderland").unwrap();
        assert_eq!(who.dn(), alice);
        assert_eq!(
            code(h.bind(&alice, "looking-glass")),
            ResultCode::INVALID_CREDENTIALS
        );
        // A replace by the user hashes too.
        let me = identity(&alice, false);
        h.modify(
            &me,
            &alice,
            &[(ModifyOperation::Replace, "userPassword", &["new-pw"])],
        )
        .unwrap();
        assert!(h.passwords(&alice)[0].starts_with(prefix));
        assert!(h.bind(&alice, "new-pw").is_ok() && h.bind(&alice, "wonderland").is_err());
    }
}

#[test]
fn pre_hashed_values_are_the_admins_only() {
    let h = Harness::open(DefaultScheme::Ssha512);
    let ssha = "{SSHA}0H+zTv8o4MR4H43n03eCsvw1luG8LdB7"; // "secret", from passlib's suite
                                                         // The admin migrates a hash: stored as given, and it verifies.
    let alice = h.person("alice", ssha);
    assert_eq!(h.passwords(&alice), [ssha]);
    assert!(h.bind(&alice, "secret").is_ok());
    // Anyone else: constraintViolation on Modify add/replace of its own password.
    let me = identity(&alice, false);
    let bob_add = h.add(
        &me,
        BOB,
        &[
            ("objectClass", &["inetOrgPerson"]),
            ("uid", &["bob"]),
            ("cn", &["bob"]),
            ("sn", &["bob"]),
            ("userPassword", &["{ARGON2}$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc"]),
        ],
    );
    // Under the default access policy a user may not add entries at all: access control
    // answers before the password rule (which the Modify cases below reach).
    let e = bob_add.unwrap_err();
    assert_eq!(e.code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS, "{}", e.message);
    for op in [ModifyOperation::Replace, ModifyOperation::Add] {
        assert_eq!(
            code(h.modify(&me, &alice, &[(op, "userPassword", &["{ssha512}AAAA"])])),
            ResultCode::CONSTRAINT_VIOLATION
        );
    }
    assert_eq!(h.passwords(&alice), [ssha], "nothing changed");
    // An unknown scheme is part of a cleartext password, hashed like any other.
    h.modify(
        &me,
        &alice,
        &[(ModifyOperation::Replace, "userPassword", &["{FOO}bar"])],
    )
    .unwrap();
    assert!(h.passwords(&alice)[0].starts_with("{SSHA512}"));
    assert!(h.bind(&alice, "{FOO}bar").is_ok());
    // The admin may store a pre-hashed value with Modify too.
    h.modify(
        &admin(),
        &alice,
        &[(ModifyOperation::Replace, "userPassword", &[ssha])],
    )
    .unwrap();
    assert_eq!(h.passwords(&alice), [ssha]);
}

#[test]
fn a_delete_may_name_the_password_in_cleartext() {
    for scheme in [DefaultScheme::Argon2id, DefaultScheme::Ssha] {
        let h = Harness::open(scheme);
        let alice = h.person("alice", "old-pw");
        let me = identity(&alice, false);
        // A wrong old password: nothing matches, noSuchAttribute, nothing changes.
        let before = h.passwords(&alice);
        assert_eq!(
            code(h.modify(
                &me,
                &alice,
                &[
                    (ModifyOperation::Delete, "userPassword", &["not-the-pw"]),
                    (ModifyOperation::Add, "userPassword", &["new-pw"]),
                ],
            )),
            ResultCode::NO_SUCH_ATTRIBUTE
        );
        assert_eq!(h.passwords(&alice), before);
        // The right one: its hash goes, the new one is hashed and added.
        h.modify(
            &me,
            &alice,
            &[
                (ModifyOperation::Delete, "userPassword", &["old-pw"]),
                (ModifyOperation::Add, "userPassword", &["new-pw"]),
            ],
        )
        .unwrap();
        let after = h.passwords(&alice);
        assert_eq!(after.len(), 1, "{after:?}");
        assert_ne!(after, before);
        assert!(h.bind(&alice, "new-pw").is_ok());
        assert_eq!(code(h.bind(&alice, "old-pw")), ResultCode::INVALID_CREDENTIALS);
        // Deleting by the stored value itself still works.
        let stored = after[0].clone();
        h.modify(
            &admin(),
            &alice,
            &[(ModifyOperation::Delete, "userPassword", &[stored.as_str()])],
        )
        .unwrap();
        assert!(h.passwords(&alice).is_empty());
    }
}

#[test]
fn binds_say_whether_their_check_is_slow() {
    let h = Harness::open(DefaultScheme::Ssha);
    let fast = h.person("fast", "fast-pw");
    let slow = h.person(
        "slow",
        "{PBKDF2-SHA256}1212$4vjV83LKPjQzk31VI4E0Vw$hsYF68OiOUPdDZ1Fg.fJPeq1h/gXXY7acBp9/6c.tmQ",
    );
    let version = h.dir.store.current();
    for (dn, pw, want_slow) in [
        (fast.as_str(), "fast-pw", false),
        (slow.as_str(), "password", true),
    ] {
        let req = BindRequest {
            version: 3,
            name: dn.as_bytes(),
            authentication: Authentication::Simple(pw.as_bytes()),
        };
        let Staged::Check(check) = stage(&h.dir, &version, &req, &Client::default(), None, None).unwrap()
        else {
            panic!("a name/password bind has a password to check")
        };
        assert_eq!(check.is_slow(), want_slow, "{dn}");
        assert_eq!(check.run().unwrap().dn(), dn);
    }
}

#[test]
fn password_modify_self_change_reset_and_generated() {
    let h = Harness::open(DefaultScheme::Argon2id);
    let alice = h.person("alice", "alice-1");
    let bob = h.person("bob", "bob-1");
    let me = identity(&alice, false);
    // Self change with the old password; the bound identity is the default target.
    assert_eq!(
        h.passwd(&me, None, Some("alice-1"), Some("alice-2")).unwrap(),
        None
    );
    let stored = h.passwords(&alice);
    assert!(
        stored.len() == 1 && stored[0].starts_with("{ARGON2}$argon2id$"),
        "{stored:?}"
    );
    assert!(h.bind(&alice, "alice-2").is_ok() && h.bind(&alice, "alice-1").is_err());
    // A wrong old password: unwillingToPerform, as slapd answers.
    let e = h
        .passwd(&me, Some(&alice), Some("alice-1"), Some("alice-3"))
        .unwrap_err();
    assert_eq!(e.code, ResultCode::UNWILLING_TO_PERFORM);
    assert!(h.bind(&alice, "alice-2").is_ok());
    // The admin resets without the old password.
    h.passwd(&admin(), Some(&bob), None, Some("bob-2")).unwrap();
    assert!(h.bind(&bob, "bob-2").is_ok());
    // A generated password is returned and works.
    let generated = h
        .passwd(&me, None, None, None)
        .unwrap()
        .expect("a generated password");
    assert_eq!(generated.len(), password::GENERATED_PASSWORD_LEN);
    assert!(generated.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert!(h.bind(&alice, &generated).is_ok());
    assert!(h.bind(&alice, "alice-2").is_err());
    // newPasswd is always hashed, even when it looks like a stored form.
    h.passwd(&me, None, None, Some("{SSHA}0H+zTv8o4MR4H43n03eCsvw1luG8LdB7"))
        .unwrap();
    assert!(h.passwords(&alice)[0].starts_with("{ARGON2}"));
    assert!(h.bind(&alice, "{SSHA}0H+zTv8o4MR4H43n03eCsvw1luG8LdB7").is_ok());
}

#[test]
fn password_modify_refusals() {
    let h = Harness::open(DefaultScheme::Ssha);
    let alice = h.person("alice", "alice-1");
    let bob = h.person("bob", "bob-1");
    let me = identity(&alice, false);
    let adm = admin();
    h.add(
        &adm,
        PRINTER,
        &[("objectClass", &["device"]), ("cn", &["printer"])],
    )
    .unwrap();
    // (requester, userIdentity, oldPasswd, newPasswd, expected result)
    type Case<'a> = (
        &'a Identity,
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
        ResultCode,
    );
    let cases: Vec<Case<'_>> = vec![
        // Anonymous: strongerAuthRequired, as slapd.
        (
            &Identity::Anonymous,
            Some(alice.as_str()),
            None,
            Some("x"),
            ResultCode::STRONGER_AUTH_REQUIRED,
        ),
        // Someone else's password: only the entry itself and the admin.
        (
            &me,
            Some(bob.as_str()),
            Some("bob-1"),
            Some("x"),
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
        ),
        (
            &me,
            Some("uid=bob , ou=People,dc=EXAMPLE,dc=com"),
            None,
            Some("x"),
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
        ),
        // Empty values.
        (&me, None, Some(""), Some("x"), ResultCode::UNWILLING_TO_PERFORM),
        (
            &me,
            None,
            Some("alice-1"),
            Some(""),
            ResultCode::UNWILLING_TO_PERFORM,
        ),
        // Targets.
        (
            &adm,
            Some("not a dn"),
            None,
            Some("x"),
            ResultCode::INVALID_DN_SYNTAX,
        ),
        (
            &adm,
            Some("cn=Subschema"),
            None,
            Some("x"),
            ResultCode::UNWILLING_TO_PERFORM,
        ),
        (
            &adm,
            Some("uid=x,o=elsewhere"),
            None,
            Some("x"),
            ResultCode::UNWILLING_TO_PERFORM,
        ),
        (
            &adm,
            Some("uid=ghost,ou=people,dc=example,dc=com"),
            None,
            Some("x"),
            ResultCode::NO_SUCH_OBJECT,
        ),
        (
            &adm,
            Some("uid=ghost,ou=people,dc=example,dc=com"),
            Some("old"),
            Some("x"),
            ResultCode::UNWILLING_TO_PERFORM,
        ),
        // An entry whose classes do not allow userPassword.
        (
            &adm,
            Some(PRINTER),
            None,
            Some("x"),
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
    ];
    for (who, user, old, new, want) in cases {
        let got = code(h.passwd(who, user, old, new));
        assert_eq!(got, want, "{who:?} {user:?} {old:?} {new:?}");
    }
    // An empty userIdentity means the bound user (slapd).
    h.passwd(&me, Some(""), Some("alice-1"), Some("alice-2")).unwrap();
    assert!(h.bind(&alice, "alice-2").is_ok());
    // Nothing above changed Bob's password.
    assert!(h.bind(&bob, "bob-1").is_ok());
    // noSuchObject carries the matched DN.
    let e = h
        .passwd(
            &admin(),
            Some("uid=ghost,ou=people,dc=example,dc=com"),
            None,
            Some("x"),
        )
        .unwrap_err();
    assert_eq!(e.matched_dn, PEOPLE);
}

/// Two changes of one password prepared at the same moment (two connections, each
/// verifying the new password against the history off the writer) are serialised by the
/// writer: the second is checked against the password and history the first left, and is
/// refused as a reuse although its own check, made before the first committed, passed.
#[test]
fn concurrent_changes_of_one_password_are_checked_against_each_other() {
    use larch_proto::controls::PasswordPolicyError;
    for scheme in [DefaultScheme::Ssha, DefaultScheme::Argon2id] {
        let h = Harness::open_with(scheme, |c| c.password_policy.in_history = 2);
        let alice = h.person("alice", "alice-0");
        let me = identity(&alice, false);
        // Password Modify twice to the same new password.
        let first = h.prepare_passwd(&me, "alice-0", "alice-1");
        let second = h.prepare_passwd(&me, "alice-0", "alice-1");
        h.apply_passwd(&me, first).unwrap();
        let e = h.apply_passwd(&me, second).unwrap_err();
        assert_eq!(
            (e.code, e.policy),
            (
                ResultCode::CONSTRAINT_VIOLATION,
                Some(PasswordPolicyError::PasswordInHistory)
            ),
            "{scheme:?}: {e:?}"
        );
        assert!(h.bind(&alice, "alice-1").is_ok());
        // The same with Modify: history [alice-0], current alice-1.
        let replace = |pw: &'static [&'static str]| [(ModifyOperation::Replace, "userPassword", pw)];
        h.modify(&me, &alice, &replace(&["alice-2"])).unwrap();
        // History [alice-0, alice-1], current alice-2; two changes to alice-3 at once.
        let first = h.prepare_modify(&me, &alice, &replace(&["alice-3"]));
        let second = h.prepare_modify(&me, &alice, &replace(&["alice-3"]));
        h.apply_modify(&me, first).unwrap();
        let e = h.apply_modify(&me, second).unwrap_err();
        assert_eq!(e.policy, Some(PasswordPolicyError::PasswordInHistory), "{e:?}");
        // History [alice-1, alice-2], current alice-3. A change to alice-1 is a reuse when
        // prepared; a concurrent change to alice-4 that commits first pushes alice-1 out of
        // the history of two, and the change to alice-1 is then allowed, as it would be
        // had it come second on one connection.
        let back = h.prepare_modify(&me, &alice, &replace(&["alice-1"]));
        let other = h.prepare_modify(&me, &alice, &replace(&["alice-4"]));
        h.apply_modify(&me, other).unwrap();
        h.apply_modify(&me, back).unwrap();
        assert!(h.bind(&alice, "alice-1").is_ok());
    }
}
