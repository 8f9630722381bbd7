//! A record as the memory store keeps it ([`Slim`]): one allocation of 96
//! bytes holding its key (the id's 16 random bytes rather than its
//! 22-character text; the table finds an [`Entry`] by it, so a slot is one
//! pointer) plus one with its principal, CSRF token, outcome and, once its
//! request completed, the completion claim it keeps.
//!
//! A record changes state once (pending → a terminal status), so its audit
//! log is two lines at most and its version 0 or 1: both are rebuilt from
//! the creation time, the settling time and who settled it, where each
//! record kept a vector of lines with a copy of the principal in each. The
//! outcome is kept as compact JSON and read back on demand, and a URL
//! flow's CSRF token is forgotten once the flow settles (its page answers
//! 409 before comparing any token). What one costs
//! is [`Slim::heap_bytes`], which the store sums per kind for its budget and
//! `/stats`.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::record::{AuditEntry, Mode, NewRecord, Record, Status, StoreError};

/// A record id as the memory store keys it: the 16 random bytes the id
/// encodes.
pub(super) type RecordKey = [u8; 16];

/// The key of `id`, or `None` when no id of ours reads that way (its
/// base64url form is canonical, so one key has one id).
pub(super) fn record_key(id: &str) -> Option<RecordKey> {
    let mut key = [0; 16];
    match URL_SAFE_NO_PAD.decode_slice(id, &mut key) {
        Ok(16) if id.len() == super::ID_LEN => Some(key),
        _ => None,
    }
}

/// The id `key` stands for.
pub(super) fn id_of(key: &RecordKey) -> String {
    URL_SAFE_NO_PAD.encode(key)
}

/// What an allocation of `n` bytes costs with mimalloc (the allocator
/// `serve` runs on): a multiple of 8 up to 64 bytes, then four size classes
/// per doubling. What the store counts for each heap part.
pub(super) fn heap_bytes(n: usize) -> u64 {
    let words = (n as u64).div_ceil(8);
    if words <= 8 {
        return words * 8;
    }
    let step = 1 << ((words - 1).ilog2() - 2);
    words.div_ceil(step) * step * 8
}

/// Audit lines still kept (the purge drops the ones past retention).
const CREATION_LINE: u8 = 1;
const SETTLING_LINE: u8 = 2;

/// One record, compact. See the module docs.
#[derive(Debug)]
pub(super) struct Slim {
    /// Its key in the store's table (the id's 16 bytes).
    key: RecordKey,
    /// Principal, client id, CSRF token and outcome (compact JSON) in one
    /// allocation: see [`Parts`].
    parts: Box<[u8]>,
    request_digest: [u8; 32],
    created_at_ms: u64,
    expires_at_ms: u64,
    /// When it left `Pending` (meaningless while pending).
    settled_at_ms: u64,
    mode: Mode,
    status: Status,
    /// Settled by its principal (else by the store: expiry).
    by_owner: bool,
    /// [`CREATION_LINE`] | [`SETTLING_LINE`]: audit lines still kept.
    audit: u8,
}

/// The layout of [`Slim::parts`]: three little-endian `u16` lengths
/// (principal, client id, CSRF token; [`ABSENT`] for an absent one), a
/// byte of flags ([`HAS_OUTCOME`], [`HAS_CLAIM`]), then the texts, the
/// claim (its length as a little-endian `u32`, then its encoding, see
/// [`super::memory_claim`]) and the outcome.
struct Parts;

/// The length written for an absent part (fields are at most
/// [`super::MAX_FIELD_LEN`] bytes).
const ABSENT: u16 = u16::MAX;
const HEADER: usize = 7;
const HAS_OUTCOME: u8 = 1;
const HAS_CLAIM: u8 = 2;

impl Parts {
    fn build(texts: [Option<&str>; 3], claim: Option<&[u8]>, outcome: Option<&[u8]>) -> Box<[u8]> {
        let len = |t: Option<&str>| t.map_or(0, str::len);
        let size = HEADER
            + texts.iter().map(|t| len(*t)).sum::<usize>()
            + claim.map_or(0, |c| 4 + c.len())
            + outcome.map_or(0, <[u8]>::len);
        let mut b = Vec::with_capacity(size);
        for t in texts {
            let n = t.map_or(ABSENT, |t| u16::try_from(t.len()).unwrap_or(ABSENT - 1));
            b.extend(n.to_le_bytes());
        }
        let flag = |on: bool, f: u8| if on { f } else { 0 };
        b.push(flag(outcome.is_some(), HAS_OUTCOME) | flag(claim.is_some(), HAS_CLAIM));
        for t in texts.into_iter().flatten() {
            b.extend_from_slice(t.as_bytes());
        }
        if let Some(c) = claim {
            // A claim is at most a few KiB: an outcome of a tool result.
            b.extend(u32::try_from(c.len()).unwrap_or(u32::MAX).to_le_bytes());
            b.extend_from_slice(c);
        }
        b.extend_from_slice(outcome.unwrap_or_default());
        b.into_boxed_slice()
    }

    /// Bytes the texts before text `i` take (`i` = 3: all of them).
    fn offset(b: &[u8], i: usize) -> usize {
        (0..i)
            .map(|j| Parts::len(b, j))
            .filter(|&n| n != ABSENT)
            .map(usize::from)
            .sum::<usize>()
            + HEADER
    }

    fn len(b: &[u8], j: usize) -> u16 {
        u16::from_le_bytes([b[2 * j], b[2 * j + 1]])
    }

    /// Text `i` (0 principal, 1 client id, 2 CSRF token).
    fn text(b: &[u8], i: usize) -> Option<&str> {
        let start = Parts::offset(b, i);
        match Parts::len(b, i) {
            ABSENT => None,
            n => std::str::from_utf8(b.get(start..start + usize::from(n))?).ok(),
        }
    }

    /// The claim's length field and bytes, where it has one.
    fn claim_span(b: &[u8]) -> Option<(usize, usize)> {
        (b[HEADER - 1] & HAS_CLAIM != 0).then_some(())?;
        let at = Parts::offset(b, 3);
        let n = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize;
        Some((at + 4, at + 4 + n))
    }

    fn claim(b: &[u8]) -> Option<&[u8]> {
        let (from, to) = Parts::claim_span(b)?;
        b.get(from..to)
    }

    fn outcome(b: &[u8]) -> Option<&[u8]> {
        (b[HEADER - 1] & HAS_OUTCOME != 0).then_some(())?;
        let at = Parts::claim_span(b).map_or(Parts::offset(b, 3), |(_, to)| to);
        b.get(at..)
    }
}

impl Slim {
    /// The pending record for `new`.
    pub(super) fn new(key: RecordKey, new: &NewRecord) -> Slim {
        Slim {
            key,
            parts: Parts::build(
                [
                    Some(&new.principal),
                    new.client_id.as_deref(),
                    new.csrf_token.as_deref(),
                ],
                None,
                None,
            ),
            request_digest: new.request_digest,
            created_at_ms: new.created_at_ms,
            expires_at_ms: new.expires_at_ms,
            settled_at_ms: 0,
            mode: new.mode,
            status: Status::Pending,
            by_owner: false,
            audit: CREATION_LINE,
        }
    }

    /// The same record under `key`.
    pub(super) fn keyed(self, key: RecordKey) -> Slim {
        Slim { key, ..self }
    }

    pub(super) fn key(&self) -> &RecordKey {
        &self.key
    }

    /// The record it holds, as stored (not as seen at a time).
    pub(super) fn record(&self) -> Record {
        let text = |i| Parts::text(&self.parts, i).map(str::to_owned);
        Record {
            id: id_of(&self.key),
            principal: self.principal().to_owned(),
            client_id: text(1),
            request_digest: self.request_digest,
            mode: self.mode,
            status: self.status,
            created_at_ms: self.created_at_ms,
            expires_at_ms: self.expires_at_ms,
            version: self.version(),
            csrf_token: text(2),
            // Written by `settle` from a Value, so it reads back as one.
            result: Parts::outcome(&self.parts).and_then(|b| serde_json::from_slice(b).ok()),
        }
    }

    pub(super) fn principal(&self) -> &str {
        Parts::text(&self.parts, 0).unwrap_or_default()
    }

    pub(super) fn status(&self) -> Status {
        self.status
    }

    pub(super) fn mode(&self) -> Mode {
        self.mode
    }

    pub(super) fn expires_at_ms(&self) -> u64 {
        self.expires_at_ms
    }

    /// Pending and past its expiry at `now_ms`.
    pub(super) fn is_due(&self, now_ms: u64) -> bool {
        self.status == Status::Pending && now_ms >= self.expires_at_ms
    }

    fn version(&self) -> u64 {
        u64::from(self.status != Status::Pending)
    }

    /// Moves a pending record to terminal `to` at `at_ms`, keeping
    /// `result`; `by_owner` when its principal did it (else the store).
    pub(super) fn settle(
        &mut self,
        to: Status,
        by_owner: bool,
        at_ms: u64,
        result: Option<&Value>,
    ) -> Result<(), StoreError> {
        debug_assert!(Status::can_transition(self.status, to));
        let outcome = match result {
            Some(v) => Some(serde_json::to_vec(v).map_err(|e| StoreError::InvalidInput {
                field: "outcome",
                reason: e.to_string(),
            })?),
            None => None,
        };
        // The CSRF token goes: a settled flow's page answers 409 before
        // any token is compared.
        let text = |i| Parts::text(&self.parts, i);
        self.parts = Parts::build(
            [text(0), text(1), None],
            Parts::claim(&self.parts),
            outcome.as_deref(),
        );
        self.status = to;
        self.by_owner = by_owner;
        self.settled_at_ms = at_ms;
        self.audit |= SETTLING_LINE;
        Ok(())
    }

    /// The completion claim it keeps (see [`Slim::keep_claim`]).
    pub(super) fn claim(&self) -> Option<&[u8]> {
        Parts::claim(&self.parts)
    }

    /// Keeps `claim` (an encoded claim, [`super::memory_claim`]) in this
    /// settled record's entry, so the completed flow holds one entry.
    pub(super) fn keep_claim(&mut self, claim: &[u8]) {
        debug_assert!(self.status != Status::Pending && self.claim().is_none());
        self.rebuild(Some(claim));
    }

    /// Takes its claim out (to forget it, or to keep it elsewhere).
    pub(super) fn take_claim(&mut self) -> Option<Box<[u8]>> {
        let claim: Box<[u8]> = self.claim()?.into();
        self.rebuild(None);
        Some(claim)
    }

    /// The same parts with `claim` in place of the one it keeps.
    fn rebuild(&mut self, claim: Option<&[u8]>) {
        let text = |i| Parts::text(&self.parts, i);
        self.parts = Parts::build(
            [text(0), text(1), text(2)],
            claim,
            Parts::outcome(&self.parts),
        );
    }

    /// Its audit log, oldest first.
    pub(super) fn audit(&self) -> Vec<AuditEntry> {
        let owner = || Some(self.principal().to_owned());
        let mut lines = Vec::new();
        if self.audit & CREATION_LINE != 0 {
            lines.push(AuditEntry {
                at_ms: self.created_at_ms,
                from: None,
                to: Status::Pending,
                actor_principal: owner(),
                version: 0,
            });
        }
        if self.audit & SETTLING_LINE != 0 && self.status != Status::Pending {
            lines.push(AuditEntry {
                at_ms: self.settled_at_ms,
                from: Some(Status::Pending),
                to: self.status,
                actor_principal: if self.by_owner { owner() } else { None },
                version: 1,
            });
        }
        lines
    }

    /// How many audit lines it keeps.
    pub(super) fn audit_lines(&self) -> u64 {
        u64::from(self.audit & CREATION_LINE != 0)
            + u64::from(self.audit & SETTLING_LINE != 0 && self.status != Status::Pending)
    }

    /// How many of its audit lines are at or before `cut`.
    pub(super) fn audit_past(&self, cut: u64) -> u64 {
        u64::from(self.audit & CREATION_LINE != 0 && self.created_at_ms <= cut)
            + u64::from(self.audit & SETTLING_LINE != 0 && self.settled_at_ms <= cut)
    }

    /// Drops the audit lines at or before `cut`; how many went.
    pub(super) fn purge_audit(&mut self, cut: u64) -> u64 {
        let mut gone = 0;
        if self.audit & CREATION_LINE != 0 && self.created_at_ms <= cut {
            self.audit &= !CREATION_LINE;
            gone += 1;
        }
        if self.audit & SETTLING_LINE != 0 && self.settled_at_ms <= cut {
            self.audit &= !SETTLING_LINE;
            gone += 1;
        }
        gone
    }

    /// Heap bytes it holds: its box and its parts.
    pub(super) fn heap_bytes(&self) -> u64 {
        heap_bytes(size_of::<Slim>()) + heap_bytes(self.parts.len())
    }

    /// What [`Slim::heap_bytes`] would be with a claim of `len` bytes
    /// kept (it keeps none).
    pub(super) fn heap_bytes_with_claim(&self, len: usize) -> u64 {
        heap_bytes(size_of::<Slim>()) + heap_bytes(self.parts.len() + 4 + len)
    }
}

/// A record in the store's table, found by the key it holds, so a slot
/// of the table is one pointer (a map would keep the key a second time,
/// in a slot counted at the table's lowest load).
#[derive(Debug)]
pub(super) struct Entry(Box<Slim>);

impl Entry {
    pub(super) fn new(slim: Slim) -> Entry {
        Entry(Box::new(slim))
    }
}

impl Deref for Entry {
    type Target = Slim;
    fn deref(&self) -> &Slim {
        &self.0
    }
}

/// Changes never touch the key (it has no setter).
impl DerefMut for Entry {
    fn deref_mut(&mut self) -> &mut Slim {
        &mut self.0
    }
}

impl Borrow<RecordKey> for Entry {
    fn borrow(&self) -> &RecordKey {
        &self.0.key
    }
}

/// Hashes as its key, so the table finds it by a key.
impl Hash for Entry {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.key.hash(h);
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for Entry {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn new(mode: Mode, csrf: Option<&str>) -> NewRecord {
        NewRecord {
            principal: "ek-user-0001".into(),
            client_id: None,
            request_digest: [3; 32],
            mode,
            created_at_ms: 1_000,
            expires_at_ms: 601_000,
            csrf_token: csrf.map(str::to_owned),
            origin: None,
        }
    }

    #[test]
    fn ids_and_keys_map_one_to_one() {
        for _ in 0..100 {
            let id = super::super::new_id();
            let key = record_key(&id).expect("an id of ours has a key");
            assert_eq!(id_of(&key), id);
        }
        let id = super::super::new_id();
        // Not ids of ours: wrong length, not base64url, or a non-canonical
        // last character (same bytes, other text).
        for bad in [
            &id[..21],
            "!!!!!!!!!!!!!!!!!!!!!!",
            "AAAAAAAAAAAAAAAAAAAAAB",
        ] {
            assert_eq!(record_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_settled_record_reads_back_as_the_full_record_did() {
        let mut s = Slim::new([9; 16], &new(Mode::Url, Some("tok")));
        let key = [9; 16];
        let r = s.record();
        assert_eq!(
            (r.status, r.version, r.result.clone()),
            (Status::Pending, 0, None)
        );
        assert_eq!(r.csrf_token.as_deref(), Some("tok"));
        let outcome = json!({"masked": "sk-…abcd", "n": 1.5, "list": [1, "x", null]});
        s.settle(Status::Completed, true, 5_000, Some(&outcome))
            .unwrap();
        let r = s.record();
        assert_eq!(r.id, id_of(&key));
        assert_eq!(r.csrf_token, None, "a settled page's token is forgotten");
        assert_eq!((r.status, r.version), (Status::Completed, 1));
        assert_eq!(r.result, Some(outcome));
        let audit = s.audit();
        assert_eq!(audit.len(), 2);
        assert_eq!(audit[0].actor_principal.as_deref(), Some("ek-user-0001"));
        assert_eq!(
            (audit[1].at_ms, audit[1].from, audit[1].to),
            (5_000, Some(Status::Pending), Status::Completed)
        );
        assert_eq!(s.audit_lines(), 2);
        assert_eq!(s.purge_audit(1_000), 1);
        assert_eq!((s.audit().len(), s.audit_lines()), (1, 1));
        assert_eq!(s.purge_audit(5_000), 1);
        assert!(s.audit().is_empty());
    }

    #[test]
    fn the_store_expiring_a_record_is_no_ones_act() {
        let mut s = Slim::new([9; 16], &new(Mode::Form, None));
        s.settle(Status::Expired, false, 601_000, None).unwrap();
        assert_eq!(s.audit()[1].actor_principal, None);
    }

    /// What a record costs, by kind: a form record (a 2025-11-25
    /// elicitation) and a URL flow's page with its CSRF token and masked
    /// key. The figures are the store's own count (allocator granules and
    /// headers included), what the budget and `/stats` use.
    #[test]
    fn a_record_costs_at_most_its_budget() {
        // Its key is in its box (the table's slot is one pointer): 16 B
        // more here, 36 B less in the slot.
        let form = Slim::new([9; 16], &new(Mode::Form, None));
        assert!(
            form.heap_bytes() <= 120,
            "form record: {} B",
            form.heap_bytes()
        );
        let mut url = Slim::new([9; 16], &new(Mode::Url, Some(&"c".repeat(32))));
        url.settle(
            Status::Completed,
            true,
            2_000,
            Some(&json!({"masked": "sk-l…wxyz"})),
        )
        .unwrap();
        assert!(
            url.heap_bytes() <= 160,
            "URL record: {} B",
            url.heap_bytes()
        );
    }
}
