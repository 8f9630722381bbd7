//! Virtual users are distinct principals: `serve` with its default limits
//! (at most 32 2025-11-25 sessions per principal) takes 64 and 512 users
//! without one user evicting another's session, on both generations;
//! 64 users as one principal (`--principal`) do evict each other's.

use crate::support::load::{load, n, write_plan};
use serde_json::Value;

/// Both generations; a long timeout and stall window, and users launched
/// over 4 s (before the measured window): the test machine is slow and
/// busy, and only errors (not latency) are judged.
fn plan(users: u32) -> String {
    format!(
        r#"
name = "principals"
duration = "4s"
timeout = "20s"
stall = "30s"

[load]
users = {users}
hatch_rate = {}

[scenarios.form-accept]
[scenarios.tamper]
[scenarios.legacy-push]
weight = 2
"#,
        users / 4
    )
}

/// Unexpected outcomes of `scenario` over its round trips.
fn error_rate(s: &Value, scenario: &str) -> (f64, u64) {
    let c = &s["scenarios"][scenario]["outcomes"];
    let total = n(&c["total"]);
    (n(&c["unexpected"]) as f64 / total.max(1) as f64, total)
}

#[test]
fn many_users_are_many_principals_and_keep_their_sessions() {
    // Default limits (32 sessions per principal); two workers.
    let mut cmd = crate::support::serve::cmd();
    cmd.args(["--workers", "2"]);
    let server = crate::support::serve::start(cmd);
    let url = server.mcp_url();
    for users in [64, 512] {
        let dir = tempfile::tempdir().unwrap();
        let plan = write_plan(dir.path(), &plan(users));
        let (out, s) = load(&["--plan", &plan, "--target", &url], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(s["ended_by"], "duration", "{users} users: {stderr}\n{s:#}");
        assert_eq!(
            s["settings"]["principals"],
            format!("{users} (one per user, ek-user-NNNN)"),
            "{s:#}"
        );
        let md = std::fs::read_to_string(dir.path().join("run/summary.md")).unwrap();
        assert!(
            md.contains(&format!("- principals: {users} (one per user")),
            "{md}"
        );
        for scenario in ["form-accept", "legacy-push"] {
            let (rate, total) = error_rate(&s, scenario);
            eprintln!("{users} users, {scenario}: {total} round trips, error rate {rate:.4}");
            assert!(total > 0, "{users} users: {scenario} ran: {s:#}");
            assert!(
                rate < 0.01,
                "{users} users: {scenario} error rate {rate:.4} (errors {}, first {})",
                s["errors"],
                s["error_samples"][0]
            );
        }
        assert!(s["error_rate"].as_f64().unwrap() < 0.01, "{s:#}");
    }
    // The contrast: 64 users as one principal evict each other's sessions.
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), &plan(64));
    let (out, s) = load(
        &["--plan", &plan, "--target", &url, "--principal", "alice"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{s:#}");
    assert_eq!(
        s["settings"]["principals"],
        "1 (every user runs as the --principal / plan token)"
    );
    let (rate, _) = error_rate(&s, "legacy-push");
    assert!(rate > 0.01, "one principal: legacy error rate {rate:.4}");
}
