//! Raw HTTP/1.1 over TCP to a server under test, for what a well-behaved
//! client never does: heads without bodies, bodies that stall, many
//! connections at once; and polling `/stats` until it shows an effect.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::server::*;

/// Reads until EOF (or an error); returns what arrived and when it ended.
pub async fn read_to_close(c: &mut TcpStream, within: Duration) -> Option<(Vec<u8>, Instant)> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, c.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some((all, Instant::now())),
            Ok(Ok(n)) => all.extend_from_slice(&buf[..n]),
        }
    }
}

/// The head of an MCP POST announcing `length` body bytes, with `token`
/// as its bearer token (none: no `Authorization`).
pub fn post_head(s: &Srv, length: usize, token: Option<&str>) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         {auth}Content-Length: {length}\r\n\r\n",
        s.server.addr()
    )
}

/// `n` connections that each send `head` and `start` of their body (a
/// write the server refused is left for the test to notice).
pub async fn open_bodies(s: &Srv, n: usize, head: &str, start: &[u8]) -> Vec<TcpStream> {
    let mut conns = Vec::new();
    for _ in 0..n {
        let mut c = TcpStream::connect(s.server.addr()).await.unwrap();
        let mut sent = head.as_bytes().to_vec();
        sent.extend_from_slice(start);
        let _ = c.write_all(&sent).await;
        conns.push(c);
    }
    conns
}

/// A `tools/list` as alice on a new connection (a pooled one would slip
/// past the connection cap) within 2 s: `Ok` when answered, else what
/// happened instead.
pub async fn gets_in(s: &Srv) -> Result<(), String> {
    let mut fresh = remote(&s.server.base_url());
    fresh.http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let caps = json!({});
    let call = try_modern(&fresh, "alice", 1, "tools/list", json!({}), &caps);
    match tokio::time::timeout(Duration::from_secs(2), call).await {
        Err(_) => Err("no answer within 2 s".into()),
        Ok(Err(e)) => Err(e),
        Ok(Ok(r)) if r.result_type() == "complete" => Ok(()),
        Ok(Ok(r)) => Err(format!("HTTP {}: {}", r.status, r.text)),
    }
}

/// Polls `/stats` until `ready` holds for it (at most 5 s).
pub async fn stats_until(s: &Srv, ready: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let v = stats(s).await;
        if ready(&v) || Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
