//! Each defence of the reference server, shown twice over raw HTTP: the
//! default server keeps the rule, and the flaw named after it breaks exactly
//! that rule (and nothing the test can see besides).
#![cfg(feature = "net")]

use crate::support::server::*;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use elicitkit::server::{Flaw, FlawSet, ServerConfig};
use elicitkit::state::CodecName;
use serde_json::{Value, json};

fn with(flaw: Flaw) -> ServerConfig {
    ServerConfig {
        flaws: [flaw].into_iter().collect::<FlawSet>(),
        ..ServerConfig::default()
    }
}

// ---- no-origin-check ----

/// Status of a modern `tools/list` with extra headers.
async fn list_with(s: &Srv, extra: &[(&str, &str)]) -> u16 {
    let mut rb = s
        .http
        .post(&s.url)
        .bearer_auth("a")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/list");
    for (k, v) in extra {
        rb = rb.header(*k, *v);
    }
    let body =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta": meta(&json!({}))}});
    rb.body(body.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Status of a legacy `initialize` with extra headers.
async fn initialize_with(s: &Srv, extra: &[(&str, &str)]) -> u16 {
    let mut rb = s
        .http
        .post(&s.url)
        .bearer_auth("a")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in extra {
        rb = rb.header(*k, *v);
    }
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name":"t","version":"0"}}});
    rb.body(body.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

const EVIL_ORIGIN: (&str, &str) = ("origin", "http://evil.example");
const EVIL_HOST: (&str, &str) = ("host", "evil.example");

#[tokio::test]
async fn foreign_origin_and_host_get_403_on_both_generations() {
    let s = start(ServerConfig {
        allowed_origins: vec!["https://app.example".into()],
        allowed_hosts: vec!["mcp.example".into()],
        ..ServerConfig::default()
    })
    .await;
    let own = s.server.base_url();
    let own_host = own.trim_start_matches("http://").to_owned();
    for foreign in [&[EVIL_ORIGIN][..], &[EVIL_HOST], &[EVIL_ORIGIN, EVIL_HOST]] {
        assert_eq!(list_with(&s, foreign).await, 403, "{foreign:?}");
        assert_eq!(initialize_with(&s, foreign).await, 403, "{foreign:?}");
    }
    // the 403 is a JSON-RPC error without an id
    let r = s
        .http
        .post(&s.url)
        .header("origin", "http://evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
    assert!(body["id"].is_null());
    // GET, DELETE, the flow pages and /stats sit behind the same guard
    let get = s.http.get(&s.url).header("origin", "http://evil.example");
    assert_eq!(get.send().await.unwrap().status().as_u16(), 403);
    let stats = s
        .http
        .get(format!("{own}/stats"))
        .header("host", "evil.example");
    assert_eq!(stats.send().await.unwrap().status().as_u16(), 403);
    // allowed: no Origin, the own origin, localhost on the port, the extras
    let localhost = own.replace("127.0.0.1", "localhost");
    assert_eq!(list_with(&s, &[]).await, 200);
    assert_eq!(list_with(&s, &[("origin", &own)]).await, 200);
    assert_eq!(list_with(&s, &[("origin", &localhost)]).await, 200);
    assert_eq!(list_with(&s, &[("host", &own_host)]).await, 200);
    assert_eq!(
        list_with(&s, &[("origin", "https://app.example")]).await,
        200
    );
    assert_eq!(list_with(&s, &[("host", "mcp.example:9999")]).await, 200);
    assert_eq!(initialize_with(&s, &[("origin", &own)]).await, 200);
    s.server.shutdown().await;

    let s = start(with(Flaw::NoOriginCheck)).await;
    for foreign in [&[EVIL_ORIGIN][..], &[EVIL_HOST], &[EVIL_ORIGIN, EVIL_HOST]] {
        assert_eq!(list_with(&s, foreign).await, 200, "{foreign:?}");
        assert_eq!(initialize_with(&s, foreign).await, 200, "{foreign:?}");
    }
    s.server.shutdown().await;

    // no-host-check: the Host alone is let through; Origin still guards.
    let s = start(with(Flaw::NoHostCheck)).await;
    assert_eq!(list_with(&s, &[EVIL_HOST]).await, 200);
    assert_eq!(list_with(&s, &[EVIL_ORIGIN]).await, 403);
    assert_eq!(list_with(&s, &[EVIL_ORIGIN, EVIL_HOST]).await, 403);
    s.server.shutdown().await;
}

// ---- no-cache-hints ----

#[tokio::test]
async fn list_results_carry_cache_hints_unless_the_flaw_drops_them() {
    let lists = [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("server/discover", "supportedVersions"),
    ];
    let s = start(ServerConfig::default()).await;
    for (method, field) in lists {
        let r = modern(&s, "a", 1, method, json!({}), &json!({})).await;
        assert_eq!(r.result_type(), "complete", "{method}: {}", r.text);
        assert!(r.result()[field].is_array(), "{method}");
        let ttl = &r.result()["ttlMs"];
        assert!(ttl.as_u64().is_some(), "{method}: ttlMs {ttl}");
        let scope = r.result()["cacheScope"].as_str().unwrap_or("");
        assert!(matches!(scope, "public" | "private"), "{method}: {scope}");
    }
    // not on results that are not cacheable
    let r = call(&s, "a", 2, "stats", json!({}), &json!({})).await;
    assert!(r.result().get("ttlMs").is_none(), "{}", r.text);
    s.server.shutdown().await;

    let s = start(with(Flaw::NoCacheHints)).await;
    for (method, field) in lists {
        let r = modern(&s, "a", 1, method, json!({}), &json!({})).await;
        assert_eq!(r.result_type(), "complete", "{method}");
        assert!(r.result()[field].is_array(), "{method}");
        assert!(r.result().get("ttlMs").is_none(), "{method}: {}", r.text);
        assert!(r.result().get("cacheScope").is_none(), "{method}");
    }
    s.server.shutdown().await;
}

// ---- replayable-side-effect ----

/// Runs `tool` to its final retry once, then replays that retry; returns
/// the first reply, the replay's reply and the counter `effect` after both.
async fn complete_twice(
    s: &Srv,
    tool: &str,
    args: Value,
    rounds: &[Value],
    effect: &str,
) -> (Reply, Reply, u64) {
    let caps = caps_both();
    let mut state = call(s, "alice", 1, tool, args.clone(), &caps).await.state();
    let (last, before) = rounds.split_last().unwrap();
    for (i, answer) in before.iter().enumerate() {
        let r = retry(
            s,
            "alice",
            2 + i as i64,
            tool,
            args.clone(),
            answer.clone(),
            &state,
            &caps,
        )
        .await;
        assert_eq!(r.result_type(), "input_required", "{tool}: {}", r.text);
        state = r.state();
    }
    let first = retry(
        s,
        "alice",
        10,
        tool,
        args.clone(),
        last.clone(),
        &state,
        &caps,
    )
    .await;
    assert_eq!(first.result_type(), "complete", "{tool}: {}", first.text);
    assert_eq!(first.result()["isError"], false, "{tool}: {}", first.text);
    let again = retry(s, "alice", 11, tool, args, last.clone(), &state, &caps).await;
    let n = stats(s).await["side_effects"][effect].as_u64().unwrap();
    (first, again, n)
}

fn trip_rounds() -> Vec<Value> {
    vec![
        json!({"itinerary":{"action":"accept","content":{"choice":"it-1"}}}),
        json!({"passenger":{"action":"accept","content":{"name":"A","email":"a@example.com","date":"2027-01-31","bags":1}}}),
        json!({"confirm":{"action":"accept","content":{"confirm":true}}}),
    ]
}

fn single_use_cases() -> Vec<(&'static str, Value, Vec<Value>, &'static str)> {
    vec![
        (
            "deploy",
            json!({"service":"api"}),
            vec![
                json!({"confirm":{"action":"accept","content":{"environment":"staging","confirm":true}}}),
            ],
            "deployments",
        ),
        (
            "delete_file",
            json!({"path":"/tmp/x"}),
            vec![json!({"confirm":{"action":"accept","content":{"confirm":true}}})],
            "files_deleted",
        ),
        (
            "book_trip",
            json!({"from":"Berlin","to":"Rome"}),
            trip_rounds(),
            "trips_booked",
        ),
        (
            "profile",
            json!({}),
            vec![
                json!({"profile":{"action":"accept","content":{"name":"Ada","email":"ada@example.com","age":30,"plan":"free"}}}),
            ],
            "profiles_saved",
        ),
    ]
}

#[tokio::test]
async fn a_final_retry_completes_once_unless_replayable() {
    let s = start(ServerConfig::default()).await;
    for (tool, args, rounds, effect) in single_use_cases() {
        let (first, again, n) = complete_twice(&s, tool, args, &rounds, effect).await;
        assert_eq!(
            (again.status, again.error_code()),
            (400, -32602),
            "{tool}: {}",
            again.text
        );
        assert_eq!(again.reason(), "replayed", "{tool}");
        assert_eq!(
            again.body["error"]["data"]["outcome"],
            *first.result(),
            "{tool}: the repeat carries the recorded outcome"
        );
        assert_eq!(n, 1, "{tool}: the side effect happened once");
    }
    // a decline completes once too
    let caps = caps_form();
    let st = call(&s, "alice", 1, "deploy", json!({"service":"x"}), &caps)
        .await
        .state();
    let no = json!({"confirm":{"action":"decline"}});
    let r = retry(
        &s,
        "alice",
        2,
        "deploy",
        json!({"service":"x"}),
        no.clone(),
        &st,
        &caps,
    )
    .await;
    assert_eq!(r.result()["isError"], true);
    let r = retry(
        &s,
        "alice",
        3,
        "deploy",
        json!({"service":"x"}),
        no,
        &st,
        &caps,
    )
    .await;
    assert_eq!(r.reason(), "replayed", "{}", r.text);
    // connect_billing: page submitted once, the final retry replayed
    let b = call(&s, "alice", 4, "connect_billing", json!({}), &caps_both()).await;
    let url = b.result()["inputRequests"]["billing"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    submit_flow_page(&s, &url, "alice", "sk-test-0123456789abcd").await;
    let yes = json!({"billing":{"action":"accept"}});
    let first = retry(
        &s,
        "alice",
        5,
        "connect_billing",
        json!({}),
        yes.clone(),
        &b.state(),
        &caps_both(),
    )
    .await;
    assert_eq!(first.result_type(), "complete", "{}", first.text);
    let again = retry(
        &s,
        "alice",
        6,
        "connect_billing",
        json!({}),
        yes,
        &b.state(),
        &caps_both(),
    )
    .await;
    assert_eq!(again.reason(), "replayed", "{}", again.text);
    assert_eq!(stats(&s).await["side_effects"]["billing_connected"], 1);
    // The memory store kept that completion in the flow's record: one entry.
    assert_eq!(stats(&s).await["memory"]["claims_in_records"], 1);
    assert_eq!(stats(&s).await["states"]["rejected"]["replayed"], 6);
    s.server.shutdown().await;

    let s = start(with(Flaw::ReplayableSideEffect)).await;
    for (tool, args, rounds, effect) in single_use_cases() {
        let (_, again, n) = complete_twice(&s, tool, args, &rounds, effect).await;
        assert_eq!(again.result_type(), "complete", "{tool}: {}", again.text);
        assert_eq!(again.result()["isError"], false, "{tool}");
        assert_eq!(n, 2, "{tool}: the side effect happened again");
    }
    s.server.shutdown().await;
}

// ---- bad-shape-not-found ----

#[tokio::test]
async fn badly_typed_mrtr_params_are_invalid_params_unless_not_found() {
    let shapes = [
        json!({"inputResponses": [1]}),
        json!({"inputResponses": 3}),
        json!({"inputResponses": "x"}),
        json!({"inputResponses": null}),
        json!({"requestState": 5}),
        json!({"requestState": null}),
        json!({"requestState": {"a": 1}}),
    ];
    let send = async |s: &Srv, extra: &Value| {
        let mut p = json!({"name":"deploy","arguments":{"service":"x"}});
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        modern(s, "a", 7, "tools/call", p, &caps_form()).await
    };
    let s = start(ServerConfig::default()).await;
    for shape in &shapes {
        let r = send(&s, shape).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, -32602),
            "{shape}: {}",
            r.text
        );
        assert_eq!(r.body["id"], 7);
    }
    s.server.shutdown().await;

    let s = start(with(Flaw::BadShapeNotFound)).await;
    for shape in &shapes {
        let r = send(&s, shape).await;
        assert_eq!(
            (r.status, r.error_code()),
            (404, -32601),
            "{shape}: {}",
            r.text
        );
    }
    // well-typed calls are untouched
    let r = send(&s, &json!({})).await;
    assert_eq!(r.result_type(), "input_required", "{}", r.text);
    s.server.shutdown().await;
}

// ---- elicit-on-get-stream (and the GET stream itself) ----

async fn open_get(s: &Srv, user: &str, sid: &str) -> reqwest::Response {
    s.http
        .get(&s.url)
        .bearer_auth(user)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", LEGACY)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_get_stream_is_one_per_session_and_owned() {
    let s = start(ServerConfig::default()).await;
    let sid = legacy_init(&s, "alice", caps_form()).await;
    let get = open_get(&s, "alice", &sid).await;
    assert_eq!(get.status().as_u16(), 200);
    assert!(
        get.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(
        open_get(&s, "alice", &sid).await.status().as_u16(),
        409,
        "one per session"
    );
    assert_eq!(open_get(&s, "bob", &sid).await.status().as_u16(), 403);
    assert_eq!(
        open_get(&s, "alice", "no-such").await.status().as_u16(),
        404
    );
    // without a session (2026-07-28 has no GET stream) → 405
    assert_eq!(
        s.http.get(&s.url).send().await.unwrap().status().as_u16(),
        405
    );
    // the client leaves: a new one may open
    drop(get);
    let mut reopened = None;
    for _ in 0..50 {
        let r = open_get(&s, "alice", &sid).await;
        if r.status().as_u16() == 200 {
            reopened = Some(r);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut get = SseReader::new(reopened.expect("reopened after the first stream closed"));
    // DELETE of the session ends the stream
    let del = s
        .http
        .delete(&s.url)
        .bearer_auth("alice")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status().as_u16(), 204);
    assert!(
        get.next().await.is_none(),
        "the stream ends with its session"
    );
    s.server.shutdown().await;
}

/// With alice's GET stream open, runs one `deploy`; returns where the
/// elicitation showed up ("post" or "get") and the call's final result.
async fn deploy_with_get_stream(s: &Srv) -> (&'static str, Value) {
    let sid = legacy_init(s, "alice", caps_form()).await;
    let mut get = SseReader::new(open_get(s, "alice", &sid).await);
    let mut post = legacy_call(s, "alice", &sid, 1, "deploy", json!({"service":"web"})).await;
    let (on, req) = tokio::select! {
        m = post.next() => ("post", m.expect("a message on the POST stream")),
        m = get.next() => ("get", m.expect("a message on the GET stream")),
    };
    assert_eq!(req["method"], "elicitation/create", "{req}");
    let code = legacy_answer(
        s,
        "alice",
        &sid,
        &req["id"],
        json!({"action":"accept","content":{"environment":"staging","confirm":true}}),
    )
    .await;
    assert_eq!(code, 202);
    let fin = post.next().await.expect("the result on the POST stream");
    (on, fin)
}

#[tokio::test]
async fn elicitation_goes_on_the_post_stream_unless_the_flaw_moves_it() {
    let s = start(ServerConfig::default()).await;
    let (on, fin) = deploy_with_get_stream(&s).await;
    assert_eq!(on, "post");
    assert_eq!(fin["result"]["isError"], false, "{fin}");
    s.server.shutdown().await;

    let s = start(with(Flaw::ElicitOnGetStream)).await;
    let (on, fin) = deploy_with_get_stream(&s).await;
    assert_eq!(on, "get");
    assert_eq!(fin["id"], 1);
    assert_eq!(
        fin["result"]["isError"], false,
        "the answer still counts: {fin}"
    );
    assert_eq!(stats(&s).await["side_effects"]["deployments"], 1);
    // Without a GET stream the elicitation waits for one, never taking
    // the call's POST stream; it goes out once the client opens it.
    let sid = legacy_init(&s, "bob", caps_form()).await;
    let mut post = legacy_call(&s, "bob", &sid, 1, "deploy", json!({"service":"web"})).await;
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(500), post.next()).await;
    assert!(quiet.is_err(), "nothing on the POST stream: {quiet:?}");
    let mut get = SseReader::new(open_get(&s, "bob", &sid).await);
    let req = get
        .next()
        .await
        .expect("the elicitation, on the GET stream");
    assert_eq!(req["method"], "elicitation/create", "{req}");
    let code = legacy_answer(
        &s,
        "bob",
        &sid,
        &req["id"],
        json!({"action":"accept","content":{"environment":"staging","confirm":true}}),
    )
    .await;
    assert_eq!(code, 202);
    let fin = post.next().await.expect("the result on the POST stream");
    assert_eq!(fin["result"]["isError"], false, "{fin}");
    s.server.shutdown().await;
}

#[tokio::test]
async fn the_flaw_gives_up_when_no_get_stream_opens_in_time() {
    let s = start(ServerConfig {
        elicitation_timeout: std::time::Duration::from_millis(300),
        ..with(Flaw::ElicitOnGetStream)
    })
    .await;
    let sid = legacy_init(&s, "alice", caps_form()).await;
    let mut post = legacy_call(&s, "alice", &sid, 1, "deploy", json!({"service":"web"})).await;
    let fin = post.next().await.expect("a message on the POST stream");
    assert_eq!(fin["id"], 1, "the call's result, no elicitation: {fin}");
    assert_eq!(fin["result"]["isError"], true, "{fin}");
    assert!(fin.to_string().contains("not answered in time"), "{fin}");
    assert_eq!(stats(&s).await["side_effects"]["deployments"], 0);
    s.server.shutdown().await;
}

// ---- no-nodelay ----

/// The raw response head of `GET /stats` over a fresh connection.
async fn raw_head(s: &Srv) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut c = tokio::net::TcpStream::connect(s.server.addr())
        .await
        .unwrap();
    let req = format!(
        "GET /stats HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer a\r\nConnection: close\r\n\r\n",
        s.server.addr()
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    c.read_to_end(&mut all).await.unwrap();
    let text = String::from_utf8_lossy(&all).to_ascii_lowercase();
    text.split("\r\n\r\n").next().unwrap_or("").to_owned()
}

#[tokio::test]
async fn bodies_leave_with_their_heads_unless_no_nodelay() {
    // Nagle's stall itself is timing (measured with curl, not asserted
    // here); what the test pins is the write pattern behind it: the default
    // server hands hyper head and body together (one sized write), the flaw
    // hands the body over only after the head went out (chunked).
    let s = start(ServerConfig::default()).await;
    let head = raw_head(&s).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-length:"), "{head}");
    assert!(!head.contains("transfer-encoding"), "{head}");
    s.server.shutdown().await;

    let s = start(with(Flaw::NoNodelay)).await;
    let head = raw_head(&s).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    // the replies themselves are unchanged
    let r = modern(&s, "a", 1, "tools/list", json!({}), &json!({})).await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    s.server.shutdown().await;
}

// ---- act-on-decline ----

#[tokio::test]
async fn decline_and_cancel_do_nothing_unless_act_on_decline() {
    let caps = caps_form();
    let args = json!({"service":"api"});
    let answer = |a: &str| json!({"confirm":{"action":a}});
    let s = start(ServerConfig::default()).await;
    for a in ["decline", "cancel"] {
        let st = call(&s, "a", 1, "deploy", args.clone(), &caps)
            .await
            .state();
        let r = retry(&s, "a", 2, "deploy", args.clone(), answer(a), &st, &caps).await;
        assert_eq!(r.result_type(), "complete");
        assert_eq!(r.result()["isError"], true, "{a}: {}", r.text);
        assert!(!r.text_content().contains("Deployed"), "{}", r.text);
    }
    assert_eq!(stats(&s).await["side_effects"]["deployments"], 0);
    s.server.shutdown().await;

    let s = start(with(Flaw::ActOnDecline)).await;
    for a in ["decline", "cancel"] {
        let st = call(&s, "a", 1, "deploy", args.clone(), &caps)
            .await
            .state();
        let r = retry(&s, "a", 2, "deploy", args.clone(), answer(a), &st, &caps).await;
        assert_eq!(r.result()["isError"], false, "{a}: {}", r.text);
        assert_eq!(r.text_content(), "Deployed api to staging.", "{a}");
    }
    // the same answer an accept gets
    let st = call(&s, "a", 1, "deploy", args.clone(), &caps)
        .await
        .state();
    let yes =
        json!({"confirm":{"action":"accept","content":{"environment":"staging","confirm":true}}});
    let r = retry(&s, "a", 2, "deploy", args, yes, &st, &caps).await;
    assert_eq!(r.text_content(), "Deployed api to staging.");
    assert_eq!(stats(&s).await["side_effects"]["deployments"], 3);
    s.server.shutdown().await;
}

// ---- leak-secret / secret-in-state ----

const API_KEY: &str = "sk-live-a1b2c3d4e5f6g7h8";

/// Runs `connect_billing` with the page submitted; returns every state the
/// server issued and the final result.
async fn billing_run(s: &Srv) -> (Vec<String>, Reply) {
    let caps = caps_both();
    let first = call(s, "alice", 1, "connect_billing", json!({}), &caps).await;
    let url = first.result()["inputRequests"]["billing"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut states = vec![first.state()];
    submit_flow_page(s, &url, "alice", API_KEY).await;
    let mut r = retry(
        s,
        "alice",
        2,
        "connect_billing",
        json!({}),
        json!({"billing":{"action":"accept"}}),
        &first.state(),
        &caps,
    )
    .await;
    let mut id = 3;
    while r.result_type() == "input_required" && id < 6 {
        states.push(r.state());
        let keys: Vec<String> = r.result()["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let mut answers = json!({"billing":{"action":"accept"}});
        for k in keys {
            answers[&k] = json!({"action":"accept","content":{"confirm":true}});
        }
        r = retry(
            s,
            "alice",
            id,
            "connect_billing",
            json!({}),
            answers,
            &r.state(),
            &caps,
        )
        .await;
        id += 1;
    }
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    assert_eq!(r.result()["isError"], false, "{}", r.text);
    (states, r)
}

/// True when a state's bytes (readable: the codec only signs) hold the key.
fn state_holds_key(token: &str) -> bool {
    let bytes = URL_SAFE_NO_PAD.decode(token).expect("a base64url state");
    bytes
        .windows(API_KEY.len())
        .any(|w| w == API_KEY.as_bytes())
}

#[tokio::test]
async fn the_typed_key_never_reaches_the_client_unless_leak_secret() {
    let s = start(ServerConfig::default()).await;
    let (_, done) = billing_run(&s).await;
    assert!(!done.text.contains(API_KEY), "{}", done.text);
    assert!(done.text_content().contains("sk-…g7h8"), "{}", done.text);
    s.server.shutdown().await;

    let s = start(with(Flaw::LeakSecret)).await;
    let (_, done) = billing_run(&s).await;
    assert!(done.text_content().contains(API_KEY), "{}", done.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn no_state_carries_the_typed_key_unless_secret_in_state() {
    let signed_only = |flaws: FlawSet| ServerConfig {
        codec: CodecName::HmacSha256,
        flaws,
        ..ServerConfig::default()
    };
    let s = start(signed_only(FlawSet::none())).await;
    let (states, done) = billing_run(&s).await;
    assert_eq!(
        states.len(),
        1,
        "the page completes the flow: no state after it"
    );
    assert!(!states.iter().any(|t| state_holds_key(t)));
    assert!(!done.text.contains(API_KEY));
    s.server.shutdown().await;

    let s = start(signed_only([Flaw::SecretInState].into_iter().collect())).await;
    let (states, done) = billing_run(&s).await;
    assert_eq!(states.len(), 2, "one more round after the page");
    assert!(!state_holds_key(&states[0]));
    assert!(
        state_holds_key(&states[1]),
        "readable in the signed-only state"
    );
    assert!(!done.text.contains(API_KEY), "only the state leaks it");
    s.server.shutdown().await;
}

// ---- ignore-principal, 2025-11-25 ----

#[tokio::test]
async fn a_session_serves_only_its_principal_unless_ignore_principal() {
    for flaw in [false, true] {
        let cfg = if flaw {
            with(Flaw::IgnorePrincipal)
        } else {
            ServerConfig::default()
        };
        let s = start(cfg).await;
        let sid = legacy_init(&s, "alice", caps_form()).await;
        // a request on alice's session with bob's token
        let list = legacy_post(
            &s,
            "bob",
            Some(&sid),
            json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}),
        )
        .await;
        assert_eq!(list.status().as_u16(), if flaw { 200 } else { 403 });
        // an answer to alice's elicitation with bob's token
        let mut st = legacy_call(&s, "alice", &sid, 1, "deploy", json!({"service":"web"})).await;
        let req = st.next().await.unwrap();
        let yes = json!({"action":"accept","content":{"environment":"production","confirm":true}});
        let by_bob = legacy_answer(&s, "bob", &sid, &req["id"], yes.clone()).await;
        if flaw {
            assert_eq!(by_bob, 202, "bob's answer is taken");
            let fin = st.next().await.unwrap();
            assert!(
                fin["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("production"),
                "{fin}"
            );
        } else {
            assert_eq!(by_bob, 403);
            // alice's own answer still completes the call
            assert_eq!(legacy_answer(&s, "alice", &sid, &req["id"], yes).await, 202);
            assert_eq!(st.next().await.unwrap()["result"]["isError"], false);
        }
        assert_eq!(stats(&s).await["side_effects"]["deployments"], 1);
        // the GET stream of alice's session
        let get = open_get(&s, "bob", &sid).await.status().as_u16();
        assert_eq!(get, if flaw { 200 } else { 403 });
        s.server.shutdown().await;
    }
}
