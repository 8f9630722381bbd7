//! The server names itself on its 2026-07-28 results (§4.2): with the
//! handshake gone, `_meta["io.modelcontextprotocol/serverInfo"]` (an
//! `Implementation`: `name` and `version`) on each result is where a client
//! learns which server answered. A SHOULD on results; `server/discover`'s
//! result shape carries it too (§4.1).

use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::Rpc;
use crate::protocol::mrtr::{META_SERVER_INFO, METHOD_DISCOVER};
use serde_json::{Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-server-info-meta",
        "§4.2, §4.1",
        Should,
        Modern,
        "results carry _meta io.modelcontextprotocol/serverInfo with name and version",
        server_info_meta
    )]
}

/// What is wrong with the serverInfo of `result`, if anything.
fn problem(result: &Value) -> Option<String> {
    let Some(info) = result.get("_meta").and_then(|m| m.get(META_SERVER_INFO)) else {
        return Some(format!("no _meta[{META_SERVER_INFO:?}]"));
    };
    let missing: Vec<&str> = ["name", "version"]
        .into_iter()
        .filter(|k| info.get(*k).and_then(Value::as_str).is_none())
        .collect();
    (!missing.is_empty())
        .then(|| format!("serverInfo {info} has no string {}", missing.join(" or ")))
}

async fn server_info_meta(p: Probe) -> Verdict {
    let mut methods = vec![METHOD_DISCOVER];
    let plain = p.target().plain_method();
    if plain != METHOD_DISCOVER {
        methods.push(plain);
    }
    let mut seen = Vec::new();
    let mut wrong = Vec::new();
    for method in methods {
        match p.modern(method, method, json!({}), &all_modes()).await {
            Ok(r) => match r.rpc() {
                Rpc::Result(v) => match problem(&v) {
                    None => seen.push(format!(
                        "{method}: {}",
                        v["_meta"][META_SERVER_INFO]["name"].as_str().unwrap_or("?")
                    )),
                    Some(why) => wrong.push(format!("{method}: {why}")),
                },
                other => seen.push(format!("{method}: {} (not judged)", other.describe())),
            },
            Err(e) => return Verdict::fail(format!("{method}: no reply: {e}")),
        }
    }
    if !wrong.is_empty() {
        return Verdict::fail(wrong.join("; "))
            .expecting("every result names the server in _meta[\"io.modelcontextprotocol/serverInfo\"] ({name, version})");
    }
    if seen.iter().all(|s| s.ends_with("(not judged)")) {
        return Verdict::info(format!(
            "could not tell: no result to read ({})",
            seen.join("; ")
        ));
    }
    Verdict::pass(format!("serverInfo on {}", seen.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_info_needs_name_and_version() {
        assert!(problem(&json!({})).is_some());
        assert!(problem(&json!({"_meta": {META_SERVER_INFO: {"name": "x"}}})).is_some());
        assert!(
            problem(&json!({"_meta": {META_SERVER_INFO: {"name": "x", "version": "1"}}})).is_none()
        );
    }
}
