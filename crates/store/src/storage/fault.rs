//! [`FaultStorage`]: an in-memory filesystem that misbehaves on purpose, deterministically
//! from a seed, so crash tests are reproducible.
//!
//! Model: every file (inode) holds its current octets and the octets as of its last
//! successful `sync`; directory entries are visible at once and durable after `sync_dir`.
//! [`FaultStorage::crash`] is a power cut: names fall back to their last synced directory
//! state, each surviving file falls back to its synced octets plus (when torn writes are on)
//! a seed-chosen prefix of what was written after that; handles opened before the crash
//! fail from then on. A truncate that was not followed by a sync is not modelled: `truncate`
//! is durable at once, as the trait says. Space reserved ahead of a file's writes
//! ([`Storage::open_append_reserving`]) is durable at once too, as a length: reads show it
//! as zeros after the file's octets, and a crash leaves whatever survived of the writes
//! followed by those zeros, as `fallocate` space does on Linux.
//!
//! A full disk: [`FaultStorage::set_capacity`] bounds the octets all named files may hold
//! together. A write that does not fit is short (it takes what fits, as Linux does), and
//! the next one fails with `StorageFull` ("No space left on device"); removing or
//! truncating a file frees its octets, so a snapshot that fails for want of room and is
//! removed gives the room back to the log, as on a real disk.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::{AppendFile, DirState, Storage};

/// What a [`FaultStorage`] injects.
#[derive(Debug, Clone, Default)]
pub struct FaultConfig {
    /// Seed of every random choice (short write lengths, failing syncs, torn tails).
    pub seed: u64,
    /// On [`FaultStorage::crash`], keep a random prefix of each file's unsynced octets
    /// (a torn write) instead of none of them.
    pub torn_writes: bool,
    /// `write` accepts a random number of octets (at least one) instead of all of them.
    pub short_writes: bool,
    /// Chance, in thousandths, that a file `sync` fails (0 = never).
    pub sync_failure_per_mille: u32,
    /// Time each file `sync` takes, to let group commit gather records as on a real disk.
    pub sync_delay: Duration,
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced: Vec<u8>,
    /// The file's length counting its reserved space: zeros after `data` up to here.
    reserved_to: usize,
}

impl Inode {
    /// The octets a reader sees: the data, then the reserved zeros.
    fn visible_len(&self) -> usize {
        self.data.len().max(self.reserved_to)
    }

    /// Makes the reserved zeros up to `len` part of the file's octets (durable, as the
    /// reservation was), as a length change or a new handle's writes at the file's length
    /// see them.
    fn materialize_reserve(&mut self, len: usize) {
        let len = len.min(self.visible_len());
        if self.data.len() < len {
            if self.synced.len() == self.data.len() {
                self.synced.resize(len, 0);
            }
            self.data.resize(len, 0);
        }
    }
}

#[derive(Debug, Default)]
struct State {
    rng: u64,
    epoch: u64,
    next_inode: u64,
    inodes: BTreeMap<u64, Inode>,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    dirs: BTreeSet<PathBuf>,
    fail_syncs: bool,
    /// Octets all named files may hold together (`None`: unbounded).
    capacity: Option<u64>,
    file_syncs: u64,
    dir_syncs: u64,
}

impl State {
    /// splitmix64: small, good enough, and the same on every platform.
    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A random number in `0..=max`.
    fn random_up_to(&mut self, max: usize) -> usize {
        let r = self.next_random();
        // `max + 1` cannot overflow for in-memory lengths; the modulo keeps it in range.
        (r % (max as u64).saturating_add(1)) as usize
    }

    /// Octets held by named files, and by `open` (a file written through a handle).
    fn used(&self, open: u64) -> u64 {
        let named: BTreeSet<u64> = self.names.values().copied().chain([open]).collect();
        named
            .iter()
            .filter_map(|id| self.inodes.get(id))
            .map(|i| i.visible_len() as u64)
            .sum()
    }

    fn crash(&mut self, keep: impl Fn(&mut State, usize) -> usize) {
        self.epoch += 1;
        self.fail_syncs = false;
        self.names = self.durable_names.clone();
        let live: BTreeSet<u64> = self.names.values().copied().collect();
        self.inodes.retain(|id, _| live.contains(id));
        let ids: Vec<u64> = self.inodes.keys().copied().collect();
        for id in ids {
            let Some(inode) = self.inodes.remove(&id) else {
                continue;
            };
            let mut survived = inode.synced;
            if let Some(tail) = inode.data.strip_prefix(survived.as_slice()) {
                let k = keep(self, tail.len()).min(tail.len());
                survived.extend_from_slice(tail.get(..k).unwrap_or_default());
            }
            self.inodes.insert(
                id,
                Inode {
                    data: survived.clone(),
                    synced: survived,
                    reserved_to: inode.reserved_to,
                },
            );
        }
    }
}

/// An in-memory [`Storage`] with deterministic fault injection. Cloning shares the same
/// files (so a test keeps a handle while the WAL owns another).
#[derive(Debug, Clone, Default)]
pub struct FaultStorage {
    state: Arc<Mutex<State>>,
    config: Arc<FaultConfig>,
    held_syncs: Arc<SyncGate>,
}

/// Holds every file `sync` while closed ([`FaultStorage::hold_syncs`]): a disk that has
/// not answered yet.
#[derive(Debug, Default)]
struct SyncGate {
    held: Mutex<bool>,
    opened: Condvar,
}

impl SyncGate {
    fn set(&self, held: bool) {
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = held;
        if !held {
            self.opened.notify_all();
        }
    }

    fn pass(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while *held {
            held = self.opened.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl FaultStorage {
    /// A well-behaved in-memory filesystem (no faults until configured).
    pub fn new(seed: u64) -> Self {
        Self::with_config(FaultConfig {
            seed,
            ..FaultConfig::default()
        })
    }

    /// An in-memory filesystem injecting the faults `config` asks for.
    pub fn with_config(config: FaultConfig) -> Self {
        let state = State {
            rng: config.seed,
            ..State::default()
        };
        FaultStorage {
            state: Arc::new(Mutex::new(state)),
            config: Arc::new(config),
            held_syncs: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock can only come from a test assertion; the state
        // itself is never left half-updated, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A power cut: everything not made durable is lost, except that with
    /// [`FaultConfig::torn_writes`] a seed-chosen prefix of each file's unsynced octets
    /// survives. Open handles fail from now on; a manual [`FaultStorage::set_fail_syncs`]
    /// is reset.
    pub fn crash(&self) {
        let torn = self.config.torn_writes;
        self.lock()
            .crash(|s, len| if torn { s.random_up_to(len) } else { 0 });
    }

    /// A power cut that keeps exactly the first `keep` unsynced octets of every file (or
    /// all of them when fewer): tears a write at a chosen offset.
    pub fn crash_keeping(&self, keep: usize) {
        self.lock().crash(|_, _| keep);
    }

    /// Makes every file `sync` fail (`true`) or behave per the configuration (`false`).
    pub fn set_fail_syncs(&self, fail: bool) {
        self.lock().fail_syncs = fail;
    }

    /// Makes every file `sync` wait (`true`) until released (`false`): the thread that
    /// syncs blocks as on a disk slow to answer. Writes and reads go on.
    pub fn hold_syncs(&self, held: bool) {
        self.held_syncs.set(held);
    }

    /// Bounds the octets all files may hold together (`None`: no bound), a full disk when
    /// the files already hold as much (see the module documentation).
    pub fn set_capacity(&self, capacity: Option<u64>) {
        self.lock().capacity = capacity;
    }

    /// Octets all named files hold now.
    pub fn used_octets(&self) -> u64 {
        self.lock().used(u64::MAX)
    }

    /// The octets written to `path`, without the zeros of space reserved after them
    /// (`None` when there is no such file): where the next write goes.
    pub fn written_len(&self, path: &Path) -> Option<usize> {
        let s = self.lock();
        s.names
            .get(path)
            .and_then(|id| s.inodes.get(id))
            .map(|i| i.data.len())
    }

    /// Octets written to named files and not yet synced: what a crash may tear.
    pub fn unsynced_octets(&self) -> u64 {
        let s = self.lock();
        s.names
            .values()
            .filter_map(|id| s.inodes.get(id))
            .map(|i| i.data.len().saturating_sub(i.synced.len()) as u64)
            .sum()
    }

    /// File `sync` calls so far (failed ones included).
    pub fn file_sync_count(&self) -> u64 {
        self.lock().file_syncs
    }

    /// Directory `sync_dir` calls so far.
    pub fn dir_sync_count(&self) -> u64 {
        self.lock().dir_syncs
    }

    /// Creates or replaces `path` with `data`, durably (name and content), creating its
    /// directory: how tests and fuzz targets plant a file.
    pub fn put_durable(&self, path: &Path, data: &[u8]) {
        let mut s = self.lock();
        s.dirs.insert(parent(path));
        let id = s.next_inode;
        s.next_inode += 1;
        s.inodes.insert(
            id,
            Inode {
                data: data.to_vec(),
                synced: data.to_vec(),
                reserved_to: 0,
            },
        );
        s.names.insert(path.to_path_buf(), id);
        s.durable_names.insert(path.to_path_buf(), id);
    }

    /// XORs `mask` into the octet at `offset` of `path`, durably (simulated media
    /// corruption). Returns `false` when there is no such file or octet.
    pub fn corrupt(&self, path: &Path, offset: usize, mask: u8) -> bool {
        let mut s = self.lock();
        let Some(&id) = s.names.get(path) else {
            return false;
        };
        let Some(inode) = s.inodes.get_mut(&id) else {
            return false;
        };
        let mut hit = false;
        for buf in [&mut inode.data, &mut inode.synced] {
            if let Some(b) = buf.get_mut(offset) {
                *b ^= mask;
                hit = true;
            }
        }
        hit
    }
}

struct FaultFile {
    storage: FaultStorage,
    inode: u64,
    epoch: u64,
    /// The step space is reserved in past the writes, 0 for none.
    chunk: usize,
}

impl FaultFile {
    /// The length to reserve up to once the file's data ends at `end`: whole chunks, when
    /// the capacity has room for them (as `fallocate` fails on a full disk).
    fn reservation(&self, s: &State, end: usize) -> usize {
        if self.chunk == 0 {
            return 0;
        }
        let to = end.div_ceil(self.chunk).saturating_mul(self.chunk);
        let visible = s.inodes.get(&self.inode).map_or(0, Inode::visible_len);
        let more = to.saturating_sub(visible.max(end)) as u64;
        match s.capacity {
            Some(capacity) if capacity.saturating_sub(s.used(self.inode)) < more => 0,
            _ => to,
        }
    }

    fn state(&self) -> io::Result<MutexGuard<'_, State>> {
        let s = self.storage.lock();
        if s.epoch != self.epoch {
            return Err(io::Error::other("file handle opened before a crash"));
        }
        Ok(s)
    }
}

impl AppendFile for FaultFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let short = self.storage.config.short_writes;
        let mut s = self.state()?;
        let mut n = if short && buf.len() > 1 {
            1 + s.random_up_to(buf.len() - 1)
        } else {
            buf.len()
        };
        if let Some(capacity) = s.capacity {
            // Octets written into the file's reserved space take no more room.
            let slack = s
                .inodes
                .get(&self.inode)
                .map_or(0, |i| i.visible_len() - i.data.len());
            let room = capacity.saturating_sub(s.used(self.inode)) + slack as u64;
            if room == 0 && n > 0 {
                // The kind and the words of Linux's ENOSPC.
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "No space left on device",
                ));
            }
            n = n.min(usize::try_from(room).unwrap_or(usize::MAX));
        }
        let end = s.inodes.get(&self.inode).map_or(0, |i| i.data.len()) + n;
        let reserve = self.reservation(&s, end);
        let inode = s.inodes.entry(self.inode).or_default();
        inode.data.extend_from_slice(buf.get(..n).unwrap_or_default());
        inode.reserved_to = inode.reserved_to.max(reserve);
        Ok(n)
    }

    fn trim(&mut self) -> io::Result<()> {
        let mut s = self.state()?;
        if let Some(inode) = s.inodes.get_mut(&self.inode) {
            inode.reserved_to = 0;
            inode.synced = inode.data.clone();
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.storage.held_syncs.pass();
        let delay = self.storage.config.sync_delay;
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let per_mille = u64::from(self.storage.config.sync_failure_per_mille);
        let mut s = self.state()?;
        s.file_syncs += 1;
        let random_failure = per_mille > 0 && s.next_random() % 1000 < per_mille;
        if s.fail_syncs || random_failure {
            return Err(io::Error::other("injected fsync failure"));
        }
        if let Some(inode) = s.inodes.get_mut(&self.inode) {
            inode.synced = inode.data.clone();
        }
        Ok(())
    }
}

impl FaultStorage {
    fn open(&self, path: &Path, chunk: usize) -> io::Result<Box<dyn AppendFile>> {
        let mut s = self.lock();
        if !s.dirs.contains(&parent(path)) {
            return Err(not_found(path));
        }
        let id = match s.names.get(path) {
            Some(&id) => {
                // Writes go on at the file's length, reserved zeros included.
                if let Some(inode) = s.inodes.get_mut(&id) {
                    inode.materialize_reserve(inode.visible_len());
                }
                id
            }
            None => {
                let id = s.next_inode;
                s.next_inode += 1;
                s.inodes.insert(id, Inode::default());
                s.names.insert(path.to_path_buf(), id);
                id
            }
        };
        let epoch = s.epoch;
        Ok(Box::new(FaultFile {
            storage: self.clone(),
            inode: id,
            epoch,
            chunk,
        }))
    }
}

impl Storage for FaultStorage {
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        self.open(path, 0)
    }

    fn open_append_reserving(&self, path: &Path, chunk: u64) -> io::Result<Box<dyn AppendFile>> {
        self.open(path, usize::try_from(chunk).unwrap_or(usize::MAX))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let s = self.lock();
        let id = s.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(s.inodes.get(id).map_or_else(Vec::new, |i| {
            let mut octets = i.data.clone();
            octets.resize(i.visible_len(), 0);
            octets
        }))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let s = self.lock();
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let mut names: Vec<String> = s
            .names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    fn dir_state(&self, dir: &Path) -> io::Result<DirState> {
        let s = self.lock();
        if s.names.contains_key(dir) {
            return Ok(DirState::NotADirectory);
        }
        if !s.dirs.contains(dir) {
            return Ok(DirState::Missing);
        }
        let below = |p: &PathBuf| p.parent() == Some(dir);
        Ok(if s.names.keys().any(below) || s.dirs.iter().any(below) {
            DirState::NotEmpty
        } else {
            DirState::Empty
        })
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // Directories are durable at once in this model: the WAL creates its directory
        // before anything else, and no test needs to lose it.
        let mut s = self.lock();
        let mut d = Some(dir);
        while let Some(p) = d {
            s.dirs.insert(p.to_path_buf());
            d = p.parent();
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.lock();
        let id = s.names.remove(from).ok_or_else(|| not_found(from))?;
        s.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.names.remove(path).map(|_| ()).ok_or_else(|| not_found(path))
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut s = self.lock();
        let id = *s.names.get(path).ok_or_else(|| not_found(path))?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if let Some(inode) = s.inodes.get_mut(&id) {
            inode.materialize_reserve(len);
            inode.data.truncate(len);
            inode.synced.truncate(len);
            inode.reserved_to = inode.reserved_to.min(len);
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.dir_syncs += 1;
        s.durable_names.retain(|p, _| p.parent() != Some(dir));
        let entries: Vec<(PathBuf, u64)> = s
            .names
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, &id)| (p.clone(), id))
            .collect();
        s.durable_names.extend(entries);
        Ok(())
    }
}
