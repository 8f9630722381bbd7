//! 2026-07-28 discovery: `server/discover`, `tools/list` (paged), and a
//! walk of each tool's rounds — answered validly, URL pages completed on the
//! target's own origin — until a round carries a `requestState` (or the
//! tool completes, fails, or the round limit is reached). The same walk
//! serves the checker: any tool that issues a state in any round is a
//! subject for tamper, replay and binding probes.

use super::wire::{Wire, WireError, WireLegs};
use crate::client::drive;
use crate::client::modern::{Explore, FlowConfig, ModernFlow, ToolCall};
use crate::client::raw::{self, RawRequest, Rpc};
use crate::protocol::capabilities::ClientCapabilities;
use crate::protocol::codes;
use crate::protocol::mrtr::{CallToolParams, METHOD_TOOLS_CALL};
use serde_json::{Map, Value, json};

pub use crate::client::modern::{RoundSeen, WalkEnd, Walked};

/// A 2026-07-28 request of the wire's principal, `_meta` for `caps`.
pub fn request<W: Wire + ?Sized>(
    w: &W,
    label: impl Into<String>,
    method: &str,
    params: Value,
    caps: &ClientCapabilities,
) -> RawRequest {
    raw::modern_post(
        label,
        w.mcp_url(),
        w.next_id(),
        method,
        Some(raw::with_meta(params, caps)),
    )
    .token(Some(w.token()))
}

/// A `tools/call` with optional answers and state: the typed
/// [`CallToolParams`] with `_meta` for `caps`. Answers that are not an
/// object (a probe's malformed ones) are put in as given.
pub fn call_request<W: Wire + ?Sized>(
    w: &W,
    label: impl Into<String>,
    tool: &str,
    arguments: &Map<String, Value>,
    caps: &ClientCapabilities,
    responses: Option<Value>,
    state: Option<&str>,
) -> RawRequest {
    let (typed, malformed) = match responses {
        Some(Value::Object(m)) => (Some(m), None),
        other => (None, other),
    };
    let params = CallToolParams {
        name: tool.to_owned(),
        arguments: Some(arguments.clone()),
        input_responses: typed,
        request_state: state.map(str::to_owned),
        meta: Some(raw::meta(caps)),
    };
    let req = raw::modern_post(
        label,
        w.mcp_url(),
        w.next_id(),
        METHOD_TOOLS_CALL,
        serde_json::to_value(params).ok(),
    )
    .token(Some(w.token()));
    match malformed {
        Some(v) => req.with_param("inputResponses", v),
        None => req,
    }
}

/// Walks `tool`'s rounds with valid answers (at most `max_rounds`), as the
/// wire's principal with `caps`: the MRTR flow in its walking mode
/// ([`FlowConfig::explore`]), driven over the wire. With `stop_at_state` the
/// walk ends at the first round carrying a `requestState`, before answering
/// it, so nothing runs to its end that need not.
pub async fn walk<W: Wire + ?Sized>(
    w: &W,
    tool: &str,
    arguments: &Map<String, Value>,
    caps: &ClientCapabilities,
    max_rounds: usize,
    stop_at_state: bool,
) -> Walked {
    let explore = Explore {
        stop_at_state,
        ids: w.core().ids().clone(),
    };
    let max_rounds = u32::try_from(max_rounds).unwrap_or(u32::MAX);
    let mut cfg = FlowConfig::explore(caps.clone(), w.seed(), max_rounds, w.mcp_url(), explore);
    cfg.stdio = w.core().stdio;
    let call = ToolCall {
        name: tool.to_owned(),
        arguments: arguments.clone(),
    };
    let mut flow = ModernFlow::new(call, cfg);
    let mut legs = WireLegs::new(w, None).naming(tool);
    let Ok(_) = drive::drive(&mut flow, &mut legs).await;
    let mut walked = flow.take_walked();
    legs.explain(&mut walked.end);
    walked
}

/// Whether a `tools/list` page answered, and the tools on every page.
pub async fn list_tools<W: Wire + ?Sized>(
    w: &W,
    caps: &ClientCapabilities,
) -> Result<Vec<Value>, WireError> {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for _page in 0..20 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let reply = w
            .send(request(w, "tools/list", "tools/list", params, caps))
            .await?;
        let result = match reply.rpc() {
            Rpc::Result(v) => v,
            other => return Err(WireError::Answered(other.describe())),
        };
        if let Some(a) = result.get("tools").and_then(Value::as_array) {
            listed.extend(a.iter().cloned());
        }
        cursor = result
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(listed)
}

/// Whether an error code says "this method or tool does not exist".
pub fn is_not_found(code: i64) -> bool {
    code == codes::METHOD_NOT_FOUND
}
