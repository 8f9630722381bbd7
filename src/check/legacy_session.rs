//! 2025-11-25 sessions: a small observing driver (open a session, call a
//! tool, read its SSE stream incrementally, answer each `elicitation/create`
//! with a chosen action, optionally complete URL pages) that keeps every
//! message for the checks; discovery of a 2025-11-25 target; and the session
//! checks (§3.1, §3.2, §6.A 1, 19): handshake, 404 after DELETE, 400 on a
//! bad `MCP-Protocol-Version`, 400 without a session id.

use super::discover::{CheckError, is_single_use, legacy_initialize_request, sample_arguments};
use super::mask;
use super::model::{Check, Exchange, Verdict};
use super::probe::{FirstReply, Probe, Settings, Target, ToolProfile, all_modes};
use super::raw::{self, RawRequest, Rpc};
use crate::client::browser::find_form;
use crate::client::content::{InvalidKind, invalid_content, valid_content};
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::jsonrpc::{
    Message, Outcome as RpcOutcome, RequestId, message_from_value, parse_json,
};
use crate::protocol::legacy::METHOD_INITIALIZED;
use crate::protocol::sse::SseParser;
use crate::protocol::version::LEGACY;
use crate::protocol::{ClientCapabilities, Generation};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::time::Duration;
use tokio::time::Instant;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-handshake",
            "§3.1 / §6.A 1",
            Must,
            Legacy,
            "initialize returns protocolVersion, capabilities, serverInfo; a visible-ASCII session id; initialized gets 202",
            handshake
        ),
        check!(
            "legacy-session-deleted-404",
            "§3.2 / §6.A 19",
            Must,
            Legacy,
            "a request on a deleted session gets HTTP 404",
            deleted_404
        ),
        check!(
            "legacy-bad-version-400",
            "§3.2 / §6.A 19",
            Must,
            Legacy,
            "an unsupported MCP-Protocol-Version on a session request gets HTTP 400",
            bad_version
        ),
        check!(
            "legacy-missing-session-400",
            "§3.2 / §6.A 19",
            Should,
            Legacy,
            "a request without the session id the server issued gets HTTP 400",
            missing_session
        ),
    ]
}

/// An open 2025-11-25 session.
#[derive(Debug, Clone)]
pub struct Session {
    /// `MCP-Session-Id`, if the server issued one.
    pub sid: Option<String>,
    /// The `initialize` result.
    pub init: Value,
    /// Status of `notifications/initialized` (None: not sent).
    pub initialized_status: Option<u16>,
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
    /// Accept with content of the wrong type for the schema (form mode).
    Invalid,
    /// Observe only: accept form requests validly, and at the first
    /// URL-mode request stop reading (the stream is dropped unanswered).
    /// Neither decline nor cancel is sent, so flaws on those paths do not
    /// disturb probes that only look at what the server asks.
    Observe,
    /// Stop reading at the first `elicitation/create` (discovery: see what a
    /// tool asks without answering, so nothing runs to a side effect).
    Peek,
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
    /// HTTP status and body length of each answer POST.
    pub answer_replies: Vec<(u16, usize)>,
    /// Notification methods and params seen on the stream.
    pub notifications: Vec<(String, Value)>,
    /// The response to the call, if it came.
    pub response: Option<Rpc>,
    /// Why the stream ended without a response (timeout, transport, parse).
    pub failure: Option<String>,
    /// The driver stopped reading on purpose ([`Answer::Observe`] at URL mode).
    pub abandoned: bool,
    /// With `watch_close`: whether the stream closed within a second of the
    /// response, and how many messages came after it.
    pub after_response: Option<(bool, usize)>,
    /// Every raw response body of JSON-RPC messages with an error (for -32042).
    pub errors: Vec<Value>,
}

fn session_post(p: &Probe, label: &str, s: &Session, body: Value) -> RawRequest {
    let mut r = RawRequest::new(label, reqwest::Method::POST, p.settings().mcp_url.clone())
        .header("Accept", raw::ACCEPT_BOTH)
        .header("Content-Type", "application/json")
        .header(PROTOCOL_VERSION, LEGACY)
        .token(Some(&p.settings().principal))
        .body(body.to_string());
    if let Some(sid) = &s.sid {
        r = r.header(SESSION_ID, sid.clone());
    }
    r
}

/// Opens a session with `caps`; sends `notifications/initialized` when asked.
pub async fn open(
    p: &Probe,
    caps: &ClientCapabilities,
    initialized: bool,
) -> Result<Session, String> {
    let init = legacy_initialize_request(p.settings(), p.target().next_id(), &caps.to_value());
    let reply = p.send(init).await.map_err(|e| format!("initialize: {e}"))?;
    let result = match reply.rpc() {
        Rpc::Result(v) => v,
        other => return Err(format!("initialize answered {}", other.describe())),
    };
    let mut s = Session {
        sid: reply.header(SESSION_ID).map(str::to_owned),
        init: result,
        initialized_status: None,
    };
    if initialized {
        let req = session_post(
            p,
            "notifications/initialized",
            &s,
            json!({"jsonrpc":"2.0","method":METHOD_INITIALIZED}),
        );
        let r = p
            .send(req)
            .await
            .map_err(|e| format!("notifications/initialized: {e}"))?;
        s.initialized_status = Some(r.status);
    }
    Ok(s)
}

/// A session request (any method) on `s`.
pub fn request(p: &Probe, s: &Session, label: &str, method: &str, params: Value) -> RawRequest {
    session_post(
        p,
        label,
        s,
        json!({"jsonrpc":"2.0","id":p.target().next_id(),"method":method,"params":params}),
    )
}

fn answer_value(answer: &Answer, params: &Value, seed: u64) -> Value {
    let url_mode = params.get("mode").and_then(Value::as_str) == Some("url");
    match answer {
        Answer::Accept { .. } | Answer::Observe if url_mode => json!({"action":"accept"}),
        Answer::Accept { .. } | Answer::Observe => {
            let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
            json!({"action":"accept","content": valid_content(schema, seed)})
        }
        Answer::Invalid => {
            let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
            let content = invalid_content(schema, InvalidKind::WrongType, seed).unwrap_or_default();
            json!({"action":"accept","content": content})
        }
        Answer::Decline => json!({"action":"decline"}),
        Answer::Cancel => json!({"action":"cancel"}),
        Answer::Error(_) | Answer::Peek => Value::Null,
    }
}

/// Completes a URL page as a browser would (GET, fill the first form, submit).
async fn complete_page(p: &Probe, url: &str) {
    let Ok(base) = url::Url::parse(&p.settings().mcp_url) else {
        return;
    };
    let Ok(page_url) = base.join(url) else { return };
    if page_url.host() != base.host() {
        return;
    }
    let token = p.settings().principal.clone();
    let get = RawRequest::new("flow page GET", reqwest::Method::GET, page_url.to_string())
        .header("Accept", "text/html")
        .token(Some(&token));
    let Ok(page) = p.send(get).await else { return };
    let Some(form) = find_form(&String::from_utf8_lossy(&page.body)) else {
        return;
    };
    let post = RawRequest::new(
        "flow page POST",
        reqwest::Method::POST,
        form.target(page_url.as_str()),
    )
    .header("Content-Type", "application/x-www-form-urlencoded")
    .token(Some(&token))
    .body(form.encoded_body(p.settings().seed));
    let _ = p.send(post).await;
}

/// Calls `tool` on `s`, reads the stream to the call's response (bounded by
/// the check timeout), answering every `elicitation/create` with `answer`.
pub async fn call(
    p: &Probe,
    s: &Session,
    tool: &str,
    args: &Map<String, Value>,
    answer: Answer,
) -> Streamed {
    call_watching(p, s, tool, args, answer, false).await
}

/// [`call`]; with `watch_close`, also reads on for up to a second after the
/// response to see whether the stream closes and whether anything follows.
pub async fn call_watching(
    p: &Probe,
    s: &Session,
    tool: &str,
    args: &Map<String, Value>,
    answer: Answer,
    watch_close: bool,
) -> Streamed {
    let id = p.target().next_id();
    let req = session_post(
        p,
        &format!("tools/call {tool} (stream)"),
        s,
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}),
    );
    let mut out = Streamed::default();
    let mut transcript = String::new();
    let deadline = Instant::now() + p.settings().timeout;
    let mut rb = p.target().http.post(&req.url).body(req.body.clone());
    if let Some(t) = &req.token {
        rb = rb.bearer_auth(t);
    }
    for (k, v) in &req.headers {
        rb = rb.header(k.as_str(), v.as_str());
    }
    let evidence = req.evidence();
    let resp = match tokio::time::timeout_at(deadline, rb.send()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            out.failure = Some(format!("transport: {e}"));
            p.record(Exchange {
                label: req.label,
                request: evidence,
                response: out.failure.clone().unwrap_or_default(),
            });
            return out;
        }
        Err(_) => {
            out.failure = Some("timeout before the response headers".into());
            p.record(Exchange {
                label: req.label,
                request: evidence,
                response: out.failure.clone().unwrap_or_default(),
            });
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
    let mut body = resp.bytes_stream();
    let mut parser = SseParser::new();
    let mut whole = Vec::new();
    let mut pending: Vec<(Value, Value)> = Vec::new();
    'read: loop {
        let chunk = match tokio::time::timeout_at(deadline, body.next()).await {
            Err(_) => {
                out.failure = Some("timeout: the call's response did not arrive".into());
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                out.failure = Some(format!("stream error: {e}"));
                break;
            }
            Ok(Some(Ok(c))) => c,
        };
        if !sse {
            whole.extend_from_slice(&chunk);
            continue;
        }
        let mut events = Vec::new();
        if parser.push(&chunk, &mut events).is_err() {
            out.failure = Some("SSE event too large".into());
            break;
        }
        for ev in events {
            if ev.data.trim().is_empty() {
                continue;
            }
            let _ = writeln!(transcript, "data: {}", mask::body(ev.data.as_bytes()));
            let Ok(msg) = parse_json(ev.data.as_bytes()).and_then(message_from_value) else {
                out.failure = Some("undecodable SSE event".into());
                break 'read;
            };
            match msg {
                Message::Request(r) if r.method == "elicitation/create" => {
                    let params = r.params.unwrap_or(Value::Null);
                    out.elicitations.push(params.clone());
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
                a => {
                    json!({"jsonrpc":"2.0","id":sid,"result":answer_value(a, &params, p.settings().seed)})
                }
            };
            let post = session_post(p, "elicitation answer POST", s, reply);
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
                complete_page(p, url).await;
            }
        }
    }
    if watch_close && sse && out.response.is_some() {
        let until = (Instant::now() + Duration::from_secs(1)).min(deadline);
        let mut extra = 0;
        let closed = loop {
            match tokio::time::timeout_at(until, body.next()).await {
                Err(_) => break false,
                Ok(None) | Ok(Some(Err(_))) => break true,
                Ok(Some(Ok(c))) => {
                    let mut events = Vec::new();
                    let _ = parser.push(&c, &mut events);
                    extra += events.iter().filter(|e| !e.data.trim().is_empty()).count();
                }
            }
        };
        out.after_response = Some((closed, extra));
    }
    if !sse && !whole.is_empty() {
        let _ = writeln!(transcript, "{}", mask::body(&whole));
        let reply = raw::RawReply {
            status: out.status,
            headers: out
                .content_type
                .iter()
                .map(|c| ("content-type".to_owned(), c.clone()))
                .collect(),
            body: bytes::Bytes::from(whole),
            elapsed: Duration::ZERO,
        };
        out.response = Some(reply.rpc());
        if let Some(Rpc::Error(e)) = &out.response {
            out.errors
                .push(serde_json::to_value(e).unwrap_or(Value::Null));
        }
    }
    if let Some(f) = &out.failure {
        let _ = writeln!(transcript, "({f})");
    }
    p.record(Exchange {
        label: req.label,
        request: evidence,
        response: mask::shorten(&transcript, 4 * mask::MAX_EVIDENCE_CHARS),
    });
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

/// Discovers a 2025-11-25 target: a session with every capability,
/// `tools/list`, and one call per tool (answered with `cancel`).
pub async fn discover_legacy(
    settings: Settings,
    http: reqwest::Client,
) -> Result<Target, CheckError> {
    let url = settings.mcp_url.clone();
    let mut target = Target::new(settings, http, Generation::Legacy);
    let anon =
        legacy_initialize_request(&target.settings, target.next_id(), &all_modes().to_value())
            .token(None);
    let (_, out) = raw::send(&target.http, &anon, target.settings.timeout).await;
    target.authenticates = matches!(out, Ok(ref r) if matches!(r.status, 401 | 403));
    let probe = Probe::new(std::sync::Arc::new(Target::new(
        target.settings.clone(),
        target.http.clone(),
        Generation::Legacy,
    )));
    let s = open(&probe, &all_modes(), true)
        .await
        .map_err(|e| CheckError::NotMcp(url.clone(), e))?;
    let list = request(&probe, &s, "tools/list", "tools/list", json!({}));
    let reply = probe
        .send(list)
        .await
        .map_err(|e| CheckError::Unreachable(url.clone(), e.to_string()))?;
    let listed = match reply.rpc() {
        Rpc::Result(v) => v
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        other => return Err(CheckError::ToolsList(url, other.describe())),
    };
    for wanted in &target.settings.tools {
        if !listed
            .iter()
            .any(|d| d.get("name").and_then(Value::as_str) == Some(wanted))
        {
            return Err(CheckError::UnknownTool(wanted.clone()));
        }
    }
    for d in listed {
        let Some(name) = d.get("name").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        if !target.settings.tools.is_empty() && !target.settings.tools.contains(&name) {
            continue;
        }
        let (arguments, other_arguments) =
            sample_arguments(d.get("inputSchema").unwrap_or(&Value::Null));
        let streamed = call(&probe, &s, &name, &arguments, Answer::Peek).await;
        let first = match (streamed.elicitations.first(), &streamed.response) {
            (Some(e), _) => FirstReply::InputRequired {
                result: e.clone(),
                raw: e.to_string(),
                modes: modes_seen(&streamed.elicitations),
                has_state: false,
            },
            (None, Some(Rpc::Error(e))) => FirstReply::Error(e.code),
            (None, Some(_)) => FirstReply::Complete,
            (None, None) => {
                FirstReply::Other(streamed.failure.unwrap_or_else(|| "no response".into()))
            }
        };
        target.tools.push(ToolProfile {
            single_use: is_single_use(&target.settings, &d),
            name,
            arguments,
            other_arguments,
            first,
        });
    }
    if let Some(sid) = &s.sid {
        let del = RawRequest::new("DELETE session", reqwest::Method::DELETE, url)
            .header(SESSION_ID, sid.clone())
            .header(PROTOCOL_VERSION, LEGACY)
            .token(Some(&target.settings.principal));
        let _ = raw::send(&target.http, &del, target.settings.timeout).await;
    }
    Ok(target)
}

async fn handshake(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::fail(e),
    };
    let mut problems = Vec::new();
    match s.init.get("protocolVersion").and_then(Value::as_str) {
        Some(v) if crate::protocol::version::SUPPORTED.contains(&v) || v < LEGACY => {}
        Some(v) => problems.push(format!(
            "protocolVersion {v:?} is neither 2025-11-25 nor an older version"
        )),
        None => problems.push("no protocolVersion".into()),
    }
    if !s.init.get("capabilities").is_some_and(Value::is_object) {
        problems.push("no capabilities object".into());
    }
    let info = s.init.get("serverInfo");
    if !info
        .and_then(|i| i.get("name"))
        .is_some_and(Value::is_string)
        || !info
            .and_then(|i| i.get("version"))
            .is_some_and(Value::is_string)
    {
        problems.push("serverInfo lacks name or version".into());
    }
    if let Some(sid) = &s.sid
        && (sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)))
    {
        problems.push(format!("MCP-Session-Id {sid:?} is not visible ASCII"));
    }
    if s.initialized_status != Some(202) {
        problems.push(format!(
            "notifications/initialized got HTTP {:?}, not 202",
            s.initialized_status
        ));
    }
    if problems.is_empty() {
        Verdict::pass(format!(
            "handshake complete{}",
            if s.sid.is_some() {
                " with a session id"
            } else {
                ""
            }
        ))
    } else {
        Verdict::fail(problems.join("; "))
    }
}

async fn deleted_404(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    let Some(sid) = s.sid.clone() else {
        return Verdict::skip("the server issues no session id");
    };
    let del = RawRequest::new(
        "DELETE the session",
        reqwest::Method::DELETE,
        p.settings().mcp_url.clone(),
    )
    .header(SESSION_ID, sid)
    .header(PROTOCOL_VERSION, LEGACY)
    .token(Some(&p.settings().principal));
    match p.send(del).await {
        Ok(r) if r.status == 405 => {
            return Verdict::skip("the server does not let clients delete sessions (405)");
        }
        Ok(r) if !(200..300).contains(&r.status) => {
            return Verdict::fail(format!("DELETE got HTTP {}", r.status));
        }
        Ok(_) => {}
        Err(e) => return Verdict::fail(format!("DELETE: {e}")),
    }
    match p
        .send(request(
            &p,
            &s,
            "tools/list on the deleted session",
            "tools/list",
            json!({}),
        ))
        .await
    {
        Ok(r) if r.status == 404 => Verdict::pass("HTTP 404 after DELETE"),
        Ok(r) => Verdict::fail(format!("a deleted session got HTTP {}, not 404", r.status)),
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}

async fn bad_version(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    let req = request(
        &p,
        &s,
        "tools/list with MCP-Protocol-Version: 1999-01-01",
        "tools/list",
        json!({}),
    )
    .header(PROTOCOL_VERSION, "1999-01-01");
    match p.send(req).await {
        Ok(r) if r.status == 400 => Verdict::pass("HTTP 400"),
        Ok(r) => Verdict::fail(format!(
            "an unsupported MCP-Protocol-Version got HTTP {}, not 400",
            r.status
        )),
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}

async fn missing_session(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    if s.sid.is_none() {
        return Verdict::skip("the server issues no session id");
    }
    let bare = Session { sid: None, ..s };
    match p
        .send(request(
            &p,
            &bare,
            "tools/list without MCP-Session-Id",
            "tools/list",
            json!({}),
        ))
        .await
    {
        Ok(r) if r.status == 400 => Verdict::pass("HTTP 400"),
        Ok(r) => Verdict::fail(format!(
            "a request without the session id got HTTP {}, not 400",
            r.status
        )),
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}
