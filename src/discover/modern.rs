//! 2026-07-28 discovery: `server/discover`, `tools/list` (paged), and a
//! walk of each tool's rounds — answered validly, URL pages completed on the
//! target's own origin — until a round carries a `requestState` (or the
//! tool completes, fails, or the round limit is reached). The same walk
//! serves the checker: any tool that issues a state in any round is a
//! subject for tamper, replay and binding probes.

use super::page::{self, PageError};
use super::wire::Wire;
use crate::client::content::answers_for;
use crate::client::raw::{self, RawRequest, Rpc};
use crate::protocol::capabilities::{ClientCapabilities, ElicitModes};
use crate::protocol::codes;
use crate::protocol::mrtr::{
    CallToolParams, InputRequiredResult, METHOD_TOOLS_CALL, asks_for_input,
};
use serde_json::{Map, Value, json};

/// One `input_required` round a walk saw.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundSeen {
    /// The result object.
    pub result: Value,
    /// The raw reply body (for duplicate-key checks).
    pub raw: String,
    /// Modes of its `elicitation/create` requests.
    pub modes: ElicitModes,
    /// Methods of its input requests (`elicitation/create`, `roots/list`, ...).
    pub methods: Vec<String>,
    /// Its `requestState`, if any.
    pub state: Option<String>,
    /// Valid answers to it (what the walk sent, or would send, next).
    pub answers: Map<String, Value>,
    /// URL-mode pages it asked for.
    pub urls: Vec<String>,
}

/// How a walk ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkEnd {
    /// The last round carries a `requestState` (a walk told to stop there).
    AtState,
    /// A complete result.
    Complete {
        /// `isError`.
        is_error: bool,
        /// The result.
        result: Value,
    },
    /// A JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
        /// HTTP status of the reply.
        status: u16,
    },
    /// The round limit was reached.
    Limit,
    /// Anything else (transport, HTTP error without JSON-RPC, a page not
    /// completed); says why.
    Other(String),
}

/// What a walk saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Walked {
    /// Every `input_required` round, in order.
    pub rounds: Vec<RoundSeen>,
    /// How it ended.
    pub end: WalkEnd,
    /// A flow page on another origin that was not followed.
    pub off_origin: Option<String>,
}

impl Walked {
    /// The first round that carried a state, with its index.
    pub fn state_round(&self) -> Option<(usize, &RoundSeen)> {
        self.rounds
            .iter()
            .enumerate()
            .find(|(_, r)| r.state.is_some())
    }
}

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

fn round_of(result: Value, raw: String, seed: u64) -> RoundSeen {
    let ir = InputRequiredResult::from_value(&result).unwrap_or_default();
    let mut modes = ElicitModes::default();
    let mut methods = Vec::new();
    let mut urls = Vec::new();
    for r in ir.input_requests.iter().flat_map(|r| r.values()) {
        if !methods.contains(&r.method) {
            methods.push(r.method.clone());
        }
        if r.method != "elicitation/create" {
            continue;
        }
        match r.params.get("mode").and_then(Value::as_str) {
            Some("url") => {
                modes.url = true;
                if let Some(u) = r.params.get("url").and_then(Value::as_str) {
                    urls.push(u.to_owned());
                }
            }
            _ => modes.form = true,
        }
    }
    RoundSeen {
        answers: answers_for(&ir, seed),
        state: ir.request_state,
        modes,
        methods,
        urls,
        result,
        raw,
    }
}

/// Walks `tool`'s rounds with valid answers (at most `max_rounds`), as the
/// wire's principal with `caps`. With `stop_at_state` the walk ends at the
/// first round carrying a `requestState`, before answering it, so nothing
/// runs to its end that need not.
pub async fn walk<W: Wire + ?Sized>(
    w: &W,
    tool: &str,
    arguments: &Map<String, Value>,
    caps: &ClientCapabilities,
    max_rounds: usize,
    stop_at_state: bool,
) -> Walked {
    let mut walked = Walked {
        rounds: Vec::new(),
        end: WalkEnd::Limit,
        off_origin: None,
    };
    let mut responses: Option<Value> = None;
    let mut state: Option<String> = None;
    for n in 0..=max_rounds {
        let label = if n == 0 {
            format!("tools/call {tool} #1")
        } else {
            format!("tools/call {tool} #{} retry", n + 1)
        };
        let req = call_request(
            w,
            label,
            tool,
            arguments,
            caps,
            responses.take(),
            state.as_deref(),
        );
        let reply = match w.send(req).await {
            Ok(r) => r,
            Err(e) => {
                walked.end = WalkEnd::Other(e.to_string());
                return walked;
            }
        };
        let rpc = reply.rpc();
        let v = match rpc {
            Rpc::Result(v) => v,
            Rpc::Error(e) => {
                walked.end = WalkEnd::Error {
                    code: e.code,
                    message: e.message,
                    status: reply.status,
                };
                return walked;
            }
            Rpc::Missing(why) => {
                walked.end = WalkEnd::Other(why);
                return walked;
            }
        };
        // Read by shape: a round without `resultType` still asks (the
        // checker's `mrtr-result-type` reports the missing declaration).
        if !asks_for_input(&v) {
            walked.end = WalkEnd::Complete {
                is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
                result: v,
            };
            return walked;
        }
        if n == max_rounds {
            break;
        }
        let round = round_of(
            v,
            String::from_utf8_lossy(&reply.body).into_owned(),
            w.seed() ^ (n as u64) << 32,
        );
        let has_state = round.state.is_some();
        responses = Some(Value::Object(round.answers.clone()));
        state = round.state.clone();
        let urls = round.urls.clone();
        walked.rounds.push(round);
        if has_state && stop_at_state {
            walked.end = WalkEnd::AtState;
            return walked;
        }
        for u in urls {
            match page::complete(w, &u).await {
                Ok(_) => {}
                Err(PageError::OtherOrigin(o)) => {
                    walked.off_origin = Some(o);
                    walked.end =
                        WalkEnd::Other(format!("flow page on another origin ({u}): not followed"));
                    return walked;
                }
                Err(e) => {
                    walked.end = WalkEnd::Other(e.to_string());
                    return walked;
                }
            }
        }
    }
    walked.end = WalkEnd::Limit;
    walked
}

/// Whether a `tools/list` page answered, and the tools on every page.
pub async fn list_tools<W: Wire + ?Sized>(
    w: &W,
    caps: &ClientCapabilities,
) -> Result<Vec<Value>, String> {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for _page in 0..20 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let reply = w
            .send(request(w, "tools/list", "tools/list", params, caps))
            .await
            .map_err(|e| e.to_string())?;
        let result = match reply.rpc() {
            Rpc::Result(v) => v,
            other => return Err(other.describe()),
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
