//! Larch's cluster membership changes ([`super::CLUSTER_ADD_NODE`],
//! [`super::CLUSTER_REMOVE_NODE`]): the administrator asks a cluster's leader to add a node
//! to the cluster, or to remove one (`docs/cluster.md`, "Adding and removing nodes").
//!
//! ```text
//! add:     ExtendedRequest { CLUSTER_ADD_NODE, AddNodeRequest }
//! AddNodeRequest    ::= SEQUENCE { nodeId [0] INTEGER, raft [1] OCTET STRING,
//!                                  ldapUrl [2] OCTET STRING }
//! remove:  ExtendedRequest { CLUSTER_REMOVE_NODE, RemoveNodeRequest }
//! RemoveNodeRequest ::= SEQUENCE { nodeId [0] INTEGER }
//! answer:  ExtendedResponse { result, responseName the request's OID, no value }
//! ```
//!
//! `nodeId` is 1 to 2^63 - 1; `raft` is where the new node's Raft transport listens
//! (`host:port`, UTF-8), `ldapUrl` where clients reach it (an `ldap://` or `ldaps://` URL).
//! The result's diagnostic message says what was done, or why not.

use super::{ExtendedValue, CLUSTER_ADD_NODE, CLUSTER_REMOVE_NODE};
use crate::ber::{tag, Reader, Writer};
use crate::error::Result;

const NODE_ID: u8 = tag::context(0);
const RAFT: u8 = tag::context(1);
const LDAP_URL: u8 = tag::context(2);

/// The request to add a node to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddNodeRequest<'a> {
    /// The new node's number.
    pub node_id: u64,
    /// Where its Raft transport listens: `host:port`.
    pub raft: &'a [u8],
    /// Where clients reach it.
    pub ldap_url: &'a [u8],
}

impl<'a> ExtendedValue<'a> for AddNodeRequest<'a> {
    const OID: &'static str = CLUSTER_ADD_NODE;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "AddNodeRequest";
        let mut outer = Reader::new(value.unwrap_or_default());
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let node_id = r.read_integer_in(NODE_ID, 1, i64::MAX, "AddNodeRequest.nodeId")? as u64;
        let raft = r.read_octets(RAFT, "AddNodeRequest.raft")?;
        let ldap_url = r.read_octets(LDAP_URL, "AddNodeRequest.ldapUrl")?;
        r.finish_sequence(CTX, &[NODE_ID, RAFT, LDAP_URL])?;
        Ok(AddNodeRequest {
            node_id,
            raft,
            ldap_url,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(NODE_ID, i64::try_from(self.node_id).unwrap_or(i64::MAX));
        w.octets(RAFT, self.raft);
        w.octets(LDAP_URL, self.ldap_url);
        w.end(m);
        true
    }
}

/// The request to remove a node from the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoveNodeRequest {
    /// The node's number.
    pub node_id: u64,
}

impl<'a> ExtendedValue<'a> for RemoveNodeRequest {
    const OID: &'static str = CLUSTER_REMOVE_NODE;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "RemoveNodeRequest";
        let mut outer = Reader::new(value.unwrap_or_default());
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let node_id = r.read_integer_in(NODE_ID, 1, i64::MAX, "RemoveNodeRequest.nodeId")? as u64;
        r.finish_sequence(CTX, &[NODE_ID])?;
        Ok(RemoveNodeRequest { node_id })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(NODE_ID, i64::try_from(self.node_id).unwrap_or(i64::MAX));
        w.end(m);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_add_request_round_trips_in_the_documented_octets() {
        let add = AddNodeRequest {
            node_id: 4,
            raft: b"h:1",
            ldap_url: b"ldap://h",
        };
        let mut value = Vec::new();
        assert!(add.encode_value(&mut value));
        let mut expected = vec![0x30, 0x12, 0x80, 0x01, 0x04, 0x81, 0x03];
        expected.extend_from_slice(b"h:1");
        expected.extend_from_slice(&[0x82, 0x08]);
        expected.extend_from_slice(b"ldap://h");
        assert_eq!(value, expected);
        assert_eq!(AddNodeRequest::decode_value(Some(&value)).unwrap(), add);
    }

    #[test]
    fn a_remove_request_round_trips() {
        let remove = RemoveNodeRequest { node_id: 1 << 40 };
        let mut value = Vec::new();
        remove.encode_value(&mut value);
        assert_eq!(RemoveNodeRequest::decode_value(Some(&value)).unwrap(), remove);
    }

    #[test]
    fn malformed_requests_are_refused() {
        // No value, node 0, a missing field, a field repeated (unknown trailing ones are
        // skipped, RFC 4511 section 4).
        assert!(RemoveNodeRequest::decode_value(None).is_err());
        assert!(RemoveNodeRequest::decode_value(Some(&[0x30, 0x03, 0x80, 0x01, 0x00])).is_err());
        assert!(AddNodeRequest::decode_value(Some(&[0x30, 0x03, 0x80, 0x01, 0x04])).is_err());
        assert!(
            RemoveNodeRequest::decode_value(Some(&[0x30, 0x06, 0x80, 0x01, 0x04, 0x80, 0x01, 0x05])).is_err()
        );
        let mut value = Vec::new();
        AddNodeRequest {
            node_id: 4,
            raft: b"h:1",
            ldap_url: b"ldap://h",
        }
        .encode_value(&mut value);
        for cut in 0..value.len() {
            assert!(
                AddNodeRequest::decode_value(Some(&value[..cut])).is_err(),
                "cut at {cut}"
            );
        }
    }
}
