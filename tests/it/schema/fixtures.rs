//! Replays the schema fixtures in `tests/fixtures/schema/`.
//!
//! Each `NAME.json` is a raw `requestedSchema`. `expectations.json` maps the
//! file name to the findings expected from `validate_schema` plus
//! `form_secret_findings` (as `"SEVERITY rule @pointer"`, order-insensitive)
//! and, optionally, `content` cases checked with `validate_content`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use elicitkit::findings::Finding;
use elicitkit::schema::{form_secret_findings, parse_schema, validate_content};
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema")
}

fn render(findings: &[Finding]) -> Vec<String> {
    let mut v: Vec<String> = findings
        .iter()
        .map(|f| format!("{} {} @{}", f.severity, f.rule, f.pointer))
        .collect();
    v.sort();
    v
}

fn expected(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .expect("findings list")
        .iter()
        .map(|s| s.as_str().expect("finding string").to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn every_fixture_yields_exactly_its_expected_findings() {
    let exp_text = std::fs::read_to_string(dir().join("expectations.json")).expect("read");
    let exp: BTreeMap<String, Value> = serde_json::from_str(&exp_text).expect("parse");
    let mut files: Vec<String> = std::fs::read_dir(dir())
        .expect("fixture dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && n != "expectations.json")
        .collect();
    files.sort();
    assert!(files.len() >= 20, "fixtures missing: {files:?}");
    let mut failures = Vec::new();
    for name in &files {
        let Some(e) = exp.get(name) else {
            failures.push(format!("{name}: no entry in expectations.json"));
            continue;
        };
        let text = std::fs::read_to_string(dir().join(name)).expect("read fixture");
        let schema: Value = serde_json::from_str(&text).expect("fixture is JSON");
        let (model, mut findings) = parse_schema(&schema);
        if let Some(m) = &model {
            findings.extend(form_secret_findings(m));
        }
        let got = render(&findings);
        let want = expected(&e["findings"]);
        if got != want {
            failures.push(format!("{name}:\n  got  {got:?}\n  want {want:?}"));
        }
        for case in e
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let m = model.as_ref().expect("content cases need a model");
            let got = render(&validate_content(m, &case["value"]));
            let want = expected(&case["findings"]);
            if got != want {
                failures.push(format!(
                    "{name} content {}:\n  got  {got:?}\n  want {want:?}",
                    case["value"]
                ));
            }
        }
    }
    for name in exp.keys() {
        if !files.contains(name) {
            failures.push(format!("{name}: expected but no such fixture"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn clean_fixtures_round_trip_through_the_model() {
    for name in [
        "good_spec_example.json",
        "good_all_shapes.json",
        "good_empty_confirmation.json",
    ] {
        let text = std::fs::read_to_string(dir().join(name)).expect("read");
        let v: Value = serde_json::from_str(&text).expect("json");
        let model = parse_schema(&v).0.expect("model");
        assert_eq!(model.to_value(), v, "{name}");
    }
}
