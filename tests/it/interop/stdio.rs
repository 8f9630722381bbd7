//! `check` over stdio: the reference server (`serve --stdio`, clean and
//! with the flaws that show on stdio) and the TypeScript and Python SDK
//! servers speaking stdio, with their findings asserted exactly as over
//! HTTP. HTTP-only checks are N/A; cross-principal ones are N/A unless the
//! server's identity variable is named.

use super::checks::{NO_USERS, Row, Want, assert_findings, python_sdk_rows, ts_sdk_rows};
use crate::support::interop::{Sdk, stdio_command};
use crate::support::serve::BIN;
use elicitkit::check::{self, Report, Settings, Status};
use elicitkit::stdio::{Bridge, Command, Spec};
use std::time::Duration;

/// Runs the checks (or those starting with `only`) on a stdio server.
async fn check_stdio(command: Command, identity_env: Option<&str>, only: &[&str]) -> Report {
    let bridge = Bridge::start(Spec {
        command,
        identity_env: identity_env.map(str::to_owned),
    })
    .await
    .expect("the stdio server starts");
    let mut s = Settings::new(bridge.mcp_url());
    s.target.principal = "alice".into();
    s.target.other_principal = "bob".into();
    s.principals_given = identity_env.is_some();
    // Each 2025-11-25 session is a process start (`check`'s stdio default
    // is 30 s; a loaded CI machine starting Python per session needs more).
    s.target.timeout = Duration::from_secs(60);
    s.deadline = Duration::from_secs(240);
    s.stdio = Some(bridge.info());
    let only: Vec<String> = only.iter().map(|o| (*o).to_owned()).collect();
    let report = check::run(s, None, &only).await.expect("check runs");
    bridge.stop().await;
    report
}

fn serve(flaws: &[&str]) -> Command {
    let mut argv = vec![BIN.to_owned(), "serve".into(), "--stdio".into()];
    for f in flaws {
        argv.extend(["--flaw".into(), (*f).to_owned()]);
    }
    Command::new(argv)
}

fn findings(r: &Report) -> Vec<(String, Status)> {
    r.results
        .iter()
        .filter(|x| x.is_finding() || x.status == Status::Timeout)
        .map(|x| (x.id.to_owned(), x.status.clone()))
        .collect()
}

/// A stdio server that answers a request with `"id": null` is reported
/// on the row that judges error ids, at once: the bridge hands the reply
/// to the request in flight as it came (it waited for the request's own
/// id until the check's 30 s ran out: TIMEOUT).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_null_id_reply_over_stdio_is_a_finding_not_a_timeout() {
    let r = check_stdio(serve(&["error-id-null"]), None, &["mrtr-error-id"]).await;
    let row = r.get("mrtr-error-id-echoed").expect("row");
    assert_eq!(row.status, Status::Fail, "{}", row.detail);
    assert!(
        row.detail.contains("-32601") && row.detail.contains("carries id null"),
        "{}",
        row.detail
    );
    let clean = check_stdio(serve(&[]), None, &["mrtr-error-id"]).await;
    let row = clean.get("mrtr-error-id-echoed").expect("row");
    assert_eq!(row.status, Status::Pass, "{}", row.detail);
}

/// A full run under `error-id-null` has no TIMEOUT: the rows that send
/// methods the server lacks run alone, so their null-id `-32601` is the
/// reply of the one request in flight (seen failing without it:
/// mrtr-removed-methods and mrtr-input-required-scope timed out, their
/// replies dropped among other checks' requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_stdio_run_under_error_id_null_has_no_timeout() {
    let r = check_stdio(serve(&["error-id-null"]), None, &[]).await;
    let table = check::render::text(&r, false);
    let late: Vec<&str> = r
        .results
        .iter()
        .filter(|x| x.status == Status::Timeout)
        .map(|x| x.id)
        .collect();
    assert!(late.is_empty(), "{late:?}\n{table}");
    let row = |id: &str| r.get(id).map(|x| x.status.clone());
    assert_eq!(row("mrtr-error-id-echoed"), Some(Status::Fail), "{table}");
    assert_eq!(row("mrtr-removed-methods"), Some(Status::Pass), "{table}");
    assert_eq!(
        row("mrtr-input-required-scope"),
        Some(Status::Pass),
        "{table}"
    );
}

/// Over stdio every status is the loopback bridge's, not the server's: no
/// row that ran quotes one ("HTTP 200, error -32602" read as if the server
/// had sent a status). Seen failing before: 15 rows of a clean run did.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_stdio_finding_quotes_the_bridges_http_status() {
    for flaws in [
        &[][..],
        &["bad-shape-not-found"],
        &["accept-tampered-state"],
    ] {
        let r = check_stdio(serve(flaws), None, &[]).await;
        let quoting: Vec<String> = r
            .results
            .iter()
            .filter(|x| !matches!(x.status, Status::NotApplicable(_)))
            .filter(|x| {
                [&x.detail, &x.expected, &x.title.to_string()]
                    .iter()
                    .any(|t| t.contains("HTTP "))
            })
            .map(|x| format!("{}: {} (expected: {})", x.id, x.detail, x.expected))
            .collect();
        // Nor what a row expected: over stdio the rule is its JSON-RPC part
        // (seen failing with 'a request without params._meta gets HTTP 400
        // and -32602' on mrtr-meta-missing).
        assert!(quoting.is_empty(), "{flaws:?}: {quoting:#?}");
        // The rows that read those replies still ran and judged them.
        let ran = |id: &str| r.get(id).map(|x| x.status.as_str());
        assert_eq!(ran("mrtr-meta-missing"), Some("pass"), "{flaws:?}");
        assert_eq!(ran("mrtr-removed-methods"), Some("pass"), "{flaws:?}");
        // Nor does a status stand in for one the pipe has not.
        let removed = r.get("mrtr-removed-methods").expect("row");
        assert_eq!(removed.detail, "ping and logging/setLevel got -32601");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serve_over_stdio_passes_clean_and_its_flaws_are_found() {
    let r = check_stdio(serve(&[]), None, &[]).await;
    let table = check::render::text(&r, false);
    assert!(!r.failed(), "{table}");
    let stray: Vec<_> = findings(&r)
        .into_iter()
        .filter(|(_, s)| *s != Status::Info)
        .collect();
    assert!(stray.is_empty(), "{stray:?}\n{table}");
    for id in [
        "mrtr-header-method-missing",
        "legacy-get-stream",
        "mrtr-tail-stall",
    ] {
        let row = r.get(id).expect("row");
        assert!(
            matches!(row.status, Status::NotApplicable(_)),
            "{id}: {:?}",
            row.status
        );
    }
    // Both generations' stdio rules run on a server that speaks both (the
    // 2026-07-28 ones did not run at all).
    for id in [
        "legacy-stdio-clean-stdout",
        "legacy-stdio-stays-up",
        "mrtr-stdio-clean-stdout",
        "mrtr-stdio-stays-up",
    ] {
        assert_eq!(
            r.get(id).expect("row").status,
            Status::Pass,
            "{id}\n{table}"
        );
    }
    assert_eq!(
        r.get("mrtr-cross-principal").map(|x| x.status.as_str()),
        Some("n/a"),
        "no identity variable: no second principal"
    );

    // Each flaw that shows on stdio is found by the check meant for it.
    for (flaw, only, ids) in [
        (
            "stdio-noise",
            "legacy-stdio-clean",
            &["legacy-stdio-clean-stdout", "mrtr-stdio-clean-stdout"][..],
        ),
        ("exit-on-decline", "mrtr-decline", &["mrtr-stdio-stays-up"]),
        (
            "accept-tampered-state",
            "mrtr-tamper-bit",
            &["mrtr-tamper-bit-flip"],
        ),
    ] {
        let only = [only, "legacy-stdio", "mrtr-stdio"];
        let r = check_stdio(serve(&[flaw]), None, &only).await;
        for id in ids {
            let row = r.get(id).unwrap_or_else(|| panic!("{flaw}: no {id} row"));
            assert_eq!(row.status, Status::Fail, "{flaw}: {id}: {}", row.detail);
        }
    }
    // A 2026-07-28 decline that ends the process is one row, of that
    // generation: the 2025-11-25 sessions did not exit (both rows judged
    // every process, one cause twice).
    let r = check_stdio(
        serve(&["exit-on-decline"]),
        None,
        &["mrtr-decline", "legacy-stdio", "mrtr-stdio"],
    )
    .await;
    let up = r.get("mrtr-stdio-stays-up").expect("row");
    assert!(
        up.detail.contains("exit status: 3 ×") && up.detail.contains("shared by 2026-07-28"),
        "{}\n{}",
        up.detail,
        check::render::text(&r, true)
    );
    let legacy = r.get("legacy-stdio-stays-up").expect("row");
    assert_eq!(legacy.status, Status::Pass, "{}", legacy.detail);
    // The decline that ended the process is not a second finding, and the
    // bridge's 502 is never read as the server's status (it was: 'HTTP 502'
    // failures on every row that came after the exit).
    let decline = r.get("mrtr-decline").expect("row");
    assert!(
        matches!(&decline.status, Status::Inconclusive(w) if w.starts_with("not run: the stdio server")),
        "{:?}: {}",
        decline.status,
        decline.detail
    );
    // Nor in the words the flow client gave the check (they said "HTTP 502
    // without a JSON-RPC response"). "HTTP 502", not "502": the stays-up
    // row names the exited process's pid, which held "502" once in CI.
    for x in &r.results {
        assert!(!x.detail.contains("HTTP 502"), "{}: {}", x.id, x.detail);
    }
    assert!(r.failed(), "the exit is a failure of the run");
    // The same on a 2025-11-25 session: its stays-up row is the one FAIL,
    // the decline whose stream the exit cut short is not run (it was its
    // own FAIL: "the stream ended without a response").
    let r = check_stdio(
        serve(&["exit-on-decline"]),
        None,
        &["legacy-decline", "legacy-stdio"],
    )
    .await;
    let table = check::render::text(&r, true);
    let up = r.get("legacy-stdio-stays-up").expect("row");
    assert_eq!(up.status, Status::Fail, "{table}");
    let decline = r.get("legacy-decline").expect("row");
    assert!(
        matches!(&decline.status, Status::Inconclusive(w) if w.starts_with("not run: the stdio server")),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serve_over_stdio_binds_principals_named_by_an_environment_variable() {
    // One key for every process (each principal's run in its own), as one
    // deployment shares its key.
    let keyed = |flaws: &[&str]| {
        let mut c = serve(flaws);
        c.env
            .push(("ELICITKIT_STATE_KEY".into(), "abcd".repeat(10) + "abc"));
        c
    };
    let r = check_stdio(
        keyed(&[]),
        Some("ELICITKIT_PRINCIPAL"),
        &["mrtr-cross-principal", "mrtr-happy"],
    )
    .await;
    let row = r.get("mrtr-cross-principal").expect("row");
    assert_eq!(row.status, Status::Pass, "{}", row.detail);
    // A 2025-11-25 session is a process of one principal: another
    // principal's token on its id is the bridge's to route, not the
    // server's to refuse (both rows failed the clean server).
    let r = check_stdio(
        keyed(&[]),
        Some("ELICITKIT_PRINCIPAL"),
        &["legacy-cross-principal"],
    )
    .await;
    for id in [
        "legacy-cross-principal-session",
        "legacy-cross-principal-answer",
    ] {
        let row = r.get(id).expect("row");
        assert!(
            matches!(row.status, Status::NotApplicable(_)),
            "{id}: {:?}: {}",
            row.status,
            row.detail
        );
    }
    let r = check_stdio(
        keyed(&["ignore-state-principal"]),
        Some("ELICITKIT_PRINCIPAL"),
        &["mrtr-cross-principal"],
    )
    .await;
    let row = r.get("mrtr-cross-principal").expect("row");
    assert!(
        r.failed() || row.status == Status::Warn,
        "{:?}: {}",
        row.status,
        row.detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn typescript_sdk_over_stdio() {
    let r = check_stdio(stdio_command(Sdk::Ts), None, &[]).await;
    let mut want = ts_sdk_rows();
    want.extend(stdio_rows());
    // NOTES "stdio mode": once a connection has served a request, the
    // `_meta` protocol version of later ones is not checked.
    want.push((
        "mrtr-version-unsupported",
        Want::Fail,
        "expected -32022, got a result",
    ));
    assert_findings(&r, Sdk::Ts, &want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn python_sdk_over_stdio() {
    let r = check_stdio(stdio_command(Sdk::Python), None, &[]).await;
    // The same SDK findings as over HTTP (NOTES finding 1 and (a)).
    let mut want = python_sdk_rows();
    want.extend(stdio_rows());
    assert_findings(&r, Sdk::Python, &want);
}

/// What any SDK interop server shows over stdio: its flow pages are served
/// beside the pipe, on another origin, so they are not followed, and no
/// request shows a sign that the server knows its users.
fn stdio_rows() -> [Row; 4] {
    use Want::*;
    [
        ("mrtr-happy-path", Info, "flow page on another origin"),
        ("legacy-happy-path", Info, "flow page on another origin"),
        ("mrtr-url-page-requires-auth", SkipBecause(NO_USERS), ""),
        ("legacy-url-page-requires-auth", SkipBecause(NO_USERS), ""),
    ]
}

/// Ctrl-C during `check --target stdio` stops the server it started (the
/// whole process group) and exits 130.
#[test]
fn ctrl_c_stops_the_stdio_server() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("server.pid");
    let script = format!("echo $$ > {}; exec {BIN} serve --stdio", pidfile.display());
    let mut check = std::process::Command::new(BIN)
        .args(["check", "--target", "stdio", "--", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("check starts");
    let started = std::time::Instant::now();
    let server: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: plain signals to processes this test started.
    unsafe { libc::kill(check.id() as i32, libc::SIGINT) };
    let status = check.wait().expect("check exits");
    assert_eq!(status.code(), Some(130), "{status:?}");
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: signal 0 only asks whether the pid exists.
        unsafe { libc::kill(server, 0) != 0 }
    });
    assert!(gone, "the stdio server {server} outlived Ctrl-C");
}

/// Usage errors name what is wrong: a missing or misplaced command, one
/// that cannot start or exits at once, and `load`/`plan`, which take no
/// stdio target.
#[test]
fn stdio_usage_errors_exit_2_and_say_why() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(args)
            .output()
            .expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (args, says) in [
        (&["check", "--target", "stdio"][..], "after `--`"),
        (
            &["check", "--target", "http://127.0.0.1:9/mcp", "--", "x"],
            "needs --target stdio",
        ),
        (
            &["check", "--target", "stdio", "--", "/nonexistent/server"],
            "cannot start",
        ),
        (
            &[
                "check",
                "--target",
                "stdio",
                "--",
                "sh",
                "-c",
                "echo oops >&2; exit 4",
            ],
            "exited at once",
        ),
        (
            &["fuzz", "--target", "stdio", "--", "sh", "-c", "exit 4"],
            // Told at start ("exited at once") or by discovery ("exited
            // before the run could start"), as the race falls: its status.
            "exit status: 4",
        ),
        // A process that is not an MCP server is named by its command,
        // not by the bridge's loopback URL.
        (
            &[
                "check",
                "--target",
                "stdio",
                "--timeout",
                "2s",
                "--",
                "sh",
                "-c",
                "while read l; do echo not-json; done",
            ],
            "target stdio: sh -c",
        ),
        (&["load", "--target", "stdio"], "needs an HTTP target"),
        (&["plan", "--target", "stdio"], "needs an HTTP target"),
    ] {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("HTTP 502"), "{args:?}: {stderr}");
    }
    // A process that exits on its first line (as the Python SDK server
    // does without a known principal) is named with its exit and its
    // stderr, not the bridge's "HTTP 502" (said before), by both.
    for sub in ["check", "fuzz"] {
        let first_line = "read l; echo needs a token >&2; exit 5";
        let (code, stderr) = run(&[sub, "--target", "stdio", "--", "sh", "-c", first_line]);
        assert_eq!(code, Some(2), "{sub}: {stderr}");
        assert!(
            stderr.contains(
                "exited before the run could start (exit status: 5); its stderr ends:\n    needs a token"
            ) && !stderr.contains("HTTP 502"),
            "{sub}: {stderr}"
        );
    }
}

/// A blank body is no message over stdio (it would be a blank line, which
/// every server rightly ignores): the bridge answers `400` itself and
/// sends nothing. It sent the blank line and, after 500 ms of the silence
/// that earns, said `202` "no reply", which `fuzz` filed as the server's
/// defect (not-json-rpc on a clean `serve --stdio`, a truncated body).
#[tokio::test]
async fn a_blank_body_is_refused_by_the_bridge_not_sent_as_a_line() {
    use crate::support::server::{caps_form, meta, post_raw, remote};
    let bridge = Bridge::start(Spec {
        command: serve(&[]),
        identity_env: None,
    })
    .await
    .expect("the stdio server starts");
    let url = bridge.mcp_url();
    let s = remote(url.strip_suffix("/mcp").unwrap());
    for body in ["", " \r\n\t "] {
        let r = post_raw(&s, Some("alice"), "tools/list", None, body.into()).await;
        assert_eq!(r.status, 400, "{body:?}: {}", r.text);
        assert_eq!(r.text, elicitkit::stdio::bridge::NOT_SENT_BLANK);
        assert!(r.headers.get(elicitkit::stdio::bridge::NO_REPLY).is_none());
        let said = r.headers.get(elicitkit::stdio::bridge::BRIDGE_SAID);
        assert!(
            said.is_some(),
            "the bridge's own 400 says so: {:?}",
            r.headers
        );
    }
    // Every other reply the bridge makes itself says so too: its status is
    // no status of the server's.
    let http = reqwest::Client::new();
    let own = |r: &reqwest::Response| {
        r.headers()
            .get(elicitkit::stdio::bridge::BRIDGE_SAID)
            .map(|v| v.to_str().unwrap_or_default().to_owned())
    };
    let get = http.get(url).send().await.expect("GET answered");
    assert_eq!(get.status(), 405);
    assert_eq!(
        own(&get).as_deref(),
        Some("a stdio server has no standalone stream")
    );
    let unknown = http
        .post(url)
        .header("Content-Type", "application/json")
        .header("MCP-Session-Id", "no-such-session")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .expect("POST answered");
    assert_eq!(unknown.status(), 404);
    assert_eq!(
        own(&unknown).as_deref(),
        Some("no stdio server process holds this session")
    );
    // The server behind it still answers a real request.
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": meta(&caps_form())}});
    let r = post_raw(&s, Some("alice"), "tools/list", None, list.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("\"tools\""), "{}", r.text);
    bridge.stop().await;
}

/// The bridge as `fuzz` runs it (warm processes): after a line that is not
/// a valid request it sends a `ping`, and once that is answered the line
/// has a grace to be answered before it is called silent (`202`). A server
/// that answers lines concurrently may answer the ping first; on a busy
/// host its reply to the line comes later still. Here the ping takes 200 ms
/// and the line's reply comes 100 ms after it: still the reply, since the
/// grace is twice the ping's round trip. (A fixed 50 ms called it silence:
/// `fuzz` over `serve --stdio` filed a `not-json-rpc` that did not
/// reproduce, with four tests at a time on two cores.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_after_the_fence_ping_and_its_grace_is_still_the_reply() {
    let script = r#"while read l; do case "$l" in
        *'"ping"'*) id=$(echo "$l" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'); sleep 0.2;
            echo "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{}}";;
        *) (sleep 0.3; echo '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"late parse error"}}') & ;;
        esac; done"#;
    let spec = Spec {
        command: Command::new(["sh", "-c", script]),
        identity_env: None,
    };
    let bridge = Bridge::start_with(spec, elicitkit::stdio::Reuse::Warm)
        .await
        .expect("the stdio server starts");
    let reply = reqwest::Client::new()
        .post(bridge.mcp_url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":"#)
        .send()
        .await
        .expect("the bridge answers");
    let status = reply.status().as_u16();
    let text = reply.text().await.unwrap_or_default();
    bridge.stop().await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("late parse error"), "{text}");
}
