//! Statelessness across instances (§6.B 25), with `--other-instance URL2`:
//! a state issued by the target is retried on the other instance and must
//! complete there (so the state really travels in `requestState` and both
//! instances open it: shared keys); that completed retry, replayed on the
//! other instance and on the target, must be refused (single use is shared:
//! one store). Instances are told apart by the `elicitkit-instance` header
//! where they send it; two URLs answering as the same instance prove
//! nothing, and the check says so rather than pass. An other instance that
//! does not answer at all stops the run before any check (a setting, not a
//! finding).

use serde_json::{Map, Value};

use super::CheckError;
use super::judge::{asks_for_input, rpc_state_rejection};
use super::model::Verdict;
use super::probe::{Probe, Settings, ToolProfile, all_modes};
use super::registry::{Check, check};
use super::subject::{at_state, reading, result_text, subjects};
use crate::client::raw::{self, Rpc};
use crate::findings::Severity;
use crate::protocol::headers::INSTANCE as INSTANCE_HEADER;

/// The id of the check: a run that includes it first makes sure the other
/// instance answers ([`reachable`]).
pub const ID: &str = "mrtr-cross-instance";

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-cross-instance",
        "§6.B 25",
        Must,
        Modern,
        "with --other-instance: a state issued by the target completes on the other instance, and a replay of that retry is refused on both (FAIL for a single-use tool completing twice, WARN for a state the other instance cannot open)",
        cross_instance
    )]
}

/// Before the run: `--other-instance`, when given, answers HTTP at all (any
/// status). One that does not is the user's setting, reported before any
/// check runs (a usage error), never a row of the target's.
pub async fn reachable(s: &Settings, http: &reqwest::Client) -> Result<(), CheckError> {
    let Some(other) = &s.other_instance else {
        return Ok(());
    };
    let req = raw::modern_post(
        "tools/list on --other-instance (does it answer?)",
        other,
        1,
        "tools/list",
        Some(raw::with_meta(serde_json::json!({}), &all_modes())),
    )
    .token(Some(&s.target.principal));
    let (_, reply) = raw::send(http, &req, s.target.timeout).await;
    reply
        .map(|_| ())
        .map_err(|e| CheckError::OtherUnreachable(other.clone(), e.to_string()))
}

/// One retry sent to `url`: its reading and the instance that answered.
struct Sent {
    rpc: Rpc,
    status: u16,
    instance: Option<String>,
}

async fn send_to(
    p: &Probe,
    url: &str,
    label: &str,
    tool: &ToolProfile,
    answers: &Map<String, Value>,
    state: &str,
) -> Result<Sent, String> {
    let mut req = p.call_request(
        label,
        tool,
        &all_modes(),
        Some(Value::Object(answers.clone())),
        Some(state),
    );
    req.url = url.to_owned();
    let r = p.send(req).await.map_err(|e| format!("{label}: {e}"))?;
    Ok(Sent {
        rpc: r.rpc(),
        status: r.status,
        instance: r.header(INSTANCE_HEADER).map(str::to_owned),
    })
}

/// The instance that issues states: the target's answer to a first call.
async fn first_instance(p: &Probe, tool: &ToolProfile) -> Option<String> {
    let req = p.call_request(
        format!(
            "tools/call {} (which instance answers the target)",
            tool.name
        ),
        tool,
        &all_modes(),
        None,
        None,
    );
    let r = p.send(req).await.ok()?;
    r.header(INSTANCE_HEADER).map(str::to_owned)
}

async fn cross_instance(p: Probe) -> Verdict {
    let Some(other) = p.settings().other_instance.clone() else {
        return Verdict::skip("no --other-instance URL given");
    };
    if other == p.settings().target.mcp_url {
        return Verdict::info(
            "could not tell: --other-instance is the --target URL itself, so nothing crosses",
        );
    }
    let tools = match subjects(&p, true) {
        Ok(t) => t,
        Err(skip) => return skip,
    };
    let mut notes = Vec::new();
    for t in &tools {
        match one_tool(&p, &other, t).await {
            Ok(v) => return v,
            Err(why) => notes.push(why),
        }
    }
    Verdict::info(format!(
        "could not tell: no tool completed from one state on the other instance: {}",
        notes.join("; ")
    ))
}

/// Runs the probe on `t`; `Err` when this tool cannot decide it (e.g. it
/// needs more rounds after its state round).
async fn one_tool(p: &Probe, other: &str, t: &ToolProfile) -> Result<Verdict, String> {
    let round = at_state(p, t).await.map_err(|e| e.to_string())?;
    let here = first_instance(p, t).await;
    let label = format!(
        "tools/call {} final retry sent to the other instance ({other})",
        t.name
    );
    let there = send_to(p, other, &label, t, &round.answers, &round.state).await;
    let there = match there {
        Ok(s) => s,
        Err(e) => return Ok(Verdict::info(format!("could not tell: {e}"))),
    };
    if let (Some(a), Some(b)) = (&here, &there.instance)
        && a == b
    {
        return Ok(Verdict::info(format!(
            "could not tell: the target and --other-instance both answered as instance {a:?} \
             ({INSTANCE_HEADER}), so the retry did not cross instances"
        )));
    }
    if let Ok(seen) = rpc_state_rejection(&there.rpc, &["unknown_key", "bad_tag"]) {
        return Ok(Verdict::violation(
            Severity::Should,
            format!(
                "{}: the other instance refused a state the target issued ({seen}): the \
                 instances do not share their state keys, so a retry that a load balancer \
                 sends elsewhere fails",
                t.name
            ),
        )
        .expecting("every instance opens every other instance's states (one key ring)"));
    }
    if let Ok(seen) = rpc_state_rejection(&there.rpc, &["store_reset"]) {
        return Ok(Verdict::violation(
            Severity::Should,
            format!(
                "{}: the other instance refused a state the target issued ({seen}): the \
                 instances do not share one store, so a retry that a load balancer sends \
                 elsewhere fails",
                t.name
            ),
        )
        .expecting("every instance completes every other instance's states (one shared store)"));
    }
    if let Rpc::Result(v) = &there.rpc
        && asks_for_input(v)
    {
        return Err(format!(
            "{}: the other instance opened the state but asked another round",
            t.name
        ));
    }
    if !there.rpc.completes() {
        return Ok(Verdict::violation(
            Severity::Should,
            format!(
                "{}: a valid final retry with the target's state did not complete on the other \
                 instance: {}",
                t.name,
                reading(&there.rpc, p.reply_status(there.status))
            ),
        )
        .expecting("the retry completes on any instance"));
    }
    let first = there.rpc.result().map(result_text).unwrap_or_default();
    let mut again = Vec::new();
    for (name, url) in [
        ("the other instance", other),
        ("the target", &p.settings().target.mcp_url),
    ] {
        let label = format!("tools/call {} replay of that retry on {name}", t.name);
        match send_to(p, url, &label, t, &round.answers, &round.state).await {
            Ok(s) if s.rpc.completes() => again.push(format!(
                "{name} completed it again (\"{}\")",
                s.rpc.result().map(result_text).unwrap_or_default()
            )),
            Ok(_) => {}
            Err(e) => return Ok(Verdict::info(format!("could not tell: {e}"))),
        }
    }
    if !again.is_empty() {
        let detail = format!(
            "{}: the retry completed on the other instance (\"{first}\"), then its replay: {}. \
             Single use is not shared between the instances (each has its own store?)",
            t.name,
            again.join("; ")
        );
        let sev = if t.single_use {
            Severity::Must
        } else {
            Severity::Should
        };
        return Ok(Verdict::violation(sev, detail)
            .expecting("a completed retry is refused on every instance (one shared store)"));
    }
    let who = match (&here, &there.instance) {
        (Some(a), Some(b)) => format!("instance {a:?} issued it, {b:?} completed it"),
        _ => format!(
            "neither URL names its instance ({INSTANCE_HEADER}): assuming they are different \
             instances"
        ),
    };
    Ok(Verdict::pass(format!(
        "{}: a state from the target completed on the other instance ({who}); replays on both \
         were refused",
        t.name
    )))
}
