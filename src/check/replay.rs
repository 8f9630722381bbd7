//! Replay of valid states (S8): a completed single-use state presented
//! again must fail (S8 note, MUST for one-time operations); another
//! principal's state must be refused (S8a); an old state must expire (S8b,
//! with `--wait-expiry`).

use super::flows::run_flow;
use super::judge::{Probed, judge_state_probe, rpc_state_rejection};
use super::model::{Check, Verdict};
use super::probe::Probe;
use super::state_tamper::{first_round, retry};
use crate::client::policy::AnswerPolicy;
use crate::findings::Severity;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-replay-single-use",
            "§4.7 S8 / §6.B 15",
            Must,
            Modern,
            "replaying a completed single-use retry fails",
            single_use
        ),
        check!(
            "mrtr-cross-principal",
            "§4.7 S8a, §3.6 rule 3 / §6.B 12",
            Should,
            Modern,
            "a state presented with another principal's credentials is rejected",
            cross_principal
        ),
        check!(
            "mrtr-state-expiry",
            "§4.7 S8b / §6.B 13",
            Should,
            Modern,
            "a state replayed after --wait-expiry is rejected as expired",
            expiry
        ),
    ]
}

fn verdict(tool: &str, probed: Probed) -> Verdict {
    match probed {
        Probed::Rejected(s) => Verdict::pass(format!("{tool}: {s}")),
        Probed::Accepted(s) => Verdict::fail(format!("{tool}: {s}")),
        Probed::NotReached(s) => Verdict::skip(format!("{tool}: the probe was not reached: {s}")),
        Probed::Hung(s) => Verdict::violation(Severity::Must, format!("{tool}: {s}")),
    }
}

async fn single_use(p: Probe) -> Verdict {
    let tools: Vec<_> = p
        .target()
        .tools
        .iter()
        .filter(|t| t.single_use && t.elicits())
        .cloned()
        .collect();
    if tools.is_empty() {
        return Verdict::skip(
            "no eliciting tool is single-use (annotations.destructiveHint, a description saying \
             \"exactly once\", or --single-use NAME)",
        );
    }
    let mut passes = Vec::new();
    for t in &tools {
        let rt = run_flow(&p, t, AnswerPolicy::ReplayState).await;
        match verdict(&t.name, judge_state_probe(&rt, &["replayed"])) {
            Verdict::Pass(s) => passes.push(s),
            other => return other,
        }
    }
    Verdict::pass(passes.join("; "))
}

async fn cross_principal(p: Probe) -> Verdict {
    if !p.target().principals_matter() {
        return Verdict::skip(
            "the server accepts requests without credentials: there is no principal to bind",
        );
    }
    let Some(t) = p.target().stateful_form_tool().cloned() else {
        return Verdict::skip("no form tool answers input_required with a requestState");
    };
    let rt = run_flow(&p, &t, AnswerPolicy::CrossPrincipalReplay).await;
    verdict(&t.name, judge_state_probe(&rt, &["wrong_principal"]))
}

async fn expiry(p: Probe) -> Verdict {
    let Some(wait) = p.settings().wait_expiry else {
        return Verdict::skip(
            "not requested: pass --wait-expiry DURATION (longer than the server's state TTL)",
        );
    };
    let Some(t) = p.target().stateful_form_tool().cloned() else {
        return Verdict::skip("no form tool answers input_required with a requestState");
    };
    let r = match first_round(&p, &t, &format!("tools/call {} #1", t.name)).await {
        Ok(r) => r,
        Err(e) => return Verdict::skip(e),
    };
    tokio::time::sleep(wait).await;
    let label = format!("tools/call {} #2 retry after {wait:?}", t.name);
    match retry(&p, &t, &label, &r.answers, &r.state).await {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((rpc, _)) => match rpc_state_rejection(&rpc, &["expired"]) {
            Ok(s) => Verdict::pass(format!("after {wait:?}: {s}")),
            Err(why) => Verdict::fail(format!(
                "a state {wait:?} old was not rejected as expired: {why}"
            )),
        },
    }
}
