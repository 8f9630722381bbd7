//! One side effect per confirmed request, for every tool: the tool
//! framework's completion step, so no tool has to remember it.
//!
//! An *originating request* is one first `tools/call` (no `requestState`)
//! of one principal, with its tool and arguments. It gets a random origin
//! id, which travels sealed in every state issued for it (re-prompts
//! included) and, for 2025-11-25, lives in the call's task. The completion
//! key is `SHA-256(principal, request digest, origin id)`: however many
//! states were issued and however often a retry of any of them arrives,
//! the request completes once.
//!
//! Completing is one [`crate::store::Store::claim`] that takes the key
//! *and* records the outcome (the `CallToolResult`), before the action
//! runs and before the reply leaves. So exactly one of any number of
//! concurrent retries runs the action; every other retry, then or later,
//! gets the recorded outcome (as a `replayed` state error carrying it,
//! see [`super::modern`]); and with SQLite the outcome survives a crash
//! between the claim and the reply. A crash between the claim and the
//! action loses the action rather than repeating it: at most once.
//!
//! The record is kept until no state of the request can still open: the
//! state TTL after completion, plus [`ORIGIN_MARGIN`] for a state that a
//! retry racing the completion was still sealing. The
//! `replayable-side-effect` flaw skips all of this.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::store::{Claim, StoreError, now_ms};

use super::app::App;
use super::flaw::Flaw;
use super::tools::{Effect, ToolResult};

/// Extra time a completion record outlives the state TTL: longer than a
/// retry can take between finding the request not yet completed and
/// sealing its next state (SQLite's busy timeout is 5 s).
pub const ORIGIN_MARGIN: Duration = Duration::from_secs(10);

/// `_meta` key marking a 2025-11-25 result as the recorded outcome of an
/// earlier completion.
pub const REPEAT_META: &str = "dev.elicitkit/repeat";

/// A fresh origin id for a new originating request: 128 random bits, hex.
pub fn new_origin_id() -> String {
    let b: [u8; 16] = rand::random();
    hex(&b)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The completion key of one originating request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    key: String,
}

impl Origin {
    /// The key for `principal`'s request with `digest`, origin `id`.
    pub fn new(principal: &str, digest: &[u8; 32], id: &str) -> Origin {
        let mut h = Sha256::new();
        h.update(b"elicitkit/origin/v1\0");
        h.update(principal.as_bytes());
        h.update([0]);
        h.update(digest);
        h.update(id.as_bytes());
        Origin {
            key: format!("origin:{}", hex(&h.finalize())),
        }
    }
}

/// How a completion ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Finished {
    /// This retry completed the request: reply with this `CallToolResult`.
    First(Value),
    /// The request had completed before: its recorded `CallToolResult`.
    Repeat(Value),
}

/// The recorded outcome of `origin`, if it completed before.
pub async fn recorded(app: &App, origin: &Origin) -> Result<Option<Value>, StoreError> {
    if app.flaw(Flaw::ReplayableSideEffect) {
        return Ok(None);
    }
    let key = origin.key.clone();
    let taken = app.store_call(move |s| s.claimed(&key)).await?;
    Ok(taken.map(|t| t.outcome.unwrap_or(Value::Null)))
}

/// Completes `origin` with `result`: records it, then runs `effect` if
/// this was the first completion (see the module docs).
pub async fn finish(
    app: &App,
    origin: &Origin,
    result: ToolResult,
    effect: Option<Effect>,
) -> Result<Finished, StoreError> {
    let value = result.to_value();
    if app.flaw(Flaw::ReplayableSideEffect) {
        if let Some(e) = effect {
            e.count(&app.stats);
        }
        return Ok(Finished::First(value));
    }
    let keep = app.cfg.state_ttl + ORIGIN_MARGIN;
    let keep_until = now_ms().saturating_add(u64::try_from(keep.as_millis()).unwrap_or(u64::MAX));
    let (key, recorded) = (origin.key.clone(), value.clone());
    let claim = app
        .store_call(move |s| s.claim(&key, Some(&recorded), keep_until))
        .await?;
    match claim {
        Claim::Won => {
            if let Some(e) = effect {
                e.count(&app.stats);
            }
            Ok(Finished::First(value))
        }
        Claim::Taken(t) => Ok(Finished::Repeat(t.outcome.unwrap_or(Value::Null))),
    }
}

/// A recorded 2025-11-25 outcome, marked as a repeat in its `_meta`.
pub fn marked_repeat(mut outcome: Value) -> Value {
    if let Some(o) = outcome.as_object_mut() {
        o.insert("_meta".into(), json!({ REPEAT_META: true }));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_per_principal_request_and_origin() {
        let a = Origin::new("alice", &[1; 32], "o1");
        assert_eq!(a, Origin::new("alice", &[1; 32], "o1"));
        assert_ne!(a, Origin::new("bob", &[1; 32], "o1"));
        assert_ne!(a, Origin::new("alice", &[2; 32], "o1"));
        assert_ne!(a, Origin::new("alice", &[1; 32], "o2"));
        // The separator keeps principal and id from sliding into each other.
        assert_ne!(
            Origin::new("ab", &[1; 32], "c"),
            Origin::new("a", &[1; 32], "bc")
        );
        assert!(a.key.len() <= 1024);
        assert_ne!(new_origin_id(), new_origin_id());
    }
}
