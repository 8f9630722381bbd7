//! In-process backend: one mutex over a map. Fast, not durable.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use super::counters::CounterCells;
use super::record::settle_against;
use super::{
    AuditEntry, Completion, Counters, NewRecord, Outcome, Record, Status, Store, StoreError,
    check_claim_key, new_id,
};

/// A record and its audit log.
#[derive(Debug)]
struct Entry {
    record: Record,
    audit: Vec<AuditEntry>,
}

impl Entry {
    /// Applies a legal transition and logs it.
    fn transition(&mut self, to: Status, actor: Option<&str>, at_ms: u64) {
        let from = self.record.status;
        debug_assert!(Status::can_transition(from, to));
        self.record.status = to;
        self.record.version += 1;
        self.audit.push(AuditEntry {
            at_ms,
            from: Some(from),
            to,
            actor_principal: actor.map(str::to_owned),
            version: self.record.version,
        });
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    claims: HashSet<String>,
}

/// Memory backend. The compare-and-set is the check-then-write under one
/// mutex, so concurrent completions are linearised.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    counters: CounterCells,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        self.inner.lock().map_err(|_| StoreError::Poisoned)
    }

    fn complete_locked(
        &self,
        inner: &mut Inner,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Completion, StoreError> {
        let entry = inner.entries.get_mut(id).ok_or(StoreError::NotFound)?;
        if entry.record.principal != principal {
            return Err(StoreError::WrongPrincipal);
        }
        let target = outcome.status();
        if entry.record.status == Status::Pending {
            if entry.record.is_due(now_ms) {
                entry.transition(Status::Expired, None, now_ms);
                CounterCells::add(&self.counters.expired, 1);
                return Err(StoreError::Expired);
            }
            entry.record.result = outcome.into_result();
            entry.transition(target, Some(principal), now_ms);
            return Ok(Completion::Applied(entry.record.clone()));
        }
        settle_against(entry.record.clone(), target)
    }
}

impl Store for MemoryStore {
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError> {
        new.validate()?;
        let mut inner = self.lock()?;
        let mut id = new_id();
        while inner.entries.contains_key(&id) {
            id = new_id();
        }
        let record = Record::from_new(id.clone(), new);
        let audit = vec![AuditEntry {
            at_ms: new.created_at_ms,
            from: None,
            to: Status::Pending,
            actor_principal: Some(new.principal.clone()),
            version: 0,
        }];
        inner.entries.insert(
            id,
            Entry {
                record: record.clone(),
                audit,
            },
        );
        CounterCells::add(&self.counters.created, 1);
        Ok(record)
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Record>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .entries
            .get(id)
            .map(|e| e.record.clone().seen_at(now_ms)))
    }

    fn complete(
        &self,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Completion, StoreError> {
        let mut inner = self.lock()?;
        let r = self.complete_locked(&mut inner, id, principal, outcome, now_ms);
        drop(inner);
        self.counters.count_completion(&r);
        r
    }

    fn expire_due(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut inner = self.lock()?;
        let mut n = 0;
        for entry in inner.entries.values_mut() {
            if entry.record.is_due(now_ms) {
                entry.transition(Status::Expired, None, now_ms);
                n += 1;
            }
        }
        CounterCells::add(&self.counters.expired, n as u64);
        Ok(n)
    }

    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .entries
            .get(id)
            .map(|e| e.audit.clone())
            .unwrap_or_default())
    }

    fn side_effect_once(&self, key: &str) -> Result<bool, StoreError> {
        check_claim_key(key)?;
        let won = self.lock()?.claims.insert(key.to_owned());
        let cell = if won {
            &self.counters.claims_won
        } else {
            &self.counters.claims_lost
        };
        CounterCells::add(cell, 1);
        Ok(won)
    }

    fn counters(&self) -> Counters {
        self.counters.snapshot()
    }

    fn backend_name(&self) -> &'static str {
        "memory"
    }
}
