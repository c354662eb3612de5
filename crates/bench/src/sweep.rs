//! `--sweep PARAM=v1,v2,...`: one run per value, a table, and an SVG chart of throughput
//! and p99 latency against the swept value (written by hand: two y axes, one polyline
//! each, categorical x axis since sweeps are usually powers of two).

use std::fmt::Write as _;

use crate::client::BenchConfig;
use crate::report::{fmt_rate, fmt_us, Report};

/// What a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepParam {
    /// Number of connections.
    Connections,
    /// Operations in flight per connection.
    Depth,
    /// Target rate (open loop), operations per second.
    Rate,
    /// Client threads.
    Threads,
}

impl SweepParam {
    /// The parameter's name.
    pub fn name(self) -> &'static str {
        match self {
            SweepParam::Connections => "connections",
            SweepParam::Depth => "depth",
            SweepParam::Rate => "rate",
            SweepParam::Threads => "threads",
        }
    }
}

/// A parsed `--sweep` argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The parameter.
    pub param: SweepParam,
    /// Its values, in the order given.
    pub values: Vec<f64>,
}

impl Sweep {
    /// Parses `connections=1,2,4` (also `depth=`, `rate=`, `threads=`).
    ///
    /// ```
    /// use larch_bench::sweep::{Sweep, SweepParam};
    /// let s = Sweep::parse("connections=1,2,4").unwrap();
    /// assert_eq!(s.param, SweepParam::Connections);
    /// assert_eq!(s.values, vec![1.0, 2.0, 4.0]);
    /// assert!(Sweep::parse("depth=0").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Sweep, String> {
        let (name, list) = s
            .split_once('=')
            .ok_or_else(|| format!("--sweep `{s}`: expected PARAM=v1,v2,..."))?;
        let param = match name.trim() {
            "connections" | "conns" | "c" => SweepParam::Connections,
            "depth" | "d" => SweepParam::Depth,
            "rate" | "r" => SweepParam::Rate,
            "threads" | "t" => SweepParam::Threads,
            other => {
                return Err(format!(
                    "--sweep: unknown parameter `{other}` (connections, depth, rate, threads)"
                ))
            }
        };
        let mut values = Vec::new();
        for v in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            let x: f64 = v.parse().map_err(|_| format!("--sweep: `{v}` is not a number"))?;
            let integral = param != SweepParam::Rate;
            if !(x.is_finite() && x > 0.0) || (integral && x.fract() != 0.0) {
                return Err(format!("--sweep: `{v}` is not a valid {}", param.name()));
            }
            values.push(x);
        }
        if values.is_empty() {
            return Err("--sweep: no values".into());
        }
        Ok(Sweep { param, values })
    }

    /// The configuration for one value.
    pub fn apply(&self, base: &BenchConfig, value: f64) -> BenchConfig {
        let mut c = base.clone();
        match self.param {
            SweepParam::Connections => c.connections = value as usize,
            SweepParam::Depth => c.depth = value as usize,
            SweepParam::Rate => c.rate = Some(value),
            SweepParam::Threads => c.threads = value as usize,
        }
        c
    }
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as u64)
    } else {
        format!("{v}")
    }
}

/// The sweep as a text table.
pub fn table(param: SweepParam, points: &[(f64, Report)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>11} {:>12} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>7}",
        param.name(),
        "ops/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "errors",
        "cli cores",
        "srv cores",
        "srv µs/op"
    );
    for (v, r) in points {
        let (srv_cores, srv_us) = match &r.server_cpu {
            Some(c) => (format!("{:.2}", c.cores), format!("{:.1}", c.us_per_op)),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "{:>11} {:>12} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9.2} {:>9} {:>7}",
            fmt_value(*v),
            fmt_rate(r.ops_per_sec),
            fmt_us(r.latency.p50_us),
            fmt_us(r.latency.p99_us),
            fmt_us(r.latency.p999_us),
            fmt_us(r.latency.max_us),
            r.errors,
            r.client_cpu.cores,
            srv_cores,
            srv_us
        );
    }
    s
}

/// A "nice" axis maximum and step (1, 2 or 5 times a power of ten) for data up to `max`.
pub fn nice_axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The sweep as an SVG chart: throughput (left axis, solid) and p99 latency (right axis,
/// dashed) against the swept value.
pub fn svg(param: SweepParam, points: &[(f64, Report)], title: &str) -> String {
    const W: f64 = 760.0;
    const H: f64 = 440.0;
    let (left, right, top, bottom) = (90.0, 90.0, 50.0, 60.0);
    let (pw, ph) = (W - left - right, H - top - bottom);
    let n = points.len().max(1);
    let x_at = |i: usize| left + pw * (i as f64 + 0.5) / n as f64;
    let (tmax, tstep) = nice_axis(points.iter().map(|p| p.1.ops_per_sec).fold(0.0, f64::max));
    let (lmax, lstep) = nice_axis(points.iter().map(|p| p.1.latency.p99_us).fold(0.0, f64::max));
    let ty = |v: f64| top + ph * (1.0 - v / tmax);
    let ly = |v: f64| top + ph * (1.0 - v / lmax);
    let (blue, orange) = ("#1f77b4", "#d95f02");
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2.0,
        esc(title)
    );
    // Grid and left axis (throughput).
    let mut v = 0.0;
    while v <= tmax + tstep * 1e-9 {
        let y = ty(v);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="{blue}">{}</text>"##,
            left + pw,
            left - 6.0,
            y + 4.0,
            fmt_rate(v)
        );
        v += tstep;
    }
    // Right axis (p99).
    let mut v = 0.0;
    while v <= lmax + lstep * 1e-9 {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{orange}">{}</text>"#,
            left + pw + 6.0,
            ly(v) + 4.0,
            fmt_us(v)
        );
        v += lstep;
    }
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(22,{:.1}) rotate(-90)" text-anchor="middle" fill="{blue}">throughput (ops/s)</text>"#,
        top + ph / 2.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate({:.1},{:.1}) rotate(90)" text-anchor="middle" fill="{orange}">p99 latency (µs)</text>"#,
        W - 22.0,
        top + ph / 2.0
    );
    // X labels.
    for (i, (val, _)) in points.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x_at(i),
            top + ph + 18.0,
            fmt_value(*val)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        H - 14.0,
        param.name()
    );
    // Series.
    let series = |s: &mut String, color: &str, dash: &str, pts: Vec<(f64, f64)>, square: bool| {
        let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
            path.join(" ")
        );
        for (x, y) in pts {
            if square {
                let _ = writeln!(
                    s,
                    r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{color}"/>"#,
                    x - 4.0,
                    y - 4.0
                );
            } else {
                let _ = writeln!(s, r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{color}"/>"#);
            }
        }
    };
    let tp: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| (x_at(i), ty(p.1.ops_per_sec)))
        .collect();
    let lp: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| (x_at(i), ly(p.1.latency.p99_us)))
        .collect();
    series(&mut s, blue, "", tp, false);
    series(&mut s, orange, r#" stroke-dasharray="6 4""#, lp, true);
    // Legend.
    let lx = left + 12.0;
    let _ = writeln!(
        s,
        r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{blue}" stroke-width="2"/><text x="{}" y="{}">throughput</text>"#,
        lx + 24.0,
        lx + 30.0,
        top + 18.0,
        y = top + 14.0
    );
    let _ = writeln!(
        s,
        r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{orange}" stroke-width="2" stroke-dasharray="6 4"/><text x="{}" y="{}">p99 latency</text>"#,
        lx + 24.0,
        lx + 30.0,
        top + 36.0,
        y = top + 32.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuTimes;
    use crate::report::{OpKind, RunShape, Stats};
    use std::time::Duration;

    fn report(rate_per_sec: u64, p99_us: u64) -> Report {
        let mut s = Stats::new();
        for i in 0..rate_per_sec {
            let us = if i * 100 >= rate_per_sec * 99 {
                p99_us
            } else {
                p99_us / 2
            };
            s.record(
                OpKind::Search,
                Duration::from_micros(us),
                larch_proto::ResultCode::SUCCESS,
                1,
            );
        }
        let shape = RunShape {
            workload: "search".into(),
            url: "ldap://x".into(),
            transport: crate::tls::Transport::Plain,
            tls: None,
            connections: 1,
            depth: 1,
            threads: 1,
            target_rate: None,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
        };
        Report::build(shape, &s, CpuTimes::default(), None, None, vec![])
    }

    #[test]
    fn parse_and_apply() {
        let s = Sweep::parse("depth=1, 8,64").unwrap();
        assert_eq!(s.values, vec![1.0, 8.0, 64.0]);
        let base = BenchConfig::new(
            crate::url::LdapUrl::parse("ldap://h").unwrap(),
            crate::client::Workload::Search,
        );
        assert_eq!(s.apply(&base, 8.0).depth, 8);
        assert_eq!(
            Sweep::parse("rate=1500.5").unwrap().apply(&base, 1500.5).rate,
            Some(1500.5)
        );
        assert_eq!(Sweep::parse("threads=2").unwrap().apply(&base, 2.0).threads, 2);
        for bad in [
            "connections",
            "foo=1",
            "connections=",
            "connections=1.5",
            "connections=-1",
            "rate=x",
        ] {
            assert!(Sweep::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(0.0), (1.0, 0.2));
        assert_eq!(nice_axis(42_000.0), (50_000.0, 10_000.0));
        assert_eq!(nice_axis(97.0), (100.0, 20.0));
        let (m, s) = nice_axis(12_345.0);
        assert!(m >= 12_345.0 && s > 0.0 && (m / s) <= 10.0);
    }

    #[test]
    fn table_and_chart_hold_every_point() {
        let points = vec![
            (1.0, report(1000, 200)),
            (2.0, report(1800, 300)),
            (4.0, report(2000, 800)),
        ];
        let t = table(SweepParam::Connections, &points);
        assert_eq!(t.lines().count(), 4);
        assert!(t.contains("1,800"), "{t}");
        let svg = svg(SweepParam::Connections, &points, "search <sweep>");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("search &lt;sweep&gt;"));
        // The largest throughput sits on the top grid line or below it, never above.
        let ys: Vec<f64> = svg
            .lines()
            .filter(|l| l.starts_with("<circle"))
            .map(|l| {
                l.split("cy=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(ys.iter().all(|&y| (50.0..=380.0).contains(&y)), "{ys:?}");
        assert!(
            ys[2] < ys[1] && ys[1] < ys[0],
            "higher throughput is drawn higher: {ys:?}"
        );
    }
}
