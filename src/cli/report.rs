//! `elicitkit report`: work with load-run results.
//!
//! - `report merge A.hlog B.hlog … --out DIR`: merges HDR interval logs from
//!   several runs (processes or machines) exactly, aligned on their
//!   `StartTime`, and writes `summary.json`, `summary.md`, `report.html` and
//!   `merged.hlog`; exit 1 when a `--threshold` fails. A log given twice
//!   (same file, or the same bytes) is refused; logs whose runs do not
//!   overlap in time get a warning, since their rate then spreads over the
//!   gap. Segments of a distributed run (`load --segment I/N`, recorded in
//!   each log's header) are checked: logs of different N and a segment
//!   given twice get a warning, segments of N not all present a note.
//! - `report capacity [N=]DIR …`: knees of `load --capacity` runs at
//!   several instance counts → `capacity.md`, `capacity.json` (see
//!   [`crate::load::scaling`]).
//! - `report render DIR`: re-renders `summary.md` and `report.html` from a
//!   run folder's `summary.json`.

use super::{exit, usage_error};
use crate::load::hlog::{self, HlogBuffer};
use crate::load::metrics::MetricSet;
use crate::load::segment;
use crate::load::summarize::{self, RunInfo};
use crate::load::threshold::Threshold;
use crate::report::{self, Summary};
use clap::{Args as ClapArgs, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

/// Arguments of `elicitkit report`.
#[derive(Debug, ClapArgs)]
#[command(after_help = "Examples:
  elicitkit report merge a/run.hlog b/run.hlog --out reports/merged
  elicitkit report merge reports/*/run.hlog --threshold 'p99(e2e) < 50ms' --threshold 'error_rate < 1%'
  elicitkit report render reports/2026-12-01T10-00-00-smoke
  elicitkit report capacity 1=reports/knee-1 2=reports/knee-2 --target-rate 20000

Exit codes: 0 done (merge: every --threshold held); 1 a threshold failed; 2 usage error
(unreadable log, a log given twice).")]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: ReportCommand,
}

/// `report` subcommands.
#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge HDR interval logs (.hlog) from several runs into one report.
    Merge {
        /// The logs.
        #[arg(required = true, value_name = "FILE.hlog")]
        logs: Vec<PathBuf>,
        /// Output folder.
        #[arg(long, value_name = "DIR", default_value = "reports/merged")]
        out: PathBuf,
        /// Timeline bucket width.
        #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
        interval: Duration,
        /// Threshold to check on the merged data (repeatable).
        #[arg(long = "threshold", value_name = "EXPR")]
        thresholds: Vec<String>,
    },
    /// Capacity across instance counts: knees of `load --capacity` runs at
    /// 1, 2, … instances, scaling efficiency, and the instances a target
    /// rate needs, projected from the measured curve.
    Capacity(super::capacity::ReportArgs),
    /// Re-render summary.md and report.html from a run folder's summary.json.
    Render {
        /// Run folder (or its summary.json).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// Runs `elicitkit report`.
pub fn run(args: Args) -> ExitCode {
    match args.command {
        ReportCommand::Merge {
            logs,
            out,
            interval,
            thresholds,
        } => merge(&logs, &out, interval, &thresholds),
        ReportCommand::Render { dir } => render(dir),
        ReportCommand::Capacity(a) => super::capacity::run_report(a),
    }
}

fn merge(logs: &[PathBuf], out: &PathBuf, interval: Duration, exprs: &[String]) -> ExitCode {
    let mut thresholds = Vec::new();
    for e in exprs {
        match Threshold::parse(e) {
            Ok(t) => thresholds.push(t),
            Err(e) => return usage_error(format!("--threshold: {e}")),
        }
    }
    let texts = match read_distinct(logs) {
        Ok(t) => t,
        Err(e) => return usage_error(e),
    };
    let mut intervals = Vec::new();
    let mut spans = Vec::new();
    for (path, bytes) in logs.iter().zip(&texts) {
        match hlog::read_bytes(bytes, &path.display().to_string()) {
            Ok(mut ivs) => {
                if let Some(span) = span_of(&ivs) {
                    spans.push((path.display().to_string(), span));
                }
                intervals.append(&mut ivs);
            }
            Err(e) => return usage_error(e),
        }
    }
    if interval.is_zero() {
        return usage_error("--interval must be greater than zero");
    }
    let mut apart = disjoint_runs(&spans);
    for w in &apart {
        eprintln!("elicitkit: warning: {w}");
    }
    let segments: Vec<(String, Option<segment::Segment>)> = logs
        .iter()
        .zip(&texts)
        .map(|(p, b)| (p.display().to_string(), segment::Segment::from_hlog(b)))
        .collect();
    for (level, text) in segment::merge_notes(&segments) {
        let word = match level {
            segment::NoteLevel::Warning => "warning",
            segment::NoteLevel::Note => "note",
        };
        eprintln!("elicitkit: {word}: {text}");
        apart.push(text);
    }
    let set = MetricSet::from_intervals(&intervals, interval);
    let origin = hlog::earliest(&intervals).unwrap_or(0.0);
    let info = RunInfo {
        run_id: out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "merged".into()),
        plan: "merged".into(),
        plan_file: logs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        target: String::new(),
        embedded_target: false,
        model: "merged".into(),
        started_unix: origin,
        warmup_s: 0.0,
        ended_by: "duration".into(),
        end_note: Some(if apart.is_empty() {
            format!("merged from {} logs", logs.len())
        } else {
            format!(
                "merged from {} logs; warning: {}",
                logs.len(),
                apart.join("; ")
            )
        }),
    };
    let flagged: Vec<_> = thresholds.iter().map(|t| (t.clone(), false)).collect();
    let mut summary = summarize::build(&set, &info, &[], &flagged);
    if let Some(list) = segment::merged_segments(&segments) {
        summary.settings.insert("segments".into(), list);
    }
    if let Err(e) = std::fs::create_dir_all(out) {
        return usage_error(format!("{}: {e}", out.display()));
    }
    let start = UNIX_EPOCH + Duration::from_secs_f64(origin.max(0.0));
    let merged = HlogBuffer::new(start, &[format!("merged from {} logs", logs.len())]).and_then(
        |mut buf| {
            for iv in &intervals {
                let offset = Duration::from_secs_f64((iv.start_unix - origin).max(0.0));
                buf.push(&iv.name, &iv.hist, offset, iv.len)?;
            }
            Ok(buf)
        },
    );
    match merged {
        Ok(buf) => {
            if let Err(e) = std::fs::write(out.join("merged.hlog"), buf.as_bytes()) {
                return usage_error(format!("{}: {e}", out.display()));
            }
            summary.files.insert("hlog".into(), "merged.hlog".into());
        }
        Err(e) => return usage_error(e),
    }
    for (role, f) in [
        ("summary_json", "summary.json"),
        ("summary_md", "summary.md"),
        ("report_html", "report.html"),
        ("prometheus", "metrics.prom"),
    ] {
        summary.files.insert(role.into(), f.into());
    }
    if let Err(e) = report::write_all(out, &summary) {
        return usage_error(format!("{}: {e}", out.display()));
    }
    println!(
        "merged {} logs: {} round trips, {} requests, e2e p50 {:.3} ms p99 {:.3} ms, error rate {:.4}%",
        logs.len(),
        summary.round_trips.total,
        summary.requests,
        summary.e2e.p50_ms,
        summary.e2e.p99_ms,
        summary.error_rate * 100.0
    );
    for t in &summary.thresholds {
        println!(
            "  threshold {:<28} actual {:<12} {}",
            t.expr,
            if t.actual_text.is_empty() {
                "n/a"
            } else {
                &t.actual_text
            },
            if t.passed { "pass" } else { "FAIL" }
        );
    }
    println!("  report: {}", out.join("report.html").display());
    if summary.passed {
        exit::ok()
    } else {
        exit::failed()
    }
}

/// Reads every log once, refusing one named twice, by path or by content:
/// merging it twice would double its counts.
fn read_distinct(logs: &[PathBuf]) -> Result<Vec<Vec<u8>>, String> {
    let mut seen: Vec<(PathBuf, PathBuf, Vec<u8>)> = Vec::new();
    for path in logs {
        let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (first, first_real, first_bytes) in &seen {
            if *first_real == real {
                return Err(format!(
                    "{} is given twice (also as {}): its counts would be merged twice",
                    path.display(),
                    first.display()
                ));
            }
            if *first_bytes == bytes {
                return Err(format!(
                    "{} has the same content as {}: the same run given twice would double its counts",
                    path.display(),
                    first.display()
                ));
            }
        }
        seen.push((path.clone(), real, bytes));
    }
    Ok(seen.into_iter().map(|(_, _, bytes)| bytes).collect())
}

/// The time a log covers: (first interval's start, last interval's end),
/// in Unix seconds.
fn span_of(intervals: &[hlog::LoggedInterval]) -> Option<(f64, f64)> {
    let start = intervals.iter().map(|i| i.start_unix).reduce(f64::min)?;
    let end = intervals
        .iter()
        .map(|i| i.start_unix + i.len.as_secs_f64())
        .reduce(f64::max)?;
    Some((start, end))
}

/// One warning per log whose run overlaps no other log's run.
fn disjoint_runs(spans: &[(String, (f64, f64))]) -> Vec<String> {
    if spans.len() < 2 {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    for (i, (name, (start, end))) in spans.iter().enumerate() {
        let overlaps = spans
            .iter()
            .enumerate()
            .any(|(j, (_, (s, e)))| j != i && *s < *end && *start < *e);
        if overlaps {
            continue;
        }
        let gap = spans
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, (_, (s, e)))| if *s >= *end { s - end } else { start - e })
            .fold(f64::INFINITY, f64::min);
        warnings.push(format!(
            "{name} overlaps no other run in time ({gap:.0} s from the nearest): the merged \
             duration includes the gap, so rates are lower than any run's"
        ));
    }
    warnings
}

fn render(dir: PathBuf) -> ExitCode {
    let (dir, file) = if dir.is_dir() {
        (dir.clone(), dir.join("summary.json"))
    } else {
        (
            dir.parent().map(PathBuf::from).unwrap_or_default(),
            dir.clone(),
        )
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => return usage_error(format!("{}: {e}", file.display())),
    };
    let summary: Summary = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => return usage_error(format!("{}: not a summary.json: {e}", file.display())),
    };
    if summary.schema != report::SCHEMA_VERSION {
        return usage_error(format!(
            "{}: schema {} is not supported (expected {})",
            file.display(),
            summary.schema,
            report::SCHEMA_VERSION
        ));
    }
    if let Err(e) = report::write_all(&dir, &summary) {
        return usage_error(format!("{}: {e}", dir.display()));
    }
    println!("rendered {}", dir.join("report.html").display());
    exit::ok()
}

#[cfg(test)]
mod tests {
    use super::disjoint_runs;

    #[test]
    fn only_runs_that_overlap_nothing_are_warned_about() {
        let span = |n: &str, s: f64, e: f64| (n.to_string(), (s, e));
        assert!(disjoint_runs(&[span("a", 0.0, 10.0), span("b", 5.0, 15.0)]).is_empty());
        let w = disjoint_runs(&[span("a", 0.0, 10.0), span("b", 310.0, 320.0)]);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("a overlaps no other run") && w[0].contains("300 s"));
        // c overlaps a; b is alone.
        let w = disjoint_runs(&[
            span("a", 0.0, 10.0),
            span("b", 100.0, 110.0),
            span("c", 9.0, 12.0),
        ]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("b ") && w[0].contains("88 s"), "{w:?}");
        assert!(disjoint_runs(&[span("a", 0.0, 1.0)]).is_empty());
    }
}
