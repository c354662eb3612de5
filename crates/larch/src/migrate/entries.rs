//! The slapcat output, adjusted and imported through `larch import`'s path (the store's
//! parallel import with the server's import hook, which keeps every operational attribute
//! present, as slapadd does).
//!
//! The LDIF is streamed through an in-process pipe of chunks ([`chunk_pipe`]), one record at
//! a time, by a thread of its own:
//! 1. records below an excluded suffix (accesslog's log database) are left out;
//! 2. attributes of dropped overlays that Larch's schema does not define (`memberOf`,
//!    `pwd*`) are left out, and counted;
//! 3. the admin entry (the rootDN) gets the rootPW as its userPassword (and
//!    simpleSecurityObject when its classes lack one); when the data has no such entry, it
//!    is added after the last record, as an organizationalRole;
//! 4. userPassword values are classified by scheme, `contextCSN` values counted;
//! 5. everything else passes through as written, so hashes, entryUUID, entryCSN,
//!    timestamps and creators/modifiers are stored exactly as slapcat wrote them.
//!
//! An error in a record names the slapcat file and its line: the stream keeps, for each
//! stretch of lines, how far it is from the file's own numbering.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use larch_server::directory::SERVER_ID;
use larch_server::opattrs::csn::CsnGenerator;
use larch_server::opattrs::import_hook;
use larch_server::password::{parse_stored, Scheme};
use larch_store::import::{import_ldif, ImportError, ImportOptions};
use larch_store::storage::FsStorage;

use super::error::MigrateError;
use super::model::{dn_key, within, Origin};

/// Octets buffered on each side of the pipe, and the size of the chunks it passes.
const PIPE_BUFFER: usize = 1 << 20;

/// Chunks in flight between the LDIF thread and the import (bounds memory to a few MiB).
const PIPE_CHUNKS: usize = 4;

/// The writing end of [`chunk_pipe`]: each write is one chunk (a `BufWriter` in front
/// makes them large).
struct ChunkWriter(std::sync::mpsc::SyncSender<Vec<u8>>);

impl Write for ChunkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .send(buf.to_vec())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the import stopped reading"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The reading end of [`chunk_pipe`]: end of input once the writer is dropped.
struct ChunkReader {
    chunks: std::sync::mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl std::io::Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            match self.chunks.recv() {
                Ok(next) => {
                    self.current = next;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A bounded in-process pipe of chunks between two threads.
fn chunk_pipe() -> (ChunkReader, ChunkWriter) {
    let (tx, rx) = std::sync::mpsc::sync_channel(PIPE_CHUNKS);
    (
        ChunkReader {
            chunks: rx,
            current: Vec::new(),
            at: 0,
        },
        ChunkWriter(tx),
    )
}

/// What to change on the way.
#[derive(Debug, Clone, Default)]
pub struct Adjust {
    /// Attribute names (lowercase) to leave out.
    pub strip: Vec<String>,
    /// Suffixes (as `dn_key`s) whose entries are left out.
    pub excluded: Vec<String>,
    /// The admin's DN as written and the userPassword value to give it.
    pub admin: Option<(String, Vec<u8>)>,
}

/// What the data held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryStats {
    /// Entries imported.
    pub entries: u64,
    /// Values left out, by attribute as written.
    pub stripped: BTreeMap<String, u64>,
    /// Entries left out below excluded suffixes.
    pub excluded: u64,
    /// userPassword values by scheme label (`{SSHA}`; `cleartext`).
    pub schemes: BTreeMap<String, u64>,
    /// userPassword values in schemes Larch does not verify.
    pub unverifiable: u64,
    /// contextCSN values.
    pub context_csns: u64,
    /// Entries carrying entryUUID.
    pub with_uuid: u64,
    /// True when the admin entry was in the data; false when it was added.
    pub admin_in_data: bool,
    /// True when the admin entry's userPassword was not the rootPW and was replaced.
    pub admin_password_replaced: bool,
}

/// Where each stretch of the stream's lines comes from: from `stream_line` on, line `n`
/// of the stream is line `n + delta` of `file`.
#[derive(Debug, Clone, Default)]
struct LineMap {
    marks: Vec<(u64, usize, i64)>,
}

impl LineMap {
    fn mark(&mut self, stream_line: u64, file: usize, source_line: u64) {
        let delta = source_line as i64 - stream_line as i64;
        if self.marks.last().map(|m| (m.1, m.2)) != Some((file, delta)) {
            self.marks.push((stream_line, file, delta));
        }
    }

    fn source(&self, stream_line: u64, files: &[PathBuf]) -> Option<Origin> {
        let i = self
            .marks
            .partition_point(|m| m.0 <= stream_line)
            .checked_sub(1)?;
        let (_, file, delta) = self.marks[i];
        Some(Origin::new(
            files.get(file)?,
            (stream_line as i64 + delta).max(1) as u64,
        ))
    }
}

/// Imports `ldifs` into a new data directory `data`, adjusted by `adjust`.
pub fn import(
    ldifs: &[PathBuf],
    data: &Path,
    schema: Arc<Schema>,
    suffixes: &[String],
    creator: &str,
    adjust: &Adjust,
    threads: usize,
) -> Result<EntryStats, MigrateError> {
    let mut naming_contexts = Vec::new();
    for s in suffixes {
        let (_, norm) = NormDn::parse(s.as_bytes(), &*schema)
            .map_err(|e| MigrateError::new(format!("suffix `{s}`: {e}")))?;
        naming_contexts.push(norm);
    }
    let csn = CsnGenerator::new(SERVER_ID).map_err(|e| MigrateError::new(e.to_string()))?;
    let hook = import_hook(Arc::new(csn), creator.to_string(), schema.clone());
    let options = ImportOptions {
        dir: data.to_path_buf(),
        storage: Arc::new(FsStorage),
        schema,
        threads,
        naming_contexts,
        hook: Some(&hook),
        allow_file_urls: false,
    };
    let (reader, writer) = chunk_pipe();
    let files = ldifs.to_vec();
    let adjust = adjust.clone();
    let feeder = std::thread::Builder::new()
        .name("migrate-ldif".into())
        .spawn(move || {
            let mut out = BufWriter::with_capacity(PIPE_BUFFER, writer);
            let mut map = LineMap::default();
            let result = transform(&files, &adjust, &mut out, &mut map);
            let flushed = out.flush();
            drop(out);
            (
                result.and_then(|s| flushed.map(|()| s).map_err(|e| MigrateError::new(e.to_string()))),
                map,
            )
        })
        .map_err(|e| MigrateError::new(format!("cannot start the LDIF thread: {e}")))?;
    let imported = import_ldif(&options, BufReader::with_capacity(PIPE_BUFFER, reader), |_| {});
    let (fed, map) = feeder
        .join()
        .map_err(|_| MigrateError::new("the LDIF thread panicked"))?;
    let mut stats = fed?;
    let report = imported.map_err(|e| import_error(e, &map, ldifs))?;
    stats.entries = report.entries;
    Ok(stats)
}

/// An import error, at the slapcat file's line.
fn import_error(e: ImportError, map: &LineMap, files: &[PathBuf]) -> MigrateError {
    let line = match &e {
        ImportError::Record { line, .. } => Some(*line),
        ImportError::Ldif(l) => Some(l.line),
        _ => None,
    };
    let message = match &e {
        ImportError::Record { problem, .. } => problem.clone(),
        ImportError::Ldif(l) => l.kind.to_string(),
        other => other.to_string(),
    };
    match line.and_then(|l| map.source(l, files)) {
        Some(origin) => MigrateError::at(&origin, format!("the entry does not import: {message}")),
        None => MigrateError::new(format!("the import failed: {e}")),
    }
}

/// One attribute of a record: its name (lowercase, without options) and its physical
/// lines.
struct Attr {
    name: String,
    lines: Vec<String>,
}

impl Attr {
    /// The value, decoded.
    fn value(&self) -> Vec<u8> {
        let joined: String = self
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| if i == 0 { l.as_str() } else { &l[1..] })
            .collect();
        let Some(colon) = joined.find(':') else {
            return Vec::new();
        };
        let rest = &joined[colon + 1..];
        match rest.strip_prefix(':') {
            Some(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .unwrap_or_default(),
            None => rest.trim_start().as_bytes().to_vec(),
        }
    }
}

/// Streams `files` into `out`, adjusted.
fn transform(
    files: &[PathBuf],
    adjust: &Adjust,
    out: &mut impl Write,
    map: &mut LineMap,
) -> Result<EntryStats, MigrateError> {
    let mut stats = EntryStats::default();
    let mut stream_line = 0u64;
    let admin_key = adjust.admin.as_ref().map(|(dn, _)| dn_key(dn));
    let admin_parent = admin_key
        .as_ref()
        .and_then(|k| k.split_once(',').map(|(_, p)| p.to_string()));
    let mut parent_seen = false;
    for (index, path) in files.iter().enumerate() {
        let f = File::open(path)
            .map_err(|e| MigrateError::at(&Origin::new(path, 0), format!("cannot read: {e}")))?;
        let mut lines = BufReader::with_capacity(PIPE_BUFFER, f).lines();
        let mut source_line = 0u64;
        let mut record: Vec<Attr> = Vec::new();
        let mut record_start = 0u64;
        loop {
            let line = match lines.next() {
                Some(l) => Some(l.map_err(|e| {
                    MigrateError::at(&Origin::new(path, source_line + 1), format!("cannot read: {e}"))
                })?),
                None => None,
            };
            source_line += 1;
            let end_of_record = line.as_deref().is_none_or(|l| l.is_empty());
            if end_of_record {
                if !record.is_empty() {
                    let origin = Origin::new(path, record_start);
                    let written = emit(
                        &mut record,
                        adjust,
                        admin_key.as_deref(),
                        &mut stats,
                        &origin,
                        out,
                        |s| {
                            parent_seen |= admin_parent.as_deref() == Some(s);
                        },
                    )?;
                    if written > 0 {
                        map.mark(stream_line + 1, index, record_start);
                        stream_line += written + 1;
                        out.write_all(b"\n").map_err(pipe)?;
                    }
                    record.clear();
                }
                if line.is_none() {
                    break;
                }
                continue;
            }
            let l = line.unwrap_or_default();
            if l.starts_with('#') {
                continue;
            }
            if let Some(rest) = l.strip_prefix(' ') {
                if let Some(last) = record.last_mut() {
                    if last.lines.len() == 1 && last.lines[0].starts_with('#') {
                        continue;
                    }
                    last.lines.push(format!(" {rest}"));
                }
                continue;
            }
            if record.is_empty() {
                record_start = source_line;
                if l.to_ascii_lowercase().starts_with("version:") {
                    continue;
                }
            }
            let name_end = l.find([':', ';']).unwrap_or(l.len());
            record.push(Attr {
                name: l[..name_end].to_ascii_lowercase(),
                lines: vec![l],
            });
        }
    }
    if let (Some((dn, password)), false) = (&adjust.admin, stats.admin_in_data) {
        if !parent_seen {
            return Err(MigrateError::new(format!(
                "the rootDN `{dn}` has no entry in the data, and neither has its parent: add the entry \
                 to the LDIF, or the parent"
            )));
        }
        let rdn = dn.split(',').next().unwrap_or_default();
        let (attr, value) = rdn.split_once('=').unwrap_or(("", ""));
        if !attr.trim().eq_ignore_ascii_case("cn") {
            return Err(MigrateError::new(format!(
                "the rootDN `{dn}` has no entry in the data; Larch makes the admin an organizationalRole \
                 named by cn, which `{rdn}` is not: add the entry to the LDIF"
            )));
        }
        let text = format!(
            "dn: {dn}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: {}\nuserPassword:: {}\n\n",
            value.trim(),
            base64::engine::general_purpose::STANDARD.encode(password)
        );
        out.write_all(text.as_bytes()).map_err(pipe)?;
    }
    Ok(stats)
}

fn pipe(e: std::io::Error) -> MigrateError {
    MigrateError::new(format!("feeding the import failed: {e}"))
}

/// Writes one record, adjusted; returns the lines written (0 when left out).
fn emit(
    record: &mut Vec<Attr>,
    adjust: &Adjust,
    admin_key: Option<&str>,
    stats: &mut EntryStats,
    origin: &Origin,
    out: &mut impl Write,
    mut saw: impl FnMut(&str),
) -> Result<u64, MigrateError> {
    let Some(first) = record.first() else { return Ok(0) };
    if first.name != "dn" {
        return Err(MigrateError::at(origin, "a record must start with `dn:`"));
    }
    let dn = String::from_utf8(first.value()).map_err(|_| MigrateError::at(origin, "the DN is not UTF-8"))?;
    let key = dn_key(&dn);
    if adjust.excluded.iter().any(|x| within(&key, x)) {
        stats.excluded += 1;
        return Ok(0);
    }
    saw(&key);
    let is_admin = admin_key == Some(key.as_str());
    if is_admin {
        stats.admin_in_data = true;
        let old: Vec<Vec<u8>> = record
            .iter()
            .filter(|a| a.name == "userpassword")
            .map(Attr::value)
            .collect();
        stats.admin_password_replaced = adjust.admin.as_ref().is_some_and(|(_, p)| old != [p.clone()]);
        record.retain(|a| a.name != "userpassword");
        let has_class = record
            .iter()
            .any(|a| a.name == "objectclass" && a.value().eq_ignore_ascii_case(b"simpleSecurityObject"));
        if !has_class {
            record.push(Attr {
                name: "objectclass".into(),
                lines: vec!["objectClass: simpleSecurityObject".into()],
            });
        }
        if let Some((_, password)) = &adjust.admin {
            record.push(Attr {
                name: "userpassword".into(),
                lines: vec![format!(
                    "userPassword:: {}",
                    base64::engine::general_purpose::STANDARD.encode(password)
                )],
            });
        }
    }
    let mut written = 0u64;
    for a in record.iter() {
        if adjust.strip.contains(&a.name) {
            let label = a.lines[0][..a.lines[0].find([':', ';']).unwrap_or(0)].to_string();
            *stats.stripped.entry(label).or_default() += 1;
            continue;
        }
        match a.name.as_str() {
            "userpassword" => {
                let v = a.value();
                let label = match parse_stored(&v) {
                    Some((Scheme::Cleartext, _)) if !v.starts_with(b"{") => "cleartext".to_string(),
                    Some(_) => larch_server::password::scheme_label(&v).to_ascii_uppercase(),
                    None => {
                        stats.unverifiable += 1;
                        larch_server::password::scheme_label(&v).to_ascii_uppercase()
                    }
                };
                *stats.schemes.entry(label).or_default() += 1;
            }
            "contextcsn" => stats.context_csns += 1,
            "entryuuid" => stats.with_uuid += 1,
            _ => {}
        }
        for l in &a.lines {
            out.write_all(l.as_bytes()).map_err(pipe)?;
            out.write_all(b"\n").map_err(pipe)?;
            written += 1;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transform_adjusts_records() {
        let dir = std::env::temp_dir().join(format!("larch-migrate-entries-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.ldif");
        std::fs::write(
            &path,
            "version: 1\n\ndn: dc=example,dc=com\nobjectClass: dcObject\ncontextCSN: 1\n\n\
             # a comment\ndn: uid=a,dc=example,dc=com\nuserPassword:: e1NTSEF9YWJj\nmemberOf: cn=g,\n dc=example,dc=com\n\
             cn: a\n\ndn: reqStart=1,cn=accesslog\ncn: x\n\n",
        )
        .unwrap();
        let adjust = Adjust {
            strip: vec!["memberof".into()],
            excluded: vec!["cn=accesslog".into()],
            admin: Some(("cn=admin,dc=example,dc=com".into(), b"{SSHA}xyz".to_vec())),
        };
        let mut out = Vec::new();
        let mut map = LineMap::default();
        let stats = transform(std::slice::from_ref(&path), &adjust, &mut out, &mut map).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("memberOf"), "{text}");
        assert!(!text.contains("accesslog"), "{text}");
        assert!(
            text.contains("dn: cn=admin,dc=example,dc=com\nobjectClass: organizationalRole"),
            "{text}"
        );
        assert_eq!(stats.stripped.get("memberOf"), Some(&1));
        assert_eq!(stats.excluded, 1);
        assert_eq!(stats.context_csns, 1);
        assert_eq!(stats.schemes.get("{SSHA}"), Some(&1));
        assert!(!stats.admin_in_data);
        // The second record starts at line 5 of the stream and line 8 of the file.
        assert_eq!(map.source(5, std::slice::from_ref(&path)).unwrap().line, 8);
    }
}
