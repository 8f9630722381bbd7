//! `check` against a server that offers no tools (`serve --no-tools`: no
//! tools capability, `tools/list` answers -32601; one resource and one
//! prompt remain): the run completes, every check that needs no tool
//! judges, those that need one skip saying why, and `resultType` and the
//! caching hints are read on the resource's read and the prompt's get.

use elicitkit::check::{self, Report, Settings, Status};
use elicitkit::protocol::Generation;
use elicitkit::server::{Flaw, FlawSet, ServerConfig, start};
use std::time::Duration;

/// Starts a tool-less server with `flaws`, runs the checks of
/// `generation` (`None`: both), stops it.
async fn check_without_tools(flaws: &[Flaw], generation: Option<Generation>) -> Report {
    let config = ServerConfig {
        offer_tools: false,
        flaws: flaws.iter().copied().collect::<FlawSet>(),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server starts");
    let mut s = Settings::new(server.mcp_url());
    s.target.timeout = Duration::from_secs(8);
    s.deadline = Duration::from_secs(90);
    let report = check::run(s, generation, &[])
        .await
        .expect("a server without tools is checked, not refused");
    server.shutdown().await;
    report
}

fn table(r: &Report) -> String {
    check::render::text(r, false)
}

fn row<'a>(r: &'a Report, id: &str) -> &'a check::CheckResult {
    r.get(id)
        .unwrap_or_else(|| panic!("no row {id}\n{}", table(r)))
}

/// Whether the row's evidence holds an exchange labelled `label`.
fn sent(r: &Report, id: &str, label: &str) -> bool {
    row(r, id).evidence.iter().any(|e| e.label == label)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_without_tools_is_checked_with_every_check_that_needs_none() {
    let r = check_without_tools(&[], None).await;
    let t = table(&r);
    assert_eq!(
        r.generations,
        vec![Generation::Modern, Generation::Legacy],
        "{t}"
    );
    assert!(r.tools.is_empty(), "{t}");
    for id in [
        "mrtr-meta-missing",
        "mrtr-meta-client-info-optional",
        "mrtr-header-version-mismatch",
        "mrtr-header-method-missing",
        "mrtr-header-method-mismatch",
        "mrtr-version-unsupported",
        "mrtr-removed-methods",
        "mrtr-get-delete-405",
        "mrtr-no-session-id",
        "mrtr-origin-validated",
        "mrtr-cache-hints",
        "mrtr-result-type",
        "mrtr-input-required-scope",
        "legacy-handshake",
        "legacy-origin-validated",
        "legacy-session-deleted-404",
        "legacy-bad-version-400",
        "legacy-missing-session-400",
        "legacy-cross-principal-session",
    ] {
        assert_eq!(row(&r, id).status, Status::Pass, "{id}\n{t}");
    }
    // The read and the get were made and judged.
    assert!(
        sent(&r, "mrtr-result-type", "resources/read elicitkit://guide"),
        "{t}"
    );
    assert!(
        sent(&r, "mrtr-result-type", "prompts/get try_elicitation"),
        "{t}"
    );
    assert!(
        row(&r, "mrtr-cache-hints")
            .detail
            .contains("resources/read"),
        "{t}"
    );
    // Checks that need a tool skip, saying the server offers none.
    for id in [
        "mrtr-happy-path",
        "mrtr-tamper-bit-flip",
        "mrtr-decline",
        "mrtr-cap-none",
        "legacy-happy-path",
        "legacy-cap-none",
    ] {
        match &row(&r, id).status {
            Status::Skip(why) => assert!(why.contains("offers no tools"), "{id}: {why}"),
            other => panic!("{id} is {other:?}, expected a skip\n{t}"),
        }
    }
    let bad: Vec<_> = r
        .results
        .iter()
        .filter(|x| matches!(x.status, Status::Fail | Status::Warn | Status::Timeout))
        .map(|x| x.id)
        .collect();
    assert!(bad.is_empty(), "{bad:?}\n{t}");
    assert!(!r.failed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_tools_a_read_and_get_without_result_type_or_hints_are_found() {
    let (missing, no_hints) = tokio::join!(
        check_without_tools(&[Flaw::MissingResultType], Some(Generation::Modern)),
        check_without_tools(&[Flaw::NoCacheHints], Some(Generation::Modern)),
    );
    let t = table(&missing);
    let rt = row(&missing, "mrtr-result-type");
    assert_eq!(rt.status, Status::Fail, "{t}");
    for what in [
        "resources/read elicitkit://guide: no resultType",
        "prompts/get try_elicitation: no resultType",
    ] {
        assert!(rt.detail.contains(what), "{what}\n{t}");
    }
    // The hints are there: the caching row does not count the same defect.
    assert_eq!(
        row(&missing, "mrtr-cache-hints").status,
        Status::Pass,
        "{t}"
    );
    assert!(missing.failed());

    let t = table(&no_hints);
    let hints = row(&no_hints, "mrtr-cache-hints");
    assert_eq!(hints.status, Status::Fail, "{t}");
    assert!(
        hints
            .detail
            .contains("resources/read elicitkit://guide: no ttlMs, no cacheScope"),
        "{t}"
    );
    assert_eq!(
        row(&no_hints, "mrtr-result-type").status,
        Status::Pass,
        "{t}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tools_the_sse_hygiene_of_a_plain_request_is_judged() {
    let config = ServerConfig {
        offer_tools: false,
        response: elicitkit::server::ResponseMode::Sse,
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server starts");
    let mut s = Settings::new(server.mcp_url());
    s.target.timeout = Duration::from_secs(8);
    let only = ["mrtr-sse-hygiene".to_owned()];
    let r = check::run(s, Some(Generation::Modern), &only)
        .await
        .expect("check runs");
    server.shutdown().await;
    let t = table(&r);
    assert_eq!(row(&r, "mrtr-sse-hygiene").status, Status::Pass, "{t}");
    assert!(sent(&r, "mrtr-sse-hygiene", "prompts/list"), "{t}");
}
