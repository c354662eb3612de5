//! Larch's online backup extended operation ([`larch_proto::exop::BACKUP`]) on the
//! connection: the server writes a backup of its directory into a directory on its own
//! host, as 389 DS's `dsconf backup create` does, while it goes on serving.
//!
//! Steps:
//! 1. the request's controls are read, then the requester must be the configured
//!    administrator (`insufficientAccessRights`, 50, for anyone else: a backup copies every
//!    entry, passwords included, and writes where the server may write); the value must
//!    decode (`protocolError`, 2) and name the directory in UTF-8;
//! 2. the backup runs on a thread of its own ([`larch_store::Store::backup`]: a snapshot from
//!    the current version, paced, then the log after it, the manifest last), so the
//!    connection goes on reading and answering meanwhile;
//! 3. a directory that is not absolute, or exists and is not empty, is refused with
//!    `unwillingToPerform` (53) and the store's reason, before anything is written; any
//!    other failure is `other` (80) with the reason; success carries a
//!    [`BackupResponse`] (LSNs, entries, octets, time).

use std::path::PathBuf;

use larch_proto::exop::{BackupRequest, BackupResponse, ExtendedValue, BACKUP};
use larch_proto::{op_tag, ExtendedRequest, ResultCode};
use larch_store::{BackupError, BackupOptions, BackupReport};

use super::complete::{Ending, OpTrace};
use super::dispatch::Controls;
use super::Session;
use crate::controls::{OpKind, RequestControls};
use crate::error::OpError;
use crate::outcome::Reply;

/// The software named in every manifest the server writes.
const SOFTWARE: &str = concat!("larch ", env!("CARGO_PKG_VERSION"));

impl Session {
    /// Runs a backup request (see the module documentation).
    pub(super) fn backup(
        &mut self,
        trace: OpTrace,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        let to = match self.backup_target(req, controls) {
            Ok(to) => to,
            Err(e) => return self.refuse_extended(&trace, pdu, out, e),
        };
        let store = self.dir.store.clone();
        let options = BackupOptions {
            software: SOFTWARE.to_string(),
            suffixes: self.dir.config.suffixes().map(str::to_string).collect(),
            full_speed: false,
        };
        // A thread of its own, not tokio's blocking pool: that pool is sized for the slow
        // password checks (`password::gate::blocking_threads`), and a backup holds its
        // thread for seconds to minutes.
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let started = std::thread::Builder::new()
            .name("larch-backup".into())
            .spawn(move || {
                let _ = done_tx.send(store.backup(&to, &options));
            });
        self.answer_extended_later(trace, pdu, async move {
            let taken = match started {
                Ok(_) => done_rx.await.ok(),
                Err(_) => None,
            };
            match taken {
                Some(Ok(report)) => success(&report),
                Some(Err(e)) => Reply::from(refusal(e)),
                None => Reply::from(OpError::new(ResultCode::OTHER, "the backup did not complete")),
            }
        });
    }

    /// Ends an extended operation with the reply `reply` makes, on a task of its own: the
    /// connection goes on reading and answering meanwhile.
    pub(super) fn answer_extended_later(
        &self,
        trace: OpTrace,
        pdu: &[u8],
        reply: impl std::future::Future<Output = Reply> + Send + 'static,
    ) {
        let tx = self.out_tx.clone();
        let completion = self.completion(trace, pdu, self.identity.clone());
        tokio::spawn(async move {
            let reply = reply.await;
            let mut out = Vec::new();
            completion.complete(&mut out, Ending::reply(op_tag::EXTENDED_RESPONSE, &reply));
            let _ = tx.send(out).await;
        });
    }

    /// Ends an extended operation refused before it started with `e`.
    pub(super) fn refuse_extended(&mut self, trace: &OpTrace, pdu: &[u8], out: &mut Vec<u8>, e: OpError) {
        let reply = Reply::from(e);
        self.complete(
            trace,
            pdu,
            None,
            out,
            Ending::reply(op_tag::EXTENDED_RESPONSE, &reply),
        );
    }

    /// `insufficientAccessRights` (50) for anyone but the configured administrator: an
    /// operation that copies every entry, passwords included (a backup, a snapshot sent to
    /// a replica).
    pub(super) fn administrator_only(&self, what: &str) -> Result<(), OpError> {
        if self.identity.is_admin() {
            return Ok(());
        }
        Err(OpError::new(
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
            format!("only the administrator may {what}"),
        ))
    }

    /// Step 1: the directory to write, or the error to answer.
    fn backup_target(&self, req: ExtendedRequest<'_>, controls: Controls<'_>) -> Result<PathBuf, OpError> {
        RequestControls::parse(controls, OpKind::Extended)?.refuse_proxied("a backup")?;
        self.administrator_only("take a backup")?;
        let request =
            BackupRequest::decode_value(req.value).map_err(|e| OpError::protocol(format!("Backup: {e}")))?;
        let text = std::str::from_utf8(request.directory)
            .map_err(|_| OpError::protocol("Backup: the directory is not UTF-8"))?;
        Ok(PathBuf::from(text))
    }
}

/// Step 3: a target the request named wrongly is the client's to fix (53); anything else
/// failed on the way (80).
fn refusal(e: BackupError) -> OpError {
    let code = if e.is_refusal() {
        ResultCode::UNWILLING_TO_PERFORM
    } else {
        ResultCode::OTHER
    };
    OpError::new(code, format!("backup not taken: {e}"))
}

/// The success reply with the backup's figures.
fn success(report: &BackupReport) -> Reply {
    let m = &report.manifest;
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let mut value = Vec::new();
    BackupResponse {
        snapshot_lsn: count(m.snapshot_lsn),
        end_lsn: count(m.end_lsn),
        entries: count(m.entries),
        octets: count(m.total_bytes()),
        milliseconds: i64::try_from(report.elapsed.as_millis()).unwrap_or(i64::MAX),
    }
    .encode_value(&mut value);
    Reply {
        name: Some(BACKUP),
        value: Some(value),
        ..Reply::success()
    }
}
