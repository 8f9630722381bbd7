//! Operation counting, done once for every backend: a backend implements
//! [`Backend`] (the store operations, uncounted) and [`Counted`] wraps it
//! into a [`Store`] that keeps the lock-free [`Counters`].

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::record::Counters;
use super::{
    AuditEntry, Claim, Completion, NewRecord, Outcome, Purged, Record, Store, StoreError, Taken,
};

/// The store operations of one backend, without counters. Each method has
/// the contract of the [`Store`] method of the same name; the two that can
/// move records to `Expired` add how many they moved to `expiries` as they go,
/// so a call that fails part-way still counts what it did.
pub(crate) trait Backend: Send + Sync {
    /// See [`Store::create`].
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError>;

    /// See [`Store::get`].
    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Record>, StoreError>;

    /// See [`Store::complete`]; adds 1 to `expiries` when this call moved the
    /// due record to `Expired`.
    fn complete(
        &self,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
        expiries: &mut u64,
    ) -> Result<Completion, StoreError>;

    /// See [`Store::expire_due`]; adds each record it moves to `expiries`.
    fn expire_due(&self, now_ms: u64, expiries: &mut u64) -> Result<usize, StoreError>;

    /// See [`Store::audit`].
    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError>;

    /// See [`Store::claim`].
    fn claim(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
    ) -> Result<Claim, StoreError>;

    /// See [`Store::claimed`].
    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError>;

    /// See [`Store::epoch`].
    fn epoch(&self) -> u64;

    /// See [`Store::claim_in_epoch`]. By default the epoch is compared,
    /// then the claim made: right where the epoch cannot change while the
    /// store is open (memory, a SQLite file).
    fn claim_in_epoch(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
        epoch: u64,
    ) -> Result<Claim, StoreError> {
        let now = self.epoch();
        if epoch != 0 && epoch != now {
            return Err(StoreError::EpochChanged { now });
        }
        self.claim(key, outcome, keep_until_ms)
    }

    /// See [`Store::purge`].
    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError>;

    /// What it holds by kind (in-process stores only).
    fn holding(&self) -> Option<super::Holding> {
        None
    }

    /// Round trips to a backing service so far ([`Counters::backend_calls`]).
    fn backend_calls(&self) -> u64 {
        0
    }

    /// Pending records evicted so far ([`Counters::evicted`]).
    fn evicted(&self) -> u64 {
        0
    }

    /// See [`Store::backend_name`].
    fn backend_name(&self) -> &'static str;
}

/// A backend with its operation counters: the [`Store`] that
/// [`super::MemoryStore`], [`super::SqliteStore`] and [`super::RedisStore`]
/// name.
#[derive(Debug, Default)]
pub struct Counted<B> {
    pub(super) backend: B,
    cells: CounterCells,
}

impl<B> Counted<B> {
    /// Wraps `backend` with counters at zero.
    pub(super) fn wrap(backend: B) -> Self {
        Counted {
            backend,
            cells: CounterCells::default(),
        }
    }
}

/// Atomic cells behind [`Counters`] (all but `backend_calls`, which the
/// backend keeps).
#[derive(Debug, Default)]
struct CounterCells {
    created: AtomicU64,
    applied: AtomicU64,
    already_done: AtomicU64,
    rejected: AtomicU64,
    expired: AtomicU64,
    claims_won: AtomicU64,
    claims_lost: AtomicU64,
    purged_records: AtomicU64,
    purged_audit: AtomicU64,
    purged_claims: AtomicU64,
}

/// Adds `n` to `cell`.
fn add(cell: &AtomicU64, n: u64) {
    cell.fetch_add(n, Ordering::Relaxed);
}

impl<B: Backend> Store for Counted<B> {
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError> {
        let r = self.backend.create(new);
        if r.is_ok() {
            add(&self.cells.created, 1);
        }
        r
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Record>, StoreError> {
        self.backend.get(id, now_ms)
    }

    fn complete(
        &self,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Completion, StoreError> {
        let mut expired = 0;
        let r = self
            .backend
            .complete(id, principal, outcome, now_ms, &mut expired);
        add(&self.cells.expired, expired);
        let cell = match &r {
            Ok(Completion::Applied(_)) => &self.cells.applied,
            Ok(Completion::AlreadyDone(_)) => &self.cells.already_done,
            Err(_) => &self.cells.rejected,
        };
        add(cell, 1);
        r
    }

    fn expire_due(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut expired = 0;
        let r = self.backend.expire_due(now_ms, &mut expired);
        add(&self.cells.expired, expired);
        r
    }

    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        self.backend.audit(id)
    }

    fn claim_in_epoch(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
        epoch: u64,
    ) -> Result<Claim, StoreError> {
        let r = self
            .backend
            .claim_in_epoch(key, outcome, keep_until_ms, epoch);
        if let Ok(claim) = &r {
            let cell = if claim.is_won() {
                &self.cells.claims_won
            } else {
                &self.cells.claims_lost
            };
            add(cell, 1);
        }
        r
    }

    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError> {
        self.backend.claimed(key)
    }

    fn epoch(&self) -> u64 {
        self.backend.epoch()
    }

    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError> {
        let r = self.backend.purge(now_ms, retention_ms);
        if let Ok(p) = &r {
            add(&self.cells.purged_records, p.records);
            add(&self.cells.purged_audit, p.audit);
            add(&self.cells.purged_claims, p.claims);
        }
        r
    }

    fn holding(&self) -> Option<super::Holding> {
        self.backend.holding()
    }

    fn counters(&self) -> Counters {
        let c = &self.cells;
        let g = |cell: &AtomicU64| cell.load(Ordering::Relaxed);
        Counters {
            created: g(&c.created),
            applied: g(&c.applied),
            already_done: g(&c.already_done),
            rejected: g(&c.rejected),
            expired: g(&c.expired),
            claims_won: g(&c.claims_won),
            claims_lost: g(&c.claims_lost),
            purged_records: g(&c.purged_records),
            purged_audit: g(&c.purged_audit),
            purged_claims: g(&c.purged_claims),
            backend_calls: self.backend.backend_calls(),
            evicted: self.backend.evicted(),
        }
    }

    fn backend_name(&self) -> &'static str {
        self.backend.backend_name()
    }
}
