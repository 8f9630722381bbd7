//! Replay of valid states (S8): every tool that issues a `requestState` is
//! walked to its completion, then the same final retry (same state, same
//! answers, a new id) is sent again. Completing twice breaks the S8 note
//! for a single-use tool (FAIL) and is a WARN elsewhere (the server cannot
//! know the action may repeat; the user can say it must not with
//! `--single-use`). A state presented by another principal must be refused
//! (S8a); an old state must expire (S8b, with `--wait-expiry`). Their
//! refusals count beside a [`Control`] (a valid retry by its owner, now, goes
//! on); the replay's own control is the completion it repeats.

use super::control::Control;
use super::judge::rpc_state_rejection;
use super::model::Verdict;
use super::probe::{Probe, ToolProfile};
use super::registry::{Check, check};
use super::state_decode::reencodings;
use super::subject::{Completed, complete, first_at_state, reading, result_text, retry};
use crate::client::raw::Rpc;
use crate::oracle::replay::{Twice, judge};
use serde_json::Value;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-replay-final-retry",
            "§4.7 S8 / §6.B 15",
            Must,
            Modern,
            "the final retry of a completed flow, sent again, does not complete again (FAIL for single-use tools, WARN elsewhere)",
            replay_final_retry
        ),
        check!(
            "mrtr-cross-principal",
            "§4.7 S8a, §3.6 rule 3 / §6.B 12",
            Should,
            Modern,
            "a state presented with another principal's credentials is rejected",
            cross_principal,
            two_principals
        ),
        check!(
            "mrtr-state-expiry",
            "§4.7 S8b / §6.B 13",
            Should,
            Modern,
            "a state replayed after --wait-expiry is rejected as expired",
            expiry,
            expiry
        ),
    ]
}

/// What one replay showed.
enum Replayed {
    /// The replay was refused; says how.
    Refused(String),
    /// It completed again; the evidence line.
    Twice(String),
    /// The tool could not be walked to a completion; says why.
    NotReached(String),
}

async fn replay_one(p: &Probe, t: &ToolProfile) -> Replayed {
    let done: Completed = match complete(p, t).await {
        Ok(d) => d,
        Err(e) => return Replayed::NotReached(e),
    };
    let Some(state) = done.state.clone() else {
        return Replayed::NotReached(format!(
            "{}: its final retry carried no requestState",
            t.name
        ));
    };
    let label = format!(
        "tools/call {} replay of the final retry (same requestState and inputResponses, new id)",
        t.name
    );
    let (rpc, status) = match retry(p, t, &label, &done.answers, &state).await {
        Ok(x) => x,
        Err(e) => return Replayed::Refused(format!("{}: no reply to the replay ({e})", t.name)),
    };
    if rpc.completes() {
        return Replayed::Twice(format!(
            "{}: first completion \"{}\", the replay completed again \"{}\"",
            t.name,
            result_text(&done.result),
            rpc.result().map(result_text).unwrap_or_default()
        ));
    }
    let refused = format!("{}: the replay got {}", t.name, reading(&rpc, status));
    // A guard keyed on the wire string lets a re-encoding of the same bytes
    // through: replay once more, re-encoded.
    for (what, again) in reencodings(&state) {
        let label = format!(
            "tools/call {} replay of the final retry, state re-encoded as {what}",
            t.name
        );
        if let Ok((rpc, _)) = retry(p, t, &label, &done.answers, &again).await
            && rpc.completes()
        {
            return Replayed::Twice(format!(
                "{}: the exact replay was refused, but the same state re-encoded as {what} \
                 completed again (\"{}\"): the replay guard keys on the wire string, not the \
                 decoded state",
                t.name,
                rpc.result().map(result_text).unwrap_or_default()
            ));
        }
    }
    match rpc_state_rejection(&rpc, &["replayed"]) {
        Ok(seen) => Replayed::Refused(format!("{}: {seen}", t.name)),
        Err(_) => Replayed::Refused(refused),
    }
}

async fn replay_final_retry(p: Probe) -> Verdict {
    let tools: Vec<ToolProfile> = p
        .target()
        .state_tools()
        .into_iter()
        .filter(|t| p.target().off_origin(t).is_none())
        .collect();
    if tools.is_empty() {
        return p
            .target()
            .no_subject("no tool issues a requestState in any round");
    }
    let mut twice_single = Vec::new();
    let mut twice = Vec::new();
    let mut refused = Vec::new();
    let mut unreached = Vec::new();
    for t in &tools {
        match replay_one(&p, t).await {
            Replayed::Twice(line) => match judge(t.single_use, 2) {
                Some(Twice::SingleUse) => twice_single.push(line),
                _ => twice.push(line),
            },
            Replayed::Refused(line) => refused.push(line),
            Replayed::NotReached(why) => unreached.push(why),
        }
    }
    let rest = |v: &[String]| {
        if v.is_empty() {
            String::new()
        } else {
            format!("; refused: {}", v.join("; "))
        }
    };
    if !twice_single.is_empty() {
        return Verdict::fail(format!(
            "single-use tool(s) completed twice from the same state and answers: {}{}",
            twice_single.join("; "),
            rest(&[twice.clone(), refused].concat())
        ))
        .expecting("the second completion of a single-use state is refused (a JSON-RPC error)");
    }
    if !twice.is_empty() {
        return Verdict::violation(
            Twice::MayRepeat.severity(),
            format!(
                "the same state and answers completed twice; if this action must not repeat, \
                 this is a MUST (mark the tool destructiveHint, say \"exactly once\" in its \
                 description, or run with --single-use NAME): {}{}",
                twice.join("; "),
                rest(&refused)
            ),
        )
        .expecting("a replayed final retry is refused, or the action is safe to repeat");
    }
    if refused.is_empty() {
        return Verdict::skip(format!(
            "no tool could be walked to a completion: {}",
            unreached.join("; ")
        ));
    }
    let mut out = format!("every replay was refused: {}", refused.join("; "));
    if !unreached.is_empty() {
        out.push_str(&format!("; not reached: {}", unreached.join("; ")));
    }
    Verdict::pass(out)
}

async fn cross_principal(p: Probe) -> Verdict {
    if !p.target().principals_matter() {
        return super::identity::no_identity();
    }
    let r = match first_at_state(&p, false).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let control = Control::retry(&p, &r.tool).await;
    let other = p.settings().target.other_principal.clone();
    let req = p
        .call_request(
            format!(
                "tools/call {} round {} retry as another principal",
                r.tool.name,
                r.index + 1
            ),
            &r.tool,
            &super::probe::all_modes(),
            Some(Value::Object(r.answers.clone())),
            Some(&r.state),
        )
        .token(Some(&other));
    let reply = match p.send(req).await {
        Ok(x) => x,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    if matches!(reply.status, 401 | 403) {
        return control.judge(Verdict::pass(format!(
            "{}: refused with HTTP {}",
            r.tool.name, reply.status
        )));
    }
    let rpc = reply.rpc();
    match rpc_state_rejection(&rpc, &["wrong_principal"]) {
        Ok(s) => control.judge(Verdict::pass(format!("{}: {s}", r.tool.name))),
        Err(why) => Verdict::fail(format!(
            "{}: another principal's retry with this state got {}{}",
            r.tool.name,
            reading(&rpc, reply.status),
            if matches!(rpc, Rpc::Error(_)) {
                format!(" ({why})")
            } else {
                String::new()
            }
        ))
        .expecting(
            "a JSON-RPC error (or 401/403): the state belongs to the principal it was issued to",
        ),
    }
}

async fn expiry(p: Probe) -> Verdict {
    let Some(wait) = p.settings().wait_expiry else {
        return Verdict::skip(
            "not requested: pass --wait-expiry DURATION (longer than the server's state TTL)",
        );
    };
    let r = match first_at_state(&p, false).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    tokio::time::sleep(wait).await;
    // The control after the wait: a fresh state is still taken now.
    let control = Control::retry(&p, &r.tool).await;
    let label = format!("tools/call {} retry after {wait:?}", r.tool.name);
    match retry(&p, &r.tool, &label, &r.answers, &r.state).await {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((rpc, status)) => match rpc_state_rejection(&rpc, &["expired"]) {
            Ok(s) => control.judge(Verdict::pass(format!(
                "{}: after {wait:?}: {s}",
                r.tool.name
            ))),
            Err(why) => Verdict::fail(format!(
                "{}: a state {wait:?} old got {}{}",
                r.tool.name,
                reading(&rpc, status),
                if matches!(rpc, Rpc::Error(_)) {
                    format!(" ({why})")
                } else {
                    String::new()
                }
            ))
            .expecting("a JSON-RPC error: the state has expired"),
        },
    }
}
