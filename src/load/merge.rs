//! `elicitkit report merge` ([`merge`]): HDR interval logs from several
//! runs (processes or machines) merged exactly, aligned on their
//! `StartTime`, into one report. A log given twice (same file, or the same
//! bytes) is refused; logs whose runs do not overlap in time get a warning;
//! segments of a distributed run (`load --segment I/N`, recorded in each
//! log's header) are checked ([`merge_notes`], [`merged_segments`]).

use super::exec::engine::EndReason;
use super::metrics::hlog::{self, HlogBuffer};
use super::metrics::instances;
use super::metrics::set::MetricSet;
use super::spec::segment::Segment;
use super::spec::threshold::Threshold;
use super::summarize::{self, RunInfo};
use crate::report::{self, Summary};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Why logs cannot be merged (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A log cannot be read, or the report cannot be written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A log that does not parse, or a merged log that cannot be written.
    #[error(transparent)]
    Hlog(#[from] hlog::HlogError),
    /// The same file named twice.
    #[error("{} is given twice (also as {}): its counts would be merged twice", .path.display(), .first.display())]
    Twice {
        /// The second name.
        path: PathBuf,
        /// The first.
        first: PathBuf,
    },
    /// Two files with the same bytes.
    #[error("{} has the same content as {}: the same run given twice would double its counts", .path.display(), .first.display())]
    SameContent {
        /// The second file.
        path: PathBuf,
        /// The first.
        first: PathBuf,
    },
    /// A zero `--interval`.
    #[error("--interval must be greater than zero")]
    NoInterval,
}

/// `path`'s I/O error.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MergeError + '_ {
    move |source| MergeError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Merges `logs` into a report in `out` (summary files and `merged.hlog`),
/// judging `thresholds` on the merged data. `warn(word, text)` hears each
/// warning or note as it is found. `Err` is a usage error.
pub fn merge(
    logs: &[PathBuf],
    out: &Path,
    interval: Duration,
    thresholds: &[Threshold],
    warn: &mut dyn FnMut(&str, &str),
) -> Result<Summary, MergeError> {
    let texts = read_distinct(logs)?;
    let mut intervals = Vec::new();
    let mut spans = Vec::new();
    for (path, bytes) in logs.iter().zip(&texts) {
        let mut ivs = hlog::read_bytes(bytes, &path.display().to_string())?;
        if let Some(span) = span_of(&ivs) {
            spans.push((path.display().to_string(), span));
        }
        intervals.append(&mut ivs);
    }
    if interval.is_zero() {
        return Err(MergeError::NoInterval);
    }
    let mut apart = disjoint_runs(&spans);
    for w in &apart {
        warn("warning", w);
    }
    let segments: Vec<(String, Option<Segment>)> = logs
        .iter()
        .zip(&texts)
        .map(|(p, b)| (p.display().to_string(), Segment::from_hlog(b)))
        .collect();
    for (level, text) in merge_notes(&segments) {
        let word = match level {
            NoteLevel::Warning => "warning",
            NoteLevel::Note => "note",
        };
        warn(word, &text);
        apart.push(text);
    }
    let mut set = MetricSet::from_intervals(&intervals, interval);
    set.instances = instances::summarize(&set, None);
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
        target: targets_of(&texts),
        embedded_target: false,
        model: "merged".into(),
        started_unix: origin,
        warmup_s: 0.0,
        ended_by: EndReason::Duration,
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
    if let Some(list) = merged_segments(&segments) {
        summary.settings.insert("segments".into(), list);
    }
    std::fs::create_dir_all(out).map_err(io(out))?;
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
    std::fs::write(out.join("merged.hlog"), merged?.as_bytes()).map_err(io(out))?;
    summary.files.insert("hlog".into(), "merged.hlog".into());
    for (role, f) in [
        ("summary_json", "summary.json"),
        ("summary_md", "summary.md"),
        ("report_html", "report.html"),
        ("prometheus", "metrics.prom"),
    ] {
        summary.files.insert(role.into(), f.into());
    }
    report::write_all(out, &summary).map_err(io(out))?;
    Ok(summary)
}

/// Reads every log once, refusing one named twice, by path or by content:
/// merging it twice would double its counts.
fn read_distinct(logs: &[PathBuf]) -> Result<Vec<Vec<u8>>, MergeError> {
    let mut seen: Vec<(PathBuf, PathBuf, Vec<u8>)> = Vec::new();
    for path in logs {
        let real = std::fs::canonicalize(path).map_err(io(path))?;
        let bytes = std::fs::read(path).map_err(io(path))?;
        for (first, first_real, first_bytes) in &seen {
            let (path, first) = (path.clone(), first.clone());
            if *first_real == real {
                return Err(MergeError::Twice { path, first });
            }
            if *first_bytes == bytes {
                return Err(MergeError::SameContent { path, first });
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

/// How serious a note about merged segments is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteLevel {
    /// The logs may not add up to one whole run.
    Warning,
    /// Worth knowing (a segment missing).
    Note,
}

/// What `report merge` says about the segments of the logs it merges
/// (`(name, segment recorded in its header)`): logs of different N,
/// segment indices given twice, and segments of N not all present.
pub fn merge_notes(logs: &[(String, Option<Segment>)]) -> Vec<(NoteLevel, String)> {
    let mut out = Vec::new();
    let segs: Vec<(&str, Segment)> = logs
        .iter()
        .filter_map(|(n, s)| s.map(|s| (n.as_str(), s)))
        .filter(|(_, s)| !s.is_whole())
        .collect();
    if segs.is_empty() {
        return out;
    }
    let plain: Vec<&str> = logs
        .iter()
        .filter(|(_, s)| s.is_none_or(|s| s.is_whole()))
        .map(|(n, _)| n.as_str())
        .collect();
    if !plain.is_empty() {
        out.push((
            NoteLevel::Warning,
            format!(
                "{} not a segment of a split run but merged with segments: the result is not one whole run",
                plain.join(", ")
            ),
        ));
    }
    let mut counts: Vec<u32> = segs.iter().map(|(_, s)| s.count).collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.len() > 1 {
        let list: Vec<String> = segs.iter().map(|(n, s)| format!("{n} ({s})")).collect();
        out.push((
            NoteLevel::Warning,
            format!(
                "the logs are segments of different splits (N = {}): {}; they are not parts of one run",
                counts
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                list.join(", ")
            ),
        ));
    }
    for &n in &counts {
        let of_n: Vec<&(&str, Segment)> = segs.iter().filter(|(_, s)| s.count == n).collect();
        for i in 1..=n {
            let with: Vec<&str> = of_n
                .iter()
                .filter(|(_, s)| s.index == i)
                .map(|(name, _)| *name)
                .collect();
            if with.len() > 1 {
                out.push((
                    NoteLevel::Warning,
                    format!(
                        "segment {i}/{n} appears {} times ({}): the same share was run twice, so \
                         the merged counts exceed the whole run's",
                        with.len(),
                        with.join(", ")
                    ),
                ));
            }
        }
        let missing: Vec<String> = (1..=n)
            .filter(|i| !of_n.iter().any(|(_, s)| s.index == *i))
            .map(|i| format!("{i}/{n}"))
            .collect();
        if !missing.is_empty() {
            out.push((
                NoteLevel::Note,
                format!(
                    "not all segments of {n} are present: missing {}; the merged results cover \
                     only part of the whole run",
                    missing.join(", ")
                ),
            ));
        }
    }
    out
}

/// One line on which segments were merged, for the merged report's settings.
pub fn merged_segments(logs: &[(String, Option<Segment>)]) -> Option<String> {
    let mut segs: Vec<Segment> = logs
        .iter()
        .filter_map(|(_, s)| *s)
        .filter(|s| !s.is_whole())
        .collect();
    if segs.is_empty() {
        return None;
    }
    segs.sort_by_key(|s| (s.count, s.index));
    Some(
        segs.iter()
            .map(Segment::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// The targets the logs name in their `#target URL` comment lines, each
/// once, in order ("the logs name no target" where none does; the merged
/// report said "against ;" before).
fn targets_of(texts: &[Vec<u8>]) -> String {
    let mut out: Vec<String> = Vec::new();
    for t in texts {
        let text = String::from_utf8_lossy(t);
        for url in text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .filter_map(|l| l.strip_prefix("#target "))
        {
            if !out.iter().any(|o| o == url.trim()) {
                out.push(url.trim().to_owned());
            }
        }
    }
    if out.is_empty() {
        "the logs name no target".into()
    } else {
        out.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merged_report_names_the_logs_targets() {
        let log =
            |t: &str| format!("#elicitkit load run x\n#target {t}\n#[StartTime: 1]\n").into_bytes();
        let logs = [
            log("http://a/mcp"),
            log("http://b/mcp"),
            log("http://a/mcp"),
        ];
        assert_eq!(targets_of(&logs), "http://a/mcp, http://b/mcp");
        assert_eq!(
            targets_of(&[b"#[StartTime: 1]\n".to_vec()]),
            "the logs name no target"
        );
    }

    fn seg(i: u32, n: u32) -> Segment {
        Segment::new(i, n).unwrap()
    }

    #[test]
    fn merge_notes_catch_mixed_splits_twins_and_gaps() {
        let l = |n: &str, s: Option<Segment>| (n.to_string(), s);
        let full = [
            l("a", Some(seg(1, 3))),
            l("b", Some(seg(2, 3))),
            l("c", Some(seg(3, 3))),
        ];
        assert!(merge_notes(&full).is_empty());
        assert_eq!(merged_segments(&full).as_deref(), Some("1/3, 2/3, 3/3"));
        assert!(merge_notes(&[l("a", None), l("b", None)]).is_empty());

        let gap = merge_notes(&[l("a", Some(seg(1, 3))), l("c", Some(seg(3, 3)))]);
        assert_eq!(gap.len(), 1, "{gap:?}");
        assert_eq!(gap[0].0, NoteLevel::Note);
        assert!(gap[0].1.contains("missing 2/3"), "{gap:?}");

        let twice = merge_notes(&[
            l("a", Some(seg(1, 2))),
            l("b", Some(seg(1, 2))),
            l("c", Some(seg(2, 2))),
        ]);
        assert_eq!(twice.len(), 1, "{twice:?}");
        assert_eq!(twice[0].0, NoteLevel::Warning);
        assert!(twice[0].1.contains("segment 1/2 appears 2 times (a, b)"));

        let mixed = merge_notes(&[
            l("a", Some(seg(1, 2))),
            l("b", Some(seg(2, 3))),
            l("p", None),
        ]);
        let text: Vec<&str> = mixed.iter().map(|(_, t)| t.as_str()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("different splits (N = 2, 3)"))
        );
        assert!(text.iter().any(|t| t.starts_with("p not a segment")));
        assert!(text.iter().any(|t| t.contains("missing 2/2")));
        assert!(text.iter().any(|t| t.contains("missing 1/3, 3/3")));
    }

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
