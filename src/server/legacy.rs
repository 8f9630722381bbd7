//! The 2025-11-25 handler: `initialize` creates a session (`MCP-Session-Id`,
//! 128 random bits as hex), `notifications/initialized` opens it for
//! elicitation, and `tools/call` answers with an SSE stream that carries a
//! priming event, each `elicitation/create`, the optional
//! `notifications/elicitation/complete` (URL mode) and finally the tool
//! result. The client's answers arrive as POSTed JSON-RPC responses (202).
//! `GET /mcp` with the session id opens the session's standalone stream
//! (one per session), on which this server sends nothing of its own.
//!
//! Every elicitation is a store record bound to the session's principal;
//! unanswered ones time out (`--elicitation-timeout`) into a tool error.
//! A request, answer or GET for a session of another principal gets 403; a
//! deleted or unknown session 404; a wrong `MCP-Protocol-Version` 400.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::protocol::codes;
use crate::protocol::elicitation::{ElicitRequestParams, METHOD_COMPLETE, METHOD_CREATE};
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::jsonrpc::{Message, Outcome, Request, RequestId};
use crate::protocol::legacy::{
    Implementation, InitializeParams, METHOD_CANCELLED, METHOD_INITIALIZE, METHOD_INITIALIZED,
};
use crate::protocol::sse::encode_event;
use crate::protocol::version::LEGACY;
use crate::protocol::{ElicitAction, Generation};
use crate::state::request_digest;
use crate::store::{Mode, Outcome as StoreOutcome, Status};

use super::app::App;
use super::conn_phase::{Parked, Parking, shed};
use super::conversation::{Conversation, Expect, Verdict, judge};
use super::flaw::Flaw;
use super::log_gate::gated;
use super::log_text::LogText;
use super::once::{self, Finished, Origin};
use super::reply::{self, RpcError};
use super::sessions::{Answer, Refused, Session, lock, new_session_id};
use super::stats::{bump, drop_one};
use super::timing::Timing;
use super::tools::{self, Ask, Ctx, Step, Tool, ToolResult};

/// Most elicitation rounds one legacy call may run.
const MAX_ROUNDS: usize = 10;
/// Most invalid answers tolerated for one input before giving up.
const MAX_INVALID: usize = 3;

fn err(status: StatusCode, code: i64, msg: impl Into<String>) -> RpcError {
    RpcError::new(status, code, msg)
}

/// Handles a POST that belongs to 2025-11-25.
pub async fn handle_post(
    app: &Arc<App>,
    headers: &HeaderMap,
    msg: Message,
    principal: String,
    parking: Option<Parking>,
    timing: &mut Timing,
) -> Response {
    let _ = timing;
    let id = match &msg {
        Message::Request(r) => Some(r.id.clone()),
        _ => None,
    };
    if let Some(v) = headers.get(PROTOCOL_VERSION)
        && v.as_bytes() != LEGACY.as_bytes()
        && msg.method() != Some(METHOD_INITIALIZE)
    {
        let e = err(
            StatusCode::BAD_REQUEST,
            codes::INVALID_REQUEST,
            "unsupported MCP-Protocol-Version for this session (expected 2025-11-25)",
        );
        return reply::error(id.as_ref(), &e);
    }
    if let Message::Request(req) = &msg
        && req.method == METHOD_INITIALIZE
    {
        return initialize(app, req, principal);
    }
    let Some(sid) = headers.get(SESSION_ID).and_then(|v| v.to_str().ok()) else {
        let e = err(
            StatusCode::BAD_REQUEST,
            codes::INVALID_REQUEST,
            "missing MCP-Session-Id: send initialize first",
        );
        return reply::error(id.as_ref(), &e);
    };
    let Some(session) = app.sessions.get(sid) else {
        let e = err(
            StatusCode::NOT_FOUND,
            codes::INVALID_REQUEST,
            "session not found (terminated or never created): initialize again",
        );
        return reply::error(id.as_ref(), &e);
    };
    if session.principal != principal && !app.flaw(Flaw::IgnorePrincipal) {
        gated!(info, "session used by another principal");
        let e = err(
            StatusCode::FORBIDDEN,
            codes::INVALID_REQUEST,
            "this session belongs to another principal",
        );
        return reply::error(id.as_ref(), &e);
    }
    match msg {
        Message::Notification(n) => {
            if n.method == METHOD_INITIALIZED {
                session.initialized.store(true, Ordering::Release);
            } else if n.method == METHOD_CANCELLED {
                let target = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_value);
                if let Some(t) = target
                    && let Some(c) = lock(&session.calls).get(&t)
                {
                    c.notify_one();
                }
            }
            reply::status(StatusCode::ACCEPTED)
        }
        Message::Response(r) => {
            let key = match &r.id {
                Some(RequestId::String(s)) => s.clone(),
                Some(RequestId::Number(n)) => n.to_string(),
                None => String::new(),
            };
            let waiter = lock(&session.pending).remove(&key);
            let Some(tx) = waiter else {
                let e = err(
                    StatusCode::BAD_REQUEST,
                    codes::INVALID_REQUEST,
                    "no pending elicitation has this id",
                );
                return reply::error(None, &e);
            };
            let answer = match r.outcome {
                Outcome::Result(v) => Ok(v),
                Outcome::Error(e) => Err(serde_json::to_value(e).unwrap_or(Value::Null)),
            };
            let _ = tx.send(answer);
            reply::status(StatusCode::ACCEPTED)
        }
        Message::Request(req) => request(app, session, req, principal, parking).await,
    }
}

fn initialize(app: &Arc<App>, req: &Request, principal: String) -> Response {
    let params: InitializeParams = match req.params.clone().map(serde_json::from_value).transpose()
    {
        Ok(Some(p)) => p,
        Ok(None) => {
            let e = RpcError::invalid_params("initialize needs params");
            return reply::error(Some(&req.id), &e);
        }
        Err(e) => {
            let e = RpcError::invalid_params(format!("invalid initialize params: {e}"));
            return reply::error(Some(&req.id), &e);
        }
    };
    let sid = new_session_id();
    let modes = params.capabilities.elicit_modes();
    let session = Arc::new(Session::new(principal, modes, app.now_ms()));
    match app.sessions.insert(sid.clone(), session) {
        Ok(None) => {}
        Ok(Some(_replaced)) => {
            gated!(
                info,
                "session limit of the principal reached: its least recently used idle session was closed"
            );
        }
        Err(Refused::PrincipalFull) => {
            gated!(
                info,
                "session refused: the principal's sessions are all in use"
            );
            let max = app.sessions.limits().per_principal;
            // A limit the client hit, not a fault of ours: not -32603.
            let e = err(
                StatusCode::TOO_MANY_REQUESTS,
                codes::SERVER_ERROR,
                format!("this principal already holds {max} sessions, all in use; DELETE one"),
            );
            // A session in use frees up when its call ends, which takes at
            // most the elicitation timeout.
            let secs = app.cfg.elicitation_timeout.as_secs_f64().ceil().max(1.0);
            let mut r = reply::error(Some(&req.id), &e);
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs as u64));
            return r;
        }
        Err(Refused::Full) => {
            gated!(
                warn,
                "session refused: the session table is full and no larger holder has an idle session"
            );
            let e = err(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::INTERNAL_ERROR,
                "too many sessions; try again later",
            );
            // Every session is in use or held by principals holding no more
            // than this one: one frees when a call ends (at most the
            // elicitation timeout).
            let secs = app.cfg.elicitation_timeout.as_secs_f64().ceil().max(1.0);
            let mut r = reply::error(Some(&req.id), &e);
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs as u64));
            return r;
        }
    }
    gated!(
        info,
        client = %LogText(&params.client_info.name),
        version = %LogText(&params.client_info.version),
        "legacy session created"
    );
    let result = json!({
        "protocolVersion": LEGACY,
        "capabilities": super::modern::server_capabilities(Generation::Legacy, app.cfg.offer_tools),
        "serverInfo": Implementation::elicitkit(),
        "instructions": "elicitkit reference server: demo tools that elicit in form and URL mode.",
    });
    let mut r = reply::result(&req.id, &result, app.cfg.response);
    if let Ok(v) = HeaderValue::from_str(&sid) {
        r.headers_mut().insert(SESSION_ID, v);
    }
    r
}

/// Handles `DELETE /mcp` with a session header.
pub fn handle_delete(app: &Arc<App>, headers: &HeaderMap) -> Response {
    let sid = headers
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let principal = app.principal_of(headers, false);
    if principal.is_none() {
        return reply::status(StatusCode::UNAUTHORIZED);
    }
    match app.sessions.get(sid) {
        None => reply::status(StatusCode::NOT_FOUND),
        Some(s)
            if principal.as_deref() != Some(s.principal.as_str())
                && !app.flaw(Flaw::IgnorePrincipal) =>
        {
            reply::status(StatusCode::FORBIDDEN)
        }
        Some(_) => {
            if let Some(s) = app.sessions.remove(sid) {
                s.close();
            }
            reply::status(StatusCode::NO_CONTENT)
        }
    }
}

/// Handles `GET /mcp` with a session header: opens the session's
/// standalone SSE stream (one per session; a second gets 409) for server
/// messages that belong to no request. The reference server sends none
/// there (only a priming event) unless the `elicit-on-get-stream` flaw is on
/// (then every elicitation goes there).
pub fn handle_get(app: &Arc<App>, headers: &HeaderMap, parking: Option<Parking>) -> Response {
    let Some(principal) = app.principal_of(headers, false) else {
        return reply::status(StatusCode::UNAUTHORIZED);
    };
    if headers
        .get(PROTOCOL_VERSION)
        .is_some_and(|v| v.as_bytes() != LEGACY.as_bytes())
    {
        return reply::status(StatusCode::BAD_REQUEST);
    }
    let sid = headers
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(session) = app.sessions.get(sid) else {
        return reply::status(StatusCode::NOT_FOUND);
    };
    if session.principal != principal && !app.flaw(Flaw::IgnorePrincipal) {
        gated!(
            info,
            "GET stream of a session asked for by another principal"
        );
        return reply::status(StatusCode::FORBIDDEN);
    }
    let Some(rx) = session.open_get_stream() else {
        return reply::status(StatusCode::CONFLICT);
    };
    let closed = session.closed.subscribe();
    let closing = app.closing.clone();
    let mut first = vec![encode_event(Some("g0"), "")];
    if app.flaw(Flaw::ElicitBeforeInitialized) && !session.initialized.load(Ordering::Acquire) {
        let early = json!({"jsonrpc": "2.0", "id": "early-1", "method": "elicitation/create",
            "params": {"mode": "form", "message": "What should we call you?",
                "requestedSchema": {"type": "object",
                    "properties": {"name": {"type": "string", "title": "Name"}}}}});
        first.push(encode_event(Some("g-early"), &early.to_string()));
    }
    let priming = futures::stream::iter(first.into_iter().map(Ok::<_, Infallible>));
    // The stream waits on its client for as long as it is open: parked,
    // so the accept loop may shed it under pressure (it then just ends).
    let parked = parking.as_ref().map(Parking::park);
    let events = futures::stream::unfold(
        (rx, closed, closing, parked),
        |(mut rx, mut closed, mut closing, parked)| async move {
            let next = tokio::select! {
                m = rx.recv() => m,
                _ = closed.wait_for(|c| *c) => None,
                _ = closing.wait_for(|c| *c) => None,
                () = shed(parked.as_ref()) => None,
            };
            next.map(|m| (Ok::<_, Infallible>(m), (rx, closed, closing, parked)))
        },
    );
    use futures::StreamExt as _;
    sse_response(Body::from_stream(priming.chain(events)))
}

fn sse_response(body: Body) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

async fn request(
    app: &Arc<App>,
    session: Arc<Session>,
    req: Request,
    principal: String,
    parking: Option<Parking>,
) -> Response {
    let mode = app.cfg.response;
    let params = req.params.as_ref();
    let method = req.method.as_str();
    if !app.cfg.offer_tools && matches!(method, "tools/list" | "tools/call") {
        return reply::error(Some(&req.id), &RpcError::method_not_found(method));
    }
    match method {
        "ping" => reply::result(&req.id, &json!({}), mode),
        "logging/setLevel" => match params.and_then(|p| p.get("level")).and_then(Value::as_str) {
            Some(l) if LOG_LEVELS.contains(&l) => reply::result(&req.id, &json!({}), mode),
            _ => reply::error(
                Some(&req.id),
                &RpcError::invalid_params(format!(
                    "params.level must be one of {}",
                    LOG_LEVELS.join(", ")
                )),
            ),
        },
        "tools/list" => reply::result(&req.id, &super::modern::tools_list(), mode),
        "prompts/list" => reply::result(&req.id, &super::catalog::prompts_list(), mode),
        "resources/list" => reply::result(&req.id, &super::catalog::resources_list(), mode),
        "resources/templates/list" => {
            reply::result(&req.id, &json!({"resourceTemplates": []}), mode)
        }
        // 2025-11-25 names a missing resource -32002 (2026-07-28 moved to -32602).
        "resources/read" => {
            match super::modern::param(params, "uri").and_then(super::catalog::read) {
                Some(v) => reply::result(&req.id, &v, mode),
                None => reply::error(
                    Some(&req.id),
                    &super::modern::unknown_resource(params, codes::RETIRED_RESOURCE_NOT_FOUND),
                ),
            }
        }
        "prompts/get" => {
            match super::modern::param(params, "name").and_then(super::catalog::get_prompt) {
                Some(v) => reply::result(&req.id, &v, mode),
                None => reply::error(Some(&req.id), &super::modern::unknown_prompt(params)),
            }
        }
        "tools/call" => match prepare_call(app, &req) {
            Ok((tool, Ok(args))) => {
                stream_call(app, session, req.id, tool, args, principal, parking)
            }
            Ok((_, Err(bad))) => reply::result(&req.id, &bad.to_value(), mode),
            // unknown-tool-as-result: an unknown tool answered as if it ran.
            Err(e)
                if app.flaw(Flaw::UnknownToolAsResult)
                    && e.error.message.starts_with("unknown tool") =>
            {
                let r = ToolResult::error(e.error.message.clone());
                reply::result(&req.id, &r.to_value(), mode)
            }
            Err(e) => reply::error(Some(&req.id), &e),
        },
        other => reply::error(Some(&req.id), &RpcError::method_not_found(other)),
    }
}

/// The `logging/setLevel` levels (RFC 5424 names).
const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A call's arguments, or the tool error that says why they are unusable.
type Usable = Result<Map<String, Value>, ToolResult>;

/// The tool and its arguments; arguments the tool cannot use are a tool
/// execution error (`isError`), as SEP-1303 asks, not a protocol error.
fn prepare_call(app: &App, req: &Request) -> Result<(Tool, Usable), RpcError> {
    let p = req
        .params
        .as_ref()
        .and_then(Value::as_object)
        .ok_or_else(|| RpcError::invalid_params("params must be an object"))?;
    let name = p
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("params.name must be a string"))?;
    let tool = Tool::from_name(name)
        .ok_or_else(|| RpcError::invalid_params(format!("unknown tool {name:?}")))?;
    let args = match p.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.arguments must be an object",
            ));
        }
    };
    Ok((
        tool,
        tools::judge_arguments(app, tool, &args)
            .map(|()| args)
            .map_err(|e| ToolResult::error(e.to_string())),
    ))
}

/// The SSE writer of one call.
struct Stream {
    tx: mpsc::Sender<String>,
    next: u64,
}

impl Stream {
    async fn send(&mut self, data: &str) -> bool {
        let ev = encode_event(Some(&format!("e{}", self.next)), data);
        self.next += 1;
        self.tx.send(ev).await.is_ok()
    }
}

fn stream_call(
    app: &Arc<App>,
    session: Arc<Session>,
    id: RequestId,
    tool: Tool,
    args: Map<String, Value>,
    principal: String,
    parking: Option<Parking>,
) -> Response {
    let (tx, mut rx) = mpsc::channel::<String>(8);
    let cancel = Arc::new(Notify::new());
    lock(&session.calls).insert(id.clone(), cancel.clone());
    let app2 = app.clone();
    // The call outlives the request's handler: keep its span (peer, principal).
    let span = tracing::Span::current();
    tokio::spawn(tracing::Instrument::instrument(
        async move {
            let mut stream = Stream { tx, next: 0 };
            if stream.send("").await {
                let call = Call {
                    app: &app2,
                    session: &session,
                    principal: &principal,
                    cancel: &cancel,
                    parking: parking.as_ref(),
                };
                call.run(&mut stream, &id, tool, &args).await;
            }
            lock(&session.calls).remove(&id);
        },
        span,
    ));
    let body =
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|o| o.map(Ok::<_, Infallible>)));
    sse_response(Body::from_stream(body))
}

/// How waiting for one elicitation ended.
enum Waited {
    /// A usable answer.
    Answer(Value),
    /// Well-formed but failing the schema.
    Invalid,
    /// The elicitation timed out.
    TimedOut,
    /// The client answered with an error or garbage.
    ClientError(String),
    /// The store failed (the call cannot go on; nothing was done).
    StoreFailed(crate::store::StoreError),
    /// The stream, session or server went away, or the call was cancelled.
    Gone,
    /// `crash-on-decline`: end the stream without a result.
    Crash,
    /// Shed under pressure at the connection cap while it waited on the
    /// client: the elicitation is cancelled on the stream, the call ends
    /// with a JSON-RPC error.
    Shed,
}

/// The error ending a call whose stream was shed under pressure.
fn shed_error() -> RpcError {
    err(
        StatusCode::SERVICE_UNAVAILABLE,
        codes::SERVER_ERROR,
        "the server is at its connection cap (--max-connections) and shed this call while it \
         waited for the client; call again",
    )
    .with_data(json!({"reason": "shed"}))
}

struct Call<'a> {
    app: &'a Arc<App>,
    session: &'a Arc<Session>,
    principal: &'a str,
    cancel: &'a Arc<Notify>,
    /// Its connection, to mark the call parked while it waits on the
    /// client (absent in process: never shed).
    parking: Option<&'a Parking>,
}

impl Call<'_> {
    async fn finish(&self, stream: &mut Stream, id: &RequestId, r: ToolResult) {
        self.send_result(stream, id, &r.to_value()).await;
    }

    /// Ends the call with a JSON-RPC error instead of a result.
    async fn fail(&self, stream: &mut Stream, id: &RequestId, e: RpcError) {
        let json = reply::response_json(Some(id), None, Some(&e.error));
        stream.send(&json).await;
    }

    async fn send_result(&self, stream: &mut Stream, id: &RequestId, v: &Value) {
        self.app.completed_call();
        let json = if self.app.flaw(Flaw::CrossTalk) {
            let (id, v) = self.app.cross_talk(id.clone(), v.clone()).await;
            reply::response_json(Some(&id), Some(&v), None)
        } else {
            reply::response_json(Some(id), Some(v), None)
        };
        stream.send(&json).await;
    }

    /// Completes the call through [`once`]: this call's origin is its own,
    /// so a repeat cannot happen here, but the path is the one every
    /// completion takes.
    async fn complete(
        &self,
        stream: &mut Stream,
        id: &RequestId,
        origin: &Origin,
        r: ToolResult,
        effect: Option<tools::Effect>,
    ) {
        match once::finish(self.app, origin, r, effect, None, 0).await {
            Ok(Finished::First(v)) => self.send_result(stream, id, &v).await,
            Ok(Finished::Repeat(v)) => {
                self.send_result(stream, id, &once::marked_repeat(v)).await;
            }
            Err(e) => {
                self.fail(
                    stream,
                    id,
                    RpcError::store_failed(e, self.app.cfg.sweep_interval),
                )
                .await
            }
        }
    }

    async fn run(
        &self,
        stream: &mut Stream,
        id: &RequestId,
        tool: Tool,
        args: &Map<String, Value>,
    ) {
        let app = self.app;
        let name = tool.name();
        let args_value = Value::Object(args.clone());
        let digest = match request_digest("tools/call", name, &args_value) {
            Ok(d) => d,
            Err(e) => {
                let e = RpcError::invalid_params(format!("params.arguments: {e}"));
                let json = reply::response_json(Some(id), None, Some(&e.error));
                stream.send(&json).await;
                return;
            }
        };
        let needs = tool.needs(app);
        if needs != tools::Needs::Nothing {
            if !self.session.initialized.load(Ordering::Acquire)
                && !app.flaw(Flaw::ElicitOnUninitializedCall)
            {
                let r = ToolResult::error(
                    "This tool asks the user for input; send notifications/initialized first.",
                );
                return self.finish(stream, id, r).await;
            }
            if tools::gate(app, needs, self.session.modes).is_err() {
                if needs == tools::Needs::Url && app.flaw(Flaw::LegacyUrlRequiredWithoutList) {
                    let mut e = RpcError::new(
                        StatusCode::OK,
                        codes::URL_ELICITATION_REQUIRED,
                        "This tool needs a URL-mode elicitation first.",
                    );
                    e.error = e.error.with_data(json!({"elicitations": []}));
                    return self.fail(stream, id, e).await;
                }
                let what = if needs == tools::Needs::Url {
                    "URL"
                } else {
                    "form"
                };
                let r = ToolResult::error(format!(
                    "This tool needs {what}-mode elicitation, which this client did not declare in initialize."
                ));
                return self.finish(stream, id, r).await;
            }
        }
        let mut conv = Conversation::begin(once::new_origin_id(), 0);
        let origin = Origin::new(self.principal, &digest, &conv.origin);
        let ctx = Ctx::new(app, self.principal, args, digest, origin.key());
        let mut invalid = 0;
        for _ in 0..MAX_ROUNDS {
            let step = match tools::step(tool, &ctx, &mut conv).await {
                Ok(s) => s,
                Err(tools::ToolError::Store(e)) => {
                    return self
                        .fail(
                            stream,
                            id,
                            RpcError::store_failed(e, self.app.cfg.sweep_interval),
                        )
                        .await;
                }
                Err(e) => {
                    tracing::error!(error = %e, "legacy tool step failed");
                    let r = ToolResult::error("The server could not finish this call.");
                    return self.finish(stream, id, r).await;
                }
            };
            let asks = match step {
                Step::Done(r) => return self.complete(stream, id, &origin, r, None).await,
                Step::Act(e, r) => return self.complete(stream, id, &origin, r, Some(e)).await,
                Step::Ask(asks) => asks,
            };
            for ask in asks {
                let Some(expect) = tools::expect(tool, &ctx, &ask.key) else {
                    continue;
                };
                match self.elicit(stream, &ask, &expect, digest, &origin).await {
                    Waited::Answer(v) => {
                        conv.answers.insert(ask.key.clone(), v);
                    }
                    Waited::Invalid => {
                        invalid += 1;
                        if invalid >= MAX_INVALID {
                            let r = ToolResult::error("Too many invalid answers; giving up.");
                            return self.finish(stream, id, r).await;
                        }
                        break;
                    }
                    Waited::TimedOut => {
                        let r = ToolResult::error(format!(
                            "{name}: the elicitation was not answered in time."
                        ));
                        return self.finish(stream, id, r).await;
                    }
                    Waited::ClientError(why) => {
                        let r = ToolResult::error(format!(
                            "{name}: the client could not handle the elicitation ({why})."
                        ));
                        return self.finish(stream, id, r).await;
                    }
                    Waited::StoreFailed(e) => {
                        return self
                            .fail(
                                stream,
                                id,
                                RpcError::store_failed(e, self.app.cfg.sweep_interval),
                            )
                            .await;
                    }
                    Waited::Shed => return self.fail(stream, id, shed_error()).await,
                    Waited::Gone | Waited::Crash => return,
                }
            }
        }
        let r = ToolResult::error("Too many elicitation rounds; giving up.");
        self.finish(stream, id, r).await
    }

    /// Sends one `elicitation/create` and waits for its answer.
    async fn elicit(
        &self,
        stream: &mut Stream,
        ask: &Ask,
        expect: &Expect,
        digest: [u8; 32],
        origin: &Origin,
    ) -> Waited {
        let app = self.app;
        let timeout = app.cfg.elicitation_timeout;
        let (record_id, mode) = match &ask.params {
            ElicitRequestParams::Url(u) => {
                (u.elicitation_id.clone().unwrap_or_default(), Mode::Url)
            }
            ElicitRequestParams::Form(_) => {
                let ttl = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX / 4);
                match app
                    .create_record(self.principal, digest, Mode::Form, None, ttl, origin.key())
                    .await
                {
                    Ok(r) => (r.id, Mode::Form),
                    Err(e) => return Waited::StoreFailed(e),
                }
            }
        };
        let n = self.session.next_id.fetch_add(1, Ordering::Relaxed);
        let sid = format!("s-{n}");
        let (tx, rx) = oneshot::channel();
        lock(&self.session.pending).insert(sid.clone(), tx);
        bump(&app.stats.pending_elicitations);
        let mut params = ask.params.to_value(Generation::Legacy);
        if mode == Mode::Url
            && app.flaw(Flaw::LegacyUrlWithoutId)
            && let Some(o) = params.as_object_mut()
        {
            o.remove("elicitationId");
        }
        let request = reply::request_json(&sid, METHOD_CREATE, &params);
        // From here until the answer, the call waits on its client.
        let parked = self.parking.map(Parking::park);
        let sent = if app.flaw(Flaw::ElicitOnGetStream) {
            // The flaw: the request leaves its call's stream for the GET one.
            self.send_on_get_stream(stream, &request, timeout, parked.as_ref())
                .await
        } else if stream.send(&request).await {
            Ok(())
        } else {
            Err(Waited::Gone)
        };
        let answer = match sent {
            Ok(()) => self.wait(stream, rx, timeout, parked.as_ref()).await,
            Err(w) => Err(w),
        };
        drop(parked);
        if matches!(answer, Err(Waited::Shed)) {
            // The client stops asking its user: the request is withdrawn.
            let note = reply::notification_json(
                METHOD_CANCELLED,
                &json!({"requestId": sid, "reason": "the server shed this call's stream"}),
            );
            stream.send(&note).await;
        }
        lock(&self.session.pending).remove(&sid);
        drop_one(&app.stats.pending_elicitations);
        let raw = match answer {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                self.settle(mode, &record_id, StoreOutcome::Cancelled).await;
                let msg = e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_owned();
                return Waited::ClientError(msg);
            }
            Err(w) => {
                if mode == Mode::Form {
                    self.settle(mode, &record_id, StoreOutcome::Cancelled).await;
                }
                return w;
            }
        };
        match judge(expect, &raw, !self.app.flaw(Flaw::AcceptInvalidContent)) {
            Verdict::Malformed(m) => {
                self.settle(mode, &record_id, StoreOutcome::Cancelled).await;
                Waited::ClientError(m)
            }
            Verdict::Invalid(_) => {
                self.settle(mode, &record_id, StoreOutcome::Cancelled).await;
                Waited::Invalid
            }
            Verdict::Answered(v) => {
                let action = v.get("action").and_then(Value::as_str).unwrap_or("");
                if action == ElicitAction::Decline.as_str() && app.flaw(Flaw::ExitOnDecline) {
                    tracing::error!("exit-on-decline flaw: exiting");
                    std::process::exit(3);
                }
                if action == ElicitAction::Decline.as_str() && app.flaw(Flaw::CrashOnDecline) {
                    tracing::warn!("crash-on-decline flaw: dropping the stream");
                    return Waited::Crash;
                }
                if action == ElicitAction::Cancel.as_str() && app.flaw(Flaw::HangOnCancel) {
                    app.sleep_or_close(app.cfg.hang_limit).await;
                }
                let outcome = match action {
                    "decline" => StoreOutcome::Declined,
                    "cancel" => StoreOutcome::Cancelled,
                    _ => StoreOutcome::Completed(json!({"answered": true})),
                };
                if mode == Mode::Form {
                    self.settle(mode, &record_id, outcome).await;
                } else if action == ElicitAction::Accept.as_str() {
                    match self.wait_flow(&record_id, timeout).await {
                        // Under legacy-url-without-id the client never saw an
                        // id, so no completion notice can name one (it is optional).
                        Ok(true) if app.flaw(Flaw::LegacyUrlWithoutId) => {}
                        Ok(true) => {
                            let note = reply::notification_json(
                                METHOD_COMPLETE,
                                &json!({"elicitationId": record_id}),
                            );
                            if !stream.send(&note).await {
                                return Waited::Gone;
                            }
                        }
                        Ok(false) => return Waited::TimedOut,
                        Err(w) => return w,
                    }
                }
                Waited::Answer(v)
            }
        }
    }

    /// The `elicit-on-get-stream` flaw's send: `request` goes on the
    /// session's GET stream; while none is open it waits for the client to
    /// open one (up to `timeout`: then [`Waited::TimedOut`]), as servers
    /// that push only there do. Never on the call's own stream.
    async fn send_on_get_stream(
        &self,
        stream: &Stream,
        request: &str,
        timeout: Duration,
        parked: Option<&Parked>,
    ) -> Result<(), Waited> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut opened = self.session.get_opened();
        let mut closed = self.session.closed.subscribe();
        let mut closing = self.app.closing.clone();
        loop {
            if self.session.send_on_get_stream(request).await {
                return Ok(());
            }
            tokio::select! {
                r = opened.changed() => r.map_err(|_| Waited::Gone)?,
                _ = tokio::time::sleep_until(deadline) => return Err(Waited::TimedOut),
                _ = self.cancel.notified() => return Err(Waited::Gone),
                _ = closed.wait_for(|c| *c) => return Err(Waited::Gone),
                _ = closing.wait_for(|c| *c) => return Err(Waited::Gone),
                _ = stream.tx.closed() => return Err(Waited::Gone),
                () = shed(parked) => return Err(Waited::Shed),
            }
        }
    }

    /// Waits for the client's answer, the timeout, a cancel or the end.
    async fn wait(
        &self,
        stream: &Stream,
        rx: oneshot::Receiver<Answer>,
        timeout: Duration,
        parked: Option<&Parked>,
    ) -> Result<Answer, Waited> {
        let mut closed = self.session.closed.subscribe();
        let mut closing = self.app.closing.clone();
        tokio::select! {
            a = rx => a.map_err(|_| Waited::Gone),
            _ = tokio::time::sleep(timeout) => Err(Waited::TimedOut),
            _ = self.cancel.notified() => Err(Waited::Gone),
            _ = closed.wait_for(|c| *c) => Err(Waited::Gone),
            _ = closing.wait_for(|c| *c) => Err(Waited::Gone),
            _ = stream.tx.closed() => Err(Waited::Gone),
            () = shed(parked) => Err(Waited::Shed),
        }
    }

    /// Waits until URL flow `id` leaves `Pending` (the call is parked
    /// meanwhile: the user is on the page): `Ok(true)` completed,
    /// `Ok(false)` timed out or refused, `Err` the call went away or was
    /// shed.
    async fn wait_flow(&self, id: &str, timeout: Duration) -> Result<bool, Waited> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut closed = self.session.closed.subscribe();
        let mut closing = self.app.closing.clone();
        let parked = self.parking.map(Parking::park);
        loop {
            let notify = self.app.flow_notify(id);
            match self.app.record(id).await {
                Ok(Some(r)) if r.status == Status::Pending => {}
                Ok(Some(r)) => {
                    self.app.flow_forget(id);
                    return Ok(r.status == Status::Completed);
                }
                _ => {
                    self.app.flow_forget(id);
                    return Ok(false);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                self.app.flow_forget(id);
                return Ok(false);
            }
            let gone = tokio::select! {
                _ = notify.notified() => None,
                _ = tokio::time::sleep(Duration::from_millis(250)) => None,
                _ = self.cancel.notified() => Some(Waited::Gone),
                _ = closed.wait_for(|c| *c) => Some(Waited::Gone),
                _ = closing.wait_for(|c| *c) => Some(Waited::Gone),
                () = shed(parked.as_ref()) => Some(Waited::Shed),
            };
            if let Some(w) = gone {
                self.app.flow_forget(id);
                return Err(w);
            }
        }
    }

    async fn settle(&self, mode: Mode, id: &str, outcome: StoreOutcome) {
        if id.is_empty() {
            return;
        }
        let (id, p) = (id.to_owned(), self.principal.to_owned());
        let _ = mode;
        let now = self.app.now_ms();
        if let Err(e) = self
            .app
            .store_call(move |s| s.complete(&id, &p, outcome, now))
            .await
        {
            tracing::debug!(error = %e, "legacy elicitation record not settled");
        }
    }
}
