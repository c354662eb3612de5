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
    /// request (an undecodable PDU). One load from a table: a `match` was about ten
    /// instructions, and every operation asks twice (started, ended).
    #[inline]
    pub fn of_request(tag: u8) -> Option<OpKind> {
        KIND_OF_TAG[tag as usize]
    }

    /// The operation tag of this kind's request.
    pub const fn request_tag(self) -> u8 {
        match self {
            OpKind::Bind => op_tag::BIND_REQUEST,
            OpKind::Unbind => op_tag::UNBIND_REQUEST,
            OpKind::Search => op_tag::SEARCH_REQUEST,
            OpKind::Compare => op_tag::COMPARE_REQUEST,
            OpKind::Modify => op_tag::MODIFY_REQUEST,
            OpKind::Modrdn => op_tag::MODIFY_DN_REQUEST,
            OpKind::Add => op_tag::ADD_REQUEST,
            OpKind::Delete => op_tag::DEL_REQUEST,
            OpKind::Abandon => op_tag::ABANDON_REQUEST,
            OpKind::Extended => op_tag::EXTENDED_REQUEST,
        }
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

/// Each operation tag's kind ([`OpKind::of_request`]).
const KIND_OF_TAG: [Option<OpKind>; 256] = {
    let mut table = [None; 256];
    let mut i = 0;
    while i < OP_KINDS {
        let kind = OpKind::ALL[i];
        table[kind.request_tag() as usize] = Some(kind);
        i += 1;
    }
    table
};

/// Room for the close reasons by number (`CloseReason as u8`, 1 to 9).
pub const CLOSE_REASONS: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_tag_has_its_kind_and_no_other_tag_has_one() {
        for kind in OpKind::ALL {
            assert_eq!(OpKind::of_request(kind.request_tag()), Some(kind));
        }
        let kinds = (0..=255u8).filter_map(OpKind::of_request).count();
        assert_eq!(kinds, OP_KINDS);
        assert_eq!(OpKind::of_request(op_tag::SEARCH_RESULT_DONE), None);
        assert_eq!(OpKind::of_request(0), None);
    }
}
