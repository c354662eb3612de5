//! The password policy control (draft-behera-ldap-password-policy-10, section 6): the
//! request has no value; the response tells a warning and an error.
//!
//! ```text
//! PasswordPolicyResponseValue ::= SEQUENCE {
//!     warning [0] CHOICE {
//!         timeBeforeExpiration [0] INTEGER (0 .. maxInt),
//!         graceAuthNsRemaining [1] INTEGER (0 .. maxInt) } OPTIONAL,
//!     error   [1] ENUMERATED { passwordExpired (0), accountLocked (1),
//!         changeAfterReset (2), passwordModNotAllowed (3), mustSupplyOldPassword (4),
//!         insufficientPasswordQuality (5), passwordTooShort (6), passwordTooYoung (7),
//!         passwordInHistory (8), passwordTooLong (9) } OPTIONAL }
//! ```
//!
//! The module is tagged IMPLICIT, so `warning` is a constructed `[0]` (0xA0) holding the
//! chosen alternative (0x80 or 0x81), and `error` a primitive `[1]` (0x81), exactly as
//! OpenLDAP's `create_passcontrol` writes them.

use super::{absent, oid, sequence, ControlValue};
use crate::ber::{tag, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};

const WARNING: u8 = tag::context_constructed(0);
const TIME_BEFORE_EXPIRATION: u8 = tag::context(0);
const GRACE_AUTHNS_REMAINING: u8 = tag::context(1);
const ERROR: u8 = tag::context(1);

/// The request: asks the server to attach the response control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PasswordPolicyRequest;

impl ControlValue<'_> for PasswordPolicyRequest {
    const OID: &'static str = oid::PASSWORD_POLICY;

    fn decode_value(value: Option<&[u8]>) -> Result<Self> {
        absent(value, "PasswordPolicyRequest has no value")?;
        Ok(PasswordPolicyRequest)
    }

    fn encode_value(&self, _out: &mut Vec<u8>) -> bool {
        false
    }
}

/// The `warning` of the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordPolicyWarning {
    /// Seconds before the password expires.
    TimeBeforeExpiration(u32),
    /// Binds left with the expired password.
    GraceAuthNsRemaining(u32),
}

/// The `error` of the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PasswordPolicyError {
    /// The password has expired (and no grace login is left).
    PasswordExpired = 0,
    /// The account is locked.
    AccountLocked = 1,
    /// The password was reset and must be changed before anything else.
    ChangeAfterReset = 2,
    /// The user may not change the password.
    PasswordModNotAllowed = 3,
    /// The old password must be given with the new one.
    MustSupplyOldPassword = 4,
    /// The password fails the quality check (or cannot be checked).
    InsufficientPasswordQuality = 5,
    /// The password is shorter than the policy's minimum.
    PasswordTooShort = 6,
    /// The password was changed too recently to be changed again.
    PasswordTooYoung = 7,
    /// The password is the current one or in the history.
    PasswordInHistory = 8,
    /// The password is longer than the policy's maximum (OpenLDAP's addition).
    PasswordTooLong = 9,
}

impl PasswordPolicyError {
    /// The error of its ENUMERATED value.
    pub fn from_value(v: i64) -> Option<PasswordPolicyError> {
        use PasswordPolicyError::*;
        Some(match v {
            0 => PasswordExpired,
            1 => AccountLocked,
            2 => ChangeAfterReset,
            3 => PasswordModNotAllowed,
            4 => MustSupplyOldPassword,
            5 => InsufficientPasswordQuality,
            6 => PasswordTooShort,
            7 => PasswordTooYoung,
            8 => PasswordInHistory,
            9 => PasswordTooLong,
            _ => return None,
        })
    }

    /// The draft's name of the error.
    pub fn name(self) -> &'static str {
        use PasswordPolicyError::*;
        match self {
            PasswordExpired => "passwordExpired",
            AccountLocked => "accountLocked",
            ChangeAfterReset => "changeAfterReset",
            PasswordModNotAllowed => "passwordModNotAllowed",
            MustSupplyOldPassword => "mustSupplyOldPassword",
            InsufficientPasswordQuality => "insufficientPasswordQuality",
            PasswordTooShort => "passwordTooShort",
            PasswordTooYoung => "passwordTooYoung",
            PasswordInHistory => "passwordInHistory",
            PasswordTooLong => "passwordTooLong",
        }
    }
}

/// The response control's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PasswordPolicyResponse {
    /// The warning, if any.
    pub warning: Option<PasswordPolicyWarning>,
    /// The error, if any.
    pub error: Option<PasswordPolicyError>,
}

impl ControlValue<'_> for PasswordPolicyResponse {
    const OID: &'static str = oid::PASSWORD_POLICY;

    fn decode_value(value: Option<&[u8]>) -> Result<Self> {
        const CTX: &str = "PasswordPolicyResponseValue";
        let (outer, mut r) = sequence(value, CTX)?;
        let mut out = PasswordPolicyResponse::default();
        if r.peek_tag() == Some(WARNING) {
            let mut w = r.read_constructed(WARNING, "PasswordPolicyResponseValue.warning")?;
            let max = i64::from(i32::MAX);
            out.warning = Some(match w.peek_tag() {
                Some(TIME_BEFORE_EXPIRATION) => PasswordPolicyWarning::TimeBeforeExpiration(
                    w.read_integer_in(TIME_BEFORE_EXPIRATION, 0, max, "timeBeforeExpiration")? as u32,
                ),
                Some(GRACE_AUTHNS_REMAINING) => PasswordPolicyWarning::GraceAuthNsRemaining(
                    w.read_integer_in(GRACE_AUTHNS_REMAINING, 0, max, "graceAuthNsRemaining")? as u32,
                ),
                _ => {
                    return Err(DecodeError::new(
                        DecodeErrorKind::InvalidValue,
                        "PasswordPolicyResponseValue.warning",
                    ))
                }
            });
            w.finish("PasswordPolicyResponseValue.warning")?;
        }
        if r.peek_tag() == Some(ERROR) {
            let v = r.read_integer_in(ERROR, 0, 127, "PasswordPolicyResponseValue.error")?;
            out.error = Some(PasswordPolicyError::from_value(v).ok_or(DecodeError::new(
                DecodeErrorKind::InvalidValue,
                "PasswordPolicyResponseValue.error",
            ))?);
        }
        r.finish_sequence(CTX, &[WARNING, ERROR])?;
        outer.finish(CTX)?;
        Ok(out)
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        if let Some(warning) = self.warning {
            let inner = w.begin(WARNING);
            match warning {
                PasswordPolicyWarning::TimeBeforeExpiration(s) => {
                    w.integer(TIME_BEFORE_EXPIRATION, i64::from(s))
                }
                PasswordPolicyWarning::GraceAuthNsRemaining(n) => {
                    w.integer(GRACE_AUTHNS_REMAINING, i64::from(n))
                }
            }
            w.end(inner);
        }
        if let Some(error) = self.error {
            w.integer(ERROR, error as i64);
        }
        w.end(m);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(r: PasswordPolicyResponse) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(r.encode_value(&mut out));
        out
    }

    #[test]
    fn encodings_are_openldaps() {
        // What OpenLDAP's create_passcontrol writes (lber, DER).
        assert_eq!(encoded(PasswordPolicyResponse::default()), [0x30, 0x00]);
        let locked = PasswordPolicyResponse {
            warning: None,
            error: Some(PasswordPolicyError::AccountLocked),
        };
        assert_eq!(encoded(locked), [0x30, 0x03, 0x81, 0x01, 0x01]);
        let expiring = PasswordPolicyResponse {
            warning: Some(PasswordPolicyWarning::TimeBeforeExpiration(300)),
            error: None,
        };
        assert_eq!(
            encoded(expiring),
            [0x30, 0x06, 0xa0, 0x04, 0x80, 0x02, 0x01, 0x2c]
        );
        let grace = PasswordPolicyResponse {
            warning: Some(PasswordPolicyWarning::GraceAuthNsRemaining(2)),
            error: Some(PasswordPolicyError::ChangeAfterReset),
        };
        let bytes = encoded(grace);
        assert_eq!(
            bytes,
            [0x30, 0x08, 0xa0, 0x03, 0x81, 0x01, 0x02, 0x81, 0x01, 0x02]
        );
        assert_eq!(PasswordPolicyResponse::decode_value(Some(&bytes)).unwrap(), grace);
    }

    #[test]
    fn bad_values_are_refused() {
        for bad in [
            &[0x30, 0x03, 0x81, 0x01, 0x0a][..],
            &[0x30, 0x04, 0xa0, 0x02, 0x82, 0x00],
            &[0x04, 0x00],
        ] {
            assert!(
                PasswordPolicyResponse::decode_value(Some(bad)).is_err(),
                "{bad:?}"
            );
        }
        // An element of a later version of the draft is skipped, as LDAP's extensibility
        // asks.
        let later = PasswordPolicyResponse::decode_value(Some(&[0x30, 0x03, 0x82, 0x01, 0x00])).unwrap();
        assert_eq!(later, PasswordPolicyResponse::default());
        assert!(PasswordPolicyRequest::decode_value(Some(b"")).is_err());
        assert_eq!(
            PasswordPolicyRequest::decode_value(None).unwrap(),
            PasswordPolicyRequest
        );
    }
}
