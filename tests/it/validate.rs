//! `elicitkit validate` run as a real binary on the fixtures.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/protocol/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn validate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .arg("validate")
        .args(args)
        .output()
        .expect("run elicitkit")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn spec_examples_pass() {
    for f in [
        "legacy_form_request.json",
        "modern_input_required.json",
        "modern_url_input_request.json",
        "url_elicitation_required.json",
        "missing_capability_ok.json",
    ] {
        let o = validate(&[&fixture(f)]);
        assert_eq!(
            code(&o),
            0,
            "{f}: {}{}",
            stdout(&o),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn broken_messages_fail_with_the_rule_named() {
    for (f, rule) in [
        ("legacy_url_without_id.json", "legacy-url-elicitation-id"),
        (
            "missing_capability_array.json",
            "required-capabilities-shape",
        ),
        ("input_required_empty.json", "input-required-empty"),
        ("duplicate_keys.json", "json-duplicate-key"),
    ] {
        let o = validate(&[&fixture(f)]);
        assert_eq!(code(&o), 1, "{f}: {}", stdout(&o));
        assert!(
            stdout(&o).contains(rule),
            "{f}: expected {rule} in\n{}",
            stdout(&o)
        );
    }
}

#[test]
fn a_form_that_names_a_secret_fails_and_a_word_match_is_for_review() {
    // A field named password, and the spec's own example (an API key in a
    // form): the MUST of §3.6 rule 1, exit 1.
    for f in ["form_asks_for_password.json", "form_asks_for_api_key.json"] {
        let o = validate(&[&fixture(f)]);
        assert_eq!(code(&o), 1, "{f}: {}", stdout(&o));
        assert!(
            stdout(&o).contains("MUST") && stdout(&o).contains("form-asks-for-secret"),
            "{f}: {}",
            stdout(&o)
        );
    }
    // A secret word only in a description is a heuristic (spec digest
    // §6.A 7): SHOULD, for review, and it does not fail the run.
    let o = validate(&[&fixture("form_mentions_a_secret.json")]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("form-asks-for-secret"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn elicit_result_is_checked_against_a_schema() {
    let schema = fixture("elicit_schema.json");
    let ok = validate(&[&fixture("elicit_result_ok.json"), "--schema", &schema]);
    assert_eq!(code(&ok), 0, "{}", stdout(&ok));
    let bad = validate(&[
        &fixture("elicit_result_bad.json"),
        "--schema",
        &schema,
        "--format",
        "json",
    ]);
    assert_eq!(code(&bad), 1, "{}", stdout(&bad));
    let report: serde_json::Value = serde_json::from_slice(&bad.stdout).expect("json output");
    assert_eq!(report["kind"], "elicit-result");
    let pointers: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["pointer"].as_str().unwrap())
        .collect();
    assert!(pointers.contains(&"/content/age"), "{pointers:?}");
    assert!(
        pointers.iter().any(|p| p.starts_with("/content/c")),
        "{pointers:?}"
    );
}

#[test]
fn malformed_json_exits_2_with_position() {
    let f = fixture("malformed.json");
    let o = validate(&[&f]);
    assert_eq!(code(&o), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("malformed.json:3:"), "{err}");
    assert_eq!(err.lines().count(), 1, "one-line reason: {err}");
}

#[test]
fn missing_file_exits_2() {
    let o = validate(&["/nonexistent/elicitkit.json"]);
    assert_eq!(code(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}

#[test]
fn reads_standard_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elicitkit"))
        .args(["validate", "-", "--generation", "2026-07-28"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("result-type-missing"));
}

/// A document with nothing elicitation-specific in it is a usage error:
/// `{}` printed an INFO line and exited 0, as if it had passed.
#[test]
fn a_document_that_is_not_an_elicitation_message_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    for (name, doc) in [
        ("empty.json", "{}"),
        (
            "tools_list.json",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, doc).unwrap();
        let o = validate(&[path.to_str().unwrap()]);
        assert_eq!(code(&o), 2, "{doc}: {}", stdout(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!(
                "elicitkit: {}: not an elicitation message, so nothing was checked: give an \
                 elicitation/create request, an InputRequiredResult, an ElicitResult, a completed \
                 result, an error response or a notifications/elicitation/complete (bare or in a \
                 JSON-RPC message)\n",
                path.display()
            )
        );
        assert_eq!(stdout(&o), "", "{doc}");
    }
    // The completion notification is one, and a well-formed one passes.
    let path = dir.path().join("complete.json");
    std::fs::write(
        &path,
        r#"{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e1"}}"#,
    )
    .unwrap();
    let o = validate(&[path.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).starts_with("kind: complete-notification"),
        "{}",
        stdout(&o)
    );
}
