//! Target health over time and `load --soak`: RSS, open descriptors and
//! threads sampled from `/proc` once per interval; a short soak (seconds,
//! not minutes) fails against `serve --flaw leak` naming the growth, and
//! passes against a correct `serve`. Every server is started on 127.0.0.1
//! by the test (or by `load` as its embedded target).

use crate::support::load::*;
use crate::support::serve::serve;

#[test]
fn a_soak_against_a_leaking_server_fails_naming_the_growth() {
    let srv = serve(&["--flaw", "leak"]);
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), SOAK_PLAN);
    let (url, pid) = (srv.mcp_url(), srv.pid().to_string());
    let mut args = vec!["--plan", &plan, "--target", &url, "--target-pid", &pid];
    args.extend(SHORT_SOAK);
    let (out, s) = load(&args, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", stderr(&out));
    assert_eq!(
        (&s["passed"], &s["verdict"]),
        (&false.into(), &"failed".into())
    );
    let h = &s["health"];
    assert_eq!(h["source"], "--target-pid");
    assert_eq!(n(&h["pid"]), u64::from(srv.pid()));
    // Memory: the server publishes that it keeps a round trip's records
    // for 20 minutes, so a seconds-long soak cannot tell its growth from
    // retention (unsettled: inconclusive, said before the run and in the
    // report); the descriptors it keeps are a leak whatever the soak.
    let rss = trend(&s, "rss");
    assert_eq!(rss["verdict"], "unsettled", "{rss:#}");
    assert!(
        s["health"]["soak"]["inconclusive"][0]
            .as_str()
            .is_some_and(|w| w.contains("soak at least")),
        "{:#}",
        s["health"]["soak"]
    );
    assert!(
        stderr(&out).contains("memory grows for that long, leak or not"),
        "{}",
        stderr(&out)
    );
    let says = "soak: open descriptors grew";
    let t = trend(&s, "fds");
    assert_eq!(t["verdict"], "leaks", "{t:#}");
    assert!(f(&t["r2"]) >= 0.8, "{t:#}");
    assert!(f(&t["slope_per_min"]) > f(&t["limit_per_min"]), "{t:#}");
    let failure = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .find(|m| m.starts_with(says));
    let failure = failure.unwrap_or_else(|| panic!("no {says:?}: {:#}", s["failures"]));
    assert!(failure.contains("beyond the limit"), "{failure}");
    assert!(stdout.contains(failure), "the terminal says it too");
    // 120 round trips in the steady phase each keep 128 KiB and a
    // descriptor (the leak's caps are far off).
    assert!(f(&rss["growth"]) > 8.0, "MiB: {rss:#}");
    assert!(f(&trend(&s, "fds")["growth"]) > 60.0);
    let html = std::fs::read_to_string(dir.path().join("run/report.html")).unwrap();
    for id in [
        "chart-health-rss",
        "chart-health-fds",
        "chart-health-threads",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(html.contains("<table id=\"soak\">") && html.contains("LEAKS"));
}

#[test]
fn a_soak_against_a_clean_server_passes() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), SOAK_PLAN);
    let mut args = vec!["--plan", plan.as_str()];
    args.extend(SHORT_SOAK);
    let (out, s) = load(&args, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", stderr(&out));
    assert_eq!(s["verdict"], "passed");
    let h = &s["health"];
    assert_eq!(h["source"], "embedded server");
    let soak = &h["soak"];
    assert_eq!(soak["passed"], true, "{soak:#}");
    for metric in ["rss", "fds"] {
        let t = trend(&s, metric);
        assert_ne!(t["verdict"], "leaks", "{t:#}");
        assert!(n(&t["samples"]) >= 10, "4 s at 250 ms: {t:#}");
    }
    // Samples span the warm-up, the steady phase and the cool-down.
    let samples = h["samples"].as_array().unwrap();
    let last = f(&samples.last().unwrap()["t_s"]);
    assert!(f(&h["window_to_s"]) - f(&h["window_from_s"]) > 3.9, "{h:#}");
    assert!(
        last >= f(&h["load_end_s"]) + 1.9,
        "the cool-down is sampled: {last}"
    );
    assert!(
        samples
            .iter()
            .all(|p| n(&p["rss_bytes"]) > 0 && n(&p["threads"]) >= 1)
    );
    assert!(stdout.contains("soak: memory (RSS)"), "{stdout}");
}

#[test]
fn a_loopback_targets_health_is_sampled_through_its_listening_port() {
    let srv = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), SOAK_PLAN);
    let url = srv.mcp_url();
    let (out, s) = load(
        &["--plan", &plan, "--target", &url, "--duration", "1s"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let h = &s["health"];
    assert_eq!(n(&h["pid"]), u64::from(srv.pid()), "{h:#}");
    assert!(
        h["source"]
            .as_str()
            .unwrap()
            .starts_with("listener of 127.0.0.1:")
    );
    assert!(h["soak"].is_null(), "no --soak, no verdict");
    assert!(h["samples"].as_array().unwrap().len() >= 4, "{h:#}");
}

#[test]
fn a_soak_needs_a_single_level_and_a_process_to_watch() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), SOAK_PLAN);
    let (out, _) = load(
        &[
            "--plan", &plan, "--soak", "2s", "--model", "open", "--stage", "1s:5",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // A remote-looking target no PID can be found for: refused before any load.
    let (out, s) = load(
        &[
            "--plan",
            &plan,
            "--target",
            "http://127.0.0.1:9/mcp",
            "--soak",
            "2s",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--soak needs the target's process"),
        "{}",
        stderr(&out)
    );
    assert!(s.is_null());
}

/// A target whose own memory budget fills up: the run names the budget,
/// not the CPU, as what refused round trips (its 503 "store is full"),
/// and does not pass. 8 KiB holds a few dozen completion claims, which
/// two seconds of `deploy` round trips pass.
#[test]
fn a_target_whose_memory_budget_fills_names_the_budget_as_the_limit() {
    let server = serve(&["--store-memory-budget", "8KiB"]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.mcp_url();
    let args = [
        "--target",
        &url,
        "--tool",
        "deploy",
        "--generation",
        "2026-07-28",
        "--users",
        "4",
        "--duration",
        "2s",
    ];
    let (out, s) = load(&args, dir.path());
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let diagnoses = s["diagnoses"].to_string();
    assert!(
        diagnoses.contains("memory budget (--store-memory-budget), not its CPU"),
        "{diagnoses}\n{}",
        s["error_groups"]
    );
}
