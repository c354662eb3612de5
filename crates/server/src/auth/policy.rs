//! Password policy in a Bind (simple, SASL PLAIN; SASL EXTERNAL honours a lock), as
//! OpenLDAP's `ppolicy_bind` and `ppolicy_bind_response` apply it:
//! 1. before the password check, an account outside `pwdStartTime` / `pwdEndTime`, or
//!    (under `pwdLockout`) held back by a failure's delay (`pwdAccountTmpLockoutEnd`) or
//!    unused for longer than `pwdMaxIdle` (since `pwdLastSuccess`, else
//!    `pwdChangedTime`), or locked (`pwdAccountLockedTime`: permanent, or within
//!    `pwdLockoutDuration` under `pwdLockout`) gets `invalidCredentials` (49), the
//!    control's `accountLocked`; its password is not checked and no failure is counted;
//! 2. after it ([`crate::ppolicy::account::after_check`]): a wrong password under
//!    `pwdLockout` adds a `pwdFailureTime` and, at `pwdMaxFailure`, sets
//!    `pwdAccountLockedTime`, else with `pwdMinDelay` holds the account back for a delay
//!    that doubles with each failure up to `pwdMaxDelay`; a right one clears the failures
//!    and records `pwdLastSuccess` when due, and then: a reset password under
//!    `pwdMustChange` restricts the connection to changing it (`changeAfterReset`); an
//!    expired one uses a grace login (`graceAuthNsRemaining`) while `pwdGraceExpiry`
//!    allows, or fails with 49 (`passwordExpired`); one about to expire is warned of
//!    (`timeBeforeExpiration`).
//!
//! The administrator (`directory.admin_dn`) is never subject to the policy, as slapd's
//! rootdn.
//!
//! The account's state is written by a job on the store's writer like any write
//! ([`record`]): the job reads the entry in the writer's transaction (so concurrent binds
//! of one account count every failure), changes only what must change, and commits one
//! Modify of the entry through the write hooks (modifyTimestamp, entryCSN). A bind that
//! has nothing to write writes nothing: the common successful bind never meets the
//! writer. A failure and a grace login wait until their record is durable before the
//! answer (as slapd, which writes them before answering): the next bind sees them, and a
//! lockout survives a crash. The record of a success (failures cleared, `pwdLastSuccess`)
//! does not wait: the answer goes out at once; should the server stop before the record
//! is durable, the failures are still there afterwards (they expire after
//! `pwdFailureCountInterval`) and `pwdLastSuccess` is the one before. `pwdLastSuccess` is
//! rewritten only when older than `password_policy.last_success_precision`, so an account
//! that binds all day costs one write a minute by default, not one per bind.
//!
//! On a cluster's follower that forwards writes, the record is made by the leader instead
//! ([`super::cluster_record`]), and the answer that waits for it waits until this node has
//! applied it.

use std::sync::mpsc;
use std::sync::Arc;

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::Entry;
use larch_model::schema::Schema;
use larch_proto::controls::{PasswordPolicyError, PasswordPolicyWarning};
use larch_proto::ResultCode;
use larch_store::{EntryId, Version, WriteTxn};

use crate::acl::AccessRules;
use crate::client::Client;
use crate::directory::Directory;
use crate::error::OpError;
use crate::hooks::{HookContext, NewState, PendingWrite, WriteHooks, WriteKind};
use crate::identity::Identity;
use crate::opattrs::csn::CsnGenerator;
use crate::opattrs::OperationalTypes;
use crate::ppolicy::account::{after_check, refuse_before_check};
use crate::ppolicy::state::apply_bind_update;
use crate::ppolicy::time::now_micros;
use crate::ppolicy::{AccountState, AccountUpdate, PasswordPolicy, Policy};

/// The policy of an account a bind names, read with the entry.
#[derive(Debug, Clone)]
pub struct BindPolicy {
    policy: Policy,
    state: AccountState,
    norm: NormDn,
}

/// What the policy adds to a bind's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PolicyReport {
    /// The control's warning.
    pub warning: Option<PasswordPolicyWarning>,
    /// The control's error.
    pub error: Option<PasswordPolicyError>,
    /// The connection may only change its password.
    pub must_change: bool,
}

/// A bind's record of the account, handed to the writer.
#[derive(Debug)]
pub struct PendingRecord {
    /// Told when the record is durable (or failed).
    pub done: mpsc::Receiver<()>,
    /// The answer waits for it.
    pub wait: bool,
}

/// The one answer to a bind the policy refuses.
fn refused(error: PasswordPolicyError) -> OpError {
    OpError::new(ResultCode::INVALID_CREDENTIALS, "invalid credentials").with_policy(error)
}

impl BindPolicy {
    /// The policy of the account `id` (named `norm`) in `version`; `None` when no policy
    /// is on, or for the administrator.
    pub fn read(dir: &Directory, version: &Version, id: EntryId, norm: &NormDn) -> Option<BindPolicy> {
        let pp = dir.password_policy.as_ref()?;
        if *norm == dir.admin_dn {
            return None;
        }
        let entry = version.entry(id)?;
        Some(BindPolicy {
            policy: pp.policy_for(version, entry.attrs(), &dir.schema),
            state: AccountState::read(entry.attrs(), &pp.types),
            norm: norm.clone(),
        })
    }

    /// Step 1: `invalidCredentials` (49) for a locked account, before its password is
    /// checked.
    pub fn check_lock(&self) -> Result<(), OpError> {
        match refuse_before_check(&self.state, &self.policy, now_micros()) {
            Some(e) => Err(refused(e)),
            None => Ok(()),
        }
    }

    /// Step 2: the bind's result after the password check (`checked`), what the control
    /// reports, and the record handed to the writer, if any.
    pub fn conclude(
        self,
        dir: &Directory,
        checked: Result<Identity, OpError>,
    ) -> (Result<Identity, OpError>, PolicyReport, Option<PendingRecord>) {
        let now = now_micros();
        let right = checked.is_ok();
        let verdict = after_check(&self.state, &self.policy, now, right);
        let report = PolicyReport {
            warning: verdict.warning,
            error: verdict.error,
            must_change: verdict.must_change,
        };
        let pending = verdict.update.map(|update| PendingRecord {
            wait: update != AccountUpdate::Succeeded,
            done: record(dir, self.norm, update, now),
        });
        let result = match (checked, verdict.refused, verdict.error) {
            (Ok(_), true, Some(e)) => Err(refused(e)),
            (other, _, _) => other,
        };
        (result, report, pending)
    }
}

/// How a record ended: the store's outcome, then the record's own.
pub type Settled = Result<Result<(), OpError>, larch_store::StoreError>;

/// What the writer's job needs of the directory, owned (the job runs on the writer's
/// thread after the bind has moved on).
struct RecordContext {
    policy: Arc<PasswordPolicy>,
    schema: Arc<Schema>,
    hooks: WriteHooks,
    optypes: OperationalTypes,
    csn: Arc<CsnGenerator>,
    access: Arc<AccessRules>,
    /// The administrator, who records the state (as slapd records it as its rootdn).
    admin: Identity,
}

/// Hands the account's record to the store's writer (see the module documentation), or on
/// a cluster's follower that forwards writes, to the leader ([`super::cluster_record`]);
/// the receiver is told when it is durable (on a follower: recorded by the leader and
/// applied here), or failed.
pub fn record(dir: &Directory, norm: NormDn, update: AccountUpdate, now: i64) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    let told = move || {
        let _ = tx.send(());
    };
    if let Some(leader) = super::cluster_record::leader(dir) {
        leader.send(norm, update, now, told);
        return rx;
    }
    record_here(dir, norm, update, now, move |settled| {
        match settled {
            // A cluster's follower that does not forward writes: the state is recorded by
            // binds on the leader only (docs/cluster.md); said once per bind at debug
            // level, not as a warning a failed-bind storm would repeat.
            Err(larch_store::StoreError::Replication(e)) => {
                tracing::debug!(error = %e, "password policy: not recorded on a cluster follower");
            }
            settled => {
                if let Err(e) = settled.map_err(OpError::from).and_then(|r| r) {
                    tracing::warn!(error = %e, "password policy: the account's state could not be recorded");
                }
            }
        }
        told();
    });
    rx
}

/// Hands the account's record to this node's store's writer; `settled` gets the outcome
/// once the record is durable and published, or the store's refusal (a cluster node that
/// does not lead refuses it as any write).
pub fn record_here(
    dir: &Directory,
    norm: NormDn,
    update: AccountUpdate,
    now: i64,
    settled: impl FnOnce(Settled) + Send + 'static,
) {
    let Some(policy) = dir.password_policy.clone() else {
        return settled(Ok(Ok(())));
    };
    let job = RecordContext {
        policy,
        schema: dir.schema.clone(),
        hooks: dir.hooks.clone(),
        optypes: dir.optypes,
        csn: dir.csn.clone(),
        access: dir.acl.clone(),
        admin: Identity::Dn {
            dn: dir.config.directory.admin_dn.clone(),
            norm: dir.admin_dn.clone(),
            admin: true,
        },
    };
    dir.store.submit(
        move |txn: &mut WriteTxn<'_>| write_record(txn, &job, &norm, update, now),
        settled,
    );
}

/// The record in the writer's transaction: the entry as it is now, the update applied,
/// one Modify through the write hooks when something changed.
fn write_record(
    txn: &mut WriteTxn<'_>,
    job: &RecordContext,
    norm: &NormDn,
    update: AccountUpdate,
    now: i64,
) -> Result<(), OpError> {
    let pp = &job.policy;
    let version = txn.version();
    let Some(id) = version.find(norm) else {
        return Ok(());
    };
    let Some(view) = version.entry(id) else {
        return Ok(());
    };
    let policy = pp.policy_for(version, view.attrs(), &job.schema);
    let state = AccountState::read(view.attrs(), &pp.types);
    let dn = Dn::parse(version.dn(id).as_bytes())?;
    let mut entry = Entry::from_stored(dn, norm.clone(), view.attrs());
    if !apply_bind_update(&mut entry, &state, &pp.types, &policy, update, now) {
        return Ok(());
    }
    let client = Client {
        addr: None,
        tls: false,
    };
    let ctx = HookContext {
        schema: &job.schema,
        optypes: &job.optypes,
        csn: &job.csn,
        identity: &job.admin,
        client: &client,
        access: &job.access,
    };
    let mut write = PendingWrite::new(WriteKind::Modify, NewState::Modify { id, entry }, &ctx);
    job.hooks.before_change(&mut write, txn.version(), &ctx)?;
    job.hooks.commit(txn, &write, &ctx)?;
    Ok(())
}

/// Waits until a record the answer waits for is durable (on a connection's thread: the
/// tokio worker is left to others meanwhile).
pub fn wait_blocking(pending: PendingRecord) {
    if !pending.wait {
        return;
    }
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi_thread = Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(|| pending.done.recv().ok());
    } else {
        let _ = pending.done.recv();
    }
}
