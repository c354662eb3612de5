//! Differential tests of larch-proto against `rasn-ldap` (a derive-generated RFC 4511 model on
//! top of the `rasn` BER codec), in both directions:
//!
//! - (a) rasn encodes a generated message, larch-proto decodes it, the decoded view is
//!   converted back into a `rasn_ldap::LdapMessage` and must equal the original;
//! - (b) a larch-proto message is built from the generated value (borrowing its data), encoded
//!   by larch-proto, decoded by rasn, and must equal the original;
//! - (c) the octets both encoders produce are compared.
//!
//! SET OF: `rasn::types::SetOf` equality only checks the length and mutual containment
//! (`[a, a, b] == [a, b, b]` for rasn), and rasn's BER encoder sorts the elements of a SET OF by
//! their encodings (X.690 section 11.6, also applied to BER), while larch-proto keeps the order
//! it is given. So messages are compared through [`canonical`], which sorts every SET OF (the
//! attribute value sets and the `and` / `or` filter sets) recursively and prints the result with
//! `Debug`: two messages print the same exactly when every SET OF holds the same multiset.
//!
//! Octets: rasn writes minimal definite lengths (`complete_length` in `rasn::ber::enc`, the
//! long form only from 128 octets on, with the fewest length octets), minimal two's-complement
//! INTEGER/ENUMERATED contents, BOOLEAN TRUE as 0xFF and leaves out DEFAULT values (control
//! criticality and `dnAttributes` when FALSE). That is what larch-proto's writer does too, so
//! the encodings must be identical whenever the element order agrees: always for messages
//! without a SET OF of two or more elements, and for every message once the SET OF elements are
//! put in rasn's sorted order (which is what a rasn decode of rasn's own output gives).

use std::fmt::Debug;

use larch_proto as l;
use larch_proto::controls::Control;
use proptest::collection::vec;
use proptest::prelude::*;
use rasn::types::{Enumerated, OctetString, SetOf};
use rasn_ldap as r;

// ------------------------------------------------------------------------------------------
// Strategies for rasn_ldap values.
// ------------------------------------------------------------------------------------------

/// Arbitrary octets: mostly short, sometimes drawn from a two-symbol alphabet (so SET OF
/// values repeat, and empty values are common), sometimes long enough for long-form lengths.
fn octets() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => vec(any::<u8>(), 0..12),
        2 => vec(0u8..2, 0..2),
        1 => vec(any::<u8>(), 120..300),
    ]
}

fn octet_string() -> impl Strategy<Value = OctetString> {
    octets().prop_map(OctetString::from)
}

/// Valid UTF-8 text (rasn's `LdapString` refuses anything else).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-zA-Z0-9=,.;+ *()-]{0,12}",
        2 => vec(any::<char>(), 0..6).prop_map(String::from_iter),
        1 => "[ab]{0,1}",
        1 => "[a-z]{120,200}",
    ]
}

fn ldap_string() -> impl Strategy<Value = r::LdapString> {
    text().prop_map(r::LdapString)
}

/// `INTEGER (0 .. maxInt)` with the boundaries of the one- and two-octet encodings.
fn int_0_max() -> impl Strategy<Value = u32> {
    prop_oneof![
        1 => prop::sample::select(vec![0u32, 1, 127, 128, 255, 256, 32767, 32768, i32::MAX as u32]),
        3 => 0..=i32::MAX as u32,
    ]
}

fn control() -> impl Strategy<Value = r::Control> {
    (octet_string(), any::<bool>(), prop::option::of(octet_string()))
        .prop_map(|(oid, critical, value)| r::Control::new(oid, critical, value))
}

fn controls() -> impl Strategy<Value = Option<Vec<r::Control>>> {
    prop::option::weighted(0.4, vec(control(), 0..3))
}

fn result_code() -> impl Strategy<Value = r::ResultCode> {
    prop::sample::select(r::ResultCode::VARIANTS)
}

fn referral() -> impl Strategy<Value = Option<r::Referral>> {
    prop::option::weighted(0.3, vec(ldap_string(), 1..3))
}

fn ldap_result() -> impl Strategy<Value = r::LdapResult> {
    (result_code(), ldap_string(), ldap_string(), referral()).prop_map(|(code, matched, diag, referral)| {
        let mut result = r::LdapResult::new(code, matched, diag);
        result.referral = referral;
        result
    })
}

fn ava() -> impl Strategy<Value = r::AttributeValueAssertion> {
    (ldap_string(), octet_string()).prop_map(|(d, v)| r::AttributeValueAssertion::new(d, v))
}

/// Substrings in the order RFC 4511 section 4.5.1.7.2 requires: at most one `initial` (first),
/// any number of `any`, at most one `final` (last), at least one part.
fn substring_filter() -> impl Strategy<Value = r::SubstringFilter> {
    (
        ldap_string(),
        prop::option::of(octet_string()),
        vec(octet_string(), 0..3),
        prop::option::of(octet_string()),
    )
        .prop_map(|(ty, initial, any, final_)| {
            let mut parts = Vec::new();
            parts.extend(initial.map(r::SubstringChoice::Initial));
            parts.extend(any.into_iter().map(r::SubstringChoice::Any));
            parts.extend(final_.map(r::SubstringChoice::Final));
            if parts.is_empty() {
                parts.push(r::SubstringChoice::Any(OctetString::from_static(b"x")));
            }
            r::SubstringFilter::new(ty, parts)
        })
}

/// An extensible match with a rule, a type or both (RFC 4511 section 4.5.1.7.7).
fn matching_rule_assertion() -> impl Strategy<Value = r::MatchingRuleAssertion> {
    let rule_and_type = prop_oneof![
        ldap_string().prop_map(|rule| (Some(rule), None)),
        ldap_string().prop_map(|ty| (None, Some(ty))),
        (ldap_string(), ldap_string()).prop_map(|(rule, ty)| (Some(rule), Some(ty))),
    ];
    (rule_and_type, octet_string(), any::<bool>())
        .prop_map(|((rule, ty), value, dn)| r::MatchingRuleAssertion::new(rule, ty, value, dn))
}

/// Every filter choice, `and` / `or` / `not` nested up to 4 levels.
fn filter() -> impl Strategy<Value = r::Filter> {
    let leaf = prop_oneof![
        ava().prop_map(r::Filter::EqualityMatch),
        substring_filter().prop_map(r::Filter::Substrings),
        ava().prop_map(r::Filter::GreaterOrEqual),
        ava().prop_map(r::Filter::LessOrEqual),
        ldap_string().prop_map(r::Filter::Present),
        ava().prop_map(r::Filter::ApproxMatch),
        matching_rule_assertion().prop_map(r::Filter::ExtensibleMatch),
    ];
    leaf.prop_recursive(4, 64, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(|v| r::Filter::And(SetOf::from_vec(v))),
            vec(inner.clone(), 0..4).prop_map(|v| r::Filter::Or(SetOf::from_vec(v))),
            inner.prop_map(|f| r::Filter::Not(Box::new(f))),
        ]
    })
}

fn value_set(min: usize) -> impl Strategy<Value = SetOf<OctetString>> {
    vec(octet_string(), min..4).prop_map(SetOf::from_vec)
}

fn partial_attribute() -> impl Strategy<Value = r::PartialAttribute> {
    (ldap_string(), value_set(0)).prop_map(|(ty, vals)| r::PartialAttribute::new(ty, vals))
}

fn protocol_op() -> impl Strategy<Value = r::ProtocolOp> {
    use r::ProtocolOp as P;
    let authentication = prop_oneof![
        octet_string().prop_map(r::AuthenticationChoice::Simple),
        (ldap_string(), prop::option::of(octet_string()))
            .prop_map(|(m, c)| r::AuthenticationChoice::Sasl(r::SaslCredentials::new(m, c))),
    ];
    let scope = prop::sample::select(r::SearchRequestScope::VARIANTS);
    let deref = prop::sample::select(r::SearchRequestDerefAliases::VARIANTS);
    let operation = prop::sample::select(r::ChangeOperation::VARIANTS);
    prop_oneof![
        (1u8..=127, ldap_string(), authentication)
            .prop_map(|(v, n, a)| P::BindRequest(r::BindRequest::new(v, n, a))),
        (ldap_result(), prop::option::of(octet_string())).prop_map(|(res, creds)| {
            P::BindResponse(r::BindResponse::new(
                res.result_code,
                res.matched_dn,
                res.diagnostic_message,
                res.referral,
                creds,
            ))
        }),
        Just(P::UnbindRequest(r::UnbindRequest)),
        (
            ldap_string(),
            scope,
            deref,
            int_0_max(),
            int_0_max(),
            any::<bool>(),
            filter(),
            vec(ldap_string(), 0..4)
        )
            .prop_map(|(base, scope, deref, size, time, types_only, filter, attrs)| {
                P::SearchRequest(r::SearchRequest::new(
                    base, scope, deref, size, time, types_only, filter, attrs,
                ))
            }),
        (ldap_string(), vec(partial_attribute(), 0..4))
            .prop_map(|(dn, attrs)| P::SearchResEntry(r::SearchResultEntry::new(dn, attrs))),
        ldap_result().prop_map(|res| P::SearchResDone(r::SearchResultDone(res))),
        vec(ldap_string(), 1..4).prop_map(|uris| P::SearchResRef(r::SearchResultReference(uris))),
        (
            ldap_string(),
            vec(
                (operation, partial_attribute()).prop_map(|(operation, modification)| {
                    r::ModifyRequestChanges {
                        operation,
                        modification,
                    }
                }),
                0..4
            )
        )
            .prop_map(|(object, changes)| P::ModifyRequest(r::ModifyRequest { object, changes })),
        ldap_result().prop_map(|res| P::ModifyResponse(r::ModifyResponse(res))),
        (
            ldap_string(),
            vec(
                (ldap_string(), value_set(1)).prop_map(|(ty, vals)| r::Attribute::new(ty, vals)),
                0..4
            )
        )
            .prop_map(|(entry, attributes)| P::AddRequest(r::AddRequest { entry, attributes })),
        ldap_result().prop_map(|res| P::AddResponse(r::AddResponse(res))),
        ldap_string().prop_map(|dn| P::DelRequest(r::DelRequest(dn))),
        ldap_result().prop_map(|res| P::DelResponse(r::DelResponse(res))),
        (
            ldap_string(),
            ldap_string(),
            any::<bool>(),
            prop::option::of(ldap_string())
        )
            .prop_map(|(entry, new_rdn, delete_old_rdn, new_superior)| {
                P::ModDnRequest(r::ModifyDnRequest {
                    entry,
                    new_rdn,
                    delete_old_rdn,
                    new_superior,
                })
            }),
        ldap_result().prop_map(|res| P::ModDnResponse(r::ModifyDnResponse(res))),
        (ldap_string(), ava()).prop_map(|(entry, ava)| P::CompareRequest(r::CompareRequest { entry, ava })),
        ldap_result().prop_map(|res| P::CompareResponse(r::CompareResponse(res))),
        int_0_max().prop_map(|id| P::AbandonRequest(r::AbandonRequest(id))),
        (octet_string(), prop::option::of(octet_string())).prop_map(|(request_name, request_value)| {
            P::ExtendedReq(r::ExtendedRequest {
                request_name,
                request_value,
            })
        }),
        (
            ldap_result(),
            prop::option::of(octet_string()),
            prop::option::of(octet_string())
        )
            .prop_map(|(res, response_name, response_value)| {
                P::ExtendedResp(r::ExtendedResponse {
                    result_code: res.result_code,
                    matched_dn: res.matched_dn,
                    diagnostic_message: res.diagnostic_message,
                    referral: res.referral,
                    response_name,
                    response_value,
                })
            }),
        (prop::option::of(octet_string()), prop::option::of(octet_string())).prop_map(
            |(response_name, response_value)| {
                P::IntermediateResponse(r::IntermediateResponse {
                    response_name,
                    response_value,
                })
            }
        ),
    ]
}

fn message() -> impl Strategy<Value = r::LdapMessage> {
    (int_0_max(), protocol_op(), controls()).prop_map(|(id, op, controls)| {
        let mut m = r::LdapMessage::new(id, op);
        m.controls = controls;
        m
    })
}

// ------------------------------------------------------------------------------------------
// Comparison helpers.
// ------------------------------------------------------------------------------------------

fn debug_key<T: Debug>(value: &T) -> String {
    format!("{value:?}")
}

fn sort_set<T: Eq + Debug>(set: &mut SetOf<T>, mut canon: impl FnMut(&mut T)) {
    let mut items = std::mem::take(set).into_vec();
    items.iter_mut().for_each(&mut canon);
    items.sort_by_cached_key(debug_key);
    *set = SetOf::from_vec(items);
}

fn canonical_filter(f: &mut r::Filter) {
    match f {
        r::Filter::And(set) | r::Filter::Or(set) => sort_set(set, canonical_filter),
        r::Filter::Not(inner) => canonical_filter(inner),
        _ => {}
    }
}

/// The message with every SET OF sorted, printed: equal strings mean equal messages with
/// SET OF compared as multisets (and everything else compared exactly, in order).
fn canonical(m: &r::LdapMessage) -> String {
    let mut m = m.clone();
    match &mut m.protocol_op {
        r::ProtocolOp::SearchRequest(s) => canonical_filter(&mut s.filter),
        r::ProtocolOp::SearchResEntry(e) => e
            .attributes
            .iter_mut()
            .for_each(|a| sort_set(&mut a.vals, |_| {})),
        r::ProtocolOp::AddRequest(a) => a
            .attributes
            .iter_mut()
            .for_each(|a| sort_set(&mut a.vals, |_| {})),
        r::ProtocolOp::ModifyRequest(mr) => mr
            .changes
            .iter_mut()
            .for_each(|c| sort_set(&mut c.modification.vals, |_| {})),
        _ => {}
    }
    debug_key(&m)
}

fn filter_has_multi_set(f: &r::Filter) -> bool {
    match f {
        r::Filter::And(set) | r::Filter::Or(set) => set.len() > 1 || set.iter().any(filter_has_multi_set),
        r::Filter::Not(inner) => filter_has_multi_set(inner),
        _ => false,
    }
}

/// True when the message holds a SET OF with two or more elements, the only case where rasn
/// may reorder what it encodes.
fn has_multi_element_set(m: &r::LdapMessage) -> bool {
    match &m.protocol_op {
        r::ProtocolOp::SearchRequest(s) => filter_has_multi_set(&s.filter),
        r::ProtocolOp::SearchResEntry(e) => e.attributes.iter().any(|a| a.vals.len() > 1),
        r::ProtocolOp::AddRequest(a) => a.attributes.iter().any(|a| a.vals.len() > 1),
        r::ProtocolOp::ModifyRequest(mr) => mr.changes.iter().any(|c| c.modification.vals.len() > 1),
        _ => false,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ------------------------------------------------------------------------------------------
// larch-proto view -> rasn value.
// ------------------------------------------------------------------------------------------

fn to_string(b: &[u8]) -> r::LdapString {
    r::LdapString(String::from_utf8(b.to_vec()).expect("an LDAPString that rasn encoded is UTF-8"))
}

fn to_octets(b: &[u8]) -> OctetString {
    OctetString::from_slice(b)
}

fn to_code(code: l::ResultCode) -> r::ResultCode {
    r::ResultCode::from_discriminant(code.0 as isize).expect("a result code rasn knows")
}

fn to_referral(uris: Option<l::SeqOf<'_, &[u8]>>) -> Option<r::Referral> {
    uris.map(|u| u.iter().map(to_string).collect())
}

fn to_result(res: &l::LdapResult<'_>) -> r::LdapResult {
    let mut out = r::LdapResult::new(
        to_code(res.code),
        to_string(res.matched_dn),
        to_string(res.diagnostic_message),
    );
    out.referral = to_referral(res.referral);
    out
}

fn to_filter(f: l::Filter<'_>) -> r::Filter {
    let ava = |a: l::AttributeValueAssertion<'_>| {
        r::AttributeValueAssertion::new(to_string(a.description), to_octets(a.value))
    };
    match f.node() {
        l::FilterNode::And(set) => r::Filter::And(SetOf::from_vec(set.iter().map(to_filter).collect())),
        l::FilterNode::Or(set) => r::Filter::Or(SetOf::from_vec(set.iter().map(to_filter).collect())),
        l::FilterNode::Not(inner) => r::Filter::Not(Box::new(to_filter(inner))),
        l::FilterNode::Equality(a) => r::Filter::EqualityMatch(ava(a)),
        l::FilterNode::GreaterOrEqual(a) => r::Filter::GreaterOrEqual(ava(a)),
        l::FilterNode::LessOrEqual(a) => r::Filter::LessOrEqual(ava(a)),
        l::FilterNode::Approx(a) => r::Filter::ApproxMatch(ava(a)),
        l::FilterNode::Present(d) => r::Filter::Present(to_string(d)),
        l::FilterNode::Substrings(s) => r::Filter::Substrings(r::SubstringFilter::new(
            to_string(s.description),
            s.substrings
                .iter()
                .map(|part| match part {
                    l::Substring::Initial(v) => r::SubstringChoice::Initial(to_octets(v)),
                    l::Substring::Any(v) => r::SubstringChoice::Any(to_octets(v)),
                    l::Substring::Final(v) => r::SubstringChoice::Final(to_octets(v)),
                })
                .collect(),
        )),
        l::FilterNode::Extensible(m) => r::Filter::ExtensibleMatch(r::MatchingRuleAssertion::new(
            m.rule.map(to_string),
            m.description.map(to_string),
            to_octets(m.value),
            m.dn_attributes,
        )),
        l::FilterNode::Unknown { tag } => panic!("larch-proto did not recognise filter tag 0x{tag:02x}"),
    }
}

fn to_attribute_parts(a: l::PartialAttribute<'_>) -> (r::LdapString, SetOf<OctetString>) {
    (
        to_string(a.description),
        SetOf::from_vec(a.values.iter().map(to_octets).collect()),
    )
}

/// Converts a decoded larch-proto message into the rasn model.
fn to_rasn(m: &l::LdapMessage<'_>) -> r::LdapMessage {
    use l::ProtocolOp as O;
    use r::ProtocolOp as P;
    let op = match m.op {
        O::BindRequest(b) => P::BindRequest(r::BindRequest::new(
            b.version,
            to_string(b.name),
            match b.authentication {
                l::Authentication::Simple(p) => r::AuthenticationChoice::Simple(to_octets(p)),
                l::Authentication::Sasl {
                    mechanism,
                    credentials,
                } => r::AuthenticationChoice::Sasl(r::SaslCredentials::new(
                    to_string(mechanism),
                    credentials.map(to_octets),
                )),
                l::Authentication::Other { tag, .. } => {
                    panic!("larch-proto did not recognise authentication tag 0x{tag:02x}")
                }
            },
        )),
        O::BindResponse(b) => P::BindResponse(r::BindResponse::new(
            to_code(b.result.code),
            to_string(b.result.matched_dn),
            to_string(b.result.diagnostic_message),
            to_referral(b.result.referral),
            b.server_sasl_creds.map(to_octets),
        )),
        O::UnbindRequest => P::UnbindRequest(r::UnbindRequest),
        O::SearchRequest(s) => P::SearchRequest(r::SearchRequest::new(
            to_string(s.base),
            match s.scope {
                l::SearchScope::Base => r::SearchRequestScope::BaseObject,
                l::SearchScope::OneLevel => r::SearchRequestScope::SingleLevel,
                l::SearchScope::Subtree => r::SearchRequestScope::WholeSubtree,
                l::SearchScope::Subordinate => panic!("rasn-ldap has no subordinateSubtree scope"),
            },
            match s.deref_aliases {
                l::DerefAliases::Never => r::SearchRequestDerefAliases::NeverDerefAliases,
                l::DerefAliases::InSearching => r::SearchRequestDerefAliases::DerefInSearching,
                l::DerefAliases::FindingBaseObject => r::SearchRequestDerefAliases::DerefFindingBaseObj,
                l::DerefAliases::Always => r::SearchRequestDerefAliases::DerefAlways,
            },
            s.size_limit,
            s.time_limit,
            s.types_only,
            to_filter(s.filter),
            s.attributes.iter().map(to_string).collect(),
        )),
        O::SearchResultEntry(e) => P::SearchResEntry(r::SearchResultEntry::new(
            to_string(e.object_name),
            e.attributes
                .iter()
                .map(|a| {
                    let (ty, vals) = to_attribute_parts(a);
                    r::PartialAttribute::new(ty, vals)
                })
                .collect(),
        )),
        O::SearchResultDone(res) => P::SearchResDone(r::SearchResultDone(to_result(&res))),
        O::SearchResultReference(refs) => P::SearchResRef(r::SearchResultReference(
            refs.uris.iter().map(to_string).collect(),
        )),
        O::ModifyRequest(mr) => P::ModifyRequest(r::ModifyRequest {
            object: to_string(mr.object),
            changes: mr
                .changes
                .iter()
                .map(|c| {
                    let (ty, vals) = to_attribute_parts(c.modification);
                    r::ModifyRequestChanges {
                        operation: match c.operation {
                            l::ModifyOperation::Add => r::ChangeOperation::Add,
                            l::ModifyOperation::Delete => r::ChangeOperation::Delete,
                            l::ModifyOperation::Replace => r::ChangeOperation::Replace,
                            l::ModifyOperation::Increment => panic!("rasn-ldap has no increment"),
                        },
                        modification: r::PartialAttribute::new(ty, vals),
                    }
                })
                .collect(),
        }),
        O::ModifyResponse(res) => P::ModifyResponse(r::ModifyResponse(to_result(&res))),
        O::AddRequest(a) => P::AddRequest(r::AddRequest {
            entry: to_string(a.entry),
            attributes: a
                .attributes
                .iter()
                .map(|a| {
                    let (ty, vals) = to_attribute_parts(a);
                    r::Attribute::new(ty, vals)
                })
                .collect(),
        }),
        O::AddResponse(res) => P::AddResponse(r::AddResponse(to_result(&res))),
        O::DelRequest(d) => P::DelRequest(r::DelRequest(to_string(d.dn))),
        O::DelResponse(res) => P::DelResponse(r::DelResponse(to_result(&res))),
        O::ModifyDnRequest(md) => P::ModDnRequest(r::ModifyDnRequest {
            entry: to_string(md.entry),
            new_rdn: to_string(md.new_rdn),
            delete_old_rdn: md.delete_old_rdn,
            new_superior: md.new_superior.map(to_string),
        }),
        O::ModifyDnResponse(res) => P::ModDnResponse(r::ModifyDnResponse(to_result(&res))),
        O::CompareRequest(c) => P::CompareRequest(r::CompareRequest {
            entry: to_string(c.entry),
            ava: r::AttributeValueAssertion::new(to_string(c.ava.description), to_octets(c.ava.value)),
        }),
        O::CompareResponse(res) => P::CompareResponse(r::CompareResponse(to_result(&res))),
        O::AbandonRequest(a) => P::AbandonRequest(r::AbandonRequest(
            u32::try_from(a.message_id).expect("non-negative"),
        )),
        O::ExtendedRequest(e) => P::ExtendedReq(r::ExtendedRequest {
            request_name: to_octets(e.name),
            request_value: e.value.map(to_octets),
        }),
        O::ExtendedResponse(e) => P::ExtendedResp(r::ExtendedResponse {
            result_code: to_code(e.result.code),
            matched_dn: to_string(e.result.matched_dn),
            diagnostic_message: to_string(e.result.diagnostic_message),
            referral: to_referral(e.result.referral),
            response_name: e.name.map(to_octets),
            response_value: e.value.map(to_octets),
        }),
        O::IntermediateResponse(i) => P::IntermediateResponse(r::IntermediateResponse {
            response_name: i.name.map(to_octets),
            response_value: i.value.map(to_octets),
        }),
    };
    let mut out = r::LdapMessage::new(u32::try_from(m.message_id).expect("non-negative"), op);
    out.controls = m.controls.map(|cs| {
        cs.iter()
            .map(|c| r::Control::new(to_octets(c.oid), c.critical, c.value.map(to_octets)))
            .collect()
    });
    out
}

// ------------------------------------------------------------------------------------------
// rasn value -> larch-proto message (borrowing), encoded.
// ------------------------------------------------------------------------------------------

fn build_filter(b: &mut l::FilterBuilder, f: &r::Filter) {
    match f {
        r::Filter::And(set) => {
            b.begin_and();
            set.iter().for_each(|x| build_filter(b, x));
            b.end();
        }
        r::Filter::Or(set) => {
            b.begin_or();
            set.iter().for_each(|x| build_filter(b, x));
            b.end();
        }
        r::Filter::Not(inner) => {
            b.begin_not();
            build_filter(b, inner);
            b.end();
        }
        r::Filter::EqualityMatch(a) => {
            b.equality(a.attribute_desc.as_bytes(), &a.assertion_value);
        }
        r::Filter::GreaterOrEqual(a) => {
            b.greater_or_equal(a.attribute_desc.as_bytes(), &a.assertion_value);
        }
        r::Filter::LessOrEqual(a) => {
            b.less_or_equal(a.attribute_desc.as_bytes(), &a.assertion_value);
        }
        r::Filter::ApproxMatch(a) => {
            b.approx(a.attribute_desc.as_bytes(), &a.assertion_value);
        }
        r::Filter::Present(d) => {
            b.present(d.as_bytes());
        }
        r::Filter::Substrings(s) => {
            // The builder writes initial, the any parts, then final: the generated order.
            let mut initial = None;
            let mut any: Vec<&[u8]> = Vec::new();
            let mut final_ = None;
            for part in &s.substrings {
                match part {
                    r::SubstringChoice::Initial(v) => initial = Some(&v[..]),
                    r::SubstringChoice::Any(v) => any.push(v),
                    r::SubstringChoice::Final(v) => final_ = Some(&v[..]),
                    _ => panic!("unknown substring choice"),
                }
            }
            b.substrings(s.r#type.as_bytes(), initial, &any, final_);
        }
        r::Filter::ExtensibleMatch(m) => {
            b.extensible(
                m.matching_rule.as_ref().map(|x| x.as_bytes()),
                m.r#type.as_ref().map(|x| x.as_bytes()),
                &m.match_value,
                m.dn_attributes,
            );
        }
        _ => panic!("unknown filter choice"),
    }
}

fn emit(id: u32, op: l::ProtocolOp<'_>, controls: Option<&[Control<'_>]>) -> Vec<u8> {
    let msg = l::LdapMessage {
        message_id: i32::try_from(id).expect("generated IDs are at most maxInt"),
        op,
        controls: controls.map(l::SeqOf::from_items),
    };
    let mut out = Vec::new();
    msg.encode(&mut out);
    out
}

fn uri_list(referral: &Option<r::Referral>) -> Option<Vec<&[u8]>> {
    referral
        .as_ref()
        .map(|uris| uris.iter().map(|u| u.as_bytes()).collect())
}

fn larch_result<'a>(
    code: r::ResultCode,
    matched: &'a r::LdapString,
    diag: &'a r::LdapString,
    uris: &'a Option<Vec<&'a [u8]>>,
) -> l::LdapResult<'a> {
    l::LdapResult {
        code: l::ResultCode(u32::try_from(code.discriminant()).expect("non-negative")),
        matched_dn: matched.as_bytes(),
        diagnostic_message: diag.as_bytes(),
        referral: uris.as_deref().map(l::SeqOf::from_items),
    }
}

fn value_lists<'r>(sets: impl Iterator<Item = &'r SetOf<OctetString>>) -> Vec<Vec<&'r [u8]>> {
    sets.map(|s| s.iter().map(|v| &v[..]).collect()).collect()
}

fn partial_attributes<'a>(
    types: impl Iterator<Item = &'a r::LdapString>,
    values: &'a [Vec<&'a [u8]>],
) -> Vec<l::PartialAttribute<'a>> {
    types
        .zip(values)
        .map(|(ty, vals)| l::PartialAttribute {
            description: ty.as_bytes(),
            values: l::SeqOf::from_items(vals),
        })
        .collect()
}

/// Builds the larch-proto message for `m`, borrowing all of its data, and encodes it.
fn larch_encode(m: &r::LdapMessage) -> Vec<u8> {
    use l::ProtocolOp as O;
    use r::ProtocolOp as P;
    let controls: Option<Vec<Control<'_>>> = m.controls.as_ref().map(|cs| {
        cs.iter()
            .map(|c| Control {
                oid: &c.control_type,
                critical: c.criticality,
                value: c.control_value.as_deref(),
            })
            .collect()
    });
    let ctl = controls.as_deref();
    let id = m.message_id;
    macro_rules! result_op {
        ($variant:ident, $res:expr) => {{
            let res = $res;
            let uris = uri_list(&res.referral);
            emit(
                id,
                O::$variant(larch_result(
                    res.result_code,
                    &res.matched_dn,
                    &res.diagnostic_message,
                    &uris,
                )),
                ctl,
            )
        }};
    }
    match &m.protocol_op {
        P::BindRequest(b) => {
            let authentication = match &b.authentication {
                r::AuthenticationChoice::Simple(p) => l::Authentication::Simple(p),
                r::AuthenticationChoice::Sasl(s) => l::Authentication::Sasl {
                    mechanism: s.mechanism.as_bytes(),
                    credentials: s.credentials.as_deref(),
                },
                _ => panic!("unknown authentication choice"),
            };
            let op = l::BindRequest {
                version: b.version,
                name: b.name.as_bytes(),
                authentication,
            };
            emit(id, O::BindRequest(op), ctl)
        }
        P::BindResponse(b) => {
            let uris = uri_list(&b.referral);
            let op = l::BindResponse {
                result: larch_result(b.result_code, &b.matched_dn, &b.diagnostic_message, &uris),
                server_sasl_creds: b.server_sasl_creds.as_deref(),
            };
            emit(id, O::BindResponse(op), ctl)
        }
        P::UnbindRequest(_) => emit(id, O::UnbindRequest, ctl),
        P::SearchRequest(s) => {
            let mut b = l::FilterBuilder::new();
            build_filter(&mut b, &s.filter);
            let filter = b.finish().expect("a generated filter is valid");
            let attrs: Vec<&[u8]> = s.attributes.iter().map(|a| a.as_bytes()).collect();
            let op = l::SearchRequest {
                base: s.base_object.as_bytes(),
                scope: match s.scope {
                    r::SearchRequestScope::BaseObject => l::SearchScope::Base,
                    r::SearchRequestScope::SingleLevel => l::SearchScope::OneLevel,
                    r::SearchRequestScope::WholeSubtree => l::SearchScope::Subtree,
                    _ => panic!("unknown scope"),
                },
                deref_aliases: match s.deref_aliases {
                    r::SearchRequestDerefAliases::NeverDerefAliases => l::DerefAliases::Never,
                    r::SearchRequestDerefAliases::DerefInSearching => l::DerefAliases::InSearching,
                    r::SearchRequestDerefAliases::DerefFindingBaseObj => l::DerefAliases::FindingBaseObject,
                    r::SearchRequestDerefAliases::DerefAlways => l::DerefAliases::Always,
                    _ => panic!("unknown derefAliases"),
                },
                size_limit: s.size_limit,
                time_limit: s.time_limit,
                types_only: s.types_only,
                filter: filter.as_filter(),
                attributes: l::SeqOf::from_items(&attrs),
            };
            emit(id, O::SearchRequest(op), ctl)
        }
        P::SearchResEntry(e) => {
            let values = value_lists(e.attributes.iter().map(|a| &a.vals));
            let attrs = partial_attributes(e.attributes.iter().map(|a| &a.r#type), &values);
            let op = l::SearchResultEntry {
                object_name: e.object_name.as_bytes(),
                attributes: l::SeqOf::from_items(&attrs),
            };
            emit(id, O::SearchResultEntry(op), ctl)
        }
        P::SearchResDone(d) => result_op!(SearchResultDone, &d.0),
        P::SearchResRef(refs) => {
            let uris: Vec<&[u8]> = refs.0.iter().map(|u| u.as_bytes()).collect();
            let op = l::SearchResultReference {
                uris: l::SeqOf::from_items(&uris),
            };
            emit(id, O::SearchResultReference(op), ctl)
        }
        P::ModifyRequest(mr) => {
            let values = value_lists(mr.changes.iter().map(|c| &c.modification.vals));
            let attrs = partial_attributes(mr.changes.iter().map(|c| &c.modification.r#type), &values);
            let changes: Vec<l::Change<'_>> = mr
                .changes
                .iter()
                .zip(attrs)
                .map(|(c, modification)| l::Change {
                    operation: match c.operation {
                        r::ChangeOperation::Add => l::ModifyOperation::Add,
                        r::ChangeOperation::Delete => l::ModifyOperation::Delete,
                        r::ChangeOperation::Replace => l::ModifyOperation::Replace,
                    },
                    modification,
                })
                .collect();
            let op = l::ModifyRequest {
                object: mr.object.as_bytes(),
                changes: l::SeqOf::from_items(&changes),
            };
            emit(id, O::ModifyRequest(op), ctl)
        }
        P::ModifyResponse(x) => result_op!(ModifyResponse, &x.0),
        P::AddRequest(a) => {
            let values = value_lists(a.attributes.iter().map(|a| &a.vals));
            let attrs = partial_attributes(a.attributes.iter().map(|a| &a.r#type), &values);
            let op = l::AddRequest {
                entry: a.entry.as_bytes(),
                attributes: l::SeqOf::from_items(&attrs),
            };
            emit(id, O::AddRequest(op), ctl)
        }
        P::AddResponse(x) => result_op!(AddResponse, &x.0),
        P::DelRequest(d) => emit(id, O::DelRequest(l::DelRequest { dn: d.0.as_bytes() }), ctl),
        P::DelResponse(x) => result_op!(DelResponse, &x.0),
        P::ModDnRequest(md) => {
            let op = l::ModifyDnRequest {
                entry: md.entry.as_bytes(),
                new_rdn: md.new_rdn.as_bytes(),
                delete_old_rdn: md.delete_old_rdn,
                new_superior: md.new_superior.as_ref().map(|s| s.as_bytes()),
            };
            emit(id, O::ModifyDnRequest(op), ctl)
        }
        P::ModDnResponse(x) => result_op!(ModifyDnResponse, &x.0),
        P::CompareRequest(c) => {
            let op = l::CompareRequest {
                entry: c.entry.as_bytes(),
                ava: l::AttributeValueAssertion {
                    description: c.ava.attribute_desc.as_bytes(),
                    value: &c.ava.assertion_value,
                },
            };
            emit(id, O::CompareRequest(op), ctl)
        }
        P::CompareResponse(x) => result_op!(CompareResponse, &x.0),
        P::AbandonRequest(a) => {
            let op = l::AbandonRequest {
                message_id: i32::try_from(a.0).expect("generated IDs are at most maxInt"),
            };
            emit(id, O::AbandonRequest(op), ctl)
        }
        P::ExtendedReq(e) => {
            let op = l::ExtendedRequest {
                name: &e.request_name,
                value: e.request_value.as_deref(),
            };
            emit(id, O::ExtendedRequest(op), ctl)
        }
        P::ExtendedResp(e) => {
            let uris = uri_list(&e.referral);
            let op = l::ExtendedResponse {
                result: larch_result(e.result_code, &e.matched_dn, &e.diagnostic_message, &uris),
                name: e.response_name.as_deref(),
                value: e.response_value.as_deref(),
            };
            emit(id, O::ExtendedResponse(op), ctl)
        }
        P::IntermediateResponse(i) => {
            let op = l::IntermediateResponse {
                name: i.response_name.as_deref(),
                value: i.response_value.as_deref(),
            };
            emit(id, O::IntermediateResponse(op), ctl)
        }
        _ => panic!("unknown protocolOp"),
    }
}

// ------------------------------------------------------------------------------------------
// Properties.
// ------------------------------------------------------------------------------------------

/// Cases per property: about 100 of each of the 21 operations, and a few seconds in a debug
/// build on two cores for all three properties together.
const CASES: u32 = 2048;

fn config() -> ProptestConfig {
    ProptestConfig {
        // No regression files next to the sources; a failure prints the minimal case.
        failure_persistence: None,
        ..ProptestConfig::with_cases(CASES)
    }
}

proptest! {
    #![proptest_config(config())]

    /// (a) rasn encodes, larch-proto decodes; the decoded view equals the original, and
    /// equals rasn's own decoding of the same octets element for element, in wire order.
    #[test]
    fn rasn_encoded_messages_decode_identically(msg in message()) {
        let bytes = rasn::ber::encode(&msg).expect("rasn encodes every generated message");
        let decoded = match l::LdapMessage::decode(&bytes) {
            Ok(d) => d,
            Err(e) => panic!("larch-proto refused rasn's encoding of {msg:?}: {e} ({})", hex(&bytes)),
        };
        let ours = to_rasn(&decoded);
        prop_assert_eq!(canonical(&ours), canonical(&msg), "bytes {}", hex(&bytes));
        let theirs: r::LdapMessage = rasn::ber::decode(&bytes).expect("rasn decodes its own output");
        prop_assert_eq!(debug_key(&ours), debug_key(&theirs), "bytes {}", hex(&bytes));
    }

    /// (b) larch-proto encodes from a message built over the rasn value's data, rasn decodes;
    /// the result equals the original (SET OF as multisets) and, since both sides keep the
    /// element order of the octets, equals it exactly.
    #[test]
    fn larch_encoded_messages_decode_identically_in_rasn(msg in message()) {
        let bytes = larch_encode(&msg);
        let back: r::LdapMessage = match rasn::ber::decode(&bytes) {
            Ok(b) => b,
            Err(e) => panic!("rasn refused larch-proto's encoding of {msg:?}: {e} ({})", hex(&bytes)),
        };
        prop_assert_eq!(canonical(&back), canonical(&msg), "bytes {}", hex(&bytes));
        prop_assert_eq!(debug_key(&back), debug_key(&msg), "element order was not kept");
        // larch-proto reads its own output back to the same message too.
        let ours = l::LdapMessage::decode(&bytes).expect("larch-proto decodes its own output");
        prop_assert_eq!(debug_key(&to_rasn(&ours)), debug_key(&msg));
    }

    /// (c) Both encoders write the same octets: directly when no SET OF has two or more
    /// elements, and always once the SET OF elements are in rasn's (sorted) order.
    #[test]
    fn encoders_agree_on_octets(msg in message()) {
        let theirs = rasn::ber::encode(&msg).expect("rasn encodes every generated message");
        if !has_multi_element_set(&msg) {
            prop_assert_eq!(hex(&larch_encode(&msg)), hex(&theirs), "for {:?}", msg);
        }
        let sorted: r::LdapMessage = rasn::ber::decode(&theirs).expect("rasn decodes its own output");
        prop_assert_eq!(hex(&larch_encode(&sorted)), hex(&theirs), "for {:?}", sorted);
    }
}

// ------------------------------------------------------------------------------------------
// Fixed cases.
// ------------------------------------------------------------------------------------------

/// Length and INTEGER encodings at the boundaries of the short and long forms.
#[test]
fn length_and_integer_boundaries_match_rasn() {
    for len in [0usize, 1, 127, 128, 255, 256, 65535, 65536] {
        let dn = "d".repeat(len);
        let msg = r::LdapMessage::new(5, r::ProtocolOp::DelRequest(r::DelRequest(r::LdapString(dn))));
        let theirs = rasn::ber::encode(&msg).unwrap();
        assert_eq!(larch_encode(&msg), theirs, "DN of {len} octets");
        let back = l::LdapMessage::decode(&theirs).unwrap();
        assert_eq!(debug_key(&to_rasn(&back)), debug_key(&msg));
    }
    for id in [
        0u32,
        1,
        127,
        128,
        255,
        256,
        32767,
        32768,
        65535,
        65536,
        0x7f_ffff,
        0x80_0000,
        i32::MAX as u32,
    ] {
        let msg = r::LdapMessage::new(id, r::ProtocolOp::AbandonRequest(r::AbandonRequest(id)));
        let theirs = rasn::ber::encode(&msg).unwrap();
        assert_eq!(larch_encode(&msg), theirs, "message ID {id}");
        let back = l::LdapMessage::decode(&theirs).unwrap();
        assert_eq!(back.message_id as u32, id);
    }
}

fn refuses(msg: &r::LdapMessage, why: &str) {
    let bytes = rasn::ber::encode(msg).expect("rasn encodes it");
    assert!(
        l::LdapMessage::decode(&bytes).is_err(),
        "larch-proto accepted {} ({why}): {msg:?}",
        hex(&bytes)
    );
}

/// rasn-ldap does not carry the size and range constraints of RFC 4511, so it encodes these
/// messages without complaint. Each violates RFC 4511, and larch-proto must refuse it.
#[test]
fn rasn_encodes_but_rfc4511_forbids() {
    use r::ProtocolOp as P;
    let s = |x: &str| r::LdapString(x.into());
    let done = |res| r::LdapMessage::new(1, P::SearchResDone(r::SearchResultDone(res)));
    let search = |filter| {
        r::LdapMessage::new(
            1,
            P::SearchRequest(r::SearchRequest::new(
                s(""),
                r::SearchRequestScope::BaseObject,
                r::SearchRequestDerefAliases::NeverDerefAliases,
                0,
                0,
                false,
                filter,
                vec![],
            )),
        )
    };
    let sub = |parts| search(r::Filter::Substrings(r::SubstringFilter::new(s("cn"), parts)));
    let v = |x: &'static [u8]| OctetString::from_static(x);

    // SearchResultReference ::= [APPLICATION 19] SEQUENCE SIZE (1..MAX) OF uri URI
    refuses(
        &r::LdapMessage::new(1, P::SearchResRef(r::SearchResultReference(vec![]))),
        "no URI",
    );
    // Referral ::= SEQUENCE SIZE (1..MAX) OF uri URI
    let mut res = r::LdapResult::new(r::ResultCode::Referral, s(""), s(""));
    res.referral = Some(vec![]);
    refuses(&done(res), "empty referral");
    // AttributeList: vals (SIZE(1..MAX))
    let attrs = vec![r::Attribute::new(s("cn"), SetOf::new())];
    refuses(
        &r::LdapMessage::new(
            1,
            P::AddRequest(r::AddRequest {
                entry: s("cn=x"),
                attributes: attrs,
            }),
        ),
        "attribute without values in an AddRequest",
    );
    // MessageID ::= INTEGER (0 .. maxInt)
    refuses(
        &r::LdapMessage::new(1 << 31, P::UnbindRequest(r::UnbindRequest)),
        "message ID 2^31",
    );
    refuses(
        &r::LdapMessage::new(u32::MAX, P::UnbindRequest(r::UnbindRequest)),
        "message ID 2^32-1",
    );
    refuses(
        &r::LdapMessage::new(1, P::AbandonRequest(r::AbandonRequest(1 << 31))),
        "abandon 2^31",
    );
    // version INTEGER (1 .. 127)
    for version in [0u8, 128, 255] {
        let bind = r::BindRequest::new(version, s(""), r::AuthenticationChoice::Simple(v(b"")));
        refuses(&r::LdapMessage::new(1, P::BindRequest(bind)), "bind version");
    }
    // sizeLimit / timeLimit INTEGER (0 .. maxInt)
    for (size, time) in [(1u32 << 31, 0u32), (0, 1 << 31), (u32::MAX, 0)] {
        let mut msg = search(r::Filter::Present(s("objectClass")));
        if let P::SearchRequest(req) = &mut msg.protocol_op {
            req.size_limit = size;
            req.time_limit = time;
        }
        refuses(&msg, "size or time limit above maxInt");
    }
    // substrings SEQUENCE SIZE (1..MAX); initial first, final last, each at most once.
    refuses(&sub(vec![]), "no substrings");
    refuses(
        &sub(vec![
            r::SubstringChoice::Any(v(b"a")),
            r::SubstringChoice::Initial(v(b"b")),
        ]),
        "initial after any",
    );
    refuses(
        &sub(vec![
            r::SubstringChoice::Final(v(b"a")),
            r::SubstringChoice::Any(v(b"b")),
        ]),
        "any after final",
    );
    refuses(
        &sub(vec![
            r::SubstringChoice::Final(v(b"a")),
            r::SubstringChoice::Final(v(b"b")),
        ]),
        "two finals",
    );
    refuses(
        &sub(vec![
            r::SubstringChoice::Initial(v(b"a")),
            r::SubstringChoice::Initial(v(b"b")),
        ]),
        "two initials",
    );
    // "If the matchingRule field is absent, the type field MUST be present" (4.5.1.7.7).
    let mra = r::MatchingRuleAssertion::new(None, None, v(b"x"), false);
    refuses(
        &search(r::Filter::ExtensibleMatch(mra)),
        "extensible match without rule or type",
    );
}

/// The other direction: RFC 4511 marks these enumerations extensible (`...`) and larch-proto
/// accepts the values later RFCs added, which rasn-ldap 0.30's closed enums refuse. larch-proto
/// must keep them intact; rasn's refusal is asserted to keep this list honest.
#[test]
fn extensions_larch_keeps_and_rasn_ldap_refuses() {
    let filter = l::OwnedFilter::parse("(objectClass=*)").unwrap();
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut buf = Vec::new();
    // subordinateSubtree scope (draft-sermersheim-ldap-subordinate-scope).
    l::LdapMessage::new(
        3,
        l::ProtocolOp::SearchRequest(l::SearchRequest {
            base: b"dc=x",
            scope: l::SearchScope::Subordinate,
            deref_aliases: l::DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: l::SeqOf::default(),
        }),
    )
    .encode(&mut buf);
    cases.push(("subordinateSubtree scope", std::mem::take(&mut buf)));
    // increment (RFC 4525).
    let one: [&[u8]; 1] = [b"1"];
    let changes = [l::Change {
        operation: l::ModifyOperation::Increment,
        modification: l::PartialAttribute {
            description: b"uidNumber",
            values: l::SeqOf::from_items(&one),
        },
    }];
    l::LdapMessage::new(
        4,
        l::ProtocolOp::ModifyRequest(l::ModifyRequest {
            object: b"cn=x",
            changes: l::SeqOf::from_items(&changes),
        }),
    )
    .encode(&mut buf);
    cases.push(("increment modification", std::mem::take(&mut buf)));
    // Result codes from RFC 3909, RFC 4528 and RFC 4533.
    for code in [
        l::ResultCode::CANCELED,
        l::ResultCode::ASSERTION_FAILED,
        l::ResultCode::E_SYNC_REFRESH_REQUIRED,
    ] {
        l::LdapMessage::new(
            5,
            l::ProtocolOp::ModifyResponse(l::LdapResult::new(code, b"", b"")),
        )
        .encode(&mut buf);
        cases.push(("result code outside RFC 4511's list", std::mem::take(&mut buf)));
    }
    for (what, bytes) in cases {
        let ours =
            l::LdapMessage::decode(&bytes).unwrap_or_else(|e| panic!("{what}: larch-proto refused: {e}"));
        let mut again = Vec::new();
        ours.encode(&mut again);
        assert_eq!(again, bytes, "{what}: larch-proto did not keep it intact");
        assert!(
            rasn::ber::decode::<r::LdapMessage>(&bytes).is_err(),
            "{what}: rasn-ldap now accepts it; update this test"
        );
    }
}

/// SET OF equality: rasn's `SetOf` compares as sets of distinct elements, so the comparison
/// used above must be stricter than rasn's own `==` (and must ignore order).
#[test]
fn canonical_comparison_is_a_multiset_comparison() {
    let v = |x: &'static [u8]| OctetString::from_static(x);
    let entry = |vals: Vec<OctetString>| {
        r::LdapMessage::new(
            1,
            r::ProtocolOp::SearchResEntry(r::SearchResultEntry::new(
                r::LdapString("cn=x".into()),
                vec![r::PartialAttribute::new(
                    r::LdapString("cn".into()),
                    SetOf::from_vec(vals),
                )],
            )),
        )
    };
    let aab = entry(vec![v(b"a"), v(b"a"), v(b"b")]);
    let abb = entry(vec![v(b"a"), v(b"b"), v(b"b")]);
    let bab = entry(vec![v(b"b"), v(b"a"), v(b"b")]);
    assert_eq!(aab, abb, "rasn's SetOf equality is set-like, as documented above");
    assert_ne!(canonical(&aab), canonical(&abb));
    assert_eq!(canonical(&abb), canonical(&bab));
    assert_ne!(debug_key(&abb), debug_key(&bab));
}

fn filter_features(f: &r::Filter, depth: usize, seen: &mut std::collections::BTreeSet<String>) {
    let mut add = |s: &str| {
        seen.insert(s.to_string());
    };
    add(&format!("filter depth {depth}"));
    match f {
        r::Filter::And(set) | r::Filter::Or(set) => {
            add(if matches!(f, r::Filter::And(_)) {
                "and"
            } else {
                "or"
            });
            if set.is_empty() {
                add("empty and/or");
            }
            set.iter().for_each(|x| filter_features(x, depth + 1, seen));
        }
        r::Filter::Not(inner) => {
            add("not");
            filter_features(inner, depth + 1, seen);
        }
        r::Filter::EqualityMatch(_) => add("equality"),
        r::Filter::GreaterOrEqual(_) => add(">="),
        r::Filter::LessOrEqual(_) => add("<="),
        r::Filter::ApproxMatch(_) => add("approx"),
        r::Filter::Present(_) => add("present"),
        r::Filter::Substrings(s) => {
            for part in &s.substrings {
                add(match part {
                    r::SubstringChoice::Initial(_) => "initial",
                    r::SubstringChoice::Any(_) => "any",
                    _ => "final",
                });
            }
        }
        r::Filter::ExtensibleMatch(m) => {
            add(match (&m.matching_rule, &m.r#type) {
                (Some(_), None) => "extensible rule",
                (None, Some(_)) => "extensible type",
                _ => "extensible rule and type",
            });
            if m.dn_attributes {
                add("extensible dnAttributes");
            }
        }
        _ => add("unknown filter"),
    }
}

/// The generator reaches every choice the properties claim to cover; without this, a
/// strategy that silently stopped producing some variant would leave the properties green.
#[test]
fn generator_covers_every_choice() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = message();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..2000 {
        let msg = strategy.new_tree(&mut runner).unwrap().current();
        let op = debug_key(&msg.protocol_op);
        seen.insert(op[..op.find('(').unwrap()].to_string());
        match &msg.controls {
            None => seen.insert("no controls".into()),
            Some(cs) if cs.is_empty() => seen.insert("empty controls".into()),
            Some(cs) => {
                for c in cs {
                    seen.insert(format!("control critical {}", c.criticality));
                    seen.insert(format!("control value {}", c.control_value.is_some()));
                }
                true
            }
        };
        if debug_key(&msg).contains("referral: Some") {
            seen.insert("referral".into());
        }
        if has_multi_element_set(&msg) {
            seen.insert("multi-element SET OF".into());
        }
        if rasn::ber::encode(&msg).unwrap().len() > 300 {
            seen.insert("long-form lengths".into());
        }
        match &msg.protocol_op {
            r::ProtocolOp::SearchRequest(s) => filter_features(&s.filter, 0, &mut seen),
            r::ProtocolOp::BindRequest(b) => {
                seen.insert(match &b.authentication {
                    r::AuthenticationChoice::Simple(_) => "simple bind".into(),
                    r::AuthenticationChoice::Sasl(c) => {
                        format!("sasl bind credentials {}", c.credentials.is_some())
                    }
                    _ => "other bind".into(),
                });
            }
            _ => {}
        }
    }
    let expected = [
        "BindRequest",
        "BindResponse",
        "UnbindRequest",
        "SearchRequest",
        "SearchResEntry",
        "SearchResDone",
        "SearchResRef",
        "ModifyRequest",
        "ModifyResponse",
        "AddRequest",
        "AddResponse",
        "DelRequest",
        "DelResponse",
        "ModDnRequest",
        "ModDnResponse",
        "CompareRequest",
        "CompareResponse",
        "AbandonRequest",
        "ExtendedReq",
        "ExtendedResp",
        "IntermediateResponse",
        "simple bind",
        "sasl bind credentials true",
        "sasl bind credentials false",
        "no controls",
        "empty controls",
        "control critical true",
        "control critical false",
        "control value true",
        "control value false",
        "referral",
        "multi-element SET OF",
        "long-form lengths",
        "and",
        "or",
        "not",
        "empty and/or",
        "equality",
        ">=",
        "<=",
        "approx",
        "present",
        "initial",
        "any",
        "final",
        "extensible rule",
        "extensible type",
        "extensible rule and type",
        "extensible dnAttributes",
        "filter depth 4",
    ];
    let missing: Vec<_> = expected.iter().filter(|e| !seen.contains(**e)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
    assert!(!seen.contains("filter depth 5"), "filters nest deeper than 4");
}
