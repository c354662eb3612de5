//! The request of an operation, read for its log lines.
//!
//! A search that ended on the connection's task (an exact search, nearly every request of
//! a busy directory) hands the log the request path's own decoding ([`Op::decoded`]),
//! which is taken as it is: reading the PDU again cost about 370 instructions per search
//! (callgrind). Otherwise the log reads the PDU.
//!
//! The request path decoded the PDU before the operation ran (the event says
//! `undecodable` otherwise), so the log does not need to check it again, only to find the
//! fields its lines print. A search request (one run on a search thread) is walked
//! element by element ([`skim_search`]): its filter, its attribute list and its controls
//! are taken as the request path validated them (their BER, read lazily when printed). Any
//! other request, or a search whose octets do not walk as expected, is decoded in full
//! ([`LdapMessage::decode_validated_before`]). A full decode of the search was a fifth of
//! what the log cost a search (callgrind, one request in flight).
//!
//! Only octets that did not come from the request path could tell the two apart: there
//! the skim may print a search whose attribute list or controls are malformed (as far as
//! they read) where the full decode would refuse it. Neither panics.

use larch_proto::ber::tag;
use larch_proto::{
    op_tag, DerefAliases, Filter, LdapMessage, ProtocolOp, SearchRequest, SearchScope, SeqOf, CONTROLS_TAG,
};

use super::event::Op;

/// The request of `op`, when it has one that decodes.
pub fn decode<'a>(op: &Op<'a>) -> Option<LdapMessage<'a>> {
    if let Some(msg) = op.decoded {
        return Some(*msg);
    }
    if op.undecodable || op.request.is_empty() {
        return None;
    }
    if op.request_tag == op_tag::SEARCH_REQUEST {
        if let Some(msg) = skim_search(op.request) {
            return Some(msg);
        }
    }
    LdapMessage::decode_validated_before(op.request).ok()
}

/// A search request's message read without validating again what its decoding on the
/// request path validated; `None` when `pdu` is not a search request as expected.
pub fn skim_search(pdu: &[u8]) -> Option<LdapMessage<'_>> {
    let (body, rest) = expect(pdu, tag::SEQUENCE)?;
    if !rest.is_empty() {
        return None;
    }
    let (id, r) = expect(body, tag::INTEGER)?;
    let message_id = small_integer(id)? as i32;
    let (s, r) = expect(r, op_tag::SEARCH_REQUEST)?;
    let controls = match element(r) {
        Some((CONTROLS_TAG, c, _)) => Some(SeqOf::from_trusted_ber(c)),
        _ => None,
    };
    let (base, s) = expect(s, tag::OCTET_STRING)?;
    let (scope, s) = expect(s, tag::ENUMERATED)?;
    let scope = match small_integer(scope)? {
        0 => SearchScope::Base,
        1 => SearchScope::OneLevel,
        2 => SearchScope::Subtree,
        3 => SearchScope::Subordinate,
        _ => return None,
    };
    let (deref, s) = expect(s, tag::ENUMERATED)?;
    let deref_aliases = match small_integer(deref)? {
        0 => DerefAliases::Never,
        1 => DerefAliases::InSearching,
        2 => DerefAliases::FindingBaseObject,
        3 => DerefAliases::Always,
        _ => return None,
    };
    let (size_limit, s) = expect(s, tag::INTEGER)?;
    let (time_limit, s) = expect(s, tag::INTEGER)?;
    let (types_only, s) = expect(s, tag::BOOLEAN)?;
    let types_only = match types_only {
        [b] => *b != 0,
        _ => return None,
    };
    let (_, _, after_filter) = element(s)?;
    let filter = &s[..s.len() - after_filter.len()];
    let (attributes, _) = expect(after_filter, tag::SEQUENCE)?;
    Some(LdapMessage {
        message_id,
        op: ProtocolOp::SearchRequest(SearchRequest {
            base,
            scope,
            deref_aliases,
            size_limit: small_integer(size_limit)?,
            time_limit: small_integer(time_limit)?,
            types_only,
            filter: Filter::from_validated_before(filter),
            attributes: SeqOf::from_trusted_ber(attributes),
        }),
        controls,
    })
}

/// The element at the front of `b`: its tag, its contents and the octets after it. `None`
/// for a header this walk does not take (a tag number above 30, an indefinite length, a
/// length of more than four octets) or contents cut short; the full decode then decides.
/// Written here rather than with `larch_proto::ber::Reader`, whose errors say what failed
/// and where, and whose integers go through an `i128`: the walk through it was half as
/// long again (callgrind: about 600 instructions per search against 400).
#[inline(always)]
fn element(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&t, rest) = b.split_first()?;
    if t & 0x1f == 0x1f {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let (octets, rest) = rest.split_at_checked(n)?;
        (octets.iter().fold(0usize, |l, &o| l << 8 | usize::from(o)), rest)
    };
    let (contents, rest) = rest.split_at_checked(len)?;
    Some((t, contents, rest))
}

/// The contents of the element at the front of `b` and what follows, when it has tag `t`.
#[inline(always)]
fn expect(b: &[u8], t: u8) -> Option<(&[u8], &[u8])> {
    match element(b)? {
        (found, contents, rest) if found == t => Some((contents, rest)),
        _ => None,
    }
}

/// INTEGER or ENUMERATED contents in `0..=i32::MAX` (what every integer of a search
/// request must be) in at most four octets; `None` otherwise.
#[inline(always)]
fn small_integer(c: &[u8]) -> Option<u32> {
    match c {
        [first, ..] if c.len() <= 4 && *first < 0x80 => {
            Some(c.iter().fold(0u32, |v, &o| v << 8 | u32::from(o)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use larch_proto::controls::Control;
    use larch_proto::{
        AbandonRequest, Authentication, BindRequest, DelRequest, ExtendedRequest, OwnedFilter,
    };

    use super::*;
    use crate::accesslog::test_events::{op, pdu};

    fn search(scope: SearchScope, deref: DerefAliases, limits: (u32, u32), attrs: &[&[u8]]) -> Vec<u8> {
        let filter = OwnedFilter::parse("(&(cn=a*b\\2a)(!(mail=*))(uid:dn:=x))").unwrap();
        let req = SearchRequest {
            base: b"ou=People,dc=example,dc=com",
            scope,
            deref_aliases: deref,
            size_limit: limits.0,
            time_limit: limits.1,
            types_only: limits.0 % 2 == 1,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(attrs),
        };
        let controls = [
            Control {
                oid: b"1.2.840.113556.1.4.319",
                critical: true,
                value: Some(b"\x30\x05\x02\x01\x05\x04\x00"),
            },
            Control {
                oid: b"2.16.840.1.113730.3.4.18",
                critical: false,
                value: Some(b"dn:uid=p,dc=example,dc=com"),
            },
        ];
        let n = (limits.1 % 3) as usize;
        pdu(ProtocolOp::SearchRequest(req), &controls[..n])
    }

    fn searches() -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        for (i, scope) in [
            SearchScope::Base,
            SearchScope::OneLevel,
            SearchScope::Subtree,
            SearchScope::Subordinate,
        ]
        .into_iter()
        .enumerate()
        {
            for deref in [
                DerefAliases::Never,
                DerefAliases::InSearching,
                DerefAliases::FindingBaseObject,
                DerefAliases::Always,
            ] {
                let attrs: [&[u8]; 3] = [b"cn", b"1.1", b"+"];
                let limits = [(0, 0), (1, 1), (500, 2), (i32::MAX as u32, 127), (128, 128)][i];
                all.push(search(scope, deref, limits, &attrs[..i % 4]));
            }
        }
        all
    }

    #[test]
    fn a_skimmed_search_is_the_decoded_one() {
        for p in searches() {
            let full = LdapMessage::decode(&p).unwrap();
            assert_eq!(skim_search(&p), Some(full));
            assert_eq!(decode(&op(&p, 0x65)), Some(full));
        }
    }

    /// A search that ended on the connection's task carries the request path's decoding:
    /// it is taken as it is, and every line of both formats at every level reads the same
    /// as from the PDU alone.
    #[test]
    fn the_request_paths_decoding_is_taken_as_it_is_and_prints_the_same_lines() {
        use crate::accesslog::event::Event;
        use crate::accesslog::level::Level;
        use crate::accesslog::time::TimeCache;
        use crate::accesslog::{format_389, format_json};
        let mut pdus = searches();
        pdus.push(pdu(ProtocolOp::DelRequest(DelRequest { dn: b"cn=a" }), &[]));
        for p in pdus {
            let from_pdu = op(&p, 0x65);
            let msg = LdapMessage::decode(&p).unwrap();
            let mut decoded = from_pdu.clone();
            decoded.decoded = Some(&msg);
            let mut without_pdu = decoded.clone();
            without_pdu.request = &[];
            assert_eq!(decode(&without_pdu), Some(msg));
            for level in [Level::Results, Level::Default, Level::Full] {
                let lines = |o: &Op<'_>| {
                    let (mut text, mut json) = (Vec::new(), Vec::new());
                    let event = Event::Op(o.clone());
                    format_389::write(&mut text, &event, level, &mut TimeCache::new());
                    format_json::write(&mut json, &event, level, &mut TimeCache::new(), 1_795_341_600);
                    (String::from_utf8(text).unwrap(), String::from_utf8(json).unwrap())
                };
                assert_eq!(lines(&decoded), lines(&from_pdu), "{level:?} {p:02x?}");
            }
        }
    }

    #[test]
    fn other_requests_are_decoded_in_full_and_the_skim_refuses_them() {
        let ops = [
            ProtocolOp::BindRequest(BindRequest {
                version: 3,
                name: b"cn=a",
                authentication: Authentication::Simple(b"pw"),
            }),
            ProtocolOp::UnbindRequest,
            ProtocolOp::DelRequest(DelRequest { dn: b"cn=a" }),
            ProtocolOp::AbandonRequest(AbandonRequest { message_id: 3 }),
            ProtocolOp::ExtendedRequest(ExtendedRequest {
                name: b"1.3.6.1.4.1.4203.1.11.3",
                value: None,
            }),
        ];
        for o in ops {
            let p = pdu(o, &[]);
            assert_eq!(skim_search(&p), None);
            assert_eq!(decode(&op(&p, 0)), Some(LdapMessage::decode(&p).unwrap()));
        }
        let p = search(SearchScope::Base, DerefAliases::Never, (0, 0), &[]);
        let mut undecodable = op(&p, 0);
        undecodable.undecodable = true;
        assert_eq!(decode(&undecodable), None);
        assert_eq!(decode(&op(&[], 0)), None);
    }

    #[test]
    fn elements_and_integers_read_as_the_decoder_reads_them() {
        use larch_proto::ber::Reader;
        let cases: [&[u8]; 8] = [
            &[0x04, 0x00],
            &[0x04, 0x02, b'a', b'b', 0xff],
            &[0x04, 0x81, 0x01, b'x'],
            &[0x30, 0x82, 0x00, 0x01, 0x05],
            &[0x04, 0x84, 0x00, 0x00, 0x00, 0x00],
            &[0x04, 0x03, b'a'],
            &[0x04, 0x80, 0x00, 0x00],
            &[0x1f, 0x01, 0x00],
        ];
        for b in cases {
            let mut r = Reader::new(b);
            let decoded = r.read_any("t").ok().map(|(t, c, _)| (t, c, r.remaining()));
            assert_eq!(element(b), decoded, "{b:02x?}");
        }
        assert_eq!(element(&[0x04, 0x85, 0, 0, 0, 0, 0]), None);
        for (c, v) in [
            (&[0x00][..], Some(0)),
            (&[0x05], Some(5)),
            (&[0x00, 0x80], Some(128)),
            (&[0x7f, 0xff, 0xff, 0xff], Some(i32::MAX as u32)),
            (&[0x80], None),
            (&[0xff, 0xff], None),
            (&[], None),
            (&[0x00, 0x00, 0x00, 0x00, 0x01], None),
        ] {
            assert_eq!(small_integer(c), v, "{c:02x?}");
        }
    }

    /// Every octet of every search changed to a few values, and every cut: wherever the
    /// request path's decoding accepts the octets, the skim reads the same message; nowhere
    /// does it panic.
    #[test]
    fn damaged_searches_skim_as_they_decode_or_not_at_all() {
        let mut accepted = 0;
        for p in searches() {
            let mut variants = Vec::new();
            for at in 0..p.len() {
                variants.push(p[..at].to_vec());
                for v in [0x00, 0x01, 0x04, 0x0a, 0x30, 0x63, 0x7f, 0x80, 0x81, 0xa0, 0xff] {
                    let mut d = p.clone();
                    d[at] = v;
                    variants.push(d);
                }
            }
            for d in &variants {
                let skimmed = skim_search(d);
                if let Ok(full) = LdapMessage::decode(d) {
                    if let ProtocolOp::SearchRequest(_) = full.op {
                        accepted += 1;
                        assert_eq!(skimmed, Some(full), "{d:02x?}");
                    }
                }
            }
        }
        assert!(accepted > 100, "{accepted} damaged searches still decoded");
    }
}
