//! 2025-11-25 behaviour of the reference server: sessions, SSE push,
//! answers by POST, URL mode with elicitationId and completion notice,
//! timeouts, session deletion.
#![cfg(feature = "net")]

use std::time::Duration;

use crate::support::server::*;
use elicitkit::server::ServerConfig;
use serde_json::json;

#[tokio::test]
async fn deploy_over_push_finishes_on_the_same_stream() {
    let s = start(ServerConfig::default()).await;
    let sid = legacy_init(&s, "alice", caps_form()).await;
    assert_eq!(sid.len(), 32);
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let mut st = legacy_call(&s, "alice", &sid, 1, "deploy", json!({"service": "web"})).await;
    assert_eq!(st.status, 200);
    assert!(st.content_type.starts_with("text/event-stream"));
    let req = st.next().await.expect("elicitation/create");
    assert_eq!(st.priming, 1, "a priming event comes first");
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["id"], "s-1");
    assert_eq!(req["params"]["mode"], "form");
    let code = legacy_answer(
        &s,
        "alice",
        &sid,
        &req["id"],
        json!({"action":"accept","content":{"environment":"staging","confirm":true}}),
    )
    .await;
    assert_eq!(code, 202);
    let fin = st.next().await.expect("final result");
    assert_eq!(fin["id"], 1);
    assert!(fin["result"].get("resultType").is_none());
    assert_eq!(fin["result"]["isError"], false);
    assert!(st.next().await.is_none(), "stream closes after the result");
    let stats = stats(&s).await;
    assert_eq!(stats["side_effects"]["deployments"], 1);
    // The elicitation's record keeps the call's completion: one entry.
    let memory = &stats["memory"];
    assert_eq!(memory["claims_in_records"], 1, "{memory}");
    assert_eq!(memory["claims"]["count"], 0, "{memory}");
    s.server.shutdown().await;
}

#[tokio::test]
async fn decline_is_a_tool_error_and_unknown_answers_are_refused() {
    let s = start(ServerConfig::default()).await;
    let sid = legacy_init(&s, "bob", caps_form()).await;
    let mut st = legacy_call(&s, "bob", &sid, 7, "delete_file", json!({"path": "/tmp/x"})).await;
    let req = st.next().await.unwrap();
    assert_eq!(
        legacy_answer(&s, "bob", &sid, &json!("s-999"), json!({"action":"accept"})).await,
        400
    );
    assert_eq!(
        legacy_answer(&s, "bob", &sid, &req["id"], json!({"action":"decline"})).await,
        202
    );
    let fin = st.next().await.unwrap();
    assert_eq!(fin["result"]["isError"], true);
    assert!(
        fin["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("declined")
    );
    assert_eq!(stats(&s).await["side_effects"]["files_deleted"], 0);
    s.server.shutdown().await;
}

#[tokio::test]
async fn book_trip_runs_three_pushes() {
    let s = start(ServerConfig::default()).await;
    let sid = legacy_init(&s, "carol", caps_form()).await;
    let mut st = legacy_call(
        &s,
        "carol",
        &sid,
        3,
        "book_trip",
        json!({"from":"Berlin","to":"Rome"}),
    )
    .await;
    let r1 = st.next().await.unwrap();
    let choice =
        r1["params"]["requestedSchema"]["properties"]["choice"]["oneOf"][1]["const"].clone();
    legacy_answer(
        &s,
        "carol",
        &sid,
        &r1["id"],
        json!({"action":"accept","content":{"choice":choice}}),
    )
    .await;
    let r2 = st.next().await.unwrap();
    assert_eq!(r2["id"], "s-2");
    // an invalid answer is asked again
    legacy_answer(
        &s,
        "carol",
        &sid,
        &r2["id"],
        json!({"action":"accept","content":{"name":"C"}}),
    )
    .await;
    let r2b = st.next().await.unwrap();
    assert_eq!(r2b["method"], "elicitation/create");
    assert_eq!(r2b["params"]["message"], r2["params"]["message"]);
    legacy_answer(
        &s,
        "carol",
        &sid,
        &r2b["id"],
        json!({"action":"accept","content":{
        "name":"Carol","email":"carol@example.com","date":"2027-03-01","bags":2}}),
    )
    .await;
    let r3 = st.next().await.unwrap();
    legacy_answer(
        &s,
        "carol",
        &sid,
        &r3["id"],
        json!({"action":"accept","content":{"confirm":true}}),
    )
    .await;
    let fin = st.next().await.unwrap();
    assert_eq!(fin["result"]["isError"], false, "{fin}");
    assert!(
        fin["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Carol")
    );
    s.server.shutdown().await;
}

#[tokio::test]
async fn url_mode_sends_id_then_completion_notice_then_masked_result() {
    let s = start(ServerConfig::default()).await;
    let sid = legacy_init(&s, "dave", caps_both()).await;
    let mut st = legacy_call(&s, "dave", &sid, 5, "connect_billing", json!({})).await;
    let req = st.next().await.unwrap();
    assert_eq!(req["params"]["mode"], "url");
    let eid = req["params"]["elicitationId"].as_str().unwrap().to_owned();
    let url = req["params"]["url"].as_str().unwrap().to_owned();
    assert!(url.ends_with(&format!("/flow/{eid}")));
    assert_eq!(
        legacy_answer(&s, "dave", &sid, &req["id"], json!({"action":"accept"})).await,
        202
    );
    // the browser fills in the page
    let page = s
        .http
        .get(&url)
        .bearer_auth("dave")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let r = s
        .http
        .post(&url)
        .bearer_auth("dave")
        .form(&[
            ("csrf", csrf.as_str()),
            ("api_key", "sk-test-0123456789abcd"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let note = st.next().await.unwrap();
    assert_eq!(note["method"], "notifications/elicitation/complete");
    assert_eq!(note["params"]["elicitationId"], eid.as_str());
    let fin = st.next().await.unwrap();
    let text = fin["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("sk-…abcd"), "{text}");
    assert!(!text.contains("0123456789"));
    s.server.shutdown().await;
}

#[tokio::test]
async fn capability_gating_timeouts_and_session_lifecycle() {
    let cfg = ServerConfig {
        elicitation_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let s = start(cfg).await;
    // form-only client never gets URL mode
    let sid = legacy_init(&s, "erin", caps_form()).await;
    let mut st = legacy_call(&s, "erin", &sid, 1, "connect_billing", json!({})).await;
    let fin = st.next().await.unwrap();
    assert_eq!(fin["result"]["isError"], true);
    // no elicitation capability at all
    let sid0 = legacy_init(&s, "erin", json!({})).await;
    let mut st = legacy_call(&s, "erin", &sid0, 2, "deploy", json!({"service":"a"})).await;
    let fin = st.next().await.unwrap();
    assert!(fin.get("method").is_none(), "no elicitation/create: {fin}");
    assert_eq!(fin["result"]["isError"], true);
    // no elicitation before notifications/initialized
    let sid1 = legacy_init_only(&s, "erin", caps_form()).await.unwrap();
    let mut st = legacy_call(&s, "erin", &sid1, 3, "deploy", json!({"service":"a"})).await;
    let fin = st.next().await.unwrap();
    assert!(fin.get("method").is_none(), "{fin}");
    // unanswered elicitation times out into a tool error
    let mut st = legacy_call(&s, "erin", &sid, 4, "deploy", json!({"service":"a"})).await;
    let _req = st.next().await.unwrap();
    let fin = st.next().await.unwrap();
    assert_eq!(fin["result"]["isError"], true);
    assert!(
        fin["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not answered in time")
    );
    // another principal may not use the session
    let r = legacy_post(
        &s,
        "mallory",
        Some(&sid),
        json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 403);
    // bad protocol version header
    let r = s
        .http
        .post(&s.url)
        .bearer_auth("erin")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "1999-01-01")
        .body(json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // delete, then 404
    let r = s
        .http
        .delete(&s.url)
        .bearer_auth("erin")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let r = legacy_post(
        &s,
        "erin",
        Some(&sid),
        json!({"jsonrpc":"2.0","id":10,"method":"tools/list"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 404);
    s.server.shutdown().await;
}

#[tokio::test]
async fn cancelled_notification_ends_the_call_without_a_result() {
    let s = start(ServerConfig::default()).await;
    let sid = legacy_init(&s, "frank", caps_form()).await;
    let mut st = legacy_call(&s, "frank", &sid, 11, "deploy", json!({"service": "x"})).await;
    let _req = st.next().await.unwrap();
    assert_eq!(stats(&s).await["pending_elicitations"], 1);
    let r = legacy_post(
        &s,
        "frank",
        Some(&sid),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 202);
    assert!(
        st.next().await.is_none(),
        "no response after a cancellation"
    );
    assert_eq!(stats(&s).await["pending_elicitations"], 0);
    s.server.shutdown().await;
}
