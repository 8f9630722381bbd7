//! Form content that fails its schema (§3.6, S9 / §6.B 19): on every tool
//! whose state round is a form, each kind of invalid content the schema can
//! express ([`KINDS`]: a required field missing, a value of the wrong type,
//! a number out of range, a value outside the enum, a string in the wrong
//! format) is sent in place of a valid answer, one fresh walk per kind. An
//! error, a tool error or a re-prompt is right where the tool's
//! [`Control`] held (a valid answer goes on; else "could not tell"); a
//! result of the same shape as the valid answer's shows the content was accepted
//! (WARN); another complete result is "could not tell" (INFO). A 404 /
//! `-32601` or a 5xx is a failure, as for any malformed answer.

use super::control::Control;
use super::input_responses::Tally;
use super::judge::answer_values;
use super::model::Verdict;
use super::probe::Probe;
use super::registry::{Check, check};
use super::subject::{at_state, retry, subjects};
use crate::client::content::{InvalidKind, invalid_content};
use serde_json::Value;

/// The kinds tried on every form, in order.
pub const KINDS: [InvalidKind; 5] = [
    InvalidKind::MissingRequired,
    InvalidKind::WrongType,
    InvalidKind::OutOfRange,
    InvalidKind::NotInEnum,
    InvalidKind::BadFormat,
];

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-invalid-content",
        "§3.6, §4.7 S9 / §6.B 19",
        Should,
        Modern,
        "form content that fails the schema (missing required, wrong type, out of range, outside the enum, bad format) is refused or asked for again on every form tool",
        every_form;
        scenario "input-required-result-validate-input"
    )]
}

/// A few words for `kind`.
pub fn describe(kind: InvalidKind) -> &'static str {
    match kind {
        InvalidKind::MissingRequired => "a required field missing",
        InvalidKind::WrongType => "a value of the wrong type",
        InvalidKind::OutOfRange => "a number out of range",
        InvalidKind::NotInEnum => "a value outside the enum",
        InvalidKind::BadFormat => "a string in the wrong format",
        InvalidKind::TooShort => "a string too short",
        InvalidKind::TooLong => "a string too long",
        InvalidKind::TooFewItems => "too few items",
        InvalidKind::TooManyItems => "too many items",
        InvalidKind::UnknownProperty => "an undeclared field",
    }
}

async fn every_form(p: Probe) -> Verdict {
    let tools = match subjects(&p, true) {
        Ok(t) => t,
        Err(skip) => return skip,
    };
    let seed = p.settings().target.seed;
    let mut tally = Tally::default();
    let mut tried = 0;
    let mut why_not = Vec::new();
    'tools: for t in &tools {
        let r0 = match at_state(&p, t).await {
            Ok(r) => r,
            Err(e) => {
                why_not.push(e.to_string());
                continue;
            }
        };
        // The form's answer key and schema (the first form request).
        let Some((key, schema)) = r0.ir.input_requests.iter().flatten().find_map(|(k, r)| {
            let form = r.params.get("mode").and_then(Value::as_str) != Some("url");
            let schema = r.params.get("requestedSchema")?;
            form.then(|| (k.clone(), schema.clone()))
        }) else {
            why_not.push(format!("{}: the state round has no form schema", t.name));
            continue;
        };
        let control = Control::retry(&p, t).await;
        let mut values = answer_values(&Value::Object(r0.answers.clone()));
        for kind in KINDS {
            let Some(content) = invalid_content(&schema, kind, seed) else {
                continue;
            };
            let r = match at_state(&p, t).await {
                Ok(r) => r,
                Err(e) => match tally.halt(&e) {
                    Some(skip) if tried == 0 => return skip,
                    Some(_) => {
                        why_not.push(e.to_string());
                        break 'tools;
                    }
                    None => break 'tools,
                },
            };
            let value = serde_json::json!({"action": "accept", "content": content});
            values.extend(answer_values(&value));
            let mut answers = r.answers.clone();
            answers.insert(key.clone(), value);
            let what = format!("{}: {}", t.name, describe(kind));
            let reply = retry(
                &p,
                t,
                &format!("tools/call {} retry, {key} has {}", t.name, describe(kind)),
                &answers,
                &r.state,
            )
            .await;
            tally.file(
                &what,
                reply.map(|(r, s)| (r, p.reply_status(s))),
                &control,
                &values,
            );
            tried += 1;
        }
    }
    if tried == 0 {
        return Verdict::skip(if why_not.is_empty() {
            "no form schema here can express invalid content".to_owned()
        } else {
            why_not.join("; ")
        });
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    match tally.verdict(&names.join(", "), "form content") {
        Verdict::Pass(d) if !why_not.is_empty() => {
            Verdict::pass(format!("{d} (not tried: {})", why_not.join("; ")))
        }
        v => v,
    }
}
