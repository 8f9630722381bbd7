//! Isolation of concurrent clients (GHSA-345p-7cg4-v4c7): a short burst of
//! clients calling the same form tool at once, each numbering its JSON-RPC
//! ids from 1 (as fresh clients do, so the ids collide on purpose) and
//! writing its own round-trip marker into a free string argument. A reply
//! carrying another round trip's marker was sent to the wrong client.
//!
//! The burst runs on the load generator's own round trips
//! ([`crate::load::exec::round_trip::LoadContext`]): one ownership oracle
//! ([`crate::client::marker`]) for `load` and `check`. A server that never
//! echoes the argument back cannot be judged, and the row says so.

use super::model::Verdict;
use super::probe::{Probe, ToolProfile};
use super::registry::{Check, check};
use crate::client::{ErrorClass, Outcome, RoundTrip, marker};
use crate::load::exec::round_trip::LoadContext;
use crate::load::metrics::recorder::Recorder;
use crate::load::spec::generate::{self, Options};
use crate::load::spec::principals::Principals;
use crate::protocol::Generation;
use std::sync::Arc;
use std::time::Duration;

/// Clients in the burst.
pub const CLIENTS: usize = 8;

/// Round trips each client runs, one after another.
pub const ROUNDS: usize = 4;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-isolation",
            "JSON-RPC 2.0 §5 response id / GHSA-345p-7cg4-v4c7",
            Must,
            Modern,
            "concurrent clients reusing the same JSON-RPC ids each get their own replies (none is sent to another client)",
            modern
        ),
        check!(
            "legacy-isolation",
            "JSON-RPC 2.0 §5 response id / GHSA-345p-7cg4-v4c7",
            Must,
            Legacy,
            "concurrent sessions reusing the same JSON-RPC ids each get their own replies and elicitations",
            legacy
        ),
    ]
}

async fn modern(p: Probe) -> Verdict {
    burst(p, Generation::Modern).await
}

async fn legacy(p: Probe) -> Verdict {
    burst(p, Generation::Legacy).await
}

/// A form tool with an argument that can carry a marker (read-only tools
/// first, single-use ones last), and that argument.
fn subject(p: &Probe) -> Option<(ToolProfile, String)> {
    let t = p.target();
    let mut tools: Vec<&ToolProfile> = t
        .form_tools()
        .filter(|tool| t.off_origin(tool).is_none())
        .collect();
    // The burst completes its tool 32 times: the least harmful first.
    tools.sort_by_key(|tool| (!tool.read_only, tool.single_use));
    tools.into_iter().find_map(|tool| {
        let schema = tool.descriptor.get("inputSchema")?;
        marker::free_string_argument(schema, &tool.arguments).map(|a| (tool.clone(), a))
    })
}

async fn burst(p: Probe, generation: Generation) -> Verdict {
    let t = p.target();
    if t.form_tools().next().is_none() {
        return t.no_subject("no tool elicits a form");
    }
    let Some((tool, arg)) = subject(&p) else {
        return Verdict::info(
            "could not tell: no form tool takes a free string argument (type string, no enum, \
             pattern or format) to carry a per-request marker, so no reply can be attributed",
        );
    };
    let mcp_url = t.settings.target.mcp_url.clone();
    let opts = Options {
        duration: Duration::from_secs(5),
        users: CLIENTS,
        timeout: p.request_timeout(),
        token: t.settings.target.principal.clone(),
        principals: Principals::Single,
    };
    let mut plan = generate::base_plan(&mcp_url, &opts);
    plan.name = "isolation".into();
    plan.scenarios = vec![generate::accept_scenario(&tool, generation)];
    let Ok(recorder) = Recorder::new(plan.interval, &[]) else {
        return Verdict::skip("could not set up the burst's recorder");
    };
    let http = t.http().clone();
    let ctx =
        Arc::new(LoadContext::new(plan, mcp_url, Arc::new(recorder)).mark(&[Some(arg.clone())]));
    let clients = (0..CLIENTS).map(|user| {
        let (ctx, http) = (ctx.clone(), http.clone());
        async move {
            let mut done = Vec::with_capacity(ROUNDS);
            for _ in 0..ROUNDS {
                if let Some((rt, _)) = ctx.round_trip(&http, 0, Some(user)).await {
                    done.push(rt);
                }
            }
            done
        }
    });
    let done: Vec<RoundTrip> = futures::future::join_all(clients)
        .await
        .into_iter()
        .flatten()
        .collect();
    ctx.close_legacy_sessions().await;
    judge(&tool.name, &arg, &done)
}

/// The verdict on a burst's round trips.
fn judge(tool: &str, arg: &str, done: &[RoundTrip]) -> Verdict {
    let misrouted: Vec<&str> = done
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Unexpected {
                class: ErrorClass::Misrouted,
                message,
            } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    let attributed = done.iter().filter(|r| r.attributed).count();
    let burst = format!(
        "{} round trips of {tool} by {CLIENTS} concurrent clients (ids from 1, a marker in \
         {arg:?})",
        done.len()
    );
    if let Some(first) = misrouted.first() {
        return Verdict::fail(format!(
            "{burst}: {} got a reply meant for another request; first: {first}",
            misrouted.len()
        ));
    }
    if attributed == 0 {
        return Verdict::info(format!(
            "could not tell: {burst}; no reply echoed its marker, so none can be attributed"
        ));
    }
    Verdict::pass(format!(
        "{burst}: {attributed} carried their own marker back, none another's"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(outcome: Outcome, attributed: bool) -> RoundTrip {
        let mut r = RoundTrip::new("x");
        r.outcome = outcome;
        r.attributed = attributed;
        r
    }

    #[test]
    fn a_foreign_reply_fails_no_marker_cannot_tell_and_own_markers_pass() {
        let ok = || rt(Outcome::Success, true);
        let foreign = rt(
            Outcome::unexpected(ErrorClass::Misrouted, "carries ek-rt-3's marker"),
            false,
        );
        let v = judge("deploy", "service", &[ok(), foreign, ok()]);
        assert!(matches!(&v, Verdict::Violation { .. }), "{v:?}");
        assert!(format!("{v:?}").contains("ek-rt-3"));
        let v = judge("deploy", "service", &[rt(Outcome::Success, false)]);
        assert!(format!("{v:?}").contains("could not tell"), "{v:?}");
        assert!(matches!(
            judge("deploy", "service", &[ok(), ok()]),
            Verdict::Pass(_)
        ));
    }
}
