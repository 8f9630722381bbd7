//! The 2025-11-25 client over reqwest: `initialize`, a session, tool calls
//! whose POST stream carries the server's `elicitation/create` requests, the
//! answers POSTed back, and `DELETE` to end the session.
//!
//! Server messages are told apart by `method` (requests and notifications)
//! versus `result`/`error` (responses), never by id. Every wait is bounded by
//! the per-leg timeout. Policies that probe `requestState`
//! (tamper, replay, cross-principal) are 2026-07-28 only and are `Skipped`.

use super::content;
use super::http::{Endpoint, chunks, describe, exchange};
use super::leg::{HttpReply, LegFailure};
use super::modern::{Expectations, classify_error};
use super::outcome::{ErrorClass, Leg, LegResult, Outcome, RoundTrip, parse_server_timing};
use super::page::{PageStep, PageVisit};
use super::policy::AnswerPolicy;
use super::push::{Chunk, Head, Src};
use super::session_flow::{
    Ended, Heard, SessionConfig, SessionFlow, SessionRequest, Step, initialize_body,
    session_headers,
};
use crate::protocol::body::decode_body;
use crate::protocol::capabilities::ClientCapabilities;
use crate::protocol::elicitation::{ElicitAction, ElicitRequestParams, ElicitResult};
use crate::protocol::headers::{INSTANCE, SESSION_ID};
use crate::protocol::jsonrpc::{
    ErrorObject, Message, Outcome as RpcOutcome, Request, RequestId, Response,
};
use crate::protocol::legacy::{InitializeResult, METHOD_INITIALIZED};
use crate::protocol::{codes, version};
use futures::stream::{self, StreamExt};
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};
use tokio::time::Instant as TokioInstant;

/// How a legacy client behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyConfig {
    /// Capabilities declared in `initialize`.
    pub capabilities: ClientCapabilities,
    /// Bound on every leg (a whole tool-call stream counts as one leg).
    pub timeout: Duration,
    /// Seed for generated content and page values.
    pub seed: u64,
    /// Also open the optional GET stream for each tool call and serve the
    /// requests it carries (a 405 or any failure there is recorded, not fatal).
    pub get_stream: bool,
}

impl Default for LegacyConfig {
    fn default() -> Self {
        LegacyConfig {
            capabilities: ClientCapabilities::with_modes(true, true),
            timeout: Duration::from_secs(30),
            seed: 0,
            get_stream: false,
        }
    }
}

/// Why the session could not be set up or ended.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LegacyError {
    /// Connection or I/O failure.
    #[error("{leg}: transport error: {why}")]
    Transport {
        /// Which leg.
        leg: &'static str,
        /// What failed.
        why: String,
    },
    /// A leg exceeded the timeout.
    #[error("{leg}: no reply within the timeout")]
    Timeout {
        /// Which leg.
        leg: &'static str,
    },
    /// An unexpected HTTP status.
    #[error("{leg}: HTTP {status} (expected {expected})")]
    Http {
        /// Which leg.
        leg: &'static str,
        /// The status.
        status: u16,
        /// What a correct server answers.
        expected: &'static str,
    },
    /// The server answered `initialize` with a JSON-RPC error.
    #[error("initialize failed: JSON-RPC error {code}: {message}")]
    Rpc {
        /// Error code.
        code: i64,
        /// Error message.
        message: String,
    },
    /// The reply broke the protocol.
    #[error("{leg}: {why}")]
    Protocol {
        /// Which leg.
        leg: &'static str,
        /// What is wrong.
        why: String,
    },
}

impl LegacyError {
    /// The error of `leg` that got no reply.
    fn of(leg: &'static str) -> impl Fn(LegFailure) -> LegacyError {
        move |f| match f {
            LegFailure::Timeout => LegacyError::Timeout { leg },
            LegFailure::Transport(why) => LegacyError::Transport { leg, why },
        }
    }
}

/// A 2025-11-25 session.
#[derive(Debug)]
pub struct LegacyClient {
    http: reqwest::Client,
    endpoint: Endpoint,
    cfg: LegacyConfig,
    session_id: Option<String>,
    protocol_version: String,
    next_id: i64,
    server: Option<InitializeResult>,
    handshake: Vec<Leg>,
    /// The server refused the GET stream once (e.g. 405): not asked again
    /// on this session.
    get_refused: std::sync::atomic::AtomicBool,
    /// Who answered `initialize`: its `elicitkit-instance` header, else the
    /// peer address. A session lives on that instance.
    answered_by: std::sync::OnceLock<String>,
}

/// What the next final response is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Normal,
    Invalid,
    Refused,
    ConsentOnly,
}

/// What a streamed tool call ended with.
enum Final {
    Response(Response),
    Http(u16),
    Failed(LegFailure),
    Violation(String),
    /// A message carried another round trip's marker: the evidence.
    Misrouted(String),
}

/// Per-call bookkeeping.
struct CallState<'p> {
    policy: &'p AnswerPolicy,
    expect: Expectations,
    pinned: Option<&'p Map<String, Value>>,
    rt: RoundTrip,
    probe: Probe,
    applied: bool,
    reprompted: bool,
    violations: Vec<String>,
    invalid_schema: Option<Value>,
    moved_on: bool,
    /// The round trip's number and whether its marker went out (see
    /// [`super::marker`]); `None` attributes nothing.
    owner: Option<(u64, bool)>,
}

impl<'p> CallState<'p> {
    fn new(
        policy: &'p AnswerPolicy,
        expect: Expectations,
        pinned: Option<&'p Map<String, Value>>,
        owner: Option<(u64, bool)>,
    ) -> Self {
        CallState {
            policy,
            expect,
            pinned,
            rt: RoundTrip::new(policy.name()),
            probe: Probe::Normal,
            applied: false,
            reprompted: false,
            violations: Vec::new(),
            invalid_schema: None,
            moved_on: false,
            owner,
        }
    }
}

fn leg(name: &str, status: Option<u16>, started: Instant, result: LegResult) -> Leg {
    Leg {
        status,
        ..Leg::failed(name.to_owned(), result, started.elapsed())
    }
}

fn header(resp: &reqwest::Response, name: &str) -> Option<String> {
    super::http::header_text(resp.headers(), name)
}

impl LegacyClient {
    /// Opens a session: `initialize` (capabilities from `cfg`), then
    /// `notifications/initialized`, which must be answered 202.
    pub async fn connect(
        http: reqwest::Client,
        endpoint: Endpoint,
        cfg: LegacyConfig,
    ) -> Result<LegacyClient, LegacyError> {
        let mut c = LegacyClient {
            http,
            endpoint,
            cfg,
            session_id: None,
            protocol_version: version::LEGACY.to_owned(),
            next_id: 1,
            server: None,
            handshake: Vec::new(),
            get_refused: std::sync::atomic::AtomicBool::new(false),
            answered_by: std::sync::OnceLock::new(),
        };
        let id = c.take_id();
        let body = initialize_body(&id, &c.cfg.capabilities.to_value());
        let started = Instant::now();
        let name = "initialize";
        let (status, headers_at, ct, timing, session, bytes) = c
            .post_whole(body, SessionRequest::Initialize, name)
            .await
            .map_err(LegacyError::of(name))?;
        let (state, app) = timing.as_deref().map_or((None, None), parse_server_timing);
        let mut l = leg(name, Some(status), started, LegResult::Page);
        l.to_headers = headers_at;
        l.server_state = state;
        l.server_app = app;
        let protocol = |why: String| LegacyError::Protocol { leg: name, why };
        let decoded = decode_body(ct.as_deref(), &bytes);
        let resp = decoded.ok().and_then(|d| {
            d.messages.into_iter().find_map(|m| match m {
                Message::Response(r) if r.id.as_ref() == Some(&id) || r.id.is_none() => Some(r),
                _ => None,
            })
        });
        let result = match resp.map(|r| r.outcome) {
            Some(RpcOutcome::Result(v)) => v,
            Some(RpcOutcome::Error(e)) => {
                l.result = LegResult::RpcError {
                    code: e.code,
                    reason: None,
                };
                c.handshake.push(l);
                return Err(LegacyError::Rpc {
                    code: e.code,
                    message: e.message,
                });
            }
            None if !(200..300).contains(&status) => {
                return Err(LegacyError::Http {
                    leg: name,
                    status,
                    expected: "200",
                });
            }
            None => return Err(protocol("no JSON-RPC response to initialize".into())),
        };
        l.result = LegResult::Complete { is_error: false };
        c.handshake.push(l);
        let init: InitializeResult = serde_json::from_value(result)
            .map_err(|e| protocol(format!("initialize result is malformed: {e}")))?;
        if let Some(sid) = &session
            && (sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        {
            return Err(protocol(format!(
                "{SESSION_ID} {sid:?} is not visible ASCII"
            )));
        }
        c.session_id = session;
        c.protocol_version = init.protocol_version.clone();
        c.server = Some(init);

        let name = "notifications/initialized";
        let started = Instant::now();
        let body = json!({"jsonrpc":"2.0","method": METHOD_INITIALIZED}).to_string();
        let (status, ..) = c
            .post_whole(body, SessionRequest::Post, name)
            .await
            .map_err(LegacyError::of(name))?;
        let result = if status == 202 {
            LegResult::Accepted
        } else {
            LegResult::Http { status }
        };
        c.handshake.push(leg(name, Some(status), started, result));
        if status != 202 {
            return Err(LegacyError::Http {
                leg: name,
                status,
                expected: "202",
            });
        }
        Ok(c)
    }

    /// The session id the server issued, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The server's `initialize` result.
    pub fn server(&self) -> Option<&InitializeResult> {
        self.server.as_ref()
    }

    /// The timed legs of `initialize` and `notifications/initialized`.
    pub fn handshake_legs(&self) -> &[Leg] {
        &self.handshake
    }

    /// The instance that answered this session's `initialize` (see
    /// [`crate::load::metrics::instances`]); `None` before a reply.
    pub fn answered_by(&self) -> Option<&str> {
        self.answered_by.get().map(String::as_str)
    }

    fn take_id(&mut self) -> RequestId {
        let id = RequestId::Number(self.next_id);
        self.next_id += 1;
        id
    }

    /// A session request of `kind` with its headers ([`session_headers`]).
    fn request(&self, kind: SessionRequest) -> reqwest::RequestBuilder {
        let headers = session_headers(kind, &self.protocol_version, self.session_id.as_deref());
        headers.fold(
            self.http
                .request(kind.method(), &self.endpoint.mcp_url)
                .bearer_auth(&self.endpoint.primary_token),
            |req, (k, v)| req.header(k, v),
        )
    }

    /// POSTs `body` and reads the whole reply: status, time to headers,
    /// content type, Server-Timing, session id, body.
    #[allow(clippy::type_complexity)]
    async fn post_whole(
        &self,
        body: String,
        kind: SessionRequest,
        _leg: &str,
    ) -> Result<
        (
            u16,
            Duration,
            Option<String>,
            Option<String>,
            Option<String>,
            bytes::Bytes,
        ),
        LegFailure,
    > {
        let started = Instant::now();
        let req = self.request(kind).body(body);
        let work = async {
            let resp = req.send().await.map_err(|e| describe(&e))?;
            let at = started.elapsed();
            let status = resp.status().as_u16();
            let ct = header(&resp, "content-type");
            let timing = header(&resp, "server-timing");
            let sid = header(&resp, SESSION_ID);
            if let Some(by) =
                header(&resp, INSTANCE).or_else(|| resp.remote_addr().map(|a| a.to_string()))
            {
                let _ = self.answered_by.set(by);
            }
            let bytes = resp.bytes().await.map_err(|e| describe(&e))?;
            Ok::<_, String>((status, at, ct, timing, sid, bytes))
        };
        match tokio::time::timeout(self.cfg.timeout, work).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(LegFailure::Transport(e)),
            Err(_) => Err(LegFailure::Timeout),
        }
    }

    /// Calls a tool and answers every `elicitation/create` on its stream by
    /// `policy`, until the response to the call arrives.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
        policy: &AnswerPolicy,
    ) -> RoundTrip {
        self.call_tool_as(name, arguments, policy, Expectations::LENIENT, None, None)
            .await
    }

    /// [`LegacyClient::call_tool`] judged against `expect`, with answers
    /// `pinned` by field name laid over the generated content. `owner` is
    /// the round trip's number and whether its marker is in `arguments`:
    /// every message of the call (`elicitation/create`, the final
    /// response) carrying another round trip's marker makes it
    /// [`ErrorClass::Misrouted`].
    pub async fn call_tool_as(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
        policy: &AnswerPolicy,
        expect: Expectations,
        pinned: Option<&Map<String, Value>>,
        owner: Option<(u64, bool)>,
    ) -> RoundTrip {
        let wall = Instant::now();
        let mut st = CallState::new(policy, expect, pinned, owner);
        if matches!(
            policy,
            AnswerPolicy::TamperState(_)
                | AnswerPolicy::ReplayState
                | AnswerPolicy::CrossPrincipalReplay
        ) {
            st.rt.outcome = Outcome::Skipped(
                format!(
                    "{} probes requestState, which 2025-11-25 does not have",
                    policy.name()
                )
                .into(),
            );
            return st.rt;
        }
        let id = self.take_id();
        let body = Message::Request(Request {
            id: id.clone(),
            method: "tools/call".into(),
            params: Some(json!({"name": name, "arguments": arguments})),
        })
        .to_json();
        let started = Instant::now();
        let deadline = TokioInstant::now() + self.cfg.timeout;
        let mut stream_leg = leg("tools/call (stream)", None, started, LegResult::Page);
        let fin = self
            .drive_call(body, &id, deadline, &mut stream_leg, &mut st)
            .await;
        stream_leg.total = started.elapsed();
        stream_leg.result = match &fin {
            Final::Response(r) => match &r.outcome {
                RpcOutcome::Result(v) => LegResult::Complete {
                    is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
                },
                RpcOutcome::Error(e) => LegResult::RpcError {
                    code: e.code,
                    reason: reason_of(e),
                },
            },
            Final::Http(status) => LegResult::Http { status: *status },
            Final::Failed(f) => f.into(),
            Final::Violation(_) | Final::Misrouted(_) => LegResult::Http {
                status: stream_leg.status.unwrap_or(0),
            },
        };
        // The stream leg spans the others; keep it first.
        st.rt.legs.insert(0, stream_leg);
        st.rt.outcome = judge(&mut st, fin);
        st.rt.total = wall.elapsed();
        st.rt
    }

    /// Drives the call's [`CallFlow`]: sends the POST (after the GET
    /// stream, when asked for), feeds it what the streams give, and acts on
    /// each message it reads until the call ends.
    async fn drive_call(
        &self,
        body: String,
        id: &RequestId,
        deadline: TokioInstant,
        stream_leg: &mut Leg,
        st: &mut CallState<'_>,
    ) -> Final {
        let started = Instant::now();
        let mut flow = SessionFlow::new(SessionConfig::STRICT, id.clone(), st.owner, None);
        // The optional GET stream is opened first so that a server which
        // routes elicitations there (and answers the POST with plain JSON
        // only at the end) can be served while the POST is pending.
        //
        // The POST waits (briefly) for the GET stream's response head: a
        // server that routes an elicitation to the session's GET stream
        // must already hold this one, not an earlier stream of this
        // session that it has not yet seen close (it would be lost there).
        // A 409 means that earlier stream is still registered: asked again
        // after a pause.
        let mut early = None;
        let get = if self.cfg.get_stream
            && !self.get_refused.load(std::sync::atomic::Ordering::Relaxed)
        {
            let mut attempt = 0;
            loop {
                let req = self.request(SessionRequest::GetStream);
                let mut s = chunks(req, started);
                let wait = (TokioInstant::now() + GET_HEAD_WAIT).min(deadline);
                match tokio::time::timeout_at(wait, s.next()).await {
                    Ok(Some(Chunk::Head(h))) if h.status == 409 && attempt < GET_RETRIES => {
                        attempt += 1;
                        tokio::time::sleep(GET_RETRY_PAUSE).await;
                    }
                    Ok(Some(c)) => {
                        early = Some((Src::Get, c));
                        break s;
                    }
                    Ok(None) => break stream::empty().boxed(),
                    // No head yet (a server that sends it with the first
                    // event): go on, reading the GET beside the POST.
                    Err(_) => break s,
                }
            }
        } else {
            stream::empty().boxed()
        };
        let post = chunks(self.request(SessionRequest::Post).body(body), started);
        let mut merged = stream::select(post.map(|c| (Src::Post, c)), get.map(|c| (Src::Get, c)));
        let fin = loop {
            if let Some(f) = self.act(&mut flow, deadline, st).await {
                break f;
            }
            let (src, chunk) = match early.take() {
                Some(x) => x,
                None => match tokio::time::timeout_at(deadline, merged.next()).await {
                    Err(_) => {
                        flow.timeout();
                        continue;
                    }
                    Ok(None) => {
                        break Final::Failed(LegFailure::Transport(
                            "the POST stream ended without a response".into(),
                        ));
                    }
                    Ok(Some(x)) => x,
                },
            };
            match (src, &chunk) {
                (Src::Post, Chunk::Head(h)) => {
                    stream_leg.to_headers = h.at;
                    stream_leg.status = Some(h.status);
                    let (s, a) = h
                        .timing
                        .as_deref()
                        .map_or((None, None), parse_server_timing);
                    stream_leg.server_state = s;
                    stream_leg.server_app = a;
                }
                (Src::Get, Chunk::Head(h)) => {
                    let open = h.status == 200 && h.is_sse();
                    if !open {
                        self.get_refused
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    let result = if open {
                        LegResult::Page
                    } else {
                        LegResult::Http { status: h.status }
                    };
                    st.rt.legs.push(Leg {
                        status: Some(h.status),
                        ..Leg::failed("GET stream", result, h.at)
                    });
                }
                (Src::Post, Chunk::Data(b)) => note_first_byte(stream_leg, b, started),
                _ => {}
            }
            flow.on(src, chunk);
            if src == Src::Post && stream_leg.to_first_event.is_none() && flow.post_events() > 0 {
                stream_leg.to_first_event = Some(started.elapsed());
            }
        };
        st.rt.attributed |= flow.attributed();
        fin
    }

    /// Does what the flow read so far asks (answers, replies, noted
    /// breaches); `Some` once the call ended.
    async fn act(
        &self,
        flow: &mut SessionFlow<reqwest::Error>,
        deadline: TokioInstant,
        st: &mut CallState<'_>,
    ) -> Option<Final> {
        while let Some(step) = flow.poll() {
            let (name, reply, page) = match step {
                Step::Read { .. } => continue,
                Step::Done(end) => return Some(final_of(end)),
                Step::Heard(Heard::Violation(why)) => {
                    st.violations.push(why);
                    continue;
                }
                Step::Heard(Heard::Elicit { id, params, .. }) => {
                    let (reply, page) = self.answer_elicitation(&id, &params, st);
                    ("elicitation answer POST", reply, page)
                }
                Step::Heard(Heard::Reply(reply)) => ("response POST", reply, None),
                // `notifications/elicitation/complete` needs no action: the
                // result follows on this stream, and unknown ids must be
                // ignored anyway. Other notifications are informational.
                Step::Heard(
                    Heard::Notification { .. } | Heard::Stray(_) | Heard::Unanswered { .. },
                ) => continue,
            };
            // A URL-mode page is completed before the consent is sent, as
            // a quick user would have it done by then: servers that check
            // the flow when the consent arrives (and re-ask while it is
            // pending) see it finished instead of asking again.
            if let Some(url) = page
                && let Err(f) = self.complete_page(url, st).await
            {
                return Some(f);
            }
            if let Err(f) = self.post_answer(name, reply, deadline, st).await {
                return Some(Final::Failed(f));
            }
        }
        None
    }

    /// Builds the answer to an `elicitation/create`, and the page to complete (URL mode).
    fn answer_elicitation(
        &self,
        id: &RequestId,
        params: &Value,
        st: &mut CallState<'_>,
    ) -> (Response, Option<String>) {
        st.rt.rounds += 1;
        let invalid_params = |why: String| {
            Response::error(
                Some(id.clone()),
                ErrorObject::new(codes::INVALID_PARAMS, why),
            )
        };
        let params = match ElicitRequestParams::from_value(params) {
            Ok(p) => p,
            Err(e) => {
                st.violations
                    .push(format!("elicitation/create params: {e}"));
                return (invalid_params(e.to_string()), None);
            }
        };
        let modes = self.cfg.capabilities.elicit_modes();
        let undeclared = match &params {
            _ if !modes.any() => Some("elicitation sent to a client without the capability"),
            ElicitRequestParams::Url(_) if !modes.url => {
                Some("URL mode sent to a form-only client")
            }
            ElicitRequestParams::Form(_) if !modes.form => {
                Some("form mode sent to a URL-only client")
            }
            _ => None,
        };
        if let Some(why) = undeclared {
            st.violations.push(why.to_owned());
            return (invalid_params(why.to_owned()), None);
        }
        if let ElicitRequestParams::Url(u) = &params
            && u.elicitation_id.is_none()
        {
            st.violations
                .push("URL-mode elicitation without elicitationId (required in 2025-11-25)".into());
        }
        if st.probe == Probe::Invalid && !st.reprompted && !st.moved_on {
            // Asked again for the same form: a re-prompt. Asked something
            // else: the server took the invalid content and moved on.
            let same = matches!(&params, ElicitRequestParams::Form(f)
                if Some(&f.requested_schema) == st.invalid_schema.as_ref());
            if same {
                st.reprompted = true;
            } else {
                st.moved_on = true;
            }
        }
        let seed = self.cfg.seed ^ (u64::from(st.rt.rounds) << 32);
        let mut page = None;
        let result = match (st.policy, &params) {
            (AnswerPolicy::Decline, _) => {
                st.applied = true;
                st.probe = Probe::Refused;
                ElicitResult::refuse(ElicitAction::Decline)
            }
            (AnswerPolicy::Cancel, _) => {
                st.applied = true;
                st.probe = Probe::Refused;
                ElicitResult::refuse(ElicitAction::Cancel)
            }
            (AnswerPolicy::UrlConsentOnly, ElicitRequestParams::Url(_)) => {
                st.applied = true;
                st.probe = Probe::ConsentOnly;
                ElicitResult::consent()
            }
            (_, ElicitRequestParams::Url(u)) => {
                page = Some(u.url.clone());
                ElicitResult::consent()
            }
            (AnswerPolicy::AcceptInvalid(kind), ElicitRequestParams::Form(f))
                if st.probe != Probe::Invalid =>
            {
                match content::invalid_content(&f.requested_schema, *kind, seed) {
                    Some(c) => {
                        st.applied = true;
                        st.probe = Probe::Invalid;
                        st.invalid_schema = Some(f.requested_schema.clone());
                        ElicitResult::accept(c)
                    }
                    None => ElicitResult::accept(content::valid_content(&f.requested_schema, seed)),
                }
            }
            (_, ElicitRequestParams::Form(f)) => {
                let mut c = content::valid_content(&f.requested_schema, seed);
                if let Some(pins) = st.pinned {
                    content::pin(&mut c, &f.requested_schema, pins);
                }
                ElicitResult::accept(c)
            }
        };
        (Response::result(id.clone(), result.to_value()), page)
    }

    async fn post_answer(
        &self,
        name: &str,
        reply: Response,
        deadline: TokioInstant,
        st: &mut CallState<'_>,
    ) -> Result<(), LegFailure> {
        let started = Instant::now();
        let send = self
            .request(SessionRequest::Post)
            .body(Message::Response(reply).to_json())
            .send();
        let leg_deadline = deadline.min(TokioInstant::now() + self.cfg.timeout);
        let status = match tokio::time::timeout_at(leg_deadline, send).await {
            Err(_) => {
                let failed = Leg::failed(name.to_owned(), LegResult::Timeout, started.elapsed());
                st.rt.legs.push(failed);
                return Err(LegFailure::Timeout);
            }
            Ok(Err(e)) => {
                let why = describe(&e);
                let result = LegResult::Transport(why.clone());
                let failed = Leg::failed(name.to_owned(), result, started.elapsed());
                st.rt.legs.push(failed);
                return Err(LegFailure::Transport(why));
            }
            Ok(Ok(r)) => r.status().as_u16(),
        };
        let result = if status == 202 {
            LegResult::Accepted
        } else {
            st.violations.push(format!(
                "the server answered a POSTed response with HTTP {status}, not 202"
            ));
            LegResult::Http { status }
        };
        st.rt.legs.push(leg(name, Some(status), started, result));
        Ok(())
    }

    /// Completes the flow page as a browser would ([`PageVisit`]): a page
    /// that cannot be completed is a violation; a request of it that got no
    /// reply ends the call.
    async fn complete_page(&self, url: String, st: &mut CallState<'_>) -> Result<(), Final> {
        let seed = self.cfg.seed ^ u64::from(st.rt.rounds);
        let (mut visit, mut out) = PageVisit::start(url, seed);
        loop {
            let reply = match exchange(&self.http, &self.endpoint, &out, self.cfg.timeout).await {
                Ok(r) => r,
                Err((f, e)) => {
                    st.rt
                        .legs
                        .push(Leg::failed(out.leg.clone(), (&f).into(), e));
                    return Err(Final::Failed(f));
                }
            };
            st.rt.legs.push(page_leg(&out.leg, &reply));
            out = match visit.on_reply(reply.status, &reply.body) {
                PageStep::Send(next) => next,
                PageStep::Done(_) => return Ok(()),
                PageStep::Failed(e) => {
                    st.violations.push(e.to_string());
                    return Ok(());
                }
            };
        }
    }

    /// Ends the session with `DELETE` (the leg's result is `Accepted` on any 2xx).
    pub async fn close(self) -> Result<Leg, LegacyError> {
        let name = "session DELETE";
        let started = Instant::now();
        let send = self.request(SessionRequest::Delete).send();
        let status = match tokio::time::timeout(self.cfg.timeout, send).await {
            Err(_) => return Err(LegacyError::Timeout { leg: name }),
            Ok(Err(e)) => return Err(LegacyError::of(name)(LegFailure::Transport(describe(&e)))),
            Ok(Ok(r)) => r.status().as_u16(),
        };
        if (200..300).contains(&status) {
            Ok(leg(name, Some(status), started, LegResult::Accepted))
        } else {
            Err(LegacyError::Http {
                leg: name,
                status,
                expected: "200 or 204",
            })
        }
    }
}

/// How long a call waits for its GET stream's response head before
/// sending the POST anyway.
const GET_HEAD_WAIT: Duration = Duration::from_millis(250);
/// Times a GET stream answered 409 (an earlier stream of the session still
/// registered) is asked again, and the pause between.
const GET_RETRIES: u32 = 20;
const GET_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// Notes when the first body byte of the POST stream arrived.
fn note_first_byte(leg: &mut Leg, chunk: &[u8], started: Instant) {
    if !chunk.is_empty() && leg.to_first_byte <= leg.to_headers {
        leg.to_first_byte = started.elapsed().max(leg.to_headers);
    }
}

fn reason_of(e: &ErrorObject) -> Option<String> {
    e.data
        .as_ref()
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn page_leg(name: &str, r: &HttpReply) -> Leg {
    let (s, a) = r.server_timing;
    Leg {
        name: name.to_owned().into(),
        status: Some(r.status),
        to_headers: r.to_headers,
        to_first_byte: r.to_headers,
        total: r.total,
        server_state: s,
        server_app: a,
        connection: r.connection,
        to_first_event: r.to_first_event,
        result: if (200..400).contains(&r.status) {
            LegResult::Page
        } else {
            LegResult::Http { status: r.status }
        },
    }
}

/// What the call's end means to the load client.
fn final_of(end: Ended<reqwest::Error>) -> Final {
    let ok = |status: u16| (200..300).contains(&status);
    match end {
        Ended::Response(r) => Final::Response(r),
        Ended::BodyUndecodable { status, why } if ok(status) => {
            Final::Violation(format!("undecodable response body: {why}"))
        }
        Ended::NoResponse { status }
        | Ended::Whole {
            head: Head { status, .. },
            ..
        } if ok(status) => Final::Violation("no JSON-RPC response in the body".into()),
        Ended::BodyUndecodable { status, .. }
        | Ended::NoResponse { status }
        | Ended::Whole {
            head: Head { status, .. },
            ..
        } => Final::Http(status),
        Ended::Undecodable { why, .. } => Final::Violation(format!("bad SSE event data: {why}")),
        Ended::Misrouted(why) => Final::Misrouted(why),
        Ended::Closed => Final::Failed(LegFailure::Transport(
            "the server closed the stream before the response to tools/call".into(),
        )),
        Ended::Failed(e) => Final::Failed(LegFailure::Transport(describe(&e))),
        Ended::Malformed(why) => Final::Violation(why),
        Ended::Timeout => Final::Failed(LegFailure::Timeout),
    }
}

/// Judges the end of a call against the policy.
fn judge(st: &mut CallState<'_>, fin: Final) -> Outcome {
    let fin = match fin {
        Final::Misrouted(why) => return Outcome::unexpected(ErrorClass::Misrouted, why),
        Final::Failed(LegFailure::Timeout) => {
            return Outcome::unexpected(
                ErrorClass::Timeout,
                "the tool call did not finish in time",
            );
        }
        Final::Failed(LegFailure::Transport(why)) => {
            return Outcome::unexpected(ErrorClass::Transport, why);
        }
        Final::Violation(why) => return Outcome::unexpected(ErrorClass::ProtocolViolation, why),
        other => other,
    };
    if let Some(first) = st.violations.first() {
        return Outcome::unexpected(ErrorClass::ProtocolViolation, first.clone());
    }
    let status = st.rt.legs.first().and_then(|l| l.status).unwrap_or(200);
    let resp = match fin {
        Final::Response(r) if status >= 500 => {
            return Outcome::unexpected(
                ErrorClass::HttpError,
                format!("HTTP {status} on the tools/call stream: {:?}", r.outcome),
            );
        }
        Final::Response(r) => r,
        Final::Http(status) => {
            return Outcome::unexpected(
                ErrorClass::HttpError,
                format!("HTTP {status} without a JSON-RPC response"),
            );
        }
        _ => return Outcome::unexpected(ErrorClass::ProtocolViolation, "no final response"),
    };
    match resp.outcome {
        RpcOutcome::Error(e) => {
            let reason = reason_of(&e);
            match st.probe {
                Probe::Invalid => Outcome::ExpectedRejection {
                    code: Some(e.code),
                    reason,
                },
                Probe::Refused => Outcome::unexpected(
                    ErrorClass::ServerError,
                    format!(
                        "JSON-RPC error {} ({}) in reply to a decline/cancel; a tool result was expected",
                        e.code, e.message
                    ),
                ),
                Probe::Normal | Probe::ConsentOnly => classify_error(e.code, reason, &e.message),
            }
        }
        RpcOutcome::Result(v) => {
            let is_error = v.get("isError").and_then(Value::as_bool).unwrap_or(false);
            st.rt.final_result = Some(v);
            match st.probe {
                Probe::Invalid if st.moved_on => Outcome::unexpected(
                    ErrorClass::ContentAccepted,
                    "the server moved on to the next elicitation after content that fails \
                     the requested schema",
                ),
                Probe::Invalid if st.reprompted => Outcome::ExpectedRejection {
                    code: None,
                    reason: Some("re-prompted".into()),
                },
                Probe::Invalid if is_error => Outcome::ExpectedRejection {
                    code: None,
                    reason: Some("tool error result".into()),
                },
                Probe::Invalid => Outcome::unexpected(
                    ErrorClass::ContentAccepted,
                    "the server completed with content that fails the requested schema",
                ),
                Probe::Refused => Outcome::Success,
                Probe::ConsentOnly if is_error => Outcome::ExpectedRejection {
                    code: None,
                    reason: Some("tool error result".into()),
                },
                Probe::ConsentOnly => Outcome::unexpected(
                    ErrorClass::ProtocolViolation,
                    "complete result although the URL-mode page was never submitted",
                ),
                Probe::Normal if st.expect.elicit && st.rt.rounds == 0 => Outcome::unexpected(
                    ErrorClass::DidNotElicit,
                    "did not elicit: the tool completed without asking for input",
                ),
                Probe::Normal if is_error && !st.expect.tool_error_ok => Outcome::unexpected(
                    ErrorClass::ToolError,
                    "the tool returned an isError result",
                ),
                Probe::Normal => match st.policy {
                    AnswerPolicy::AcceptValid => Outcome::Success,
                    _ if st.applied => Outcome::Success,
                    _ if st.rt.rounds == 0 => {
                        Outcome::Skipped("the tool completed without eliciting".into())
                    }
                    _ => Outcome::Skipped("the policy found nothing to apply to".into()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misrouted_call_is_judged_misrouted_whatever_else_it_saw() {
        let policy = AnswerPolicy::AcceptValid;
        let mut st = CallState::new(&policy, Expectations::STRICT, None, Some((7, true)));
        st.violations.push("an earlier breach".into());
        let why = "the reply carries round trip ek-rt-8's marker".to_owned();
        let fin = final_of(Ended::Misrouted(why));
        let out = judge(&mut st, fin);
        assert_eq!(out.error_class(), Some(ErrorClass::Misrouted));
        assert!(format!("{out:?}").contains("ek-rt-8"), "{out:?}");
    }
}
