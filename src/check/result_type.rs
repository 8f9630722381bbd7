//! `resultType` on every 2026-07-28 result (§4.4): discover, the lists,
//! the first listed resource's read and prompt's get ([`offered`]), each
//! tool's first call and retry (a round that asks without saying so is
//! read by its shape, and named here); and `input_required` only where
//! MRTR is allowed: `tools/call`, `prompts/get`, `resources/read` (S1).

use super::judge::{answers_for, asks_for_input};
use super::model::Verdict;
use super::offered::{self, Follow};
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::Rpc;
use crate::protocol::mrtr::InputRequiredResult;
use serde_json::{Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-result-type",
            "§4.4 / §6.B 5",
            Must,
            Modern,
            "every result carries resultType complete or input_required",
            result_type;
            scenario "input-required-result-result-type"
        ),
        check!(
            "mrtr-input-required-scope",
            "§4.7 S1 / §6.B 6",
            Must,
            Modern,
            "input_required only answers tools/call, prompts/get, resources/read",
            scope,
            // It sends methods a server may not have: over stdio their
            // -32601 with id null is told only while alone on the pipe.
            alone;
            scenario "input-required-result-unsupported-methods"
        ),
    ]
}

fn judge_type(what: &str, rpc: &Rpc, problems: &mut Vec<String>, seen: &mut usize) {
    if let Rpc::Result(v) = rpc {
        *seen += 1;
        if let Some(problem) = crate::oracle::reply::result_type_problem(v) {
            problems.push(format!("{what}: {problem}"));
        }
    }
}

async fn result_type(p: Probe) -> Verdict {
    let caps = all_modes();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let mut seen = 0usize;
    let mut follows: Vec<Follow> = Vec::new();
    for method in [
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    ] {
        let Ok(r) = p.modern(method, method, json!({}), &caps).await else {
            continue;
        };
        let rpc = r.rpc();
        judge_type(method, &rpc, &mut problems, &mut seen);
        let follow = match method {
            "resources/list" => offered::first_read(&rpc),
            "prompts/list" => offered::first_get(&rpc),
            _ => continue,
        };
        match follow {
            Ok(f) => follows.push(f),
            Err(why) => notes.push(why.into()),
        }
    }
    for f in follows {
        if let Ok(r) = p.modern(f.label.clone(), f.method, f.params, &caps).await {
            judge_type(&f.label, &r.rpc(), &mut problems, &mut seen);
        }
    }
    let tools: Vec<_> = p.target().tools.clone();
    for t in tools.iter().take(6) {
        let first = p.call_request(format!("tools/call {} #1", t.name), t, &caps, None, None);
        let Ok(reply) = p.send(first).await else {
            continue;
        };
        let rpc = reply.rpc();
        judge_type(
            &format!("tools/call {} #1", t.name),
            &rpc,
            &mut problems,
            &mut seen,
        );
        let Some(v) = rpc.result().filter(|v| asks_for_input(v)) else {
            continue;
        };
        let Some(ir) = InputRequiredResult::from_value(v) else {
            continue;
        };
        if t.modes().url {
            continue; // a URL round cannot finish without the page; its retry re-prompts
        }
        let answers = Value::Object(answers_for(&ir, p.settings().target.seed));
        let retry = p.call_request(
            format!("tools/call {} #2 retry", t.name),
            t,
            &caps,
            Some(answers),
            ir.request_state.as_deref(),
        );
        if let Ok(r) = p.send(retry).await {
            judge_type(
                &format!("tools/call {} #2", t.name),
                &r.rpc(),
                &mut problems,
                &mut seen,
            );
        }
    }
    if !problems.is_empty() {
        return Verdict::fail(problems.join("; "));
    }
    if seen == 0 {
        return Verdict::skip("no request produced a result to inspect");
    }
    if tools.is_empty() {
        notes.push(match &p.target().no_tools {
            Some(why) => format!("no tools/call probed: {why}"),
            None => "no tools/call probed: no tool is listed (or selected)".into(),
        });
    }
    Verdict::pass(format!(
        "{seen} results, each with resultType{}",
        offered::aside(&notes)
    ))
}

async fn scope(p: Probe) -> Verdict {
    let caps = all_modes();
    let probes = [
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("server/discover", json!({})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "elicitkit"}, "argument": {"name": "a", "value": ""}}),
        ),
    ];
    let mut offenders = Vec::new();
    let mut answered = 0;
    for (method, params) in probes {
        let Ok(r) = p.modern(method, method, params, &caps).await else {
            continue;
        };
        if let Rpc::Result(v) = r.rpc() {
            answered += 1;
            if crate::oracle::reply::input_required_out_of_scope(method, &v) {
                offenders.push(method);
            }
        }
    }
    if !offenders.is_empty() {
        return Verdict::fail(format!(
            "input_required returned for {}: MRTR is only for tools/call, prompts/get and resources/read",
            offenders.join(", ")
        ));
    }
    Verdict::pass(format!(
        "{answered} non-MRTR methods answered without input_required"
    ))
}
