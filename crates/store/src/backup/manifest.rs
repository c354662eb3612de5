//! The backup manifest: what a backup holds, how to check it, and the LSNs it restores to.
//!
//! It is text, so an operator can read it (`cat DIR/MANIFEST`), with one key per line in a
//! fixed order and a CRC32C of everything before its last line, so a damaged manifest is
//! refused rather than half believed. The same text, with an example, is in
//! `docs/formats.md`.
//!
//! ```text
//! larch-backup 1
//! software <text>
//! created <seconds since the Unix epoch>
//! snapshot-lsn <decimal>
//! end-lsn <decimal>
//! entries <decimal>
//! suffix <DN>                                   (zero or more)
//! file <relative path> <size> <crc32c>         (one snapshot, then log segments)
//! checksum <crc32c>
//! ```
//!
//! Every line ends with one `\n` (no `\r`); a key and its value are separated by one space;
//! decimals have no sign, no leading zeros (but `0`) and fit a u64; a CRC32C is 8 lowercase
//! hexadecimal digits. The first `file` line is the snapshot, `snapshots/snapshot-<S>.snap`
//! with *S* the snapshot LSN; the others are log segments `wal/wal-<LSN>.log` in ascending
//! order. `checksum` is the CRC32C of every octet before its line.

use crate::snapshot::{parse_snapshot_name, snapshot_name};
use crate::wal::{parse_segment_name, Lsn};

/// The manifest's file name in a backup directory.
pub const MANIFEST_NAME: &str = "MANIFEST";

/// The temporary name it is written under before the rename that completes the backup.
pub const MANIFEST_TEMP_NAME: &str = "MANIFEST.tmp";

/// The manifest format this code writes and reads.
pub const MANIFEST_VERSION: u32 = 1;

/// The first line's key.
const MAGIC_KEY: &str = "larch-backup";

/// The largest manifest read (1 MiB): thousands of segments and suffixes fit; a larger file
/// is not a manifest and is refused before it is parsed.
pub const MAX_MANIFEST_LEN: usize = 1 << 20;

/// Directory of the snapshot inside a backup (as in a data directory).
pub const SNAPSHOT_SUBDIR: &str = "snapshots";

/// Directory of the log segments inside a backup (as in a data directory).
pub const WAL_SUBDIR: &str = "wal";

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Its path relative to the backup directory (`snapshots/...` or `wal/...`).
    pub path: String,
    /// Its size in octets.
    pub size: u64,
    /// The CRC32C of its content.
    pub crc32c: u32,
}

/// A backup's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The software that wrote the backup (e.g. `larch 0.1.0`).
    pub software: String,
    /// When the backup completed, in seconds since the Unix epoch.
    pub created_unix_secs: u64,
    /// The snapshot's LSN.
    pub snapshot_lsn: Lsn,
    /// The LSN the backup restores to: the last log record it holds (the snapshot LSN when
    /// it holds none).
    pub end_lsn: Lsn,
    /// Entries in the snapshot.
    pub entries: u64,
    /// The naming contexts the server was configured with (informative).
    pub suffixes: Vec<String>,
    /// The snapshot first, then the log segments in LSN order.
    pub files: Vec<FileEntry>,
}

impl Manifest {
    /// The manifest as text (see the module documentation). Fails when a free-text value
    /// (software, a suffix, a path) holds a line break, which the format cannot carry.
    pub fn encode(&self) -> Result<String, String> {
        let mut out = format!(
            "{MAGIC_KEY} {MANIFEST_VERSION}\nsoftware {}\ncreated {}\nsnapshot-lsn {}\nend-lsn {}\nentries {}\n",
            one_line("software", &self.software)?,
            self.created_unix_secs,
            self.snapshot_lsn,
            self.end_lsn,
            self.entries
        );
        for s in &self.suffixes {
            out.push_str(&format!("suffix {}\n", one_line("suffix", s)?));
        }
        for f in &self.files {
            if f.path.contains(' ') {
                return Err(format!("the file name `{}` holds a space", f.path));
            }
            out.push_str(&format!(
                "file {} {} {:08x}\n",
                one_line("file", &f.path)?,
                f.size,
                f.crc32c
            ));
        }
        let crc = crc32c::crc32c(out.as_bytes());
        out.push_str(&format!("checksum {crc:08x}\n"));
        Ok(out)
    }

    /// Reads a manifest, checking everything the module documentation says; the error says
    /// what is wrong and on which line.
    pub fn parse(data: &[u8]) -> Result<Manifest, String> {
        if data.len() > MAX_MANIFEST_LEN {
            return Err(format!(
                "{} octets, above the limit of {MAX_MANIFEST_LEN}: not a manifest",
                data.len()
            ));
        }
        let text = std::str::from_utf8(data).map_err(|_| "not UTF-8 text: not a manifest".to_string())?;
        let body = text
            .strip_suffix('\n')
            .ok_or("the last line is incomplete (the file is truncated)")?;
        let (covered, last) = match body.rfind('\n') {
            Some(i) => (&text[..=i], &body[i + 1..]),
            None => return Err("a single line: not a manifest".into()),
        };
        let stated = last
            .strip_prefix("checksum ")
            .ok_or("the last line is not `checksum` (the file is truncated or damaged)")?;
        let stated = parse_crc(stated).ok_or("the checksum is not 8 lowercase hexadecimal digits")?;
        let actual = crc32c::crc32c(covered.as_bytes());
        if stated != actual {
            return Err(format!(
                "checksum mismatch (stated {stated:08x}, computed {actual:08x}): the manifest is damaged"
            ));
        }
        let mut lines = Lines {
            inner: covered.lines(),
            number: 0,
        };
        let version = lines.value(MAGIC_KEY)?;
        if version != MANIFEST_VERSION.to_string() {
            return Err(format!(
                "manifest format {version} is not supported (this build reads {MANIFEST_VERSION})"
            ));
        }
        let software = lines.value("software")?.to_string();
        let created_unix_secs = lines.number("created")?;
        let snapshot_lsn = lines.number("snapshot-lsn")?;
        let end_lsn = lines.number("end-lsn")?;
        let entries = lines.number("entries")?;
        if end_lsn < snapshot_lsn {
            return Err(format!("end-lsn {end_lsn} is before snapshot-lsn {snapshot_lsn}"));
        }
        let mut suffixes = Vec::new();
        let mut files = Vec::new();
        while let Some((key, value)) = lines.next_pair()? {
            match key {
                "suffix" if files.is_empty() => suffixes.push(value.to_string()),
                "file" => files.push(lines.file(value)?),
                _ => return Err(lines.at(&format!("unexpected key `{key}`"))),
            }
        }
        check_files(&files, snapshot_lsn)?;
        Ok(Manifest {
            software,
            created_unix_secs,
            snapshot_lsn,
            end_lsn,
            entries,
            suffixes,
            files,
        })
    }

    /// The snapshot's entry (the first file).
    pub fn snapshot(&self) -> Option<&FileEntry> {
        self.files.first()
    }

    /// The log segments' entries, in LSN order.
    pub fn segments(&self) -> &[FileEntry] {
        self.files.get(1..).unwrap_or_default()
    }

    /// The octets of every file together.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// The snapshot's path in a backup, for LSN `lsn`.
pub fn snapshot_path(lsn: Lsn) -> String {
    format!("{SNAPSHOT_SUBDIR}/{}", snapshot_name(lsn))
}

/// One snapshot named for `snapshot_lsn` first, then segments with ascending LSNs.
fn check_files(files: &[FileEntry], snapshot_lsn: Lsn) -> Result<(), String> {
    let Some((first, rest)) = files.split_first() else {
        return Err("no file is listed (the snapshot is missing)".into());
    };
    let lsn = first
        .path
        .strip_prefix("snapshots/")
        .and_then(parse_snapshot_name)
        .ok_or_else(|| format!("the first file `{}` is not a snapshot", first.path))?;
    if lsn != snapshot_lsn {
        return Err(format!(
            "the snapshot `{}` is not named for snapshot-lsn {snapshot_lsn}",
            first.path
        ));
    }
    let mut previous: Option<Lsn> = None;
    for f in rest {
        let lsn = f
            .path
            .strip_prefix("wal/")
            .and_then(parse_segment_name)
            .ok_or_else(|| format!("`{}` is not a log segment", f.path))?;
        if previous.is_some_and(|p| lsn <= p) {
            return Err(format!("the log segment `{}` is out of order", f.path));
        }
        previous = Some(lsn);
    }
    Ok(())
}

/// `value` when it holds no line break.
fn one_line<'v>(key: &str, value: &'v str) -> Result<&'v str, String> {
    if value.contains(['\n', '\r']) {
        Err(format!("the {key} `{}` holds a line break", value.escape_debug()))
    } else {
        Ok(value)
    }
}

fn parse_crc(s: &str) -> Option<u32> {
    let lower = s
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (s.len() == 8 && lower)
        .then(|| u32::from_str_radix(s, 16).ok())
        .flatten()
}

fn parse_decimal(s: &str) -> Option<u64> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// The manifest's lines, numbered for messages.
struct Lines<'t> {
    inner: std::str::Lines<'t>,
    number: usize,
}

impl<'t> Lines<'t> {
    fn at(&self, problem: &str) -> String {
        format!("line {}: {problem}", self.number)
    }

    fn next_pair(&mut self) -> Result<Option<(&'t str, &'t str)>, String> {
        let Some(line) = self.inner.next() else {
            return Ok(None);
        };
        self.number += 1;
        if line.contains('\r') {
            return Err(self.at("a carriage return"));
        }
        line.split_once(' ').map(Some).ok_or_else(|| self.at("no value"))
    }

    fn value(&mut self, key: &str) -> Result<&'t str, String> {
        match self.next_pair()? {
            Some((k, v)) if k == key => Ok(v),
            Some((k, _)) => Err(self.at(&format!("`{key}` expected, found `{k}`"))),
            None => Err(format!("`{key}` is missing")),
        }
    }

    fn number(&mut self, key: &str) -> Result<u64, String> {
        let v = self.value(key)?;
        parse_decimal(v).ok_or_else(|| self.at(&format!("`{key}` is not a decimal number")))
    }

    fn file(&self, value: &str) -> Result<FileEntry, String> {
        let mut parts = value.split(' ');
        let (Some(path), Some(size), Some(crc), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(self.at("a file line is `file <path> <size> <crc32c>`"));
        };
        Ok(FileEntry {
            path: path.to_string(),
            size: parse_decimal(size).ok_or_else(|| self.at("the size is not a decimal number"))?,
            crc32c: parse_crc(crc)
                .ok_or_else(|| self.at("the CRC32C is not 8 lowercase hexadecimal digits"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            software: "larch 0.1.0".into(),
            created_unix_secs: 1_700_000_000,
            snapshot_lsn: 12,
            end_lsn: 40,
            entries: 1000,
            suffixes: vec!["dc=example,dc=com".into()],
            files: vec![
                FileEntry {
                    path: snapshot_path(12),
                    size: 5000,
                    crc32c: 0xdead_beef,
                },
                FileEntry {
                    path: "wal/wal-0000000000000001.log".into(),
                    size: 900,
                    crc32c: 7,
                },
            ],
        }
    }

    #[test]
    fn round_trip() {
        let m = sample();
        let text = m.encode().unwrap();
        assert!(
            text.starts_with("larch-backup 1\nsoftware larch 0.1.0\n"),
            "{text}"
        );
        assert!(text.contains("\nfile wal/wal-0000000000000001.log 900 00000007\n"));
        // The example of docs/formats.md, octet for octet.
        assert!(text.ends_with("00000007\nchecksum a08bf9e2\n"), "{text}");
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), m);
    }

    #[test]
    fn every_damage_is_refused() {
        let text = sample().encode().unwrap();
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let mut d = bytes.to_vec();
            d[i] ^= 0x01;
            assert!(Manifest::parse(&d).is_err(), "flip at {i} accepted");
        }
        for n in 0..bytes.len() {
            assert!(
                Manifest::parse(&bytes[..n]).is_err(),
                "truncation at {n} accepted"
            );
        }
    }

    #[test]
    fn line_breaks_cannot_be_written() {
        let mut m = sample();
        m.suffixes.push("dc=a\nfile x".into());
        assert!(m.encode().is_err());
    }
}
