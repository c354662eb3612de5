//! A Bind on the connection: the decisions of [`crate::auth::bind`], the failed-bind
//! throttle, and the password check off the connection thread when it is slow.
//!
//! Steps (the caller, `dispatch`, holds every operation permit meanwhile, so nothing else
//! runs on the connection and no later request is read: the Bind barrier):
//! 1. [`crate::auth::bind::stage`] makes the decisions that need no password check and
//!    looks the entry up; anonymous and refused binds end here;
//! 2. the throttle decides about a name/password bind from this client's address: go on,
//!    wait (a tokio sleep, no thread held), or refuse with `unwillingToPerform` (53)
//!    without looking at the password;
//! 3. the password is checked inline when every stored value is cheap (the digest
//!    schemes), else on a blocking thread with one of the slow-work permits
//!    ([`crate::auth::password::gate`]);
//! 4. an `invalidCredentials` answer counts as a failure of the address.

use std::time::Instant;

use larch_proto::{BindRequest, ResultCode};

use super::Session;
use crate::auth::bind::{stage, Staged};
use crate::auth::password::gate;
use crate::auth::throttle::Decision;
use crate::error::OpError;
use crate::identity::Identity;

impl Session {
    /// Runs a Bind (see the module documentation): the new identity, or the error to
    /// answer.
    pub(super) async fn run_bind(&mut self, req: &BindRequest<'_>) -> Result<Identity, OpError> {
        let version = self.reader.current();
        let check = match stage(&self.dir, version, req)? {
            Staged::Done(identity) => return Ok(identity),
            Staged::Check(check) => check,
        };
        let ip = self.client.addr.map(|a| a.ip());
        if let Some(ip) = ip {
            match self.dir.bind_throttle.check(ip, Instant::now()) {
                Decision::Proceed => {}
                Decision::Wait(d) => tokio::time::sleep(d).await,
                Decision::Refuse { retry_after } => {
                    let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                    return Err(OpError::unwilling(format!(
                        "too many failed binds from {ip}: binds from this address are held back; try again in {secs} s"
                    )));
                }
            }
        }
        let result = if check.is_slow() {
            tokio::task::spawn_blocking(move || gate::with_permit(|| check.run()))
                .await
                .unwrap_or_else(|_| {
                    Err(OpError::new(
                        ResultCode::OTHER,
                        "the password check did not complete",
                    ))
                })
        } else {
            check.run()
        };
        if let (Err(e), Some(ip)) = (&result, ip) {
            if e.code == ResultCode::INVALID_CREDENTIALS {
                self.dir.bind_throttle.record_failure(ip, Instant::now());
            }
        }
        result
    }
}
