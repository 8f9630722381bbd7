//! What the memory store's budget sustains: the completed round trips per
//! second, by flow kind, that fill it and no more, given how long each kind
//! keeps what it leaves (a completion claim until the last state of its
//! request expires; a URL flow's record and a 2025-11-25 elicitation's
//! until their expiry plus `--retention`). `serve` logs it at start, so an
//! operator sees before scaling out whether the budget or the CPU sets the
//! ceiling.
//!
//! The bytes are the store's own count of a representative flow's records
//! (the same count its budget refuses by), not a constant.

use std::time::Duration;

use serde_json::{Value, json};

use super::config::{ORIGIN_MARGIN, ServerConfig};
use crate::store::{Holding, MemoryStore, Mode, NewRecord, Outcome, Store as _};

/// Bytes one completed round trip leaves, by kind, as the store counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    /// A completion claim with a one-line text outcome (every 2026-07-28
    /// completion without a flow record).
    pub claim: u64,
    /// A URL flow's settled record (its page, the masked key) with the
    /// completion claim it keeps (the `CallToolResult` with the masked key).
    pub url_flow: u64,
    /// The same record once the claim's keep time passed (it goes; the
    /// record stays for its retention).
    pub url_record: u64,
    /// A 2025-11-25 form elicitation's settled record with the completion
    /// claim it keeps.
    pub legacy_form: u64,
    /// The same record once the claim went.
    pub form_record: u64,
}

impl Kept {
    /// Counts a representative flow of each kind in a scratch store.
    pub fn measure() -> Kept {
        let deployed = text_result("Deployed web to production.");
        let claims = held(&|s, i| {
            let _ = s.claim(&origin(i), Some(&deployed), CLAIM_KEPT_UNTIL);
        })[0];
        let url = flow_kept(
            Mode::Url,
            Some("c".repeat(32)),
            json!({"masked": "…wxyz"}),
            billed("…wxyz"),
        );
        let form = flow_kept(Mode::Form, None, json!({"answered": true}), deployed);
        Kept {
            claim: claims.claim_bytes / N.max(claims.claims),
            url_flow: url[0],
            url_record: url[1],
            legacy_form: form[0],
            form_record: form[1],
        }
    }
}

/// Flows counted, for an average.
const N: u64 = 256;

/// The flows' times, as today's clock packs them (the store keeps times as
/// varints, so tiny ones would count less than a real record): created at
/// [`T0`], expiring 10 minutes later, settled after 2 s, the claim kept
/// until its request's last state expired.
const T0: u64 = 1_765_000_000_000;
const CLAIM_KEPT_UNTIL: u64 = T0 + 645_000;

/// What the store holds after `fill` ran for each of [`N`] flows, and after
/// the claims' keep time passed but not the records' retention.
fn held(fill: &dyn Fn(&MemoryStore, u64)) -> [Holding; 2] {
    let s = MemoryStore::new();
    for i in 0..N {
        fill(&s, i);
    }
    let now = s.holding().unwrap_or_default();
    let _ = s.purge(CLAIM_KEPT_UNTIL + 1, u64::MAX / 4);
    [now, s.holding().unwrap_or_default()]
}

fn origin(i: u64) -> String {
    format!("origin:{i:064x}")
}

/// A `CallToolResult` of one text item.
fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

/// `connect_billing`'s result for a key masked as `shown`.
fn billed(shown: &str) -> Value {
    let mut v = text_result(&format!("Billing connected with key {shown}."));
    v["structuredContent"] = json!({"connected": true, "key": shown});
    v
}

/// Bytes per flow of `mode` whose record (created for its request's
/// origin) settled with `result` and whose request then completed (claimed)
/// with `outcome`: while the claim is kept, and after (the record alone).
/// Whatever of a flow's claim was not kept in its record counts too.
fn flow_kept(mode: Mode, csrf: Option<String>, result: Value, outcome: Value) -> [u64; 2] {
    let [with, alone] = held(&|s, i| {
        let new = NewRecord {
            principal: format!("ek-user-{:04}", i % 1000),
            client_id: None,
            request_digest: [7; 32],
            mode,
            created_at_ms: T0,
            expires_at_ms: T0 + 600_000,
            csrf_token: csrf.clone(),
            origin: Some(origin(i)),
        };
        if let Ok(r) = s.create(&new) {
            let done = Outcome::Completed(result.clone());
            let _ = s.complete(&r.id, &new.principal, done, T0 + 2_000);
            let _ = s.claim(&origin(i), Some(&outcome), CLAIM_KEPT_UNTIL);
        }
    });
    let records = |h: &Holding| match mode {
        Mode::Url => h.url_record_bytes,
        Mode::Form => h.form_record_bytes,
    };
    [
        (records(&with) + with.claim_bytes) / N,
        (records(&alone) + alone.claim_bytes) / N,
    ]
}

/// Round trips per second a budget of `bytes` sustains, by kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sustains {
    /// 2026-07-28 form round trips (one claim each).
    pub form: f64,
    /// URL flows (a record keeping its claim).
    pub url: f64,
    /// 2025-11-25 form elicitations (a record keeping its claim).
    pub legacy_form: f64,
}

/// How long `cfg` keeps a claim, a URL flow's record and a 2025-11-25
/// elicitation's record (each until the sweep after it may go).
fn lives(cfg: &ServerConfig) -> [Duration; 3] {
    [
        cfg.state_ttl + cfg.clock_skew + ORIGIN_MARGIN + cfg.sweep_interval,
        cfg.state_ttl + cfg.retention + cfg.sweep_interval,
        cfg.elicitation_timeout + cfg.retention + cfg.sweep_interval,
    ]
}

/// What `bytes` of budget sustains under `cfg`'s lifetimes.
pub fn sustains(cfg: &ServerConfig, kept: Kept, bytes: u64) -> Sustains {
    let [claim_life, url_life, legacy_life] = lives(cfg).map(|d| d.as_secs_f64());
    let claim = kept.claim as f64;
    // A flow's record keeps its claim until the claim's keep time, then
    // stays alone for the rest of its life; a claim that outlives the
    // record moves to the claims table for the rest of its own.
    let flow = |with: u64, alone: u64, life: f64| {
        let (with, alone) = (with as f64, alone as f64);
        with * life.min(claim_life)
            + alone * (life - claim_life).max(0.0)
            + claim * (claim_life - life).max(0.0)
    };
    let rate = |per_second_bytes: f64| bytes as f64 / per_second_bytes;
    Sustains {
        form: rate(claim * claim_life),
        url: rate(flow(kept.url_flow, kept.url_record, url_life)),
        legacy_form: rate(flow(kept.legacy_form, kept.form_record, legacy_life)),
    }
}

/// The line `serve` logs at start.
pub fn describe(cfg: &ServerConfig) -> String {
    let kept = Kept::measure();
    let s = sustains(cfg, kept, cfg.store_memory_budget);
    let [claim_life, url_life, legacy_life] = lives(cfg).map(|d| d.as_secs());
    format!(
        "the store's memory budget ({} MiB) holds, sustained: {:.0} completed 2026-07-28 form round \
         trips/s ({} B each, kept {} s), or {:.0} URL flows/s ({} B each while its completion is \
         kept, {} B after, kept {} s), or {:.0} 2025-11-25 elicitations/s ({} B, then {} B, kept \
         {} s); past it new flows get 503 \
         (--store-memory-budget, --state-ttl, --retention)",
        cfg.store_memory_budget >> 20,
        s.form,
        kept.claim,
        claim_life,
        s.url,
        kept.url_flow,
        kept.url_record,
        url_life,
        s.legacy_form,
        kept.legacy_form,
        kept.form_record,
        legacy_life,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_costs_what_the_store_counts_and_no_more_than_its_budget() {
        // A flow's record and its claim as two entries counted 337 B (URL)
        // and 281 B (2025-11-25 form) here; as one entry, 265 and 217; with
        // the key in the entry (a slot of one pointer), 244 and 196; packed,
        // the digest forgotten at settling, 180 and 148 (196 and 164 at
        // today's clock, whose times pack longer than the tiny ones this
        // test used then); the times in the packed parts (a box of 32 B)
        // and outcomes packed rather than JSON, 164 and 132.
        let k = Kept::measure();
        assert!(k.claim > 40 && k.claim <= 112, "{k:?}");
        assert!(k.url_flow > k.legacy_form && k.url_flow <= 200, "{k:?}");
        assert!(k.legacy_form > k.claim && k.legacy_form <= 200, "{k:?}");
        // Past its keep time the claim goes and the record shrinks back.
        assert!(k.url_record + 40 < k.url_flow, "{k:?}");
        assert!(k.form_record + 30 < k.legacy_form, "{k:?}");
    }

    /// The answers `load` gets, not only the representative flow's: the
    /// default `confirm: false` answer's longer outcome (234 B on main's
    /// layout), the masked key of the key the load types (`ekSECRET…`, no
    /// prefix) and of one with a prefix (`sk-…`), a 43-character CSRF token.
    #[test]
    fn the_loads_real_answers_stay_within_the_budget_too() {
        let declined = text_result("Deployment of web not confirmed; nothing was deployed.");
        let answered = json!({"answered": true});
        let [legacy, _] = flow_kept(Mode::Form, None, answered, declined);
        assert!(legacy <= 200, "2025-11-25 form, confirm false: {legacy} B");
        for shown in ["…abcd", "sk-…abcd"] {
            let csrf = Some("c".repeat(43));
            let [url, _] = flow_kept(Mode::Url, csrf, json!({"masked": shown}), billed(shown));
            // 196 B for both before outcomes were packed and the times
            // moved into the parts; a margin under 200 for the allocator.
            assert!(url <= 180, "URL flow, key {shown}: {url} B");
        }
    }

    #[test]
    fn a_budget_sustains_less_the_longer_things_are_kept() {
        let kept = Kept {
            claim: 100,
            url_flow: 200,
            url_record: 120,
            legacy_form: 150,
            form_record: 90,
        };
        let cfg = ServerConfig::default();
        let s = sustains(&cfg, kept, 1 << 30);
        // 1 GiB / (100 B x 645 s).
        let form = (1u64 << 30) as f64 / (100.0 * 645.0);
        assert!((s.form - form).abs() < 1.0, "{s:?}");
        assert!(s.url < s.legacy_form && s.legacy_form < s.form, "{s:?}");
        // A URL flow: 200 B while its claim is kept (645 s), 120 B for the
        // rest of its record's 1,230 s.
        let [claim_life, url_life, _] = lives(&cfg).map(|d| d.as_secs_f64());
        let url = (1u64 << 30) as f64 / (200.0 * claim_life + 120.0 * (url_life - claim_life));
        assert!((s.url - url).abs() < 1.0, "{s:?} {url}");
        // No retention: the claim outlives the record, in the claims table.
        let none = ServerConfig {
            retention: Duration::ZERO,
            ..ServerConfig::default()
        };
        let [claim_life, url_life, _] = lives(&none).map(|d| d.as_secs_f64());
        let url = (1u64 << 30) as f64 / (200.0 * url_life + 100.0 * (claim_life - url_life));
        assert!((sustains(&none, kept, 1 << 30).url - url).abs() < 1.0);
        let longer = ServerConfig {
            retention: Duration::from_secs(1200),
            ..ServerConfig::default()
        };
        assert!(sustains(&longer, kept, 1 << 30).url < s.url);
        assert!(describe(&cfg).contains("1024 MiB"), "{}", describe(&cfg));
    }
}
