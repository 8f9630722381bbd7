//! `elicitkit serve --stdio`: the reference server's MCP endpoint on stdin
//! and stdout. Each line read is handed to the same router the HTTP
//! listener serves (in process, no socket), with the headers an HTTP client
//! would have sent derived from the message (`Mcp-Method`, `Mcp-Name`, the
//! protocol version from `_meta` or `initialize`, the session of this
//! stdio connection), so every `--flaw` behaves as it does over HTTP. What
//! comes back is written as lines: a JSON reply as is, each event of an SSE
//! stream as it arrives (an `elicitation/create` while a 2025-11-25 call
//! waits for its answer on stdin), nothing for `202`, and a JSON-RPC error
//! for an HTTP refusal that carries none. The HTTP listener stays up for
//! URL-mode flow pages.

use super::flaw::{Flaw, FlawSet};
use crate::protocol::headers::{METHOD, NAME, PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::mrtr::META_PROTOCOL_VERSION;
use crate::protocol::sse::SseParser;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;
use tower_service::Service as _;

/// How long in-flight requests may finish after stdin closes.
pub const DRAIN: Duration = Duration::from_secs(5);

/// What one stdio connection remembers between messages.
#[derive(Debug, Default)]
struct Conn {
    /// The session `initialize` opened (2025-11-25).
    session: Option<String>,
    /// The version `initialize` agreed on.
    version: Option<String>,
}

/// Serves MCP on `input`/`output` through `router` (which believes it is
/// `host`), as `principal`, until `input` ends and in-flight requests are
/// answered (at most [`DRAIN`]). Of `flaws`, those of the stdio transport
/// itself are read here (`stdio-noise`, and `error-id-null`, whose null id
/// is not put right on the pipe).
pub async fn serve(
    router: Router,
    host: String,
    principal: String,
    flaws: FlawSet,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) {
    let (tx, writer) = crate::stdio::pipe::spawn_line_writer(output);
    let conn = Arc::new(Mutex::new(Conn::default()));
    let mut tasks = tokio::task::JoinSet::new();
    let mut input = BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Bytes, not text: a line that is not UTF-8 is the router's to
        // refuse (a parse error), not the end of the connection.
        match input.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = bytes::Bytes::copy_from_slice(buf.trim_ascii());
        if line.is_empty() {
            continue;
        }
        if flaws.has(Flaw::StdioNoise) && memchr::memmem::find(&line, b"\"tools/call\"").is_some() {
            // The `stdio-noise` flaw: what a stray print() does.
            let _ = tx.send(b"handling tools/call".to_vec());
        }
        let (router, host, principal, conn, tx) = (
            router.clone(),
            host.clone(),
            principal.clone(),
            conn.clone(),
            tx.clone(),
        );
        let keep_null = flaws.has(Flaw::ErrorIdNull);
        tasks.spawn(async move {
            one(router, (&host, &principal), &conn, line, keep_null, &tx).await;
        });
        while tasks.try_join_next().is_some() {}
    }
    let _ = tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    drop(tx);
    let _ = writer.await;
}

/// A header value, if `s` can be one as is (visible ASCII and spaces).
fn header_safe(s: &str) -> Option<HeaderValue> {
    (!s.is_empty() && s.bytes().all(|b| (0x20..0x7f).contains(&b)))
        .then(|| HeaderValue::from_str(s).ok())
        .flatten()
}

/// The request an HTTP client would have sent for `line`.
fn request(
    line: bytes::Bytes,
    msg: Option<&Value>,
    host: &str,
    principal: &str,
    conn: &Conn,
) -> Request<Body> {
    let mut b = Request::post("/mcp")
        .header(header::HOST, host)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::AUTHORIZATION, format!("Bearer {principal}"));
    let text = |v: Option<&Value>| v.and_then(Value::as_str).and_then(header_safe);
    if let Some(m) = msg {
        if let Some(method) = text(m.get("method")) {
            b = b.header(METHOD, method);
        }
        let params = m.get("params");
        if let Some(name) = text(params.and_then(|p| p.get("name").or_else(|| p.get("uri")))) {
            b = b.header(NAME, name);
        }
        let meta_version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|meta| meta.get(META_PROTOCOL_VERSION));
        if let Some(v) =
            text(meta_version).or_else(|| conn.version.as_deref().and_then(header_safe))
        {
            b = b.header(PROTOCOL_VERSION, v);
        }
    }
    if let Some(sid) = conn.session.as_deref().and_then(header_safe) {
        b = b.header(SESSION_ID, sid);
    }
    b.body(Body::from(line))
        .unwrap_or_else(|_| Request::new(Body::empty()))
}

/// Sends one message through the router (as `host`, for `principal`) and
/// writes what comes back; with `keep_null`, a `-32601` error with a null
/// id goes out as it came (the `error-id-null` flaw).
async fn one(
    mut router: Router,
    (host, principal): (&str, &str),
    conn: &Mutex<Conn>,
    line: bytes::Bytes,
    keep_null: bool,
    out: &mpsc::UnboundedSender<Vec<u8>>,
) {
    let msg = serde_json::from_slice::<Value>(&line).ok();
    let req = {
        let c = conn.lock().unwrap_or_else(|p| p.into_inner());
        request(line, msg.as_ref(), host, principal, &c)
    };
    let Ok(resp) = router.call(req).await;
    let status = resp.status();
    let is_sse = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let initialize = msg
        .as_ref()
        .and_then(|m| m.get("method"))
        .and_then(Value::as_str)
        == Some("initialize");
    if initialize {
        let sid = resp
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut c = conn.lock().unwrap_or_else(|p| p.into_inner());
        if sid.is_some() {
            c.session = sid;
        }
    }
    // Only `initialize`'s reply is read here (for the version it agrees
    // on); every other reply goes out as it came.
    let note_version = |bytes: &[u8]| {
        if initialize {
            agreed_version(bytes, conn);
        }
    };
    let mut body = resp.into_body();
    if is_sse {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if parser.push(&data, &mut events).is_err() {
                break;
            }
            for e in events.drain(..) {
                if !e.data.trim().is_empty() {
                    note_version(e.data.as_bytes());
                    emit(e.data.as_bytes(), out);
                }
            }
        }
        return;
    }
    let Ok(bytes) = body.collect().await.map(|c| c.to_bytes()) else {
        return;
    };
    if status.as_u16() == 202 || (bytes.is_empty() && status.is_success()) {
        return;
    }
    let id = msg.as_ref().and_then(|m| m.get("id")).cloned();
    if let Ok(mut reply) = serde_json::from_slice::<Value>(&bytes)
        && reply.get("jsonrpc").is_some()
    {
        // Refused before the router read the message (no credentials, a
        // wrong header), the error names no request: over HTTP the status
        // ties it to its request, on a pipe only the id can, so it gets the
        // request's own.
        let flawed = keep_null
            && reply.pointer("/error/code").and_then(Value::as_i64)
                == Some(crate::protocol::codes::METHOD_NOT_FOUND);
        if let Some(id) = id.filter(|id| !id.is_null())
            && reply.get("id").is_some_and(Value::is_null)
            && reply.get("error").is_some()
            && !flawed
        {
            reply["id"] = id;
            emit(reply.to_string().as_bytes(), out);
            return;
        }
        note_version(&bytes);
        emit(&bytes, out);
        return;
    }
    // An HTTP refusal with no JSON-RPC error in it: say it as one.
    let Some(id) = id else {
        return;
    };
    let code = if status.is_client_error() {
        -32600
    } else {
        -32603
    };
    let text: String = String::from_utf8_lossy(&bytes)
        .trim()
        .chars()
        .take(200)
        .collect();
    let err = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": code,
        "message": format!("HTTP {status}: {text}"),
    }});
    emit(err.to_string().as_bytes(), out);
}

/// Writes one message as one line.
fn emit(bytes: &[u8], out: &mpsc::UnboundedSender<Vec<u8>>) {
    let _ = out.send(crate::stdio::pipe::one_line(bytes));
}

/// Notes the version an `initialize` result agreed on.
fn agreed_version(bytes: &[u8], conn: &Mutex<Conn>) {
    let parsed = serde_json::from_slice::<Value>(bytes).ok();
    if let Some(v) = parsed
        .as_ref()
        .and_then(|m| m.pointer("/result/protocolVersion"))
        .and_then(Value::as_str)
    {
        conn.lock().unwrap_or_else(|p| p.into_inner()).version = Some(v.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use tokio::io::AsyncWriteExt as _;

    /// Lines written to a stdio server whose router answers every request
    /// with `reply`; what it wrote back.
    async fn through(reply: &'static str, lines: &str) -> Vec<Value> {
        let router = Router::new().route(
            "/mcp",
            axum::routing::post(move || async move {
                (
                    StatusCode::UNAUTHORIZED,
                    [(header::CONTENT_TYPE, "application/json")],
                    reply,
                )
            }),
        );
        let (mut client, input) = tokio::io::duplex(4096);
        let (output, mut replies) = tokio::io::duplex(4096);
        client.write_all(lines.as_bytes()).await.unwrap();
        drop(client);
        serve(
            router,
            "127.0.0.1:1".into(),
            String::new(),
            FlawSet::none(),
            input,
            output,
        )
        .await;
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut replies, &mut text)
            .await
            .unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// A refusal before the router read the request names no id; on a pipe
    /// the client could not tell which request it answers, so it gets the
    /// request's id (a client waited for it until its timeout).
    #[tokio::test]
    async fn a_refusal_without_an_id_answers_its_request_by_id() {
        let refused = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}"#;
        let got = through(
            refused,
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n",
        )
        .await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["id"], 7);
        assert_eq!(got[0]["error"]["code"], -32600);
        // A message with no id of its own keeps the null one.
        let got = through(refused, "not json\n").await;
        assert_eq!(got[0]["id"], Value::Null, "{got:?}");
        // A reply that names its id is passed on as it came.
        let own = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"no"}}"#;
        let got = through(own, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n").await;
        assert_eq!(got[0]["id"], 3);
    }
}
