//! After a decline or a cancel the action must not have happened (§2.3:
//! decline is an explicit "no"; §4.10). A status code cannot show it, so
//! the outcome is compared with the accept path's: a refusal answered with
//! the same success text or `structuredContent` (numbers and answer values
//! set aside) is a finding, and so is a refusal that changes the server's
//! state the way an accept does, read through a read-only tool that reports
//! it (`--state-tool`, else the first `readOnlyHint` tool that does not
//! elicit) before and after each call. These checks run alone, so no other
//! check's calls move that state.

use super::decline_cancel::{refusal_deadline, refuse_flow};
use super::flows::run_flow;
use super::judge::{answer_values, same_outcome};
use super::legacy_session::{Answer, Session, call, open};
use super::model::{Check, Verdict};
use super::probe::{Probe, ToolProfile, all_modes};
use super::raw::Rpc;
use crate::client::outcome::Outcome;
use crate::client::policy::AnswerPolicy;
use crate::protocol::Generation;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-decline-no-action",
            "§2.3, §4.10 / §6.B 20",
            Must,
            Modern,
            "after a decline or a cancel the action has not happened: neither the accept path's result nor its change of state",
            modern
        ),
        check!(
            "legacy-decline-no-action",
            "§2.3, §4.10 / §6.A 12",
            Must,
            Legacy,
            "after a decline or a cancel the action has not happened: neither the accept path's result nor its change of state",
            legacy
        ),
    ]
}

/// The tool that reports the server's state: the one named with
/// `--state-tool`, else the first read-only tool that does not elicit.
fn state_tool(p: &Probe) -> Option<ToolProfile> {
    let t = &p.target().tools;
    match &p.settings().state_tool {
        Some(name) => t.iter().find(|x| &x.name == name).cloned(),
        None => t.iter().find(|x| x.read_only && !x.elicits()).cloned(),
    }
}

/// A state reading: every leaf of the tool's structured result (or of its
/// text, parsed as JSON when it is), by JSON pointer.
type Reading = BTreeMap<String, String>;

fn flatten(v: &Value, at: String, out: &mut Reading) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| flatten(x, format!("{at}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| flatten(x, format!("{at}/{i}"), out)),
        other => {
            out.insert(at, other.to_string());
        }
    }
}

fn reading_of(result: &Value) -> Reading {
    let mut out = Reading::new();
    if let Some(sc) = result.get("structuredContent") {
        flatten(sc, String::new(), &mut out);
        return out;
    }
    let text = super::subject::result_text(result);
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => flatten(&v, String::new(), &mut out),
        Err(_) => {
            out.insert("/text".into(), text);
        }
    }
    out
}

/// The pointers whose value differs between two readings (or exist in one).
fn changed(a: &Reading, b: &Reading) -> BTreeSet<String> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// How the server is asked: a 2026-07-28 call or a 2025-11-25 session.
enum Via {
    Modern,
    Legacy(Session),
}

async fn read_state(p: &Probe, via: &Via, tool: &ToolProfile, when: &str) -> Option<Reading> {
    match via {
        Via::Modern => {
            let req = p.call_request(
                format!("tools/call {} ({when})", tool.name),
                tool,
                &all_modes(),
                None,
                None,
            );
            match p.send(req).await.ok()?.rpc() {
                Rpc::Result(v) => Some(reading_of(&v)),
                _ => None,
            }
        }
        Via::Legacy(s) => {
            let st = call(p, s, &tool.name, &tool.arguments, Answer::Observe).await;
            match st.response? {
                Rpc::Result(v) => Some(reading_of(&v)),
                _ => None,
            }
        }
    }
}

/// One call of `tool` answered with `how`: its final result, or why none.
async fn run(p: &Probe, via: &Via, tool: &ToolProfile, how: &str) -> Result<Value, String> {
    match via {
        Via::Modern => {
            let rt = match how {
                "accept" => run_flow(p, tool, AnswerPolicy::AcceptValid).await,
                "decline" => refuse_flow(p, tool, AnswerPolicy::Decline).await,
                _ => refuse_flow(p, tool, AnswerPolicy::Cancel).await,
            };
            match (&rt.outcome, rt.final_result) {
                (Outcome::Success, Some(v)) => Ok(v),
                (
                    Outcome::Unexpected {
                        class: crate::client::outcome::ErrorClass::Timeout,
                        message,
                    },
                    _,
                ) => Err(format!("timeout: {message}")),
                (Outcome::Unexpected { message, .. }, _) => Err(message.clone()),
                (Outcome::Skipped(why), _) => Err(why.clone()),
                _ => Err("no final result".into()),
            }
        }
        Via::Legacy(s) => {
            let answer = match how {
                "accept" => Answer::Accept {
                    complete_pages: true,
                },
                "decline" => Answer::Decline,
                _ => Answer::Cancel,
            };
            let p = if how == "accept" {
                p.clone()
            } else {
                p.bounded(refusal_deadline(p))
            };
            let st = call(&p, s, &tool.name, &tool.arguments, answer).await;
            match st.response {
                Some(Rpc::Result(v)) => Ok(v),
                Some(other) => Err(other.describe()),
                None => Err(st.failure.unwrap_or_else(|| "no response".into())),
            }
        }
    }
}

fn is_error(v: &Value) -> bool {
    v.get("isError").and_then(Value::as_bool) == Some(true)
}

/// What the refusals of one tool showed.
#[derive(Default)]
struct Seen {
    acted: Vec<String>,
    hung: Vec<String>,
    fine: Vec<String>,
    unsure: Vec<String>,
}

async fn one_tool(
    p: &Probe,
    via: &Via,
    tool: &ToolProfile,
    st: Option<&ToolProfile>,
    seen: &mut Seen,
) {
    let read = async |when: &str| match st {
        Some(s) => read_state(p, via, s, when).await,
        None => None,
    };
    let before = read(&format!("state before declining {}", tool.name)).await;
    let declined = run(p, via, tool, "decline").await;
    let after_decline = read(&format!("state after declining {}", tool.name)).await;
    let cancelled = run(p, via, tool, "cancel").await;
    let after_cancel = read(&format!("state after cancelling {}", tool.name)).await;
    let accepted = run(p, via, tool, "accept").await;
    let after_accept = read(&format!("state after accepting {}", tool.name)).await;
    let deadline = refusal_deadline(p);
    let by_accept = match (&after_cancel, &after_accept) {
        (Some(a), Some(b)) => changed(a, b),
        _ => BTreeSet::new(),
    };
    for (what, result, from, to) in [
        ("decline", &declined, &before, &after_decline),
        ("cancel", &cancelled, &after_decline, &after_cancel),
    ] {
        let name = &tool.name;
        let refusal = match result {
            Ok(v) => v,
            Err(why) if why.starts_with("timeout") => {
                seen.hung.push(format!(
                    "{name}: no answer within {deadline:?} after {what} ({why})"
                ));
                continue;
            }
            Err(why) => {
                seen.unsure.push(format!(
                    "{name}: the {what} did not end in a result ({why})"
                ));
                continue;
            }
        };
        if let Ok(acc) = &accepted
            && !is_error(refusal)
            && !is_error(acc)
        {
            let values = answer_values(&Value::Object(Map::new()));
            if same_outcome(acc, refusal, &values) {
                seen.acted.push(format!(
                    "{name}: the {what} was answered like the accept: \"{}\" (accept: \"{}\")",
                    super::subject::result_text(refusal),
                    super::subject::result_text(acc)
                ));
                continue;
            }
        }
        if let (Some(a), Some(b)) = (from, to)
            && !by_accept.is_empty()
        {
            let by_refusal = changed(a, b);
            if by_accept.is_subset(&by_refusal) {
                let list: Vec<&String> = by_accept.iter().take(4).collect();
                seen.acted.push(format!(
                    "{name}: the {what} changed the server's state the way the accept does \
                     ({}: {})",
                    st.map(|s| s.name.as_str()).unwrap_or(""),
                    list.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                continue;
            }
            seen.fine.push(format!(
                "{name}: {what} changed none of what the accept changes in {}",
                st.map(|s| s.name.as_str()).unwrap_or("")
            ));
            continue;
        }
        match &accepted {
            Ok(_) => seen.fine.push(format!(
                "{name}: the {what} result differs from the accept path's"
            )),
            Err(why) => seen.unsure.push(format!(
                "{name}: the accept path did not complete ({why}), nothing to compare the {what} with"
            )),
        }
    }
}

async fn judge(p: Probe, g: Generation) -> Verdict {
    let tools: Vec<ToolProfile> = p
        .target()
        .eliciting_tools()
        .into_iter()
        .filter(|t| p.target().off_origin(t).is_none())
        .collect();
    if tools.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let via = match g {
        Generation::Modern => Via::Modern,
        Generation::Legacy => match open(&p, &all_modes(), true).await {
            Ok(s) => Via::Legacy(s),
            Err(e) => return Verdict::skip(e),
        },
    };
    let st = state_tool(&p);
    let mut seen = Seen::default();
    for t in &tools {
        one_tool(&p, &via, t, st.as_ref(), &mut seen).await;
    }
    if let Via::Legacy(s) = &via {
        super::legacy_session::close(&p, s).await;
    }
    let reader = match &st {
        Some(s) => format!("state read through {}", s.name),
        None => "no read-only state tool to read (name one with --state-tool)".to_owned(),
    };
    if !seen.hung.is_empty() || !seen.acted.is_empty() {
        let mut all = seen.acted;
        all.extend(seen.hung);
        return Verdict::fail(format!("{} ({reader})", all.join("; "))).expecting(
            "a declined or cancelled call does nothing: a refusal result, not the accept path's \
             result or its side effect, and an answer without delay",
        );
    }
    if seen.fine.is_empty() {
        return Verdict::violation(
            crate::findings::Severity::Info,
            format!("could not tell: {} ({reader})", seen.unsure.join("; ")),
        );
    }
    let mut out = format!("{} ({reader})", seen.fine.join("; "));
    if !seen.unsure.is_empty() {
        out.push_str(&format!("; could not tell: {}", seen.unsure.join("; ")));
    }
    Verdict::pass(out)
}

async fn modern(p: Probe) -> Verdict {
    judge(p, Generation::Modern).await
}

async fn legacy(p: Probe) -> Verdict {
    judge(p, Generation::Legacy).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn readings_flatten_and_diff() {
        let a = reading_of(&json!({"structuredContent":{"orders":[{"id":1}],"n":1}}));
        let b = reading_of(&json!({"structuredContent":{"orders":[{"id":1},{"id":2}],"n":2}}));
        let d = changed(&a, &b);
        assert!(d.contains("/orders/1/id") && d.contains("/n"), "{d:?}");
        let t = reading_of(&json!({"content":[{"type":"text","text":"{\"deployments\":3}"}]}));
        assert_eq!(t.get("/deployments").map(String::as_str), Some("3"));
        let plain = reading_of(&json!({"content":[{"type":"text","text":"2 orders"}]}));
        assert!(plain.contains_key("/text"));
    }
}
