//! Robustness (§6.B 24, 26, 27): oversized states, thousands of answer keys
//! and deep nesting get a bounded error and the server stays up; dropping
//! connections mid-call leaves it healthy; a retry that reuses the first
//! call's id is recorded (the client rule is broken on purpose: INFO). The
//! probes that retry pass only beside a [`Control`] (a valid retry goes
//! on): a server that refuses every retry refuses these too.

use super::control::Control;
use super::judge::{answers_for, asks_for_input};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use super::subject::{Round, first_at_state, retry, state_subjects};
use crate::client::raw::{self, Rpc};
use crate::findings::Severity;
use crate::protocol::mrtr::{InputRequiredResult, REQUEST_STATE};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-oversized-state",
            "§4.7 (no size limit) / §6.B 27",
            Should,
            Modern,
            "a 256 KiB requestState gets a bounded error and the server stays up",
            oversized_state
        ),
        check!(
            "mrtr-many-input-responses",
            "§4.7 S9 / §6.B 27",
            Should,
            Modern,
            "5000 inputResponses keys and deep nesting get a bounded answer, no crash",
            many_keys
        ),
        check!(
            "mrtr-cancel-by-disconnect",
            "§4.3 / §6.B 24",
            Should,
            Modern,
            "calls abandoned mid-flight leave the server healthy",
            disconnect
        ),
        check!(
            "mrtr-retry-same-id",
            "§4.7 client rules / §6.B 26",
            Info,
            Modern,
            "a retry reusing the first call's id does not crash the server",
            same_id
        ),
    ]
}

async fn subject(p: &Probe) -> Result<(ToolProfile, Round), Verdict> {
    first_at_state(p, false).await.map(|r| (r.tool.clone(), r))
}

/// True when `tools/list` still answers.
async fn alive(p: &Probe) -> bool {
    matches!(
        p.modern("tools/list (is the server still up?)", "tools/list", json!({}), &all_modes()).await,
        Ok(r) if matches!(r.rpc(), Rpc::Result(_))
    )
}

async fn oversized_state(p: Probe) -> Verdict {
    let (t, r) = match subject(&p).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let control = Control::retry(&p, &t).await;
    let big = "A".repeat(256 * 1024);
    let out = retry(
        &p,
        &t,
        &format!("tools/call {} #2 retry with a 256 KiB requestState", t.name),
        &r.answers,
        &big,
    )
    .await;
    let verdict = match out {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((_, status)) if status >= 500 => Verdict::fail(p.reply_status(status).to_string()),
        Ok((Rpc::Error(e), status)) => Verdict::pass(
            p.reply_status(status)
                .then(", ", format_args!("error {}", e.code)),
        ),
        Ok((Rpc::Missing(_), 413)) => {
            Verdict::pass(format!("{} (body too large)", p.reply_status(413)))
        }
        Ok((other, status)) => Verdict::fail(format!(
            "{}: an unverifiable state was not refused",
            p.reply_status(status).then(" and ", other.describe())
        )),
    };
    if !alive(&p).await {
        return Verdict::fail("the server stopped answering after an oversized state");
    }
    control.judge(verdict)
}

async fn many_keys(p: Probe) -> Verdict {
    let mut problems = Vec::new();
    let (t, r) = match subject(&p).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let control = Control::retry(&p, &t).await;
    let mut answers = r.answers.clone();
    for i in 0..5000 {
        answers.insert(format!("k{i}"), json!({"action": "decline"}));
    }
    match retry(
        &p,
        &t,
        &format!("tools/call {} #2 retry with 5000 extra keys", t.name),
        &answers,
        &r.state,
    )
    .await
    {
        Err(e) => problems.push(format!("5000 keys: {e}")),
        Ok((_, s)) if s >= 500 => problems.push(format!("5000 keys: {}", p.reply_status(s))),
        Ok(_) => {}
    }
    let (t, r) = match subject(&p).await {
        Ok(x) => x,
        Err(v) => return v,
    };
    let mut deep = json!("x");
    for _ in 0..200 {
        deep = json!({ "a": deep });
    }
    let mut answers: Map<String, Value> = r.answers.clone();
    answers.insert("deep".into(), deep);
    match retry(
        &p,
        &t,
        &format!("tools/call {} #2 retry with 200-deep nesting", t.name),
        &answers,
        &r.state,
    )
    .await
    {
        Err(e) => problems.push(format!("deep nesting: {e}")),
        Ok((_, s)) if s >= 500 => problems.push(format!("deep nesting: {}", p.reply_status(s))),
        Ok(_) => {}
    }
    if !alive(&p).await {
        problems.push("the server stopped answering".into());
    }
    if problems.is_empty() {
        control.judge(Verdict::pass("bounded answers; the server stayed up"))
    } else {
        Verdict::fail(problems.join("; "))
    }
}

async fn disconnect(p: Probe) -> Verdict {
    let Some(t) = p.target().tools.iter().find(|t| t.elicits()).cloned() else {
        return p.target().no_subject("no tool elicits");
    };
    let http = p.target().http().clone();
    for i in 0..20u64 {
        let req = p.call_request(
            format!("tools/call {} abandoned", t.name),
            &t,
            &all_modes(),
            None,
            None,
        );
        // Drop the connection after at most a few milliseconds, mid-request.
        let _ = raw::send(&http, &req, Duration::from_millis(1 + i % 3)).await;
    }
    if alive(&p).await {
        Verdict::pass("20 calls dropped mid-flight; the server still answers")
    } else {
        Verdict::fail("the server stopped answering after dropped connections")
    }
}

async fn same_id(p: Probe) -> Verdict {
    let Some(t) = state_subjects(&p).into_iter().next() else {
        return p
            .target()
            .no_subject("no tool issues a requestState in any round");
    };
    // Every leg of the flow reuses one id, up to the round with the state
    // and its retry.
    let id = p.target().next_id();
    let post = |label: String, params: Value| {
        raw::modern_post(
            label,
            &p.settings().target.mcp_url,
            id,
            "tools/call",
            Some(raw::with_meta(params, &all_modes())),
        )
        .token(Some(&p.settings().target.principal))
    };
    let mut params = json!({"name": t.name, "arguments": t.arguments});
    for round in 0..4 {
        let label = if params.get(REQUEST_STATE).is_some() {
            format!(
                "tools/call {} retry with the state, reusing id {id}",
                t.name
            )
        } else {
            format!("tools/call {} leg {} with id {id}", t.name, round + 1)
        };
        let with_state = params.get(REQUEST_STATE).is_some();
        let reply = match p.send(post(label, params.clone())).await {
            Ok(r) => r,
            Err(e) => return Verdict::violation(Severity::Info, format!("no reply: {e}")),
        };
        if reply.status >= 500 {
            return Verdict::violation(Severity::Info, p.reply_status(reply.status).to_string());
        }
        let rpc = reply.rpc();
        let ir = rpc
            .result()
            .filter(|v| asks_for_input(v))
            .and_then(InputRequiredResult::from_value);
        match ir {
            Some(ir) if !with_state => {
                params = json!({
                    "name": t.name, "arguments": t.arguments,
                    "inputResponses": answers_for(&ir, p.settings().target.seed),
                });
                if let Some(s) = ir.request_state {
                    params[REQUEST_STATE] = Value::String(s);
                }
            }
            _ if with_state => {
                return Control::retry(&p, &t).await.judge(Verdict::pass(format!(
                    "{}: the retry reusing id {id} got {} (behaviour is undefined; recorded)",
                    t.name,
                    rpc.describe()
                )));
            }
            _ => {
                return Verdict::skip(format!(
                    "{} answered {} before a round carried a state",
                    t.name,
                    rpc.describe()
                ));
            }
        }
    }
    Verdict::skip(format!("{} issued no state within 4 rounds", t.name))
}
