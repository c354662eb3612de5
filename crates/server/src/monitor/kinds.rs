//! What the counters count by: the kind of an operation and the method of a Bind.

use larch_proto::ber::{tag, Reader};
use larch_proto::op_tag;

/// The authentication choice's tags in a BindRequest: `simple [0]` (primitive) and
/// `sasl [3]` (constructed).
const SIMPLE: u8 = 0x80;
const SASL: u8 = 0xa3;

/// Kinds of operation, in the order OpenLDAP's `cn=Operations,cn=Monitor` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpKind {
    /// BindRequest.
    Bind = 0,
    /// UnbindRequest.
    Unbind,
    /// SearchRequest.
    Search,
    /// CompareRequest.
    Compare,
    /// ModifyRequest.
    Modify,
    /// ModifyDNRequest.
    Modrdn,
    /// AddRequest.
    Add,
    /// DelRequest.
    Delete,
    /// AbandonRequest.
    Abandon,
    /// ExtendedRequest.
    Extended,
}

/// How many kinds there are.
pub const OP_KINDS: usize = 10;

impl OpKind {
    /// Every kind, in order.
    pub const ALL: [OpKind; OP_KINDS] = [
        OpKind::Bind,
        OpKind::Unbind,
        OpKind::Search,
        OpKind::Compare,
        OpKind::Modify,
        OpKind::Modrdn,
        OpKind::Add,
        OpKind::Delete,
        OpKind::Abandon,
        OpKind::Extended,
    ];

    /// The kind of a request with operation tag `tag`; `None` for a tag that is no
    /// request (an undecodable PDU).
    #[inline]
    pub fn of_request(tag: u8) -> Option<OpKind> {
        Some(match tag {
            op_tag::BIND_REQUEST => OpKind::Bind,
            op_tag::UNBIND_REQUEST => OpKind::Unbind,
            op_tag::SEARCH_REQUEST => OpKind::Search,
            op_tag::COMPARE_REQUEST => OpKind::Compare,
            op_tag::MODIFY_REQUEST => OpKind::Modify,
            op_tag::MODIFY_DN_REQUEST => OpKind::Modrdn,
            op_tag::ADD_REQUEST => OpKind::Add,
            op_tag::DEL_REQUEST => OpKind::Delete,
            op_tag::ABANDON_REQUEST => OpKind::Abandon,
            op_tag::EXTENDED_REQUEST => OpKind::Extended,
            _ => return None,
        })
    }

    /// The name OpenLDAP gives its entry (`cn=Search,cn=Operations,cn=Monitor`).
    pub fn monitor_name(self) -> &'static str {
        match self {
            OpKind::Bind => "Bind",
            OpKind::Unbind => "Unbind",
            OpKind::Search => "Search",
            OpKind::Compare => "Compare",
            OpKind::Modify => "Modify",
            OpKind::Modrdn => "Modrdn",
            OpKind::Add => "Add",
            OpKind::Delete => "Delete",
            OpKind::Abandon => "Abandon",
            OpKind::Extended => "Extended",
        }
    }

    /// The lower-case name used as a Prometheus label value.
    pub fn label(self) -> &'static str {
        match self {
            OpKind::Bind => "bind",
            OpKind::Unbind => "unbind",
            OpKind::Search => "search",
            OpKind::Compare => "compare",
            OpKind::Modify => "modify",
            OpKind::Modrdn => "modrdn",
            OpKind::Add => "add",
            OpKind::Delete => "delete",
            OpKind::Abandon => "abandon",
            OpKind::Extended => "extended",
        }
    }
}

/// How a Bind authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BindMethod {
    /// Simple with an empty password (anonymous, RFC 4513 section 5.1.1 and 5.1.2).
    Anonymous = 0,
    /// Simple with a password.
    Simple,
    /// SASL EXTERNAL.
    External,
    /// SASL PLAIN.
    Plain,
    /// Another SASL mechanism, or an authentication choice the server does not know.
    Other,
}

/// How many methods there are.
pub const BIND_METHODS: usize = 5;

impl BindMethod {
    /// Every method, in order.
    pub const ALL: [BindMethod; BIND_METHODS] = [
        BindMethod::Anonymous,
        BindMethod::Simple,
        BindMethod::External,
        BindMethod::Plain,
        BindMethod::Other,
    ];

    /// The method of a BindRequest PDU that decoded; `Other` when its authentication
    /// cannot be read.
    ///
    /// Only the elements before the authentication choice are stepped over (message ID,
    /// version, name): the request is not decoded a second time.
    pub fn of_request(pdu: &[u8]) -> BindMethod {
        Self::of_authentication(pdu).unwrap_or(BindMethod::Other)
    }

    /// The method named by the authentication choice of BindRequest `pdu`.
    fn of_authentication(pdu: &[u8]) -> Option<BindMethod> {
        const CTX: &str = "bind method";
        let message = Reader::new(pdu).read(tag::SEQUENCE, CTX).ok()?;
        let mut message = Reader::new(message);
        message.read_any(CTX).ok()?; // messageID
        let mut bind = Reader::new(message.read(op_tag::BIND_REQUEST, CTX).ok()?);
        bind.read_any(CTX).ok()?; // version
        bind.read_any(CTX).ok()?; // name
        let (choice, contents, _) = bind.read_any(CTX).ok()?;
        Some(match choice {
            SIMPLE if contents.is_empty() => BindMethod::Anonymous,
            SIMPLE => BindMethod::Simple,
            SASL => {
                let mechanism = Reader::new(contents).read(tag::OCTET_STRING, CTX).ok()?;
                Self::of_mechanism(mechanism)
            }
            _ => BindMethod::Other,
        })
    }

    /// The method of SASL mechanism `name`.
    fn of_mechanism(name: &[u8]) -> BindMethod {
        if name.eq_ignore_ascii_case(b"EXTERNAL") {
            BindMethod::External
        } else if name.eq_ignore_ascii_case(b"PLAIN") {
            BindMethod::Plain
        } else {
            BindMethod::Other
        }
    }

    /// The label value (`simple`, `sasl_external`...).
    pub fn label(self) -> &'static str {
        match self {
            BindMethod::Anonymous => "anonymous",
            BindMethod::Simple => "simple",
            BindMethod::External => "sasl_external",
            BindMethod::Plain => "sasl_plain",
            BindMethod::Other => "other",
        }
    }
}

/// Room for the close reasons by number (`CloseReason as u8`, 1 to 9).
pub const CLOSE_REASONS: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;
    use larch_proto::{Authentication, BindRequest, LdapMessage, ProtocolOp};

    fn bind(authentication: Authentication<'_>) -> Vec<u8> {
        let msg = LdapMessage {
            message_id: 300,
            op: ProtocolOp::BindRequest(BindRequest {
                version: 3,
                name: b"uid=user.1,ou=People,dc=example,dc=com",
                authentication,
            }),
            controls: None,
        };
        let mut out = Vec::new();
        msg.encode(&mut out);
        out
    }

    fn sasl(mechanism: &[u8]) -> Authentication<'_> {
        Authentication::Sasl {
            mechanism,
            credentials: Some(b"\0u\0secret"),
        }
    }

    #[test]
    fn the_method_is_read_from_the_authentication_choice() {
        let cases = [
            (bind(Authentication::Simple(b"")), BindMethod::Anonymous),
            (bind(Authentication::Simple(b"password")), BindMethod::Simple),
            (bind(sasl(b"EXTERNAL")), BindMethod::External),
            (bind(sasl(b"plain")), BindMethod::Plain),
            (bind(sasl(b"SCRAM-SHA-256")), BindMethod::Other),
        ];
        for (pdu, method) in cases {
            assert_eq!(BindMethod::of_request(&pdu), method);
        }
        // A long password: the lengths in long form.
        let long = vec![b'x'; 300];
        assert_eq!(
            BindMethod::of_request(&bind(Authentication::Simple(&long))),
            BindMethod::Simple
        );
        // Not a BindRequest, or cut short.
        assert_eq!(
            BindMethod::of_request(b"\x30\x05\x02\x01\x01\x42\x00"),
            BindMethod::Other
        );
        let pdu = bind(Authentication::Simple(b"password"));
        assert_eq!(BindMethod::of_request(&pdu[..pdu.len() - 3]), BindMethod::Other);
        assert_eq!(BindMethod::of_request(b""), BindMethod::Other);
    }
}
