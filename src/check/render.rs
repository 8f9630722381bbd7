//! Renders a check [`Report`]: a plain-text table for terminals, JSON,
//! JUnit XML (one `<testcase>` per check; FAIL and TIMEOUT are failures,
//! SKIP is skipped, WARN is skipped with its finding as the message, or a
//! failure under `--fail-on warn`; INFO passes with a note) and Markdown.
//!
//! The table keeps one short line per check; every finding is then printed
//! once in full below it, FAIL and TIMEOUT first, then WARN, then INFO,
//! h2spec style: its id, status and rule, the public spec page of the
//! rule, `Expected:` (what a correct server does), `Actual:` (what this one
//! did, never cut) and the exchanges behind the verdict. The counts and the
//! run's verdict ([`Report::verdict_line`]) end it.

use super::Report;
use super::model::FailOn;
use super::model::{CheckResult, Status};
use crate::client::mask;
use crate::report::format::{escape_xml, md_cell};
use std::fmt::Write as _;

/// Output formats for `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Plain text table, evidence for non-passing rows.
    #[default]
    Text,
    /// The whole report as JSON.
    Json,
    /// JUnit XML.
    Junit,
    /// Markdown.
    Md,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            "junit" => Ok(Format::Junit),
            "md" | "markdown" => Ok(Format::Md),
            other => Err(format!(
                "unknown format {other:?}: use text, json, junit or md"
            )),
        }
    }
}

/// Renders `report` in `format`; `verbose` adds evidence for passing rows
/// to the text and Markdown forms.
pub fn render(report: &Report, format: Format, verbose: bool) -> String {
    match format {
        Format::Text => text(report, verbose),
        Format::Json => json(report),
        Format::Junit => junit(report),
        Format::Md => markdown(report, verbose),
    }
}

fn result_cell(r: &CheckResult) -> String {
    match &r.status {
        Status::Skip(why) => format!("SKIP ({why})"),
        Status::Inconclusive(why) => format!("INCONCLUSIVE ({why})"),
        Status::NotApplicable(why) => format!("N/A ({why})"),
        s => s.as_str().to_ascii_uppercase(),
    }
}

fn wants_evidence(r: &CheckResult, verbose: bool) -> bool {
    verbose || r.is_finding()
}

/// Longest table cell for a finding's detail (the full text follows below).
const CELL: usize = 100;

/// The table cell of a row: a finding's detail cut to one line that points
/// below; other rows as before.
fn cell(r: &CheckResult, max: usize) -> String {
    let one_line = r.detail.replace('\n', " ");
    if r.is_finding() && one_line.chars().count() > CELL {
        format!("{} (see below)", mask::shorten(&one_line, CELL))
    } else {
        mask::shorten(&one_line, max)
    }
}

fn generations(report: &Report) -> String {
    let g: Vec<String> = report.generations.iter().map(|g| g.to_string()).collect();
    g.join(" and ")
}

fn summary_line(report: &Report) -> String {
    let t = report.tally;
    let stopped = report
        .results
        .iter()
        .filter(|r| matches!(&r.status, Status::Skip(w) if w == super::interrupt::SKIPPED))
        .count();
    let interrupted = if report.interrupted {
        format!("INTERRUPTED (Ctrl-C): a partial report, {stopped} checks had no verdict; ")
    } else {
        String::new()
    };
    format!(
        "{interrupted}{} checks: {} pass, {} fail, {} warn, {} info, {} skip, {}{} timeout",
        report.results.len(),
        t.pass,
        t.fail,
        t.warn,
        t.info,
        t.skip,
        if t.not_applicable > 0 {
            format!("{} n/a, ", t.not_applicable)
        } else {
            String::new()
        },
        t.timeout
    ) + &if t.inconclusive > 0 {
        format!(", {} inconclusive", t.inconclusive)
    } else {
        String::new()
    }
}

/// The plain-text table.
pub fn text(report: &Report, verbose: bool) -> String {
    let mut out = format!(
        "elicitkit check {} ({}; {})\n",
        report.target,
        generations(report),
        report.auth
    );
    for t in &report.tools {
        let _ = writeln!(
            out,
            "  {} tool {:<20} {}{}",
            t.generation,
            t.name,
            t.elicits,
            if t.single_use { " (single-use)" } else { "" }
        );
    }
    out.push('\n');
    let idw = report
        .results
        .iter()
        .map(|r| r.id.len())
        .max()
        .unwrap_or(2)
        .max(2);
    let rulew = report
        .results
        .iter()
        .map(|r| r.rule.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:<idw$}  {:<10}  {:<rulew$}  {:<6}  {:<8}  DETAIL",
        "ID", "GENERATION", "RULE", "SEV", "RESULT"
    );
    for r in &report.results {
        let res = match &r.status {
            Status::Skip(_) => "SKIP".to_owned(),
            Status::NotApplicable(_) => "N/A".to_owned(),
            s => s.as_str().to_ascii_uppercase(),
        };
        let _ = writeln!(
            out,
            "{:<idw$}  {:<10}  {:<rulew$}  {:<6}  {:<8}  {}",
            r.id,
            r.generation.to_string(),
            r.rule,
            r.severity.to_string(),
            res,
            cell(r, 160)
        );
    }
    for r in by_weight(report).filter(|r| wants_evidence(r, verbose)) {
        let _ = writeln!(
            out,
            "\n== {} [{}] {} ({})\n   {}",
            r.id,
            result_cell(r),
            r.rule,
            r.generation,
            r.link
        );
        if r.is_finding() {
            let _ = writeln!(out, "   Expected: {}", r.expected);
            let _ = writeln!(out, "   Actual:   {}", r.detail);
        } else {
            let _ = writeln!(out, "   {}", r.detail);
        }
        for e in &r.evidence {
            let _ = writeln!(out, "   -- {}", e.label);
            for line in e.request.lines() {
                let _ = writeln!(out, "   > {line}");
            }
            for line in e.response.lines() {
                let _ = writeln!(out, "   < {line}");
            }
        }
    }
    let _ = writeln!(out, "\n{}\n{}", summary_line(report), report.verdict_line());
    out
}

/// The rows, heaviest first: FAIL and TIMEOUT, WARN, INFO, then the rest,
/// each group in report order.
fn by_weight(report: &Report) -> impl Iterator<Item = &CheckResult> {
    let weight = |r: &CheckResult| match r.status {
        Status::Fail | Status::Timeout => 0,
        Status::Warn => 1,
        Status::Info | Status::Inconclusive(_) => 2,
        _ => 3,
    };
    let mut rows: Vec<&CheckResult> = report.results.iter().collect();
    rows.sort_by_key(|r| weight(r));
    rows.into_iter()
}

/// The report as pretty JSON.
pub fn json(report: &Report) -> String {
    serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

fn evidence_text(r: &CheckResult) -> String {
    let mut s = String::new();
    for e in &r.evidence {
        let _ = writeln!(s, "-- {}\n{}\n\n{}\n", e.label, e.request, e.response);
    }
    s
}

/// JUnit XML: one testsuite, one testcase per check. The suite's name is
/// the same for every target (CI history keys on it); the target is a
/// property.
pub fn junit(report: &Report) -> String {
    let t = report.tally;
    let warn_fails = report.fail_on == FailOn::Warn;
    let secs: f64 = report.results.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"elicitkit check\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\"><properties><property name=\"target\" value=\"{}\"/></properties>",
        report.results.len(),
        t.fail + t.timeout + if warn_fails { t.warn } else { 0 },
        t.inconclusive,
        t.skip + t.not_applicable + if warn_fails { 0 } else { t.warn },
        secs,
        escape_xml(&report.target)
    );
    for r in &report.results {
        let _ = write!(
            out,
            "  <testcase classname=\"elicitkit.{}\" name=\"{} [{}]\" time=\"{:.3}\">",
            r.generation,
            escape_xml(r.id),
            escape_xml(r.rule),
            r.elapsed.as_secs_f64()
        );
        match &r.status {
            Status::Warn if !warn_fails => {
                // Not a failure of this run, but never hidden among passes.
                let _ = write!(
                    out,
                    "<skipped message=\"WARN (a SHOULD rule): {}\"/><system-out>Expected: {}\nActual: {}\nRule: {} {}\n{}</system-out>",
                    escape_xml(&r.detail),
                    escape_xml(&r.expected),
                    escape_xml(&r.detail),
                    escape_xml(r.rule),
                    escape_xml(&r.link),
                    escape_xml(&evidence_text(r))
                );
            }
            Status::Fail | Status::Timeout | Status::Warn => {
                let _ = write!(
                    out,
                    "<failure message=\"{}\" type=\"{}\">Expected: {}\nActual: {}\nRule: {} {}\n\n{}</failure>",
                    escape_xml(&r.detail),
                    r.status.as_str(),
                    escape_xml(&r.expected),
                    escape_xml(&r.detail),
                    escape_xml(r.rule),
                    escape_xml(&r.link),
                    escape_xml(&evidence_text(r))
                );
            }
            Status::Skip(why) => {
                let _ = write!(out, "<skipped message=\"{}\"/>", escape_xml(why));
            }
            Status::Inconclusive(why) => {
                let _ = write!(
                    out,
                    "<error message=\"{}\" type=\"inconclusive\"/>",
                    escape_xml(why)
                );
            }
            Status::NotApplicable(why) => {
                let _ = write!(
                    out,
                    "<skipped message=\"not applicable: {}\"/>",
                    escape_xml(why)
                );
            }
            Status::Info => {
                let _ = write!(
                    out,
                    "<system-out>{}: {}\nExpected: {}\nActual: {}\nRule: {} {}\n{}</system-out>",
                    r.status.as_str().to_ascii_uppercase(),
                    escape_xml(&r.detail),
                    escape_xml(&r.expected),
                    escape_xml(&r.detail),
                    escape_xml(r.rule),
                    escape_xml(&r.link),
                    escape_xml(&evidence_text(r))
                );
            }
            Status::Pass => {}
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("</testsuite></testsuites>\n");
    out
}

/// Markdown: a table, then details for the rows that need attention.
pub fn markdown(report: &Report, verbose: bool) -> String {
    let mut out = format!(
        "# elicitkit check\n\nTarget `{}`, generation(s) `{}`. {}\n\n",
        report.target,
        generations(report),
        summary_line(report)
    );
    out.push_str(
        "| Check | Generation | Rule | Severity | Result | Detail |\n|---|---|---|---|---|---|\n",
    );
    for r in &report.results {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.id,
            r.generation,
            md_cell(r.rule),
            r.severity,
            md_cell(&result_cell(r)),
            md_cell(&cell(r, 200))
        );
    }
    for r in report.results.iter().filter(|r| wants_evidence(r, verbose)) {
        let _ = writeln!(
            out,
            "\n## `{}`: {}\n\nRule {} ({}), [{}]({})\n",
            r.id,
            result_cell(r),
            r.rule,
            r.generation,
            r.link,
            r.link
        );
        if r.is_finding() {
            let _ = writeln!(
                out,
                "- **Expected:** {}\n- **Actual:** {}\n",
                md_cell(&r.expected),
                md_cell(&r.detail)
            );
        } else {
            let _ = writeln!(out, "{}\n", r.detail);
        }
        for e in &r.evidence {
            // Fences longer than any backtick run inside keep the block closed.
            let _ = writeln!(
                out,
                "<details><summary>{}</summary>\n\n````text\n{}\n\n{}\n````\n</details>\n",
                escape_xml(&e.label),
                e.request.replace("````", "'''"),
                e.response.replace("````", "'''")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::model::{Exchange, Tally};
    use crate::findings::Severity;
    use crate::protocol::Generation;
    use std::time::Duration;

    fn report() -> Report {
        let row = |id: &'static str, status: Status| CheckResult {
            id,
            rule: "§4.7 S7",
            severity: Severity::Must,
            generation: Generation::Modern,
            title: "t",
            status,
            detail: "tampered <state> & accepted".into(),
            expected: "a tampered state is rejected".into(),
            actual: None,
            link: "https://modelcontextprotocol.io/specification/2026-07-28/basic/patterns/mrtr"
                .into(),
            elapsed: Duration::from_millis(5),
            evidence: vec![Exchange {
                label: "tools/call #2".into(),
                request: "POST /mcp".into(),
                response: "HTTP 200".into(),
                status: Some(200),
            }],
        };
        let results = vec![
            row("mrtr-a", Status::Pass),
            row("mrtr-b", Status::Fail),
            row("mrtr-c", Status::Skip("no URL tool".into())),
            row("mrtr-d", Status::Timeout),
        ];
        Report {
            target: "http://127.0.0.1:1/mcp".into(),
            generations: vec![Generation::Modern],
            tools: Vec::new(),
            auth: "serves anonymous requests and any token alike".into(),
            tally: Tally::of(&results),
            results,
            interrupted: false,
            fail_on: FailOn::Fail,
        }
    }

    #[test]
    fn an_interrupted_report_says_so_and_counts_what_had_no_verdict() {
        let mut r = report();
        assert!(!text(&r, false).contains("INTERRUPTED"));
        r.results[2].status = Status::Skip(crate::check::interrupt::SKIPPED.into());
        r.interrupted = true;
        let t = text(&r, false);
        assert!(
            t.contains("INTERRUPTED (Ctrl-C): a partial report, 1 checks had no verdict"),
            "{t}"
        );
        assert!(markdown(&r, false).contains("INTERRUPTED"));
    }

    #[test]
    fn a_long_finding_is_cut_in_the_table_and_printed_once_in_full() {
        let mut r = report();
        let long = format!("the deciding fact is at the end: {} END", "x".repeat(400));
        r.results[1].detail.clone_from(&long);
        let t = text(&r, false);
        assert!(t.contains("(see below)"), "{t}");
        assert_eq!(t.matches(&long).count(), 1, "{t}");
        let m = markdown(&r, false);
        assert_eq!(m.matches(&long).count(), 1);
        assert!(m.contains("**Expected:**"));
        let x = junit(&r);
        assert!(x.contains("Expected: a tampered state is rejected"));
    }

    #[test]
    fn junit_marks_failures_and_skips_and_escapes() {
        let x = junit(&report());
        assert!(
            x.contains("tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"1\""),
            "{x}"
        );
        assert_eq!(x.matches("<failure ").count(), 2);
        assert!(x.contains("<skipped message=\"no URL tool\"/>"));
        assert!(x.contains("tampered &lt;state&gt; &amp; accepted"));
        assert!(!x.contains("<state>"));
    }

    #[test]
    fn junit_shows_a_warning_as_skipped_or_as_a_failure_under_fail_on_warn() {
        let mut r = report();
        r.results[0].status = Status::Warn;
        r.results[0].detail = "no Origin check".into();
        r.tally = Tally::of(&r.results);
        let x = junit(&r);
        assert!(
            x.contains("failures=\"2\" errors=\"0\" skipped=\"2\""),
            "{x}"
        );
        assert!(
            x.contains("<skipped message=\"WARN (a SHOULD rule): no Origin check\"/>"),
            "{x}"
        );
        r.fail_on = FailOn::Warn;
        let x = junit(&r);
        assert!(
            x.contains("failures=\"3\" errors=\"0\" skipped=\"1\""),
            "{x}"
        );
        assert!(
            x.contains("<failure message=\"no Origin check\" type=\"warn\">"),
            "{x}"
        );
    }

    #[test]
    fn the_terminal_ends_with_the_verdict_after_the_heaviest_findings() {
        let mut r = report();
        r.results[0].status = Status::Warn;
        r.tally = Tally::of(&r.results);
        let t = text(&r, false);
        let last = t.lines().last().unwrap_or_default();
        assert_eq!(
            last, "VERDICT: FAIL: 1 MUST check failed, 1 check timed out (exit 1)",
            "{t}"
        );
        let at = |id: &str| t.find(&format!("== {id} ")).unwrap_or(usize::MAX);
        assert!(
            at("mrtr-b") < at("mrtr-d") && at("mrtr-d") < at("mrtr-a"),
            "{t}"
        );
        r.results[1].status = Status::Pass;
        r.results[3].status = Status::Pass;
        r.results[2].status = Status::Warn;
        r.tally = Tally::of(&r.results);
        assert_eq!(
            r.verdict_line(),
            "VERDICT: PASS with warnings: no MUST check failed; 2 SHOULD checks warned (exit 0; \
             --fail-on warn fails on them)"
        );
        r.results[2].status = Status::Pass;
        r.tally = Tally::of(&r.results);
        r.fail_on = FailOn::Warn;
        assert_eq!(
            r.verdict_line(),
            "VERDICT: FAIL: 1 SHOULD check warned (exit 1)"
        );
        assert!(r.fails_gate());
        r.fail_on = FailOn::Fail;
        r.results[0].status = Status::Inconclusive("cut short".into());
        r.tally = Tally::of(&r.results);
        assert!(r.inconclusive() && !r.fails_gate());
        assert_eq!(
            r.verdict_line(),
            "VERDICT: INCONCLUSIVE: 1 check could not tell (--deadline, --wait-expiry, a stdio \
             process gone: see their rows); the others found no failure (exit 3)"
        );
        assert!(junit(&r).contains("errors=\"1\""));
    }

    #[test]
    fn text_and_markdown_show_rows_and_evidence_for_failures() {
        let r = report();
        let t = text(&r, false);
        assert!(t.contains("mrtr-b") && t.contains("FAIL") && t.contains("> POST /mcp"));
        assert!(t.contains("Expected: a tampered state is rejected"), "{t}");
        assert!(t.contains("Actual:   tampered <state> & accepted"), "{t}");
        assert!(t.contains("/2026-07-28/basic/patterns/mrtr"), "{t}");
        assert!(t.contains("4 checks: 1 pass, 1 fail, 0 warn, 0 info, 1 skip, 1 timeout"));
        assert!(
            !t.contains("== mrtr-a"),
            "passing rows have no evidence unless verbose"
        );
        let m = markdown(&r, false);
        assert!(
            m.contains("| `mrtr-c` | 2026-07-28 | §4.7 S7 | MUST | SKIP (no URL tool) |"),
            "{m}"
        );
        let j: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(j["results"][1]["status"], "fail");
        assert_eq!(j["results"][2]["reason"], "no URL tool");
        assert_eq!("junit".parse::<Format>(), Ok(Format::Junit));
    }
}
