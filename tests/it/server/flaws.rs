//! Every flaw switch observably changes the one behaviour it names.
#![cfg(feature = "net")]

use std::time::Duration;

use crate::support::server::*;
use elicitkit::server::{Flaw, FlawSet, ServerConfig};
use serde_json::json;

fn with(flaw: Flaw) -> ServerConfig {
    ServerConfig {
        flaws: [flaw].into_iter().collect::<FlawSet>(),
        ..ServerConfig::default()
    }
}

fn deploy_yes() -> serde_json::Value {
    json!({"confirm":{"action":"accept","content":{"environment":"staging","confirm":true}}})
}

#[tokio::test]
async fn accept_tampered_state() {
    let s = start(with(Flaw::AcceptTamperedState)).await;
    let r = retry(
        &s,
        "a",
        1,
        "deploy",
        json!({"service":"x"}),
        deploy_yes(),
        "forged-state",
        &caps_form(),
    )
    .await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn ignore_principal() {
    let s = start(with(Flaw::IgnorePrincipal)).await;
    let first = call(
        &s,
        "alice",
        1,
        "deploy",
        json!({"service":"x"}),
        &caps_form(),
    )
    .await;
    let r = retry(
        &s,
        "bob",
        2,
        "deploy",
        json!({"service":"x"}),
        deploy_yes(),
        &first.state(),
        &caps_form(),
    )
    .await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    let b = call(&s, "alice", 3, "connect_billing", json!({}), &caps_both()).await;
    let url = b.result()["inputRequests"]["billing"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = s
        .http
        .get(&url)
        .bearer_auth("mallory")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    s.server.shutdown().await;
}

#[tokio::test]
async fn ignore_request_binding() {
    let s = start(with(Flaw::IgnoreRequestBinding)).await;
    let first = call(&s, "a", 1, "deploy", json!({"service":"x"}), &caps_form()).await;
    let r = retry(
        &s,
        "a",
        2,
        "deploy",
        json!({"service":"prod-db"}),
        deploy_yes(),
        &first.state(),
        &caps_form(),
    )
    .await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    assert!(r.text_content().contains("prod-db"));
    s.server.shutdown().await;
}

#[tokio::test]
async fn no_expiry() {
    let clock = elicitkit::clock::Clock::offset(0);
    let cfg = ServerConfig {
        state_ttl: Duration::from_secs(60),
        clock: clock.clone(),
        ..with(Flaw::NoExpiry)
    };
    let s = start(cfg).await;
    let first = call(&s, "a", 1, "deploy", json!({"service":"x"}), &caps_form()).await;
    clock.advance(Duration::from_secs(3_600));
    let r = retry(
        &s,
        "a",
        2,
        "deploy",
        json!({"service":"x"}),
        deploy_yes(),
        &first.state(),
        &caps_form(),
    )
    .await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn replayable_side_effect() {
    let s = start(with(Flaw::ReplayableSideEffect)).await;
    let args = json!({"path":"/tmp/x"});
    let first = call(&s, "a", 1, "delete_file", args.clone(), &caps_form()).await;
    let yes = json!({"confirm":{"action":"accept","content":{"confirm":true}}});
    for id in [2, 3] {
        let r = retry(
            &s,
            "a",
            id,
            "delete_file",
            args.clone(),
            yes.clone(),
            &first.state(),
            &caps_form(),
        )
        .await;
        assert_eq!(r.result_type(), "complete", "{}", r.text);
    }
    assert_eq!(stats(&s).await["side_effects"]["files_deleted"], 2);
    s.server.shutdown().await;
}

#[tokio::test]
async fn url_to_form_client() {
    let s = start(with(Flaw::UrlToFormClient)).await;
    let r = call(&s, "a", 1, "connect_billing", json!({}), &caps_form()).await;
    assert_eq!(
        r.result()["inputRequests"]["billing"]["params"]["mode"],
        "url",
        "{}",
        r.text
    );
    s.server.shutdown().await;
}

#[tokio::test]
async fn elicit_without_capability() {
    let s = start(with(Flaw::ElicitWithoutCapability)).await;
    let r = call(&s, "a", 1, "deploy", json!({"service":"x"}), &json!({})).await;
    assert_eq!(r.result_type(), "input_required", "{}", r.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn secret_in_form() {
    let s = start(with(Flaw::SecretInForm)).await;
    let r = call(&s, "a", 1, "connect_billing", json!({}), &caps_form()).await;
    let p = &r.result()["inputRequests"]["billing"]["params"];
    assert_eq!(p["mode"], "form", "{}", r.text);
    let model = elicitkit::schema::RequestedSchema::from_value(&p["requestedSchema"])
        .0
        .unwrap();
    let findings = elicitkit::schema::form_secret_findings(&model);
    assert!(
        !findings.is_empty(),
        "the schema engine flags the api_key field"
    );
    let done = retry(
        &s,
        "a",
        2,
        "connect_billing",
        json!({}),
        json!({"billing":{"action":"accept","content":{"api_key":"sk-live-eeeeeeeeeeee4242"}}}),
        &r.state(),
        &caps_form(),
    )
    .await;
    assert!(done.text_content().contains("…4242"), "{}", done.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn crash_on_decline() {
    let s = start(with(Flaw::CrashOnDecline)).await;
    let first = call(&s, "a", 1, "deploy", json!({"service":"x"}), &caps_form()).await;
    let r = retry(
        &s,
        "a",
        2,
        "deploy",
        json!({"service":"x"}),
        json!({"confirm":{"action":"decline"}}),
        &first.state(),
        &caps_form(),
    )
    .await;
    assert_eq!(r.status, 500);
    // legacy: the stream ends without a result
    let sid = legacy_init(&s, "a", caps_form()).await;
    let mut st = legacy_call(&s, "a", &sid, 3, "deploy", json!({"service":"x"})).await;
    let req = st.next().await.unwrap();
    legacy_answer(&s, "a", &sid, &req["id"], json!({"action":"decline"})).await;
    assert!(st.next().await.is_none());
    s.server.shutdown().await;
}

#[tokio::test]
async fn hang_on_cancel() {
    let s = start(with(Flaw::HangOnCancel)).await;
    let first = call(&s, "a", 1, "deploy", json!({"service":"x"}), &caps_form()).await;
    let mut params = json!({"name":"deploy","arguments":{"service":"x"},
        "inputResponses":{"confirm":{"action":"cancel"}},"requestState": first.state()});
    params["_meta"] = meta(&caps_form());
    let sent = s
        .http
        .post(&s.url)
        .bearer_auth("a")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "deploy")
        .timeout(Duration::from_millis(800))
        .body(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":params}).to_string())
        .send()
        .await;
    assert!(
        sent.is_err_and(|e| e.is_timeout()),
        "a cancel is left hanging"
    );
    s.server.shutdown().await;
}

#[tokio::test]
async fn missing_result_type() {
    let s = start(with(Flaw::MissingResultType)).await;
    let r = modern(&s, "a", 1, "tools/list", json!({}), &json!({})).await;
    assert_eq!(r.status, 200);
    assert!(r.result().get("resultType").is_none(), "{}", r.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn input_required_on_list() {
    let s = start(with(Flaw::InputRequiredOnList)).await;
    let r = modern(&s, "a", 1, "tools/list", json!({}), &json!({})).await;
    assert_eq!(r.result_type(), "input_required", "{}", r.text);
    s.server.shutdown().await;
}

#[tokio::test]
async fn legacy_url_without_id() {
    let s = start(with(Flaw::LegacyUrlWithoutId)).await;
    let sid = legacy_init(&s, "a", caps_both()).await;
    let mut st = legacy_call(&s, "a", &sid, 1, "connect_billing", json!({})).await;
    let req = st.next().await.unwrap();
    assert_eq!(req["params"]["mode"], "url");
    assert!(req["params"].get("elicitationId").is_none(), "{req}");
    s.server.shutdown().await;
}
