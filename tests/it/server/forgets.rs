//! The running server forgets on schedule: after URL flows and legacy
//! calls are done, the sweep purges their records and audit entries once
//! the retention window has passed, with either store.
#![cfg(feature = "net")]

use std::time::Duration;

use crate::support::server::*;
use elicitkit::clock::Clock;
use elicitkit::server::ServerConfig;
use serde_json::json;

async fn legacy_deploy(s: &Srv, user: &str) {
    let sid = legacy_init(s, user, caps_form()).await;
    let mut call = legacy_call(s, user, &sid, 1, "deploy", json!({"service":"web"})).await;
    let req = call.next().await.expect("elicitation");
    let yes = json!({"action":"accept","content":{"environment":"staging","confirm":true}});
    assert_eq!(legacy_answer(s, user, &sid, &req["id"], yes).await, 202);
    let done = call.next().await.expect("result");
    assert_eq!(done["result"]["isError"], false, "{done}");
    let del = s
        .http
        .delete(&s.url)
        .bearer_auth(user)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status().as_u16(), 204);
}

#[tokio::test]
async fn finished_flows_and_calls_are_purged_after_the_retention_window() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite:{}", dir.path().join("forget.db").display());
    for store in ["memory".to_owned(), sqlite] {
        let clock = Clock::offset(0);
        let s = start(ServerConfig {
            store: store.clone(),
            clock: clock.clone(),
            state_ttl: Duration::from_secs(60),
            retention: Duration::from_secs(60),
            sweep_interval: Duration::from_millis(100),
            // Legacy form records live as long as an elicitation may wait.
            elicitation_timeout: Duration::from_secs(60),
            ..ServerConfig::default()
        })
        .await;
        for _ in 0..10 {
            let f = to_final(&s, "alice", "connect_billing").await;
            assert_eq!(f.send(&s, "alice", 9).await.result_type(), "complete");
            legacy_deploy(&s, "bob").await;
        }
        // One flow abandoned: it expires, then goes too.
        let _ = call(&s, "carol", 1, "connect_billing", json!({}), &caps_both()).await;
        let st = stats(&s).await["store"].clone();
        assert_eq!(
            st["created"], 21,
            "{store}: 10 flows, 10 form records, 1 abandoned: {st}"
        );
        // The clock jumps past TTL + retention; the next sweep (every
        // 100 ms) forgets it all.
        clock.advance(Duration::from_secs(121));
        let left = |st: &serde_json::Value| {
            st["created"].as_u64().unwrap() - st["purged_records"].as_u64().unwrap()
        };
        let st = stats_once(&s, Duration::from_secs(5), |st| left(&st["store"]) == 0).await;
        let st = &st["store"];
        assert!(st["purged_audit"].as_u64().unwrap() >= 21, "{store}: {st}");
        assert!(st["expired"].as_u64().unwrap() >= 1, "{store}: {st}");
        assert_eq!(left(st), 0, "{store}: every record was forgotten: {st}");
        s.server.shutdown().await;
    }
}
