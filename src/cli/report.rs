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
//!   [`crate::load::capacity::scaling`]).
//! - `report render DIR`: re-renders `summary.md` and `report.html` from a
//!   run folder's `summary.json`.

use super::{exit, usage_error};
use crate::load::merge;
use crate::load::spec::threshold::Threshold;
use crate::report::format::ms;
use crate::report::{self, Summary};
use clap::{Args as ClapArgs, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `elicitkit report`.
#[derive(Debug, ClapArgs)]
#[command(after_help = "Examples:
  elicitkit report merge a/run.hlog b/run.hlog
  elicitkit report render reports/<run-folder>
  elicitkit report capacity reports/knee-1 reports/knee-2
  # each subcommand's --help has more, e.g.
  elicitkit report merge --help

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
    #[command(
        after_help = "The logs are run.hlog files of `load` runs (one per machine or \
segment of a distributed run, or runs to pool); the merged report is exact, not an average of \
percentiles.

Examples:
  # two runs' logs into reports/merged/
  elicitkit report merge a/run.hlog b/run.hlog
  # three segments of one distributed run, judged
  elicitkit report merge reports/seg*/run.hlog \\
      --threshold 'p99(e2e) < 50ms' \\
      --threshold 'error_rate < 1%' -o reports/all
  # 10 s timeline buckets instead of 1 s
  elicitkit report merge a/run.hlog b/run.hlog \\
      --interval 10s

Exit codes: 0 merged, every --threshold held; 1 a threshold failed; 2 usage error (unreadable \
log, a log given twice)."
    )]
    Merge {
        /// The logs.
        #[arg(required = true, value_name = "FILE.hlog")]
        logs: Vec<PathBuf>,
        /// Output folder.
        #[arg(short, long, value_name = "DIR", default_value = "reports/merged")]
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
    #[command(
        after_help = "Useful after an upgrade of elicitkit that keeps the summary's \
schema (the report's layout changes, the measurements do not), or on a summary.json copied from \
another machine.

Examples:
  # a run folder: its summary.md and report.html again
  elicitkit report render reports/<run-folder>
  # a summary.json anywhere: written beside it
  elicitkit report render ci/summary.json

Exit codes: 0 written; 2 usage error (no summary.json, or one this version cannot read)."
    )]
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

fn merge(logs: &[PathBuf], out: &Path, interval: Duration, exprs: &[String]) -> ExitCode {
    let mut thresholds = Vec::new();
    for e in exprs {
        match Threshold::parse(e) {
            Ok(t) => thresholds.push(t),
            Err(e) => return usage_error(format!("--threshold: {e}")),
        }
    }
    let mut warn = |word: &str, text: &str| eprintln!("elicitkit: {word}: {text}");
    let summary = match merge::merge(logs, out, interval, &thresholds, &mut warn) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    println!(
        "merged {} logs: {} round trips, {} requests, e2e p50 {} ms p99 {} ms, error rate {:.4}%",
        logs.len(),
        summary.round_trips.total,
        summary.requests,
        ms(summary.e2e.p50_ms),
        ms(summary.e2e.p99_ms),
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
