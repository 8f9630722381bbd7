//! MRTR flows that are not tool calls (§4.7 S1, §6.B 10; the official
//! scenario `input-required-result-non-tool-request`): a prompt
//! (`prompts/get`) or resource (`resources/read`) that answers
//! `input_required` is walked with valid answers to its end and judged as
//! the tool flow is (`mrtr-happy-path`, `mrtr-multi-round-new-state`): it
//! completes, and each round's `requestState` differs from the last ones.
//! A server whose listed prompts (resources) never ask gets a SKIP that
//! says so: nothing was seen to judge.

use super::model::Verdict;
use super::offered;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::content::answers_for;
use crate::client::raw::Rpc;
use crate::protocol::mrtr::InputRequiredResult;
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-non-tool-prompt-flow",
            "§4.7 S1 / §6.B 10",
            Must,
            Modern,
            "a prompt that answers input_required completes when answered validly, with a new requestState each round",
            prompt_flow;
            scenario "input-required-result-non-tool-request"
        ),
        check!(
            "mrtr-non-tool-resource-flow",
            "§4.7 S1 / §6.B 10",
            Must,
            Modern,
            "a resource that answers input_required completes when answered validly, with a new requestState each round",
            resource_flow;
            scenario "input-required-result-non-tool-request"
        ),
    ]
}

/// Rounds a flow may take before it counts as never completing (the
/// reference server's take two).
const MAX_ROUNDS: usize = 6;

/// Listed prompts (resources) tried for one that asks.
const MAX_TRIED: usize = 8;

/// One kind of non-tool request.
struct Kind {
    /// `prompts/get` or `resources/read`.
    method: &'static str,
    /// The list request and the key of its array.
    list: &'static str,
    key: &'static str,
    /// The `server/discover` capability that offers them.
    capability: &'static str,
    /// The member naming one (`name`, `uri`).
    id: &'static str,
}

const PROMPTS: Kind = Kind {
    method: "prompts/get",
    list: "prompts/list",
    key: "prompts",
    capability: "prompts",
    id: "name",
};

const RESOURCES: Kind = Kind {
    method: "resources/read",
    list: "resources/list",
    key: "resources",
    capability: "resources",
    id: "uri",
};

async fn prompt_flow(p: Probe) -> Verdict {
    flow(&p, &PROMPTS).await
}

async fn resource_flow(p: Probe) -> Verdict {
    flow(&p, &RESOURCES).await
}

/// The params of a get or read of `entry` (a prompt's required arguments
/// given placeholders, as [`offered::first_get`] does).
fn params_of(kind: &Kind, entry: &Value) -> Option<Value> {
    let id = entry.get(kind.id)?.as_str()?;
    let mut params = json!({ kind.id: id });
    if kind.key == "prompts" {
        let list = Rpc::Result(json!({"prompts": [entry]}));
        params = offered::first_get(&list).ok()?.params;
    }
    Some(params)
}

/// The prompt name or URI `params` names.
fn named<'a>(kind: &Kind, params: &'a Value) -> &'a str {
    params[kind.id].as_str().unwrap_or("?")
}

/// The input a result asks for, when it is `input_required` (declared,
/// or by its shape on a result that declares no `resultType`).
fn asks(v: &Value) -> Option<InputRequiredResult> {
    let declared = v.get("resultType").and_then(Value::as_str);
    let shaped = v.get("inputRequests").is_some() || v.get("requestState").is_some();
    match declared {
        Some("input_required") => InputRequiredResult::from_value(v),
        None if shaped => InputRequiredResult::from_value(v),
        _ => None,
    }
}

/// How a walk ended.
struct Walk {
    /// The `requestState` of each round, in order.
    states: Vec<String>,
    /// The complete result, or what came instead.
    end: Result<Value, String>,
}

/// Walks `params` from a first reply that answered `input_required`,
/// answering every round validly.
async fn walk(p: &Probe, kind: &Kind, params: &Value, first: InputRequiredResult) -> Walk {
    let mut states = Vec::new();
    let mut ir = first;
    for round in 1..=MAX_ROUNDS {
        let answers = answers_for(&ir, p.settings().target.seed ^ round as u64);
        let mut retry = params.clone();
        retry["inputResponses"] = Value::Object(answers);
        if let Some(s) = &ir.request_state {
            states.push(s.clone());
            retry["requestState"] = s.clone().into();
        }
        let label = format!("{} {} retry {round}", kind.method, named(kind, params));
        let reply = match p.modern(label, kind.method, retry, &all_modes()).await {
            Ok(r) => r,
            Err(e) => {
                return Walk {
                    states,
                    end: Err(format!("round {round}: no reply: {e}")),
                };
            }
        };
        match reply.rpc() {
            Rpc::Result(v) => match asks(&v) {
                Some(next) => ir = next,
                None => return Walk { states, end: Ok(v) },
            },
            other => {
                return Walk {
                    states,
                    end: Err(format!(
                        "round {round}: {}",
                        p.reply_status(reply.status).then(" and ", other.describe())
                    )),
                };
            }
        }
    }
    if let Some(s) = ir.request_state {
        states.push(s);
    }
    Walk {
        states,
        end: Err(format!(
            "still input_required after {MAX_ROUNDS} validly answered rounds"
        )),
    }
}

async fn flow(p: &Probe, kind: &Kind) -> Verdict {
    let offers = p
        .target()
        .discover
        .as_ref()
        .and_then(|d| d.get("capabilities"))
        .and_then(|c| c.get(kind.capability))
        .is_some();
    if !offers {
        return Verdict::skip(format!(
            "server/discover declares no {} capability: no {} flow to walk",
            kind.capability, kind.method
        ));
    }
    let listed = match p
        .modern(kind.list, kind.list, json!({}), &all_modes())
        .await
    {
        Ok(r) => r.rpc(),
        Err(e) => {
            return Verdict::info(format!("could not tell: {}: no reply ({e})", kind.list));
        }
    };
    let entries: Vec<Value> = listed
        .result()
        .and_then(|v| v.get(kind.key))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut tried = Vec::new();
    for entry in entries.iter().take(MAX_TRIED) {
        let Some(params) = params_of(kind, entry) else {
            continue;
        };
        let what = format!("{} {}", kind.method, named(kind, &params));
        let reply = match p
            .modern(what.clone(), kind.method, params.clone(), &all_modes())
            .await
        {
            Ok(r) => r,
            Err(e) => return Verdict::fail(format!("{what}: no reply: {e}")),
        };
        let rpc = reply.rpc();
        let Some(first) = rpc.result().and_then(asks) else {
            tried.push(what);
            continue;
        };
        return judge(&what, walk(p, kind, &params, first).await);
    }
    let seen = if tried.is_empty() {
        format!("{} lists none", kind.list)
    } else {
        format!("none asked: {}", tried.join(", "))
    };
    Verdict::skip(format!(
        "no listed {} answered input_required ({seen}): the {} flow could not be observed",
        kind.key, kind.method
    ))
}

/// The verdict on a walk: it completed, with a different state each round.
fn judge(what: &str, w: Walk) -> Verdict {
    let rounds = w.states.len();
    let distinct: HashSet<&String> = w.states.iter().collect();
    if distinct.len() != rounds {
        return Verdict::fail(format!(
            "{what}: {rounds} rounds but only {} distinct requestStates (a round reissued an \
             earlier one)",
            distinct.len()
        ))
        .expecting("a new requestState every round");
    }
    match w.end {
        Ok(v) => Verdict::pass(format!(
            "{what} completed after {rounds} input_required round(s), each with a new \
             requestState ({})",
            complete_shape(&v)
        )),
        Err(why) => Verdict::fail(format!("{what}: {why}")).expecting(
            "answered validly, the flow ends with a complete result (messages or contents)",
        ),
    }
}

/// What the complete result holds, in a few words.
fn complete_shape(v: &Value) -> String {
    let count = |k: &str| v.get(k).and_then(Value::as_array).map(Vec::len);
    match (count("messages"), count("contents")) {
        (Some(n), _) => format!("{n} message(s)"),
        (_, Some(n)) => format!("{n} content item(s)"),
        _ => format!(
            "keys {:?}",
            v.as_object()
                .map(Map::keys)
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(states: &[&str], end: Result<Value, String>) -> Walk {
        Walk {
            states: states.iter().map(|s| (*s).to_owned()).collect(),
            end,
        }
    }

    #[test]
    fn a_flow_passes_only_complete_with_new_states() {
        let done = || Ok(json!({"messages": [{}]}));
        assert!(matches!(
            judge("p", walk(&["a", "b"], done())),
            Verdict::Pass(_)
        ));
        assert!(matches!(
            judge("p", walk(&["a", "a"], done())),
            Verdict::Violation { .. }
        ));
        assert!(matches!(
            judge("p", walk(&["a"], Err("stuck".into()))),
            Verdict::Violation { .. }
        ));
    }
}
