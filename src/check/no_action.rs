//! After a decline or a cancel the action must not have happened (§2.3:
//! decline is an explicit "no"; §4.10). A status code cannot show it, so
//! the outcome is compared with the accept path's: a refusal answered with
//! the same success text or `structuredContent` (numbers and answer values
//! set aside) is a finding. And where the server lists a read-only tool
//! that reports its state (`--state-tool`, else the first `readOnlyHint`
//! tool that does not elicit), each call gets arguments of its own (unique
//! per call) and the state is read after it: an accept whose arguments
//! show up there proves the tool records its actions, and a refusal whose
//! arguments show up too did act. A state tool that shows only counters
//! cannot tell one call from another and is not guessed at. These checks
//! run alone, so no other check's calls move that state, and their call
//! numbers ([`call_number`]) are never the same twice in a process, so
//! the 2026-07-28 run's accepted call is not read as the 2025-11-25 run's
//! declined one.

use super::decline_cancel::{refusal_deadline, refuse_flow};
use super::flows::run_flow;
use super::judge::{answer_values, same_outcome};
use super::legacy_session::{Answer, NO_ELICITATION, Session, call_tool, open, unanswered};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::outcome::Outcome;
use crate::client::policy::AnswerPolicy;
use crate::client::raw::Rpc;
use crate::protocol::Generation;
use serde_json::{Map, Value};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-decline-no-action",
            "§2.3, §4.10 / §6.B 20",
            Must,
            Modern,
            "after a decline or a cancel the action has not happened: neither the accept path's result nor its change of state",
            modern,
            alone
        ),
        check!(
            "legacy-decline-no-action",
            "§2.3, §4.10 / §6.A 12",
            Must,
            Legacy,
            "after a decline or a cancel the action has not happened: neither the accept path's result nor its change of state",
            legacy,
            alone
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

/// A state reading: the tool result's text and `structuredContent`.
fn reading_of(result: &Value) -> String {
    let mut out = super::subject::result_text(result);
    if let Some(sc) = result.get("structuredContent") {
        out.push('\n');
        out.push_str(&sc.to_string());
    }
    out
}

/// The string values of the arguments of call `n` that belong to that call
/// alone (generated from its number; enum choices are shared by many calls
/// and do not count): what shows the call in a state.
fn own_values(tool: &ToolProfile, n: u64) -> (Map<String, Value>, Vec<String>) {
    let mine = tool.arguments_for(n);
    let other = tool.arguments_for(n.wrapping_add(7_919));
    let number = n.to_string();
    let own = mine
        .iter()
        .filter(|(k, v)| other.get(*k) != Some(*v))
        .filter_map(|(_, v)| v.as_str().map(str::to_owned))
        .filter(|v| v.contains(&number))
        .collect();
    (mine, own)
}

/// A number for one call's own arguments: nine digits (one width, so no
/// call's values begin another's; small enough for a 32-bit integer
/// argument), from a random start per process, then counting up, so no
/// two calls of a run share one whichever generation's check draws it. It
/// was the target's request id, and each generation's target counts its
/// ids from 1: the 2026-07-28 check accepted an order with the very number
/// the 2025-11-25 check later declined with, and the state tool's listing
/// of the first was read as the second having acted (a false finding on
/// the Python SDK server, when the two counters met).
fn call_number() -> u64 {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    const SPAN: u64 = 100_000_000;
    static START: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let start = *START.get_or_init(|| rand::random::<u64>() % SPAN);
    900_000_000 + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % SPAN
}

/// Whether `text` mentions `value` as a whole (not as the start of a longer
/// word or number).
fn mentions(text: &str, value: &str) -> bool {
    text.match_indices(value).any(|(i, _)| {
        !text[i + value.len()..]
            .chars()
            .next()
            .is_some_and(char::is_alphanumeric)
    })
}

/// How the server is asked: a 2026-07-28 call or a 2025-11-25 session.
enum Via {
    Modern,
    Legacy(Session),
}

async fn read_state(p: &Probe, via: &Via, tool: &ToolProfile, when: &str) -> Option<String> {
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
            let st = call_tool(p, s, tool, Answer::Observe).await;
            match st.response? {
                Rpc::Result(v) => Some(reading_of(&v)),
                _ => None,
            }
        }
    }
}

/// One call of `tool` (with `args`) answered with `how`: its final result,
/// or why none.
async fn run(
    p: &Probe,
    via: &Via,
    tool: &ToolProfile,
    args: &Map<String, Value>,
    how: &str,
) -> Result<Value, String> {
    let mut tool = tool.clone();
    tool.arguments = args.clone();
    let tool = &tool;
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
                (Outcome::Skipped(why), _) => Err(why.to_string()),
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
            let st = call_tool(&p, s, tool, answer).await;
            if how != "accept"
                && let Some(why) = unanswered(&p, &tool.name, &st)
            {
                return Err(why);
            }
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
    let name = &tool.name;
    let deadline = refusal_deadline(p);
    let (accept_args, accept_own) = own_values(tool, call_number());
    let accepted = run(p, via, tool, &accept_args, "accept").await;
    // Does the state tool show what an accepted call did?
    let shows = match st {
        Some(s) if !accept_own.is_empty() && accepted.is_ok() => {
            read_state(p, via, s, &format!("state after accepting {name}"))
                .await
                .is_some_and(|r| accept_own.iter().any(|v| mentions(&r, v)))
        }
        _ => false,
    };
    for what in ["decline", "cancel"] {
        let (args, own) = own_values(tool, call_number());
        let refusal = match run(p, via, tool, &args, what).await {
            Ok(v) => v,
            Err(why) if why.contains(NO_ELICITATION) => {
                seen.unsure
                    .push(format!("{name}: no {what} was sent: {why}"));
                continue;
            }
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
            && !is_error(&refusal)
            && !is_error(acc)
            && same_outcome(acc, &refusal, &answer_values(&Value::Object(args.clone())))
        {
            seen.acted.push(format!(
                "{name}: the {what} was answered like the accept: \"{}\" (accept: \"{}\")",
                super::subject::result_text(&refusal),
                super::subject::result_text(acc)
            ));
            continue;
        }
        if shows && let Some(s) = st {
            let after = read_state(p, via, s, &format!("state after the {what} of {name}")).await;
            match after {
                Some(r) if own.iter().any(|v| mentions(&r, v)) => {
                    seen.acted.push(format!(
                        "{name}: after the {what}, {} lists the declined call (its arguments \
                         {}) as it lists an accepted one",
                        s.name,
                        own.join(", ")
                    ));
                }
                Some(_) => seen.fine.push(format!(
                    "{name}: the {what} left no trace in {} (an accepted call does)",
                    s.name
                )),
                None => seen
                    .unsure
                    .push(format!("{name}: {} did not answer", s.name)),
            }
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
    let tools = p.target().page_safe_tools();
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
        None => {
            "no read-only tool reports the server's state (name one with --state-tool)".to_owned()
        }
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
    fn each_call_has_values_of_its_own() {
        let t = crate::discover::ToolProfile {
            name: "place_order".into(),
            descriptor: json!({"name":"place_order","inputSchema":{"type":"object",
                "properties":{"item":{"type":"string"},"size":{"type":"string","enum":["S","M"]}},
                "required":["item","size"]}}),
            arguments: Map::new(),
            other_arguments: None,
            single_use: false,
            read_only: false,
            first: crate::discover::FirstReply::Other("-".into()),
            rounds: Vec::new(),
            state_round: None,
            off_origin: None,
            elicits_on_get: false,
        };
        let (a, own_a) = own_values(&t, 900_003);
        let (_, own_b) = own_values(&t, 900_004);
        assert!(a.contains_key("item"));
        assert_eq!(
            own_a.len(),
            1,
            "{own_a:?}: only the free string is the call's own"
        );
        assert_ne!(own_a, own_b);
        let r = reading_of(&json!({"content":[{"type":"text","text":"1 order"}],
            "structuredContent":{"orders":[{"item": own_a[0]}]}}));
        assert!(mentions(&r, &own_a[0]));
        assert!(!mentions("elicitkit-item-9000031", "elicitkit-item-900003"));
    }

    #[test]
    fn call_numbers_are_one_width_and_never_repeat_in_a_process() {
        let drawn: Vec<u64> = (0..1000).map(|_| call_number()).collect();
        let distinct: std::collections::BTreeSet<_> = drawn.iter().collect();
        assert_eq!(distinct.len(), drawn.len());
        assert!(
            drawn
                .iter()
                .all(|n| (900_000_000..1_000_000_000).contains(n))
        );
        assert!(drawn.iter().all(|n| i32::try_from(*n).is_ok()));
    }
}
