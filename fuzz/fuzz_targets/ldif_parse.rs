//! Reads arbitrary octets as LDIF, with small limits so every run is bounded.
//! Properties checked: no panic; every record read is written by `LdifWriter` and read back
//! equal; the writer's lines are ASCII and at most 76 columns.
#![no_main]

use larch_store::ldif::{LdifLimits, LdifReader, LdifRecord, LdifWriter};
use libfuzzer_sys::fuzz_target;

const LIMITS: LdifLimits = LdifLimits {
    max_line_bytes: 4096,
    max_record_bytes: 16 * 1024,
    max_values_per_record: 256,
    max_url_file_bytes: 0,
};

fuzz_target!(|data: &[u8]| {
    // File URLs stay refused: a fuzzer must not read the disk.
    let mut records: Vec<LdifRecord> = Vec::new();
    for record in LdifReader::new(data).with_limits(LIMITS) {
        match record {
            Ok(record) => records.push(record),
            Err(_) => break,
        }
    }
    let mut writer = LdifWriter::new(Vec::new());
    for record in &records {
        writer
            .write_record(record)
            .unwrap_or_else(|e| panic!("{record:?}: {e}"));
    }
    let text = writer.into_inner();
    assert!(text.split(|&b| b == b'\n').all(|l| l.len() <= 76 && l.is_ascii()));
    // Base64 makes text up to a third larger, so the limits are relaxed for the re-read.
    let again: Vec<LdifRecord> = LdifReader::new(&text[..])
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&text)));
    assert_eq!(again, records);
});
