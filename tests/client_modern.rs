//! The modern (MRTR) client against the reference server on 127.0.0.1.

use elicitkit::client::{
    AnswerPolicy, Endpoint, ErrorClass, FlowConfig, InvalidKind, LegResult, ModernFlow, Mutation,
    Outcome, RoundTrip, ToolCall, run_modern,
};
use elicitkit::protocol::ClientCapabilities;
use elicitkit::server::{self, RunningServer, ServerConfig};
use serde_json::{Value, json};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(10);

async fn server() -> (RunningServer, Endpoint, reqwest::Client) {
    let srv = server::start(ServerConfig::default())
        .await
        .expect("server starts");
    let mut ep = Endpoint::new(srv.mcp_url(), "alice");
    ep.other_token = Some("mallory".into());
    (srv, ep, reqwest::Client::new())
}

async fn run(
    http: &reqwest::Client,
    ep: &Endpoint,
    tool: &str,
    args: Value,
    cfg: FlowConfig,
) -> RoundTrip {
    run_modern(
        http,
        ep,
        ModernFlow::new(ToolCall::new(tool, args), cfg),
        TIMEOUT,
    )
    .await
}

fn legs(rt: &RoundTrip) -> Vec<&str> {
    rt.legs.iter().map(|l| l.name.as_str()).collect()
}

#[tokio::test]
async fn deploy_accept_decline_cancel() {
    let (srv, ep, http) = server().await;
    let args = json!({"service": "api"});
    let rt = run(&http, &ep, "deploy", args.clone(), FlowConfig::default()).await;
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(rt.rounds, 1);
    assert_eq!(legs(&rt), ["tools/call #1", "tools/call #2 retry"]);
    assert_eq!(rt.legs[1].result, LegResult::Complete { is_error: false });
    assert!(rt.legs[0].server_app.is_some(), "Server-Timing is read");
    assert!(rt.total >= rt.legs[0].total);

    for policy in [AnswerPolicy::Decline, AnswerPolicy::Cancel] {
        let rt = run(
            &http,
            &ep,
            "deploy",
            args.clone(),
            FlowConfig::with_policy(policy),
        )
        .await;
        assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
        assert_eq!(rt.legs[1].result, LegResult::Complete { is_error: true });
    }
    srv.shutdown().await;
}

#[tokio::test]
async fn book_trip_takes_three_rounds_with_a_new_state_each() {
    let (srv, ep, http) = server().await;
    let rt = run(
        &http,
        &ep,
        "book_trip",
        json!({"from": "AMS", "to": "LIS"}),
        FlowConfig {
            seed: 42,
            ..FlowConfig::default()
        },
    )
    .await;
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(rt.rounds, 3);
    assert_eq!(rt.request_states.len(), 3);
    let mut distinct = rt.request_states.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "a new requestState every round");
    assert_eq!(
        rt.legs.last().map(|l| l.name.as_str()),
        Some("tools/call #4 retry")
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn connect_billing_completes_the_flow_page() {
    let (srv, ep, http) = server().await;
    let rt = run(
        &http,
        &ep,
        "connect_billing",
        json!({}),
        FlowConfig::default(),
    )
    .await;
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(
        legs(&rt),
        [
            "tools/call #1",
            "flow page GET",
            "flow page POST",
            "tools/call #2 retry"
        ]
    );
    let text = rt
        .final_result
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(
        !text.contains("sk-test-"),
        "only a masked key comes back: {text}"
    );

    let rt = run(
        &http,
        &ep,
        "connect_billing",
        json!({}),
        FlowConfig::with_policy(AnswerPolicy::UrlConsentOnly),
    )
    .await;
    assert!(
        matches!(rt.outcome, Outcome::ExpectedRejection { code: None, .. }),
        "{rt:#?}"
    );

    // A form-only client must not get URL mode: the server answers -32021.
    let cfg = FlowConfig {
        capabilities: ClientCapabilities::with_modes(true, false),
        ..FlowConfig::default()
    };
    let rt = run(&http, &ep, "connect_billing", json!({}), cfg).await;
    assert_eq!(
        rt.outcome.error_class(),
        Some(ErrorClass::CapabilityError),
        "{rt:#?}"
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn state_probes_are_rejected() {
    let (srv, ep, http) = server().await;
    let args = json!({"service": "api"});
    for m in [
        Mutation::FlipChar { index: 20 },
        Mutation::FlipDecodedBit { bit: 100 },
        Mutation::Truncate { count: 3 },
        Mutation::Extend {
            suffix: "AAAA".into(),
        },
        Mutation::ReEncodeStandard,
        Mutation::Replace {
            with: "garbage".into(),
        },
    ] {
        let rt = run(
            &http,
            &ep,
            "deploy",
            args.clone(),
            FlowConfig::with_policy(AnswerPolicy::TamperState(m.clone())),
        )
        .await;
        match &rt.outcome {
            Outcome::ExpectedRejection {
                code: Some(c),
                reason,
            } => {
                assert_eq!(*c, -32602, "{m:?}");
                assert!(
                    reason.is_some(),
                    "the reference server names the reason ({m:?})"
                );
            }
            other => panic!("{m:?}: {other:?}"),
        }
    }

    // delete_file's side effect is single-use. Generated answers may leave
    // `confirm` false (nothing deleted, so a replay harmlessly completes
    // again); across seeds, every confirmed deletion must refuse its replay.
    let mut rejected = 0;
    for seed in 0..16 {
        let rt = run(
            &http,
            &ep,
            "delete_file",
            json!({"path": "/tmp/x"}),
            FlowConfig {
                seed,
                policy: AnswerPolicy::ReplayState,
                ..FlowConfig::default()
            },
        )
        .await;
        assert_eq!(
            rt.legs.last().map(|l| l.name.as_str()),
            Some("tools/call replay")
        );
        match &rt.outcome {
            Outcome::ExpectedRejection { code, reason } => {
                assert_eq!((*code, reason.as_deref()), (Some(-32602), Some("replayed")));
                rejected += 1;
            }
            Outcome::Unexpected {
                class: ErrorClass::StateAccepted,
                ..
            } => {
                let text = rt
                    .final_result
                    .as_ref()
                    .map(Value::to_string)
                    .unwrap_or_default();
                assert!(
                    text.contains("not deleted"),
                    "a real deletion was replayed: {rt:#?}"
                );
            }
            other => panic!("seed {seed}: {other:?}"),
        }
    }
    assert!(rejected > 0, "no seed confirmed the deletion");

    let rt = run(
        &http,
        &ep,
        "deploy",
        args.clone(),
        FlowConfig::with_policy(AnswerPolicy::CrossPrincipalReplay),
    )
    .await;
    assert_eq!(
        rt.outcome,
        Outcome::ExpectedRejection {
            code: Some(-32602),
            reason: Some("wrong_principal".into())
        },
        "{rt:#?}"
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn invalid_content_is_not_accepted() {
    let (srv, ep, http) = server().await;
    let rt = run(
        &http,
        &ep,
        "deploy",
        json!({"service": "api"}),
        FlowConfig::with_policy(AnswerPolicy::AcceptInvalid(InvalidKind::NotInEnum)),
    )
    .await;
    assert!(rt.outcome.is_ok(), "{rt:#?}");
    assert!(matches!(rt.outcome, Outcome::ExpectedRejection { .. }));
    srv.shutdown().await;
}

#[tokio::test]
async fn a_dead_server_is_a_transport_error() {
    let (srv, ep, http) = server().await;
    srv.shutdown().await;
    let rt = run(
        &http,
        &ep,
        "deploy",
        json!({"service": "api"}),
        FlowConfig::default(),
    )
    .await;
    assert_eq!(
        rt.outcome.error_class(),
        Some(ErrorClass::Transport),
        "{rt:#?}"
    );
}
