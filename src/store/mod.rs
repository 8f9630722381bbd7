//! Pending-elicitation records with an exactly-once completion contract.
//!
//! The reference server keeps every pending URL-mode flow and legacy push
//! elicitation here as a [`Record`] bound to a principal, a request digest
//! and an expiry. [`Store::complete`] settles a record by compare-and-set, so
//! among any number of concurrent duplicate completions exactly one gets
//! [`Completion::Applied`] and may run the side effect; the others get
//! [`Completion::AlreadyDone`]. Every transition is written to an audit log
//! that holds states, never payloads.
//!
//! Backends: [`MemoryStore`] and [`SqliteStore`]; [`open_url`] picks one from
//! a spec string. [`model`] checks any backend against a reference model.
//!
//! All time-dependent calls take `now_ms` (ms since the Unix epoch) from the
//! caller, so tests and the model checker drive an explicit clock; servers
//! pass [`now_ms`].

mod counters;
mod error;
mod id;
mod mask;
mod memory;
pub mod model;
mod record;
mod sqlite;

pub use error::StoreError;
pub use id::{ID_LEN, is_plausible_id, new_id};
pub use mask::mask_secret;
pub use memory::MemoryStore;
pub use record::{
    AuditEntry, Completion, Counters, MAX_FIELD_LEN, Mode, NewRecord, Outcome, Record, Status,
};
pub use sqlite::SqliteStore;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Storage of pending elicitations. Synchronous; object-safe; shareable
/// across threads. Call from async code via `spawn_blocking` for SQLite.
pub trait Store: Send + Sync {
    /// Stores a new pending record with a fresh random id.
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError>;

    /// Reads a record as seen at `now_ms`: a pending record past its expiry
    /// reads as `Expired` (the transition itself is persisted by the next
    /// completion attempt or sweep). Never writes.
    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Record>, StoreError>;

    /// Settles a pending record exactly once.
    ///
    /// Checks, in order: the record exists (`NotFound`), belongs to
    /// `principal` (`WrongPrincipal`, nothing changes), is pending and not
    /// due (a due record is moved to `Expired` and `Expired` is returned).
    /// Then the compare-and-set: the winner gets `Applied`. A record already
    /// settled with the same status gives `AlreadyDone`; with another status
    /// `IllegalTransition`; an expired one `Expired`.
    fn complete(
        &self,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Completion, StoreError>;

    /// Cancels a pending record; same contract as [`Store::complete`].
    fn cancel(&self, id: &str, principal: &str, now_ms: u64) -> Result<Completion, StoreError> {
        self.complete(id, principal, Outcome::Cancelled, now_ms)
    }

    /// Moves every pending record with `expires_at_ms <= now_ms` to
    /// `Expired`; returns how many moved.
    fn expire_due(&self, now_ms: u64) -> Result<usize, StoreError>;

    /// The record's audit log, oldest first (creation included); empty for
    /// an unknown id.
    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError>;

    /// Claims `key` for a one-time action: true the first time, false ever
    /// after (durably for SQLite). Keys are 1 to 1024 bytes.
    fn side_effect_once(&self, key: &str) -> Result<bool, StoreError>;

    /// Operation counters since this value was opened.
    fn counters(&self) -> Counters;

    /// Short backend name for logs (`memory`, `sqlite`).
    fn backend_name(&self) -> &'static str;
}

/// Opens a store from a spec: `memory`, or `sqlite:PATH` (the file is
/// created if missing).
pub fn open_url(spec: &str) -> Result<Arc<dyn Store>, StoreError> {
    let bad = |reason: &str| StoreError::BadSpec {
        spec: spec.to_owned(),
        reason: reason.to_owned(),
    };
    if spec == "memory" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(bad("missing database path after `sqlite:`"));
        }
        return Ok(Arc::new(SqliteStore::open(path)?));
    }
    Err(bad("unknown scheme"))
}

/// Current wall-clock time in ms since the Unix epoch (0 if the clock is
/// before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Validates a `side_effect_once` key.
pub(crate) fn check_claim_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() || key.len() > MAX_FIELD_LEN {
        return Err(StoreError::InvalidInput {
            field: "claim key",
            reason: "must be 1 to 1024 bytes".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_url_accepts_memory_and_rejects_unknown() {
        assert_eq!(
            open_url("memory").map(|s| s.backend_name()).ok(),
            Some("memory")
        );
        for spec in ["", "redis://x", "sqlite:", "Memory"] {
            assert!(
                matches!(open_url(spec), Err(StoreError::BadSpec { .. })),
                "{spec}"
            );
        }
    }

    #[test]
    fn open_url_opens_sqlite_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let spec = format!("sqlite:{}", path.display());
        let s = open_url(&spec).expect("open");
        assert_eq!(s.backend_name(), "sqlite");
        assert!(path.exists());
    }
}
