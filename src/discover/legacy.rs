//! A 2025-11-25 observing driver over any [`Wire`]: open a session
//! (`initialize`, then `notifications/initialized` as a correct client
//! does), call a tool, read its POST stream and, when asked, the session's
//! standalone GET stream at the same time, answer every `elicitation/create`
//! from either with a chosen [`Answer`], and keep every message. Discovery
//! peeks with it; the checker judges what it keeps.

use super::page;
use super::wire::{SessionError, Wire};
use crate::client::content::{InvalidKind, invalid_content, valid_content};
use crate::client::mask;
use crate::client::push::{CallFlow, Chunk, Head, Src, Step as Read};
use crate::client::raw::{self, Exchange, RawRequest, Rpc};
use crate::client::session_flow::{
    Ended, Heard, SessionConfig, SessionFlow, SessionRequest, Step, initialize_body,
    session_headers,
};
use crate::protocol::capabilities::{ClientCapabilities, ElicitModes};
use crate::protocol::headers::SESSION_ID;
use crate::protocol::jsonrpc::{Message, RequestId, message_from_value, parse_json};
use crate::protocol::legacy::METHOD_INITIALIZED;
use crate::protocol::sse::SseParser;
use crate::protocol::version::LEGACY;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::time::Duration;
use tokio::time::Instant;

/// An open 2025-11-25 session.
#[derive(Debug, Clone)]
pub struct Session {
    /// `MCP-Session-Id`, if the server issued one.
    pub sid: Option<String>,
    /// The `initialize` result.
    pub init: Value,
    /// Status of `notifications/initialized` (None: not sent).
    pub initialized_status: Option<u16>,
    /// The standalone GET stream, once a call opened it.
    pub get: KeptGet,
}

/// A session's standalone GET stream, kept open from the call that opened
/// it for the session's later calls, as a client keeps it. A server may
/// allow one per session (409 for another) and not notice at once that a
/// dropped one is gone; its next elicitation would go there, unread.
/// Calls that use it take turns.
#[derive(Clone, Default)]
pub struct KeptGet(std::sync::Arc<tokio::sync::Mutex<Option<OpenGet>>>);

impl std::fmt::Debug for KeptGet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeptGet")
    }
}

/// An open GET stream: its status, the rest of its body and the parser
/// holding any event half read.
struct OpenGet {
    status: Option<u16>,
    body: GetBody,
    parser: SseParser,
}

/// The rest of a GET stream's body.
type GetBody = BoxStream<'static, (Src, Chunk<String>)>;

/// How the driver answers each `elicitation/create`.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Accept with valid content (form) or consent (URL); with
    /// `complete_pages`, also complete URL pages as a browser would.
    Accept {
        /// Complete URL pages after consenting.
        complete_pages: bool,
    },
    /// `{"action":"decline"}`.
    Decline,
    /// `{"action":"cancel"}`.
    Cancel,
    /// Reply with a JSON-RPC error (e.g. `-32602` for an undeclared mode).
    Error(i64),
    /// Accept with content that fails the schema in the given way (form
    /// mode).
    Invalid(InvalidKind),
    /// Observe only: accept form requests validly, and at the first
    /// URL-mode request stop reading (the stream is dropped unanswered).
    /// Neither decline nor cancel is sent, so flaws on those paths do not
    /// disturb probes that only look at what the server asks.
    Observe,
    /// Stop reading at the first `elicitation/create` (discovery: see what a
    /// tool asks without answering, so nothing runs to a side effect).
    Peek,
}

/// Options of one streamed call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallOptions {
    /// Read on for up to a second after the response: does the stream close,
    /// and does anything follow?
    pub watch_close: bool,
    /// Also open the session's standalone GET stream and serve the
    /// elicitations that arrive there. Implied for a tool the wire knows
    /// pushes there ([`Wire::pushes_on_get`]).
    pub get_stream: bool,
    /// Send the tool call with this token instead of the wire's principal.
    pub call_token: Option<String>,
    /// Send the answers with this token instead of the wire's principal.
    pub answer_token: Option<String>,
}

/// Everything one streamed tool call showed.
#[derive(Debug, Clone, Default)]
pub struct Streamed {
    /// HTTP status of the tools/call POST.
    pub status: u16,
    /// Its content type.
    pub content_type: Option<String>,
    /// Every `elicitation/create` params, in order.
    pub elicitations: Vec<Value>,
    /// How many of them arrived on the GET stream.
    pub via_get: usize,
    /// HTTP status of the GET stream, when one was asked for and answered.
    pub get_status: Option<u16>,
    /// HTTP status and body length of each answer POST.
    pub answer_replies: Vec<(u16, usize)>,
    /// Notification methods and params seen on the streams.
    pub notifications: Vec<(String, Value)>,
    /// The response to the call, if it came.
    pub response: Option<Rpc>,
    /// Why the stream ended without a response (timeout, transport, parse).
    pub failure: Option<String>,
    /// The driver stopped reading on purpose ([`Answer::Observe`] at URL
    /// mode, [`Answer::Peek`]).
    pub abandoned: bool,
    /// With `watch_close`: whether the stream closed within a second of the
    /// response, and how many messages came after it.
    pub after_response: Option<(bool, usize)>,
    /// Every JSON-RPC error object seen (for `-32042`).
    pub errors: Vec<Value>,
    /// The values typed on the flow pages completed.
    pub typed: Vec<crate::client::browser::Typed>,
}

/// The label of the POSTs answering an `elicitation/create`.
pub const ANSWER_POST: &str = "elicitation answer POST";

/// A 2025-11-25 `initialize` request with the given capabilities.
pub fn initialize_request(url: &str, token: Option<&str>, id: i64, caps: &Value) -> RawRequest {
    session_request("initialize", SessionRequest::Initialize, url, None)
        .token(token)
        .body(initialize_body(&RequestId::Number(id), caps))
}

/// A session request of `kind` to `url`, with its headers
/// ([`session_headers`]), no token yet.
fn session_request(label: &str, kind: SessionRequest, url: &str, sid: Option<&str>) -> RawRequest {
    let r = RawRequest::new(label, kind.method(), url);
    session_headers(kind, LEGACY, sid).fold(r, |r, (k, v)| r.header(k, v))
}

fn session_post<W: Wire + ?Sized>(p: &W, label: &str, s: &Session, body: Value) -> RawRequest {
    session_request(label, SessionRequest::Post, p.mcp_url(), s.sid.as_deref())
        .token(Some(p.token()))
        .body(body.to_string())
}

/// Opens a session with `caps`; sends `notifications/initialized` when asked.
pub async fn open<W: Wire + ?Sized>(
    p: &W,
    caps: &ClientCapabilities,
    initialized: bool,
) -> Result<Session, SessionError> {
    let init = initialize_request(p.mcp_url(), Some(p.token()), p.next_id(), &caps.to_value());
    let reply = p.send(init).await.map_err(SessionError::Initialize)?;
    let result = match reply.rpc() {
        Rpc::Result(v) => v,
        other if reply.status == 401 => {
            return Err(SessionError::Unauthenticated(other.describe()));
        }
        other => return Err(SessionError::Refused(other.describe())),
    };
    let mut s = Session {
        sid: reply.header(SESSION_ID).map(str::to_owned),
        init: result,
        initialized_status: None,
        get: KeptGet::default(),
    };
    if initialized {
        let req = session_post(
            p,
            "notifications/initialized",
            &s,
            json!({"jsonrpc":"2.0","method":METHOD_INITIALIZED}),
        );
        let r = p.send(req).await.map_err(SessionError::Initialized)?;
        s.initialized_status = Some(r.status);
    }
    Ok(s)
}

/// A session request (any method) on `s`.
pub fn request<W: Wire + ?Sized>(
    p: &W,
    s: &Session,
    label: &str,
    method: &str,
    params: Value,
) -> RawRequest {
    session_post(
        p,
        label,
        s,
        json!({"jsonrpc":"2.0","id":p.next_id(),"method":method,"params":params}),
    )
}

/// Ends the session with `DELETE` (best effort).
pub async fn close<W: Wire + ?Sized>(p: &W, s: &Session) {
    if let Some(sid) = &s.sid {
        let del = session_request(
            "DELETE session",
            SessionRequest::Delete,
            p.mcp_url(),
            Some(sid),
        )
        .token(Some(p.token()));
        let _ = p.send(del).await;
    }
}

fn answer_value(answer: &Answer, params: &Value, seed: u64) -> Value {
    let url_mode = params.get("mode").and_then(Value::as_str) == Some("url");
    match answer {
        Answer::Accept { .. } | Answer::Observe if url_mode => json!({"action":"accept"}),
        Answer::Accept { .. } | Answer::Observe => {
            let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
            json!({"action":"accept","content": valid_content(schema, seed)})
        }
        Answer::Invalid(kind) => {
            let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
            let content = invalid_content(schema, *kind, seed).unwrap_or_default();
            json!({"action":"accept","content": content})
        }
        Answer::Decline => json!({"action":"decline"}),
        Answer::Cancel => json!({"action":"cancel"}),
        Answer::Error(_) | Answer::Peek => Value::Null,
    }
}

/// The session's standalone GET stream, asked for.
fn get_request<W: Wire + ?Sized>(p: &W, s: &Session) -> RawRequest {
    session_request(
        "GET stream",
        SessionRequest::GetStream,
        p.mcp_url(),
        s.sid.as_deref(),
    )
    .token(Some(p.token()))
}

/// Opens the session's GET stream; its status and, when it is an open SSE
/// stream, its body (none when the server refused or did not answer within
/// `wait`).
async fn open_get<W: Wire + ?Sized>(
    p: &W,
    s: &Session,
    wait: Duration,
    transcript: &mut String,
) -> (Option<u16>, Option<GetBody>) {
    let mut body = p.core().chunks(&get_request(p, s));
    let head = match tokio::time::timeout(wait, body.next()).await {
        Ok(Some(Chunk::Head(h))) => h,
        Ok(Some(Chunk::Failed(e))) => {
            let _ = writeln!(transcript, "(GET stream: transport error: {e})");
            return (None, None);
        }
        Ok(_) => return (None, None),
        Err(_) => {
            let _ = writeln!(transcript, "(GET stream: no headers within {wait:?})");
            return (None, None);
        }
    };
    let _ = writeln!(transcript, "(GET stream: HTTP {})", head.status);
    let open = head.status == 200 && head.is_sse();
    let body = body.map(|c| (Src::Get, c)).fuse().boxed();
    (Some(head.status), open.then_some(body))
}

/// Opens the session's standalone GET stream and reads it for `window`
/// (no more), answering nothing: its status (`None`: no headers in time)
/// and every server request that arrived, as `(method, params)`.
pub async fn watch_get<W: Wire + ?Sized>(
    p: &W,
    s: &Session,
    window: Duration,
) -> (Option<u16>, Vec<(String, Value)>) {
    let mut transcript = String::new();
    let (status, body) = open_get(p, s, window, &mut transcript).await;
    let until = Instant::now() + window;
    let mut requests = Vec::new();
    if let Some(mut body) = body {
        let mut flow = CallFlow::new(Some(SseParser::new()));
        while let Ok(Some((src, chunk))) = tokio::time::timeout_at(until, body.next()).await {
            flow.on(src, chunk);
            while let Some(Read::Event { data, .. }) = flow.poll() {
                let _ = writeln!(transcript, "GET data: {}", mask::body(data.as_bytes()));
                if let Ok(Message::Request(r)) =
                    parse_json(data.as_bytes()).and_then(message_from_value)
                {
                    requests.push((r.method, r.params.unwrap_or(Value::Null)));
                }
            }
        }
    }
    let _ = writeln!(transcript, "(read for {window:?})");
    let req = get_request(p, s);
    p.record(Exchange {
        label: "GET stream (watched)".into(),
        request: req.evidence(),
        response: transcript,
        status,
    });
    (status, requests)
}

/// Calls `tool` on `s` with `opts` (GET stream, close watching, other
/// tokens), reads the stream to the call's response (bounded by the wire's
/// timeout), answering every `elicitation/create` with `answer` (on the GET
/// stream too, for a tool that pushes there).
pub async fn call<W: Wire + ?Sized>(
    p: &W,
    s: &Session,
    tool: &str,
    args: &Map<String, Value>,
    answer: Answer,
    opts: &CallOptions,
) -> Streamed {
    let id = p.next_id();
    let mut req = session_post(
        p,
        &format!("tools/call {tool} (stream)"),
        s,
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}),
    );
    if let Some(t) = &opts.call_token {
        req = req.token(Some(t));
    }
    let mut out = Streamed::default();
    let mut transcript = String::new();
    let deadline = Instant::now() + p.timeout();
    // A tool known to push on the GET stream is never called without it:
    // its elicitation would wait there unseen and the call look hung.
    let mut kept = if opts.get_stream || p.pushes_on_get(tool) {
        Some(s.get.0.lock().await)
    } else {
        None
    };
    let (get_body, get_parser) = match kept.as_deref_mut().map(Option::take) {
        Some(Some(g)) => {
            let _ = writeln!(transcript, "(GET stream: kept open from an earlier call)");
            out.get_status = g.status;
            (Some(g.body), Some(g.parser))
        }
        Some(None) => {
            let wait = p.timeout().min(Duration::from_secs(2));
            let (status, body) = open_get(p, s, wait, &mut transcript).await;
            out.get_status = status;
            let parser = body.as_ref().map(|_| SseParser::new());
            (body, parser)
        }
        None => (None, None),
    };
    let want = RequestId::Number(id);
    let mut flow = SessionFlow::new(SessionConfig::RECORDING, want, None, get_parser);
    let mut post = p.core().chunks(&req);
    // The POST's head is awaited before the GET stream is read on.
    let head = match tokio::time::timeout_at(deadline, post.next()).await {
        Ok(Some(Chunk::Head(h))) => Some(h),
        Ok(other) => {
            out.failure = Some(match other {
                Some(Chunk::Failed(e)) => format!("transport: {e}"),
                _ => "transport: no response".into(),
            });
            None
        }
        Err(_) => {
            out.failure = Some("timeout before the response headers".into());
            None
        }
    };
    let sse = head.as_ref().is_some_and(Head::is_sse);
    let mut merged = stream::select(
        post.map(|c| (Src::Post, c)).boxed(),
        get_body.unwrap_or_else(|| stream::empty().boxed()),
    );
    if let Some(head) = head {
        out.status = head.status;
        out.content_type = head.content_type.clone();
        let _ = writeln!(
            transcript,
            "HTTP {}\ncontent-type: {}\n",
            out.status,
            out.content_type.as_deref().unwrap_or("-")
        );
        flow.on(Src::Post, Chunk::Head(head));
    }
    let mut pending: Vec<(Value, Value)> = Vec::new();
    'read: while out.failure.is_none() {
        match tokio::time::timeout_at(deadline, merged.next()).await {
            Err(_) => flow.timeout(),
            Ok(None) => break,
            Ok(Some((src, c))) => {
                // The stdio bridge ends a stream the server's exit cut short
                // with an SSE comment saying so (no event): kept as evidence.
                if let Chunk::Data(bytes) = &c {
                    for l in String::from_utf8_lossy(bytes).lines() {
                        if crate::stdio::bridge::gone(l).is_some() {
                            let _ = writeln!(transcript, "{l}");
                        }
                    }
                }
                flow.on(src, c)
            }
        }
        while let Some(step) = flow.poll() {
            match step {
                Step::Read { src, data } => {
                    let tag = if src == Src::Get { "GET data" } else { "data" };
                    let _ = writeln!(transcript, "{tag}: {}", mask::body(data.as_bytes()));
                }
                Step::Heard(Heard::Elicit { src, id, params }) => {
                    out.elicitations.push(params.clone());
                    if src == Src::Get {
                        out.via_get += 1;
                    }
                    pending.push((id.to_value(), params));
                }
                Step::Heard(Heard::Notification { method, params }) => {
                    out.notifications.push((method, params));
                }
                Step::Heard(Heard::Stray(r)) => note_error(&mut out, &r.outcome.into()),
                Step::Heard(Heard::Unanswered { .. } | Heard::Reply(_) | Heard::Violation(_)) => {}
                Step::Done(Ended::Response(r)) => {
                    let rpc = r.outcome.into();
                    note_error(&mut out, &rpc);
                    out.response = Some(rpc);
                    break 'read;
                }
                Step::Done(end) => {
                    out.failure = ended(end, sse, &mut out, &mut transcript);
                    break 'read;
                }
            }
        }
        for (sid, params) in std::mem::take(&mut pending) {
            if answer == Answer::Peek
                || (answer == Answer::Observe
                    && params.get("mode").and_then(Value::as_str) == Some("url"))
            {
                out.abandoned = true;
                break 'read;
            }
            let reply = match &answer {
                Answer::Error(code) => {
                    json!({"jsonrpc":"2.0","id":sid,"error":{"code":code,"message":"elicitkit refuses this elicitation"}})
                }
                a => json!({"jsonrpc":"2.0","id":sid,"result":answer_value(a, &params, p.seed())}),
            };
            let mut post = session_post(p, ANSWER_POST, s, reply);
            if let Some(t) = &opts.answer_token {
                post = post.token(Some(t));
            }
            match p.send(post).await {
                Ok(r) => out.answer_replies.push((r.status, r.body.len())),
                Err(e) => out.answer_replies.push((0, e.to_string().len())),
            }
            if let (
                Answer::Accept {
                    complete_pages: true,
                },
                Some(url),
            ) = (
                &answer,
                params
                    .get("url")
                    .and_then(Value::as_str)
                    .filter(|_| params.get("mode").and_then(Value::as_str) == Some("url")),
            ) && let Ok((_, typed)) = page::complete(p, url).await
            {
                out.typed.extend(typed);
            }
        }
    }
    let mut flow = flow.into_call();
    if opts.watch_close && sse && out.response.is_some() {
        let until = (Instant::now() + Duration::from_secs(1)).min(deadline);
        let mut extra = 0;
        let closed = 'watch: loop {
            match tokio::time::timeout_at(until, merged.next()).await {
                Err(_) => break false,
                Ok(None) => break true,
                Ok(Some((src, c))) => flow.on(src, c),
            }
            while let Some(read) = flow.poll() {
                match read {
                    Read::Event { src: Src::Post, .. } => extra += 1,
                    Read::Event { .. } => {}
                    Read::Done(_) => break 'watch true,
                }
            }
        };
        out.after_response = Some((closed, extra));
    }
    let mut text = transcript;
    if let Some(f) = &out.failure {
        let _ = writeln!(text, "({f})");
    }
    p.record(Exchange {
        label: req.label.clone(),
        request: req.evidence(),
        response: mask::shorten(&text, 4 * mask::MAX_EVIDENCE_CHARS),
        status: [Some(out.status).filter(|s| *s > 0), out.get_status]
            .into_iter()
            .flatten()
            .max(),
    });
    // Puts an open GET stream back for the session's next call.
    if let (Some(slot), Some(parser), Some(200)) =
        (kept.as_deref_mut(), flow.into_get(), out.get_status)
    {
        *slot = Some(OpenGet {
            status: out.get_status,
            body: merged.into_inner().1,
            parser,
        });
    }
    out
}
/// Keeps a JSON-RPC error seen on a call's streams (for `-32042`).
fn note_error(out: &mut Streamed, rpc: &Rpc) {
    if let Rpc::Error(e) = rpc {
        out.errors
            .push(serde_json::to_value(e).unwrap_or(Value::Null));
    }
}

/// How a call that ended without a response read off its streams ended:
/// a whole body read as a reply (kept as the response), or the failure.
fn ended(
    end: Ended<String>,
    sse: bool,
    out: &mut Streamed,
    transcript: &mut String,
) -> Option<String> {
    match end {
        Ended::Response(_) | Ended::Closed => None,
        Ended::Whole { head, body } => {
            let reply = raw::RawReply {
                status: head.status,
                headers: head
                    .content_type
                    .map(|c| ("content-type".to_owned(), c))
                    .into_iter()
                    .collect(),
                body,
                elapsed: Duration::ZERO,
            };
            let _ = writeln!(transcript, "{}", mask::body(&reply.body));
            let rpc = reply.rpc();
            note_error(out, &rpc);
            out.response = Some(rpc);
            None
        }
        Ended::Failed(e) => Some(format!("stream error: {e}")),
        Ended::Malformed(_) if sse => Some("SSE event too large".into()),
        Ended::Malformed(why) => Some(why),
        Ended::Timeout => Some("timeout: the call's response did not arrive".into()),
        Ended::Undecodable { .. } => Some("undecodable SSE event".into()),
        // Not in a recording reading (no marker, whole bodies handed back).
        Ended::Misrouted(why) | Ended::BodyUndecodable { why, .. } => Some(why),
        Ended::NoResponse { status } => Some(format!("HTTP {status} without a JSON-RPC response")),
    }
}

/// Modes of the `elicitation/create` params seen.
pub fn modes_seen(elicitations: &[Value]) -> ElicitModes {
    let mut m = ElicitModes::default();
    for e in elicitations {
        match e.get("mode").and_then(Value::as_str) {
            Some("url") => m.url = true,
            _ => m.form = true,
        }
    }
    m
}
