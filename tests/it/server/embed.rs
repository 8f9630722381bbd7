//! The in-process server (`elicitkit::server::embed`) is assembled as the
//! listening one: every setting of the config reaches it (issue 48: it
//! once dropped `clock_skew`, so it refused what `serve` accepts), and it
//! reads the time from the config's clock.
#![cfg(feature = "net")]

use std::time::Duration;

use crate::support::server::*;
use elicitkit::clock::Clock;
use elicitkit::server::ServerConfig;
use elicitkit::server::embed::{InProcess, in_process};
use elicitkit::state::KeyRing;
use serde_json::{Value, json};

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

/// A `deploy` state from `s` for alice, and the retry that accepts it.
async fn deploy_retry(s: &InProcess) -> Value {
    let args = json!({"service": "api"});
    let call = json!({"name": "deploy", "arguments": args});
    let (status, first) = in_process_modern(s, "alice", "tools/call", call, &caps_form()).await;
    assert_eq!(status, 200, "{first}");
    json!({
        "name": "deploy", "arguments": args, "requestState": first["result"]["requestState"],
        "inputResponses": {"confirm": {"action": "accept",
            "content": {"environment": "staging", "confirm": true}}},
    })
}

/// The in-process server decides expiry by the clock of its config: a
/// state is refused once that clock jumps past its TTL (no sleep), and a
/// state sealed by an instance whose clock runs 30 s ahead is not yet
/// valid on one with the system clock and 5 s of skew, while one sealed
/// 2 s ahead is taken. (Seen failing with the server reading the system
/// clock: the jumped state completed.)
#[tokio::test]
async fn the_in_process_server_reads_the_clock_of_its_config() {
    let keys = KeyRing::generate();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let with = |clock: &Clock| {
        in_process(ServerConfig {
            keys: Some(keys.clone()),
            store: store.clone(),
            state_ttl: Duration::from_secs(60),
            clock: clock.clone(),
            ..ServerConfig::default()
        })
        .expect("in-process server")
    };
    let jumped = Clock::offset(0);
    let s = with(&jumped);
    let retry = deploy_retry(&s).await;
    jumped.advance(Duration::from_secs(60));
    let (_, late) = in_process_modern(&s, "alice", "tools/call", retry, &caps_form()).await;
    assert_eq!(late["error"]["data"]["reason"], "expired", "{late}");

    let system = with(&Clock::system());
    let far_ahead = deploy_retry(&with(&Clock::offset(30_000))).await;
    let (_, early) =
        in_process_modern(&system, "alice", "tools/call", far_ahead, &caps_form()).await;
    assert_eq!(early["error"]["data"]["reason"], "not_yet_valid", "{early}");
    let near_ahead = deploy_retry(&with(&Clock::offset(2_000))).await;
    let (status, done) =
        in_process_modern(&system, "alice", "tools/call", near_ahead, &caps_form()).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
}
