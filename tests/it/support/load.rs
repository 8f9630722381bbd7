//! Helpers shared by the `elicitkit load` integration tests: run the real
//! binary against the embedded reference server on 127.0.0.1 and read the
//! report it writes.

#![allow(dead_code)] // each test file uses its own subset

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The `elicitkit` binary under test.
pub use super::serve::BIN;

/// Runs `elicitkit load ARGS --out OUT --run-id run --quiet`; returns its
/// output and `OUT/run/summary.json` (`Null` when none was written).
pub fn load(args: &[&str], out: &Path) -> (Output, Value) {
    let output = Command::new(BIN)
        .arg("load")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("--run-id")
        .arg("run")
        .arg("--quiet")
        .output()
        .expect("run elicitkit load");
    let summary = std::fs::read_to_string(out.join("run/summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (output, summary)
}

/// Writes `text` as `DIR/plan.toml`; returns its path.
pub fn write_plan(dir: &Path, text: &str) -> String {
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A JSON count (`u64::MAX` when absent, so a comparison fails loudly).
pub fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(u64::MAX)
}

/// A JSON number (NaN when absent).
pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Stderr of a finished command, for assertion messages.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `interval` lines of an ndjson stream file.
pub fn ndjson_intervals(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("each line is JSON"))
        .filter(|l| l["type"] == "interval")
        .collect()
}

/// A plan for short soaks: `deploy` form round trips at 30/s (open model),
/// a health sample every 250 ms; bounded by its duration, 100,000
/// requests and 10 s per request.
pub const SOAK_PLAN: &str = r#"
name = "soak"
duration = "3s"
timeout = "10s"
stall = "20s"
interval = "250ms"
max_requests = 100000
[load]
rate = 30
[scenarios.form-accept]
tool = "deploy"
arguments = { service = "web" }
"#;

/// The flags of a short soak: 1 s warm-up, 4 s steady, 2 s cool-down.
pub const SHORT_SOAK: [&str; 6] = ["--soak", "4s", "--cool-down", "2s", "--warmup", "1s"];

/// The soak trend of `metric` (`rss`, `fds`) in a summary.
pub fn trend<'a>(s: &'a Value, metric: &str) -> &'a Value {
    s["health"]["soak"]["trends"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["metric"] == metric))
        .unwrap_or_else(|| panic!("no {metric} trend: {:#}", s["health"]))
}
