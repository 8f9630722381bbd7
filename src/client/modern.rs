//! The 2026-07-28 (MRTR) client as a sans-I/O state machine.
//!
//! [`ModernFlow`] decides what to send and judges what comes back; any HTTP
//! driver (plain reqwest in [`super::http`], a Goose user, the checker) moves
//! the bytes: `start()` gives the first [`Outgoing`], each [`HttpReply`] fed to
//! `on_reply` gives the next [`Step`], until `Step::Done` carries the
//! [`RoundTrip`]. Every outgoing request is a plain struct the driver may
//! inspect or alter before sending (tampering).
//!
//! Client rules followed (spec-digest §4.7): `_meta` and the 2026 headers on
//! every request, answers built for every input request, `requestState`
//! echoed byte for byte (and never invented), a new JSON-RPC id per retry, at
//! most `max_rounds` rounds. Policies break them only where they say so.

use super::content;
use super::leg::{Auth, Headers, HttpMethod, HttpReply, LegFailure, Outgoing, Step, Target};
use super::marker;
use super::outcome::{ErrorClass, Leg, LegResult, Outcome, RoundTrip};
use super::page::{PageError, PageStep, PageVisit, foreign_origin};
use super::policy::AnswerPolicy;
use super::rejection;
use super::reply_status::ReplyStatus;
use crate::protocol::body::{ACCEPT_BOTH, Framing, decode_body, framing_of};
use crate::protocol::capabilities::ClientCapabilities;
use crate::protocol::codes;
use crate::protocol::elicitation::{self, ElicitAction, ElicitRequestParams, ElicitResult};
use crate::protocol::headers::request_headers;
use crate::protocol::jsonrpc::{Message, Outcome as RpcOutcome, RequestId, peek_result};
use crate::protocol::mrtr::{
    InputRequiredResult, METHOD_TOOLS_CALL, REQUEST_STATE, RequestMeta, ResultHead, ResultType,
};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// Default cap on `input_required` rounds (rmcp and the C# SDK use 10 too).
pub const DEFAULT_MAX_ROUNDS: u32 = 10;

/// The tool call a flow drives.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    pub arguments: Map<String, Value>,
}

impl ToolCall {
    /// A call from a name and a JSON object of arguments (non-objects read as no arguments).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            name: name.into(),
            arguments: match arguments {
                Value::Object(m) => m,
                _ => Map::new(),
            },
        }
    }
}

/// What every `tools/call` of one tool under one config has in common,
/// serialized once: the tool name, the arguments, `_meta` and the headers.
/// Build it once per scenario and share it ([`ModernFlow::with_template`]),
/// so a round trip only writes its id and its answers.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTemplate {
    call: ToolCall,
    capabilities: ClientCapabilities,
    protocol_version: String,
    name_json: String,
    arguments_json: String,
    /// Where in `arguments_json` a round trip's marker goes (inside the
    /// marked string, after its value), when one argument carries it.
    marker_at: Option<usize>,
    meta_json: String,
    headers: Headers,
}

impl CallTemplate {
    /// The template for `call` with the capabilities and `_meta` of `cfg`.
    pub fn new(call: ToolCall, cfg: &FlowConfig) -> Self {
        let mut meta = cfg.generation_meta.clone();
        meta.client_capabilities = cfg.capabilities.clone();
        let name_json = Value::from(call.name.as_str()).to_string();
        let arguments_json = Value::Object(call.arguments.clone()).to_string();
        let mut headers: Vec<(String, String)> = request_headers(
            METHOD_TOOLS_CALL,
            Some(&json!({ "name": call.name })),
            &meta.protocol_version,
        )
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        headers.push(("Accept".into(), ACCEPT_BOTH.into()));
        headers.push(("Content-Type".into(), Framing::Json.media_type().into()));
        CallTemplate {
            capabilities: cfg.capabilities.clone(),
            protocol_version: meta.protocol_version.clone(),
            meta_json: meta.to_value().to_string(),
            name_json,
            arguments_json,
            marker_at: None,
            headers: headers.into(),
            call,
        }
    }

    /// This template with each round trip's marker
    /// ([`FlowConfig::marker`]) appended, after a space, to the string
    /// argument `arg`; unchanged when `arg` is not a string argument.
    pub fn with_marker_in(mut self, arg: &str) -> Self {
        const SLOT: &str = "\u{1}ek-marker-slot\u{1}";
        let mut args = self.call.arguments.clone();
        let Some(Value::String(v)) = args.get_mut(arg) else {
            return self;
        };
        v.push_str(SLOT);
        let json = Value::Object(args).to_string();
        let slot = Value::from(SLOT).to_string();
        let slot = &slot[1..slot.len() - 1];
        if let Some(at) = json.find(slot) {
            self.arguments_json = format!("{}{}", &json[..at], &json[at + slot.len()..]);
            self.marker_at = Some(at);
        }
        self
    }

    /// Whether round trips under this template carry a marker.
    pub fn is_marked(&self) -> bool {
        self.marker_at.is_some()
    }

    /// The tool call.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// Whether flows under `cfg` may use this template (same `_meta`).
    pub fn fits(&self, cfg: &FlowConfig) -> bool {
        self.capabilities == cfg.capabilities
            && self.protocol_version == cfg.generation_meta.protocol_version
    }

    /// The JSON-RPC `tools/call` body with id `id`, the round trip's
    /// marker (where the template has a slot for it) and the retry's extras.
    fn body(&self, id: i64, marker: Option<u64>, extra: &RetryParams) -> Vec<u8> {
        let mut b = Vec::with_capacity(
            96 + self.name_json.len() + self.arguments_json.len() + self.meta_json.len(),
        );
        b.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        // Written in place (a Vec cannot fail a write).
        let _ = std::io::Write::write_fmt(&mut b, format_args!("{id}"));
        b.extend_from_slice(br#","method":"tools/call","params":{"name":"#);
        b.extend_from_slice(self.name_json.as_bytes());
        b.extend_from_slice(br#","arguments":"#);
        match (self.marker_at, marker) {
            (Some(at), Some(n)) => {
                b.extend_from_slice(&self.arguments_json.as_bytes()[..at]);
                marker::append(&mut b, n);
                b.extend_from_slice(&self.arguments_json.as_bytes()[at..]);
            }
            _ => b.extend_from_slice(self.arguments_json.as_bytes()),
        }
        if let Some(r) = &extra.responses {
            b.extend_from_slice(br#","inputResponses":"#);
            // Serializing a Value into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut b, r);
        }
        if let Some(st) = &extra.state {
            b.push(b',');
            let _ = serde_json::to_writer(&mut b, REQUEST_STATE);
            b.push(b':');
            let _ = serde_json::to_writer(&mut b, st);
        }
        b.extend_from_slice(br#","_meta":"#);
        b.extend_from_slice(self.meta_json.as_bytes());
        b.extend_from_slice(b"}}");
        b
    }
}

/// What a retry adds to the call: the answers and the echoed state.
#[derive(Debug, Clone, Default, PartialEq)]
struct RetryParams {
    responses: Option<Map<String, Value>>,
    state: Option<String>,
}

/// How a flow behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConfig {
    /// Capabilities declared in `_meta` (and enforced on what the server sends).
    pub capabilities: ClientCapabilities,
    /// Most `input_required` results answered before giving up.
    pub max_rounds: u32,
    /// How input requests are answered.
    pub policy: AnswerPolicy,
    /// Seed for generated content and page values.
    pub seed: u64,
    /// `_meta` template: version, client info, extra keys. Its capabilities
    /// are replaced by `capabilities`.
    pub generation_meta: RequestMeta,
    /// JSON-RPC id of the first request; each later request uses the next integer.
    pub first_id: i64,
    /// The round trip's run-wide number: its [`marker`] goes into the
    /// template's marked argument, and every MCP reply is attributed by the
    /// markers it carries (another's is [`ErrorClass::Misrouted`]). `None`
    /// attributes nothing.
    pub marker: Option<u64>,
    /// Name for the round trip (defaults to the policy's name).
    pub scenario: Option<String>,
    /// Keep the final tool result as a JSON tree in
    /// [`RoundTrip::final_result`] (the checker reads it). A load run turns
    /// it off: a plain `complete` reply is then judged from its `resultType`
    /// and `isError` alone, without building the tree.
    pub keep_final_result: bool,
    /// What counts as the expected path beyond the policy's own rules.
    pub expect: Expectations,
    /// Answers pinned by field name, laid over the generated content of
    /// every form that has such a field.
    pub pinned: Option<Arc<Map<String, Value>>>,
    /// The MCP endpoint's origin (`http://127.0.0.1:8080`): URL-mode pages
    /// elsewhere are not followed (the round trip is skipped, saying so).
    /// `None` follows any page.
    pub page_origin: Option<String>,
    /// Read a result without `resultType` by its shape
    /// ([`ResultType::read`]) instead of ending the flow as a protocol
    /// violation. The checker does: `mrtr-result-type` reports the missing
    /// declaration once, and every other check judges what the flow did.
    pub read_by_shape: bool,
    /// Walk the tool instead of judging it ([`Explore`]): discovery's
    /// reading, where it stops and whose ids it takes.
    pub explore: Option<Explore>,
    /// Replies come through the stdio bridge: a transport status in the
    /// outcome is worded as what the pipe saw ([`ReplyStatus`]), never as
    /// an HTTP status of the server's.
    pub stdio: bool,
}

/// Stricter expectations a load scenario sets (the checker judges these
/// itself, so its defaults are lenient).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expectations {
    /// The call must elicit: completing without any input request is
    /// `Unexpected(DidNotElicit)`.
    pub elicit: bool,
    /// An `isError` tool result on an accepted flow counts as the expected
    /// path (else `Unexpected(ToolError)`). Decline and cancel may always
    /// end in `isError`.
    pub tool_error_ok: bool,
    /// A tampered, replayed or foreign state must be rejected *for that
    /// reason*: a refusal about framing, capabilities or an unknown method,
    /// or an HTTP error without a JSON-RPC error, is
    /// `Unexpected(WrongRejection)`.
    pub probed_reason: bool,
}

impl Expectations {
    /// The lenient defaults (what the checker uses).
    pub const LENIENT: Expectations = Expectations {
        elicit: false,
        tool_error_ok: true,
        probed_reason: false,
    };
    /// A load scenario's expectations for a tool that elicits.
    pub const STRICT: Expectations = Expectations {
        elicit: true,
        tool_error_ok: false,
        probed_reason: true,
    };
}

impl Default for FlowConfig {
    fn default() -> Self {
        let capabilities = ClientCapabilities::with_modes(true, true);
        FlowConfig {
            generation_meta: RequestMeta::new(capabilities.clone()),
            capabilities,
            max_rounds: DEFAULT_MAX_ROUNDS,
            policy: AnswerPolicy::AcceptValid,
            seed: 0,
            first_id: 1,
            marker: None,
            scenario: None,
            keep_final_result: true,
            expect: Expectations::LENIENT,
            pinned: None,
            page_origin: None,
            read_by_shape: false,
            explore: None,
            stdio: false,
        }
    }
}

impl FlowConfig {
    /// The default config with another policy.
    pub fn with_policy(policy: AnswerPolicy) -> Self {
        FlowConfig {
            policy,
            ..Self::default()
        }
    }
}

/// What the next MCP reply is judged against.
#[derive(Debug, Clone, PartialEq)]
enum Probe {
    /// An ordinary call or retry.
    Normal,
    /// The retry carried a tampered state.
    Tampered,
    /// A replay of a completed retry.
    Replay,
    /// The retry went out with another principal's credentials.
    Cross,
    /// The retry carried invalid content under these keys.
    Invalid(BTreeSet<String>),
    /// The retry declined or cancelled.
    Refused,
    /// The retry consented to a URL request without completing its page.
    ConsentOnly,
}

/// What the last sent request was.
#[derive(Debug, Clone, PartialEq)]
enum Pending {
    Call,
    Page(PageVisit),
}

/// What an MCP reply meant.
#[derive(Debug)]
enum Event {
    InputRequired(InputRequiredResult, Value),
    Complete(bool, Option<Value>),
    RpcError(i64, Option<String>, String, u16),
    Http(u16),
    Violation(String),
}

/// The MRTR state machine for one tool call.
#[derive(Debug)]
pub struct ModernFlow {
    tpl: Arc<CallTemplate>,
    cfg: Arc<FlowConfig>,
    /// This round trip's seed and marker: the config's, or those
    /// [`Self::for_round_trip`] was given.
    seed: u64,
    marker: Option<u64>,
    next_id: i64,
    calls: u32,
    rt: RoundTrip,
    pending: Pending,
    probe: Probe,
    applied: bool,
    skip_reason: Option<&'static str>,
    responses: Option<Map<String, Value>>,
    state_to_echo: Option<String>,
    pages: VecDeque<String>,
    last_retry: Option<RetryParams>,
    replayed: bool,
    finished: bool,
    /// What a walk saw so far ([`FlowConfig::explore`]).
    walked: Option<Box<Walked>>,
}

impl ModernFlow {
    /// A flow for `call` under `cfg`.
    pub fn new(call: ToolCall, cfg: FlowConfig) -> Self {
        let tpl = Arc::new(CallTemplate::new(call, &cfg));
        Self::with_template(tpl, cfg)
    }

    /// A flow for a shared template; `tpl` must [fit](CallTemplate::fits)
    /// `cfg` (a template that does not is rebuilt for this flow).
    pub fn with_template(tpl: Arc<CallTemplate>, cfg: FlowConfig) -> Self {
        let round = (cfg.seed, cfg.first_id, cfg.marker);
        Self::for_round_trip(tpl, Arc::new(cfg), round)
    }

    /// One round trip under a shared template and config (a load scenario
    /// builds both once): only its `(seed, first_id, marker)` are its own,
    /// in place of the config's. A template that does not
    /// [fit](CallTemplate::fits) is rebuilt for this flow.
    pub fn for_round_trip(
        tpl: Arc<CallTemplate>,
        cfg: Arc<FlowConfig>,
        (seed, first_id, marker): (u64, i64, Option<u64>),
    ) -> Self {
        let tpl = if tpl.fits(&cfg) {
            tpl
        } else {
            Arc::new(CallTemplate::new(tpl.call.clone(), &cfg))
        };
        let name = round_trip_name(&cfg);
        let walked = cfg.explore.as_ref().map(|_| {
            Box::new(Walked {
                rounds: Vec::new(),
                end: WalkEnd::Limit,
                off_origin: None,
                typed: Vec::new(),
            })
        });
        ModernFlow {
            next_id: first_id,
            tpl,
            cfg,
            seed,
            marker,
            calls: 0,
            rt: RoundTrip::new(name),
            pending: Pending::Call,
            probe: Probe::Normal,
            applied: false,
            skip_reason: None,
            responses: None,
            state_to_echo: None,
            pages: VecDeque::new(),
            last_retry: None,
            replayed: false,
            finished: false,
            walked,
        }
    }

    /// The first request: the plain tool call.
    pub fn start(&mut self) -> Outgoing {
        self.calls = 1;
        self.pending = Pending::Call;
        self.probe = Probe::Normal;
        self.mcp_request(
            "tools/call #1".into(),
            &RetryParams::default(),
            Auth::Primary,
        )
    }

    /// Feeds the reply to the last [`Outgoing`].
    pub fn on_reply(&mut self, reply: HttpReply) -> Step {
        if self.finished {
            return self.done_again();
        }
        let (state, app) = reply.server_timing;
        let mut leg = Leg {
            name: Cow::Borrowed(""),
            status: Some(reply.status),
            to_headers: reply.to_headers,
            to_first_byte: reply.to_first_byte,
            total: reply.total,
            server_state: state,
            server_app: app,
            connection: reply.connection,
            to_first_event: reply.to_first_event,
            result: LegResult::Page,
        };
        match std::mem::replace(&mut self.pending, Pending::Call) {
            Pending::Call if self.walked.is_some() => self.walk_reply(&reply),
            Pending::Call => {
                leg.name = self.current_call_leg();
                if let Some(why) = self.misroute(&reply.body) {
                    leg.result = LegResult::Http {
                        status: reply.status,
                    };
                    self.rt.legs.push(leg);
                    return self.finish(Outcome::unexpected(ErrorClass::Misrouted, why));
                }
                let (result, event) = self.interpret(&reply);
                leg.result = result;
                self.rt.legs.push(leg);
                self.handle(event)
            }
            Pending::Page(mut visit) => {
                leg.name = visit.leg();
                match visit.on_reply(reply.status, &reply.body) {
                    PageStep::Send(submit) => {
                        if let Some(w) = self.walked.as_mut() {
                            w.typed.extend(visit.take_typed());
                        }
                        self.rt.legs.push(leg);
                        self.pending = Pending::Page(visit);
                        Step::Send(submit)
                    }
                    PageStep::Done(_) => {
                        self.rt.legs.push(leg);
                        self.next_page_or_retry()
                    }
                    PageStep::Failed(e) => {
                        if matches!(
                            e,
                            PageError::GetRefused { .. } | PageError::PostRefused { .. }
                        ) {
                            leg.result = LegResult::Http {
                                status: reply.status,
                            };
                        }
                        self.rt.legs.push(leg);
                        self.page_failed(e.to_string())
                    }
                }
            }
        }
    }

    /// Feeds a failure to get any reply for the last [`Outgoing`].
    pub fn on_failure(&mut self, failure: LegFailure, elapsed: Duration) -> Step {
        if self.finished {
            return self.done_again();
        }
        if self.walked.is_some() {
            return self.walk_failure(failure, elapsed);
        }
        let name = match std::mem::replace(&mut self.pending, Pending::Call) {
            Pending::Call => self.current_call_leg(),
            Pending::Page(visit) => visit.leg(),
        };
        let outcome = match &failure {
            LegFailure::Timeout => Outcome::unexpected(
                ErrorClass::Timeout,
                format!("{name} timed out after {elapsed:?}"),
            ),
            LegFailure::Transport(why) => {
                Outcome::unexpected(ErrorClass::Transport, format!("{name}: {why}"))
            }
        };
        self.rt
            .legs
            .push(Leg::failed(name, (&failure).into(), elapsed));
        self.finish(outcome)
    }

    /// Whether the flow has ended.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The name of the call leg in flight (borrowed for the first call and
    /// a replay: no copy on most legs).
    fn current_call_leg(&self) -> Cow<'static, str> {
        if self.probe == Probe::Replay {
            "tools/call replay".into()
        } else if self.calls <= 1 {
            "tools/call #1".into()
        } else {
            format!("tools/call #{} retry", self.calls).into()
        }
    }

    fn mcp_request(&mut self, leg: Cow<'static, str>, extra: &RetryParams, auth: Auth) -> Outgoing {
        let id = match &self.cfg.explore {
            Some(x) => x.ids.next(),
            None => self.next_id,
        };
        self.next_id = id.wrapping_add(1);
        Outgoing {
            leg,
            target: Target::Mcp,
            method: HttpMethod::Post,
            headers: self.tpl.headers.clone(),
            body: self.tpl.body(id, self.sent_marker(), extra),
            auth,
        }
    }

    /// The marker this round trip's calls carry, if any.
    fn sent_marker(&self) -> Option<u64> {
        self.marker.filter(|_| self.tpl.is_marked())
    }

    /// The evidence of a misroute in a reply (see [`marker::misroute`]).
    fn misroute(&mut self, body: &[u8]) -> Option<String> {
        let n = self.marker?;
        match marker::judge(body, n, self.tpl.is_marked(), || self.current_call_leg()) {
            Ok(ours) => {
                self.rt.attributed |= ours;
                None
            }
            Err(why) => Some(why.to_string()),
        }
    }

    fn last_sent_id(&self) -> RequestId {
        RequestId::Number(self.next_id.wrapping_sub(1))
    }

    /// Reads an MCP reply into a leg result and an event.
    fn interpret(&self, reply: &HttpReply) -> (LegResult, Event) {
        let status = reply.status;
        let ok = (200..300).contains(&status);
        if status == 202 {
            return (
                LegResult::Accepted,
                Event::Violation("202 Accepted for a request: a response was due".into()),
            );
        }
        if let Some(fast) = self.interpret_plain_complete(reply) {
            return fast;
        }
        let decoded = match decode_body(reply.content_type.as_deref(), &reply.body) {
            Ok(d) => d,
            Err(e) if ok => {
                return (
                    LegResult::Http { status },
                    Event::Violation(format!("undecodable response body: {e}")),
                );
            }
            Err(_) => return (LegResult::Http { status }, Event::Http(status)),
        };
        let expected = self.last_sent_id();
        let mut found = None;
        let mut after_final = 0usize;
        for m in decoded.messages {
            if found.is_some() {
                after_final += 1;
                continue;
            }
            match m {
                Message::Request(r) => {
                    return (
                        LegResult::Http { status },
                        Event::Violation(format!(
                            "the server sent a JSON-RPC request ({}) on a 2026-07-28 response",
                            r.method
                        )),
                    );
                }
                Message::Notification(_) => {}
                Message::Response(r) => {
                    if r.id.is_some() && r.id.as_ref() != Some(&expected) {
                        return (
                            LegResult::Http { status },
                            Event::Violation(format!(
                                "response id {} does not match request id {expected}",
                                r.id.as_ref().map_or("null".into(), |i| i.to_string())
                            )),
                        );
                    }
                    found = Some(r);
                }
            }
        }
        let Some(resp) = found else {
            return if ok {
                (
                    LegResult::Http { status },
                    Event::Violation("no JSON-RPC response in the body".into()),
                )
            } else {
                (LegResult::Http { status }, Event::Http(status))
            };
        };
        match resp.outcome {
            RpcOutcome::Error(e) => {
                let reason = e
                    .data
                    .as_ref()
                    .and_then(|d| d.get("reason"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (
                    LegResult::RpcError {
                        code: e.code,
                        reason: reason.clone(),
                    },
                    Event::RpcError(e.code, reason, e.message, status),
                )
            }
            RpcOutcome::Result(v) => {
                let is_error = v.get("isError").and_then(Value::as_bool).unwrap_or(false);
                let complete = LegResult::Complete { is_error };
                if after_final > 0 {
                    return (
                        complete,
                        Event::Violation(format!(
                            "{after_final} message(s) after the final response on the stream"
                        )),
                    );
                }
                let declared = match ResultType::of(&v) {
                    None if self.cfg.read_by_shape => Some(ResultType::read(&v)),
                    d => d,
                };
                match declared {
                    None => (
                        complete,
                        Event::Violation(
                            "result has no resultType (required from a 2026-07-28 server)".into(),
                        ),
                    ),
                    Some(ResultType::Complete) => {
                        let kept = (self.cfg.keep_final_result || is_error).then_some(v);
                        (complete, Event::Complete(is_error, kept))
                    }
                    Some(ResultType::InputRequired) => match InputRequiredResult::from_value(&v) {
                        Some(ir) => (LegResult::InputRequired, Event::InputRequired(ir, v)),
                        None => (
                            LegResult::InputRequired,
                            Event::Violation("input_required result is not an object".into()),
                        ),
                    },
                    Some(ResultType::Other(t)) => (
                        complete,
                        Event::Violation(format!(
                            "unknown resultType {t:?} (the client advertised no extension)"
                        )),
                    ),
                }
            }
        }
    }

    /// The common case without building a JSON tree: one JSON body holding
    /// a plain `complete` result for the request just sent. `None` sends
    /// everything else to the full reader in [`Self::interpret`], which
    /// judges the same bodies the same way.
    fn interpret_plain_complete(&self, reply: &HttpReply) -> Option<(LegResult, Event)> {
        use serde_json::value::RawValue;
        if reply.status == 202
            || framing_of(reply.content_type.as_deref(), &reply.body) != Framing::Json
        {
            return None;
        }
        let (id, head, kept) = if self.cfg.keep_final_result {
            let peek = peek_result::<&RawValue>(&reply.body)?;
            let head: ResultHead<'_> = serde_json::from_str(peek.result.get()).ok()?;
            let tree: Value = serde_json::from_str(peek.result.get()).ok()?;
            (peek.id, head, Some(tree))
        } else {
            let peek = peek_result::<ResultHead<'_>>(&reply.body)?;
            (peek.id, peek.result, None)
        };
        if RequestId::Number(id) != self.last_sent_id() || head.result_type != Some("complete") {
            return None;
        }
        if head.is_error && kept.is_none() {
            // Rare: read the tree so the error's text can be reported.
            return None;
        }
        Some((
            LegResult::Complete {
                is_error: head.is_error,
            },
            Event::Complete(head.is_error, kept),
        ))
    }

    fn finish(&mut self, outcome: Outcome) -> Step {
        self.finished = true;
        self.rt.outcome = outcome;
        self.rt.total = self.rt.legs_total();
        // Hand the record over; keep its outcome for late calls (which
        // name it again: [`Self::done_again`]).
        let mut rest = RoundTrip::new(String::new());
        rest.outcome = self.rt.outcome.clone();
        rest.total = self.rt.total;
        rest.rounds = self.rt.rounds;
        Step::Done(std::mem::replace(&mut self.rt, rest))
    }

    /// What a call after the end gets: the ended round trip's name,
    /// outcome, total and rounds, without its legs.
    fn done_again(&self) -> Step {
        let mut rt = self.rt.clone();
        rt.name = round_trip_name(&self.cfg);
        Step::Done(rt)
    }

    /// A flow page that could not be completed ends the flow.
    fn page_failed(&mut self, why: String) -> Step {
        match self.walked {
            Some(_) => self.end_walk(WalkEnd::Other(why)),
            None => self.finish(Outcome::unexpected(ErrorClass::HttpError, why)),
        }
    }

    fn violation(&mut self, why: impl Into<String>) -> Step {
        self.finish(Outcome::unexpected(ErrorClass::ProtocolViolation, why))
    }

    fn handle(&mut self, event: Event) -> Step {
        let probe = std::mem::replace(&mut self.probe, Probe::Normal);
        let probing_state = matches!(probe, Probe::Tampered | Probe::Replay | Probe::Cross);
        let what = match probe {
            Probe::Tampered => "a tampered requestState",
            Probe::Replay => "a replayed requestState",
            Probe::Cross => "another principal's requestState",
            _ => "",
        };
        match event {
            Event::Violation(why) => self.violation(why),
            Event::Http(status) => {
                let st = ReplyStatus::new(status, self.cfg.stdio);
                let rejecting = probing_state || matches!(probe, Probe::Invalid(_));
                let auth_refusal = matches!(status, 401 | 403);
                if probing_state && self.cfg.expect.probed_reason && !auth_refusal {
                    self.finish(Outcome::unexpected(
                        ErrorClass::WrongRejection,
                        format!(
                            "{what} was refused with {} (a state rejection is a JSON-RPC error)",
                            st.then(" and ", "no JSON-RPC error")
                        ),
                    ))
                } else if rejecting && (400..500).contains(&status) {
                    self.finish(Outcome::ExpectedRejection {
                        code: None,
                        reason: Some(st.to_string()),
                    })
                } else {
                    self.finish(Outcome::unexpected(
                        ErrorClass::HttpError,
                        format!("{st} without a JSON-RPC response"),
                    ))
                }
            }
            Event::RpcError(code, reason, message, status) => {
                if code == codes::URL_ELICITATION_REQUIRED {
                    return self.violation("-32042 is retired in 2026-07-28 and must not be sent");
                }
                if status >= 500 {
                    // A server failure, whatever the body says: never a proper rejection.
                    return self.finish(Outcome::unexpected(
                        ErrorClass::HttpError,
                        format!(
                            "{} with JSON-RPC error {code} ({message})",
                            ReplyStatus::new(status, self.cfg.stdio)
                        ),
                    ));
                }
                match probe {
                    Probe::Tampered | Probe::Replay | Probe::Cross
                        if self.cfg.expect.probed_reason =>
                    {
                        let expected: &[&str] = match probe {
                            Probe::Tampered => &rejection::INTEGRITY,
                            Probe::Replay => &["replayed"],
                            _ => &["wrong_principal"],
                        };
                        match rejection::state_rejection(code, reason.as_deref(), expected) {
                            Ok(_) => self.finish(Outcome::ExpectedRejection {
                                code: Some(code),
                                reason,
                            }),
                            Err(why) => self.finish(Outcome::unexpected(
                                ErrorClass::WrongRejection,
                                format!("{what}: {why}"),
                            )),
                        }
                    }
                    Probe::Tampered | Probe::Replay | Probe::Cross | Probe::Invalid(_) => self
                        .finish(Outcome::ExpectedRejection {
                            code: Some(code),
                            reason,
                        }),
                    Probe::Refused => self.finish(Outcome::unexpected(
                        ErrorClass::ServerError,
                        format!(
                            "JSON-RPC error {code} ({message}) in reply to a decline/cancel; \
                             a tool result was expected"
                        ),
                    )),
                    Probe::Normal | Probe::ConsentOnly => {
                        self.finish(classify_error(code, reason, &message))
                    }
                }
            }
            Event::Complete(is_error, result) => {
                self.rt.final_result = result;
                match probe {
                    _ if probing_state => self.finish(Outcome::unexpected(
                        ErrorClass::StateAccepted,
                        format!("the server returned a complete result for {what}"),
                    )),
                    Probe::Invalid(_) if is_error => self.finish(Outcome::ExpectedRejection {
                        code: None,
                        reason: Some("tool error result".into()),
                    }),
                    Probe::Invalid(_) => self.finish(Outcome::unexpected(
                        ErrorClass::ContentAccepted,
                        "the server completed with content that fails the requested schema",
                    )),
                    Probe::Refused => self.finish(Outcome::Success),
                    Probe::ConsentOnly => self.violation(
                        "complete result although the URL-mode page was never submitted",
                    ),
                    _ if self.cfg.expect.elicit && self.rt.rounds == 0 => {
                        self.finish(Outcome::unexpected(
                            ErrorClass::DidNotElicit,
                            "did not elicit: the tool completed without asking for input",
                        ))
                    }
                    _ if is_error && !self.cfg.expect.tool_error_ok => {
                        let text = self
                            .rt
                            .final_result
                            .as_ref()
                            .and_then(first_text)
                            .map_or(String::new(), |t| format!(": {t}"));
                        self.finish(Outcome::unexpected(
                            ErrorClass::ToolError,
                            format!("the tool returned an isError result{text}"),
                        ))
                    }
                    _ => self.on_normal_complete(),
                }
            }
            Event::InputRequired(ir, raw) => {
                if ir.input_requests.is_none() && ir.request_state.is_none() {
                    return self
                        .violation("input_required without inputRequests and requestState (S4)");
                }
                if let Some(s) = &ir.request_state {
                    self.rt.request_states.push(s.clone());
                }
                match probe {
                    _ if probing_state => self.finish(Outcome::unexpected(
                        ErrorClass::StateAccepted,
                        format!("the server re-prompted instead of rejecting {what}"),
                    )),
                    Probe::Invalid(keys) => {
                        let asked_again = ir
                            .input_requests
                            .as_ref()
                            .is_some_and(|r| r.keys().any(|k| keys.contains(k)));
                        if asked_again {
                            self.finish(Outcome::ExpectedRejection {
                                code: None,
                                reason: Some("re-prompted".into()),
                            })
                        } else {
                            self.finish(Outcome::unexpected(
                                ErrorClass::ContentAccepted,
                                "the server moved on to the next round after content that \
                                 fails the requested schema",
                            ))
                        }
                    }
                    Probe::Refused => self.finish(Outcome::Success),
                    Probe::ConsentOnly => self.finish(Outcome::ExpectedRejection {
                        code: None,
                        reason: Some("re-prompted".into()),
                    }),
                    _ => self.answer_round(ir, &raw),
                }
            }
        }
    }

    fn on_normal_complete(&mut self) -> Step {
        match &self.cfg.policy {
            AnswerPolicy::AcceptValid => self.finish(Outcome::Success),
            AnswerPolicy::ReplayState if !self.replayed => {
                let Some(params) = self.last_retry.clone() else {
                    return self.finish(Outcome::Skipped(
                        "the tool completed without a retry: nothing to replay".into(),
                    ));
                };
                self.replayed = true;
                self.probe = Probe::Replay;
                self.pending = Pending::Call;
                Step::Send(self.mcp_request("tools/call replay".into(), &params, Auth::Primary))
            }
            _ if self.applied => self.finish(Outcome::Success),
            _ => {
                let why = self.skip_reason.unwrap_or(if self.rt.rounds == 0 {
                    "the tool completed without eliciting"
                } else {
                    "the policy found nothing to apply to"
                });
                self.finish(Outcome::Skipped(why.into()))
            }
        }
    }

    /// Builds the answers for one `input_required` result.
    fn answer_round(&mut self, ir: InputRequiredResult, raw: &Value) -> Step {
        self.rt.rounds += 1;
        if self.rt.rounds > self.cfg.max_rounds {
            let max = self.cfg.max_rounds;
            return self.violation(format!("more than {max} input_required rounds"));
        }
        let raw_count = raw
            .get("inputRequests")
            .and_then(Value::as_object)
            .map_or(0, Map::len);
        if raw.get("inputRequests").is_some_and(|v| !v.is_object()) {
            return self.violation("inputRequests is not an object");
        }
        let requests = ir.input_requests.unwrap_or_default();
        if requests.len() != raw_count {
            return self.violation("an inputRequests value is not a {method, params} object");
        }
        let modes = self.cfg.capabilities.elicit_modes();
        let seed = self.seed ^ (u64::from(self.rt.rounds) << 32);
        let mut responses = Map::new();
        let mut invalid_keys = BTreeSet::new();
        let mut refused = false;
        let mut consent_only = false;
        self.pages.clear();
        for (i, (key, req)) in requests.iter().enumerate() {
            let answer = match req.method.as_str() {
                elicitation::METHOD_CREATE => {
                    let params = match ElicitRequestParams::from_value(&req.params) {
                        Ok(p) => p,
                        Err(e) => return self.violation(format!("inputRequests[{key}]: {e}")),
                    };
                    if !modes.any() {
                        return self.violation(
                            "elicitation requested from a client that declared no elicitation \
                             capability (S5)",
                        );
                    }
                    match &params {
                        ElicitRequestParams::Url(_) if !modes.url => {
                            return self.violation("URL mode sent to a form-only client (S5)");
                        }
                        ElicitRequestParams::Form(_) if !modes.form => {
                            return self.violation("form mode sent to a URL-only client (S5)");
                        }
                        _ => {}
                    }
                    let item_seed = seed ^ (i as u64);
                    let result = match (&self.cfg.policy, &params) {
                        (AnswerPolicy::Decline, _) => {
                            refused = true;
                            ElicitResult::refuse(ElicitAction::Decline)
                        }
                        (AnswerPolicy::Cancel, _) => {
                            refused = true;
                            ElicitResult::refuse(ElicitAction::Cancel)
                        }
                        (AnswerPolicy::UrlConsentOnly, ElicitRequestParams::Url(_)) => {
                            consent_only = true;
                            ElicitResult::consent()
                        }
                        (_, ElicitRequestParams::Url(u)) => {
                            if let Some(origin) = &self.cfg.page_origin
                                && let Some(other) = foreign_origin(origin, &u.url)
                            {
                                return self.finish(Outcome::Skipped(
                                    format!("flow page on another origin ({other}): not followed")
                                        .into(),
                                ));
                            }
                            self.pages.push_back(u.url.clone());
                            ElicitResult::consent()
                        }
                        (AnswerPolicy::AcceptInvalid(kind), ElicitRequestParams::Form(f)) => {
                            match content::invalid_content(&f.requested_schema, *kind, item_seed) {
                                Some(c) => {
                                    invalid_keys.insert(key.clone());
                                    ElicitResult::accept(c)
                                }
                                None => {
                                    self.skip_reason = Some(
                                        "the requested schema cannot express that invalid kind",
                                    );
                                    ElicitResult::accept(content::valid_content(
                                        &f.requested_schema,
                                        item_seed,
                                    ))
                                }
                            }
                        }
                        (_, ElicitRequestParams::Form(f)) => {
                            let mut c = content::valid_content(&f.requested_schema, item_seed);
                            if let Some(pins) = &self.cfg.pinned {
                                content::pin(&mut c, &f.requested_schema, pins);
                            }
                            ElicitResult::accept(c)
                        }
                    };
                    result.to_value()
                }
                "roots/list" => {
                    if self.cfg.capabilities.roots.is_none() {
                        return self.violation(
                            "roots/list requested from a client without the roots capability (S5)",
                        );
                    }
                    json!({"roots": []})
                }
                "sampling/createMessage" => {
                    if self.cfg.capabilities.sampling.is_none() {
                        return self.violation(
                            "sampling requested from a client without the sampling capability (S5)",
                        );
                    }
                    json!({"role":"assistant","content":{"type":"text","text":"elicitkit"},
                           "model":"elicitkit"})
                }
                other => {
                    return self.violation(format!(
                        "inputRequests[{key}] has method {other:?}, not an input request method"
                    ));
                }
            };
            responses.insert(key.clone(), answer);
        }
        self.responses = if raw.get("inputRequests").is_some() {
            Some(responses)
        } else {
            None
        };
        self.state_to_echo = ir.request_state;
        self.probe = if !invalid_keys.is_empty() {
            self.applied = true;
            Probe::Invalid(invalid_keys)
        } else if refused {
            self.applied = true;
            Probe::Refused
        } else if consent_only {
            self.applied = true;
            Probe::ConsentOnly
        } else {
            Probe::Normal
        };
        if matches!(self.cfg.policy, AnswerPolicy::UrlConsentOnly) && !consent_only {
            self.skip_reason = Some("the server sent no URL-mode request");
        }
        self.next_page_or_retry()
    }

    fn next_page_or_retry(&mut self) -> Step {
        if let Some(url) = self.pages.pop_front() {
            if self.walked.is_some()
                && let Some(end) = self.walk_page(&url)
            {
                return end;
            }
            // A walk fills every page from its own seed.
            let seed = match self.walked {
                Some(_) => self.seed,
                None => self.seed ^ u64::from(self.calls),
            };
            let (visit, out) = PageVisit::start(url, seed);
            self.pending = Pending::Page(visit);
            return Step::Send(out);
        }
        self.send_retry()
    }

    fn send_retry(&mut self) -> Step {
        self.calls += 1;
        let first_retry = self.calls == 2;
        let mut state = self.state_to_echo.clone();
        let mut auth = Auth::Primary;
        match &self.cfg.policy {
            // The first retry that carries a state: tools may issue one only
            // from a later round on.
            AnswerPolicy::TamperState(m) if !self.applied => match &state {
                Some(s) => {
                    state = Some(m.apply(s));
                    self.applied = true;
                    self.probe = Probe::Tampered;
                }
                None => self.skip_reason = Some("the server gave no requestState to tamper with"),
            },
            AnswerPolicy::CrossPrincipalReplay if first_retry => {
                auth = Auth::Other;
                self.applied = true;
                self.probe = Probe::Cross;
            }
            _ => {}
        }
        let params = RetryParams {
            responses: self.responses.clone(),
            state,
        };
        if matches!(self.cfg.policy, AnswerPolicy::ReplayState) {
            self.last_retry = Some(params.clone());
        }
        self.pending = Pending::Call;
        let leg = format!("tools/call #{} retry", self.calls);
        Step::Send(self.mcp_request(leg.into(), &params, auth))
    }
}

/// The first text content of a tool result, shortened.
fn first_text(result: &Value) -> Option<String> {
    let t = result
        .get("content")?
        .as_array()?
        .iter()
        .find_map(|c| c.get("text").and_then(Value::as_str))?;
    Some(t.chars().take(160).collect())
}

/// Classifies a JSON-RPC error on a flow that should have succeeded.
pub(crate) fn classify_error(code: i64, reason: Option<String>, message: &str) -> Outcome {
    let (class, what) = match code {
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            (ErrorClass::CapabilityError, "missing client capability")
        }
        codes::INVALID_PARAMS if reason.is_some() => (ErrorClass::StateRejected, "state rejected"),
        codes::HEADER_MISMATCH
        | codes::UNSUPPORTED_PROTOCOL_VERSION
        | codes::INVALID_REQUEST
        | codes::PARSE_ERROR => (ErrorClass::ProtocolViolation, "request refused"),
        c if codes::is_undefined_reserved(c) || c == codes::RETIRED_RESOURCE_NOT_FOUND => (
            ErrorClass::ProtocolViolation,
            "undefined or retired reserved code",
        ),
        _ => (ErrorClass::ServerError, "JSON-RPC error"),
    };
    let reason = reason.map_or(String::new(), |r| format!(", reason {r}"));
    Outcome::unexpected(class, format!("{what}: {code} {message}{reason}"))
}

/// A round trip's name: its scenario's, else its policy's.
fn round_trip_name(cfg: &FlowConfig) -> String {
    cfg.scenario
        .clone()
        .unwrap_or_else(|| cfg.policy.name().to_owned())
}

mod explore;
#[cfg(test)]
mod tests;

pub use explore::{Explore, Ids, RoundSeen, WalkEnd, Walked};
