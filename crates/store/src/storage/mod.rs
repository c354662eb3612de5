//! The `Storage` trait: every file the store touches (WAL segments, later snapshots) goes
//! through it, so tests can replace the disk with [`FaultStorage`], which injects torn
//! writes, short writes, failing fsyncs and crashes deterministically from a seed.
//!
//! Durability model (what each implementation promises, and what [`FaultStorage`] models):
//! - bytes written with [`AppendFile::write`] are visible to readers at once, but survive a
//!   crash only after [`AppendFile::sync`] returns `Ok`;
//! - a file's *name* (creation, rename, removal) survives a crash only after
//!   [`Storage::sync_dir`] on its directory returns `Ok`;
//! - [`Storage::truncate`] is durable when it returns `Ok`;
//! - a file opened with [`Storage::open_append_reserving`] may have space allocated past
//!   its last write: it reads as zeros, and after a crash the file may end in such zeros
//!   (its reserved tail) after whatever of its writes survived. Readers of such a file
//!   take a tail of zeros for its end;
//! - after a failed `sync`, nothing written since the last successful `sync` may be assumed
//!   durable, and retrying the `sync` does not make it so (Linux may have dropped the dirty
//!   pages), so callers must treat the file as lost from that point on.

mod fault;
mod fs;

use std::io;
use std::path::Path;

pub use fault::{FaultConfig, FaultStorage};
pub use fs::FsStorage;

/// What a path names, as [`Storage::dir_state`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirState {
    /// Nothing of that name.
    Missing,
    /// A directory holding nothing (no file, no subdirectory).
    Empty,
    /// A directory holding something.
    NotEmpty,
    /// A file or anything else that is not a directory.
    NotADirectory,
}

/// A file opened for reading at any offset.
pub trait ReadSeek: io::Read + io::Seek + Send {}

impl<T: io::Read + io::Seek + Send> ReadSeek for T {}

/// A file opened for appending.
pub trait AppendFile: Send {
    /// Appends up to `buf.len()` octets at the end of the file and returns how many were
    /// written, which may be fewer (a short write). Not durable until [`AppendFile::sync`].
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;

    /// Makes everything written so far durable (fsync). On `Err`, none of the writes since
    /// the previous successful `sync` may be assumed durable.
    fn sync(&mut self) -> io::Result<()>;

    /// Gives back the space reserved past the last write ([`Storage::open_append_reserving`]):
    /// the file then ends where its writes end, durably. Nothing to do for a file that
    /// reserves nothing.
    fn trim(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Appends all of `buf`, repeating short writes. Not durable until [`AppendFile::sync`].
    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = self.write(buf)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the storage accepted no octets",
                ));
            }
            buf = buf.get(n..).unwrap_or_default();
        }
        Ok(())
    }
}

/// The file operations the store needs, with their durability meaning.
///
/// Paths are used as given; implementations do not resolve `..` or symbolic links
/// specially.
pub trait Storage: Send + Sync {
    /// Opens `path` for appending, creating it empty if it does not exist. A newly created
    /// file's name is durable only after [`Storage::sync_dir`] on its directory.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>>;

    /// [`Storage::open_append`], keeping space allocated ahead of the writes, `chunk`
    /// octets at a time, so that a `sync` after an append need not record new blocks or a
    /// new length: on Linux the file is extended with `fallocate` (it reads as zeros past
    /// the last write), and a sync is `fdatasync`, which then only writes the data. A
    /// write-ahead log synced after every batch is what this is for: in a VM measured for
    /// `docs/benchmarks.md` that made each sync about a quarter shorter.
    ///
    /// Writes go on at the file's length when it is opened, so open a file whose tail may
    /// be reserved zeros only after cutting them off ([`Storage::truncate`]). Where space
    /// cannot be reserved this is [`Storage::open_append`].
    fn open_append_reserving(&self, path: &Path, chunk: u64) -> io::Result<Box<dyn AppendFile>> {
        let _ = chunk;
        self.open_append(path)
    }

    /// Reads the whole current content of `path` (durable or not).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// Opens `path` for reading in pieces from its start (a file too large to hold in
    /// memory twice, as a backup copies a snapshot). By default the whole file is read at
    /// once; the real filesystem streams it.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        Ok(Box::new(io::Cursor::new(self.read(path)?)))
    }

    /// Opens `path` for reading at any offset. The real filesystem keeps an open file
    /// readable to the end even once its name is removed; by default the whole file is read
    /// at once.
    fn open_read_seek(&self, path: &Path) -> io::Result<Box<dyn ReadSeek>> {
        Ok(Box::new(io::Cursor::new(self.read(path)?)))
    }

    /// Whether `dir` is missing, an empty directory, a directory holding something (files
    /// or subdirectories, which [`Storage::list`] does not name), or not a directory.
    fn dir_state(&self, dir: &Path) -> io::Result<DirState>;

    /// The names (not paths) of the regular files directly in `dir`, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Creates `dir` and its parents if missing. Durable after [`Storage::sync_dir`] on the
    /// parent.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Renames `from` to `to`, replacing `to` atomically. Durable after
    /// [`Storage::sync_dir`] on the directory (or both directories).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file `path`. Durable after [`Storage::sync_dir`] on its directory.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// Shortens `path` to `len` octets (never lengthens it) and makes the new length
    /// durable before returning `Ok`.
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()>;

    /// Makes the directory's entries (created, renamed, removed names) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}
