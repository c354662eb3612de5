//! The PDUs the benchmarks and the allocation test measure, built once with the codec's
//! own encoder (their decoding is checked by the round-trip tests).
#![allow(dead_code)]

use larch_proto::*;

/// The DirectoryMark-style search of the benchmark issue:
/// `(&(objectClass=inetOrgPerson)(uid=user.12345))` with three attributes, message 12345.
pub fn search_request() -> Vec<u8> {
    let filter = OwnedFilter::parse("(&(objectClass=inetOrgPerson)(uid=user.12345))").unwrap();
    let attrs: [&[u8]; 3] = [b"cn", b"mail", b"telephoneNumber"];
    let req = SearchRequest {
        base: b"ou=People,dc=example,dc=com",
        scope: SearchScope::Subtree,
        deref_aliases: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter: filter.as_filter(),
        attributes: SeqOf::from_items(&attrs),
    };
    let mut out = Vec::new();
    LdapMessage::new(12345, ProtocolOp::SearchRequest(req)).encode(&mut out);
    out
}

/// The 22 attributes of a generated inetOrgPerson, about 800 octets of BER in all.
pub const ENTRY_DN: &[u8] = b"uid=user.12345,ou=People,dc=example,dc=com";
pub const ENTRY_ATTRIBUTES: [(&str, &[&str]); 22] = [
    (
        "objectClass",
        &["top", "person", "organizationalPerson", "inetOrgPerson"],
    ),
    ("uid", &["user.12345"]),
    ("cn", &["Aaren Atp"]),
    ("sn", &["Atp"]),
    ("givenName", &["Aaren"]),
    ("initials", &["AA"]),
    ("mail", &["user.12345@example.com"]),
    ("telephoneNumber", &["+1 408 555 0123"]),
    ("homePhone", &["+1 408 555 4567"]),
    ("pager", &["+1 408 555 8901"]),
    ("mobile", &["+1 408 555 2345"]),
    ("facsimileTelephoneNumber", &["+1 408 555 6789"]),
    ("employeeNumber", &["12345"]),
    ("employeeType", &["Permanent"]),
    ("title", &["Senior Product Engineer"]),
    ("departmentNumber", &["4412"]),
    ("roomNumber", &["0391"]),
    ("street", &["01234 Maple Street"]),
    ("l", &["Sunnyvale"]),
    ("st", &["CA"]),
    ("postalCode", &["94086"]),
    (
        "description",
        &[
            "This is the description for Aaren Atp, a generated user of the benchmark data set \
           with enough text to look like a real directory entry of a mid-size organisation.",
        ],
    ),
];

/// The SearchResultEntry LDAPMessage for [`ENTRY_ATTRIBUTES`], message 12345.
pub fn search_result_entry() -> Vec<u8> {
    let values: Vec<Vec<&[u8]>> = ENTRY_ATTRIBUTES
        .iter()
        .map(|(_, vs)| vs.iter().map(|v| v.as_bytes()).collect())
        .collect();
    let attrs: Vec<PartialAttribute<'_>> = ENTRY_ATTRIBUTES
        .iter()
        .zip(&values)
        .map(|((name, _), vs)| PartialAttribute {
            description: name.as_bytes(),
            values: SeqOf::from_items(vs),
        })
        .collect();
    let entry = SearchResultEntry {
        object_name: ENTRY_DN,
        attributes: SeqOf::from_items(&attrs),
    };
    let mut out = Vec::new();
    LdapMessage::new(12345, ProtocolOp::SearchResultEntry(entry)).encode(&mut out);
    out
}

/// The entry's attribute list as the store keeps it: PartialAttribute TLVs back to back.
pub fn stored_attributes(entry_pdu: &[u8]) -> Vec<u8> {
    let msg = LdapMessage::decode(entry_pdu).unwrap();
    let ProtocolOp::SearchResultEntry(e) = msg.op else {
        unreachable!()
    };
    e.attributes.as_ber().unwrap().to_vec()
}

/// Touches every part of a decoded message, as a server would, so lazy decoding is not
/// measured as free: every list element and every filter node.
pub fn walk(msg: &LdapMessage<'_>) -> usize {
    let mut n = msg.message_id as usize;
    match msg.op {
        ProtocolOp::SearchRequest(r) => {
            n += r.base.len() + r.attributes.iter().map(<[u8]>::len).sum::<usize>();
            n += walk_filter(r.filter);
        }
        ProtocolOp::SearchResultEntry(e) => {
            n += e.object_name.len();
            for a in e.attributes.iter() {
                n += a.description.len() + a.values.iter().map(<[u8]>::len).sum::<usize>();
            }
        }
        _ => {}
    }
    n + msg.controls().iter().map(|c| c.oid.len()).sum::<usize>()
}

fn walk_filter(f: Filter<'_>) -> usize {
    // Pre-order walk with a fixed stack of pending sibling iterators (no allocation).
    let mut pending = [FilterSet::EMPTY.iter(); larch_proto::limits::MAX_FILTER_DEPTH + 1];
    let mut depth = 0;
    let mut n = 0;
    let mut next = Some(f);
    loop {
        while let Some(f) = next.take() {
            match f.node() {
                FilterNode::And(s) | FilterNode::Or(s) => {
                    pending[depth] = s.iter();
                    depth += 1;
                }
                FilterNode::Not(inner) => next = Some(inner),
                FilterNode::Equality(a)
                | FilterNode::GreaterOrEqual(a)
                | FilterNode::LessOrEqual(a)
                | FilterNode::Approx(a) => n += a.description.len() + a.value.len(),
                FilterNode::Present(d) => n += d.len(),
                FilterNode::Substrings(s) => {
                    n += s.description.len() + s.substrings.iter().count();
                }
                FilterNode::Extensible(m) => n += m.value.len(),
                FilterNode::Unknown { tag } => n += usize::from(tag),
            }
        }
        if depth == 0 {
            return n;
        }
        match pending[depth - 1].next() {
            Some(child) => next = Some(child),
            None => depth -= 1,
        }
    }
}
