//! What the administrative commands that talk to a running server share (`larch backup`,
//! `larch status`, `larch cluster`): the password from `-w` or `-y`, and one connection to
//! the server's URL, plain, `ldaps://` or StartTLS, bound as the administrator.

use std::path::PathBuf;

use larch_bench::simple::{tls_open, SimpleConn};
use larch_bench::tls::TlsSetup;
use larch_bench::url::LdapUrl;
use larch_bench::TlsOptions;
use larch_proto::ResultCode;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A plain or TLS stream.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A connection to the server, bound.
pub type Conn = SimpleConn<Box<dyn Stream>>;

/// How to reach and bind to the server.
#[derive(Debug, Clone)]
pub struct Target {
    /// `ldap://` or `ldaps://` URL.
    pub url: String,
    /// The DN to bind as.
    pub bind_dn: String,
    /// `-w`.
    pub password: Option<String>,
    /// `-y`: a file holding the password (one trailing newline is ignored).
    pub password_file: Option<PathBuf>,
    /// StartTLS on an `ldap://` URL.
    pub starttls: bool,
    /// The CA certificates to trust for TLS.
    pub ca_file: Option<PathBuf>,
}

impl Target {
    /// The password from `-w` or `-y`.
    pub fn password(&self) -> Result<String, String> {
        match (&self.password, &self.password_file) {
            (Some(p), _) => Ok(p.clone()),
            (None, Some(f)) => {
                let text = std::fs::read_to_string(f).map_err(|e| format!("-y {}: {e}", f.display()))?;
                Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
            }
            (None, None) => Err("a password is needed: -w PASSWORD or -y FILE".into()),
        }
    }

    /// Connects (TLS as asked) and binds; message ID 1 is the Bind (2 with StartTLS).
    pub async fn connect(&self) -> Result<(Conn, LdapUrl), String> {
        let url = LdapUrl::parse(&self.url).map_err(|e| e.to_string())?;
        let password = self.password()?;
        let tls = TlsOptions {
            starttls: self.starttls,
            ca_file: self.ca_file.clone(),
            ..TlsOptions::default()
        };
        tls.transport(&url)?;
        let setup = TlsSetup::new(&tls, &url, 1)?;
        let tcp = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        let stream: Box<dyn Stream> = match setup {
            None => Box::new(tcp),
            Some(setup) => Box::new(tls_open(&url, &setup, tcp).await?),
        };
        let mut c = SimpleConn::new(stream);
        let code = c
            .bind(2, self.bind_dn.as_bytes(), password.as_bytes())
            .await
            .map_err(|e| format!("bind to {url}: {e}"))?;
        if code != ResultCode::SUCCESS {
            return Err(format!("bind as {} to {url} failed: {code}", self.bind_dn));
        }
        Ok((c, url))
    }
}

/// A single-threaded runtime for one command's requests.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the client: {e}"))
}
