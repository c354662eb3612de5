//! A 100,000-record input streams through the reader with bounded memory: records are
//! generated on the fly, read one at a time and dropped, and the process's peak resident
//! memory grows far less than the input's size. (Alone in its own test binary so that no
//! other test moves the peak.)

use std::io::{BufReader, Read};

use larch_store::ldif::{LdifReader, LdifRecord, LdifWriter};

const RECORDS: usize = 100_000;

/// Produces `RECORDS` content records, written by `LdifWriter`, on demand.
struct Generator {
    next: usize,
    buf: Vec<u8>,
    pos: usize,
}

fn record(i: usize) -> LdifRecord {
    let filler = format!("{i:08} ").repeat(50);
    LdifRecord::Content {
        dn: format!("uid=user{i},ou=people,dc=example,dc=com").into_bytes(),
        attributes: vec![
            ("objectClass".into(), b"inetOrgPerson".to_vec()),
            ("uid".into(), format!("user{i}").into_bytes()),
            ("cn".into(), format!("User Number {i}").into_bytes()),
            ("description".into(), filler.trim_end().as_bytes().to_vec()),
            ("jpegPhoto".into(), vec![(i % 251) as u8; 64]),
        ],
    }
}

impl Read for Generator {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.next == RECORDS {
                return Ok(0);
            }
            let mut writer = LdifWriter::new(std::mem::take(&mut self.buf));
            writer.write_record(&record(self.next))?;
            self.buf = writer.into_inner();
            self.buf.push(b'\n');
            self.pos = 0;
            self.next += 1;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        Ok(n)
    }
}

/// Peak resident set size of this process, in KiB (Linux), or `None`.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn hundred_thousand_records_stream_in_bounded_memory() {
    let before = peak_rss_kib();
    let input = BufReader::new(Generator {
        next: 0,
        buf: Vec::new(),
        pos: 0,
    });
    let mut reader = LdifReader::new(input);
    let mut count = 0;
    let mut input_bytes = 0usize;
    while let Some(rec) = reader.read_record().unwrap() {
        // Every 997th record is checked in full; all are counted and dropped.
        if count % 997 == 0 {
            assert_eq!(rec, record(count));
        }
        if let LdifRecord::Content { attributes, .. } = &rec {
            input_bytes += attributes.iter().map(|(_, v)| v.len()).sum::<usize>();
        }
        count += 1;
    }
    assert_eq!(count, RECORDS);
    assert!(
        input_bytes > 50_000_000,
        "the input is large: {input_bytes} octets of values"
    );
    if let (Some(before), Some(after)) = (before, peak_rss_kib()) {
        let grown_mib = after.saturating_sub(before) / 1024;
        assert!(
            grown_mib < 16,
            "peak memory grew by {grown_mib} MiB while streaming {input_bytes} octets"
        );
    }
}
