//! Unit tests of the MRTR state machine with canned replies.

use super::*;
use crate::client::policy::Mutation;
use crate::protocol::mrtr::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use crate::schema::{RequestedSchema, validate_content};
use bytes::Bytes;

const FORM_SCHEMA: &str = r#"{"type":"object","properties":{
    "environment":{"type":"string","enum":["staging","production"]},
    "confirm":{"type":"boolean"}},"required":["environment","confirm"]}"#;

fn form_request() -> Value {
    json!({"method":"elicitation/create","params":{"mode":"form","message":"Deploy?",
        "requestedSchema": serde_json::from_str::<Value>(FORM_SCHEMA).unwrap()}})
}

fn url_request(url: &str) -> Value {
    json!({"method":"elicitation/create","params":{"mode":"url","message":"Connect","url":url}})
}

fn body_of(out: &Outgoing) -> Value {
    serde_json::from_slice(&out.body).unwrap()
}

fn json_reply(status: u16, v: Value) -> HttpReply {
    HttpReply {
        status,
        content_type: Some("application/json".into()),
        server_timing: (
            Some(Duration::from_micros(500)),
            Some(Duration::from_millis(2)),
        ),
        body: Bytes::from(v.to_string()),
        to_headers: Duration::from_millis(1),
        to_first_byte: Duration::from_millis(1),
        total: Duration::from_millis(2),
        connection: Default::default(),
        to_first_event: None,
    }
}

fn sse_reply(v: Value) -> HttpReply {
    HttpReply {
        status: 200,
        content_type: Some("text/event-stream".into()),
        body: Bytes::from(format!(
            "id: e0\ndata:\n\n: keep-alive\n\nevent: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{}}}}\n\ndata: {v}\n\n"
        )),
        ..HttpReply::default()
    }
}

fn input_required(id: i64, requests: Value, state: Option<&str>) -> Value {
    let mut r = json!({"resultType":"input_required","inputRequests":requests});
    if let Some(s) = state {
        r[REQUEST_STATE] = json!(s);
    }
    json!({"jsonrpc":"2.0","id":id,"result":r})
}

fn complete(id: i64, is_error: bool) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":{"resultType":"complete",
        "content":[{"type":"text","text":"done"}],"isError":is_error}})
}

fn rpc_error(id: i64, code: i64, reason: Option<&str>) -> Value {
    let mut e = json!({"code":code,"message":"nope"});
    if let Some(r) = reason {
        e["data"] = json!({"reason": r});
    }
    json!({"jsonrpc":"2.0","id":id,"error":e})
}

fn flow(policy: AnswerPolicy) -> ModernFlow {
    ModernFlow::new(
        ToolCall::new("deploy", json!({"service":"api"})),
        FlowConfig::with_policy(policy),
    )
}

fn send(step: Step) -> Outgoing {
    match step {
        Step::Send(o) => o,
        Step::Done(rt) => panic!("expected a request, flow ended: {:?}", rt.outcome),
    }
}

fn done(step: Step) -> RoundTrip {
    match step {
        Step::Done(rt) => rt,
        Step::Send(o) => panic!("expected the end, got a request {}", o.leg),
    }
}

fn header<'a>(out: &'a Outgoing, name: &str) -> Option<&'a str> {
    out.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Runs one form round: start, input_required, returns the retry.
fn one_round(f: &mut ModernFlow, state: Option<&str>) -> Outgoing {
    let _ = f.start();
    send(f.on_reply(json_reply(
        200,
        input_required(1, json!({"confirm": form_request()}), state),
    )))
}

#[test]
fn first_call_carries_meta_and_headers() {
    let mut f = flow(AnswerPolicy::AcceptValid);
    let out = f.start();
    assert_eq!(out.leg, "tools/call #1");
    assert_eq!(out.target, Target::Mcp);
    assert_eq!(out.method, HttpMethod::Post);
    assert_eq!(out.auth, Auth::Primary);
    assert_eq!(header(&out, "MCP-Protocol-Version"), Some("2026-07-28"));
    assert_eq!(header(&out, "Mcp-Method"), Some("tools/call"));
    assert_eq!(header(&out, "Mcp-Name"), Some("deploy"));
    assert_eq!(
        header(&out, "Accept"),
        Some("application/json, text/event-stream")
    );
    let b = body_of(&out);
    assert_eq!(b["id"], json!(1));
    assert_eq!(b["method"], json!("tools/call"));
    assert_eq!(b["params"]["arguments"]["service"], json!("api"));
    assert!(b["params"].get(REQUEST_STATE).is_none());
    assert!(b["params"].get("inputResponses").is_none());
    let meta = &b["params"]["_meta"];
    assert_eq!(meta[META_PROTOCOL_VERSION], json!("2026-07-28"));
    assert_eq!(
        meta[META_CLIENT_CAPABILITIES],
        json!({"elicitation":{"form":{},"url":{}}})
    );
}

#[test]
fn accept_valid_form_round_trip() {
    let mut f = flow(AnswerPolicy::AcceptValid);
    let retry = one_round(&mut f, Some("st-1"));
    assert_eq!(retry.leg, "tools/call #2 retry");
    let b = body_of(&retry);
    assert_eq!(b["id"], json!(2), "a retry uses a new id");
    assert_eq!(b["params"][REQUEST_STATE], json!("st-1"));
    let answer = &b["params"]["inputResponses"]["confirm"];
    assert_eq!(answer["action"], json!("accept"));
    let model = RequestedSchema::from_value(&serde_json::from_str(FORM_SCHEMA).unwrap())
        .0
        .unwrap();
    assert!(validate_content(&model, &answer["content"]).is_empty());
    let rt = done(f.on_reply(json_reply(200, complete(2, false))));
    assert_eq!(rt.outcome, Outcome::Success);
    assert_eq!(rt.rounds, 1);
    assert_eq!(rt.request_states, vec!["st-1".to_owned()]);
    let names: Vec<_> = rt.legs.iter().map(|l| &*l.name).collect();
    assert_eq!(names, ["tools/call #1", "tools/call #2 retry"]);
    assert_eq!(rt.legs[0].result, LegResult::InputRequired);
    assert_eq!(rt.legs[1].result, LegResult::Complete { is_error: false });
    assert_eq!(rt.legs[0].server_state, Some(Duration::from_micros(500)));
    assert_eq!(rt.legs[0].server_app, Some(Duration::from_millis(2)));
    assert!(rt.final_result.is_some());
    assert!(f.is_finished());
}

#[test]
fn multi_round_sse_echoes_each_state_byte_for_byte() {
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let states = ["r1-ÿ\"\\/+=", "r2-\u{1F600}\n", "r3"];
    let mut id = 1;
    for (i, st) in states.iter().enumerate() {
        let key = format!("k{i}");
        let out = send(f.on_reply(sse_reply(input_required(
            id,
            json!({ key.clone(): form_request() }),
            Some(st),
        ))));
        let b = body_of(&out);
        assert_eq!(b["id"], json!(id + 1));
        assert_eq!(b["params"][REQUEST_STATE].as_str(), Some(*st));
        assert!(b["params"]["inputResponses"].get(&key).is_some());
        id += 1;
    }
    let rt = done(f.on_reply(sse_reply(complete(id, false))));
    assert_eq!(rt.outcome, Outcome::Success);
    assert_eq!(rt.rounds, 3);
    assert_eq!(rt.request_states.len(), 3);
    assert_eq!(rt.legs.last().unwrap().name, "tools/call #4 retry");
}

#[test]
fn no_state_given_means_none_sent_and_load_shedding_retries() {
    let mut f = flow(AnswerPolicy::AcceptValid);
    let retry = one_round(&mut f, None);
    assert!(body_of(&retry)["params"].get(REQUEST_STATE).is_none());
    // requestState only (load shedding): retry at once, without inputResponses.
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let out = send(f.on_reply(json_reply(
        200,
        json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required",REQUEST_STATE:"s"}}),
    )));
    let b = body_of(&out);
    assert_eq!(b["params"][REQUEST_STATE], json!("s"));
    assert!(b["params"].get("inputResponses").is_none());
}

#[test]
fn a_missing_result_type_ends_the_flow_unless_read_by_shape() {
    let undeclared = |v: Value| {
        let mut r = v;
        r["result"].as_object_mut().unwrap().remove("resultType");
        json_reply(200, r)
    };
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let rt = done(f.on_reply(undeclared(input_required(
        1,
        json!({"q": form_request()}),
        Some("s"),
    ))));
    assert_eq!(
        rt.outcome.error_class(),
        Some(ErrorClass::ProtocolViolation)
    );

    let mut cfg = FlowConfig::with_policy(AnswerPolicy::AcceptValid);
    cfg.read_by_shape = true;
    let mut f = ModernFlow::new(ToolCall::new("deploy", json!({"service":"api"})), cfg);
    let _ = f.start();
    let retry = send(f.on_reply(undeclared(input_required(
        1,
        json!({"q": form_request()}),
        Some("s"),
    ))));
    assert_eq!(body_of(&retry)["params"][REQUEST_STATE], json!("s"));
    let rt = done(f.on_reply(undeclared(complete(2, false))));
    assert_eq!(rt.outcome, Outcome::Success, "{rt:#?}");
    assert_eq!(rt.rounds, 1);
}

#[test]
fn protocol_violations_are_typed() {
    let cases: Vec<(HttpReply, &str)> = vec![
        (
            json_reply(200, json!({"jsonrpc":"2.0","id":1,"result":{"content":[]}})),
            "resultType",
        ),
        (
            json_reply(
                200,
                json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}),
            ),
            "S4",
        ),
        (
            json_reply(
                200,
                json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"task"}}),
            ),
            "task",
        ),
        (json_reply(200, rpc_error(1, -32042, None)), "-32042"),
        (json_reply(200, complete(7, false)), "does not match"),
        (
            sse_reply(
                json!({"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{}}),
            ),
            "request",
        ),
        (
            HttpReply {
                status: 200,
                content_type: Some("application/json".into()),
                body: Bytes::from_static(b"{not json"),
                ..HttpReply::default()
            },
            "undecodable",
        ),
        (
            HttpReply {
                status: 202,
                ..HttpReply::default()
            },
            "202",
        ),
        (
            json_reply(
                200,
                input_required(
                    1,
                    json!({"a": {"method":"tools/list","params":{}}}),
                    Some("s"),
                ),
            ),
            "tools/list",
        ),
        (
            json_reply(
                200,
                input_required(1, json!({"a": {"params":{}}}), Some("s")),
            ),
            "method, params",
        ),
        (
            json_reply(
                200,
                input_required(1, json!({"a": {"method":"roots/list"}}), Some("s")),
            ),
            "roots",
        ),
    ];
    for (reply, needle) in cases {
        let mut f = flow(AnswerPolicy::AcceptValid);
        let _ = f.start();
        let rt = done(f.on_reply(reply));
        match &rt.outcome {
            Outcome::Unexpected {
                class: ErrorClass::ProtocolViolation,
                message,
            } => assert!(message.contains(needle), "{message:?} lacks {needle:?}"),
            other => panic!("{needle}: expected a violation, got {other:?}"),
        }
    }
}

#[test]
fn url_mode_to_a_form_only_client_is_a_violation() {
    let cfg = FlowConfig {
        capabilities: ClientCapabilities::elicitation_empty(),
        ..FlowConfig::default()
    };
    let mut f = ModernFlow::new(ToolCall::new("connect_billing", json!({})), cfg);
    let out = f.start();
    assert_eq!(
        body_of(&out)["params"]["_meta"][META_CLIENT_CAPABILITIES],
        json!({"elicitation":{}})
    );
    let rt = done(f.on_reply(json_reply(
        200,
        input_required(1, json!({"billing": url_request("/flow/1")}), Some("s")),
    )));
    assert_eq!(
        rt.outcome.error_class(),
        Some(ErrorClass::ProtocolViolation)
    );
    let cfg = FlowConfig {
        capabilities: ClientCapabilities::none(),
        ..FlowConfig::default()
    };
    let mut f = ModernFlow::new(ToolCall::new("deploy", json!({})), cfg);
    let _ = f.start();
    let rt = done(f.on_reply(json_reply(
        200,
        input_required(1, json!({"c": form_request()}), Some("s")),
    )));
    assert_eq!(
        rt.outcome.error_class(),
        Some(ErrorClass::ProtocolViolation)
    );
}

#[test]
fn errors_and_http_failures_are_classified() {
    let cases = [
        (
            json_reply(400, rpc_error(1, -32021, None)),
            ErrorClass::CapabilityError,
        ),
        (
            json_reply(200, rpc_error(1, -32602, Some("expired"))),
            ErrorClass::StateRejected,
        ),
        (
            json_reply(400, rpc_error(1, -32020, None)),
            ErrorClass::ProtocolViolation,
        ),
        (
            json_reply(200, rpc_error(1, -32050, None)),
            ErrorClass::ProtocolViolation,
        ),
        (
            json_reply(200, rpc_error(1, -32603, None)),
            ErrorClass::ServerError,
        ),
        (
            json_reply(500, rpc_error(1, -32603, None)),
            ErrorClass::HttpError,
        ),
        (
            HttpReply {
                status: 500,
                content_type: Some("text/plain".into()),
                body: Bytes::from_static(b"boom"),
                ..HttpReply::default()
            },
            ErrorClass::HttpError,
        ),
        (
            HttpReply {
                status: 200,
                content_type: Some("application/json".into()),
                body: Bytes::new(),
                ..HttpReply::default()
            },
            ErrorClass::ProtocolViolation,
        ),
    ];
    for (reply, class) in cases {
        let mut f = flow(AnswerPolicy::AcceptValid);
        let _ = f.start();
        let rt = done(f.on_reply(reply));
        assert_eq!(rt.outcome.error_class(), Some(class), "{:?}", rt.outcome);
    }
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let rt = done(f.on_reply(json_reply(400, rpc_error(1, -32021, None))));
    assert_eq!(
        rt.legs[0].result,
        LegResult::RpcError {
            code: -32021,
            reason: None
        }
    );
    assert_eq!(rt.legs[0].status, Some(400));
}

/// A status without a JSON-RPC reply reads as the server's over HTTP; over
/// stdio it is the bridge's, so the outcome says what the pipe saw.
#[test]
fn over_stdio_the_bridges_status_is_never_named_as_the_servers() {
    let gone = || HttpReply {
        status: 502,
        content_type: Some("text/plain".into()),
        body: Bytes::from_static(b"the stdio server exited before answering (exit status: 1)"),
        ..HttpReply::default()
    };
    let message = |stdio: bool| {
        let mut f = ModernFlow::new(
            ToolCall::new("deploy", json!({"service":"api"})),
            FlowConfig {
                stdio,
                ..FlowConfig::default()
            },
        );
        let _ = f.start();
        let rt = done(f.on_reply(gone()));
        assert_eq!(rt.outcome.error_class(), Some(ErrorClass::HttpError));
        format!("{:?}", rt.outcome)
    };
    assert!(
        message(false).contains("HTTP 502 without a JSON-RPC response"),
        "{}",
        message(false)
    );
    let piped = message(true);
    assert!(!piped.contains("HTTP") && !piped.contains("502"), "{piped}");
    assert!(piped.contains("no process answered"), "{piped}");
}

#[test]
fn random_bodies_never_panic() {
    let mut x: u64 = 0x1234_5678_9abc_def1;
    for i in 0..500 {
        let len = (i * 7) % 200;
        let mut body = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            body.push(if i % 3 == 0 {
                b"{}[]\":,data: \n"[(x % 14) as usize]
            } else {
                x as u8
            });
        }
        for ct in [Some("application/json"), Some("text/event-stream"), None] {
            let mut f = flow(AnswerPolicy::AcceptValid);
            let _ = f.start();
            let step = f.on_reply(HttpReply {
                status: 200,
                content_type: ct.map(|c| c.to_owned().into()),
                body: Bytes::from(body.clone()),
                ..HttpReply::default()
            });
            if let Step::Done(rt) = step {
                assert!(
                    !matches!(rt.outcome, Outcome::Success),
                    "{:?} {:?}",
                    String::from_utf8_lossy(&body),
                    rt
                );
            }
        }
    }
}

#[test]
fn decline_and_cancel() {
    for (policy, action) in [
        (AnswerPolicy::Decline, "decline"),
        (AnswerPolicy::Cancel, "cancel"),
    ] {
        let mut f = flow(policy.clone());
        let retry = one_round(&mut f, Some("s"));
        let answer = &body_of(&retry)["params"]["inputResponses"]["confirm"];
        assert_eq!(answer, &json!({ "action": action }));
        let rt = done(f.on_reply(json_reply(200, complete(2, true))));
        assert_eq!(rt.outcome, Outcome::Success);
        let mut f = flow(policy);
        let _ = one_round(&mut f, Some("s"));
        let rt = done(f.on_reply(json_reply(200, rpc_error(2, -32602, None))));
        assert_eq!(rt.outcome.error_class(), Some(ErrorClass::ServerError));
    }
    // A tool that never elicits gives the policy nothing to do.
    let mut f = flow(AnswerPolicy::Decline);
    let _ = f.start();
    let rt = done(f.on_reply(json_reply(200, complete(1, false))));
    assert!(matches!(rt.outcome, Outcome::Skipped(_)));
}

#[test]
fn accept_invalid_expects_a_rejection() {
    let kind = InvalidKindAlias::NotInEnum;
    let mut f = flow(AnswerPolicy::AcceptInvalid(kind));
    let retry = one_round(&mut f, Some("s"));
    let content = &body_of(&retry)["params"]["inputResponses"]["confirm"]["content"];
    let model = RequestedSchema::from_value(&serde_json::from_str(FORM_SCHEMA).unwrap())
        .0
        .unwrap();
    let findings = validate_content(&model, content);
    assert!(
        findings.iter().any(|f| f.rule == kind.rule()),
        "{findings:?}"
    );
    let rt = done(f.on_reply(json_reply(
        200,
        input_required(2, json!({"confirm": form_request()}), Some("s2")),
    )));
    assert_eq!(
        rt.outcome,
        Outcome::ExpectedRejection {
            code: None,
            reason: Some("re-prompted".into())
        }
    );

    let mut f = flow(AnswerPolicy::AcceptInvalid(kind));
    let _ = one_round(&mut f, Some("s"));
    let rt = done(f.on_reply(json_reply(200, rpc_error(2, -32602, None))));
    assert_eq!(
        rt.outcome,
        Outcome::ExpectedRejection {
            code: Some(-32602),
            reason: None
        }
    );

    let mut f = flow(AnswerPolicy::AcceptInvalid(kind));
    let _ = one_round(&mut f, Some("s"));
    let rt = done(f.on_reply(json_reply(200, complete(2, false))));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::ContentAccepted));

    let mut f = flow(AnswerPolicy::AcceptInvalid(kind));
    let _ = one_round(&mut f, Some("s"));
    let rt = done(f.on_reply(json_reply(
        200,
        input_required(2, json!({"next": form_request()}), Some("s2")),
    )));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::ContentAccepted));

    // A kind the schema cannot express: valid answers, then Skipped.
    let mut f = flow(AnswerPolicy::AcceptInvalid(InvalidKindAlias::OutOfRange));
    let _ = one_round(&mut f, Some("s"));
    let rt = done(f.on_reply(json_reply(200, complete(2, false))));
    assert!(
        matches!(rt.outcome, Outcome::Skipped(_)),
        "{:?}",
        rt.outcome
    );
}

use crate::client::content::InvalidKind as InvalidKindAlias;

const PAGE: &str = r#"<html><body><form method="post" action="/flow/f1">
<input type="hidden" name="csrf" value="c-123"><input type="password" name="api_key">
<button type="submit">Go</button></form></body></html>"#;

fn html(status: u16, body: &str) -> HttpReply {
    HttpReply {
        status,
        content_type: Some("text/html".into()),
        body: Bytes::from(body.to_owned()),
        ..HttpReply::default()
    }
}

#[test]
fn url_flow_completes_the_page_then_retries() {
    let mut f = ModernFlow::new(
        ToolCall::new("connect_billing", json!({})),
        FlowConfig::default(),
    );
    let _ = f.start();
    let get = send(f.on_reply(json_reply(
        200,
        input_required(
            1,
            json!({"billing": url_request("http://127.0.0.1:1/flow/f1")}),
            Some("s"),
        ),
    )));
    assert_eq!(get.leg, "flow page GET");
    assert_eq!(get.method, HttpMethod::Get);
    assert_eq!(
        get.target,
        Target::Page {
            url: "http://127.0.0.1:1/flow/f1".into()
        }
    );
    let post = send(f.on_reply(html(200, PAGE)));
    assert_eq!(post.leg, "flow page POST");
    assert_eq!(post.method, HttpMethod::Post);
    assert_eq!(
        post.target,
        Target::Page {
            url: "http://127.0.0.1:1/flow/f1".into()
        }
    );
    let form = String::from_utf8(post.body.clone()).unwrap();
    assert!(form.starts_with("csrf=c-123&api_key=ekSECRET"), "{form}");
    assert_eq!(
        header(&post, "Content-Type"),
        Some("application/x-www-form-urlencoded")
    );
    let retry = send(f.on_reply(html(200, "<p>done</p>")));
    let b = body_of(&retry);
    assert_eq!(
        b["params"]["inputResponses"]["billing"],
        json!({"action":"accept"})
    );
    assert_eq!(b["id"], json!(2));
    let rt = done(f.on_reply(json_reply(200, complete(2, false))));
    assert_eq!(rt.outcome, Outcome::Success);
    let names: Vec<_> = rt.legs.iter().map(|l| &*l.name).collect();
    assert_eq!(
        names,
        [
            "tools/call #1",
            "flow page GET",
            "flow page POST",
            "tools/call #2 retry"
        ]
    );
}

#[test]
fn url_page_failures_end_the_flow() {
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let _ = send(f.on_reply(json_reply(
        200,
        input_required(1, json!({"b": url_request("/flow/x")}), Some("s")),
    )));
    let rt = done(f.on_reply(html(403, "no")));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::HttpError));
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let _ = send(f.on_reply(json_reply(
        200,
        input_required(1, json!({"b": url_request("/flow/x")}), Some("s")),
    )));
    let rt = done(f.on_reply(html(200, "<p>javascript only</p>")));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::HttpError));
}

#[test]
fn url_consent_only_expects_another_input_required() {
    let mut f = flow(AnswerPolicy::UrlConsentOnly);
    let _ = f.start();
    let retry = send(f.on_reply(json_reply(
        200,
        input_required(1, json!({"b": url_request("/flow/x")}), Some("s")),
    )));
    assert_eq!(retry.target, Target::Mcp, "the page is not visited");
    assert_eq!(
        body_of(&retry)["params"]["inputResponses"]["b"],
        json!({"action":"accept"})
    );
    let mut f2 = flow(AnswerPolicy::UrlConsentOnly);
    let _ = f2.start();
    let _ = f2.on_reply(json_reply(
        200,
        input_required(1, json!({"b": url_request("/flow/x")}), Some("s")),
    ));
    let rt = done(f.on_reply(json_reply(
        200,
        input_required(2, json!({"b": url_request("/flow/x")}), Some("s2")),
    )));
    assert!(matches!(rt.outcome, Outcome::ExpectedRejection { .. }));
    let rt = done(f2.on_reply(json_reply(200, complete(2, false))));
    assert_eq!(
        rt.outcome.error_class(),
        Some(ErrorClass::ProtocolViolation)
    );
}

#[test]
fn tampered_state_must_be_rejected() {
    let m = Mutation::FlipChar { index: 3 };
    let mut f = flow(AnswerPolicy::TamperState(m.clone()));
    let retry = one_round(&mut f, Some("rs1.abcdef.ghij"));
    let sent = body_of(&retry)["params"][REQUEST_STATE]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(sent, "rs1.abcdef.ghij");
    assert_eq!(sent, m.apply("rs1.abcdef.ghij"));
    let rt = done(f.on_reply(json_reply(200, rpc_error(2, -32602, Some("bad_tag")))));
    assert_eq!(
        rt.outcome,
        Outcome::ExpectedRejection {
            code: Some(-32602),
            reason: Some("bad_tag".into())
        }
    );
    for reply in [
        complete(2, false),
        input_required(2, json!({"confirm": form_request()}), Some("s2")),
    ] {
        let mut f = flow(AnswerPolicy::TamperState(m.clone()));
        let _ = one_round(&mut f, Some("rs1.abcdef.ghij"));
        let rt = done(f.on_reply(json_reply(200, reply)));
        assert_eq!(rt.outcome.error_class(), Some(ErrorClass::StateAccepted));
    }
    // Nothing to tamper with.
    let mut f = flow(AnswerPolicy::TamperState(m));
    let _ = one_round(&mut f, None);
    let rt = done(f.on_reply(json_reply(200, complete(2, false))));
    assert!(matches!(rt.outcome, Outcome::Skipped(_)));
}

#[test]
fn replay_sends_the_last_retry_again_with_a_new_id() {
    let mut f = flow(AnswerPolicy::ReplayState);
    let retry = one_round(&mut f, Some("st"));
    let replay = send(f.on_reply(json_reply(200, complete(2, false))));
    assert_eq!(replay.leg, "tools/call replay");
    let (a, b) = (body_of(&retry), body_of(&replay));
    assert_eq!(b["id"], json!(3));
    assert_eq!(a["params"], b["params"]);
    let rt = done(f.on_reply(json_reply(200, rpc_error(3, -32602, Some("replayed")))));
    assert_eq!(
        rt.outcome,
        Outcome::ExpectedRejection {
            code: Some(-32602),
            reason: Some("replayed".into())
        }
    );
    assert_eq!(rt.legs.len(), 3);
    assert_eq!(rt.legs[2].name, "tools/call replay");

    let mut f = flow(AnswerPolicy::ReplayState);
    let _ = one_round(&mut f, Some("st"));
    let _ = send(f.on_reply(json_reply(200, complete(2, false))));
    let rt = done(f.on_reply(json_reply(200, complete(3, false))));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::StateAccepted));
}

#[test]
fn cross_principal_retry_uses_the_other_token() {
    let mut f = flow(AnswerPolicy::CrossPrincipalReplay);
    let retry = one_round(&mut f, Some("st"));
    assert_eq!(retry.auth, Auth::Other);
    assert_eq!(body_of(&retry)["params"][REQUEST_STATE], json!("st"));
    let rt = done(f.on_reply(json_reply(
        200,
        rpc_error(2, -32602, Some("wrong_principal")),
    )));
    assert!(rt.outcome.is_ok());
    let mut f = flow(AnswerPolicy::CrossPrincipalReplay);
    let _ = one_round(&mut f, Some("st"));
    let rt = done(f.on_reply(html(403, "forbidden")));
    assert!(matches!(
        rt.outcome,
        Outcome::ExpectedRejection { code: None, .. }
    ));
}

#[test]
fn rounds_are_capped() {
    let cfg = FlowConfig {
        max_rounds: 3,
        ..FlowConfig::default()
    };
    let mut f = ModernFlow::new(ToolCall::new("loop", json!({})), cfg);
    let _ = f.start();
    let mut last = None;
    for id in 1..=4 {
        let step = f.on_reply(json_reply(
            200,
            input_required(id, json!({"c": form_request()}), Some("s")),
        ));
        if let Step::Done(rt) = step {
            last = Some((id, rt));
            break;
        }
    }
    let (id, rt) = last.expect("the flow must stop");
    assert_eq!(id, 4);
    assert_eq!(
        rt.outcome.error_class(),
        Some(ErrorClass::ProtocolViolation)
    );
}

#[test]
fn failures_and_late_replies() {
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let rt = done(f.on_failure(LegFailure::Timeout, Duration::from_secs(5)));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::Timeout));
    assert_eq!(rt.legs[0].result, LegResult::Timeout);
    let again = done(f.on_reply(json_reply(200, complete(1, false))));
    assert_eq!(again.outcome, rt.outcome, "a finished flow stays finished");
    assert_eq!((&*again.name, again.total), (&*rt.name, rt.total));
    assert!(!rt.name.is_empty() && again.legs.is_empty());
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let rt = done(f.on_failure(LegFailure::Transport("refused".into()), Duration::ZERO));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::Transport));
}

/// Runs `tool` with one canned reply to the first call under both settings
/// of `keep_final_result` and returns both round trips.
fn both_readers(reply: HttpReply, policy: AnswerPolicy) -> (RoundTrip, RoundTrip) {
    let run = |keep: bool| {
        let cfg = FlowConfig {
            keep_final_result: keep,
            ..FlowConfig::with_policy(policy.clone())
        };
        let mut f = ModernFlow::new(ToolCall::new("deploy", json!({})), cfg);
        let _ = f.start();
        done(f.on_reply(reply.clone()))
    };
    (run(true), run(false))
}

#[test]
fn the_tree_free_reader_judges_like_the_full_one() {
    let raw = |status: u16, ct: &str, body: &str| HttpReply {
        status,
        content_type: Some(ct.to_owned().into()),
        body: Bytes::from(body.to_owned()),
        ..HttpReply::default()
    };
    let replies = [
        json_reply(200, complete(1, false)),
        json_reply(200, complete(1, true)),
        json_reply(500, complete(1, false)),
        json_reply(200, complete(2, false)),
        json_reply(
            200,
            json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"task"}}),
        ),
        json_reply(
            200,
            json!({"jsonrpc":"2.0","id":1,"result":{"isError":"yes"}}),
        ),
        json_reply(
            200,
            json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","isError":1}}),
        ),
        json_reply(400, rpc_error(1, -32602, None)),
        sse_reply(complete(1, false)),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resultType":"x"}}"#,
        ),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{"resultType":"complete"}}"#,
        ),
        raw(
            202,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#,
        ),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}"#,
        ),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":["complete",true]}"#,
        ),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"result\u0054ype":"complete"}}"#,
        ),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","isError":true,"isError":false}}"#,
        ),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":null}}"#,
        ),
        raw(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":{"resultType":"input_required"},"resultType":"complete"}}"#,
        ),
    ];
    for reply in replies {
        for policy in [AnswerPolicy::AcceptValid, AnswerPolicy::Decline] {
            let (full, lean) = both_readers(reply.clone(), policy);
            let body = String::from_utf8_lossy(&reply.body);
            assert_eq!(full.outcome, lean.outcome, "{body}");
            assert_eq!(full.legs, lean.legs, "{body}");
            assert_eq!(full.rounds, lean.rounds, "{body}");
            // The lean reader keeps a tree only to report an isError text.
            assert!(
                lean.final_result
                    .as_ref()
                    .is_none_or(|v| v.get("isError") == Some(&json!(true))),
                "{body}"
            );
        }
    }
    // The full reader keeps the tree of a plain complete result.
    let (full, _) = both_readers(
        json_reply(200, complete(1, true)),
        AnswerPolicy::AcceptValid,
    );
    assert_eq!(
        full.final_result.as_ref().and_then(|v| v.get("isError")),
        Some(&json!(true))
    );
}

#[test]
fn a_shared_template_writes_the_same_requests() {
    let cfg = FlowConfig::with_policy(AnswerPolicy::AcceptValid);
    let call = ToolCall::new("deploy", json!({"service":"api","n":[1,2]}));
    let tpl = Arc::new(CallTemplate::new(call.clone(), &cfg));
    let mut a = ModernFlow::with_template(tpl.clone(), cfg.clone());
    let mut b = ModernFlow::new(call, cfg);
    assert_eq!(a.start(), b.start());
    // A template built for other capabilities is not used as is.
    let form_only = FlowConfig {
        capabilities: ClientCapabilities::with_modes(true, false),
        ..FlowConfig::default()
    };
    assert!(!tpl.fits(&form_only));
    let out = ModernFlow::with_template(tpl, form_only).start();
    assert_eq!(
        body_of(&out)["params"]["_meta"][META_CLIENT_CAPABILITIES],
        json!({"elicitation":{"form":{}}})
    );
}

/// The template writes its `tools/call` by hand (the hot path); what it
/// writes is the typed [`CallToolParams`] serialized, first call and retry.
#[test]
fn the_template_writes_the_typed_call_params() {
    use crate::protocol::mrtr::CallToolParams;
    let cfg = FlowConfig::default();
    let call = ToolCall::new("deploy", json!({"service":"api","n":[1,2]}));
    let typed = |id: i64, responses: Option<Value>, state: Option<&str>| {
        let params = CallToolParams {
            name: call.name.clone(),
            arguments: Some(call.arguments.clone()),
            input_responses: responses.and_then(|r| r.as_object().cloned()),
            request_state: state.map(str::to_owned),
            meta: Some(cfg.generation_meta.to_value()),
        };
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
    };
    let mut f = ModernFlow::new(call.clone(), cfg.clone());
    assert_eq!(body_of(&f.start()), typed(1, None, None));
    let page = send(f.on_reply(json_reply(
        200,
        input_required(1, json!({"k": url_request("/flow/1")}), Some("s1")),
    )));
    assert!(matches!(page.target, Target::Page { .. }));
    let _submit = send(f.on_reply(html(200, "<form method=post><input name=a></form>")));
    let retry = send(f.on_reply(html(200, "done")));
    assert_eq!(
        body_of(&retry),
        typed(2, Some(json!({"k":{"action":"accept"}})), Some("s1"))
    );
}

fn strict(policy: AnswerPolicy) -> ModernFlow {
    let mut cfg = FlowConfig::with_policy(policy);
    cfg.expect = crate::client::Expectations::STRICT;
    ModernFlow::new(ToolCall::new("deploy", json!({"service":"api"})), cfg)
}

#[test]
fn strict_expectations_name_the_wrong_path() {
    // Completing without eliciting.
    let mut f = strict(AnswerPolicy::AcceptValid);
    let _ = f.start();
    let rt = done(f.on_reply(json_reply(200, complete(1, false))));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::DidNotElicit));
    // The same reply is a success for the lenient checker flows.
    let mut f = flow(AnswerPolicy::AcceptValid);
    let _ = f.start();
    assert_eq!(
        done(f.on_reply(json_reply(200, complete(1, false)))).outcome,
        Outcome::Success
    );
    // An isError result after an accepted round.
    let mut f = strict(AnswerPolicy::AcceptValid);
    let _ = one_round(&mut f, Some("s1"));
    let reply = json!({"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","isError":true,
        "content":[{"type":"text","text":"bad size"}]}});
    let rt = done(f.on_reply(json_reply(200, reply)));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::ToolError));
    assert!(format!("{:?}", rt.outcome).contains("bad size"));
    // Decline may end in isError.
    let mut f = strict(AnswerPolicy::Decline);
    let _ = one_round(&mut f, Some("s1"));
    assert_eq!(
        done(f.on_reply(json_reply(200, complete(2, true)))).outcome,
        Outcome::Success
    );
}

#[test]
fn a_tampered_state_must_be_refused_for_that_reason() {
    let m = Mutation::FlipChar { index: 0 };
    for (reply, class) in [
        (
            json_reply(404, rpc_error(2, -32601, None)),
            Some(ErrorClass::WrongRejection),
        ),
        (
            json_reply(400, rpc_error(2, -32021, None)),
            Some(ErrorClass::WrongRejection),
        ),
        (
            json_reply(200, rpc_error(2, -32602, Some("wrong_principal"))),
            Some(ErrorClass::WrongRejection),
        ),
        (
            HttpReply {
                status: 400,
                content_type: Some("text/plain".into()),
                body: Bytes::from_static(b"bad"),
                ..HttpReply::default()
            },
            Some(ErrorClass::WrongRejection),
        ),
        (json_reply(200, rpc_error(2, -32602, Some("bad_tag"))), None),
        (json_reply(200, rpc_error(2, -32602, None)), None),
    ] {
        let mut f = strict(AnswerPolicy::TamperState(m.clone()));
        let _ = one_round(&mut f, Some("state-1"));
        let rt = done(f.on_reply(reply));
        assert_eq!(rt.outcome.error_class(), class, "{:?}", rt.outcome);
    }
}

#[test]
fn tamper_waits_for_the_first_round_that_carries_a_state() {
    let mut f = strict(AnswerPolicy::TamperState(Mutation::FlipChar { index: 0 }));
    let r1 = one_round(&mut f, None);
    assert!(body_of(&r1)["params"].get(REQUEST_STATE).is_none());
    let r2 = send(f.on_reply(json_reply(
        200,
        input_required(2, json!({"more": form_request()}), Some("abc")),
    )));
    let sent = body_of(&r2)["params"][REQUEST_STATE].clone();
    assert!(sent.is_string() && sent != "abc", "{sent}");
}

/// A flow whose `service` argument carries round trip 7's marker.
fn marked_flow() -> ModernFlow {
    let cfg = FlowConfig {
        marker: Some(7),
        ..FlowConfig::with_policy(AnswerPolicy::AcceptValid)
    };
    let call = ToolCall::new("deploy", json!({"service":"api", "n": 1}));
    let tpl = CallTemplate::new(call, &cfg).with_marker_in("service");
    ModernFlow::with_template(Arc::new(tpl), cfg)
}

fn form_asking(id: i64, message: &str) -> Value {
    let mut req = form_request();
    req["params"]["message"] = json!(message);
    input_required(id, json!({"confirm": req}), Some("s"))
}

#[test]
fn every_call_carries_the_marker_and_replies_are_attributed() {
    // Ours echoed: the flow goes on; the retry carries the marker too.
    let mut f = marked_flow();
    let b = body_of(&f.start());
    assert_eq!(
        b["params"]["arguments"],
        json!({"service":"api ek-rt-7", "n": 1})
    );
    let retry = send(f.on_reply(json_reply(200, form_asking(1, "Deploy api ek-rt-7?"))));
    assert_eq!(
        body_of(&retry)["params"]["arguments"]["service"],
        "api ek-rt-7"
    );
    // No marker in the reply: unattributable, not a misroute.
    let rt = done(f.on_reply(json_reply(200, complete(2, false))));
    assert!(rt.outcome.is_ok(), "{:?}", rt.outcome);

    // Another round trip's marker, under a colliding id: a misroute naming both.
    let mut f = marked_flow();
    let _ = f.start();
    let rt = done(f.on_reply(json_reply(200, form_asking(1, "Deploy api ek-rt-9?"))));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::Misrouted));
    let why = format!("{:?}", rt.outcome);
    assert!(why.contains("ek-rt-7") && why.contains("ek-rt-9"), "{why}");

    // The final result is checked as well.
    let mut f = marked_flow();
    let _ = f.start();
    let _ = send(f.on_reply(json_reply(200, form_asking(1, "Deploy api ek-rt-7?"))));
    let mut last = complete(2, false);
    last["result"]["content"][0]["text"] = json!("Deployed api ek-rt-70 to staging.");
    let rt = done(f.on_reply(json_reply(200, last)));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::Misrouted));
}

#[test]
fn an_unmarked_template_sends_its_arguments_unchanged() {
    let cfg = FlowConfig {
        marker: Some(7),
        ..FlowConfig::default()
    };
    let call = ToolCall::new("deploy", json!({"service":"api"}));
    // Not a string argument: no slot, nothing to attribute ours by.
    let tpl = CallTemplate::new(call, &cfg).with_marker_in("missing");
    assert!(!tpl.is_marked());
    let mut f = ModernFlow::with_template(Arc::new(tpl), cfg);
    assert_eq!(
        body_of(&f.start())["params"]["arguments"],
        json!({"service":"api"})
    );
    // Any marker in a reply is then another round trip's.
    let rt = done(f.on_reply(json_reply(200, form_asking(1, "Deploy ek-rt-3?"))));
    assert_eq!(rt.outcome.error_class(), Some(ErrorClass::Misrouted));
}

fn walking(stop_at_state: bool, max_rounds: u32, ids: &Ids) -> ModernFlow {
    let explore = Explore {
        stop_at_state,
        ids: ids.clone(),
    };
    let cfg = FlowConfig::explore(
        ClientCapabilities::with_modes(true, false),
        7,
        max_rounds,
        "http://127.0.0.1:9/mcp",
        explore,
    );
    ModernFlow::new(ToolCall::new("deploy", json!({"service":"api"})), cfg)
}

#[test]
fn a_walk_records_rounds_takes_the_runs_ids_and_stops_at_the_state() {
    let ids = Ids::starting_at(40);
    let mut f = walking(true, 5, &ids);
    let first = f.start();
    assert_eq!(body_of(&first)["id"], json!(40));
    assert_eq!(
        body_of(&first)["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        json!("elicitkit-check")
    );
    // A round without a state is answered: every input request, even one a
    // judging flow refuses (sampling from a client that did not declare it).
    let asks = json!({"a": form_request(), "b": {"method":"sampling/createMessage","params":{}}});
    let retry = send(f.on_reply(json_reply(200, input_required(40, asks, None))));
    assert_eq!(ids.next(), 42, "the retry took the run's next id");
    let answers = body_of(&retry)["params"]["inputResponses"].clone();
    assert_eq!(answers["a"]["action"], json!("accept"));
    assert_eq!(answers["b"]["model"], json!("elicitkit"));
    // A round with a state ends the walk before it is answered.
    let rt = done(f.on_reply(json_reply(
        200,
        input_required(41, json!({"a": form_request()}), Some("s1")),
    )));
    assert_eq!(rt.rounds, 2);
    let w = f.take_walked();
    assert_eq!(w.end, WalkEnd::AtState);
    assert_eq!(w.rounds.len(), 2);
    assert_eq!(
        w.state_round().map(|(i, r)| (i, r.state.clone())),
        Some((1, Some("s1".into())))
    );
    assert_eq!(Value::Object(w.rounds[0].answers.clone()), answers);
}

#[test]
fn a_walk_ends_as_the_wire_says() {
    let ids = Ids::starting_at(1);
    // An error, with its status.
    let mut f = walking(false, 5, &ids);
    let _ = f.start();
    let _ = done(f.on_reply(json_reply(400, rpc_error(1, -32602, Some("malformed")))));
    assert!(matches!(
        f.take_walked().end,
        WalkEnd::Error {
            code: -32602,
            status: 400,
            ..
        }
    ));
    // A complete result, read by shape (no resultType).
    let mut f = walking(false, 5, &ids);
    let _ = f.start();
    let reply = json!({"jsonrpc":"2.0","id":2,"result":{"content":[],"isError":true}});
    let _ = done(f.on_reply(json_reply(200, reply)));
    assert!(matches!(
        f.take_walked().end,
        WalkEnd::Complete { is_error: true, .. }
    ));
    // Still asking after the round limit.
    let mut f = walking(false, 1, &ids);
    let _ = f.start();
    let _ = send(f.on_reply(json_reply(
        200,
        input_required(3, json!({"a": form_request()}), None),
    )));
    let _ = done(f.on_reply(json_reply(
        200,
        input_required(4, json!({"a": form_request()}), None),
    )));
    let w = f.take_walked();
    assert_eq!((w.rounds.len(), w.end), (1, WalkEnd::Limit));
    // A page elsewhere is not followed, and named.
    let mut f = walking(false, 5, &ids);
    let _ = f.start();
    let asks = json!({"u": url_request("https://elsewhere.example/flow/1")});
    let _ = done(f.on_reply(json_reply(200, input_required(5, asks, None))));
    let w = f.take_walked();
    assert_eq!(w.off_origin.as_deref(), Some("https://elsewhere.example"));
    assert!(matches!(&w.end, WalkEnd::Other(why) if why.contains("not followed")));
    // A leg without a reply.
    let mut f = walking(false, 5, &ids);
    let _ = f.start();
    let _ = done(f.on_failure(LegFailure::Timeout, Duration::from_secs(5)));
    assert_eq!(
        f.take_walked().end,
        WalkEnd::Other("no complete reply within 5s".into())
    );
}
