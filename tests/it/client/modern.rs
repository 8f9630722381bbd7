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
    rt.legs.iter().map(|l| &*l.name).collect()
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
        rt.legs.last().map(|l| &*l.name),
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
        !text.contains(elicitkit::client::browser::SECRET_MARKER),
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
        assert_eq!(rt.legs.last().map(|l| &*l.name), Some("tools/call replay"));
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

/// Measurement, not a test: `cargo test --release --test client_modern --
/// --ignored --nocapture measure`. Prints the client's own CPU cost per
/// `deploy` round trip (state machine only, canned replies) and end-to-end
/// round trips per second against the in-process reference server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_client_throughput() {
    use elicitkit::client::{HttpReply, Step};
    use std::time::Instant;
    // 1. Sans-I/O cost with canned replies shaped like the reference server's.
    let (srv, ep, http) = server().await;
    let first = json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required",
        "inputRequests":{"confirm":{"method":"elicitation/create","params":{"mode":"form",
        "message":"Deploy api?","requestedSchema":{"type":"object","properties":{
        "environment":{"type":"string","enum":["staging","production"]},
        "confirm":{"type":"boolean","default":false}},"required":["environment","confirm"]}}}},
        "requestState":"A".repeat(180)}});
    let done = json!({"jsonrpc":"2.0","id":2,"result":{"resultType":"complete",
        "content":[{"type":"text","text":"Deployed api."}],"isError":false}});
    let reply = |v: &Value| HttpReply {
        status: 200,
        content_type: Some("application/json".into()),
        server_timing: (
            Some(Duration::from_micros(10)),
            Some(Duration::from_micros(20)),
        ),
        body: bytes::Bytes::from(v.to_string()),
        ..HttpReply::default()
    };
    let (r1, r2) = (reply(&first), reply(&done));
    let n = 50_000u32;
    let t = Instant::now();
    for i in 0..n {
        let mut f = ModernFlow::new(
            ToolCall::new("deploy", json!({"service":"api"})),
            FlowConfig {
                seed: u64::from(i),
                ..FlowConfig::default()
            },
        );
        let _ = f.start();
        let _ = f.on_reply(r1.clone());
        match f.on_reply(r2.clone()) {
            Step::Done(rt) => assert_eq!(rt.outcome, Outcome::Success),
            Step::Send(_) => panic!("flow did not end"),
        }
    }
    let per = t.elapsed() / n;
    println!(
        "sans-I/O: {per:?} client CPU per deploy round trip ({:.0}/s on one core)",
        1.0 / per.as_secs_f64()
    );

    let schema = first["result"]["inputRequests"]["confirm"]["params"]["requestedSchema"].clone();
    let t = Instant::now();
    for i in 0..n {
        let _ = elicitkit::client::content::valid_content(&schema, u64::from(i));
    }
    println!("  of which content generation: {:?}", t.elapsed() / n);
    let t = Instant::now();
    for _ in 0..n {
        let _ = elicitkit::protocol::body::decode_body(Some("application/json"), &r1.body);
    }
    println!(
        "  of which decoding the input_required body: {:?}",
        t.elapsed() / n
    );
    let t = Instant::now();
    for _ in 0..n {
        let mut f = ModernFlow::new(
            ToolCall::new("deploy", json!({"service":"api"})),
            FlowConfig::default(),
        );
        let _ = f.start();
    }
    println!("  of which new + start: {:?}", t.elapsed() / n);

    // 2. End to end over HTTP/1.1 on 127.0.0.1 (client and server share 2 worker threads).
    for concurrency in [1usize, 8, 32] {
        if std::env::var_os("EK_SKIP_E2E").is_some() {
            break;
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut tasks = Vec::new();
        for w in 0..concurrency {
            let (http, ep) = (http.clone(), ep.clone());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut seed = w as u64 * 1_000_000;
                while Instant::now() < deadline {
                    seed += 1;
                    let cfg = FlowConfig {
                        seed,
                        ..FlowConfig::default()
                    };
                    let rt = run(&http, &ep, "deploy", json!({"service":"api"}), cfg).await;
                    assert_eq!(rt.outcome, Outcome::Success);
                    lat.push(rt.total);
                }
                lat
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.expect("task"));
        }
        all.sort();
        let p = |q: f64| all[((all.len() as f64 - 1.0) * q) as usize];
        println!(
            "end-to-end, {concurrency} concurrent: {:.0} round trips/s, p50 {:?}, p99 {:?}",
            all.len() as f64 / 3.0,
            p(0.5),
            p(0.99)
        );
    }
    srv.shutdown().await;
}
