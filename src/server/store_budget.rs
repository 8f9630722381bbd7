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

use serde_json::json;

use super::config::{ORIGIN_MARGIN, ServerConfig};
use crate::store::{Holding, MemoryStore, Mode, NewRecord, Outcome, Store as _};

/// Bytes one completed round trip leaves, by kind, as the store counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    /// A completion claim with a one-line text outcome (every 2026-07-28
    /// completion).
    pub claim: u64,
    /// A URL flow's settled record (its page, CSRF token, masked key).
    pub url_record: u64,
    /// A 2025-11-25 form elicitation's settled record.
    pub form_record: u64,
}

impl Kept {
    /// Counts a representative flow of each kind in a scratch store.
    pub fn measure() -> Kept {
        const N: u64 = 256;
        let held = |fill: &dyn Fn(&MemoryStore, u64)| -> Holding {
            let s = MemoryStore::new();
            for i in 0..N {
                fill(&s, i);
            }
            s.holding().unwrap_or_default()
        };
        let claims = held(&|s, i| {
            let outcome = json!({"content": [{"type": "text", "text": "Deployed web to production."}], "isError": false});
            let _ = s.claim(&format!("origin:{i:064x}"), Some(&outcome), 1);
        });
        let record = |mode: Mode, csrf: Option<String>, result: serde_json::Value| {
            move |s: &MemoryStore, i: u64| {
                let new = NewRecord {
                    principal: format!("ek-user-{:04}", i % 1000),
                    client_id: None,
                    request_digest: [7; 32],
                    mode,
                    created_at_ms: 1,
                    expires_at_ms: 2,
                    csrf_token: csrf.clone(),
                };
                if let Ok(r) = s.create(&new) {
                    let _ =
                        s.complete(&r.id, &new.principal, Outcome::Completed(result.clone()), 1);
                }
            }
        };
        let url = held(&record(
            Mode::Url,
            Some("c".repeat(32)),
            json!({"masked": "sk-l…wxyz"}),
        ));
        let form = held(&record(Mode::Form, None, json!({"answered": true})));
        Kept {
            claim: claims.claim_bytes / N.max(claims.claims),
            url_record: url.url_record_bytes / N,
            form_record: form.form_record_bytes / N,
        }
    }
}

/// Round trips per second a budget of `bytes` sustains, by kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sustains {
    /// 2026-07-28 form round trips (one claim each).
    pub form: f64,
    /// URL flows (a record and a claim).
    pub url: f64,
    /// 2025-11-25 form elicitations (a record and a claim).
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
    let claim = kept.claim as f64 * claim_life;
    let rate = |per_second_bytes: f64| bytes as f64 / per_second_bytes;
    Sustains {
        form: rate(claim),
        url: rate(claim + kept.url_record as f64 * url_life),
        legacy_form: rate(claim + kept.form_record as f64 * legacy_life),
    }
}

/// The line `serve` logs at start.
pub fn describe(cfg: &ServerConfig) -> String {
    let kept = Kept::measure();
    let s = sustains(cfg, kept, cfg.store_memory_budget);
    let [claim_life, url_life, legacy_life] = lives(cfg).map(|d| d.as_secs());
    format!(
        "the store's memory budget ({} MiB) holds, sustained: {:.0} completed 2026-07-28 form round \
         trips/s ({} B each, kept {} s), or {:.0} URL flows/s ({} B more, kept {} s), or {:.0} \
         2025-11-25 elicitations/s ({} B more, kept {} s); past it new flows get 503 \
         (--store-memory-budget, --state-ttl, --retention)",
        cfg.store_memory_budget >> 20,
        s.form,
        kept.claim,
        claim_life,
        s.url,
        kept.url_record,
        url_life,
        s.legacy_form,
        kept.form_record,
        legacy_life,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_costs_what_the_store_counts_and_no_more_than_its_budget() {
        let k = Kept::measure();
        assert!(k.claim > 40 && k.claim <= 112, "{k:?}");
        assert!(k.url_record > k.form_record && k.url_record <= 224, "{k:?}");
        assert!(k.form_record <= 184, "{k:?}");
    }

    #[test]
    fn a_budget_sustains_less_the_longer_things_are_kept() {
        let kept = Kept {
            claim: 100,
            url_record: 200,
            form_record: 150,
        };
        let cfg = ServerConfig::default();
        let s = sustains(&cfg, kept, 1 << 30);
        // 1 GiB / (100 B x 645 s).
        let form = (1u64 << 30) as f64 / (100.0 * 645.0);
        assert!((s.form - form).abs() < 1.0, "{s:?}");
        assert!(s.url < s.legacy_form && s.legacy_form < s.form, "{s:?}");
        let longer = ServerConfig {
            retention: Duration::from_secs(1200),
            ..ServerConfig::default()
        };
        assert!(sustains(&longer, kept, 1 << 30).url < s.url);
        assert!(describe(&cfg).contains("1024 MiB"), "{}", describe(&cfg));
    }
}
