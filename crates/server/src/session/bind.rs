//! A Bind on the connection: the decisions of [`crate::auth::bind`], the failed-bind
//! throttle, and the password check off the connection thread when it is slow.
//!
//! Steps (the caller, `dispatch`, holds every operation permit meanwhile, so nothing else
//! runs on the connection and no later request is read: the Bind barrier):
//! 1. [`crate::auth::bind::stage`] makes the decisions that need no password check and
//!    looks the entry up; anonymous and refused binds end here;
//! 2. the throttle decides about a name/password bind from this client's address (about a
//!    SASL bind, before step 1): go on, wait (a tokio sleep, no thread held), or refuse
//!    with `unwillingToPerform` (53) without looking at the password;
//! 3. the password is checked inline when every stored value is cheap (the digest
//!    schemes), else on a blocking thread with one of the slow-work permits
//!    ([`crate::password::gate`]);
//! 4. an `invalidCredentials` answer (simple or SASL) counts as a failure of the address.

use std::net::IpAddr;
use std::time::Instant;

use larch_proto::{Authentication, BindRequest, ResultCode};
use larch_store::EntryId;

use super::Session;
use crate::auth::bind::{stage, Staged};
use crate::bind_throttle::Decision;
use crate::error::OpError;
use crate::identity::Identity;
use crate::password::gate;

impl Session {
    /// Runs a Bind (see the module documentation): the new identity with the entry a
    /// name/password bind found, or the error to answer.
    pub(super) async fn run_bind(
        &mut self,
        req: &BindRequest<'_>,
    ) -> Result<(Identity, Option<EntryId>), OpError> {
        let ip = self.client.addr.map(|a| a.ip());
        // A SASL bind (PLAIN checks a password) meets the throttle before anything else.
        let sasl = matches!(req.authentication, Authentication::Sasl { .. });
        if sasl {
            self.throttle(ip, "binds").await?;
        }
        let version = self.reader.current();
        let staged = stage(
            &self.dir,
            version,
            req,
            &self.client,
            self.peer_cert.as_ref(),
            Some(&self.last_base),
        );
        let check = match staged {
            Ok(Staged::Done(identity)) => return Ok((identity, None)),
            Ok(Staged::Check(check)) => check,
            Err(e) => {
                self.count_failure(&e, ip);
                return Err(e);
            }
        };
        if !sasl {
            self.throttle(ip, "binds").await?;
        }
        let entry = check.entry();
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
        if let Err(e) = &result {
            self.count_failure(e, ip);
        }
        result.map(|identity| (identity, entry))
    }

    /// The failed-bind throttle's decision for a password check (`what`: "binds",
    /// "password checks") from `ip`: go on (perhaps after a wait), or
    /// `unwillingToPerform` (53).
    pub(super) async fn throttle(&self, ip: Option<IpAddr>, what: &str) -> Result<(), OpError> {
        let Some(ip) = ip else {
            return Ok(());
        };
        match self.dir.bind_throttle.check_now(ip) {
            Decision::Proceed => Ok(()),
            Decision::Wait(d) => {
                tokio::time::sleep(d).await;
                Ok(())
            }
            Decision::Refuse { retry_after } => {
                let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                Err(OpError::unwilling(format!(
                    "too many failed {what} from {ip}: {what} from this address are held back; try again in {secs} s"
                )))
            }
        }
    }

    /// Counts an `invalidCredentials` answer against the client's address.
    fn count_failure(&self, e: &OpError, ip: Option<IpAddr>) {
        if let Some(ip) = ip {
            if e.code == ResultCode::INVALID_CREDENTIALS {
                self.dir.bind_throttle.record_failure(ip, Instant::now());
            }
        }
    }
}
