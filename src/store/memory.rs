//! In-process backend: one mutex over a map. Fast, not durable.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::claim::check_key;
use super::counters::{Backend, Counted};
use super::record::settle_against;
use super::retention::cutoff;
use super::{
    AuditEntry, Claim, Completion, NewRecord, Outcome, Purged, Record, Status, StoreError, Taken,
    new_id,
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

/// A taken claim: what its first taker recorded, and until when.
#[derive(Debug)]
struct ClaimEntry {
    outcome: Option<Value>,
    keep_until_ms: u64,
}

/// Entries are boxed: a table holds a fraction of its slots full, and a
/// doubled table of pointers costs 8 bytes a slot, not a whole entry's
/// ~240 (the step a burst would otherwise leave in RSS for good).
#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Box<Entry>>,
    claims: HashMap<String, ClaimEntry>,
}

/// Memory backend. The compare-and-set is the check-then-write under one
/// mutex, so concurrent completions are linearised.
pub type MemoryStore = Counted<MemoryBackend>;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The uncounted memory backend behind [`MemoryStore`].
#[derive(Debug, Default)]
pub struct MemoryBackend {
    inner: Mutex<Inner>,
}

impl MemoryBackend {
    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        self.inner.lock().map_err(|_| StoreError::Poisoned)
    }
}

impl Backend for MemoryBackend {
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
            Box::new(Entry {
                record: record.clone(),
                audit,
            }),
        );
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
        expiries: &mut u64,
    ) -> Result<Completion, StoreError> {
        let mut inner = self.lock()?;
        let entry = inner.entries.get_mut(id).ok_or(StoreError::NotFound)?;
        if entry.record.principal != principal {
            return Err(StoreError::WrongPrincipal);
        }
        let target = outcome.status();
        if entry.record.status == Status::Pending {
            if entry.record.is_due(now_ms) {
                entry.transition(Status::Expired, None, now_ms);
                *expiries += 1;
                return Err(StoreError::Expired);
            }
            entry.record.result = outcome.into_result();
            entry.transition(target, Some(principal), now_ms);
            return Ok(Completion::Applied(entry.record.clone()));
        }
        settle_against(entry.record.clone(), target)
    }

    fn expire_due(&self, now_ms: u64, expiries: &mut u64) -> Result<usize, StoreError> {
        let mut inner = self.lock()?;
        let mut n = 0;
        for entry in inner.entries.values_mut() {
            if entry.record.is_due(now_ms) {
                entry.transition(Status::Expired, None, now_ms);
                n += 1;
            }
        }
        *expiries += n as u64;
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

    fn claim(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
    ) -> Result<Claim, StoreError> {
        check_key(key)?;
        let mut inner = self.lock()?;
        let claim = match inner.claims.get(key) {
            Some(c) => Claim::Taken(Taken {
                outcome: c.outcome.clone(),
            }),
            None => {
                let entry = ClaimEntry {
                    outcome: outcome.cloned(),
                    keep_until_ms,
                };
                inner.claims.insert(key.to_owned(), entry);
                Claim::Won
            }
        };
        Ok(claim)
    }

    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError> {
        check_key(key)?;
        Ok(self.lock()?.claims.get(key).map(|c| Taken {
            outcome: c.outcome.clone(),
        }))
    }

    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError> {
        let mut inner = self.lock()?;
        let mut purged = Purged::default();
        if let Some(cut) = cutoff(now_ms, retention_ms) {
            let before = inner.entries.len();
            let mut audit = 0;
            inner.entries.retain(|_, e| {
                if e.record.expires_at_ms <= cut {
                    audit += e.audit.len() as u64;
                    return false;
                }
                let n = e.audit.len();
                e.audit.retain(|a| a.at_ms > cut);
                audit += (n - e.audit.len()) as u64;
                true
            });
            purged.records = (before - inner.entries.len()) as u64;
            purged.audit = audit;
        }
        let before = inner.claims.len();
        inner.claims.retain(|_, c| c.keep_until_ms >= now_ms);
        purged.claims = (before - inner.claims.len()) as u64;
        // Give memory back once most of a table went (a burst is over).
        if inner.entries.capacity() > 4 * inner.entries.len().max(1024) {
            inner.entries.shrink_to_fit();
        }
        if inner.claims.capacity() > 4 * inner.claims.len().max(1024) {
            inner.claims.shrink_to_fit();
        }
        Ok(purged)
    }

    fn backend_name(&self) -> &'static str {
        "memory"
    }
}
