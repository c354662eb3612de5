//! CPU time of this process (`getrusage`) and of another process (`/proc/PID/stat`), and
//! the resident set size of a process (`/proc/PID/status`), for "CPU µs per operation"
//! and "RSS per entry".

use std::io;
use std::time::Duration;

/// User and system CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel on the process's behalf.
    pub system: Duration,
}

impl CpuTimes {
    /// User plus system.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }

    /// The time spent between `earlier` and `self` (saturating).
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// This process's CPU time, all threads (`getrusage(RUSAGE_SELF)`, microsecond precision).
pub fn own() -> io::Result<CpuTimes> {
    use nix::sys::resource::{getrusage, UsageWho};
    use nix::sys::time::TimeValLike;
    let u = getrusage(UsageWho::RUSAGE_SELF).map_err(io::Error::from)?;
    let micros = |t: nix::sys::time::TimeVal| Duration::from_micros(t.num_microseconds().max(0) as u64);
    Ok(CpuTimes {
        user: micros(u.user_time()),
        system: micros(u.system_time()),
    })
}

/// Clock ticks per second for `/proc` times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
pub fn ticks_per_second() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

/// The CPU time of process `pid`, all threads, from `/proc/PID/stat` (clock-tick precision,
/// 10 ms on Linux: measure over seconds).
pub fn of_pid(pid: u32) -> io::Result<CpuTimes> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_proc_stat(&text, ticks_per_second())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("unexpected /proc/{pid}/stat")))
}

/// Reads `utime` and `stime` (fields 14 and 15) from the text of a `/proc/PID/stat`. The
/// command name (field 2) may hold spaces and parentheses, so fields are counted from the
/// last `)`.
///
/// ```
/// use larch_bench::cpu::parse_proc_stat;
/// let t = parse_proc_stat("42 (sl apd)) S 1 42 42 0 -1 4194560 5 0 0 0 250 75 0 0 20 0 4 0", 100).unwrap();
/// assert_eq!(t.user.as_millis(), 2500);
/// assert_eq!(t.system.as_millis(), 750);
/// ```
pub fn parse_proc_stat(text: &str, ticks_per_second: u64) -> Option<CpuTimes> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name: field 3 (state) is index 0, so utime (14) is index 11.
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let tick = |t: u64| Duration::from_nanos(t.saturating_mul(1_000_000_000) / ticks_per_second.max(1));
    Some(CpuTimes {
        user: tick(utime),
        system: tick(stime),
    })
}

/// CPU time of the whole machine from `/proc/stat`: all CPUs together, and each CPU.
///
/// Busy time includes interrupt and softirq time, which Linux charges to no process: on
/// loopback most of the TCP stack runs there, so a server pinned to one CPU can keep that
/// CPU fully busy while its own process time stays below 100%.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineTimes {
    /// Time any CPU spent running something: user, nice, system, irq, softirq.
    pub busy: Duration,
    /// Time the hypervisor ran something else while a virtual CPU wanted to run.
    pub steal: Duration,
    /// Busy time of each CPU (`cpu0`, `cpu1`, ...), in order.
    pub per_cpu_busy: Vec<Duration>,
}

impl MachineTimes {
    /// The time spent between `earlier` and `self` (saturating).
    pub fn since(&self, earlier: &MachineTimes) -> MachineTimes {
        MachineTimes {
            busy: self.busy.saturating_sub(earlier.busy),
            steal: self.steal.saturating_sub(earlier.steal),
            per_cpu_busy: self
                .per_cpu_busy
                .iter()
                .zip(
                    earlier
                        .per_cpu_busy
                        .iter()
                        .chain(std::iter::repeat(&Duration::ZERO)),
                )
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        }
    }
}

/// The machine's CPU time so far (`/proc/stat`).
pub fn machine() -> io::Result<MachineTimes> {
    let text = std::fs::read_to_string("/proc/stat")?;
    parse_machine_stat(&text, ticks_per_second())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc/stat"))
}

/// Reads the `cpu` and `cpuN` lines of a `/proc/stat` text.
///
/// ```
/// use larch_bench::cpu::parse_machine_stat;
/// let text = "cpu  100 5 20 900 3 1 2 7 0 0\ncpu0 60 5 10 450 1 1 1 3 0 0\ncpu1 40 0 10 450 2 0 1 4 0 0\nintr 1\n";
/// let t = parse_machine_stat(text, 100).unwrap();
/// assert_eq!(t.busy.as_millis(), 1280); // 100 + 5 + 20 + 1 + 2 ticks
/// assert_eq!(t.steal.as_millis(), 70);
/// assert_eq!(t.per_cpu_busy.iter().map(|d| d.as_millis()).collect::<Vec<_>>(), [770, 510]);
/// ```
pub fn parse_machine_stat(text: &str, ticks_per_second: u64) -> Option<MachineTimes> {
    let tick = |t: u64| Duration::from_nanos(t.saturating_mul(1_000_000_000) / ticks_per_second.max(1));
    let fields = |line: &str| -> Option<(Duration, Duration)> {
        let f: Vec<u64> = line
            .split_ascii_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        (f.len() >= 8).then(|| (tick(f[0] + f[1] + f[2] + f[5] + f[6]), tick(f[7])))
    };
    let mut lines = text.lines();
    let (busy, steal) = fields(lines.find(|l| l.starts_with("cpu "))?)?;
    let per_cpu_busy = lines
        .take_while(|l| l.starts_with("cpu"))
        .filter_map(|l| fields(l).map(|f| f.0))
        .collect();
    Some(MachineTimes {
        busy,
        steal,
        per_cpu_busy,
    })
}

/// The resident set size of process `pid` in KiB (`VmRSS` of `/proc/PID/status`).
pub fn rss_kib(pid: u32) -> io::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_vm_rss(&text).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no VmRSS line"))
}

/// The `VmRSS:` value (KiB) of a `/proc/PID/status` text.
pub fn parse_vm_rss(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    line["VmRSS:".len()..]
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_grows_with_work() {
        let before = own().unwrap();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let spent = own().unwrap().since(&before);
        assert!(spent.total() >= Duration::from_millis(30), "{spent:?}");
    }

    #[test]
    fn proc_files_of_this_process_parse() {
        let me = std::process::id();
        let t = of_pid(me).unwrap();
        assert!(t.total() <= own().unwrap().total() + Duration::from_millis(20));
        assert!(rss_kib(me).unwrap() > 100);
        assert_eq!(parse_vm_rss("Name:\tx\nVmRSS:\t  1234 kB\n"), Some(1234));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        assert_eq!(parse_proc_stat("1 (x) S 1 2", 100), None);
        assert!(machine().unwrap().busy > Duration::ZERO);
        assert_eq!(parse_machine_stat("cpu  1 2 3\n", 100), None);
        assert!(of_pid(u32::MAX).is_err());
    }
}
