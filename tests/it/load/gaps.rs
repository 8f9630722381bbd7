//! Service gaps: a target frozen (SIGSTOP) for 4 s of a run, shorter than
//! the `stall` window that would end it, fails the closed model's default
//! `service_gaps < 1` with the gap's length, where before it passed with a
//! fine p99 (the users just waited). Proven both ways: the same run without
//! the freeze has no gap and passes.

use crate::support::load::*;
use crate::support::serve;
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// 4 closed-model users on `deploy` form round trips for 10 s against
/// `url` (bounded: 200,000 requests; a 10 s timeout and a 20 s stall
/// window, so a 4 s freeze neither times out nor ends the run).
fn run(dir: &Path, url: &str) -> (Output, Value) {
    let plan = write_plan(
        dir,
        "name = \"gaps\"\nduration = \"10s\"\ntimeout = \"10s\"\nstall = \"20s\"\n\
         max_requests = 200000\n[load]\nusers = 4\n\
         [scenarios.form-accept]\ntool = \"deploy\"\narguments = { service = \"web\" }\n",
    );
    load(&["--plan", &plan, "--target", url], dir)
}

fn gap_threshold(s: &Value) -> &Value {
    s["thresholds"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["expr"] == "service_gaps < 1"))
        .unwrap_or_else(|| panic!("no service_gaps threshold: {:#}", s["thresholds"]))
}

#[test]
fn a_four_second_freeze_fails_the_closed_model_and_a_steady_run_has_no_gap() {
    let frozen = serve::serve(&[]);
    let steady = serve::serve(&[]);
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let thaw = serve::freeze_later(frozen.pid(), Duration::from_secs(3), Duration::from_secs(4));
    let (out, s) = run(fd.path(), &frozen.mcp_url());
    thaw.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", stderr(&out));
    assert_eq!(s["passed"], false, "{s:#}");
    assert_eq!(
        s["ended_by"], "duration",
        "the freeze is under the stall window"
    );
    let gaps = s["service_gaps"].as_array().expect("service_gaps");
    assert_eq!(gaps.len(), 1, "{gaps:#?}");
    let len = f(&gaps[0]["length_s"]);
    assert!((3.0..6.0).contains(&len), "the gap is the freeze: {len} s");
    let t = gap_threshold(&s);
    assert_eq!((t["passed"].clone(), f(&t["actual"])), (false.into(), 1.0));
    let failures = s["failures"].to_string();
    assert!(failures.contains("service gap"), "{failures}");
    assert!(stdout.contains("service gap"), "{stdout}");
    // The frozen seconds are in the timeline, as intervals with nothing.
    let timeline = s["timeline"].as_array().expect("timeline");
    assert!(
        timeline.iter().filter(|p| f(&p["rps"]) == 0.0).count() >= 2,
        "{timeline:#?}"
    );

    // The control runs after the frozen run, not beside it: two runs
    // that each keep the cores busy leave a control less than a steady
    // server gets (the next test's control once failed so).
    let (out, s) = run(sd.path(), &steady.mcp_url());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{s:#}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(s["service_gaps"], serde_json::json!([]), "{s:#}");
    assert_eq!(gap_threshold(&s)["passed"], true);
}

/// A target frozen for 1.8 s of every 2.4 s (SIGSTOP/SIGCONT), each freeze
/// under the 2 s service-gap floor: both models used to PASS it (the
/// closed model's 4 users waited out each freeze once among thousands of
/// fast samples, p99 13–15 ms). Now the frozen time (75 % of the window)
/// fails the default `frozen_time < 20%` in both, and the closed model's
/// end-to-end latency corrected for coordinated omission shows what a
/// fixed-rate client would have waited. The same runs against a steady
/// server pass (the control).
#[test]
fn a_target_frozen_most_of_the_time_fails_both_models() {
    let plan = |model: &str| {
        format!(
            "name = \"duty\"\nduration = \"8s\"\ntimeout = \"10s\"\nstall = \"20s\"\n\
             max_requests = 200000\n[load]\n{model}\n\
             [scenarios.form-accept]\ntool = \"deploy\"\narguments = {{ service = \"web\" }}\n"
        )
    };
    for model in ["users = 4", "rate = 100"] {
        let frozen = serve::serve(&[]);
        let steady = serve::serve(&[]);
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (pf, ps) = (
            write_plan(fd.path(), &plan(model)),
            write_plan(sd.path(), &plan(model)),
        );
        let freezer = serve::duty_freeze(
            frozen.pid(),
            Duration::from_millis(300),
            Duration::from_millis(1800),
            Duration::from_millis(2400),
            Duration::from_secs(10),
        );
        let (out, s) = load(&["--plan", &pf, "--target", &frozen.mcp_url()], fd.path());
        freezer.join().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{model}: {stdout}\n{}",
            stderr(&out)
        );
        assert_eq!(
            s["service_gaps"],
            serde_json::json!([]),
            "{model}: no freeze reaches the gap floor"
        );
        let share = f(&s["frozen"]["share_pct"]);
        assert!(
            (35.0..=100.0).contains(&share),
            "{model}: frozen {share}% {:#}",
            s["frozen"]
        );
        let t = s["thresholds"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["expr"] == "frozen_time < 20%"))
            .unwrap_or_else(|| panic!("{model}: {:#}", s["thresholds"]));
        assert_eq!(t["passed"], false, "{model}: {t:#}");
        assert!(
            s["failures"].to_string().contains("the target was frozen"),
            "{model}: {:#}",
            s["failures"]
        );
        if model.starts_with("users") {
            // Coordinated omission: the round trips the users held back
            // waited up to 1.8 s each, so the corrected mean is the freeze's
            // order where the measured one is the thaw's (how many are
            // backfilled depends on each user's pacing, which a loaded test
            // machine slows); the backfilled round trips are counted.
            let (raw, fixed) = (f(&s["e2e"]["mean_ms"]), f(&s["e2e_corrected"]["mean_ms"]));
            assert!(
                fixed > 100.0 && fixed > 4.0 * raw,
                "mean raw {raw} corrected {fixed}"
            );
            assert!(n(&s["backfilled"]) > 100, "{:#}", s["backfilled"]);
            assert!(
                s["diagnoses"].to_string().contains("coordinated omission"),
                "{:#}",
                s["diagnoses"]
            );
        }
        // The control runs after the frozen run, not beside it, and the
        // open model offers 100/s, not 300/s: beside the frozen run (each
        // thaw a burst of round trips held back) or on a host running three
        // other tests, a debug build's 300/s control was cut off at its end
        // for 1.4 % and 6.5 % of its round trips (its 1 % threshold).
        let (out, s) = load(&["--plan", &ps, "--target", &steady.mcp_url()], sd.path());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{model}: the steady control: {}\n{s:#}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            f(&s["frozen"]["share_pct"]) < 20.0,
            "{model}: {:#}",
            s["frozen"]
        );
    }
}

/// An offered rate the target cannot serve: before, the arrivals the
/// in-flight cap held back were simply not counted, and such a run PASSED
/// (2,451 round trips/s of 200,000 offered). A server whose replies stall
/// 40 ms each (`--flaw no-nodelay`) behind a cap of 8 serves about 100
/// round trips/s; offered 1,000/s the run FAILS naming offered against
/// achieved and the target as the limit. The control, 40/s, is delivered.
#[test]
fn a_rate_the_target_cannot_serve_fails_naming_offered_and_achieved() {
    let run = |rate: u32| {
        let dir = tempfile::tempdir().unwrap();
        let plan = write_plan(
            dir.path(),
            &format!(
                "name = \"undelivered\"\nduration = \"3s\"\ntimeout = \"10s\"\nstall = \"20s\"\n\
                 [load]\nrate = {rate}\nmax_in_flight = 8\n\
                 [scenarios.form-accept]\ntool = \"deploy\"\narguments = {{ service = \"web\" }}\n"
            ),
        );
        let r = load(
            &[
                "--plan",
                &plan,
                "--serve-arg=--flaw",
                "--serve-arg=no-nodelay",
            ],
            dir.path(),
        );
        (r, dir)
    };
    let ((out, s), _d) = run(1000);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", stderr(&out));
    assert_eq!(s["verdict"], "failed", "{s:#}");
    let d = &s["delivery"];
    assert_eq!(d["limited_by"], "target", "{d:#}");
    assert!(f(&d["delivered_pct"]) < 50.0, "{d:#}");
    assert!((f(&d["offered_rps"]) - 1000.0).abs() < 50.0, "{d:#}");
    let failures = s["failures"].to_string();
    assert!(
        failures.contains("not delivered") && failures.contains("offered 1000 round trips/s"),
        "{failures}"
    );
    assert!(stdout.contains("short, limited by the target"), "{stdout}");

    let ((out, s), _d) = run(40);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{s:#}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        s["delivery"]["limited_by"],
        Value::Null,
        "{:#}",
        s["delivery"]
    );
    assert!(
        f(&s["delivery"]["delivered_pct"]) > 90.0,
        "{:#}",
        s["delivery"]
    );
}

/// An open-model rate one generator thread (a debug build) cannot reach:
/// the verdict is INCONCLUSIVE with its own exit code and the reason,
/// never PASSED or FAILED on figures the generator could not back.
#[test]
fn a_rate_the_generator_cannot_reach_is_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        "name = \"unreachable-rate\"\nduration = \"2s\"\ntimeout = \"10s\"\nstall = \"20s\"\n\
         [load]\nrate = 8000\nmax_in_flight = 60000\n\
         [scenarios.form-accept]\ntool = \"deploy\"\narguments = { service = \"web\" }\n",
    );
    let (out, s) = load(&["--plan", &plan, "--generator-threads", "1"], dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{}", stderr(&out));
    assert_eq!(s["verdict"], "inconclusive", "{s:#}");
    assert_eq!(s["passed"], false);
    // Which shortfall shows first depends on the machine: late arrivals,
    // a saturated thread, or a descriptor-lowered cap holding arrivals.
    let h = &s["generator_health"];
    let problems = h["problems"].as_array().expect("problems");
    assert!(!problems.is_empty(), "{h:#}");
    for p in problems {
        let p = p.as_str().unwrap_or_default();
        assert!(p.starts_with("the generator"), "{h:#}");
    }
    assert!(
        stdout.contains("INCONCLUSIVE") && stdout.contains("inconclusive: "),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.path().join("run/summary.md")).unwrap();
    assert!(
        md.contains("(INCONCLUSIVE)") && md.contains("Why it is inconclusive"),
        "{md}"
    );
}
