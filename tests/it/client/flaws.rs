//! The client's verdicts against deliberately broken reference servers: each
//! flaw must turn the matching policy's outcome into `Unexpected`.

use elicitkit::client::legacy::{LegacyClient, LegacyConfig};
use elicitkit::client::{
    AnswerPolicy, Endpoint, ErrorClass, FlowConfig, ModernFlow, Mutation, Outcome, RoundTrip,
    ToolCall, run_modern,
};
use elicitkit::protocol::ClientCapabilities;
use elicitkit::server::{self, Flaw, FlawSet, RunningServer, ServerConfig};
use serde_json::{Map, Value, json};
use std::time::Duration;

async fn flawed(flaw: Flaw) -> RunningServer {
    let mut flaws = FlawSet::none();
    flaws.insert(flaw);
    server::start(ServerConfig {
        flaws,
        hang_limit: Duration::from_secs(3),
        ..ServerConfig::default()
    })
    .await
    .expect("server starts")
}

async fn run(srv: &RunningServer, tool: &str, args: Value, cfg: FlowConfig) -> RoundTrip {
    let mut ep = Endpoint::new(srv.mcp_url(), "alice");
    ep.other_token = Some("mallory".into());
    let flow = ModernFlow::new(ToolCall::new(tool, args), cfg);
    run_modern(
        &reqwest::Client::new(),
        &ep,
        flow,
        Duration::from_millis(1500),
    )
    .await
}

fn class(rt: &RoundTrip) -> Option<ErrorClass> {
    rt.outcome.error_class()
}

#[tokio::test]
async fn modern_flaws_are_caught() {
    let deploy = json!({"service": "api"});

    let srv = flawed(Flaw::AcceptTamperedState).await;
    let cfg = FlowConfig::with_policy(AnswerPolicy::TamperState(Mutation::FlipDecodedBit {
        bit: 200,
    }));
    let rt = run(&srv, "deploy", deploy.clone(), cfg).await;
    assert_eq!(class(&rt), Some(ErrorClass::StateAccepted), "{rt:#?}");
    srv.shutdown().await;

    let srv = flawed(Flaw::IgnorePrincipal).await;
    let cfg = FlowConfig::with_policy(AnswerPolicy::CrossPrincipalReplay);
    let rt = run(&srv, "deploy", deploy.clone(), cfg).await;
    assert_eq!(class(&rt), Some(ErrorClass::StateAccepted), "{rt:#?}");
    srv.shutdown().await;

    let srv = flawed(Flaw::MissingResultType).await;
    let rt = run(&srv, "deploy", deploy.clone(), FlowConfig::default()).await;
    assert_eq!(class(&rt), Some(ErrorClass::ProtocolViolation), "{rt:#?}");
    srv.shutdown().await;

    let srv = flawed(Flaw::UrlToFormClient).await;
    let cfg = FlowConfig {
        capabilities: ClientCapabilities::with_modes(true, false),
        ..FlowConfig::default()
    };
    let rt = run(&srv, "connect_billing", json!({}), cfg).await;
    assert_eq!(class(&rt), Some(ErrorClass::ProtocolViolation), "{rt:#?}");
    srv.shutdown().await;

    let srv = flawed(Flaw::ElicitWithoutCapability).await;
    let cfg = FlowConfig {
        capabilities: ClientCapabilities::none(),
        ..FlowConfig::default()
    };
    let rt = run(&srv, "deploy", deploy.clone(), cfg).await;
    assert_eq!(class(&rt), Some(ErrorClass::ProtocolViolation), "{rt:#?}");
    srv.shutdown().await;

    let srv = flawed(Flaw::CrashOnDecline).await;
    let rt = run(
        &srv,
        "deploy",
        deploy.clone(),
        FlowConfig::with_policy(AnswerPolicy::Decline),
    )
    .await;
    assert_eq!(class(&rt), Some(ErrorClass::HttpError), "{rt:#?}");
    srv.shutdown().await;

    let srv = flawed(Flaw::HangOnCancel).await;
    let rt = run(
        &srv,
        "deploy",
        deploy.clone(),
        FlowConfig::with_policy(AnswerPolicy::Cancel),
    )
    .await;
    assert_eq!(class(&rt), Some(ErrorClass::Timeout), "{rt:#?}");
    srv.shutdown().await;
}

#[tokio::test]
async fn legacy_url_without_id_is_caught() {
    let srv = flawed(Flaw::LegacyUrlWithoutId).await;
    let cfg = LegacyConfig {
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
    match &rt.outcome {
        Outcome::Unexpected {
            class: ErrorClass::ProtocolViolation,
            message,
        } => assert!(message.contains("elicitationId"), "{message}"),
        other => panic!("{other:?}"),
    }
    srv.shutdown().await;
}
