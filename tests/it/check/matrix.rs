//! Proof that every check can fail: `check` against the reference server
//! clean (no FAIL, no WARN) and against each `--flaw` (the matching checks
//! FAIL or WARN per their severity, a sample of unrelated checks still
//! passes). Servers run in-process on 127.0.0.1, all at once.

use elicitkit::check::{self, Report, Settings, Status};
use elicitkit::protocol::Generation;
use elicitkit::server::{Flaw, FlawSet, ServerConfig, start};
use elicitkit::state::CodecName;
use std::time::Duration;

/// State TTL of the servers under test. The expiry probe waits TTL + a
/// margin: the reference sealer's clock skew only lets a state's issue
/// time lie ahead, it never extends a lifetime (`Sealer::check_time`).
const TTL: Duration = Duration::from_secs(1);
const WAIT_EXPIRY: Duration = Duration::from_millis(1_300);

/// Starts a server with `flaws`, runs every check of `generation`, stops it.
async fn check_server(flaws: &[Flaw], generation: Generation) -> Report {
    let config = ServerConfig {
        flaws: flaws.iter().copied().collect::<FlawSet>(),
        state_ttl: TTL,
        hang_limit: Duration::from_secs(30),
        elicitation_timeout: Duration::from_secs(6),
        // A key sealed into a state is only readable with an integrity-only
        // codec: the leak check must find it there (and does not guess
        // through encryption).
        codec: if flaws.contains(&Flaw::SecretInState) || flaws.contains(&Flaw::TypedInState) {
            CodecName::HmacSha256
        } else {
            ServerConfig::default().codec
        },
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server starts");
    let mut s = Settings::new(server.mcp_url());
    // Generous: many servers share two cores while the matrix runs.
    s.target.timeout = Duration::from_secs(8);
    s.deadline = Duration::from_secs(90);
    // The server's states are sealed (expiry unreadable): the lifetime it
    // documents backs the expiry row.
    s.state_lifetime = Some(TTL);
    s.wait_expiry = Some(WAIT_EXPIRY);
    let report = check::run(s, Some(generation), &[])
        .await
        .expect("check runs");
    server.shutdown().await;
    report
}

fn table(r: &Report) -> String {
    check::render::text(r, false)
}

fn status_of<'a>(r: &'a Report, id: &str) -> &'a Status {
    &r.get(id)
        .unwrap_or_else(|| panic!("no check {id}\n{}", table(r)))
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clean_reference_server_passes_every_modern_check() {
    let r = check_server(&[], Generation::Modern).await;
    println!("{}", table(&r));
    let bad: Vec<_> = r
        .results
        .iter()
        .filter(|x| matches!(x.status, Status::Fail | Status::Warn | Status::Timeout))
        .map(|x| x.id)
        .collect();
    assert!(bad.is_empty(), "clean server: {bad:?}\n{}", table(&r));
    assert!(!r.failed());
    assert!(r.tally.pass >= 30, "too few checks passed\n{}", table(&r));
    // Bad input refused, beside controls: the same request valid is served.
    for id in ["mrtr-one-message-per-body", "mrtr-tool-argument-types"] {
        let row = r.get(id).expect("row");
        assert_eq!(row.status, Status::Pass, "{id}\n{}", table(&r));
        assert!(row.detail.contains("(control: "), "{id}: {}", row.detail);
    }
}

/// Checks a flaw must break, with the status their severity gives.
type Broken = Vec<(&'static str, Status)>;
/// One flaw, the checks it breaks, and unrelated checks that still pass.
type Case = (Flaw, Broken, Vec<&'static str>);

/// Runs every case against its own server (all at once) and collects the
/// mismatches.
async fn run_cases(cases: Vec<Case>, generation: Generation) -> Vec<String> {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(6));
    let mut runs = Vec::new();
    for (flaw, broken, intact) in cases {
        let slots = slots.clone();
        runs.push(tokio::spawn(async move {
            let _slot = slots.acquire_owned().await.ok();
            let r = check_server(&[flaw], generation).await;
            (flaw, broken, intact, r)
        }));
    }
    let mut problems = Vec::new();
    for run in runs {
        let (flaw, broken, intact, r) = run.await.expect("run completes");
        for (id, want) in &broken {
            let got = status_of(&r, id);
            if got != want {
                problems.push(format!(
                    "--flaw {flaw}: {id} is {got:?}, expected {want:?}\n{}",
                    table(&r)
                ));
            }
        }
        for id in &intact {
            let got = status_of(&r, id);
            if *got != Status::Pass {
                problems.push(format!(
                    "--flaw {flaw}: unrelated {id} is {got:?}, expected pass\n{}",
                    table(&r)
                ));
            }
        }
        for row in &r.results {
            let crashed = row.evidence.iter().any(|e| e.status >= Some(500));
            if crashed && row.status != Status::Fail {
                problems.push(format!(
                    "--flaw {flaw}: {} saw a 5xx but is {:?}\n{}",
                    row.id,
                    row.status,
                    table(&r)
                ));
            }
        }
        let must_fail = broken
            .iter()
            .any(|(_, s)| matches!(s, Status::Fail | Status::Timeout));
        if must_fail && !r.failed() {
            problems.push(format!(
                "--flaw {flaw}: the run does not count as failed (exit 1)"
            ));
        }
    }
    problems
}

/// Each flaw, the checks it must break (with the status their severity
/// gives), and unrelated checks that must still pass.
fn expectations() -> Vec<Case> {
    use Status::{Fail, Info, Warn};
    vec![
        (
            Flaw::AcceptTamperedState,
            vec![
                ("mrtr-tamper-bit-flip", Fail),
                ("mrtr-tamper-truncate", Fail),
                ("mrtr-tamper-extend", Fail),
                // mrtr-tamper-reencode (INFO at most) is not asserted here:
                // the flaw's stand-in claims share one nonce, so whether a
                // re-encoding is still accepted depends on which tamper
                // probe ran first and took it.
                // The same flaw trusts a state nobody issued, of any size.
                ("mrtr-unsolicited-state", Fail),
                ("mrtr-oversized-state", Warn),
            ],
            vec!["mrtr-cross-principal", "mrtr-happy-path", "mrtr-decline"],
        ),
        (
            Flaw::IgnorePrincipal,
            vec![
                ("mrtr-cross-principal", Warn),
                ("mrtr-url-cross-user", Fail),
            ],
            vec![
                "mrtr-tamper-bit-flip",
                "mrtr-tamper-other-tool",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::IgnoreRequestBinding,
            vec![
                ("mrtr-tamper-other-tool", Warn),
                ("mrtr-tamper-other-arguments", Warn),
            ],
            vec![
                "mrtr-tamper-bit-flip",
                "mrtr-cross-principal",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::NoExpiry,
            vec![("mrtr-state-expiry", Warn)],
            vec![
                "mrtr-tamper-bit-flip",
                "mrtr-replay-final-retry",
                "mrtr-happy-path",
            ],
        ),
        (
            // Every tool completes again; delete_file is single-use (its
            // description says "exactly once"): FAIL.
            Flaw::ReplayableSideEffect,
            vec![("mrtr-replay-final-retry", Fail)],
            vec![
                "mrtr-tamper-bit-flip",
                "mrtr-cross-principal",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::UrlToFormClient,
            vec![
                ("mrtr-cap-form-only", Fail),
                ("mrtr-cap-elicitation-empty", Fail),
            ],
            vec!["mrtr-cap-none", "mrtr-cap-url-only", "mrtr-happy-path"],
        ),
        (
            Flaw::ElicitWithoutCapability,
            vec![("mrtr-cap-none", Fail), ("mrtr-cap-sampling-only", Fail)],
            vec![
                "mrtr-cap-form-only",
                "mrtr-tamper-bit-flip",
                "mrtr-happy-path",
            ],
        ),
        (
            // A field named api_key asks plainly: the MUST of §3.6 rule 1.
            Flaw::SecretInForm,
            vec![("mrtr-schema-findings", Fail)],
            vec![
                "mrtr-cap-none",
                "mrtr-tamper-bit-flip",
                "mrtr-input-required-shape",
            ],
        ),
        (
            Flaw::AcceptInvalidContent,
            vec![("mrtr-invalid-content", Warn)],
            vec![
                "mrtr-input-responses-malformed",
                "mrtr-happy-path",
                "mrtr-decline",
            ],
        ),
        (
            Flaw::CrashOnDecline,
            // The no-action check declines too: its 5xx fails it, though
            // it could not otherwise tell (a 5xx is never undone).
            vec![("mrtr-decline", Fail), ("mrtr-decline-no-action", Fail)],
            vec!["mrtr-cancel", "mrtr-happy-path", "mrtr-tamper-bit-flip"],
        ),
        (
            // A hang after a cancel fails on its own deadline, not as a timeout.
            Flaw::HangOnCancel,
            vec![("mrtr-cancel", Fail)],
            vec!["mrtr-decline", "mrtr-happy-path", "mrtr-tamper-bit-flip"],
        ),
        (
            // Rounds without resultType are still read as rounds (by their
            // shape): the flows run and pass, and the absence is reported
            // once, by mrtr-result-type.
            Flaw::MissingResultType,
            vec![("mrtr-result-type", Fail)],
            vec![
                "mrtr-meta-missing",
                "mrtr-header-method-missing",
                "mrtr-version-unsupported",
                "mrtr-happy-path",
                "mrtr-input-required-shape",
                "mrtr-tamper-bit-flip",
                "mrtr-decline",
            ],
        ),
        (
            Flaw::InputRequiredOnList,
            vec![("mrtr-input-required-scope", Fail)],
            // tools/list never lists tools here, so only tool-free checks can run.
            vec![
                "mrtr-meta-missing",
                "mrtr-header-name-missing",
                "mrtr-version-unsupported",
            ],
        ),
        (
            Flaw::InputRequiredOnOtherLists,
            vec![("mrtr-input-required-scope", Fail)],
            vec!["mrtr-happy-path", "mrtr-tamper-bit-flip", "mrtr-decline"],
        ),
        (
            Flaw::NoOriginCheck,
            vec![("mrtr-origin-validated", Fail)],
            vec!["mrtr-meta-missing", "mrtr-happy-path", "mrtr-cache-hints"],
        ),
        (
            Flaw::NoHostCheck,
            vec![("mrtr-origin-validated", Info)],
            vec!["mrtr-meta-missing", "mrtr-happy-path", "mrtr-cache-hints"],
        ),
        (
            Flaw::NoCacheHints,
            vec![("mrtr-cache-hints", Fail)],
            vec![
                "mrtr-result-type",
                "mrtr-origin-validated",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::BadShapeNotFound,
            vec![
                ("mrtr-input-responses-shape", Fail),
                ("mrtr-request-state-shape", Fail),
            ],
            vec![
                "mrtr-input-responses-malformed",
                "mrtr-tamper-bit-flip",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::NoNodelay,
            vec![("mrtr-tail-stall", Warn)],
            vec!["mrtr-happy-path", "mrtr-decline", "mrtr-tamper-bit-flip"],
        ),
        (
            // deploy answers a decline as it answers an accept.
            Flaw::ActOnDecline,
            vec![("mrtr-decline-no-action", Fail)],
            vec!["mrtr-happy-path", "mrtr-tamper-bit-flip", "mrtr-cap-none"],
        ),
        (
            Flaw::LeakSecret,
            vec![("mrtr-url-secret-not-returned", Fail)],
            vec!["mrtr-happy-path", "mrtr-url-cross-user", "mrtr-decline"],
        ),
        (
            // A six-digit code (pattern [0-9]{6}): no room for the marker,
            // so the value typed is what is searched for.
            Flaw::LeakVerificationCode,
            vec![("mrtr-url-secret-not-returned", Fail)],
            vec!["mrtr-happy-path", "mrtr-url-cross-user", "mrtr-decline"],
        ),
        (
            Flaw::SecretInState,
            vec![("mrtr-url-secret-not-returned", Fail)],
            vec![
                "mrtr-url-cross-user",
                "mrtr-decline",
                "mrtr-tamper-bit-flip",
            ],
        ),
        (
            // One reply slot shared by overlapping calls (GHSA-345p-7cg4-v4c7).
            Flaw::CrossTalk,
            vec![("mrtr-isolation", Fail)],
            vec![
                "mrtr-meta-missing",
                "mrtr-origin-validated",
                "mrtr-cache-hints",
            ],
        ),
        (
            // A text field not named like a secret, readable in the state.
            Flaw::TypedInState,
            vec![("mrtr-url-secret-not-returned", Warn)],
            vec!["mrtr-url-cross-user", "mrtr-decline", "mrtr-happy-path"],
        ),
        (
            // stats' section travels in Mcp-Param-Section: a different,
            // missing or undecodable header is served.
            Flaw::IgnoreParamHeaders,
            vec![("mrtr-param-header-validated", Fail)],
            vec![
                "mrtr-header-name-mismatch",
                "mrtr-header-base64-decoded",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::NoServerInfo,
            vec![("mrtr-server-info-meta", Warn)],
            vec!["mrtr-result-type", "mrtr-cache-hints", "mrtr-happy-path"],
        ),
        (
            // The unknown method's -32601 says id null; the other errors
            // (-32602 without _meta, an unknown tool) still carry theirs.
            Flaw::ErrorIdNull,
            vec![("mrtr-error-id-echoed", Fail)],
            vec![
                "mrtr-meta-missing",
                "mrtr-removed-methods",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::UnknownToolAsResult,
            vec![("mrtr-unknown-tool-error", Warn)],
            vec![
                "mrtr-header-name-mismatch",
                "mrtr-error-id-echoed",
                "mrtr-happy-path",
            ],
        ),
        (
            // The second request of the body is never seen: the first is
            // served as if it came alone.
            Flaw::FirstMessageOfBody,
            vec![("mrtr-one-message-per-body", Fail)],
            vec![
                "mrtr-error-id-echoed",
                "mrtr-tool-argument-types",
                "mrtr-happy-path",
            ],
        ),
        (
            // deploy with an object for its service asks for input and
            // completes once answered.
            Flaw::AcceptWrongTypedArguments,
            vec![("mrtr-tool-argument-types", Fail)],
            vec![
                "mrtr-one-message-per-body",
                "mrtr-happy-path",
                "mrtr-decline",
            ],
        ),
        (
            Flaw::EmptyUnknownResource,
            vec![("mrtr-unknown-resource-error", Fail)],
            vec![
                "mrtr-cache-hints",
                "mrtr-non-tool-resource-flow",
                "mrtr-happy-path",
            ],
        ),
        (
            // Every round after the first hands back the first state.
            Flaw::PromptStateEchoed,
            vec![("mrtr-non-tool-prompt-flow", Fail)],
            vec![
                "mrtr-non-tool-resource-flow",
                "mrtr-multi-round-new-state",
                "mrtr-happy-path",
            ],
        ),
        (
            Flaw::ResourceNeverCompletes,
            vec![("mrtr-non-tool-resource-flow", Fail)],
            vec![
                "mrtr-non-tool-prompt-flow",
                "mrtr-cache-hints",
                "mrtr-happy-path",
            ],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_flaw_fails_its_matching_check_and_only_that() {
    let problems = run_cases(expectations(), Generation::Modern).await;
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rounds_without_result_type_are_flows_and_the_finding_names_the_tool() {
    let config = ServerConfig {
        flaws: [Flaw::MissingResultType].into_iter().collect::<FlawSet>(),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server starts");
    let mut s = Settings::new(server.mcp_url());
    s.target.timeout = Duration::from_secs(8);
    s.target.tools = vec!["deploy".into()];
    let only = ["mrtr-result-type".to_owned(), "mrtr-happy-path".to_owned()];
    let r = check::run(s, Some(Generation::Modern), &only)
        .await
        .expect("check runs");
    server.shutdown().await;
    let t = table(&r);
    let deploy = r.tools.iter().find(|x| x.name == "deploy").expect("deploy");
    assert!(
        deploy.elicits.starts_with("elicits (form") && deploy.elicits.contains("no resultType"),
        "{t}"
    );
    let rt = r.get("mrtr-result-type").expect("row");
    assert_eq!(rt.status, Status::Fail, "{t}");
    assert!(
        rt.detail
            .contains("tools/call deploy #1: no resultType on a round that asks for input"),
        "{t}"
    );
    let happy = r.get("mrtr-happy-path").expect("row");
    assert_eq!(happy.status, Status::Pass, "{t}");
    assert!(happy.detail.contains("see mrtr-result-type"), "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clean_reference_server_passes_every_legacy_check() {
    let r = check_server(&[], Generation::Legacy).await;
    println!("{}", table(&r));
    let bad: Vec<_> = r
        .results
        .iter()
        .filter(|x| matches!(x.status, Status::Fail | Status::Warn | Status::Timeout))
        .map(|x| x.id)
        .collect();
    assert!(
        bad.is_empty(),
        "clean server (2025-11-25): {bad:?}\n{}",
        table(&r)
    );
    assert!(r.tally.pass >= 15, "too few checks passed\n{}", table(&r));
    // A tool called on a session whose initialized is withheld gets no
    // elicitation, beside a control: the same tool elicits once initialized.
    // Bad input refused on a session, beside controls (the 2026 rows' twins).
    for id in ["legacy-one-message-per-body", "legacy-tool-argument-types"] {
        let row = r.get(id).expect("row");
        assert_eq!(row.status, Status::Pass, "{id}\n{}", table(&r));
        assert!(row.detail.contains("(control: "), "{id}: {}", row.detail);
    }
    let early = r.get("legacy-no-elicit-before-initialized").expect("row");
    assert_eq!(early.status, Status::Pass, "{}", table(&r));
    assert!(
        early.detail.contains("not for tools/call") && early.detail.contains("(control: "),
        "{}",
        early.detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legacy_flaws_fail_their_checks() {
    let problems = run_cases(legacy_expectations(), Generation::Legacy).await;
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// `serve --list-flaws` names what catches each flaw: every check the
/// matrix sees a flaw break is named there, and every check named exists.
#[test]
fn list_flaws_names_the_checks_the_matrix_sees_fail() {
    let ids: Vec<&str> = check::all_checks().iter().map(|c| c.id).collect();
    for (flaw, broken, _) in expectations().into_iter().chain(legacy_expectations()) {
        for (id, _) in broken {
            assert!(
                flaw.caught_by().contains(&id),
                "--flaw {flaw} breaks {id}, which Flaw::caught_by does not name"
            );
        }
    }
    for flaw in Flaw::ALL {
        assert!(!flaw.caught_by().is_empty(), "{flaw}");
        for by in flaw.caught_by() {
            assert!(
                by.contains(':') || ids.contains(by),
                "{flaw}: no check {by}"
            );
        }
    }
}

/// Flaws the matrix runs against a `serve` that is not plain (an
/// integrity-only codec, so the state can be read): a plain run misses
/// them, and their `--list-flaws` row must say what reveals them.
const NOT_PLAIN: [Flaw; 2] = [Flaw::SecretInState, Flaw::TypedInState];

/// Every flaw makes a plain `check` exit 1 (a case above expects a FAIL or
/// a TIMEOUT of it, and `run_cases` holds that run failed), or its
/// `--list-flaws` row says what reveals it and why a plain run cannot;
/// never both.
#[test]
fn a_flaw_a_plain_check_misses_says_what_reveals_it() {
    let cases: Vec<Case> = expectations()
        .into_iter()
        .chain(legacy_expectations())
        .collect();
    let mut wrong = Vec::new();
    for flaw in Flaw::ALL {
        let fails = !NOT_PLAIN.contains(&flaw)
            && cases.iter().any(|(f, broken, _)| {
                *f == flaw
                    && broken
                        .iter()
                        .any(|(_, s)| matches!(s, Status::Fail | Status::Timeout))
            });
        match (fails, flaw.reveal()) {
            (true, Some(r)) => wrong.push(format!(
                "{flaw}: a plain check exits 1, yet --list-flaws says {r:?}"
            )),
            (false, None) => wrong.push(format!(
                "{flaw}: a plain check exits 0, and --list-flaws does not say what reveals it"
            )),
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The 2025-11-25 cases.
fn legacy_expectations() -> Vec<Case> {
    use Status::{Fail, Info, Warn};
    vec![
        (
            Flaw::LegacyUrlWithoutId,
            vec![("legacy-request-shape", Fail)],
            vec!["legacy-cap-none", "legacy-decline", "legacy-handshake"],
        ),
        (
            Flaw::LegacyUrlRequiredWithoutList,
            vec![("legacy-url-required-error", Fail)],
            vec![
                "legacy-cap-form-only",
                "legacy-request-shape",
                "legacy-happy-path",
            ],
        ),
        (
            Flaw::UrlToFormClient,
            vec![("legacy-cap-form-only", Fail)],
            vec![
                "legacy-cap-none",
                "legacy-cap-url-only",
                "legacy-request-shape",
            ],
        ),
        (
            Flaw::ElicitWithoutCapability,
            vec![("legacy-cap-none", Fail)],
            vec![
                "legacy-cap-form-only",
                "legacy-request-shape",
                "legacy-answer-202",
            ],
        ),
        (
            Flaw::SecretInForm,
            vec![("legacy-schema-findings", Fail)],
            vec![
                "legacy-cap-none",
                "legacy-request-shape",
                "legacy-happy-path",
            ],
        ),
        (
            Flaw::IgnorePrincipal,
            vec![
                ("legacy-url-cross-user", Fail),
                ("legacy-cross-principal-session", Fail),
                ("legacy-cross-principal-answer", Fail),
            ],
            vec![
                "legacy-url-page-requires-auth",
                "legacy-happy-path",
                "legacy-cap-none",
            ],
        ),
        (
            Flaw::ElicitBeforeInitialized,
            vec![("legacy-no-elicit-before-initialized", Warn)],
            vec!["legacy-happy-path", "legacy-get-stream", "legacy-handshake"],
        ),
        (
            // Seen only by calling a tool on a session whose initialized
            // the checker withholds (the GET stream stays quiet).
            Flaw::ElicitOnUninitializedCall,
            vec![("legacy-no-elicit-before-initialized", Warn)],
            vec!["legacy-happy-path", "legacy-get-stream", "legacy-handshake"],
        ),
        (
            Flaw::AcceptInvalidContent,
            vec![("legacy-invalid-answers", Warn)],
            vec!["legacy-happy-path", "legacy-decline", "legacy-error-reply"],
        ),
        (
            Flaw::CrashOnDecline,
            vec![("legacy-decline", Fail)],
            vec!["legacy-cancel", "legacy-happy-path", "legacy-cap-none"],
        ),
        (
            Flaw::HangOnCancel,
            vec![("legacy-cancel", Fail)],
            vec!["legacy-decline", "legacy-happy-path", "legacy-cap-none"],
        ),
        (
            Flaw::UnknownToolAsResult,
            vec![("legacy-unknown-tool-error", Warn)],
            vec!["legacy-handshake", "legacy-happy-path", "legacy-cap-none"],
        ),
        (
            // The body's second request is never seen, on a session too
            // (the body is read before the generation is told).
            Flaw::FirstMessageOfBody,
            vec![("legacy-one-message-per-body", Fail)],
            vec![
                "legacy-tool-argument-types",
                "legacy-unknown-tool-error",
                "legacy-happy-path",
            ],
        ),
        (
            // deploy with an object for its service elicits and completes
            // once answered.
            Flaw::AcceptWrongTypedArguments,
            vec![("legacy-tool-argument-types", Fail)],
            vec![
                "legacy-one-message-per-body",
                "legacy-happy-path",
                "legacy-decline",
            ],
        ),
        (
            Flaw::CrossTalk,
            vec![("legacy-isolation", Fail)],
            vec!["legacy-handshake", "legacy-origin-validated"],
        ),
        (
            Flaw::NoOriginCheck,
            vec![("legacy-origin-validated", Fail)],
            vec!["legacy-handshake", "legacy-happy-path", "legacy-cap-none"],
        ),
        (
            Flaw::NoHostCheck,
            vec![("legacy-origin-validated", Info)],
            vec!["legacy-handshake", "legacy-happy-path", "legacy-cap-none"],
        ),
        (
            // Its elicitations never travel on the call's POST stream: the
            // first clause of §6.A 16, judged by both rows of that rule.
            Flaw::ElicitOnGetStream,
            vec![("legacy-get-stream", Warn), ("legacy-stream-rules", Warn)],
            vec!["legacy-happy-path", "legacy-decline", "legacy-cancel"],
        ),
        (
            Flaw::NoNodelay,
            vec![("legacy-tail-stall", Warn)],
            vec!["legacy-happy-path", "legacy-decline", "legacy-handshake"],
        ),
        (
            Flaw::ActOnDecline,
            vec![("legacy-decline-no-action", Fail)],
            vec!["legacy-happy-path", "legacy-decline", "legacy-cap-none"],
        ),
        (
            Flaw::LeakSecret,
            vec![("legacy-url-secret-not-returned", Fail)],
            vec![
                "legacy-happy-path",
                "legacy-url-cross-user",
                "legacy-decline",
            ],
        ),
        (
            Flaw::LeakVerificationCode,
            vec![("legacy-url-secret-not-returned", Fail)],
            vec![
                "legacy-happy-path",
                "legacy-url-cross-user",
                "legacy-decline",
            ],
        ),
    ]
}

/// A server whose tools push their elicitations only on the session's GET
/// stream gets the clean server's 2025-11-25 table: each check drives such
/// a tool with that stream open. Only the two rows of §6.A 16 that say
/// elicitations SHOULD travel on the call's POST stream differ (WARN).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_stream_tools_get_the_clean_legacy_table() {
    // One after the other: timing checks in other tests suffer from load.
    let clean = check_server(&[], Generation::Legacy).await;
    let flawed = check_server(&[Flaw::ElicitOnGetStream], Generation::Legacy).await;
    let both = format!(
        "clean:\n{}\nelicit-on-get-stream:\n{}",
        table(&clean),
        table(&flawed)
    );
    let differ = ["legacy-get-stream", "legacy-stream-rules"];
    for id in differ {
        assert_eq!(status_of(&flawed, id), &Status::Warn, "{id}\n{both}");
    }
    for row in &flawed.results {
        assert!(
            !matches!(row.status, Status::Fail | Status::Timeout),
            "{} is {:?}\n{both}",
            row.id,
            row.status
        );
        if !differ.contains(&row.id) {
            assert_eq!(
                &row.status,
                status_of(&clean, row.id),
                "{} differs from the clean server's\n{both}",
                row.id
            );
        }
    }
    assert_eq!(flawed.results.len(), clean.results.len(), "{both}");
    // The answered paths end as on the clean server, tool by tool.
    for id in ["legacy-happy-path", "legacy-decline", "legacy-cancel"] {
        let detail = |r: &Report| r.get(id).map(|x| x.detail.clone());
        assert_eq!(detail(&flawed), detail(&clean), "{id}\n{both}");
    }
}

/// Checks that answer an elicitation in a way of their own, when no
/// elicitation arrives (the GET stream kept closed, as if discovery had not
/// seen the tools push there): each row says nothing was answered, never
/// that the server mishandled an answer it was not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unseen_elicitations_are_never_judged_as_answered() {
    use elicitkit::check::runner::run_checks;
    use elicitkit::check::{all_checks, probe::Target};
    use elicitkit::discover;
    // Short: a call the server gives up on ends with a tool error (and no
    // elicitation) well within each check's bounds. Long: the call hangs
    // past the refusal deadline (a third of the check timeout) and the
    // check timeout itself, as against the third-party server.
    for give_up in [Duration::from_millis(300), Duration::from_secs(10)] {
        let config = ServerConfig {
            flaws: [Flaw::ElicitOnGetStream].into_iter().collect::<FlawSet>(),
            elicitation_timeout: give_up,
            ..ServerConfig::default()
        };
        let server = start(config).await.expect("server starts");
        let mut s = Settings::new(server.mcp_url());
        // legacy-decline-no-action (short only) calls each tool three times;
        // the long run's two checks wait out a 2 s refusal deadline.
        s.target.timeout = Duration::from_secs(if give_up < Duration::from_secs(2) {
            20
        } else {
            6
        });
        let found = discover::discover(&s.discovery(Some(Generation::Legacy)))
            .await
            .expect("discovers");
        let mut view = found.view(Generation::Legacy).expect("2025-11-25").clone();
        for t in view.tools.iter_mut().filter(|t| t.elicits()) {
            assert!(t.elicits_on_get, "discovery saw {} push on GET", t.name);
            t.elicits_on_get = false;
        }
        let http = discover::http_client().expect("client");
        let target = Target::from_view(s, http, &view, found.auth);
        let ids: &[&str] = if give_up < Duration::from_secs(2) {
            &[
                "legacy-decline",
                "legacy-cancel",
                "legacy-error-reply",
                "legacy-invalid-answers",
                "legacy-decline-no-action",
            ]
        } else {
            &["legacy-decline", "legacy-cancel"]
        };
        let checks: Vec<_> = all_checks()
            .into_iter()
            .filter(|c| ids.contains(&c.id))
            .collect();
        let rows = run_checks(std::sync::Arc::new(target), &checks).await;
        server.shutdown().await;
        assert_eq!(rows.len(), ids.len());
        for row in &rows {
            let said = format!("{give_up:?}: {} {:?}: {}", row.id, row.status, row.detail);
            assert!(
                matches!(row.status, Status::Skip(_) | Status::Info),
                "{said}"
            );
            assert!(row.detail.contains("no elicitation arrived"), "{said}");
            assert!(row.detail.contains("could not tell"), "{said}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sse_responses_are_inspected_and_clean() {
    let config = ServerConfig {
        response: elicitkit::server::ResponseMode::Sse,
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server starts");
    let mut s = Settings::new(server.mcp_url());
    s.target.timeout = Duration::from_secs(4);
    let r = check::run(s, Some(Generation::Modern), &[])
        .await
        .expect("check runs");
    server.shutdown().await;
    assert_eq!(
        status_of(&r, "mrtr-sse-hygiene"),
        &Status::Pass,
        "{}",
        table(&r)
    );
    let bad: Vec<_> = r
        .results
        .iter()
        .filter(|x| matches!(x.status, Status::Fail | Status::Warn | Status::Timeout))
        .map(|x| x.id)
        .collect();
    assert!(
        bad.is_empty(),
        "clean server in SSE mode: {bad:?}\n{}",
        table(&r)
    );
}

/// Identity from evidence: a server that serves anonymous requests and any
/// named token, with no `--principal` flags given. Where sessions and flow
/// pages are bound to their users, the cross-principal probes run with the
/// default two names (and find a state that completes for another user);
/// where nothing is bound, they skip and say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn users_are_inferred_from_evidence_not_only_from_401() {
    let run = |flaws: Vec<Flaw>| async move {
        let config = ServerConfig {
            flaws: flaws.iter().copied().collect::<FlawSet>(),
            anonymous_principal: Some("anon".into()),
            ..ServerConfig::default()
        };
        let server = start(config).await.expect("server starts");
        let mut s = Settings::new(server.mcp_url());
        s.target.timeout = Duration::from_secs(8);
        let only = [
            "mrtr-cross-principal".to_owned(),
            "mrtr-url-cross-user".to_owned(),
            "legacy-cross-principal".to_owned(),
        ];
        let r = check::run(s, None, &only).await.expect("check runs");
        server.shutdown().await;
        r
    };
    let clean = run(vec![]).await;
    assert!(
        clean.auth.contains("users: known, because"),
        "{}",
        clean.auth
    );
    assert!(
        clean.auth.contains("session serves its principal"),
        "{}",
        clean.auth
    );
    for id in [
        "mrtr-cross-principal",
        "mrtr-url-cross-user",
        "legacy-cross-principal-session",
    ] {
        assert_eq!(status_of(&clean, id), &Status::Pass, "{}", table(&clean));
    }
    let states_unbound = run(vec![Flaw::IgnoreStatePrincipal]).await;
    assert_eq!(
        status_of(&states_unbound, "mrtr-cross-principal"),
        &Status::Warn,
        "{}",
        table(&states_unbound)
    );
    let nothing_bound = run(vec![Flaw::IgnorePrincipal]).await;
    assert!(
        nothing_bound.auth.contains("no sign the server knows them"),
        "{}",
        nothing_bound.auth
    );
    for id in [
        "mrtr-cross-principal",
        "mrtr-url-cross-user",
        "legacy-cross-principal-session",
    ] {
        assert!(
            matches!(status_of(&nothing_bound, id), Status::Skip(why) if why.contains("no sign")),
            "{}",
            table(&nothing_bound)
        );
    }
}

/// A URL tool whose flow page is on another origin (here: the target is
/// named `localhost`, the server's pages `127.0.0.1`) stays a state subject
/// for probes that never open the page: with one form tool beside it, the
/// other-tool probe has its two subjects.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn off_origin_url_tools_stay_state_subjects() {
    let server = start(ServerConfig::default()).await.expect("server starts");
    let url = server.mcp_url().replace("127.0.0.1", "localhost");
    let mut s = Settings::new(url);
    s.target.timeout = Duration::from_secs(8);
    s.target.tools = vec!["deploy".into(), "connect_billing".into()];
    let only = ["mrtr-tamper-other-tool".to_owned()];
    let r = check::run(s, Some(Generation::Modern), &only)
        .await
        .expect("check runs");
    server.shutdown().await;
    let row = r.get("mrtr-tamper-other-tool").expect("the row");
    assert_eq!(row.status, Status::Pass, "{}", table(&r));
    assert!(row.detail.contains("connect_billing"), "{}", table(&r));
}
