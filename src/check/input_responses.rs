//! `inputResponses` and `requestState` validation (S9, §6.B 17–19): unknown
//! extra keys are ignored; missing or wrong-key answers get a new
//! `input_required`, not an error; malformed answers (a number, `null`, an
//! array, an unknown action; content that fails its schema is
//! [`super::invalid_content`]'s) and malformed
//! fields (`inputResponses` that is not an object, `requestState` that is
//! not a string) get a JSON-RPC error (`-32602`) or a re-prompt. HTTP 404 /
//! `-32601` (the call taken for an unknown method) and any 5xx are
//! failures. Every probe has a [`Control`] (the same round answered
//! validly): a refusal counts only when the control held, and a complete
//! result is compared with the control's: only a result of the same shape
//! shows the bad input was accepted; anything else is "could not tell"
//! (INFO), never a FAIL.

use super::control::Control;
use super::judge::{answer_values, asks_for_input, same_outcome};
use super::model::Verdict;
use super::probe::Probe;
use super::registry::{Check, check};
use super::subject::{Round, at_state, first_at_state, reading, retry, retry_raw};
use crate::client::ReplyStatus;
use crate::client::raw::Rpc;
use crate::client::rpc::final_success;
use crate::findings::Severity;
use crate::oracle::reply::{ShapeReply, shape_reply};
use crate::protocol::mrtr::REQUEST_STATE;
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
            unknown_keys;
            scenario "input-required-result-ignore-extra-params"
        ),
        check!(
            "mrtr-input-responses-missing",
            "§4.7 S9 / §6.B 18",
            Should,
            Modern,
            "missing or wrong-key inputResponses get a new input_required, not an error",
            missing;
            scenario "input-required-result-missing-input-response"
        ),
        check!(
            "mrtr-input-responses-malformed",
            "§4.7 S9, §4.10 / §6.B 19",
            Must,
            Modern,
            "a malformed answer (number, null, array, unknown action) gets an error or a re-prompt: never 404/-32601 or a 5xx (FAIL), never accepted as valid (WARN)",
            malformed;
            stdio "a malformed answer (number, null, array, unknown action) gets an error or a re-prompt: never -32601 (FAIL), never accepted as valid (WARN)";
            scenario "input-required-result-validate-input"
        ),
        check!(
            "mrtr-input-responses-shape",
            "§4.7 S9 / §6.B 19",
            Must,
            Modern,
            "inputResponses as an array, a number, a string or null gets -32602 or a re-prompt, never 404/-32601 or a 5xx",
            responses_shape;
            stdio "inputResponses as an array, a number, a string or null gets -32602 or a re-prompt, never -32601"
        ),
        check!(
            "mrtr-request-state-shape",
            "§4.7 S7, S9 / §6.B 19",
            Must,
            Modern,
            "requestState as a number or an object gets -32602 or a re-prompt, never 404/-32601 or a 5xx",
            state_shape;
            stdio "requestState as a number or an object gets -32602 or a re-prompt, never -32601"
        ),
    ]
}

async fn unknown_keys(p: Probe) -> Verdict {
    let r = match first_at_state(&p, true).await {
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
        &r.tool,
        &format!("tools/call {} retry with an extra key", r.tool.name),
        &answers,
        &r.state,
    )
    .await
    {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((Rpc::Result(_), _)) => Verdict::pass(format!(
            "{}: the extra key was ignored and the call went on",
            r.tool.name
        )),
        Ok((other, status)) => Verdict::fail(format!(
            "{}: an extra inputResponses key got {}",
            r.tool.name,
            reading(&other, p.reply_status(status))
        )),
    }
}

async fn missing(p: Probe) -> Verdict {
    let mut problems = Vec::new();
    let mut subject = None;
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
        let r = match first_at_state(&p, true).await {
            Ok(x) => x,
            Err(v) => return v,
        };
        match retry(
            &p,
            &r.tool,
            &format!("tools/call {} retry with {what}", r.tool.name),
            &answers,
            &r.state,
        )
        .await
        {
            Err(e) => problems.push(format!("{what}: no reply: {e}")),
            Ok((Rpc::Result(v), _)) if asks_for_input(&v) => {}
            Ok((other, status)) => problems.push(format!(
                "{what}: {}",
                reading(&other, p.reply_status(status))
            )),
        }
        subject = Some(r.tool);
    }
    let Some(t) = subject else {
        return Verdict::skip("no tool reached its state round");
    };
    let tool = &t.name;
    if problems.is_empty() {
        // A server that asks again whatever it is sent asks again here too.
        Control::retry(&p, &t).await.judge(Verdict::pass(format!(
            "{tool}: missing and wrong-key answers were asked for again"
        )))
    } else {
        Verdict::fail(format!("{tool}: {}", problems.join("; ")))
            .expecting("a new input_required asking again (S9: missing answers are re-requested, not an error)")
    }
}

/// How the replies to a set of malformed inputs read.
#[derive(Default)]
pub(super) struct Tally {
    crashed: Vec<String>,
    not_found: Vec<String>,
    accepted: Vec<String>,
    unclear: Vec<String>,
    fine: Vec<String>,
    /// Refusals beside a control that did not hold: they prove nothing.
    unproven: Vec<String>,
    /// What the controls showed: those that held, and why the others
    /// leave a refusal unproven (each once).
    held: Vec<String>,
    doubts: Vec<String>,
}

impl Tally {
    /// Files one reply; `control` is the same round answered validly
    /// ([`Control::retry`]), `values` the answer values of both calls.
    pub(super) fn file(
        &mut self,
        what: &str,
        reply: Result<(Rpc, ReplyStatus), impl std::fmt::Display>,
        control: &Control,
        values: &[String],
    ) {
        let (rpc, status) = match reply {
            Err(e) => return self.crashed.push(format!("{what}: {e}")),
            Ok(x) => x,
        };
        match (shape_reply(&rpc, status.code()), rpc) {
            (ShapeReply::ServerError(_), _) => self.crashed.push(format!("{what}: {status}")),
            (ShapeReply::UnknownMethod, rpc) => self
                .not_found
                .push(format!("{what}: {}", reading(&rpc, status))),
            (ShapeReply::Other, Rpc::Result(v)) if final_success(&v) => match control.result() {
                Some(c) if same_outcome(c, &v, values) => self.accepted.push(format!(
                    "{what} ({})",
                    status.then(": ", "the same result as a valid answer")
                )),
                _ => self.unclear.push(format!(
                    "{what} ({})",
                    status.then(
                        ": ",
                        "a complete result without isError, unlike a valid answer's"
                    )
                )),
            },
            (ShapeReply::Other, rpc) => {
                self.refused(format!("{what}: {}", reading(&rpc, status)), control)
            }
        }
    }

    /// Files a refusal (an error, a tool error, a re-prompt): it counts
    /// only beside a `control` that held.
    pub(super) fn refused(&mut self, what: String, control: &Control) {
        let (list, note) = if control.held() {
            (&mut self.fine, &mut self.held)
        } else {
            (&mut self.unproven, &mut self.doubts)
        };
        list.push(what);
        let line = if control.held() {
            control.what().to_owned()
        } else {
            control.why_not()
        };
        if !note.contains(&line) {
            note.push(line);
        }
    }

    /// The next walk failed with `e`: after a crash the run is judged on
    /// what was seen (`None`: stop and judge); before any, it is a SKIP.
    pub(super) fn halt(&mut self, e: impl std::fmt::Display) -> Option<Verdict> {
        if self.crashed.is_empty() {
            return Some(Verdict::skip(e.to_string()));
        }
        self.crashed
            .push(format!("and then the next flow could not start: {e}"));
        None
    }

    pub(super) fn verdict(self, tool: &str, field: &str) -> Verdict {
        if !self.crashed.is_empty() || !self.not_found.is_empty() {
            let mut parts = Vec::new();
            if !self.not_found.is_empty() {
                parts.push(format!(
                    "taken for an unknown method (404 / -32601) instead of invalid params: {}",
                    self.not_found.join("; ")
                ));
            }
            if !self.crashed.is_empty() {
                parts.push(format!("the server failed: {}", self.crashed.join("; ")));
            }
            return Verdict::violation(Severity::Must, format!("{tool}: {}", parts.join("; ")))
                .expecting(format!(
                    "a JSON-RPC error -32602 (invalid params) or a re-prompt for a malformed {field}"
                ));
        }
        if !self.accepted.is_empty() {
            return Verdict::violation(
                Severity::Should,
                format!(
                    "{tool}: malformed {field} accepted as if valid: {}",
                    self.accepted.join(", ")
                ),
            )
            .expecting(format!(
                "a JSON-RPC error or a re-prompt for a malformed {field}"
            ));
        }
        let unproven = (!self.unproven.is_empty())
            .then(|| format!("{}; {}", self.unproven.join("; "), self.doubts.join("; ")));
        if !self.unclear.is_empty() {
            let mut others = self.fine.clone();
            others.extend(unproven);
            return Verdict::violation(
                Severity::Info,
                format!(
                    "{tool}: could not tell whether a malformed {field} was accepted: {}; the \
                     others got {}",
                    self.unclear.join(", "),
                    if others.is_empty() {
                        "nothing else".to_owned()
                    } else {
                        others.join("; ")
                    }
                ),
            );
        }
        match unproven {
            Some(u) if self.fine.is_empty() => {
                Verdict::info(format!("could not tell: {tool}: {u}"))
            }
            u => Verdict::pass(format!(
                "{tool}: {} (control: {}){}",
                self.fine.join("; "),
                self.held.join(", "),
                u.map(|u| format!("; could not tell: {u}"))
                    .unwrap_or_default()
            )),
        }
    }
}

async fn malformed(p: Probe) -> Verdict {
    let r0 = match first_at_state(&p, true).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let key = r0
        .answers
        .keys()
        .next()
        .cloned()
        .unwrap_or_else(|| "input".into());
    let variants: Vec<(&str, Value)> = vec![
        ("a number", json!(42)),
        ("null", Value::Null),
        ("an array", json!([])),
        ("an unknown action", json!({"action": "maybe"})),
    ];
    let control = Control::retry(&p, &r0.tool).await;
    let mut values = answer_values(&Value::Object(r0.answers.clone()));
    let mut tally = Tally::default();
    for (what, value) in variants {
        let r = match at_state(&p, &r0.tool).await {
            Ok(x) => x,
            Err(e) => match tally.halt(&e) {
                Some(skip) => return skip,
                None => break,
            },
        };
        values.extend(answer_values(&value));
        let mut answers = r.answers.clone();
        answers.insert(key.clone(), value);
        let reply = retry(
            &p,
            &r.tool,
            &format!("tools/call {} retry, {key} is {what}", r.tool.name),
            &answers,
            &r.state,
        )
        .await;
        tally.file(
            what,
            reply.map(|(r, s)| (r, p.reply_status(s))),
            &control,
            &values,
        );
    }
    tally.verdict(&r0.tool.name, "answer")
}

async fn responses_shape(p: Probe) -> Verdict {
    misshapen(p, "inputResponses", |r0, r| {
        let cases = [
            ("an array", json!([Value::Object(r0.answers.clone())])),
            ("a number", json!(42)),
            ("a string", json!("elicitkit")),
            ("null", Value::Null),
        ];
        let state = Value::String(r.state.clone());
        cases
            .map(|(what, v)| (what, Some(v), Some(state.clone())))
            .into()
    })
    .await
}

async fn state_shape(p: Probe) -> Verdict {
    misshapen(p, REQUEST_STATE, |r0, r| {
        let cases = [
            ("a number", json!(42)),
            ("an object", json!({"state": r0.state})),
        ];
        let answers = Value::Object(r.answers.clone());
        cases
            .map(|(what, v)| (what, Some(answers.clone()), Some(v)))
            .into()
    })
    .await
}

/// Retries fresh states of the first state tool with `field` of the wrong
/// JSON type: `cases` gives, from the first round and a fresh one, each
/// case's name and the answers and state it sends. Tallies how each was
/// answered against a valid answer's result.
async fn misshapen(
    p: Probe,
    field: &str,
    cases: impl Fn(&Round, &Round) -> Vec<(&'static str, Option<Value>, Option<Value>)>,
) -> Verdict {
    let r0 = match first_at_state(&p, false).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let control = Control::retry(&p, &r0.tool).await;
    let values = answer_values(&Value::Object(r0.answers.clone()));
    let mut tally = Tally::default();
    for i in 0..cases(&r0, &r0).len() {
        let r = match at_state(&p, &r0.tool).await {
            Ok(x) => x,
            Err(e) => match tally.halt(&e) {
                Some(skip) => return skip,
                None => break,
            },
        };
        let (what, answers, state) = cases(&r0, &r).swap_remove(i);
        let label = format!("tools/call {} retry, {field} is {what}", r.tool.name);
        let reply = retry_raw(&p, &r.tool, &label, answers, state).await;
        tally.file(
            what,
            reply.map(|(r, s)| (r, p.reply_status(s))),
            &control,
            &values,
        );
    }
    tally.verdict(&r0.tool.name, field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_seen_once_stays_a_failure_when_the_server_then_goes_away() {
        let mut t = Tally::default();
        // Before any crash, a flow that cannot start is a SKIP.
        assert!(matches!(t.halt("reset"), Some(Verdict::Skip(_))));
        let control = Control::observed("a valid retry of deploy goes on", Ok(None));
        t.file(
            "an array",
            Ok::<_, String>((Rpc::Missing("html".into()), ReplyStatus::new(500, false))),
            &control,
            &[],
        );
        assert!(t.halt("connection reset").is_none());
        let v = t.verdict("deploy", "inputResponses");
        let Verdict::Violation {
            severity, detail, ..
        } = &v
        else {
            panic!("{v:?}")
        };
        assert_eq!(*severity, Some(Severity::Must));
        assert!(
            detail.contains("HTTP 500") && detail.contains("connection reset"),
            "{detail}"
        );
    }
}
