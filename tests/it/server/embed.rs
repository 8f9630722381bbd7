//! The in-process server (`elicitkit::server::embed`) is assembled as the
//! listening one: every setting of the config reaches it (issue 48: it
//! once dropped `clock_skew`, so it refused what `serve` accepts).
#![cfg(feature = "net")]

use std::time::Duration;

use crate::support::server::*;
use elicitkit::server::ServerConfig;
use elicitkit::server::embed::in_process;
use elicitkit::state::KeyRing;
use serde_json::json;

/// A state sealed by an instance with a 60 s TTL is honoured by one with a
/// 10 s TTL and a 55 s clock skew (60 ≤ 10 + 55), and refused by one with
/// the default 5 s skew (`expiry_beyond_ttl`): the skew is the in-process
/// server's own, not a default. (Seen failing before the sealer and store
/// were built in one place.)
#[tokio::test]
async fn the_in_process_server_honours_its_clock_skew() {
    let keys = KeyRing::generate();
    // One store for the three, as instances behind one balancer share one.
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let with = |ttl: u64, skew: u64| {
        in_process(ServerConfig {
            keys: Some(keys.clone()),
            store: store.clone(),
            state_ttl: Duration::from_secs(ttl),
            clock_skew: Duration::from_secs(skew),
            ..ServerConfig::default()
        })
        .expect("in-process server")
    };
    let (long, skewed, strict) = (with(60, 5), with(10, 55), with(10, 5));
    let caps = caps_form();
    let args = json!({"service": "api"});
    let (status, first) = in_process_modern(
        &long,
        "alice",
        "tools/call",
        json!({"name": "deploy", "arguments": args}),
        &caps,
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = json!({
        "name": "deploy", "arguments": args, "requestState": state,
        "inputResponses": {"confirm": {"action": "accept",
            "content": {"environment": "staging", "confirm": true}}},
    });
    let (_, refused) =
        in_process_modern(&strict, "alice", "tools/call", retry.clone(), &caps).await;
    assert_eq!(
        refused["error"]["data"]["reason"], "expiry_beyond_ttl",
        "{refused}"
    );
    let (status, done) = in_process_modern(&skewed, "alice", "tools/call", retry, &caps).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
}
