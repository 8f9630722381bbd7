//! The 2025-11-25 standalone GET stream (§3.2, §6.A 16): with the session's
//! GET stream open, as a client may keep it, each eliciting tool is called
//! and every `elicitation/create` is answered wherever it arrives, so an
//! elicitation sent on the GET stream is judged like one on the POST
//! stream (the call must still finish). An elicitation that belongs to a
//! tool call but arrives only on the GET stream is a WARN: it SHOULD travel
//! on that call's own POST stream (`legacy-stream-rules` judges the same
//! clause on its one call). A server without a GET stream (405) is within
//! the rules. Every other check calls a tool discovery saw push on the GET
//! stream with that stream open too, so it is judged like any other.

use super::legacy_session::{Answer, CallOptions, call_once};
use super::model::Verdict;
use super::probe::Probe;
use super::registry::{Check, check};
use crate::client::raw::Rpc;
use crate::findings::Severity;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "legacy-get-stream",
        "§3.2 / §6.A 16",
        Should,
        Legacy,
        "with the GET stream open, tool-call elicitations still travel on the call's POST stream and the call finishes",
        get_stream,
        http("the standalone GET stream")
    )]
}

async fn get_stream(p: Probe) -> Verdict {
    let tools = p.target().page_safe_tools();
    if tools.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let opts = CallOptions {
        get_stream: true,
        ..Default::default()
    };
    let mut only_get = Vec::new();
    let mut broken = Vec::new();
    let mut fine = Vec::new();
    let mut get_statuses = Vec::new();
    for t in &tools {
        let accept = Answer::Accept {
            complete_pages: true,
        };
        let st = match call_once(&p, t, accept, &opts).await {
            Ok(st) => st,
            Err(e) => return Verdict::skip(e),
        };
        get_statuses.push(match st.get_status {
            Some(c) => format!("{}: GET stream HTTP {c}", t.name),
            None => format!("{}: GET stream did not open", t.name),
        });
        let n = st.elicitations.len();
        if st.via_get > 0 && st.via_get == n {
            only_get.push(format!(
                "{}: all {n} elicitation(s) arrived on the GET stream, none on the call's POST stream",
                t.name
            ));
        } else if st.via_get > 0 {
            only_get.push(format!(
                "{}: {} of {n} elicitation(s) arrived on the GET stream",
                t.name, st.via_get
            ));
        }
        match (&st.response, &st.failure) {
            (Some(Rpc::Result(_) | Rpc::Error(_)), _) => fine.push(format!(
                "{}: {n} elicitation(s), {} via GET; the call finished",
                t.name, st.via_get
            )),
            (Some(Rpc::Missing(why)), _) | (None, Some(why)) => {
                broken.push(format!("{}: {why}", t.name))
            }
            (None, None) => broken.push(format!("{}: no response", t.name)),
        }
    }
    if !broken.is_empty() {
        return Verdict::violation(
            Severity::Must,
            format!(
                "with the GET stream open, calls did not finish although every elicitation \
                 was answered: {} ({})",
                broken.join("; "),
                get_statuses.join(", ")
            ),
        )
        .expecting(
            "the call's response once its elicitations are answered, whichever stream carried them",
        );
    }
    if !only_get.is_empty() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "tool-call elicitations on the standalone GET stream: {} (they SHOULD travel \
                 on the call's POST stream, where they relate to the request)",
                only_get.join("; ")
            ),
        )
        .expecting("elicitations of a tool call on that call's POST stream");
    }
    Verdict::pass(format!("{} ({})", fine.join("; "), get_statuses.join(", ")))
}
