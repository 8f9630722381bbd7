//! 2026-07-28 (MRTR) behaviour of the reference server, driven over real HTTP.
#![cfg(feature = "net")]

mod server_support;

use elicitkit::server::ServerConfig;
use serde_json::json;
use server_support::*;

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
