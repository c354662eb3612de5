//! The little state a Raft node keeps beside its log: its vote, and the last log ID its
//! log no longer holds (purged). One file, `raft-state`, replaced whole (written to
//! `raft-state.tmp`, fsynced, renamed over, directory fsynced), so a crash leaves the old
//! file or the new one.
//!
//! Format, little-endian, 64 octets:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `LARCHRFT` |
//! | 8 | 4 | format version, u32 = 1 |
//! | 12 | 8 | vote: term |
//! | 20 | 8 | vote: node voted for (meaningful when flag bit 1 is set) |
//! | 28 | 1 | flags: bit 0 a vote is recorded, bit 1 it names a node, bit 2 it is committed, bit 3 a purged log ID is recorded |
//! | 29 | 8 | purged: term |
//! | 37 | 8 | purged: leader node |
//! | 45 | 8 | purged: index |
//! | 53 | 7 | zero |
//! | 60 | 4 | CRC32C of octets 0..60 |

use std::io;
use std::path::{Path, PathBuf};

use larch_store::storage::Storage;
use openraft::{CommittedLeaderId, LeaderId, LogId, Vote};

use crate::types::NodeId;

const MAGIC: &[u8; 8] = b"LARCHRFT";
const VERSION: u32 = 1;
const LEN: usize = 64;

/// The file's name in the cluster directory.
pub const FILE_NAME: &str = "raft-state";

/// What the file holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RaftState {
    /// The node's vote.
    pub vote: Option<Vote<NodeId>>,
    /// The last log ID purged from the log.
    pub purged: Option<LogId<NodeId>>,
}

impl RaftState {
    fn encode(&self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out[..8].copy_from_slice(MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        let mut flags = 0u8;
        if let Some(vote) = &self.vote {
            flags |= 1;
            out[12..20].copy_from_slice(&vote.leader_id.term.to_le_bytes());
            if let Some(node) = vote.leader_id.voted_for() {
                flags |= 2;
                out[20..28].copy_from_slice(&node.to_le_bytes());
            }
            if vote.committed {
                flags |= 4;
            }
        }
        if let Some(purged) = &self.purged {
            flags |= 8;
            out[29..37].copy_from_slice(&purged.leader_id.term.to_le_bytes());
            out[37..45].copy_from_slice(&purged.leader_id.node_id.to_le_bytes());
            out[45..53].copy_from_slice(&purged.index.to_le_bytes());
        }
        out[28] = flags;
        let crc = crc32c::crc32c(&out[..60]);
        out[60..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Result<RaftState, &'static str> {
        if bytes.len() != LEN {
            return Err("wrong length");
        }
        if &bytes[..8] != MAGIC {
            return Err("bad magic");
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
        if u32_at(8) != VERSION {
            return Err("unknown format version");
        }
        if crc32c::crc32c(&bytes[..60]) != u32_at(60) {
            return Err("checksum mismatch");
        }
        let flags = bytes[28];
        let vote = (flags & 1 != 0).then(|| {
            let term = u64_at(12);
            let node = (flags & 2 != 0).then(|| u64_at(20));
            let leader_id = match node {
                Some(n) => LeaderId::new(term, n),
                None => LeaderId { term, node_id: 0 },
            };
            Vote {
                leader_id,
                committed: flags & 4 != 0,
            }
        });
        let purged =
            (flags & 8 != 0).then(|| LogId::new(CommittedLeaderId::new(u64_at(29), u64_at(37)), u64_at(45)));
        Ok(RaftState { vote, purged })
    }
}

/// Reads the state in `dir` (the default when there is no file yet).
pub fn read(storage: &dyn Storage, dir: &Path) -> io::Result<RaftState> {
    let path = dir.join(FILE_NAME);
    match storage.read(&path) {
        Ok(bytes) => RaftState::decode(&bytes).map_err(|why| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: damaged: {why}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(RaftState::default()),
        Err(e) => Err(e),
    }
}

/// Replaces the state in `dir`, durably.
pub fn write(storage: &dyn Storage, dir: &Path, state: &RaftState) -> io::Result<()> {
    replace_file(storage, dir, FILE_NAME, &state.encode())
}

/// Replaces file `name` in `dir` with `bytes`, durably: written to `<name>.tmp`, fsynced,
/// renamed over, the directory fsynced; a crash leaves the old file or the new one.
pub fn replace_file(storage: &dyn Storage, dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp: PathBuf = dir.join(format!("{name}.tmp"));
    match storage.remove(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = storage.open_append(&tmp)?;
    file.write_all(bytes)?;
    file.sync()?;
    drop(file);
    storage.rename(&tmp, &dir.join(name))?;
    storage.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_store::storage::FaultStorage;

    #[test]
    fn the_state_round_trips_and_survives_a_crash() {
        let s = FaultStorage::new(1);
        let dir = Path::new("/db/cluster");
        s.create_dir_all(dir).unwrap();
        assert_eq!(read(&s, dir).unwrap(), RaftState::default());
        let state = RaftState {
            vote: Some(Vote::new_committed(5, 2)),
            purged: Some(LogId::new(CommittedLeaderId::new(4, 1), 99)),
        };
        write(&s, dir, &state).unwrap();
        s.crash();
        assert_eq!(read(&s, dir).unwrap(), state);
        let voted = RaftState {
            vote: Some(Vote::new(6, 3)),
            purged: None,
        };
        write(&s, dir, &voted).unwrap();
        assert_eq!(read(&s, dir).unwrap(), voted);
    }

    #[test]
    fn a_damaged_file_is_refused() {
        let mut bytes = RaftState::default().encode();
        bytes[30] ^= 1;
        assert_eq!(RaftState::decode(&bytes), Err("checksum mismatch"));
        assert_eq!(RaftState::decode(&bytes[..10]), Err("wrong length"));
    }
}
