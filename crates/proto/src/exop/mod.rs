//! Extended operations (RFC 4511 section 4.12): their OIDs and typed request and response
//! values, one file each. A typed value implements [`ExtendedValue`].
//!
//! ```
//! use larch_proto::exop::{ExtendedValue, PasswordModifyRequest};
//! use larch_proto::{ExtendedRequest, LdapMessage, ProtocolOp};
//! let pm = PasswordModifyRequest { user_identity: Some(b"uid=alice,dc=example,dc=com"), old_password: Some(b"old"), new_password: None };
//! let mut value = Vec::new();
//! let req = pm.to_request(&mut value);
//! let mut pdu = Vec::new();
//! LdapMessage::new(2, ProtocolOp::ExtendedRequest(req)).encode(&mut pdu);
//! let ProtocolOp::ExtendedRequest(back) = LdapMessage::decode(&pdu).unwrap().op else { panic!() };
//! assert_eq!(PasswordModifyRequest::decode_value(back.value).unwrap(), pm);
//! ```

mod backup;
mod bind_outcome;
mod cancel;
mod cluster;
mod notice;
mod password_modify;
mod snapshot;
mod whoami;

pub use backup::{BackupRequest, BackupResponse};
pub use bind_outcome::{BindOutcome, BindOutcomeRequest, BindOutcomeResponse};
pub use cancel::CancelRequest;
pub use cluster::{AddNodeRequest, RemoveNodeRequest};
pub use notice::{notice_of_disconnection, notice_with_code};
pub use password_modify::{PasswordModifyRequest, PasswordModifyResponse};
pub use snapshot::{SnapshotDone, SnapshotPiece};
pub use whoami::WhoAmIResponse;

use crate::error::Result;
use crate::ops::ExtendedRequest;

/// StartTLS (RFC 4511 section 4.14): request with no value; the response names it too.
pub const START_TLS: &str = "1.3.6.1.4.1.1466.20037";
/// "Who am I?" (RFC 4532): request with no value; the response value is the authzId.
pub const WHO_AM_I: &str = "1.3.6.1.4.1.4203.1.11.3";
/// Password Modify (RFC 3062).
pub const PASSWORD_MODIFY: &str = "1.3.6.1.4.1.4203.1.11.1";
/// Cancel (RFC 3909).
pub const CANCEL: &str = "1.3.6.1.1.8";
/// Larch's arc for its own object identifiers: `2.25.<UUID>`, an OID derived from a UUID
/// (ITU-T X.667, RFC 4122 section 1), which needs no registration and cannot collide with
/// anyone else's.
pub const LARCH_ARC: &str = "2.25.268705614682925665270291760309126455850";
/// Larch's online backup (`LARCH_ARC`.1.1): the server writes a backup of its directory
/// into a directory on its own host; the administrator's only. Value: [`BackupRequest`],
/// [`BackupResponse`].
pub const BACKUP: &str = "2.25.268705614682925665270291760309126455850.1.1";
/// Larch's snapshot transfer (`LARCH_ARC`.1.2): the server sends a snapshot of its
/// directory, the file itself in pieces, to a new replica; the administrator's only.
/// Values: [`SnapshotPiece`] (in IntermediateResponses), [`SnapshotDone`].
pub const SNAPSHOT_TRANSFER: &str = "2.25.268705614682925665270291760309126455850.1.2";
/// Larch's cluster membership change, adding a node (`LARCH_ARC`.1.3): the cluster's
/// leader adds a node as a learner, waits until it has caught up with the log, then makes it
/// a voter; the administrator's only. Value: [`AddNodeRequest`]; the answer has none.
pub const CLUSTER_ADD_NODE: &str = "2.25.268705614682925665270291760309126455850.1.3";
/// Larch's cluster membership change, removing a node (`LARCH_ARC`.1.4): the cluster's
/// leader removes a node (running or not) from the cluster; the administrator's only.
/// Value: [`RemoveNodeRequest`]; the answer has none.
pub const CLUSTER_REMOVE_NODE: &str = "2.25.268705614682925665270291760309126455850.1.4";
/// Larch's cluster bind outcome (`LARCH_ARC`.1.5): a cluster's follower hands the outcome
/// of a bind under password policy to the leader, which records it in the account's entry;
/// the administrator's and the cluster's forwarding identity's only. Values:
/// [`BindOutcomeRequest`], [`BindOutcomeResponse`].
pub const CLUSTER_BIND_OUTCOME: &str = "2.25.268705614682925665270291760309126455850.1.5";
/// Notice of Disconnection (RFC 4511 section 4.4.1), an unsolicited notification.
pub const NOTICE_OF_DISCONNECTION: &str = "1.3.6.1.4.1.1466.20036";

/// The typed value of an extended request or response.
pub trait ExtendedValue<'a>: Sized {
    /// The operation's OID.
    const OID: &'static str;

    /// Reads the typed value from a `requestValue` / `responseValue`.
    fn decode_value(value: Option<&'a [u8]>) -> Result<Self>;

    /// Writes the value into `out`; returns false when there is none.
    fn encode_value(&self, out: &mut Vec<u8>) -> bool;

    /// An ExtendedRequest carrying this value, encoded into `buf` (cleared first).
    fn to_request<'b>(&self, buf: &'b mut Vec<u8>) -> ExtendedRequest<'b> {
        buf.clear();
        let has = self.encode_value(buf);
        ExtendedRequest {
            name: Self::OID.as_bytes(),
            value: if has { Some(&buf[..]) } else { None },
        }
    }
}
