//! Tampered `requestState` (S7, §6.B 11, 14, 16): a bit flip, truncation or
//! extension must be rejected with a JSON-RPC error, not a result or a
//! re-prompt; a state from another tool or other arguments must be refused
//! (S8c); an unsolicited state on a first call grants nothing. Subjects are
//! the tools that issue a state in any round, walked to that round. A
//! rejection counts only beside a [`Control`] (a valid retry of the same
//! tool goes on; else the row is "could not tell") and only if it is about
//! the state (not headers or capabilities). A re-encoding of
//! the same bytes (`+/` for `-_`, padding, a non-canonical last character)
//! leaves the state's integrity intact: accepting it breaks no rule of S7,
//! so it is reported as INFO (it matters to replay guards keyed on the wire
//! string, which `mrtr-replay-final-retry` probes).

use super::control::Control;
use super::judge::{INTEGRITY, asks_for_input, rpc_state_rejection};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use super::state_decode::{reencodings, same_bytes};
use super::subject::{Round, at_state, first_at_state, reading, retry, state_subjects};
use crate::client::policy::Mutation;
use crate::client::raw::Rpc;
use crate::client::rpc::final_success;
use crate::findings::Severity;
use crate::state::tamper;
use serde_json::Value;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-tamper-bit-flip",
            "§4.7 S7 / §6.B 11",
            Must,
            Modern,
            "a requestState with one bit flipped is rejected with an error",
            bit_flip;
            scenario "input-required-result-tampered-state"
        ),
        check!(
            "mrtr-tamper-truncate",
            "§4.7 S7 / §6.B 11",
            Must,
            Modern,
            "a truncated requestState is rejected with an error",
            truncate;
            scenario "input-required-result-tampered-state"
        ),
        check!(
            "mrtr-tamper-extend",
            "§4.7 S7 / §6.B 11",
            Must,
            Modern,
            "a requestState with bytes appended is rejected with an error",
            extend;
            scenario "input-required-result-tampered-state"
        ),
        check!(
            "mrtr-tamper-reencode",
            "§4.7 S7 / §6.B 11",
            Info,
            Modern,
            "a requestState re-encoded to the same bytes (standard base64, padding, non-canonical last character): rejected, or accepted with integrity intact (recorded)",
            reencode;
            scenario "input-required-result-tampered-state"
        ),
        check!(
            "mrtr-tamper-other-tool",
            "§4.7 S8c / §6.B 14",
            Should,
            Modern,
            "a state issued for another tool is rejected",
            other_tool;
            scenario "input-required-result-tampered-state"
        ),
        check!(
            "mrtr-tamper-other-arguments",
            "§4.7 S8c / §6.B 14",
            Should,
            Modern,
            "a state issued for other arguments is rejected",
            other_arguments;
            scenario "input-required-result-tampered-state"
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

/// The subject for integrity probes: the first state tool that reaches its
/// state round, with its control (a valid retry on a fresh walk).
async fn subject(p: &Probe) -> Result<(Round, Control), Verdict> {
    let r = first_at_state(p, false).await?;
    let control = Control::retry(p, &r.tool).await;
    Ok((r, control))
}

/// Tampers the state of `tool`'s state round with `mutate` and judges the retry.
async fn tamper_with(p: Probe, what: &str, mutate: impl Fn(&str) -> Option<String>) -> Verdict {
    let (r, control) = match subject(&p).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let Some(bad) = mutate(&r.state).filter(|b| *b != r.state && !same_bytes(b, &r.state)) else {
        return Verdict::skip(format!(
            "the state of {} cannot be {what} in a way that changes its bytes",
            r.tool.name
        ));
    };
    let label = format!(
        "tools/call {} round {} retry, state {what}",
        r.tool.name,
        r.index + 1
    );
    control.judge(judge_retry(&p, &r, &label, &bad, &INTEGRITY, what, false).await)
}

/// Sends the retry of `r` with `state` and judges it: a JSON-RPC error for
/// one of the `expected` reasons passes; a complete result or a re-prompt
/// is a violation (§6.B 11: the state was taken, not rejected). For a
/// binding probe (`binding`) a tool error result passes too: the server
/// saw the foreign state for what it is and granted nothing.
async fn judge_retry(
    p: &Probe,
    r: &Round,
    label: &str,
    state: &str,
    expected: &[&str],
    what: &str,
    binding: bool,
) -> Verdict {
    let (rpc, status) = match retry(p, &r.tool, label, &r.answers, state).await {
        Err(e) => {
            return Verdict::fail(format!(
                "{}: no reply to the retry with a state {what}: {e}",
                r.tool.name
            ));
        }
        Ok(x) => x,
    };
    if let Ok(seen) = rpc_state_rejection(&rpc, expected) {
        return Verdict::pass(format!("{}: state {what}: {seen}", r.tool.name));
    }
    if status >= 500 {
        return Verdict::fail(format!(
            "{}: state {what}: {}; a bad state must get a JSON-RPC error, not a crash",
            r.tool.name,
            p.reply_status(status)
        ))
        .expecting("a JSON-RPC error (e.g. -32602) naming the bad state");
    }
    match &rpc {
        Rpc::Result(v)
            if binding
                && !asks_for_input(v)
                && v.get("isError").and_then(Value::as_bool) == Some(true) =>
        {
            Verdict::pass(format!(
                "{}: state {what}: refused with a tool error result",
                r.tool.name
            ))
        }
        _ => {
            let why = match &rpc {
                Rpc::Error(_) => format!(" ({})", rpc_state_rejection(&rpc, expected).unwrap_err()),
                _ => String::new(),
            };
            Verdict::fail(format!(
                "{}: state {what}: {}{why}",
                r.tool.name,
                reading(&rpc, p.reply_status(status))
            ))
            .expecting(format!(
                "a JSON-RPC error for the state {what}, not a result or a re-prompt"
            ))
        }
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
    tamper_with(p, "with one bit flipped", |s| {
        // A bit inside the decoded bytes keeps the encoding valid.
        on_segments(s, |seg| tamper::flip_decoded_bit(seg, seg.len() * 3))
            .or_else(|| Some(Mutation::FlipChar { index: s.len() / 2 }.apply(s)))
    })
    .await
}

async fn truncate(p: Probe) -> Verdict {
    tamper_with(p, "truncated", |s| {
        Some(tamper::truncate(s, s.len().saturating_sub(4).max(1)))
    })
    .await
}

async fn extend(p: Probe) -> Verdict {
    tamper_with(p, "extended", |s| {
        String::from_utf8(tamper::extend(s, b"AAAA")).ok()
    })
    .await
}

async fn reencode(p: Probe) -> Verdict {
    let (r, control) = match subject(&p).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let variants = reencodings(&r.state);
    if variants.is_empty() {
        return Verdict::skip(format!(
            "the state of {} has no base64url part to re-encode",
            r.tool.name
        ));
    }
    let mut accepted = Vec::new();
    let mut refused = Vec::new();
    for (what, state) in variants {
        // Each on a fresh round: a server may retire a state it has seen.
        let fresh = match at_state(&p, &r.tool).await {
            Ok(f) => f,
            Err(e) => return Verdict::skip(e.to_string()),
        };
        let Some((_, state)) = reencodings(&fresh.state)
            .into_iter()
            .find(|(w, _)| *w == what)
        else {
            let _ = state;
            continue;
        };
        let what = what.as_str();
        let label = format!(
            "tools/call {} round {} retry, state re-encoded as {what}",
            r.tool.name,
            fresh.index + 1
        );
        match retry(&p, &r.tool, &label, &fresh.answers, &state).await {
            Ok((Rpc::Error(e), _)) => refused.push(format!("{what}: error {}", e.code)),
            Ok((rpc, status)) if status < 500 && matches!(rpc, Rpc::Result(_)) => accepted.push(
                format!("{what} ({})", reading(&rpc, p.reply_status(status))),
            ),
            Ok((rpc, status)) => {
                refused.push(format!("{what}: {}", reading(&rpc, p.reply_status(status))))
            }
            Err(e) => refused.push(format!("{what}: {e}")),
        }
    }
    if accepted.is_empty() {
        return control.judge(Verdict::pass(format!(
            "{}: every re-encoding was rejected: {}",
            r.tool.name,
            refused.join("; ")
        )));
    }
    Verdict::violation(
        Severity::Info,
        format!(
            "{}: accepted re-encodings that decode to the same bytes: {}. The payload and its \
             tag are unchanged, so integrity holds (no S7 violation); but the wire string is \
             malleable, so a replay guard keyed on the string (not the decoded bytes) can be \
             bypassed",
            r.tool.name,
            accepted.join(", ")
        ),
    )
}

async fn other_tool(p: Probe) -> Verdict {
    let subjects = state_subjects(&p);
    let Some(tool) = subjects.first().cloned() else {
        return p
            .target()
            .no_subject("no tool issues a requestState in any round");
    };
    let Some(other) = subjects.iter().find(|t| t.name != tool.name).cloned() else {
        return Verdict::skip("only one tool issues a requestState");
    };
    let of = format!("of {}", other.name);
    let what = format!("issued for tool {}", other.name);
    with_state_of(&p, &tool, &other, &of, &what).await
}

async fn other_arguments(p: Probe) -> Verdict {
    let subjects = state_subjects(&p);
    let Some(tool) = subjects
        .iter()
        .find(|t| t.other_arguments.is_some())
        .cloned()
    else {
        return match subjects.first() {
            Some(t) => Verdict::skip(format!("{} takes no arguments that can vary", t.name)),
            None => p
                .target()
                .no_subject("no tool issues a requestState in any round"),
        };
    };
    let mut varied = tool.clone();
    varied.arguments = tool.other_arguments.clone().unwrap_or_default();
    let what = "issued for other arguments";
    with_state_of(&p, &tool, &varied, what, what).await
}

/// Retries a fresh state round of `tool` with a state issued to `donor`
/// (another tool, or other arguments; `of` names it in the label, `what`
/// in the verdict): a state bound to its request is rejected as
/// `wrong_request`.
async fn with_state_of(
    p: &Probe,
    tool: &ToolProfile,
    donor: &ToolProfile,
    of: &str,
    what: &str,
) -> Verdict {
    let control = Control::retry(p, tool).await;
    let foreign = match at_state(p, donor).await {
        Ok(r) => r.state,
        Err(e) => return Verdict::skip(e.to_string()),
    };
    let mine = match at_state(p, tool).await {
        Ok(r) => r,
        Err(e) => return Verdict::skip(e.to_string()),
    };
    let label = format!(
        "tools/call {} round {} retry with the state {of}",
        tool.name,
        mine.index + 1
    );
    control.judge(judge_retry(p, &mine, &label, &foreign, &["wrong_request"], what, true).await)
}

/// The answers a tool's state round takes (from discovery's walk).
fn state_round_answers(t: &ToolProfile) -> serde_json::Map<String, Value> {
    t.state_round
        .and_then(|i| t.rounds.get(i))
        .map(|r| r.answers.clone())
        .unwrap_or_default()
}

async fn unsolicited(p: Probe) -> Verdict {
    let Some(tool) = state_subjects(&p).into_iter().next() else {
        return p
            .target()
            .no_subject("no tool issues a requestState in any round");
    };
    let answers = Value::Object(state_round_answers(&tool));
    let forged = "ZWxpY2l0a2l0LXVuc29saWNpdGVkLXN0YXRl";
    let req = p.call_request(
        format!(
            "tools/call {} #1 with an unsolicited requestState and answers",
            tool.name
        ),
        &tool,
        &all_modes(),
        Some(answers.clone()),
        Some(forged),
    );
    let reply = match p.send(req).await {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    let rpc = reply.rpc();
    let refused = match &rpc {
        Rpc::Error(e) => Some(format!("{}: rejected with error {}", tool.name, e.code)),
        Rpc::Result(v) if asks_for_input(v) => Some(format!(
            "{}: ignored: the server asked for input as on a first call",
            tool.name
        )),
        Rpc::Result(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => Some(format!(
            "{}: answered with a tool error; nothing was granted",
            tool.name
        )),
        _ => None,
    };
    if let Some(refused) = refused {
        // A server that refuses every retry refuses a forged state too.
        return Control::retry(&p, &tool)
            .await
            .judge(Verdict::pass(refused));
    }
    match &rpc {
        Rpc::Missing(why) if reply.status >= 500 => Verdict::fail(format!("server error: {why}")),
        Rpc::Missing(why) => {
            Verdict::violation(Severity::Should, format!("no JSON-RPC error: {why}"))
        }
        _ => {
            // Control: the same first call with the answers and no state. A
            // tool that completes on answers alone ignored the state.
            let control = p.call_request(
                format!(
                    "control: tools/call {} #1 with the same answers and no requestState",
                    tool.name
                ),
                &tool,
                &all_modes(),
                Some(answers),
                None,
            );
            match p.send(control).await.map(|r| r.rpc()) {
                Ok(Rpc::Result(v)) if final_success(&v) => Verdict::violation(
                    Severity::Info,
                    format!(
                        "{}: completed, but it completes on the same answers without any \
                             state too: the forged state was ignored, not honoured",
                        tool.name
                    ),
                ),
                _ => Verdict::fail(format!(
                    "{}: the server completed a first call on the strength of a requestState it \
                     never issued (without the state, the same call does not complete)",
                    tool.name
                ))
                .expecting("a JSON-RPC error, or the first round's input_required"),
            }
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
