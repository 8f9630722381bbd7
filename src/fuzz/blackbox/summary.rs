//! The run's summary: execs, exec/s, requests and findings per oracle, for
//! the terminal, `summary.json` and `summary.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::findings::Severity;
use crate::oracle::Oracle;
use crate::report::format::md_cell;

/// Whether the re-run showed the finding again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reproduced {
    /// The same oracle fired.
    Yes,
    /// The script ran to the end and the oracle did not fire.
    No,
    /// It could not be told (no bash or curl, a step that never ran, ...).
    Unknown,
}

impl std::fmt::Display for Reproduced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reproduced::Yes => "yes",
            Reproduced::No => "no",
            Reproduced::Unknown => "unknown",
        })
    }
}

/// The verdict of a re-run and what it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Yes, no or unknown.
    pub reproduced: Reproduced,
    /// What was seen, or why it could not be told.
    #[serde(rename = "reproduced_detail")]
    pub detail: String,
}

impl Verdict {
    pub(super) fn new(reproduced: Reproduced, detail: impl Into<String>) -> Self {
        Verdict {
            reproduced,
            detail: detail.into(),
        }
    }

    /// `yes`, or `no (why)` / `unknown (why)`.
    pub fn short(&self) -> String {
        match self.reproduced {
            Reproduced::Yes => "yes".into(),
            r => format!("{r} ({})", self.detail),
        }
    }
}

/// One finding (one root cause, see [`super::group`]) as the summary
/// lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    /// Folder under `fuzz/`.
    pub dir: String,
    /// Oracle.
    pub oracle: Oracle,
    /// How bad: `MUST` (an error) or `SHOULD` (a warning), from the oracle.
    pub severity: Severity,
    /// Generation.
    pub generation: String,
    /// The JSON-RPC method the mutation was sent to (`tools/call`,
    /// `tools/list`, `initialize`, ...).
    pub method: String,
    /// Minimised ops (of the first hit; their kinds are the key).
    pub ops: Vec<String>,
    /// The tools called by the requests it was seen on, first seen first
    /// (none for a method other than `tools/call`).
    pub tools: Vec<String>,
    /// Cases that showed it.
    pub count: u64,
    /// What happened (the first time).
    pub what: String,
    /// Seconds into the run it was first seen.
    pub at_secs: f64,
    /// Whether `repro.sh`, re-run against the target, showed it again.
    #[serde(flatten)]
    pub rerun: Verdict,
}

impl Listed {
    /// Counts one more case that showed it, on `tool`.
    pub fn seen_on(&mut self, tool: Option<&str>) {
        self.count += 1;
        if let Some(t) = tool
            && !self.tools.iter().any(|x| x == t)
        {
            self.tools.push(t.to_owned());
        }
    }

    /// `17 cases, tools deploy, book` (no tools: just the cases).
    fn seen(&self) -> String {
        let cases = if self.count == 1 { "case" } else { "cases" };
        if self.tools.is_empty() {
            format!("{} {cases}", self.count)
        } else {
            format!("{} {cases}, tools {}", self.count, self.tools.join(", "))
        }
    }

    fn ops_text(&self) -> String {
        if self.ops.is_empty() {
            "(none)".into()
        } else {
            self.ops.join(" ")
        }
    }
}

/// Everything a run did.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The MCP endpoint.
    pub target: String,
    /// The seed (`--seed` reruns the same cases).
    pub seed: u64,
    /// Generations fuzzed.
    pub generations: Vec<String>,
    /// Tools per generation.
    pub tools: BTreeMap<String, Vec<String>>,
    /// Cases run (not counting minimisation).
    pub execs: u64,
    /// HTTP requests sent (minimisation included).
    pub requests: u64,
    /// Wall time in seconds.
    pub elapsed_secs: f64,
    /// `execs / elapsed_secs`.
    pub execs_per_sec: f64,
    /// `requests / elapsed_secs`.
    pub requests_per_sec: f64,
    /// Why the run stopped (`duration`, `max-requests`, `max-findings`,
    /// `unresponsive`).
    pub stopped: String,
    /// Distinct findings per oracle (every oracle listed).
    pub findings_per_oracle: BTreeMap<String, usize>,
    /// Seconds to the first finding, if any.
    pub first_finding_secs: Option<f64>,
    /// The findings.
    pub findings: Vec<Listed>,
    /// What an oracle saw but did not report, and why (each once).
    pub notes: Vec<String>,
    /// A stdio target's processes, when it speaks stdio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdio: Option<Processes>,
}

/// What a stdio target's run spent on processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Processes {
    /// Processes started (discovery included).
    pub started: u64,
    /// 2025-11-25 sessions that took over a warm process instead.
    pub sessions_reused: u64,
}

impl Processes {
    /// `N processes started, M sessions on warm ones`.
    pub fn line(&self) -> String {
        format!(
            "{} server processes started, {} sessions on a warm one",
            self.started, self.sessions_reused
        )
    }
}

impl Summary {
    /// Adds a note, once.
    pub fn note(&mut self, n: String) {
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    /// Whether any finding is an error (warnings alone do not fail a run).
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Must)
    }

    /// Counts per oracle from the findings.
    pub fn count(&mut self) {
        self.findings_per_oracle = Oracle::ALL
            .iter()
            .filter(|o| o.blackbox())
            .map(|o| {
                (
                    o.name().to_owned(),
                    self.findings.iter().filter(|f| f.oracle == *o).count(),
                )
            })
            .collect();
        self.first_finding_secs = self
            .findings
            .iter()
            .map(|f| f.at_secs)
            .min_by(f64::total_cmp);
    }

    /// The terminal lines.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "elicitkit fuzz {}: {} execs in {:.1}s ({:.1} exec/s), {} requests ({:.1}/s), seed {}, stopped by {}",
            self.target,
            self.execs,
            self.elapsed_secs,
            self.execs_per_sec,
            self.requests,
            self.requests_per_sec,
            self.seed,
            self.stopped
        );
        if let Some(p) = &self.stdio {
            let _ = writeln!(s, "  {}", p.line());
        }
        for (o, n) in &self.findings_per_oracle {
            let _ = writeln!(s, "  {o:<28} {n}");
        }
        if self.findings.is_empty() {
            let _ = writeln!(s, "no findings");
        }
        for f in &self.findings {
            let _ = writeln!(
                s,
                "{} {} [{} {}] at {:.1}s, ops: {}\n  seen in {}\n  {}\n  reproduce: {}/repro.sh (reproduced: {})",
                if f.severity == Severity::Must {
                    "FINDING"
                } else {
                    "WARNING"
                },
                f.oracle,
                f.generation,
                f.method,
                f.at_secs,
                f.ops_text(),
                f.seen(),
                f.what,
                f.dir,
                f.rerun.short()
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }

    /// `summary.md`.
    pub fn markdown(&self) -> String {
        let mut s = format!(
            "# elicitkit fuzz: {}\n\n- seed: `{}` (`--seed {}` reruns the same cases)\n- generations: {}\n- execs: {} in {:.1} s ({:.1} exec/s), {} HTTP requests ({:.1}/s); stopped by {}\n\n| oracle | findings |\n|---|---|\n",
            self.target,
            self.seed,
            self.seed,
            self.generations.join(", "),
            self.execs,
            self.elapsed_secs,
            self.execs_per_sec,
            self.requests,
            self.requests_per_sec,
            self.stopped
        );
        if let Some(p) = &self.stdio {
            s = s.replacen("\n\n| oracle", &format!("\n- {}\n\n| oracle", p.line()), 1);
        }
        for (o, n) in &self.findings_per_oracle {
            let _ = writeln!(s, "| {} | {n} |", md_cell(o));
        }
        if !self.findings.is_empty() {
            s.push_str("\n| finding | severity | generation | method | ops (minimised) | cases | tools | at | what | reproduced |\n|---|---|---|---|---|---|---|---|---|---|\n");
            for f in &self.findings {
                let _ = writeln!(
                    s,
                    "| [{}](<{}/repro.sh>) | {} | {} | {} | {} | {} | {} | {:.1} s | {} | {} |",
                    md_cell(f.oracle.name()),
                    md_cell(&f.dir),
                    f.severity,
                    md_cell(&f.generation),
                    md_cell(&f.method),
                    md_cell(&f.ops_text()),
                    f.count,
                    md_cell(&f.tools.join(", ")),
                    f.at_secs,
                    md_cell(&f.what),
                    md_cell(&f.rerun.short())
                );
            }
        }
        if !self.notes.is_empty() {
            s.push_str("\n## Notes (seen, not reported)\n\n");
            for n in &self.notes {
                let _ = writeln!(s, "- {}", md_cell(n));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of one execution against `target`, with no finding or note.
    fn one_exec(target: &str, generations: Vec<String>) -> Summary {
        Summary {
            target: target.into(),
            seed: 1,
            generations,
            tools: BTreeMap::new(),
            execs: 1,
            requests: 1,
            elapsed_secs: 1.0,
            execs_per_sec: 1.0,
            requests_per_sec: 1.0,
            stopped: "duration".into(),
            findings_per_oracle: BTreeMap::new(),
            first_finding_secs: None,
            findings: Vec::new(),
            notes: Vec::new(),
            stdio: None,
        }
    }

    /// A note (a tampered state that completed, not shown load-bearing)
    /// is kept once and shown in every rendering, without failing the run.
    #[test]
    fn notes_are_listed_once_and_do_not_fail_the_run() {
        let mut s = one_exec("t", Vec::new());
        let n = "deploy (tampered-state-accepted): a changed requestState completed, not \
                 reported: without a state the call completes alike | x";
        s.note(n.into());
        s.note(n.into());
        assert_eq!(s.notes.len(), 1);
        assert!(!s.failed());
        assert!(s.text().contains(&format!("note: {n}")), "{}", s.text());
        let md = s.markdown();
        assert!(
            md.contains("## Notes") && md.contains("alike \\| x"),
            "{md}"
        );
        assert_eq!(serde_json::to_value(&s).unwrap()["notes"][0], n);
    }

    /// A multi-line HTML error page, and pipes in any cell, keep each
    /// finding on one table row of its own.
    #[test]
    fn every_markdown_cell_is_escaped() {
        let mut s = one_exec("http://127.0.0.1:1/mcp", vec!["2026-07-28".into()]);
        s.findings = vec![Listed {
            dir: "001-server-error-mrtr-a|b".into(),
            oracle: Oracle::ServerError,
            severity: Severity::Must,
            generation: "2026-07-28".into(),
            method: "tools/call".into(),
            ops: vec!["body:x|y".into()],
            tools: vec!["a|b\nc".into()],
            count: 1,
            what: "HTTP 500 (<html>\r\n<body>|</body>\n</html>)".into(),
            at_secs: 0.5,
            rerun: Verdict {
                reproduced: Reproduced::No,
                detail: "HTTP 200\n| ok".into(),
            },
        }];
        s.count();
        let md = s.markdown();
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.contains("server-error]("))
            .collect();
        assert_eq!(rows.len(), 1, "{md}");
        let unescaped = rows[0].replace("\\|", "");
        assert_eq!(unescaped.matches('|').count(), 11, "{md}");
        assert!(rows[0].ends_with("| no (HTTP 200 \\| ok) |"), "{md}");
        assert!(md.lines().all(|l| !l.starts_with("<body>")), "{md}");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["findings"][0]["reproduced"], "no");
        assert_eq!(json["findings"][0]["reproduced_detail"], "HTTP 200\n| ok");
    }
}
