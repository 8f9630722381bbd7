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
    pub server: RunningServer,
    pub http: reqwest::Client,
    pub url: String,
}

pub async fn start(cfg: ServerConfig) -> Srv {
    let server = elicitkit::server::start(cfg).await.expect("server starts");
    let url = server.mcp_url();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    Srv { server, http, url }
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
    to_reply(rb.body(body).send().await.expect("request sent")).await
}

/// A modern request with `_meta` filled in from `caps`.
pub async fn modern(
    s: &Srv,
    user: &str,
    id: i64,
    method: &str,
    mut params: Value,
    caps: &Value,
) -> Reply {
    params["_meta"] = meta(caps);
    let name = params["name"].as_str().map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    post_raw(s, Some(user), method, name.as_deref(), body.to_string()).await
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
        json!({"name": tool, "arguments": args, "inputResponses": responses, "requestState": state}),
        caps,
    )
    .await
}

pub async fn stats(s: &Srv) -> Value {
    let r = s
        .http
        .get(format!("{}/stats", s.server.base_url()))
        .send()
        .await
        .expect("stats");
    r.json().await.expect("stats json")
}
