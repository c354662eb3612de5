//! The load client over TLS against the in-process fake server (tokio-rustls, certificates
//! made here with rcgen): ldaps:// and StartTLS, per-operation auth and long-lived
//! pipelined connections, handshake counts checked against the server's own, and the
//! set-up errors (unknown CA, wrong name, refused StartTLS, missing client certificate).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use larch_bench::fake::{FakeCounts, FakeServer, FakeTls};
use larch_bench::report::{HandshakeCounts, OpKind};
use larch_bench::template::{FilterTemplate, ValueFile};
use larch_bench::url::LdapUrl;
use larch_bench::{run, AuthConnection, BenchConfig, BenchError, TlsVersion, Transport, Workload};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Operations of every per-operation run: open loop at `RATE` for `WINDOW` sends exactly
/// this many, however fast the machine is.
const OPS: u64 = 40;
const RATE: f64 = 100.0;
const WINDOW: Duration = Duration::from_millis(400);

/// A CA, a server certificate it signed (for `localhost` and `127.0.0.1`), a client
/// certificate it signed, and a second CA that signed nothing of this server; PEM files in
/// a directory of their own.
struct Pki {
    dir: PathBuf,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: PrivatePkcs8KeyDer<'static>,
    ca_der: CertificateDer<'static>,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("larch-bench-tls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = make_ca("Larch test CA");
        let stranger = make_ca("Some other CA");
        let (server_cert, server_key) = leaf(&ca, &["localhost", "127.0.0.1"], "larch test server");
        let (client_cert, client_key) = leaf(&ca, &[], "larch bench client");
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.join("stranger.pem"), stranger.pem()).unwrap();
        std::fs::write(dir.join("client.pem"), client_cert.pem()).unwrap();
        std::fs::write(dir.join("client.key"), client_key.serialize_pem()).unwrap();
        Pki {
            dir,
            server_chain: vec![server_cert.der().clone()],
            server_key: PrivatePkcs8KeyDer::from(server_key.serialize_der()),
            ca_der: ca.der().clone(),
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn server_config(&self, client_auth: bool) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(rustls::DEFAULT_VERSIONS)
            .unwrap();
        let builder = if client_auth {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(self.ca_der.clone()).unwrap();
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let config = builder
            .with_single_cert(
                self.server_chain.clone(),
                PrivateKeyDer::Pkcs8(self.server_key.clone_key()),
            )
            .unwrap();
        Arc::new(config)
    }

    fn server(&self, ldaps: bool) -> FakeServer {
        FakeServer::start_tls(FakeTls {
            config: self.server_config(false),
            ldaps,
        })
        .unwrap()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn make_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(ca: &CertifiedIssuer<'static, KeyPair>, names: &[&str], cn: &str) -> (rcgen::Certificate, KeyPair) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, ca).unwrap();
    (cert, key)
}

fn get(c: &std::sync::atomic::AtomicU64) -> u64 {
    FakeCounts::get(c)
}

/// Per-operation auth (connect, [StartTLS,] handshake, search, bind, unbind, close), one
/// connection at a time, `OPS` operations, all measured.
fn auth_new(url: &str, ca: &Path, starttls: bool) -> BenchConfig {
    let mut c = BenchConfig::new(LdapUrl::parse(url).unwrap(), Workload::Auth);
    c.auth_connection = AuthConnection::New;
    c.connections = 1;
    c.threads = 1;
    c.warmup = Duration::ZERO;
    c.duration = WINDOW;
    c.rate = Some(RATE);
    c.auth_values = Some(Arc::new(ValueFile::from_values(&["user.1", "user.2"]).unwrap()));
    c.tls.starttls = starttls;
    c.tls.ca_file = Some(ca.to_path_buf());
    c
}

fn counts(full: u64, resumed: u64) -> HandshakeCounts {
    HandshakeCounts {
        full,
        resumed,
        full_hello_retry: 0,
    }
}

/// Checks a per-operation auth run: every operation succeeded, and the handshakes the
/// client counted (the probe's, then one per operation) match what the server saw.
fn check_auth_run(pki: &Pki, ldaps: bool, resumption: bool, version: Option<TlsVersion>) {
    let server = pki.server(ldaps);
    let url = if ldaps {
        server.url()
    } else {
        format!("ldap://{}", server.addr())
    };
    let mut cfg = auth_new(&url, &pki.file("ca.pem"), !ldaps);
    cfg.tls.resumption = resumption;
    cfg.tls.version = version;
    let r = run(&cfg).unwrap();
    let text = r.to_text();
    assert_eq!(r.ops, OPS, "{text}");
    assert_eq!((r.ok, r.errors), (OPS, 0), "{text}");
    assert_eq!(r.kinds[0].kind, OpKind::Auth);
    assert!((r.kinds[0].entries_per_op - 1.0).abs() < 1e-9, "{text}");
    assert_eq!(
        r.transport,
        if ldaps {
            Transport::Ldaps
        } else {
            Transport::StartTls
        }
    );
    let tls = r.tls.as_ref().expect("a TLS report");
    assert!(tls.session.verified);
    assert_eq!(tls.session.server_name, "127.0.0.1");
    assert_eq!(tls.session.resumption, resumption);
    let want_version = match version {
        Some(TlsVersion::Tls12) => "TLS 1.2",
        _ => "TLS 1.3",
    };
    assert_eq!(tls.session.version, want_version, "{text}");
    assert!(tls.session.cipher_suite.starts_with("TLS"), "{text}");
    // The probe is the first connection: a full handshake, outside the window. Its session
    // (TLS 1.3 tickets, read before the root DSE answer) makes every operation's resumable.
    assert_eq!(tls.other_handshakes, counts(1, 0), "{text}");
    let want = if resumption {
        counts(0, OPS)
    } else {
        counts(OPS, 0)
    };
    assert_eq!(tls.handshakes, want, "{text}");
    // The server's view of the same handshakes and requests.
    let c = server.counts();
    assert_eq!(get(&c.tls_full), 1 + want.full, "{text}");
    assert_eq!(get(&c.tls_resumed), want.resumed, "{text}");
    assert_eq!(get(&c.tls_failed), 0);
    assert_eq!(get(&c.connections), OPS + 1);
    assert_eq!(get(&c.binds), OPS);
    assert_eq!(
        get(&c.searches),
        OPS + 1,
        "the probe's root DSE search and one per operation"
    );
    assert_eq!(get(&c.starttls), if ldaps { 0 } else { OPS + 1 });
    assert_eq!(get(&c.unbinds), OPS + 1);
    assert!(
        text.contains("server certificate verified for 127.0.0.1"),
        "{text}"
    );
    assert!(
        r.to_line().contains(&format!(" tls_resumed={} ", want.resumed)),
        "{}",
        r.to_line()
    );
}

#[test]
fn ldaps_per_operation_auth_resumes_sessions() {
    check_auth_run(&Pki::new("ldaps"), true, true, None);
}

#[test]
fn starttls_per_operation_auth_resumes_sessions() {
    check_auth_run(&Pki::new("starttls"), false, true, None);
}

#[test]
fn without_resumption_every_handshake_is_full() {
    let pki = Pki::new("full");
    check_auth_run(&pki, true, false, None);
    check_auth_run(&pki, false, false, None);
}

#[test]
fn tls_1_2_pinned_resumes_by_session_id() {
    let pki = Pki::new("tls12");
    check_auth_run(&pki, true, true, Some(TlsVersion::Tls12));
    check_auth_run(&pki, true, false, Some(TlsVersion::Tls12));
}

#[test]
fn a_ca_that_did_not_sign_the_certificate_is_a_setup_error() {
    let pki = Pki::new("stranger");
    for ldaps in [true, false] {
        let server = pki.server(ldaps);
        let url = format!("{}://{}", if ldaps { "ldaps" } else { "ldap" }, server.addr());
        let cfg = auth_new(&url, &pki.file("stranger.pem"), !ldaps);
        let e = run(&cfg).unwrap_err();
        assert!(matches!(e, BenchError::Setup(_)), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("TLS handshake with") && msg.contains("UnknownIssuer"),
            "{msg}"
        );
        let c = server.counts();
        assert_eq!(get(&c.searches), 0, "nothing ran");
        assert_eq!(get(&c.tls_full) + get(&c.tls_resumed), 0);
    }
}

#[test]
fn the_name_verified_is_the_host_or_the_override() {
    let pki = Pki::new("names");
    let server = pki.server(true);
    // The certificate names localhost and 127.0.0.1, not ldap.example.com.
    let mut cfg = auth_new(&server.url(), &pki.file("ca.pem"), false);
    cfg.tls.server_name = Some("ldap.example.com".into());
    let e = run(&cfg).unwrap_err();
    assert!(
        e.to_string().contains("not valid for name \"ldap.example.com\""),
        "{e}"
    );
    cfg.tls.server_name = Some("localhost".into());
    let r = run(&cfg).unwrap();
    assert_eq!((r.ok, r.errors), (OPS, 0), "{}", r.to_text());
    assert_eq!(r.tls.unwrap().session.server_name, "localhost");
    // An insecure run accepts the wrong name, and says so.
    cfg.tls.server_name = Some("ldap.example.com".into());
    cfg.tls.ca_file = None;
    cfg.tls.insecure = true;
    let r = run(&cfg).unwrap();
    assert_eq!((r.ok, r.errors), (OPS, 0), "{}", r.to_text());
    assert!(!r.tls.as_ref().unwrap().session.verified);
    assert!(
        r.to_text().contains("NOT VERIFIED (--tls-insecure)"),
        "{}",
        r.to_text()
    );
}

#[test]
fn a_refused_starttls_names_the_result_code_and_the_diagnostic() {
    // A server without TLS answers StartTLS `unavailable`.
    let server = FakeServer::start().unwrap();
    let mut cfg = auth_new(&server.url(), Path::new("unused.pem"), true);
    cfg.tls.ca_file = None;
    cfg.tls.insecure = true;
    let e = run(&cfg).unwrap_err();
    assert!(matches!(e, BenchError::Setup(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("StartTLS refused by ldap://127.0.0.1:")
            && msg.contains("unavailable(52): TLS is not configured"),
        "{msg}"
    );
    assert_eq!(get(&server.counts().starttls), 1);
}

#[test]
fn client_certificates_are_presented_when_given() {
    let pki = Pki::new("client-auth");
    let server = FakeServer::start_tls(FakeTls {
        config: pki.server_config(true),
        ldaps: true,
    })
    .unwrap();
    let mut cfg = auth_new(&server.url(), &pki.file("ca.pem"), false);
    // Without a certificate the server refuses the handshake; TLS 1.3 clients learn it
    // from the alert on their first read, which is the probe's search.
    let e = run(&cfg).unwrap_err();
    assert!(matches!(e, BenchError::Setup(_)), "{e}");
    assert!(e.to_string().contains("CertificateRequired"), "{e}");
    cfg.tls.cert = Some(pki.file("client.pem"));
    cfg.tls.key = Some(pki.file("client.key"));
    let r = run(&cfg).unwrap();
    assert_eq!((r.ok, r.errors), (OPS, 0), "{}", r.to_text());
    assert!(r.tls.as_ref().unwrap().session.client_certificate);
    assert!(r.to_text().contains("client certificate sent"), "{}", r.to_text());
}

/// Long-lived pipelined connections over TLS: set-up bind, many requests in flight, exact
/// counts (open loop), one handshake per connection plus the probe's.
#[test]
fn pipelined_connections_over_ldaps_and_starttls() {
    let pki = Pki::new("pipelined");
    for ldaps in [true, false] {
        let server = pki.server(ldaps);
        let url = format!("{}://{}", if ldaps { "ldaps" } else { "ldap" }, server.addr());
        let mut cfg = BenchConfig::new(LdapUrl::parse(&url).unwrap(), Workload::Search);
        cfg.tls.starttls = !ldaps;
        cfg.tls.ca_file = Some(pki.file("ca.pem"));
        cfg.connections = 3;
        cfg.threads = 2;
        cfg.depth = 16;
        cfg.warmup = Duration::ZERO;
        cfg.duration = Duration::from_millis(500);
        cfg.rate = Some(3000.0);
        cfg.bind = Some(("cn=admin,dc=example,dc=com".into(), "password".into()));
        cfg.filter = FilterTemplate::parse("(uid={})").unwrap();
        cfg.values = Some(Arc::new(ValueFile::from_values(&["a", "b", "missing"]).unwrap()));
        let r = run(&cfg).unwrap();
        let text = r.to_text();
        assert_eq!(r.ops, 1500, "{text}");
        assert_eq!(r.errors, 0, "{text}");
        let c = server.counts();
        assert_eq!(get(&c.searches), 1500 + 1, "{text}");
        assert_eq!(get(&c.binds), 3);
        assert_eq!(get(&c.unbinds), 3 + 1, "each connection and the probe unbind");
        let tls = r.tls.as_ref().unwrap();
        assert_eq!(
            tls.handshakes.total(),
            0,
            "no handshake inside the window: {text}"
        );
        assert_eq!(tls.other_handshakes.total(), 4, "{text}");
        assert_eq!(
            get(&c.tls_full) + get(&c.tls_resumed),
            4,
            "the server saw the same handshakes"
        );
        assert_eq!(get(&c.tls_resumed), tls.other_handshakes.resumed);
        // "missing" finds nothing: about a third of the searches return no entry.
        let k = &r.kinds[0];
        assert!(k.entries_per_op > 0.5 && k.entries_per_op < 0.8, "{text}");
    }
}

/// Moves TLS records between an in-memory client and server until neither has more to send.
fn pump(client: &mut rustls::ClientConnection, server: &mut rustls::ServerConnection) {
    loop {
        let mut moved = false;
        let mut buf = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut buf).unwrap();
        }
        if !buf.is_empty() {
            moved = true;
            server.read_tls(&mut buf.as_slice()).unwrap();
            server.process_new_packets().unwrap();
        }
        let mut buf = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut buf).unwrap();
        }
        if !buf.is_empty() {
            moved = true;
            let mut slice = buf.as_slice();
            while !slice.is_empty() {
                client.read_tls(&mut slice).unwrap();
                client.process_new_packets().unwrap();
            }
        }
        if !moved {
            return;
        }
    }
}

/// One batch as a saturated server sees it: `n` clients send their ClientHello (each takes
/// a ticket from the store, if there is one) before any of them finishes; then each
/// handshake completes and its tickets are stored. Returns how many resumed.
fn lockstep_batch(client: &Arc<rustls::ClientConfig>, server: &Arc<rustls::ServerConfig>, n: usize) -> usize {
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut clients: Vec<_> = (0..n)
        .map(|_| rustls::ClientConnection::new(client.clone(), name.clone()).unwrap())
        .collect();
    let mut resumed = 0;
    for c in &mut clients {
        let mut s = rustls::ServerConnection::new(server.clone()).unwrap();
        pump(c, &mut s);
        assert!(!c.is_handshaking() && !s.is_handshaking());
        if c.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
            resumed += 1;
        }
    }
    resumed
}

#[test]
fn every_connection_of_a_saturated_batch_resumes() {
    // rustls' own store keeps 8 TLS 1.3 tickets per server: of 16 ClientHellos sent together,
    // 8 resume however many tickets came back. The bench's store keeps 2 per connection.
    let pki = Pki::new("batch");
    let server = pki.server_config(false);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca_der.clone()).unwrap();
    let config = |resumption: rustls::client::Resumption| {
        let mut c = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
        c.resumption = resumption;
        Arc::new(c)
    };
    const N: usize = 16;
    let rustls_store = config(rustls::client::Resumption::default());
    assert_eq!(lockstep_batch(&rustls_store, &server, N), 0);
    assert_eq!(
        lockstep_batch(&rustls_store, &server, N),
        8,
        "rustls' per-server limit"
    );
    let ours = config(rustls::client::Resumption::store(Arc::new(
        larch_bench::sessions::ClientSessions::new(N),
    )));
    assert_eq!(
        lockstep_batch(&ours, &server, N),
        0,
        "the first batch has no ticket"
    );
    for _ in 0..3 {
        assert_eq!(lockstep_batch(&ours, &server, N), N);
    }
}
