//! What one append-and-sync of a log costs on this machine's disk, with the file appended
//! to plainly and with space reserved ahead of the writes (`Storage::open_append_reserving`,
//! as the write-ahead log's segments do): wall time and CPU time per sync.
//!
//! ```text
//! cargo run --release -p larch-store --example sync_cost -- [DIR] [SYNCS] [ROUNDS]
//! ```
//!
//! DIR (default: the system's temporary directory) should be on the disk the data
//! directory will use. Each round writes SYNCS (default 3,000) records of 600 octets, each
//! followed by a sync, to a fresh file in each mode, the modes taking turns. CPU time is
//! the process's user and system time from `/proc/self/stat` (Linux; in clock ticks, so
//! rounds of a few hundred milliseconds are needed); in a VM it includes the time the
//! virtual CPU spends on the disk's flush.

use std::path::{Path, PathBuf};
use std::time::Instant;

use larch_store::storage::{FsStorage, Storage};

const RECORD: usize = 600;
const RESERVE: u64 = 4 << 20;

/// The process's user plus system CPU time, in seconds (0 where `/proc` is missing).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start after its ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn run(dir: &Path, reserve: bool, syncs: usize) -> (f64, f64) {
    let path = dir.join(if reserve {
        "sync-cost-reserved"
    } else {
        "sync-cost-plain"
    });
    let _ = std::fs::remove_file(&path);
    let mut file = if reserve {
        FsStorage.open_append_reserving(&path, RESERVE)
    } else {
        FsStorage.open_append(&path)
    }
    .expect("open the file");
    let record = vec![0x5a; RECORD];
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    for _ in 0..syncs {
        file.write_all(&record).expect("write");
        file.sync().expect("sync");
    }
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    drop(file);
    let _ = std::fs::remove_file(&path);
    let per = |s: f64| s * 1e6 / syncs as f64;
    (per(wall), per(cpu))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().map_or_else(std::env::temp_dir, PathBuf::from);
    let syncs = args.next().and_then(|a| a.parse().ok()).unwrap_or(3_000);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    println!("| round | plain: wall µs / CPU µs per sync | reserved: wall µs / CPU µs per sync | reserved/plain wall |");
    println!("| --- | --- | --- | ---: |");
    for round in 1..=rounds {
        let (pw, pc) = run(&dir, false, syncs);
        let (rw, rc) = run(&dir, true, syncs);
        println!(
            "| {round} | {pw:.1} / {pc:.1} | {rw:.1} / {rc:.1} | {:.2} |",
            rw / pw
        );
    }
}
