//! A small rmcp 3.11 streamable-HTTP server with two eliciting tools,
//! written the way the SDK's docs and its MRTR tests show: stateless
//! 2026-07-28, `requestState` sealed with `RequestStateCodec` (HMAC-SHA256,
//! no expiry, no associated data), capability gating per request, decline
//! and cancel as plain text results, a missing answer as `-32602`.
//!
//! It is a server we did not design for elicitkit: `check` runs against it
//! in `tests/check_rmcp.rs`, and its findings are explained there.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    RequestStateCodec, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;

/// The signing key (≥ 32 bytes, as `RequestStateCodec` requires).
const KEY: &[u8] = b"elicitkit-rmcp-test-key-32-bytes!!";

/// The server: `deploy {service}` (one form round) and `survey {}` (two
/// form rounds, the second carrying the first answer in the sealed state).
#[derive(Clone)]
pub struct ElicitServer {
    codec: Arc<RequestStateCodec>,
}

fn schema(v: Value) -> rmcp::model::ElicitationSchema {
    serde_json::from_value(v).expect("a valid elicitation schema")
}

fn form(message: &str, requested: Value) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema: schema(requested),
        },
    ))
}

fn text(s: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(s.into())]).into()
}

impl ElicitServer {
    fn ask(
        &self,
        key: &str,
        request: InputRequest,
        state: &Value,
    ) -> Result<CallToolResponse, ErrorData> {
        let sealed = self
            .codec
            .seal_json(state)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut requests = InputRequests::new();
        requests.insert(key.to_owned(), request);
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
    }

    fn answer(request: &CallToolRequestParams, key: &str) -> Result<ElicitResult, ErrorData> {
        let raw = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(key))
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("missing input response {key:?}"), None)
            })?;
        serde_json::from_value(raw.clone()).map_err(|e| {
            ErrorData::invalid_params(format!("bad input response {key:?}: {e}"), None)
        })
    }
}

impl ServerHandler for ElicitServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let obj = |v: Value| match v {
            Value::Object(m) => Arc::new(m),
            _ => Arc::new(serde_json::Map::new()),
        };
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "deploy",
                "Deploy a service after asking for the environment and a confirmation.",
                obj(
                    json!({"type":"object","properties":{"service":{"type":"string"}},"required":["service"]}),
                ),
            ),
            Tool::new(
                "survey",
                "Two questions: your name, then a rating.",
                obj(json!({"type":"object","properties":{}})),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let can_form = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !can_form {
            let mut required = ClientCapabilities::default();
            required.elicitation = Some(Default::default());
            return Err(ErrorData::missing_required_client_capability(required));
        }
        // The echoed state is untrusted: open (verify) it before use.
        let state: Option<Value> = match &request.request_state {
            None => None,
            Some(sealed) => Some(self.codec.open_json(sealed).map_err(|_| {
                ErrorData::invalid_params("tampered or unknown request state", None)
            })?),
        };
        let step = state.as_ref().and_then(|s| s["step"].as_u64()).unwrap_or(0);
        match (request.name.as_ref(), step) {
            ("deploy", 0) => self.ask(
                "confirm",
                form(
                    "Deploy where?",
                    json!({"type":"object","properties":{
                        "environment":{"type":"string","enum":["staging","production"]},
                        "confirm":{"type":"boolean","description":"Really deploy?"}},
                        "required":["environment","confirm"]}),
                ),
                &json!({"step": 1, "tool": "deploy"}),
            ),
            ("deploy", _) => {
                let answer = Self::answer(&request, "confirm")?;
                Ok(match answer.action {
                    ElicitationAction::Accept => {
                        let env = answer
                            .content
                            .as_ref()
                            .and_then(|c| c.get("environment"))
                            .and_then(Value::as_str)
                            .unwrap_or("staging")
                            .to_owned();
                        text(format!("deployed to {env}"))
                    }
                    ElicitationAction::Decline => text("deployment declined"),
                    _ => text("deployment cancelled"),
                })
            }
            ("survey", 0) => self.ask(
                "name",
                form("Your name?", json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})),
                &json!({"step": 1, "tool": "survey"}),
            ),
            ("survey", 1) => {
                let answer = Self::answer(&request, "name")?;
                if answer.action != ElicitationAction::Accept {
                    return Ok(text("survey skipped"));
                }
                let name = answer.content.unwrap_or(Value::Null)["name"].clone();
                self.ask(
                    "rating",
                    form("Rate us", json!({"type":"object","properties":{"stars":{"type":"integer","minimum":1,"maximum":5}},"required":["stars"]})),
                    &json!({"step": 2, "tool": "survey", "name": name}),
                )
            }
            ("survey", _) => {
                let answer = Self::answer(&request, "rating")?;
                Ok(match answer.action {
                    ElicitationAction::Accept => text("thanks"),
                    _ => text("survey skipped"),
                })
            }
            (other, _) => Err(ErrorData::invalid_params(format!("unknown tool {other}"), None)),
        }
    }
}

/// A running rmcp server on 127.0.0.1.
pub struct Running {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Running {
    /// Stops the server.
    pub fn stop(self) {
        let _ = self.stop.send(());
    }
}

/// Starts the server on an ephemeral loopback port.
pub async fn start() -> Running {
    let codec = Arc::new(RequestStateCodec::try_new(KEY).expect("a key of at least 32 bytes"));
    let service = StreamableHttpService::new(
        move || {
            Ok(ElicitServer {
                codec: codec.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    Running {
        url: format!("http://{addr}/mcp"),
        stop,
    }
}
