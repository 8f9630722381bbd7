//! `check --other-instance` (§6.B 25) against real `serve` processes: it
//! passes on two instances sharing keys and a store (Redis, or one SQLite
//! file), and it finds the ways a deployment breaks it: different keys (the
//! other instance cannot open the state), a store per instance (the other
//! instance refuses the state as from another store) and single use that is
//! not kept (a replay completes again). Two URLs of one instance are "could
//! not tell".
#![cfg(feature = "net")]

use std::process::Command;

use crate::support::cluster::*;
use serde_json::Value;

/// Runs the cross-instance check from `a` against `b`; returns the exit
/// code and the check's row of the JSON report.
fn check(a: &str, b: Option<&str>) -> (i32, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_elicitkit"));
    cmd.args(["check", "--target", a, "--generation", "2026-07-28"])
        .args(["--only", "mrtr-cross-instance", "--format", "json"])
        .args(["--tool", "deploy", "--single-use", "deploy"])
        .args(["--timeout", "10s", "--deadline", "60s"]);
    if let Some(b) = b {
        cmd.args(["--other-instance", b]);
    }
    let out = cmd.output().expect("check runs");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let row = v["results"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == "mrtr-cross-instance"))
        .cloned()
        .expect("the mrtr-cross-instance row");
    (out.status.code().unwrap_or(-1), row)
}

fn mcp(s: &Serve) -> String {
    format!("{}/mcp", s.base)
}

fn pair(dir: &std::path::Path, store_a: &str, store_b: &str, key_b: &str) -> (Serve, Serve) {
    pair_with(dir, store_a, store_b, key_b, &[])
}

fn pair_with(
    dir: &std::path::Path,
    store_a: &str,
    store_b: &str,
    key_b: &str,
    extra: &[&str],
) -> (Serve, Serve) {
    let ka = key_file(dir, "ka", KEY_A);
    let kb = key_file(dir, "kb", key_b);
    let a = Serve::start(dir, "a", 0, store_a, &ka, extra);
    let b = Serve::start(dir, "b", 0, store_b, &kb, extra);
    (a, b)
}

#[test]
fn passes_on_two_instances_sharing_keys_and_redis() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = pair(dir.path(), &redis.url(0), &redis.url(0), KEY_A);
    let (code, row) = check(&mcp(&a), Some(&mcp(&b)));
    assert_eq!((code, row["status"].as_str()), (0, Some("pass")), "{row}");
    let detail = row.to_string();
    assert!(
        detail.contains("\\\"a\\\" issued it, \\\"b\\\" completed it"),
        "{row}"
    );
}

#[test]
fn passes_on_two_processes_sharing_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("shared.db").display());
    let (a, b) = pair(dir.path(), &db, &db, KEY_A);
    let (code, row) = check(&mcp(&a), Some(&mcp(&b)));
    assert_eq!((code, row["status"].as_str()), (0, Some("pass")), "{row}");
}

#[test]
fn different_keys_are_a_finding() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = pair(dir.path(), &redis.url(0), &redis.url(0), KEY_B);
    let (code, row) = check(&mcp(&a), Some(&mcp(&b)));
    assert_eq!(row["status"], "warn", "{row}");
    assert_eq!(code, 0, "a SHOULD finding does not fail the run");
    assert!(
        row.to_string().contains("do not share their state keys"),
        "{row}"
    );
}

/// Instances that share keys and a store but keep no completion records
/// (`--flaw replayable-side-effect`): the crossed retry completes, and so
/// does its replay on both.
#[test]
fn a_replay_completing_again_on_either_instance_is_a_failure() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let flaw = ["--flaw", "replayable-side-effect"];
    let (a, b) = pair_with(dir.path(), &redis.url(0), &redis.url(0), KEY_A, &flaw);
    let (code, row) = check(&mcp(&a), Some(&mcp(&b)));
    assert_eq!((code, row["status"].as_str()), (1, Some("fail")), "{row}");
    let text = row.to_string();
    assert!(
        text.contains("completed it again") && text.contains("not shared"),
        "{row}"
    );
}

/// With a store per instance `serve` refuses the other instance's states
/// (their store epochs differ), so nothing completes twice, but a retry
/// that crosses fails: a finding, named for the store.
#[test]
fn a_memory_store_per_instance_refuses_the_crossing_retry() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = pair(dir.path(), "memory", "memory", KEY_A);
    let (code, row) = check(&mcp(&a), Some(&mcp(&b)));
    assert_eq!((code, row["status"].as_str()), (0, Some("warn")), "{row}");
    let text = row.to_string();
    assert!(
        text.contains("store_reset") && text.contains("do not share one store"),
        "{row}"
    );
}

#[test]
fn one_instance_under_two_names_could_not_tell_and_no_url_skips() {
    let dir = tempfile::tempdir().unwrap();
    let k = key_file(dir.path(), "k", KEY_A);
    let a = Serve::start(dir.path(), "solo", 0, "memory", &k, &[]);
    let other = format!("http://localhost:{}/mcp", a.port);
    let (_, row) = check(&mcp(&a), Some(&other));
    assert_eq!(row["status"], "info", "{row}");
    assert!(
        row.to_string().contains("could not tell") && row.to_string().contains("\\\"solo\\\""),
        "{row}"
    );
    let (_, row) = check(&mcp(&a), None);
    assert_eq!(row["status"], "skip", "{row}");
}

#[test]
fn an_unreachable_other_instance_is_a_usage_error_not_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let k = key_file(dir.path(), "k", KEY_A);
    let a = Serve::start(dir.path(), "solo", 0, "memory", &k, &[]);
    // A port nothing listens on (bound, then freed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let other = format!("http://127.0.0.1:{port}/mcp");
    let out = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["check", "--target", &mcp(&a), "--generation", "2026-07-28"])
        .args(["--only", "mrtr-cross-instance", "--format", "json"])
        .args(["--timeout", "5s", "--other-instance", &other])
        .output()
        .expect("check runs");
    // It was an INFO row with exit 0: the check did not run, and said so
    // where a gate does not look.
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON document");
    let e = v["error"].as_str().unwrap_or_default();
    assert!(e.contains("--other-instance") && e.contains(&other), "{v}");
}
