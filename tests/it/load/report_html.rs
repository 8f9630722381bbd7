//! `report.html` rendered in headless Chromium (Debian package `chromium`,
//! installed on first use by `support::need`): a short real load against
//! the embedded server on 127.0.0.1, then the page's DOM after its inline
//! script ran. The test fails, not skips, when Chromium cannot be had.

use crate::support::load::{load, stderr, write_plan};
use std::path::Path;
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

/// A mix with an unexpected outcome (declines crash the server's tool) and
/// thresholds on latency, the error rate and the rate.
const PLAN: &str = r#"
name = "html"
duration = "3s"
timeout = "5s"
thresholds = ["p99(e2e) < 2s", "p99(retry) < 2s", "p50(first) < 1s", "error_rate < 90%", "rps > 1"]

[load]
rate = 40.0

[scenarios.form-accept]
weight = 3

[scenarios.form-decline]
weight = 1
"#;

/// Headless Chromium on `page` with `args` (a fresh profile); its stdout.
fn chromium(page: &Path, args: &[&str]) -> String {
    crate::support::need::need("chromium");
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args(["--disable-extensions", "--hide-scrollbars"])
        .args(args)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium failed: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The page's DOM after its script ran.
fn dump_dom(page: &Path) -> String {
    chromium(page, &["--virtual-time-budget=2000", "--dump-dom"])
}

/// A screenshot of `page`, 1400 px wide and `height` tall, saved as
/// `target/tmp/report_html/NAME` for a look (and checked not to be blank).
fn screenshot(page: &Path, name: &str, height: u32) {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_html");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join(name);
    let size = format!("--window-size=1400,{height}");
    let shot_arg = format!("--screenshot={}", shot.display());
    chromium(page, &[&size, &shot_arg]);
    assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000));
}

/// The page's list of script errors (empty when the script ran clean).
fn script_errors(dom: &str) -> &str {
    dom.split(r#"<ul id="script-errors">"#)
        .nth(1)
        .and_then(|r| r.split("</ul>").next())
        .expect("the error list is in the page")
        .trim()
}

/// The chart `id`'s SVG in the page.
fn chart<'a>(dom: &'a str, id: &str) -> &'a str {
    dom.split(&format!(r#"id="{id}""#))
        .nth(1)
        .and_then(|r| r.split("</svg>").next())
        .unwrap_or_else(|| panic!("chart {id} in the page"))
}

#[test]
fn report_html_renders_every_chart_without_script_errors() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let (out, s) = load(
        &[
            "--plan",
            &plan,
            "--warmup",
            "1s",
            "--serve-arg=--flaw",
            "--serve-arg=crash-on-decline",
        ],
        dir.path(),
    );
    assert!(s.is_object(), "a report was written: {}", stderr(&out));
    assert!(
        s["round_trips"]["unexpected"].as_u64().unwrap_or(0) > 0,
        "the flaw gave errors to chart: {s:#}"
    );
    let dom = dump_dom(&dir.path().join("run/report.html"));
    assert!(
        dom.contains(r#"data-ok="1""#),
        "the inline script ran to its end: {dom}"
    );
    assert_eq!(script_errors(&dom), "", "script errors");
    // The embedded server's PID is known: its health is charted too.
    let health = elicitkit::report::health::HEALTH_CHARTS;
    for id in elicitkit::report::html::CHART_IDS.iter().chain(&health) {
        assert!(dom.contains(&format!(r#"id="{id}""#)), "chart {id} missing");
    }
    let charts: usize = dom
        .split(r#"data-charts=""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("the script counted the charts");
    assert_eq!(
        charts,
        elicitkit::report::html::CHART_IDS.len() + health.len()
    );
    // Threshold lines on the charts they constrain.
    for (id, expr) in [
        ("chart-latency-e2e", "p99(e2e) &lt; 2s"),
        ("chart-legs-p99", "p99(retry) &lt; 2s"),
        ("chart-legs-p50", "p50(first) &lt; 1s"),
        ("chart-errors", "error_rate &lt; 90%"),
        ("chart-throughput", "rps &gt; 1"),
    ] {
        let svg = chart(&dom, id);
        assert!(
            svg.contains(r#"class="threshold""#) && svg.contains(expr),
            "{id} has no line for {expr}"
        );
    }
    for table in ["status-codes", "settings", "cpu", "error-samples"] {
        assert!(dom.contains(&format!(r#"id="{table}""#)), "{table} missing");
    }
    assert!(dom.contains("×"), "grouped error samples have counts");
    assert!(
        dom.contains("warm-up 1.0 s"),
        "the report states the warm-up"
    );
}

/// Issue 29 item 4: a plan discovered from `serve` (a scenario per tool and
/// answer) charts more series than the legend has rows: the legend keeps
/// to the chart, names how many more there are, and every drawn point
/// tells its values on hover. Screenshots of the page go to
/// `target/tmp/report_html/` for a look.
#[test]
fn a_discovered_plan_keeps_its_legends_inside_the_charts() {
    let dir = tempfile::tempdir().unwrap();
    let mut serve = crate::support::serve::serve(&[]);
    let url = serve.mcp_url();
    let (out, s) = load(&["--target", &url, "--duration", "3s"], dir.path());
    serve.kill();
    let scenarios = s["scenarios"].as_object().map_or(0, |m| m.len());
    assert!(
        scenarios > elicitkit::report::svg::LEGEND_ROWS,
        "{scenarios} scenarios discovered: {}",
        stderr(&out)
    );
    let page = dir.path().join("run/report.html");
    let dom = dump_dom(&page);
    assert_eq!(script_errors(&dom), "", "script errors");
    let chart = chart(&dom, "chart-scenarios-p99");
    let rows = chart.matches(r#"<g class="legend""#).count();
    assert_eq!(rows, elicitkit::report::svg::LEGEND_ROWS - 1, "{chart}");
    let more = scenarios - rows;
    assert!(chart.contains(&format!("+{more} more (hover)")), "{chart}");
    assert!(chart.contains(r#"<g class="point"><title>"#), "{chart}");
    screenshot(&page, "discovered-plan.png", 6000);
}

/// A capacity run's page leads with the search (issue 29 item 1): the
/// knee in words, the step table (a row per step, each sample's p99) and
/// both capacity charts with the knee marked and its bracket shaded,
/// before every other chart. Its screenshot goes beside the other one.
#[test]
fn a_capacity_report_leads_with_its_steps_and_knee() {
    const CAPACITY: &str = r#"
name = "cap-html"
duration = "1s"
warmup = "0s"
timeout = "2s"

[load]
rate = 40

[scenarios.form-accept]
tool = "deploy"
arguments = { service = "web" }

[capacity]
start_rate = 40
step = 40
max_rate = 200
step_duration = "500ms"
slo = ["rps < 100", "error_rate < 5%"]
bisections = 1
samples = 3
stable_pct = 1000
stable_floor = "1s"
host_noise = 64
host_spare = 0
"#;
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), CAPACITY);
    let (out, s) = load(&["--plan", &plan, "--capacity"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let steps = s["capacity"]["steps"].as_array().expect("steps").len();
    let page = dir.path().join("run/report.html");
    let dom = dump_dom(&page);
    assert_eq!(script_errors(&dom), "", "script errors");
    let at = |needle: &str| {
        dom.find(needle)
            .unwrap_or_else(|| panic!("{needle} in the page"))
    };
    let first_other_chart = dom
        .match_indices("<svg ")
        .map(|(i, _)| i)
        .find(|i| {
            let tag = dom[*i..].split('>').next().unwrap_or("");
            !tag.contains(r#"id="chart-capacity"#)
        })
        .unwrap_or(usize::MAX);
    for part in [
        r#"id="capacity-knee""#,
        r#"id="capacity-steps""#,
        r#"id="chart-capacity-rate""#,
        r#"id="chart-capacity-p99""#,
    ] {
        assert!(at(part) < first_other_chart, "{part} comes first");
    }
    let table = dom[at(r#"id="capacity-steps""#)..]
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(table.matches("<tr class=").count(), steps, "{table}");
    assert!(table.contains("p99 per sample"), "{table}");
    assert!(dom.contains("<code>rps &lt; 100, error_rate &lt; 5%</code>"));
    let rate = chart(&dom, "chart-capacity-rate");
    assert!(
        rate.contains("the knee lies here"),
        "bracket shaded: {rate}"
    );
    assert!(rate.contains(">knee<"), "knee in the legend: {rate}");
    screenshot(&page, "capacity.png", 3000);
}
