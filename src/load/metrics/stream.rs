//! The interval stream of `load --out ndjson=FILE`: while the run goes, each
//! closed interval appends one JSON object per line, flushed at once, so
//! `tail -f`, a log shipper or a dashboard sees the run live.
//!
//! Lines (`type` first; times in Unix seconds and milliseconds):
//!
//! - `{"type":"interval","phase","t_s","unix","interval_s","round_trips","started","requests","errors","rps","requests_per_s","error_rate_pct","p50_ms","p99_ms"}`:
//!   the interval as a whole: `round_trips` finished in it (with their
//!   end-to-end latency), `started` begun in it (the load offered).
//! - `{"type":"metric","phase","t_s","unix","interval_s","metric","count","min_ms","mean_ms","p50_ms","p90_ms","p99_ms","max_ms"}`:
//!   one per histogram that got values in the interval, named by its
//!   `.hlog` tag (`leg:tools/call #1`, `e2e:<scenario>`,
//!   `out:<scenario>:<outcome>`, `gap:<leg>`, `state:<leg>`; per instance
//!   behind a balancer `inst:<instance>` and `insterr:<instance>`, and
//!   `retry:crossed` / `retry:same` for state retries).
//!
//! `phase` is the plan name, or the capacity step.

use super::set::IntervalStats;
use serde_json::json;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A shared, line-flushed writer of interval lines.
#[derive(Debug, Clone)]
pub struct IntervalStream {
    path: PathBuf,
    out: Arc<Mutex<Sink>>,
}

#[derive(Debug)]
struct Sink {
    file: BufWriter<File>,
    /// The first write error, reported once.
    failed: bool,
}

impl IntervalStream {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> std::io::Result<IntervalStream> {
        let file = File::create(path)?;
        Ok(IntervalStream {
            path: path.to_owned(),
            out: Arc::new(Mutex::new(Sink {
                file: BufWriter::new(file),
                failed: false,
            })),
        })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one closed interval: its overall line, then one line per
    /// histogram (sorted by name, from [`IntervalStats::metrics`]), and
    /// flushes.
    pub fn write_interval(&self, phase: &str, started_unix: f64, stats: &IntervalStats) {
        let unix = started_unix + stats.start_s;
        let per_s = |n: u64| {
            if stats.len_s > 0.0 {
                n as f64 / stats.len_s
            } else {
                0.0
            }
        };
        let mut lines = vec![json!({
            "type": "interval",
            "phase": phase,
            "t_s": stats.start_s,
            "unix": unix,
            "interval_s": stats.len_s,
            "round_trips": stats.round_trips,
            "started": stats.started,
            "requests": stats.requests,
            "errors": stats.errors,
            "rps": per_s(stats.round_trips),
            "requests_per_s": per_s(stats.requests),
            "error_rate_pct": if stats.round_trips > 0 {
                stats.errors as f64 * 100.0 / stats.round_trips as f64
            } else {
                0.0
            },
            "p50_ms": stats.p50_ms,
            "p99_ms": stats.p99_ms,
        })];
        for (name, h) in &stats.metrics {
            lines.push(json!({
                "type": "metric",
                "phase": phase,
                "t_s": stats.start_s,
                "unix": unix,
                "interval_s": stats.len_s,
                "metric": name,
                "count": h.count,
                "min_ms": h.min_ms,
                "mean_ms": h.mean_ms,
                "p50_ms": h.p50_ms,
                "p90_ms": h.p90_ms,
                "p99_ms": h.p99_ms,
                "max_ms": h.max_ms,
            }));
        }
        let Ok(mut sink) = self.out.lock() else {
            return;
        };
        let mut result = Ok(());
        for line in &lines {
            result = result.and_then(|()| writeln!(sink.file, "{line}"));
        }
        result = result.and_then(|()| sink.file.flush());
        if let Err(e) = result
            && !sink.failed
        {
            sink.failed = true;
            eprintln!(
                "elicitkit: warning: cannot write the interval stream {}: {e} (the report is unaffected)",
                self.path.display()
            );
        }
    }
}
