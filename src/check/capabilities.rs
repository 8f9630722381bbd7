//! Capability gating, per request (§2.4, S5): the same tool call under
//! `{}`, `{elicitation:{}}`, form only, URL only and sampling only must never
//! bring an input request for a mode the client did not declare; a server
//! that needs the capability answers `-32021` (HTTP 400) with an *object*
//! `requiredCapabilities`. And no capability carries over from an earlier
//! request (§4.2). The 2025-11-25 twins (`legacy-cap-*`, [`legacy_checks`])
//! gate the modes pushed on a session the same way.

use super::control::Control;
use super::judge::answers_for;
use super::legacy_session::{Answer, run_all};
use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::Rpc;
use crate::oracle::capability::{undeclared, undeclared_pushed};
use crate::protocol::ClientCapabilities;
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::codes;
use crate::protocol::mrtr::InputRequiredResult;
use serde_json::{Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-cap-none",
            "§2.4, §4.7 S5 / §6.B 8",
            Must,
            Modern,
            "capabilities {}: no elicitation; -32021 with an object instead",
            cap_none;
            scenario "input-required-result-capability-check"
        ),
        check!(
            "mrtr-cap-elicitation-empty",
            "§2.4, §4.7 S5 / §6.B 8",
            Must,
            Modern,
            "capabilities {elicitation:{}} (form only): no URL mode",
            cap_empty;
            scenario "input-required-result-capability-check"
        ),
        check!(
            "mrtr-cap-form-only",
            "§2.4, §4.7 S5 / §6.B 8",
            Must,
            Modern,
            "capabilities {elicitation:{form:{}}}: no URL mode",
            cap_form;
            scenario "input-required-result-capability-check"
        ),
        check!(
            "mrtr-cap-url-only",
            "§2.4, §4.7 S5 / §6.B 8",
            Must,
            Modern,
            "capabilities {elicitation:{url:{}}}: no form mode",
            cap_url;
            scenario "input-required-result-capability-check"
        ),
        check!(
            "mrtr-cap-sampling-only",
            "§2.4, §4.7 S5 / §6.B 8",
            Must,
            Modern,
            "capabilities {sampling:{}}: no elicitation",
            cap_sampling;
            scenario "input-required-result-capability-check"
        ),
        check!(
            "mrtr-cap-undeclared-input",
            "§2.4, §4.7 S5 / §6.B 8",
            Must,
            Modern,
            "no tool asks for sampling or roots from a client that declared only elicitation",
            undeclared_input
        ),
        check!(
            "mrtr-cap-no-carry-over",
            "§4.2 / §6.B 9",
            Must,
            Modern,
            "a retry declaring {} gets no elicitation although the first call declared it",
            no_carry_over
        ),
    ]
}

/// The id of the check that reports tools asking for undeclared inputs
/// (the root cause the dependent checks point to).
pub const UNDECLARED_INPUT: &str = "mrtr-cap-undeclared-input";

async fn undeclared_input(p: Probe) -> Verdict {
    let causes = &p.target().root_causes;
    if causes.is_empty() {
        let asked = p.target().tools.iter().filter(|t| t.elicits()).count();
        if asked == 0 {
            return Verdict::skip("no tool asked for input");
        }
        return Verdict::pass(format!(
            "{asked} tool(s) asked for input; none for sampling or roots"
        ));
    }
    let list: Vec<String> = causes
        .iter()
        .map(|c| format!("{} {}", c.tool, c.what))
        .collect();
    Verdict::fail(format!(
        "{} (the checks that would repeat this skip these tools)",
        list.join("; ")
    ))
}

/// Judges one reply to a call made under capabilities allowing `modes`
/// (`status`: the reply's HTTP status, when it is the server's).
fn judge_gated(
    rpc: &Rpc,
    status: Option<u16>,
    modes: ElicitModes,
    problems: &mut Vec<String>,
    tool: &str,
) -> &'static str {
    match rpc {
        Rpc::Result(v) => {
            let bad: Vec<String> = undeclared(v, modes)
                .into_iter()
                .map(|(k, m)| format!("{k} ({m} mode)"))
                .collect();
            if !bad.is_empty() {
                problems.push(format!(
                    "{tool}: input request(s) for an undeclared mode: {}",
                    bad.join(", ")
                ));
            }
            "result"
        }
        Rpc::Error(e) if e.code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            match e.data.as_ref().and_then(|d| d.get("requiredCapabilities")) {
                Some(Value::Object(_)) => {}
                Some(other) => problems.push(format!(
                    "{tool}: -32021 data.requiredCapabilities is {other}, not a ClientCapabilities object"
                )),
                None => problems.push(format!("{tool}: -32021 without data.requiredCapabilities")),
            }
            if let Some(status) = status.filter(|s| *s != 400) {
                problems.push(format!("{tool}: -32021 came with HTTP {status}, not 400"));
            }
            "-32021"
        }
        Rpc::Error(_) => "error",
        Rpc::Missing(_) => "no response",
    }
}

async fn gate(p: Probe, caps: ClientCapabilities, what: &str) -> Verdict {
    let modes = caps.elicit_modes();
    let tools = p.target().eliciting_tools();
    if tools.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for t in &tools {
        let req = p.call_request(
            format!("tools/call {} with capabilities {what}", t.name),
            t,
            &caps,
            None,
            None,
        );
        match p.send(req).await {
            Ok(r) => {
                let kind = judge_gated(
                    &r.rpc(),
                    p.status_is_servers().then_some(r.status),
                    modes,
                    &mut problems,
                    &t.name,
                );
                seen.push(format!("{}: {kind}", t.name));
            }
            Err(e) => problems.push(format!("{}: {e}", t.name)),
        }
    }
    if problems.is_empty() {
        Verdict::pass(format!("under {what}: {}", seen.join(", ")))
    } else {
        Verdict::fail(problems.join("; "))
    }
}

async fn cap_none(p: Probe) -> Verdict {
    gate(p, ClientCapabilities::none(), "{}").await
}

async fn cap_empty(p: Probe) -> Verdict {
    gate(
        p,
        ClientCapabilities::elicitation_empty(),
        "{elicitation:{}}",
    )
    .await
}

async fn cap_form(p: Probe) -> Verdict {
    gate(
        p,
        ClientCapabilities::with_modes(true, false),
        "{elicitation:{form:{}}}",
    )
    .await
}

async fn cap_url(p: Probe) -> Verdict {
    gate(
        p,
        ClientCapabilities::with_modes(false, true),
        "{elicitation:{url:{}}}",
    )
    .await
}

async fn cap_sampling(p: Probe) -> Verdict {
    let caps: ClientCapabilities =
        serde_json::from_value(json!({"sampling": {}})).unwrap_or_default();
    gate(p, caps, "{sampling:{}}").await
}

async fn no_carry_over(p: Probe) -> Verdict {
    let Some(t) = p.target().form_tools().next().cloned() else {
        return p.target().no_subject("no tool elicits in form mode");
    };
    let first = p.call_request(
        format!("tools/call {} #1 (all capabilities)", t.name),
        &t,
        &all_modes(),
        None,
        None,
    );
    let reply = match p.send(first).await {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply to the first call: {e}")),
    };
    let Some(ir) = reply
        .rpc()
        .result()
        .and_then(InputRequiredResult::from_value)
    else {
        return Verdict::skip("the first call did not answer input_required this time");
    };
    let answers = Value::Object(answers_for(&ir, p.settings().target.seed));
    let retry = p.call_request(
        format!("tools/call {} #2 retry declaring {{}}", t.name),
        &t,
        &ClientCapabilities::none(),
        Some(answers),
        ir.request_state.as_deref(),
    );
    match p.send(retry).await {
        Ok(r) => {
            let mut problems = Vec::new();
            let kind = judge_gated(
                &r.rpc(),
                p.status_is_servers().then_some(r.status),
                ElicitModes::default(),
                &mut problems,
                &t.name,
            );
            if problems.is_empty() {
                // A server that refuses every retry refuses this one too.
                Control::retry(&p, &t).await.judge(Verdict::pass(format!(
                    "the retry declaring {{}} got {kind} and no elicitation"
                )))
            } else {
                Verdict::fail(format!(
                    "capabilities carried over from the first request: {}",
                    problems.join("; ")
                ))
            }
        }
        Err(e) => Verdict::fail(format!("no reply to the retry: {e}")),
    }
}

/// The 2025-11-25 twins: the same gating on a session (§6.A 3–5).
pub fn legacy_checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-cap-none",
            "§2.4, §3.6 rule 2 / §6.A 3",
            Must,
            Legacy,
            "a client without the elicitation capability never gets elicitation/create",
            legacy_cap_none
        ),
        check!(
            "legacy-cap-form-only",
            "§2.4, §3.6 rule 2 / §6.A 4",
            Must,
            Legacy,
            "a client declaring {} or {form:{}} never gets URL mode",
            legacy_cap_form_only
        ),
        check!(
            "legacy-cap-url-only",
            "§2.4, §3.6 rule 2 / §6.A 5",
            Must,
            Legacy,
            "a client declaring {url:{}} never gets form mode (mode omitted counts as form)",
            legacy_cap_url_only
        ),
    ]
}

async fn legacy_gate(p: Probe, caps: ClientCapabilities, what: &str) -> Verdict {
    let allowed = caps.elicit_modes();
    let runs = match run_all(&p, &caps, true, Answer::Observe).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let mut problems = Vec::new();
    for (t, s) in &runs {
        let bad = undeclared_pushed(&s.elicitations, allowed);
        if bad.any() {
            let modes = [(bad.form, "form"), (bad.url, "URL")]
                .iter()
                .filter(|(b, _)| *b)
                .map(|(_, m)| *m)
                .collect::<Vec<_>>()
                .join(" and ");
            problems.push(format!(
                "{}: {modes} mode sent to a client declaring {what}",
                t.name
            ));
        }
    }
    if problems.is_empty() {
        Verdict::pass(format!(
            "no undeclared mode under {what} ({} tools)",
            runs.len()
        ))
    } else {
        Verdict::fail(problems.join("; "))
    }
}

async fn legacy_cap_none(p: Probe) -> Verdict {
    legacy_gate(p, ClientCapabilities::none(), "{}").await
}

async fn legacy_cap_form_only(p: Probe) -> Verdict {
    let a = legacy_gate(
        p.clone(),
        ClientCapabilities::elicitation_empty(),
        "{elicitation:{}}",
    )
    .await;
    if !matches!(a, Verdict::Pass(_)) {
        return a;
    }
    legacy_gate(
        p,
        ClientCapabilities::with_modes(true, false),
        "{elicitation:{form:{}}}",
    )
    .await
}

async fn legacy_cap_url_only(p: Probe) -> Verdict {
    legacy_gate(
        p,
        ClientCapabilities::with_modes(false, true),
        "{elicitation:{url:{}}}",
    )
    .await
}
