//! What a check body works with: the [`Target`] (settings, HTTP client and
//! what discovery learned about the server's tools) and a [`Probe`] that
//! sends requests through the shared raw helper or the client's MRTR state
//! machine while recording every exchange as evidence.

use super::model::Exchange;
use crate::client::http::{Endpoint, exchange};
use crate::client::modern::{FlowConfig, HttpMethod, ModernFlow, Outgoing, Step, ToolCall};
use crate::client::outcome::RoundTrip;
use crate::client::raw::{self, RawError, RawReply, RawRequest};
use crate::discover::{self, AuthSeen, View, Wire};
use crate::protocol::{ClientCapabilities, Generation};
use serde_json::{Value, json};
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
    /// The user named both principals (`--principal` / `--other-principal`):
    /// cross-principal probes run even where discovery cannot tell whether
    /// tokens matter.
    pub principals_given: bool,
    /// Per-check timeout (each request inside a check is bounded by it too).
    pub timeout: Duration,
    /// Overall deadline for the whole run.
    pub deadline: Duration,
    /// How long to wait before replaying a state in the expiry check
    /// (`None`: the check is skipped).
    pub wait_expiry: Option<Duration>,
    /// Tools to check (empty: every tool `tools/list` names).
    pub tools: Vec<String>,
    /// Tools never called.
    pub skip_tools: Vec<String>,
    /// Tools whose completion must happen at most once (besides those the
    /// server marks via annotations or its description).
    pub single_use: Vec<String>,
    /// A read-only tool that reports the server's state (read before and
    /// after a decline to see that nothing happened); default: the first
    /// tool annotated `readOnlyHint` that does not elicit.
    pub state_tool: Option<String>,
    /// Checks run at the same time.
    pub concurrency: usize,
    /// Seed for generated answers.
    pub seed: u64,
    /// A second instance of the same deployment (`--other-instance`): the
    /// cross-instance check retries the target's states there.
    pub other_instance: Option<String>,
}

impl Settings {
    /// Defaults for `mcp_url`: demo principals `alice` / `bob`, 10 s per
    /// check, 120 s overall, 4 checks at a time.
    pub fn new(mcp_url: impl Into<String>) -> Self {
        Settings {
            mcp_url: mcp_url.into(),
            principal: "alice".into(),
            other_principal: "bob".into(),
            principals_given: false,
            timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(120),
            wait_expiry: None,
            tools: Vec::new(),
            skip_tools: Vec::new(),
            single_use: Vec::new(),
            state_tool: None,
            concurrency: 4,
            seed: 0x00e1_1c17,
            other_instance: None,
        }
    }

    /// The discovery settings these imply.
    pub fn discovery(&self, generation: Option<Generation>) -> discover::Settings {
        let mut tools = self.tools.clone();
        if let Some(t) = &self.state_tool
            && !tools.is_empty()
            && !tools.contains(t)
        {
            tools.push(t.clone());
        }
        discover::Settings {
            mcp_url: self.mcp_url.clone(),
            principal: self.principal.clone(),
            timeout: self.timeout,
            tools,
            skip_tools: self.skip_tools.clone(),
            single_use: self.single_use.clone(),
            generation,
            seed: self.seed,
            ..discover::Settings::new(self.mcp_url.clone())
        }
    }
}

pub use crate::discover::{FirstReply, ToolProfile};

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
    /// `server/discover` result (2026-07-28) or `initialize` result
    /// (2025-11-25), if it answered.
    pub discover: Option<Value>,
    /// What the server does with credentials.
    pub auth: AuthSeen,
    /// Findings about a tool that make its dependent checks moot (e.g. it
    /// asks a client for sampling it did not declare): reported once, by the
    /// check named here, and pointed to by the others.
    pub root_causes: Vec<RootCause>,
    ids: AtomicI64,
}

/// A tool whose own defect other checks on it would only repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootCause {
    /// The tool.
    pub tool: String,
    /// The check that reports it.
    pub check: &'static str,
    /// What is wrong, in one sentence.
    pub what: String,
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
            auth: AuthSeen::default(),
            root_causes: Vec::new(),
            ids: AtomicI64::new(1),
        }
    }

    /// The target one generation of a discovery describes.
    pub fn from_view(
        settings: Settings,
        http: reqwest::Client,
        view: &View,
        auth: AuthSeen,
    ) -> Self {
        let mut t = Target::new(settings, http, view.generation);
        t.tools = view.tools.clone();
        t.discover = view.server.clone();
        t.auth = auth;
        t
    }

    /// Whether cross-principal probes mean something: the server
    /// authenticates or validates tokens, or the user named two principals.
    pub fn principals_matter(&self) -> bool {
        self.auth.principals_matter() || self.settings.principals_given
    }

    /// Why checks on `tool` would only repeat a finding reported elsewhere.
    pub fn root_cause(&self, tool: &str) -> Option<&RootCause> {
        self.root_causes.iter().find(|r| r.tool == tool)
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
        self.tools.iter().filter(|t| {
            t.elicits() && t.modes().form && !t.modes().url && self.root_cause(&t.name).is_none()
        })
    }

    /// Every tool that issues a `requestState` in some round (form,
    /// multi-round and URL tools alike): the subjects of state probes.
    pub fn state_tools(&self) -> Vec<ToolProfile> {
        self.tools
            .iter()
            .filter(|t| t.issues_state() && self.root_cause(&t.name).is_none())
            .cloned()
            .collect()
    }

    /// Every tool that elicits, cloned so a check can hold them across
    /// awaits (tools with a root cause reported elsewhere are left out).
    pub fn eliciting_tools(&self) -> Vec<ToolProfile> {
        self.tools
            .iter()
            .filter(|t| t.elicits() && self.root_cause(&t.name).is_none())
            .cloned()
            .collect()
    }

    /// Eliciting tools whose flow pages (if any) are on the target's own
    /// origin: the ones a check may complete as a browser would.
    pub fn page_safe_tools(&self) -> Vec<ToolProfile> {
        self.eliciting_tools()
            .into_iter()
            .filter(|t| self.off_origin(t).is_none())
            .collect()
    }

    /// One line per eliciting tool whose flow page is on another origin
    /// (never fetched): `"name (flow page on another origin: not followed: ORIGIN)"`.
    pub fn off_origin_notes(&self) -> Vec<String> {
        self.eliciting_tools()
            .iter()
            .filter_map(|t| {
                self.off_origin(t).map(|o| {
                    format!(
                        "{}: flow page on another origin: not followed ({o})",
                        t.name
                    )
                })
            })
            .collect()
    }

    /// A skip that says why there is nothing to probe, pointing to the
    /// root-cause findings that took tools out.
    pub fn no_subject(&self, why: &str) -> super::model::Verdict {
        if self.root_causes.is_empty() {
            return super::model::Verdict::skip(why);
        }
        let causes: Vec<String> = self
            .root_causes
            .iter()
            .map(|c| format!("{} (see {})", c.tool, c.check))
            .collect();
        super::model::Verdict::skip(format!(
            "{why}; left out, reported once elsewhere: {}",
            causes.join(", ")
        ))
    }

    /// The flow page of `t` on another origin than the MCP endpoint, if
    /// any of its rounds named one: such pages are never fetched.
    pub fn off_origin(&self, t: &ToolProfile) -> Option<String> {
        if let Some(o) = &t.off_origin {
            return Some(o.clone());
        }
        t.rounds
            .iter()
            .flat_map(|r| r.urls.iter())
            .find_map(
                |u| match discover::page::same_origin(&self.settings.mcp_url, u) {
                    Err(discover::page::PageError::OtherOrigin(o)) => Some(o),
                    _ => None,
                },
            )
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
    /// A bound tighter than the check timeout (see [`Probe::bounded`]).
    limit: Option<Duration>,
}

pub use crate::discover::all_modes;

impl Probe {
    /// A probe with empty evidence.
    pub fn new(target: Arc<Target>) -> Self {
        Probe {
            target,
            evidence: Arc::new(Mutex::new(Vec::new())),
            limit: None,
        }
    }

    /// The same probe (same evidence) with every request bounded by
    /// `limit` instead of the check timeout: a check that gives a step its
    /// own deadline (a hang after a decline is a finding, not a timeout).
    pub fn bounded(&self, limit: Duration) -> Probe {
        Probe {
            limit: Some(limit.min(self.target.settings.timeout)),
            ..self.clone()
        }
    }

    /// The bound on each request: the check timeout, or a tighter one.
    pub fn request_timeout(&self) -> Duration {
        self.limit.unwrap_or(self.target.settings.timeout)
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
        let (ex, out) = raw::send(&self.target.http, &req, self.request_timeout()).await;
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
                match exchange(&self.target.http, &endpoint, &out, self.request_timeout()).await {
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

impl Wire for Probe {
    fn http(&self) -> &reqwest::Client {
        &self.target.http
    }
    fn mcp_url(&self) -> &str {
        &self.target.settings.mcp_url
    }
    fn token(&self) -> &str {
        &self.target.settings.principal
    }
    fn timeout(&self) -> Duration {
        self.request_timeout()
    }
    fn seed(&self) -> u64 {
        self.target.settings.seed
    }
    fn next_id(&self) -> i64 {
        self.target.next_id()
    }
    fn record(&self, exchange: Exchange) {
        Probe::record(self, exchange);
    }
    fn send(&self, req: RawRequest) -> futures::future::BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(Probe::send(self, req))
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
