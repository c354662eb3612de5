//! Offline bulk import: LDIF in, a snapshot out, in parallel; and export in DN order.
//!
//! Import, in steps:
//! 1. the reading thread cuts the input into batches of whole records (at empty lines,
//!    about [`IMPORT_BATCH_BYTES`] each) and numbers them;
//! 2. worker threads (one per core) parse each batch with the LDIF reader, resolve every
//!    attribute description, let the caller's hook add what it adds (operational
//!    attributes), check the entry against the schema and build its stored form;
//! 3. the reading thread takes the parsed batches back in order, gives IDs in file order,
//!    finds each parent by DN (parents must come before their children, as `slapadd`
//!    requires) and refuses duplicates;
//! 4. the records go straight into a snapshot at LSN 0: no log, no indexes (those are built
//!    when the snapshot loads).
//!
//! Every refusal names the line of the record at fault. The target directory must hold no
//! snapshot and no log record: import creates a directory, it does not merge into one.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::{check::check_entry, resolve_description, Entry, Options, StoredEntry};
use larch_model::schema::{AttributeTypeId, Schema};

use crate::ldif::{LdifChange, LdifReader, LdifRecord, LdifWriter};
use crate::load::encode_dictionary;
use crate::record::{EntryId, EntryRecord};
use crate::snapshot::{self, SnapshotInfo, SnapshotMeta};
use crate::storage::Storage;
use crate::version::{rdn_parts, Version};

/// Target size of one batch of records handed to a parsing thread.
pub const IMPORT_BATCH_BYTES: usize = 1 << 20;

/// Batches parsed ahead of the thread that assigns IDs (bounds memory while it catches
/// up).
const BATCHES_IN_FLIGHT: usize = 8;

/// Where an import stands, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportProgress {
    /// Entries accepted so far.
    pub entries: u64,
    /// Input octets read so far.
    pub bytes: u64,
    /// Time since the import began.
    pub elapsed: Duration,
}

/// What an import did.
#[derive(Debug, Clone)]
pub struct ImportReport {
    /// Entries imported.
    pub entries: u64,
    /// The snapshot written.
    pub snapshot: SnapshotInfo,
    /// Time to read, parse and check.
    pub parse_time: Duration,
    /// Time to write the snapshot.
    pub write_time: Duration,
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A record is refused; `line` is where it starts.
    #[error("line {line}: {problem}")]
    Record {
        /// The record's first line.
        line: u64,
        /// What is wrong.
        problem: String,
    },
    /// The LDIF itself is malformed.
    #[error(transparent)]
    Ldif(#[from] crate::ldif::LdifError),
    /// The target is not empty.
    #[error("{0} already holds a directory (snapshots or log records); import into an empty data directory")]
    NotEmpty(PathBuf),
    /// Reading the input or writing the snapshot failed.
    #[error("{0}")]
    Io(String),
    /// Writing the snapshot failed.
    #[error(transparent)]
    Snapshot(#[from] snapshot::SnapshotError),
}

/// A hook run on every entry before it is checked (the server adds operational attributes
/// here).
pub type EntryHook<'a> = &'a (dyn Fn(&mut Entry) -> Result<(), String> + Sync);

/// How to import.
pub struct ImportOptions<'a> {
    /// The data directory to create.
    pub dir: PathBuf,
    /// Where files live.
    pub storage: Arc<dyn Storage>,
    /// The schema entries are checked against.
    pub schema: Arc<Schema>,
    /// Parsing threads (0: one per core).
    pub threads: usize,
    /// Normalized DNs allowed as naming contexts (entries without a parent in the input);
    /// empty: any entry whose parent is absent becomes a naming context.
    pub naming_contexts: Vec<NormDn>,
    /// Run on every entry before the schema check.
    pub hook: Option<EntryHook<'a>>,
    /// Whether `attr:< file://` values are read.
    pub allow_file_urls: bool,
}

struct Parsed {
    line: u64,
    dn: Dn,
    norm: NormDn,
    stored: StoredEntry,
}

type BatchResult = Result<Vec<Parsed>, ImportError>;

/// Imports LDIF from `input` into a new snapshot in `options.dir`; `progress` is called
/// after each batch.
pub fn import_ldif(
    options: &ImportOptions<'_>,
    input: impl BufRead + Send,
    mut progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    let storage = &*options.storage;
    let snapshot_dir = options.dir.join("snapshots");
    let wal_dir = options.dir.join("wal");
    for d in [&options.dir, &snapshot_dir, &wal_dir] {
        storage
            .create_dir_all(d)
            .map_err(|e| ImportError::Io(format!("cannot create {}: {e}", d.display())))?;
    }
    let has_files = |d: &PathBuf| storage.list(d).map(|names| !names.is_empty()).unwrap_or(true);
    if has_files(&snapshot_dir) || has_files(&wal_dir) {
        return Err(ImportError::NotEmpty(options.dir.clone()));
    }
    let threads = if options.threads > 0 {
        options.threads
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    let started = Instant::now();
    let records = std::thread::scope(|s| -> Result<Vec<(EntryId, EntryRecord)>, ImportError> {
        let (batch_tx, batch_rx) = sync_channel::<(u64, u64, Vec<u8>)>(BATCHES_IN_FLIGHT);
        let (done_tx, done_rx) = sync_channel::<(u64, u64, BatchResult)>(BATCHES_IN_FLIGHT);
        let batch_rx = Arc::new(Mutex::new(batch_rx));
        for _ in 0..threads {
            let rx = Arc::clone(&batch_rx);
            let tx = done_tx.clone();
            s.spawn(move || loop {
                let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok((seq, first_line, text)) = next else { return };
                let len = text.len() as u64;
                if tx
                    .send((seq, len, parse_batch(options, first_line, &text)))
                    .is_err()
                {
                    return;
                }
            });
        }
        drop(done_tx);
        let reader = s.spawn(move || split_batches(input, batch_tx));
        let result = assemble(options, done_rx, started, &mut progress);
        // On an early error, dropping the receiver stops the workers and the splitter.
        let split = reader
            .join()
            .unwrap_or_else(|_| Err("the reading thread failed".into()));
        let records = result?;
        split.map_err(ImportError::Io)?;
        Ok(records)
    })?;
    let parse_time = started.elapsed();
    let started = Instant::now();
    let next_id = records.last().map_or(1, |(id, _)| id + 1);
    let meta = SnapshotMeta {
        lsn: 0,
        next_id,
        entry_count: records.len() as u64,
        created_unix_secs: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        extra: encode_dictionary(&options.schema),
    };
    let write = snapshot::WriteOptions {
        threads,
        ..snapshot::WriteOptions::default()
    };
    let info = snapshot::write_snapshot_with(
        storage,
        &snapshot_dir,
        &meta,
        records.iter().map(|(id, r)| (*id, r.as_bytes())),
        &write,
    )?;
    Ok(ImportReport {
        entries: records.len() as u64,
        snapshot: info,
        parse_time,
        write_time: started.elapsed(),
    })
}

/// Cuts the input into batches of whole records, at empty lines.
fn split_batches(
    mut input: impl BufRead,
    tx: std::sync::mpsc::SyncSender<(u64, u64, Vec<u8>)>,
) -> Result<(), String> {
    let mut seq = 0;
    let mut line_no = 0u64;
    let mut batch_first_line = 1u64;
    let mut batch: Vec<u8> = Vec::with_capacity(IMPORT_BATCH_BYTES + 4096);
    loop {
        let start = batch.len();
        let n = input
            .read_until(b'\n', &mut batch)
            .map_err(|e| format!("cannot read the input: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let line = &batch[start..];
        let empty = line == b"\n" || line == b"\r\n";
        if empty && batch.len() >= IMPORT_BATCH_BYTES {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(IMPORT_BATCH_BYTES + 4096));
            if tx.send((seq, batch_first_line, full)).is_err() {
                return Ok(());
            }
            seq += 1;
            batch_first_line = line_no + 1;
        }
    }
    if !batch.is_empty() {
        let _ = tx.send((seq, batch_first_line, batch));
    }
    Ok(())
}

/// Parses and checks one batch.
fn parse_batch(options: &ImportOptions<'_>, first_line: u64, text: &[u8]) -> BatchResult {
    let schema = &*options.schema;
    let mut reader = LdifReader::new(text).allow_file_urls(options.allow_file_urls);
    let mut out = Vec::new();
    // A file names a few dozen attribute descriptions a million times: resolve each once.
    let mut descriptions: HashMap<String, (AttributeTypeId, Options)> = HashMap::new();
    let shift = |mut e: crate::ldif::LdifError| {
        e.line += first_line - 1;
        if e.record_line > 0 {
            e.record_line += first_line - 1;
        }
        ImportError::Ldif(e)
    };
    loop {
        let Some(record) = reader.read_record().map_err(shift)? else {
            return Ok(out);
        };
        let line = first_line - 1 + reader.record_line();
        let refuse = |problem: String| ImportError::Record { line, problem };
        let (dn, attributes) = match record {
            LdifRecord::Content { dn, attributes } => (dn, attributes),
            LdifRecord::Change {
                dn,
                change: LdifChange::Add { attributes },
                ..
            } => (dn, attributes),
            LdifRecord::Change { .. } => {
                return Err(refuse(
                    "import takes entries (content records or changetype: add), not changes".into(),
                ))
            }
        };
        let (dn, norm) = NormDn::parse(&dn, schema).map_err(|e| refuse(format!("bad DN: {e}")))?;
        let mut entry = Entry::new(dn, norm);
        for (description, value) in attributes {
            let (ty, opts) = match descriptions.get(&description) {
                Some(known) => known,
                None => {
                    let resolved = resolve_description(description.as_bytes(), schema)
                        .map_err(|e| refuse(e.to_string()))?;
                    descriptions.entry(description).or_insert(resolved)
                }
            };
            entry.push_value(*ty, opts, value);
        }
        if let Some(hook) = options.hook {
            hook(&mut entry).map_err(refuse)?;
        }
        check_entry(&entry, schema).map_err(|e| refuse(format!("`{}`: {e}", entry.dn)))?;
        let stored = entry.to_stored();
        out.push(Parsed {
            line,
            dn: entry.dn,
            norm: entry.norm_dn,
            stored,
        });
    }
}

/// Takes parsed batches back in order and gives IDs.
fn assemble(
    options: &ImportOptions<'_>,
    done: Receiver<(u64, u64, BatchResult)>,
    started: Instant,
    progress: &mut impl FnMut(ImportProgress),
) -> Result<Vec<(EntryId, EntryRecord)>, ImportError> {
    let mut pending: HashMap<u64, (u64, BatchResult)> = HashMap::new();
    let mut next_seq = 0u64;
    let mut by_dn: HashMap<Box<str>, EntryId> = HashMap::new();
    let mut records: Vec<(EntryId, EntryRecord)> = Vec::new();
    let mut bytes = 0u64;
    for (seq, len, result) in done {
        pending.insert(seq, (len, result));
        while let Some((len, result)) = pending.remove(&next_seq) {
            next_seq += 1;
            bytes += len;
            for p in result? {
                let parent = match p.norm.parent_str() {
                    Some(parent) if !parent.is_empty() => by_dn.get(parent).copied(),
                    _ => None,
                };
                let parent = match parent {
                    Some(id) => id,
                    None if options.naming_contexts.is_empty()
                        || options.naming_contexts.contains(&p.norm) =>
                    {
                        0
                    }
                    None => {
                        return Err(ImportError::Record {
                            line: p.line,
                            problem: format!(
                                "the parent of `{}` is not in the input before it (parents must come first)",
                                p.dn
                            ),
                        })
                    }
                };
                let id = records.len() as EntryId + 1;
                if by_dn.insert(p.norm.as_str().into(), id).is_some() {
                    return Err(ImportError::Record {
                        line: p.line,
                        problem: format!("`{}` appears twice", p.dn),
                    });
                }
                let (rdn, norm_rdn) = rdn_parts(&p.dn, &p.norm, parent == 0);
                records.push((id, EntryRecord::new(parent, &rdn, &norm_rdn, p.stored.as_ref())));
            }
            progress(ImportProgress {
                entries: records.len() as u64,
                bytes,
                elapsed: started.elapsed(),
            });
        }
    }
    Ok(records)
}

/// Writes the entries of `version` below and including `base` (every naming context when
/// `None`) as LDIF content records, parents before children. Returns how many.
pub fn export_ldif<W: Write>(
    version: &Version,
    base: Option<crate::record::EntryId>,
    out: &mut LdifWriter<W>,
) -> std::io::Result<u64> {
    export_ldif_without(version, base, &[], out)
}

/// [`export_ldif`] leaving out the attribute types `leave_out` (values the server derives
/// and another server would not know, such as `transitiveMemberOf`).
pub fn export_ldif_without<W: Write>(
    version: &Version,
    base: Option<crate::record::EntryId>,
    leave_out: &[larch_model::schema::AttributeTypeId],
    out: &mut LdifWriter<W>,
) -> std::io::Result<u64> {
    let roots: Vec<EntryId> = match base {
        Some(id) => vec![id],
        None => version.naming_contexts().iter().collect(),
    };
    let schema = version.schema();
    let mut n = 0;
    for root in roots {
        for id in version.subtree(root) {
            let Some(e) = version.entry(id) else { continue };
            let mut attributes = Vec::new();
            for a in e.attrs().attributes().filter(|a| !leave_out.contains(&a.ty)) {
                let name = schema.attribute_type_by_id(a.ty).map_or("", |t| t.name());
                let description = format!("{name}{}", a.options);
                for v in a.values.iter() {
                    attributes.push((description.clone(), v.to_vec()));
                }
            }
            out.write_record(&LdifRecord::Content {
                dn: version.dn(id).into_bytes(),
                attributes,
            })?;
            n += 1;
        }
    }
    Ok(n)
}
