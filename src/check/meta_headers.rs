//! 2026-07-28 request framing: per-request `_meta` (`-32602` + 400), the
//! `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers (`-32020` +
//! 400, base64 sentinel decoded first), unsupported versions (`-32022` +
//! 400 with `supported` and `requested`), removed methods, GET/DELETE, and
//! no session ids. Every error must echo the request id.

use super::control::Control;
use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::ReplyStatus;
use crate::client::raw::{self, RawRequest, Rpc};
use crate::protocol::codes;
use crate::protocol::headers;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mrtr::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION};
use crate::protocol::version::MODERN;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// The checks of this family.
/// What the header checks judge (none of it exists over stdio).
const HEADERS: &str = "the Mcp-* and MCP-Protocol-Version headers";

pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-meta-missing",
            "§4.2 / §6.B 1",
            Must,
            Modern,
            "a request without params._meta gets HTTP 400 and -32602",
            meta_missing;
            stdio "a request without params._meta gets -32602";
            scenario "server-stateless"
        ),
        check!(
            "mrtr-meta-missing-version",
            "§4.2 / §6.B 1",
            Must,
            Modern,
            "_meta without protocolVersion gets HTTP 400 and -32602",
            meta_missing_version;
            stdio "_meta without protocolVersion gets -32602";
            scenario "server-stateless"
        ),
        check!(
            "mrtr-meta-missing-capabilities",
            "§4.2 / §6.B 1",
            Must,
            Modern,
            "_meta without clientCapabilities gets HTTP 400 and -32602",
            meta_missing_caps;
            stdio "_meta without clientCapabilities gets -32602";
            scenario "server-stateless"
        ),
        check!(
            "mrtr-meta-client-info-optional",
            "§4.2 / §6.B 1",
            Must,
            Modern,
            "a request without clientInfo still succeeds",
            client_info_optional;
            scenario "server-stateless"
        ),
        check!(
            "mrtr-header-version-mismatch",
            "§4.3 / §6.B 2",
            Must,
            Modern,
            "MCP-Protocol-Version differing from _meta gets HTTP 400 and -32020",
            version_mismatch,
            http(HEADERS);
            scenario "server-stateless"
        ),
        check!(
            "mrtr-header-method-missing",
            "§4.3 / §6.B 2",
            Must,
            Modern,
            "a request without Mcp-Method gets HTTP 400 and -32020",
            method_missing,
            http(HEADERS);
            scenario "http-header-validation"
        ),
        check!(
            "mrtr-header-method-mismatch",
            "§4.3 / §6.B 2",
            Must,
            Modern,
            "Mcp-Method differing from the body gets HTTP 400 and -32020",
            method_mismatch,
            http(HEADERS);
            scenario "http-header-validation"
        ),
        check!(
            "mrtr-header-name-missing",
            "§4.3 / §6.B 2",
            Must,
            Modern,
            "tools/call without Mcp-Name gets HTTP 400 and -32020",
            name_missing,
            http(HEADERS);
            scenario "http-header-validation"
        ),
        check!(
            "mrtr-header-name-mismatch",
            "§4.3 / §6.B 2",
            Must,
            Modern,
            "Mcp-Name differing from params.name gets HTTP 400 and -32020",
            name_mismatch,
            http(HEADERS);
            scenario "http-header-validation"
        ),
        check!(
            "mrtr-header-base64-decoded",
            "§4.3 / §6.B 2",
            Must,
            Modern,
            "a =?base64?…?= Mcp-Name is decoded before it is compared",
            base64_decoded,
            http(HEADERS);
            scenario "http-header-validation"
        ),
        check!(
            "mrtr-version-unsupported",
            "§4.3, §4.9 / §6.B 3",
            Must,
            Modern,
            "an unknown version gets HTTP 400 and -32022 with supported and requested",
            version_unsupported;
            stdio "an unknown version gets -32022 with supported and requested";
            scenario "server-stateless"
        ),
        check!(
            "mrtr-removed-methods",
            "§4.1, §4.3 / §6.B 4",
            Should,
            Modern,
            "ping and logging/setLevel get HTTP 404 and -32601",
            removed_methods,
            // Over stdio a -32601 with id null is told only while its
            // request is the one in flight on the pipe (stdio::pipe).
            alone;
            stdio "ping and logging/setLevel get -32601";
            scenario "server-stateless"
        ),
        check!(
            "mrtr-get-delete-405",
            "§4.3 / §6.B 4",
            Should,
            Modern,
            "GET and DELETE on the endpoint get HTTP 405",
            get_delete_405,
            http("HTTP methods")
        ),
        check!(
            "mrtr-no-session-id",
            "§4.1, §4.3 / §6.B 4",
            Must,
            Modern,
            "no Mcp-Session-Id is minted on 2026-07-28 replies",
            no_session_id,
            http("the MCP-Session-Id header")
        ),
    ]
}

fn request_id(req: &RawRequest) -> Option<RequestId> {
    serde_json::from_slice::<Value>(&req.body)
        .ok()
        .and_then(|v| v.get("id").and_then(RequestId::from_value))
}

/// Sends `control` (the same request, correctly framed) and then `req`,
/// and expects HTTP `status` with JSON-RPC error `code` carrying the request
/// id. A control that does not succeed means the refusal cannot be pinned
/// on the framing: the check says it could not tell.
pub async fn expect_error(
    p: &Probe,
    control: RawRequest,
    req: RawRequest,
    status: u16,
    code: i64,
) -> Verdict {
    let id = request_id(&req);
    let control_label = control.label.clone();
    let control = p.send(control).await.map_err(|e| e.to_string());
    let reply = match p.send(req).await {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    // Over stdio the status is the bridge's: only the message is judged.
    let status = p.reply_status(if p.status_is_servers() {
        status
    } else {
        reply.status
    });
    judge_error(&control_label, control.as_ref(), &reply, id, status, code)
}

/// The verdict on a framing error `reply`, given its `control` (a correct
/// request): without a control that succeeds, neither the reply nor its
/// fault can be pinned on the framing ("could not tell").
fn judge_error(
    control_label: &str,
    control: Result<&raw::RawReply, &String>,
    reply: &raw::RawReply,
    id: Option<RequestId>,
    status: ReplyStatus,
    code: i64,
) -> Verdict {
    let rpc = reply.rpc();
    let exact =
        reply.status == status.code() && rpc.code() == Some(code) && reply.response_id() == id;
    let correct = control_label.trim_start_matches("control: ");
    let (seen, other_error) = match control {
        Err(e) => (Err(format!("it got no reply: {e}")), false),
        Ok(c) => match c.rpc() {
            Rpc::Result(v) if (200..300).contains(&c.status) => (Ok(Some(v)), false),
            c_rpc => (
                Err(format!(
                    "it already gets {}",
                    status.other(c.status).then(" and ", c_rpc.describe())
                )),
                c_rpc.code() != Some(code),
            ),
        },
    };
    let control = Control::observed(format!("{correct} succeeds"), seen);
    if !control.held() {
        // The control fails otherwise (e.g. an unknown tool): the framing
        // error, which the control did not get, was still judged first.
        if exact && other_error {
            return Verdict::pass(format!(
                "{} ({correct} gets another error: the framing was judged first)",
                status.then(" with ", format_args!("error {code} and the request id"))
            ));
        }
        return control.unsure(format!(
            "the misframed request got {}",
            status.other(reply.status).then(" and ", rpc.describe())
        ));
    }
    let mut problems = Vec::new();
    match &rpc {
        Rpc::Error(e) if e.code == code => {}
        other => problems.push(format!(
            "expected error {code} ({}), got {}",
            codes::name(code),
            other.describe()
        )),
    }
    // Never over stdio, where `status` is the reply's own.
    if reply.status != status.code() {
        problems.push(format!("expected {status}, got {}", reply.status));
    }
    if matches!(rpc, Rpc::Error(_)) && reply.response_id() != id {
        problems.push(format!(
            "the error does not carry the request id {}",
            id.map_or("?".into(), |i| i.to_string())
        ));
    }
    if problems.is_empty() {
        control.judge(Verdict::pass(
            status.then(" with ", format_args!("error {code} and the request id")),
        ))
    } else {
        Verdict::fail(format!("{} ({correct} succeeds)", problems.join("; ")))
    }
}

/// A request of [`super::probe::Target::plain_method`] (`tools/list`
/// on a server with tools) labelled `METHOD{what}`.
fn list_request(p: &Probe, what: &str, params: Value) -> RawRequest {
    let method = p.target().plain_method();
    raw::modern_post(
        format!("{method}{what}"),
        &p.settings().target.mcp_url,
        p.target().next_id(),
        method,
        Some(params),
    )
    .token(Some(&p.settings().target.principal))
}

/// The control of the list probes.
fn list_control(p: &Probe) -> RawRequest {
    let mut r = correct_list(p, "");
    r.label = format!("control: a correct {}", p.target().plain_method());
    r
}

async fn meta_missing(p: Probe) -> Verdict {
    let req = list_request(&p, " without _meta", json!({}));
    expect_error(&p, list_control(&p), req, 400, codes::INVALID_PARAMS).await
}

fn meta_without(key: &str) -> Value {
    let mut m = raw::meta(&all_modes());
    if let Some(o) = m.as_object_mut() {
        o.remove(key);
    }
    json!({ "_meta": m })
}

async fn meta_missing_version(p: Probe) -> Verdict {
    let req = list_request(
        &p,
        ", _meta without protocolVersion",
        meta_without(META_PROTOCOL_VERSION),
    );
    expect_error(&p, list_control(&p), req, 400, codes::INVALID_PARAMS).await
}

async fn meta_missing_caps(p: Probe) -> Verdict {
    let req = list_request(
        &p,
        ", _meta without clientCapabilities",
        meta_without(META_CLIENT_CAPABILITIES),
    );
    expect_error(&p, list_control(&p), req, 400, codes::INVALID_PARAMS).await
}

async fn client_info_optional(p: Probe) -> Verdict {
    let req = list_request(
        &p,
        ", _meta without clientInfo",
        meta_without(META_CLIENT_INFO),
    );
    let method = p.target().plain_method();
    match p.send(req).await {
        Ok(r) => match r.rpc() {
            Rpc::Result(_) if r.status == 200 => {
                Verdict::pass(format!("{method} succeeded without clientInfo"))
            }
            other => Verdict::fail(format!(
                "{method} without clientInfo got {}: servers must not require clientInfo",
                p.reply_status(r.status).then(" and ", other.describe())
            )),
        },
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}

fn correct_list(p: &Probe, label: &str) -> RawRequest {
    list_request(p, label, raw::with_meta(json!({}), &all_modes()))
}

async fn version_mismatch(p: Probe) -> Verdict {
    // The body says 2026-07-28; the header names another (well-formed) version.
    let req = correct_list(&p, ", MCP-Protocol-Version differs from _meta")
        .header(headers::PROTOCOL_VERSION, "2026-07-29");
    expect_error(&p, list_control(&p), req, 400, codes::HEADER_MISMATCH).await
}

async fn method_missing(p: Probe) -> Verdict {
    let req = correct_list(&p, " without Mcp-Method").without_header(headers::METHOD);
    expect_error(&p, list_control(&p), req, 400, codes::HEADER_MISMATCH).await
}

async fn method_mismatch(p: Probe) -> Verdict {
    let other = match p.target().plain_method() {
        "prompts/list" => "resources/list",
        _ => "prompts/list",
    };
    let req =
        correct_list(&p, &format!(" with Mcp-Method: {other}")).header(headers::METHOD, other);
    expect_error(&p, list_control(&p), req, 400, codes::HEADER_MISMATCH).await
}

fn some_tool(p: &Probe) -> (String, Value) {
    p.target()
        .tools
        .first()
        .map(|t| (t.name.clone(), Value::Object(t.arguments.clone())))
        .unwrap_or_else(|| ("elicitkit-probe".into(), json!({})))
}

/// A correctly framed `tools/call` of `name`.
fn call(p: &Probe, label: &str, name: &str, args: &Value) -> RawRequest {
    p.modern_request(
        label,
        "tools/call",
        json!({"name": name, "arguments": args}),
        &all_modes(),
    )
}

async fn name_missing(p: Probe) -> Verdict {
    let (name, args) = some_tool(&p);
    let control = call(&p, "control: a correct tools/call", &name, &args);
    let req = call(&p, "tools/call without Mcp-Name", &name, &args).without_header(headers::NAME);
    expect_error(&p, control, req, 400, codes::HEADER_MISMATCH).await
}

async fn name_mismatch(p: Probe) -> Verdict {
    let (name, args) = some_tool(&p);
    let control = call(&p, "control: a correct tools/call", &name, &args);
    let req = call(&p, "tools/call with Mcp-Name of another tool", &name, &args)
        .header(headers::NAME, format!("{name}-other"));
    expect_error(&p, control, req, 400, codes::HEADER_MISMATCH).await
}

async fn base64_decoded(p: Probe) -> Verdict {
    // Mcp-Name is the header clients encode (tool names may be non-ASCII). A
    // sentinel-shaped value is always an encoding (a literal look-alike is
    // itself encoded), so the server must decode it even for an ASCII name.
    let (name, args) = some_tool(&p);
    let control = name_checked(&p, &name, &args).await;
    let sentinel = format!("=?base64?{}?=", STANDARD.encode(name.as_bytes()));
    let req = call(
        &p,
        "tools/call with Mcp-Name as a base64 sentinel",
        &name,
        &args,
    )
    .header(headers::NAME, sentinel.clone());
    match p.send(req).await {
        Ok(r) => match r.rpc() {
            Rpc::Error(e) if e.code == codes::HEADER_MISMATCH => Verdict::fail(format!(
                "Mcp-Name {sentinel} (base64 of {name:?}) was compared undecoded: -32020"
            )),
            Rpc::Missing(why) => Verdict::fail(format!("Mcp-Name {sentinel}: {why}")),
            other => control.judge(Verdict::pass(format!(
                "Mcp-Name {sentinel} was decoded to {name:?} (the call got {})",
                other.describe()
            ))),
        },
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}

/// The control of a header the server must decode: it reads `Mcp-Name` at
/// all, so a call naming another tool there gets -32020. A server that
/// ignores the header takes an encoded one too, which proves nothing.
async fn name_checked(p: &Probe, name: &str, args: &Value) -> Control {
    let req = call(
        p,
        "control: tools/call with Mcp-Name of another tool",
        name,
        args,
    )
    .header(headers::NAME, format!("{name}-other"));
    let seen = match p.send(req).await {
        Ok(r) if r.rpc().code() == Some(codes::HEADER_MISMATCH) => Ok(None),
        Ok(r) => Err(format!(
            "it got {}: the server does not compare Mcp-Name with the call",
            p.reply_status(r.status).then(" and ", r.rpc().describe())
        )),
        Err(e) => Err(format!("it got no reply: {e}")),
    };
    Control::observed("a wrong Mcp-Name gets -32020", seen)
}

async fn version_unsupported(p: Probe) -> Verdict {
    let bogus = "2099-12-31";
    let mut meta = raw::meta(&all_modes());
    meta[META_PROTOCOL_VERSION] = json!(bogus);
    let req = list_request(
        &p,
        " with protocol version 2099-12-31",
        json!({"_meta": meta}),
    )
    .header(headers::PROTOCOL_VERSION, bogus);
    let id = request_id(&req);
    let reply = match p.send(req).await {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    let rpc = reply.rpc();
    let Rpc::Error(e) = &rpc else {
        return Verdict::fail(format!("expected -32022, got {}", rpc.describe()));
    };
    let mut problems = Vec::new();
    if e.code != codes::UNSUPPORTED_PROTOCOL_VERSION {
        problems.push(format!("expected -32022, got {}", rpc.describe()));
    }
    if reply.status != 400 && p.status_is_servers() {
        problems.push(format!("expected HTTP 400, got {}", reply.status));
    }
    if reply.response_id() != id {
        problems.push("the error does not carry the request id".into());
    }
    let data = e.data.clone().unwrap_or(Value::Null);
    if data.get("requested").and_then(Value::as_str) != Some(bogus) {
        problems.push(format!("data.requested is not {bogus:?}"));
    }
    let supported: Vec<&str> = data
        .get("supported")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if supported.is_empty() {
        problems.push("data.supported is missing or empty".into());
    }
    if let Some(listed) = p
        .target()
        .discover
        .as_ref()
        .and_then(|d| d.get("supportedVersions"))
        .and_then(Value::as_array)
    {
        let unknown: Vec<&&str> = supported
            .iter()
            .filter(|v| !listed.iter().any(|l| l == **v))
            .collect();
        if !unknown.is_empty() {
            problems.push(format!(
                "data.supported names {unknown:?}, which server/discover does not list"
            ));
        }
    }
    if problems.is_empty() {
        Verdict::pass(p.reply_status(reply.status).then(
            ", ",
            format_args!("-32022, supported {supported:?}, requested {bogus:?}"),
        ))
    } else {
        Verdict::fail(problems.join("; "))
    }
}

async fn removed_methods(p: Probe) -> Verdict {
    let mut problems = Vec::new();
    for method in ["ping", "logging/setLevel"] {
        let params = match method {
            "logging/setLevel" => json!({"level": "info"}),
            _ => json!({}),
        };
        let req = p.modern_request(
            format!("{method} (removed in 2026-07-28)"),
            method,
            params,
            &all_modes(),
        );
        match p.send(req).await {
            Ok(r) => {
                let rpc = r.rpc();
                if (r.status != 404 && p.status_is_servers())
                    || rpc.code() != Some(codes::METHOD_NOT_FOUND)
                {
                    problems.push(format!(
                        "{method}: {}",
                        p.reply_status(r.status).then(" and ", rpc.describe())
                    ));
                }
            }
            Err(e) => problems.push(format!("{method}: {e}")),
        }
    }
    // Over stdio the 404 is no part of the rule (the bridge's status).
    let expected = p.reply_status(404).expected(" and ", "-32601");
    if problems.is_empty() {
        Verdict::pass(format!("ping and logging/setLevel got {expected}"))
    } else {
        Verdict::fail(format!("expected {expected}: {}", problems.join("; ")))
    }
}

async fn get_delete_405(p: Probe) -> Verdict {
    let mut problems = Vec::new();
    for m in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let req = RawRequest::new(
            format!("{m} on the endpoint"),
            m.clone(),
            p.settings().target.mcp_url.clone(),
        )
        .header("Accept", "text/event-stream")
        .header(headers::PROTOCOL_VERSION, MODERN)
        .token(Some(&p.settings().target.principal));
        match p.send(req).await {
            Ok(r) if r.status == 405 => {}
            Ok(r) => problems.push(format!("{m}: {}", p.reply_status(r.status))),
            Err(e) => problems.push(format!("{m}: {e}")),
        }
    }
    if problems.is_empty() {
        Verdict::pass("GET and DELETE got 405")
    } else {
        Verdict::fail(format!("expected 405: {}", problems.join("; ")))
    }
}

async fn no_session_id(p: Probe) -> Verdict {
    match p.send(correct_list(&p, "")).await {
        Ok(r) => match r.header(headers::SESSION_ID) {
            Some(_) => {
                Verdict::fail("a 2026-07-28 reply carries Mcp-Session-Id: sessions are gone")
            }
            None => Verdict::pass("no Mcp-Session-Id on the reply"),
        },
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;

    fn reply(status: u16, body: Value) -> raw::RawReply {
        raw::RawReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into(),
            elapsed: std::time::Duration::ZERO,
        }
    }

    fn error(id: i64, code: i64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "x"}})
    }

    #[test]
    fn a_refusal_counts_only_against_a_control_that_succeeds() {
        let ok = reply(200, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        let not_found = reply(404, error(2, codes::METHOD_NOT_FOUND));
        let id = Some(RequestId::Number(2));
        let judge = |c: &raw::RawReply, r: &raw::RawReply| {
            judge_error(
                "control",
                Ok(c),
                r,
                id.clone(),
                ReplyStatus::new(400, false),
                codes::HEADER_MISMATCH,
            )
        };
        // Every call gets 404: the framing cannot be observed.
        let v = judge(&reply(404, error(1, codes::METHOD_NOT_FOUND)), &not_found);
        assert!(
            matches!(
                v,
                Verdict::Violation {
                    severity: Some(Severity::Info),
                    ..
                }
            ),
            "{v:?}"
        );
        // The control succeeds: the 404 is about the framing.
        let v = judge(&ok, &not_found);
        assert!(
            matches!(v, Verdict::Violation { severity: None, .. }),
            "{v:?}"
        );
        let v = judge(&ok, &reply(400, error(2, codes::HEADER_MISMATCH)));
        assert!(matches!(v, Verdict::Pass(_)), "{v:?}");
        // An unknown tool's control fails, yet the framing error came first.
        let unknown = reply(200, error(1, codes::INVALID_PARAMS));
        let v = judge(&unknown, &reply(400, error(2, codes::HEADER_MISMATCH)));
        assert!(matches!(v, Verdict::Pass(_)), "{v:?}");
        // A refusal of everything is not a pass either.
        let v = judge(
            &reply(400, error(1, codes::HEADER_MISMATCH)),
            &reply(400, error(2, codes::HEADER_MISMATCH)),
        );
        assert!(
            matches!(
                v,
                Verdict::Violation {
                    severity: Some(Severity::Info),
                    ..
                }
            ),
            "{v:?}"
        );
        let e = "connection refused".to_owned();
        let v = judge_error(
            "control",
            Err(&e),
            &ok,
            id,
            ReplyStatus::new(400, false),
            codes::HEADER_MISMATCH,
        );
        assert!(
            matches!(
                v,
                Verdict::Violation {
                    severity: Some(Severity::Info),
                    ..
                }
            ),
            "{v:?}"
        );
    }
}
