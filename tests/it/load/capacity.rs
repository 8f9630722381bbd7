//! `elicitkit load --capacity` (coarse steps, bisection, repeated samples)
//! against the embedded reference server on 127.0.0.1, and `elicitkit
//! report capacity` across instance counts. Every load is bounded (a few
//! half-second samples at small rates).

use crate::support::load::{BIN, f, load, stderr, write_plan};
use elicitkit::report::{CapacitySummary, SCHEMA_VERSION, Summary};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The SLO breaks at a known rate (`rps < 100`), so the search must step
/// past it and bisect back: 40 and 80/s hold, 120/s does not.
const PLAN: &str = r#"
name = "cap-test"
duration = "1s"
warmup = "0s"
timeout = "2s"
thresholds = ["error_rate < 5%"]

[load]
rate = 40

[scenarios.form-accept]
weight = 1
tool = "deploy"
arguments = { service = "web" }

[capacity]
start_rate = 40
step = 40
max_rate = 400
step_duration = "500ms"
slo = ["rps < 100", "error_rate < 5%"]
bisections = 2
resolution_pct = 1
# Two of three samples decide a step: a loaded test machine's lone
# disturbed sample does not make the search noisy (samples = 2 would).
samples = 3
# Stability is not under test here (unit tests hold it): a wide tolerance
# keeps a loaded machine's p99 noise from calling a step unstable.
stable_pct = 1000
stable_floor = "1s"
# Nor is the host guard (its own test below): this machine runs the other
# tests beside the search.
host_noise = 64
host_spare = 0
"#;

#[test]
fn a_capacity_search_bisects_between_the_last_good_and_first_bad_rate() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let (out, s) = load(
        &["--plan", &plan, "--capacity", "--instances", "1"],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    assert!(
        err.contains("worst case"),
        "the bound is stated up front: {err}"
    );
    let c = &s["capacity"];
    assert_eq!(c["instances"], 1);
    assert_eq!(c["knee_status"], "bracketed", "{c:#}");
    // The embedded server ran beside the generator: said, and named.
    let local = c["host"]["local_targets"].to_string();
    assert!(local.contains("(embedded server)"), "{c:#}");
    assert!(c["host"]["cores"].as_u64().unwrap() >= 1, "{c:#}");
    assert!(c["notes"].to_string().contains("shared one host"), "{c:#}");
    let steps = c["steps"].as_array().expect("steps");
    let kinds: Vec<&str> = steps.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    let offered: Vec<f64> = steps.iter().map(|s| f(&s["offered_rps"])).collect();
    // Coarse: 40, 80, 120 (the first bad one), then two halvings.
    assert_eq!(&kinds[..3], ["coarse"; 3], "{offered:?}");
    assert_eq!(&offered[..3], [40.0, 80.0, 120.0]);
    assert_eq!(&kinds[3..5], ["bisect"; 2], "{offered:?}");
    assert_eq!(offered[3], 100.0);
    assert!(offered[4] == 90.0 || offered[4] == 110.0, "{offered:?}");
    let good = f(&c["knee_offered_rps"]);
    let bad = f(&c["first_bad_rps"]);
    // The knee is measured again at the end, and repeats.
    assert_eq!(&kinds[5..], ["confirm"], "{offered:?}");
    assert_eq!(offered[5], good);
    assert_eq!(steps[5]["verdict"], "within", "{c:#}");
    assert!(
        c["notes"].to_string().contains("the knee repeated"),
        "{c:#}"
    );
    // The knee lies between the last good and the first bad offered rate,
    // inside the coarse bracket, and bisection narrowed it.
    assert!(80.0 < good && good < bad && bad <= 120.0, "{good} {bad}");
    assert!(
        bad - good <= 10.0 + 1e-9,
        "two halvings of 40: {good} {bad}"
    );
    for st in steps {
        let o = f(&st["offered_rps"]);
        match st["verdict"].as_str().unwrap() {
            "within" => {
                assert!(o <= good, "{st:#}");
                let n = st["samples"].as_u64().unwrap_or(0);
                assert!((2..=3).contains(&n), "a good step is confirmed: {st:#}");
                assert_eq!(st["within_slo"], true);
            }
            "breach" => {
                assert!(o >= bad, "{st:#}");
                assert_eq!(st["within_slo"], false);
            }
            v => panic!("unexpected verdict {v}: {st:#}"),
        }
    }
    let knee = f(&c["knee_rps"]);
    assert!(knee > 0.0 && knee < 100.0, "achieved at the knee: {knee}");
    // The step table is printed and written.
    assert!(stdout.contains("capacity steps"), "{stdout}");
    assert!(
        stdout.lines().filter(|l| l.contains(" bisect ")).count() == 2,
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.path().join("run/summary.md")).unwrap();
    assert_eq!(md.matches("| bisect |").count(), 2, "{md}");
    assert!(md.contains("the knee lies between"), "{md}");
    // Every sample left its log.
    let samples: u64 = steps.iter().map(|s| s["samples"].as_u64().unwrap()).sum();
    let hlogs = std::fs::read_dir(dir.path().join("run"))
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            let n = n.to_string_lossy();
            n.starts_with("capacity-") && n.ends_with(".hlog")
        })
        .count() as u64;
    assert_eq!(hlogs, samples);
}

#[test]
fn capacity_flags_without_capacity_are_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = load(&["--instances", "2", "--duration", "1s"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("go with --capacity"));
}

/// `--cpu-pid` is not only the search's: a plain run against a server we
/// did not start charges that process's CPU to the target (none without it).
#[test]
fn cpu_pid_counts_an_outside_targets_cpu_in_a_plain_run() {
    let server = crate::support::serve::serve(&[]);
    let url = server.mcp_url();
    let pid = server.pid().to_string();
    for (with, id) in [(false, "without"), (true, "with")] {
        let dir = tempfile::tempdir().unwrap();
        let plan = write_plan(dir.path(), PLAN);
        let mut args = vec!["--plan", &plan, "--target", &url, "--duration", "1s"];
        if with {
            args.extend(["--cpu-pid", &pid]);
        }
        let (out, s) = load(&args, dir.path());
        assert_eq!(out.status.code(), Some(0), "{id}: {}", stderr(&out));
        let cpu = &s["target_cpu"];
        if with {
            assert!(cpu["cpu_s"].as_f64().is_some_and(|c| c > 0.0), "{cpu}");
            assert!(
                cpu["us_per_round_trip"].as_f64().is_some_and(|c| c > 0.0),
                "{cpu}"
            );
        } else {
            assert!(cpu.is_null(), "{cpu}");
        }
    }
}

fn synthetic(dir: &Path, instances: Option<u64>, knee: f64, cmds: Option<f64>) {
    let s = Summary {
        schema: SCHEMA_VERSION,
        run_id: dir.display().to_string(),
        model: "capacity".into(),
        capacity: Some(CapacitySummary {
            knee_rps: Some(knee),
            knee_offered_rps: Some(knee),
            first_bad_rps: Some(knee * 1.04),
            knee_status: "bracketed".into(),
            instances,
            store_cmds_per_rt: cmds,
            target_rate: Some(4000.0),
            ..Default::default()
        }),
        ..Default::default()
    };
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&s).unwrap(),
    )
    .unwrap();
}

fn report_capacity(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(["report", "capacity"])
        .args(args)
        .output()
        .expect("run elicitkit report capacity")
}

#[test]
fn report_capacity_measures_scaling_and_projects_from_the_curve() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let two = dir.path().join("two");
    synthetic(&one, None, 1000.0, Some(7.0));
    synthetic(&two, Some(2), 1600.0, Some(7.5));
    let out = dir.path().join("cap");
    let o = report_capacity(&[
        &format!("1={}", one.display()),
        two.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", stderr(&o));
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap()).unwrap();
    assert_eq!(j["scaling_measured"], true);
    let p = &j["points"];
    assert_eq!(
        (p[0]["instances"].as_u64(), p[1]["instances"].as_u64()),
        (Some(1), Some(2))
    );
    assert!((f(&p[1]["efficiency"]) - 0.8).abs() < 1e-9, "{j:#}");
    assert_eq!(f(&p[1]["marginal_gain_rps"]), 600.0);
    assert_eq!(f(&p[1]["store_cmds_per_rt"]), 7.5);
    // The target rate comes from the summaries: 4000/s at 600/s per added
    // instance past 1600/s at 2 → 6 (a straight line through 1 would say 4).
    let pr = &j["projection"];
    assert_eq!(pr["instances"], 6, "{pr:#}");
    assert_eq!(pr["method"], "extrapolated");
    assert_eq!(pr["beyond_measured"], true);
    let md = std::fs::read_to_string(out.join("capacity.md")).unwrap();
    assert!(md.contains("| 2 | 1600 | 800 | 80 % | 600 |"), "{md}");
    assert!(md.contains("beyond the measured range"), "{md}");
    assert!(stdout.contains("instances for 4000/s: 6"), "{stdout}");

    // An explicit target inside the curve.
    let o = report_capacity(&[
        &format!("1={}", one.display()),
        two.to_str().unwrap(),
        "--target-rate",
        "1300",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap()).unwrap();
    assert_eq!(j["projection"]["instances"], 2);
    assert_eq!(j["projection"]["beyond_measured"], false);
}

#[test]
fn report_capacity_with_one_instance_count_will_not_invent_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    synthetic(&one, Some(1), 1000.0, None);
    let out = dir.path().join("cap");
    let o = report_capacity(&[one.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", stderr(&o));
    assert!(stdout.contains("scaling cannot be measured"), "{stdout}");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap()).unwrap();
    assert_eq!(j["scaling_measured"], false);
    assert_eq!(j["projection"]["instances"], Value::Null);
    assert_eq!(j["projection"]["method"], "cannot_measure");
    assert_eq!(j["points"][0]["efficiency"], Value::Null);

    // A run that does not say its instance count, given without N=: refused.
    let bare = dir.path().join("bare");
    synthetic(&bare, None, 900.0, None);
    let o = report_capacity(&[bare.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("N="), "{}", stderr(&o));
}

/// A capacity search on a disturbed host: the target frozen (SIGSTOP) for
/// 1.2 s during the first sample of the first step only. With three
/// samples a step, that lone breach does not break the step (two of three
/// held), and the search goes on past it; with two, one breach and one
/// pass cannot be told apart, and the search is INCONCLUSIVE (exit 3)
/// with the reason, where before a lone breach ended it as "below start"
/// or bracketed the knee a whole step low.
#[test]
fn a_lone_breach_is_sampled_again_and_a_noisy_step_is_inconclusive() {
    let run = |samples: u32| {
        let server = crate::support::serve::serve(&[]);
        let dir = tempfile::tempdir().unwrap();
        let plan = write_plan(
            dir.path(),
            &format!(
                "name = \"noisy\"\nwarmup = \"0s\"\ntimeout = \"5s\"\nstall = \"20s\"\n\
                 [scenarios.form-accept]\ntool = \"deploy\"\narguments = {{ service = \"web\" }}\n\
                 [capacity]\nstart_rate = 30\nstep = 30\nmax_rate = 60\nstep_duration = \"2s\"\n\
                 slo = [\"p99(e2e) < 800ms\"]\nbisections = 0\nsamples = {samples}\n\
                 stable_pct = 1000\nstable_floor = \"1s\"\nhost_noise = 64\nhost_spare = 0\n"
            ),
        );
        let run_dir = dir.path().join("run");
        let freeze = {
            let pid = server.pid();
            let run_dir = run_dir.clone();
            std::thread::spawn(move || {
                let t0 = std::time::Instant::now();
                while !run_dir.is_dir() && t0.elapsed() < std::time::Duration::from_secs(60) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                std::thread::sleep(std::time::Duration::from_millis(300));
                crate::support::serve::freeze_later(
                    pid,
                    std::time::Duration::ZERO,
                    std::time::Duration::from_millis(1200),
                )
                .join()
                .unwrap();
            })
        };
        let r = load(
            &["--plan", &plan, "--capacity", "--target", &server.mcp_url()],
            dir.path(),
        );
        freeze.join().unwrap();
        r
    };
    let (out, s) = run(3);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", stderr(&out));
    let c = &s["capacity"];
    let first = &c["steps"][0];
    assert_eq!(first["verdict"], "within", "{c:#}");
    assert_eq!(first["samples"], 3, "{c:#}");
    assert!(
        f(&first["sample_p99_ms"][0]) > 800.0,
        "the freeze: {first:#}"
    );
    assert!(
        c["notes"].to_string().contains("does not repeat"),
        "{:#}",
        c["notes"]
    );
    assert_eq!(c["knee_status"], "not_reached", "{c:#}");

    let (out, s) = run(2);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{}", stderr(&out));
    assert_eq!(s["verdict"], "inconclusive", "{s:#}");
    let c = &s["capacity"];
    assert_eq!(c["knee_status"], "inconclusive", "{c:#}");
    assert_eq!(c["steps"][0]["verdict"], "noisy", "{c:#}");
    assert!(
        c["inconclusive"]
            .as_str()
            .unwrap_or_default()
            .contains("disagreed"),
        "{c:#}"
    );
    assert!(stdout.contains("INCONCLUSIVE"), "{stdout}");
}
