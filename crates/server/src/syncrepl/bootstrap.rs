//! A new replica of a Larch provider started from the provider's snapshot file, not from
//! a refresh of every entry (`start_from = "snapshot"`, `docs/replication.md`).
//!
//! Steps, run by `larch serve` before the store opens, only when the data directory holds
//! no store yet (no snapshot, no log):
//! 1. connect and bind as the table says ([`Connection::open`]), and send Larch's snapshot
//!    transfer request ([`exop::SNAPSHOT_TRANSFER`]);
//! 2. write each piece ([`SnapshotPiece`]) to `<data>/snapshot-transfer.partial`, in order:
//!    a piece whose offset is not where the file ends, or whose CRC-32C is wrong, ends the
//!    transfer; the file grows to at most [`MAX_SNAPSHOT_BYTES`];
//! 3. at the end ([`SnapshotDone`]) the length must be the one announced; the file is
//!    synced and checked whole as a snapshot (every chunk's checksum, the entry count),
//!    then renamed to its place in `<data>/snapshots/` and the directory synced;
//! 4. the store then opens from it like from its own snapshot; before the consumer starts,
//!    [`seed_cookie`] stores the snapshot's context CSNs (the largest `entryCSN` per server
//!    ID below the base) as the base entry's `contextCSN`, so the consumer's first session
//!    asks only for the changes after the snapshot.
//!
//! A failed transfer leaves no snapshot behind (the partial file is removed), so the
//! replica starts empty and its consumer refreshes in full.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use larch_proto::exop::{self, ExtendedValue, SnapshotDone, SnapshotPiece};
use larch_proto::{ExtendedRequest, LdapMessage, ProtocolOp, ResultCode};
use larch_store::snapshot::{snapshot_name, verify_snapshot};
use larch_store::storage::FsStorage;
use larch_store::wal::Lsn;
use larch_store::Store;

use super::apply::{store_cookie_now, ApplyContext};
use super::connection::{ClientTls, Connection, Upstream};
use super::cookie::CsnSet;
use super::error::SyncError;
use crate::config::ReplicationSettings;

/// The largest snapshot file a replica accepts: far beyond any directory this server
/// holds in memory, a bound on what a provider can make it write.
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 40;

/// The message ID of the transfer request (the Bind is 1).
const TRANSFER_ID: i32 = 2;

/// What was fetched.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The snapshot's LSN on the provider.
    pub lsn: Lsn,
    /// Its length.
    pub octets: u64,
    /// Its entries.
    pub entries: u64,
    /// Where it was put.
    pub path: PathBuf,
    /// How long the transfer took.
    pub elapsed: Duration,
}

/// True when `data` holds no store yet: no snapshot and no log segment.
pub fn is_empty_data_dir(data: &Path) -> bool {
    let holds =
        |sub: &str| std::fs::read_dir(data.join(sub)).is_ok_and(|mut entries| entries.any(|e| e.is_ok()));
    !holds("snapshots") && !holds("wal")
}

/// Steps 1 to 3: fetches the provider's snapshot into the data directory `data`.
pub async fn fetch_snapshot(
    s: &ReplicationSettings,
    data: &Path,
    max_pdu: usize,
) -> Result<Fetched, SyncError> {
    let started = Instant::now();
    let upstream = Upstream::from(s);
    let tls = ClientTls::new(&upstream)?;
    let mut conn = Connection::open(&upstream, tls.as_ref(), max_pdu).await?;
    let req = ExtendedRequest {
        name: exop::SNAPSHOT_TRANSFER.as_bytes(),
        value: None,
    };
    conn.send(&LdapMessage::new(TRANSFER_ID, ProtocolOp::ExtendedRequest(req)))
        .await?;
    std::fs::create_dir_all(data).map_err(|e| SyncError::io(format!("creating {}", data.display()), e))?;
    let partial = data.join("snapshot-transfer.partial");
    let result = receive(&mut conn, &partial)
        .await
        .and_then(|done| place(&partial, data, done));
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    let (lsn, octets, entries, path) = result?;
    Ok(Fetched {
        lsn,
        octets,
        entries,
        path,
        elapsed: started.elapsed(),
    })
}

/// Step 2: the pieces into `partial`; the end's figures.
async fn receive(conn: &mut Connection, partial: &Path) -> Result<SnapshotDone, SyncError> {
    let io = |what: &str, e| SyncError::io(format!("{what} {}", partial.display()), e);
    let mut file = std::fs::File::create(partial).map_err(|e| io("creating", e))?;
    let mut written = 0u64;
    loop {
        let pdu = conn.next_pdu().await?;
        let msg = LdapMessage::decode(pdu).map_err(|e| SyncError::Protocol(e.to_string()))?;
        match msg.op {
            ProtocolOp::IntermediateResponse(r) if r.name == Some(exop::SNAPSHOT_TRANSFER.as_bytes()) => {
                let piece = SnapshotPiece::decode(r.value.unwrap_or_default())
                    .map_err(|e| SyncError::Protocol(format!("snapshot piece: {e}")))?;
                check_piece(&piece, written)?;
                file.write_all(piece.data).map_err(|e| io("writing", e))?;
                written += piece.data.len() as u64;
            }
            ProtocolOp::ExtendedResponse(r) if msg.message_id == TRANSFER_ID || msg.message_id == 0 => {
                if r.result.code != ResultCode::SUCCESS {
                    return Err(SyncError::Refused {
                        what: "snapshot transfer",
                        code: r.result.code,
                        message: String::from_utf8_lossy(r.result.diagnostic_message).into_owned(),
                    });
                }
                let done = SnapshotDone::decode_value(r.value)
                    .map_err(|e| SyncError::Protocol(format!("snapshot transfer's end: {e}")))?;
                if done.octets != written {
                    return Err(SyncError::Protocol(format!(
                        "the provider announced {} octets of snapshot and sent {written}",
                        done.octets
                    )));
                }
                file.sync_all().map_err(|e| io("syncing", e))?;
                return Ok(done);
            }
            _ => {
                return Err(SyncError::Protocol(format!(
                    "unexpected {} during the snapshot transfer",
                    msg.op.name()
                )))
            }
        }
    }
}

/// A piece must continue the file, carry the right checksum, and keep it within bounds.
fn check_piece(piece: &SnapshotPiece<'_>, written: u64) -> Result<(), SyncError> {
    if piece.offset != written {
        return Err(SyncError::Protocol(format!(
            "a snapshot piece at offset {} where the file has {written} octets",
            piece.offset
        )));
    }
    if crc32c::crc32c(piece.data) != piece.crc32c {
        return Err(SyncError::Protocol(format!(
            "the snapshot piece at offset {written} does not match its CRC-32C"
        )));
    }
    if written + piece.data.len() as u64 > MAX_SNAPSHOT_BYTES {
        return Err(SyncError::Protocol(format!(
            "the snapshot passes {MAX_SNAPSHOT_BYTES} octets"
        )));
    }
    Ok(())
}

/// Step 3: the whole file checked, then moved into `<data>/snapshots/`.
fn place(partial: &Path, data: &Path, done: SnapshotDone) -> Result<(Lsn, u64, u64, PathBuf), SyncError> {
    let info = verify_snapshot(&FsStorage, partial)
        .map_err(|e| SyncError::Protocol(format!("the snapshot received is not sound: {e}")))?;
    if info.lsn != done.lsn {
        return Err(SyncError::Protocol(format!(
            "the snapshot received is at LSN {}, the provider announced {}",
            info.lsn, done.lsn
        )));
    }
    let dir = data.join("snapshots");
    std::fs::create_dir_all(&dir).map_err(|e| SyncError::io(format!("creating {}", dir.display()), e))?;
    let path = dir.join(snapshot_name(done.lsn));
    std::fs::rename(partial, &path)
        .map_err(|e| SyncError::io(format!("moving the snapshot to {}", path.display()), e))?;
    for d in [&dir, &data.to_path_buf()] {
        std::fs::File::open(d)
            .and_then(|f| f.sync_all())
            .map_err(|e| SyncError::io(format!("syncing {}", d.display()), e))?;
    }
    Ok((done.lsn, done.octets, info.entries, path))
}

/// Step 4: the largest `entryCSN` per server ID below the base becomes the cookie stored
/// with the data, unless one is stored already; the number of CSNs stored.
pub fn seed_cookie(store: &Store, ctx: &Arc<ApplyContext>) -> Result<usize, SyncError> {
    let version = store.current();
    let Some(base) = version.find(&ctx.base) else {
        return Ok(0);
    };
    let csns = CsnSet::of_entries(&version, version.subtree(base), ctx.optypes.entry_csn);
    if csns.is_empty() {
        return Ok(0);
    }
    let n = csns.iter().count();
    store_cookie_now(store, ctx, csns)?;
    Ok(n)
}
