//! One side effect per confirmed request: however many states were issued
//! for one originating request and however often (and however
//! concurrently) a retry arrives, the action runs once, and every repeat
//! gets the recorded outcome, also after `kill -9` with SQLite.
#![cfg(feature = "net")]

use crate::support::server::*;
use elicitkit::clock::Clock;
use elicitkit::server::ServerConfig;
use serde_json::{Value, json};
use std::time::Duration;

/// The outcome a repeat carries.
fn outcome(r: &Reply) -> &Value {
    &r.body["error"]["data"]["outcome"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_retries_run_each_side_effect_once_with_identical_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite:{}", dir.path().join("once.db").display());
    for store in ["memory".to_owned(), sqlite] {
        let s = start(ServerConfig {
            store: store.clone(),
            ..ServerConfig::default()
        })
        .await;
        for (tool, effect) in SIDE_EFFECTS {
            let f = to_final(&s, "alice", tool).await;
            let before = effect_count(&s, effect).await;
            let n = 100;
            let replies =
                futures::future::join_all((0..n).map(|i| f.send(&s, "alice", 100 + i))).await;
            let done: Vec<&Reply> = replies
                .iter()
                .filter(|r| r.result_type() == "complete")
                .collect();
            assert_eq!(done.len(), 1, "{store} {tool}: one retry completes");
            let winner = done[0].result();
            assert_eq!(winner["isError"], false, "{store} {tool}: {winner}");
            for r in replies.iter().filter(|r| r.result_type() != "complete") {
                assert_eq!(
                    (r.status, r.error_code(), r.reason()),
                    (400, -32602, "replayed"),
                    "{store} {tool}: {}",
                    r.text
                );
                assert_eq!(r.body["error"]["data"]["repeat"], true);
                assert_eq!(outcome(r), winner, "{store} {tool}: identical outcome");
            }
            let after = effect_count(&s, effect).await;
            assert_eq!(after - before, 1, "{store} {tool}: exactly one side effect");
        }
        s.server.shutdown().await;
    }
}

#[tokio::test]
async fn re_prompted_states_of_one_request_delete_the_file_once() {
    let s = start(ServerConfig::default()).await;
    let caps = caps_form();
    let args = json!({"path": "/srv/data.csv"});
    let yes = json!({"confirm":{"action":"accept","content":{"confirm":true}}});
    let first = call(&s, "alice", 1, "delete_file", args.clone(), &caps).await;
    let s1 = first.state();
    // No answer: asked again, a new state of the same request.
    let r = retry(
        &s,
        "alice",
        2,
        "delete_file",
        args.clone(),
        json!({}),
        &s1,
        &caps,
    )
    .await;
    assert_eq!(r.result_type(), "input_required", "{}", r.text);
    let s2 = r.state();
    // An answer that fails the schema: asked again once more.
    let bad = json!({"confirm":{"action":"accept","content":{"confirm":"yes"}}});
    let r = retry(&s, "alice", 3, "delete_file", args.clone(), bad, &s1, &caps).await;
    assert_eq!(r.result_type(), "input_required", "{}", r.text);
    let s3 = r.state();
    assert!(s1 != s2 && s2 != s3 && s1 != s3, "three distinct states");

    let done = retry(
        &s,
        "alice",
        4,
        "delete_file",
        args.clone(),
        yes.clone(),
        &s2,
        &caps,
    )
    .await;
    assert_eq!(
        done.text_content(),
        "Deleted /srv/data.csv.",
        "{}",
        done.text
    );
    for (id, st) in [(5, &s3), (6, &s1), (7, &s2)] {
        let r = retry(
            &s,
            "alice",
            id,
            "delete_file",
            args.clone(),
            yes.clone(),
            st,
            &caps,
        )
        .await;
        assert_eq!(r.reason(), "replayed", "{}", r.text);
        assert_eq!(outcome(&r), done.result());
    }
    // Even a retry that would only be asked again learns the outcome.
    let r = retry(
        &s,
        "alice",
        8,
        "delete_file",
        args.clone(),
        json!({}),
        &s1,
        &caps,
    )
    .await;
    assert_eq!(r.reason(), "replayed", "{}", r.text);
    assert_eq!(effect_count(&s, "files_deleted").await, 1);

    // A new originating request for the same file is a new request.
    let again = call(&s, "alice", 9, "delete_file", args.clone(), &caps).await;
    let r = retry(
        &s,
        "alice",
        10,
        "delete_file",
        args,
        yes,
        &again.state(),
        &caps,
    )
    .await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    assert_eq!(effect_count(&s, "files_deleted").await, 2);
    s.server.shutdown().await;
}

#[tokio::test]
async fn a_declined_request_stays_declined() {
    let s = start(ServerConfig::default()).await;
    let caps = caps_form();
    let args = json!({"service": "api"});
    let first = call(&s, "alice", 1, "deploy", args.clone(), &caps).await;
    let s1 = first.state();
    let r = retry(
        &s,
        "alice",
        2,
        "deploy",
        args.clone(),
        json!({}),
        &s1,
        &caps,
    )
    .await;
    let s2 = r.state();
    let no = retry(
        &s,
        "alice",
        3,
        "deploy",
        args.clone(),
        json!({"confirm":{"action":"decline"}}),
        &s1,
        &caps,
    )
    .await;
    assert_eq!(no.result()["isError"], true, "{}", no.text);
    // Accepting through the other state of the same request changes nothing.
    let yes = json!({"confirm":{"action":"accept","content":{"environment":"production","confirm":true}}});
    let r = retry(&s, "alice", 4, "deploy", args, yes, &s2, &caps).await;
    assert_eq!(r.reason(), "replayed", "{}", r.text);
    assert_eq!(outcome(&r), no.result());
    assert_eq!(effect_count(&s, "deployments").await, 0);
    s.server.shutdown().await;
}

/// `elicitkit serve` on a SQLite store with a fixed key.
fn serve(db: &std::path::Path, key: &str) -> crate::support::serve::Serve {
    let mut c = crate::support::serve::cmd();
    c.args(["--workers", "1", "--store"])
        .arg(format!("sqlite:{}", db.display()))
        .env("ELICITKIT_STATE_KEY", key);
    crate::support::serve::start(c)
}

/// How often the store sweeps of the next test run.
const SWEEP: Duration = Duration::from_millis(100);

/// Issue 28 item 3. Two instances share one SQLite store, key and clock;
/// one seals 60 s states, the other has a 2 s TTL. The final retry goes
/// to the short one first, then, once a record written there with its own
/// TTL would have been swept (the clock jumps 2 s + the 10 s origin margin
/// + 1 s, and two sweeps run), to the long one. Before the fix the short
/// instance completed the 60 s state and its record was gone 12 s later,
/// so the long one deployed again.
#[tokio::test]
async fn a_long_lived_state_deploys_once_across_instances_with_different_ttls() {
    let dir = tempfile::tempdir().unwrap();
    let (keys, clock) = (elicitkit::state::KeyRing::generate(), Clock::offset(0));
    let cfg = |ttl| ServerConfig {
        store: format!("sqlite:{}", dir.path().join("ttl.db").display()),
        keys: Some(keys.clone()),
        clock: clock.clone(),
        state_ttl: Duration::from_secs(ttl),
        sweep_interval: SWEEP,
        retention: Duration::from_secs(1),
        ..ServerConfig::default()
    };
    let (l, s) = (start(cfg(60)).await, start(cfg(2)).await);

    let f = to_final(&l, "alice", "deploy").await;
    let first = f.send(&s, "alice", 50).await;
    clock.advance(Duration::from_millis(2_000 + 10_000 + 1_000));
    tokio::time::sleep(SWEEP * 3).await;
    let again = f.send(&l, "alice", 51).await;
    let third = f.send(&l, "alice", 52).await;
    let deployed = effect_count(&l, "deployments").await + effect_count(&s, "deployments").await;
    assert_eq!(deployed, 1, "one deployment for one request");
    assert_eq!(
        (first.status, first.error_code(), first.reason()),
        (400, -32602, "expiry_beyond_ttl"),
        "the 2 s instance refuses a 60 s state: {}",
        first.text
    );
    assert_eq!(again.result_type(), "complete", "{}", again.text);
    assert_eq!(third.reason(), "replayed", "{}", third.text);
    l.server.shutdown().await;
    s.server.shutdown().await;
}

/// A state whose sealed expiry lies beyond this instance's TTL (+ skew) is
/// refused like any other invalid state; one within it opens.
#[tokio::test]
async fn a_state_expiring_beyond_the_local_ttl_is_refused() {
    let keys = elicitkit::state::KeyRing::generate();
    // One store for both, as instances that complete each other's states share.
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("once.db").display());
    let cfg = |ttl| ServerConfig {
        keys: Some(keys.clone()),
        state_ttl: std::time::Duration::from_secs(ttl),
        store: store.clone(),
        ..ServerConfig::default()
    };
    let long = start(cfg(600)).await;
    let short = start(cfg(30)).await;
    let f = to_final(&long, "alice", "delete_file").await;
    let r = f.send(&short, "alice", 60).await;
    assert_eq!(
        (r.status, r.error_code(), r.reason()),
        (400, -32602, "expiry_beyond_ttl"),
        "{}",
        r.text
    );
    // The other way round: a 30 s state opens on the 600 s instance.
    let g = to_final(&short, "alice", "delete_file").await;
    let r = g.send(&long, "alice", 61).await;
    assert_eq!(r.result_type(), "complete", "{}", r.text);
    long.server.shutdown().await;
    short.server.shutdown().await;
}

#[tokio::test]
async fn the_outcome_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    let mut child = serve(&db, key);
    let s = remote(child.base_url());
    let mut finals = Vec::new();
    for (tool, _) in SIDE_EFFECTS {
        let f = to_final(&s, "alice", tool).await;
        let done = f.send(&s, "alice", 50).await;
        assert_eq!(done.result_type(), "complete", "{tool}: {}", done.text);
        finals.push((f, done.result().clone()));
    }
    // SIGKILL: no shutdown, no flush beyond what each write already did.
    child.kill();

    let mut child = serve(&db, key);
    let s = remote(child.base_url());
    for (f, first) in &finals {
        let r = f.send(&s, "alice", 51).await;
        assert_eq!(r.reason(), "replayed", "{}: {}", f.tool, r.text);
        assert_eq!(outcome(&r), first, "{}: the outcome survived", f.tool);
    }
    for (tool, effect) in SIDE_EFFECTS {
        assert_eq!(
            effect_count(&s, effect).await,
            0,
            "{tool} did not run again"
        );
    }
    child.kill();
}

/// A memory store at its budget refuses the next completion with 503 and
/// `Retry-After` (nothing runs; issue 51: the sweep interval, when room
/// can be made), while every request it already completed
/// still gets its recorded outcome: no live claim is dropped for room.
#[tokio::test]
async fn a_full_memory_store_refuses_new_completions_and_keeps_the_old() {
    let s = start(ServerConfig {
        store_memory_budget: 16 * 1024,
        ..ServerConfig::default()
    })
    .await;
    let mut done = Vec::new();
    let refused = loop {
        assert!(done.len() < 1000, "the budget never ran out");
        let f = to_final(&s, "alice", "deploy").await;
        let r = f.send(&s, "alice", 7).await;
        if r.result_type() != "complete" {
            break (f, r);
        }
        done.push((f, r.result().clone()));
    };
    let (f, r) = refused;
    assert_eq!(r.status, 503, "{}", r.text);
    // Room is made only when the sweep forgets what is past retention:
    // Retry-After is the sweep interval (30 s), not 1.
    assert_eq!(r.headers["retry-after"], "30", "{:?}", r.headers);
    assert!(r.text.contains("store is full"), "{}", r.text);
    assert!(!done.is_empty());
    let deployed = effect_count(&s, "deployments").await;
    assert_eq!(
        deployed,
        done.len() as u64,
        "the refused one did not deploy"
    );
    for (f, winner) in &done {
        let again = f.send(&s, "alice", 8).await;
        assert_eq!(again.reason(), "replayed", "{}", again.text);
        assert_eq!(outcome(&again), winner);
    }
    // Still full: the refused request is refused again, not run.
    assert_eq!(f.send(&s, "alice", 9).await.status, 503);
    assert_eq!(effect_count(&s, "deployments").await, deployed);
    s.server.shutdown().await;
}
