//! Request controls (RFC 4511 section 4.1.11): which ones Larch honours on which
//! operation, read once into [`RequestControls`].
//!
//! Rules, as OpenLDAP applies them:
//! - a control Larch does not implement, or one that does not apply to the operation
//!   carrying it, is ignored when non-critical and refused with
//!   `unavailableCriticalExtension` (12) when critical;
//! - a control Larch implements whose value does not decode, or a control given twice,
//!   is a `protocolError` (2) whatever its criticality;
//! - the Proxied Authorization control (RFC 4370) must be critical: a non-critical one is
//!   a `protocolError` (2), as RFC 4370 section 3 requires (whom it names is decided by
//!   `crate::acl::proxy`);
//! - the typed values borrow from the request PDU.

use larch_proto::controls::{
    oid, Assertion, Control, ControlValue, ManageDsaIt, PagedResults, PasswordPolicyRequest,
    PermissiveModify, PostReadRequest, PreReadRequest, ProxiedAuthz, SortRequest, SubtreeDelete, SyncRequest,
};
use larch_proto::{Filter, ResultCode, SeqOf};

use crate::error::OpError;

/// The operation a set of controls arrived with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// BindRequest.
    Bind,
    /// SearchRequest.
    Search,
    /// ModifyRequest.
    Modify,
    /// AddRequest.
    Add,
    /// DelRequest.
    Delete,
    /// ModifyDNRequest.
    ModifyDn,
    /// CompareRequest.
    Compare,
    /// ExtendedRequest.
    Extended,
    /// AbandonRequest or UnbindRequest (controls are read but nothing applies).
    Other,
}

/// The request controls Larch implements: what the root DSE publishes as supportedControl.
pub const SUPPORTED_CONTROLS: [&str; 11] = [
    oid::PAGED_RESULTS,
    oid::SORT_REQUEST,
    oid::ASSERTION,
    oid::PRE_READ,
    oid::POST_READ,
    oid::MANAGE_DSA_IT,
    oid::PERMISSIVE_MODIFY,
    oid::SUBTREE_DELETE,
    oid::PROXIED_AUTHZ,
    oid::PASSWORD_POLICY,
    oid::SYNC_REQUEST,
];

/// Whether the control `oid` applies to `kind`.
fn applies(control: &str, kind: OpKind) -> bool {
    use OpKind::*;
    match control {
        oid::PAGED_RESULTS | oid::SORT_REQUEST | oid::SYNC_REQUEST => kind == Search,
        oid::ASSERTION => matches!(kind, Search | Compare | Modify | Add | Delete | ModifyDn),
        oid::PRE_READ => matches!(kind, Modify | Delete | ModifyDn),
        oid::POST_READ => matches!(kind, Modify | Add | ModifyDn),
        oid::MANAGE_DSA_IT => !matches!(kind, Bind | Other),
        oid::PERMISSIVE_MODIFY => kind == Modify,
        oid::SUBTREE_DELETE => kind == Delete,
        // Extended operations: Password Modify and WhoAmI honour it; the others refuse it
        // ([`RequestControls::refuse_proxied`]).
        oid::PROXIED_AUTHZ => matches!(
            kind,
            Search | Compare | Modify | Add | Delete | ModifyDn | Extended
        ),
        // Answered on Bind, Modify, Add and Password Modify; on any other operation of a
        // connection that must change its password, with the refusal.
        oid::PASSWORD_POLICY => kind != Other,
        _ => false,
    }
}

/// The controls of one request, typed.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestControls<'a> {
    /// Simple Paged Results (RFC 2696), with its criticality.
    pub paged: Option<(PagedResults<'a>, bool)>,
    /// Server-side sort (RFC 2891), with its criticality.
    pub sort: Option<(SortRequest<'a>, bool)>,
    /// Assertion (RFC 4528): the filter the target entry must match, else
    /// `assertionFailed` (122).
    pub assertion: Option<Filter<'a>>,
    /// Pre-read (RFC 4527): attributes of the entry before the update.
    pub pre_read: Option<SeqOf<'a, &'a [u8]>>,
    /// Post-read (RFC 4527): attributes of the entry after the update.
    pub post_read: Option<SeqOf<'a, &'a [u8]>>,
    /// ManageDsaIT (RFC 3296): referral entries are ordinary entries.
    pub manage_dsa_it: bool,
    /// Permissive Modify.
    pub permissive_modify: bool,
    /// Subtree Delete.
    pub subtree_delete: bool,
    /// Criticality of the pre-read and post-read controls (a critical one whose entry the
    /// requester may not read fails the operation; a non-critical one is left out).
    pub read_critical: (bool, bool),
    /// Proxied Authorization (RFC 4370): the authzId the operation runs as (always
    /// critical; a non-critical one is a `protocolError`).
    pub proxied_authz: Option<&'a [u8]>,
    /// The password policy request control: the response control is wanted.
    pub password_policy: bool,
    /// Content Synchronization (RFC 4533): the search is a syncrepl refresh (and persist).
    pub sync: Option<SyncRequest<'a>>,
}

impl<'a> RequestControls<'a> {
    /// `unavailableCriticalExtension` (12) when a Proxied Authorization control came with an
    /// extended operation that does not run as another identity (`what` names it).
    pub fn refuse_proxied(&self, what: &str) -> Result<(), OpError> {
        match self.proxied_authz {
            None => Ok(()),
            Some(_) => Err(OpError::new(
                ResultCode::UNAVAILABLE_CRITICAL_EXTENSION,
                format!(
                    "critical control {} (proxied authorization) does not apply to {what}",
                    oid::PROXIED_AUTHZ
                ),
            )),
        }
    }

    /// Reads the controls of a request of kind `kind`.
    pub fn parse(
        controls: Option<SeqOf<'a, Control<'a>>>,
        kind: OpKind,
    ) -> Result<RequestControls<'a>, OpError> {
        let mut out = RequestControls::default();
        let Some(controls) = controls else {
            return Ok(out);
        };
        let mut seen: Vec<&[u8]> = Vec::new();
        for c in controls.iter() {
            let name = String::from_utf8_lossy(c.oid);
            if !applies(&name, kind) {
                if c.critical {
                    return Err(OpError::new(
                        ResultCode::UNAVAILABLE_CRITICAL_EXTENSION,
                        if SUPPORTED_CONTROLS.contains(&&*name) {
                            format!("critical control {name} does not apply to this operation")
                        } else {
                            format!("critical control {name} is not supported")
                        },
                    ));
                }
                continue;
            }
            if seen.contains(&c.oid) {
                return Err(OpError::protocol(format!("control {name} given more than once")));
            }
            seen.push(c.oid);
            let bad = |e: larch_proto::DecodeError| {
                OpError::protocol(format!("control {name}: value does not decode: {e}"))
            };
            match &*name {
                oid::PAGED_RESULTS => {
                    out.paged = Some((PagedResults::from_control(&c).map_err(bad)?, c.critical))
                }
                oid::SORT_REQUEST => {
                    out.sort = Some((SortRequest::from_control(&c).map_err(bad)?, c.critical))
                }
                oid::ASSERTION => out.assertion = Some(Assertion::from_control(&c).map_err(bad)?.filter),
                oid::PRE_READ => {
                    out.pre_read = Some(PreReadRequest::from_control(&c).map_err(bad)?.attributes);
                    out.read_critical.0 = c.critical;
                }
                oid::POST_READ => {
                    out.post_read = Some(PostReadRequest::from_control(&c).map_err(bad)?.attributes);
                    out.read_critical.1 = c.critical;
                }
                oid::PROXIED_AUTHZ => {
                    // RFC 4370 section 3: servers MUST reject a non-critical one with
                    // protocolError.
                    if !c.critical {
                        return Err(OpError::protocol(format!(
                            "control {name} (proxied authorization) must be marked critical (RFC 4370 section 3)"
                        )));
                    }
                    out.proxied_authz = Some(ProxiedAuthz::from_control(&c).map_err(bad)?.authz_id);
                }
                oid::MANAGE_DSA_IT => {
                    ManageDsaIt::from_control(&c).map_err(bad)?;
                    out.manage_dsa_it = true;
                }
                oid::PERMISSIVE_MODIFY => {
                    PermissiveModify::from_control(&c).map_err(bad)?;
                    out.permissive_modify = true;
                }
                oid::SUBTREE_DELETE => {
                    SubtreeDelete::from_control(&c).map_err(bad)?;
                    out.subtree_delete = true;
                }
                oid::PASSWORD_POLICY => {
                    PasswordPolicyRequest::from_control(&c).map_err(bad)?;
                    out.password_policy = true;
                }
                oid::SYNC_REQUEST => out.sync = Some(SyncRequest::from_control(&c).map_err(bad)?),
                _ => unreachable!("applies() accepts only the OIDs matched above"),
            }
        }
        Ok(out)
    }
}

/// A response control, owned (the value is already encoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseControl {
    /// The control's OID.
    pub oid: &'static str,
    /// The encoded `controlValue`, if any.
    pub value: Option<Vec<u8>>,
}

impl ResponseControl {
    /// Encodes a typed control value.
    pub fn typed<'v, T: ControlValue<'v>>(value: &T) -> ResponseControl {
        let mut buf = Vec::new();
        let has = value.encode_value(&mut buf);
        ResponseControl {
            oid: T::OID,
            value: has.then_some(buf),
        }
    }

    /// The raw control, borrowing from `self`.
    pub fn as_control(&self) -> Control<'_> {
        Control {
            oid: self.oid.as_bytes(),
            critical: false,
            value: self.value.as_deref(),
        }
    }
}
