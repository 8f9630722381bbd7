//! Servers that mishandle every answer, for the "no PASS without evidence"
//! tests: the reference server (in process, served on its own loopback
//! port) behind a layer that intercepts answers. First calls, discovery,
//! sessions and flow pages are the reference server's; what happens to an
//! answer (a 2026-07-28 retry carrying `inputResponses` or `requestState`,
//! a 2025-11-25 JSON-RPC response POSTed to a session) is the [`Fault`]'s.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use elicitkit::server::ServerConfig;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with every answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Refuses it: a 2026-07-28 retry gets `-32603 Internal error`; a
    /// 2025-11-25 answer gets HTTP 400 with that error (not taken, so the
    /// call ends when the server stops waiting).
    Refuse,
    /// Never answers it: a 2026-07-28 retry gets no reply; a 2025-11-25
    /// answer gets 202 and is dropped (the call never ends).
    Ignore,
    /// Completes it, whatever it holds: a 2026-07-28 retry carrying any
    /// `requestState` gets a complete result; a 2025-11-25 answer is taken
    /// as the session owner's, whoever sends it.
    CompleteAny,
}

/// A running answer-fault server (stopped when dropped).
pub struct FaultServer {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Shared {
    fault: Fault,
    /// 2025-11-25 session id → the `Authorization` that opened it.
    owners: Arc<Mutex<HashMap<String, HeaderValue>>>,
}

/// Starts the reference server with `config` (its `listen` is replaced)
/// behind `fault`, on an ephemeral loopback port.
pub async fn start(fault: Fault, mut config: ServerConfig) -> FaultServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    config.listen = addr;
    if fault == Fault::Ignore {
        // The dropped 2025-11-25 answers leave their calls waiting.
        config.elicitation_timeout = Duration::from_secs(120);
    } else if fault == Fault::Refuse {
        config.elicitation_timeout = Duration::from_secs(2);
    }
    let inner = elicitkit::server::embed::in_process(config).expect("server builds");
    let shared = Shared {
        fault,
        owners: Arc::default(),
    };
    let router = inner
        .router()
        .layer(middleware::from_fn_with_state(shared, intercept));
    let task = tokio::spawn(async move {
        let _keep = inner;
        let _ = axum::serve(listener, router).await;
    });
    FaultServer {
        url: format!("http://{addr}/mcp"),
        task,
    }
}

/// Whether `msg` is an answer: a 2026-07-28 request carrying answers or a
/// state, or a 2025-11-25 JSON-RPC response.
fn is_answer(msg: &Value) -> bool {
    match msg.get("method") {
        Some(_) => msg
            .get("params")
            .is_some_and(|p| p.get("inputResponses").is_some() || p.get("requestState").is_some()),
        None => msg.get("result").is_some() || msg.get("error").is_some(),
    }
}

fn json_reply(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn intercept(State(s): State<Shared>, req: Request, next: Next) -> Response {
    if req.method() != axum::http::Method::POST || req.uri().path() != "/mcp" {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, 4 << 20).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let msg: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let legacy_answer = msg.get("method").is_none();
    let initialize = msg.get("method").and_then(Value::as_str) == Some("initialize");
    if is_answer(&msg) {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        match (s.fault, legacy_answer) {
            (Fault::Refuse, false) => {
                return json_reply(
                    StatusCode::OK,
                    json!({"jsonrpc":"2.0","id":id,
                           "error":{"code":-32603,"message":"Internal error"}}),
                );
            }
            (Fault::Refuse, true) => {
                return json_reply(
                    StatusCode::BAD_REQUEST,
                    json!({"jsonrpc":"2.0",
                           "error":{"code":-32603,"message":"Internal error"}}),
                );
            }
            (Fault::Ignore, false) => {
                tokio::time::sleep(Duration::from_secs(300)).await;
                return StatusCode::GATEWAY_TIMEOUT.into_response();
            }
            (Fault::Ignore, true) => return StatusCode::ACCEPTED.into_response(),
            (Fault::CompleteAny, false) if msg["params"].get("requestState").is_some() => {
                return json_reply(
                    StatusCode::OK,
                    json!({"jsonrpc":"2.0","id":id,"result":{
                        "resultType":"complete","isError":false,
                        "content":[{"type":"text","text":"Done."}]}}),
                );
            }
            (Fault::CompleteAny, true) => {
                let session = parts
                    .headers
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let owner = session.and_then(|sid| s.owners.lock().ok()?.get(&sid).cloned());
                match owner {
                    Some(auth) => parts.headers.insert(header::AUTHORIZATION, auth),
                    None => parts.headers.remove(header::AUTHORIZATION),
                };
            }
            (Fault::CompleteAny, false) => {}
        }
    }
    let auth = parts.headers.get(header::AUTHORIZATION).cloned();
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if initialize
        && let (Some(sid), Some(auth)) = (
            resp.headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok()),
            auth,
        )
        && let Ok(mut owners) = s.owners.lock()
    {
        owners.insert(sid.to_owned(), auth);
    }
    resp
}
