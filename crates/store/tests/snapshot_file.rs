//! The snapshot file: round trips against a model (0, 1, 100,000 records; 1 to 4 reading
//! threads; the in-memory and the real filesystem), an independent encoder written from the
//! format specification that must produce the writer's exact octets, refusal of every
//! single-octet corruption in every region and of every truncation, files whose checksums
//! are right but whose fields lie, crashes during a write, listing and cleanup, and the
//! writer's refusals.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use larch_store::snapshot::{
    list_snapshots, read_snapshot, remove_stale, snapshot_name, temp_name, verify_snapshot, write_snapshot,
    write_snapshot_with, ChunkRecords, Corruption, SnapshotError, SnapshotMeta, WriteOptions, MAX_EXTRA_LEN,
    MAX_RECORD_LEN,
};
use larch_store::storage::{FaultConfig, FaultStorage, FsStorage, Storage};
use proptest::prelude::*;

mod common;
use common::Rng;

type Records = Vec<(u32, Vec<u8>)>;

/// Which problem a damaged file must be refused with.
type Expect = fn(&Corruption) -> bool;

/// splitmix64, so the large data sets are the same on every run and platform.
impl Rng {
    /// Octets that compress a little, like entries (repeated words mixed with noise).
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            if self.below(3) == 0 {
                out.extend_from_slice(b"objectClass: inetOrgPerson\n");
            } else {
                out.push(self.next() as u8);
            }
        }
        out.truncate(len);
        out
    }
}

/// `n` records with ascending IDs (random gaps), mostly 0..400 octets, some empty, and
/// every 10,000th one 100 KB.
fn records(seed: u64, n: usize) -> Records {
    let mut rng = Rng(seed);
    let mut id = rng.below(5) as u32;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let len = match (i % 10_000, rng.below(20)) {
            (5000, _) => 100_000,
            (_, 0) => 0,
            _ => rng.below(400) as usize,
        };
        out.push((id, rng.bytes(len)));
        id += 1 + rng.below(3) as u32;
    }
    out
}

fn meta(lsn: u64, recs: &Records, extra: &[u8]) -> SnapshotMeta {
    SnapshotMeta {
        lsn,
        next_id: recs.last().map_or(1, |r| r.0 + 1),
        entry_count: recs.len() as u64,
        created_unix_secs: 1_700_000_000 + lsn,
        extra: extra.to_vec(),
    }
}

/// What a read delivered: the result, every record handed out (sorted by ID), and how many
/// chunks. The callback itself checks each chunk's invariants and that no chunk comes twice.
struct Read {
    result: Result<SnapshotMeta, SnapshotError>,
    records: Records,
    chunks: usize,
}

fn read_collect(s: &dyn Storage, path: &Path, threads: usize) -> Read {
    let got = Mutex::new(Vec::new());
    let seen = Mutex::new(BTreeSet::new());
    let result = read_snapshot(s, path, threads, |c: &mut ChunkRecords<'_>| {
        if !seen.lock().unwrap().insert(c.chunk_index()) {
            return Err(format!("chunk {} delivered twice", c.chunk_index()));
        }
        let (first, last, count) = (c.first_id(), c.last_id(), c.record_count());
        if c.len() != count as usize {
            return Err("length differs from record count".to_string());
        }
        let recs: Records = c.by_ref().map(|(id, r)| (id, r.to_vec())).collect();
        let ok = recs.len() == count as usize
            && recs.first().map(|r| r.0) == Some(first)
            && recs.last().map(|r| r.0) == Some(last)
            && recs.windows(2).all(|w| w[0].0 < w[1].0);
        if !ok {
            return Err(format!(
                "chunk {} does not match its own description",
                c.chunk_index()
            ));
        }
        got.lock().unwrap().extend(recs);
        Ok(())
    });
    let mut records = got.into_inner().unwrap();
    records.sort_by_key(|r| r.0);
    let chunks = seen.into_inner().unwrap().len();
    Read {
        result,
        records,
        chunks,
    }
}

fn dir() -> PathBuf {
    PathBuf::from("/data/snapshots")
}

fn storage() -> FaultStorage {
    let s = FaultStorage::new(7);
    s.create_dir_all(&dir()).unwrap();
    s
}

#[test]
fn round_trip_of_0_1_and_100000_records_with_1_to_4_threads() {
    for n in [0usize, 1, 100_000] {
        let s = storage();
        let recs = records(n as u64, n);
        let m = meta(42 + n as u64, &recs, b"dictionary and settings");
        let info = write_snapshot(&s, &dir(), &m, recs.iter().map(|(id, r)| (*id, r))).unwrap();
        assert_eq!(info.path, dir().join(snapshot_name(m.lsn)));
        assert_eq!((info.lsn, info.entries), (m.lsn, n as u64));
        assert_eq!(info.bytes, s.read(&info.path).unwrap().len() as u64);
        if n == 100_000 {
            assert!(info.chunks > 4, "{} chunks", info.chunks);
        }
        for threads in 1..=4 {
            let read = read_collect(&s, &info.path, threads);
            assert_eq!(read.result.unwrap(), m, "{n} records, {threads} threads");
            assert_eq!(read.records, recs, "{n} records, {threads} threads");
            assert_eq!(read.chunks as u64, info.chunks);
        }
        assert_eq!(verify_snapshot(&s, &info.path).unwrap(), info);
        assert_eq!(
            list_snapshots(&s, &dir()).unwrap(),
            vec![(m.lsn, info.path.clone())]
        );
        assert_eq!(
            s.list(&dir()).unwrap(),
            vec![snapshot_name(m.lsn)],
            "no temporary file left"
        );
    }
}

#[test]
fn round_trip_on_the_real_filesystem() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let d = std::env::temp_dir().join(format!("larch-snapshot-{}-{nanos}", std::process::id()));
    let s = FsStorage;
    s.create_dir_all(&d).unwrap();
    std::fs::write(d.join("unrelated.txt"), b"x").unwrap();
    let a = records(1, 3000);
    let b = records(2, 5000);
    let small = WriteOptions {
        chunk_target: 4096,
        ..WriteOptions::default()
    };
    let ia = write_snapshot_with(&s, &d, &meta(10, &a, b""), a.clone(), &small).unwrap();
    let ib = write_snapshot(&s, &d, &meta(20, &b, b"x"), b.iter().map(|(id, r)| (*id, r))).unwrap();
    assert!(ia.chunks > 10);
    assert_eq!(std::fs::metadata(&ib.path).unwrap().len(), ib.bytes);
    assert_eq!(
        list_snapshots(&s, &d).unwrap(),
        vec![(20, ib.path.clone()), (10, ia.path.clone())]
    );
    for threads in [1, 3] {
        let read = read_collect(&s, &ia.path, threads);
        assert_eq!(read.result.unwrap(), meta(10, &a, b""));
        assert_eq!(read.records, a);
        assert_eq!(read_collect(&s, &ib.path, threads).records, b);
    }
    std::fs::write(d.join(temp_name(30)), b"half a snapshot").unwrap();
    let removed = remove_stale(&s, &d, 1).unwrap();
    assert_eq!(removed.len(), 2);
    assert_eq!(
        s.list(&d).unwrap(),
        vec![snapshot_name(20), "unrelated.txt".to_string()]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

// ---------------------------------------------------------------------------------------
// An encoder written from the specification (docs/formats.md), independent of the crate's.

struct RawChunk {
    first: u32,
    last: u32,
    count: u32,
    raw_len: u32,
    packed: Vec<u8>,
}

fn frames(recs: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, r) in recs {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(r.len() as u32).to_le_bytes());
        out.extend_from_slice(r);
    }
    out
}

fn raw_chunk(recs: &[(u32, Vec<u8>)]) -> RawChunk {
    let raw = frames(recs);
    RawChunk {
        first: recs[0].0,
        last: recs[recs.len() - 1].0,
        count: recs.len() as u32,
        raw_len: raw.len() as u32,
        packed: lz4_flex::block::compress(&raw),
    }
}

/// Splits records into chunks by the documented rule: a record whose frame would take a
/// non-empty chunk past the target starts a new chunk.
fn chunked(recs: &Records, target: usize) -> Vec<RawChunk> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (i, (_, r)) in recs.iter().enumerate() {
        let frame = 8 + r.len();
        if i > start && size + frame > target {
            out.push(raw_chunk(&recs[start..i]));
            start = i;
            size = 0;
        }
        size += frame;
    }
    if start < recs.len() {
        out.push(raw_chunk(&recs[start..]));
    }
    out
}

fn crc(b: &[u8]) -> [u8; 4] {
    crc32c::crc32c(b).to_le_bytes()
}

fn spec_file(m: &SnapshotMeta, chunks: &[RawChunk]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(b"LARCHSNP");
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&m.lsn.to_le_bytes());
    f.extend_from_slice(&m.next_id.to_le_bytes());
    f.extend_from_slice(&m.entry_count.to_le_bytes());
    f.extend_from_slice(&m.created_unix_secs.to_le_bytes());
    f.extend_from_slice(&(m.extra.len() as u32).to_le_bytes());
    f.extend_from_slice(&m.extra);
    let c = crc(&f);
    f.extend_from_slice(&c);
    let mut directory = Vec::new();
    for ch in chunks {
        let offset = f.len() as u64;
        let mut h = Vec::new();
        for v in [ch.first, ch.last, ch.count, ch.raw_len, ch.packed.len() as u32] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&crc(&ch.packed));
        let hc = crc(&h);
        h.extend_from_slice(&hc);
        f.extend_from_slice(&h);
        f.extend_from_slice(&ch.packed);
        directory.push((offset, 28 + ch.packed.len() as u32, ch.first, ch.last));
    }
    let footer_offset = f.len() as u64;
    let mut footer = Vec::new();
    footer.extend_from_slice(&m.lsn.to_le_bytes());
    footer.extend_from_slice(&m.entry_count.to_le_bytes());
    footer.extend_from_slice(&(directory.len() as u32).to_le_bytes());
    for (o, l, a, b) in directory {
        footer.extend_from_slice(&o.to_le_bytes());
        footer.extend_from_slice(&l.to_le_bytes());
        footer.extend_from_slice(&a.to_le_bytes());
        footer.extend_from_slice(&b.to_le_bytes());
    }
    let fc = crc(&footer);
    footer.extend_from_slice(&fc);
    f.extend_from_slice(&footer);
    let mut trailer = Vec::new();
    trailer.extend_from_slice(&footer_offset.to_le_bytes());
    trailer.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    let tc = crc(&trailer);
    trailer.extend_from_slice(&tc);
    trailer.extend_from_slice(b"LARCHEND");
    f.extend_from_slice(&trailer);
    f
}

/// Where the regions of a file are, found by following the trailer as the specification
/// says.
struct Layout {
    header: std::ops::Range<usize>,
    chunk_headers: Vec<std::ops::Range<usize>>,
    chunk_data: Vec<std::ops::Range<usize>>,
    footer: std::ops::Range<usize>,
    trailer: std::ops::Range<usize>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn layout(b: &[u8]) -> Layout {
    let header_len = 48 + u32_at(b, 40) as usize;
    let t = b.len() - 24;
    let footer_offset = u64_at(b, t) as usize;
    let footer_len = u32_at(b, t + 8) as usize;
    let k = u32_at(b, footer_offset + 16) as usize;
    let mut chunk_headers = Vec::new();
    let mut chunk_data = Vec::new();
    for i in 0..k {
        let e = footer_offset + 20 + 20 * i;
        let o = u64_at(b, e) as usize;
        let l = u32_at(b, e + 8) as usize;
        chunk_headers.push(o..o + 28);
        chunk_data.push(o + 28..o + l);
    }
    Layout {
        header: 0..header_len,
        chunk_headers,
        chunk_data,
        footer: footer_offset..footer_offset + footer_len,
        trailer: t..b.len(),
    }
}

fn write_to_vec(m: &SnapshotMeta, recs: &Records, target: usize) -> Vec<u8> {
    let s = storage();
    let info = write_snapshot_with(
        &s,
        &dir(),
        m,
        recs.clone(),
        &WriteOptions {
            chunk_target: target,
            // Compression threads must not change a single octet of the file.
            threads: 1 + target % 4,
            // Pacing neither (a high duty cycle keeps the sleeps short).
            duty_cycle: if target % 2 == 0 { 1.0 } else { 0.9 },
        },
    )
    .unwrap();
    s.read(&info.path).unwrap()
}

/// Plants `bytes` as the snapshot file for `lsn` and reads it with `threads` threads.
fn read_planted(bytes: &[u8], lsn: u64, threads: usize) -> (PathBuf, Read) {
    let s = storage();
    let path = dir().join(snapshot_name(lsn));
    s.put_durable(&path, bytes);
    let read = read_collect(&s, &path, threads);
    (path, read)
}

/// Asserts the read failed with `Corrupt` naming `path`, delivered only true records, and
/// returns the problem.
fn expect_corrupt(path: &Path, read: &Read, model: &Records) -> Corruption {
    for r in &read.records {
        assert!(
            model.binary_search(r).is_ok(),
            "a record not in the file was delivered"
        );
    }
    match &read.result {
        Err(e @ SnapshotError::Corrupt { path: p, problem, .. }) => {
            assert_eq!(p, path);
            assert!(e.to_string().contains(&path.display().to_string()));
            problem.clone()
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The writer's octets are exactly what the specification describes, and reading gives
    /// back the model whatever the chunk size, record sizes and thread count.
    #[test]
    fn writer_matches_the_specification_and_reads_back(
        recs in proptest::collection::vec((1u32..5, proptest::collection::vec(any::<u8>(), 0..300)), 0..60),
        target in 1usize..3000,
        threads in 1usize..=4,
        extra in proptest::collection::vec(any::<u8>(), 0..40),
        lsn in 1u64..u64::MAX,
    ) {
        let mut id = 0u32;
        let recs: Records = recs.into_iter().map(|(gap, r)| { id += gap; (id, r) }).collect();
        let m = meta(lsn, &recs, &extra);
        let bytes = write_to_vec(&m, &recs, target);
        prop_assert_eq!(&bytes, &spec_file(&m, &chunked(&recs, target)));
        let (_, read) = read_planted(&bytes, lsn, threads);
        prop_assert_eq!(read.result.unwrap(), m);
        prop_assert_eq!(read.records, recs);
    }
}

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect()
}

/// The two examples of docs/formats.md, octet for octet.
#[test]
fn the_documented_examples_are_what_the_writer_writes() {
    let empty = SnapshotMeta {
        lsn: 1,
        next_id: 1,
        ..SnapshotMeta::default()
    };
    let expected = hex(
        "4c 41 52 43 48 53 4e 50 01 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 31 f9 a8 84
         01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 83 a1 86 8b
         30 00 00 00 00 00 00 00 18 00 00 00 b3 0f 3a 1f 4c 41 52 43 48 45 4e 44",
    );
    assert_eq!(write_to_vec(&empty, &vec![], 1 << 20), expected);

    let one = SnapshotMeta {
        lsn: 7,
        next_id: 1,
        entry_count: 1,
        ..SnapshotMeta::default()
    };
    let expected = hex(
        "4c 41 52 43 48 53 4e 50 01 00 00 00 07 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 36 ec 3d 3e
         00 00 00 00 00 00 00 00 01 00 00 00 09 00 00 00 0a 00 00 00 9e 32 cb bf f1 d8 ca 0f
         90 00 00 00 00 01 00 00 00 61
         07 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00
         30 00 00 00 00 00 00 00 26 00 00 00 00 00 00 00 00 00 00 00 68 4a 45 df
         56 00 00 00 00 00 00 00 2c 00 00 00 3c b3 89 ab 4c 41 52 43 48 45 4e 44",
    );
    assert_eq!(write_to_vec(&one, &vec![(0, b"a".to_vec())], 1 << 20), expected);
}

// ---------------------------------------------------------------------------------------
// Corruption.

const PRISTINE_LSN: u64 = 0x1234;

/// A file of about 20 chunks and its records.
fn pristine() -> &'static (Vec<u8>, Records) {
    static FILE: OnceLock<(Vec<u8>, Records)> = OnceLock::new();
    FILE.get_or_init(|| {
        let mut rng = Rng(99);
        let recs: Records = (0..200u32)
            .map(|i| {
                let len = rng.below(200) as usize;
                (i * 2 + 1, rng.bytes(len))
            })
            .collect();
        let m = meta(PRISTINE_LSN, &recs, b"extra!");
        (write_to_vec(&m, &recs, 1024), recs)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("LARCH_SNAPSHOT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    /// Any one octet changed in any region is refused as corrupt (or, in the version field,
    /// as an unsupported version), naming the file; never a panic, never Ok, and nothing
    /// that is not in the file is delivered.
    #[test]
    fn every_single_octet_corruption_is_refused(
        region in 0usize..5,
        which in any::<proptest::sample::Index>(),
        at in any::<proptest::sample::Index>(),
        mask in 1u8..=255,
        threads in 1usize..=4,
    ) {
        let (bytes, recs) = pristine();
        let l = layout(bytes);
        prop_assert!(l.chunk_headers.len() >= 10);
        let range = match region {
            0 => l.header.clone(),
            1 => which.get(&l.chunk_headers).clone(),
            2 => which.get(&l.chunk_data).clone(),
            3 => l.footer.clone(),
            _ => l.trailer.clone(),
        };
        let offset = range.start + at.index(range.len());
        let s = storage();
        let path = dir().join(snapshot_name(PRISTINE_LSN));
        s.put_durable(&path, bytes);
        prop_assert!(s.corrupt(&path, offset, mask));
        let read = read_collect(&s, &path, threads);
        let verified = verify_snapshot(&s, &path);
        prop_assert!(verified.is_err());
        if (8..12).contains(&offset) {
            let unsupported = matches!(
                &read.result,
                Err(SnapshotError::UnsupportedVersion { path: p, .. }) if *p == path
            );
            prop_assert!(unsupported, "{:?}", read.result);
            prop_assert!(read.records.is_empty());
        } else {
            expect_corrupt(&path, &read, recs);
        }
        if region != 2 {
            // Damage outside chunk data is found before any chunk is delivered.
            prop_assert!(read.records.is_empty());
        }
    }
}

#[test]
fn every_truncation_and_any_appended_octet_is_refused() {
    let (bytes, recs) = pristine();
    for len in 0..bytes.len() {
        let (path, read) = read_planted(&bytes[..len], PRISTINE_LSN, 2);
        expect_corrupt(&path, &read, recs);
        assert!(read.records.is_empty(), "truncated at {len}: records delivered");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    let (path, read) = read_planted(&longer, PRISTINE_LSN, 1);
    assert_eq!(expect_corrupt(&path, &read, recs), Corruption::NoEndMarker);
}

#[test]
fn garbage_is_refused_without_panic() {
    let mut rng = Rng(5);
    for len in [0usize, 1, 7, 8, 47, 48, 100, 5000] {
        for prefix in [&b""[..], b"LARCHSNP", b"LARCHSNP\x01\x00\x00\x00"] {
            let mut b = prefix.to_vec();
            b.extend(rng.bytes(len));
            let (path, read) = read_planted(&b, 1, 1);
            assert!(read.result.is_err());
            if let Err(SnapshotError::Corrupt { path: p, .. }) = &read.result {
                assert_eq!(p, &path);
            }
        }
    }
}

/// Rewrites a chunk header field and fixes the header's CRC, so only the field lies.
fn set_chunk_field(b: &mut [u8], chunk_at: usize, field: usize, value: u32) {
    b[chunk_at + 4 * field..chunk_at + 4 * field + 4].copy_from_slice(&value.to_le_bytes());
    let c = crc(&b[chunk_at..chunk_at + 24]);
    b[chunk_at + 24..chunk_at + 28].copy_from_slice(&c);
}

/// Rewrites the footer's chunk count and fixes the footer CRC.
fn set_footer_u32(b: &mut [u8], at: usize, value: u32) {
    let l = layout(b);
    b[l.footer.start + at..l.footer.start + at + 4].copy_from_slice(&value.to_le_bytes());
    let end = l.footer.end - 4;
    let c = crc(&b[l.footer.start..end]);
    b[end..end + 4].copy_from_slice(&c);
}

#[test]
fn fields_that_lie_under_a_valid_checksum_are_refused_before_use() {
    let (bytes, recs) = pristine();
    let l = layout(bytes);
    let first = l.chunk_headers[0].start;
    let check = |b: &[u8], want: Expect| {
        for threads in [1, 3] {
            let (path, read) = read_planted(b, PRISTINE_LSN, threads);
            let problem = expect_corrupt(&path, &read, recs);
            assert!(want(&problem), "{problem:?}");
        }
    };

    // A huge uncompressed length must not be allocated.
    let mut b = bytes.clone();
    set_chunk_field(&mut b, first, 3, u32::MAX);
    check(&b, |p| matches!(p, Corruption::ChunkTooLarge { .. }));
    // An uncompressed length a little off: decompression disagrees.
    let mut b = bytes.clone();
    let raw = u32_at(&b, first + 12);
    set_chunk_field(&mut b, first, 3, raw + 1);
    check(&b, |p| matches!(p, Corruption::DecompressedLength { .. }));
    let mut b = bytes.clone();
    set_chunk_field(&mut b, first, 3, raw - 1);
    check(&b, |p| matches!(p, Corruption::Decompress(_)));
    // Impossible record counts.
    for count in [0, u32::MAX, 2] {
        let mut b = bytes.clone();
        set_chunk_field(&mut b, first, 2, count);
        check(&b, |p| matches!(p, Corruption::BadCount { .. }));
    }
    // A chunk header disagreeing with the directory.
    let mut b = bytes.clone();
    set_chunk_field(&mut b, first, 0, 0);
    check(&b, |p| matches!(p, Corruption::ChunkMismatch { .. }));
    // A huge chunk count in the footer.
    let mut b = bytes.clone();
    set_footer_u32(&mut b, 16, u32::MAX);
    check(&b, |p| matches!(p, Corruption::TooManyChunks { .. }));
    let mut b = bytes.clone();
    set_footer_u32(&mut b, 16, 3);
    check(&b, |p| matches!(p, Corruption::FooterLength { .. }));
    // Directory entries that overlap, leave a gap, run past the footer or go backwards.
    for (field, value) in [(0usize, 1u32), (8, 0), (8, 1 << 30), (12, 0)] {
        let mut b = bytes.clone();
        let entry = 20 + 20 * 3 + field;
        set_footer_u32(&mut b, entry, value);
        check(&b, |p| {
            matches!(
                p,
                Corruption::ChunkLayout { .. }
                    | Corruption::ChunkLength { .. }
                    | Corruption::IdsNotAscending { .. }
            )
        });
    }
    // A trailer pointing elsewhere.
    let mut b = bytes.clone();
    let t = l.trailer.start;
    b[t + 8..t + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let c = crc(&b[t..t + 12]);
    b[t + 12..t + 16].copy_from_slice(&c);
    check(&b, |p| matches!(p, Corruption::FooterBounds { .. }));
    // A huge extra length.
    let mut b = bytes.clone();
    b[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
    check(&b, |p| matches!(p, Corruption::ExtraTooLarge { .. }));
}

#[test]
fn chunk_contents_that_lie_under_valid_checksums_are_refused() {
    let recs: Records = (1..=6u32).map(|i| (i * 10, vec![i as u8; i as usize])).collect();
    let m = meta(5, &recs, b"");
    let ok = [raw_chunk(&recs[..3]), raw_chunk(&recs[3..])];
    let (_, read) = read_planted(&spec_file(&m, &ok), 5, 1);
    assert_eq!(read.records, recs, "the crafted file itself is valid");

    let cases: Vec<(Vec<RawChunk>, Expect)> = vec![
        // IDs not ascending inside a chunk (the header's first/last still match).
        (
            vec![
                RawChunk {
                    count: 3,
                    ..raw_chunk(&[recs[0].clone(), (35, vec![]), recs[2].clone()])
                },
                raw_chunk(&recs[3..]),
            ],
            |p| matches!(p, Corruption::IdsNotAscending { .. }),
        ),
        (
            vec![
                raw_chunk(&[recs[0].clone(), (5, vec![]), recs[2].clone()]),
                raw_chunk(&recs[3..]),
            ],
            |p| matches!(p, Corruption::IdsNotAscending { .. }),
        ),
        // Chunks whose ID ranges overlap.
        (vec![raw_chunk(&recs[..4]), raw_chunk(&recs[3..])], |p| {
            matches!(
                p,
                Corruption::IdsNotAscending { .. } | Corruption::BadCount { .. }
            )
        }),
        // Octets left after the last record.
        (
            vec![
                {
                    let mut raw = frames(&recs[..3]);
                    raw.push(0);
                    RawChunk {
                        raw_len: raw.len() as u32,
                        packed: lz4_flex::block::compress(&raw),
                        ..raw_chunk(&recs[..3])
                    }
                },
                raw_chunk(&recs[3..]),
            ],
            |p| matches!(p, Corruption::TrailingOctets { .. }),
        ),
        // A record length above the limit.
        (
            vec![
                {
                    let mut raw = frames(&recs[..3]);
                    raw[4..8].copy_from_slice(&(MAX_RECORD_LEN as u32 + 1).to_le_bytes());
                    RawChunk {
                        packed: lz4_flex::block::compress(&raw),
                        ..raw_chunk(&recs[..3])
                    }
                },
                raw_chunk(&recs[3..]),
            ],
            |p| matches!(p, Corruption::BadRecord { .. }),
        ),
        // Not LZ4 at all.
        (
            vec![
                RawChunk {
                    packed: vec![0xff; 40],
                    ..raw_chunk(&recs[..3])
                },
                raw_chunk(&recs[3..]),
            ],
            |p| matches!(p, Corruption::Decompress(_)),
        ),
        // No chunk although the header declares entries.
        (vec![], |p| matches!(p, Corruption::BadCount { .. })),
    ];
    for (i, (chunks, want)) in cases.into_iter().enumerate() {
        for threads in [1, 2] {
            let (path, read) = read_planted(&spec_file(&m, &chunks), 5, threads);
            let problem = expect_corrupt(&path, &read, &recs);
            assert!(want(&problem), "case {i}: {problem:?}");
        }
    }
    // An ID at or above the next ID.
    let low = SnapshotMeta {
        next_id: 60,
        ..m.clone()
    };
    let (path, read) = read_planted(&spec_file(&low, &ok), 5, 1);
    let problem = expect_corrupt(&path, &read, &recs);
    assert!(
        matches!(problem, Corruption::IdNotBelowNextId { id: 60, next_id: 60 }),
        "{problem:?}"
    );
}

#[test]
fn unknown_versions_and_misnamed_files_are_refused_clearly() {
    let (bytes, recs) = pristine();
    let mut b = bytes.clone();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    let header_len = layout(&b).header.end;
    let c = crc(&b[..header_len - 4]);
    b[header_len - 4..header_len].copy_from_slice(&c);
    let (path, read) = read_planted(&b, PRISTINE_LSN, 1);
    match read.result {
        Err(e @ SnapshotError::UnsupportedVersion { version: 2, .. }) => {
            assert!(e.to_string().contains("version 2"), "{e}");
            assert!(e.to_string().contains(&path.display().to_string()));
        }
        other => panic!("{other:?}"),
    }
    // The same octets under another snapshot's name: the LSN would be wrong.
    let (path, read) = read_planted(bytes, PRISTINE_LSN + 1, 1);
    let problem = expect_corrupt(&path, &read, recs);
    assert_eq!(
        problem,
        Corruption::NameLsnMismatch {
            name: PRISTINE_LSN + 1,
            header: PRISTINE_LSN
        }
    );
    // Under a name that is not a snapshot name (a copy to check), it reads.
    let s = storage();
    let copy = dir().join("copy-of-snapshot");
    s.put_durable(&copy, bytes);
    assert_eq!(read_collect(&s, &copy, 2).records, *recs);
}

#[test]
fn the_callbacks_error_is_carried_through() {
    let (bytes, _) = pristine();
    for threads in 1..=4 {
        let s = storage();
        let path = dir().join(snapshot_name(PRISTINE_LSN));
        s.put_durable(&path, bytes);
        let calls = Mutex::new(0);
        let r = read_snapshot(&s, &path, threads, |c: &mut ChunkRecords<'_>| {
            *calls.lock().unwrap() += 1;
            if c.chunk_index() == 3 {
                Err("entry does not decode")
            } else {
                Ok(())
            }
        });
        match r {
            Err(e @ SnapshotError::Callback { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("entry does not decode") && text.contains("snapshot-"),
                    "{text}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(*calls.lock().unwrap() >= 1);
    }
}

// ---------------------------------------------------------------------------------------
// Crashes, listing, cleanup, refusals.

fn fault_storage(seed: u64) -> FaultStorage {
    let s = FaultStorage::with_config(FaultConfig {
        seed,
        torn_writes: true,
        short_writes: true,
        ..FaultConfig::default()
    });
    s.create_dir_all(&dir()).unwrap();
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A power cut while the next snapshot is being written leaves no file with its name,
    /// and the previous snapshot intact and newest.
    #[test]
    fn a_crash_during_a_write_keeps_the_previous_snapshot(seed in any::<u64>(), crash_at in 0usize..300) {
        let s = fault_storage(seed);
        let old = records(seed, 100);
        let small = WriteOptions {
            chunk_target: 512,
            ..WriteOptions::default()
        };
        let info = write_snapshot_with(&s, &dir(), &meta(10, &old, b"a"), old.clone(), &small).unwrap();
        let new = records(seed ^ 1, 300);
        let crasher = s.clone();
        let feed = new.clone().into_iter().enumerate().map(move |(i, r)| {
            if i == crash_at {
                crasher.crash();
            }
            r
        });
        let r = write_snapshot_with(&s, &dir(), &meta(20, &new, b"b"), feed, &small);
        prop_assert!(r.is_err());
        s.crash();
        prop_assert_eq!(list_snapshots(&s, &dir()).unwrap(), vec![(10, info.path.clone())]);
        let read = read_collect(&s, &info.path, 2);
        prop_assert_eq!(read.result.unwrap(), meta(10, &old, b"a"));
        prop_assert_eq!(read.records, old);
        remove_stale(&s, &dir(), 2).unwrap();
        prop_assert_eq!(s.list(&dir()).unwrap(), vec![snapshot_name(10)]);
    }
}

#[test]
fn a_failed_fsync_publishes_nothing_and_a_finished_write_survives_a_crash() {
    let s = fault_storage(3);
    let a = records(1, 500);
    let ia = write_snapshot(&s, &dir(), &meta(10, &a, b""), a.clone()).unwrap();
    s.crash();
    assert_eq!(read_collect(&s, &ia.path, 2).records, a, "durable once written");

    let b = records(2, 500);
    s.set_fail_syncs(true);
    let r = write_snapshot(&s, &dir(), &meta(20, &b, b""), b.clone());
    assert!(matches!(r, Err(SnapshotError::Io { op: "sync", .. })), "{r:?}");
    assert_eq!(
        s.list(&dir()).unwrap(),
        vec![snapshot_name(10)],
        "nothing published, temp removed"
    );
    s.crash();
    assert_eq!(list_snapshots(&s, &dir()).unwrap(), vec![(10, ia.path.clone())]);
    assert_eq!(read_collect(&s, &ia.path, 1).records, a);

    // A stale temporary file (an earlier attempt at the same LSN) is replaced, not extended.
    s.put_durable(&dir().join(temp_name(20)), b"LARCHSNP stale half-written octets");
    let ib = write_snapshot(&s, &dir(), &meta(20, &b, b""), b.clone()).unwrap();
    s.crash();
    assert_eq!(read_collect(&s, &ib.path, 3).records, b);
    assert_eq!(
        list_snapshots(&s, &dir()).unwrap(),
        vec![(20, ib.path.clone()), (10, ia.path.clone())]
    );
}

#[test]
fn listing_and_removing_stale_snapshots() {
    let s = storage();
    let names = [
        snapshot_name(1),
        snapshot_name(5),
        snapshot_name(3),
        snapshot_name(0x10),
        temp_name(7),
        temp_name(0x11),
        "snapshot-0000000000000002.snap.bak".to_string(),
        "snapshot-000000000000000A.snap".to_string(),
        "snapshot-c.snap".to_string(),
        "wal-0000000000000001.log".to_string(),
    ];
    for n in &names {
        s.put_durable(&dir().join(n), b"whatever");
    }
    let p = |lsn| dir().join(snapshot_name(lsn));
    assert_eq!(
        list_snapshots(&s, &dir()).unwrap(),
        vec![(0x10, p(0x10)), (5, p(5)), (3, p(3)), (1, p(1))]
    );
    let syncs = s.dir_sync_count();
    let removed: BTreeSet<PathBuf> = remove_stale(&s, &dir(), 2).unwrap().into_iter().collect();
    let expected: BTreeSet<PathBuf> = [p(3), p(1), dir().join(temp_name(7)), dir().join(temp_name(0x11))]
        .into_iter()
        .collect();
    assert_eq!(removed, expected);
    assert_eq!(s.dir_sync_count(), syncs + 1);
    s.crash();
    let mut left = s.list(&dir()).unwrap();
    left.sort();
    let mut want: Vec<String> = names[6..].to_vec();
    want.extend([snapshot_name(5), snapshot_name(0x10)]);
    want.sort();
    assert_eq!(left, want, "removals are durable, unrelated files untouched");
    assert_eq!(remove_stale(&s, &dir(), 2).unwrap(), Vec::<PathBuf>::new());
    assert_eq!(s.dir_sync_count(), syncs + 1, "nothing removed, no fsync");
    assert_eq!(remove_stale(&s, &dir(), 0).unwrap().len(), 2);
    assert_eq!(list_snapshots(&s, &dir()).unwrap(), vec![]);
}

#[test]
fn the_writer_refuses_bad_input_and_leaves_nothing() {
    let s = storage();
    let recs: Records = vec![(1, b"a".to_vec()), (2, b"b".to_vec()), (3, b"c".to_vec())];
    let m = meta(9, &recs, b"");
    let attempt = |m: &SnapshotMeta, r: Records| {
        let result = write_snapshot(&s, &dir(), m, r);
        assert_eq!(s.list(&dir()).unwrap(), Vec::<String>::new(), "{result:?}");
        result.unwrap_err()
    };
    let e = attempt(&m, vec![(1, vec![]), (1, vec![]), (3, vec![])]);
    assert!(
        matches!(
            e,
            SnapshotError::NotAscending {
                previous: 1,
                found: 1
            }
        ),
        "{e:?}"
    );
    let e = attempt(&m, vec![(2, vec![]), (1, vec![]), (3, vec![])]);
    assert!(
        matches!(
            e,
            SnapshotError::NotAscending {
                previous: 2,
                found: 1
            }
        ),
        "{e:?}"
    );
    let e = attempt(&m, recs[..2].to_vec());
    assert!(
        matches!(
            e,
            SnapshotError::CountMismatch {
                declared: 3,
                given: 2
            }
        ),
        "{e:?}"
    );
    let e = attempt(&meta(9, &recs[..2].to_vec(), b""), recs.clone());
    assert!(
        matches!(e, SnapshotError::IdNotBelowNextId { id: 3, next_id: 3 }),
        "{e:?}"
    );
    let wide = SnapshotMeta {
        next_id: 100,
        entry_count: 2,
        ..m.clone()
    };
    let e = attempt(&wide, recs.clone());
    assert!(
        matches!(
            e,
            SnapshotError::CountMismatch {
                declared: 2,
                given: 3
            }
        ),
        "{e:?}"
    );
    let e = attempt(
        &SnapshotMeta {
            extra: vec![0; MAX_EXTRA_LEN + 1],
            ..m.clone()
        },
        recs.clone(),
    );
    assert!(matches!(e, SnapshotError::ExtraTooLarge { .. }), "{e:?}");
    let e = attempt(
        &SnapshotMeta {
            entry_count: 1,
            ..m.clone()
        },
        vec![(1, vec![0; MAX_RECORD_LEN + 1])],
    );
    assert!(matches!(e, SnapshotError::RecordTooLarge { id: 1, .. }), "{e:?}");
    // A record of exactly the limit is accepted and read back.
    let big: Records = vec![(1, vec![7; MAX_RECORD_LEN]), (2, b"after".to_vec())];
    let info = write_snapshot(&s, &dir(), &meta(9, &big, b""), big.clone()).unwrap();
    assert_eq!(info.chunks, 2);
    assert_eq!(read_collect(&s, &info.path, 2).records, big);
}
