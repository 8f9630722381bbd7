//! What a check body works with: the [`Target`] (settings, HTTP client and
//! what discovery learned about the server's tools) and a [`Probe`] that
//! sends requests through the shared raw helper or the client's MRTR state
//! machine while recording every exchange as evidence.

use super::model::Exchange;
use crate::client::drive::drive;
use crate::client::modern::{FlowConfig, ModernFlow, ToolCall};
use crate::client::outcome::RoundTrip;
use crate::client::raw::{self, RawError, RawReply, RawRequest};
use crate::discover::wire::WireLegs;
use crate::discover::{self, AuthSeen, TargetSettings, View, Wire, WireCore};
use crate::protocol::{ClientCapabilities, Generation};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How `check` was asked to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The endpoint, principals, tools, per-check timeout (each request
    /// inside a check is bounded by it too) and seed.
    pub target: TargetSettings,
    /// The user named both principals (`--principal` / `--other-principal`):
    /// cross-principal probes run even where discovery cannot tell whether
    /// tokens matter.
    pub principals_given: bool,
    /// Overall deadline for the whole run.
    pub deadline: Duration,
    /// How long to wait before replaying a state in the expiry check
    /// (`None`: past the lifetime the state carries or the one stated).
    pub wait_expiry: Option<Duration>,
    /// The state lifetime the server documents (`--state-lifetime`): what
    /// the expiry check judges against where a state does not show its
    /// expiry.
    pub state_lifetime: Option<Duration>,
    /// A read-only tool that reports the server's state (read before and
    /// after a decline to see that nothing happened); default: the first
    /// tool annotated `readOnlyHint` that does not elicit.
    pub state_tool: Option<String>,
    /// Checks run at the same time.
    pub concurrency: usize,
    /// A second instance of the same deployment (`--other-instance`): the
    /// cross-instance check retries the target's states there.
    pub other_instance: Option<String>,
    /// Show a progress line on stderr while checks run.
    pub progress: bool,
    /// The server speaks stdio (behind the loopback bridge): HTTP rules do
    /// not apply, and its log feeds the stdio checks.
    pub stdio: Option<crate::stdio::Info>,
}

impl Settings {
    /// Defaults for `mcp_url`: demo principals `alice` / `bob`, 10 s per
    /// check, 120 s overall, 4 checks at a time.
    pub fn new(mcp_url: impl Into<String>) -> Self {
        Settings {
            target: TargetSettings::new(mcp_url, Duration::from_secs(10), discover::Settings::SEED),
            principals_given: false,
            deadline: Duration::from_secs(120),
            wait_expiry: None,
            state_lifetime: None,
            state_tool: None,
            concurrency: 4,
            other_instance: None,
            progress: false,
            stdio: None,
        }
    }

    /// The discovery settings these imply (the state tool is discovered
    /// too when tools are named).
    pub fn discovery(&self, generation: Option<Generation>) -> discover::Settings {
        let mut d = self.target.discovery(generation);
        if let Some(t) = &self.state_tool
            && !d.tools.is_empty()
            && !d.tools.contains(t)
        {
            d.tools.push(t.clone());
        }
        d
    }
}

pub use crate::discover::{FirstReply, ToolProfile};

/// The server under test, as discovery found it.
#[derive(Debug)]
pub struct Target {
    /// Settings.
    pub settings: Settings,
    /// Generation being checked.
    pub generation: Generation,
    /// Tools, in `tools/list` order (only those selected by `--tool`).
    pub tools: Vec<ToolProfile>,
    /// `server/discover` result (2026-07-28) or `initialize` result
    /// (2025-11-25), if it answered.
    pub discover: Option<Value>,
    /// What the server does with credentials.
    pub auth: AuthSeen,
    /// Each sign that the server knows its users ([`super::identity`]).
    pub identity: Vec<String>,
    /// Why the server listed no tool, when it gave no list (see
    /// [`View::no_tools`]).
    pub no_tools: Option<String>,
    /// Every generation this run checks (a stdio server's processes are
    /// judged per generation when there are two).
    pub generations: Vec<Generation>,
    /// Findings about a tool that make its dependent checks moot (e.g. it
    /// asks a client for sampling it did not declare): reported once, by the
    /// check named here, and pointed to by the others.
    pub root_causes: Vec<RootCause>,
    /// The shared HTTP client, endpoint and principal, and the run's ids.
    wire: WireCore,
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
        let wire = WireCore::new(
            http,
            &settings.target.mcp_url,
            &settings.target.principal,
            settings.target.timeout,
            settings.target.seed,
        )
        .over_stdio(settings.stdio.is_some());
        Target {
            settings,
            generation,
            tools: Vec::new(),
            discover: None,
            auth: AuthSeen::default(),
            identity: Vec::new(),
            no_tools: None,
            generations: vec![generation],
            root_causes: Vec::new(),
            wire,
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
        t.no_tools = view.no_tools.clone();
        t
    }

    /// Whether cross-principal probes mean something: the server shows a
    /// sign that it knows its users ([`Target::identity`]), or the user named
    /// two principals.
    pub fn principals_matter(&self) -> bool {
        !self.identity.is_empty() || self.settings.principals_given
    }

    /// A request this server answers with a result, for checks that need
    /// some valid request to misframe or time: `tools/list` while the
    /// server lists tools, else the list of prompts or resources it
    /// declares (methods of both generations), else the one every server
    /// of the generation must answer (`server/discover`, `ping`).
    pub fn plain_method(&self) -> &'static str {
        if self.no_tools.is_none() {
            return "tools/list";
        }
        let declares = |c: &str| {
            self.discover
                .as_ref()
                .and_then(|d| d.get("capabilities"))
                .is_some_and(|caps| caps.get(c).is_some())
        };
        match self.generation {
            _ if declares("prompts") => "prompts/list",
            _ if declares("resources") => "resources/list",
            Generation::Modern => "server/discover",
            Generation::Legacy => "ping",
        }
    }

    /// Why checks on `tool` would only repeat a finding reported elsewhere.
    pub fn root_cause(&self, tool: &str) -> Option<&RootCause> {
        self.root_causes.iter().find(|r| r.tool == tool)
    }

    /// A fresh JSON-RPC id (unique over the run).
    pub fn next_id(&self) -> i64 {
        self.wire.next_id()
    }

    /// The shared HTTP client.
    pub fn http(&self) -> &reqwest::Client {
        &self.wire.http
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
        if let Some(none) = &self.no_tools {
            return super::model::Verdict::skip(format!("{why}: {none}"));
        }
        if self.tools.is_empty() {
            return super::model::Verdict::skip(format!("{why}: no tool is listed (or selected)"));
        }
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
            .find_map(|u| crate::client::page::foreign_origin(&self.settings.target.mcp_url, u))
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
            limit: Some(limit.min(self.target.settings.target.timeout)),
            ..self.clone()
        }
    }

    /// The bound on each request: the check timeout, or a tighter one.
    pub fn request_timeout(&self) -> Duration {
        self.limit.unwrap_or(self.target.settings.target.timeout)
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.target.settings
    }

    /// Whether the HTTP status of a reply is the server's: not over stdio,
    /// where the bridge answers every reply `200` and only the JSON-RPC
    /// message is the server's.
    pub fn status_is_servers(&self) -> bool {
        !self.target.wire.stdio
    }

    /// How a finding names the status `code` of a reply on this target
    /// (never the stdio bridge's status as the server's).
    pub fn reply_status(&self, code: u16) -> crate::client::ReplyStatus {
        crate::client::ReplyStatus::new(code, !self.status_is_servers())
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
                    status: None,
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
        let (ex, out) = raw::send(self.target.http(), &req, self.request_timeout()).await;
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
        discover::modern::request(self, label, method, params, caps)
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
        discover::modern::call_request(
            self,
            label,
            &tool.name,
            &tool.arguments,
            caps,
            responses,
            state,
        )
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
        mut cfg: FlowConfig,
    ) -> (RoundTrip, Vec<bytes::Bytes>) {
        // Over stdio the flow words the bridge's statuses as the pipe saw
        // them, as every check does.
        cfg.stdio = self.core().stdio;
        let other = &self.settings().target.other_principal;
        let mut legs = WireLegs::new(self, Some(other));
        let Ok(rt) = drive(ModernFlow::new(call, cfg), &mut legs).await;
        (rt, legs.bodies)
    }
}

impl Wire for Probe {
    fn core(&self) -> &WireCore {
        &self.target.wire
    }
    /// The probe's bound, which may be tighter than the check timeout.
    fn timeout(&self) -> Duration {
        self.request_timeout()
    }
    /// What discovery saw of `tool` on this target.
    fn pushes_on_get(&self, tool: &str) -> bool {
        self.target
            .tools
            .iter()
            .any(|t| t.name == tool && t.elicits_on_get)
    }
    fn record(&self, exchange: Exchange) {
        Probe::record(self, exchange);
    }
    fn send(&self, req: RawRequest) -> futures::future::BoxFuture<'_, Result<RawReply, RawError>> {
        Box::pin(Probe::send(self, req))
    }
}
