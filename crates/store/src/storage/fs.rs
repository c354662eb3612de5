//! [`FsStorage`]: the real filesystem through `std::fs`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use super::{AppendFile, DirState, ReadSeek, Storage};

/// The real filesystem. `sync` is `File::sync_all` (fsync); `sync_dir` opens the directory
/// and fsyncs it on Unix, and does nothing elsewhere (Windows cannot open a directory as a
/// file; its directory metadata is journaled by NTFS).
#[derive(Debug, Default, Clone, Copy)]
pub struct FsStorage;

struct FsFile(File);

impl AppendFile for FsFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_all()
    }
}

impl Storage for FsStorage {
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Box::new(FsFile(file)))
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
