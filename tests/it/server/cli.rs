//! `elicitkit serve` as a child process: `--list-flaws`, the one stdout
//! line with the port, and a request against it.
#![cfg(feature = "net")]

use std::process::Command;

use crate::support::serve::{cmd, serve, start};

#[test]
fn list_flaws_prints_every_flaw_with_its_rule() {
    let out = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["serve", "--list-flaws"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for f in elicitkit::server::Flaw::ALL {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(f.name()))
            .expect("flaw listed");
        assert!(line.contains(f.rule()), "{line}");
        // Whether a plain check catches it, or what does.
        let plain = match f.reveal() {
            None => "a plain check exits 1".to_owned(),
            Some(how) => format!("a plain check exits 0; revealed by {how}"),
        };
        let block: Vec<&str> = text.lines().skip_while(|l| *l != line).take(3).collect();
        assert!(
            block.iter().any(|l| l.trim() == plain),
            "{}: {plain:?} not in\n{}",
            f.name(),
            block.join("\n")
        );
    }
}

#[test]
fn serve_prints_its_port_and_answers() {
    let mut child = serve(&[]);
    let base = child.base_url().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"));
    // No transparent huge pages: they ratchet a long run's RSS up to its
    // heap's high-water mark (see `no_transparent_huge_pages`).
    #[cfg(target_os = "linux")]
    {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", child.pid())).expect("/proc status");
        let thp = status.lines().find(|l| l.starts_with("THP_enabled:"));
        if let Some(line) = thp {
            assert!(line.ends_with('0'), "THP left on: {line}");
        }
    }
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let status = |token: Option<&str>| {
        rt.block_on(async {
            let mut rb = reqwest::Client::new().get(format!("{base}/stats"));
            if let Some(t) = token {
                rb = rb.bearer_auth(t);
            }
            rb.send().await.map(|r| r.status().as_u16())
        })
    };
    let (anonymous, authed) = (status(None), status(Some("alice")));
    child.kill();
    assert_eq!(anonymous.ok(), Some(401), "/stats needs credentials");
    assert_eq!(authed.ok(), Some(200));
}

#[test]
fn serve_refuses_a_remote_address_and_bad_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
    let dir = tempfile::tempdir().expect("dir");
    let bad = dir.path().join("tokens");
    std::fs::write(&bad, "only-one-word\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["serve", "--listen", "127.0.0.1:0", "--auth-tokens"])
        .arg(&bad)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}

#[test]
fn help_documents_the_guard_and_anonymous_flags_with_examples() {
    let out = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["serve", "--help"])
        .output()
        .expect("run");
    assert!(out.status.success());
    // clap wraps the help text: compare with line breaks folded away
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for example in [
        "--anonymous-principal demo",
        "--allowed-origin https://",
        "--allowed-host mcp.",
        "--flaw no-origin-check",
        "--header-read-timeout 5s",
        "--body-read-timeout 10s",
        "--keep-alive-timeout 5s",
        "--max-connections 2000",
        "--session-idle-timeout 2m",
        "--max-sessions-per-principal 8",
        "--max-sessions 10000",
        "--retention 1h",
        "--sweep-interval 5s",
        "--clock-skew 1s",
        "--state-ttl 2m",
        "[default: 10s]",
        "[default: 8192]",
        "no grace",
        "never extends",
    ] {
        assert!(text.contains(example), "{example} missing from:\n{text}");
    }
}

#[test]
fn anonymous_principal_serves_requests_without_a_token() {
    let mut child = serve(&["--anonymous-principal", "guest"]);
    let base = child.base_url().to_owned();
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let statuses = rt.block_on(async {
        let http = reqwest::Client::new();
        let body =
            serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
            .to_string();
        let post = |token: Option<&str>| {
            let mut rb = http
                .post(format!("{base}/mcp"))
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/list")
                .body(body.clone());
            if let Some(t) = token {
                rb = rb.header("authorization", t);
            }
            rb.send()
        };
        let none = post(None).await.map(|r| r.status().as_u16());
        let bad = post(Some("Basic x")).await.map(|r| r.status().as_u16());
        (none.ok(), bad.ok())
    });
    child.kill();
    assert_eq!(
        statuses,
        (Some(200), Some(401)),
        "no token → guest; a bad one → 401"
    );
}

#[test]
fn allow_remote_warns_that_demo_auth_takes_any_token() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr");
    let mut c = cmd();
    c.args(["--workers", "1", "--allow-remote"])
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = start(c);
    assert!(
        child.base_url().starts_with("http://127.0.0.1:"),
        "{}",
        child.base_url()
    );
    child.kill();
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(err.contains("ANY bearer token is accepted"), "{err}");
    assert!(err.contains("--auth-tokens"), "{err}");
    // And an unspecified address without a public URL is refused outright.
    let out = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["serve", "--listen", "0.0.0.0:0", "--allow-remote"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public-url"));
}

/// Issue 45 item 5: SIGTERM (what Kubernetes sends) is logged, the request
/// in flight gets its answer, and the process exits 0 within the grace,
/// instead of dying silently with 143 (seen so before).
#[test]
fn sigterm_is_logged_and_the_request_in_flight_is_answered() {
    use std::io::{Read as _, Write as _};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("serve.log");
    let mut c = cmd();
    c.env("RUST_LOG", "info")
        .stderr(std::fs::File::create(&log_path).unwrap());
    let (mut child, base) = crate::support::serve::spawn_child(c);
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let addr = base.trim_start_matches("http://");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer alice\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMCP-Method: tools/list\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    // The head and half the body: a request in flight.
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(&body[..body.len() / 2]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    assert!(crate::support::serve::signal(child.id(), "TERM"));
    while !log().contains("shutting down") && sent.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = log();
    assert!(
        text.contains("shutting down") && text.contains("SIGTERM"),
        "no shutdown line: {text}"
    );
    conn.write_all(&body[body.len() / 2..]).unwrap();
    let mut reply = String::new();
    let _ = conn.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 200 "), "{reply:?}");
    assert!(reply.contains("\"tools\""), "{reply:?}");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if sent.elapsed() > Duration::from_secs(8) {
            let _ = child.kill();
            panic!("still running 8 s after SIGTERM: {}", log());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{}", log());
    assert!(
        sent.elapsed() < Duration::from_secs(7),
        "{:?}",
        sent.elapsed()
    );
    assert!(log().contains("stopped"), "{}", log());
    let help = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["serve", "--help"])
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("SIGTERM") && help.contains("5 s"), "{help}");
}
