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
use crate::client::raw::{self, Exchange, RawRequest, Rpc};
use crate::protocol::body::ACCEPT_BOTH;
use crate::protocol::capabilities::{ClientCapabilities, ElicitModes};
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::jsonrpc::{
    Message, Outcome as RpcOutcome, RequestId, message_from_value, parse_json,
};
use crate::protocol::legacy::METHOD_INITIALIZED;
use crate::protocol::sse::SseParser;
use crate::protocol::version::LEGACY;
use bytes::Bytes;
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
    body: BoxStream<'static, (Src, Result<Bytes, String>)>,
    parser: SseParser,
}

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
}

/// The label of the POSTs answering an `elicitation/create`.
pub const ANSWER_POST: &str = "elicitation answer POST";

/// A 2025-11-25 `initialize` request with the given capabilities.
pub fn initialize_request(url: &str, token: Option<&str>, id: i64, caps: &Value) -> RawRequest {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": caps,
            "clientInfo": {"name": "elicitkit", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    RawRequest::new("initialize", reqwest::Method::POST, url)
        .header("Accept", ACCEPT_BOTH)
        .header("Content-Type", "application/json")
        .token(token)
        .body(body.to_string())
}

fn session_post<W: Wire + ?Sized>(p: &W, label: &str, s: &Session, body: Value) -> RawRequest {
    let mut r = RawRequest::new(label, reqwest::Method::POST, p.mcp_url())
        .header("Accept", ACCEPT_BOTH)
        .header("Content-Type", "application/json")
        .header(PROTOCOL_VERSION, LEGACY)
        .token(Some(p.token()))
        .body(body.to_string());
    if let Some(sid) = &s.sid {
        r = r.header(SESSION_ID, sid.clone());
    }
    r
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
        let del = RawRequest::new("DELETE session", reqwest::Method::DELETE, p.mcp_url())
            .header(SESSION_ID, sid.clone())
            .header(PROTOCOL_VERSION, LEGACY)
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

/// Which response a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    Post,
    Get,
}

/// The session's standalone GET stream, asked for.
fn get_request<W: Wire + ?Sized>(p: &W, s: &Session) -> RawRequest {
    let req = RawRequest::new("GET stream", reqwest::Method::GET, p.mcp_url())
        .header("Accept", "text/event-stream")
        .header(PROTOCOL_VERSION, LEGACY)
        .token(Some(p.token()));
    match &s.sid {
        Some(sid) => req.header(SESSION_ID, sid.clone()),
        None => req,
    }
}

/// Opens the session's GET stream; its status and body (empty when the
/// server refused or did not answer within `wait`).
async fn open_get<W: Wire + ?Sized>(
    p: &W,
    s: &Session,
    wait: Duration,
    transcript: &mut String,
) -> (
    Option<u16>,
    BoxStream<'static, (Src, Result<Bytes, String>)>,
) {
    let req = get_request(p, s);
    let resp = match tokio::time::timeout(wait, req.builder(p.http()).send()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let _ = writeln!(transcript, "(GET stream: transport error: {e})");
            return (None, stream::empty().boxed());
        }
        Err(_) => {
            let _ = writeln!(transcript, "(GET stream: no headers within {wait:?})");
            return (None, stream::empty().boxed());
        }
    };
    let status = resp.status().as_u16();
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let _ = writeln!(transcript, "(GET stream: HTTP {status})");
    if status != 200 || !sse {
        return (Some(status), stream::empty().boxed());
    }
    let body = resp
        .bytes_stream()
        .map(|c| (Src::Get, c.map_err(|e| e.to_string())))
        .fuse()
        .boxed();
    (Some(status), body)
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
    let (status, mut body) = open_get(p, s, window, &mut transcript).await;
    let until = Instant::now() + window;
    let mut parser = SseParser::new();
    let mut requests = Vec::new();
    while let Ok(Some((_, Ok(chunk)))) = tokio::time::timeout_at(until, body.next()).await {
        let mut events = Vec::new();
        if parser.push(&chunk, &mut events).is_err() {
            break;
        }
        for ev in events.iter().filter(|e| !e.data.trim().is_empty()) {
            let _ = writeln!(transcript, "GET data: {}", mask::body(ev.data.as_bytes()));
            if let Ok(Message::Request(r)) =
                parse_json(ev.data.as_bytes()).and_then(message_from_value)
            {
                requests.push((r.method, r.params.unwrap_or(Value::Null)));
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

/// Calls `tool` on `s`, reads the stream to the call's response (bounded by
/// the wire's timeout), answering every `elicitation/create` with `answer`
/// (on the GET stream too, for a tool that pushes there).
pub async fn call<W: Wire + ?Sized>(
    p: &W,
    s: &Session,
    tool: &str,
    args: &Map<String, Value>,
    answer: Answer,
) -> Streamed {
    call_with(p, s, tool, args, answer, &CallOptions::default()).await
}

/// [`call`] with options (GET stream, close watching, other tokens).
pub async fn call_with<W: Wire + ?Sized>(
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
    let evidence = req.evidence();
    let record = |out: &Streamed, transcript: &str| {
        let mut text = transcript.to_owned();
        if let Some(f) = &out.failure {
            let _ = writeln!(text, "({f})");
        }
        p.record(Exchange {
            label: req.label.clone(),
            request: evidence.clone(),
            response: mask::shorten(&text, 4 * mask::MAX_EVIDENCE_CHARS),
            status: [Some(out.status).filter(|s| *s > 0), out.get_status]
                .into_iter()
                .flatten()
                .max(),
        });
    };
    // A tool known to push on the GET stream is never called without it:
    // its elicitation would wait there unseen and the call look hung.
    let mut kept = if opts.get_stream || p.pushes_on_get(tool) {
        Some(s.get.0.lock().await)
    } else {
        None
    };
    let (get_status, get_body, get_parser) = match kept.as_deref_mut().map(Option::take) {
        Some(Some(g)) => {
            let _ = writeln!(transcript, "(GET stream: kept open from an earlier call)");
            (g.status, g.body, g.parser)
        }
        Some(None) => {
            let wait = p.timeout().min(Duration::from_secs(2));
            let (status, body) = open_get(p, s, wait, &mut transcript).await;
            (status, body, SseParser::new())
        }
        None => (None, stream::empty().boxed(), SseParser::new()),
    };
    out.get_status = get_status;
    // Puts an open GET stream back for the session's next call.
    let keep = |kept: Option<&mut Option<OpenGet>>, body, parser| {
        if let Some(slot) = kept
            && get_status == Some(200)
        {
            *slot = Some(OpenGet {
                status: get_status,
                body,
                parser,
            });
        }
    };
    let resp = match tokio::time::timeout_at(deadline, req.builder(p.http()).send()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            out.failure = Some(format!("transport: {e}"));
            record(&out, &transcript);
            keep(kept.as_deref_mut(), get_body, get_parser);
            return out;
        }
        Err(_) => {
            out.failure = Some("timeout before the response headers".into());
            record(&out, &transcript);
            keep(kept.as_deref_mut(), get_body, get_parser);
            return out;
        }
    };
    out.status = resp.status().as_u16();
    out.content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let _ = writeln!(
        transcript,
        "HTTP {}\ncontent-type: {}\n",
        out.status,
        out.content_type.as_deref().unwrap_or("-")
    );
    let want = RequestId::Number(id);
    let sse = out
        .content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let post_body = resp
        .bytes_stream()
        .map(|c| (Src::Post, c.map_err(|e| e.to_string())))
        .chain(stream::iter([(Src::Post, Ok(Bytes::new()))]));
    // An empty chunk marks the end of the POST body.
    let mut merged = stream::select(post_body.boxed(), get_body);
    let mut parsers = [SseParser::new(), get_parser];
    let mut whole = Vec::new();
    let mut pending: Vec<(Value, Value)> = Vec::new();
    'read: loop {
        let (src, chunk) = match tokio::time::timeout_at(deadline, merged.next()).await {
            Err(_) => {
                out.failure = Some("timeout: the call's response did not arrive".into());
                break;
            }
            Ok(None) => break,
            Ok(Some((src, Err(e)))) => {
                if src == Src::Post {
                    out.failure = Some(format!("stream error: {e}"));
                    break;
                }
                continue; // a broken GET stream is dropped, not fatal
            }
            Ok(Some((src, Ok(c)))) => (src, c),
        };
        if src == Src::Post && chunk.is_empty() {
            if sse {
                break; // the POST stream closed without the response
            }
            let reply = raw::RawReply {
                status: out.status,
                headers: out
                    .content_type
                    .iter()
                    .map(|c| ("content-type".to_owned(), c.clone()))
                    .collect(),
                body: Bytes::from(std::mem::take(&mut whole)),
                elapsed: Duration::ZERO,
            };
            let _ = writeln!(transcript, "{}", mask::body(&reply.body));
            out.response = Some(reply.rpc());
            if let Some(Rpc::Error(e)) = &out.response {
                out.errors
                    .push(serde_json::to_value(e).unwrap_or(Value::Null));
            }
            break;
        }
        if src == Src::Post && !sse {
            whole.extend_from_slice(&chunk);
            continue;
        }
        // The stdio bridge ends a stream the server's exit cut short with
        // an SSE comment saying so (no event): kept as evidence.
        for l in String::from_utf8_lossy(&chunk).lines() {
            if crate::stdio::bridge::gone(l).is_some() {
                let _ = writeln!(transcript, "{l}");
            }
        }
        let mut events = Vec::new();
        let parser = &mut parsers[usize::from(src == Src::Get)];
        if parser.push(&chunk, &mut events).is_err() {
            if src == Src::Post {
                out.failure = Some("SSE event too large".into());
                break;
            }
            continue;
        }
        for ev in events {
            if ev.data.trim().is_empty() {
                continue;
            }
            let tag = if src == Src::Get { "GET data" } else { "data" };
            let _ = writeln!(transcript, "{tag}: {}", mask::body(ev.data.as_bytes()));
            let Ok(msg) = parse_json(ev.data.as_bytes()).and_then(message_from_value) else {
                if src == Src::Post {
                    out.failure = Some("undecodable SSE event".into());
                    break 'read;
                }
                continue;
            };
            match msg {
                Message::Request(r) if r.method == "elicitation/create" => {
                    let params = r.params.unwrap_or(Value::Null);
                    out.elicitations.push(params.clone());
                    if src == Src::Get {
                        out.via_get += 1;
                    }
                    pending.push((r.id.to_value(), params));
                }
                Message::Request(_) => {}
                Message::Notification(n) => out
                    .notifications
                    .push((n.method, n.params.unwrap_or(Value::Null))),
                Message::Response(r) => {
                    if let RpcOutcome::Error(e) = &r.outcome {
                        out.errors
                            .push(serde_json::to_value(e).unwrap_or(Value::Null));
                    }
                    if r.id.as_ref() == Some(&want) || r.id.is_none() {
                        out.response = Some(match r.outcome {
                            RpcOutcome::Result(v) => Rpc::Result(v),
                            RpcOutcome::Error(e) => Rpc::Error(e),
                        });
                        break 'read;
                    }
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
            ) {
                let _ = page::complete(p, url).await;
            }
        }
    }
    if opts.watch_close && sse && out.response.is_some() {
        let until = (Instant::now() + Duration::from_secs(1)).min(deadline);
        let mut extra = 0;
        let closed = loop {
            match tokio::time::timeout_at(until, merged.next()).await {
                Err(_) => break false,
                Ok(None) => break true,
                Ok(Some((Src::Get, _))) => {}
                Ok(Some((Src::Post, Err(_)))) => break true,
                Ok(Some((Src::Post, Ok(c)))) if c.is_empty() => break true,
                Ok(Some((Src::Post, Ok(c)))) => {
                    let mut events = Vec::new();
                    let _ = parsers[0].push(&c, &mut events);
                    extra += events.iter().filter(|e| !e.data.trim().is_empty()).count();
                }
            }
        };
        out.after_response = Some((closed, extra));
    }
    record(&out, &transcript);
    let [_, get_parser] = parsers;
    keep(kept.as_deref_mut(), merged.into_inner().1, get_parser);
    out
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
