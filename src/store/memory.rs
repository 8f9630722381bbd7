//! In-process backend: one mutex over a map. Fast, not durable.
//!
//! Completion claims are kept small, since a server keeps one per completed
//! request for the life of its states: a table slot holds the key (16 bytes
//! of its SHA-256) and one allocation with the expiry and the outcome, a
//! plain text result as its text, any other as compact JSON ([`ClaimEntry`];
//! about 120 bytes each for a typical result, as a load run's target RSS
//! measures). An optional
//! budget ([`MemoryStore::with_budget`]) bounds what records and claims may
//! hold: past it a new one is refused ([`StoreError::Full`]), and no
//! completion is ever forgotten early.
//!
//! With a budget, pending records are shared fairly: a principal holds at
//! most 1/8 of the budget in pending records ([`StoreError::OverShare`],
//! once its own due ones are expired), and when the store is full, a new
//! record of a principal holding fewer pending records than the largest
//! holder evicts that holder's pending record closest to its expiry (its
//! flow is gone: the user is asked again), so one principal, or a crowd of
//! made-up ones, cannot fill the store for everyone else.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use sha2::{Digest as _, Sha256};

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

/// A claim key as kept here: the first 16 bytes of the key's SHA-256 (two
/// of 2^32 live claims collide with odds near 2^-64).
type ClaimKey = [u8; 16];

fn claim_key(key: &str) -> ClaimKey {
    let d = Sha256::digest(key.as_bytes());
    let mut k = [0; 16];
    k.copy_from_slice(&d[..16]);
    k
}

/// A taken claim in one allocation: `keep_until_ms` (8 bytes, little
/// endian), a tag, then the outcome: [`BARE`] (none), [`TEXT`] (a
/// `CallToolResult` of one text item: its `isError` byte and the text) or
/// [`JSON`] (any other outcome, compact).
#[derive(Debug)]
struct ClaimEntry(Box<[u8]>);

const BARE: u8 = 0;
const TEXT: u8 = 1;
const JSON: u8 = 2;

impl ClaimEntry {
    fn new(keep_until_ms: u64, outcome: Option<&Value>) -> Result<Self, StoreError> {
        let mut b = keep_until_ms.to_le_bytes().to_vec();
        match outcome {
            None => b.push(BARE),
            Some(v) => match text_result(v) {
                Some((text, is_error)) => {
                    b.extend([TEXT, u8::from(is_error)]);
                    b.extend_from_slice(text.as_bytes());
                }
                None => {
                    b.push(JSON);
                    serde_json::to_writer(&mut b, v).map_err(|e| StoreError::InvalidInput {
                        field: "claim outcome",
                        reason: e.to_string(),
                    })?;
                }
            },
        }
        Ok(ClaimEntry(b.into_boxed_slice()))
    }

    fn keep_until_ms(&self) -> u64 {
        let mut t = [0; 8];
        t.copy_from_slice(&self.0[..8]);
        u64::from_le_bytes(t)
    }

    fn taken(&self) -> Result<Taken, StoreError> {
        let corrupt = |reason: String| StoreError::Corrupt {
            id: "claims".into(),
            reason,
        };
        let rest = &self.0[9..];
        let outcome = match self.0[8] {
            BARE => None,
            TEXT => {
                let text = std::str::from_utf8(&rest[1..]).map_err(|e| corrupt(e.to_string()))?;
                Some(serde_json::json!({
                    "content": [{"type": "text", "text": text}],
                    "isError": rest[0] == 1,
                }))
            }
            _ => Some(serde_json::from_slice(rest).map_err(|e| corrupt(e.to_string()))?),
        };
        Ok(Taken { outcome })
    }

    /// Heap bytes it holds: the bytes and the allocator's header.
    fn heap_bytes(&self) -> u64 {
        heap_bytes(self.0.len())
    }
}

/// The text and `isError` of an outcome that is exactly a `CallToolResult`
/// of one text item (`{"content":[{"type":"text","text":T}],"isError":B}`).
fn text_result(v: &Value) -> Option<(&str, bool)> {
    let o = v.as_object().filter(|o| o.len() == 2)?;
    let is_error = o.get("isError")?.as_bool()?;
    let [item] = o.get("content")?.as_array()?.as_slice() else {
        return None;
    };
    let item = item.as_object().filter(|i| i.len() == 2)?;
    (item.get("type")?.as_str()? == "text").then_some(())?;
    Some((item.get("text")?.as_str()?, is_error))
}

/// What an allocation of `n` bytes costs (the allocator's 16-byte
/// granularity and header).
fn heap_bytes(n: usize) -> u64 {
    (n as u64).div_ceil(16) * 16 + 16
}

/// Bytes a table slot costs per unit of capacity: the key, the entry's
/// pointer and length and a control byte, over the table's 7/8 load at
/// capacity.
const CLAIM_SLOT_BYTES: u64 = (16 + 16 + 1) * 8 / 7;

/// A record's estimated cost: its boxed entry, id, principal, digest and
/// audit lines (records are per pending flow, far fewer than claims).
const RECORD_BYTES: u64 = 1024;

/// Entries are boxed: a table holds a fraction of its slots full, and a
/// doubled table of pointers costs 8 bytes a slot, not a whole entry's
/// ~240 (the step a burst would otherwise leave in RSS for good).
#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Box<Entry>>,
    claims: HashMap<ClaimKey, ClaimEntry>,
    /// Heap bytes of the claim entries (expiry and outcome each).
    claim_bytes: u64,
    /// Pending records by principal, by expiry (kept with a budget only).
    pending: HashMap<String, BTreeSet<(u64, String)>>,
}

impl Inner {
    fn pending_of(&self, principal: &str) -> usize {
        self.pending.get(principal).map_or(0, BTreeSet::len)
    }

    /// Forgets that `rec` is pending (it settled, expired or went).
    fn unpend(&mut self, rec: &Record) {
        if let Some(set) = self.pending.get_mut(&rec.principal) {
            set.remove(&(rec.expires_at_ms, rec.id.clone()));
            if set.is_empty() {
                self.pending.remove(&rec.principal);
            }
        }
    }

    /// Moves `principal`'s pending records due at `now_ms` to `Expired`.
    fn expire_due_of(&mut self, principal: &str, now_ms: u64) -> u64 {
        let due: Vec<String> = self.pending.get(principal).map_or_else(Vec::new, |set| {
            set.iter()
                .take_while(|(at, _)| *at <= now_ms)
                .map(|(_, id)| id.clone())
                .collect()
        });
        for id in &due {
            if let Some(e) = self.entries.get_mut(id) {
                e.transition(Status::Expired, None, now_ms);
                let rec = e.record.clone();
                self.unpend(&rec);
            }
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
            .filter(|set| set.len() > more_than)
            .max_by_key(|set| set.len())
            .and_then(|set| set.first().map(|(_, id)| id.clone()));
        let Some(id) = victim else {
            return false;
        };
        if let Some(e) = self.entries.remove(&id) {
            self.unpend(&e.record);
        }
        true
    }

    /// Estimated bytes held once `claims` more claims holding
    /// `claim_bytes` and `records` more records are added (a table about
    /// to grow counts at its doubled size).
    fn bytes_with(&self, claims: usize, claim_bytes: u64, records: usize) -> u64 {
        let cap = |len: usize, cap: usize, add: usize| {
            if len + add > cap {
                (cap * 2).max(len + add)
            } else {
                cap
            }
        };
        let slots = cap(self.claims.len(), self.claims.capacity(), claims) as u64;
        let entries = (self.entries.len() + records) as u64;
        slots * CLAIM_SLOT_BYTES + self.claim_bytes + claim_bytes + entries * RECORD_BYTES
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

    /// Estimated bytes its records and claims hold.
    pub fn bytes_held(&self) -> u64 {
        self.backend
            .lock()
            .map(|i| i.bytes_with(0, 0, 0))
            .unwrap_or_default()
    }
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
        records: usize,
    ) -> Result<(), StoreError> {
        match self.budget {
            Some(budget) if inner.bytes_with(claims, claim_bytes, records) > budget => {
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
    /// Room for one more pending record of `principal` under `budget`:
    /// within the principal's share (1/8 of the budget, after its due
    /// records expired), and within the budget once the largest holders'
    /// pending records are evicted (see the module docs).
    fn fair_room(
        &self,
        inner: &mut Inner,
        principal: &str,
        now_ms: u64,
        budget: u64,
    ) -> Result<(), StoreError> {
        let share = usize::try_from((budget / 8) / RECORD_BYTES)
            .unwrap_or(usize::MAX)
            .max(1);
        if inner.pending_of(principal) >= share {
            inner.expire_due_of(principal, now_ms);
            let held = inner.pending_of(principal);
            if held >= share {
                let first = inner
                    .pending
                    .get(principal)
                    .and_then(|set| set.first())
                    .map_or(now_ms, |(at, _)| *at);
                return Err(StoreError::OverShare {
                    held,
                    frees_in_ms: first.saturating_sub(now_ms),
                });
            }
        }
        for _ in 0..MAX_EVICTIONS {
            if self.room_for(inner, 0, 0, 1).is_ok() {
                return Ok(());
            }
            if !inner.evict_from_largest(inner.pending_of(principal) + 1) {
                break;
            }
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        self.room_for(inner, 0, 0, 1)
    }
}

impl Backend for MemoryBackend {
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError> {
        new.validate()?;
        let mut inner = self.lock()?;
        if let Some(budget) = self.budget {
            self.fair_room(&mut inner, &new.principal, new.created_at_ms, budget)?;
        } else {
            self.room_for(&inner, 0, 0, 1)?;
        }
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
        if self.budget.is_some() {
            inner
                .pending
                .entry(record.principal.clone())
                .or_default()
                .insert((record.expires_at_ms, id.clone()));
        }
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
            let settled = if entry.record.is_due(now_ms) {
                entry.transition(Status::Expired, None, now_ms);
                *expiries += 1;
                Err(StoreError::Expired)
            } else {
                entry.record.result = outcome.into_result();
                entry.transition(target, Some(principal), now_ms);
                Ok(Completion::Applied(entry.record.clone()))
            };
            let rec = entry.record.clone();
            inner.unpend(&rec);
            return settled;
        }
        settle_against(entry.record.clone(), target)
    }

    fn expire_due(&self, now_ms: u64, expiries: &mut u64) -> Result<usize, StoreError> {
        let mut inner = self.lock()?;
        let inner = &mut *inner;
        let mut n = 0;
        for entry in inner.entries.values_mut() {
            if entry.record.is_due(now_ms) {
                entry.transition(Status::Expired, None, now_ms);
                n += 1;
            }
        }
        // Whatever is still filed as pending and due has just expired.
        inner.pending.retain(|_, set| {
            set.retain(|(at, _)| *at > now_ms);
            !set.is_empty()
        });
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
        let k = claim_key(key);
        // Encoded outside the lock.
        let entry = ClaimEntry::new(keep_until_ms, outcome)?;
        let mut inner = self.lock()?;
        if let Some(c) = inner.claims.get(&k) {
            return Ok(Claim::Taken(c.taken()?));
        }
        self.room_for(&inner, 1, entry.heap_bytes(), 0)?;
        inner.claim_bytes += entry.heap_bytes();
        inner.claims.insert(k, entry);
        Ok(Claim::Won)
    }

    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError> {
        check_key(key)?;
        let k = claim_key(key);
        self.lock()?
            .claims
            .get(&k)
            .map(ClaimEntry::taken)
            .transpose()
    }

    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError> {
        let mut inner = self.lock()?;
        let mut purged = Purged::default();
        if let Some(cut) = cutoff(now_ms, retention_ms) {
            let before = inner.entries.len();
            let mut audit = 0;
            let mut gone_pending = Vec::new();
            inner.entries.retain(|_, e| {
                if e.record.expires_at_ms <= cut {
                    if e.record.status == Status::Pending {
                        gone_pending.push(e.record.clone());
                    }
                    audit += e.audit.len() as u64;
                    return false;
                }
                let n = e.audit.len();
                e.audit.retain(|a| a.at_ms > cut);
                audit += (n - e.audit.len()) as u64;
                true
            });
            for rec in &gone_pending {
                inner.unpend(rec);
            }
            purged.records = (before - inner.entries.len()) as u64;
            purged.audit = audit;
        }
        let before = inner.claims.len();
        let mut freed = 0;
        inner.claims.retain(|_, c| {
            let keep = c.keep_until_ms() >= now_ms;
            if !keep {
                freed += c.heap_bytes();
            }
            keep
        });
        inner.claim_bytes -= freed;
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
            // Near misses of the text shape are kept as JSON, exactly.
            json!({"content":[{"type":"text","text":"a"}],"isError":false,"structuredContent":{}}),
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
        // The plain text shape is stored as its text.
        let e = ClaimEntry::new(7, Some(&deployed())).unwrap();
        assert_eq!(
            (e.0[8], e.0.len()),
            (TEXT, 10 + "Deployed web to production.".len())
        );
        assert_eq!(e.keep_until_ms(), 7);
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
        let mut won = 0;
        let full = loop {
            match s.claim(&key(won), Some(&deployed()), 1_000) {
                Ok(c) => {
                    assert!(c.is_won());
                    won += 1;
                }
                Err(e) => break e,
            }
        };
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
        }
    }

    #[test]
    fn a_principal_holds_at_most_an_eighth_of_the_budget_in_pending_records() {
        // 32 records' worth: a share of 4.
        let s = MemoryStore::with_budget(32 * RECORD_BYTES);
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
        let s = MemoryStore::with_budget(16 * RECORD_BYTES);
        let crowd: Vec<Record> = (0..16)
            .map(|i| s.create(&pending(&format!("m{}", i % 8), i)).unwrap())
            .collect();
        let alice = s.create(&pending("alice", 100)).expect("room made");
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
        s.complete(&alice.id, "alice", Outcome::Cancelled, 200)
            .unwrap();
        assert!(s.create(&pending("alice", 200)).is_ok());
        assert_eq!(s.counters().evicted, 2);
    }
}
