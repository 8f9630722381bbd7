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
//! One-time claims ([`Store::claim`]) guard actions that must run at most
//! once and keep the outcome of the first run, so a repeat learns what
//! happened. [`Store::purge`] forgets on schedule (see [`retention`]).
//!
//! Backends: [`MemoryStore`], [`SqliteStore`] and [`RedisStore`] (shared by
//! every instance behind a load balancer); [`open_url`] picks one from a
//! spec string. [`model`] checks any backend against a reference model.
//! Each is an uncounted backend inside one counting wrapper (`counters`),
//! which keeps the [`Counters`] every backend reports.
//!
//! All time-dependent calls take `now_ms` (ms since the Unix epoch) from the
//! caller, so tests and the model checker drive an explicit clock; the
//! server passes its [`crate::clock::Clock`]'s.

mod claim;
mod counters;
mod heap_size;
mod id;
mod keyed;
mod mask;
mod memory;
mod memory_claim;
mod memory_record;
pub mod model;
mod packed_json;
mod record;
mod redis;
mod redis_lua;
pub mod retention;
mod sqlite;
mod varint;

pub use self::redis::{Eviction, Persistence, RedisStore};
pub use claim::{Claim, KEEP_FOREVER, Taken};
pub use id::{ID_LEN, is_plausible_id, new_id};
pub use mask::mask_secret;
pub use memory::{Holding, MemoryStore};
pub use record::{
    AuditEntry, Completion, Counters, MAX_FIELD_LEN, Mode, NewRecord, Outcome, Record, Status,
    StoreError,
};
pub use retention::Purged;
pub use sqlite::SqliteStore;

use std::sync::Arc;

use serde_json::Value;

/// Storage of pending elicitations. Synchronous; object-safe; shareable
/// across threads. Call from async code via `spawn_blocking` for SQLite
/// and Redis.
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

    /// Claims `key` for a one-time action and records `outcome` with it,
    /// in one atomic step: among any number of concurrent callers exactly
    /// one gets [`Claim::Won`]; every other caller, then and later, gets
    /// [`Claim::Taken`] with the winner's outcome (durably for SQLite: it
    /// is on disk when this returns). The claim is kept at least until
    /// `keep_until_ms`, then [`Store::purge`] forgets it. Keys are 1 to
    /// 1024 bytes; outcomes are plain data and must hold no secret.
    fn claim(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
    ) -> Result<Claim, StoreError> {
        self.claim_in_epoch(key, outcome, keep_until_ms, 0)
    }

    /// The claim on `key`, if it was taken (and not yet purged).
    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError>;

    /// The store's epoch: a random non-zero id of its data set, made when
    /// the data set was first used and kept as long as it is (a memory
    /// store's life, a SQLite file, a Redis database until it loses its
    /// data). A request records the epoch it began in; see
    /// [`Store::claim_in_epoch`].
    fn epoch(&self) -> u64;

    /// [`Store::claim`], made only if the store's epoch is still `epoch`
    /// (0: any), atomically with the claim where the data set can be lost
    /// underneath (Redis); else `EpochChanged` and nothing is claimed. A
    /// request that began before the store lost its data cannot complete
    /// again because its completion record is gone.
    fn claim_in_epoch(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
        epoch: u64,
    ) -> Result<Claim, StoreError>;

    /// A bare claim kept forever: true the first time, false ever after.
    fn side_effect_once(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.claim(key, None, KEEP_FOREVER)?.is_won())
    }

    /// Forgets what is past retention at `now_ms` (see [`retention`]):
    /// records whose expiry is `retention_ms` or more ago, audit entries
    /// written `retention_ms` or more ago, claims whose `keep_until_ms` is
    /// before `now_ms`.
    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError>;

    /// Operation counters since this value was opened.
    fn counters(&self) -> Counters;

    /// Short backend name for logs (`memory`, `sqlite`, `redis`).
    fn backend_name(&self) -> &'static str;

    /// What it holds by kind, in the bytes it counts (the memory store;
    /// `None` for stores that keep their data elsewhere).
    fn holding(&self) -> Option<Holding> {
        None
    }
}

/// Opens a store from a spec: `memory`, `sqlite:PATH` (the file is
/// created if missing), or `redis://HOST:PORT/DB` (Redis must answer a
/// PING now).
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
    if spec.starts_with("redis://") {
        return Ok(Arc::new(RedisStore::open(spec)?));
    }
    Err(bad("unknown scheme"))
}

/// What `serve` accepts of a store that may lose completion records
/// (`--allow-volatile-store`, `--allow-evicting-store`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Risks {
    /// Accept a Redis that forgets its data in a restart (no append-only
    /// file, snapshots only) or whose persistence cannot be read.
    pub volatile: bool,
    /// Accept a Redis whose `maxmemory-policy` may evict any key
    /// (`allkeys-*`) or cannot be read.
    pub evicting: bool,
}

/// [`open_url`] for `serve`: a Redis store must keep its completion
/// records, or a retry of a request completed before they were lost is
/// either refused (`store_reset`, when Redis lost its whole data set in a
/// restart: the epoch changed, the user is asked again) or run again
/// (when Redis evicted some records to stay under `maxmemory`: the epoch
/// stays). Redis's persistence and `maxmemory-policy` are read at start;
/// a volatile, evicting or unreadable one is refused unless `risks`
/// accepts it. A `memory` store holds at most `memory_budget` bytes. `Ok`
/// carries warnings to log when the store is accepted with a caveat.
pub fn open_for_serving(
    spec: &str,
    risks: Risks,
    memory_budget: u64,
) -> Result<(Arc<dyn Store>, Vec<String>), StoreError> {
    use self::redis::{Eviction, Persistence};
    if spec == "memory" {
        return Ok((
            Arc::new(MemoryStore::with_budget(memory_budget)),
            Vec::new(),
        ));
    }
    if !spec.starts_with("redis://") {
        return open_url(spec).map(|s| (s, Vec::new()));
    }
    let store = RedisStore::open(spec)?;
    let mut warnings = Vec::new();
    match store.persistence() {
        Persistence::Durable => {}
        Persistence::LastSecond => warnings.push(format!(
            "{spec}: appendfsync everysec: a Redis crash loses up to one second of completion \
             records (appendfsync always loses none); retries of those requests are refused \
             (store_reset) and their users asked again"
        )),
        Persistence::Volatile(why) | Persistence::Unknown(why) if risks.volatile => {
            warnings.push(format!(
                "{spec}: {why}; accepted (--allow-volatile-store): after a Redis restart that \
                 loses its data, no completed request runs again, but every request in flight \
                 then is refused (store_reset) and its user asked again"
            ))
        }
        Persistence::Volatile(why) | Persistence::Unknown(why) => {
            return Err(StoreError::Volatile {
                spec: spec.to_owned(),
                why,
            });
        }
    }
    match store.eviction() {
        Eviction::Never | Eviction::OnlyKeysWithTtl(_) => {}
        Eviction::AnyKey(why) | Eviction::Unknown(why) if risks.evicting => warnings.push(format!(
            "{spec}: maxmemory-policy {why}; accepted (--allow-evicting-store): when Redis \
                 reaches maxmemory it may evict completion records, and retries of those \
                 requests run again"
        )),
        Eviction::AnyKey(policy) => {
            return Err(StoreError::Evicting {
                spec: spec.to_owned(),
                why: format!("maxmemory-policy {policy} lets Redis evict any key when it fills up"),
            });
        }
        Eviction::Unknown(why) => {
            return Err(StoreError::Evicting {
                spec: spec.to_owned(),
                why,
            });
        }
    }
    Ok((Arc::new(store), warnings))
}

/// A fresh random non-zero store epoch ([`Store::epoch`]).
pub(crate) fn new_epoch() -> u64 {
    rand::random::<u64>().max(1)
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
        for spec in ["", "rediss:x", "postgres://x", "sqlite:", "Memory"] {
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
