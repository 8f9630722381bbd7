//! Issue 51, as an attacker would go about it: no single client, and no
//! crowd of made-up names (demo auth takes any token), can take the server
//! from everyone else; bodies too costly to parse are refused before they
//! are parsed. Each test asserts that legitimate requests are still
//! answered; each was seen failing before the limit it tests.
#![cfg(feature = "net")]

use crate::support::raw::*;
use crate::support::server::*;
use elicitkit::server::ServerConfig;
use serde_json::{Value, json};

/// A `tools/list` whose params hold `extra` (raw JSON text) under `x`.
fn tools_list_with(extra: &str) -> String {
    let meta = meta(&json!({}));
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{meta},"x":{extra}}}}}"#
    )
}

/// Issue 51 item 5: 88,000 object keys in a body under --max-body are
/// refused with a 400 naming the limit, before they are parsed; so is
/// nesting past 64 levels; a plain body of the same size is served.
/// (Seen failing before: the 88,000-key body was parsed and answered 200.)
#[tokio::test]
async fn a_body_too_costly_to_parse_is_refused_before_it_is_parsed() {
    let s = start(ServerConfig::default()).await;
    let keys: Vec<String> = (0..88_000).map(|i| format!("\"k{i}\":0")).collect();
    let costly = tools_list_with(&format!("{{{}}}", keys.join(",")));
    assert!(costly.len() < 1 << 20, "{} bytes", costly.len());
    let r = post_raw(&s, Some("alice"), "tools/list", None, costly).await;
    assert_eq!((r.status, r.error_code()), (400, -32600), "{}", r.text);
    assert!(r.text.contains("--max-json-members"), "{}", r.text);
    let deep = tools_list_with(&format!(
        "{}{}{}",
        "[".repeat(100),
        "]".repeat(100),
        " ".repeat(5000)
    ));
    let r = post_raw(&s, Some("alice"), "tools/list", None, deep).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("deeper than 64"), "{}", r.text);
    let plain = tools_list_with(&Value::String("x".repeat(900_000)).to_string());
    let r = post_raw(&s, Some("alice"), "tools/list", None, plain).await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    s.server.shutdown().await;
}

/// The path of a new URL flow of `user` (`/flow/<id>`).
async fn flow_path(s: &Srv, user: &str) -> String {
    let r = call(s, user, 1, "connect_billing", json!({}), &caps_both()).await;
    let url = r.result()["inputRequests"]["billing"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    url.trim_start_matches(&s.server.base_url()).to_owned()
}

/// Sends `head` (and no body) on a new connection: the reply, if one comes
/// within 2 s.
async fn reply_to_head(s: &Srv, head: &str) -> Option<String> {
    use tokio::io::AsyncWriteExt as _;
    let mut c = tokio::net::TcpStream::connect(s.server.addr()).await.ok()?;
    c.write_all(head.as_bytes()).await.ok()?;
    let (bytes, _) = read_to_close(&mut c, std::time::Duration::from_secs(2)).await?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Issue 51 item 2: what a form POST would be refused for whatever its
/// body says is refused from its head, before a byte of the body is read
/// (so a caller without credentials holds no memory and no connection
/// for it): a sign-in without Origin, without the CSRF cookie, or
/// declaring more than 16 KiB; a flow page that does not exist or is
/// someone else's, or a form declaring more than 16 KiB. (Seen failing
/// before: each waited for its body, and /login read up to 16 KiB of it
/// before any check.)
#[tokio::test]
async fn form_posts_are_refused_from_their_heads() {
    let s = start(ServerConfig {
        body_read_timeout: std::time::Duration::from_secs(20),
        ..ServerConfig::default()
    })
    .await;
    let (base, host) = (s.server.base_url(), s.server.addr());
    let form = s.http.get(format!("{base}/flow/x")).send().await.unwrap();
    let csrf_cookie = set_cookie(form.headers(), "ek_login").unwrap();
    let csrf_cookie = csrf_cookie.split(';').next().unwrap().to_owned();
    let (alices, bobs) = (flow_path(&s, "alice").await, flow_path(&s, "bob").await);
    let post = |path: &str, extra: &str, length: usize| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\n{extra}Content-Length: {length}\r\n\r\n"
        )
    };
    let origin = format!("Origin: {}\r\n", s.server.base_url());
    let with_cookie = format!("{origin}Cookie: {csrf_cookie}\r\n");
    let bearer = "Authorization: Bearer alice\r\n";
    let unknown = format!("/flow/{}", "a".repeat(elicitkit::store::ID_LEN));
    for (what, head, status) in [
        (
            "sign-in without Origin",
            post("/login", "", 10 << 20),
            "403",
        ),
        (
            "sign-in without its CSRF cookie",
            post("/login", &origin, 100),
            "403",
        ),
        (
            "sign-in of 10 MiB",
            post("/login", &with_cookie, 10 << 20),
            "413",
        ),
        (
            "a flow that does not exist",
            post(&unknown, bearer, 100),
            "404",
        ),
        ("another principal's flow", post(&bobs, bearer, 100), "403"),
        ("a form of 20 kB", post(&alices, bearer, 20_000), "413"),
    ] {
        let reply = reply_to_head(&s, &head).await;
        let reply = reply.unwrap_or_else(|| panic!("{what}: no reply from the head alone"));
        assert!(
            reply.starts_with(&format!("HTTP/1.1 {status} ")),
            "{what}: {reply}"
        );
    }
    // The pages still work: a sign-in, then the flow submitted.
    let carols = flow_path(&s, "carol").await;
    let session = sign_in(&s, "carol", &carols).await;
    assert!(session.starts_with("ek_session="));
    submit_flow_page(
        &s,
        &format!("{base}{alices}"),
        "alice",
        "sk-test-0123456789abcd",
    )
    .await;
    s.server.shutdown().await;
}

/// Attacker slots that each send `head` and `body` (and then nothing) on a
/// new connection, read whatever comes, and start over 10 ms after the
/// server closes it, until dropped: the churn of an attacker who keeps a
/// resource full.
struct Churn {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    slots: Vec<tokio::task::JoinHandle<()>>,
}

impl Churn {
    fn start(addr: std::net::SocketAddr, slots: Vec<(String, Vec<u8>)>) -> Churn {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let slots = slots
            .into_iter()
            .map(|(head, body)| {
                let stop = stop.clone();
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(mut c) = tokio::net::TcpStream::connect(addr).await else {
                            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                            continue;
                        };
                        let _ = c.write_all(head.as_bytes()).await;
                        let _ = c.write_all(&body).await;
                        // Held until the server closes it (or 60 s).
                        let mut buf = [0u8; 4096];
                        let _ = tokio::time::timeout(std::time::Duration::from_secs(60), async {
                            while matches!(c.read(&mut buf).await, Ok(n) if n > 0) {}
                        })
                        .await;
                        // Then at once again (10 ms: up to 100 a second a slot).
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                })
            })
            .collect();
        Churn { stop, slots }
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in &self.slots {
            s.abort();
        }
    }
}

/// `/stats` on a new connection; `Null` when it could not be had (a server
/// that lets nothing in, as under these attacks before they were fixed).
async fn stats_now(s: &Srv) -> Value {
    let r = fresh(s)
        .http
        .get(format!("{}/stats", s.server.base_url()))
        .bearer_auth("reader")
        .send()
        .await;
    match r {
        Ok(r) => r.json().await.unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

/// A client of `s` that opens a new connection for each request (a pooled
/// one would slip past the cap, or be shed as idle under it).
fn fresh(s: &Srv) -> Srv {
    let mut fresh = remote(&s.server.base_url());
    fresh.http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .unwrap();
    fresh
}

/// `n` legitimate `tools/list` requests, each as its own user on a new
/// connection, one after the other, sent from a thread and runtime of
/// their own (as an independent client would, not queued behind the
/// attackers' tasks): how many were answered, and what the others got.
async fn legit_answered(s: &Srv, n: usize) -> (usize, Vec<String>) {
    let base = s.server.base_url();
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(legit_from(&base, n))
    })
    .await
    .expect("the legitimate client")
}

async fn legit_from(base: &str, n: usize) -> (usize, Vec<String>) {
    let fresh = fresh(&remote(base));
    let (mut ok, mut failed) = (0, Vec::new());
    for i in 0..n {
        let user = format!("legit-{i}");
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": meta(&json!({}))}});
        let sent = fresh
            .http
            .post(&fresh.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/list")
            .bearer_auth(&user)
            .body(body.to_string())
            .send()
            .await;
        match sent {
            Ok(r) => {
                let r = to_reply(r).await;
                if r.result_type() == "complete" {
                    ok += 1;
                } else {
                    failed.push(format!("HTTP {}: {}", r.status, r.text));
                }
            }
            Err(e) => failed.push(format!("{e:?}")),
        }
    }
    (ok, failed)
}

/// Issue 51 route 2: nine made-up principals, eight bodies each at the
/// size limit stalled after their last byte but one (and sent again as
/// soon as the server closes one), fill the server-wide body budget (9 ×
/// 64 KiB shares over a 512 KiB budget). Legitimate requests still get in:
/// the largest holder's body is cut off for each; bytes in flight never
/// pass the budget. (Seen failing before: every other principal's POST got
/// 503 by its Content-Length.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nine_made_up_principals_cannot_fill_the_body_budget() {
    let (max_body, budget) = (8 * 1024, 512 * 1024);
    let s = start(ServerConfig {
        max_body,
        max_body_in_flight: budget,
        max_body_in_flight_per_principal: budget / 8,
        ..ServerConfig::default()
    })
    .await;
    let slots = (0..72)
        .map(|i| {
            let head = post_head(&s, max_body, Some(&format!("made-up-{}", i % 9)));
            (head, vec![b' '; max_body - 1])
        })
        .collect();
    let churn = Churn::start(s.server.addr(), slots);
    stats_until(&s, |v| {
        v["request_bodies"]["bytes_in_flight"].as_u64().unwrap_or(0) as usize > budget - max_body
    })
    .await;
    let (ok, failed) = legit_answered(&s, 80).await;
    let v = stats(&s).await;
    drop(churn);
    assert!(
        ok >= 79,
        "{ok} of 80 answered: {:?}",
        &failed[..failed.len().min(3)]
    );
    assert!(
        v["request_bodies"]["bytes_in_flight"].as_u64().unwrap() as usize <= budget,
        "{v}"
    );
    assert!(
        v["request_bodies"]["cut_for_others"].as_u64().unwrap() > 0,
        "{v}"
    );
    s.server.shutdown().await;
}

/// A `connect_billing` first call (a pending URL flow in the store) as
/// `user`: its reply.
async fn start_flow(s: &Srv, user: &str) -> Reply {
    call(s, user, 1, "connect_billing", json!({}), &caps_both()).await
}

/// Issue 51 route 4: one principal's pending URL flows cannot fill the
/// memory store (`--store-memory-budget`): it holds at most an eighth of
/// it (then 429 with `Retry-After`: when its first flow expires); and a
/// crowd of made-up principals that does fill it gives way, pending flow
/// by pending flow, to legitimate users. (Seen failing before: mallory
/// alone filled the store, and every other user's connect_billing got 503
/// "store is full".)
#[tokio::test]
async fn one_principal_or_a_crowd_cannot_fill_the_store_with_pending_flows() {
    let s = start(ServerConfig {
        store_memory_budget: 256 * 1024,
        ..ServerConfig::default()
    })
    .await;
    let mut mallory = 0;
    let refused = loop {
        let r = start_flow(&s, "mallory").await;
        if r.result_type() != "input_required" {
            break r;
        }
        mallory += 1;
        assert!(mallory <= 1000, "never refused");
    };
    // Her pending records fill her eighth of the budget, as the store
    // counts them (/stats memory), and no more.
    let held = &stats(&s).await["memory"]["url_records"];
    let (bytes, each) = (
        held["bytes"].as_u64().unwrap(),
        held["bytes_each"].as_u64().unwrap(),
    );
    let share = 256 * 1024 / 8;
    assert!(
        bytes <= share && bytes + each > share && held["count"] == mallory,
        "mallory holds {mallory} pending flows: {held}"
    );
    assert_eq!(refused.status, 429, "{}", refused.text);
    let wait: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (500..=600).contains(&wait),
        "Retry-After {wait}: the 10-minute state TTL"
    );
    // Seven more made-up names fill the store.
    'fill: for i in 0..1000 {
        let name = format!("made-up-{i}");
        for _ in 0..mallory {
            if start_flow(&s, &name).await.result_type() != "input_required" {
                break 'fill;
            }
        }
    }
    let mut answered = 0;
    for i in 0..80 {
        answered += usize::from(
            start_flow(&s, &format!("legit-{i}")).await.result_type() == "input_required",
        );
    }
    assert!(answered >= 79, "{answered} of 80 legitimate flows started");
    let v = stats(&s).await;
    let memory = &v["memory"];
    assert!(
        memory["held_bytes"].as_u64().unwrap() <= 256 * 1024,
        "{memory}"
    );
    assert!(v["store"]["evicted"].as_u64().unwrap() >= 79, "{v}");
    s.server.shutdown().await;
}

/// A raw 2025-11-25 `tools/call deploy` on session `sid` of `user`: a head
/// and its body. Its elicitation is never answered by the attacker.
fn legacy_deploy(s: &Srv, user: &str, sid: &str, id: usize) -> (String, Vec<u8>) {
    let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"deploy","arguments":{"service":"web"}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {user}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\nContent-Length: {}\r\n\r\n",
        s.server.addr(),
        body.len()
    );
    (head, body.into_bytes())
}

/// Polls `/stats` (as a legitimate reader, on a fresh connection) until
/// `open` connections are open, at most 10 s.
async fn until_open(s: &Srv, open: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let reader = fresh(s);
    while std::time::Instant::now() < deadline {
        if let Ok(r) = reader
            .http
            .get(format!("{}/stats", s.server.base_url()))
            .bearer_auth("reader")
            .send()
            .await
            && let Ok(v) = r.json::<Value>().await
            && v["connections"]["open"].as_u64().unwrap_or(0) >= open
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Connections open within the cap plus those asked to go and still
/// closing (at most half as many more: beyond, new ones are refused).
fn open_within(v: &Value, cap: usize) -> bool {
    let allowed = cap + elicitkit::server::accept::closing_allowance(cap);
    v["connections"]["open"].as_u64().unwrap_or(u64::MAX) <= allowed as u64
}

/// Issue 51 route 1: 2025-11-25 `tools/call` streams whose elicitation is
/// never answered hold their connections until the 30 s elicitation
/// timeout. One token (one session) cannot hold more than its share of
/// the cap (a request beyond it gets 429); a crowd of made-up names, one
/// stream each, filling the cap is shed under pressure, largest holder
/// first, for newcomers. Legitimate requests are answered either way, and
/// the connections open stay near the cap. (Seen failing before:
/// the streams held the cap and legitimate requests got 503.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_streams_of_one_token_or_a_crowd_cannot_hold_the_cap() {
    let cap = 100;
    let s = start(ServerConfig {
        max_connections: cap,
        ..ServerConfig::default()
    })
    .await;
    // One token, one session, 150 streams.
    let sid = legacy_init(&s, "mallory", caps_form()).await;
    let one = Churn::start(
        s.server.addr(),
        (0..150)
            .map(|i| legacy_deploy(&s, "mallory", &sid, i))
            .collect(),
    );
    until_open(&s, 64).await;
    let (ok, failed) = legit_answered(&s, 80).await;
    let v = stats_now(&s).await;
    drop(one);
    assert!(
        ok >= 79,
        "one token: {ok} of 80: {:?} {v}",
        &failed[..failed.len().min(3)]
    );
    assert!(v["connections"]["over_share"].as_u64().unwrap() > 0, "{v}");
    assert!(open_within(&v, cap), "{v}");
    // A crowd: 150 made-up names, one stream each.
    let mut slots = Vec::new();
    for i in 0..150 {
        let name = format!("made-up-{i}");
        let sid = legacy_init(&s, &name, caps_form()).await;
        slots.push(legacy_deploy(&s, &name, &sid, i));
    }
    let crowd = Churn::start(s.server.addr(), slots);
    until_open(&s, cap as u64 - 5).await;
    let (ok, failed) = legit_answered(&s, 80).await;
    let v = stats_now(&s).await;
    drop(crowd);
    assert!(
        ok >= 79,
        "a crowd: {ok} of 80: {:?} {v}",
        &failed[..failed.len().min(3)]
    );
    assert!(
        v["connections"]["shed_under_pressure"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert!(open_within(&v, cap), "{v}");
    s.server.shutdown().await;
}

/// Issue 51 item 1: a 2025-11-25 stream shed under pressure ends as the
/// protocol would have it, not with a cut: the pending elicitation is
/// withdrawn (`notifications/cancelled` naming it) and the call answered
/// with a JSON-RPC error (`data.reason` `shed`).
#[tokio::test]
async fn a_stream_shed_under_pressure_ends_with_a_cancel_and_an_error() {
    let s = start(ServerConfig {
        max_connections: 2,
        ..ServerConfig::default()
    })
    .await;
    let mut streams = Vec::new();
    for user in ["a", "b"] {
        let sid = legacy_init(&s, user, caps_form()).await;
        let mut call = legacy_call(&s, user, &sid, 7, "deploy", json!({"service": "web"})).await;
        let ask = call.next().await.expect("an elicitation");
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        streams.push((call, ask["id"].clone()));
    }
    // The cap is full of the two waiting streams; a new request gets in.
    let r = try_modern(&fresh(&s), "c", 1, "tools/list", json!({}), &json!({})).await;
    assert_eq!(
        r.map(|r| r.result_type().to_owned()),
        Ok("complete".to_owned())
    );
    let mut ended = 0;
    for (call, ask_id) in &mut streams {
        let Ok(Some(first)) =
            tokio::time::timeout(std::time::Duration::from_millis(500), call.next()).await
        else {
            continue;
        };
        ended += 1;
        assert_eq!(first["method"], "notifications/cancelled", "{first}");
        assert_eq!(&first["params"]["requestId"], ask_id, "{first}");
        let last = call.next().await.expect("the call's answer");
        assert_eq!(last["id"], 7, "{last}");
        assert_eq!(last["error"]["data"]["reason"], "shed", "{last}");
        assert!(call.next().await.is_none(), "the stream ends");
    }
    assert_eq!(ended, 1, "one stream was shed, the other kept");
    s.server.shutdown().await;
}

/// Issue 51 route 3: churning new bodies within their 2 s grace (a new
/// body as soon as one is shed) buys no immunity at the cap: a body still
/// arriving is shed under pressure, largest holder first, whether it comes
/// from one principal allowed the whole cap or from callers without
/// credentials (sign-in forms with a forged Origin and CSRF cookie).
/// Legitimate requests are answered. (Seen failing before: bodies within
/// their grace could not be shed, and new connections got 503.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churning_bodies_within_their_grace_cannot_hold_the_cap() {
    let cap = 100;
    let s = start(ServerConfig {
        max_connections: cap,
        max_connections_per_principal: Some(cap),
        // The grace outlasts the test: only pressure can shed them.
        body_rate_grace: std::time::Duration::from_secs(60),
        ..ServerConfig::default()
    })
    .await;
    let head = post_head(&s, 1_048_575, Some("mallory"));
    let one = Churn::start(
        s.server.addr(),
        (0..150).map(|_| (head.clone(), b"{".to_vec())).collect(),
    );
    until_open(&s, cap as u64 - 5).await;
    let (ok, failed) = legit_answered(&s, 80).await;
    let v = stats_now(&s).await;
    drop(one);
    assert!(
        ok >= 79,
        "one principal: {ok} of 80: {:?}",
        &failed[..failed.len().min(3)]
    );
    assert!(
        v["connections"]["shed_under_pressure"].as_u64().unwrap() > 0,
        "{v}"
    );
    let login = format!(
        "POST /login HTTP/1.1\r\nHost: {0}\r\nOrigin: http://{0}\r\nCookie: ek_login={1}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 16000\r\n\r\n",
        s.server.addr(),
        "c".repeat(43)
    );
    let unauthenticated = Churn::start(
        s.server.addr(),
        (0..150)
            .map(|_| (login.clone(), b"token=".to_vec()))
            .collect(),
    );
    until_open(&s, cap as u64 - 5).await;
    let (ok, failed) = legit_answered(&s, 80).await;
    let v = stats_now(&s).await;
    drop(unauthenticated);
    assert!(
        ok >= 79,
        "without credentials: {ok} of 80: {:?}",
        &failed[..failed.len().min(3)]
    );
    assert!(open_within(&v, cap), "{v}");
    s.server.shutdown().await;
}

/// Issue 51 item 6: a header that says who calls, what or where, given
/// twice with different values, is refused (400 -32600 naming it): this
/// server reads the first, a proxy in front may read the last. The same
/// value twice is harmless and served. (Seen failing before: the first
/// `Authorization` won and the call ran as `alice`.)
#[tokio::test]
async fn conflicting_duplicate_headers_are_refused() {
    let s = start(ServerConfig::default()).await;
    let body = tools_list_with("0");
    let send = |extra: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer alice\r\n{extra}\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            s.server.addr(),
            body.len()
        )
    };
    for (extra, name) in [
        ("Authorization: Bearer mallory\r\n", "authorization"),
        ("Mcp-Method: tools/call\r\n", "mcp-method"),
        (
            "mcp-protocol-version: 2025-11-25\r\n",
            "mcp-protocol-version",
        ),
    ] {
        let reply = reply_to_head(&s, &send(extra)).await.expect("a reply");
        assert!(reply.starts_with("HTTP/1.1 400"), "{name}: {reply}");
        assert!(
            reply.contains("-32600") && reply.to_ascii_lowercase().contains(name),
            "{name}: {reply}"
        );
    }
    let reply = reply_to_head(&s, &send("Authorization: Bearer alice\r\n"))
        .await
        .expect("a reply");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    s.server.shutdown().await;
}
