//! An in-process, coverage-guided fuzz harness for any Rust MCP server that
//! is a `tower::Service<http::Request<…>>` (an axum `Router`, rmcp's
//! `StreamableHttpService`): no sockets, the server's own code under the
//! fuzzer's coverage.
//!
//! A [`Session`] (built by `arbitrary` from the fuzzer's bytes) is a short
//! sequence of [`Step`]s over 2026-07-28 flows: first calls (walked to the
//! round that issues a `requestState`, as discovery walks them), valid
//! answers, retries with a mutated state, answers, headers or body
//! ([`super::mutation`]), duplicate retries, retries with an older state of
//! the same request, cross-principal and cross-request retries, and
//! concurrent duplicates. Every reply is judged by the selected
//! [`Oracles`] (the harness's rows of [`crate::oracle::table`]); the first
//! that fires is a [`Violation`].
//!
//! Setup (once per [`Harness`]): `tools/list` through the service, then per
//! tool its arguments ([`crate::discover::args`]) and whether it is single
//! use ([`crate::discover::is_single_use`] or [`SingleUse`]). Requests go
//! through discovery's [`crate::discover::Wire`] (see [`wire::ServiceWire`]),
//! so the builders, walks and URL-page completion are the ones `check` and
//! `load` use.
//!
//! Fuzzing your own server (a cargo-fuzz target; `make` builds a fresh
//! service):
//!
//! ```ignore
//! #![no_main]
//! use std::sync::{Mutex, OnceLock};
//! use elicitkit::fuzz::harness::{Config, Harness, Oracle, Oracles};
//!
//! static H: OnceLock<Mutex<Harness<axum::Router>>> = OnceLock::new();
//! libfuzzer_sys::fuzz_target!(|data: &[u8]| {
//!     let h = H.get_or_init(|| {
//!         let cfg = Config::new("http://127.0.0.1:3000/mcp")
//!             .oracles(Oracles::all().without(Oracle::ForeignPrincipalAccepted));
//!         Mutex::new(Harness::new(my_server::router, cfg).expect("tools/list answers"))
//!     });
//!     h.lock().unwrap().run_bytes(data).unwrap_or_else(|v| panic!("{v}"));
//! });
//! ```

pub mod targets;
pub mod wire;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use arbitrary::Arbitrary;
use serde_json::{Map, Value};

use crate::client::content::answers_for;
use crate::client::raw::{Exchange, RawError, RawReply, RawRequest, Rpc};
use crate::client::rpc::final_success;
use crate::discover::modern::{WalkEnd, call_request, list_tools, walk};
use crate::discover::wire::WireError;
use crate::discover::{Wire, all_modes, args, is_single_use, page};
use crate::findings::Severity;
use crate::oracle::transport;
pub use crate::oracle::{Oracle, Oracles};
use crate::protocol::mrtr::{InputRequiredResult, REQUEST_STATE, asks_for_input};
use crate::protocol::{Generation, validate};

use super::mutation::{AnswerMutation, BodyMutation, HeaderMutation, StateMutation};
use wire::{FRAMING, Logged, MALFORMED, McpService, ServiceWire};

/// Why a [`Harness`] could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The runtime the sessions run on.
    #[error("tokio runtime: {0}")]
    Runtime(std::io::Error),
    /// `tools/list` through the service.
    #[error("tools/list through the service: {0}")]
    List(WireError),
    /// Nothing listed is fuzzed (how many tools were listed).
    #[error("no tool to fuzz: tools/list gave {0} tools, none selected")]
    NoTool(usize),
}

/// Which tools' requests must complete at most once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SingleUse {
    /// Those the server marks (`destructiveHint` without `idempotentHint`,
    /// "exactly once" in the description), plus these names.
    #[default]
    Declared,
    /// Those, plus these names.
    Named(Vec<String>),
    /// Every tool (a server that completes every request once).
    All,
}

/// How a [`Harness`] runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The MCP URL the service believes it serves (path, `Host` and URL-flow
    /// origin come from it; nothing listens there).
    pub mcp_url: String,
    /// Bearer token of the principal the flows run as.
    pub principal: String,
    /// Bearer token of the other principal (cross-principal retries).
    pub other_principal: String,
    /// Bound on every request.
    pub timeout: Duration,
    /// What is checked.
    pub oracles: Oracles,
    /// Which tools are single use.
    pub single_use: SingleUse,
    /// Only these tools (empty: every tool listed).
    pub tools: Vec<String>,
    /// Never these tools.
    pub skip_tools: Vec<String>,
    /// Most rounds walked to find a state.
    pub max_rounds: usize,
    /// Seed of generated answers.
    pub seed: u64,
    /// Build a fresh service every this many sessions (0: never), so the
    /// server's state stays bounded over a long run.
    pub fresh_every: u64,
}

impl Config {
    /// Defaults: principals `alice` and `bob`, 2 s per request, every
    /// oracle the harness judges, declared single use, 3 rounds, a fresh service every 1000
    /// sessions.
    pub fn new(mcp_url: impl Into<String>) -> Self {
        Config {
            mcp_url: mcp_url.into(),
            principal: "alice".into(),
            other_principal: "bob".into(),
            timeout: Duration::from_secs(2),
            oracles: Oracles::all(),
            single_use: SingleUse::Declared,
            tools: Vec::new(),
            skip_tools: Vec::new(),
            max_rounds: 3,
            seed: crate::discover::Settings::SEED,
            fresh_every: 1000,
        }
    }

    /// With these oracles (the properties the service must keep).
    pub fn oracles(mut self, o: Oracles) -> Self {
        self.oracles = o;
        self
    }

    /// With this single-use rule.
    pub fn single_use(mut self, s: SingleUse) -> Self {
        self.single_use = s;
        self
    }
}

/// One step of a session. `flow` picks a started flow (modulo their number;
/// no flow yet: the step is skipped); `tool` a listed tool (modulo).
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Step {
    /// A first call, walked to the round that carries a `requestState`.
    Start {
        /// Tool index.
        tool: u8,
    },
    /// The valid retry of the flow's current round.
    Answer {
        /// Flow index.
        flow: u8,
    },
    /// The flow's current retry, mutated.
    Retry {
        /// Flow index.
        flow: u8,
        /// Change to `requestState`.
        state: Option<StateMutation>,
        /// Change to `inputResponses`.
        answers: Option<AnswerMutation>,
        /// Changes to headers (at most 3 used).
        headers: Vec<HeaderMutation>,
        /// Change to the JSON text.
        body: Option<BodyMutation>,
    },
    /// The flow's last valid retry sent again (a new id).
    Duplicate {
        /// Flow index.
        flow: u8,
    },
    /// The flow's answers with an older state of the same request.
    OlderState {
        /// Flow index.
        flow: u8,
        /// Which state (modulo the number issued).
        which: u8,
    },
    /// The flow's current retry sent by the other principal.
    CrossPrincipal {
        /// Flow index.
        flow: u8,
    },
    /// The flow's state and answers on another request (another tool, or
    /// the same tool with other arguments).
    CrossRequest {
        /// Flow index.
        flow: u8,
        /// Tool index of the other request.
        tool: u8,
    },
    /// `2 + n % 7` copies of the flow's current retry at once.
    Concurrent {
        /// Flow index.
        flow: u8,
        /// Copies, modulo.
        n: u8,
    },
}

/// At most this many steps of a session run.
pub const MAX_STEPS: usize = 12;

/// A fuzz input: steps over flows.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct Session {
    /// The steps (at most [`MAX_STEPS`] run).
    pub steps: Vec<Step>,
}

impl Session {
    /// Decodes a session from fuzz bytes (every byte string decodes).
    pub fn from_bytes(data: &[u8]) -> Session {
        super::shapes::decode::<Session>(data).unwrap_or(Session { steps: Vec::new() })
    }
}

/// A property the server broke: the first oracle that fired.
#[derive(Debug, Clone)]
pub struct Violation {
    /// Which.
    pub oracle: Oracle,
    /// Index of the step.
    pub step: usize,
    /// What happened.
    pub what: String,
    /// The exchanges of the session up to the violation.
    pub exchanges: Vec<Exchange>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} at step {}: {}", self.oracle, self.step, self.what)?;
        let skip = self.exchanges.len().saturating_sub(6);
        for e in &self.exchanges[skip..] {
            writeln!(
                f,
                "--- {}\n{}\n-> {}",
                e.label,
                crate::client::mask::shorten(&e.request, 600),
                crate::client::mask::shorten(&e.response, 600)
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Violation {}

/// What a session did (for statistics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ran {
    /// Requests sent.
    pub requests: usize,
    /// Flows that reached a state.
    pub flows: usize,
}

#[derive(Debug, Clone)]
struct ToolInfo {
    name: String,
    args: Map<String, Value>,
    other_args: Option<Map<String, Value>>,
    single_use: bool,
    /// Whether its first call reached a state (only such tools need one,
    /// so only they can be the "other request" of a foreign state).
    needs_state: bool,
}

#[derive(Debug, Clone)]
struct Flow {
    tool: usize,
    args: Map<String, Value>,
    /// The state of the current round (`None`: the flow ended).
    state: Option<String>,
    /// Valid answers to the current round.
    answers: Map<String, Value>,
    /// Every state issued for this request.
    states: Vec<String>,
    /// The last valid retry (answers, state).
    last: Option<(Map<String, Value>, String)>,
    completions: usize,
}

/// The result of a reply that is a final, successful one ([`Rpc::completes`]).
fn is_complete(reply: &Result<RawReply, RawError>) -> Option<Value> {
    match reply.as_ref().ok()?.rpc() {
        Rpc::Result(v) if final_success(&v) => Some(v),
        _ => None,
    }
}

/// The `id` of a JSON-RPC request body (`null` kept as a value), read
/// without building the rest of the body as values; `None`: no id, not an
/// object, or not JSON.
fn sent_id(body: &[u8]) -> Option<Value> {
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        <Value as serde::Deserialize>::deserialize(d).map(Some)
    }
    #[derive(serde::Deserialize)]
    struct IdOnly {
        #[serde(default, deserialize_with = "present")]
        id: Option<Value>,
    }
    let object = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    match serde_json::from_slice::<IdOnly>(body) {
        Ok(v) if object => v.id,
        // A duplicate `id` key (the struct refuses it; a full parse keeps
        // the last), or no object at all.
        _ => serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("id").cloned()),
    }
}

/// Drives a service with sessions and judges every reply by its oracles.
pub struct Harness<S> {
    make: Arc<dyn Fn() -> S + Send + Sync>,
    cfg: Config,
    rt: tokio::runtime::Runtime,
    wire: Arc<ServiceWire>,
    tools: Vec<ToolInfo>,
    sessions: u64,
}

impl<S: McpService> Harness<S> {
    /// Builds a service with `make`, lists its tools, and prepares each.
    /// Fails when `tools/list` does not answer or lists no usable tool.
    pub fn new(
        make: impl Fn() -> S + Send + Sync + 'static,
        cfg: Config,
    ) -> Result<Self, HarnessError> {
        // One thread: a session runs the same way every time (concurrent
        // copies interleave at the server's await points, in spawn order),
        // so coverage and findings reproduce, and no request pays for a
        // hand-off between threads. Races that need two cores are `load`'s
        // to find (concurrent retries against a listening server).
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(HarnessError::Runtime)?;
        let make: Arc<dyn Fn() -> S + Send + Sync> = Arc::new(make);
        let wire = Arc::new(Self::wire_for(&cfg, make()));
        let listed = rt
            .block_on(list_tools(&*wire, &all_modes()))
            .map_err(HarnessError::List)?;
        let mut tools = Vec::new();
        for d in &listed {
            let Some(name) = d.get("name").and_then(Value::as_str) else {
                continue;
            };
            if (!cfg.tools.is_empty() && !cfg.tools.iter().any(|t| t == name))
                || cfg.skip_tools.iter().any(|t| t == name)
            {
                continue;
            }
            let schema = d.get("inputSchema").cloned().unwrap_or(Value::Null);
            let a0 = args::arguments(&schema, 0);
            let a1 = args::arguments(&schema, 1);
            let single_use = match &cfg.single_use {
                SingleUse::All => true,
                SingleUse::Declared => is_single_use(&[], d),
                SingleUse::Named(n) => is_single_use(n, d),
            };
            let walked = rt.block_on(walk(&*wire, name, &a0, &all_modes(), cfg.max_rounds, true));
            tools.push(ToolInfo {
                name: name.to_owned(),
                other_args: (a1 != a0).then_some(a1),
                args: a0,
                single_use,
                needs_state: walked.state_round().is_some(),
            });
        }
        if tools.is_empty() {
            return Err(HarnessError::NoTool(listed.len()));
        }
        wire.take_log();
        Ok(Harness {
            make,
            cfg,
            rt,
            wire,
            tools,
            sessions: 0,
        })
    }

    fn wire_for(cfg: &Config, service: S) -> ServiceWire {
        ServiceWire::new(service, &cfg.mcp_url, &cfg.principal, cfg.timeout, cfg.seed)
    }

    /// The tools being fuzzed.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    /// Runs the session decoded from `data`.
    pub fn run_bytes(&mut self, data: &[u8]) -> Result<Ran, Violation> {
        self.run(&Session::from_bytes(data))
    }

    /// Runs one session.
    pub fn run(&mut self, session: &Session) -> Result<Ran, Violation> {
        self.sessions += 1;
        if self.cfg.fresh_every > 0 && self.sessions.is_multiple_of(self.cfg.fresh_every) {
            self.wire = Arc::new(Self::wire_for(&self.cfg, (self.make)()));
        }
        self.wire.take_log();
        let mut run = Run {
            h: self,
            flows: Vec::new(),
            log: Vec::new(),
            ran: Ran::default(),
            step: 0,
        };
        let steps: Vec<Step> = session.steps.iter().take(MAX_STEPS).cloned().collect();
        let result = self.rt.block_on(async {
            for (i, s) in steps.iter().enumerate() {
                run.step = i;
                run.step_once(s).await?;
            }
            Ok::<(), Violation>(())
        });
        result.map(|()| run.ran)
    }
}

/// One session's state.
struct Run<'h, S> {
    h: &'h Harness<S>,
    flows: Vec<Flow>,
    log: Vec<Logged>,
    ran: Ran,
    step: usize,
}

impl<S: McpService> Run<'_, S> {
    fn violation(&self, oracle: Oracle, what: impl Into<String>) -> Violation {
        Violation {
            oracle,
            step: self.step,
            what: what.into(),
            exchanges: self.log.iter().map(Logged::exchange).collect(),
        }
    }

    fn on(&self, i: Oracle) -> bool {
        self.h.cfg.oracles.has(i)
    }

    /// Judges everything sent since the last call against the per-reply
    /// oracles.
    fn judge_new(&mut self) -> Result<(), Violation> {
        let new = self.h.wire.take_log();
        self.ran.requests += new.len();
        let start = self.log.len();
        self.log.extend(new);
        for i in start..self.log.len() {
            let l = &self.log[i];
            if let Some(p) = &l.panic
                && self.on(Oracle::Panic)
            {
                return Err(self.violation(
                    Oracle::Panic,
                    format!("{}: the service panicked: {p}", l.request.label),
                ));
            }
            // A service in process has no connection to reset.
            if let Some((o, what)) = transport::judge(&l.request.label, &l.reply)
                && o != Oracle::ConnectionReset
                && self.on(o)
            {
                return Err(self.violation(o, what));
            }
            if let Ok(r) = &l.reply
                && (l.request.url.ends_with("/mcp") || l.request.url.contains("/mcp?"))
                && let Some(v) = self.judge_rpc(&l.request, r)
            {
                return Err(v);
            }
        }
        Ok(())
    }

    fn judge_rpc(&self, req: &RawRequest, r: &RawReply) -> Option<Violation> {
        let label = &req.label;
        let framing = label.starts_with(FRAMING);
        let malformed = label.starts_with(MALFORMED);
        let which = if malformed {
            Oracle::NotJsonRpcOnMalformed
        } else {
            Oracle::NotJsonRpc
        };
        // The reply is decoded once for every judgement below.
        let decoded = r.decoded();
        if self.on(which) && !framing {
            if let Some(why) = r.missing_rpc(&decoded) {
                let (o, what) = transport::not_json_rpc(which, label, &why);
                return Some(self.violation(o, what));
            }
            let got = decoded.as_ref().ok().and_then(|d| d.response_id());
            let sent_id = sent_id(&req.body);
            let id_ok = match (&sent_id, &got) {
                (_, None) => true,
                (Some(s), Some(g)) => serde_json::to_value(g).ok().as_ref() == Some(s),
                (None, Some(_)) => true,
            };
            if !id_ok && !malformed {
                return Some(self.violation(
                    Oracle::NotJsonRpc,
                    format!("{label}: the reply's id {got:?} is not the request's {sent_id:?}"),
                ));
            }
        }
        if self.on(Oracle::IllFormed) && decoded.is_ok() {
            let opts = validate::Options {
                generation: Some(Generation::Modern),
                schema: None,
            };
            // Each message's own text: an SSE event's data as sent, not the
            // decoded message written out again (which would drop a
            // duplicate key or an extra member before the check saw it).
            let events;
            let texts: Vec<&[u8]> = if r.is_sse() {
                events = crate::protocol::sse::parse_all(&r.body)
                    .map(|(evs, _)| evs)
                    .unwrap_or_default();
                events
                    .iter()
                    .filter(|e| !e.data.trim().is_empty())
                    .map(|e| e.data.as_bytes())
                    .collect()
            } else {
                vec![&r.body[..]]
            };
            for raw in texts {
                if let Ok(rep) = validate::validate_document(raw, &opts)
                    && let Some(f) = rep.findings.iter().find(|f| f.severity == Severity::Must)
                {
                    return Some(self.violation(
                        Oracle::IllFormed,
                        format!(
                            "{label}: the reply breaks a MUST at {:?} ({}): {}",
                            f.pointer, f.rule, f.message
                        ),
                    ));
                }
            }
        }
        None
    }

    fn pick(&self, flow: u8) -> Option<usize> {
        (!self.flows.is_empty()).then(|| usize::from(flow) % self.flows.len())
    }

    fn completed(&mut self, f: usize, times: usize, how: &str) -> Result<(), Violation> {
        self.flows[f].completions += times;
        let n = self.flows[f].completions;
        let tool = &self.h.tools[self.flows[f].tool];
        if tool.single_use && n > 1 && self.on(Oracle::SingleUseTwice) {
            return Err(self.violation(
                Oracle::SingleUseTwice,
                format!(
                    "single-use tool {}: one request completed {n} times (last by {how})",
                    tool.name
                ),
            ));
        }
        Ok(())
    }

    fn request(
        &self,
        label: String,
        f: &Flow,
        answers: Option<Value>,
        state: Option<Value>,
    ) -> RawRequest {
        let tool = &self.h.tools[f.tool].name;
        let text = match &state {
            Some(Value::String(s)) => Some(s.as_str()),
            _ => None,
        };
        let mut req = call_request(
            &*self.h.wire,
            label,
            tool,
            &f.args,
            &all_modes(),
            answers,
            text,
        );
        if let Some(s) = state.filter(|s| !s.is_string()) {
            // `call_request` takes only text states; put any JSON in.
            req = req.with_param(REQUEST_STATE, s);
        }
        req
    }

    async fn send(&mut self, req: RawRequest) -> Result<Result<RawReply, RawError>, Violation> {
        let reply = self.h.wire.send(req).await;
        self.judge_new()?;
        Ok(reply)
    }

    /// Moves a flow on after a reply to one of its valid retries.
    async fn advance(
        &mut self,
        f: usize,
        reply: &Result<RawReply, RawError>,
    ) -> Result<(), Violation> {
        let Ok(r) = reply else { return Ok(()) };
        let Rpc::Result(v) = r.rpc() else {
            return Ok(());
        };
        if !asks_for_input(&v) {
            return Ok(());
        }
        let ir = InputRequiredResult::from_value(&v).unwrap_or_default();
        let answers = answers_for(&ir, self.h.cfg.seed ^ self.ran.requests as u64);
        for req in ir.input_requests.iter().flat_map(|m| m.values()) {
            if req.params.get("mode").and_then(Value::as_str) == Some("url")
                && let Some(u) = req.params.get("url").and_then(Value::as_str)
            {
                let _ = page::complete(&*self.h.wire, u).await;
                self.judge_new()?;
            }
        }
        let flow = &mut self.flows[f];
        if let Some(s) = ir.request_state {
            flow.states.push(s.clone());
            flow.state = Some(s);
        }
        flow.answers = answers;
        Ok(())
    }

    async fn step_once(&mut self, step: &Step) -> Result<(), Violation> {
        match step {
            Step::Start { tool } => self.start(usize::from(*tool) % self.h.tools.len()).await,
            Step::Answer { flow } => {
                let Some(f) = self.pick(*flow) else {
                    return Ok(());
                };
                let Some(state) = self.flows[f].state.clone() else {
                    return Ok(());
                };
                let answers = self.flows[f].answers.clone();
                let req = self.request(
                    format!("step {} answer", self.step),
                    &self.flows[f],
                    Some(Value::Object(answers.clone())),
                    Some(Value::from(state.clone())),
                );
                let reply = self.send(req).await?;
                self.flows[f].last = Some((answers, state));
                if is_complete(&reply).is_some() {
                    self.flows[f].state = None;
                    return self.completed(f, 1, "a valid answer");
                }
                self.advance(f, &reply).await
            }
            Step::Retry {
                flow,
                state,
                answers,
                headers,
                body,
            } => self.retry(*flow, state, answers, headers, body).await,
            Step::Duplicate { flow } => {
                let Some(f) = self.pick(*flow) else {
                    return Ok(());
                };
                let Some((answers, state)) = self.flows[f].last.clone() else {
                    return Ok(());
                };
                let req = self.request(
                    format!("step {} duplicate of the last valid retry", self.step),
                    &self.flows[f],
                    Some(Value::Object(answers)),
                    Some(Value::from(state)),
                );
                let reply = self.send(req).await?;
                if is_complete(&reply).is_some() {
                    return self.completed(f, 1, "a duplicate retry");
                }
                Ok(())
            }
            Step::OlderState { flow, which } => {
                let Some(f) = self.pick(*flow) else {
                    return Ok(());
                };
                let fl = &self.flows[f];
                if fl.states.is_empty() {
                    return Ok(());
                }
                let state = fl.states[usize::from(*which) % fl.states.len()].clone();
                let answers = fl
                    .last
                    .as_ref()
                    .map_or_else(|| fl.answers.clone(), |(a, _)| a.clone());
                let req = self.request(
                    format!(
                        "step {} answers with an older state of the request",
                        self.step
                    ),
                    &self.flows[f],
                    Some(Value::Object(answers)),
                    Some(Value::from(state)),
                );
                let reply = self.send(req).await?;
                if is_complete(&reply).is_some() {
                    return self.completed(f, 1, "an older state of the same request");
                }
                Ok(())
            }
            Step::CrossPrincipal { flow } => {
                let Some(f) = self.pick(*flow) else {
                    return Ok(());
                };
                let Some(state) = self.flows[f].state.clone() else {
                    return Ok(());
                };
                let req = self
                    .request(
                        format!("step {} retry as another principal", self.step),
                        &self.flows[f],
                        Some(Value::Object(self.flows[f].answers.clone())),
                        Some(Value::from(state)),
                    )
                    .token(Some(&self.h.cfg.other_principal));
                let reply = self.send(req).await?;
                if let Some(v) = is_complete(&reply)
                    && self.on(Oracle::ForeignPrincipalAccepted)
                {
                    return Err(self.violation(
                        Oracle::ForeignPrincipalAccepted,
                        format!(
                            "{}'s state completed for {}: {}",
                            self.h.cfg.principal,
                            self.h.cfg.other_principal,
                            crate::client::mask::shorten(&v.to_string(), 200)
                        ),
                    ));
                }
                Ok(())
            }
            Step::CrossRequest { flow, tool } => self.cross_request(*flow, *tool).await,
            Step::Concurrent { flow, n } => self.concurrent(*flow, 2 + usize::from(*n % 7)).await,
        }
    }

    async fn start(&mut self, tool: usize) -> Result<(), Violation> {
        let t = self.h.tools[tool].clone();
        let walked = walk(
            &*self.h.wire,
            &t.name,
            &t.args,
            &all_modes(),
            self.h.cfg.max_rounds,
            true,
        )
        .await;
        self.judge_new()?;
        let Some((_, round)) = walked.state_round() else {
            return Ok(());
        };
        if !matches!(walked.end, WalkEnd::AtState) {
            return Ok(());
        }
        let state = round.state.clone().unwrap_or_default();
        self.ran.flows += 1;
        self.flows.push(Flow {
            tool,
            args: t.args.clone(),
            state: Some(state.clone()),
            answers: round.answers.clone(),
            states: vec![state],
            last: None,
            completions: 0,
        });
        Ok(())
    }

    async fn retry(
        &mut self,
        flow: u8,
        state_m: &Option<StateMutation>,
        answers_m: &Option<AnswerMutation>,
        headers_m: &[HeaderMutation],
        body_m: &Option<BodyMutation>,
    ) -> Result<(), Violation> {
        let Some(f) = self.pick(flow) else {
            return Ok(());
        };
        let Some(state) = self.flows[f].state.clone() else {
            return Ok(());
        };
        // The donor is a flow of another request (tool or arguments): the
        // state of an identical request is as valid as the flow's own (the
        // binding is the request's content), so accepting it is no tamper.
        let own = &self.flows[f];
        let donor = self
            .flows
            .iter()
            .find(|o| (o.tool, &o.args) != (own.tool, &own.args) && !o.states.is_empty())
            .map(|o| o.states[0].clone());
        let sent_state = match state_m {
            Some(m) => m.apply(&state, donor.as_deref()),
            None => Some(Value::from(state.clone())),
        };
        let answers = match answers_m {
            Some(m) => m.apply(&self.flows[f].answers),
            None => Value::Object(self.flows[f].answers.clone()),
        };
        let headers: Vec<&HeaderMutation> = headers_m.iter().take(3).collect();
        let mut label = format!("step {} retry", self.step);
        if let Some(m) = state_m {
            label.push_str(&format!(" state:{}", m.name()));
        }
        if let Some(m) = answers_m {
            label.push_str(&format!(" answers:{}", m.name()));
        }
        for h in &headers {
            label.push_str(&format!(" header:{}", h.name()));
        }
        if let Some(b) = body_m {
            label.push_str(&format!(" body:{}", b.name()));
        }
        if headers.iter().any(|h| h.breaks_framing()) {
            label = format!("{FRAMING}{label}");
        }
        if body_m.as_ref().is_some_and(|b| !b.keeps_id())
            || answers_m.as_ref().is_some_and(|a| !a.keeps_json())
        {
            label = format!("{MALFORMED}{label}");
        }
        let mut req = self.request(label, &self.flows[f], Some(answers), sent_state.clone());
        for h in headers {
            req = h.apply(req);
        }
        if let Some(b) = body_m {
            req = b.apply(req);
        }
        let reply = self.send(req).await?;
        let Some(v) = is_complete(&reply) else {
            return Ok(());
        };
        let tampered = state_m
            .as_ref()
            .is_some_and(|m| m.is_tamper(&state, sent_state.as_ref()));
        if tampered {
            if self.on(Oracle::TamperedStateAccepted) {
                return Err(self.violation(
                    Oracle::TamperedStateAccepted,
                    format!(
                        "a retry with a changed requestState ({}) completed: {}",
                        state_m.as_ref().map_or("", StateMutation::name),
                        crate::client::mask::shorten(&v.to_string(), 200)
                    ),
                ));
            }
            return Ok(());
        }
        self.flows[f].state = None;
        self.completed(f, 1, "a mutated retry")
    }

    async fn cross_request(&mut self, flow: u8, tool: u8) -> Result<(), Violation> {
        let Some(f) = self.pick(flow) else {
            return Ok(());
        };
        let Some(state) = self.flows[f].state.clone() else {
            return Ok(());
        };
        let own = self.flows[f].tool;
        let other = usize::from(tool) % self.h.tools.len();
        let (t, args) = if other != own && self.h.tools[other].needs_state {
            (other, self.h.tools[other].args.clone())
        } else if let Some(a) = self.h.tools[own].other_args.clone() {
            (own, a)
        } else {
            return Ok(());
        };
        let mut fake = self.flows[f].clone();
        fake.tool = t;
        fake.args = args;
        let req = self.request(
            format!(
                "step {} {}'s state on {} with other arguments",
                self.step, self.h.tools[own].name, self.h.tools[t].name
            ),
            &fake,
            Some(Value::Object(self.flows[f].answers.clone())),
            Some(Value::from(state)),
        );
        let reply = self.send(req).await?;
        if let Some(v) = is_complete(&reply)
            && self.on(Oracle::OtherRequestAccepted)
        {
            return Err(self.violation(
                Oracle::OtherRequestAccepted,
                format!(
                    "a state issued for {} completed a different request ({}): {}",
                    self.h.tools[own].name,
                    self.h.tools[t].name,
                    crate::client::mask::shorten(&v.to_string(), 200)
                ),
            ));
        }
        Ok(())
    }

    async fn concurrent(&mut self, flow: u8, n: usize) -> Result<(), Violation> {
        let Some(f) = self.pick(flow) else {
            return Ok(());
        };
        let Some(state) = self.flows[f].state.clone() else {
            return Ok(());
        };
        let answers = self.flows[f].answers.clone();
        let reqs: Vec<RawRequest> = (0..n)
            .map(|i| {
                self.request(
                    format!("step {} concurrent copy {}/{n}", self.step, i + 1),
                    &self.flows[f],
                    Some(Value::Object(answers.clone())),
                    Some(Value::from(state.clone())),
                )
            })
            .collect();
        let handles: Vec<_> = reqs
            .into_iter()
            .map(|r| {
                let w = self.h.wire.clone();
                tokio::spawn(async move { w.send(r).await })
            })
            .collect();
        let mut done = 0;
        for h in handles {
            match h.await {
                Ok(reply) => done += usize::from(is_complete(&reply).is_some()),
                Err(e) if e.is_panic() && self.on(Oracle::Panic) => {
                    return Err(self.violation(Oracle::Panic, "a concurrent call panicked"));
                }
                Err(_) => {}
            }
        }
        self.judge_new()?;
        self.flows[f].last = Some((answers, state));
        if done > 0 {
            self.flows[f].state = None;
            return self.completed(f, done, "concurrent copies");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::sent_id;
    use serde_json::{Value, json};

    #[test]
    fn the_sent_id_reads_as_a_full_parse_would() {
        let full = |b: &[u8]| {
            serde_json::from_slice::<Value>(b)
                .ok()
                .and_then(|v| v.get("id").cloned())
        };
        for body in [
            &br#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"id":1}}"#[..],
            br#"{"id":"a\"b"}"#,
            br#"{"id":null}"#,
            br#"{"method":"m"}"#,
            br#"{"id":1,"id":2}"#,
            br#"[7]"#,
            br#"  {"id":{"x":[1]}}"#,
            br#"{"id":1"#,
            b"",
        ] {
            assert_eq!(
                sent_id(body),
                full(body),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        assert_eq!(sent_id(br#"{"id":null}"#), Some(Value::Null));
        assert_eq!(sent_id(br#"{"id":1,"id":2}"#), Some(json!(2)));
    }
}
