//! Discovery: what a target is, shared by `check`, `load`, `plan` and
//! `fuzz` (one implementation). Which generations it speaks (both are
//! probed: a 2026-07-28 `server/discover`, a 2025-11-25 `initialize`),
//! whether it authenticates, which tools it lists, and for each tool what
//! its calls do: whether and how it elicits, and in which round it first
//! issues a `requestState`. Everything discovery sends is kept in order in
//! [`Discovery::exchanges`], so a user sees what was called for real.
//!
//! - [`args`]: tool arguments from an `inputSchema` (required only, unique per call).
//! - [`identity`]: the evidence that the target knows its users.
//! - [`wire`]: the [`Wire`] requests go through, what every wire knows
//!   ([`WireCore`]), and discovery's [`wire::Log`].
//! - [`modern`]: `tools/list` and the round [`modern::walk`] (also used by checks).
//! - [`legacy`]: the 2025-11-25 observing session driver (POST and GET streams).
//! - [`offered`]: the read or get that follows a resource or prompt list.
//! - [`page`]: URL-flow pages completed on the target's origin only.

pub mod args;
pub mod identity;
pub mod legacy;
pub mod modern;
pub mod offered;
pub mod page;
pub mod wire;

pub use modern::{RoundSeen, WalkEnd, Walked};
pub use wire::{Wire, WireCore};

use crate::client::local::Local;
use crate::client::raw::{self, Exchange, Rpc};
use crate::protocol::Generation;
use crate::protocol::capabilities::{ClientCapabilities, ElicitModes};
use crate::protocol::version::{LEGACY, MODERN};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Why discovery cannot go on (a usage error: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// The target URL is not an http(s) URL.
    #[error("invalid --target {0:?}: {1}")]
    BadUrl(String, String),
    /// Nothing answered.
    #[error("target {0} is unreachable: {1}")]
    Unreachable(String, String),
    /// It answered, but its TLS handshake failed (what failed, and the
    /// flag that fixes it).
    #[error("target {0}: {1}")]
    Tls(String, String),
    /// The server refused the token discovery ran as (HTTP 401).
    #[error(
        "target {0} refused the token {1}: {2}. Give the principal's token with --principal \
         TOKEN (or ELICITKIT_PRINCIPAL=TOKEN); load also takes --principal-file FILE (tokens \
         one a line, spread over the users)"
    )]
    TokenRefused(String, String, String),
    /// Something answered, but not as an MCP server (of the wanted generation).
    #[error("target {0} does not answer as an MCP server: {1}")]
    NotMcp(String, String),
    /// A `--tool` or `--skip-tool` name the server does not list.
    #[error("tool {0:?} is not in the server's tools/list (it lists: {1})")]
    UnknownTool(String, String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// A second endpoint the run needs (`check --other-instance`) does not
    /// answer: a setting, not a finding of the target.
    #[error("--other-instance {0} is unreachable ({1}): the cross-instance check cannot run")]
    OtherUnreachable(String, String),
}

/// Who and what a `check` or `fuzz --target` run aims at: the endpoint,
/// both principals, which tools, and how each request is bounded and
/// seeded. Each job embeds it in its own settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSettings {
    /// The MCP endpoint URL.
    pub mcp_url: String,
    /// Bearer token of the principal that runs the flows.
    pub principal: String,
    /// Bearer token of a second principal (cross-principal probes).
    pub other_principal: String,
    /// Only these tools (empty: every tool `tools/list` names).
    pub tools: Vec<String>,
    /// Tools never called.
    pub skip_tools: Vec<String>,
    /// Tools whose completion must happen at most once (besides those the
    /// server marks via annotations or its description).
    pub single_use: Vec<String>,
    /// Bound on every request (`check`: on every check too).
    pub timeout: Duration,
    /// Seed for generated answers (`fuzz`: and for its cases).
    pub seed: u64,
}

impl TargetSettings {
    /// `mcp_url` as the demo principals `alice` / `bob`, every tool, with
    /// this bound and seed.
    pub fn new(mcp_url: impl Into<String>, timeout: Duration, seed: u64) -> Self {
        TargetSettings {
            mcp_url: mcp_url.into(),
            principal: "alice".into(),
            other_principal: "bob".into(),
            tools: Vec::new(),
            skip_tools: Vec::new(),
            single_use: Vec::new(),
            timeout,
            seed,
        }
    }

    /// The discovery of this target, of `generation` (`None`: every
    /// generation it speaks).
    pub fn discovery(&self, generation: Option<Generation>) -> Settings {
        Settings {
            principal: self.principal.clone(),
            timeout: self.timeout,
            tools: self.tools.clone(),
            skip_tools: self.skip_tools.clone(),
            single_use: self.single_use.clone(),
            generation,
            seed: self.seed,
            ..Settings::new(self.mcp_url.clone())
        }
    }
}

/// How discovery runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The MCP endpoint URL.
    pub mcp_url: String,
    /// Bearer token of the principal the calls run as.
    pub principal: String,
    /// Bound on every request.
    pub timeout: Duration,
    /// Only these tools (empty: every tool listed).
    pub tools: Vec<String>,
    /// Never these tools.
    pub skip_tools: Vec<String>,
    /// Tools whose completion must happen at most once (besides those the
    /// server marks in annotations or its description).
    pub single_use: Vec<String>,
    /// Only this generation (`None`: every generation the server speaks).
    pub generation: Option<Generation>,
    /// Most rounds walked looking for a `requestState`.
    pub max_walk: usize,
    /// Tools probed at the same time.
    pub concurrency: usize,
    /// Seed for generated answers.
    pub seed: u64,
    /// The endpoint's service, called in process instead of over the
    /// network (a stdio bridge's router); `None`: over the network.
    pub local: Option<Local>,
}

impl Settings {
    /// Discovery's default seed for generated answers.
    pub const SEED: u64 = 0x00e1_1c17;

    /// Defaults for `mcp_url`: principal `alice`, 10 s per request, both
    /// generations, up to 3 rounds walked, 4 tools at a time.
    pub fn new(mcp_url: impl Into<String>) -> Self {
        Settings {
            mcp_url: mcp_url.into(),
            principal: "alice".into(),
            timeout: Duration::from_secs(10),
            tools: Vec::new(),
            skip_tools: Vec::new(),
            single_use: Vec::new(),
            generation: None,
            max_walk: 3,
            concurrency: 4,
            seed: Settings::SEED,
            local: None,
        }
    }

    fn wants(&self, name: &str) -> bool {
        (self.tools.is_empty() || self.tools.iter().any(|t| t == name))
            && !self.skip_tools.iter().any(|t| t == name)
    }
}

/// How a tool answered its first call with every capability declared.
#[derive(Debug, Clone, PartialEq)]
pub enum FirstReply {
    /// `input_required` (2026-07-28), or an `elicitation/create` pushed on
    /// the stream (2025-11-25: `result` is its params).
    InputRequired {
        /// The result object (2025-11-25: the elicitation params).
        result: Value,
        /// The raw reply body (for duplicate-key checks).
        raw: String,
        /// Modes used by its `elicitation/create` requests.
        modes: ElicitModes,
        /// Whether a `requestState` came with it.
        has_state: bool,
    },
    /// A complete result at once: the tool does not elicit.
    Complete {
        /// `isError`.
        is_error: bool,
    },
    /// A JSON-RPC error.
    Error(i64),
    /// Anything else (HTTP error, bad body, timeout); says what.
    Other(String),
}

/// A tool of the target as discovery saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProfile {
    /// Tool name.
    pub name: String,
    /// The `tools/list` entry.
    pub descriptor: Value,
    /// Arguments of its calls (call 0 of [`args::arguments`]).
    pub arguments: Map<String, Value>,
    /// Different but equally valid arguments, when the schema varies.
    pub other_arguments: Option<Map<String, Value>>,
    /// Whether its completion must not repeat.
    pub single_use: bool,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
    /// The first call's reply.
    pub first: FirstReply,
    /// The rounds walked (2026-07-28; 2025-11-25: the first elicitation).
    pub rounds: Vec<RoundSeen>,
    /// Index of the first round that carried a `requestState`.
    pub state_round: Option<usize>,
    /// A flow page on another origin that discovery did not follow.
    pub off_origin: Option<String>,
    /// 2025-11-25: its elicitation arrived on the session's standalone GET
    /// stream, not on the call's POST stream. Every later call of it opens
    /// the GET stream too (see [`Wire::pushes_on_get`]).
    pub elicits_on_get: bool,
}

impl ToolProfile {
    /// True when the first call asked for input.
    pub fn elicits(&self) -> bool {
        matches!(self.first, FirstReply::InputRequired { .. })
    }

    /// Modes any round walked used.
    pub fn modes(&self) -> ElicitModes {
        let mut m = match &self.first {
            FirstReply::InputRequired { modes, .. } => *modes,
            _ => ElicitModes::default(),
        };
        for r in &self.rounds {
            m.form |= r.modes.form;
            m.url |= r.modes.url;
        }
        m
    }

    /// Input methods other than elicitation that its rounds asked for
    /// (`sampling/createMessage`, `roots/list`).
    pub fn other_inputs(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for m in self.rounds.iter().flat_map(|r| r.methods.iter()) {
            if m != "elicitation/create" && !v.contains(m) {
                v.push(m.clone());
            }
        }
        v
    }

    /// Whether a 2026-07-28 round asked without saying `resultType` (it
    /// was read by its shape). Meaningless on 2025-11-25, whose rounds are
    /// pushed `elicitation/create` params, not results.
    pub fn undeclared_rounds(&self) -> bool {
        self.rounds
            .iter()
            .any(|r| crate::protocol::ResultType::of(&r.result).is_none())
    }

    /// Whether some round issued a `requestState`.
    pub fn issues_state(&self) -> bool {
        self.state_round.is_some()
    }

    /// The call with its usual arguments.
    pub fn call(&self) -> crate::client::ToolCall {
        crate::client::ToolCall {
            name: self.name.clone(),
            arguments: self.arguments.clone(),
        }
    }

    /// Arguments for call number `n` (unique per call where the schema allows).
    pub fn arguments_for(&self, n: u64) -> Map<String, Value> {
        args::arguments(
            self.descriptor.get("inputSchema").unwrap_or(&Value::Null),
            n,
        )
    }

    /// [`ToolProfile::describe`], noting on 2026-07-28 rounds read by
    /// their shape because they said no `resultType`.
    pub fn describe_on(&self, generation: Generation) -> String {
        let d = self.describe();
        if generation == Generation::Modern && self.elicits() && self.undeclared_rounds() {
            format!("{d}; no resultType: rounds read by their shape")
        } else {
            d
        }
    }

    /// One line: what its first call did.
    pub fn describe(&self) -> String {
        match &self.first {
            FirstReply::InputRequired { modes, .. } => {
                let mode = match (modes.form, modes.url) {
                    (true, true) => "form+url",
                    (false, true) => "url",
                    (true, false) => "form",
                    (false, false) => "no elicitation",
                };
                let state = match self.state_round {
                    Some(0) => ", requestState from round 1".to_owned(),
                    Some(i) => format!(", requestState from round {}", i + 1),
                    None if self.rounds.first().is_some_and(|r| r.state.is_none())
                        && !self.rounds.is_empty() =>
                    {
                        ", no requestState".into()
                    }
                    None => String::new(),
                };
                let others = self.other_inputs();
                let others = if others.is_empty() {
                    String::new()
                } else {
                    format!(", asks for {}", others.join(", "))
                };
                let on_get = if self.elicits_on_get {
                    ", on the GET stream"
                } else {
                    ""
                };
                format!("elicits ({mode}{state}{others}{on_get})")
            }
            FirstReply::Complete { is_error: false } => "does not elicit".into(),
            FirstReply::Complete { is_error: true } => "does not elicit (isError result)".into(),
            FirstReply::Error(c) => format!("JSON-RPC error {c}"),
            FirstReply::Other(why) => why.clone(),
        }
    }
}

/// What discovery learned about one generation of the target.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The generation.
    pub generation: Generation,
    /// Tools, in `tools/list` order (after `--tool` / `--skip-tool`).
    pub tools: Vec<ToolProfile>,
    /// Every tool the server listed (names), selected or not.
    pub listed: Vec<String>,
    /// `server/discover` (2026-07-28) or `initialize` (2025-11-25) result.
    pub server: Option<Value>,
    /// Why no tool is listed when `tools/list` gave no list: the server
    /// offers none (no `tools` capability, `-32601`) or the call failed.
    /// Discovery goes on: the checks that need no tool still run.
    pub no_tools: Option<String>,
}

/// What the target does with credentials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuthSeen {
    /// A request without credentials was refused (401/403).
    pub anonymous_refused: bool,
    /// A request with a token the server cannot know was refused (it
    /// validates tokens even when anonymous requests are served).
    pub checks_tokens: bool,
}

/// Everything discovery learned.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The MCP endpoint.
    pub mcp_url: String,
    /// The 2026-07-28 view, when the server speaks it (and it was wanted).
    pub modern: Option<View>,
    /// The 2025-11-25 view, likewise.
    pub legacy: Option<View>,
    /// Authentication, as seen on the generation discovered first.
    pub auth: AuthSeen,
    /// Every exchange discovery made, in order.
    pub exchanges: Vec<Exchange>,
}

impl Discovery {
    /// The generations spoken (and wanted), 2026-07-28 first.
    pub fn generations(&self) -> Vec<Generation> {
        let mut g = Vec::new();
        if self.modern.is_some() {
            g.push(Generation::Modern);
        }
        if self.legacy.is_some() {
            g.push(Generation::Legacy);
        }
        g
    }

    /// The view of one generation.
    pub fn view(&self, g: Generation) -> Option<&View> {
        match g {
            Generation::Modern => self.modern.as_ref(),
            Generation::Legacy => self.legacy.as_ref(),
        }
    }

    /// What discovery called, one line per request (`label → status`), for
    /// the terminal.
    pub fn call_lines(&self) -> Vec<String> {
        self.exchanges
            .iter()
            .map(|e| {
                let first = e.response.lines().next().unwrap_or("").trim();
                format!("{} → {first}", e.label)
            })
            .collect()
    }

    /// One line per tool and generation: what it does.
    pub fn tool_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for v in [&self.modern, &self.legacy].into_iter().flatten() {
            for t in &v.tools {
                out.push(format!(
                    "{} {:<24} {}",
                    v.generation.version(),
                    t.name,
                    t.describe_on(v.generation)
                ));
            }
        }
        out
    }
}

/// Builds the shared HTTP client (no proxy: targets are local).
pub fn http_client() -> Result<reqwest::Client, DiscoverError> {
    crate::client::tls::reqwest_builder()
        .no_proxy()
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| DiscoverError::Client(e.to_string()))
}

/// Full capabilities: form and URL.
pub fn all_modes() -> ClientCapabilities {
    ClientCapabilities::with_modes(true, true)
}

/// Whether a tool's completion must not repeat: `--single-use`, the
/// annotations (`destructiveHint` without `idempotentHint`), or a
/// description that says so ("exactly once", "single-use", "one-time").
pub fn is_single_use(single_use: &[String], descriptor: &Value) -> bool {
    let name = descriptor.get("name").and_then(Value::as_str).unwrap_or("");
    if single_use.iter().any(|n| n == name) {
        return true;
    }
    let ann = descriptor.get("annotations");
    let flag = |k: &str| ann.and_then(|a| a.get(k)).and_then(Value::as_bool);
    if flag("destructiveHint") == Some(true) && flag("idempotentHint") != Some(true) {
        return true;
    }
    let d = descriptor
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    [
        "exactly once",
        "single-use",
        "single use",
        "one-time",
        "at most once",
    ]
    .iter()
    .any(|p| d.contains(p))
}

fn profile(settings: &Settings, d: &Value) -> Option<ToolProfile> {
    let name = d.get("name").and_then(Value::as_str)?.to_owned();
    let schema = d.get("inputSchema").unwrap_or(&Value::Null);
    let arguments = args::arguments(schema, 0);
    let other = args::arguments(schema, 1);
    Some(ToolProfile {
        single_use: is_single_use(&settings.single_use, d),
        read_only: d
            .get("annotations")
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool)
            == Some(true),
        other_arguments: (other != arguments).then_some(other),
        arguments,
        descriptor: d.clone(),
        name,
        first: FirstReply::Other("not called".into()),
        rounds: Vec::new(),
        state_round: None,
        off_origin: None,
        elicits_on_get: false,
    })
}

fn select(settings: &Settings, listed: &[Value]) -> Result<Vec<ToolProfile>, DiscoverError> {
    let names: Vec<&str> = listed
        .iter()
        .filter_map(|d| d.get("name").and_then(Value::as_str))
        .collect();
    for wanted in settings.tools.iter().chain(&settings.skip_tools) {
        if !names.contains(&wanted.as_str()) {
            return Err(DiscoverError::UnknownTool(wanted.clone(), names.join(", ")));
        }
    }
    Ok(listed
        .iter()
        .filter_map(|d| profile(settings, d))
        .filter(|t| settings.wants(&t.name))
        .collect())
}

fn listed_names(listed: &[Value]) -> Vec<String> {
    listed
        .iter()
        .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

async fn modern_view(
    settings: &Settings,
    w: &wire::Log,
    server: Option<Value>,
) -> Result<View, DiscoverError> {
    let caps = all_modes();
    let (listed, no_tools) = match modern::list_tools(w, &caps).await {
        Ok(l) => (l, None),
        Err(e) => (
            Vec::new(),
            Some(no_tools_why(server.as_ref(), &e.to_string())),
        ),
    };
    let mut tools = select(settings, &listed)?;
    let pending: Vec<_> = tools
        .iter()
        .map(|t| modern::walk(w, &t.name, &t.arguments, &caps, settings.max_walk, true))
        .collect();
    let walks: Vec<Walked> = futures::stream::iter(pending)
        .buffered(settings.concurrency.max(1))
        .collect()
        .await;
    for (t, walked) in tools.iter_mut().zip(walks) {
        t.state_round = walked.state_round().map(|(i, _)| i);
        t.off_origin = walked.off_origin.clone();
        t.first = match (walked.rounds.first(), &walked.end) {
            (Some(r), _) => FirstReply::InputRequired {
                result: r.result.clone(),
                raw: r.raw.clone(),
                modes: r.modes,
                has_state: r.state.is_some(),
            },
            (None, WalkEnd::Complete { is_error, .. }) => FirstReply::Complete {
                is_error: *is_error,
            },
            (None, WalkEnd::Error { code, .. }) => FirstReply::Error(*code),
            (None, WalkEnd::Other(why)) => FirstReply::Other(why.clone()),
            (None, WalkEnd::AtState | WalkEnd::Limit) => FirstReply::Other("no reply".into()),
        };
        t.rounds = walked.rounds;
    }
    Ok(View {
        generation: Generation::Modern,
        tools,
        listed: listed_names(&listed),
        server,
        no_tools,
    })
}

/// Why a server gave no tool list: `tools/list` answered `answer`, and
/// the server's capabilities (`server/discover` or `initialize`) do or do
/// not name `tools`.
fn no_tools_why(server: Option<&Value>, answer: &str) -> String {
    let declared = server
        .and_then(|s| s.get("capabilities"))
        .is_some_and(|c| c.get("tools").is_some());
    if declared {
        format!("tools/list failed although the server declares tools: {answer}")
    } else {
        format!("the server offers no tools (no tools capability; tools/list answered {answer})")
    }
}

/// The first elicitation a tool pushes, on a session of its own (POST and
/// GET streams watched), left unanswered.
async fn peek(w: &wire::Log, t: &ToolProfile) -> legacy::Streamed {
    let opts = legacy::CallOptions {
        get_stream: true,
        ..Default::default()
    };
    match legacy::open(w, &all_modes(), true).await {
        Ok(s) => {
            let out = legacy::call(w, &s, &t.name, &t.arguments, legacy::Answer::Peek, &opts).await;
            legacy::close(w, &s).await;
            out
        }
        Err(e) => legacy::Streamed {
            failure: Some(e.into()),
            ..Default::default()
        },
    }
}

async fn legacy_view(
    settings: &Settings,
    w: &wire::Log,
    session: legacy::Session,
) -> Result<View, DiscoverError> {
    let url = settings.mcp_url.clone();
    let list = legacy::request(w, &session, "tools/list", "tools/list", json!({}));
    let reply = w
        .send(list)
        .await
        .map_err(|e| DiscoverError::Unreachable(url.clone(), e.to_string()))?;
    legacy::close(w, &session).await;
    let (listed, no_tools) = match reply.rpc() {
        Rpc::Result(v) => (
            v.get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            None,
        ),
        other => (
            Vec::new(),
            Some(no_tools_why(Some(&session.init), &other.describe())),
        ),
    };
    let mut tools = select(settings, &listed)?;
    // Each tool on its own session, all at once: a server that (correctly)
    // waits for `initialized`, or is slow to push, costs one window, not one
    // per tool.
    let pending: Vec<_> = tools.iter().map(|t| peek(w, t)).collect();
    let peeks: Vec<legacy::Streamed> = futures::stream::iter(pending)
        .buffered(settings.concurrency.max(1))
        .collect()
        .await;
    for (t, streamed) in tools.iter_mut().zip(peeks) {
        t.elicits_on_get = streamed.via_get > 0;
        t.first = match (streamed.elicitations.first(), &streamed.response) {
            (Some(e), _) => {
                t.rounds.push(RoundSeen {
                    result: e.clone(),
                    raw: e.to_string(),
                    modes: legacy::modes_seen(&streamed.elicitations),
                    methods: vec!["elicitation/create".into()],
                    state: None,
                    answers: Map::new(),
                    urls: e
                        .get("url")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .into_iter()
                        .collect(),
                });
                FirstReply::InputRequired {
                    result: e.clone(),
                    raw: e.to_string(),
                    modes: legacy::modes_seen(&streamed.elicitations),
                    has_state: false,
                }
            }
            (None, Some(Rpc::Error(e))) => FirstReply::Error(e.code),
            (None, Some(Rpc::Result(v))) => FirstReply::Complete {
                is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
            },
            (None, Some(Rpc::Missing(why))) => FirstReply::Other(why.clone()),
            (None, None) => {
                FirstReply::Other(streamed.failure.unwrap_or_else(|| "no response".into()))
            }
        };
    }
    Ok(View {
        generation: Generation::Legacy,
        tools,
        listed: listed_names(&listed),
        server: Some(session.init),
        no_tools,
    })
}

/// A hint when every probe got 404 at a path that is not `/mcp`: the
/// usual mistake is the server's base URL (as `serve` prints it).
fn endpoint_hint(url: &url::Url, modern_why: &str, legacy_why: &str) -> String {
    let not_found = |why: &str| why.contains("HTTP 404") || why == "not probed";
    if !(not_found(modern_why) && not_found(legacy_why)) || url.path().ends_with("/mcp") {
        return String::new();
    }
    let mut guess = url.clone();
    let path = format!("{}/mcp", url.path().trim_end_matches('/'));
    guess.set_path(&path);
    format!(" (HTTP 404: is the MCP endpoint {guess}? MCP servers usually serve it at /mcp)")
}

/// Discovers the target: both generations (or the one asked for), its
/// authentication, its tools and what their calls do.
pub async fn discover(settings: &Settings) -> Result<Discovery, DiscoverError> {
    let parsed = url::Url::parse(&settings.mcp_url)
        .map_err(|e| DiscoverError::BadUrl(settings.mcp_url.clone(), e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(DiscoverError::BadUrl(
            settings.mcp_url.clone(),
            "only http and https targets are supported".into(),
        ));
    }
    let http = http_client()?;
    let w = wire::Log::new(
        http,
        &settings.mcp_url,
        &settings.principal,
        settings.timeout,
        settings.seed,
    )
    .in_process(settings.local.clone());
    let url = settings.mcp_url.clone();
    let unreachable = |e: raw::RawError| {
        let why = e.to_string();
        match crate::client::tls::explain_text(&why) {
            Some(tls) => DiscoverError::Tls(url.clone(), tls),
            None => DiscoverError::Unreachable(url.clone(), why),
        }
    };
    let want = |g: Generation| settings.generation.is_none_or(|x| x == g);
    let caps = all_modes();

    // 2026-07-28: server/discover names the versions; any other answer to
    // it means the server does not speak 2026-07-28.
    let mut modern_server = None;
    let mut modern_why = String::from("not probed");
    // Whether a probe was refused for its credentials (HTTP 401).
    let mut unauthenticated = false;
    if want(Generation::Modern) {
        let reply = w
            .send(modern::request(
                &w,
                "server/discover",
                "server/discover",
                json!({}),
                &caps,
            ))
            .await
            .map_err(&unreachable)?;
        match reply.rpc() {
            Rpc::Result(v) => {
                let versions = v.get("supportedVersions").and_then(Value::as_array);
                if versions.is_none_or(|a| a.iter().any(|x| x == MODERN)) {
                    modern_server = Some(v);
                } else {
                    modern_why = format!("server/discover does not list {MODERN}");
                }
            }
            other => {
                unauthenticated |= reply.status == 401;
                modern_why = format!("server/discover answered {}", other.describe());
            }
        }
    }
    // 2025-11-25: a session with every capability.
    let mut legacy_session = None;
    let mut legacy_why = String::from("not probed");
    if want(Generation::Legacy) {
        match legacy::open(&w, &caps, true).await {
            Ok(s) if s.init.get("protocolVersion").is_some() => legacy_session = Some(s),
            Ok(_) => legacy_why = "initialize returned no protocolVersion".into(),
            Err(e) => {
                unauthenticated |= matches!(e, wire::SessionError::Unauthenticated(_));
                legacy_why = e.into();
            }
        }
    }
    if modern_server.is_none() && legacy_session.is_none() && unauthenticated {
        let token = if settings.principal == "alice" {
            "(the default, `alice`: no --principal was given)".to_owned()
        } else {
            "given (--principal or ELICITKIT_PRINCIPAL)".to_owned()
        };
        return Err(DiscoverError::TokenRefused(
            settings.mcp_url.clone(),
            token,
            format!("HTTP 401 ({MODERN}: {modern_why}; {LEGACY}: {legacy_why})"),
        ));
    }
    if modern_server.is_none() && legacy_session.is_none() {
        let (m, l) = (modern_why, legacy_why);
        return Err(DiscoverError::NotMcp(
            settings.mcp_url.clone(),
            format!(
                "{MODERN}: {m}; {LEGACY}: {l}{}",
                endpoint_hint(&parsed, &m, &l)
            ),
        ));
    }

    // Authentication: anonymous, then a token no server can know.
    let probe_auth = |token: Option<&str>, label: &str| {
        let req = match &modern_server {
            Some(_) => modern::request(&w, label, "tools/list", json!({}), &caps).token(token),
            None => {
                legacy::initialize_request(&settings.mcp_url, token, w.next_id(), &caps.to_value())
            }
        };
        let w = &w;
        async move { w.send(req).await.map(|r| r.status).unwrap_or(0) }
    };
    let anonymous = probe_auth(None, "tools/list without credentials").await;
    let unknown = probe_auth(
        Some("elicitkit-unknown-token-0f3a9c"),
        "tools/list with an unknown token",
    )
    .await;
    let auth = AuthSeen {
        anonymous_refused: matches!(anonymous, 401 | 403),
        checks_tokens: matches!(unknown, 401 | 403),
    };

    let modern = match modern_server {
        Some(s) => Some(modern_view(settings, &w, Some(s)).await?),
        None => None,
    };
    let legacy = match legacy_session {
        Some(s) => Some(legacy_view(settings, &w, s).await?),
        None => None,
    };
    Ok(Discovery {
        mcp_url: settings.mcp_url.clone(),
        modern,
        legacy,
        auth,
        exchanges: w.exchanges(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_404_at_the_base_url_suggests_the_mcp_path() {
        let base = url::Url::parse("http://127.0.0.1:8080").unwrap();
        let not_found = "server/discover answered HTTP 404, undecodable body";
        let hint = endpoint_hint(&base, not_found, "initialize answered HTTP 404");
        assert!(hint.contains("http://127.0.0.1:8080/mcp?"), "{hint}");
        let mcp = url::Url::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(endpoint_hint(&mcp, not_found, not_found), "");
        assert_eq!(
            endpoint_hint(&base, "server/discover answered HTTP 500", not_found),
            ""
        );
        let sub = url::Url::parse("http://h/api/").unwrap();
        assert!(endpoint_hint(&sub, not_found, "not probed").contains("http://h/api/mcp?"));
    }

    #[test]
    fn a_missing_tool_list_says_whether_tools_were_declared() {
        let none = no_tools_why(
            Some(&json!({"capabilities":{"prompts":{}}})),
            "error -32601",
        );
        assert!(none.starts_with("the server offers no tools"), "{none}");
        let failed = no_tools_why(Some(&json!({"capabilities":{"tools":{}}})), "HTTP 500");
        assert!(
            failed.contains("although the server declares tools"),
            "{failed}"
        );
    }

    #[test]
    fn single_use_detection() {
        let none: Vec<String> = Vec::new();
        assert!(is_single_use(
            &none,
            &json!({"name":"d","description":"Deletion happens exactly once."})
        ));
        assert!(is_single_use(
            &none,
            &json!({"name":"d","annotations":{"destructiveHint":true}})
        ));
        assert!(!is_single_use(
            &none,
            &json!({"name":"d","annotations":{"destructiveHint":true,"idempotentHint":true}})
        ));
        assert!(!is_single_use(
            &none,
            &json!({"name":"deploy","description":"Deploy a service."})
        ));
        assert!(is_single_use(&["deploy".into()], &json!({"name":"deploy"})));
    }

    #[test]
    fn tool_selection_names_unknown_tools() {
        let listed = vec![json!({"name":"a"}), json!({"name":"b"})];
        let mut s = Settings::new("http://127.0.0.1:1/mcp");
        s.skip_tools = vec!["a".into()];
        let t = select(&s, &listed).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].name, "b");
        s.tools = vec!["c".into()];
        let e = select(&s, &listed).unwrap_err().to_string();
        assert!(e.contains("\"c\"") && e.contains("a, b"), "{e}");
    }
}
