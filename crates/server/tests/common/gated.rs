//! A filesystem whose appends go through a [`Gate`]: held (a stalled disk), failing while
//! `full` is set or once after `fail_next` (a full disk), counted; fsyncs failing while
//! `fail_syncs` is set (a disk that loses writes). For the tests of the logs' and the
//! store's behaviour when their disk misbehaves.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use larch_store::storage::{AppendFile, FsStorage, Storage};

/// Appends that can be held until released, or made to fail.
#[derive(Default)]
pub struct Gate {
    held: Mutex<bool>,
    opened: Condvar,
    /// A write is waiting at the gate.
    pub waiting: AtomicBool,
    /// Every write fails while set.
    pub full: AtomicBool,
    /// The next write fails.
    pub fail_next: AtomicBool,
    /// Writes that reached the gate.
    pub attempts: AtomicU64,
    /// Writes that passed it.
    pub writes: AtomicU64,
    /// Every fsync fails (EIO) while set.
    pub fail_syncs: AtomicBool,
    /// Fsyncs asked for, failed ones included.
    pub syncs: AtomicU64,
}

impl Gate {
    /// Holds every write from now on.
    pub fn hold(&self) {
        *self.held.lock().unwrap() = true;
    }

    /// Lets the held writes and the later ones through.
    pub fn release(&self) {
        *self.held.lock().unwrap() = false;
        self.opened.notify_all();
    }

    fn pass(&self) -> io::Result<()> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let mut held = self.held.lock().unwrap();
        while *held {
            self.waiting.store(true, Ordering::SeqCst);
            held = self.opened.wait(held).unwrap();
        }
        self.waiting.store(false, Ordering::SeqCst);
        if self.full.load(Ordering::SeqCst) || self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (test)",
            ));
        }
        self.writes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The filesystem, its appends going through a [`Gate`].
pub struct GatedStorage(pub Arc<Gate>);

struct GatedFile(Box<dyn AppendFile>, Arc<Gate>);

impl AppendFile for GatedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.1.pass()?;
        self.0.write(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.1.syncs.fetch_add(1, Ordering::SeqCst);
        if self.1.fail_syncs.load(Ordering::SeqCst) {
            // EIO, as Linux reports a writeback error on fsync.
            return Err(io::Error::from_raw_os_error(5));
        }
        self.0.sync()
    }
}

impl Storage for GatedStorage {
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        Ok(Box::new(GatedFile(
            FsStorage.open_append(path)?,
            Arc::clone(&self.0),
        )))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        FsStorage.read(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        FsStorage.list(dir)
    }
    fn dir_state(&self, dir: &Path) -> io::Result<larch_store::storage::DirState> {
        FsStorage.dir_state(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        FsStorage.create_dir_all(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        FsStorage.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        FsStorage.remove(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        FsStorage.truncate(path, len)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        FsStorage.sync_dir(dir)
    }
}
