//! The 2026-07-28 (stateless MRTR) handler: `_meta` and header checks,
//! version and capability gating, `server/discover`, `tools/list` and
//! `tools/call` with `input_required` rounds sealed into `requestState`.
//!
//! List, read and discover results carry the SEP-2549 caching hints
//! (`ttlMs`, `cacheScope`). Arguments a tool cannot use are a tool execution
//! error (`isError`, SEP-1303); a final retry completes once per state.
//!
//! Error statuses: `-32602` (including a rejected `requestState`, whose
//! `data.reason` is the [`crate::state::StateError::kind`]) → HTTP 400;
//! `-32020`, `-32021`, `-32022` → 400; unknown or removed methods → 404 +
//! `-32601`; an unreachable store (Redis down) → 503 + `-32603`, any other
//! store fault → 500 + `-32603`.

use std::sync::{Arc, LazyLock};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::protocol::codes;
use crate::protocol::headers::{check_param_headers, check_request_headers};
use crate::protocol::jsonrpc::Request;
use crate::protocol::mrtr::{
    METHOD_DISCOVER, METHOD_PROMPTS_GET, METHOD_RESOURCES_READ, METHOD_TOOLS_CALL,
    METHOD_TOOLS_LIST, REMOVED_METHODS, REQUEST_STATE, RequestMeta,
};
use crate::protocol::version::{MODERN, SUPPORTED};
use crate::protocol::{ElicitAction, Generation};
use crate::state::request_digest;

use super::app::App;
use super::catalog;
use super::conversation::{Conversation, Verdict, judge};
use super::flaw::Flaw;
use super::log_gate::gated;
use super::non_tool;
use super::once::{self, Finished, Origin};
use super::reply::{self, RpcError};
use super::result::{finish, state_rejected};
use super::timing::Timing;
use super::tools::{self, Ctx, Step, Tool, ToolError, ToolResult};

static EMPTY_ARGS: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));

/// How long a client may cache a list or discover result: the lists are
/// fixed for the life of the process.
pub const LIST_TTL_MS: u64 = 60_000;

/// Adds the caching hints to a cacheable result (unless `no-cache-hints`).
/// Every cacheable result of this server is the same for every principal,
/// hence `public`.
fn cacheable(app: &App, mut v: Value) -> Value {
    if !app.flaw(Flaw::NoCacheHints)
        && let Some(o) = v.as_object_mut()
    {
        o.insert("ttlMs".into(), LIST_TTL_MS.into());
        o.insert("cacheScope".into(), "public".into());
    }
    v
}

/// A list answered `input_required` (`--flaw input-required-on-list`,
/// `input-required-on-other-lists`): a fresh random state, no input request.
fn list_asks(app: &App) -> Value {
    let token: [u8; 16] = rand::random();
    let v = json!({REQUEST_STATE: token.iter().map(|b| format!("{b:02x}")).collect::<String>()});
    finish(app, v, "input_required")
}

/// The server capabilities: tools (unless `offer_tools` is off), prompts
/// and resources; 2025-11-25 adds `logging` (its `logging/setLevel` is
/// accepted; no log messages are ever sent).
pub fn server_capabilities(generation: Generation, offer_tools: bool) -> Value {
    let mut caps = json!({
        "prompts": {"listChanged": false},
        "resources": {"subscribe": false, "listChanged": false},
    });
    if offer_tools {
        caps["tools"] = json!({"listChanged": false});
    }
    if generation == Generation::Legacy {
        caps["logging"] = json!({});
    }
    caps
}

/// The error for `resources/read` of a URI this server does not serve:
/// `code` with the URI in `data` (SEP-2164).
pub fn unknown_resource(params: Option<&Value>, code: i64) -> RpcError {
    match params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
        Some(uri) => RpcError::new(StatusCode::BAD_REQUEST, code, "Resource not found")
            .with_data(json!({"uri": uri})),
        None => RpcError::invalid_params("params.uri must be a string"),
    }
}

/// The error for `prompts/get` of a prompt this server does not have.
pub fn unknown_prompt(params: Option<&Value>) -> RpcError {
    match params.and_then(|p| p.get("name")).and_then(Value::as_str) {
        Some(name) => RpcError::invalid_params(format!("unknown prompt {name:?}")),
        None => RpcError::invalid_params("params.name must be a string"),
    }
}

/// The answer to a retry of a request that already completed: the
/// `replayed` state error, with the recorded result as `data.outcome`.
fn repeat(app: &App, outcome: Value) -> RpcError {
    let e = crate::state::StateError::Replayed;
    app.stats.rejected(&e);
    // Debug, not info: a client retrying a completed request is routine and
    // can come by the thousand (a retry storm); `/stats` counts every one.
    tracing::debug!(
        reason = e.kind(),
        "retry of a completed request refused with its outcome"
    );
    RpcError::invalid_params(format!(
        "requestState rejected: {e}; the request it belongs to already completed, \
         and error.data.outcome is the result it completed with"
    ))
    .with_data(json!({
        "reason": e.kind(),
        "repeat": true,
        "outcome": finish(app, outcome, "complete"),
    }))
}

fn tool_error(app: &App, e: ToolError) -> RpcError {
    match e {
        ToolError::BadArguments(m) => RpcError::invalid_params(m),
        ToolError::Store(e) => RpcError::store_failed(e, app.cfg.sweep_interval),
    }
}

/// Handles one 2026-07-28 request.
pub async fn handle(
    app: &Arc<App>,
    headers: &HeaderMap,
    req: Request,
    principal: &str,
    timing: &mut Timing,
) -> Response {
    let result = dispatch(app, headers, &req, principal, timing).await;
    if let Ok(v) = &result
        && req.method == METHOD_TOOLS_CALL
        && v.get("resultType").and_then(Value::as_str) != Some("input_required")
        && v.get("inputRequests").is_none()
    {
        app.completed_call();
    }
    match result {
        Ok(v) if req.method == METHOD_TOOLS_CALL && app.flaw(Flaw::CrossTalk) => {
            let (id, v) = app.cross_talk(req.id.clone(), v).await;
            reply::result(&id, &v, app.cfg.response)
        }
        Ok(v) => reply::result(&req.id, &v, app.cfg.response),
        // error-id-null: the unknown method's error names no request.
        Err(e) if e.error.code == codes::METHOD_NOT_FOUND && app.flaw(Flaw::ErrorIdNull) => {
            reply::error(None, &e)
        }
        Err(e) => {
            tracing::debug!(
                code = e.error.code,
                kind = codes::name(e.error.code),
                "request refused"
            );
            reply::error(Some(&req.id), &e)
        }
    }
}

async fn dispatch(
    app: &Arc<App>,
    headers: &HeaderMap,
    req: &Request,
    principal: &str,
    timing: &mut Timing,
) -> Result<Value, RpcError> {
    let method = req.method.as_str();
    if REMOVED_METHODS.contains(&method) {
        return Err(RpcError::method_not_found(method));
    }
    let params = req.params.as_ref();
    let meta =
        RequestMeta::from_params(params).map_err(|e| RpcError::invalid_params(e.to_string()))?;
    check_request_headers(
        |n| headers.get(n).map(|v| v.as_bytes()),
        method,
        params,
        &meta.protocol_version,
    )
    .map_err(|e| {
        RpcError::new(
            StatusCode::BAD_REQUEST,
            codes::HEADER_MISMATCH,
            e.to_string(),
        )
    })?;
    if meta.protocol_version != MODERN {
        return Err(RpcError::new(
            StatusCode::BAD_REQUEST,
            codes::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "protocol version {:?} is not supported",
                meta.protocol_version
            ),
        )
        .with_data(json!({"supported": SUPPORTED, "requested": meta.protocol_version})));
    }
    if !app.cfg.offer_tools && matches!(method, METHOD_TOOLS_LIST | METHOD_TOOLS_CALL) {
        return Err(RpcError::method_not_found(method));
    }
    match method {
        METHOD_DISCOVER => Ok(finish(
            app,
            cacheable(app, discover(app.cfg.offer_tools)),
            "complete",
        )),
        METHOD_TOOLS_LIST => {
            if app.flaw(Flaw::InputRequiredOnList) {
                return Ok(list_asks(app));
            }
            Ok(finish(app, cacheable(app, tools_list()), "complete"))
        }
        "prompts/list" | "resources/list" | "resources/templates/list"
            if app.flaw(Flaw::InputRequiredOnOtherLists) =>
        {
            Ok(list_asks(app))
        }
        "prompts/list" => {
            let mut v = catalog::prompts_list();
            push_entry(&mut v, "prompts", non_tool::prompt_entry());
            Ok(finish(app, cacheable(app, v), "complete"))
        }
        "resources/list" => {
            let mut v = catalog::resources_list();
            push_entry(&mut v, "resources", non_tool::resource_entry());
            Ok(finish(app, cacheable(app, v), "complete"))
        }
        "resources/templates/list" => Ok(finish(
            app,
            cacheable(app, json!({"resourceTemplates": []})),
            "complete",
        )),
        METHOD_RESOURCES_READ | METHOD_PROMPTS_GET
            if let Some(kind) = ["uri", "name"]
                .iter()
                .find_map(|k| param(params, k).and_then(|n| non_tool::Kind::of(method, n))) =>
        {
            non_tool::handle(app, kind, params, &meta, principal, timing)
        }
        METHOD_RESOURCES_READ => match param(params, "uri").and_then(catalog::read) {
            Some(v) => Ok(finish(app, cacheable(app, v), "complete")),
            // empty-unknown-resource: a missing resource reads as nothing.
            None if app.flaw(Flaw::EmptyUnknownResource) && param(params, "uri").is_some() => Ok(
                finish(app, cacheable(app, json!({"contents": []})), "complete"),
            ),
            None => Err(unknown_resource(params, codes::INVALID_PARAMS)),
        },
        // A prompt result is not cacheable (§4.4a lists no prompts/get).
        METHOD_PROMPTS_GET => match param(params, "name").and_then(catalog::get_prompt) {
            Some(v) => Ok(finish(app, v, "complete")),
            None => Err(unknown_prompt(params)),
        },
        METHOD_TOOLS_CALL => {
            let params = params.unwrap_or(&EMPTY_ARGS);
            tools_call(app, headers, params, &meta, principal, timing).await
        }
        other => Err(RpcError::method_not_found(other)),
    }
}

/// Appends `entry` to the `key` array of a list result.
fn push_entry(list: &mut Value, key: &str, entry: Value) {
    if let Some(a) = list.get_mut(key).and_then(Value::as_array_mut) {
        a.push(entry);
    }
}

/// A string member of the request's params (`uri`, `name`).
pub fn param<'a>(params: Option<&'a Value>, key: &str) -> Option<&'a str> {
    params.and_then(|p| p.get(key)).and_then(Value::as_str)
}

/// The `server/discover` result (without `resultType`).
pub fn discover(offer_tools: bool) -> Value {
    json!({
        "supportedVersions": SUPPORTED,
        "capabilities": server_capabilities(Generation::Modern, offer_tools),
        "instructions": "elicitkit reference server: demo tools that elicit in form and URL mode.",
    })
}

static TOOLS_LIST: LazyLock<Value> = LazyLock::new(|| {
    let tools: Vec<Value> = Tool::ALL.into_iter().map(Tool::descriptor).collect();
    json!({"tools": tools})
});

/// The `tools/list` result (without `resultType`).
pub fn tools_list() -> Value {
    TOOLS_LIST.clone()
}

/// A `tools/call` whose `inputResponses` or `requestState` has the wrong
/// JSON type: `-32602`, or (the `bad-shape-not-found` flaw) 404 + `-32601`.
fn bad_shape(app: &App, message: &str) -> RpcError {
    if app.flaw(Flaw::BadShapeNotFound) {
        return RpcError::method_not_found(METHOD_TOOLS_CALL);
    }
    RpcError::invalid_params(message)
}

async fn tools_call(
    app: &Arc<App>,
    headers: &HeaderMap,
    params: &Value,
    meta: &RequestMeta,
    principal: &str,
    timing: &mut Timing,
) -> Result<Value, RpcError> {
    let obj = params
        .as_object()
        .ok_or_else(|| RpcError::invalid_params("params must be an object"))?;
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("params.name must be a string"))?;
    let Some(tool) = Tool::from_name(name) else {
        if app.flaw(Flaw::UnknownToolAsResult) {
            let e = ToolResult::error(format!("unknown tool {name:?}"));
            return Ok(finish(app, e.to_value(), "complete"));
        }
        return Err(RpcError::invalid_params(format!("unknown tool {name:?}")));
    };
    let args_value = match obj.get("arguments") {
        None | Some(Value::Null) => &*EMPTY_ARGS,
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.arguments must be an object",
            ));
        }
    };
    let args = args_value
        .as_object()
        .ok_or_else(|| RpcError::invalid_params("params.arguments must be an object"))?;
    // Absent is fine; present means the schema's type, so `null` is refused too.
    let responses = match obj.get("inputResponses") {
        None => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err(bad_shape(app, "params.inputResponses must be an object")),
    };
    let state = match obj.get(REQUEST_STATE) {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(bad_shape(app, "params.requestState must be a string")),
    };
    // ignore-param-headers: the headers are never compared.
    let mirrored = match app.flaw(Flaw::IgnoreParamHeaders) {
        true => &[][..],
        false => tool.header_params(),
    };
    check_param_headers(|n| headers.get(n).map(|v| v.as_bytes()), mirrored, args).map_err(|e| {
        RpcError::new(
            StatusCode::BAD_REQUEST,
            codes::HEADER_MISMATCH,
            e.to_string(),
        )
    })?;
    if let Err(e) = tools::judge_arguments(app, tool, args) {
        // SEP-1303: the model sees what to fix, so a tool error, not -32602.
        return Ok(finish(
            app,
            ToolResult::error(e.to_string()).to_value(),
            "complete",
        ));
    }
    if let Err(required) = tools::gate(
        app,
        tool.needs(app),
        meta.client_capabilities.elicit_modes(),
    ) {
        return Err(RpcError::new(
            StatusCode::BAD_REQUEST,
            codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "tool {name} needs a client elicitation capability this request did not declare"
            ),
        )
        .with_data(json!({"requiredCapabilities": required})));
    }
    let digest = request_digest(METHOD_TOOLS_CALL, name, args_value)
        .map_err(|e| RpcError::invalid_params(format!("params.arguments: {e}")))?;

    let stateless_answers = state.is_none() && app.flaw(Flaw::CompleteWithoutState);
    let (mut conv, round, state_expires_at) = match state {
        None => {
            let mut conv = Conversation::begin(once::new_origin_id(), app.store.epoch());
            // complete-without-state: the answers stand in for the state.
            if let Some(r) = responses.filter(|_| stateless_answers) {
                conv.asked = r.keys().cloned().collect();
            }
            (
                conv,
                u32::from(stateless_answers && responses.is_some()),
                None,
            )
        }
        Some(token) => match app.open_state(token, principal, &digest, timing) {
            Ok(Some(claims)) => {
                let mut conv = Conversation::decode(&claims.payload)
                    .map_err(|_| state_rejected(&crate::state::StateError::Malformed("payload")))?;
                if conv.origin.is_empty() {
                    // Sealed before origins existed: single use per state.
                    conv.origin = crate::hex::encode(&claims.nonce);
                }
                (conv, claims.round, Some(claims.expires_at))
            }
            Ok(None) => {
                // accept-tampered-state: the request stands in for the claims.
                let mut conv = Conversation::begin(once::new_origin_id(), app.store.epoch());
                if let Some(r) = responses {
                    conv.asked = r.keys().cloned().collect();
                }
                (conv, 1, None)
            }
            Err(e) => {
                gated!(
                    info,
                    reason = e.kind(),
                    tool = %super::log_text::LogText(name),
                    "requestState rejected"
                );
                return Err(state_rejected(&e));
            }
        },
    };
    let origin = Origin::new(principal, &digest, &conv.origin);
    let ctx = Ctx::new(app, principal, args, digest, origin.key());
    if state.is_some()
        && let Some(outcome) = once::recorded(app, &origin)
            .await
            .map_err(|e| RpcError::store_failed(e, app.cfg.sweep_interval))?
    {
        return Err(repeat(app, outcome));
    }
    if let Some(responses) = responses.filter(|_| state.is_some() || stateless_answers) {
        for key in std::mem::take(&mut conv.asked) {
            let Some(raw) = responses.get(&key) else {
                continue;
            };
            let Some(expect) = tools::expect(tool, &ctx, &key) else {
                continue;
            };
            match judge(&expect, raw, !app.flaw(Flaw::AcceptInvalidContent)) {
                Verdict::Answered(v) => {
                    let action = v.get("action").and_then(Value::as_str);
                    if action == Some(ElicitAction::Decline.as_str())
                        && app.flaw(Flaw::ExitOnDecline)
                    {
                        tracing::error!("exit-on-decline flaw: exiting");
                        std::process::exit(3);
                    }
                    if action == Some(ElicitAction::Decline.as_str())
                        && app.flaw(Flaw::CrashOnDecline)
                    {
                        return Err(RpcError::new(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            codes::INTERNAL_ERROR,
                            "internal server error",
                        ));
                    }
                    if action == Some(ElicitAction::Cancel.as_str()) && app.flaw(Flaw::HangOnCancel)
                    {
                        app.sleep_or_close(app.cfg.hang_limit).await;
                    }
                    conv.answers.insert(key, v);
                }
                Verdict::Invalid(why) => {
                    tracing::debug!(
                        key = %super::log_text::LogText(&key),
                        "answer failed the schema; asking again"
                    );
                    let _ = why;
                }
                Verdict::Malformed(m) => {
                    return Err(RpcError::invalid_params(format!(
                        "inputResponses.{key}: {m}"
                    )));
                }
            }
        }
    }
    let step = tools::step(tool, &ctx, &mut conv)
        .await
        .map_err(|e| tool_error(app, e))?;
    let (result, effect) = match step {
        Step::Done(r) => (r, None),
        Step::Act(e, r) => (r, Some(e)),
        Step::Ask(asks) => return ask(app, principal, digest, round, conv, asks, timing),
    };
    // A first call that finishes without asking has no state to replay
    // and, without an effect, nothing to guard.
    if state.is_none() && effect.is_none() {
        return Ok(finish(app, result.to_value(), "complete"));
    }
    let finished = once::finish(app, &origin, result, effect, state_expires_at, conv.epoch).await;
    if let Err(crate::store::StoreError::EpochChanged { now }) = finished {
        let e = crate::state::StateError::StoreReset;
        app.stats.rejected(&e);
        tracing::warn!(
            reason = e.kind(),
            epoch = format_args!("{now:#x}"),
            "a request begun before the store lost its data was refused at completion"
        );
        return Err(state_rejected(&e));
    }
    match finished.map_err(|e| RpcError::store_failed(e, app.cfg.sweep_interval))? {
        Finished::First(v) => Ok(finish(app, v, "complete")),
        Finished::Repeat(outcome) => Err(repeat(app, outcome)),
    }
}

/// Seals the conversation so far and asks for `asks` (`input_required`).
fn ask(
    app: &App,
    principal: &str,
    digest: [u8; 32],
    round: u32,
    mut conv: Conversation,
    asks: Vec<tools::Ask>,
    timing: &mut Timing,
) -> Result<Value, RpcError> {
    // Built by moving each part in: `json!` would deep-copy every Value
    // it is given (the schemas twice over).
    let mut requests = Map::new();
    conv.asked = asks.iter().map(|a| a.key.clone()).collect();
    for a in asks {
        let mut request = Map::new();
        request.insert("method".into(), "elicitation/create".into());
        request.insert("params".into(), a.params.into_value(Generation::Modern));
        requests.insert(a.key, Value::Object(request));
    }
    let token = app
        .seal_state(
            principal,
            digest,
            round.saturating_add(1),
            conv.encode(),
            timing,
        )
        .map_err(|e| RpcError::seal_failed(&e))?;
    let mut v = Map::new();
    v.insert("inputRequests".into(), Value::Object(requests));
    v.insert(REQUEST_STATE.into(), token.into());
    Ok(finish(app, Value::Object(v), "input_required"))
}
