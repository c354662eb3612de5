//! A snapshot file as openraft's snapshot data: read from the store's snapshot directory
//! when the leader sends it, written into the node's state directory when a follower
//! receives it, both through the store's [`Storage`] (the real file system, or the tests'
//! crashable one).
//!
//! openraft moves a snapshot in chunks ([`openraft::Config::snapshot_max_chunk_size`],
//! 3 MiB): the sender seeks to the end to learn the length, then to each chunk's offset
//! and reads it; the receiver writes each chunk at its offset and flushes at the end. So
//! the file supports what that needs and no more:
//! - reading from any offset (a chunk is sent again after a lost answer), from a file
//!   opened once: a newer snapshot may remove its name meanwhile, and the open file stays
//!   readable to the end;
//! - writing at the end, or at an earlier offset by cutting the file there first (a chunk
//!   received again); never past the end;
//! - flushing: an fsync.
//!
//! Each call does its file work at once, on the calling task's thread: a chunk read or
//! written from the page cache, a few milliseconds at most, and snapshots are rare. The
//! chunk is the bound; nothing is buffered beyond it.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use larch_store::storage::{AppendFile, ReadSeek, Storage};
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

/// A snapshot being sent or received.
pub struct SnapshotFile {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    mode: Mode,
    /// Where the next read or write happens.
    pos: u64,
}

enum Mode {
    /// Sending: `reader` is at `at`, the file is `len` octets long.
    Read {
        reader: Box<dyn ReadSeek>,
        at: u64,
        len: u64,
    },
    /// Receiving: `len` octets written so far.
    Write { file: Box<dyn AppendFile>, len: u64 },
}

impl std::fmt::Debug for SnapshotFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotFile")
            .field("path", &self.path)
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

impl SnapshotFile {
    /// The snapshot at `path`, opened as `reader`, for sending.
    pub fn reading(
        storage: &Arc<dyn Storage>,
        path: &Path,
        mut reader: Box<dyn ReadSeek>,
    ) -> io::Result<SnapshotFile> {
        let len = reader.seek(SeekFrom::End(0))?;
        reader.seek(SeekFrom::Start(0))?;
        Ok(SnapshotFile {
            storage: Arc::clone(storage),
            path: path.to_path_buf(),
            mode: Mode::Read { reader, at: 0, len },
            pos: 0,
        })
    }

    /// Creates `path` empty (removing what was there: an interrupted earlier transfer)
    /// for receiving.
    pub fn create(storage: &Arc<dyn Storage>, path: &Path) -> io::Result<SnapshotFile> {
        match storage.remove(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        Ok(SnapshotFile {
            storage: Arc::clone(storage),
            path: path.to_path_buf(),
            mode: Mode::Write {
                file: storage.open_append(path)?,
                len: 0,
            },
            pos: 0,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> u64 {
        match &self.mode {
            Mode::Read { len, .. } | Mode::Write { len, .. } => *len,
        }
    }

    /// Reads at `pos` into `buf`; returns how many octets (0 at the end).
    fn read_at_pos(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Mode::Read { reader, at, .. } = &mut self.mode else {
            return Err(io::Error::other("a snapshot being received is not read"));
        };
        if self.pos != *at {
            *at = reader.seek(SeekFrom::Start(self.pos))?;
        }
        let n = reader.read(buf)?;
        *at += n as u64;
        self.pos += n as u64;
        Ok(n)
    }

    /// Writes all of `buf` at `pos`.
    fn write_at_pos(&mut self, buf: &[u8]) -> io::Result<()> {
        let Mode::Write { file, len } = &mut self.mode else {
            return Err(io::Error::other("a snapshot being sent is not written"));
        };
        if self.pos > *len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a snapshot chunk at offset {} after the {len} octets received",
                    self.pos
                ),
            ));
        }
        if self.pos < *len {
            self.storage.truncate(&self.path, self.pos)?;
            *file = self.storage.open_append(&self.path)?;
            *len = self.pos;
        }
        file.write_all(buf)?;
        *len += buf.len() as u64;
        self.pos = *len;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        match &mut self.mode {
            Mode::Write { file, .. } => file.sync(),
            Mode::Read { .. } => Ok(()),
        }
    }
}

impl AsyncRead for SnapshotFile {
    fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let n = this.read_at_pos(buf.initialize_unfilled())?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for SnapshotFile {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().write_at_pos(buf)?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().sync())
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().sync())
    }
}

impl AsyncSeek for SnapshotFile {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        let target = match position {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => this.len().checked_add_signed(d),
            SeekFrom::Current(d) => this.pos.checked_add_signed(d),
        };
        this.pos =
            target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a seek before the start"))?;
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Poll::Ready(Ok(self.pos))
    }
}

#[cfg(test)]
mod tests {
    use larch_store::storage::FaultStorage;
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::*;

    fn storage() -> Arc<dyn Storage> {
        let s = FaultStorage::new(1);
        s.create_dir_all(Path::new("/d")).unwrap();
        Arc::new(s)
    }

    #[tokio::test]
    async fn chunks_written_again_and_read_in_any_order_give_the_file() {
        let storage = storage();
        let path = Path::new("/d/f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = SnapshotFile::create(&storage, path).unwrap();
        w.write_all(&data[..4000]).await.unwrap();
        w.write_all(&data[4000..7000]).await.unwrap();
        // The second chunk again, as after a lost answer.
        w.seek(SeekFrom::Start(4000)).await.unwrap();
        w.write_all(&data[4000..7000]).await.unwrap();
        w.write_all(&data[7000..]).await.unwrap();
        assert!(w.seek(SeekFrom::Start(20_000)).await.is_ok());
        assert!(
            w.write_all(b"x").await.is_err(),
            "a write past the end is refused"
        );
        w.flush().await.unwrap();
        assert_eq!(storage.read(path).unwrap(), data);

        let reader = storage.open_read_seek(path).unwrap();
        let mut r = SnapshotFile::reading(&storage, path, reader).unwrap();
        assert_eq!(r.seek(SeekFrom::End(0)).await.unwrap(), 10_000);
        for start in [6000u64, 0, 9000, 3000] {
            r.seek(SeekFrom::Start(start)).await.unwrap();
            let mut buf = vec![0; 1000];
            r.read_exact(&mut buf).await.unwrap();
            assert_eq!(buf, data[start as usize..start as usize + 1000]);
        }
        r.seek(SeekFrom::Start(9500)).await.unwrap();
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, data[9500..]);
    }

    #[tokio::test]
    async fn creating_removes_an_interrupted_transfer() {
        let storage = storage();
        let path = Path::new("/d/f");
        let mut w = SnapshotFile::create(&storage, path).unwrap();
        w.write_all(b"old and longer").await.unwrap();
        let mut w = SnapshotFile::create(&storage, path).unwrap();
        w.write_all(b"new").await.unwrap();
        assert_eq!(storage.read(path).unwrap(), b"new");
    }
}
