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
    if !write_short(out, msgid, response_tag, reply) {
        write_any(out, msgid, response_tag, reply);
    }
}

/// The whole message under [`SHORT_MAX`] octets: every length fits in one octet.
const SHORT_MAX: usize = 127;

/// The usual response, a bare LDAPResult (no referral, no control, no SASL credentials, no
/// responseName or responseValue) whose result code is one octet and whose message fits
/// short-form lengths, assembled in place: `30 L 02 n <id> <tag> L 0a 01 <code> 04 m
/// <matchedDN> 04 d <diagnosticMessage>`. Through the codec this was about 500
/// instructions of every search (callgrind); it is the same octets
/// (`the_short_form_is_what_the_codec_writes`). Says whether it wrote.
fn write_short(out: &mut Vec<u8>, msgid: MessageId, response_tag: u8, reply: &Reply) -> bool {
    let bare = reply.referrals.is_empty()
        && reply.controls.is_empty()
        && reply.name.is_none()
        && reply.value.is_none();
    let (matched, message) = (reply.matched_dn.as_bytes(), reply.message.as_bytes());
    let Ok(code) = u8::try_from(reply.code.0) else {
        return false;
    };
    if !bare || code > 0x7f || msgid < 0 || matched.len() > SHORT_MAX || message.len() > SHORT_MAX {
        return false;
    }
    // The message ID as the shortest two's-complement INTEGER: its leading octet below 0x80.
    let id = msgid.to_be_bytes();
    let skip = id[..3]
        .iter()
        .zip(&id[1..])
        .take_while(|(&b, &next)| b == 0 && next < 0x80)
        .count();
    let id = &id[skip..];
    let result_len = 3 + 2 + matched.len() + 2 + message.len();
    let message_len = 2 + id.len() + 2 + result_len;
    if message_len > SHORT_MAX {
        return false;
    }
    out.reserve(2 + message_len);
    out.extend_from_slice(&[0x30, message_len as u8, 0x02, id.len() as u8]);
    out.extend_from_slice(id);
    out.extend_from_slice(&[
        response_tag,
        result_len as u8,
        0x0a,
        0x01,
        code,
        0x04,
        matched.len() as u8,
    ]);
    out.extend_from_slice(matched);
    out.extend_from_slice(&[0x04, message.len() as u8]);
    out.extend_from_slice(message);
    true
}

/// Any response, through the codec.
fn write_any(out: &mut Vec<u8>, msgid: MessageId, response_tag: u8, reply: &Reply) {
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

    /// Every kind of final response.
    const RESPONSE_TAGS: [u8; 8] = [
        op_tag::BIND_RESPONSE,
        op_tag::SEARCH_RESULT_DONE,
        op_tag::MODIFY_RESPONSE,
        op_tag::ADD_RESPONSE,
        op_tag::DEL_RESPONSE,
        op_tag::MODIFY_DN_RESPONSE,
        op_tag::COMPARE_RESPONSE,
        op_tag::EXTENDED_RESPONSE,
    ];

    /// Every response kind, with result codes, message IDs and texts around each edge of
    /// the short form, and each thing that takes a reply out of it: the same octets as the
    /// codec's, and the short form used exactly where it fits.
    #[test]
    fn the_short_form_is_what_the_codec_writes() {
        let ids = [
            0,
            1,
            127,
            128,
            255,
            256,
            32_767,
            32_768,
            8_388_607,
            8_388_608,
            i32::MAX,
        ];
        let codes = [0, 1, 32, 49, 127, 128, 255, 4096, 0x7fff_ffff];
        let texts = [0, 1, 60, 100, 110, 127, 128, 300];
        let (mut short, mut long) = (0, 0);
        for tag in RESPONSE_TAGS {
            for msgid in ids {
                for code in codes {
                    for (m, d) in texts.iter().flat_map(|&m| texts.iter().map(move |&d| (m, d))) {
                        for extra in 0..5 {
                            let mut reply = Reply {
                                matched_dn: "m".repeat(m),
                                message: "d".repeat(d),
                                ..Reply::code(ResultCode(code))
                            };
                            match extra {
                                1 => reply.referrals.push("ldap://other/".into()),
                                2 => reply.controls.push(crate::controls::ResponseControl {
                                    oid: "1.3.6.1.4.1.42.2.27.8.5.1",
                                    value: None,
                                }),
                                3 if tag == op_tag::EXTENDED_RESPONSE => reply.name = Some("1.2.3"),
                                4 if tag == op_tag::EXTENDED_RESPONSE => reply.value = Some(vec![1]),
                                _ => {}
                            }
                            let mut codec = Vec::new();
                            write_any(&mut codec, msgid, tag, &reply);
                            let mut ours = b"before".to_vec();
                            let wrote = write_short(&mut ours, msgid, tag, &reply);
                            if wrote {
                                assert_eq!(
                                    &ours[6..],
                                    &codec[..],
                                    "{tag:02x} {msgid} {code} {m} {d} {extra}"
                                );
                                short += 1;
                            } else {
                                assert_eq!(ours, b"before");
                                long += 1;
                            }
                            let fits = codec.len() <= 2 + SHORT_MAX && code < 128;
                            let bare = reply.referrals.is_empty()
                                && reply.controls.is_empty()
                                && reply.name.is_none()
                                && reply.value.is_none();
                            assert_eq!(wrote, fits && bare, "{tag:02x} {msgid} {code} {m} {d} {extra}");
                        }
                    }
                }
            }
        }
        assert!(short > 1000 && long > 1000, "{short} short, {long} long");
    }

    #[test]
    fn every_response_kind_decodes_with_its_result() {
        for tag in RESPONSE_TAGS {
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
