//! TLS, StartTLS, the confidentiality policy and the SASL mechanisms.
//!
//! Certificates are made here with rcgen (a CA, servers, clients; expired, not yet valid,
//! mismatched), and the server's answers are compared with the expected ones:
//! - loading: every kind of bad file is refused with an error naming the file (and the
//!   dates for validity), a good one loads, reload swaps only on success;
//! - `--demo-tls` files: made once, reused, valid for the names they promise;
//! - SASL EXTERNAL and PLAIN decided on a directory without the network;
//! - a running server (on 127.0.0.1, ports chosen by the system) with a blocking rustls
//!   client: StartTLS, `ldaps://`, client certificates, `require_tls`, the root DSE.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use larch_proto::exop::{START_TLS, WHO_AM_I};
use larch_proto::frame::{frame, Frame};
use larch_proto::{
    Authentication, BindRequest, DelRequest, ExtendedRequest, LdapMessage, MessageId, ProtocolOp, ResultCode,
};
use larch_server::auth::sasl;
use larch_server::client::Client;
use larch_server::config::{
    ClientCertificates, ExternalMap, ListenUrl, RequireTls, SaslMechanisms, ServerConfig, TlsSettings,
};
use larch_server::directory::Directory;
use larch_server::dse::root::root_dse;
use larch_server::identity::Identity;
use larch_server::net::Bound;
use larch_server::tls::{demo, server_config, TlsError, TlsState};

mod common;
use common::{fresh_data_dir, test_store};
use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, SerialNumber,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

const ADMIN: &str = "cn=admin,dc=example,dc=com";

// ---------------------------------------------------------------------------------------
// Certificates.

/// A temporary directory, removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(what: &str) -> Temp {
        let p = fresh_data_dir(&format!("tls-{what}"));
        std::fs::create_dir_all(&p).unwrap();
        Temp(p)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A CA that signs the test certificates.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(p, key),
    }
}

/// A certificate and its key, as PEM and DER.
struct Leaf {
    pem: String,
    key_pem: String,
    der: CertificateDer<'static>,
    key_der: PrivateKeyDer<'static>,
}

struct LeafSpec<'a> {
    dn: Vec<(DnType, DnValue)>,
    names: &'a [&'a str],
    valid: Option<(time::OffsetDateTime, time::OffsetDateTime)>,
    serial: u64,
}

impl Default for LeafSpec<'_> {
    fn default() -> Self {
        LeafSpec {
            dn: vec![(DnType::CommonName, DnValue::Utf8String("server.test".into()))],
            names: &["127.0.0.1", "server.test"],
            valid: None,
            serial: 1,
        }
    }
}

fn leaf(ca: &Ca, spec: LeafSpec<'_>) -> Leaf {
    let names: Vec<String> = spec.names.iter().map(|s| s.to_string()).collect();
    let mut p = CertificateParams::new(names).unwrap();
    let mut dn = DistinguishedName::new();
    for (t, v) in spec.dn {
        dn.push(t, v);
    }
    p.distinguished_name = dn;
    p.serial_number = Some(SerialNumber::from(spec.serial));
    if let Some((from, until)) = spec.valid {
        p.not_before = from;
        p.not_after = until;
    }
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &ca.issuer).unwrap();
    Leaf {
        pem: cert.pem(),
        key_pem: key.serialize_pem(),
        der: cert.der().clone(),
        key_der: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    }
}

fn client_leaf(ca: &Ca, cn: &str) -> Leaf {
    leaf(
        ca,
        LeafSpec {
            dn: vec![
                (DnType::OrganizationName, DnValue::Utf8String("Clients".into())),
                (DnType::CommonName, DnValue::Utf8String(cn.into())),
            ],
            names: &[],
            ..LeafSpec::default()
        },
    )
}

fn settings(cert: PathBuf, key: PathBuf) -> TlsSettings {
    TlsSettings {
        certificate: cert,
        key,
        client_ca: None,
        client_certificates: ClientCertificates::None,
    }
}

// ---------------------------------------------------------------------------------------
// Loading.

#[test]
fn a_good_certificate_loads_and_describes_itself() {
    let t = Temp::new("good");
    let ca = ca("Test CA");
    let l = leaf(
        &ca,
        LeafSpec {
            dn: vec![
                (DnType::OrganizationName, DnValue::Utf8String("Larch Test".into())),
                (DnType::CommonName, DnValue::Utf8String("server.test".into())),
            ],
            valid: Some((date_time_ymd(2020, 1, 2), date_time_ymd(2999, 12, 31))),
            serial: 0x1234,
            ..LeafSpec::default()
        },
    );
    // The chain file may hold the CA after the leaf.
    let cert = t.write("chain.pem", &format!("{}{}", l.pem, ca.pem));
    let key = t.write("key.pem", &l.key_pem);
    let state = TlsState::load(&settings(cert, key)).unwrap();
    let info = state.certificate();
    assert_eq!(info.subject, "CN=server.test,O=Larch Test");
    assert_eq!(info.serial, "12:34");
    assert_eq!(info.not_before, "2020-01-02 00:00:00 UTC");
    assert_eq!(info.not_after, "2999-12-31 00:00:00 UTC");
}

/// Loads `cert` and `key` (PEM texts; `None`: the file is missing) and returns the error.
fn load_error(t: &Temp, cert: Option<&str>, key: Option<&str>) -> (TlsError, PathBuf, PathBuf) {
    let cert_path = t.0.join("cert.pem");
    let key_path = t.0.join("key.pem");
    let _ = std::fs::remove_file(&cert_path);
    let _ = std::fs::remove_file(&key_path);
    if let Some(c) = cert {
        std::fs::write(&cert_path, c).unwrap();
    }
    if let Some(k) = key {
        std::fs::write(&key_path, k).unwrap();
    }
    let e = TlsState::load(&settings(cert_path.clone(), key_path.clone())).unwrap_err();
    (e, cert_path, key_path)
}

#[test]
fn bad_files_are_refused_naming_the_file_and_the_reason() {
    let t = Temp::new("bad");
    let ca = ca("Test CA");
    let good = leaf(&ca, LeafSpec::default());

    let (e, cert, _) = load_error(&t, None, Some(&good.key_pem));
    assert!(matches!(e, TlsError::Missing { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!("{}: the certificate file does not exist", cert.display())
    );

    let (e, _, key) = load_error(&t, Some(&good.pem), None);
    assert!(matches!(e, TlsError::Missing { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!("{}: the private key file does not exist", key.display())
    );

    let (e, cert, _) = load_error(&t, Some("hello, not PEM at all\n"), Some(&good.key_pem));
    assert!(matches!(e, TlsError::NoCertificate { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("{}: no certificate in it", cert.display())),
        "{e}"
    );

    let garbage = "-----BEGIN CERTIFICATE-----\n!!!! not base64 !!!!\n-----END CERTIFICATE-----\n";
    let (e, cert, _) = load_error(&t, Some(garbage), Some(&good.key_pem));
    assert!(matches!(e, TlsError::BadPem { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(&format!(
            "{}: the certificate file is not valid PEM",
            cert.display()
        )),
        "{e}"
    );

    let not_x509 = "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n";
    let (e, cert, _) = load_error(&t, Some(not_x509), Some(&good.key_pem));
    assert!(matches!(e, TlsError::BadCertificate { index: 1, .. }), "{e:?}");
    assert!(e.to_string().starts_with(&cert.display().to_string()), "{e}");

    // A key file that holds a certificate, a certificate file that holds a key.
    let (e, _, key) = load_error(&t, Some(&good.pem), Some(&good.pem));
    assert!(matches!(e, TlsError::NoKey { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("{}: no private key in it", key.display())),
        "{e}"
    );
    let (e, _, _) = load_error(&t, Some(&good.key_pem), Some(&good.key_pem));
    assert!(matches!(e, TlsError::NoCertificate { .. }), "{e:?}");

    // Another certificate's key.
    let other = leaf(
        &ca,
        LeafSpec {
            serial: 2,
            ..LeafSpec::default()
        },
    );
    let (e, cert, key) = load_error(&t, Some(&good.pem), Some(&other.key_pem));
    assert!(matches!(e, TlsError::KeyMismatch { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the private key does not match the certificate `CN=server.test` of {}",
            key.display(),
            cert.display()
        )
    );

    // Validity, with the dates in the message.
    let expired = leaf(
        &ca,
        LeafSpec {
            valid: Some((date_time_ymd(2000, 1, 1), date_time_ymd(2001, 1, 1))),
            ..LeafSpec::default()
        },
    );
    let (e, cert, _) = load_error(&t, Some(&expired.pem), Some(&expired.key_pem));
    assert!(matches!(e, TlsError::Expired { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the certificate `CN=server.test` expired on 2001-01-01 00:00:00 UTC (valid from 2000-01-01 00:00:00 UTC)",
            cert.display()
        )
    );
    let future = leaf(
        &ca,
        LeafSpec {
            valid: Some((date_time_ymd(2100, 6, 1), date_time_ymd(2101, 1, 1))),
            ..LeafSpec::default()
        },
    );
    let (e, cert, _) = load_error(&t, Some(&future.pem), Some(&future.key_pem));
    assert!(matches!(e, TlsError::NotYetValid { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the certificate `CN=server.test` is not valid yet: valid from 2100-06-01 00:00:00 UTC (until 2101-01-01 00:00:00 UTC); check the clock",
            cert.display()
        )
    );
    // An expired certificate later in the chain is refused too.
    let chain = format!("{}{}", good.pem, expired.pem);
    let (e, _, _) = load_error(&t, Some(&chain), Some(&good.key_pem));
    assert!(matches!(e, TlsError::Expired { .. }), "{e:?}");

    // A directory where a file should be.
    let e = TlsState::load(&settings(t.0.clone(), t.0.join("key.pem"))).unwrap_err();
    assert!(matches!(e, TlsError::Unreadable { .. }), "{e:?}");

    // The validity is checked at the time given.
    let c = t.write("c.pem", &expired.pem);
    let k = t.write("k.pem", &expired.key_pem);
    let mid_2000 = date_time_ymd(2000, 6, 1).unix_timestamp();
    assert!(server_config::build_at(&settings(c, k), mid_2000).is_ok());
}

#[test]
fn client_ca_files_are_checked() {
    let t = Temp::new("clientca");
    let ca = ca("Test CA");
    let l = leaf(&ca, LeafSpec::default());
    let mut s = settings(t.write("c.pem", &l.pem), t.write("k.pem", &l.key_pem));
    s.client_certificates = ClientCertificates::Require;
    s.client_ca = Some(t.0.join("missing-ca.pem"));
    let e = TlsState::load(&s).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the client CA file does not exist",
            t.0.join("missing-ca.pem").display()
        )
    );
    s.client_ca = Some(t.write("ca.pem", "nothing here\n"));
    assert!(matches!(
        TlsState::load(&s).unwrap_err(),
        TlsError::NoCertificate { .. }
    ));
    s.client_ca = Some(t.write("ca.pem", &ca.pem));
    TlsState::load(&s).unwrap();
}

#[test]
fn reload_swaps_only_a_good_configuration() {
    let t = Temp::new("reload");
    let ca = ca("Test CA");
    let first = leaf(
        &ca,
        LeafSpec {
            serial: 0x11,
            ..LeafSpec::default()
        },
    );
    let cert = t.write("c.pem", &first.pem);
    let key = t.write("k.pem", &first.key_pem);
    let state = TlsState::load(&settings(cert.clone(), key.clone())).unwrap();
    assert_eq!(state.certificate().serial, "11");

    let second = leaf(
        &ca,
        LeafSpec {
            serial: 0x22,
            ..LeafSpec::default()
        },
    );
    std::fs::write(&cert, &second.pem).unwrap();
    std::fs::write(&key, &second.key_pem).unwrap();
    assert_eq!(state.reload().unwrap().serial, "22");
    assert_eq!(state.certificate().serial, "22");

    // A half-done renewal (new certificate, old key) is refused and changes nothing.
    let third = leaf(
        &ca,
        LeafSpec {
            serial: 0x33,
            ..LeafSpec::default()
        },
    );
    std::fs::write(&cert, &third.pem).unwrap();
    let e = state.reload().unwrap_err();
    assert!(matches!(e, TlsError::KeyMismatch { .. }), "{e:?}");
    assert_eq!(state.certificate().serial, "22");
    std::fs::remove_file(&cert).unwrap();
    assert!(matches!(state.reload().unwrap_err(), TlsError::Missing { .. }));
    assert_eq!(state.certificate().serial, "22");
}

// ---------------------------------------------------------------------------------------
// The demo certificates.

#[test]
fn demo_files_are_made_once_and_serve_localhost() {
    let t = Temp::new("demo");
    let mut config = ServerConfig::default();
    config.server.data_dir = t.0.join("data");
    let files = demo::apply(&mut config).unwrap();
    assert!(files.created);
    assert_eq!(files.ca, t.0.join("data/demo-tls/ca.pem").canonicalize().unwrap());
    let urls: Vec<String> = config.server.listen.iter().map(ListenUrl::to_string).collect();
    assert_eq!(urls, ["ldap://127.0.0.1:3389", demo::DEMO_LDAPS_URL]);
    config.validate().unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&files.key).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the key is readable by its owner only");

    // The server certificate loads, is signed by the CA and names the local host.
    let tls = TlsState::load(config.tls.as_ref().unwrap()).unwrap();
    assert_eq!(tls.certificate().subject, "CN=localhost,O=Larch");
    let der = rustls_pki_types::pem::PemObject::from_pem_file(&files.certificate).unwrap();
    let ca_der: CertificateDer<'static> = rustls_pki_types::pem::PemObject::from_pem_file(&files.ca).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_der).unwrap();
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
    )
    .build()
    .unwrap();
    for name in ["localhost", "127.0.0.1", "::1"] {
        rustls::client::danger::ServerCertVerifier::verify_server_cert(
            &*verifier,
            &der,
            &[],
            &ServerName::try_from(name).unwrap(),
            &[],
            rustls_pki_types::UnixTime::now(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert!(rustls::client::danger::ServerCertVerifier::verify_server_cert(
        &*verifier,
        &der,
        &[],
        &ServerName::try_from("elsewhere.example").unwrap(),
        &[],
        rustls_pki_types::UnixTime::now(),
    )
    .is_err());

    // A second start reuses the files; an ldaps listener already there is kept.
    let before = std::fs::read(&files.certificate).unwrap();
    let mut again = ServerConfig::default();
    again.server.data_dir = t.0.join("data");
    again.server.listen = vec![ListenUrl::parse("ldaps://127.0.0.1:4636").unwrap()];
    let files2 = demo::apply(&mut again).unwrap();
    assert!(!files2.created);
    assert_eq!(std::fs::read(&files2.certificate).unwrap(), before);
    assert_eq!(again.server.listen.len(), 1);

    // Not both.
    assert!(matches!(demo::apply(&mut again).unwrap_err(), TlsError::Demo(_)));
}

// ---------------------------------------------------------------------------------------
// Subjects and SASL without the network.

#[test]
fn certificate_subjects_in_rfc4514_form() {
    let ca = ca("Test CA");
    let l = leaf(
        &ca,
        LeafSpec {
            dn: vec![
                (
                    DnType::CountryName,
                    DnValue::PrintableString("FR".try_into().unwrap()),
                ),
                (
                    DnType::OrganizationName,
                    DnValue::BmpString("Société, Générale".try_into().unwrap()),
                ),
                (
                    DnType::OrganizationalUnitName,
                    DnValue::TeletexString("people".try_into().unwrap()),
                ),
                (DnType::CommonName, DnValue::Utf8String("#Jane + Doe ".into())),
            ],
            ..LeafSpec::default()
        },
    );
    let s = larch_server::cert_subject::Subject::from_certificate(&l.der).unwrap();
    assert_eq!(
        s.to_rfc4514(),
        "CN=\\#Jane \\+ Doe\\ ,OU=people,O=Société\\, Générale,C=FR"
    );
    let map = ExternalMap::parse("uid={cn},o={O},dc=example,dc=com").unwrap();
    assert_eq!(
        sasl::map_subject(&map, &s).unwrap(),
        "uid=\\#Jane \\+ Doe\\ ,o=Société\\, Générale,dc=example,dc=com"
    );
    assert!(larch_server::cert_subject::Subject::from_certificate(b"not a certificate").is_err());
}

struct Fx {
    dir: Directory,
    password: String,
    _temp: Temp,
}

fn directory(tweak: impl FnOnce(&mut ServerConfig)) -> Fx {
    let temp = Temp::new("dir");
    let mut config = ServerConfig::default();
    test_store(&mut config, temp.0.join("data"));
    tweak(&mut config);
    let (dir, startup) = Directory::open(config).unwrap();
    Fx {
        dir,
        password: startup.generated_admin_password.unwrap(),
        _temp: temp,
    }
}

impl Drop for Fx {
    fn drop(&mut self) {
        let _ = self.dir.store.close(false);
    }
}

fn sasl_bind(
    fx: &Fx,
    mechanism: &str,
    credentials: Option<&[u8]>,
    client: &Client,
    cert: Option<&CertificateDer<'_>>,
) -> Result<Identity, (ResultCode, String)> {
    let version = fx.dir.store.current();
    sasl::bind(&fx.dir, &version, mechanism.as_bytes(), credentials, client, cert)
        .map(|(identity, _)| identity)
        .map_err(|e| (e.code, e.message))
}

fn tls_client() -> Client {
    Client {
        addr: Some("192.0.2.1:4000".parse().unwrap()),
        tls: true,
    }
}

#[test]
fn sasl_external_maps_the_certificate_subject() {
    let fx = directory(|c| c.sasl.external_map = ExternalMap::parse("cn={CN},dc=example,dc=com").unwrap());
    let ca = ca("Test CA");
    let admin = client_leaf(&ca, "admin");
    let id = sasl_bind(&fx, "EXTERNAL", None, &tls_client(), Some(&admin.der)).unwrap();
    assert_eq!(id.authz_id(), format!("dn:{ADMIN}"));
    assert!(id.is_admin());
    // Mechanism names are case-insensitive; empty credentials are no authzid.
    let id = sasl_bind(&fx, "external", Some(b""), &tls_client(), Some(&admin.der)).unwrap();
    assert!(id.is_admin());

    let nobody = client_leaf(&ca, "nobody");
    let (code, msg) = sasl_bind(&fx, "EXTERNAL", None, &tls_client(), Some(&nobody.der)).unwrap_err();
    assert_eq!(code, ResultCode::INVALID_CREDENTIALS);
    assert!(msg.contains("no entry `cn=nobody,dc=example,dc=com`"), "{msg}");

    let (code, msg) = sasl_bind(&fx, "EXTERNAL", None, &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::INAPPROPRIATE_AUTHENTICATION);
    assert!(msg.contains("no certificate"), "{msg}");
    let plain = Client {
        addr: Some("127.0.0.1:4000".parse().unwrap()),
        tls: false,
    };
    let (code, msg) = sasl_bind(&fx, "EXTERNAL", None, &plain, None).unwrap_err();
    assert_eq!(code, ResultCode::INAPPROPRIATE_AUTHENTICATION);
    assert!(msg.contains("not protected by TLS"), "{msg}");

    // The admin may act as another entry; others may not.
    let id = sasl_bind(
        &fx,
        "EXTERNAL",
        Some(b"dn:dc=example,dc=com"),
        &tls_client(),
        Some(&admin.der),
    )
    .unwrap();
    assert_eq!(id.authz_id(), "dn:dc=example,dc=com");
    assert!(!id.is_admin());
    let (code, _) = sasl_bind(
        &fx,
        "EXTERNAL",
        Some(b"dn:cn=nosuch,dc=example,dc=com"),
        &tls_client(),
        Some(&admin.der),
    )
    .unwrap_err();
    assert_eq!(code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS);
    let (code, msg) =
        sasl_bind(&fx, "EXTERNAL", Some(b"u:admin"), &tls_client(), Some(&admin.der)).unwrap_err();
    assert_eq!(code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS);
    assert!(msg.contains("dn:<DN>"), "{msg}");

    // The subject form: `O=test` names the suffix entry of a directory `o=test` (rcgen
    // keeps one value per attribute type, so no certificate here says DC=example,DC=com).
    let fx = directory(|c| {
        c.directory.suffix = "o=test".into();
        c.directory.admin_dn = "cn=admin,o=test".into();
    });
    let subject = |dn: Vec<(DnType, DnValue)>| {
        leaf(
            &ca,
            LeafSpec {
                dn,
                names: &[],
                ..LeafSpec::default()
            },
        )
    };
    let suffix = subject(vec![(
        DnType::OrganizationName,
        DnValue::Utf8String("test".into()),
    )]);
    let admin = subject(vec![
        (DnType::OrganizationName, DnValue::Utf8String("test".into())),
        (DnType::CommonName, DnValue::Utf8String("admin".into())),
    ]);
    let id = sasl_bind(&fx, "EXTERNAL", None, &tls_client(), Some(&admin.der)).unwrap();
    assert_eq!(id.authz_id(), "dn:cn=admin,o=test");
    assert!(id.is_admin());
    let id = sasl_bind(&fx, "EXTERNAL", None, &tls_client(), Some(&suffix.der)).unwrap();
    assert_eq!(id.authz_id(), "dn:o=test");
    assert!(!id.is_admin());
    let (code, msg) = sasl_bind(
        &fx,
        "EXTERNAL",
        Some(b"dn:cn=admin,o=test"),
        &tls_client(),
        Some(&suffix.der),
    )
    .unwrap_err();
    assert_eq!(code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS);
    assert!(msg.contains("may not act as"), "{msg}");
    // Its own DN as authzid needs no right.
    let id = sasl_bind(
        &fx,
        "EXTERNAL",
        Some(b"dn:O=Test"),
        &tls_client(),
        Some(&suffix.der),
    )
    .unwrap();
    assert_eq!(id.authz_id(), "dn:o=test");
}

#[test]
fn sasl_plain_checks_the_password_like_a_simple_bind() {
    let fx = directory(|_| {});
    let pw = fx.password.clone();
    let msg = |authz: &str, authc: &str, pw: &str| format!("{authz}\0{authc}\0{pw}").into_bytes();
    let id = sasl_bind(
        &fx,
        "PLAIN",
        Some(&msg("", &format!("dn:{ADMIN}"), &pw)),
        &tls_client(),
        None,
    )
    .unwrap();
    assert!(id.is_admin());
    let id = sasl_bind(&fx, "PLAIN", Some(&msg("", ADMIN, &pw)), &tls_client(), None).unwrap();
    assert!(id.is_admin());
    let id = sasl_bind(
        &fx,
        "PLAIN",
        Some(&msg("dn:dc=example,dc=com", ADMIN, &pw)),
        &tls_client(),
        None,
    )
    .unwrap();
    assert_eq!(id.authz_id(), "dn:dc=example,dc=com");
    let id = sasl_bind(&fx, "PLAIN", Some(&msg("dn:", ADMIN, &pw)), &tls_client(), None).unwrap();
    assert_eq!(id, Identity::Anonymous);

    let (code, _) = sasl_bind(&fx, "PLAIN", Some(&msg("", ADMIN, "wrong")), &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::INVALID_CREDENTIALS);
    let (code, _) = sasl_bind(
        &fx,
        "PLAIN",
        Some(&msg("", "cn=nobody,dc=example,dc=com", &pw)),
        &tls_client(),
        None,
    )
    .unwrap_err();
    assert_eq!(code, ResultCode::INVALID_CREDENTIALS);
    let (code, _) = sasl_bind(&fx, "PLAIN", Some(&msg("", "u:admin", &pw)), &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::INVALID_CREDENTIALS);
    let (code, _) =
        sasl_bind(&fx, "PLAIN", Some(&msg("", "not a dn", &pw)), &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::INVALID_CREDENTIALS);
    for bad in [&b"no nuls"[..], b"\0\0pw", b"\0cn=a\0", b"a\0b\0c\0d"] {
        let (code, why) = sasl_bind(&fx, "PLAIN", Some(bad), &tls_client(), None).unwrap_err();
        assert_eq!(code, ResultCode::OTHER, "{bad:?}");
        assert!(why.starts_with("SASL PLAIN: "), "{why}");
    }
    let (code, _) = sasl_bind(&fx, "PLAIN", None, &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::OTHER);

    // The confidentiality policy comes first: a remote plain connection, even with the
    // right password.
    let remote = Client {
        addr: Some("192.0.2.1:4000".parse().unwrap()),
        tls: false,
    };
    let (code, why) = sasl_bind(&fx, "PLAIN", Some(&msg("", ADMIN, &pw)), &remote, None).unwrap_err();
    assert_eq!(code, ResultCode::CONFIDENTIALITY_REQUIRED);
    assert!(why.contains("StartTLS"), "{why}");
    let local = Client {
        addr: Some("127.0.0.1:4000".parse().unwrap()),
        tls: false,
    };
    assert!(sasl_bind(&fx, "PLAIN", Some(&msg("", ADMIN, &pw)), &local, None).is_ok());

    let (code, why) = sasl_bind(&fx, "GSSAPI", None, &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::AUTH_METHOD_NOT_SUPPORTED);
    assert!(why.contains("EXTERNAL, PLAIN"), "{why}");
}

#[test]
fn mechanisms_can_be_turned_off_and_the_root_dse_lists_the_usable_ones() {
    let values = |dir: &Directory, name: &str| -> Vec<String> {
        let ty = dir.schema.attribute_type(name).unwrap().id;
        root_dse(dir)
            .stored()
            .attribute(ty)
            .flat_map(|a| {
                a.values
                    .iter()
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let fx = directory(|c| {
        c.sasl.mechanisms = SaslMechanisms {
            external: false,
            plain: true,
        }
    });
    let (code, msg) = sasl_bind(&fx, "EXTERNAL", None, &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::AUTH_METHOD_NOT_SUPPORTED);
    assert!(msg.contains("offers PLAIN"), "{msg}");
    assert_eq!(values(&fx.dir, "supportedSASLMechanisms"), ["PLAIN"]);
    assert!(!values(&fx.dir, "supportedExtension").contains(&START_TLS.to_string()));

    // TLS required everywhere but not configured: PLAIN could never work.
    let fx = directory(|c| c.security.require_tls = RequireTls::Always);
    assert!(values(&fx.dir, "supportedSASLMechanisms").is_empty());

    // With TLS and client certificates: both, and StartTLS.
    let t = Temp::new("dse");
    let ca = ca("Test CA");
    let l = leaf(&ca, LeafSpec::default());
    let (cert, key, ca_file) = (
        t.write("c.pem", &l.pem),
        t.write("k.pem", &l.key_pem),
        t.write("ca.pem", &ca.pem),
    );
    let fx = directory(|c| {
        let mut s = settings(cert.clone(), key.clone());
        s.client_ca = Some(ca_file.clone());
        s.client_certificates = ClientCertificates::Request;
        c.tls = Some(s);
    });
    assert_eq!(values(&fx.dir, "supportedSASLMechanisms"), ["EXTERNAL", "PLAIN"]);
    assert!(values(&fx.dir, "supportedExtension").contains(&START_TLS.to_string()));
    let fx = directory(|c| {
        c.sasl.mechanisms = SaslMechanisms {
            external: false,
            plain: false,
        };
        c.tls = Some(settings(cert.clone(), key.clone()));
    });
    assert!(values(&fx.dir, "supportedSASLMechanisms").is_empty());
    let (code, msg) = sasl_bind(&fx, "PLAIN", None, &tls_client(), None).unwrap_err();
    assert_eq!(code, ResultCode::AUTH_METHOD_NOT_SUPPORTED);
    assert!(msg.contains("none is enabled"), "{msg}");
}

// ---------------------------------------------------------------------------------------
// A running server.

struct Server {
    bound: Vec<Bound>,
    password: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _temp: Temp,
}

impl Server {
    fn start(temp: Temp, tweak: impl FnOnce(&mut ServerConfig)) -> Server {
        let mut config = ServerConfig::default();
        test_store(&mut config, temp.0.join("data"));
        // Port 0: the system picks; `run` reports the ports.
        config.server.listen = vec![
            ListenUrl {
                tls: false,
                host: "127.0.0.1".into(),
                port: 0,
            },
            ListenUrl {
                tls: true,
                host: "127.0.0.1".into(),
                port: 0,
            },
        ];
        tweak(&mut config);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let (dir, startup) = Directory::open(config).unwrap();
            let dir = Arc::new(dir);
            let password = startup.generated_admin_password.unwrap();
            let shutdown = async {
                let _ = stop_rx.await;
            };
            runtime
                .block_on(larch_server::net::run(dir.clone(), shutdown, |b| {
                    ready_tx.send((b.to_vec(), password)).unwrap();
                }))
                .unwrap();
            runtime.shutdown_timeout(Duration::from_secs(2));
            dir.store.close(false).unwrap();
        });
        let (bound, password) = ready_rx.recv_timeout(Duration::from_secs(60)).unwrap();
        Server {
            bound,
            password,
            stop: Some(stop_tx),
            thread: Some(thread),
            _temp: temp,
        }
    }

    fn addr(&self, tls: bool) -> SocketAddr {
        self.bound.iter().find(|b| b.tls == tls).unwrap().addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// A blocking LDAP client, plain or TLS.
struct Conn {
    plain: Option<TcpStream>,
    tls: Option<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>,
    buf: Vec<u8>,
}

/// One response, owned.
#[derive(Debug)]
struct Answer {
    id: MessageId,
    code: ResultCode,
    diag: String,
    name: Option<String>,
    value: Option<Vec<u8>>,
}

/// The certificates of `ca_pem` as a client's trust anchors.
fn roots(ca_pem: &str) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    roots
}

fn client_config(ca_pem: &str, client: Option<&Leaf>) -> Arc<rustls::ClientConfig> {
    let roots = roots(ca_pem);
    let b =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
    Arc::new(match client {
        Some(l) => b
            .with_client_auth_cert(vec![l.der.clone()], l.key_der.clone_key())
            .unwrap(),
        None => b.with_no_client_auth(),
    })
}

use rustls_pki_types::pem::PemObject;

impl Conn {
    fn plain(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn {
            plain: Some(s),
            tls: None,
            buf: Vec::new(),
        }
    }

    fn ldaps(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> Conn {
        let mut c = Conn::plain(addr);
        c.handshake(config);
        c
    }

    fn handshake(&mut self, config: Arc<rustls::ClientConfig>) {
        let tcp = self.plain.take().unwrap();
        let conn = rustls::ClientConnection::new(config, ServerName::try_from("127.0.0.1").unwrap()).unwrap();
        let mut s = rustls::StreamOwned::new(conn, tcp);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).unwrap();
        }
        self.tls = Some(s);
    }

    fn io(&mut self) -> &mut dyn Stream {
        match (&mut self.plain, &mut self.tls) {
            (Some(p), _) => p,
            (None, Some(t)) => t,
            _ => unreachable!(),
        }
    }

    fn send(&mut self, id: MessageId, op: ProtocolOp<'_>) {
        let bytes = encode(id, op);
        self.io().write_all(&bytes).unwrap();
        self.io().flush().unwrap();
    }

    /// The next response, or `None` when the server closed the connection.
    fn recv(&mut self) -> Option<Answer> {
        loop {
            if let Ok(Frame::Complete(n)) = frame(&self.buf, 1 << 20) {
                let pdu: Vec<u8> = self.buf.drain(..n).collect();
                let m = LdapMessage::decode(&pdu).unwrap();
                let (result, name, value) = match m.op {
                    ProtocolOp::BindResponse(r) => (r.result, None, None),
                    ProtocolOp::ExtendedResponse(r) => (r.result, r.name, r.value),
                    ProtocolOp::DelResponse(r) => (r, None, None),
                    other => panic!("unexpected {}", other.name()),
                };
                return Some(Answer {
                    id: m.message_id,
                    code: result.code,
                    diag: String::from_utf8_lossy(result.diagnostic_message).into_owned(),
                    name: name.map(|n| String::from_utf8_lossy(n).into_owned()),
                    value: value.map(<[u8]>::to_vec),
                });
            }
            let mut chunk = [0u8; 4096];
            match self.io().read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn request(&mut self, id: MessageId, op: ProtocolOp<'_>) -> Answer {
        self.send(id, op);
        let a = self.recv().expect("an answer");
        assert_eq!(a.id, id);
        a
    }

    fn start_tls(&mut self, id: MessageId, config: Arc<rustls::ClientConfig>) {
        let a = self.request(id, extended(START_TLS, None));
        assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);
        assert_eq!(
            a.name.as_deref(),
            Some(START_TLS),
            "RFC 4511 4.14.2: the responseName is the OID"
        );
        self.handshake(config);
    }

    fn whoami(&mut self, id: MessageId) -> String {
        let a = self.request(id, extended(WHO_AM_I, None));
        assert_eq!(a.code, ResultCode::SUCCESS);
        String::from_utf8(a.value.unwrap_or_default()).unwrap()
    }
}

fn encode(id: MessageId, op: ProtocolOp<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    LdapMessage {
        message_id: id,
        op,
        controls: None,
    }
    .encode(&mut out);
    out
}

fn extended<'a>(oid: &'a str, value: Option<&'a [u8]>) -> ProtocolOp<'a> {
    ProtocolOp::ExtendedRequest(ExtendedRequest {
        name: oid.as_bytes(),
        value,
    })
}

fn simple_bind<'a>(dn: &'a str, pw: &'a str) -> ProtocolOp<'a> {
    ProtocolOp::BindRequest(BindRequest {
        version: 3,
        name: dn.as_bytes(),
        authentication: Authentication::Simple(pw.as_bytes()),
    })
}

fn sasl_request<'a>(mechanism: &'a str, credentials: Option<&'a [u8]>) -> ProtocolOp<'a> {
    ProtocolOp::BindRequest(BindRequest {
        version: 3,
        name: b"",
        authentication: Authentication::Sasl {
            mechanism: mechanism.as_bytes(),
            credentials,
        },
    })
}

fn delete(dn: &str) -> ProtocolOp<'_> {
    ProtocolOp::DelRequest(DelRequest { dn: dn.as_bytes() })
}

/// A server with TLS, client certificates requested, `require_tls = "always"`, and the
/// EXTERNAL template `cn={CN},dc=example,dc=com`; its CA.
fn tls_server() -> (Server, Ca) {
    let temp = Temp::new("server");
    let ca = ca("Test CA");
    let l = leaf(&ca, LeafSpec::default());
    let cert = temp.write("c.pem", &l.pem);
    let key = temp.write("k.pem", &l.key_pem);
    let ca_file = temp.write("ca.pem", &ca.pem);
    let server = Server::start(temp, |c| {
        c.tls = Some(TlsSettings {
            certificate: cert,
            key,
            client_ca: Some(ca_file),
            client_certificates: ClientCertificates::Request,
        });
        c.security.require_tls = RequireTls::Always;
        c.sasl.external_map = ExternalMap::parse("cn={CN},dc=example,dc=com").unwrap();
    });
    (server, ca)
}

#[test]
fn starttls_and_the_confidentiality_policy() {
    let (server, ca) = tls_server();
    let config = client_config(&ca.pem, None);
    let mut c = Conn::plain(server.addr(false));

    // Plain: no password, no write, no EXTERNAL.
    let a = c.request(1, simple_bind(ADMIN, &server.password));
    assert_eq!(a.code, ResultCode::CONFIDENTIALITY_REQUIRED, "{}", a.diag);
    assert!(
        a.diag.contains("StartTLS") && a.diag.contains("ldaps://"),
        "{}",
        a.diag
    );
    let a = c.request(2, delete("cn=nosuch,dc=example,dc=com"));
    assert_eq!(a.code, ResultCode::CONFIDENTIALITY_REQUIRED, "{}", a.diag);
    assert!(a.diag.starts_with("a Delete needs"), "{}", a.diag);
    let cred = format!("\0{ADMIN}\0{}", server.password);
    let a = c.request(3, sasl_request("PLAIN", Some(cred.as_bytes())));
    assert_eq!(a.code, ResultCode::CONFIDENTIALITY_REQUIRED, "{}", a.diag);
    let a = c.request(4, sasl_request("EXTERNAL", None));
    assert_eq!(a.code, ResultCode::INAPPROPRIATE_AUTHENTICATION, "{}", a.diag);
    // Anonymous binds and reads go on.
    assert_eq!(c.request(5, simple_bind("", "")).code, ResultCode::SUCCESS);
    // StartTLS with a value is malformed; the connection stays plain and usable.
    let a = c.request(6, extended(START_TLS, Some(b"x")));
    assert_eq!(a.code, ResultCode::PROTOCOL_ERROR, "{}", a.diag);

    c.start_tls(7, config.clone());
    let a = c.request(8, simple_bind(ADMIN, &server.password));
    assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);
    assert_eq!(c.whoami(9), format!("dn:{ADMIN}"));
    // A write passes the policy (and finds no entry).
    let a = c.request(10, delete("cn=nosuch,dc=example,dc=com"));
    assert_eq!(a.code, ResultCode::NO_SUCH_OBJECT, "{}", a.diag);
    // TLS twice.
    let a = c.request(11, extended(START_TLS, None));
    assert_eq!(a.code, ResultCode::OPERATIONS_ERROR, "{}", a.diag);
    assert!(a.diag.contains("already"), "{}", a.diag);
    assert_eq!(c.whoami(12), format!("dn:{ADMIN}"), "the refusal changes nothing");
    // SASL PLAIN over TLS.
    let a = c.request(13, sasl_request("PLAIN", Some(cred.as_bytes())));
    assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);

    // StartTLS after a bind makes the connection anonymous, as slapd does.
    let mut c = Conn::plain(server.addr(false));
    let mut never = server.password.clone();
    never.push('x');
    let a = c.request(1, simple_bind(ADMIN, &never));
    assert_eq!(a.code, ResultCode::CONFIDENTIALITY_REQUIRED);
    c.start_tls(2, config.clone());
    assert_eq!(c.whoami(3), "");

    // A request sent behind StartTLS without waiting: the connection closes after the
    // StartTLS response.
    let mut c = Conn::plain(server.addr(false));
    let mut both = encode(1, extended(START_TLS, None));
    both.extend_from_slice(&encode(2, extended(WHO_AM_I, None)));
    c.io().write_all(&both).unwrap();
    let a = c.recv().unwrap();
    assert_eq!((a.id, a.code), (1, ResultCode::SUCCESS));
    assert!(c.recv().is_none(), "no answer to the request sent too early");

    // A client that sends garbage instead of a handshake is closed.
    let mut c = Conn::plain(server.addr(false));
    c.start_tls_raw_then_garbage();
}

impl Conn {
    fn start_tls_raw_then_garbage(&mut self) {
        let a = self.request(1, extended(START_TLS, None));
        assert_eq!(a.code, ResultCode::SUCCESS);
        self.io().write_all(&encode(2, extended(WHO_AM_I, None))).unwrap();
        let mut rest = Vec::new();
        // The server answers with a TLS alert at most, then closes; never an LDAP message.
        let _ = self.io().read_to_end(&mut rest);
        assert!(rest.first().is_none_or(|&b| b != 0x30), "{rest:?}");
    }
}

#[test]
fn ldaps_and_sasl_external_with_client_certificates() {
    let (server, ca) = tls_server();
    let admin_cert = client_leaf(&ca, "admin");
    let mut c = Conn::ldaps(server.addr(true), client_config(&ca.pem, Some(&admin_cert)));
    assert_eq!(c.whoami(1), "");
    let a = c.request(2, sasl_request("EXTERNAL", None));
    assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);
    assert_eq!(c.whoami(3), format!("dn:{ADMIN}"));
    // TLS from the first byte: StartTLS is refused.
    let a = c.request(4, extended(START_TLS, None));
    assert_eq!(a.code, ResultCode::OPERATIONS_ERROR);
    // The connection is protected: a password bind passes the policy.
    let a = c.request(5, simple_bind(ADMIN, &server.password));
    assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);

    let nobody = client_leaf(&ca, "nobody");
    let mut c = Conn::ldaps(server.addr(true), client_config(&ca.pem, Some(&nobody)));
    let a = c.request(1, sasl_request("EXTERNAL", None));
    assert_eq!(a.code, ResultCode::INVALID_CREDENTIALS, "{}", a.diag);
    assert_eq!(c.whoami(2), "", "a failed bind leaves the connection anonymous");

    // Client certificates are requested, not required.
    let mut c = Conn::ldaps(server.addr(true), client_config(&ca.pem, None));
    let a = c.request(1, sasl_request("EXTERNAL", None));
    assert_eq!(a.code, ResultCode::INAPPROPRIATE_AUTHENTICATION, "{}", a.diag);

    // EXTERNAL after StartTLS with a certificate.
    let mut c = Conn::plain(server.addr(false));
    c.start_tls(1, client_config(&ca.pem, Some(&admin_cert)));
    let a = c.request(2, sasl_request("EXTERNAL", None));
    assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);
    assert_eq!(c.whoami(3), format!("dn:{ADMIN}"));

    // A certificate from another CA fails the handshake.
    let stranger = client_leaf(&self::ca("Other CA"), "admin");
    let tcp = TcpStream::connect(server.addr(true)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let conn = rustls::ClientConnection::new(
        client_config(&ca.pem, Some(&stranger)),
        ServerName::try_from("127.0.0.1").unwrap(),
    )
    .unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    let refused = (|| -> std::io::Result<()> {
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock)?;
        }
        // TLS 1.3: the client may finish before the server refuses its certificate; the
        // refusal arrives with the first read.
        s.write_all(&encode(1, extended(WHO_AM_I, None)))?;
        let mut b = [0u8; 64];
        match s.read(&mut b)? {
            0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ => Ok(()),
        }
    })();
    assert!(
        refused.is_err(),
        "a certificate of an unknown CA must not be accepted"
    );
}

#[test]
fn remote_policy_exempts_loopback_connections() {
    // The default policy ("remote"): the test client connects over the loopback interface,
    // so a password bind on a plain connection is allowed.
    let temp = Temp::new("remote");
    let server = Server::start(temp, |c| {
        c.server.listen.truncate(1);
    });
    let mut c = Conn::plain(server.addr(false));
    let a = c.request(1, simple_bind(ADMIN, &server.password));
    assert_eq!(a.code, ResultCode::SUCCESS, "{}", a.diag);
    // Without [tls], StartTLS is unavailable.
    let a = c.request(2, extended(START_TLS, None));
    assert_eq!(a.code, ResultCode::UNAVAILABLE, "{}", a.diag);
}

#[test]
fn the_server_picks_a_sha256_suite_over_the_clients_first_choice() {
    // rustls (like OpenSSL) lists TLS13_AES_256_GCM_SHA384 first; the server's order puts the
    // SHA-256 suites first (see server_cipher_suites). TLS 1.2 the same way.
    let (server, ca) = tls_server();
    for (versions, expected) in [
        (
            &rustls::version::TLS13,
            rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
        ),
        (
            &rustls::version::TLS12,
            rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
    ] {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        assert_ne!(
            provider.cipher_suites[0].suite(),
            expected,
            "the client prefers another suite"
        );
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[versions])
            .unwrap()
            .with_root_certificates(roots(&ca.pem))
            .with_no_client_auth();
        let mut c = Conn::ldaps(server.addr(true), Arc::new(config));
        let suite = c.tls.as_ref().unwrap().conn.negotiated_cipher_suite().unwrap();
        assert_eq!(suite.suite(), expected);
        assert_eq!(c.whoami(1), "");
    }
    // A client offering only a SHA-384 suite still connects with it.
    let only = rustls::crypto::CryptoProvider {
        cipher_suites: vec![rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_256_GCM_SHA384],
        ..rustls::crypto::aws_lc_rs::default_provider()
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(only))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(&ca.pem))
        .with_no_client_auth();
    let c = Conn::ldaps(server.addr(true), Arc::new(config));
    let suite = c.tls.as_ref().unwrap().conn.negotiated_cipher_suite().unwrap();
    assert_eq!(suite.suite(), rustls::CipherSuite::TLS13_AES_256_GCM_SHA384);
}

#[test]
fn sessions_resume() {
    let (server, ca) = tls_server();
    let config = client_config(&ca.pem, None);
    let mut first = Conn::ldaps(server.addr(true), config.clone());
    assert_eq!(first.whoami(1), "");
    let resumed = Conn::ldaps(server.addr(true), config);
    let kind = resumed.tls.as_ref().unwrap().conn.handshake_kind();
    assert_eq!(
        kind,
        Some(rustls::HandshakeKind::Resumed),
        "the second connection resumes"
    );
}

#[test]
fn a_path_that_is_not_a_certificate_stops_the_directory_from_opening() {
    let temp = Temp::new("open");
    let mut config = ServerConfig::default();
    config.server.data_dir = temp.0.join("data");
    config.tls = Some(settings(temp.0.join("nope.pem"), temp.0.join("nope.key")));
    let e = Directory::open(config).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the certificate file does not exist",
            temp.0.join("nope.pem").display()
        )
    );
    assert!(
        !temp.0.join("data").exists(),
        "the certificate is checked before the store opens"
    );
}

#[test]
fn the_policy_applies_per_connection_kind() {
    use larch_server::auth::confidentiality::applies;
    let p = |a: &str, tls| Client {
        addr: Some(a.parse().unwrap()),
        tls,
    };
    assert!(applies(RequireTls::Remote, &p("10.0.0.1:1", false)));
    assert!(!applies(RequireTls::Remote, &p("10.0.0.1:1", true)));
    assert!(!applies(RequireTls::Remote, &p("[::1]:1", false)));
    assert!(!applies(RequireTls::Never, &p("10.0.0.1:1", false)));
    assert!(applies(RequireTls::Always, &p("127.0.0.1:1", false)));
    assert!(!applies(RequireTls::Always, &Client::default()));
}
