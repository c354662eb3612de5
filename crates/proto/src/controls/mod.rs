//! Controls (RFC 4511 section 4.1.11): kept raw in every message ([`Control`]), with typed
//! values for the controls Larch implements, one file each.
//!
//! A typed control implements [`ControlValue`]: its OID, how to read its `controlValue`,
//! and how to write it.
//!
//! ```
//! use larch_proto::controls::{Control, ControlValue, PagedResults};
//! let paged = PagedResults { size: 100, cookie: b"" };
//! let mut value = Vec::new();
//! let control = Control::typed(&paged, true, &mut value);
//! assert_eq!(control.oid, b"1.2.840.113556.1.4.319");
//! assert_eq!(PagedResults::from_control(&control).unwrap(), paged);
//! ```

mod assertion;
mod flags;
mod paged;
mod ppolicy;
mod proxied_authz;
mod read_entry;
mod sort;
mod sync;

pub use assertion::Assertion;
pub use flags::{ManageDsaIt, PermissiveModify, SubtreeDelete};
pub use paged::PagedResults;
pub use ppolicy::{
    PasswordPolicyError, PasswordPolicyRequest, PasswordPolicyResponse, PasswordPolicyWarning,
};
pub use proxied_authz::ProxiedAuthz;
pub use read_entry::{PostReadRequest, PostReadResponse, PreReadRequest, PreReadResponse};
pub use sort::{SortKey, SortRequest, SortResponse};
pub use sync::{SyncDone, SyncInfo, SyncMode, SyncRequest, SyncState, SyncStateKind};

use crate::ber::{tag, Reader, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::seq::Element;

/// One control as it travels: OID, criticality, optional value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Control<'a> {
    /// `controlType`.
    pub oid: &'a [u8],
    /// `criticality` (DEFAULT FALSE): when true and the server does not support the
    /// control, it answers `unavailableCriticalExtension`.
    pub critical: bool,
    /// `controlValue`.
    pub value: Option<&'a [u8]>,
}

impl<'a> Element<'a> for Control<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self> {
        let mut c = r.read_constructed(tag::SEQUENCE, "Control")?;
        let oid = c.read_octets(tag::OCTET_STRING, "Control.controlType")?;
        let critical = match c.peek_tag() {
            Some(tag::BOOLEAN) => c.read_bool(tag::BOOLEAN, "Control.criticality")?,
            _ => false,
        };
        let value = c.read_optional(tag::OCTET_STRING, "Control.controlValue")?;
        c.finish_sequence("Control", &[tag::OCTET_STRING, tag::BOOLEAN])?;
        Ok(Control { oid, critical, value })
    }

    fn encode(&self, w: &mut Writer<'_>) {
        let m = w.begin(tag::SEQUENCE);
        w.octet_string(self.oid);
        if self.critical {
            w.boolean(tag::BOOLEAN, true);
        }
        if let Some(v) = self.value {
            w.octet_string(v);
        }
        w.end(m);
    }
}

impl<'a> Control<'a> {
    /// Builds the raw control for a typed value, encoding the value into `buf`
    /// (cleared first) which the returned control borrows.
    pub fn typed<'v, T: ControlValue<'v>>(value: &T, critical: bool, buf: &'a mut Vec<u8>) -> Control<'a> {
        buf.clear();
        let has_value = value.encode_value(buf);
        Control {
            oid: T::OID.as_bytes(),
            critical,
            value: if has_value { Some(&buf[..]) } else { None },
        }
    }
}

/// A control with a typed value.
pub trait ControlValue<'a>: Sized {
    /// The control's OID.
    const OID: &'static str;

    /// Reads the typed value from a control's `controlValue`.
    fn decode_value(value: Option<&'a [u8]>) -> Result<Self>;

    /// Writes the `controlValue` into `out`; returns false when the control has no value.
    fn encode_value(&self, out: &mut Vec<u8>) -> bool;

    /// Reads the typed value from a raw control, checking its OID.
    fn from_control(c: &Control<'a>) -> Result<Self> {
        if c.oid != Self::OID.as_bytes() {
            return Err(DecodeError::new(DecodeErrorKind::InvalidValue, "control OID"));
        }
        Self::decode_value(c.value)
    }
}

/// The value must be present; returns a reader over it.
pub(crate) fn required<'a>(value: Option<&'a [u8]>, ctx: &'static str) -> Result<&'a [u8]> {
    value.ok_or(DecodeError::new(DecodeErrorKind::InvalidValue, ctx))
}

/// The value must be absent.
pub(crate) fn absent(value: Option<&[u8]>, ctx: &'static str) -> Result<()> {
    match value {
        None => Ok(()),
        Some(_) => Err(DecodeError::new(DecodeErrorKind::InvalidValue, ctx)),
    }
}

/// Reads exactly one SEQUENCE from a control value and returns a reader over its contents.
pub(crate) fn sequence<'a>(value: Option<&'a [u8]>, ctx: &'static str) -> Result<(Reader<'a>, Reader<'a>)> {
    let mut outer = Reader::new(required(value, ctx)?);
    let inner = outer.read_constructed(tag::SEQUENCE, ctx)?;
    Ok((outer, inner))
}

/// OIDs of well-known controls.
pub mod oid {
    /// Simple Paged Results (RFC 2696).
    pub const PAGED_RESULTS: &str = "1.2.840.113556.1.4.319";
    /// Server-side sort request (RFC 2891).
    pub const SORT_REQUEST: &str = "1.2.840.113556.1.4.473";
    /// Server-side sort response (RFC 2891).
    pub const SORT_RESPONSE: &str = "1.2.840.113556.1.4.474";
    /// Assertion (RFC 4528).
    pub const ASSERTION: &str = "1.3.6.1.1.12";
    /// Pre-read (RFC 4527).
    pub const PRE_READ: &str = "1.3.6.1.1.13.1";
    /// Post-read (RFC 4527).
    pub const POST_READ: &str = "1.3.6.1.1.13.2";
    /// ManageDsaIT (RFC 3296).
    pub const MANAGE_DSA_IT: &str = "2.16.840.1.113730.3.4.2";
    /// Proxied Authorization v2 (RFC 4370).
    pub const PROXIED_AUTHZ: &str = "2.16.840.1.113730.3.4.18";
    /// Permissive Modify (Active Directory, also OpenLDAP).
    pub const PERMISSIVE_MODIFY: &str = "1.2.840.113556.1.4.1413";
    /// Subtree Delete (draft-armijo-ldap-treedelete).
    pub const SUBTREE_DELETE: &str = "1.2.840.113556.1.4.805";
    /// Content Synchronization request (RFC 4533).
    pub const SYNC_REQUEST: &str = "1.3.6.1.4.1.4203.1.9.1.1";
    /// Content Synchronization state (RFC 4533).
    pub const SYNC_STATE: &str = "1.3.6.1.4.1.4203.1.9.1.2";
    /// Content Synchronization done (RFC 4533).
    pub const SYNC_DONE: &str = "1.3.6.1.4.1.4203.1.9.1.3";
    /// Sync Info Message, an IntermediateResponse name (RFC 4533).
    pub const SYNC_INFO: &str = "1.3.6.1.4.1.4203.1.9.1.4";
    /// Password policy request and response (draft-behera-ldap-password-policy-10).
    pub const PASSWORD_POLICY: &str = "1.3.6.1.4.1.42.2.27.8.5.1";
}
