//! No PASS without evidence: three servers that mishandle every answer
//! (`support::answering`): one refuses each (-32603), one never answers
//! any, one completes every retry whatever it holds. On the first two no
//! row about answering passes (a refusal or silence proves nothing without
//! a control); on the third every integrity, binding, replay and expiry row
//! is a finding at its rule's strength (FAIL for a MUST, WARN for a
//! SHOULD).

use crate::support::answering::{self, Fault};
use elicitkit::check::{self, CheckResult, Report, Settings, Status};
use elicitkit::findings::Severity;
use elicitkit::protocol::Generation;
use elicitkit::server::ServerConfig;
use std::time::Duration;

/// The rows whose verdict says how the server judges an answer (a
/// 2026-07-28 retry, a 2025-11-25 answer POST).
const ANSWERING: &[&str] = &[
    "mrtr-happy-path",
    "mrtr-multi-round-new-state",
    "mrtr-tamper-bit-flip",
    "mrtr-tamper-truncate",
    "mrtr-tamper-extend",
    "mrtr-tamper-reencode",
    "mrtr-tamper-other-tool",
    "mrtr-tamper-other-arguments",
    "mrtr-unsolicited-state",
    "mrtr-replay-final-retry",
    "mrtr-cross-principal",
    "mrtr-state-expiry",
    "mrtr-input-responses-unknown-keys",
    "mrtr-input-responses-missing",
    "mrtr-input-responses-malformed",
    "mrtr-input-responses-shape",
    "mrtr-request-state-shape",
    "mrtr-invalid-content",
    "mrtr-cap-no-carry-over",
    "mrtr-decline",
    "mrtr-cancel",
    "mrtr-decline-no-action",
    "mrtr-url-accept-before-completion",
    "mrtr-oversized-state",
    "mrtr-many-input-responses",
    "mrtr-retry-same-id",
    "legacy-answer-202",
    "legacy-happy-path",
    "legacy-decline",
    "legacy-cancel",
    "legacy-decline-no-action",
    "legacy-error-reply",
    "legacy-invalid-answers",
    "legacy-cross-principal-answer",
];

/// The rows about a state's integrity, binding, replay and expiry, and the
/// 2025-11-25 answer's binding to its principal.
const GUARDS: &[&str] = &[
    "mrtr-tamper-bit-flip",
    "mrtr-tamper-truncate",
    "mrtr-tamper-extend",
    "mrtr-tamper-other-tool",
    "mrtr-tamper-other-arguments",
    "mrtr-unsolicited-state",
    "mrtr-request-state-shape",
    "mrtr-oversized-state",
    "mrtr-replay-final-retry",
    "mrtr-cross-principal",
    "mrtr-state-expiry",
    "legacy-cross-principal-answer",
];

/// Runs `check` (both generations, expiry waited for) against a server
/// with `fault`.
async fn check_fault(fault: Fault) -> Vec<CheckResult> {
    let config = ServerConfig {
        state_ttl: Duration::from_secs(1),
        ..ServerConfig::default()
    };
    let server = answering::start(fault, config).await;
    let mut rows = Vec::new();
    for g in [Generation::Modern, Generation::Legacy] {
        let mut s = Settings::new(server.url.clone());
        // The silent server makes each answering row wait this long for
        // its answer (about 30 rows, one after another: 8 s made that test
        // 139 s, 2 s 33 s); this in-process server answers everything else
        // in milliseconds. A reply slower than that only turns a row into
        // a timeout, never a PASS, so the silent server's test can afford
        // 1 s; the others need every guard row to be judged.
        s.target.timeout = match fault {
            Fault::Ignore => Duration::from_secs(1),
            _ => Duration::from_secs(2),
        };
        s.deadline = Duration::from_secs(240);
        // The lifetime the server documents (its states are sealed, their
        // expiry unreadable) and a wait just past it, as the check matrix:
        // skew never extends a state's lifetime (`Sealer::check_time`).
        s.state_lifetime = Some(Duration::from_secs(1));
        s.wait_expiry = Some(Duration::from_millis(1_300));
        let r: Report = check::run(s, Some(g), &[]).await.expect("check runs");
        rows.extend(r.results);
    }
    rows
}

fn table(rows: &[CheckResult]) -> String {
    rows.iter()
        .map(|r| format!("{} {}: {}", r.id, r.status, r.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

/// No row about answering passes.
fn none_passes(fault: Fault, rows: &[CheckResult]) {
    for id in ANSWERING {
        assert!(rows.iter().any(|r| r.id == *id), "{id} did not run");
    }
    let passed: Vec<&str> = rows
        .iter()
        .filter(|r| ANSWERING.contains(&r.id) && r.status == Status::Pass)
        .map(|r| r.id)
        .collect();
    assert!(
        passed.is_empty(),
        "{fault:?}: answering rows passed: {passed:?}\n{}",
        table(rows)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_refusing_every_answer_passes_no_answering_row() {
    let rows = check_fault(Fault::Refuse).await;
    none_passes(Fault::Refuse, &rows);
    // The refusals are "could not tell", with the control that failed.
    let row = rows.iter().find(|r| r.id == "mrtr-unsolicited-state");
    let row = row.expect("the row ran");
    assert_eq!(row.status, Status::Info, "{}", row.detail);
    assert!(
        row.detail.starts_with("could not tell") && row.detail.contains("-32603"),
        "{}",
        row.detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_never_answering_an_answer_passes_no_answering_row() {
    let rows = check_fault(Fault::Ignore).await;
    none_passes(Fault::Ignore, &rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_completing_every_retry_fails_every_guard() {
    let rows = check_fault(Fault::CompleteAny).await;
    for id in GUARDS {
        let r = rows
            .iter()
            .find(|r| r.id == *id)
            .unwrap_or_else(|| panic!("{id} did not run\n{}", table(&rows)));
        let full = Status::for_violation(r.severity);
        // A MUST check may grade an acceptance as SHOULD (a malformed
        // field accepted as if valid): a finding still, never less.
        let finding = matches!(r.status, Status::Fail | Status::Warn);
        assert!(
            finding && (r.status == full || r.severity == Severity::Must),
            "{id} is {} ({}), not a finding at {:?}\n{}",
            r.status,
            r.detail,
            r.severity,
            table(&rows)
        );
    }
}
