//! The 2025-11-25 client against the reference server on 127.0.0.1.

use elicitkit::client::legacy::{LegacyClient, LegacyConfig};
use elicitkit::client::{AnswerPolicy, Endpoint, InvalidKind, LegResult, Outcome};
use elicitkit::protocol::ClientCapabilities;
use elicitkit::server::{self, ServerConfig};
use serde_json::{Map, Value, json};
use std::time::Duration;

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

async fn connect(url: String) -> LegacyClient {
    let cfg = LegacyConfig {
        timeout: Duration::from_secs(10),
        ..LegacyConfig::default()
    };
    LegacyClient::connect(reqwest::Client::new(), Endpoint::new(url, "alice"), cfg)
        .await
        .expect("session opens")
}

#[tokio::test]
async fn legacy_form_and_url_round_trips() {
    let srv = server::start(ServerConfig::default())
        .await
        .expect("server starts");
    let mut c = connect(srv.mcp_url()).await;
    assert!(c.session_id().is_some());
    let hs: Vec<_> = c
        .handshake_legs()
        .iter()
        .map(|l| l.result.clone())
        .collect();
    assert_eq!(hs[1], LegResult::Accepted);

    let rt = c
        .call_tool(
            "deploy",
            args(json!({"service": "api"})),
            &AnswerPolicy::AcceptValid,
        )
        .await;
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(rt.rounds, 1);
    let names: Vec<_> = rt.legs.iter().map(|l| &*l.name).collect();
    assert_eq!(names, ["tools/call (stream)", "elicitation answer POST"]);
    assert_eq!(rt.legs[1].result, LegResult::Accepted);

    let rt = c
        .call_tool(
            "deploy",
            args(json!({"service": "api"})),
            &AnswerPolicy::Decline,
        )
        .await;
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(rt.legs[0].result, LegResult::Complete { is_error: true });

    let rt = c
        .call_tool("connect_billing", Map::new(), &AnswerPolicy::AcceptValid)
        .await;
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    let names: Vec<_> = rt.legs.iter().map(|l| &*l.name).collect();
    assert_eq!(
        names,
        [
            "tools/call (stream)",
            "flow page GET",
            "flow page POST",
            "elicitation answer POST"
        ]
    );

    let rt = c
        .call_tool("deploy", Map::new(), &AnswerPolicy::ReplayState)
        .await;
    assert!(matches!(rt.outcome, Outcome::Skipped(_)));

    let leg = c.close().await.expect("DELETE ends the session");
    assert_eq!(leg.result, LegResult::Accepted);
    srv.shutdown().await;
}

#[tokio::test]
async fn legacy_book_trip_three_elicitations() {
    let srv = server::start(ServerConfig::default())
        .await
        .expect("server starts");
    // With the optional GET stream: the reference server opens it (200) and
    // sends nothing there; it is recorded and does not disturb the call.
    let cfg = LegacyConfig {
        timeout: Duration::from_secs(10),
        get_stream: true,
        ..LegacyConfig::default()
    };
    let mut c = LegacyClient::connect(
        reqwest::Client::new(),
        Endpoint::new(srv.mcp_url(), "alice"),
        cfg,
    )
    .await
    .expect("session opens");
    // Spawned: the call's future is Send, as Goose users and drivers need.
    let rt = tokio::spawn(async move {
        c.call_tool(
            "book_trip",
            args(json!({"from": "AMS", "to": "LIS"})),
            &AnswerPolicy::AcceptValid,
        )
        .await
    })
    .await
    .expect("task");
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(rt.rounds, 3);
    let get = rt.legs.iter().find(|l| l.name == "GET stream");
    assert_eq!(get.map(|l| l.status), Some(Some(200)), "{rt:#?}");
    assert_eq!(
        rt.legs
            .iter()
            .filter(|l| l.name == "elicitation answer POST")
            .count(),
        3
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn legacy_policies_that_expect_a_refusal() {
    let srv = server::start(ServerConfig {
        elicitation_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    })
    .await
    .expect("server starts");
    let mut c = connect(srv.mcp_url()).await;

    // Consent without visiting the page: the server never sees the page
    // submitted, so the call must not complete successfully.
    let rt = c
        .call_tool("connect_billing", Map::new(), &AnswerPolicy::UrlConsentOnly)
        .await;
    assert!(rt.outcome.is_ok(), "{rt:#?}");
    assert!(!rt.legs.iter().any(|l| l.name.starts_with("flow page")));

    let rt = c
        .call_tool(
            "deploy",
            args(json!({"service": "api"})),
            &AnswerPolicy::AcceptInvalid(InvalidKind::NotInEnum),
        )
        .await;
    assert!(
        matches!(rt.outcome, Outcome::ExpectedRejection { .. }),
        "{rt:#?}"
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn legacy_form_only_client_gets_no_url_mode() {
    let srv = server::start(ServerConfig::default())
        .await
        .expect("server starts");
    let cfg = LegacyConfig {
        capabilities: ClientCapabilities::with_modes(true, false),
        timeout: Duration::from_secs(10),
        ..LegacyConfig::default()
    };
    let mut c = LegacyClient::connect(
        reqwest::Client::new(),
        Endpoint::new(srv.mcp_url(), "alice"),
        cfg,
    )
    .await
    .expect("session opens");
    let rt = c
        .call_tool("connect_billing", Map::new(), &AnswerPolicy::AcceptValid)
        .await;
    // The correct server explains the missing capability in a tool error.
    assert_eq!(rt.rounds, 0, "{rt:#?}");
    assert_eq!(rt.legs[0].result, LegResult::Complete { is_error: true });
    srv.shutdown().await;
}
