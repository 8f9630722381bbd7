//! `inputResponses` validation (S9, §6.B 17–19): unknown extra keys are
//! ignored; missing or wrong-key answers get a new `input_required`, not an
//! error; malformed answers (a number, `null`, an array, content of the
//! wrong type, an unknown action) get an error or a re-prompt, never a
//! silently accepted result and never a crash.

use super::judge::is_input_required;
use super::model::{Check, Verdict};
use super::probe::{Probe, ToolProfile};
use super::raw::Rpc;
use super::state_tamper::{Round, first_round, retry};
use crate::client::content::{InvalidKind, invalid_content};
use crate::findings::Severity;
use serde_json::{Map, Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-input-responses-unknown-keys",
            "§4.7 S9 / §6.B 17",
            Should,
            Modern,
            "unknown extra inputResponses keys are ignored",
            unknown_keys
        ),
        check!(
            "mrtr-input-responses-missing",
            "§4.7 S9 / §6.B 18",
            Should,
            Modern,
            "missing or wrong-key inputResponses get a new input_required, not an error",
            missing
        ),
        check!(
            "mrtr-input-responses-malformed",
            "§4.7 S9, §4.10 / §6.B 19",
            Should,
            Modern,
            "malformed inputResponses get an error or a re-prompt: never a result (WARN), never a crash (FAIL)",
            malformed
        ),
    ]
}

async fn subject(p: &Probe) -> Result<(ToolProfile, Round), Verdict> {
    let Some(t) = p.target().stateful_form_tool().cloned() else {
        return Err(Verdict::skip(
            "no form tool answers input_required with a requestState",
        ));
    };
    match first_round(p, &t, &format!("tools/call {} #1", t.name)).await {
        Ok(r) => Ok((t, r)),
        Err(e) => Err(Verdict::skip(e)),
    }
}

async fn unknown_keys(p: Probe) -> Verdict {
    let (t, r) = match subject(&p).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let mut answers = r.answers.clone();
    answers.insert(
        "elicitkit_unexpected".into(),
        json!({"action": "accept", "content": {"x": 1}}),
    );
    match retry(
        &p,
        &t,
        &format!("tools/call {} #2 retry with an extra key", t.name),
        &answers,
        &r.state,
    )
    .await
    {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((Rpc::Result(_), _)) => Verdict::pass("the extra key was ignored and the call went on"),
        Ok((other, _)) => Verdict::fail(format!(
            "an extra inputResponses key got {}",
            other.describe()
        )),
    }
}

async fn missing(p: Probe) -> Verdict {
    let mut problems = Vec::new();
    for (what, answers) in [
        ("no answers", Map::new()),
        (
            "answers under the wrong key",
            Map::from_iter([(
                "elicitkit_wrong_key".to_owned(),
                json!({"action":"accept","content":{}}),
            )]),
        ),
    ] {
        let (t, r) = match subject(&p).await {
            Ok(x) => x,
            Err(v) => return v,
        };
        match retry(
            &p,
            &t,
            &format!("tools/call {} #2 retry with {what}", t.name),
            &answers,
            &r.state,
        )
        .await
        {
            Err(e) => problems.push(format!("{what}: no reply: {e}")),
            Ok((Rpc::Result(v), _)) if is_input_required(&v) => {}
            Ok((other, _)) => problems.push(format!("{what}: {}", other.describe())),
        }
    }
    if problems.is_empty() {
        Verdict::pass("missing and wrong-key answers were asked for again")
    } else {
        Verdict::fail(format!(
            "expected a new input_required: {}",
            problems.join("; ")
        ))
    }
}

async fn malformed(p: Probe) -> Verdict {
    let (_, r0) = match subject(&p).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let key = r0
        .answers
        .keys()
        .next()
        .cloned()
        .unwrap_or_else(|| "input".into());
    let schema = r0
        .ir
        .input_requests
        .as_ref()
        .and_then(|m| m.get(&key))
        .and_then(|r| r.params.get("requestedSchema").cloned())
        .unwrap_or(Value::Null);
    let mut variants: Vec<(&str, Value)> = vec![
        ("a number", json!(42)),
        ("null", Value::Null),
        ("an array", json!([])),
        ("an unknown action", json!({"action": "maybe"})),
    ];
    if let Some(c) = invalid_content(&schema, InvalidKind::WrongType, p.settings().seed) {
        variants.push((
            "content of the wrong type",
            json!({"action": "accept", "content": c}),
        ));
    }
    let mut accepted = Vec::new();
    let mut crashed = Vec::new();
    for (what, value) in variants {
        let (t, r) = match subject(&p).await {
            Ok(x) => x,
            Err(v) => return v,
        };
        let mut answers = r.answers.clone();
        answers.insert(key.clone(), value);
        match retry(
            &p,
            &t,
            &format!("tools/call {} #2 retry, {key} is {what}", t.name),
            &answers,
            &r.state,
        )
        .await
        {
            Err(e) => crashed.push(format!("{what}: {e}")),
            Ok((_, status)) if status >= 500 => crashed.push(format!("{what}: HTTP {status}")),
            Ok((Rpc::Result(v), _))
                if !is_input_required(&v) && v.get("isError") != Some(&json!(true)) =>
            {
                accepted.push(what)
            }
            Ok(_) => {}
        }
    }
    if !crashed.is_empty() {
        return Verdict::violation(
            Severity::Must,
            format!(
                "the server failed on malformed answers: {}",
                crashed.join("; ")
            ),
        );
    }
    if !accepted.is_empty() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "malformed answers were accepted with a successful result: {}",
                accepted.join(", ")
            ),
        );
    }
    Verdict::pass("every malformed answer got an error, a tool error or a re-prompt")
}
