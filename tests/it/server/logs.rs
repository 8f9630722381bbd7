//! `elicitkit serve` logs, read from a file as an operator would: client
//! strings cannot forge lines or colour the terminal, a log file carries
//! no colour codes, every security event names principal and peer, no
//! token or typed API key ever appears, and a flood of refusals is a line
//! per window, not a line each.
#![cfg(feature = "net")]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::serve::Serve;
use crate::support::server::*;
use serde_json::json;

/// `serve --workers 1` logging at INFO to `DIR/serve.log` (returned with
/// it), its command first given to `more` for further arguments.
fn serve_logging(dir: &Path, more: impl FnOnce(&mut Command)) -> (Serve, PathBuf) {
    let log_path = dir.join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut c = crate::support::serve::cmd();
    c.args(["--workers", "1"])
        .env("RUST_LOG", "info")
        .stderr(log);
    more(&mut c);
    (crate::support::serve::start(c), log_path)
}

/// The lines of `text` that hold `event`.
fn lines_with<'a>(text: &'a str, event: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(event)).collect()
}

const ALICE_TOKEN: &str = "s3cr3t-token-alice";
const BOB_TOKEN: &str = "s3cr3t-token-bob";
const API_KEY: &str = "sk-live-SECRETSECRET1234";
const EVIL_NAME: &str = "evil\nINFO forged: admin logged in \u{1b}[31mred\u{1b}[0m";

#[tokio::test]
async fn logs_escape_client_text_name_principal_and_peer_and_hold_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{ALICE_TOKEN} alice\n{BOB_TOKEN} bob\n")).unwrap();
    let (mut child, log_path) = serve_logging(dir.path(), |c| {
        c.arg("--auth-tokens").arg(&tokens).env_remove("NO_COLOR");
    });
    let base = child.base_url().to_owned();
    let s = remote(&base);

    // A client name that tries to forge a line and colour the terminal.
    let r = legacy_post(
        &s,
        ALICE_TOKEN,
        None,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": LEGACY, "capabilities": {"elicitation":{}},
            "clientInfo": {"name": EVIL_NAME, "version":"1\r\n"}}}),
    )
    .await;
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    // Security events: a foreign Origin, a tampered state, a bad token, a
    // session used by another principal.
    let r = s
        .http
        .post(&s.url)
        .bearer_auth(ALICE_TOKEN)
        .header("origin", r#"http://evil.example" principal="root"#)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let first = call(
        &s,
        ALICE_TOKEN,
        1,
        "deploy",
        json!({"service":"x"}),
        &caps_form(),
    )
    .await;
    let mut bad = first.state();
    bad.replace_range(10..11, if &bad[10..11] == "A" { "B" } else { "A" });
    let r = retry(
        &s,
        ALICE_TOKEN,
        2,
        "deploy",
        json!({"service":"x"}),
        json!({}),
        &bad,
        &caps_form(),
    )
    .await;
    assert_eq!(r.error_code(), -32602, "{}", r.text);
    let r = call(&s, "not-a-token", 3, "stats", json!({}), &json!({})).await;
    assert_eq!(r.status, 401);
    let r = legacy_post(
        &s,
        BOB_TOKEN,
        Some(&sid),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 403);
    // A typed API key, on the flow page.
    let f = to_final_with(&s, ALICE_TOKEN, API_KEY).await;
    assert_eq!(f.result_type(), "complete", "{}", f.text);

    child.kill();
    let text = std::fs::read_to_string(&log_path).unwrap();
    if std::env::var_os("SHOW_LOG").is_some() {
        eprintln!("{text}");
    }

    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );
    for l in text.lines() {
        assert!(!l.starts_with("INFO forged"), "a forged line: {l}");
    }
    let created = text
        .lines()
        .find(|l| l.contains("legacy session created"))
        .expect("the session is logged");
    assert!(
        created.contains(r#"client="evil\nINFO forged: admin logged in \u{1b}[31mred\u{1b}[0m""#),
        "{created}"
    );
    assert!(created.contains(r#"version="1\r\n""#), "{created}");
    for (event, who) in [
        ("refused by the Origin/Host check", "principal=\"alice\""),
        ("requestState rejected", "principal=\"alice\""),
        ("no valid credentials", "principal=?"),
        ("session used by another principal", "principal=\"bob\""),
    ] {
        let l = text
            .lines()
            .find(|l| l.contains(event))
            .unwrap_or_else(|| panic!("no {event:?} in:\n{text}"));
        assert!(l.contains("peer=127.0.0.1:"), "{l}");
        assert!(l.contains(who), "{l}");
    }
    // A header value cannot fake a field either.
    assert!(
        text.contains(r#"value="http://evil.example\" principal=\"root""#),
        "{text}"
    );
    for secret in [ALICE_TOKEN, BOB_TOKEN, API_KEY, "SECRETSECRET"] {
        assert!(!text.contains(secret), "{secret} in the log:\n{text}");
    }
}

/// `connect_billing` with `key` typed on its page; the final reply.
async fn to_final_with(s: &Srv, user: &str, key: &str) -> Reply {
    let first = call(s, user, 1, "connect_billing", json!({}), &caps_both()).await;
    let url = first.result()["inputRequests"]["billing"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    submit_flow_page(s, &url, user, key).await;
    retry(
        s,
        user,
        2,
        "connect_billing",
        json!({}),
        json!({"billing":{"action":"accept"}}),
        &first.state(),
        &caps_both(),
    )
    .await
}

/// Issue 28 item 5: retries of a completed request are routine (a retry
/// storm sends thousands): no INFO line each, but `/stats` counts them.
#[tokio::test]
async fn refused_replays_are_counted_not_logged_at_info() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, log_path) = serve_logging(dir.path(), |_| {});
    let s = remote(child.base_url());
    let f = to_final(&s, "alice", "deploy").await;
    assert_eq!(f.send(&s, "alice", 10).await.result_type(), "complete");
    for i in 0..5 {
        let r = f.send(&s, "alice", 11 + i).await;
        assert_eq!(r.reason(), "replayed", "{}", r.text);
    }
    let replayed = stats(&s).await["states"]["rejected"]["replayed"].clone();
    child.kill();
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(replayed, 5, "every refused replay is counted");
    assert!(text.contains("INFO"), "the log is at INFO:\n{text}");
    let lines = text
        .lines()
        .filter(|l| l.contains("refused with its outcome"))
        .count();
    assert_eq!(lines, 0, "no INFO line per replay:\n{text}");
}

/// Issue 28 item 5: a flood of requests without credentials is a flood of
/// 401s, not of log lines: the first is logged at once, the rest of the
/// 10 s window only counted, and the next line says how many it held back.
#[tokio::test]
async fn a_flood_of_401s_logs_a_line_per_window_with_the_count_held_back() {
    const FLOOD: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, log_path) = serve_logging(dir.path(), |_| {});
    let s = remote(child.base_url());
    let unauthenticated = || s.http.post(&s.url).json(&json!({})).send();
    let mut first = None;
    for _ in 0..FLOOD {
        let r = unauthenticated().await.unwrap();
        assert_eq!(r.status().as_u16(), 401);
        first.get_or_insert_with(std::time::Instant::now);
    }
    // One more once the window since the first line is over.
    let window_over = first.unwrap() + std::time::Duration::from_millis(10_500);
    tokio::time::sleep_until(window_over.into()).await;
    assert_eq!(unauthenticated().await.unwrap().status().as_u16(), 401);
    child.kill();
    let text = std::fs::read_to_string(&log_path).unwrap();
    let lines = lines_with(&text, "no valid credentials");
    assert_eq!(lines.len(), 2, "one line per window, not per 401:\n{text}");
    assert!(lines[0].contains("suppressed=0"), "{}", lines[0]);
    let held_back = format!("suppressed={}", FLOOD - 1);
    assert!(lines[1].contains(&held_back), "{}", lines[1]);
    assert!(lines[1].contains("peer=127.0.0.1:"), "{}", lines[1]);
}

/// Issue 28 item 5: under demo auth one client inventing a name per
/// request opens a session per name (until the session table is full);
/// the log holds one "legacy session created" line for the window, not
/// one per session.
#[tokio::test]
async fn sessions_opened_under_invented_names_are_a_line_per_window() {
    const NAMES: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, log_path) = serve_logging(dir.path(), |_| {});
    let s = remote(child.base_url());
    for i in 0..NAMES {
        let r = legacy_post(
            &s,
            &format!("invented-{i}"),
            None,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "flood", "version":"1"}}}),
        )
        .await;
        assert_eq!(r.status().as_u16(), 200);
        assert!(r.headers().contains_key("mcp-session-id"));
    }
    child.kill();
    let text = std::fs::read_to_string(&log_path).unwrap();
    let lines = lines_with(&text, "legacy session created");
    assert_eq!(lines.len(), 1, "one line per window:\n{text}");
    assert!(lines[0].contains("suppressed=0"), "{}", lines[0]);
}
