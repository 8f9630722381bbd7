//! What a check produces: the [`Verdict`] a check body returns, and the
//! [`CheckResult`] row the runner hands to the renderers (the descriptor,
//! [`super::registry::Check`], is in the registry).

use crate::findings::Severity;
use crate::protocol::Generation;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// What a check body concludes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The rule holds; the text says what was observed.
    Pass(String),
    /// The rule is broken. `severity` overrides the descriptor's when a
    /// check grades its findings (e.g. a WARN part of a MUST check).
    Violation {
        /// Severity override, if any.
        severity: Option<Severity>,
        /// What was observed (the "Actual" of the report), in full.
        detail: String,
        /// What a correct server does, when more precise than the check's
        /// title (the "Expected" of the report).
        expected: Option<String>,
    },
    /// The check could not apply; says why.
    Skip(String),
    /// The rule does not exist on this transport (an HTTP header rule on a
    /// stdio server); says why.
    NotApplicable(String),
    /// The run's own settings kept the check from telling (a
    /// `--wait-expiry` shorter than the lifetime the state carries); says
    /// which and what to pass instead. Never a finding of the server.
    Inconclusive(String),
}

impl Verdict {
    /// A pass with a note.
    pub fn pass(detail: impl Into<String>) -> Self {
        Verdict::Pass(detail.into())
    }
    /// A violation at the descriptor's severity.
    pub fn fail(detail: impl Into<String>) -> Self {
        Verdict::Violation {
            severity: None,
            detail: detail.into(),
            expected: None,
        }
    }
    /// A violation at an explicit severity.
    pub fn violation(severity: Severity, detail: impl Into<String>) -> Self {
        Verdict::Violation {
            severity: Some(severity),
            detail: detail.into(),
            expected: None,
        }
    }
    /// Something worth knowing that breaks no rule, or a check that could
    /// not tell (INFO, with the reason).
    pub fn info(detail: impl Into<String>) -> Self {
        Verdict::violation(Severity::Info, detail)
    }
    /// Names what a correct server does (the report's "Expected"), for a
    /// violation; other verdicts are returned unchanged.
    pub fn expecting(self, text: impl Into<String>) -> Self {
        match self {
            Verdict::Violation {
                severity, detail, ..
            } => Verdict::Violation {
                severity,
                detail,
                expected: Some(text.into()),
            },
            other => other,
        }
    }
    /// Not applicable, with the reason.
    pub fn skip(reason: impl Into<String>) -> Self {
        Verdict::Skip(reason.into())
    }
}

/// The result column of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "lowercase")]
pub enum Status {
    /// The rule holds.
    Pass,
    /// A MUST rule is broken.
    Fail,
    /// A SHOULD rule is broken.
    Warn,
    /// Something worth knowing that breaks nothing.
    Info,
    /// Not applicable; the reason says why.
    Skip(String),
    /// The rule does not exist on the target's transport (HTTP headers on
    /// a stdio server); the reason says why.
    #[serde(rename = "n/a")]
    NotApplicable(String),
    /// The check did not finish within its timeout (a hung server).
    Timeout,
    /// The check could not tell: the run's own settings left it no way
    /// to (the overall `--deadline` cut it short or passed before it
    /// began, a `--wait-expiry` shorter than the state's lifetime), or a
    /// stdio server's process was gone (one root cause, reported by its
    /// `*-stdio-stays-up` row). The reason says which.
    Inconclusive(String),
}

impl Status {
    /// Lowercase name: `pass`, `fail`, `warn`, `info`, `skip`, `n/a`,
    /// `timeout`, `inconclusive`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Info => "info",
            Status::Skip(_) => "skip",
            Status::NotApplicable(_) => "n/a",
            Status::Timeout => "timeout",
            Status::Inconclusive(_) => "inconclusive",
        }
    }

    /// The status a violation at `severity` gets.
    pub fn for_violation(severity: Severity) -> Status {
        match severity {
            Severity::Must => Status::Fail,
            Severity::Should => Status::Warn,
            Severity::Info => Status::Info,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub use crate::client::raw::Exchange;

/// One row of the check table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    /// Check id.
    pub id: &'static str,
    /// Spec reference.
    pub rule: &'static str,
    /// Strength of the rule.
    pub severity: Severity,
    /// Protocol generation.
    pub generation: Generation,
    /// What is checked.
    pub title: &'static str,
    /// The outcome.
    #[serde(flatten)]
    pub status: Status,
    /// What was observed (for a finding: the "Actual", in full).
    pub detail: String,
    /// What a correct server does (the "Expected" of a finding: the
    /// check's own expectation, or its title).
    pub expected: String,
    /// For a finding (FAIL, WARN, INFO, TIMEOUT): what was observed, in
    /// full (the same text as `detail`; named for h2spec-style reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    /// The public spec page of the rule, for the generation checked.
    pub link: String,
    /// Wall time the check took.
    #[serde(serialize_with = "ser_ms")]
    pub elapsed: Duration,
    /// The exchanges behind the verdict.
    pub evidence: Vec<Exchange>,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl CheckResult {
    /// True when this row makes the run fail (exit 1): a failed MUST check,
    /// or any check that timed out (a hung server fails whatever it hangs on).
    pub fn is_failure(&self) -> bool {
        matches!(self.status, Status::Fail | Status::Timeout)
    }

    /// True for a row a server author should read: FAIL, WARN, INFO, TIMEOUT.
    pub fn is_finding(&self) -> bool {
        matches!(
            self.status,
            Status::Fail | Status::Warn | Status::Info | Status::Timeout
        )
    }
}

/// The lowest result that fails a run (`--fail-on`): a failed MUST check
/// or a timeout always does; `Warn` adds a SHOULD check that warned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// FAIL and TIMEOUT fail the run (the default).
    #[default]
    Fail,
    /// WARN fails it too.
    Warn,
}

/// Counts per status, for summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Passed.
    pub pass: usize,
    /// Failed (MUST).
    pub fail: usize,
    /// Warned (SHOULD).
    pub warn: usize,
    /// Informational.
    pub info: usize,
    /// Skipped.
    pub skip: usize,
    /// Not applicable on the target's transport.
    pub not_applicable: usize,
    /// Timed out.
    pub timeout: usize,
    /// Cut short by the run's own settings.
    pub inconclusive: usize,
}

impl Tally {
    /// Counts the statuses of `results`.
    pub fn of(results: &[CheckResult]) -> Tally {
        let mut t = Tally::default();
        for r in results {
            match r.status {
                Status::Pass => t.pass += 1,
                Status::Fail => t.fail += 1,
                Status::Warn => t.warn += 1,
                Status::Info => t.info += 1,
                Status::Skip(_) => t.skip += 1,
                Status::NotApplicable(_) => t.not_applicable += 1,
                Status::Timeout => t.timeout += 1,
                Status::Inconclusive(_) => t.inconclusive += 1,
            }
        }
        t
    }
}
