//! [`FsStorage`]: the real filesystem through `std::fs`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use super::{AppendFile, DirState, ReadSeek, Storage};

/// The real filesystem. `sync` is `File::sync_data` (fdatasync: the data and the length,
/// which is all a reader needs; not the times); `sync_dir` opens the directory and fsyncs
/// it on Unix, and does nothing elsewhere (Windows cannot open a directory as a file; its
/// directory metadata is journaled by NTFS).
#[derive(Debug, Default, Clone, Copy)]
pub struct FsStorage;

struct FsFile(File);

impl AppendFile for FsFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl Storage for FsStorage {
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Box::new(FsFile(file)))
    }

    #[cfg(target_os = "linux")]
    fn open_append_reserving(&self, path: &Path, chunk: u64) -> io::Result<Box<dyn AppendFile>> {
        Ok(Box::new(reserving::ReservingFile::open(path, chunk)?))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        Ok(Box::new(File::open(path)?))
    }

    fn open_read_seek(&self, path: &Path) -> io::Result<Box<dyn ReadSeek>> {
        Ok(Box::new(File::open(path)?))
    }

    fn dir_state(&self, dir: &Path) -> io::Result<DirState> {
        match fs::metadata(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(DirState::Missing),
            Err(e) => Err(e),
            Ok(m) if !m.is_dir() => Ok(DirState::NotADirectory),
            Ok(_) => Ok(match fs::read_dir(dir)?.next() {
                None => DirState::Empty,
                Some(entry) => {
                    entry?;
                    DirState::NotEmpty
                }
            }),
        }
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(path)?;
        if file.metadata()?.len() > len {
            file.set_len(len)?;
        }
        file.sync_all()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        #[cfg(unix)]
        {
            File::open(dir)?.sync_all()
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            Ok(())
        }
    }
}

/// A file written at positions of its own, with space reserved ahead by `fallocate`.
#[cfg(target_os = "linux")]
mod reserving {
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::os::unix::fs::FileExt;
    use std::path::Path;

    use nix::fcntl::{fallocate, FallocateFlags};

    use super::AppendFile;

    pub(super) struct ReservingFile {
        /// Opened without `O_APPEND`: Linux makes every `pwrite` of such a file an append
        /// at its length, which here includes the reserved zeros.
        file: File,
        /// Where the next write goes: the end of what was written.
        end: u64,
        /// The file's length: `end` plus the reserved zeros.
        reserved_to: u64,
        /// The step space is reserved in; 0 once a reservation failed (a full disk, a
        /// filesystem without `fallocate`), after which the file is appended to plainly.
        chunk: u64,
    }

    impl ReservingFile {
        pub(super) fn open(path: &Path, chunk: u64) -> io::Result<ReservingFile> {
            let file = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(path)?;
            let end = file.metadata()?.len();
            Ok(ReservingFile {
                file,
                end,
                reserved_to: end,
                chunk,
            })
        }

        /// Makes the file at least `want` long, in whole chunks past the end.
        fn reserve(&mut self, want: u64) {
            if self.chunk == 0 || want <= self.reserved_to {
                return;
            }
            let to = want.div_ceil(self.chunk).saturating_mul(self.chunk);
            let (Ok(offset), Ok(len)) = (
                i64::try_from(self.reserved_to),
                i64::try_from(to - self.reserved_to),
            ) else {
                self.chunk = 0;
                return;
            };
            match fallocate(&self.file, FallocateFlags::empty(), offset, len) {
                Ok(()) => self.reserved_to = to,
                Err(_) => {
                    // The write itself reports a full disk; without a reservation the file
                    // is only a little slower to sync. What was allocated before the
                    // failure, if anything, reads as zeros like the rest.
                    self.chunk = 0;
                    if let Ok(m) = self.file.metadata() {
                        self.reserved_to = self.reserved_to.max(m.len());
                    }
                }
            }
        }
    }

    impl AppendFile for ReservingFile {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.reserve(self.end.saturating_add(buf.len() as u64));
            let n = self.file.write_at(buf, self.end)?;
            self.end = self.end.saturating_add(n as u64);
            self.reserved_to = self.reserved_to.max(self.end);
            Ok(n)
        }

        fn sync(&mut self) -> io::Result<()> {
            self.file.sync_data()
        }

        fn trim(&mut self) -> io::Result<()> {
            if self.reserved_to > self.end {
                self.file.set_len(self.end)?;
                self.reserved_to = self.end;
            }
            self.chunk = 0;
            self.file.sync_all()
        }
    }
}
