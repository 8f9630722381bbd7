//! The load generator's HTTP/1.1 lane: MRTR flows against the reference
//! server, reconnection after the server closes, timeouts and unreachable
//! targets — all on 127.0.0.1.

use elicitkit::client::{
    Endpoint, FlowConfig, H1Lane, LegFailure, ModernFlow, Outcome, RoundTrip, Step, Target,
    ToolCall,
};
use elicitkit::server::{self, ServerConfig};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a flow whose every request (MCP endpoint and same-origin pages)
/// goes over `lane`.
async fn run(lane: &mut H1Lane, tool: &str) -> RoundTrip {
    let mut flow = ModernFlow::new(
        ToolCall::new(tool, json!({"service": "api"})),
        FlowConfig::default(),
    );
    let mut out = flow.start();
    loop {
        assert!(lane.uri_for(&out.target).is_some(), "{:?}", out.target);
        let step = match lane.exchange(out, TIMEOUT).await {
            Ok(r) => flow.on_reply(r),
            Err((f, t)) => flow.on_failure(f, t),
        };
        match step {
            Step::Send(next) => out = next,
            Step::Done(rt) => return rt,
        }
    }
}

#[tokio::test]
async fn flows_run_over_one_lane() {
    let srv = server::start(ServerConfig::default()).await.unwrap();
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(srv.mcp_url(), "alice")).unwrap();
    for _ in 0..20 {
        let rt = run(&mut lane, "deploy").await;
        assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
        assert_eq!(rt.legs.len(), 2);
        assert!(rt.legs[0].server_app.is_some(), "Server-Timing is read");
    }
    // A URL-mode flow: its page GET and form POST go over the same lane.
    for _ in 0..3 {
        let rt = run(&mut lane, "connect_billing").await;
        assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
        let names: Vec<_> = rt.legs.iter().map(|l| &*l.name).collect();
        assert!(names.contains(&"flow page GET"), "{names:?}");
        assert!(names.contains(&"flow page POST"), "{names:?}");
    }
    // A page on another origin is refused without sending anything.
    let elsewhere = elicitkit::client::Outgoing {
        target: Target::Page {
            url: "http://127.0.0.2:9/flow".into(),
        },
        ..ModernFlow::new(ToolCall::new("t", json!({})), FlowConfig::default()).start()
    };
    assert!(lane.uri_for(&elsewhere.target).is_none());
    let (failure, _) = lane.exchange(elsewhere, TIMEOUT).await.unwrap_err();
    assert!(matches!(failure, LegFailure::Transport(ref w) if w.contains("origin")));
    // Another principal without a token configured: a transport failure,
    // not a request without credentials.
    let mut flow = ModernFlow::new(ToolCall::new("stats", json!({})), FlowConfig::default());
    let mut out = flow.start();
    out.auth = elicitkit::client::Auth::Other;
    let err = lane.exchange(out, TIMEOUT).await.unwrap_err();
    assert!(matches!(err.0, LegFailure::Transport(ref w) if w.contains("other principal")));
}

/// A server that answers each connection's first request with
/// `reply(request text)`, then closes it; counts connections.
async fn one_shot_server(reply: fn(&str) -> String) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                // Read the head and the Content-Length body.
                loop {
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&seen).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if seen.len() >= end + 4 + len {
                            break;
                        }
                    }
                }
                let answer = reply(&String::from_utf8_lossy(&seen));
                let _ = s.write_all(answer.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (url, count)
}

const COMPLETE: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 59\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}";

#[tokio::test]
async fn a_closed_connection_is_reopened_before_the_next_request() {
    assert_eq!(COMPLETE.split("\r\n\r\n").nth(1).unwrap().len(), 59);
    let (url, conns) = one_shot_server(|_| COMPLETE.to_owned()).await;
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(url, "alice")).unwrap();
    for i in 1..=3 {
        let mut flow = ModernFlow::new(ToolCall::new("t", json!({})), FlowConfig::default());
        let out = flow.start();
        let reply = lane.exchange(out, TIMEOUT).await.expect("reply");
        assert_eq!(reply.status, 200);
        let rt = match flow.on_reply(reply) {
            Step::Done(rt) => rt,
            Step::Send(o) => panic!("unexpected {o:?}"),
        };
        assert!(rt.outcome.is_ok(), "{:?}", rt.outcome);
        // Give the close time to arrive, so the lane must notice it.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(conns.load(Ordering::SeqCst), i);
    }
}

#[tokio::test]
async fn a_silent_server_times_out_and_a_dead_port_fails_fast() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s); // accept, never answer
        }
    });
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(url, "alice")).unwrap();
    let mut flow = ModernFlow::new(ToolCall::new("t", json!({})), FlowConfig::default());
    let out = flow.start();
    let (failure, elapsed) = lane
        .exchange(out.clone(), Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(failure, LegFailure::Timeout);
    assert!(elapsed >= Duration::from_millis(200));

    // A port nobody listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/mcp", free.local_addr().unwrap());
    drop(free);
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(dead, "alice")).unwrap();
    let (failure, _) = lane.exchange(out.clone(), TIMEOUT).await.unwrap_err();
    assert!(
        matches!(failure, LegFailure::Transport(ref w) if w.contains("cannot connect")),
        "{failure:?}"
    );
}

#[tokio::test]
async fn changed_headers_are_sent_as_changed() {
    // Echo the request head back as the body.
    let (url, _) = one_shot_server(|req| {
        let head = req.split("\r\n\r\n").next().unwrap_or("").to_owned();
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{head}",
            head.len()
        )
    })
    .await;
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(url, "alice")).unwrap();
    let mut flow = ModernFlow::new(ToolCall::new("t", json!({})), FlowConfig::default());
    let mut out = flow.start();
    for (value, pad) in [("one", 0), ("one", 0), ("two", 3), ("two", 0)] {
        // A new list each time: equal lists that are not the same one
        // ("one" twice) reuse the parsed headers, a changed one does not.
        // A body that grows keeps its Content-Length true.
        out.body.extend(std::iter::repeat_n(b' ', pad));
        let mut headers: Vec<_> = out
            .headers
            .iter()
            .filter(|(k, _)| k != "X-Probe")
            .cloned()
            .collect();
        headers.push(("X-Probe".into(), value.into()));
        out.headers = headers.into();
        let reply = lane.exchange(out.clone(), TIMEOUT).await.expect("echo");
        let head = String::from_utf8_lossy(&reply.body).to_ascii_lowercase();
        assert!(head.contains(&format!("x-probe: {value}")), "{head}");
        assert!(head.contains("authorization: bearer alice"), "{head}");
        assert!(head.contains("mcp-method: tools/call"), "{head}");
        let lengths: Vec<_> = head
            .lines()
            .filter(|l| l.starts_with("content-length:"))
            .collect();
        assert_eq!(
            lengths,
            [format!("content-length: {}", out.body.len())],
            "{head}"
        );
    }
    // Another principal's leg carries its token, once, and the next leg
    // its own again (the cached copy holds the first principal's).
    lane.authorize(
        &http::HeaderValue::from_static("Bearer alice"),
        &http::HeaderValue::from_static("Bearer bob"),
    );
    for (auth, who) in [
        (elicitkit::client::Auth::Other, "bob"),
        (elicitkit::client::Auth::Primary, "alice"),
    ] {
        out.auth = auth;
        let reply = lane.exchange(out.clone(), TIMEOUT).await.expect("echo");
        let head = String::from_utf8_lossy(&reply.body).to_ascii_lowercase();
        let tokens: Vec<_> = head
            .lines()
            .filter(|l| l.starts_with("authorization:"))
            .collect();
        assert_eq!(tokens, [format!("authorization: bearer {who}")], "{head}");
    }
    // An empty body goes without one, as hyper sends it.
    out.body.clear();
    let reply = lane.exchange(out.clone(), TIMEOUT).await.expect("echo");
    let head = String::from_utf8_lossy(&reply.body).to_ascii_lowercase();
    assert!(!head.contains("content-length"), "{head}");
}

#[tokio::test]
async fn the_answering_instance_is_the_header_else_the_peer() {
    // The reference server names itself in `elicitkit-instance`.
    let srv = server::start(ServerConfig {
        instance_id: Some("srv-1".into()),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(srv.mcp_url(), "alice")).unwrap();
    assert_eq!(lane.answered_by(), None, "nothing sent yet");
    let rt = run(&mut lane, "deploy").await;
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(lane.answered_by(), Some(&b"srv-1"[..]));
    // A server without the header: its address.
    let (url, _) = one_shot_server(|_| COMPLETE.to_owned()).await;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(url, "alice")).unwrap();
    let mut flow = ModernFlow::new(ToolCall::new("t", json!({})), FlowConfig::default());
    let out = flow.start();
    lane.exchange(out.clone(), TIMEOUT).await.expect("reply");
    assert_eq!(lane.answered_by(), Some(addr.as_bytes()));
    // The connection is closed after each reply: the next one, on a new
    // connection, still names the same peer; a failed request names none.
    tokio::time::sleep(Duration::from_millis(20)).await;
    lane.exchange(out.clone(), TIMEOUT).await.expect("reply");
    assert_eq!(lane.answered_by(), Some(addr.as_bytes()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut lane = H1Lane::for_endpoint(&Endpoint::new(silent, "alice")).unwrap();
    let _ = lane.exchange(out, Duration::from_millis(100)).await;
    assert_eq!(
        lane.answered_by(),
        None,
        "a timeout has no answering instance"
    );
    drop(listener);
}
