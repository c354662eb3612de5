//! `larch serve --demo-tls`: TLS without an operator-made certificate, for trying the server
//! out and for tests.
//!
//! [`apply`], in steps:
//! 1. refuse a configuration that has a `[tls]` table already (one or the other);
//! 2. in `<data_dir>/demo-tls/`, reuse `ca.pem`, `server.pem` and `server.key` when all
//!    three exist; otherwise make them: a self-signed CA ("Larch demo CA", valid
//!    [`DEMO_VALIDITY_DAYS`] days, its private key never written, so nothing else can be
//!    signed with it) and a server certificate it signs for `localhost`, `127.0.0.1`,
//!    `::1` and the machine's host name (OpenLDAP's client library checks a connection to
//!    `localhost` against the host name); the key file is created readable by its owner
//!    only;
//! 3. set `[tls]` to those files (StartTLS on every `ldap://` listener), and add
//!    `ldaps://127.0.0.1:3636` unless an `ldaps://` listener is configured.
//!
//! Clients trust the server by the CA file: `LDAPTLS_CACERT=<data_dir>/demo-tls/ca.pem`.

use std::io::Write;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose,
};

use super::TlsError;
use crate::config::{ClientCertificates, ListenUrl, ServerConfig, TlsSettings};

/// Days the demo certificates are valid.
pub const DEMO_VALIDITY_DAYS: i64 = 3650;

/// The listener added when none is `ldaps://`.
pub const DEMO_LDAPS_URL: &str = "ldaps://127.0.0.1:3636";

/// The directory under the data directory.
pub const DEMO_DIR: &str = "demo-tls";

/// The demo files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoFiles {
    /// The CA certificate clients trust.
    pub ca: PathBuf,
    /// The server's certificate.
    pub certificate: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
    /// True when they were made now, false when they existed.
    pub created: bool,
}

/// Makes or reuses the demo files and turns TLS on in `config` (see the module steps).
pub fn apply(config: &mut ServerConfig) -> Result<DemoFiles, TlsError> {
    if config.tls.is_some() {
        return Err(TlsError::Demo(
            "the configuration has a [tls] table already; use it or --demo-tls, not both".into(),
        ));
    }
    let dir = config.server.data_dir.join(DEMO_DIR);
    let mut files = ensure(&dir)?;
    // Absolute paths: they are printed for clients to use from anywhere.
    if let Ok(abs) = dir.canonicalize() {
        files.ca = abs.join("ca.pem");
        files.certificate = abs.join("server.pem");
        files.key = abs.join("server.key");
    }
    config.tls = Some(TlsSettings {
        certificate: files.certificate.clone(),
        key: files.key.clone(),
        client_ca: None,
        client_certificates: ClientCertificates::None,
    });
    if !config.server.listen.iter().any(|u| u.tls) {
        let url = ListenUrl::parse(DEMO_LDAPS_URL).map_err(TlsError::Demo)?;
        config.server.listen.push(url);
    }
    Ok(files)
}

/// Makes the files in `dir` unless all three exist.
pub fn ensure(dir: &Path) -> Result<DemoFiles, TlsError> {
    let mut files = DemoFiles {
        ca: dir.join("ca.pem"),
        certificate: dir.join("server.pem"),
        key: dir.join("server.key"),
        created: false,
    };
    if files.ca.is_file() && files.certificate.is_file() && files.key.is_file() {
        return Ok(files);
    }
    let fail = |what: &str, e: &dyn std::fmt::Display| TlsError::Demo(format!("{what}: {e}"));
    std::fs::create_dir_all(dir).map_err(|e| fail(&dir.display().to_string(), &e))?;
    let now = time::OffsetDateTime::now_utc();
    let (not_before, not_after) = (
        now - time::Duration::hours(1),
        now + time::Duration::days(DEMO_VALIDITY_DAYS),
    );

    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Larch");
    dn.push(DnType::CommonName, "Larch demo CA");
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.not_before = not_before;
    ca.not_after = not_after;
    let ca_key = KeyPair::generate().map_err(|e| fail("CA key", &e))?;
    let ca_cert = ca.self_signed(&ca_key).map_err(|e| fail("CA certificate", &e))?;
    let issuer = Issuer::new(ca, ca_key);

    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if let Some(host) = host_name() {
        names.push(host);
    }
    let mut server = CertificateParams::new(names).map_err(|e| fail("server certificate", &e))?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Larch");
    dn.push(DnType::CommonName, "localhost");
    server.distinguished_name = dn;
    server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    server.not_before = not_before;
    server.not_after = not_after;
    let server_key = KeyPair::generate().map_err(|e| fail("server key", &e))?;
    let server_cert = server
        .signed_by(&server_key, &issuer)
        .map_err(|e| fail("server certificate", &e))?;

    write_file(&files.key, server_key.serialize_pem().as_bytes(), 0o600)?;
    write_file(&files.certificate, server_cert.pem().as_bytes(), 0o644)?;
    write_file(&files.ca, ca_cert.pem().as_bytes(), 0o644)?;
    files.created = true;
    Ok(files)
}

/// The machine's host name, when it is a DNS name other than `localhost`.
fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    (name != "localhost" && name.len() <= 253 && name.split('.').all(label_ok)).then_some(name)
}

/// Writes `bytes` to `path` through a temporary name (created with `mode`), then renames.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| TlsError::Demo(format!("{}: {e}", path.display()));
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(fail)?;
    f.write_all(bytes).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}
