//! 2026-07-28 (MRTR) behaviour of the reference server, driven over real HTTP.
#![cfg(feature = "net")]

use crate::support::server::*;
use elicitkit::server::ServerConfig;
use serde_json::json;

#[tokio::test]
async fn deploy_round_trip_completes_and_counts() {
    let s = start(ServerConfig::default()).await;
    let caps = caps_form();
    let r1 = call(&s, "alice", 1, "deploy", json!({"service": "api"}), &caps).await;
    assert_eq!(r1.status, 200, "{}", r1.text);
    assert_eq!(r1.result_type(), "input_required");
    let req = &r1.result()["inputRequests"]["confirm"];
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["mode"], "form");
    assert!(req.get("id").is_none() && req.get("jsonrpc").is_none());
    let timing = r1.headers.get("server-timing").unwrap().to_str().unwrap();
    assert!(
        timing.contains("state;dur=") && timing.contains("app;dur="),
        "{timing}"
    );
    let st = r1.state();
    assert!(!st.is_empty());
    let answer = json!({"confirm": {"action": "accept", "content": {"environment": "production", "confirm": true}}});
    let r2 = retry(
        &s,
        "alice",
        2,
        "deploy",
        json!({"service": "api"}),
        answer,
        &st,
        &caps,
    )
    .await;
    assert_eq!(r2.status, 200, "{}", r2.text);
    assert_eq!(r2.result_type(), "complete");
    assert_eq!(r2.result()["isError"], false);
    assert!(
        r2.text_content().contains("Deployed api to production"),
        "{}",
        r2.text
    );
    assert_eq!(stats(&s).await["side_effects"]["deployments"], 1);
    s.server.shutdown().await;
}

fn body(id: i64, method: &str, params: serde_json::Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string()
}

#[tokio::test]
async fn discover_list_and_result_types() {
    let s = start(ServerConfig::default()).await;
    let d = modern(&s, "alice", 1, "server/discover", json!({}), &json!({})).await;
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.result_type(), "complete");
    let versions = d.result()["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")));
    assert!(d.result()["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
    let l = modern(&s, "alice", 2, "tools/list", json!({}), &json!({})).await;
    assert_eq!(l.result_type(), "complete");
    let names: Vec<&str> = l.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for t in [
        "deploy",
        "book_trip",
        "connect_billing",
        "delete_file",
        "profile",
        "stats",
    ] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    assert!(l.headers.get("mcp-session-id").is_none());
    let st = call(&s, "alice", 3, "stats", json!({}), &json!({})).await;
    assert_eq!(st.result_type(), "complete");
    assert!(st.result()["structuredContent"]["side_effects"].is_object());
    s.server.shutdown().await;
}

#[tokio::test]
async fn protocol_error_paths() {
    let cfg = ServerConfig {
        max_body: 4096,
        ..ServerConfig::default()
    };
    let s = start(cfg).await;
    // malformed JSON
    let r = post_raw(&s, Some("a"), "tools/list", None, "{nope".into()).await;
    assert_eq!((r.status, r.error_code()), (400, -32700));
    // invalid request, id still echoed
    let r = post_raw(
        &s,
        Some("a"),
        "tools/list",
        None,
        r#"{"jsonrpc":"1.0","id":42,"method":"x"}"#.into(),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert_eq!(r.body["id"], 42);
    // body over the cap
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"x":"{}"}}}}"#,
        "y".repeat(5000)
    );
    let r = post_raw(&s, Some("a"), "tools/list", None, big).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.error_code(), -32600);
    // no principal → 401 from the head: the body (and its id) is not read
    let r = post_raw(
        &s,
        None,
        "tools/list",
        None,
        body(5, "tools/list", json!({"_meta": meta(&json!({}))})),
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.body["id"], serde_json::Value::Null, "{}", r.text);
    assert_eq!(r.error_code(), -32600);
    // missing _meta → -32602 + 400 with id
    let r = post_raw(
        &s,
        Some("a"),
        "tools/list",
        None,
        body(6, "tools/list", json!({})),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
    assert_eq!(r.body["id"], 6);
    // _meta without clientInfo is fine
    let mut m = meta(&json!({}));
    m.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let r = post_raw(
        &s,
        Some("a"),
        "tools/list",
        None,
        body(7, "tools/list", json!({"_meta": m})),
    )
    .await;
    assert_eq!(r.status, 200);
    // header mismatch
    let r = post_raw(
        &s,
        Some("a"),
        "tools/call",
        Some("other"),
        body(
            8,
            "tools/call",
            json!({"name":"stats","_meta": meta(&json!({}))}),
        ),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, -32020));
    let r = post_raw(
        &s,
        Some("a"),
        "tools/list",
        None,
        body(
            9,
            "tools/call",
            json!({"name":"stats","_meta": meta(&json!({}))}),
        ),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, -32020));
    // unsupported version (header and _meta agree)
    let mut m = meta(&json!({}));
    m["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = s
        .http
        .post(&s.url)
        .bearer_auth("a")
        .header("mcp-protocol-version", "2099-01-01")
        .header("mcp-method", "tools/list")
        .body(body(10, "tools/list", json!({"_meta": m})))
        .send()
        .await
        .unwrap();
    let r = to_reply(r).await;
    assert_eq!((r.status, r.error_code()), (400, -32022));
    assert_eq!(r.body["error"]["data"]["requested"], "2099-01-01");
    assert!(
        r.body["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    // removed methods → 404 + -32601
    for m in ["ping", "logging/setLevel"] {
        let r = post_raw(
            &s,
            Some("a"),
            m,
            None,
            body(11, m, json!({"_meta": meta(&json!({}))})),
        )
        .await;
        assert_eq!((r.status, r.error_code()), (404, -32601), "{m}");
    }
    // unknown method
    let r = modern(&s, "a", 12, "no/such", json!({}), &json!({})).await;
    assert_eq!((r.status, r.error_code()), (404, -32601));
    // GET and DELETE → 405
    assert_eq!(
        s.http.get(&s.url).send().await.unwrap().status().as_u16(),
        405
    );
    assert_eq!(
        s.http
            .delete(&s.url)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        405
    );
    // unknown tool, bad arguments, bad params types
    let r = call(&s, "a", 13, "nope", json!({}), &caps_form()).await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
    // arguments the tool cannot use: a tool execution error (SEP-1303)
    let r = call(&s, "a", 14, "deploy", json!({"service": 3}), &caps_form()).await;
    assert_eq!((r.status, r.result_type()), (200, "complete"), "{}", r.text);
    assert_eq!(r.result()["isError"], true);
    assert!(r.text_content().contains("arguments.service"), "{}", r.text);
    let r = modern(
        &s,
        "a",
        15,
        "tools/call",
        json!({"name":"deploy","arguments":{"service":"x"},"inputResponses":[1]}),
        &caps_form(),
    )
    .await;
    assert_eq!(r.error_code(), -32602);
    // garbage requestState, also unsolicited on a first call
    for garbage in [
        "",
        "x",
        "!!!!",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        let r = retry(
            &s,
            "a",
            16,
            "deploy",
            json!({"service":"x"}),
            json!({}),
            garbage,
            &caps_form(),
        )
        .await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, -32602),
            "{garbage:?}: {}",
            r.text
        );
        assert!(!r.reason().is_empty(), "{}", r.text);
    }
    let r = modern(
        &s,
        "a",
        17,
        "tools/call",
        json!({"name":"deploy","arguments":{"service":"x"},"requestState":"garbage"}),
        &caps_form(),
    )
    .await;
    assert_eq!(r.error_code(), -32602);
    // notifications are accepted, responses refused
    let r = post_raw(
        &s,
        Some("a"),
        "notifications/cancelled",
        None,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#.into(),
    )
    .await;
    assert_eq!(r.status, 202);
    let r = post_raw(
        &s,
        Some("a"),
        "x",
        None,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(),
    )
    .await;
    assert_eq!(r.status, 400);
    // every response carries Server-Timing
    assert!(r.headers.get("server-timing").is_some());
    s.server.shutdown().await;
}

#[tokio::test]
async fn capability_gating_per_request() {
    let s = start(ServerConfig::default()).await;
    let none = call(&s, "a", 1, "deploy", json!({"service":"x"}), &json!({})).await;
    assert_eq!((none.status, none.error_code()), (400, -32021));
    assert_eq!(
        none.body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation":{}})
    );
    let sampling = call(
        &s,
        "a",
        2,
        "deploy",
        json!({"service":"x"}),
        &json!({"sampling":{}}),
    )
    .await;
    assert_eq!(sampling.error_code(), -32021);
    let url_only = call(
        &s,
        "a",
        3,
        "deploy",
        json!({"service":"x"}),
        &json!({"elicitation":{"url":{}}}),
    )
    .await;
    assert_eq!(url_only.error_code(), -32021);
    let empty = call(
        &s,
        "a",
        4,
        "deploy",
        json!({"service":"x"}),
        &json!({"elicitation":{}}),
    )
    .await;
    assert_eq!(empty.result_type(), "input_required");
    for caps in [json!({"elicitation":{}}), caps_form(), json!({})] {
        let b = call(&s, "a", 5, "connect_billing", json!({}), &caps).await;
        assert_eq!((b.status, b.error_code()), (400, -32021), "{caps}");
        assert_eq!(
            b.body["error"]["data"]["requiredCapabilities"],
            json!({"elicitation":{"url":{}}})
        );
    }
    let u = call(
        &s,
        "a",
        6,
        "connect_billing",
        json!({}),
        &json!({"elicitation":{"url":{}}}),
    )
    .await;
    assert_eq!(
        u.result()["inputRequests"]["billing"]["params"]["mode"],
        "url"
    );
    assert!(
        u.result()["inputRequests"]["billing"]["params"]
            .get("elicitationId")
            .is_none()
    );
    // no carry-over: a retry declaring {} gets no elicitation
    let st = empty.state();
    let r = retry(
        &s,
        "a",
        7,
        "deploy",
        json!({"service":"x"}),
        json!({}),
        &st,
        &json!({}),
    )
    .await;
    assert_eq!(r.error_code(), -32021);
    s.server.shutdown().await;
}

#[tokio::test]
async fn state_binding_is_enforced() {
    let s = start(ServerConfig::default()).await;
    let caps = caps_form();
    let args = json!({"service": "api"});
    let ok =
        json!({"confirm":{"action":"accept","content":{"environment":"staging","confirm":true}}});
    let first = call(&s, "alice", 1, "deploy", args.clone(), &caps).await;
    let st = first.state();
    let other_user = retry(&s, "bob", 2, "deploy", args.clone(), ok.clone(), &st, &caps).await;
    assert_eq!(
        other_user.reason(),
        "wrong_principal",
        "{}",
        other_user.text
    );
    let other_args = retry(
        &s,
        "alice",
        3,
        "deploy",
        json!({"service":"db"}),
        ok.clone(),
        &st,
        &caps,
    )
    .await;
    assert_eq!(other_args.reason(), "wrong_request");
    let other_tool = retry(
        &s,
        "alice",
        4,
        "delete_file",
        json!({"path":"api"}),
        ok.clone(),
        &st,
        &caps,
    )
    .await;
    assert_eq!(other_tool.reason(), "wrong_request");
    // flip one character in the middle
    let mut chars: Vec<char> = st.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect();
    let t = retry(
        &s,
        "alice",
        5,
        "deploy",
        args.clone(),
        ok.clone(),
        &tampered,
        &caps,
    )
    .await;
    assert_eq!(t.error_code(), -32602);
    assert!(["bad_tag", "malformed"].contains(&t.reason()), "{}", t.text);
    let truncated = &st[..st.len() - 4];
    let t = retry(
        &s,
        "alice",
        6,
        "deploy",
        args.clone(),
        ok.clone(),
        truncated,
        &caps,
    )
    .await;
    assert_eq!(t.error_code(), -32602);
    let good = retry(&s, "alice", 7, "deploy", args, ok, &st, &caps).await;
    assert_eq!(good.result_type(), "complete");
    let stats = stats(&s).await;
    assert_eq!(stats["states"]["rejected"]["wrong_principal"], 1);
    assert_eq!(stats["states"]["rejected"]["wrong_request"], 2);
    s.server.shutdown().await;
}

#[tokio::test]
async fn book_trip_three_rounds_with_new_states_and_s9_rules() {
    let s = start(ServerConfig::default()).await;
    let caps = caps_form();
    let args = json!({"from": "Berlin", "to": "Rome"});
    let r1 = call(&s, "carol", 1, "book_trip", args.clone(), &caps).await;
    let schema = &r1.result()["inputRequests"]["itinerary"]["params"]["requestedSchema"];
    let choice = schema["properties"]["choice"]["oneOf"][0]["const"].clone();
    let s1 = r1.state();
    // missing answer → asked again with a new state
    let again = retry(
        &s,
        "carol",
        2,
        "book_trip",
        args.clone(),
        json!({"wrong_key": {"action":"accept"}}),
        &s1,
        &caps,
    )
    .await;
    assert_eq!(again.result_type(), "input_required");
    assert!(again.result()["inputRequests"]["itinerary"].is_object());
    // content failing the schema → asked again
    let bad = retry(
        &s,
        "carol",
        3,
        "book_trip",
        args.clone(),
        json!({"itinerary":{"action":"accept","content":{"choice":"nope"}}}),
        &s1,
        &caps,
    )
    .await;
    assert_eq!(bad.result_type(), "input_required");
    assert!(bad.result()["inputRequests"]["itinerary"].is_object());
    // malformed responses → -32602, never complete
    for m in [
        json!(3),
        json!(null),
        json!([1]),
        json!({"action":"maybe"}),
        json!({"action":"accept","content":5}),
    ] {
        let r = retry(
            &s,
            "carol",
            4,
            "book_trip",
            args.clone(),
            json!({"itinerary": m}),
            &s1,
            &caps,
        )
        .await;
        assert_eq!((r.status, r.error_code()), (400, -32602), "{m}: {}", r.text);
    }
    // round 2 (extra keys ignored)
    let r2 = retry(
        &s,
        "carol",
        5,
        "book_trip",
        args.clone(),
        json!({"itinerary":{"action":"accept","content":{"choice":choice}},"junk":{"x":1}}),
        &s1,
        &caps,
    )
    .await;
    assert!(
        r2.result()["inputRequests"]["passenger"].is_object(),
        "{}",
        r2.text
    );
    let s2 = r2.state();
    assert_ne!(s1, s2);
    let props =
        &r2.result()["inputRequests"]["passenger"]["params"]["requestedSchema"]["properties"];
    assert_eq!(props["email"]["format"], "email");
    assert_eq!(props["date"]["format"], "date");
    assert_eq!(props["bags"]["type"], "integer");
    let r3 = retry(&s, "carol", 6, "book_trip", args.clone(), json!({"passenger":{"action":"accept","content":{"name":"Carol","email":"c@example.com","date":"2027-01-31","bags":1}}}), &s2, &caps).await;
    assert!(
        r3.result()["inputRequests"]["confirm"].is_object(),
        "{}",
        r3.text
    );
    let s3 = r3.state();
    assert!(s3 != s2 && s3 != s1);
    let done = retry(
        &s,
        "carol",
        7,
        "book_trip",
        args.clone(),
        json!({"confirm":{"action":"accept","content":{"confirm":true}}}),
        &s3,
        &caps,
    )
    .await;
    assert_eq!(done.result_type(), "complete");
    assert_eq!(done.result()["isError"], false);
    assert!(done.text_content().contains("Carol"));
    assert_eq!(stats(&s).await["side_effects"]["trips_booked"], 1);
    // the final retry completes once: a replay of it is refused
    let replay = retry(
        &s,
        "carol",
        8,
        "book_trip",
        args.clone(),
        json!({"confirm":{"action":"accept","content":{"confirm":true}}}),
        &s3,
        &caps,
    )
    .await;
    assert_eq!((replay.status, replay.error_code()), (400, -32602));
    assert_eq!(replay.reason(), "replayed", "{}", replay.text);
    assert_eq!(stats(&s).await["side_effects"]["trips_booked"], 1);
    // the earlier rounds' states belong to the same, completed request:
    // they get its outcome too, and cannot undo or redo the booking
    for st in [&s2, &s1] {
        let r = retry(
            &s,
            "carol",
            9,
            "book_trip",
            args.clone(),
            json!({"passenger":{"action":"decline"}}),
            st,
            &caps,
        )
        .await;
        assert_eq!(r.reason(), "replayed", "{}", r.text);
        assert_eq!(r.body["error"]["data"]["outcome"], *done.result());
    }
    // decline and cancel in earlier rounds of a new request → complete
    // with isError
    for (key, a, word, round) in [
        ("passenger", "decline", "declined", 2),
        ("itinerary", "cancel", "cancelled", 1),
    ] {
        let mut st = call(&s, "carol", 10, "book_trip", args.clone(), &caps)
            .await
            .state();
        if round == 2 {
            st = retry(
                &s,
                "carol",
                11,
                "book_trip",
                args.clone(),
                json!({"itinerary":{"action":"accept","content":{"choice":"it-2"}}}),
                &st,
                &caps,
            )
            .await
            .state();
        }
        let r = retry(
            &s,
            "carol",
            12,
            "book_trip",
            args.clone(),
            json!({key:{"action":a}}),
            &st,
            &caps,
        )
        .await;
        assert_eq!(r.result_type(), "complete", "{}", r.text);
        assert_eq!(r.result()["isError"], true);
        assert!(r.text_content().contains(word), "{}", r.text);
    }
    assert_eq!(stats(&s).await["side_effects"]["trips_booked"], 1);
    s.server.shutdown().await;
}

#[tokio::test]
async fn delete_file_side_effect_happens_once_per_confirmation() {
    let s = start(ServerConfig::default()).await;
    let caps = caps_form();
    let args = json!({"path": "/tmp/a.txt"});
    let r1 = call(&s, "alice", 1, "delete_file", args.clone(), &caps).await;
    let st = r1.state();
    let yes = json!({"confirm":{"action":"accept","content":{"confirm":true}}});
    let ok = retry(
        &s,
        "alice",
        2,
        "delete_file",
        args.clone(),
        yes.clone(),
        &st,
        &caps,
    )
    .await;
    assert_eq!(ok.result_type(), "complete");
    assert!(ok.text_content().contains("Deleted"));
    let again = retry(&s, "alice", 3, "delete_file", args.clone(), yes, &st, &caps).await;
    assert_eq!(again.reason(), "replayed", "{}", again.text);
    assert_eq!(stats(&s).await["side_effects"]["files_deleted"], 1);
    s.server.shutdown().await;
}

#[tokio::test]
async fn profile_accepts_its_defaults() {
    let s = start(ServerConfig::default()).await;
    let caps = caps_form();
    let r1 = call(&s, "alice", 1, "profile", json!({}), &caps).await;
    let schema = r1.result()["inputRequests"]["profile"]["params"]["requestedSchema"].clone();
    assert!(
        elicitkit::schema::validate_schema(&schema)
            .iter()
            .all(|f| f.severity != elicitkit::findings::Severity::Must)
    );
    let mut content = serde_json::Map::new();
    for (k, v) in schema["properties"].as_object().unwrap() {
        if let Some(d) = v.get("default") {
            content.insert(k.clone(), d.clone());
        }
    }
    let r2 = retry(
        &s,
        "alice",
        2,
        "profile",
        json!({}),
        json!({"profile":{"action":"accept","content":content}}),
        &r1.state(),
        &caps,
    )
    .await;
    assert_eq!(r2.result_type(), "complete", "{}", r2.text);
    assert_eq!(r2.result()["structuredContent"]["plan"], "free");
    s.server.shutdown().await;
}

#[tokio::test]
async fn sse_response_mode_frames_results_as_events() {
    let cfg = ServerConfig {
        response: elicitkit::server::ResponseMode::Sse,
        ..ServerConfig::default()
    };
    let s = start(cfg).await;
    let r = call(
        &s,
        "alice",
        1,
        "deploy",
        json!({"service":"x"}),
        &caps_form(),
    )
    .await;
    assert!(
        r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(r.text.starts_with("data: "));
    assert_eq!(r.result_type(), "input_required");
    s.server.shutdown().await;
}

#[tokio::test]
async fn expired_state_is_rejected() {
    // No hidden grace: a state is refused once its TTL has passed.
    let clock = elicitkit::clock::Clock::offset(0);
    let cfg = ServerConfig {
        state_ttl: std::time::Duration::from_secs(60),
        clock: clock.clone(),
        ..ServerConfig::default()
    };
    let s = start(cfg).await;
    let caps = caps_form();
    let yes =
        json!({"confirm":{"action":"accept","content":{"environment":"staging","confirm":true}}});
    let fresh = call(&s, "alice", 1, "deploy", json!({"service":"x"}), &caps).await;
    let r = retry(
        &s,
        "alice",
        2,
        "deploy",
        json!({"service":"x"}),
        yes.clone(),
        &fresh.state(),
        &caps,
    )
    .await;
    assert_eq!(r.result_type(), "complete", "within its TTL: {}", r.text);
    let r1 = call(&s, "alice", 3, "deploy", json!({"service":"y"}), &caps).await;
    clock.advance(std::time::Duration::from_secs(60));
    let r = retry(
        &s,
        "alice",
        4,
        "deploy",
        json!({"service":"y"}),
        yes,
        &r1.state(),
        &caps,
    )
    .await;
    assert_eq!(r.reason(), "expired", "{}", r.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn foreign_origin_is_refused() {
    let s = start(ServerConfig::default()).await;
    let r = s
        .http
        .post(&s.url)
        .bearer_auth("a")
        .header("origin", "https://evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    s.server.shutdown().await;
}

#[tokio::test]
async fn modern_requests_ignore_a_session_header() {
    let s = start(ServerConfig::default()).await;
    let mut params = json!({});
    params["_meta"] = meta(&json!({}));
    let r = s
        .http
        .post(&s.url)
        .bearer_auth("a")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/list")
        .header("mcp-session-id", "stale-or-bogus")
        .body(json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":params}).to_string())
        .send()
        .await
        .unwrap();
    let r = to_reply(r).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.result_type(), "complete");
    assert!(r.headers.get("mcp-session-id").is_none());
    s.server.shutdown().await;
}

#[tokio::test]
async fn auth_tokens_file_maps_tokens_to_principals() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/server/auth_tokens.txt");
    let cfg = ServerConfig {
        principals: elicitkit::server::Principals::from_file(&path).unwrap(),
        ..ServerConfig::default()
    };
    let s = start(cfg).await;
    let denied = modern(&s, "alice", 1, "tools/list", json!({}), &json!({})).await;
    assert_eq!(denied.status, 401);
    assert_eq!(denied.body["id"], serde_json::Value::Null);
    assert!(denied.headers.get("www-authenticate").is_some());
    let first = call(
        &s,
        "tok-alice-7f3a",
        2,
        "deploy",
        json!({"service":"x"}),
        &caps_form(),
    )
    .await;
    assert_eq!(first.result_type(), "input_required");
    // bob's token is another principal: alice's state is refused
    let yes =
        json!({"confirm":{"action":"accept","content":{"environment":"staging","confirm":true}}});
    let r = retry(
        &s,
        "tok-bob-91c2",
        3,
        "deploy",
        json!({"service":"x"}),
        yes.clone(),
        &first.state(),
        &caps_form(),
    )
    .await;
    assert_eq!(r.reason(), "wrong_principal");
    let r = retry(
        &s,
        "tok-alice-7f3a",
        4,
        "deploy",
        json!({"service":"x"}),
        yes,
        &first.state(),
        &caps_form(),
    )
    .await;
    assert_eq!(r.result_type(), "complete");
    s.server.shutdown().await;
}
