//! What the counters count by: the kind of an operation and the method of a Bind (which
//! the operation's outcome carries, [`crate::outcome::BindMethod`]).

use larch_proto::op_tag;

pub use crate::outcome::{BindMethod, BIND_METHODS};

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

/// Room for the close reasons by number (`CloseReason as u8`, 1 to 9).
pub const CLOSE_REASONS: usize = 10;
