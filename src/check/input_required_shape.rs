//! The shape of every `InputRequiredResult` (S2, S4): `inputRequests` or
//! `requestState`, `{method, params}` values with an allowed method and no
//! JSON-RPC framing, elicitation params well formed, no duplicate keys in
//! the raw JSON. Uses `protocol::validate`; schema content and URL safety
//! are the `schema_findings` family.

use super::model::{Check, Verdict};
use super::probe::{FirstReply, Probe};
use crate::findings::{Finding, Severity};
use crate::protocol::Generation;
use crate::protocol::validate::{Options, validate_document};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-input-required-shape",
        "§4.5, §4.7 S2 S4 / §6.B 7",
        Must,
        Modern,
        "InputRequiredResult: inputRequests or requestState, {method, params} without jsonrpc/id, unique keys",
        shape
    )]
}

/// Rule ids of `protocol::validate` that are about message shape (the
/// rest, schema and URL findings, belong to `schema_findings`).
pub fn is_shape_rule(rule: &str) -> bool {
    rule.starts_with("input-")
        || rule.starts_with("result-type")
        || rule.starts_with("request-state")
        || rule.starts_with("elicit-")
        || rule.starts_with("json-")
        || rule.starts_with("jsonrpc")
        || matches!(
            rule,
            "form-schema-missing" | "url-missing" | "url-type" | "not-an-object"
        )
}

/// Validates raw reply bodies of 2026-07-28 results; returns the findings
/// `keep` selects, each prefixed with `label`.
pub fn findings_of(raw: &str, keep: fn(&str) -> bool) -> Vec<Finding> {
    let opts = Options {
        generation: Some(Generation::Modern),
        schema: None,
    };
    match validate_document(raw.as_bytes(), &opts) {
        Ok(r) => r.findings.into_iter().filter(|f| keep(&f.rule)).collect(),
        Err(_) => Vec::new(),
    }
}

/// Turns findings into a verdict: the worst severity decides.
pub fn verdict_of(findings: Vec<(String, Finding)>, what: &str) -> Verdict {
    let Some(worst) = findings.iter().map(|(_, f)| f.severity).max() else {
        return Verdict::pass(format!("no findings in {what}"));
    };
    let text: Vec<String> = findings
        .iter()
        .map(|(tool, f)| {
            format!(
                "{tool}: {} {} at {:?}: {}",
                f.severity, f.rule, f.pointer, f.message
            )
        })
        .collect();
    let detail = text.join("; ");
    match worst {
        Severity::Must => Verdict::violation(Severity::Must, detail),
        Severity::Should => Verdict::violation(Severity::Should, detail),
        Severity::Info => Verdict::violation(Severity::Info, detail),
    }
}

async fn shape(p: Probe) -> Verdict {
    let mut all = Vec::new();
    let mut seen = 0;
    for t in &p.target().tools {
        if let FirstReply::InputRequired { raw, .. } = &t.first {
            seen += 1;
            p.record(super::model::Exchange {
                label: format!("tools/call {} #1 (from discovery)", t.name),
                request: format!("tools/call {} with every capability", t.name),
                response: super::mask::body(raw.as_bytes()),
            });
            all.extend(
                findings_of(raw, is_shape_rule)
                    .into_iter()
                    .map(|f| (t.name.clone(), f)),
            );
        }
    }
    if seen == 0 {
        return Verdict::skip("no tool answered input_required");
    }
    verdict_of(all, &format!("{seen} input_required results"))
}
