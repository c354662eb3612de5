//! The Raft transport's TLS: every node presents `[tls]`'s certificate and key, and both
//! ends of a connection require a certificate issued by `tls.client_ca` (one CA issues
//! every node's certificate). The server side is `[tls]`'s server configuration with
//! client certificates required whatever `tls.client_certificates` says for LDAP
//! clients; the client side trusts only that CA and presents the node's certificate.

use std::sync::Arc;

use rustls::{ClientConfig, ServerConfig};

use crate::config::{ClientCertificates, TlsSettings};
use crate::tls::server_config::{self, client_roots};
use crate::tls::{pem, TlsError};

/// The server and client configurations of the transport.
pub fn transport_configs(settings: &TlsSettings) -> Result<(Arc<ServerConfig>, Arc<ClientConfig>), TlsError> {
    let Some(ca) = &settings.client_ca else {
        return Err(TlsError::Config(
            "cluster.tls needs tls.client_ca, the CA of the nodes' certificates".into(),
        ));
    };
    let mutual = TlsSettings {
        client_certificates: ClientCertificates::Require,
        ..settings.clone()
    };
    let server = server_config::build(&mutual)?.config;
    let roots = client_roots(ca)?;
    let chain = pem::certificates(&settings.certificate, "certificate")?;
    let key = pem::private_key(&settings.key)?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| TlsError::Config(format!("the node's certificate as a client certificate: {e}")))?;
    Ok((server, Arc::new(client)))
}
