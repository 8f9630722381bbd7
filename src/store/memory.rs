//! In-process backend: one mutex over a map. Fast, not durable.
//!
//! What it keeps is small, since a server keeps one completion claim per
//! completed request for the life of its states, and a record per URL flow
//! or 2025-11-25 elicitation for its expiry plus the retention: a claim is
//! a table slot with the key (16 bytes of its SHA-256) and one allocation
//! with the expiry and the outcome (a text result as its text, with its
//! structured content as compact JSON; any other as compact JSON); a
//! record is a [`Slim`] (120 to 160 bytes with its parts) and a slot of one
//! pointer. A record created for a request's origin ([`NewRecord::origin`])
//! is keyed by that origin's claim key, and once it settled, the claim that
//! completes the request is kept in its entry: a completed flow is one
//! entry, found by its id and by its claim key. The store counts
//! what each holds (allocator size classes and table slots included) and
//! shows it by kind ([`Holding`], `/stats`). An optional
//! budget ([`MemoryStore::with_budget`]) bounds that count: past it a new
//! record or claim is refused ([`StoreError::Full`]), and no completion is
//! ever forgotten early.
//!
//! With a budget, pending records are shared fairly: a principal holds at
//! most 1/8 of the budget in pending records, by their counted bytes
//! ([`StoreError::OverShare`], once its own due ones are expired), and when the store is full, a new
//! record of a principal holding fewer pending records than the largest
//! holder evicts that holder's pending record closest to its expiry (its
//! flow is gone: the user is asked again), so one principal, or a crowd of
//! made-up ones, cannot fill the store for everyone else.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::claim::check_key;
use super::counters::{Backend, Counted};
use super::memory_claim::{self, ClaimEntry, ClaimKey, ClaimRef};
use super::memory_record::{Entry, RecordKey, Slim, record_key};
use super::record::settle_against;
use super::retention::cutoff;
use super::{
    AuditEntry, Claim, Completion, Mode, NewRecord, Outcome, Purged, Record, Status, StoreError,
    Taken,
};

fn claim_key(key: &str) -> ClaimKey {
    let d = Sha256::digest(key.as_bytes());
    let mut k = [0; 16];
    k.copy_from_slice(&d[..16]);
    k
}

/// Bytes a claims-table slot costs per unit of capacity: the entry's
/// pointer and length (its key is in it) and a control byte, over the
/// table's 7/8 load at capacity.
const CLAIM_SLOT_BYTES: u64 = (16 + 1) * 8 / 7;

/// Bytes a record's table slot costs: its box pointer (the key is in the
/// box) and a control byte, over the table's lowest load (7/16, just
/// after it doubled).
const RECORD_SLOT_BYTES: u64 = (8 + 1) * 16 / 7;

/// The counted cost of a record: its parts on the heap and its slot.
fn record_cost(slim: &Slim) -> u64 {
    slim.heap_bytes() + RECORD_SLOT_BYTES
}

/// Index of a mode in per-mode tallies.
fn mode_index(mode: Mode) -> usize {
    match mode {
        Mode::Form => 0,
        Mode::Url => 1,
    }
}

/// A principal's pending records (kept with a budget only): their counted
/// bytes and their keys by expiry.
#[derive(Debug, Default)]
struct Pending {
    bytes: u64,
    due: BTreeSet<(u64, RecordKey)>,
}

/// Forgets in `pending` that the record under `key` is pending.
fn unpend(pending: &mut HashMap<Box<str>, Pending>, key: &RecordKey, slim: &Slim) {
    if let Some(held) = pending.get_mut(slim.principal())
        && held.due.remove(&(slim.expires_at_ms(), *key))
    {
        held.bytes -= record_cost(slim);
        if held.due.is_empty() {
            pending.remove(slim.principal());
        }
    }
}

/// Entries are boxed: a table holds a fraction of its slots full, and a
/// doubled table of pointers costs 8 bytes a slot, not a whole record's
/// 128 (the step a burst would otherwise leave in RSS for good). A record
/// holds its key, so a slot is that pointer alone; a claim holds its key
/// too, so a claims-table slot is its entry's pointer and length.
#[derive(Debug, Default)]
struct Inner {
    entries: HashSet<Entry>,
    /// Counted bytes of the records ([`record_cost`]), form and URL.
    record_bytes: [u64; 2],
    /// Records held, form and URL.
    records: [u64; 2],
    claims: HashSet<ClaimEntry>,
    /// Heap bytes of the claim entries (key, expiry and outcome each).
    claim_bytes: u64,
    /// Claims kept inside the entry of the record their flow settled
    /// (counted in that record's bytes).
    claims_in_records: u64,
    /// Pending records by principal (kept with a budget only).
    pending: HashMap<Box<str>, Pending>,
}

impl Inner {
    fn pending_of(&self, principal: &str) -> (usize, u64) {
        self.pending
            .get(principal)
            .map_or((0, 0), |h| (h.due.len(), h.bytes))
    }

    /// Forgets that the record under `key` is pending (it settled, expired
    /// or went).
    fn unpend(&mut self, key: &RecordKey, slim: &Slim) {
        unpend(&mut self.pending, key, slim);
    }

    /// Adds a record, counting it.
    fn insert(&mut self, slim: Slim) {
        let m = mode_index(slim.mode());
        self.record_bytes[m] += record_cost(&slim);
        self.records[m] += 1;
        self.entries.insert(Entry::new(slim));
    }

    /// Takes a record out, uncounting it (and its pending mark, and the
    /// claim it kept).
    fn remove(&mut self, key: &RecordKey) -> Option<Entry> {
        let slim = self.entries.take(key)?;
        self.unpend(key, &slim);
        let m = mode_index(slim.mode());
        self.record_bytes[m] -= record_cost(&slim);
        self.records[m] -= 1;
        self.claims_in_records -= u64::from(slim.claim().is_some());
        Some(slim)
    }

    /// Changes the record under `key` by `change`, keeping its count right.
    /// Taken out and put back: a set hands out no mutable entries (it
    /// does not grow: the slot is free again).
    fn recount<T>(&mut self, key: &RecordKey, change: impl FnOnce(&mut Slim) -> T) -> Option<T> {
        let mut slim = self.entries.take(key)?;
        let (m, before) = (mode_index(slim.mode()), record_cost(&slim));
        let had = slim.claim().is_some();
        let out = change(&mut slim);
        self.record_bytes[m] = self.record_bytes[m] - before + record_cost(&slim);
        self.claims_in_records =
            self.claims_in_records - u64::from(had) + u64::from(slim.claim().is_some());
        self.entries.insert(slim);
        Some(out)
    }

    /// The claim on `key`, wherever it is kept: the claims table, or the
    /// entry of the record its flow settled.
    fn claim_on(&self, key: &ClaimKey) -> Option<ClaimRef<'_>> {
        match self.claims.get(key) {
            Some(c) => Some(c.view()),
            None => self.entries.get(key)?.claim(),
        }
    }

    /// Moves the claim kept in the record under `key` to the claims table
    /// (the record is about to go, the claim must stay).
    fn move_claim_out(&mut self, key: &RecordKey) {
        if let Some(Some(c)) = self.recount(key, Slim::take_claim) {
            self.claim_bytes += c.heap_bytes();
            self.claims.insert(c);
        }
    }

    /// Settles the record under `key` (present and pending), keeping its
    /// count and pending mark right.
    fn settle(
        &mut self,
        key: &RecordKey,
        to: Status,
        by_owner: bool,
        at_ms: u64,
        result: Option<&Value>,
    ) -> Result<(), StoreError> {
        let slim = self.entries.get(key).ok_or(StoreError::NotFound)?;
        unpend(&mut self.pending, key, slim);
        self.recount(key, |slim| slim.settle(to, by_owner, at_ms, result))
            .ok_or(StoreError::NotFound)?
    }

    /// Moves `principal`'s pending records due at `now_ms` to `Expired`.
    fn expire_due_of(&mut self, principal: &str, now_ms: u64) -> u64 {
        let due: Vec<RecordKey> = self.pending.get(principal).map_or_else(Vec::new, |held| {
            held.due
                .iter()
                .take_while(|(at, _)| *at <= now_ms)
                .map(|(_, key)| *key)
                .collect()
        });
        for key in &due {
            // Expiring keeps no outcome, so it cannot fail.
            let _ = self.settle(key, Status::Expired, false, now_ms, None);
        }
        due.len() as u64
    }

    /// Evicts the pending record closest to its expiry of the principal
    /// holding the most pending records, when that is more than
    /// `more_than`; false when there is none.
    fn evict_from_largest(&mut self, more_than: usize) -> bool {
        let victim = self
            .pending
            .values()
            .filter(|held| held.due.len() > more_than)
            .max_by_key(|held| held.due.len())
            .and_then(|held| held.due.first().map(|(_, key)| *key));
        let Some(key) = victim else {
            return false;
        };
        self.remove(&key);
        true
    }

    /// Counted bytes held once `claims` more claims holding `claim_bytes`
    /// and records costing `record_bytes` are added (the claims' table
    /// about to grow counts at its doubled size).
    fn bytes_with(&self, claims: usize, claim_bytes: u64, record_bytes: u64) -> u64 {
        let cap = |len: usize, cap: usize, add: usize| {
            if len + add > cap {
                (cap * 2).max(len + add)
            } else {
                cap
            }
        };
        let slots = cap(self.claims.len(), self.claims.capacity(), claims) as u64;
        slots * CLAIM_SLOT_BYTES
            + self.claim_bytes
            + claim_bytes
            + self.record_bytes.iter().sum::<u64>()
            + record_bytes
    }
}

/// Memory backend. The compare-and-set is the check-then-write under one
/// mutex, so concurrent completions are linearised.
pub type MemoryStore = Counted<MemoryBackend>;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that refuses new records and claims beyond `bytes`
    /// (estimated; see the module docs).
    pub fn with_budget(bytes: u64) -> Self {
        Self::wrap(MemoryBackend {
            budget: Some(bytes),
            ..Default::default()
        })
    }

    /// Counted bytes its records and claims hold.
    pub fn bytes_held(&self) -> u64 {
        self.backend
            .lock()
            .map(|i| i.bytes_with(0, 0, 0))
            .unwrap_or_default()
    }
}

/// What a memory store holds, by kind, in the bytes it counts against its
/// budget (allocator size classes and table slots included): `/stats`
/// shows it, and `serve` turns it into the rate its budget sustains.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Holding {
    /// Form-mode records (2025-11-25 elicitations) held.
    pub form_records: u64,
    /// Their bytes.
    pub form_record_bytes: u64,
    /// URL-flow records (the page's flow) held.
    pub url_records: u64,
    /// Their bytes.
    pub url_record_bytes: u64,
    /// Completion claims held in the claims table.
    pub claims: u64,
    /// Completion claims kept in the entry of the record their flow
    /// settled (their bytes are in that record's).
    pub claims_in_records: u64,
    /// Their bytes, the claim table's slots included.
    pub claim_bytes: u64,
    /// The budget, when there is one.
    pub budget: Option<u64>,
}

/// The uncounted memory backend behind [`MemoryStore`].
#[derive(Debug)]
pub struct MemoryBackend {
    inner: Mutex<Inner>,
    budget: Option<u64>,
    /// Random per store: its data set lives and dies with it.
    epoch: u64,
    /// Pending records evicted for fairness so far.
    evicted: AtomicU64,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        MemoryBackend {
            inner: Mutex::default(),
            budget: None,
            epoch: super::new_epoch(),
            evicted: AtomicU64::new(0),
        }
    }
}

/// Most pending records evicted to make room for one new record.
const MAX_EVICTIONS: usize = 8;

impl MemoryBackend {
    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        self.inner.lock().map_err(|_| StoreError::Poisoned)
    }

    /// `Full` when adding that much would pass the budget.
    fn room_for(
        &self,
        inner: &Inner,
        claims: usize,
        claim_bytes: u64,
        record_bytes: u64,
    ) -> Result<(), StoreError> {
        match self.budget {
            Some(budget) if inner.bytes_with(claims, claim_bytes, record_bytes) > budget => {
                Err(StoreError::Full {
                    used: inner.bytes_with(0, 0, 0),
                    budget,
                })
            }
            _ => Ok(()),
        }
    }
}

impl MemoryBackend {
    /// Room for one more pending record of `principal` costing `cost`
    /// under `budget`: within the principal's share (1/8 of the budget,
    /// after its due records expired), and within the budget once the
    /// largest holders' pending records are evicted (see the module docs).
    fn fair_room(
        &self,
        inner: &mut Inner,
        principal: &str,
        cost: u64,
        now_ms: u64,
        budget: u64,
    ) -> Result<(), StoreError> {
        let share = budget / 8;
        if inner.pending_of(principal).1 + cost > share {
            inner.expire_due_of(principal, now_ms);
            let (held, bytes) = inner.pending_of(principal);
            if bytes + cost > share {
                let first = inner
                    .pending
                    .get(principal)
                    .and_then(|h| h.due.first())
                    .map_or(now_ms, |(at, _)| *at);
                return Err(StoreError::OverShare {
                    held,
                    frees_in_ms: first.saturating_sub(now_ms),
                });
            }
        }
        for _ in 0..MAX_EVICTIONS {
            if self.room_for(inner, 0, 0, cost).is_ok() {
                return Ok(());
            }
            if !inner.evict_from_largest(inner.pending_of(principal).0 + 1) {
                break;
            }
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        self.room_for(inner, 0, 0, cost)
    }
}

impl Backend for MemoryBackend {
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError> {
        new.validate()?;
        let slim = Slim::new([0; 16], new);
        let cost = record_cost(&slim);
        let mut inner = self.lock()?;
        if let Some(budget) = self.budget {
            self.fair_room(&mut inner, &new.principal, cost, new.created_at_ms, budget)?;
        } else {
            self.room_for(&inner, 0, 0, cost)?;
        }
        // Keyed by its origin's claim key where it is the origin's first
        // record, so the claim that completes the origin shares its entry.
        let mut key: RecordKey = new.origin.as_deref().map_or_else(rand::random, claim_key);
        while inner.entries.contains(&key) {
            key = rand::random();
        }
        let slim = slim.keyed(key);
        let record = slim.record();
        if self.budget.is_some() {
            let held = inner
                .pending
                .entry(new.principal.as_str().into())
                .or_default();
            held.bytes += cost;
            held.due.insert((new.expires_at_ms, key));
        }
        inner.insert(slim);
        Ok(record)
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Record>, StoreError> {
        let Some(key) = record_key(id) else {
            return Ok(None);
        };
        let inner = self.lock()?;
        Ok(inner.entries.get(&key).map(|e| e.record().seen_at(now_ms)))
    }

    fn complete(
        &self,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
        expiries: &mut u64,
    ) -> Result<Completion, StoreError> {
        let key = record_key(id).ok_or(StoreError::NotFound)?;
        let mut inner = self.lock()?;
        let entry = inner.entries.get(&key).ok_or(StoreError::NotFound)?;
        if entry.principal() != principal {
            return Err(StoreError::WrongPrincipal);
        }
        let target = outcome.status();
        if entry.status() == Status::Pending {
            if entry.is_due(now_ms) {
                inner.settle(&key, Status::Expired, false, now_ms, None)?;
                *expiries += 1;
                return Err(StoreError::Expired);
            }
            let result = outcome.into_result();
            inner.settle(&key, target, true, now_ms, result.as_ref())?;
            let settled = inner.entries.get(&key).ok_or(StoreError::NotFound)?;
            return Ok(Completion::Applied(settled.record()));
        }
        settle_against(entry.record(), target)
    }

    fn expire_due(&self, now_ms: u64, expiries: &mut u64) -> Result<usize, StoreError> {
        let mut inner = self.lock()?;
        let due: Vec<RecordKey> = inner
            .entries
            .iter()
            .filter(|e| e.is_due(now_ms))
            .map(|e| *e.key())
            .collect();
        for key in &due {
            inner.settle(key, Status::Expired, false, now_ms, None)?;
        }
        *expiries += due.len() as u64;
        Ok(due.len())
    }

    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        let Some(key) = record_key(id) else {
            return Ok(Vec::new());
        };
        let inner = self.lock()?;
        Ok(inner
            .entries
            .get(&key)
            .map(|e| e.audit())
            .unwrap_or_default())
    }

    fn claim(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
    ) -> Result<Claim, StoreError> {
        check_key(key)?;
        let k = claim_key(key);
        // Encoded outside the lock.
        let entry = ClaimEntry::new(&k, keep_until_ms, outcome);
        let mut inner = self.lock()?;
        if let Some(c) = inner.claim_on(&k) {
            return Ok(Claim::Taken(memory_claim::taken(c.body)?));
        }
        // The origin's settled record keeps it: one entry per completed flow.
        if let Some(slim) = inner.entries.get(&k)
            && slim.status() != Status::Pending
        {
            let more = slim.heap_bytes_with_claim(entry.view()) - slim.heap_bytes();
            self.room_for(&inner, 0, 0, more)?;
            inner.recount(&k, |slim| slim.keep_claim(entry.view()));
            return Ok(Claim::Won);
        }
        self.room_for(&inner, 1, entry.heap_bytes(), 0)?;
        inner.claim_bytes += entry.heap_bytes();
        inner.claims.insert(entry);
        Ok(Claim::Won)
    }

    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError> {
        check_key(key)?;
        let k = claim_key(key);
        self.lock()?
            .claim_on(&k)
            .map(|c| memory_claim::taken(c.body))
            .transpose()
    }

    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError> {
        let mut inner = self.lock()?;
        let mut purged = Purged::default();
        // Claims kept in records go at their own keep time; the record stays.
        let stale: Vec<RecordKey> = inner
            .entries
            .iter()
            .filter(|e| e.claim().is_some_and(|c| c.keep_until_ms < now_ms))
            .map(|e| *e.key())
            .collect();
        for key in &stale {
            inner.recount(key, Slim::take_claim);
        }
        purged.claims = stale.len() as u64;
        if let Some(cut) = cutoff(now_ms, retention_ms) {
            let mut audit = 0;
            let (mut gone, mut trim) = (Vec::new(), Vec::new());
            for e in &inner.entries {
                if e.expires_at_ms() <= cut {
                    audit += e.audit_lines();
                    gone.push(*e.key());
                } else if e.audit_past(cut) > 0 {
                    trim.push(*e.key());
                }
            }
            for key in &trim {
                audit += inner.recount(key, |e| e.purge_audit(cut)).unwrap_or(0);
            }
            for key in &gone {
                // A claim still kept outlives its record, in the claims table.
                inner.move_claim_out(key);
                inner.remove(key);
            }
            purged.records = gone.len() as u64;
            purged.audit = audit;
        }
        let before = inner.claims.len();
        let mut freed = 0;
        inner.claims.retain(|c| {
            let keep = c.view().keep_until_ms >= now_ms;
            if !keep {
                freed += c.heap_bytes();
            }
            keep
        });
        inner.claim_bytes -= freed;
        purged.claims += (before - inner.claims.len()) as u64;
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

    fn holding(&self) -> Option<Holding> {
        let inner = self.lock().ok()?;
        Some(Holding {
            form_records: inner.records[0],
            form_record_bytes: inner.record_bytes[0],
            url_records: inner.records[1],
            url_record_bytes: inner.record_bytes[1],
            claims: inner.claims.len() as u64,
            claims_in_records: inner.claims_in_records,
            claim_bytes: inner.bytes_with(0, 0, 0) - inner.record_bytes.iter().sum::<u64>(),
            budget: self.budget,
        })
    }

    fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    fn epoch(&self) -> u64 {
        self.epoch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store as _;
    use serde_json::json;

    /// The outcome `deploy` records.
    fn deployed() -> Value {
        json!({"content":[{"type":"text","text":"Deployed web to production."}],"isError":false})
    }

    fn key(i: u64) -> String {
        format!(
            "origin:{}",
            crate::hex::encode(&Sha256::digest(i.to_le_bytes()))
        )
    }

    #[test]
    fn a_claim_keeps_its_outcome_exactly() {
        let s = MemoryStore::new();
        assert!(s.claim(&key(1), Some(&deployed()), 10).unwrap().is_won());
        let again = s.claim(&key(1), Some(&json!("other")), 10).unwrap();
        assert_eq!(
            again,
            Claim::Taken(Taken {
                outcome: Some(deployed())
            })
        );
        assert_eq!(
            s.claimed(&key(1)).unwrap().unwrap().outcome,
            Some(deployed())
        );
        assert_eq!(s.claimed(&key(2)).unwrap(), None);
        assert!(s.side_effect_once("bare").unwrap());
        assert_eq!(s.claimed("bare").unwrap().unwrap().outcome, None);
    }

    #[test]
    fn every_outcome_shape_round_trips() {
        let s = MemoryStore::new();
        let outcomes = [
            deployed(),
            json!({"content":[{"type":"text","text":"no: ünïcode"}],"isError":true}),
            json!({"content":[{"type":"text","text":""}],"isError":false}),
            // With structured content, of any JSON shape.
            json!({"content":[{"type":"text","text":"a"}],"isError":false,"structuredContent":{}}),
            json!({"content":[{"type":"text","text":"é"}],"isError":true,"structuredContent":{"k":[1,2.5,null,"x"]}}),
            json!({"content":[{"type":"text","text":""}],"isError":false,"structuredContent":null}),
            // Near misses of the text shape are kept as JSON, exactly.
            json!({"content":[{"type":"text","text":"a"}],"isError":false,"structuredContent":{},"x":1}),
            json!({"content":[{"type":"text","text":"a"}],"structuredContent":{},"x":1}),
            json!({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":false}),
            json!({"content":[{"type":"image","text":"a"}],"isError":false}),
            json!({"content":[{"type":"text","text":"a","x":1}],"isError":false}),
            json!({"content":[{"type":"text","text":"a"}],"isError":"no"}),
            json!({"content":[{"type":"text","text":"a"}]}),
            json!(null),
            json!([1, "x"]),
        ];
        for (i, o) in outcomes.iter().enumerate() {
            let k = key(1000 + i as u64);
            assert!(s.claim(&k, Some(o), 10).unwrap().is_won());
            assert_eq!(s.claimed(&k).unwrap().unwrap().outcome.as_ref(), Some(o));
        }
    }

    /// A URL flow as `serve` leaves it: its record, created for `origin`,
    /// settled with the masked key; the completion not yet claimed.
    fn settled_flow(
        s: &MemoryStore,
        origin: &str,
        created: u64,
        ttl: u64,
    ) -> Result<Record, StoreError> {
        let new = crate::store::NewRecord {
            origin: Some(origin.into()),
            ..pending("ek-user-0001", created)
        };
        let new = crate::store::NewRecord {
            expires_at_ms: created + ttl,
            csrf_token: Some("c".repeat(32)),
            ..new
        };
        let r = s.create(&new)?;
        let kept = Outcome::Completed(json!({"masked": "…abcd"}));
        s.complete(&r.id, "ek-user-0001", kept, created + 1)?;
        Ok(r)
    }

    fn billed() -> Value {
        json!({"content":[{"type":"text","text":"Billing connected with key …abcd."}],"isError":false,"structuredContent":{"connected":true,"key":"…abcd"}})
    }

    #[test]
    fn a_flows_completion_is_kept_in_its_records_entry() {
        let s = MemoryStore::new();
        let r = settled_flow(&s, &key(1), 10, 1_000).unwrap();
        let before = s.get(&r.id, 20).unwrap().unwrap();
        assert!(s.claim(&key(1), Some(&billed()), 5_000).unwrap().is_won());
        let h = s.holding().unwrap();
        assert_eq!((h.claims, h.claims_in_records, h.url_records), (0, 1, 1));
        // Every later taker gets the first outcome; the record reads as before.
        let again = s.claim(&key(1), Some(&deployed()), 5_000).unwrap();
        assert_eq!(
            again,
            Claim::Taken(Taken {
                outcome: Some(billed())
            })
        );
        assert_eq!(s.claimed(&key(1)).unwrap().unwrap().outcome, Some(billed()));
        assert_eq!(s.get(&r.id, 20).unwrap().unwrap(), before);
        assert_eq!(s.audit(&r.id).unwrap().len(), 2);
        // The origin's second record gets an id of its own.
        let second = settled_flow(&s, &key(1), 10, 1_000).unwrap();
        assert_ne!(second.id, r.id);
        // A claim on a pending record's origin is kept apart (a pending
        // record may be evicted or settled yet).
        let new = crate::store::NewRecord {
            origin: Some(key(2)),
            ..pending("ek-user-0001", 10)
        };
        s.create(&new).unwrap();
        assert!(s.claim(&key(2), Some(&deployed()), 5_000).unwrap().is_won());
        let h = s.holding().unwrap();
        assert_eq!((h.claims, h.claims_in_records), (1, 1));
    }

    #[test]
    fn a_kept_claim_outlives_its_record_and_goes_at_its_own_time() {
        let s = MemoryStore::new();
        // Record expires at 1_010; the claim is kept until 5_000.
        let r = settled_flow(&s, &key(1), 10, 1_000).unwrap();
        s.claim(&key(1), Some(&billed()), 5_000).unwrap();
        // Retention 1_000: the record goes at 2_010, its claim moves out.
        let p = s.purge(2_010, 1_000).unwrap();
        assert_eq!((p.records, p.claims), (1, 0), "{p:?}");
        assert!(s.get(&r.id, 2_010).unwrap().is_none());
        assert_eq!(s.claimed(&key(1)).unwrap().unwrap().outcome, Some(billed()));
        let h = s.holding().unwrap();
        assert_eq!((h.claims, h.claims_in_records, h.url_records), (1, 0, 0));
        assert!(!s.claim(&key(1), None, 9_000).unwrap().is_won());
        assert_eq!(s.purge(5_001, 1_000).unwrap().claims, 1);
        assert_eq!(s.claimed(&key(1)).unwrap(), None);
        // A claim kept for less than its record's retention goes first.
        let r = settled_flow(&s, &key(2), 10_000, 1_000).unwrap();
        s.claim(&key(2), Some(&billed()), 10_500).unwrap();
        let p = s.purge(10_501, 10_000).unwrap();
        assert_eq!((p.records, p.claims), (0, 1), "{p:?}");
        assert_eq!(s.claimed(&key(2)).unwrap(), None);
        assert_eq!(
            s.get(&r.id, 10_501).unwrap().unwrap().status,
            Status::Completed
        );
        // Nothing is left counted once all went.
        s.purge(100_000, 0).unwrap();
        let h = s.holding().unwrap();
        assert_eq!(
            (
                h.claims,
                h.claims_in_records,
                h.url_records,
                h.url_record_bytes
            ),
            (0, 0, 0, 0)
        );
    }

    /// Claims `key(0)`, `key(1)`, … with `outcome` until the store refuses
    /// one: how many were won (each a win), and the refusal.
    fn claim_until_full(s: &MemoryStore, outcome: &Value, keep_until_ms: u64) -> (u64, StoreError) {
        let mut won = 0;
        loop {
            match s.claim(&key(won), Some(outcome), keep_until_ms) {
                Ok(c) => {
                    assert!(c.is_won());
                    won += 1;
                }
                Err(e) => return (won, e),
            }
        }
    }

    #[test]
    fn a_full_store_refuses_to_grow_a_record_by_its_claim() {
        let s = MemoryStore::with_budget(4096);
        // Settled flows until no more fit (a settled one is no one's share).
        let mut flows = 0;
        while flows < 100 && settled_flow(&s, &key(flows), 10, 1_000).is_ok() {
            flows += 1;
        }
        assert!(flows < 100);
        // Then their claims, into their records, until one does not fit.
        let (won, full) = claim_until_full(&s, &billed(), 5_000);
        assert!(
            matches!(full, StoreError::Full { budget: 4096, .. }),
            "{full}"
        );
        assert!(won < flows, "{won} of {flows}");
        assert_eq!(s.claimed(&key(won)).unwrap(), None);
        for i in 0..won {
            assert!(s.claimed(&key(i)).unwrap().is_some());
        }
        assert!(s.bytes_held() <= 4096);
        assert_eq!(s.holding().unwrap().claims_in_records, won);
    }

    #[test]
    fn a_completed_request_costs_under_200_bytes() {
        let s = MemoryStore::new();
        let n = 100_000;
        for i in 0..n {
            s.claim(&key(i), Some(&deployed()), 10).unwrap();
        }
        let per = s.bytes_held() / n;
        assert!(per <= 200, "{per} B per claim");
    }

    #[test]
    fn a_full_store_refuses_new_claims_and_records_but_keeps_every_live_one() {
        let s = MemoryStore::with_budget(4096);
        let (won, full) = claim_until_full(&s, &deployed(), 1_000);
        assert!(
            matches!(full, StoreError::Full { budget: 4096, .. }),
            "{full}"
        );
        assert!(won > 0);
        // Every claim made is still answered, full or not.
        for i in 0..won {
            assert!(!s.claim(&key(i), Some(&deployed()), 1_000).unwrap().is_won());
        }
        let new = crate::store::NewRecord {
            principal: "alice".into(),
            client_id: None,
            request_digest: [7; 32],
            mode: crate::store::Mode::Url,
            created_at_ms: 1,
            expires_at_ms: 100,
            csrf_token: None,
            origin: None,
        };
        assert!(matches!(s.create(&new), Err(StoreError::Full { .. })));
        // Once the claims are past their keep time, purging makes room.
        let purged = s.purge(2_000, 0).unwrap();
        assert_eq!(purged.claims, won);
        assert!(
            s.claim(&key(won), Some(&deployed()), 3_000)
                .unwrap()
                .is_won()
        );
    }

    fn pending(principal: &str, now: u64) -> crate::store::NewRecord {
        crate::store::NewRecord {
            principal: principal.into(),
            client_id: None,
            request_digest: [7; 32],
            mode: crate::store::Mode::Url,
            created_at_ms: now,
            expires_at_ms: now + 1_000,
            csrf_token: None,
            origin: None,
        }
    }

    /// What the store counts for `new`'s record.
    fn cost(new: &crate::store::NewRecord) -> u64 {
        record_cost(&Slim::new([0; 16], new))
    }

    #[test]
    fn a_principal_holds_at_most_an_eighth_of_the_budget_in_pending_records() {
        // 32 records' worth: a share of 4.
        let s = MemoryStore::with_budget(32 * cost(&pending("mallory", 10)));
        for _ in 0..4 {
            s.create(&pending("mallory", 10)).unwrap();
        }
        let over = s.create(&pending("mallory", 500)).unwrap_err();
        assert!(
            matches!(
                over,
                StoreError::OverShare {
                    held: 4,
                    frees_in_ms: 510
                }
            ),
            "{over}"
        );
        assert!(
            s.create(&pending("alice", 500)).is_ok(),
            "others are not held up"
        );
        // Once mallory's are due they expire, and her share frees up.
        let r = s.create(&pending("mallory", 1_010)).unwrap();
        assert_eq!(
            s.get(&r.id, 1_010).unwrap().unwrap().status,
            Status::Pending
        );
        assert_eq!(s.counters().created, 6);
    }

    #[test]
    fn a_full_store_evicts_the_largest_holders_pending_record_for_a_smaller_one() {
        // 16 records in all, 2 per principal: 8 made-up names fill it.
        // Every name is two letters, so every record costs the same (a
        // record's parts are counted to the byte).
        let s = MemoryStore::with_budget(16 * cost(&pending("m0", 0)));
        let crowd: Vec<Record> = (0..16)
            .map(|i| s.create(&pending(&format!("m{}", i % 8), i)).unwrap())
            .collect();
        let alice = s.create(&pending("al", 100)).expect("room made");
        assert_eq!(s.counters().evicted, 1);
        // One went: of one of the largest holders (all hold two), the one
        // closest to its expiry (each name's first, created in 0..8).
        let gone: Vec<usize> = (0..16)
            .filter(|&i| s.get(&crowd[i].id, 100).unwrap().is_none())
            .collect();
        assert!(matches!(gone[..], [i] if i < 8), "{gone:?}");
        assert!(s.get(&alice.id, 100).unwrap().is_some());
        // A principal as large as any other takes nobody's place: at its
        // share, or (the one robbed) full.
        let robbed = format!("m{}", gone[0]);
        for i in 0..8 {
            let name = format!("m{i}");
            let e = s.create(&pending(&name, 100)).unwrap_err();
            if name == robbed {
                assert!(matches!(e, StoreError::Full { .. }), "{e}");
            } else {
                assert!(matches!(e, StoreError::OverShare { .. }), "{e}");
            }
        }
        // A settled record no longer counts as pending.
        s.complete(&alice.id, "al", Outcome::Cancelled, 200)
            .unwrap();
        assert!(s.create(&pending("al", 200)).is_ok());
        assert_eq!(s.counters().evicted, 2);
    }
}
