//! `check` against a server we did not write: an rmcp 3.11 streamable-HTTP
//! server (`tests/rmcp_server/`). The asserted statuses are the findings
//! explained in the check helper's report; a change either way is noticed.

mod rmcp_server;

use elicitkit::check::{self, Report, Settings, Status};
use std::time::Duration;

async fn run() -> Report {
    let server = rmcp_server::start().await;
    let mut s = Settings::new(server.url.clone());
    s.timeout = Duration::from_secs(5);
    s.deadline = Duration::from_secs(60);
    let report = check::run(s, None, &[]).await.expect("check runs");
    server.stop();
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rmcp_server_findings() {
    let r = run().await;
    let table = check::render::text(&r, true);
    println!("{table}");
    assert_eq!(
        r.generations,
        vec![elicitkit::protocol::Generation::Modern],
        "{table}"
    );
    let status = |id: &str| {
        r.get(id)
            .map(|x| x.status.clone())
            .unwrap_or_else(|| panic!("{id}\n{table}"))
    };
    // What works: framing, capability gating, flows, integrity of the
    // HMAC-sealed state, decline/cancel, SSE responses.
    for id in [
        "mrtr-meta-missing",
        "mrtr-header-name-mismatch",
        "mrtr-header-base64-decoded",
        "mrtr-version-unsupported",
        "mrtr-result-type",
        "mrtr-input-required-shape",
        "mrtr-cap-none",
        "mrtr-cap-url-only",
        "mrtr-cap-no-carry-over",
        "mrtr-happy-path",
        "mrtr-multi-round-new-state",
        "mrtr-tamper-bit-flip",
        "mrtr-tamper-truncate",
        "mrtr-tamper-extend",
        "mrtr-tamper-reencode",
        "mrtr-unsolicited-state",
        "mrtr-decline",
        "mrtr-cancel",
        "mrtr-sse-hygiene",
        "mrtr-no-retired-messages",
    ] {
        assert_eq!(status(id), Status::Pass, "{id}\n{table}");
    }
    // Real defects of this server (written the way rmcp's own MRTR test
    // server is): the sealed payload binds neither tool nor arguments (S8c),
    // a missing answer is a -32602 error instead of a re-prompt (S9), and
    // answer content is read without validating it against the schema (S9).
    for id in [
        "mrtr-tamper-other-tool",
        "mrtr-tamper-other-arguments",
        "mrtr-input-responses-missing",
        "mrtr-input-responses-malformed",
    ] {
        assert_eq!(status(id), Status::Warn, "{id}\n{table}");
    }
    // Not applicable: no authentication (no principal to bind), no URL mode,
    // no single-use tool, no --wait-expiry.
    for id in [
        "mrtr-cross-principal",
        "mrtr-url-cross-user",
        "mrtr-url-page-requires-auth",
        "mrtr-replay-single-use",
        "mrtr-state-expiry",
    ] {
        assert!(matches!(status(id), Status::Skip(_)), "{id}\n{table}");
    }
    assert!(!r.failed(), "no MUST check fails\n{table}");
}
