//! Model checker: drives a real [`Store`] and a tiny reference model with an
//! explicit clock through the same operation sequence and reports the first
//! divergence or broken invariant.
//!
//! Reused by tests (handwritten sequences, proptest) and by the fuzz target,
//! which feeds raw bytes through [`Op::from_bytes`].
//!
//! Invariants checked after every operation: each completed record's side
//! effect runs exactly once (via [`Store::side_effect_once`]), nothing is
//! applied at or after expiry or by another principal, audit logs hold only
//! legal transitions with versions counting up by one, and every record and
//! audit log equals the model's.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};

use super::{
    AuditEntry, Completion, MemoryStore, Mode, NewRecord, Outcome, Record, RedisStore, SqliteStore,
    Status, Store, StoreError, is_plausible_id,
};

/// Principals the model creates records for.
const PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];
/// Most operations [`Op::from_bytes`] decodes.
pub const MAX_OPS: usize = 64;
/// Most threads one [`Op::ConcurrentComplete`] starts.
pub const MAX_THREADS: u8 = 16;
/// An id no store ever hands out (checked: the model never sees it created).
const ABSENT_ID: &str = "AAAAAAAAAAAAAAAAAAAAAA";

/// How the model settles a record; `Completed(n)` stores `{"masked": "…n"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ModelOutcome {
    /// Accept with a small payload tag.
    Completed(u8),
    /// Decline.
    Declined,
    /// Cancel.
    Cancelled,
}

impl ModelOutcome {
    fn from_byte(b: u8) -> Self {
        match b % 3 {
            0 => ModelOutcome::Completed(b / 3),
            1 => ModelOutcome::Declined,
            _ => ModelOutcome::Cancelled,
        }
    }

    fn to_outcome(self) -> Outcome {
        match self {
            ModelOutcome::Completed(n) => Outcome::Completed(json!({ "masked": format!("…{n}") })),
            ModelOutcome::Declined => Outcome::Declined,
            ModelOutcome::Cancelled => Outcome::Cancelled,
        }
    }
}

/// One step of a sequence. `record` picks a created record by index modulo
/// the number created (no records: an id that does not exist).
///
/// With the `arbitrary` feature the fuzzer builds these directly; times
/// are drawn from the same small ranges as [`Op::from_bytes`], so clocks
/// land on expiry instants often.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Op {
    /// Create a record for `PRINCIPALS[principal % 3]` living `ttl_ms` (decoded: 1..=32).
    Create {
        /// Principal index.
        principal: u8,
        /// Time to live, at least 1 ms.
        #[cfg_attr(feature = "arbitrary", arbitrary(with = arbitrary_ttl))]
        ttl_ms: u32,
        /// Form or URL mode.
        #[cfg_attr(feature = "arbitrary", arbitrary(with = arbitrary_mode))]
        mode: Mode,
    },
    /// Complete as the owner.
    Complete {
        /// Record index.
        record: u8,
        /// Outcome requested.
        outcome: ModelOutcome,
    },
    /// Complete as the owner twice in a row with the same outcome.
    DuplicateComplete {
        /// Record index.
        record: u8,
        /// Outcome requested.
        outcome: ModelOutcome,
    },
    /// Complete as the owner from `threads` threads at once.
    ConcurrentComplete {
        /// Record index.
        record: u8,
        /// Thread count, 2..=16.
        #[cfg_attr(feature = "arbitrary", arbitrary(with = arbitrary_threads))]
        threads: u8,
        /// Outcome requested by every thread.
        outcome: ModelOutcome,
    },
    /// Advance the clock, then optionally sweep with `expire_due`.
    Expire {
        /// Milliseconds to advance.
        #[cfg_attr(feature = "arbitrary", arbitrary(with = arbitrary_advance))]
        advance_ms: u32,
        /// Whether to call `expire_due` (otherwise expiry is observed lazily).
        sweep: bool,
    },
    /// Cancel as the owner.
    Cancel {
        /// Record index.
        record: u8,
    },
    /// Complete as a principal who does not own the record.
    CompleteByOtherPrincipal {
        /// Record index.
        record: u8,
    },
    /// Reopen the store (SQLite); no-op for memory.
    Restart,
    /// Claim the one-time key `nonce:<key % 8>`.
    ClaimSideEffect {
        /// Key index.
        key: u8,
    },
}

#[cfg(feature = "arbitrary")]
fn arbitrary_ttl(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<u32> {
    Ok(1 + u32::from(u.arbitrary::<u8>()? % 32))
}

#[cfg(feature = "arbitrary")]
fn arbitrary_mode(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<Mode> {
    Ok(if u.arbitrary::<bool>()? {
        Mode::Url
    } else {
        Mode::Form
    })
}

#[cfg(feature = "arbitrary")]
fn arbitrary_threads(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<u8> {
    Ok(2 + u.arbitrary::<u8>()? % (MAX_THREADS - 1))
}

/// 0..7 ms nudges and 0..63 ms jumps, as in [`Op::from_bytes`].
#[cfg(feature = "arbitrary")]
fn arbitrary_advance(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<u32> {
    let b = u.arbitrary::<u8>()?;
    let v = u32::from(b >> 2);
    Ok(if b & 2 == 0 { v % 8 } else { v })
}

impl Op {
    /// Decodes bytes into at most [`MAX_OPS`] operations, deterministically;
    /// every byte string is valid (missing argument bytes read as 0).
    pub fn from_bytes(bytes: &[u8]) -> Vec<Op> {
        let mut it = bytes.iter().copied();
        let mut ops = Vec::new();
        while ops.len() < MAX_OPS {
            let Some(tag) = it.next() else { break };
            let mut arg = || it.next().unwrap_or(0);
            let op = match tag % 9 {
                0 => {
                    let b = arg();
                    Op::Create {
                        principal: b % 3,
                        ttl_ms: 1 + u32::from(arg() % 32),
                        mode: if b & 0x10 == 0 { Mode::Form } else { Mode::Url },
                    }
                }
                1 => Op::Complete {
                    record: arg(),
                    outcome: ModelOutcome::from_byte(arg()),
                },
                2 => Op::DuplicateComplete {
                    record: arg(),
                    outcome: ModelOutcome::from_byte(arg()),
                },
                3 => Op::ConcurrentComplete {
                    record: arg(),
                    threads: 2 + arg() % (MAX_THREADS - 1),
                    outcome: ModelOutcome::from_byte(arg()),
                },
                4 => {
                    // Small TTLs and steps so the clock often lands exactly
                    // on an expiry instant. bit 0: sweep; bit 1: 0..7 ms
                    // nudge or 0..63 ms jump.
                    let b = arg();
                    let v = u32::from(b >> 2);
                    Op::Expire {
                        advance_ms: if b & 2 == 0 { v % 8 } else { v },
                        sweep: b & 1 == 1,
                    }
                }
                5 => Op::Cancel { record: arg() },
                6 => Op::CompleteByOtherPrincipal { record: arg() },
                7 => Op::Restart,
                _ => Op::ClaimSideEffect { key: arg() % 8 },
            };
            ops.push(op);
        }
        ops
    }
}

/// Which backend [`run`] drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendKind {
    /// A fresh [`MemoryStore`].
    Memory,
    /// A [`SqliteStore`] at this path, which must not hold a database yet.
    Sqlite(PathBuf),
    /// A [`RedisStore`] on this URL, whose database must be empty.
    Redis(String),
}

/// The first point where the store and the model disagree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model violation at step {step} ({op}): {what}")]
pub struct ModelViolation {
    /// Index of the operation (0 before the first one).
    pub step: usize,
    /// The operation, in `Debug` form.
    pub op: String,
    /// What diverged.
    pub what: String,
}

/// Shape of an answer to `complete`, comparable between store and model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    Applied,
    AlreadyDone,
    NotFound,
    WrongPrincipal,
    Expired,
    Illegal(u8, u8),
    Other,
}

fn answer_of(r: &Result<Completion, StoreError>) -> Answer {
    match r {
        Ok(Completion::Applied(_)) => Answer::Applied,
        Ok(Completion::AlreadyDone(_)) => Answer::AlreadyDone,
        Err(StoreError::NotFound) => Answer::NotFound,
        Err(StoreError::WrongPrincipal) => Answer::WrongPrincipal,
        Err(StoreError::Expired) => Answer::Expired,
        Err(StoreError::IllegalTransition { from, to }) => Answer::Illegal(*from as u8, *to as u8),
        Err(_) => Answer::Other,
    }
}

/// The model's view of one record.
#[derive(Debug, Clone)]
struct ModelRecord {
    id: String,
    principal: usize,
    mode: Mode,
    digest: [u8; 32],
    created_at_ms: u64,
    expires_at_ms: u64,
    status: Status,
    version: u64,
    result: Option<Value>,
    audit: Vec<AuditEntry>,
    effects: u32,
}

impl ModelRecord {
    fn push(&mut self, to: Status, actor: Option<&str>, at_ms: u64) {
        let from = self.status;
        self.status = to;
        self.version += 1;
        self.audit.push(AuditEntry {
            at_ms,
            from: Some(from),
            to,
            actor_principal: actor.map(str::to_owned),
            version: self.version,
        });
    }
}

/// Reference model: a vector of records, a clock and a claim set.
#[derive(Debug, Default)]
struct Model {
    now_ms: u64,
    records: Vec<ModelRecord>,
    claims: HashSet<String>,
}

impl Model {
    fn pick(&self, record: u8) -> Option<usize> {
        (!self.records.is_empty()).then(|| usize::from(record) % self.records.len())
    }

    /// The specification of `complete`, written independently of the backends.
    fn complete(&mut self, idx: Option<usize>, principal: &str, outcome: ModelOutcome) -> Answer {
        let now = self.now_ms;
        let Some(rec) = idx.map(|i| &mut self.records[i]) else {
            return Answer::NotFound;
        };
        if PRINCIPALS[rec.principal] != principal {
            return Answer::WrongPrincipal;
        }
        let target = outcome.to_outcome().status();
        match rec.status {
            Status::Pending if now >= rec.expires_at_ms => {
                rec.push(Status::Expired, None, now);
                Answer::Expired
            }
            Status::Pending => {
                rec.result = outcome.to_outcome().into_result();
                rec.push(target, Some(principal), now);
                Answer::Applied
            }
            Status::Expired => Answer::Expired,
            s if s == target => Answer::AlreadyDone,
            s => Answer::Illegal(s as u8, target as u8),
        }
    }
}

/// Holds the store under test and knows how to reopen it.
struct Harness {
    backend: BackendKind,
    store: Arc<dyn Store>,
}

impl Harness {
    fn open(backend: BackendKind) -> Result<Self, StoreError> {
        let store: Arc<dyn Store> = match &backend {
            BackendKind::Memory => Arc::new(MemoryStore::new()),
            BackendKind::Sqlite(path) => Arc::new(SqliteStore::open(path)?),
            BackendKind::Redis(url) => Arc::new(RedisStore::open(url)?),
        };
        Ok(Harness { backend, store })
    }

    fn restart(&mut self) -> Result<(), StoreError> {
        match &self.backend {
            BackendKind::Memory => {}
            BackendKind::Sqlite(path) => {
                // Replace first so the old connection is closed before reopening.
                self.store = Arc::new(MemoryStore::new());
                self.store = Arc::new(SqliteStore::open(path)?);
            }
            // A new process's view: fresh connections, the same database.
            BackendKind::Redis(url) => self.store = Arc::new(RedisStore::open(url)?),
        }
        Ok(())
    }
}

/// Runner state for one sequence.
struct Runner {
    h: Harness,
    model: Model,
    step: usize,
    op: String,
}

impl Runner {
    fn fail(&self, what: impl Into<String>) -> ModelViolation {
        ModelViolation {
            step: self.step,
            op: self.op.clone(),
            what: what.into(),
        }
    }

    fn id_of(&self, idx: Option<usize>) -> String {
        idx.map_or_else(
            || ABSENT_ID.to_owned(),
            |i| self.model.records[i].id.clone(),
        )
    }

    /// Exactly-once side effect: whoever sees the record `Completed` tries to
    /// claim `effect:<id>`; only the first claim may win.
    fn after_completion(&mut self, idx: usize, wins: usize) -> Result<(), ModelViolation> {
        let rec = &mut self.model.records[idx];
        let key = format!("effect:{}", rec.id);
        let expected = usize::from(self.model.claims.insert(key));
        if wins != expected {
            return Err(self.fail(format!(
                "side effect claimed {wins} times, model expected {expected}"
            )));
        }
        let rec = &mut self.model.records[idx];
        rec.effects += u32::try_from(wins).unwrap_or(u32::MAX);
        if rec.effects > 1 {
            return Err(self.fail("side effect ran more than once"));
        }
        Ok(())
    }

    fn check_answer(
        &self,
        got: &Result<Completion, StoreError>,
        want: Answer,
        principal: &str,
    ) -> Result<(), ModelViolation> {
        let got_a = answer_of(got);
        if got_a != want {
            return Err(self.fail(format!("store answered {got:?}, model expected {want:?}")));
        }
        if let Ok(Completion::Applied(r)) = got {
            if r.principal != principal {
                return Err(self.fail("applied a completion by another principal"));
            }
            if self.model.now_ms >= r.expires_at_ms {
                return Err(self.fail("applied a completion at or after expiry"));
            }
        }
        Ok(())
    }

    fn claim_count(
        &self,
        idx: usize,
        got: &Result<Completion, StoreError>,
    ) -> Result<usize, ModelViolation> {
        match got {
            Ok(c) if c.record().status == Status::Completed => {
                let key = format!("effect:{}", self.model.records[idx].id);
                let won = self
                    .h
                    .store
                    .side_effect_once(&key)
                    .map_err(|e| self.fail(format!("side_effect_once: {e}")))?;
                Ok(usize::from(won))
            }
            _ => Ok(0),
        }
    }

    fn complete_once(
        &mut self,
        idx: Option<usize>,
        principal: &str,
        outcome: ModelOutcome,
    ) -> Result<(), ModelViolation> {
        let id = self.id_of(idx);
        let got = self
            .h
            .store
            .complete(&id, principal, outcome.to_outcome(), self.model.now_ms);
        let want = self.model.complete(idx, principal, outcome);
        self.check_answer(&got, want, principal)?;
        if let Some(i) = idx {
            let wins = self.claim_count(i, &got)?;
            if let Ok(c) = &got
                && c.record().status == Status::Completed
            {
                self.after_completion(i, wins)?;
            }
            if let Ok(c) = &got {
                self.compare_record(c.record(), i)?;
            }
        }
        Ok(())
    }

    fn complete_concurrently(
        &mut self,
        idx: Option<usize>,
        threads: u8,
        outcome: ModelOutcome,
    ) -> Result<(), ModelViolation> {
        let id = self.id_of(idx);
        let principal = idx.map_or("alice", |i| PRINCIPALS[self.model.records[i].principal]);
        let n = usize::from(threads.clamp(2, MAX_THREADS));
        let barrier = Barrier::new(n);
        let now = self.model.now_ms;
        let store = &self.h.store;
        let results: Vec<(Result<Completion, StoreError>, Result<bool, StoreError>)> =
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..n)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            let r = store.complete(&id, principal, outcome.to_outcome(), now);
                            let claim = match &r {
                                Ok(c) if c.record().status == Status::Completed => {
                                    store.side_effect_once(&format!("effect:{id}"))
                                }
                                _ => Ok(false),
                            };
                            (r, claim)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| (Err(StoreError::Poisoned), Ok(false)))
                    })
                    .collect()
            });
        let mut want: Vec<Answer> = (0..n)
            .map(|_| self.model.complete(idx, principal, outcome))
            .collect();
        let mut got: Vec<Answer> = results.iter().map(|(r, _)| answer_of(r)).collect();
        want.sort();
        got.sort();
        if got != want {
            return Err(self.fail(format!(
                "concurrent answers {got:?}, model expected {want:?}"
            )));
        }
        for (r, _) in &results {
            self.check_answer(r, answer_of(r), principal)?;
        }
        let mut wins = 0;
        for (_, claim) in &results {
            match claim {
                Ok(true) => wins += 1,
                Ok(false) => {}
                Err(e) => return Err(self.fail(format!("side_effect_once: {e}"))),
            }
        }
        if let Some(i) = idx {
            if self.model.records[i].status == Status::Completed {
                self.after_completion(i, wins)?;
            } else if wins != 0 {
                return Err(self.fail("side effect claimed for a record that is not completed"));
            }
            if let Some((Ok(c), _)) = results.iter().find(|(r, _)| r.is_ok()) {
                self.compare_record(c.record(), i)?;
            }
        }
        Ok(())
    }

    fn compare_record(&self, got: &Record, idx: usize) -> Result<(), ModelViolation> {
        let m = &self.model.records[idx];
        let seen = if m.status == Status::Pending && self.model.now_ms >= m.expires_at_ms {
            Status::Expired
        } else {
            m.status
        };
        let same = got.id == m.id
            && got.principal == PRINCIPALS[m.principal]
            && got.mode == m.mode
            // The memory store forgets a settled record's digest.
            && (got.request_digest == Some(m.digest)
                || (got.request_digest.is_none() && seen != Status::Pending))
            && got.created_at_ms == m.created_at_ms
            && got.expires_at_ms == m.expires_at_ms
            && got.status == seen
            && got.version == m.version
            && got.result == m.result;
        if !same {
            return Err(self.fail(format!("record {got:?} differs from model {m:?}")));
        }
        Ok(())
    }

    /// Audit logs: equal to the model and made of legal transitions only.
    fn check_audit(&self, idx: usize) -> Result<(), ModelViolation> {
        let m = &self.model.records[idx];
        let audit = self
            .h
            .store
            .audit(&m.id)
            .map_err(|e| self.fail(format!("audit: {e}")))?;
        if audit != m.audit {
            return Err(self.fail(format!("audit {audit:?} differs from model {:?}", m.audit)));
        }
        let mut prev: Option<&AuditEntry> = None;
        for e in &audit {
            let ok = match prev {
                None => e.from.is_none() && e.to == Status::Pending && e.version == 0,
                Some(p) => {
                    e.from == Some(p.to)
                        && Status::can_transition(p.to, e.to)
                        && e.version == p.version + 1
                }
            };
            if !ok {
                return Err(self.fail(format!("illegal audit step {prev:?} -> {e:?}")));
            }
            prev = Some(e);
        }
        Ok(())
    }

    fn check_all(&self) -> Result<(), ModelViolation> {
        for idx in 0..self.model.records.len() {
            let id = &self.model.records[idx].id;
            let got = self
                .h
                .store
                .get(id, self.model.now_ms)
                .map_err(|e| self.fail(format!("get: {e}")))?
                .ok_or_else(|| self.fail(format!("record {id} vanished")))?;
            self.compare_record(&got, idx)?;
            self.check_audit(idx)?;
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), ModelViolation> {
        match *op {
            Op::Create {
                principal,
                ttl_ms,
                mode,
            } => {
                let p = usize::from(principal) % PRINCIPALS.len();
                let n = self.model.records.len();
                let digest = [u8::try_from(n % 256).unwrap_or(0); 32];
                let now = self.model.now_ms;
                let new = NewRecord {
                    principal: PRINCIPALS[p].to_owned(),
                    client_id: Some(format!("client-{p}")),
                    request_digest: digest,
                    mode,
                    created_at_ms: now,
                    expires_at_ms: now + u64::from(ttl_ms.max(1)),
                    csrf_token: (mode == Mode::Url).then(|| format!("csrf-{n}")),
                    origin: None,
                };
                let rec = self
                    .h
                    .store
                    .create(&new)
                    .map_err(|e| self.fail(format!("create: {e}")))?;
                if !is_plausible_id(&rec.id) || self.model.records.iter().any(|r| r.id == rec.id) {
                    return Err(self.fail(format!("bad or duplicate id {:?}", rec.id)));
                }
                self.model.records.push(ModelRecord {
                    id: rec.id.clone(),
                    principal: p,
                    mode,
                    digest,
                    created_at_ms: now,
                    expires_at_ms: new.expires_at_ms,
                    status: Status::Pending,
                    version: 0,
                    result: None,
                    audit: vec![AuditEntry {
                        at_ms: now,
                        from: None,
                        to: Status::Pending,
                        actor_principal: Some(PRINCIPALS[p].to_owned()),
                        version: 0,
                    }],
                    effects: 0,
                });
                self.compare_record(&rec, n)
            }
            Op::Complete { record, outcome } => {
                let idx = self.model.pick(record);
                let p = self.owner(idx);
                self.complete_once(idx, p, outcome)
            }
            Op::DuplicateComplete { record, outcome } => {
                let idx = self.model.pick(record);
                let p = self.owner(idx);
                self.complete_once(idx, p, outcome)?;
                self.complete_once(idx, p, outcome)
            }
            Op::ConcurrentComplete {
                record,
                threads,
                outcome,
            } => {
                let idx = self.model.pick(record);
                self.complete_concurrently(idx, threads, outcome)
            }
            Op::Expire { advance_ms, sweep } => {
                self.model.now_ms += u64::from(advance_ms);
                if sweep {
                    let now = self.model.now_ms;
                    let got = self
                        .h
                        .store
                        .expire_due(now)
                        .map_err(|e| self.fail(format!("expire_due: {e}")))?;
                    let mut want = 0;
                    for r in &mut self.model.records {
                        if r.status == Status::Pending && now >= r.expires_at_ms {
                            r.push(Status::Expired, None, now);
                            want += 1;
                        }
                    }
                    if got != want {
                        return Err(self.fail(format!("expire_due moved {got}, model {want}")));
                    }
                }
                Ok(())
            }
            Op::Cancel { record } => {
                let idx = self.model.pick(record);
                let p = self.owner(idx);
                self.complete_once(idx, p, ModelOutcome::Cancelled)
            }
            Op::CompleteByOtherPrincipal { record } => {
                let idx = self.model.pick(record);
                let other =
                    idx.map_or(1, |i| self.model.records[i].principal + 1) % PRINCIPALS.len();
                self.complete_once(idx, PRINCIPALS[other], ModelOutcome::Completed(0))
            }
            Op::Restart => self
                .h
                .restart()
                .map_err(|e| self.fail(format!("reopen: {e}"))),
            Op::ClaimSideEffect { key } => {
                let key = format!("nonce:{}", key % 8);
                let got = self
                    .h
                    .store
                    .side_effect_once(&key)
                    .map_err(|e| self.fail(format!("side_effect_once: {e}")))?;
                let want = self.model.claims.insert(key);
                if got != want {
                    return Err(self.fail(format!("claim answered {got}, model {want}")));
                }
                Ok(())
            }
        }
    }

    fn owner(&self, idx: Option<usize>) -> &'static str {
        idx.map_or("alice", |i| PRINCIPALS[self.model.records[i].principal])
    }
}

/// Applies `ops` to a fresh store of kind `backend` and to the model,
/// checking every invariant after every step.
pub fn run(ops: &[Op], backend: BackendKind) -> Result<(), ModelViolation> {
    let h = Harness::open(backend).map_err(|e| ModelViolation {
        step: 0,
        op: "open".into(),
        what: e.to_string(),
    })?;
    let mut runner = Runner {
        h,
        model: Model {
            now_ms: 1_000,
            ..Model::default()
        },
        step: 0,
        op: "start".into(),
    };
    for (step, op) in ops.iter().enumerate() {
        runner.step = step;
        runner.op = format!("{op:?}");
        runner.apply(op)?;
        runner.check_all()?;
    }
    let absent = runner
        .h
        .store
        .get(ABSENT_ID, runner.model.now_ms)
        .map_err(|e| runner.fail(format!("get: {e}")))?;
    if absent.is_some() {
        return Err(runner.fail("an id that was never created exists"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_is_deterministic_and_bounded() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(Op::from_bytes(&bytes), Op::from_bytes(&bytes));
        assert!(Op::from_bytes(&bytes).len() <= MAX_OPS);
        assert!(Op::from_bytes(&[]).is_empty());
        assert_eq!(Op::from_bytes(&[7]), vec![Op::Restart]);
        assert_eq!(
            Op::from_bytes(&[0]),
            vec![Op::Create {
                principal: 0,
                ttl_ms: 1,
                mode: Mode::Form
            }]
        );
    }

    #[test]
    fn memory_passes_a_mixed_sequence() {
        let ops = vec![
            Op::Complete {
                record: 0,
                outcome: ModelOutcome::Declined,
            },
            Op::Create {
                principal: 1,
                ttl_ms: 100,
                mode: Mode::Url,
            },
            Op::CompleteByOtherPrincipal { record: 0 },
            Op::ConcurrentComplete {
                record: 0,
                threads: 8,
                outcome: ModelOutcome::Completed(3),
            },
            Op::DuplicateComplete {
                record: 0,
                outcome: ModelOutcome::Completed(4),
            },
            Op::Cancel { record: 0 },
            Op::Create {
                principal: 2,
                ttl_ms: 10,
                mode: Mode::Form,
            },
            Op::Expire {
                advance_ms: 10,
                sweep: false,
            },
            Op::Complete {
                record: 1,
                outcome: ModelOutcome::Completed(1),
            },
            Op::Create {
                principal: 0,
                ttl_ms: 5,
                mode: Mode::Form,
            },
            Op::Expire {
                advance_ms: 5,
                sweep: true,
            },
            Op::ClaimSideEffect { key: 1 },
            Op::ClaimSideEffect { key: 9 },
            Op::Restart,
        ];
        run(&ops, BackendKind::Memory).expect("memory store follows the model");
    }
}
