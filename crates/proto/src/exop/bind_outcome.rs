//! Larch's cluster bind outcome ([`super::CLUSTER_BIND_OUTCOME`]): a cluster's follower
//! hands the outcome of a Bind it decided under password policy to the leader, which
//! records it in the account's entry (failure count, lockout, last success, grace logins)
//! as a bind on the leader would (`docs/cluster.md`, "Password policy across nodes").
//!
//! ```text
//! request:  ExtendedRequest { CLUSTER_BIND_OUTCOME, BindOutcomeRequest }
//! BindOutcomeRequest ::= SEQUENCE { account [0] OCTET STRING,
//!                                   outcome [1] ENUMERATED { failure (0), success (1),
//!                                                            graceLogin (2) },
//!                                   time    [2] INTEGER }
//! answer:   ExtendedResponse { result, responseName the request's OID,
//!                              BindOutcomeResponse with success }
//! BindOutcomeResponse ::= SEQUENCE { lsn [0] INTEGER }
//! ```
//!
//! `account` is the bound entry's DN (UTF-8, as the follower holds it); `time` when the
//! bind was decided, in microseconds since 1970 (0 to 2^63 - 1). `lsn` is the leader's
//! log position once the record is applied there (0 to 2^63 - 1): the follower holds the
//! record once it has applied that far.

use super::{ExtendedValue, CLUSTER_BIND_OUTCOME};
use crate::ber::{tag, Reader, Writer};
use crate::error::Result;

const ACCOUNT: u8 = tag::context(0);
const OUTCOME: u8 = tag::context(1);
const TIME: u8 = tag::context(2);
const LSN: u8 = tag::context(0);

/// How a bind under password policy ended, as the leader records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindOutcome {
    /// A wrong password.
    Failure,
    /// A right password.
    Success,
    /// A right but expired password, let in by a grace login.
    GraceLogin,
}

impl BindOutcome {
    fn code(self) -> i64 {
        match self {
            BindOutcome::Failure => 0,
            BindOutcome::Success => 1,
            BindOutcome::GraceLogin => 2,
        }
    }

    fn of(code: i64) -> Option<BindOutcome> {
        match code {
            0 => Some(BindOutcome::Failure),
            1 => Some(BindOutcome::Success),
            2 => Some(BindOutcome::GraceLogin),
            _ => None,
        }
    }
}

/// The request: which account, how its bind ended, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindOutcomeRequest<'a> {
    /// The bound entry's DN.
    pub account: &'a [u8],
    /// How the bind ended.
    pub outcome: BindOutcome,
    /// When, in microseconds since 1970.
    pub time_micros: i64,
}

impl<'a> ExtendedValue<'a> for BindOutcomeRequest<'a> {
    const OID: &'static str = CLUSTER_BIND_OUTCOME;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "BindOutcomeRequest";
        let mut outer = Reader::new(value.unwrap_or_default());
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let account = r.read_octets(ACCOUNT, "BindOutcomeRequest.account")?;
        let code = r.read_integer_in(OUTCOME, 0, 2, "BindOutcomeRequest.outcome")?;
        let time_micros = r.read_integer_in(TIME, 0, i64::MAX, "BindOutcomeRequest.time")?;
        r.finish_sequence(CTX, &[ACCOUNT, OUTCOME, TIME])?;
        let outcome = BindOutcome::of(code).unwrap_or(BindOutcome::Failure);
        Ok(BindOutcomeRequest {
            account,
            outcome,
            time_micros,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.octets(ACCOUNT, self.account);
        w.integer(OUTCOME, self.outcome.code());
        w.integer(TIME, self.time_micros.max(0));
        w.end(m);
        true
    }
}

/// The answer's value with `success`: the leader's LSN once the record is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindOutcomeResponse {
    /// The leader's applied LSN.
    pub lsn: u64,
}

impl<'a> ExtendedValue<'a> for BindOutcomeResponse {
    const OID: &'static str = CLUSTER_BIND_OUTCOME;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "BindOutcomeResponse";
        let mut outer = Reader::new(value.unwrap_or_default());
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let lsn = r.read_integer_in(LSN, 0, i64::MAX, "BindOutcomeResponse.lsn")? as u64;
        r.finish_sequence(CTX, &[LSN])?;
        Ok(BindOutcomeResponse { lsn })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(LSN, i64::try_from(self.lsn).unwrap_or(i64::MAX));
        w.end(m);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_in_the_documented_octets() {
        let request = BindOutcomeRequest {
            account: b"uid=a",
            outcome: BindOutcome::Failure,
            time_micros: 5,
        };
        let mut value = Vec::new();
        assert!(request.encode_value(&mut value));
        let mut expected = vec![0x30, 0x0d, 0x80, 0x05];
        expected.extend_from_slice(b"uid=a");
        expected.extend_from_slice(&[0x81, 0x01, 0x00, 0x82, 0x01, 0x05]);
        assert_eq!(value, expected);
        assert_eq!(BindOutcomeRequest::decode_value(Some(&value)).unwrap(), request);
        for outcome in [BindOutcome::Success, BindOutcome::GraceLogin] {
            let mut value = Vec::new();
            let r = BindOutcomeRequest { outcome, ..request };
            r.encode_value(&mut value);
            assert_eq!(BindOutcomeRequest::decode_value(Some(&value)).unwrap(), r);
        }
    }

    #[test]
    fn a_response_round_trips() {
        let response = BindOutcomeResponse { lsn: 1 << 40 };
        let mut value = Vec::new();
        response.encode_value(&mut value);
        assert_eq!(BindOutcomeResponse::decode_value(Some(&value)).unwrap(), response);
    }

    #[test]
    fn malformed_requests_are_refused() {
        let mut value = Vec::new();
        BindOutcomeRequest {
            account: b"uid=a",
            outcome: BindOutcome::GraceLogin,
            time_micros: 1_700_000_000_000_000,
        }
        .encode_value(&mut value);
        for cut in 0..value.len() {
            assert!(
                BindOutcomeRequest::decode_value(Some(&value[..cut])).is_err(),
                "cut at {cut}"
            );
        }
        assert!(BindOutcomeRequest::decode_value(None).is_err());
        // An outcome beyond graceLogin, a negative time.
        let bad_outcome = [0x30, 0x09, 0x80, 0x01, b'a', 0x81, 0x01, 0x03, 0x82, 0x01, 0x05];
        assert!(BindOutcomeRequest::decode_value(Some(&bad_outcome)).is_err());
        let bad_time = [0x30, 0x09, 0x80, 0x01, b'a', 0x81, 0x01, 0x00, 0x82, 0x01, 0xff];
        assert!(BindOutcomeRequest::decode_value(Some(&bad_time)).is_err());
    }
}
