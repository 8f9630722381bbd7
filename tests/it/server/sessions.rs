//! 2025-11-25 sessions forget: idle expiry, a per-principal cap that
//! replaces the least recently used idle session, and cleanup (calls,
//! streams, pending elicitations) on DELETE and on expiry.
#![cfg(feature = "net")]

use std::time::Duration;

use crate::support::server::*;
use elicitkit::clock::Clock;
use elicitkit::server::{ServerConfig, SessionLimits};
use serde_json::{Value, json};

fn with_sessions(idle_ms: u64, per_principal: usize, max: usize) -> ServerConfig {
    ServerConfig {
        sessions: SessionLimits {
            idle: Duration::from_millis(idle_ms),
            per_principal,
            max,
        },
        ..ServerConfig::default()
    }
}

async fn list_status(s: &Srv, user: &str, sid: &str) -> u16 {
    legacy_post(
        s,
        user,
        Some(sid),
        json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}),
    )
    .await
    .status()
    .as_u16()
}

async fn init_status(s: &Srv, user: &str) -> (u16, Option<String>) {
    let r = legacy_post(
        s,
        user,
        None,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name":"t","version":"0"}}}),
    )
    .await;
    let sid = r
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (r.status().as_u16(), sid)
}

async fn sessions(s: &Srv) -> Value {
    stats(s).await["sessions"].clone()
}

#[tokio::test]
async fn an_unused_session_expires_and_a_used_one_stays() {
    let clock = Clock::offset(0);
    let s = start(ServerConfig {
        clock: clock.clone(),
        ..with_sessions(400, 32, 1000)
    })
    .await;
    let used = legacy_init(&s, "alice", caps_form()).await;
    let unused = legacy_init(&s, "alice", caps_form()).await;
    for _ in 0..4 {
        clock.advance(Duration::from_millis(150));
        assert_eq!(list_status(&s, "alice", &used).await, 200);
    }
    assert_eq!(list_status(&s, "alice", &unused).await, 404, "expired");
    let st = sessions(&s).await;
    assert_eq!(
        (st["active"].as_u64(), st["expired"].as_u64()),
        (Some(1), Some(1)),
        "{st}"
    );
    // The sweep (every 100 ms) gets the rest without anyone asking.
    clock.advance(Duration::from_millis(800));
    let st = stats_once(&s, Duration::from_secs(5), |st| {
        st["sessions"]["active"] == 0
    })
    .await;
    assert_eq!(st["sessions"]["active"], 0, "{st}");
    assert_eq!(list_status(&s, "alice", &used).await, 404);
    s.server.shutdown().await;
}

#[tokio::test]
async fn a_session_in_use_does_not_expire_and_delete_cleans_up() {
    let clock = Clock::offset(0);
    let s = start(ServerConfig {
        clock: clock.clone(),
        ..with_sessions(300, 32, 1000)
    })
    .await;
    let sid = legacy_init(&s, "alice", caps_form()).await;
    let mut call = legacy_call(&s, "alice", &sid, 1, "deploy", json!({"service":"web"})).await;
    let req = call.next().await.expect("elicitation");
    assert_eq!(req["method"], "elicitation/create");
    // Unanswered past the idle timeout: the call keeps the session alive
    // through the sweeps (every 75 ms) that follow.
    clock.advance(Duration::from_millis(700));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(stats(&s).await["pending_elicitations"], 1);
    assert_eq!(sessions(&s).await["active"], 1);
    // DELETE ends the call's stream, drops the pending elicitation, 404s the answer.
    let del = s
        .http
        .delete(&s.url)
        .bearer_auth("alice")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status().as_u16(), 204);
    assert!(call.next().await.is_none(), "the call's stream ended");
    let yes = json!({"action":"accept","content":{"environment":"staging","confirm":true}});
    assert_eq!(legacy_answer(&s, "alice", &sid, &req["id"], yes).await, 404);
    let st = stats(&s).await;
    assert_eq!(
        (
            st["pending_elicitations"].as_u64(),
            st["sessions"]["active"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(st["side_effects"]["deployments"], 0);
    assert_eq!(st["store"]["rejected"], 0);
    s.server.shutdown().await;
}

#[tokio::test]
async fn one_principal_holds_a_bounded_number_and_cannot_fill_the_table() {
    let s = start(with_sessions(600_000, 3, 10)).await;
    let mut alice = Vec::new();
    for _ in 0..50 {
        let (code, sid) = init_status(&s, "alice").await;
        assert_eq!(code, 200);
        alice.push(sid.unwrap());
    }
    let st = sessions(&s).await;
    assert_eq!(
        (st["active"].as_u64(), st["replaced"].as_u64()),
        (Some(3), Some(47)),
        "{st}"
    );
    // The three most recent stay; the older ones were replaced.
    for sid in &alice[..47] {
        assert_eq!(list_status(&s, "alice", sid).await, 404);
    }
    for sid in &alice[47..] {
        assert_eq!(list_status(&s, "alice", sid).await, 200);
    }
    // Everyone else still gets in.
    for u in ["bob", "carol", "dave"] {
        assert_eq!(init_status(&s, u).await.0, 200, "{u}");
    }
    // With all three of alice's sessions in use, a fourth is refused.
    let mut streams = Vec::new();
    for sid in &alice[47..] {
        let r = s
            .http
            .get(&s.url)
            .bearer_auth("alice")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", LEGACY)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        streams.push(r);
    }
    let r = legacy_post(
        &s,
        "alice",
        None,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name":"t","version":"0"}}}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 429);
    // Retry once a call can have ended: the 30 s elicitation timeout.
    assert_eq!(r.headers()["retry-after"], "30");
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["code"], -32000,
        "a limit, not an internal error"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("DELETE"),
        "{body}"
    );
    s.server.shutdown().await;
}

#[tokio::test]
async fn a_full_table_answers_503_with_retry_after() {
    let s = start(with_sessions(600_000, 2, 3)).await;
    for u in ["a", "b", "c"] {
        assert_eq!(init_status(&s, u).await.0, 200);
    }
    let r = legacy_post(
        &s,
        "d",
        None,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name":"t","version":"0"}}}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(r.headers()["retry-after"], "30");
    s.server.shutdown().await;
}

/// Issue 51: a crowd of made-up principals (demo auth takes any token)
/// filling `--max-sessions` does not lock everyone else out: at the cap a
/// new session replaces an idle one of the principal holding the most.
/// 40 names × 5 sessions fill a table of 200; 80 legitimate users then
/// each get a session that works, and the table stays at its cap. (Seen
/// failing before: every legitimate initialize got 503.)
#[tokio::test]
async fn a_crowd_of_made_up_names_cannot_fill_the_session_table() {
    let s = start(with_sessions(600_000, 32, 200)).await;
    let crowd = (0..200).map(|i| format!("made-up-{}", i % 40));
    let filled = futures::future::join_all(crowd.map(|u| {
        let s = &s;
        async move { init_status(s, &u).await.0 }
    }))
    .await;
    assert!(filled.iter().all(|st| *st == 200), "{filled:?}");
    let mut legit = Vec::new();
    for i in 0..80 {
        let user = format!("user-{i}");
        if let (200, Some(sid)) = init_status(&s, &user).await {
            legit.push((user, sid));
        }
    }
    assert!(
        legit.len() >= 79,
        "{} of 80 legitimate sessions",
        legit.len()
    );
    let mut working = 0;
    for (user, sid) in &legit {
        working += usize::from(list_status(&s, user, sid).await == 200);
    }
    assert_eq!(working, legit.len(), "every legitimate session still works");
    let v = sessions(&s).await;
    assert_eq!(v["active"], 200, "{v}");
    assert!(v["shed"].as_u64().unwrap() >= 79, "{v}");
    s.server.shutdown().await;
}
