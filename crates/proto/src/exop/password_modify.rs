use super::{ExtendedValue, PASSWORD_MODIFY};
use crate::ber::{tag, Reader, Writer};
use crate::error::Result;

const USER_IDENTITY: u8 = tag::context(0);
const OLD_PASSWORD: u8 = tag::context(1);
const NEW_PASSWORD: u8 = tag::context(2);
const GEN_PASSWORD: u8 = tag::context(0);

/// Password Modify request value (RFC 3062): `PasswdModifyRequestValue ::= SEQUENCE {
/// userIdentity [0] OPTIONAL, oldPasswd [1] OPTIONAL, newPasswd [2] OPTIONAL }`. The
/// value itself is optional: with none, the bound user's password is changed to a
/// generated one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PasswordModifyRequest<'a> {
    /// Whose password (default: the bound identity).
    pub user_identity: Option<&'a [u8]>,
    /// The current password, for a self-change.
    pub old_password: Option<&'a [u8]>,
    /// The new password (default: the server generates one).
    pub new_password: Option<&'a [u8]>,
}

impl<'a> ExtendedValue<'a> for PasswordModifyRequest<'a> {
    const OID: &'static str = PASSWORD_MODIFY;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "PasswdModifyRequestValue";
        let Some(v) = value else {
            return Ok(PasswordModifyRequest::default());
        };
        let mut outer = Reader::new(v);
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let user_identity = r.read_optional(USER_IDENTITY, "PasswdModifyRequestValue.userIdentity")?;
        let old_password = r.read_optional(OLD_PASSWORD, "PasswdModifyRequestValue.oldPasswd")?;
        let new_password = r.read_optional(NEW_PASSWORD, "PasswdModifyRequestValue.newPasswd")?;
        r.finish_sequence(CTX, &[USER_IDENTITY, OLD_PASSWORD, NEW_PASSWORD])?;
        Ok(PasswordModifyRequest {
            user_identity,
            old_password,
            new_password,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        for (t, v) in [
            (USER_IDENTITY, self.user_identity),
            (OLD_PASSWORD, self.old_password),
            (NEW_PASSWORD, self.new_password),
        ] {
            if let Some(v) = v {
                w.octets(t, v);
            }
        }
        w.end(m);
        true
    }
}

/// Password Modify response value: `SEQUENCE { genPasswd [0] OPTIONAL }`, sent only when
/// the server generated the password.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PasswordModifyResponse<'a> {
    /// The generated password.
    pub generated_password: Option<&'a [u8]>,
}

impl<'a> ExtendedValue<'a> for PasswordModifyResponse<'a> {
    const OID: &'static str = PASSWORD_MODIFY;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "PasswdModifyResponseValue";
        let Some(v) = value else {
            return Ok(PasswordModifyResponse::default());
        };
        let mut outer = Reader::new(v);
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let generated_password = r.read_optional(GEN_PASSWORD, "PasswdModifyResponseValue.genPasswd")?;
        r.finish_sequence(CTX, &[GEN_PASSWORD])?;
        Ok(PasswordModifyResponse { generated_password })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let Some(p) = self.generated_password else {
            return false;
        };
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.octets(GEN_PASSWORD, p);
        w.end(m);
        true
    }
}
