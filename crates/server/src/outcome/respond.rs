//! The one encoder of final responses: every BindResponse, SearchResultDone,
//! ModifyResponse, AddResponse, DelResponse, ModifyDNResponse, CompareResponse and
//! ExtendedResponse (Notices of Disconnection included) is written here, from a [`Reply`].
//! Search entries and references are written by the search as it finds them
//! (`crate::search`); they are not results.

use larch_proto::exop::NOTICE_OF_DISCONNECTION;
use larch_proto::{op_tag, BindResponse, ExtendedResponse, LdapResult, MessageId, ProtocolOp, ResultCode};

use super::Reply;
use crate::response::{result_op, write_message};

/// Appends the response of kind `response_tag` (a `larch_proto::op_tag` response tag)
/// answering message `msgid` with `reply`.
pub fn write(out: &mut Vec<u8>, msgid: MessageId, response_tag: u8, reply: &Reply) {
    let uris: Vec<&[u8]> = reply.referrals.iter().map(|u| u.as_bytes()).collect();
    let mut result = LdapResult::new(reply.code, reply.matched_dn.as_bytes(), reply.message.as_bytes());
    if !uris.is_empty() {
        result.referral = Some(larch_proto::SeqOf::from_items(&uris));
    }
    let op = match response_tag {
        op_tag::BIND_RESPONSE => ProtocolOp::BindResponse(BindResponse {
            result,
            server_sasl_creds: None,
        }),
        op_tag::EXTENDED_RESPONSE => ProtocolOp::ExtendedResponse(ExtendedResponse {
            result,
            name: reply.name.map(str::as_bytes),
            value: reply.value.as_deref(),
        }),
        other => result_op(other, result),
    };
    write_message(out, msgid, op, &reply.controls);
}

/// The reply of a Notice of Disconnection (RFC 4511 section 4.4.1) with `code` and `why`:
/// an ExtendedResponse with message ID 0 and the notice's OID as responseName.
pub fn notice(code: ResultCode, why: impl Into<String>) -> Reply {
    Reply {
        message: why.into(),
        name: Some(NOTICE_OF_DISCONNECTION),
        ..Reply::code(code)
    }
}

/// Appends a Notice of Disconnection (see [`notice`]).
pub fn write_notice(out: &mut Vec<u8>, reply: &Reply) {
    write(out, 0, op_tag::EXTENDED_RESPONSE, reply);
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_proto::exop::notice_with_code;
    use larch_proto::LdapMessage;

    #[test]
    fn a_notice_is_written_as_the_codec_writes_one() {
        let mut ours = Vec::new();
        write_notice(&mut ours, &notice(ResultCode::BUSY, "full"));
        let mut theirs = Vec::new();
        notice_with_code(ResultCode::BUSY, b"full").encode(&mut theirs);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn every_response_kind_decodes_with_its_result() {
        for tag in [
            op_tag::BIND_RESPONSE,
            op_tag::SEARCH_RESULT_DONE,
            op_tag::MODIFY_RESPONSE,
            op_tag::ADD_RESPONSE,
            op_tag::DEL_RESPONSE,
            op_tag::MODIFY_DN_RESPONSE,
            op_tag::COMPARE_RESPONSE,
            op_tag::EXTENDED_RESPONSE,
        ] {
            let reply = Reply {
                matched_dn: "dc=example".into(),
                message: "why".into(),
                referrals: vec!["ldap://other/".into()],
                ..Reply::code(ResultCode::REFERRAL)
            };
            let mut out = Vec::new();
            write(&mut out, 9, tag, &reply);
            let msg = LdapMessage::decode(&out).expect("decodes");
            assert_eq!(msg.message_id, 9);
            assert_eq!(msg.op.tag(), tag);
        }
    }
}
