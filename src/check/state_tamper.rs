//! Tampered `requestState` (S7, §6.B 11, 14, 16): a bit flip, truncation,
//! extension or re-encoding must be rejected with a JSON-RPC error, not a
//! result or a re-prompt; a state from another tool or other arguments must
//! be rejected (S8c); an unsolicited state on a first call grants nothing.
//! Each probe first runs a faithful control retry, and a rejection counts
//! only if it is about the state (not headers or capabilities).

use super::judge::{INTEGRITY, answers_for, is_input_required, rpc_state_rejection};
use super::model::{Check, Verdict};
use super::probe::{Probe, ToolProfile, all_modes};
use super::raw::Rpc;
use crate::client::policy::Mutation;
use crate::findings::Severity;
use crate::protocol::mrtr::InputRequiredResult;
use crate::state::tamper;
use serde_json::{Map, Value};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-tamper-bit-flip",
            "§4.7 S7 / §6.B 11",
            Must,
            Modern,
            "a requestState with one bit flipped is rejected with an error",
            bit_flip
        ),
        check!(
            "mrtr-tamper-truncate",
            "§4.7 S7 / §6.B 11",
            Must,
            Modern,
            "a truncated requestState is rejected with an error",
            truncate
        ),
        check!(
            "mrtr-tamper-extend",
            "§4.7 S7 / §6.B 11",
            Must,
            Modern,
            "a requestState with bytes appended is rejected with an error",
            extend
        ),
        check!(
            "mrtr-tamper-reencode",
            "§4.7 S7 / §6.B 11",
            Must,
            Modern,
            "a requestState re-encoded (standard base64 / padding) is rejected with an error",
            reencode
        ),
        check!(
            "mrtr-tamper-other-tool",
            "§4.7 S8c / §6.B 14",
            Should,
            Modern,
            "a state issued for another tool is rejected",
            other_tool
        ),
        check!(
            "mrtr-tamper-other-arguments",
            "§4.7 S8c / §6.B 14",
            Should,
            Modern,
            "a state issued for other arguments is rejected",
            other_arguments
        ),
        check!(
            "mrtr-unsolicited-state",
            "§4.7 S7 / §6.B 16",
            Must,
            Modern,
            "a requestState on a first call (none was issued) grants nothing",
            unsolicited
        ),
    ]
}

/// A first call that answered `input_required` with a state.
pub struct Round {
    /// The parsed result.
    pub ir: InputRequiredResult,
    /// Its state.
    pub state: String,
    /// Valid answers for it.
    pub answers: Map<String, Value>,
}

/// First call of `tool` (with `arguments` overriding its usual ones).
pub async fn first_round(p: &Probe, tool: &ToolProfile, label: &str) -> Result<Round, String> {
    let req = p.call_request(label, tool, &all_modes(), None, None);
    let reply = p.send(req).await.map_err(|e| e.to_string())?;
    let rpc = reply.rpc();
    let ir = rpc
        .result()
        .filter(|v| is_input_required(v))
        .and_then(InputRequiredResult::from_value)
        .ok_or_else(|| format!("first call of {} answered {}", tool.name, rpc.describe()))?;
    let state = ir
        .request_state
        .clone()
        .ok_or_else(|| format!("{} gave no requestState", tool.name))?;
    let answers = answers_for(&ir, p.settings().seed);
    Ok(Round { ir, state, answers })
}

/// Sends the retry of `tool` with `answers` and `state`.
pub async fn retry(
    p: &Probe,
    tool: &ToolProfile,
    label: &str,
    answers: &Map<String, Value>,
    state: &str,
) -> Result<(Rpc, u16), String> {
    let req = p.call_request(
        label,
        tool,
        &all_modes(),
        Some(Value::Object(answers.clone())),
        Some(state),
    );
    let r = p.send(req).await.map_err(|e| e.to_string())?;
    Ok((r.rpc(), r.status))
}

/// The tool tamper probes use: a form tool whose first round carries a state.
fn subject(p: &Probe) -> Option<ToolProfile> {
    p.target().stateful_form_tool().cloned()
}

/// Runs the faithful control retry; `Err` is the skip reason.
async fn control(p: &Probe, tool: &ToolProfile) -> Result<(), String> {
    let r = first_round(p, tool, &format!("control: tools/call {} #1", tool.name)).await?;
    match retry(
        p,
        tool,
        &format!("control: tools/call {} #2 faithful retry", tool.name),
        &r.answers,
        &r.state,
    )
    .await?
    {
        (Rpc::Result(_), _) => Ok(()),
        (other, _) => Err(format!(
            "the faithful control retry already fails ({}), so a rejection of a tampered state proves nothing",
            other.describe()
        )),
    }
}

/// Tampers the state of a fresh first round with `mutate` and judges the retry.
async fn tamper_with(
    p: Probe,
    what: &str,
    mutate: impl Fn(&str) -> Option<String>,
    expected: &[&str],
) -> Verdict {
    let Some(tool) = subject(&p) else {
        return Verdict::skip("no form tool answers input_required with a requestState");
    };
    if let Err(why) = control(&p, &tool).await {
        return Verdict::skip(why);
    }
    let r = match first_round(&p, &tool, &format!("tools/call {} #1", tool.name)).await {
        Ok(r) => r,
        Err(e) => return Verdict::skip(e),
    };
    let Some(bad) = mutate(&r.state).filter(|b| *b != r.state) else {
        return Verdict::skip(format!(
            "the state cannot be {what} in a way that changes it"
        ));
    };
    let label = format!("tools/call {} #2 retry, state {what}", tool.name);
    judge_retry(&p, &tool, &label, &r.answers, &bad, expected, what).await
}

async fn judge_retry(
    p: &Probe,
    tool: &ToolProfile,
    label: &str,
    answers: &Map<String, Value>,
    state: &str,
    expected: &[&str],
    what: &str,
) -> Verdict {
    match retry(p, tool, label, answers, state).await {
        Err(e) => Verdict::fail(format!("no reply to the retry with a state {what}: {e}")),
        Ok((rpc, status)) => match rpc_state_rejection(&rpc, expected) {
            Ok(seen) => Verdict::pass(format!("state {what}: {seen}")),
            Err(why) => {
                let accepted = match &rpc {
                    Rpc::Result(v) if is_input_required(v) => {
                        " (the server re-prompted instead of rejecting)"
                    }
                    Rpc::Result(_) => " (the server completed the call)",
                    _ => "",
                };
                if status >= 500 {
                    return Verdict::fail(format!(
                        "state {what}: HTTP {status}; a bad state must get a JSON-RPC error, not a crash"
                    ));
                }
                Verdict::fail(format!("state {what}: {why}{accepted}"))
            }
        },
    }
}

/// Applies `f` to the whole token, or else to one `.`-separated segment
/// (longest first): states such as rmcp's `rs1.<body>.<tag>` are dotted
/// base64url.
fn on_segments(s: &str, f: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(whole) = f(s) {
        return Some(whole);
    }
    let parts: Vec<&str> = s.split('.').collect();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(parts[*i].len()));
    order.into_iter().find_map(|i| {
        let changed = f(parts[i])?;
        let mut out: Vec<String> = parts.iter().map(|p| (*p).to_owned()).collect();
        out[i] = changed;
        Some(out.join("."))
    })
}

async fn bit_flip(p: Probe) -> Verdict {
    tamper_with(
        p,
        "with one bit flipped",
        |s| {
            // A bit inside the decoded bytes keeps the encoding valid.
            on_segments(s, |seg| tamper::flip_decoded_bit(seg, seg.len() * 3))
                .or_else(|| Some(Mutation::FlipChar { index: s.len() / 2 }.apply(s)))
        },
        &INTEGRITY,
    )
    .await
}

async fn truncate(p: Probe) -> Verdict {
    tamper_with(
        p,
        "truncated",
        |s| Some(tamper::truncate(s, s.len().saturating_sub(4).max(1))),
        &INTEGRITY,
    )
    .await
}

async fn extend(p: Probe) -> Verdict {
    tamper_with(
        p,
        "extended",
        |s| String::from_utf8(tamper::extend(s, b"AAAA")).ok(),
        &INTEGRITY,
    )
    .await
}

async fn reencode(p: Probe) -> Verdict {
    tamper_with(
        p,
        "re-encoded",
        |s| {
            on_segments(s, |seg| {
                tamper::to_standard_base64(seg)
                    .filter(|x| x != seg)
                    .or_else(|| tamper::with_padding(seg).filter(|x| x != seg))
            })
        },
        &INTEGRITY,
    )
    .await
}

async fn other_tool(p: Probe) -> Verdict {
    let Some(tool) = subject(&p) else {
        return Verdict::skip("no form tool answers input_required with a requestState");
    };
    let other = p.target().tools.iter().find(|t| {
        t.name != tool.name
            && matches!(
                t.first,
                super::probe::FirstReply::InputRequired {
                    has_state: true,
                    ..
                }
            )
    });
    let Some(other) = other.cloned() else {
        return Verdict::skip("only one tool issues a requestState");
    };
    if let Err(why) = control(&p, &tool).await {
        return Verdict::skip(why);
    }
    let foreign = match first_round(
        &p,
        &other,
        &format!("tools/call {} #1 (source of the foreign state)", other.name),
    )
    .await
    {
        Ok(r) => r.state,
        Err(e) => return Verdict::skip(e),
    };
    let mine = match first_round(&p, &tool, &format!("tools/call {} #1", tool.name)).await {
        Ok(r) => r,
        Err(e) => return Verdict::skip(e),
    };
    let label = format!(
        "tools/call {} #2 retry with the state of {}",
        tool.name, other.name
    );
    let what = format!("issued for tool {}", other.name);
    judge_retry(
        &p,
        &tool,
        &label,
        &mine.answers,
        &foreign,
        &["wrong_request"],
        &what,
    )
    .await
}

async fn other_arguments(p: Probe) -> Verdict {
    let Some(tool) = subject(&p) else {
        return Verdict::skip("no form tool answers input_required with a requestState");
    };
    let Some(other_args) = tool.other_arguments.clone() else {
        return Verdict::skip(format!("{} takes no arguments that can vary", tool.name));
    };
    if let Err(why) = control(&p, &tool).await {
        return Verdict::skip(why);
    }
    let mut varied = tool.clone();
    varied.arguments = other_args;
    let foreign = match first_round(
        &p,
        &varied,
        &format!("tools/call {} #1 with other arguments", tool.name),
    )
    .await
    {
        Ok(r) => r.state,
        Err(e) => return Verdict::skip(e),
    };
    let mine = match first_round(&p, &tool, &format!("tools/call {} #1", tool.name)).await {
        Ok(r) => r,
        Err(e) => return Verdict::skip(e),
    };
    let label = format!(
        "tools/call {} #2 retry with the state issued for other arguments",
        tool.name
    );
    judge_retry(
        &p,
        &tool,
        &label,
        &mine.answers,
        &foreign,
        &["wrong_request"],
        "issued for other arguments",
    )
    .await
}

async fn unsolicited(p: Probe) -> Verdict {
    let Some(tool) = p.target().form_tools().next().cloned() else {
        return Verdict::skip("no form tool elicits");
    };
    let answers = match &tool.first {
        super::probe::FirstReply::InputRequired { result, .. } => {
            InputRequiredResult::from_value(result)
                .map(|ir| answers_for(&ir, p.settings().seed))
                .unwrap_or_default()
        }
        _ => Map::new(),
    };
    let forged = "ZWxpY2l0a2l0LXVuc29saWNpdGVkLXN0YXRl";
    let req = p.call_request(
        format!(
            "tools/call {} #1 with an unsolicited requestState and answers",
            tool.name
        ),
        &tool,
        &all_modes(),
        Some(Value::Object(answers)),
        Some(forged),
    );
    let reply = match p.send(req).await {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    match reply.rpc() {
        Rpc::Error(e) => Verdict::pass(format!("rejected with error {}", e.code)),
        Rpc::Result(v) if is_input_required(&v) => {
            Verdict::pass("ignored: the server asked for input as on a first call")
        }
        Rpc::Result(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => {
            Verdict::pass("answered with a tool error; nothing was granted")
        }
        Rpc::Result(_) => Verdict::fail(
            "the server completed a first call on the strength of a requestState it never issued",
        ),
        Rpc::Missing(why) if reply.status >= 500 => Verdict::fail(format!("server error: {why}")),
        Rpc::Missing(why) => {
            Verdict::violation(Severity::Should, format!("no JSON-RPC error: {why}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_tokens_are_tampered_segment_by_segment() {
        let pad = |seg: &str| tamper::with_padding(seg).filter(|x| x != seg);
        // The whole token does not decode (dots), the tag segment does.
        let t = "rs1.AAAAAAAA.AQI";
        let out = on_segments(t, pad).expect("a segment re-encodes");
        assert_ne!(out, t);
        assert_eq!(out.split('.').count(), 3);
        // A plain token is handled whole.
        assert_eq!(on_segments("AQ", pad).as_deref(), Some("AQ=="));
        // Nothing changes: None, so the check skips rather than lies.
        assert_eq!(on_segments("AAAA", pad), None);
    }
}
