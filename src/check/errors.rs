//! How a 2026-07-28 server answers what it cannot serve (the official
//! suite's 2026-07-28 rules): every JSON-RPC error carries the request's id
//! (§4.3, `sep-2575-http-server-error-jsonrpc-id` in `server-stateless`);
//! a `tools/call` of an unknown tool is a protocol error, not a tool
//! result; a `resources/read` of a URI the server did not list is `-32602`,
//! never empty `contents` (SEP-2164, `sep-2164-resource-not-found`). The
//! unknown-tool rule has a 2025-11-25 twin ([`legacy_checks`]).

use super::control::Control;
use super::legacy_session;
use super::model::Verdict;
use super::offered;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::ReplyStatus;
use crate::client::raw::{RawReply, Rpc};
use crate::findings::Severity;
use crate::protocol::codes;
use crate::protocol::jsonrpc::RequestId;
use serde_json::{Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-error-id-echoed",
            "§4.3 / §6.B 1-4",
            Must,
            Modern,
            "every JSON-RPC error carries the id of the request it answers (string ids too)",
            error_id_echoed,
            // Over stdio a reply with id null is told only while its
            // request is the one in flight on the pipe (stdio::pipe).
            alone;
            scenario "server-stateless"
        ),
        // The rule (an unknown tool is a protocol error, the 2025-11-25
        // tools page's example is -32602) is in the official suite only as
        // an open pull request (modelcontextprotocol/conformance#508), so
        // it stays a SHOULD until that lands.
        check!(
            "mrtr-unknown-tool-error",
            "§4.10 (server/tools error handling; conformance PR #508, pending)",
            Should,
            Modern,
            "a tools/call of a tool the server does not have gets a JSON-RPC error (-32602), not a tool result",
            unknown_tool_error
        ),
        check!(
            "mrtr-unknown-resource-error",
            "§4.9 (SEP-2164)",
            Must,
            Modern,
            "resources/read of a URI the server did not list gets -32602, never empty contents",
            unknown_resource_error;
            scenario "sep-2164-resource-not-found"
        ),
    ]
}

/// The id an error `reply` carries, read against `sent`: `None` when it
/// echoes it, else what it carries instead.
fn wrong_id(reply: &RawReply, sent: &RequestId) -> Option<String> {
    match reply.response_id() {
        Some(id) if id == *sent => None,
        Some(id) => Some(id.to_value().to_string()),
        None => Some("null or no id".into()),
    }
}

async fn error_id_echoed(p: Probe) -> Verdict {
    let method = p.target().plain_method();
    // Three errors of different kinds, two with string ids (a server that
    // stores ids as numbers loses them).
    let probes = [
        (
            json!("elicitkit-error-id-unknown-method"),
            p.modern_request(
                "an unknown method, string id",
                "elicitkit/no-such-method",
                json!({}),
                &all_modes(),
            ),
        ),
        (
            json!(p.target().next_id()),
            crate::client::raw::modern_post(
                format!("{method} without _meta, number id"),
                &p.settings().target.mcp_url,
                0,
                method,
                Some(json!({})),
            )
            .token(Some(&p.settings().target.principal)),
        ),
        (
            json!("elicitkit-error-id-unknown-tool"),
            p.modern_request(
                "tools/call of an unknown tool, string id",
                "tools/call",
                json!({"name": "elicitkit-no-such-tool", "arguments": {}}),
                &all_modes(),
            ),
        ),
    ];
    let mut judged = Vec::new();
    let mut wrong = Vec::new();
    for (id, req) in probes {
        let label = req.label.clone();
        let Some(sent) = RequestId::from_value(&id) else {
            continue;
        };
        let reply = match p.send(req.with_id(id)).await {
            Ok(r) => r,
            Err(e) => return Verdict::fail(format!("{label}: no reply: {e}")),
        };
        let rpc = reply.rpc();
        if !matches!(rpc, Rpc::Error(_)) {
            continue;
        }
        match wrong_id(&reply, &sent) {
            None => judged.push(format!("{label}: {} with id {sent}", rpc.describe())),
            Some(got) => wrong.push(format!(
                "{label}: {} carries id {got}, the request's was {}",
                rpc.describe(),
                sent.to_value()
            )),
        }
    }
    if !wrong.is_empty() {
        return Verdict::fail(wrong.join("; "));
    }
    if judged.is_empty() {
        return Verdict::info(
            "could not tell: none of an unknown method, a request without _meta and an unknown \
             tool got a JSON-RPC error",
        );
    }
    Verdict::pass(judged.join("; "))
}

/// The 2025-11-25 twins.
pub fn legacy_checks() -> Vec<Check> {
    vec![check!(
        "legacy-unknown-tool-error",
        "§3 (server/tools error handling; conformance PR #508, pending)",
        Should,
        Legacy,
        "a tools/call of a tool the server does not have gets a JSON-RPC error (-32602), not a tool result",
        legacy_unknown_tool_error
    )]
}

/// A `tools/call` of the first tool discovery found (a correct call a
/// server serves), for the unknown-tool control.
async fn known_tool_served(p: &Probe) -> Control {
    let Some(tool) = p.target().tools.first() else {
        return Control::observed("a listed tool is called", Err("no tool is listed".into()));
    };
    let req = p.call_request(
        format!("control: tools/call {}", tool.name),
        tool,
        &all_modes(),
        None,
        None,
    );
    let seen = match p.send(req).await {
        Ok(r) => match r.rpc() {
            Rpc::Result(v) => Ok(Some(v)),
            other => Err(format!(
                "it got {}",
                p.reply_status(r.status).then(" and ", other.describe())
            )),
        },
        Err(e) => Err(format!("it got no reply: {e}")),
    };
    Control::observed(format!("a tools/call of {} gets a result", tool.name), seen)
}

/// The tool name no server lists.
const NO_SUCH_TOOL: &str = "elicitkit-no-such-tool";

/// How a `tools/call` of [`NO_SUCH_TOOL`] was answered (`status`, `rpc`),
/// either generation: `-32602` passes (a PASS the caller judges against its
/// control), another protocol error is INFO, a result (even `isError`) or
/// no response fails.
fn unknown_tool_verdict(status: ReplyStatus, rpc: &Rpc) -> Verdict {
    let name = NO_SUCH_TOOL;
    let expect = "a JSON-RPC error, -32602 as in the tools page's example: an unknown tool is a \
                  protocol error, a tool result (isError) is for a tool that ran";
    match rpc {
        Rpc::Error(e) if e.code == codes::INVALID_PARAMS => Verdict::pass(format!(
            "tools/call {name}: {}",
            status.then(" and ", "error -32602")
        )),
        Rpc::Error(e) => Verdict::info(format!(
            "tools/call {name}: a protocol error, but {} ({}); the tools page's example is -32602",
            e.code,
            codes::name(e.code)
        )),
        Rpc::Result(v) => {
            let is_error = v.get("isError").and_then(Value::as_bool) == Some(true);
            let got = format!(
                "tools/call {name} got a result{}",
                if is_error { " with isError: true" } else { "" }
            );
            Verdict::fail(format!(
                "{}: an unknown tool was answered as if a tool had run",
                status.after(got)
            ))
            .expecting(expect)
        }
        Rpc::Missing(why) => Verdict::fail(format!("tools/call {name}: {why}")).expecting(expect),
    }
}

async fn unknown_tool_error(p: Probe) -> Verdict {
    if let Some(why) = &p.target().no_tools {
        return Verdict::skip(why.clone());
    }
    let req = p.modern_request(
        format!("tools/call {NO_SUCH_TOOL} (not listed)"),
        "tools/call",
        json!({"name": NO_SUCH_TOOL, "arguments": {}}),
        &all_modes(),
    );
    let reply = match p.send(req).await {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    let rpc = reply.rpc();
    let verdict = unknown_tool_verdict(p.reply_status(reply.status), &rpc);
    if matches!(rpc, Rpc::Error(_)) {
        return known_tool_served(&p).await.judge(verdict);
    }
    verdict
}

/// [`unknown_tool_error`]'s 2025-11-25 twin: the same call on an
/// initialized session; the control is a listed tool called on that
/// session, which answers or elicits (stopped at its first elicitation).
async fn legacy_unknown_tool_error(p: Probe) -> Verdict {
    if let Some(why) = &p.target().no_tools {
        return Verdict::skip(why.clone());
    }
    let s = match legacy_session::open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    let req = legacy_session::request(
        &p,
        &s,
        &format!("tools/call {NO_SUCH_TOOL} (not listed)"),
        "tools/call",
        json!({"name": NO_SUCH_TOOL, "arguments": {}}),
    );
    let reply = p.send(req).await;
    let control = match p.target().tools.first() {
        None => Err("no tool is listed".to_owned()),
        Some(t) => {
            let st = legacy_session::call(
                &p,
                &s,
                &t.name,
                &t.arguments,
                legacy_session::Answer::Peek,
                &legacy_session::CallOptions::default(),
            )
            .await;
            match (&st.response, st.elicitations.is_empty()) {
                (_, false) | (Some(Rpc::Result(_)), _) => Ok(None),
                (Some(rpc), _) => Err(format!("it got {}", rpc.describe())),
                (None, _) => Err(format!(
                    "it got no response ({})",
                    st.failure.clone().unwrap_or_default()
                )),
            }
        }
    };
    legacy_session::close(&p, &s).await;
    let reply = match reply {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    let rpc = reply.rpc();
    let verdict = unknown_tool_verdict(p.reply_status(reply.status), &rpc);
    let what = match p.target().tools.first() {
        Some(t) => format!("a tools/call of {} on the session is served", t.name),
        None => "a listed tool is called".to_owned(),
    };
    Control::observed(what, control).judge(verdict)
}

/// Whether `server/discover` declares resources.
fn offers_resources(p: &Probe) -> bool {
    p.target()
        .discover
        .as_ref()
        .and_then(|d| d.get("capabilities"))
        .and_then(|c| c.get("resources"))
        .is_some()
}

async fn unknown_resource_error(p: Probe) -> Verdict {
    if !offers_resources(&p) {
        return Verdict::skip("server/discover declares no resources capability");
    }
    let listed = p
        .modern("resources/list", "resources/list", json!({}), &all_modes())
        .await;
    let first = listed
        .as_ref()
        .map_err(|e| e.to_string())
        .and_then(|r| offered::first_read(&r.rpc()).map_err(String::from));
    // An unlisted URI in the listed one's scheme, so a refusal is about
    // the resource, not the scheme.
    let uri = match first.as_ref().map(|o| o.params["uri"].as_str()) {
        Ok(Some(listed)) => format!("{listed}-elicitkit-missing"),
        _ => "elicitkit://missing-resource".to_owned(),
    };
    let reply = match p
        .modern(
            format!("resources/read {uri} (not listed)"),
            "resources/read",
            json!({"uri": uri}),
            &all_modes(),
        )
        .await
    {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    let rpc = reply.rpc();
    let verdict = match &rpc {
        Rpc::Error(e) if e.code == codes::INVALID_PARAMS => Verdict::pass(format!(
            "resources/read {uri}: {}",
            p.reply_status(reply.status).then(" and ", "error -32602")
        )),
        Rpc::Error(e) if e.code == codes::RETIRED_RESOURCE_NOT_FOUND => Verdict::fail(format!(
            "resources/read {uri}: error -32002, retired in 2026-07-28 (it must not be emitted; \
             resource-not-found is -32602)"
        )),
        Rpc::Error(e) => Verdict::violation(
            Severity::Should,
            format!(
                "resources/read {uri}: error {} ({}); resource-not-found SHOULD be -32602",
                e.code,
                codes::name(e.code)
            ),
        ),
        Rpc::Result(v) => {
            let empty = v
                .get("contents")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty);
            Verdict::fail(format!(
                "resources/read {uri} got a result{}: a resource that does not exist must be an \
                 error",
                if empty { " with empty contents" } else { "" }
            ))
        }
        Rpc::Missing(why) => Verdict::fail(format!("resources/read {uri}: {why}")),
    }
    .expecting("a JSON-RPC error -32602 (Invalid params), never a result with empty contents");
    // A server that refuses every read refuses this one too.
    let seen = match &first {
        Err(e) => Err(e.clone()),
        Ok(o) => match p
            .modern(
                format!("control: {}", o.label),
                o.method,
                o.params.clone(),
                &all_modes(),
            )
            .await
        {
            Ok(r) => match r.rpc() {
                Rpc::Result(v) => Ok(Some(v)),
                other => Err(format!(
                    "it got {}",
                    p.reply_status(r.status).then(" and ", other.describe())
                )),
            },
            Err(e) => Err(format!("it got no reply: {e}")),
        },
    };
    Control::observed("a listed resource is read", seen).judge(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(body: Value) -> RawReply {
        RawReply {
            status: 404,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into(),
            elapsed: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn an_error_must_carry_the_id_as_sent() {
        let err = |id: Value| {
            reply(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "x"}}))
        };
        let sent = RequestId::String("a-1".into());
        assert_eq!(wrong_id(&err(json!("a-1")), &sent), None);
        assert_eq!(
            wrong_id(&err(Value::Null), &sent).as_deref(),
            Some("null or no id")
        );
        // A string id that came back as another value is not the same id.
        assert_eq!(
            wrong_id(&err(json!("a-2")), &sent).as_deref(),
            Some("\"a-2\"")
        );
        assert!(wrong_id(&err(json!(1)), &RequestId::Number(2)).is_some());
    }
}
