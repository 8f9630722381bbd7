//! The one raw-request helper that discovery and every check share: send a hand-built HTTP
//! request (any method, any headers, any body, with or without a principal),
//! read the whole reply under a timeout, and record both as masked
//! [`Exchange`] evidence. Flows go through the client's state machine;
//! deliberately broken requests (missing `_meta`, wrong headers, garbage)
//! go through here.

use super::http::{describe, stale_connection};
use super::leg::{HttpMethod, Outgoing};
use super::mask;
use super::rpc;
pub use super::rpc::Rpc;
use crate::protocol::ClientCapabilities;
use crate::protocol::body::{ACCEPT_BOTH, BodyError, DecodedBody, decode_body};
use crate::protocol::headers::request_headers;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mrtr::{META_PROTOCOL_VERSION, RequestMeta};
use crate::protocol::version::MODERN;
use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// One HTTP request and its response, as evidence (secrets masked, long
/// bodies shortened).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exchange {
    /// What the request was for, e.g. `tools/call without _meta`.
    pub label: String,
    /// Request line, headers and body.
    pub request: String,
    /// Status line, headers and body, or what went wrong instead.
    pub response: String,
    /// The reply's HTTP status, if one came; where one record holds several
    /// replies (a call read together with its GET stream), the highest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// A request exactly as it will be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct RawRequest {
    /// What it is for (the evidence label).
    pub label: String,
    /// HTTP method.
    pub method: reqwest::Method,
    /// Absolute URL.
    pub url: String,
    /// Headers other than `Authorization`.
    pub headers: Vec<(String, String)>,
    /// Body (empty for GET / DELETE).
    pub body: Vec<u8>,
    /// Bearer token to attach, if any.
    pub token: Option<String>,
}

impl RawRequest {
    /// A request with no headers and no body.
    pub fn new(label: impl Into<String>, method: reqwest::Method, url: impl Into<String>) -> Self {
        RawRequest {
            label: label.into(),
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            token: None,
        }
    }

    /// A flow's leg as a request to `url`, with `token` attached.
    pub fn from_outgoing(out: &Outgoing, url: impl Into<String>, token: Option<&str>) -> Self {
        let method = match out.method {
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Get => reqwest::Method::GET,
        };
        RawRequest {
            headers: out.headers.to_vec(),
            body: out.body.clone(),
            ..RawRequest::new(out.leg.as_ref(), method, url).token(token)
        }
    }

    /// Sets (replacing) a header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Removes a header.
    pub fn without_header(mut self, name: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    /// Sets the bearer token (`None`: no `Authorization` header).
    pub fn token(mut self, token: Option<&str>) -> Self {
        self.token = token.map(str::to_owned);
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The request with `params[name]` of its JSON-RPC body set to `value`
    /// (any JSON: probes and the fuzzer send malformed ones); a body that is
    /// not a JSON object stays as it is.
    pub fn with_param(mut self, name: &str, value: Value) -> Self {
        if let Ok(mut v) = serde_json::from_slice::<Value>(&self.body)
            && v.is_object()
        {
            v["params"][name] = value;
            self.body = v.to_string().into_bytes();
        }
        self
    }

    /// The request with the `id` of its JSON-RPC body set to `id` (a string
    /// id, to see it echoed as sent); a body that is not a JSON object stays
    /// as it is.
    pub fn with_id(mut self, id: Value) -> Self {
        if let Ok(mut v) = serde_json::from_slice::<Value>(&self.body)
            && v.is_object()
        {
            v["id"] = id;
            self.body = v.to_string().into_bytes();
        }
        self
    }

    /// The request on `http`, ready to send: method, URL, bearer token,
    /// headers, body.
    pub fn builder(&self, http: &reqwest::Client) -> reqwest::RequestBuilder {
        let mut rb = http.request(self.method.clone(), &self.url);
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t);
        }
        for (k, v) in &self.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        if !self.body.is_empty() {
            rb = rb.body(self.body.clone());
        }
        rb
    }

    /// The request as evidence text (secrets masked).
    pub fn evidence(&self) -> String {
        let mut s = format!("{} {}\n", self.method, self.url);
        if self.token.is_some() {
            let _ = writeln!(s, "Authorization: Bearer {}", mask::MASK);
        }
        for (k, v) in &self.headers {
            let _ = writeln!(s, "{k}: {}", mask::header_value(k, v));
        }
        if !self.body.is_empty() {
            s.push('\n');
            s.push_str(&mask::body(&self.body));
        }
        s
    }
}

/// A whole HTTP reply.
#[derive(Debug, Clone, PartialEq)]
pub struct RawReply {
    /// Status code.
    pub status: u16,
    /// Response headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Bytes,
    /// Time until the body was read.
    pub elapsed: Duration,
}

impl RawReply {
    /// A header's value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let lower = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == lower)
            .map(|(_, v)| v.as_str())
    }

    /// The body decoded as JSON or SSE.
    pub fn decoded(&self) -> Result<DecodedBody, BodyError> {
        decode_body(self.header("content-type"), &self.body)
    }

    /// True when the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"))
    }

    /// The JSON-RPC response in the body (the first one).
    pub fn rpc(&self) -> Rpc {
        match self.bridge_said() {
            Some(why) => Rpc::Missing(why),
            None => Rpc::read(self.status, self.header("content-type"), &self.body),
        }
    }

    /// Why the body, already decoded (see [`RawReply::decoded`]), holds no
    /// JSON-RPC response (as [`RawReply::rpc`] says it); `None` when it
    /// holds one. For callers that read the decoded body further.
    pub fn missing_rpc(&self, decoded: &Result<DecodedBody, BodyError>) -> Option<String> {
        self.bridge_said()
            .or_else(|| rpc::missing(self.status, &self.body, decoded))
    }

    /// What the stdio bridge's own reply stands for, in the pipe's words:
    /// silence (its `202` with [`crate::stdio::bridge::NO_REPLY`]), a reply
    /// it made itself ([`crate::stdio::bridge::BRIDGE_SAID`]) or a process
    /// gone before it answered (its `502` naming the exit), never the
    /// bridge's status as the server's.
    fn bridge_said(&self) -> Option<String> {
        if let Some(why) = self.header(crate::stdio::bridge::NO_REPLY) {
            return Some(no_reply(why));
        }
        if let Some(why) = self.header(crate::stdio::bridge::BRIDGE_SAID) {
            return Some(format!("the stdio bridge answered itself: {why}"));
        }
        if self.status != 502 {
            return None;
        }
        let body = std::str::from_utf8(&self.body).ok()?;
        crate::stdio::bridge::gone(body).map(str::to_owned)
    }

    /// The `id` of the JSON-RPC response in the body, if any.
    pub fn response_id(&self) -> Option<RequestId> {
        self.decoded().ok()?.response_id()
    }

    /// The reply as evidence text (secrets masked).
    pub fn evidence(&self) -> String {
        let mut s = format!("HTTP {}\n", self.status);
        for (k, v) in &self.headers {
            if matches!(
                k.as_str(),
                "content-type" | "mcp-session-id" | "www-authenticate" | "allow" | "location"
            ) {
                let _ = writeln!(s, "{k}: {}", mask::header_value(k, v));
            }
        }
        if !self.body.is_empty() {
            s.push('\n');
            s.push_str(&mask::body(&self.body));
        }
        s
    }
}

/// What the stdio bridge's silence (its [`crate::stdio::bridge::NO_REPLY`]
/// header, saying how long it waited) means.
pub fn no_reply(waited: &str) -> String {
    format!("no reply on the stdio server's stdout ({waited})")
}

/// Why no reply was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RawError {
    /// The timeout expired first.
    #[error("no complete reply within {0:?}")]
    Timeout(Duration),
    /// Connection or I/O failure.
    #[error("transport error: {0}")]
    Transport(String),
    /// The connection closed on an oversized request, and a plain request
    /// sent right after was answered: the server refused this one (the
    /// 431/413 it wrote was lost with the connection), it did not fail.
    #[error("refused and closed: {0}")]
    Refused(String),
}

/// Sends `req`, reads the whole reply within `timeout`, and returns the
/// evidence of the exchange with the outcome. A request that met a
/// kept-alive connection the server had closed before any reply began
/// ([`stale_connection`]) is sent once more, on another connection.
pub async fn send(
    http: &reqwest::Client,
    req: &RawRequest,
    timeout: Duration,
) -> (Exchange, Result<RawReply, RawError>) {
    let started = Instant::now();
    let rb = req.builder(http);
    let work = async {
        let again = rb.try_clone();
        let resp = match (rb.send().await, again) {
            // A pooled connection the server had closed (see
            // [`stale_connection`]): no reply began, so the request goes
            // once more, on another connection; a server that breaks the
            // connection on this request breaks the second one too.
            (Err(e), Some(again)) if stale_connection(&e) => again.send().await,
            (r, _) => r,
        }
        .map_err(|e| RawError::Transport(describe(&e)))?;
        let status = resp.status().as_u16();
        let headers = header_pairs(resp.headers());
        let body = resp
            .bytes()
            .await
            .map_err(|e| RawError::Transport(describe(&e)))?;
        Ok(RawReply {
            status,
            headers,
            body,
            elapsed: started.elapsed(),
        })
    };
    let outcome = match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(RawError::Timeout(timeout)),
    };
    (Exchange::of(req, &outcome), outcome)
}

/// A reply's headers as [`RawReply::headers`] holds them: names lowercased,
/// values read as UTF-8 (lossily).
pub fn header_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

impl Exchange {
    /// The evidence of sending `req` and getting `outcome`.
    pub fn of(req: &RawRequest, outcome: &Result<RawReply, RawError>) -> Exchange {
        let (response, status) = match outcome {
            Ok(r) => (r.evidence(), Some(r.status)),
            Err(e) => (e.to_string(), None),
        };
        Exchange {
            label: req.label.clone(),
            request: req.evidence(),
            response,
            status,
        }
    }
}

/// The 2026-07-28 `_meta` elicitkit sends for `caps`.
pub fn meta(caps: &ClientCapabilities) -> Value {
    RequestMeta::checker(caps.clone()).to_value()
}

/// `params` (an object, or `{}`) with `_meta` for `caps` added.
pub fn with_meta(params: Value, caps: &ClientCapabilities) -> Value {
    let mut m = match params {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    m.insert("_meta".into(), meta(caps));
    Value::Object(m)
}

/// A correct 2026-07-28 POST: JSON-RPC request body, `MCP-Protocol-Version`,
/// `Mcp-Method`, `Mcp-Name`, `Accept` and `Content-Type`. Params are sent
/// as given (add `_meta` with [`with_meta`]).
pub fn modern_post(
    label: impl Into<String>,
    url: &str,
    id: i64,
    method: &str,
    params: Option<Value>,
) -> RawRequest {
    let mut req = RawRequest::new(label, reqwest::Method::POST, url);
    let version = params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .unwrap_or(MODERN)
        .to_owned();
    for (k, v) in request_headers(method, params.as_ref(), &version) {
        req = req.header(k, v);
    }
    let mut body = Map::new();
    body.insert("jsonrpc".into(), "2.0".into());
    body.insert("id".into(), id.into());
    body.insert("method".into(), method.into());
    if let Some(p) = params {
        body.insert("params".into(), p);
    }
    req.header("Accept", ACCEPT_BOTH)
        .header("Content-Type", "application/json")
        .body(Value::Object(body).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::mrtr::META_CLIENT_CAPABILITIES;
    use serde_json::json;

    #[test]
    fn modern_post_has_the_2026_headers() {
        let p = with_meta(json!({"name": "deploy"}), &ClientCapabilities::none());
        let r = modern_post("t", "http://127.0.0.1:1/mcp", 7, "tools/call", Some(p));
        let h = |n: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(h("MCP-Protocol-Version").as_deref(), Some(MODERN));
        assert_eq!(h("Mcp-Method").as_deref(), Some("tools/call"));
        assert_eq!(h("Mcp-Name").as_deref(), Some("deploy"));
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["id"], 7);
        assert_eq!(body["params"]["_meta"][META_CLIENT_CAPABILITIES], json!({}));
        assert!(h("Mcp-Method").is_some());
        let r = r.without_header("mcp-method");
        assert!(!r.headers.iter().any(|(k, _)| k == "Mcp-Method"));
    }

    #[test]
    fn rpc_reading_of_replies() {
        let reply = |ct: &str, body: &str| RawReply {
            status: 200,
            headers: vec![("content-type".into(), ct.into())],
            body: Bytes::from(body.to_owned()),
            elapsed: Duration::ZERO,
        };
        let r = reply(
            "application/json",
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"m","data":{"reason":"bad_tag"}}}"#,
        );
        assert_eq!(r.rpc().code(), Some(-32602));
        assert_eq!(r.rpc().reason(), Some("bad_tag"));
        assert_eq!(r.response_id(), Some(RequestId::Number(3)));
        let r = reply(
            "text/event-stream",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}\n\n",
        );
        assert!(r.is_sse());
        assert_eq!(r.rpc().result().unwrap()["resultType"], "complete");
        assert!(matches!(reply("text/plain", "").rpc(), Rpc::Missing(_)));
        assert!(matches!(
            reply("application/json", "{nope").rpc(),
            Rpc::Missing(_)
        ));
    }

    #[test]
    fn the_stdio_bridges_gone_reply_reads_as_the_exit_not_as_a_status() {
        let reply = |status: u16, body: &str| RawReply {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: Bytes::from(body.to_owned()),
            elapsed: Duration::ZERO,
        };
        let gone = "the stdio server exited before answering (exit status: 3); its stderr: boom\n";
        let Rpc::Missing(why) = reply(502, gone).rpc() else {
            panic!("no reply is missing")
        };
        assert_eq!(
            why,
            "the stdio server exited before answering (exit status: 3)"
        );
        // Any other 502 is an HTTP server's, named as such.
        let Rpc::Missing(why) = reply(502, "bad gateway").rpc() else {
            panic!("no reply is missing")
        };
        assert!(why.starts_with("HTTP 502"), "{why}");
    }

    #[test]
    fn a_reply_the_stdio_bridge_made_itself_is_named_by_it_not_by_its_status() {
        let said = crate::stdio::bridge::BRIDGE_SAID;
        let reply = RawReply {
            status: 404,
            headers: vec![(
                said.into(),
                "no stdio server process holds this session".into(),
            )],
            body: Bytes::from_static(b"no stdio server process holds this session\n"),
            elapsed: Duration::ZERO,
        };
        let Rpc::Missing(why) = reply.rpc() else {
            panic!("no reply is missing")
        };
        assert_eq!(
            why,
            "the stdio bridge answered itself: no stdio server process holds this session"
        );
        assert_eq!(reply.missing_rpc(&reply.decoded()), Some(why));
    }

    #[test]
    fn request_evidence_masks_the_token() {
        let r = RawRequest::new("x", reqwest::Method::GET, "http://127.0.0.1:1/mcp")
            .token(Some("alice"));
        let e = r.evidence();
        assert!(e.contains("Bearer ***") && !e.contains("alice"), "{e}");
    }
}
