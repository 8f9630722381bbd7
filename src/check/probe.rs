//! What a check body works with: the [`Target`] (settings, HTTP client and
//! what discovery learned about the server's tools) and a [`Probe`] that
//! sends requests through the shared raw helper or the client's MRTR state
//! machine while recording every exchange as evidence.

use super::model::Exchange;
use super::raw::{self, RawError, RawReply, RawRequest};
use crate::client::http::{Endpoint, exchange};
use crate::client::modern::{FlowConfig, HttpMethod, ModernFlow, Outgoing, Step, ToolCall};
use crate::client::outcome::RoundTrip;
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::{ClientCapabilities, Generation};
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How `check` was asked to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The MCP endpoint URL.
    pub mcp_url: String,
    /// Bearer token of the principal that runs the flows.
    pub principal: String,
    /// Bearer token of a second principal (cross-principal probes).
    pub other_principal: String,
    /// Per-check timeout (each request inside a check is bounded by it too).
    pub timeout: Duration,
    /// Overall deadline for the whole run.
    pub deadline: Duration,
    /// How long to wait before replaying a state in the expiry check
    /// (`None`: the check is skipped).
    pub wait_expiry: Option<Duration>,
    /// Tools to check (empty: every tool `tools/list` names).
    pub tools: Vec<String>,
    /// Tools whose completion must happen at most once (besides those the
    /// server marks via annotations or its description).
    pub single_use: Vec<String>,
    /// Checks run at the same time.
    pub concurrency: usize,
    /// Seed for generated answers.
    pub seed: u64,
}

impl Settings {
    /// Defaults for `mcp_url`: demo principals `alice` / `bob`, 10 s per
    /// check, 120 s overall, 4 checks at a time.
    pub fn new(mcp_url: impl Into<String>) -> Self {
        Settings {
            mcp_url: mcp_url.into(),
            principal: "alice".into(),
            other_principal: "bob".into(),
            timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(120),
            wait_expiry: None,
            tools: Vec::new(),
            single_use: Vec::new(),
            concurrency: 4,
            seed: 0x00e1_1c17,
        }
    }
}

/// How a tool answered its first call with every capability declared.
#[derive(Debug, Clone, PartialEq)]
pub enum FirstReply {
    /// `input_required`.
    InputRequired {
        /// The result object.
        result: Value,
        /// The raw reply body (for duplicate-key checks).
        raw: String,
        /// Modes used by its `elicitation/create` input requests.
        modes: ElicitModes,
        /// Whether a `requestState` came with it.
        has_state: bool,
    },
    /// A complete result at once: the tool does not elicit.
    Complete,
    /// A JSON-RPC error.
    Error(i64),
    /// Anything else (HTTP error, bad body); says what.
    Other(String),
}

/// A tool of the target as discovery saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProfile {
    /// Tool name.
    pub name: String,
    /// Arguments used for its calls (generated from `inputSchema`).
    pub arguments: Map<String, Value>,
    /// Different but equally valid arguments, when the schema allows any.
    pub other_arguments: Option<Map<String, Value>>,
    /// Whether its completion must not repeat (annotations, description or `--single-use`).
    pub single_use: bool,
    /// The first call's reply.
    pub first: FirstReply,
}

impl ToolProfile {
    /// True when the first call asked for input.
    pub fn elicits(&self) -> bool {
        matches!(self.first, FirstReply::InputRequired { .. })
    }

    /// Modes the first round used (none when it did not elicit).
    pub fn modes(&self) -> ElicitModes {
        match &self.first {
            FirstReply::InputRequired { modes, .. } => *modes,
            _ => ElicitModes::default(),
        }
    }

    /// The call with its usual arguments.
    pub fn call(&self) -> ToolCall {
        ToolCall {
            name: self.name.clone(),
            arguments: self.arguments.clone(),
        }
    }
}

/// The server under test, as discovery found it.
#[derive(Debug)]
pub struct Target {
    /// Settings.
    pub settings: Settings,
    /// Shared HTTP client.
    pub http: reqwest::Client,
    /// Generation being checked.
    pub generation: Generation,
    /// Tools, in `tools/list` order (only those selected by `--tool`).
    pub tools: Vec<ToolProfile>,
    /// `server/discover` result (2026-07-28), if it answered.
    pub discover: Option<Value>,
    /// Whether the server refused a request without credentials (it
    /// authenticates, so principals mean something).
    pub authenticates: bool,
    ids: AtomicI64,
}

impl Target {
    /// A target with no tools discovered yet.
    pub fn new(settings: Settings, http: reqwest::Client, generation: Generation) -> Self {
        Target {
            settings,
            http,
            generation,
            tools: Vec::new(),
            discover: None,
            authenticates: false,
            ids: AtomicI64::new(1),
        }
    }

    /// A fresh JSON-RPC id (unique over the run).
    pub fn next_id(&self) -> i64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// The client-library view of the endpoint.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            mcp_url: self.settings.mcp_url.clone(),
            primary_token: self.settings.principal.clone(),
            other_token: Some(self.settings.other_principal.clone()),
        }
    }

    /// Eliciting tools whose first round is form mode only.
    pub fn form_tools(&self) -> impl Iterator<Item = &ToolProfile> {
        self.tools
            .iter()
            .filter(|t| t.elicits() && t.modes().form && !t.modes().url)
    }

    /// The first form-mode tool whose first round carried a `requestState`.
    pub fn stateful_form_tool(&self) -> Option<&ToolProfile> {
        self.form_tools().find(|t| {
            matches!(
                t.first,
                FirstReply::InputRequired {
                    has_state: true,
                    ..
                }
            )
        })
    }

    /// Every tool that elicits, cloned so a check can hold them across awaits.
    pub fn eliciting_tools(&self) -> Vec<ToolProfile> {
        self.tools.iter().filter(|t| t.elicits()).cloned().collect()
    }

    /// Eliciting tools whose first round uses URL mode.
    pub fn url_tools(&self) -> impl Iterator<Item = &ToolProfile> {
        self.tools.iter().filter(|t| t.elicits() && t.modes().url)
    }
}

/// A check's handle on the target: sends requests and records evidence.
/// Clones share the evidence, so a timed-out check still shows what it sent.
#[derive(Debug, Clone)]
pub struct Probe {
    target: Arc<Target>,
    evidence: Arc<Mutex<Vec<Exchange>>>,
}

/// Full capabilities: form and URL.
pub fn all_modes() -> ClientCapabilities {
    ClientCapabilities::with_modes(true, true)
}

impl Probe {
    /// A probe with empty evidence.
    pub fn new(target: Arc<Target>) -> Self {
        Probe {
            target,
            evidence: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.target.settings
    }

    /// Adds an exchange to the evidence.
    pub fn record(&self, e: Exchange) {
        if let Ok(mut v) = self.evidence.lock() {
            v.push(e);
        }
    }

    /// The evidence recorded so far.
    pub fn evidence(&self) -> Vec<Exchange> {
        self.evidence.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Records a request whose reply has not come yet; returns its slot.
    fn pending(&self, label: &str, request: String) -> usize {
        match self.evidence.lock() {
            Ok(mut v) => {
                v.push(Exchange {
                    label: label.to_owned(),
                    request,
                    response: "no reply (still pending when the check ended)".into(),
                });
                v.len() - 1
            }
            Err(_) => usize::MAX,
        }
    }

    fn fill(&self, slot: usize, e: Exchange) {
        if let Ok(mut v) = self.evidence.lock()
            && let Some(x) = v.get_mut(slot)
        {
            *x = e;
        }
    }

    /// Sends a raw request (bounded by the check timeout) and records it.
    pub async fn send(&self, req: RawRequest) -> Result<RawReply, RawError> {
        let slot = self.pending(&req.label, req.evidence());
        let (ex, out) = raw::send(&self.target.http, &req, self.settings().timeout).await;
        self.fill(slot, ex);
        out
    }

    /// A correct 2026-07-28 request for `method` with `params` plus `_meta`
    /// for `caps`, as the primary principal.
    pub fn modern_request(
        &self,
        label: impl Into<String>,
        method: &str,
        params: Value,
        caps: &ClientCapabilities,
    ) -> RawRequest {
        raw::modern_post(
            label,
            &self.settings().mcp_url,
            self.target.next_id(),
            method,
            Some(raw::with_meta(params, caps)),
        )
        .token(Some(&self.settings().principal))
    }

    /// Sends [`Probe::modern_request`].
    pub async fn modern(
        &self,
        label: impl Into<String>,
        method: &str,
        params: Value,
        caps: &ClientCapabilities,
    ) -> Result<RawReply, RawError> {
        self.send(self.modern_request(label, method, params, caps))
            .await
    }

    /// A `tools/call` for `tool` with optional answers and state.
    pub fn call_request(
        &self,
        label: impl Into<String>,
        tool: &ToolProfile,
        caps: &ClientCapabilities,
        responses: Option<Value>,
        state: Option<&str>,
    ) -> RawRequest {
        let mut p = json!({"name": tool.name, "arguments": tool.arguments});
        if let Some(r) = responses {
            p["inputResponses"] = r;
        }
        if let Some(s) = state {
            p["requestState"] = Value::from(s);
        }
        self.modern_request(label, "tools/call", p, caps)
    }

    /// Runs the client's MRTR state machine for `call` under `cfg`, sending
    /// every leg through the check timeout and recording it.
    pub async fn flow(&self, call: ToolCall, cfg: FlowConfig) -> RoundTrip {
        self.flow_with_bodies(call, cfg).await.0
    }

    /// [`Probe::flow`], also returning the raw body of every MCP reply in
    /// order (unmasked, for validators; never rendered).
    pub async fn flow_with_bodies(
        &self,
        call: ToolCall,
        cfg: FlowConfig,
    ) -> (RoundTrip, Vec<bytes::Bytes>) {
        let mut bodies = Vec::new();
        let endpoint = self.target.endpoint();
        let started = Instant::now();
        let mut flow = ModernFlow::new(call, cfg);
        let mut out = flow.start();
        loop {
            let pending = flow_exchange(&endpoint, &out, Err(""));
            let slot = self.pending(&pending.label, pending.request);
            let step =
                match exchange(&self.target.http, &endpoint, &out, self.settings().timeout).await {
                    Ok(reply) => {
                        self.fill(slot, flow_exchange(&endpoint, &out, Ok(&reply)));
                        if out.target == crate::client::modern::Target::Mcp {
                            bodies.push(reply.body.clone());
                        }
                        flow.on_reply(reply)
                    }
                    Err((failure, elapsed)) => {
                        let why = format!("{failure:?} after {elapsed:?}");
                        self.fill(slot, flow_exchange(&endpoint, &out, Err(&why)));
                        flow.on_failure(failure, elapsed)
                    }
                };
            match step {
                Step::Send(next) => out = next,
                Step::Done(mut rt) => {
                    rt.total = started.elapsed();
                    return (rt, bodies);
                }
            }
        }
    }
}

fn flow_exchange(
    endpoint: &Endpoint,
    out: &Outgoing,
    reply: Result<&crate::client::modern::HttpReply, &str>,
) -> Exchange {
    let url = endpoint
        .resolve(&out.target)
        .map(|u| u.to_string())
        .unwrap_or_else(|e| e);
    let mut req = RawRequest::new(
        out.leg.clone(),
        match out.method {
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Get => reqwest::Method::GET,
        },
        url,
    )
    .token(Some("x"))
    .body(out.body.clone());
    req.headers = out.headers.clone();
    let response = match reply {
        Ok(r) => RawReply {
            status: r.status,
            headers: r
                .content_type
                .iter()
                .map(|c| ("content-type".to_owned(), c.clone()))
                .collect(),
            body: r.body.clone(),
            elapsed: r.total,
        }
        .evidence(),
        Err(e) => e.to_owned(),
    };
    Exchange {
        label: out.leg.clone(),
        request: req.evidence(),
        response,
    }
}
