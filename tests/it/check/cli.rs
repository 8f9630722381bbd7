//! `elicitkit check` as a CI user runs it: exit codes (0 clean, 1 on a MUST
//! failure, 2 on usage errors or an unreachable target) and the JSON and
//! JUnit outputs, against the reference server on 127.0.0.1.

use elicitkit::server::{Flaw, FlawSet, ServerConfig, start};
use std::process::{Command, Output};

async fn elicitkit(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_elicitkit"))
            .args(&args)
            .output()
            .expect("the binary runs")
    })
    .await
    .expect("join")
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_and_unreachable_targets_exit_2() {
    let out = elicitkit(args(&[
        "check",
        "--target",
        "http://127.0.0.1:1/mcp",
        "--timeout",
        "2s",
    ]))
    .await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("unreachable"));
    // A deadline no check could finish in is the setting's fault, said
    // before the run (it turned timeouts into MUST failures).
    let out = elicitkit(args(&[
        "check",
        "--target",
        "http://127.0.0.1:1/mcp",
        "--deadline",
        "1s",
    ]))
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--deadline 1s is shorter than one check's --timeout 10s"),
        "{err}"
    );
    // A JSON consumer gets a document saying why there is no report.
    let out = elicitkit(args(&[
        "check",
        "--target",
        "http://127.0.0.1:1/mcp",
        "--timeout",
        "2s",
        "--format",
        "json",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON document");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("unreachable")),
        "{v}"
    );
    let out = elicitkit(args(&[
        "check",
        "--target",
        "http://127.0.0.1:1/mcp",
        "--generation",
        "1999",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(2));
    let out = elicitkit(args(&["check", "--target", "ftp://127.0.0.1/mcp"])).await;
    assert_eq!(out.status.code(), Some(2));
    // A mistyped --only would run nothing and pass: it is a usage error
    // naming the ids it may have meant, before any request is sent.
    let out = elicitkit(args(&[
        "check",
        "--target",
        "http://127.0.0.1:1/mcp",
        "--only",
        "mrtr-tamper",
        "--only",
        "mrtr-tampr-bit",
    ]))
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"mrtr-tampr-bit\": no check id starts with it")
            && err.contains("mrtr-tamper-bit-flip"),
        "{err}"
    );
    assert!(
        !err.contains("unreachable"),
        "checked before the run: {err}"
    );
    let out = elicitkit(args(&["check", "--list"])).await;
    assert_eq!(out.status.code(), Some(0));
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(list.contains("mrtr-tamper-bit-flip") && list.contains("legacy-request-shape"));
    // Each row names the file that defines the check.
    let row = list
        .lines()
        .find(|l| l.starts_with("mrtr-tamper-bit-flip "))
        .expect("the bit-flip row");
    assert!(row.contains("src/check/state_tamper.rs"), "{row}");
    // ...and the official conformance scenario judging the same rule.
    assert!(
        row.contains("input-required-result-tampered-state"),
        "{row}"
    );
    assert!(
        list.lines()
            .next()
            .unwrap_or("")
            .contains("CONFORMANCE SCENARIO")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_server_exits_0_with_junit() {
    let server = start(ServerConfig::default()).await.expect("server");
    let out = elicitkit(args(&[
        "check",
        "--target",
        &server.mcp_url(),
        "--generation",
        "2026-07-28",
        "--format",
        "junit",
        "--only",
        "mrtr-meta",
        "--only",
        "mrtr-tamper",
    ]))
    .await;
    server.shutdown().await;
    let xml = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{xml}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(xml.starts_with("<?xml"), "{xml}");
    // One suite name whatever the port (CI history keys on it).
    assert!(
        xml.contains("<testsuite name=\"elicitkit check\" "),
        "{xml}"
    );
    assert!(
        xml.contains("<property name=\"target\" value=\"http://127.0.0.1:"),
        "{xml}"
    );
    assert!(
        xml.contains("name=\"mrtr-tamper-bit-flip [§4.7 S7 / §6.B 11]\""),
        "{xml}"
    );
    assert!(!xml.contains("<failure"), "{xml}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_without_tools_exits_0_with_a_json_report() {
    let config = ServerConfig {
        offer_tools: false,
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server");
    let out = elicitkit(args(&[
        "check",
        "--target",
        &server.mcp_url(),
        "--format",
        "json",
        "--only",
        "mrtr-meta",
        "--only",
        "mrtr-cache-hints",
        "--only",
        "mrtr-result-type",
        "--only",
        "mrtr-happy-path",
        "--only",
        "legacy-handshake",
    ]))
    .await;
    server.shutdown().await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        v["generations"],
        serde_json::json!(["2026-07-28", "2025-11-25"])
    );
    let status = |id: &str| {
        v["results"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["id"] == id))
            .map(|r| r["status"].clone())
            .unwrap_or_else(|| panic!("no row {id}: {v}"))
    };
    for id in [
        "mrtr-meta-missing",
        "mrtr-cache-hints",
        "mrtr-result-type",
        "legacy-handshake",
    ] {
        assert_eq!(status(id), "pass", "{id}");
    }
    assert_eq!(status("mrtr-happy-path"), "skip");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flawed_server_exits_1_with_json_naming_the_check() {
    let config = ServerConfig {
        flaws: [Flaw::AcceptTamperedState].into_iter().collect::<FlawSet>(),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server");
    let out = elicitkit(args(&[
        "check",
        "--target",
        &server.mcp_url(),
        "--format",
        "json",
        "--only",
        "mrtr-tamper",
    ]))
    .await;
    server.shutdown().await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        v["generations"],
        serde_json::json!(["2026-07-28", "2025-11-25"])
    );
    let row = v["results"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == "mrtr-tamper-bit-flip"))
        .cloned()
        .expect("the bit-flip row");
    assert_eq!(row["status"], "fail", "{row}");
    assert_eq!(row["severity"], "MUST");
    let evidence = row["evidence"].to_string();
    assert!(
        evidence.contains("Bearer ***") && !evidence.contains("Bearer alice"),
        "{evidence}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_warn_makes_a_should_finding_fail_the_gate() {
    let config = ServerConfig {
        flaws: [Flaw::IgnoreStatePrincipal]
            .into_iter()
            .collect::<FlawSet>(),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server");
    let url = server.mcp_url();
    let run = |extra: &'static [&'static str]| {
        let mut a = args(&[
            "check",
            "--target",
            &url,
            "--generation",
            "2026-07-28",
            "--only",
            "mrtr-cross-principal",
        ]);
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        elicitkit(a)
    };
    let default = run(&[]).await;
    let strict = run(&["--fail-on", "warn"]).await;
    server.shutdown().await;
    let table = String::from_utf8_lossy(&default.stdout);
    assert!(table.contains("WARN"), "{table}");
    assert_eq!(default.status.code(), Some(0), "{table}");
    assert_eq!(
        strict.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&strict.stdout)
    );
}

/// A state that does not show its expiry, still taken after a bare
/// `--wait-expiry` shorter than the server's lifetime, is the setting's
/// doing: INCONCLUSIVE (exit 3), not a WARN of a correct server (it was
/// one). The lifetime the server documents (`--state-lifetime`) backs a
/// finding: on `no-expiry` the same row WARNs; a wait shorter than the
/// stated lifetime is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_wait_no_lifetime_backs_is_inconclusive_not_a_warning() {
    let serve = |flaws: &[Flaw], ttl: u64| ServerConfig {
        flaws: flaws.iter().copied().collect::<FlawSet>(),
        state_ttl: std::time::Duration::from_secs(ttl),
        ..ServerConfig::default()
    };
    let correct = start(serve(&[], 60)).await.expect("server");
    let flawed = start(serve(&[Flaw::NoExpiry], 1)).await.expect("server");
    let run = |url: String, extra: &'static [&'static str]| {
        let mut a = args(&[
            "check",
            "--target",
            &url,
            "--only",
            "mrtr-state-expiry",
            "--fail-on",
            "warn",
            "--format",
            "json",
        ]);
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        elicitkit(a)
    };
    let short = run(correct.mcp_url(), &["--wait-expiry", "1s"]).await;
    let stated = run(
        flawed.mcp_url(),
        &["--state-lifetime", "1s", "--wait-expiry", "1300ms"],
    )
    .await;
    let usage = run(
        correct.mcp_url(),
        &["--state-lifetime", "60s", "--wait-expiry", "1s"],
    )
    .await;
    correct.shutdown().await;
    flawed.shutdown().await;
    let row = |out: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        v["results"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["id"] == "mrtr-state-expiry"))
            .cloned()
            .expect("the expiry row")
    };
    let r = row(&short);
    assert_eq!(r["status"], "inconclusive", "{r}");
    assert!(r.to_string().contains("--state-lifetime"), "{r}");
    assert_eq!(short.status.code(), Some(3), "{r}");
    let r = row(&stated);
    assert_eq!(r["status"], "warn", "{r}");
    assert!(
        r.to_string().contains("lifetime the server documents"),
        "{r}"
    );
    assert_eq!(stated.status.code(), Some(1), "{r}");
    let err = String::from_utf8_lossy(&usage.stderr);
    assert_eq!(usage.status.code(), Some(2), "{err}");
    assert!(err.contains("shorter than --state-lifetime"), "{err}");
}

/// Ctrl-C mid-run writes the partial report, marked interrupted: the checks
/// done keep their verdicts, the one still waiting on a hung server says it
/// had none, and the exit code is 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_writes_a_partial_report_marked_interrupted() {
    let config = ServerConfig {
        flaws: [Flaw::HangOnCancel].into_iter().collect::<FlawSet>(),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("server");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let (url, file) = (server.mcp_url(), report.display().to_string());
    let out = tokio::task::spawn_blocking(move || {
        let child = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
            .args(["check", "--target", &url, "--format", "json"])
            .args(["--output", &file, "--timeout", "60s"])
            .args(["--only", "mrtr-cancel", "--only", "mrtr-happy-path"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("check starts");
        // The cancel hangs for its refusal deadline (20 s): long after this.
        std::thread::sleep(std::time::Duration::from_secs(5));
        // SAFETY: a plain signal to a process this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        child.wait_with_output().expect("check exits")
    })
    .await
    .unwrap();
    server.shutdown().await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).expect("JSON report");
    assert_eq!(v["interrupted"], true, "{v:#}");
    let row = |id: &str| {
        v["results"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("no {id} row: {v:#}"))
    };
    assert_eq!(row("mrtr-happy-path")["status"], "pass", "{v:#}");
    let cancel = row("mrtr-cancel");
    assert_eq!(cancel["status"], "skip", "{cancel}");
    assert!(
        cancel.to_string().contains("interrupted (Ctrl-C)"),
        "{cancel}"
    );
}

/// A server with real tokens refuses the default one: `check` and `load`
/// say so and name the flags that give a token, not "not an MCP server".
#[test]
fn a_refused_default_token_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.txt");
    std::fs::write(&tokens, "s3cret-a alice\ns3cret-b bob\n").unwrap();
    let mut c = crate::support::serve::cmd();
    c.arg("--auth-tokens").arg(&tokens);
    let srv = crate::support::serve::start(c);
    let url = srv.mcp_url();
    let run = |a: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_elicitkit"))
            .args(a)
            .env_remove("ELICITKIT_PRINCIPAL")
            .output()
            .expect("the binary runs")
    };
    for cmd in [
        vec!["check", "--target", &url],
        vec!["load", "--target", &url, "--duration", "1s", "--quiet"],
    ] {
        let out = run(&cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        for says in [
            "refused the token (the default, `alice`",
            "--principal TOKEN (or ELICITKIT_PRINCIPAL=TOKEN)",
            "--principal-file FILE",
        ] {
            assert!(err.contains(says), "{cmd:?} should say {says:?}: {err}");
        }
        assert!(!err.contains("does not answer as an MCP server"), "{err}");
    }
    // With the token, the same server is checked.
    let out = run(&[
        "check",
        "--target",
        &url,
        "--principal",
        "s3cret-a",
        "--other-principal",
        "s3cret-b",
        "--only",
        "mrtr-unsolicited-state",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
