//! Retired messages (§4.1, §4.9, §6.B 22): a 2026-07-28 server never sends
//! `-32042`, `notifications/elicitation/complete` or an undefined code from
//! the reserved range, not even when URL mode is needed by a form-only
//! client (the case where `-32042` used to be the answer).

use super::flows::config;
use super::model::Verdict;
use super::probe::Probe;
use super::registry::{Check, check};
use crate::client::policy::AnswerPolicy;
use crate::protocol::ClientCapabilities;
use crate::protocol::body::decode_body;
use crate::protocol::codes;
use crate::protocol::jsonrpc::{Message, Outcome as RpcOutcome};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-no-retired-messages",
        "§4.1, §4.9 / §6.B 22",
        Must,
        Modern,
        "no -32042, no notifications/elicitation/complete, no undefined reserved codes",
        retired
    )]
}

fn scan(body: &[u8], what: &str, problems: &mut Vec<String>) {
    let Ok(decoded) = decode_body(None, body) else {
        return;
    };
    for m in decoded.messages {
        match m {
            Message::Notification(n) if n.method == "notifications/elicitation/complete" => {
                problems.push(format!(
                    "{what}: notifications/elicitation/complete (removed in 2026-07-28)"
                ))
            }
            Message::Response(r) => {
                if let RpcOutcome::Error(e) = r.outcome {
                    if e.code == codes::URL_ELICITATION_REQUIRED {
                        problems.push(format!("{what}: error -32042 (retired)"));
                    } else if codes::is_undefined_reserved(e.code)
                        || e.code == codes::RETIRED_RESOURCE_NOT_FOUND
                    {
                        problems.push(format!(
                            "{what}: error {} (undefined or retired reserved code)",
                            e.code
                        ));
                    }
                }
            }
            _ => {}
        }
    }
}

async fn retired(p: Probe) -> Verdict {
    let tools = p.target().page_safe_tools();
    if tools.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let mut problems = Vec::new();
    let mut replies = 0;
    for t in &tools {
        let (_, bodies) = p
            .flow_with_bodies(t.call(), config(&p, AnswerPolicy::AcceptValid))
            .await;
        replies += bodies.len();
        for b in &bodies {
            scan(b, &t.name, &mut problems);
        }
        if t.modes().url {
            let mut cfg = config(&p, AnswerPolicy::AcceptValid);
            cfg.capabilities = ClientCapabilities::with_modes(true, false);
            let (_, bodies) = p.flow_with_bodies(t.call(), cfg).await;
            replies += bodies.len();
            for b in &bodies {
                scan(b, &format!("{} (form-only client)", t.name), &mut problems);
            }
        }
    }
    if problems.is_empty() {
        Verdict::pass(format!("{replies} replies, none with a retired message"))
    } else {
        Verdict::fail(problems.join("; "))
    }
}
