//! A Bind on the connection: the decisions of [`crate::auth::bind`], the failed-bind
//! throttle, and the password check off the connection thread when it is slow.
//!
//! Steps (the caller, `dispatch`, holds every operation permit meanwhile, so nothing else
//! runs on the connection and no later request is read: the Bind barrier):
//! 1. [`crate::auth::bind::stage`] makes the decisions that need no password check and
//!    looks the entry up; anonymous and refused binds end here;
//! 2. the throttle decides about a password check for the bind DN from this client's
//!    address (for SASL PLAIN, the authentication identity's DN, before step 1, which
//!    checks its password): go on, wait (a tokio sleep, no thread held), or refuse with
//!    `unwillingToPerform` (53) without looking at the password. Binds that check no
//!    password (anonymous, SASL EXTERNAL) never meet it;
//! 3. the password is checked inline when every stored value is cheap (the digest
//!    schemes), else on a blocking thread with one of the slow-work permits
//!    ([`crate::password::gate`]);
//! 4. the outcome is told to the throttle: an `invalidCredentials` answer counts as a
//!    failure of the (address, DN) pair, the DN and the address; a success clears the
//!    pair's failures;
//! 5. password policy ([`crate::auth::policy`]): a locked account is refused before
//!    step 2 without a password check; after step 3 the policy concludes (failures
//!    counted, expiry, grace logins, must-change), waiting for the account's record when
//!    it is a failure or a grace login.

use std::net::IpAddr;
use std::time::Instant;

use larch_proto::{Authentication, BindRequest, ResultCode};
use larch_store::EntryId;

use super::Session;
use crate::auth::bind::{stage, Staged};
use crate::auth::policy::{wait_blocking, PolicyReport};
use crate::auth::sasl;
use crate::bind_throttle::{Account, Decision};
use crate::error::OpError;
use crate::identity::Identity;
use crate::password::gate;

impl Session {
    /// Runs a Bind (see the module documentation): the new identity with the entry a
    /// name/password bind found and what password policy reports, or the error to answer.
    pub(super) async fn run_bind(
        &mut self,
        req: &BindRequest<'_>,
    ) -> Result<(Identity, Option<EntryId>, PolicyReport), OpError> {
        let ip = self.client.addr.map(|a| a.ip());
        // SASL PLAIN checks its password inside step 1: it meets the throttle first.
        let sasl_account = match req.authentication {
            Authentication::Sasl {
                mechanism,
                credentials,
            } => sasl::plain_account(&self.dir, mechanism, credentials),
            _ => None,
        };
        if let Some(account) = sasl_account {
            self.throttle(ip, account, "binds").await?;
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
        if let Some(account) = sasl_account {
            self.tell_throttle(Checked::of(&staged), ip, account);
        }
        let mut check = match staged {
            Ok(Staged::Done(identity, report)) => return Ok((identity, None, report)),
            Ok(Staged::Check(check)) => check,
            Err(e) => return Err(e),
        };
        let policy = check.take_policy();
        if let Some(p) = &policy {
            p.check_lock()?;
        }
        let account = check.account();
        self.throttle(ip, account, "binds").await?;
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
        self.tell_throttle(Checked::of(&result), ip, account);
        let Some(policy) = policy else {
            return result.map(|identity| (identity, entry, PolicyReport::default()));
        };
        let (result, report, pending) = policy.conclude(&self.dir, result);
        if let Some(p) = pending {
            wait_blocking(p);
        }
        result.map(|identity| (identity, entry, report))
    }

    /// The failed-bind throttle's decision for a password check (`what`: "binds",
    /// "password checks") of `account` from `ip`: go on (perhaps after a wait), or
    /// `unwillingToPerform` (53).
    pub(super) async fn throttle(
        &self,
        ip: Option<IpAddr>,
        account: Account,
        what: &str,
    ) -> Result<(), OpError> {
        let Some(ip) = ip else {
            return Ok(());
        };
        match self.dir.bind_throttle.check_now(ip, account) {
            Decision::Proceed => Ok(()),
            Decision::Wait(d) => {
                tokio::time::sleep(d).await;
                Ok(())
            }
            Decision::Refuse { retry_after } => {
                let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                Err(OpError::unwilling(format!(
                    "too many failed {what} for this DN: they are held back; try again in {secs} s"
                )))
            }
        }
    }

    /// Tells the throttle how a password check of `account` from `ip` ended.
    pub(super) fn tell_throttle(&self, checked: Checked, ip: Option<IpAddr>, account: Account) {
        let Some(ip) = ip else { return };
        let throttle = &self.dir.bind_throttle;
        match checked {
            Checked::Right => throttle.record_success(ip, account, Instant::now()),
            Checked::Wrong => throttle.record_failure(ip, account, Instant::now()),
            Checked::Neither => {}
        }
    }
}

/// How a password check ended, for the throttle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checked {
    /// The password was right.
    Right,
    /// It was wrong (or named no usable entry): a failure.
    Wrong,
    /// The operation ended for another reason, saying nothing about the password.
    Neither,
}

impl Checked {
    /// A bind's result: success, `invalidCredentials` (49), or anything else.
    fn of<T>(result: &Result<T, OpError>) -> Checked {
        match result {
            Ok(_) => Checked::Right,
            Err(e) if e.code == ResultCode::INVALID_CREDENTIALS => Checked::Wrong,
            Err(_) => Checked::Neither,
        }
    }
}
