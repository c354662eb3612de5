//! Larch's snapshot transfer extended operation ([`larch_proto::exop::SNAPSHOT_TRANSFER`])
//! on the connection: a new replica receives the provider's snapshot file itself, piece by
//! piece, and then follows the changes after it (`docs/replication.md`, "Starting a
//! replica from a snapshot").
//!
//! Steps:
//! 1. the request's controls are read; the requester must be the configured administrator
//!    (`insufficientAccessRights`, 50: a snapshot holds every entry, passwords included);
//!    the request carries no value (`protocolError`, 2); at most
//!    [`MAX_TRANSFERS`] run at once (`busy`, 51, for one more);
//! 2. on a thread of its own, the store writes a snapshot of the current version (paced,
//!    as its scheduled snapshots are) unless its newest already is one, and opens it
//!    ([`larch_store::Store::snapshot_for_transfer`]);
//! 3. the file is read [`PIECE_BYTES`] at a time, each piece sent in an
//!    IntermediateResponse ([`SnapshotPiece`]: offset, octets, CRC-32C), waiting while the
//!    connection's queue is full (a client that stops reading holds the thread, never
//!    memory); a closed connection ends the transfer;
//! 4. the ExtendedResponse ends it: `success` with [`SnapshotDone`] (the snapshot's LSN and
//!    length), or `other` (80) with the reason the snapshot could not be written or read.

use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};

use larch_proto::exop::{ExtendedValue, SnapshotDone, SnapshotPiece, SNAPSHOT_TRANSFER};
use larch_proto::{op_tag, ExtendedRequest, IntermediateResponse, ProtocolOp, ResultCode};

use super::complete::{Completion, Ending, OpTrace};
use super::dispatch::Controls;
use super::writer::OutSender;
use super::Session;
use crate::controls::{OpKind, RequestControls};
use crate::error::OpError;
use crate::outcome::Reply;
use crate::response::write_message;

/// Octets per piece: large enough that the per-message cost vanishes, well below every
/// client's message size limit (OpenLDAP's and Larch's default 8 MiB).
pub const PIECE_BYTES: usize = 256 * 1024;

/// Transfers running at once; each holds a thread while it sends.
pub const MAX_TRANSFERS: usize = 2;

static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// One running transfer's place, given back when dropped.
struct Place;

impl Place {
    fn take() -> Option<Place> {
        let mut now = RUNNING.load(Ordering::Acquire);
        loop {
            if now >= MAX_TRANSFERS {
                return None;
            }
            match RUNNING.compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(Place),
                Err(seen) => now = seen,
            }
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Session {
    /// Runs a snapshot transfer request (see the module documentation).
    pub(super) fn snapshot_transfer(
        &mut self,
        trace: OpTrace,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        let place = match self.transfer_allowed(req, controls) {
            Ok(place) => place,
            Err(e) => return self.refuse_extended(&trace, pdu, out, e),
        };
        let store = self.dir.store.clone();
        let tx = self.out_tx.clone();
        let completion = self.completion(trace, pdu, self.identity.clone());
        let runtime = tokio::runtime::Handle::current();
        // A thread of its own, as for a backup: the transfer holds it for seconds to
        // minutes, and it reads a file.
        let started = std::thread::Builder::new()
            .name("larch-snapshot-send".into())
            .spawn(move || {
                let _place = place;
                let reply = match store.snapshot_for_transfer() {
                    Ok(snapshot) => send_pieces(snapshot, &tx, &runtime, completion.msgid()),
                    Err(e) => Err(OpError::new(
                        ResultCode::OTHER,
                        format!("no snapshot to send: {e}"),
                    )),
                };
                finish(reply, &completion, &tx, &runtime);
            });
        if started.is_err() {
            // The completion moved into the closure that was not run: answer here.
            let e = OpError::new(ResultCode::BUSY, "no thread for the transfer; try again");
            self.refuse_extended(&trace, pdu, out, e);
        }
    }

    /// Step 1: whether this request may run now.
    fn transfer_allowed(&self, req: ExtendedRequest<'_>, controls: Controls<'_>) -> Result<Place, OpError> {
        RequestControls::parse(controls, OpKind::Extended)?.refuse_proxied("a snapshot transfer")?;
        self.administrator_only("receive a snapshot of the directory")?;
        if req.value.is_some() {
            return Err(OpError::protocol(
                "the snapshot transfer request carries no value",
            ));
        }
        Place::take().ok_or_else(|| {
            OpError::new(
                ResultCode::BUSY,
                format!("{MAX_TRANSFERS} snapshot transfers are running; try again later"),
            )
        })
    }
}

/// Step 3: the file's pieces; the reply that ends the transfer, or `Ok(None)` when the
/// connection went away.
fn send_pieces(
    mut snapshot: larch_store::TransferSnapshot,
    tx: &OutSender,
    runtime: &tokio::runtime::Handle,
    msgid: larch_proto::MessageId,
) -> Result<Option<Reply>, OpError> {
    let mut buf = vec![0u8; PIECE_BYTES];
    let mut offset = 0u64;
    loop {
        let n = read_full(&mut snapshot.reader, &mut buf).map_err(|e| {
            OpError::new(
                ResultCode::OTHER,
                format!("cannot read the snapshot {}: {e}", snapshot.path.display()),
            )
        })?;
        if n == 0 {
            break;
        }
        let data = &buf[..n];
        let mut value = Vec::with_capacity(n + 32);
        SnapshotPiece {
            offset,
            data,
            crc32c: crc32c::crc32c(data),
        }
        .encode(&mut value);
        let mut message = Vec::with_capacity(value.len() + 64);
        let op = ProtocolOp::IntermediateResponse(IntermediateResponse {
            name: Some(SNAPSHOT_TRANSFER.as_bytes()),
            value: Some(&value),
        });
        write_message(&mut message, msgid, op, &[]);
        if runtime.block_on(tx.send(message)).is_err() {
            return Ok(None);
        }
        offset += n as u64;
    }
    let mut value = Vec::new();
    SnapshotDone {
        lsn: snapshot.lsn,
        octets: offset,
    }
    .encode_value(&mut value);
    Ok(Some(Reply {
        name: Some(SNAPSHOT_TRANSFER),
        value: Some(value),
        ..Reply::success()
    }))
}

/// Reads until `buf` is full or the file ends; the octets read.
fn read_full(reader: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Step 4: the ExtendedResponse (none when the connection is gone).
fn finish(
    reply: Result<Option<Reply>, OpError>,
    completion: &Completion,
    tx: &OutSender,
    runtime: &tokio::runtime::Handle,
) {
    let reply = match reply {
        Ok(Some(reply)) => reply,
        Ok(None) => {
            completion.complete(&mut Vec::new(), Ending::silent());
            return;
        }
        Err(e) => Reply::from(e),
    };
    let mut out = Vec::new();
    completion.complete(&mut out, Ending::reply(op_tag::EXTENDED_RESPONSE, &reply));
    let _ = runtime.block_on(tx.send(out));
}
