//! The file operations backups and restores are made of, each durable when it returns:
//! streamed checksums and copies (a snapshot of millions of entries is never held in memory
//! twice), whole-file writes, and the write-then-rename that makes the manifest appear
//! complete or not at all.

use std::io::Read;
use std::path::Path;

use super::BackupError;
use crate::storage::Storage;

/// Octets read at a time when a file is checksummed or copied.
pub const COPY_BUFFER: usize = 1 << 20;

/// The size and CRC32C of `path`, read in pieces.
pub fn checksum(storage: &dyn Storage, path: &Path) -> Result<(u64, u32), BackupError> {
    let mut input = storage.open_read(path).map_err(BackupError::io("open", path))?;
    let mut buf = vec![0u8; COPY_BUFFER];
    let (mut size, mut crc) = (0u64, 0u32);
    loop {
        let n = input.read(&mut buf).map_err(BackupError::io("read", path))?;
        let Some(piece) = buf.get(..n).filter(|p| !p.is_empty()) else {
            return Ok((size, crc));
        };
        crc = crc32c::crc32c_append(crc, piece);
        size += n as u64;
    }
}

/// Copies `from` to the new file `to` in pieces and fsyncs it; returns the size and CRC32C
/// of what was copied. `to`'s name is durable after a directory fsync.
pub fn copy(storage: &dyn Storage, from: &Path, to: &Path) -> Result<(u64, u32), BackupError> {
    let mut input = storage.open_read(from).map_err(BackupError::io("open", from))?;
    let mut output = storage.open_append(to).map_err(BackupError::io("create", to))?;
    let mut buf = vec![0u8; COPY_BUFFER];
    let (mut size, mut crc) = (0u64, 0u32);
    loop {
        let n = input.read(&mut buf).map_err(BackupError::io("read", from))?;
        let Some(piece) = buf.get(..n).filter(|p| !p.is_empty()) else {
            break;
        };
        crc = crc32c::crc32c_append(crc, piece);
        size += n as u64;
        output.write_all(piece).map_err(BackupError::io("write", to))?;
    }
    output.sync().map_err(BackupError::io("sync", to))?;
    Ok((size, crc))
}

/// Writes `data` as the new file `path` and fsyncs it. The name is durable after a
/// directory fsync.
pub fn write_new(storage: &dyn Storage, path: &Path, data: &[u8]) -> Result<(), BackupError> {
    let mut file = storage
        .open_append(path)
        .map_err(BackupError::io("create", path))?;
    file.write_all(data).map_err(BackupError::io("write", path))?;
    file.sync().map_err(BackupError::io("sync", path))
}

/// Writes `data` under `dir/temp`, fsyncs it, renames it to `dir/name` and fsyncs `dir`: a
/// crash leaves `dir/name` whole or absent.
pub fn write_atomically(
    storage: &dyn Storage,
    dir: &Path,
    temp: &str,
    name: &str,
    data: &[u8],
) -> Result<(), BackupError> {
    let tmp = dir.join(temp);
    let path = dir.join(name);
    match storage.remove(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(BackupError::io("remove", &tmp)(e)),
    }
    write_new(storage, &tmp, data)?;
    storage
        .rename(&tmp, &path)
        .map_err(BackupError::io("rename", &tmp))?;
    sync_dir(storage, dir)
}

/// Creates `dir` (and its parents) and makes its name durable.
pub fn create_dir(storage: &dyn Storage, dir: &Path) -> Result<(), BackupError> {
    storage
        .create_dir_all(dir)
        .map_err(BackupError::io("create", dir))?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(storage, parent)?;
    }
    Ok(())
}

/// Makes `dir`'s entries durable.
pub fn sync_dir(storage: &dyn Storage, dir: &Path) -> Result<(), BackupError> {
    storage.sync_dir(dir).map_err(BackupError::io("sync", dir))
}
