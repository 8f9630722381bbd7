//! Shared helpers for the server integration tests: start the reference
//! server in-process on an ephemeral port and speak both generations with
//! reqwest.
#![allow(dead_code)]

use elicitkit::server::{RunningServer, ServerConfig};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

pub struct Srv {
    pub server: Handle,
    pub http: reqwest::Client,
    pub url: String,
}

/// The server under test: in this process, or a child process by URL.
pub enum Handle {
    Local(RunningServer),
    Remote(String),
}

impl Handle {
    pub fn base_url(&self) -> String {
        match self {
            Handle::Local(s) => s.base_url(),
            Handle::Remote(base) => base.clone(),
        }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        match self {
            Handle::Local(s) => s.addr(),
            Handle::Remote(base) => base
                .trim_start_matches("http://")
                .parse()
                .expect("http://IP:PORT"),
        }
    }

    /// Stops an in-process server (a child process is the caller's).
    pub async fn shutdown(self) {
        if let Handle::Local(s) = self {
            s.shutdown().await;
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

pub async fn start(cfg: ServerConfig) -> Srv {
    let server = elicitkit::server::start(cfg).await.expect("server starts");
    let url = server.mcp_url();
    Srv {
        server: Handle::Local(server),
        http: client(),
        url,
    }
}

/// A server already running at `base` (`http://IP:PORT`).
pub fn remote(base: &str) -> Srv {
    Srv {
        server: Handle::Remote(base.to_owned()),
        http: client(),
        url: format!("{base}/mcp"),
    }
}

pub fn caps_form() -> Value {
    json!({"elicitation": {"form": {}}})
}
pub fn caps_both() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

pub fn meta(caps: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "server-tests", "version": "0"}
    })
}

/// A full reply: status, headers, parsed JSON body (Null when empty / not JSON).
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn result(&self) -> &Value {
        &self.body["result"]
    }
    pub fn error_code(&self) -> i64 {
        self.body["error"]["code"].as_i64().unwrap_or(0)
    }
    pub fn reason(&self) -> &str {
        self.body["error"]["data"]["reason"].as_str().unwrap_or("")
    }
    pub fn result_type(&self) -> &str {
        self.body["result"]["resultType"].as_str().unwrap_or("")
    }
    pub fn state(&self) -> String {
        self.body["result"]["requestState"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }
    pub fn text_content(&self) -> &str {
        self.body["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
    }
}

pub async fn to_reply(resp: reqwest::Response) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match elicitkit::protocol::body::decode_body(ct.as_deref(), text.as_bytes()) {
        Ok(d) if !text.is_empty() => d
            .messages
            .last()
            .map(|m| m.to_value())
            .unwrap_or(Value::Null),
        _ => serde_json::from_str(&text).unwrap_or(Value::Null),
    };
    Reply {
        status,
        headers,
        body,
        text,
    }
}

/// Posts a raw body with the modern headers for `method` (and `name`).
pub async fn post_raw(
    s: &Srv,
    user: Option<&str>,
    method: &str,
    name: Option<&str>,
    body: String,
) -> Reply {
    try_post_raw(s, user, method, name, body)
        .await
        .expect("request sent")
}

/// [`post_raw`], with a transport failure (no reply at all) as an error.
pub async fn try_post_raw(
    s: &Srv,
    user: Option<&str>,
    method: &str,
    name: Option<&str>,
    body: String,
) -> Result<Reply, String> {
    let mut rb = s
        .http
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if let Some(n) = name {
        rb = rb.header("mcp-name", n);
    }
    if let Some(u) = user {
        rb = rb.header("authorization", format!("Bearer {u}"));
    }
    match rb.body(body).send().await {
        Ok(r) => Ok(to_reply(r).await),
        Err(e) => Err(format!("no reply: {e}")),
    }
}

/// A modern request with `_meta` filled in from `caps`.
pub async fn modern(
    s: &Srv,
    user: &str,
    id: i64,
    method: &str,
    params: Value,
    caps: &Value,
) -> Reply {
    try_modern(s, user, id, method, params, caps)
        .await
        .expect("request sent")
}

/// [`modern`], with a transport failure (no reply at all) as an error.
pub async fn try_modern(
    s: &Srv,
    user: &str,
    id: i64,
    method: &str,
    mut params: Value,
    caps: &Value,
) -> Result<Reply, String> {
    params["_meta"] = meta(caps);
    let name = params["name"].as_str().map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    try_post_raw(s, Some(user), method, name.as_deref(), body.to_string()).await
}

/// The params of a `tools/call` retry.
fn retry_params(tool: &str, args: Value, responses: Value, state: &str) -> Value {
    json!({"name": tool, "arguments": args, "inputResponses": responses, "requestState": state})
}

/// `tools/call` first leg.
pub async fn call(s: &Srv, user: &str, id: i64, tool: &str, args: Value, caps: &Value) -> Reply {
    modern(
        s,
        user,
        id,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        caps,
    )
    .await
}

/// `tools/call` retry with responses and state.
#[allow(clippy::too_many_arguments)]
pub async fn retry(
    s: &Srv,
    user: &str,
    id: i64,
    tool: &str,
    args: Value,
    responses: Value,
    state: &str,
    caps: &Value,
) -> Reply {
    modern(
        s,
        user,
        id,
        "tools/call",
        retry_params(tool, args, responses, state),
        caps,
    )
    .await
}

/// `GET /stats` (it needs credentials: any principal will do).
pub async fn stats(s: &Srv) -> Value {
    let r = s
        .http
        .get(format!("{}/stats", s.server.base_url()))
        .bearer_auth("stats-reader")
        .send()
        .await
        .expect("stats");
    r.json().await.expect("stats json")
}

/// `/stats` once `done` holds of it, read every 20 ms for at most
/// `within` (a background sweep catching up with a jumped clock); the
/// last read either way, for the caller to assert on.
pub async fn stats_once(
    s: &Srv,
    within: std::time::Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let until = tokio::time::Instant::now() + within;
    loop {
        let st = stats(s).await;
        if done(&st) || tokio::time::Instant::now() >= until {
            return st;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A side effect counter in `/stats`.
pub async fn effect_count(s: &Srv, effect: &str) -> u64 {
    stats(s).await["side_effects"][effect]
        .as_u64()
        .unwrap_or_else(|| panic!("no side effect counter {effect}"))
}

/// The CSRF token in a flow page.
pub fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("")
        .to_owned()
}

/// Opens the flow page at `url` as `user` and submits `key` the way a
/// browser does: a form POST carrying the page's own `Origin`.
pub async fn submit_flow_page(s: &Srv, url: &str, user: &str, key: &str) {
    let page = s.http.get(url).bearer_auth(user).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let csrf = csrf_of(&page.text().await.unwrap());
    let r = s
        .http
        .post(url)
        .bearer_auth(user)
        .header("origin", s.server.base_url())
        .form(&[("csrf", csrf.as_str()), ("api_key", key)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "the page's own Origin is allowed");
}

/// The tools with a side effect, and the `/stats` counter of each.
pub const SIDE_EFFECTS: [(&str, &str); 5] = [
    ("deploy", "deployments"),
    ("delete_file", "files_deleted"),
    ("book_trip", "trips_booked"),
    ("profile", "profiles_saved"),
    ("connect_billing", "billing_connected"),
];

/// A tool call brought up to its final retry: sending `answers` with
/// `state` completes it (and performs its side effect).
#[derive(Clone)]
pub struct Final {
    pub tool: String,
    pub args: Value,
    pub answers: Value,
    pub state: String,
}

impl Final {
    /// Sends the final retry (JSON-RPC id `id`).
    pub async fn send(&self, s: &Srv, user: &str, id: i64) -> Reply {
        self.try_send(s, user, id).await.expect("request sent")
    }

    /// [`Final::send`], with a transport failure (no reply at all, as when
    /// an instance dies mid-reply behind a proxy) as an error.
    pub async fn try_send(&self, s: &Srv, user: &str, id: i64) -> Result<Reply, String> {
        let params = retry_params(
            &self.tool,
            self.args.clone(),
            self.answers.clone(),
            &self.state,
        );
        try_modern(s, user, id, "tools/call", params, &caps_both()).await
    }
}

/// Runs `tool` as `user` up to its final retry.
pub async fn to_final(s: &Srv, user: &str, tool: &str) -> Final {
    let caps = caps_both();
    let (args, rounds): (Value, Vec<Value>) = match tool {
        "deploy" => (
            json!({"service": "api"}),
            vec![
                json!({"confirm":{"action":"accept","content":{"environment":"staging","confirm":true}}}),
            ],
        ),
        "delete_file" => (
            json!({"path": "/tmp/x"}),
            vec![json!({"confirm":{"action":"accept","content":{"confirm":true}}})],
        ),
        "book_trip" => (
            json!({"from": "Berlin", "to": "Rome"}),
            vec![
                json!({"itinerary":{"action":"accept","content":{"choice":"it-1"}}}),
                json!({"passenger":{"action":"accept","content":{"name":"A","email":"a@example.com","date":"2027-01-31","bags":1}}}),
                json!({"confirm":{"action":"accept","content":{"confirm":true}}}),
            ],
        ),
        "profile" => (
            json!({}),
            vec![
                json!({"profile":{"action":"accept","content":{"name":"Ada","email":"ada@example.com","age":30,"plan":"free"}}}),
            ],
        ),
        "connect_billing" => (json!({}), vec![json!({"billing":{"action":"accept"}})]),
        other => panic!("no final retry known for {other}"),
    };
    let first = call(s, user, 1, tool, args.clone(), &caps).await;
    assert_eq!(
        first.result_type(),
        "input_required",
        "{tool}: {}",
        first.text
    );
    if tool == "connect_billing" {
        let url = first.result()["inputRequests"]["billing"]["params"]["url"]
            .as_str()
            .unwrap()
            .to_owned();
        submit_flow_page(s, &url, user, "sk-test-0123456789abcd").await;
    }
    let mut state = first.state();
    let (last, before) = rounds.split_last().unwrap();
    for (i, answer) in before.iter().enumerate() {
        let r = retry(
            s,
            user,
            2 + i as i64,
            tool,
            args.clone(),
            answer.clone(),
            &state,
            &caps,
        )
        .await;
        assert_eq!(r.result_type(), "input_required", "{tool}: {}", r.text);
        state = r.state();
    }
    Final {
        tool: tool.to_owned(),
        args,
        answers: last.clone(),
        state,
    }
}

// ---- 2025-11-25 helpers ----

/// Posts a legacy message (session header when given).
pub async fn legacy_post(s: &Srv, user: &str, sid: Option<&str>, body: Value) -> reqwest::Response {
    let mut rb = s
        .http
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {user}"));
    if let Some(sid) = sid {
        rb = rb
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", LEGACY);
    }
    rb.body(body.to_string()).send().await.expect("legacy post")
}

/// `initialize` + `notifications/initialized`; returns the session id.
pub async fn legacy_init(s: &Srv, user: &str, caps: Value) -> String {
    let sid = legacy_init_only(s, user, caps).await.expect("session id");
    initialized(s, user, sid).await
}

/// `initialize` only; returns the session id.
pub async fn legacy_init_only(s: &Srv, user: &str, caps: Value) -> Option<String> {
    let r = legacy_post(
        s,
        user,
        None,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": LEGACY, "capabilities": caps,
            "clientInfo": {"name":"server-tests","version":"0"}}}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 200);
    let sid = r
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: Value = r.json().await.expect("init json");
    assert_eq!(body["result"]["protocolVersion"], LEGACY);
    sid
}

/// Sends `notifications/initialized`.
pub async fn initialized(s: &Srv, user: &str, sid: String) -> String {
    let r = legacy_post(
        s,
        user,
        Some(&sid),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 202);
    sid
}

/// Reads JSON-RPC messages off an SSE response.
pub struct SseReader {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    parser: elicitkit::protocol::sse::SseParser,
    queue: std::collections::VecDeque<elicitkit::protocol::sse::SseEvent>,
    pub priming: usize,
    pub status: u16,
    pub content_type: String,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        SseReader {
            stream: Box::pin(resp.bytes_stream()),
            parser: elicitkit::protocol::sse::SseParser::new(),
            queue: Default::default(),
            priming: 0,
            status,
            content_type,
        }
    }

    /// The next non-empty message; `None` when the stream ends (or 10 s pass).
    pub async fn next(&mut self) -> Option<Value> {
        use futures::StreamExt;
        loop {
            while let Some(ev) = self.queue.pop_front() {
                if ev.data.trim().is_empty() {
                    self.priming += 1;
                    continue;
                }
                return serde_json::from_str(&ev.data).ok();
            }
            let chunk =
                tokio::time::timeout(std::time::Duration::from_secs(10), self.stream.next())
                    .await
                    .ok()??;
            let chunk = chunk.ok()?;
            let mut out = Vec::new();
            self.parser.push(&chunk, &mut out).ok()?;
            self.queue.extend(out);
        }
    }
}

/// Posts a legacy `tools/call` and returns the stream reader.
pub async fn legacy_call(
    s: &Srv,
    user: &str,
    sid: &str,
    id: i64,
    tool: &str,
    args: Value,
) -> SseReader {
    let r = legacy_post(
        s,
        user,
        Some(sid),
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}),
    )
    .await;
    SseReader::new(r)
}

/// Answers a server request `sid_req` with `result`; returns the HTTP status.
pub async fn legacy_answer(s: &Srv, user: &str, sid: &str, req_id: &Value, result: Value) -> u16 {
    legacy_post(
        s,
        user,
        Some(sid),
        json!({"jsonrpc":"2.0","id":req_id,"result":result}),
    )
    .await
    .status()
    .as_u16()
}

/// The first `name=value` of a `Set-Cookie` header naming `name`.
pub fn set_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

/// Signs `user` in on the flow pages as a browser does: opens `next`
/// without credentials (the sign-in form and its CSRF cookie), posts the
/// form with the page's own Origin, and expects the redirect to `next`.
/// Returns the session cookie (`name=value`) to send as `Cookie`.
pub async fn sign_in(s: &Srv, user: &str, next: &str) -> String {
    let base = s.server.base_url();
    let form = s.http.get(format!("{base}{next}")).send().await.unwrap();
    assert_eq!(form.status().as_u16(), 401);
    let login = set_cookie(form.headers(), "ek_login").expect("a CSRF cookie");
    let login = login.split(';').next().unwrap().to_owned();
    let page = form.text().await.unwrap();
    let csrf = csrf_of(&page);
    assert_eq!(login, format!("ek_login={csrf}"), "cookie and field agree");
    let r = s
        .http
        .post(format!("{base}/login"))
        .header("origin", &base)
        .header("cookie", &login)
        .form(&[("token", user), ("csrf", csrf.as_str()), ("next", next)])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        303,
        "{}",
        r.text().await.unwrap_or_default()
    );
    assert_eq!(r.headers()["location"].to_str().unwrap(), next);
    let session = set_cookie(r.headers(), "ek_session").expect("a session cookie");
    session.split(';').next().unwrap().to_owned()
}

// ---- in-process servers (`elicitkit::server::embed`) ----

/// Sends a 2026-07-28 request (`_meta` filled in from `caps`) as `user`
/// to an in-process server's router; returns the HTTP status and the JSON body.
pub async fn in_process_modern(
    s: &elicitkit::server::embed::InProcess,
    user: &str,
    method: &str,
    mut params: Value,
    caps: &Value,
) -> (u16, Value) {
    use http_body_util::BodyExt as _;
    use tower_service::Service as _;
    params["_meta"] = meta(caps);
    let mut req = axum::http::Request::post(s.mcp_url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method)
        .header("authorization", format!("Bearer {user}"));
    if let Some(name) = params["name"].as_str() {
        req = req.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let req = req
        .body(axum::body::Body::from(body.to_string()))
        .expect("request");
    let resp = s.router().call(req).await.expect("infallible");
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}
