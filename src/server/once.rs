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
//! The record is kept until no state of the request can still open: past
//! the later of the presented state's own sealed expiry (plus the clock
//! skew another instance's clock may have) and this instance's state TTL
//! after completion, plus [`ORIGIN_MARGIN`] for a state that a retry
//! racing the completion was still sealing. The presented state's expiry
//! counts whatever this instance's TTL, so a record written by a
//! short-TTL instance still covers a state sealed by a long-TTL one. The
//! `replayable-side-effect` flaw skips all of this.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::store::{Claim, StoreError};

use super::app::App;
use super::flaw::Flaw;
use super::tools::{Effect, ToolResult};

pub use super::config::ORIGIN_MARGIN;

/// `_meta` key marking a 2025-11-25 result as the recorded outcome of an
/// earlier completion.
pub const REPEAT_META: &str = "dev.elicitkit/repeat";

/// A fresh origin id for a new originating request: 128 random bits, hex.
pub fn new_origin_id() -> String {
    let b: [u8; 16] = rand::random();
    crate::hex::encode(&b)
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
            key: format!("origin:{}", crate::hex::encode(&h.finalize())),
        }
    }

    /// The completion key ([`crate::store::Store::claim`]'s).
    pub fn key(&self) -> &str {
        &self.key
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

/// Until when (Unix ms) the completion record of a request completed at
/// `now` must be kept: see the module docs. `state_expires_at` is the
/// sealed expiry of the state the completing retry presented, if any.
pub fn keep_until(now: u64, ttl: Duration, skew: Duration, state_expires_at: Option<u64>) -> u64 {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let own = now.saturating_add(ms(ttl));
    let presented = state_expires_at.map_or(0, |e| e.saturating_add(ms(skew)));
    own.max(presented).saturating_add(ms(ORIGIN_MARGIN))
}

/// Completes `origin` with `result`: records it, then runs `effect` if
/// this was the first completion (see the module docs).
/// `state_expires_at` is the sealed expiry of the presented state;
/// `epoch` the store epoch the request began in (0: not checked), so a
/// store that lost its data since refuses it (`EpochChanged`) rather than
/// run a completed request again.
pub async fn finish(
    app: &App,
    origin: &Origin,
    result: ToolResult,
    effect: Option<Effect>,
    state_expires_at: Option<u64>,
    epoch: u64,
) -> Result<Finished, StoreError> {
    let value = result.to_value();
    if app.flaw(Flaw::ReplayableSideEffect) {
        if let Some(e) = effect {
            e.count(&app.stats);
        }
        return Ok(Finished::First(value));
    }
    let keep_until = keep_until(
        app.now_ms(),
        app.cfg.state_ttl,
        app.cfg.clock_skew,
        state_expires_at,
    );
    let (key, recorded) = (origin.key.clone(), value.clone());
    let claim = app
        .store_call(move |s| s.claim_in_epoch(&key, Some(&recorded), keep_until, epoch))
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

    #[test]
    fn the_record_outlives_the_presented_state_whatever_the_local_ttl() {
        let (now, skew) = (1_000_000, Duration::from_secs(5));
        let margin = ORIGIN_MARGIN.as_millis() as u64;
        // A 60 s state completed on a 2 s instance: kept past its own
        // expiry plus skew, not just 2 s.
        let expiry = now + 60_000;
        let k = keep_until(now, Duration::from_secs(2), skew, Some(expiry));
        assert_eq!(k, expiry + 5_000 + margin);
        // A short state on a long-TTL instance: the local TTL still holds
        // (states a racing retry seals here).
        let k = keep_until(now, Duration::from_secs(600), skew, Some(now + 1_000));
        assert_eq!(k, now + 600_000 + margin);
        // No state (2025-11-25 calls): the local TTL.
        assert_eq!(
            keep_until(now, Duration::from_secs(2), skew, None),
            now + 2_000 + margin
        );
        // No overflow at the edges.
        assert_eq!(
            keep_until(u64::MAX, Duration::MAX, skew, Some(u64::MAX)),
            u64::MAX
        );
    }
}
