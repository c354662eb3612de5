use crate::ber::{tag, Reader, Writer};
use crate::error::Result;
use crate::limits::MAX_PROTOCOL_VERSION;
use crate::result::{LdapResult, RESULT_COMPONENTS};

/// Tag of simple authentication (`[0]`, primitive).
pub const SIMPLE_TAG: u8 = tag::context(0);
/// Tag of SASL authentication (`[3]`, constructed).
pub const SASL_TAG: u8 = tag::context_constructed(3);
/// Tag of `serverSaslCreds` in a BindResponse (`[7]`, primitive).
pub const SERVER_SASL_CREDS_TAG: u8 = tag::context(7);

/// BindRequest (RFC 4511 section 4.2).
///
/// ```
/// use larch_proto::{Authentication, BindRequest, LdapMessage, ProtocolOp};
/// let bind = BindRequest {
///     version: 3,
///     name: b"cn=admin,dc=example,dc=com",
///     authentication: Authentication::Simple(b"secret"),
/// };
/// let mut buf = Vec::new();
/// LdapMessage::new(1, ProtocolOp::BindRequest(bind)).encode(&mut buf);
/// let back = LdapMessage::decode(&buf).unwrap();
/// assert_eq!(back.op, ProtocolOp::BindRequest(bind));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindRequest<'a> {
    /// Protocol version, 1 to 127 on the wire; LDAPv3 clients send 3.
    pub version: u8,
    /// The DN to bind as (empty for anonymous or for SASL mechanisms that carry identity).
    pub name: &'a [u8],
    /// How the client authenticates.
    pub authentication: Authentication<'a>,
}

/// `AuthenticationChoice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authentication<'a> {
    /// `simple [0] OCTET STRING`: the password (empty for anonymous/unauthenticated bind).
    Simple(&'a [u8]),
    /// `sasl [3] SaslCredentials`.
    Sasl {
        /// The SASL mechanism name, e.g. `EXTERNAL` or `PLAIN`.
        mechanism: &'a [u8],
        /// Mechanism-specific credentials.
        credentials: Option<&'a [u8]>,
    },
    /// A choice this codec does not know (RFC 4511 keeps the CHOICE extensible); the
    /// server answers `authMethodNotSupported`.
    Other {
        /// The tag of the choice.
        tag: u8,
        /// Its contents.
        contents: &'a [u8],
    },
}

impl<'a> BindRequest<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let version = r.read_integer_in(tag::INTEGER, 1, MAX_PROTOCOL_VERSION, "BindRequest.version")? as u8;
        let name = r.read_octets(tag::OCTET_STRING, "BindRequest.name")?;
        let (t, contents, _) = r.read_any("BindRequest.authentication")?;
        let authentication = match t {
            SIMPLE_TAG => Authentication::Simple(contents),
            SASL_TAG => {
                let mut s = Reader::new(contents);
                let mechanism = s.read_octets(tag::OCTET_STRING, "SaslCredentials.mechanism")?;
                let credentials = s.read_optional(tag::OCTET_STRING, "SaslCredentials.credentials")?;
                s.finish_sequence("SaslCredentials", &[tag::OCTET_STRING])?;
                Authentication::Sasl {
                    mechanism,
                    credentials,
                }
            }
            _ => Authentication::Other { tag: t, contents },
        };
        r.finish_sequence(
            "BindRequest",
            &[tag::INTEGER, tag::OCTET_STRING, SIMPLE_TAG, SASL_TAG],
        )?;
        Ok(BindRequest {
            version,
            name,
            authentication,
        })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.integer(tag::INTEGER, i64::from(self.version));
        w.octet_string(self.name);
        match self.authentication {
            Authentication::Simple(p) => w.octets(SIMPLE_TAG, p),
            Authentication::Sasl {
                mechanism,
                credentials,
            } => {
                let m = w.begin(SASL_TAG);
                w.octet_string(mechanism);
                if let Some(c) = credentials {
                    w.octet_string(c);
                }
                w.end(m);
            }
            Authentication::Other { tag, contents } => w.octets(tag, contents),
        }
    }
}

/// BindResponse (RFC 4511 section 4.2.2).
///
/// ```
/// use larch_proto::{BindResponse, LdapMessage, LdapResult, ProtocolOp, ResultCode};
/// let resp = BindResponse { result: LdapResult::new(ResultCode::INVALID_CREDENTIALS, b"", b""), server_sasl_creds: None };
/// let mut buf = Vec::new();
/// LdapMessage::new(1, ProtocolOp::BindResponse(resp)).encode(&mut buf);
/// assert_eq!(buf, [0x30, 0x0c, 0x02, 0x01, 0x01, 0x61, 0x07, 0x0a, 0x01, 0x31, 0x04, 0x00, 0x04, 0x00]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindResponse<'a> {
    /// The result.
    pub result: LdapResult<'a>,
    /// `serverSaslCreds`, for SASL mechanisms with a server challenge or final data.
    pub server_sasl_creds: Option<&'a [u8]>,
}

impl<'a> BindResponse<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let result = LdapResult::decode_from(&mut r)?;
        let server_sasl_creds = r.read_optional(SERVER_SASL_CREDS_TAG, "BindResponse.serverSaslCreds")?;
        r.finish_sequence(
            "BindResponse",
            &[
                RESULT_COMPONENTS[0],
                RESULT_COMPONENTS[1],
                RESULT_COMPONENTS[2],
                SERVER_SASL_CREDS_TAG,
            ],
        )?;
        Ok(BindResponse {
            result,
            server_sasl_creds,
        })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        self.result.encode_into(w);
        if let Some(c) = self.server_sasl_creds {
            w.octets(SERVER_SASL_CREDS_TAG, c);
        }
    }
}
