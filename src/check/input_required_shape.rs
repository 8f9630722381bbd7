//! The shape of every `InputRequiredResult` (S2, S4): `inputRequests` or
//! `requestState`, `{method, params}` values with an allowed method and no
//! JSON-RPC framing, elicitation params well formed, no duplicate keys in
//! the raw JSON. Uses `protocol::validate`; schema content and URL safety
//! are the `schema_findings` family.

use super::model::Verdict;
use super::probe::{FirstReply, Probe};
use super::registry::{Check, check};
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

/// [`is_shape_rule`] less a missing `resultType`: `mrtr-result-type`
/// reports that once, for every result, and this check judges the rest of
/// the shape of a round that asks without saying so.
fn judged_here(rule: &str) -> bool {
    is_shape_rule(rule) && rule != "result-type-missing"
}

/// The JSON documents of a reply body: the body itself, or (an SSE
/// stream) the data of each event.
pub fn documents(raw: &str) -> Vec<String> {
    if serde_json::from_str::<serde_json::Value>(raw).is_ok() {
        return vec![raw.to_owned()];
    }
    let mut events = Vec::new();
    let mut parser = crate::protocol::sse::SseParser::new();
    if parser.push(raw.as_bytes(), &mut events).is_err() {
        return Vec::new();
    }
    let _ = parser.push(b"\n\n", &mut events);
    events
        .into_iter()
        .map(|e| e.data)
        .filter(|d| !d.trim().is_empty())
        .collect()
}

/// Validates raw reply bodies (JSON, or SSE streams) of 2026-07-28
/// results; returns the findings `keep` selects.
pub fn findings_of(raw: &str, keep: fn(&str) -> bool) -> Vec<Finding> {
    let opts = Options {
        generation: Some(Generation::Modern),
        schema: None,
    };
    documents(raw)
        .iter()
        .filter_map(|d| validate_document(d.as_bytes(), &opts).ok())
        .flat_map(|r| r.findings)
        .filter(|f| keep(&f.rule))
        .collect()
}

/// Turns findings into a verdict: the worst severity decides.
pub fn verdict_of(mut findings: Vec<(String, Finding)>, what: &str) -> Verdict {
    // Each finding once, however often the same request was seen.
    let mut seen = std::collections::HashSet::new();
    findings.retain(|(tool, f)| {
        seen.insert((
            tool.clone(),
            f.rule.clone(),
            f.pointer.clone(),
            f.message.clone(),
        ))
    });
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
                response: crate::client::mask::body(raw.as_bytes()),
                status: None,
            });
            all.extend(
                findings_of(raw, judged_here)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_bodies_are_validated_event_by_event() {
        let json = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}"#;
        assert_eq!(documents(json), vec![json.to_owned()]);
        let sse = format!("data: \nid: 0\nretry: 3000\n\ndata: {json}\n\n");
        assert_eq!(documents(&sse), vec![json.to_owned()]);
        // An InputRequiredResult with neither field is a finding, over SSE too.
        assert!(!findings_of(&sse, is_shape_rule).is_empty());
    }
}
