//! Counters behind `GET /stats` and the `stats` tool: `POST /mcp` requests
//! received, side effects per kind, states sealed / opened / rejected by
//! reason, pending elicitations and connections (the session counts come
//! from the session table).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use crate::state::StateError;

/// Lock-free server counters.
#[derive(Debug, Default)]
pub struct Stats {
    /// `POST /mcp` requests received, whatever came of them: what clients
    /// sent, counted the same way for every client (load scripts compare
    /// generators by it).
    pub mcp_posts: AtomicU64,
    /// `deploy` runs that deployed.
    pub deployments: AtomicU64,
    /// `delete_file` side effects.
    pub files_deleted: AtomicU64,
    /// `connect_billing` completions.
    pub billing_connected: AtomicU64,
    /// `book_trip` bookings.
    pub trips_booked: AtomicU64,
    /// `profile` saves.
    pub profiles_saved: AtomicU64,
    /// `requestState` tokens sealed.
    pub states_sealed: AtomicU64,
    /// `requestState` tokens opened successfully.
    pub states_opened: AtomicU64,
    rejected: [AtomicU64; StateError::KINDS.len()],
    /// Legacy elicitations waiting for an answer.
    pub pending_elicitations: AtomicU64,
    /// HTTP connections open now.
    pub connections_open: AtomicU64,
    /// Connections closed for outstaying their header-read or keep-alive timeout.
    pub connections_timed_out: AtomicU64,
    /// Idle or half-sent connections shed at the connection cap.
    pub connections_shed: AtomicU64,
    /// Connections closed at accept: at the cap, with every open one busy.
    pub connections_refused: AtomicU64,
    /// Connections of the largest holders shed at the cap when none was
    /// idle or slow: bodies still arriving, responses waiting on their
    /// client.
    pub connections_shed_under_pressure: AtomicU64,
    /// Requests refused (429) because their principal held its share of
    /// connections.
    pub connections_over_share: AtomicU64,
}

/// Adds one to a counter.
pub fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Subtracts one from a gauge, never below zero.
pub fn drop_one(c: &AtomicU64) {
    let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_sub(1))
    });
}

impl Stats {
    /// Counts a rejected state under its kind.
    pub fn rejected(&self, e: &StateError) {
        if let Some(i) = StateError::KINDS.iter().position(|k| *k == e.kind()) {
            bump(&self.rejected[i]);
        }
    }

    /// How many states were rejected with this kind name.
    pub fn rejected_count(&self, kind: &str) -> u64 {
        StateError::KINDS
            .iter()
            .position(|k| *k == kind)
            .map_or(0, |i| self.rejected[i].load(Ordering::Relaxed))
    }

    /// The counters as JSON, with `pending_flows` supplied by the caller.
    pub fn to_json(&self) -> Value {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut rejected = Map::new();
        for (i, k) in StateError::KINDS.iter().enumerate() {
            rejected.insert((*k).to_owned(), g(&self.rejected[i]).into());
        }
        json!({
            "side_effects": {
                "deployments": g(&self.deployments),
                "files_deleted": g(&self.files_deleted),
                "billing_connected": g(&self.billing_connected),
                "trips_booked": g(&self.trips_booked),
                "profiles_saved": g(&self.profiles_saved),
            },
            "states": {
                "sealed": g(&self.states_sealed),
                "opened": g(&self.states_opened),
                "rejected": rejected,
            },
            "requests": { "mcp_post": g(&self.mcp_posts) },
            "pending_elicitations": g(&self.pending_elicitations),
            "connections": {
                "open": g(&self.connections_open),
                "timed_out": g(&self.connections_timed_out),
                "shed": g(&self.connections_shed),
                "refused": g(&self.connections_refused),
                "shed_under_pressure": g(&self.connections_shed_under_pressure),
                "over_share": g(&self.connections_over_share),
            },
        })
    }
}

/// What `/stats` shows of a memory store's holding: each kind's count,
/// counted bytes and bytes each, the total and the budget.
pub fn memory_json(h: &crate::store::Holding) -> Value {
    let kind = |count: u64, bytes: u64| {
        json!({
            "count": count,
            "bytes": bytes,
            "bytes_each": (count > 0).then(|| bytes / count),
        })
    };
    json!({
        "budget_bytes": h.budget,
        "held_bytes": h.form_record_bytes + h.url_record_bytes + h.claim_bytes,
        "form_records": kind(h.form_records, h.form_record_bytes),
        "url_records": kind(h.url_records, h.url_record_bytes),
        "claims": kind(h.claims, h.claim_bytes),
        // Claims kept in their flow's record: their bytes are the record's.
        "claims_in_records": h.claims_in_records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_rejections_by_kind() {
        let s = Stats::default();
        s.rejected(&StateError::BadTag);
        s.rejected(&StateError::BadTag);
        s.rejected(&StateError::Expired);
        assert_eq!(s.rejected_count("bad_tag"), 2);
        let j = s.to_json();
        assert_eq!(j["states"]["rejected"]["expired"], 1);
        assert_eq!(j["side_effects"]["files_deleted"], 0);
        bump(&s.mcp_posts);
        assert_eq!(s.to_json()["requests"]["mcp_post"], 1);
        drop_one(&s.pending_elicitations);
        assert_eq!(j["pending_elicitations"], 0);
    }
}
