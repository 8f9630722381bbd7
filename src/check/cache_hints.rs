//! Caching hints on 2026-07-28 results (§4.4a, SEP-2549; the spec page
//! `server/utilities/caching`): `server/discover`, `tools/list`,
//! `prompts/list`, `resources/list`, `resources/templates/list` and
//! `resources/read` results with `resultType: "complete"` MUST carry them.
//! In `schema/2026-07-28/schema.ts` these results extend `CacheableResult`,
//! whose `ttlMs` (a number, `@minimum 0`; the page: an integer of
//! milliseconds) and `cacheScope` (`"public" | "private"`) are both required.
//! The read is of the first listed resource ([`super::offered`]); a result
//! without `resultType` reads as complete unless it asks for input (§4.4;
//! `mrtr-result-type` reports the missing declaration). `prompts/get` is
//! not cacheable (§4.4a lists it nowhere). Methods the server does not
//! offer (`-32601`) are left out.

use super::judge::asks_for_input;
use super::model::Verdict;
use super::offered;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::Rpc;
use serde_json::{Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-cache-hints",
        "§4.4a / SEP-2549",
        Must,
        Modern,
        "list, read and discover results carry ttlMs (integer ≥ 0) and cacheScope (public or private)",
        cache_hints,
        http("HTTP caching");
        scenario "caching"
    )]
}

/// What is wrong with a result's hints, if anything.
pub fn hint_problems(result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match result.get("ttlMs") {
        None => out.push("no ttlMs".to_owned()),
        Some(v) if v.as_u64().is_some() => {}
        Some(v) => out.push(format!("ttlMs is {v}, not an integer ≥ 0")),
    }
    match result.get("cacheScope").and_then(Value::as_str) {
        Some("public" | "private") => {}
        Some(s) => out.push(format!(
            "cacheScope is {s:?}, not \"public\" or \"private\""
        )),
        None => out.push("no cacheScope".to_owned()),
    }
    out
}

async fn cache_hints(p: Probe) -> Verdict {
    let caps = all_modes();
    let mut problems = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut read = None;
    let mut notes = Vec::new();
    for method in [
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let Ok(r) = p.modern(method, method, json!({}), &caps).await else {
            continue;
        };
        let rpc = r.rpc();
        if method == "resources/list" {
            match offered::first_read(&rpc) {
                Ok(f) => read = Some(f),
                Err(why) => notes.push(why.into()),
            }
        }
        let Rpc::Result(v) = rpc else { continue };
        if asks_for_input(&v) {
            continue;
        }
        seen.push(method.to_owned());
        let bad = hint_problems(&v);
        if !bad.is_empty() {
            problems.push(format!("{method}: {}", bad.join(", ")));
        }
    }
    if let Some(f) = read
        && let Ok(r) = p.modern(f.label.clone(), f.method, f.params, &caps).await
    {
        match r.rpc() {
            Rpc::Result(v) if asks_for_input(&v) => notes.push(format!(
                "{} asks for input: its final result not inspected",
                f.label
            )),
            Rpc::Result(v) => {
                let bad = hint_problems(&v);
                if !bad.is_empty() {
                    problems.push(format!("{}: {}", f.label, bad.join(", ")));
                }
                seen.push(f.label);
            }
            other => notes.push(format!("{} answered {}", f.label, other.describe())),
        }
    }
    if seen.is_empty() {
        return Verdict::skip("no cacheable method answered with a result");
    }
    if problems.is_empty() {
        return Verdict::pass(format!(
            "ttlMs and cacheScope on every result of {}{}",
            seen.join(", "),
            offered::aside(&notes)
        ));
    }
    Verdict::fail(problems.join("; ")).expecting(
        "every complete result of server/discover, tools/list, prompts/list, resources/list, \
         resources/templates/list and resources/read carries ttlMs (integer ≥ 0) and cacheScope \
         (\"public\" or \"private\")",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_judged_by_the_schema() {
        assert!(hint_problems(&json!({"ttlMs":0,"cacheScope":"private"})).is_empty());
        assert_eq!(hint_problems(&json!({})).len(), 2);
        assert_eq!(
            hint_problems(&json!({"ttlMs":-1,"cacheScope":"public"})).len(),
            1
        );
        assert_eq!(
            hint_problems(&json!({"ttlMs":1.5,"cacheScope":"shared"})).len(),
            2
        );
    }
}
